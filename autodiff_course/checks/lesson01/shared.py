"""What the checks of lesson 01 share: the shape of what came back, the tolerance of
a probe's dtype (and judging under it), and for exercises 1.3 and 1.4 the residuals
of the regression probes and the mistakes learners make in the upstream gradient dy
of a mean squared error."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Tolerance
from ...checking import shape_of
from ...checking import signed
from ...checking.legacy_judge import judge


def _shape_of(value):
    """The shape of whatever came back, Python numbers counting as scalars (exercise 1.2
    accepts NumPy and Python values), or None when it has none we can read."""
    if isinstance(value, (bool, int, float)):
        return ()
    return shape_of(value)


def _tolerance(dtype: str, float32: Tolerance, float64: Tolerance) -> Tolerance:
    return float64 if dtype == "float64" else float32


def _judge(
    got, expected, dtype: str, float32: Tolerance = FLOAT32, float64: Tolerance = FLOAT64, **how
) -> None:
    """:func:`judge` under the tolerance of the probe's ``dtype``: ``float32`` or
    ``float64``, the checker's own unless the exercise needs an absolute floor."""
    judge(got, expected, _tolerance(dtype, float32, float64), dtype=dtype, **how)


def _residuals(rng, shape):
    """Residuals in [0.2, 2] of both signs (always both) and, beyond one entry, one 0."""
    residual = signed(rng, shape, 0.2, 2.0)
    flat = residual.reshape(-1)
    if flat.size >= 3:
        order = rng.permutation(flat.size)
        flat[order[0]] = abs(flat[order[0]])
        flat[order[1]] = -abs(flat[order[1]])
        flat[order[2]] = 0.0
    return residual


def _vector_size(rng) -> int:
    """3, 5, 6 or 7 elements: never 4, where 2/N = (2/N)**2 * N/2 makes mistakes coincide."""
    return int(rng.choice([3, 5, 6, 7]))


def _dy_mistakes(output, target, what="dy"):
    """The upstream gradients learners compute instead of 2 (output - target) / N."""
    size = max(output.size, 1)
    residual = output - target
    found = [
        (
            "sign_flipped",
            f"{what} has the wrong sign: d/d(output) of "
            "(output - target)**2 is 2 (output - target), residual in that order.",
            -2.0 * residual / size,
        ),
        (
            "sum_not_mean",
            f"{what} is {size} times too large, and {size} is the number "
            "of elements: you differentiated the sum of the squares. The loss is their "
            "mean, so divide by N = tf.size(output).",
            2.0 * residual,
        ),
        (
            "scale_factor",
            f"{what} is half the answer: the 2 from differentiating the square is missing.",
            residual / size,
        ),
        (
            "ignored_target",
            f"{what} does not use the target: the square is of "
            "(output - target), so its derivative is 2 (output - target) / N.",
            2.0 * output / size,
        ),
        (
            "lost_sign",
            f"{what} is always positive: an absolute value (or a square "
            "root of a square) dropped the sign of output - target, which tells the "
            "output which way to move.",
            2.0 * np.abs(residual) / size,
        ),
        (
            "value_not_derivative",
            f"{what} is the squared residual: that is the loss's terms, not the loss's derivative.",
            residual**2 / size,
        ),
        (
            "value_not_derivative",
            f"{what} is the squared residual: that is the loss's terms, not the loss's derivative.",
            residual**2,
        ),
        (
            "wrong_dy",
            f"{what} is 2/N times the sign of output - target: that is the "
            "derivative of the mean *absolute* error, mean(|output - target|). For the "
            "mean squared error the size of the residual counts too: 2 (output - target) / N.",
            2.0 * np.sign(residual) / size,
        ),
        (
            "dy_of_ones",
            f"{what} is all ones: that is the upstream gradient when the "
            "output itself is the target. Here the target of the differentiation is the "
            "loss, so dy = d(loss)/d(output).",
            np.ones_like(output),
        ),
        (
            "reduced_dy",
            f"{what} is the same number everywhere: the mean was taken "
            "before differentiating. dy has one entry per element of the output.",
            np.full(output.shape, 2.0 * residual.mean()),
        ),
    ]
    for axis, length in enumerate(output.shape if output.ndim >= 2 else ()):
        if length != size:
            found.insert(
                3,
                (
                    "mean_over_one_axis",
                    f"{what} is {size // length} times "
                    f"too large: you divided by {length}, one dimension of the "
                    f"shape (axis {axis}{', len()' if axis == 0 else ''}), but "
                    f"the mean runs over all N = {size} elements: use "
                    f"tf.size(output).",
                    2.0 * residual / length,
                ),
            )
    found += [
        (
            "wrong_dy",
            f"{what} is the right dy times output: an extra factor. The "
            "derivative of (output - target)**2 is 2 (output - target), nothing more.",
            2.0 * residual / size * output,
        ),
        (
            "wrong_dy",
            f"{what} is the right dy times target: an extra factor. The "
            "derivative of (output - target)**2 is 2 (output - target), nothing more.",
            2.0 * residual / size * target,
        ),
    ]
    if size > 1:
        found += [
            (
                "scale_factor",
                f"{what} is {size} times too small: you divided by N = "
                f"{size} twice. The mean divides once.",
                2.0 * residual / size**2,
            ),
            (
                "scale_factor",
                f"{what} divides by N - 1 = {size - 1}: that is the "
                f"correction of a sample variance. The mean divides by N = {size}.",
                2.0 * residual / (size - 1),
            ),
        ]
    return found
