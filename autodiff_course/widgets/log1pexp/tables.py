"""Every number the log1pexp explorer (lesson 03) can show, computed with the tape.

The explorer draws in the browser, with no kernel behind it, so TensorFlow computes
all of it up front: for each dtype, on a fixed set of points x (:func:`table_points`),
the value, gradient and second derivative of each method
(:func:`autodiff_course.log1pexp.tape_derivatives`), the gradient's relative error
against float64, and the float64 references. The points cover the dtype's whole x
range, denser near each landmark of the float format (:func:`~autodiff_course.log1pexp.thresholds`)
and the opening readout, down to the dtype's neighbouring floats on either side of
each threshold, so that the exact 0.0, ``nan`` and ``inf`` entries start where
TensorFlow says they do.

:func:`explorer_table` returns one dtype's :class:`Table`; cached, read-only.
Where a method's output is flagged (``nan``, ``inf``, ``-inf`` or a silent 0.0),
:func:`flag_phrases` says so in words whose numbers are the thresholds themselves,
never a point of the table.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ... import log1pexp as numerics
from ...log1pexp import DTYPES
from ...log1pexp import METHODS
from .state import DEFAULT_READOUT_X
from .state import X_BOUNDS
from .state import X_STEPS

# Spacing of the points that cover the whole range, per dtype.
COARSE_STEP = {"float32": 0.25, "float64": 1.0, "float16": 0.05}
# Around each landmark: points one arrow step apart for this many steps either side...
STEP_WINDOW = 30
# ... and a hundredth of a step apart, for this many hundredths either side...
FINE_WINDOW = 50
# ... and the dtype's own neighbouring floats, this many either side.
NEIGHBOURS = 4

FLAG_KINDS = ("nan", "posinf", "neginf", "zero")
FLAG_WORDS = {"nan": "nan", "posinf": "inf", "neginf": "-inf", "zero": "silent 0.0"}
LANDMARK_NAMES = ("cancellation", "flush_start", "overflow")
# More stretches than this of one kind, none of them at a landmark, are said in one phrase.
MOST_RUNS_NAMED = 2


def _multiples(centre: float, step: float, count: int) -> np.ndarray:
    """``2 * count + 1`` multiples of ``step`` centred on the one nearest ``centre``."""
    middle = int(round(centre / step))
    return np.arange(middle - count, middle + count + 1) * step


def _neighbours(value: float, dtype: str, count: int) -> list[float]:
    """The ``dtype`` float nearest ``value`` and ``count`` neighbours on each side."""
    kind = np.dtype(dtype).type
    centre = kind(value)
    found = [centre]
    low = high = centre
    for _ in range(count):
        low, high = np.nextafter(low, kind(-np.inf)), np.nextafter(high, kind(np.inf))
        found += [low, high]
    return [float(number) for number in found]


def landmarks(dtype: str) -> dict[str, float]:
    """The places where the float format gives way (name -> x), from
    :func:`autodiff_course.log1pexp.thresholds`: those three, and the mirror image of
    ``flush_start``, below which the true gradient (and value) are themselves below the
    smallest normal float, so that a 0.0 there is no longer silent."""
    limits = numerics.thresholds(dtype)
    found = {name: getattr(limits, name) for name in LANDMARK_NAMES}
    found["reference_subnormal"] = -limits.flush_start
    return found


@functools.cache
def table_points(dtype: str) -> np.ndarray:
    """The sorted x (float64 copies of ``dtype`` numbers) at which the explorer is tabulated."""
    low, high = X_BOUNDS[dtype]
    step = X_STEPS[dtype]
    coarse = COARSE_STEP[dtype]
    parts = [np.arange(round(low / coarse), round(high / coarse) + 1) * coarse]
    centres = [*landmarks(dtype).values(), DEFAULT_READOUT_X[dtype]]
    for centre in centres:
        parts.append(_multiples(centre, step, STEP_WINDOW))
        parts.append(_multiples(centre, step / 100, FINE_WINDOW))
    for centre in landmarks(dtype).values():
        parts.append(np.array(_neighbours(centre, dtype, NEIGHBOURS)))
    # Rounded to the decimals of the step grid first, so 88.5 is 88.5, not 88.50000001.
    decimals = int(round(-np.log10(step / 100))) + 1
    x = np.round(np.concatenate(parts), decimals)
    x = x[(x >= low) & (x <= high)].astype(dtype).astype(np.float64)
    return _read_only(np.unique(x))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class Table:
    """One dtype's numbers at the points ``x``, as TensorFlow computed them.

    ``methods[m][q]`` holds quantity ``q`` ("value", "gradient",
    "second_derivative" in ``dtype``; "relative_error" of the gradient, in
    float64) of method ``m``; ``reference[q]`` the float64 closed forms of the
    first three. ``flags[m][q][kind]`` is a boolean mask per flag kind (for the
    relative error: its gradient's), as the strip above the plot marks it.
    """

    dtype: str
    x: np.ndarray
    methods: dict
    reference: dict
    flags: dict

    def series(self, method: str, quantity: str) -> np.ndarray:
        return self.methods[method][quantity]

    def index_of(self, x: float) -> int:
        """The index of the tabulated point nearest ``x`` (the lower one on a tie)."""
        right = int(np.searchsorted(self.x, x))
        if right == 0:
            return 0
        if right == self.x.size:
            return self.x.size - 1
        return right if self.x[right] - x < x - self.x[right - 1] else right - 1


def _flags_of(own: np.ndarray, reference: np.ndarray, dtype: str) -> dict[str, np.ndarray]:
    own = own.astype(np.float64)
    return {
        "nan": _read_only(np.isnan(own)),
        "posinf": _read_only(np.isposinf(own)),
        "neginf": _read_only(np.isneginf(own)),
        "zero": _read_only(numerics.silent_zeros(own, reference, dtype)),
    }


@functools.cache
def explorer_table(dtype: str) -> Table:
    """The :class:`Table` of ``dtype``, computed once per process with ``tf.GradientTape``."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {dtype!r}.")
    x64 = table_points(dtype)
    x = x64.astype(dtype)
    reference = {
        key: _read_only(value) for key, value in numerics.reference_derivatives(x64).items()
    }
    methods, flags = {}, {}
    for method, quantities in numerics.tape_derivatives(x, dtype).items():
        quantities["relative_error"] = numerics.relative_error(
            quantities["gradient"], reference["gradient"]
        )
        methods[method] = {key: _read_only(value) for key, value in quantities.items()}
        flags[method] = {
            quantity: _flags_of(
                quantities["gradient" if quantity == "relative_error" else quantity],
                reference["gradient" if quantity == "relative_error" else quantity],
                dtype,
            )
            for quantity in quantities
        }
    return Table(dtype=dtype, x=x64, methods=methods, reference=reference, flags=flags)


