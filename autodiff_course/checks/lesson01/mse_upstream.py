"""Exercise 1.3: the upstream gradient dy of a mean squared error, by hand."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import observed_call
from ...checking import require_by_hand
from ...checking import signed
from ...checking import tensor
from .shared import _dy_mistakes
from .shared import _judge
from .shared import _residuals
from .shared import _shape_of
from .shared import _vector_size


def _regression_probes(rng, shapes_and_dtypes):
    """(dtype, output, target): outputs and residuals of both signs, one residual 0."""
    probes = []
    for shape, dtype in shapes_and_dtypes:
        output = signed(rng, shape, 0.1, 3.0)
        residual = _residuals(rng, shape)
        target = output - residual
        if dtype == "float32":
            output = output.astype(np.float32).astype(np.float64)
            target = target.astype(np.float32).astype(np.float64)
        probes.append((dtype, output, target))
    return probes


def _kept_the_square(got, residual, what: str) -> None:
    """Raise when ``got`` is a multiple of the squared residual (the loss's terms)."""
    squared = np.asarray(residual, dtype=np.float64) ** 2
    denominator = float(np.sum(squared * squared))
    if squared.size < 2 or denominator == 0.0 or np.ptp(squared) == 0.0:
        return
    factor = float(np.sum(np.asarray(got) * squared)) / denominator
    if factor != 0.0 and matches(got, factor * squared, 1e-6, 1e-12):
        raise Wrong(
            f"{what} is a multiple of the squared residual (output - target)**2: "
            "the square is still there. Differentiating (output - target)**2 "
            "with respect to output gives 2 (output - target): the square "
            "becomes a factor 2.",
            "value_not_derivative",
        )


@exercise("1.3", "the upstream gradient of a mean squared error, by hand")
def upstream_dy(answer):
    """dy = d(loss)/d(output) for loss = mean((output - target)**2), by hand.

    Method: no tape (observed). Probes, fresh on every call: a float32 vector of
    3, 5, 6 or 7 elements (never 4, where two mistakes give the same numbers), a
    float64 (b, k) matrix with b != k (so dividing by len() shows), a float64
    scalar. Outputs of both signs; residuals output - target always of both signs,
    in [0.2, 2], and one exactly 0 per array (so abs(), relu and squares show).
    dtype in = dtype out.
    """
    rng = fresh_rng("1.3")
    rows = int(rng.integers(2, 4))
    matrix = (rows, rows + int(rng.integers(1, 3)))
    probes = _regression_probes(
        rng, [((_vector_size(rng),), "float32"), (matrix, "float64"), ((), "float64")]
    )
    for dtype, output_values, target_values in probes:
        output = tensor(output_values, dtype)
        target = tensor(target_values, dtype)
        value, log = observed_call(answer, output, target)
        require_by_hand(log, "exercise 1.3")
        size = max(output_values.size, 1)
        expected = 2.0 * (output_values - target_values) / size
        known = _dy_mistakes(output_values, target_values)
        if _shape_of(value) == () and output_values.shape != ():
            got = as_values(value, shape=(), dtype=output.dtype)
            loss = np.mean((output_values - target_values) ** 2)
            if matches(got, loss, 1e-5, 1e-12):
                raise Wrong(
                    "You returned one number, the loss itself. dy is its "
                    "derivative with respect to each element of the output: "
                    "same shape as output.",
                    "value_not_derivative",
                )
            raise Wrong(
                "You returned one number: dy has one entry per element of "
                "output (the same shape), because the loss depends on each "
                "of them.",
                "reduced_dy",
            )
        got = as_values(value, shape=output.shape, dtype=output.dtype)
        _kept_the_square(got, output_values - target_values, "Your dy")

        def linear_fit(got, output_values=output_values, target_values=target_values, size=size):
            if output_values.size < 3:
                return None
            basis = np.stack([output_values.ravel(), target_values.ravel()], axis=1)
            (a, b), *_ = np.linalg.lstsq(basis, got.ravel(), rcond=None)
            if not matches(got.ravel(), basis @ [a, b], 1e-5, 1e-6 * float(np.max(np.abs(got)))):
                return None
            return Wrong(
                f"Your dy is {a:.6g} * output + {b:.6g} * target, but "
                f"2 (output - target) / N is {2 / size:.6g} * output - "
                f"{2 / size:.6g} * target here (N = {size}). Compare the two "
                f"coefficients: a sign, a factor or N is off.",
                "wrong_dy",
            )

        _judge(
            got,
            expected,
            dtype,
            fallback=linear_fit,
            what="your dy",
            known=known,
            batch=size,
            summary="dy = d(loss)/d(output) = 2 (output - target) / N, with N the "
            "number of elements.",
        )
    return (
        "By hand: dy = 2 (output - target) / N, right for residuals of both signs "
        "and zero, for a scalar, a vector and a (b, k) matrix, in float32 and "
        "float64."
    )
