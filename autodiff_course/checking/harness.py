"""What every harness shares: the observation it hands the judge, the upstream-linearity
probe, and the statefulness probes (used by the harnesses of :mod:`.on_tape`,
:mod:`.function` and :mod:`.numpy_rule`).

A harness is written once per *kind* of answer. It owns calling the answer (errors
shown as the learner's, the time limit, global state left alone), reading what came
back into named parts, the method the exercise demands, and the mistakes any answer
of its kind can make, which it hands the judge as generated :class:`~.spec.Mistake`.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import shape_of
from .judging import _head
from .judging import close_points
from .judging import describe_difference
from .judging import matches
from .observing import recording
from .patterns import floor_of
from .spec import Mistake
from .spec import Shape
from .verdicts import Wrong

# The one factor the upstream-linearity probe multiplies the upstream by: another sign,
# another size, and not a power of two (so that float rounding cannot fake linearity).
UPSTREAM_FACTOR = -1.75


@dataclass
class Observation:
    """What the answer gave at one probe: float64 ``parts`` by name, the ``log`` of how
    it differentiated (when observed), and ``again(factor)``, the gradient parts
    recomputed with the upstream times ``factor`` (when the answer has an upstream). A
    ``pending`` verdict (the gradient could not be computed) stands only if the parts
    read before it, such as the value, are right. A ``method`` verdict (the exercise asks
    for another way to compute it) waits for the exercise's own mistakes: the numbers of
    a declared mistake say more; it stands before any generic pattern."""

    parts: dict
    log: object = None
    again: Callable | None = None
    details: dict = field(default_factory=dict)
    pending: Wrong | None = None  # a verdict that stands once the parts read so far are right
    method: Wrong | None = None  # a method verdict: it waits for the exercise's own mistakes


class Harness:
    """The defaults of every harness; each kind overrides what it knows."""

    main = "value"
    nouns: dict = {}

    def noun(self, part: str) -> str:
        return self.nouns.get(part, f"your {part}")

    def fallback_code(self, part: str) -> str:
        return "other"

    def explained(self, case):
        """A verdict read from how the answer ran that explains any wrong part (zeros put
        in place of a None, a function called on part of its batch), named before the
        exercise's own mistakes (stage 0), or None."""
        return None

    def evidence(self, case):
        """A Wrong from what the harness saw while the answer ran, for a result found
        wrong (judged right after the exercise's own mistakes), or None."""
        return None

    def generated(self, case) -> list:
        return []

    def diagnose(self, case):
        return None

    def statefulness(self, answer, seen, exercise) -> None:
        return None

    def after_earlier_calls(self, wrong, seen):
        """A better verdict than ``wrong`` from what the calls before it did, or None."""
        return None

    def verified(self, exercise, probes) -> list:
        return []

    def describe(self) -> str:
        return "any"


def named_shape(value, probe, exercise) -> None:
    """Raise the exercise's :class:`~.spec.Shape` mistake that ``value``'s shape shows."""
    from .judge import fill

    got = shape_of(value)
    for item in exercise.mistakes:
        if isinstance(item, Shape) and got is not None and got == item.shape(probe):
            raise Wrong(fill(item.hint, probe), item.code)


def forgot_upstream(case) -> list:
    """The generated mistake of every rule with an upstream: it gives what the right rule
    gives for an upstream of 1, whatever the upstream is."""
    probe = case.probe
    if probe.upstream is None:
        return []
    ones = np.ones_like(np.asarray(probe.upstream, dtype=np.float64))
    hint = (
        f"{_head(case.noun)} is what the right rule gives for an "
        "upstream of 1, whatever arrives from above: the rule ignores `upstream`. That is "
        "right only when the output itself is the target (upstream = 1); inside a chain "
        "the gradient must be the upstream times the local derivative."
    )
    return [
        Mistake(
            "forgot_upstream",
            hint,
            lambda p: case.exercise.expected(p.but(upstream=ones))[case.part],
            part=case.part,
        )
    ]


