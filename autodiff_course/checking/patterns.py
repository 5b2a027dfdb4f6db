"""Wrong answers that are right in part: the patterns behind a value that differs.

The judge (:mod:`.judge`) consults these after the exercise's own mistakes and the
generic whole-array patterns have found nothing, so that the fallback hint names
what a learner can act on (each takes the answer and the reference as float64 arrays, as
the judge holds them):

* right where the answer is small, capped where it is larger (a clip);
* right on one side of zero only (an ``abs`` or a condition on the sign);
* the right size everywhere, the wrong sign at some entries;
* right at some entries, zero at others (a mask);
* a factor and a constant off at once (an identity misremembered);
* close on the scale of the whole array but not point by point (an approximation);
* float32 digits in a float64 result;
* a factor or a term too many, among quantities the exercise names (:func:`stray`).
"""

from __future__ import annotations

import numpy as np

from .judging import _has
from .judging import _head
from .judging import _is
from .judging import close_points
from .judging import matches
from .spec import Pattern
from .verdicts import Wrong


def floor_of(expected) -> float:
    """An absolute floor for *recognising* mistakes: 1e-5 of the answer's scale.

    Only for naming a mistake, never for accepting an answer: float32 rounding at a
    value that is zero in one precision and not the other must not hide it.
    """
    expected = np.asarray(expected, dtype=np.float64)
    return 1e-5 * float(np.max(np.abs(expected))) if expected.size else 0.0


def only_float32_digits(got, expected) -> bool:
    """True when float64 values are float32 numbers in disguise, close to the answer."""
    if not np.all(np.isfinite(got)) or not np.any(got != 0.0):
        return False
    with np.errstate(over="ignore"):
        representable = np.all(got.astype(np.float32).astype(np.float64) == got)
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 1.0
    return bool(representable) and matches(got, expected, 1e-4, 1e-6 * scale)


def float32_digits_wrong(what: str) -> Wrong:
    return Wrong(
        f"{_head(what)} {_has(what)} only float32's digits where the input is "
        f"float64: every value is a float32 number. Somewhere the computation "
        f"went through float32 (a cast, a tf.constant without dtype, "
        f"dtype=tf.float32) and was cast back. Keep the input's dtype "
        f"throughout.",
        "float32_not_float64",
    )


def float32_underflow(case) -> Wrong | None:
    """A float64 result right to float32's precision, and off where the answer is below
    1e-30, far under float32's smallest normal number (1.2e-38), which float32 flushes."""
    got, expected = case.got, case.expected
    tiny = (np.abs(expected) < 1e-30) & ~close_points(got, expected, 1e-5, 0.0)
    if not tiny.any() or not np.all(close_points(got, expected, 1e-5, 1e-30)):
        return None
    return Wrong(
        f"{_head(case.noun)} {_is(case.noun)} right to float32's precision only, and off "
        f"where the answer is tinier than float32 can hold (expected {expected[tiny][0]:.6g}, "
        f"got {got[tiny][0]:.6g}): somewhere the computation went through float32 (a "
        "cast, a tf.constant without dtype, dtype=tf.float32) and was cast back. Keep the "
        "input's dtype throughout.",
        "float32_not_float64",
    )


def _indices(mask) -> str:
    return ", ".join(
        str([int(j) for j in i]) if len(i) > 1 else str(int(i[0])) for i in np.argwhere(mask)[:4]
    )


def _stops_changing(got, right, inputs):
    """``(low, high, words)``: the inputs of the right entries, where every wrong entry lies
    beyond them and those on each side all have one value (at least two of them), and
    those values in words."""
    off = ~right
    low, high = float(np.min(inputs[right])), float(np.max(inputs[right]))
    sides = (off & (inputs > high), off & (inputs < low))
    if off.sum() != sum(side.sum() for side in sides) or max(s.sum() for s in sides) < 2:
        return None
    found = []
    for side, words in zip(sides, (f"above {high:g}", f"below {low:g}")):
        if side.any() and not np.allclose(got[side], got[side].ravel()[0], rtol=1e-6, atol=0):
            return None
        found += [f"{got[side].ravel()[0]:.4g} at every x {words}"] if side.any() else []
    return low, high, " and ".join(found)


