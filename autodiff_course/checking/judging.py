"""Comparing an answer with its reference, point by point (used by every check).

Tolerances are *per point and relative*: a value ``g`` matches ``e`` when
``|g - e| <= rtol * |e| + atol``, so sigmoid(-30) = 9.4e-14 must be right to
``rtol`` of itself, not of the largest value in the array. ``atol`` is for
references that are exactly zero (keep it tiny). :data:`FLOAT32` and
:data:`FLOAT64` are the usual choices; a float64 probe with float64 tolerance
rejects float32 shortcuts and finite differences, which cannot get that close.

When values differ, :func:`generic_mistake` names the patterns every exercise
shares (sign, a constant factor such as 2 or the batch size, a transpose,
reversed order, an offset, hard-coded numbers, zeros, nan), and
:func:`describe_difference` quotes the point where the two really differ, with
enough digits to see the difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float = 0.0


FLOAT32 = Tolerance(rtol=2e-5, atol=1e-30)
FLOAT64 = Tolerance(rtol=1e-11, atol=1e-300)


def relative_to_largest(reference):
    """An exercise's ``tolerance`` for arrays with entries that are zero or cross zero (a
    Jacobian, a Hessian): each entry to ``rtol`` of itself plus ``atol`` times the largest
    entry of ``reference(probe)`` (2e-5 and 2e-6 in float32, 1e-12 and 1e-14 in float64),
    since rounding there follows the whole array, not the entry (lesson 05)."""

    def tolerance(probe, part):
        scale = float(np.max(np.abs(reference(probe)), initial=0.0))
        rtol, atol = (2e-5, 2e-6) if probe.dtype == "float32" else (1e-12, 1e-14)
        return Tolerance(rtol, atol * scale)

    return tolerance


def tolerance_for(dtype) -> Tolerance:
    """:data:`FLOAT64` for float64 values, :data:`FLOAT32` otherwise."""
    name = getattr(dtype, "name", str(dtype))
    return FLOAT64 if "64" in name else FLOAT32


def of_terms(scale):
    """An exercise's ``tolerance`` for a result that sums terms which may cancel (lessons
    02 and 04): the dtype's own ``rtol``, and an ``atol`` of 8 units of the dtype's
    epsilon times ``scale(probe)``, the size of the largest term, which is all a right
    answer can promise where the sum nearly vanishes."""

    def tolerance(probe, part):
        base = tolerance_for(probe.dtype)
        epsilon = float(np.finfo(np.dtype(probe.dtype)).eps)
        return Tolerance(base.rtol, max(base.atol, 8 * epsilon * float(scale(probe))))

    return tolerance


def float64_or_none(value) -> np.ndarray | None:
    """``value`` as a float64 array, or None when it is not numbers (a nested structure,
    IndexedSlices, an object of its own)."""
    try:
        return np.asarray(value, dtype=np.float64)
    except Exception:  # noqa: BLE001 - not numbers: nothing to compare
        return None


def close_points(
    got, expected, rtol: float = FLOAT32.rtol, atol: float = FLOAT32.atol
) -> np.ndarray:
    """Element-wise: finite and within ``rtol * |expected| + atol`` of ``expected``."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.broadcast_to(np.asarray(expected, dtype=np.float64), got.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.isfinite(got) & (np.abs(got - expected) <= rtol * np.abs(expected) + atol)