def reduced_gradient(case) -> list:
    """The right per-element values summed (or averaged) over the input and spread back."""
    if case.got.size < 2 or np.ptp(case.expected) == 0:
        return []
    found = []
    for word, total in (("summed", np.sum), ("averaged", np.mean)):
        found.append(
            Mistake(
                "reduced_gradient",
                f"{_head(case.noun)} is one number at every element: the "
                f"right per-element values {word} over the whole input and spread back. Each "
                "element gets its own derivative: leave out the tf.reduce_sum / "
                "tf.reduce_mean.",
                lambda p, total=total: np.full(case.got.shape, total(case.expected)),
                part=case.part,
            )
        )
    return found


def _summed_upstream(case, up, local) -> Wrong | None:
    """An element-wise rule whose every element is the local derivative times one number
    made of the whole upstream (its sum or mean), where each element's own belongs."""
    with np.errstate(all="ignore"):
        ratio = case.got / local
    usable = np.isfinite(ratio) & (np.abs(local) > 1e-30)
    if up.size < 2 or usable.sum() < 2:
        return None
    values = ratio[usable]
    if not np.allclose(values, values[0], rtol=1e-4, atol=0.0):
        return None
    for word, made in (("sum", up.sum()), ("mean", up.mean())):
        if np.isclose(values[0], made, rtol=1e-4) and not np.allclose(up, made):
            return Wrong(
                f"{_head(case.noun)} is the local derivative times the "
                f"{word} of the whole upstream, one number for every element. An element-wise "
                "rule multiplies each element's local derivative by that element's own "
                "upstream: upstream * local, no reduction.",
                "upstream_reduced",
            )
    return None


def upstream_linearity(
    case, transform=None, local_name: str = "", elementwise: bool = True
) -> Wrong | None:
    """Does the rule scale with the upstream? With the upstream times
    :data:`UPSTREAM_FACTOR`, a rule ``g = T(upstream) * local`` must give
    ``T(factor * upstream) * local`` (``T`` the identity unless the exercise transforms
    the upstream, as a clip does). If it does not, the rule mishandles the upstream; if
    it does, the local derivative is what differs. A rule that is not ``elementwise``
    (a matmul, a broadcast multiply: each gradient entry sums several upstream entries)
    is judged as a whole: its result must change by the factor itself."""
    again = case.observation.again
    up = case.probe.upstream
    pointwise = elementwise and np.shape(up) == case.got.shape
    if again is None or up is None or (elementwise and not pointwise):
        return None
    try:
        second = again(UPSTREAM_FACTOR)
    except Wrong:
        return None
    if second is None or case.part not in second:
        return None
    got2 = np.asarray(second[case.part], dtype=np.float64)
    if got2.shape != case.got.shape:
        return None
    transform = transform or (lambda u: u)
    up = np.asarray(up, dtype=np.float64)
    where = case.at
    if pointwise:
        t1, t2 = transform(up), transform(UPSTREAM_FACTOR * up)
        with np.errstate(all="ignore"):  # (a clipped upstream can be 0 where x is not)
            local1, local2, should = case.got / t1, got2 / t2, t2 / t1
        usable = (t1 != 0) & (t2 != 0) & np.isfinite(local1) & np.isfinite(local2)
        consistent = close_points(local2[usable], local1[usable], 1e-4, 1e-12)
        should = should[usable].ravel()
    else:
        usable = np.isfinite(case.got) & np.isfinite(got2)
        floor = 1e-12 * float(np.max(np.abs(case.got[usable]), initial=0.0))
        consistent = close_points(got2[usable], UPSTREAM_FACTOR * case.got[usable], 1e-4, floor)
        should = np.full(consistent.shape, UPSTREAM_FACTOR)
    if not usable.any():
        return None
    if not np.all(consistent):
        bad = np.flatnonzero(~consistent)[0]
        if where is not None:
            point = f"at x = {np.asarray(where)[usable].ravel()[bad]:.6g}"
        else:
            index = np.argwhere(usable)[bad].tolist()
            point = f"at index {index if len(index) != 1 else index[0]}"
        with np.errstate(all="ignore"):
            ratio = got2[usable].ravel()[bad] / case.got[usable].ravel()[bad]
        return Wrong(
            f"{_head(case.noun)} does not scale with the upstream: run "
            f"again with the upstream times {UPSTREAM_FACTOR:g}, {point} it changed by a "
            f"factor of {ratio:.6g} where it should change by {should[bad]:.6g}. The rule must "
            "return the upstream times a local derivative that depends on the input only: "
            "do not square, clip or otherwise transform the upstream"
            + (" beyond what the exercise asks." if transform(np.array(9.0)) != 9.0 else "."),
            "upstream_not_linear",
        )
    name = f" is not {local_name}" if local_name else " is wrong"
    if pointwise:
        with np.errstate(all="ignore"):
            expected_local = case.expected / t1
        summed = _summed_upstream(case, t1, expected_local)
        if summed is not None:
            return summed
        local = np.where(usable, local1, np.nan)
        point = describe_difference(
            local, expected_local, where, case.tolerance.rtol, case.tolerance.atol
        )
    else:
        point = case.point()
    return Wrong(
        f"Your rule handles the upstream right (its result scales with it), but the local "
        f"derivative it multiplies by{name}.",
        "wrong_local_derivative",
        point=point,
    )