def partly_right(got, expected, rtol: float, atol: float, what: str, at=None) -> Wrong | None:
    """The Wrong for an answer right on part of the probes, or None."""
    if got.shape != expected.shape or got.size <= 1 or not np.all(np.isfinite(got)):
        return None
    floor = max(atol, floor_of(expected))
    right = close_points(got, expected, rtol, floor)
    off = ~right
    if right.any() and off.sum() >= 2:
        bound = np.abs(got[off])
        if (
            np.allclose(bound, bound[0], rtol=1e-6)
            and np.all(np.abs(expected[off]) > bound[0])
            and np.all(np.sign(got[off]) == np.sign(expected[off]))
            and np.all(np.abs(expected[right]) <= bound[0] * (1 + 1e-6))
        ):
            return Wrong(
                f"{_head(what)} {_is(what)} right where the answer is small, but stops at "
                f"{bound[0]:.6g} where the answer is larger: a clip "
                f"(tf.clip_by_value, tf.minimum, tf.maximum). Return the "
                f"formula unclipped.",
                "clipped",
            )
        if at is not None and np.shape(at) == got.shape:
            inputs = np.asarray(at, dtype=np.float64)
            for side, words in ((inputs >= 0, "x >= 0"), (inputs <= 0, "x <= 0")):
                if np.array_equal(right | (inputs == 0), side | (inputs == 0)) and right.sum() >= 2:
                    return Wrong(
                        f"{_head(what)} {_is(what)} right for {words} and wrong on the "
                        f"other side: the formula holds for every x. Look for "
                        f"an abs(), a tf.where or a condition on the sign of x.",
                        "one_tail",
                    )
    exact = close_points(got, expected, rtol, atol)
    if at is not None and np.shape(at) == got.shape and exact.any():
        beyond = _stops_changing(got, exact, np.asarray(at, dtype=np.float64))
        if beyond is not None:
            return Wrong(
                f"{_head(what)} {_is(what)} right for x from {beyond[0]:g} to {beyond[1]:g}, "
                f"but then stops changing: {beyond[2]}, as if x (or the result) were "
                "clipped (tf.clip_by_value, tf.minimum or tf.maximum). The formula holds for "
                "every x: use x itself, unclipped.",
                "clipped_input",
            )
    flipped = (np.sign(got) != np.sign(expected)) & (got != 0) & (expected != 0)
    if flipped.any() and matches(np.abs(got), np.abs(expected), rtol, floor):
        return Wrong(
            f"{_head(what)} {_has(what)} the right size everywhere, but the wrong sign at "
            f"some entries (index {_indices(flipped)}): a factor that changes "
            f"sign from entry to entry (np.sign, a comparison, an abs() in the "
            f"wrong place) crept in.",
            "sign_flipped",
        )
    zeroed = (got == 0.0) & (expected != 0.0)
    if zeroed.any() and not zeroed.all() and matches(got[~zeroed], expected[~zeroed], rtol, floor):
        return Wrong(
            f"{_head(what)} {_is(what)} right at some entries and 0 at others (index "
            f"{_indices(zeroed)}): a mask or a condition (tf.where, a "
            f"comparison, tf.nn.relu, tf.maximum) zeroed them. The formula "
            f"holds for every entry.",
            "masked_entries",
        )
    if float(np.ptp(expected)) > 0.0 and got.size >= 5:
        slope, offset = np.polyfit(expected.ravel(), got.ravel(), 1)
        if (
            abs(offset) > 1e-9 * (1.0 + abs(slope))
            and abs(slope - 1.0) > 1e-6
            and matches(got, slope * expected + offset, 1e-6, floor)
        ):
            return Wrong(
                f"{_head(what)} {_is(what)} {slope:.6g} times the answer plus "
                f"{offset:.6g} at every point: the shape of the formula is "
                f"right, but a factor and a constant are off (an identity "
                f"misremembered, such as sigmoid(-x) = 1 - sigmoid(x)?).",
                "scale_and_offset",
            )
    return None


