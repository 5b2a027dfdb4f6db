"""Gradient checks (introduced in lesson 01).

Two independent ways to test a gradient that autodiff gave you:

* :func:`central_difference` approximates the gradient of a scalar function with
  ``(f(x + h) - f(x - h)) / (2h)`` per coordinate, in float64 so that the
  approximation error, not round-off, dominates;
* :func:`compare_with_tensorflow` wraps ``tf.test.compute_gradient``, which builds
  both the autodiff ("theoretical") and the finite-difference ("numerical")
  Jacobian, and reports the largest disagreement.

Tolerances are chosen per dtype: float32 has about 7 significant digits, so a
finite difference in float32 cannot agree to better than about 1e-3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOLERANCES = {
    "float16": {"rtol": 5e-2, "atol": 5e-2},
    "float32": {"rtol": 2e-3, "atol": 2e-3},
    "float64": {"rtol": 1e-6, "atol": 1e-8},
}


_CALLS = [0]  # how often the finite differences below ran (the exercise checks read it)


def calls() -> int:
    """How many times :func:`central_jacobian` has run in this kernel: an exercise that
    asks for a central difference written by hand (lesson 01) must not call it."""
    return _CALLS[0]


def tolerance_for(dtype) -> dict:
    """``{"rtol": ..., "atol": ...}`` suited to comparing gradients in ``dtype``."""
    name = getattr(dtype, "name", None) or np.dtype(dtype).name
    return dict(TOLERANCES.get(name, TOLERANCES["float32"]))


def central_difference(f, x, h: float = 1e-5) -> np.ndarray:
    """Gradient of scalar ``f`` at ``x`` by central differences, in float64.

    ``f`` takes and returns anything ``np.asarray`` understands (a NumPy array, a
    tensor). The result has the shape of ``x``.
    """
    if np.shape(np.asarray(f(np.array(x, dtype=np.float64)))) != ():
        raise ValueError(
            "central_difference needs a function with one number as its "
            "output; use central_jacobian for vector outputs"
        )
    return central_jacobian(f, x, h)


def central_jacobian(f, x, h: float = 1e-5) -> np.ndarray:
    """Jacobian of ``f`` at ``x`` by central differences: shape ``f(x).shape + x.shape``."""
    _CALLS[0] += 1
    x = np.array(x, dtype=np.float64)
    output_shape = np.shape(np.asarray(f(x.copy())))
    jacobian = np.zeros(output_shape + x.shape)
    flat_x = x.reshape(-1)
    columns = jacobian.reshape(output_shape + (-1,))
    for i in range(flat_x.size):
        original = flat_x[i]
        flat_x[i] = original + h
        above = np.asarray(f(x.copy()), dtype=np.float64)
        flat_x[i] = original - h
        below = np.asarray(f(x.copy()), dtype=np.float64)
        flat_x[i] = original
        columns[..., i] = (above - below) / (2 * h)
    return jacobian


@dataclass
class GradientCheck:
    """Result of :func:`compare_with_tensorflow`."""

    theoretical: np.ndarray
    numerical: np.ndarray
    max_abs_error: float
    rtol: float
    atol: float

    @property
    def passed(self) -> bool:
        return bool(np.allclose(self.theoretical, self.numerical, rtol=self.rtol, atol=self.atol))

    def __repr__(self) -> str:
        verdict = "agree" if self.passed else "DISAGREE"
        return (
            f"GradientCheck: autodiff and finite differences {verdict} "
            f"(max abs error {self.max_abs_error:.2e}, "
            f"tolerance rtol={self.rtol:g}, atol={self.atol:g})"
        )


def compare_with_tensorflow(f, *xs, delta: float | None = None) -> GradientCheck:
    """Run ``tf.test.compute_gradient(f, xs)`` and summarise the worst disagreement.

    For several inputs the Jacobians are stacked along their columns before
    comparing. Tolerances come from the dtype of the first input.
    """
    import tensorflow as tf

    xs = [tf.convert_to_tensor(x) for x in xs]
    theoretical, numerical = tf.test.compute_gradient(f, xs, delta=delta)
    theoretical = np.concatenate([np.asarray(t).reshape(-1) for t in theoretical])
    numerical = np.concatenate([np.asarray(n).reshape(-1) for n in numerical])
    tolerance = tolerance_for(xs[0].dtype)
    error = float(np.max(np.abs(theoretical - numerical))) if theoretical.size else 0.0
    return GradientCheck(theoretical, numerical, error, **tolerance)
