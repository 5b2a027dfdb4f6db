"""How lesson 05 names a wrong Jacobian: the exercise's known mistakes (also when
scaled), the right numbers in another axis order or one slice repeated, float32
precision in float64, finite differences, then the generic patterns."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import explain_difference
from ...checking import matches
from .shared import _close
from .shared import _tf
from .shared import _tolerance
from .shared import _used_autodiff

JACOBIAN_SUMMARY = "Not the Jacobian of f at x."


def _known(got, expected, dtype, known) -> None:
    """Raise the hint of the first known mistake that ``got`` matches.

    A known mistake that is also off by a constant factor is named too, with the
    factor.
    """
    tol = _tolerance(dtype, expected)
    if matches(got, expected, **tol):
        return
    for code, hint, values in known:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != np.shape(got):
            continue
        if matches(got, values, **_tolerance(dtype, values)):
            raise Wrong(hint, code)
        denominator = float(np.sum(values * values))
        if denominator > 0.0 and np.all(np.isfinite(got)) and not _proportional(values, expected):
            factor = float(np.sum(got * values)) / denominator
            if (
                abs(factor) > 1e-6
                and not np.isclose(factor, 1.0)
                and matches(got, factor * values, **_tolerance(dtype, factor * values))
            ):
                raise Wrong(f"{hint} (Your numbers are also scaled by {factor:.6g}.)", code)


def _proportional(a, b) -> bool:
    """``a`` is a constant times ``b`` (such a mistake is a scale factor, not a pattern)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    denominator = float(np.sum(b * b))
    if a.shape != b.shape or denominator == 0.0:
        return False
    return bool(np.allclose(a, float(np.sum(a * b)) / denominator * b, rtol=1e-9, atol=0.0))


def _permuted_axes(got, expected):
    """The axis order that turns ``expected`` into ``got``, when one does (not the identity)."""
    import itertools

    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.ndim != expected.ndim or got.ndim < 2 or got.ndim > 6:
        return None
    identity = tuple(range(got.ndim))
    for order in itertools.permutations(identity):
        if order == identity or expected.transpose(order).shape != got.shape:
            continue
        moved = expected.transpose(order)
        if np.allclose(moved, expected) if moved.shape == expected.shape else False:
            continue
        if _close(got, moved, _tf().float32):
            return order
    return None


def _repeated_along(got, expected, axis: int) -> bool:
    """Every slice along ``axis`` is the same, where the answer's slices differ."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or got.shape[axis] < 2 or not np.any(got):
        return False
    first = np.take(got, [0], axis=axis)
    if not np.allclose(got, first, rtol=1e-6, atol=0.0):
        return False
    return not np.allclose(expected, np.take(expected, [0], axis=axis), rtol=1e-6, atol=0.0)


def _shape_mistakes(got, expected, *, axis: int, slice_name: str, varies: str):
    """Raise for the right numbers in another axis order, or one slice repeated."""
    order = _permuted_axes(got, expected)
    if order is not None:
        raise Wrong(
            f"The right numbers with the axes in another order: your axes are the "
            f"answer's axes {list(order)}. Check the layout: target axes first, "
            f"then source axes, with {varies}.",
            "transposed",
        )
    if _repeated_along(got, expected, axis):
        raise Wrong(
            f"Every {slice_name} of your result is the same, but each should differ: {varies}.",
            "repeated_slice",
        )


def _looks_estimated(got, expected) -> bool:
    """Most entries within 10% of the answer, or every entry within 5% of the
    answer's scale (a tiny step in float32 is that coarse): an estimate, not a wrong
    formula."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    nonzero = expected != 0.0
    if not np.any(nonzero) or not np.all(np.isfinite(got)):
        return False
    relative = np.abs(got[nonzero] - expected[nonzero]) / np.abs(expected[nonzero])
    scale = float(np.max(np.abs(expected)))
    return bool(np.median(relative) < 0.1 or np.max(np.abs(got - expected)) <= 0.05 * scale)


def _judge(
    got,
    expected,
    dtype,
    *,
    summary=JACOBIAN_SUMMARY,
    known=(),
    batch=None,
    log=None,
    at=None,
    repeated=None,
):
    """Raise the best :class:`Wrong` for ``got`` unless it matches ``expected``.

    In order: the exercise's known mistakes; the right numbers in another axis
    order, or one slice repeated (``repeated = (axis, name, what varies)``); float64
    results that carry only
    float32 precision; estimates made without automatic differentiation (finite
    differences); the generic patterns; a point that really differs, after ``summary``
    (by default: not the Jacobian of the exercise's f, as in exercises 5.2 and 5.6).
    """
    tol = _tolerance(dtype, expected)
    if matches(got, expected, **tol):
        return
    _known(got, expected, dtype, known)
    if repeated is not None:
        axis, slice_name, varies = repeated
        _shape_mistakes(got, expected, axis=axis, slice_name=slice_name, varies=varies)
    if (
        dtype == _tf().float64
        and _float32_values(got)
        and matches(got, expected, rtol=1e-4, atol=tol["atol"] * 1e9)
    ):
        raise Wrong(
            "The result is float64, but its values carry only float32 precision: "
            "somewhere they were computed in float32 (a cast, a float32 constant) "
            "and cast back. Keep every step in x's dtype.",
            "float32_not_float64",
        )
    if log is not None and not _used_autodiff(log) and _looks_estimated(got, expected):
        raise Wrong(
            "Your numbers are near the answer but not exact, and your function "
            "used no automatic differentiation: that is a finite-difference "
            "estimate. Its error cannot go below the rounding error divided by the "
            "step (about 1e-10 in float64, far worse in float32), and the check "
            "probes to 1e-12 in float64. Differentiate with the tape.",
            "finite_differences",
        )
    raise explain_difference(got, expected, summary=summary, batch=batch, at=at, **tol)


def _float32_values(got) -> bool:
    """True when every value is exactly a float32 number (and not all are integers)."""
    got = np.asarray(got, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        same = np.all(got.astype(np.float32).astype(np.float64) == got)
    return bool(same and not np.all(got == np.round(got)))