def close_on_the_whole(got, expected, what: str) -> Wrong | None:
    """An approximation judged against the array's scale, not point by point.

    A finite difference in float32 misses tiny values by a lot relative to
    themselves, yet stays within a hair of the answer measured against its largest
    value; the per-point test cannot see that.
    """
    if got.shape != expected.shape or not np.all(np.isfinite(got)) or expected.size == 0:
        return None
    scale = float(np.max(np.abs(expected)))
    largest = float(np.max(np.abs(got - expected)))
    if scale == 0.0 or largest > 1e-2 * scale:
        return None
    return Wrong(
        f"{_head(what)} {_is(what)} close to the answer everywhere (the largest "
        f"difference, {largest:.2g}, is {100 * largest / scale:.2g}% of the "
        f"largest value) but not as close as the check allows: some step is "
        f"computed otherwise than the exercise asks (an estimate where autodiff or "
        f"a formula belongs, another step size, float32 arithmetic, a rounded "
        f"constant).",
        "approximation",
    )


def stray(reference, **terms) -> tuple:
    """Two :class:`~.spec.Pattern` for an exercise's declared mistakes (lesson 01 on): the
    answer times one of ``terms`` (``extra_factor``), or plus or minus one
    (``added_term``). Each term is ``probe -> values``, named by its keyword; ``reference``
    is the exercise's (its main part)."""

    def finder(combine):
        def find(got, probe):
            expected = np.asarray(reference(probe), dtype=np.float64)
            if expected.shape != got.shape:
                return None
            floor, rtol = floor_of(expected), 1e-9 if probe.dtype == "float64" else 2e-5
            for name, term in terms.items():
                values = np.asarray(term(probe), dtype=np.float64)
                if values.size != 1 and values.shape != got.shape:
                    continue
                for sign, word in combine:
                    made = expected * values if word == "times" else expected + sign * values
                    if np.any(made != expected) and matches(got, made, rtol, floor):
                        return {
                            "name": name,
                            "word": word,
                            "op": "*" if sign is None else "+-"[sign < 0],
                        }
            return None

        return find

    return (
        Pattern(
            "extra_factor",
            "The result is the answer {word} {name}: a factor too many. Look for a stray "
            "`{op} {name}`.",
            finder(((None, "times"),)),
        ),
        Pattern(
            "added_term",
            "The result is the answer {word} {name}: a term too many. Look for a stray "
            "`{op} {name}`.",
            finder(((1.0, "plus"), (-1.0, "minus"))),
        ),
    )


def _times(size: float, name: str) -> str:
    """``0.5 * b``, ``b`` for a size of 1, ``0.25`` for a constant."""
    if not name:
        return f"{size:.4g}"
    return name if np.isclose(size, 1.0) else f"{size:.4g} * {name}"


def linear_mix(code: str, hint: str, reference, implied=None, **terms) -> Pattern:
    """A :class:`~.spec.Pattern` for an exercise's declared mistakes (lesson 01 on): the
    result (or ``implied(got, probe)``, what it says of a quantity inside it) is a mix of
    the named ``terms`` (``probe -> values``) and a constant, other than ``reference``'s
    own mix (when it is one). A constant, or a multiple of the reference, is left to the
    generic patterns. ``hint`` may name ``{mix}``, the result's coefficients, and
    ``{right}``, the reference's."""

    def coefficients(basis, values):
        found, *_ = np.linalg.lstsq(basis, values, rcond=None)
        fits = np.allclose(basis @ found, values, 1e-5, 1e-6 * (np.max(np.abs(values)) or 1.0))
        return found if fits else None

    def spelled(found):
        """``0.4 * output - 0.4 * target + 0.1``, leaving out the coefficients that are 0."""
        small = 1e-9 * np.max(np.abs(found))
        parts = [
            ("- " if c < 0 else "+ ") + _times(abs(c), name)
            for c, name in zip(found, [*terms, ""])
            if abs(c) > small
        ]
        text = " ".join(parts)
        return text[2:] if text.startswith("+") else "-" + text[2:]

    def find(got, probe):
        used = np.asarray(got if implied is None else implied(got, probe), np.float64).ravel()
        columns = [np.broadcast_to(term(probe), got.shape).ravel() for term in terms.values()]
        basis = np.stack([*columns, np.ones(used.size)], axis=1)
        mine = coefficients(basis, used) if used.size > basis.shape[1] else None
        if mine is None or np.allclose(mine[:-1], 0.0, atol=1e-9 * np.max(np.abs(mine))):
            return None
        right = coefficients(basis, np.asarray(reference(probe), np.float64).ravel())
        if right is not None and np.allclose(
            mine, (mine @ right) / (right @ right) * right, 1e-4, 1e-6 * np.max(np.abs(mine))
        ):
            return None
        return {"mix": spelled(mine), "right": "none" if right is None else spelled(right)}

    return Pattern(code, hint, find)


