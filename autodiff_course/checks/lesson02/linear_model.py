"""The linear model of exercises 2.1 and 2.3: fresh data, the arguments (``params``, a
dict of fresh variables, then x and y), their names, and float64 gradients of a mean loss."""

import numpy as np

from ...checking.judging import of_terms
from ...checking.probes import signed
from ...checking.spec import Probe
from ...checking.spec import as_dtype


def probe(rng, dtype: str, n: int, k: int, far: float = 1.0, **more) -> Probe:
    """``n`` rows of ``k`` features, starting ``w`` and ``b``, and targets ``y`` whose
    residuals have both signs, some below 1 in size and some above (all ``far`` times
    larger: a start far from the fit, with gradients of norm 20 or more)."""
    n, k = int(n), int(k)
    x = as_dtype(signed(rng, (n, k), 0.2, 2.0), dtype)
    w, b = as_dtype(signed(rng, (k,), 0.2, 1.5), dtype), float(as_dtype(signed(rng, ()), dtype))
    residual = np.abs(signed(rng, (n,), 1.2, 2.5)) * np.where(np.arange(n) == n - 1, -1, 1)
    residual[0] = float(signed(rng, (), 0.1, 0.8))
    residual *= far
    y = as_dtype(np.round(x @ w + b - residual, 3), dtype)
    label = f"{n} row{'s' * (n > 1)} of {k} feature{'s' * (k > 1)} in {dtype}"
    return Probe(dtype, x, data=dict(y=y, w=w, b=b, n=n, k=k, batch=n, **more), label=label)


def arguments(p) -> tuple:
    import tensorflow as tf

    params = {key: tf.Variable(getattr(p, key), dtype=p.dtype, name=key) for key in "wb"}
    return params, tf.constant(p.x, p.dtype), tf.constant(p.y, p.dtype)


def sources(p, args) -> list:
    """The variables handed over, each with the name a hint gives it (``params['w']``)."""
    return [(args[0][key], f"params['{key}']") for key in "wb"]


def gradients(p, w=None, b=None, *, x=None, y=None, slope=lambda r: 2 * r) -> dict:
    """d/dw and d/db of mean(loss(x w + b - y)), ``slope`` being loss' (by default the
    squared error's), at the probe's own w, b, x and y unless others are given."""
    x, y = p.x if x is None else x, p.y if y is None else y
    d = slope(x @ (p.w if w is None else w) + (p.b if b is None else b) - y) / len(y)
    return {"w": x.T @ d, "b": float(np.sum(d))}


# The dtype's tolerance, widened to the rounding of the largest term the gradients sum.
tolerance = of_terms(
    lambda p: np.max(np.abs(p.x)) * max(1.0, 2 * np.max(np.abs(p.x @ p.w + p.b - p.y)))
)