def upstreams_seen(probes) -> str:
    """The praise's words for the upstreams the probes carried."""
    ups = np.concatenate([np.ravel(p.upstream) for p in probes if p.upstream is not None])
    if ups.size == 0:
        return "with no upstream"
    signs = "both signs" if (ups > 0).any() and (ups < 0).any() else "one sign"
    ones = "+-1 among them" if np.any(np.abs(ups) == 1) else "never +-1"
    return f"with upstreams of {signs}, {ones}" + (", and 0" if np.any(ups == 0) else "")


def linear_in_upstream(case, row) -> Wrong | None:
    """For a result linear in an upstream of another shape than itself (a vector-Jacobian
    product, lesson 01 on): the matrix the answer uses, read one unit upstream at a time
    (``row(unit) -> result``), against the right one. Not linear: ``upstream_not_linear``;
    each row a multiple of the right one: ``wrong_local_derivative``; else
    ``wrong_jacobian``, quoting the entry."""
    up = np.asarray(case.probe.upstream, dtype=np.float64)
    units = np.eye(up.size).reshape((up.size, *up.shape))
    try:
        used = np.stack([np.asarray(row(unit), dtype=np.float64).ravel() for unit in units])
    except Wrong:
        return None
    right = np.stack(
        [case.exercise.expected(case.probe.but(upstream=u))[case.part].ravel() for u in units]
    )
    noun = _head(case.noun)
    if not matches(case.got.ravel(), up.ravel() @ used, 1e-4, max(floor_of(case.got), 1e-300)):
        return Wrong(
            f"{noun} is not linear in the upstream: called with one unit upstream at a time "
            "(1 at entry i, 0 elsewhere) and added up with the upstream's weights, it gives "
            "another result than with the upstream itself. The upstream must enter once, as a "
            "factor, with no square, abs or reduction of its own.",
            "upstream_not_linear",
        )
    norms = (right * right).sum(axis=1)
    factor = (used * right).sum(axis=1) / np.where(norms == 0.0, 1.0, norms)
    if matches(used, factor[:, None] * right, 1e-4, floor_of(used)):
        i = int(np.argmax(np.abs(factor - 1.0)))
        return Wrong(
            f"{noun} takes the upstream back along the right directions, but scales them "
            f"wrongly: what upstream entry {i} contributes comes back {factor[i]:.6g} times "
            "what it should, so the local derivative it is multiplied by is wrong there.",
            "wrong_local_derivative",
        )
    i, j = np.unravel_index(int(np.argmax(np.abs(used - right))), used.shape)
    return Wrong(
        f"Called with a unit upstream at entry {i}, {case.noun} gives row {i} of the matrix "
        f"it multiplies the upstream by: its entry {j} is {used[i, j]:.6g}, where the "
        f"Jacobian has {right[i, j]:.6g}. That matrix is not the Jacobian.",
        "wrong_jacobian",
    )


def keeps_state(what: str, how: str) -> Wrong:
    return Wrong(
        f"{what} is right when called alone, but {how}: it keeps state between calls (a "
        "global variable, a value cached from an earlier call, an object shared by every "
        "instance). Compute everything from the call's own arguments (a closure over its "
        "own inputs).",
        "keeps_state",
    )