def permuted_axes(got, expected, what: str, should: str = "") -> Wrong | None:
    """The right numbers with the axes in another order, for arrays of rank 2 or more
    (rank 6 at most): a transpose, a stack along another axis, a layout source first.
    ``got`` may have another shape than ``expected`` (the permuted one); ``should``,
    what the result should be, ends the hint."""
    import itertools

    if got.ndim != expected.ndim or not 2 <= got.ndim <= 6 or got.size != expected.size:
        return None
    if sorted(got.shape) != sorted(expected.shape) or not np.all(np.isfinite(got)):
        return None
    floor = floor_of(expected)
    identity = tuple(range(got.ndim))
    for order in itertools.permutations(identity):
        moved = np.transpose(expected, order)
        if order == identity or moved.shape != got.shape:
            continue
        if matches(moved, expected, 1e-9, floor):
            continue  # a symmetric answer: this order cannot be told from the right one
        if matches(got, moved, 1e-4, floor):
            return Wrong(
                f"{_head(what)} {_has(what)} the right numbers with the axes in another "
                f"order: your axes are the answer's axes {list(order)}, so the shape is "
                f"{got.shape} where {expected.shape} belongs. Stack or transpose along the "
                "axes the exercise gives."
                + (f" {_head(what)} should be {should}." if should else ""),
                "transposed",
            )
    return None


def repeated_slice(got, expected, what: str) -> Wrong | None:
    """One slice copied along an axis, for arrays of rank 2 or more: every index of that
    axis holds the same numbers, where the answer's slices differ."""
    if got.ndim < 2 or got.shape != expected.shape or not np.any(got):
        return None
    for axis in range(got.ndim):
        if got.shape[axis] < 2:
            continue
        if np.allclose(got, np.take(got, [0], axis=axis), rtol=1e-6, atol=0.0) and not np.allclose(
            expected, np.take(expected, [0], axis=axis), rtol=1e-6, atol=0.0
        ):
            return Wrong(
                f"{_head(what)} repeats one slice along axis {axis}: every index of that axis "
                "holds the same numbers, where the answer's differ. One slice was computed "
                "and copied: an index that does not follow the loop, the first example used "
                "for every example, one upstream or tangent for every slice?",
                "repeated_slice",
            )
    return None


def reshaped_answer(got, expected, what: str) -> Wrong | None:
    """A result of another shape that holds the answer differently arranged: the full
    (batch, ..., batch, ...) Jacobian whose diagonal blocks are a per-example answer, one
    example's slice of it, or a square answer's diagonal as a vector."""
    if expected.ndim == 0 or not np.all(np.isfinite(got)):
        return None
    floor, batch = floor_of(expected), expected.shape[0]
    # a batch of one: an axis of size 1 added is told in words, not as a Jacobian
    for axis in range(1, got.ndim) if got.ndim == expected.ndim + 1 and batch > 1 else ():
        if got.shape[0] == got.shape[axis] == batch:
            own = np.stack([np.take(got[b], b, axis=axis - 1) for b in range(batch)])
            if matches(own, expected, 1e-4, floor):
                return Wrong(
                    f"{_head(what)} {_has(what)} shape {got.shape}: every example against "
                    f"every example, the full tape.jacobian. The answer is its diagonal "
                    f"blocks, example b against example b, shape {expected.shape} "
                    "(batch_jacobian gives them directly when the examples are independent).",
                    "returned_full_jacobian",
                )
    if got.size == 1 and not got.any() and not expected.any():
        return Wrong(
            f"{_head(what)} {_is(what)} a single 0, shape {got.shape}, where the answer is "
            f"zeros of shape {expected.shape}, one per entry: make them with tf.zeros_like "
            "(or unconnected_gradients=tf.UnconnectedGradients.ZERO), not tf.constant(0.0).",
            "wrong_shape",
        )
    if batch > 1 and matches(got, expected[0], 1e-4, floor):
        return Wrong(
            f"{_head(what)} {_is(what)} the first example's alone, shape {got.shape}: the "
            f"answer has one per example, stacked along a first axis of {batch}.",
            "single_example",
        )
    square = expected.ndim == 2 and expected.shape[0] == expected.shape[1]
    if square and matches(got, np.diag(expected), 1e-4, floor):
        return Wrong(
            f"{_head(what)} {_is(what)} the answer's diagonal, a vector of shape {got.shape}: "
            f"the answer is the {expected.shape} matrix with these numbers on its diagonal "
            "(target shape + source shape), zero elsewhere: tf.linalg.diag makes it.",
            "returned_diagonal",
        )
    return None