def matches(got, expected, rtol: float = FLOAT32.rtol, atol: float = FLOAT32.atol) -> bool:
    """True when every point of ``got`` matches ``expected`` (``nan`` never matches)."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        return False
    return bool(np.all(close_points(got, expected, rtol, atol)))


def _format_pair(got: float, expected: float) -> tuple[str, str]:
    """The two numbers with just enough significant digits to tell them apart."""
    for digits in range(6, 18):
        a, b = f"{got:.{digits}g}", f"{expected:.{digits}g}"
        if a != b:
            return a, b
    return f"{got!r}", f"{expected!r}"


def _where(index: tuple, at, shape) -> str:
    if at is not None:
        points = np.asarray(at, dtype=np.float64)
        if points.shape == tuple(shape):
            return f" at x = {points[index]:.6g}"
    if len(shape) == 0:
        return ""
    plain = [int(i) for i in index]
    return f" at index {plain}" if len(plain) > 1 else f" at index {plain[0]}"


def worst_point(got, expected, rtol: float = FLOAT32.rtol, atol: float = FLOAT32.atol):
    """The index where ``got`` misses ``expected`` by most, measured in tolerances."""
    got = np.asarray(got, dtype=np.float64)
    expected = np.broadcast_to(np.asarray(expected, dtype=np.float64), got.shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        excess = np.abs(got - expected) / (rtol * np.abs(expected) + atol)
    excess = np.where(np.isfinite(got), excess, np.inf)
    excess = np.nan_to_num(excess, nan=np.inf)
    excess = np.where(np.isnan(got) & np.isnan(expected), 0.0, excess)  # nan where nan belongs
    return np.unravel_index(int(np.argmax(excess)), got.shape) if got.shape else ()


def describe_difference(
    got, expected, at=None, rtol: float = FLOAT32.rtol, atol: float = FLOAT32.atol
) -> str:
    """'For example at x = ...: expected ..., got ...' at a point that really differs.

    The point is the worst one *under the check's own tolerance*, and the numbers
    carry as many digits as it takes to see that they differ.
    """
    got = np.asarray(got, dtype=np.float64)
    expected = np.broadcast_to(np.asarray(expected, dtype=np.float64), got.shape)
    index = worst_point(got, expected, rtol, atol)
    g, e = float(got[index]), float(expected[index])
    shown_got, shown_expected = _format_pair(g, e)
    where = _where(index, at, got.shape)
    detail = ""
    if np.isfinite(g) and e != 0.0:
        detail = f" (relative difference {abs(g - e) / abs(e):.1e}; the check allows {rtol:.0e})"
    return f"For example{where}: expected {shown_expected}, got {shown_got}{detail}."


def generic_mistake(
    got,
    expected,
    *,
    rtol: float = FLOAT32.rtol,
    atol: float = FLOAT32.atol,
    batch: int | None = None,
    what: str = "your result",
) -> tuple[str, str] | None:
    """``(code, hint)`` for a mistake every exercise can make, or None.

    ``batch`` is the number of terms a mean divides by, when there is one: a
    factor of ``batch`` is then a sum where a mean belongs (or the reverse), one of
    N/(N-1) a division by N - 1; 1/N, for N entries, a mean where none belongs.
    """
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape or got.size == 0:
        return None
    loose = dict(rtol=max(rtol, 1e-6) * 10, atol=max(atol, 1e-12))
    if not np.all(np.isfinite(got)):
        bad = np.argwhere(~np.isfinite(got))
        where = f" at index {bad[0].tolist()}" if got.ndim else ""
        value = got[tuple(bad[0])] if got.ndim else got
        return (
            "nan_or_inf",
            f"{_head(what)} {_is(what)} {value}{where}, where the answer "
            f"is finite: something overflows (exp of a large number), divides by "
            f"zero or multiplies 0 by inf there.",
        )
    if np.all(got == 0.0) and np.any(expected != 0.0):
        return (
            "zeros",
            f"{_head(what)} {_is(what)} zero everywhere, but the answer is not: look for "
            "a factor of your formula that is 0, or terms that cancel.",
        )
    if matches(got, expected, rtol=1e-3, atol=atol):
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.abs(got - expected) / np.abs(expected)
        meaningful = np.abs(expected) * 1e-2 > atol  # not a value within atol of 0
        worst = float(np.max(np.where(meaningful, relative, 0.0), initial=0.0))
        return (
            "approximation",
            f"{_head(what)} {_is(what)} close (relative error up to "
            f"{worst:.1e}), but not as close as the check allows ({rtol:.0e}): some "
            f"step is computed otherwise than the exercise asks (an estimate where "
            f"autodiff or a formula belongs, another step size or learning rate, "
            f"float32 arithmetic where the input is float64, a rounded constant, or "
            f"a value kept from an earlier step).",
        )
    if matches(got, -expected, **loose) and np.any(expected != 0.0):
        return (
            "sign_flipped",
            f"{_head(what)} {_has(what)} the right size but the "
            "opposite sign everywhere: look for a subtraction the wrong way round "
            "or a stray minus.",
        )
    if (
        got.ndim == 2
        and got.shape[0] == got.shape[1]
        and matches(got, expected.T, **loose)
        and not matches(expected, expected.T, **loose)
    ):
        return (
            "transposed",
            f"{_head(what)} {_is(what)} the transpose of the answer: rows and columns are swapped.",
        )
    if (
        got.ndim >= 1
        and got.shape[0] > 1
        and matches(got, expected[::-1], **loose)
        and not matches(expected, expected[::-1], **loose)
    ):
        return (
            "reversed_order",
            f"{_head(what)} {_has(what)} the right values in reverse order.",
        )
    norm = float(np.sum(expected * expected))  # the least-squares factor (got is finite)
    factor = float(np.sum(got * expected)) / norm if norm else None
    if factor is not None and np.isclose(factor, 1.0, rtol=1e-6, atol=0):
        factor = None  # right on the whole, off only where the values are tiny: no factor
    if factor is not None and abs(factor) > 1e-12 and matches(got, factor * expected, **loose):
        if batch and np.isclose(factor, batch, rtol=1e-3):
            return (
                "sum_not_mean",
                f"{_head(what)} {_is(what)} {batch} times too large, "
                f"and {batch} is the number of terms: a sum (tf.reduce_sum) where "
                f"the exercise asks for a mean (tf.reduce_mean).",
            )
        if batch and np.isclose(factor, 1.0 / batch, rtol=1e-3):
            return (
                "mean_not_sum",
                f"{_head(what)} {_is(what)} {batch} times too small, "
                f"and {batch} is the number of terms: a mean where the exercise "
                f"asks for a sum.",
            )
        for n in sorted({c for c in (batch, got.size) if c and c > 3}):
            if np.isclose(factor, n / (n - 1), rtol=1e-4):
                return (
                    "n_minus_one",
                    f"{_head(what)} {_is(what)} {n}/{n - 1} times the answer, and {n} is the "
                    f"number of terms: a division by N - 1 where the mean divides by N.",
                )
        if got.size > 2 and got.size != batch and np.isclose(factor, 1.0 / got.size, rtol=1e-3):
            return (
                "mean_not_sum",
                f"{_head(what)} {_is(what)} {got.size} times too small, and {got.size} is "
                f"the number of entries: a mean (tf.reduce_mean) where a sum, or no "
                f"reduction at all, belongs.",
            )
        return (
            "scale_factor",
            f"{_head(what)} {_is(what)} the answer times "
            f"{_nice(factor)}: the shape of the formula is right, a constant factor "
            f"is not (a missing or extra 2, a 1/2, the wrong power's coefficient?).",
        )
    if expected.size > 1 and np.ptp(expected) > 0:
        offset = float(np.mean(got - expected))
        if abs(offset) > 0 and matches(got, expected + offset, **loose):
            return (
                "constant_offset",
                f"{_head(what)} {_is(what)} the answer plus "
                f"{_nice(offset)} at every point: a constant term was added or "
                f"dropped.",
            )
        if np.ptp(got) == 0.0:
            return (
                "hard_coded",
                f"{_head(what)} {_is(what)} {_nice(float(got.flat[0]))} "
                f"at every entry, but the answer changes from entry to entry: numbers "
                f"typed in, a mean or sum over the entries, or the input cancelled out "
                f"of the formula. Write it from the arguments, entry by entry.",
            )
    return None


def one_number_mistake(got: float, expected: float, what: str) -> tuple[str, str] | None:
    """``(code, hint)`` for one number, or None: "the answer times k" fits any wrong value,
    so only a flipped sign or a simple factor (2, 1/2, 3/4) is named."""
    if expected == 0 or not np.isfinite(got):
        return None
    factor = got / expected
    simple = Fraction(factor).limit_denominator(4)
    if abs(float(simple) - factor) > 1e-6 * abs(factor) or abs(simple.numerator) > 8:
        return None
    if simple == -1:
        return "sign_flipped", (
            f"{_head(what)} has the right size but the opposite sign: look for a "
            "subtraction the wrong way round or a stray minus."
        )
    return "scale_factor", (
        f"{_head(what)} is the answer times {simple}: the shape of the formula is "
        "right, a constant factor is not."
    )


def _nice(value: float) -> str:
    """A factor as a reader would say it: 2, 1/2, 2/3, or 1.37."""
    fraction = Fraction(value).limit_denominator(4)
    if fraction.denominator > 1 and abs(float(fraction) - value) <= 1e-4 * abs(value):
        return f"{fraction.numerator}/{fraction.denominator}"
    return f"{value:.6g}"


def _head(what: str) -> str:
    return what[:1].upper() + what[1:]


def _is(what: str) -> str:
    """'is' or 'are', to agree with ``what`` ("your result is", "your gradients are")."""
    words = what.split() or [what]
    noun = words[1] if words[0].lower() in ("your", "the", "its") and len(words) > 1 else words[0]
    return "are" if noun.endswith("s") and not noun.endswith("ss") else "is"


def _has(what: str) -> str:
    """'has' or 'have', to agree with ``what``, as :func:`_is` does."""
    return "have" if _is(what) == "are" else "has"
