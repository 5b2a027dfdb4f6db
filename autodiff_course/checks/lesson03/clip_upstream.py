"""Exercise 3.3: clip the upstream gradient where it enters a layer."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Wrong
from ...checking import as_values
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import signed
from .shared import _as_dtype
from .shared import _input_gradient
from .shared import _judge_value
from .shared import _record
from .shared import _regrad
from .shared import _require_rule_ran
from .shared import _tf
from .shared import _wrong_gradient

CLIP_FIXED_X = [-2.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.0]
CLIP_FIXED_UPSTREAM = [1.0, -1.0, 0.5, -0.5, 3.0, -4.0, 1.0]


def _clip_probe(rng, shape=None):
    """x of both signs (0 and |x| on both sides of 1/sqrt(3)); upstream with +-1 exactly."""
    if shape is None:
        x = np.concatenate([CLIP_FIXED_X, signed(rng, 7, 0.05, 2.5)])
        up = np.concatenate([CLIP_FIXED_UPSTREAM, signed(rng, 7, 0.2, 4.0, decimals=2)])
        shape = x.shape
    else:
        size = int(np.prod(shape))
        x = np.concatenate([[0.0, -1.5, 1.5], signed(rng, size - 3, 0.05, 2.5)])
        up = np.concatenate([[-3.0, 1.0, -1.0], signed(rng, size - 3, 0.2, 4.0, 2)])
    order = rng.permutation(x.size)
    return x[order].reshape(shape), up[order].reshape(shape)


def _raise_if_other_clip_range(gradient, up, local, tolerance) -> None:
    """Name the range when ``gradient`` is ``clip(up, low, high) * local`` for another
    range than [-1, 1]."""
    usable = np.abs(local) > 1e-3
    if usable.sum() < 3:
        return
    ratio = gradient[usable] / local[usable]
    low, high = float(np.min(ratio)), float(np.max(ratio))
    candidate = np.clip(up, low, high) * local
    if not matches(gradient, candidate, max(tolerance.rtol, 1e-6), 1e-9):
        return
    lows = "no lower limit" if low <= up.min() + 1e-9 else f"a lower limit of {low:g}"
    highs = "no upper limit" if high >= up.max() - 1e-9 else f"an upper limit of {high:g}"
    raise Wrong(
        f"Your rule clips the upstream with {lows} and {highs}; the "
        f"exercise clips each entry to [-1, 1]: tf.clip_by_value(upstream, "
        f"-1.0, 1.0), then times 3x^2.",
        "wrong_clip_range",
    )


@exercise("3.3", "clip the upstream gradient where it enters a layer")
def clipped_upstream(answer):
    """Probes (fresh on every call): x of both signs (0, +-0.3, +-1, +-2 and fresh
    points, so 3x^2 is below and above 1), upstreams of both signs including exactly
    +-1, +-0.5 and values up to 4 in size; float32 first, then a float64 (3, 4) batch
    (dtype in = dtype out) judged to 1e-11.

    Method: a ``@tf.custom_gradient`` rule ran.
    """
    rng = fresh_rng("3.3")
    name = "`cube_with_clipped_upstream`"
    tf = _tf()
    for dtype, shape in ((np.float32, None), (np.float64, (3, 4))):
        x_raw, up_raw = _clip_probe(rng, shape)
        x_in, x = _as_dtype(x_raw, dtype)
        _, up = _as_dtype(up_raw, dtype)
        tolerance = FLOAT32 if dtype is np.float32 else FLOAT64
        recorded = _record(answer, tf.constant(x_in), name)
        values = as_values(recorded.value, name=name, shape=x.shape, dtype=x_in.dtype)
        _judge_value(
            values,
            x**3,
            summary="The forward value should be x**3.",
            x=x,
            tolerance=tolerance,
            what="your forward value",
            known=[
                (
                    "clipped_forward",
                    "Your forward clips the value; the layer's output "
                    "is x**3 unchanged. Only the backward rule clips.",
                    np.clip(x**3, -1.0, 1.0),
                ),
                (
                    "clipped_forward",
                    "Your forward clips x before cubing; the layer's "
                    "output is x**3 unchanged. Only the backward rule clips.",
                    np.clip(x, -1.0, 1.0) ** 3,
                ),
            ],
        )
        gradient = _input_gradient(recorded, up, x.shape, x_in.dtype)
        local = 3.0 * x**2
        if not recorded.log.used_custom_gradient and matches(gradient, up * local, 1e-4):
            raise Wrong(
                "Nothing was clipped: the gradient is upstream * 3x^2, TensorFlow's "
                "own, and no @tf.custom_gradient rule ran. Write the layer with "
                "@tf.custom_gradient and clip the upstream in its grad_fn.",
                "custom_gradient_not_used",
            )
        _require_rule_ran(recorded.log, "")
        clipped = np.clip(up, -1.0, 1.0)
        expected = clipped * local
        if matches(gradient, expected, tolerance.rtol, tolerance.atol):
            continue
        norm = np.sqrt(np.sum(up**2))
        known = [
            (
                "clipped_after_local",
                "You clipped the product upstream * 3x^2, so the "
                "result never leaves [-1, 1]. Clip the upstream first, then multiply by the "
                "local derivative 3x^2.",
                np.clip(up * local, -1.0, 1.0),
            ),
            (
                "not_clipped",
                "Nothing was clipped: the gradient is upstream * 3x^2. Clip "
                "the upstream to [-1, 1] with tf.clip_by_value before multiplying.",
                up * local,
            ),
            (
                "forgot_local_derivative",
                "You returned the clipped upstream alone; "
                "multiply it by the layer's local derivative 3x^2.",
                clipped,
            ),
            (
                "forgot_upstream",
                "Your gradient ignores the upstream: it must be clip(upstream, -1, 1) * 3x^2.",
                local,
            ),
            (
                "forgot_upstream",
                "Your gradient ignores the upstream (you clipped the "
                "local derivative): it must be clip(upstream, -1, 1) * 3x^2.",
                np.clip(local, -1.0, 1.0),
            ),
            (
                "clipped_norm",
                "You clipped the norm of the whole upstream tensor "
                "(tf.clip_by_norm), which rescales every entry. This exercise clips each "
                "entry to [-1, 1] with tf.clip_by_value.",
                up * min(1.0, 1.0 / norm) * local,
            ),
            (
                "clipped_input",
                "You clipped x inside the local derivative; the clip acts "
                "on the upstream: clip(upstream, -1, 1) * 3x^2.",
                up * 3.0 * np.clip(x, -1.0, 1.0) ** 2,
            ),
        ]
        diagnose_mistake(gradient, known, tolerance.rtol, tolerance.atol)
        _raise_if_other_clip_range(gradient, up, local, tolerance)
        raise _wrong_gradient(
            gradient,
            expected,
            summary="The gradient should be clip(upstream, -1, 1) * 3x^2.",
            x=x,
            up=up,
            tolerance=tolerance,
            regrad=_regrad(recorded, name, x.shape, x_in.dtype),
            local=local,
            local_name="3x^2",
            clip=lambda u: np.clip(u, -1.0, 1.0),
        )
    return (
        "Forward x**3; backward clip(upstream, -1, 1) * 3x^2 (clip first, then the "
        "local derivative), with upstreams inside, on and outside [-1, 1], in float32 "
        "and in a float64 (3, 4) batch; your @tf.custom_gradient rule ran."
    )