def _one_slice_off(got, expected, axis: int) -> str | None:
    """How ``got`` is ``expected`` with its first or last slice along ``axis`` missing or
    added, if it is."""
    short = got.shape[axis] < expected.shape[axis]
    longer, shorter = (expected, got) if short else (got, expected)
    for index, which in ((-1, "last"), (0, "first")):
        kept = np.delete(longer, index, axis=axis)
        with np.errstate(all="ignore"):
            if np.allclose(kept, shorter, 1e-5, 1e-12, equal_nan=True):
                return f"the {which} one is {'missing' if short else 'one too many'}"
    return None


def other_size(got, expected, what: str) -> Wrong | None:
    """A result whose shape differs from the answer's in one axis only: a size typed in,
    or kept from an earlier call, instead of read from the arguments."""
    got_shape, shape = np.shape(got), np.shape(expected)
    if len(got_shape) != len(shape) or got_shape == shape:
        return None
    axes = [k for k, (a, b) in enumerate(zip(got_shape, shape)) if a != b]
    if len(axes) != 1 or 1 in (got_shape[axes[0]], shape[axes[0]]):
        return None
    k = axes[0]
    if abs(got_shape[k] - shape[k]) == 1:
        found = _one_slice_off(got, expected, k)
        if found is not None:
            return Wrong(
                f"{_head(what)} {_has(what)} {got_shape[k]} entries along axis {k} where this "
                f"probe's answer has {shape[k]}, and the others are right: {found}. A loop one "
                "step off (range(n - 1), or from 1), or a size typed in or kept from an earlier "
                "call? Read the size from the arguments and loop over every index.",
                "hard_coded_size",
            )
    return Wrong(
        f"{_head(what)} {_has(what)} {got_shape[k]} entries along axis {k}, where this probe's "
        f"answer has {shape[k]} (shape {got_shape} for {shape}): a size typed in, or kept from "
        "an earlier call, instead of read from the arguments (x.shape, y.shape).",
        "hard_coded_size",
    )


def constant_where_varying(got, expected, what: str) -> Wrong | None:
    """One number at every entry where the answer is not zero (and zero where it is), while
    the answer's entries differ: numbers typed in, or the input cancelled out."""
    nonzero = expected != 0.0
    if got.shape != expected.shape or nonzero.sum() < 2 or nonzero.all():
        return None
    if np.ptp(got[nonzero]) or np.any(got[~nonzero]) or not np.ptp(expected[nonzero]):
        return None
    return Wrong(
        f"{_head(what)} {_is(what)} {float(got[nonzero][0]):.6g} at every entry where the "
        "answer is not zero, but the answer changes from entry to entry: numbers typed in, or "
        "the input cancelled out of the formula. Compute each entry from the arguments.",
        "hard_coded",
    )


def float32_digits(case) -> bool:
    """float64 values that carry only float32's digits: the values themselves, or, for a
    gradient that multiplies an upstream, the local derivative it multiplies by."""
    if only_float32_digits(case.got, case.expected):
        return True
    up = case.probe.upstream
    if up is None or np.shape(up) != case.got.shape or np.any(np.asarray(up) == 0):
        return False
    local = case.got / up  # float32 digits times a float64 upstream, divided again:
    with np.errstate(over="ignore"):  # float32 numbers to a few float64 roundings
        snapped = local.astype(np.float32).astype(np.float64)
    near = np.abs(local - snapped) <= 8 * np.finfo(np.float64).eps * np.abs(local)
    return bool(np.all(near)) and only_float32_digits(snapped, case.expected / up)