def same_parts(first: dict, second: dict, rtol: float, atol: float) -> bool:
    return all(
        part in second and matches(second[part], values, rtol, atol)
        for part, values in first.items()
    )


def same_again(name: str, first: dict, again: dict) -> None:
    """``keeps_state`` unless the first probe, called again after the others, gave the
    same parts."""
    if not same_parts(first, again, 1e-6, 1e-12):
        how = "called again with the first probe's arguments after the others, it returned "
        raise keeps_state(name, how + "other numbers")


def own_state(answer) -> dict:
    """What a call of ``answer`` could change of its own: its default arguments, its
    attributes, the variables of its closure and the module globals its code names, each
    as (identity, size of a container)."""
    code, found = getattr(answer, "__code__", None), {}
    if code is None:
        return found
    defaults = getattr(answer, "__defaults__", None) or ()
    names = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
    space = getattr(answer, "__globals__", {})
    cells = zip(code.co_freevars, getattr(answer, "__closure__", None) or ())
    values = [(f"its default `{n}`", v) for n, v in zip(names, defaults)]
    values += [(f"its attribute `{n}`", v) for n, v in vars(answer).items()]
    values += [(f"the variable `{n}` of its closure", _contents(c)) for n, c in cells]
    values += [(f"the global `{n}`", space.get(n)) for n in code.co_names if n in space]
    for name, value in values:
        size = len(value) if isinstance(value, (list, dict, set)) else None
        found[name] = (id(value), size)
    return found


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet filled
        return None


@dataclass(frozen=True)
class FunctionCall:
    """One call the answer made of a function the check handed it: the shapes of its
    tensor arguments, and whether one of the answer's tapes was recording."""

    name: str
    shapes: tuple
    recording: bool


_LOGGED = weakref.WeakKeyDictionary()  # a function handed over -> (its wrapper, its log)


def _logged(function, calls: list):
    """``function``, noting each call in ``calls``: one wrapper per function, the same in
    every call of a check, as the same function is handed over each time (an answer that
    remembers what it was given sees the same object)."""
    try:
        wrapper, log = _LOGGED[function]
    except (KeyError, TypeError):
        name, log = getattr(function, "__name__", "f"), [calls]
        try:
            original = weakref.ref(function)
        except TypeError:  # a builtin: no weak reference, so no wrapper kept either

            def original():
                return function

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            shapes = tuple(tuple(a.shape) for a in args if hasattr(a, "shape"))
            log[0].append(FunctionCall(name, shapes, recording()))
            return original()(*args, **kwargs)

        with contextlib.suppress(TypeError):
            _LOGGED[function] = (wrapper, log)
    log[0] = calls
    return wrapper


def _drawn_like(probe, exercise):
    """A fresh draw of a probe of ``probe``'s dtype and shape (sizes are drawn too)."""
    seed = 0 if probe.x is None else zlib.crc32(np.asarray(probe.x, np.float64).tobytes())
    rng = np.random.default_rng([seed, 7])
    for _ in range(32):
        for drawn in exercise.draw(rng):
            if (drawn.dtype, drawn.shape) == (probe.dtype, probe.shape):
                return drawn
    return None


def praise(exercise, probes) -> str:
    """What was verified: the claim, the probes, and the method the harness saw."""
    by_dtype = {}
    for probe in probes:
        by_dtype.setdefault(probe.dtype, []).append(probe)
    parts = []
    for dtype, group in by_dtype.items():
        sizes = sorted({tuple(np.shape(p.x)) for p in group if p.x is not None}, key=len)
        xs = [np.asarray(p.where, dtype=np.float64).ravel() for p in group if p.where is not None]
        values = np.concatenate(xs) if xs else np.array([])
        span = (
            f" from {values.min():g} to {values.max():g}"
            if values.size and np.all(np.isfinite(values))
            else ""
        )
        shapes = ", ".join(str(s) for s in sizes[:6])
        parts.append(f"{dtype}{span} (shapes {shapes})" if shapes else dtype)
    verified = exercise.harness.verified(exercise, probes)
    claim = exercise.claim or "Right"
    return f"{claim}: in {'; '.join(parts)}" + (f"; {'; '.join(verified)}." if verified else ".")