# --------------------------------------------------------------------------
# Flags in words, with the thresholds' own numbers
# --------------------------------------------------------------------------


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The (first, last) index of every stretch of consecutive True entries."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2])]


def _threshold_between(x: np.ndarray, before: int, after: int, dtype: str) -> float | None:
    """The landmark that lies where the table changes from point ``before`` to ``after``
    (give or take a hundredth of an arrow step), or None."""
    slack = X_STEPS[dtype] / 10
    low, high = x[before] - slack, x[after] + slack
    for value in landmarks(dtype).values():
        if low <= value <= high:
            return value
    return None


@dataclass(frozen=True)
class FlagRun:
    """A stretch of flagged points: its kind, its first and last x, and a phrase."""

    kind: str
    first: float
    last: float
    phrase: str


def _at(value: float) -> str:
    from .wording import format_number

    return format_number(value, "fixed")


def flag_runs(table: Table, method: str, quantity: str) -> list[FlagRun]:
    """Every stretch of flagged points of ``method``'s ``quantity``, described in words.

    A stretch that starts or ends at a landmark of the float format is described
    with the landmark's own value ("nan from x = 88.72"); one that does not is
    described by the tabulated points it covers ("silent 0.0 at 3 tabulated points in
    [-30.25, -29.75]").
    """
    x, found = table.x, []
    last_index = x.size - 1
    for kind in FLAG_KINDS:
        word = FLAG_WORDS[kind]
        loose = []
        for first, last in runs(table.flags[method][quantity][kind]):
            start = None if first == 0 else _threshold_between(x, first - 1, first, table.dtype)
            end = None if last == last_index else _threshold_between(x, last, last + 1, table.dtype)
            open_left, open_right = first == 0, last == last_index
            if open_left and open_right:
                phrase = f"{word} everywhere"
            elif (start is not None or open_left) and (end is not None or open_right):
                if open_left:
                    phrase = f"{word} for x < {_at(end)}"
                elif open_right:
                    phrase = f"{word} from x = {_at(start)}"
                else:
                    phrase = f"{word} from x = {_at(start)} to {_at(end)}"
            else:
                loose.append((first, last))
                continue
            found.append(FlagRun(kind, float(x[first]), float(x[last]), phrase))
        groups = [loose] if len(loose) > MOST_RUNS_NAMED else [[one] for one in loose]
        for group in groups:
            if not group:
                continue
            first, last = group[0][0], group[-1][1]
            count = sum(b - a + 1 for a, b in group)
            if count == 1:
                phrase = f"{word} at x = {_at(x[first])}"
            else:
                phrase = f"{word} at {count} tabulated points in [{_at(x[first])}, {_at(x[last])}]"
            found.append(FlagRun(kind, float(x[first]), float(x[last]), phrase))
    return sorted(found, key=lambda run: run.first)


def flag_phrases(table: Table, method: str, quantity: str, x_range=None) -> list[str]:
    """The phrases of the stretches that reach into ``x_range`` (default: all)."""
    low, high = x_range if x_range is not None else (-np.inf, np.inf)
    return [
        run.phrase
        for run in flag_runs(table, method, quantity)
        if run.last >= low and run.first <= high
    ]


def all_tables() -> dict[str, Table]:
    """The tables of every dtype (what the widget receives)."""
    return {dtype: explorer_table(dtype) for dtype in DTYPES}


__all__ = ["METHODS", "Table", "all_tables", "explorer_table", "flag_phrases", "flag_runs"]
