"""The one judge: every answer, probe by probe, in one fixed order (lesson 00 on).

For each probe, the exercise's harness calls the answer and reads its *parts* (or
raises a structural verdict: not a function, an exception, the wrong type, shape or
dtype, a method the exercise forbids, a ``None`` gradient and its cause). Each part is
compared with the reference under the probe's tolerance. Where one differs, the judge
names the mistake, trying, part by part, in this order:

0. what the harness saw of how the answer ran, for a result found wrong (zeros that
   ``unconnected_gradients=ZERO`` put in place of a None, a function that mixes
   examples called on part of the batch, an estimate made without autodiff);
1. the exercise's own mistakes, in declared order (exactly; then with the sign
   flipped; then by majority of five or more points, for a formula that loses digits
   somewhere); then a method verdict the harness found (the right numbers by another
   method than the exercise asks are named by the method, not the numbers);
2. what the harness saw while the answer ran that explains a wrong result (a None
   the answer went on without), then the mistakes it generates for its kind of answer
   (a forgotten upstream, a per-element gradient summed over the input);
3. the exercise's stories: symptoms in regions, reported together;
4. the shared patterns (:mod:`.patterns`): float32 digits in float64, a flipped sign,
   a constant factor, a sum for a mean, a transpose, ..., one slice repeated or the axes
   in another order (rank 2 or more), then answers right in part;
5. the harness's re-run diagnostics (does the rule scale with the upstream?);
6. the fallback: what the part should be, and a point where the values really differ.

A result of another shape than the reference is judged by :func:`wrong_shape` when it
is read: a declared mistake of that shape, the method verdict, the reference arranged
otherwise (the full Jacobian of a per-example answer, one example's slice, a matrix's
diagonal), its axes in another order, one size that differs (typed in, or kept from an
earlier call), else the shape in words (an axis of size 1 dropped or added).

Before a probe is judged, numbers that repeat exactly what an earlier (right) probe gave,
where the right ones differ, are state kept between calls, and so is another verdict for
a failing probe called once more after earlier ones passed; the harness may replace a
later probe's verdict from what the earlier calls did. When every probe passes, the
harness's statefulness probes run and the praise lists what was verified. A verdict is a
:class:`~.verdicts.Wrong` with a code, a hint and the example point; the judge adds which
probe it was, so no hint is ever edited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .answers import shape_wrong
from .harness import keeps_state
from .harness import praise
from .harness import same_parts
from .judging import Tolerance
from .judging import _head
from .judging import close_points
from .judging import describe_difference
from .judging import generic_mistake
from .judging import matches
from .judging import one_number_mistake
from .judging import tolerance_for
from .patterns import close_on_the_whole
from .patterns import constant_where_varying
from .patterns import float32_digits
from .patterns import float32_digits_wrong
from .patterns import float32_underflow
from .patterns import floor_of
from .patterns import other_size
from .patterns import partly_right
from .patterns import permuted_axes
from .patterns import repeated_slice
from .patterns import reshaped_answer
from .probes import fresh_rng
from .spec import Mistake
from .spec import Pattern
from .spec import Probe
from .spec import Symptom
from .verdicts import Wrong


def run(exercise, answer) -> str:
    """The praise for ``answer``, judged probe by probe (else the Wrong, raised)."""
    rng = fresh_rng(exercise.number)
    probes = exercise.draw(rng)
    harness = exercise.harness
    seen = []
    try:
        for probe in probes:
            try:
                seen.append((probe, _judged(exercise, answer, probe, seen, len(probes) > 1)))
            except Wrong as wrong:
                if seen and wrong.mistake not in ("too_slow", "keeps_state", "not_repeatable"):
                    name = getattr(harness, "name", "Your function")
                    again = _verdict_again(exercise, answer, probe)
                    if again != (wrong.mistake, wrong.message):  # right, or another verdict
                        how = "called again with the same arguments, it gave another verdict"
                        raise keeps_state(name, how).about(probe.label) from None
                    if _verdict_again(exercise, answer, seen[0][0]) is not None:
                        how = "called again with the first probe's arguments, it no longer gave "
                        how += "the answer it gave the first time"
                        raise keeps_state(name, how).about(probe.label) from None
                raise
        harness.statefulness(answer, seen, exercise)
    except Wrong as wrong:
        raise harness.after_earlier_calls(wrong, seen) or wrong from None
    return praise(exercise, probes)


def _judged(exercise, answer, probe: Probe, seen, labelled: bool):
    """The observation of one probe, once it is judged right (else the Wrong, raised)."""
    try:
        observation = exercise.harness.observe(answer, probe, exercise)
    except Wrong as wrong:  # a structural verdict: say which probe showed it too
        raise wrong.about(probe.label if labelled else "") from None
    repeats_an_earlier_call(exercise, seen, probe, observation)
    judge_probe(exercise, probe, observation, labelled=labelled)
    return observation


def _verdict_again(exercise, answer, probe: Probe) -> tuple | None:
    """``(code, message)`` of the verdict on ``probe`` called once more after earlier
    probes, None if right. A call that gets another verdict than the first time, or a first
    probe no longer right, shows state kept between calls (a list kept from earlier calls),
    whatever the verdict."""
    try:
        _judged(exercise, answer, probe, (), True)
    except Wrong as again:
        return again.mistake, again.message
    return None


def repeats_an_earlier_call(exercise, seen, probe: Probe, observation) -> None:
    """Raise ``keeps_state`` when ``observation`` gives exactly the numbers of an earlier
    probe, which was right, where the right numbers differ: a result cached from an
    earlier call (a constant could not have been right before)."""
    expected = exercise.expected(probe)
    for earlier, before in seen:
        if same_parts(before.parts, observation.parts, 0.0, 0.0) and not same_parts(
            exercise.expected(earlier), expected, 1e-3, 1e-9
        ):
            raise keeps_state(
                getattr(exercise.harness, "name", "Your function"),
                "called with new arguments, it returned exactly the numbers of an earlier call",
            )


def tolerance_of(exercise, probe: Probe, part: str) -> Tolerance:
    if exercise.tolerance is not None:
        found = exercise.tolerance(probe, part)
        if found is not None:
            return found
    return tolerance_for(probe.dtype)


@dataclass
class Case:
    """One part of one probe that differs from the reference: what every stage reads."""

    exercise: object
    probe: Probe
    observation: object
    part: str
    got: np.ndarray
    expected: np.ndarray
    tolerance: Tolerance

    def __post_init__(self):  # a per-point atol accepts; naming uses one, the smallest
        if np.ndim(self.tolerance.atol):
            self.tolerance = Tolerance(self.tolerance.rtol, float(np.min(self.tolerance.atol)))

    @property
    def noun(self) -> str:
        return self.exercise.harness.noun(self.part)

    @property
    def at(self):
        where = self.probe.where
        return where if where is not None and np.shape(where) == self.got.shape else None

    def point(self) -> str:
        tolerance = tolerance_of(self.exercise, self.probe, self.part)  # per point
        return describe_difference(self.got, self.expected, self.at, tolerance.rtol, tolerance.atol)


def judge_probe(exercise, probe: Probe, observation, *, labelled: bool = False) -> None:
    """Return quietly when every part matches its reference; else raise the best Wrong."""
    expected = exercise.expected(probe)
    cases = []
    for part, want in expected.items():
        if part not in observation.parts:
            continue  # not read: a structural verdict waits for the parts before it
        got = np.asarray(observation.parts[part], dtype=np.float64)
        tolerance = tolerance_of(exercise, probe, part)
        if not matches(got, want, tolerance.rtol, tolerance.atol):
            case = Case(exercise, probe, observation, part, got, want, tolerance)
            cases.append(case)
    if not cases:
        waiting = observation.method or observation.pending
        if waiting is not None:
            raise waiting.about(probe.label if labelled else "")
        return
    for stage in STAGES:
        for case in cases:
            wrong = stage(case, cases)
            if wrong is not None:
                raise wrong.about(probe.label if labelled else "")


# -- 1. the exercise's own mistakes --------------------------------------------------


def fill(text: str, probe: Probe, **more) -> str:
    """``text`` with ``{name}`` replaced by the probe's field of that name (others kept)."""
    fields = {"dtype": probe.dtype, "label": probe.label, **dict(probe.data), **more}
    if probe.x is not None:
        fields.setdefault("n", int(np.size(probe.x)))
        fields.setdefault("shape", tuple(np.shape(probe.x)))
    return re.sub(r"\{(\w+)\}", lambda m: str(fields.get(m.group(1), m.group(0))), text)


def _candidates(mistake_list, case: Case):
    for mistake in mistake_list:
        if not isinstance(mistake, Mistake):
            continue
        if mistake.part is not None and mistake.part != case.part:
            continue
        gives = mistake.gives(case.probe)
        if isinstance(gives, dict):
            gives = gives.get(case.part)
        elif mistake.part is None and case.part != case.exercise.harness.main:
            continue
        if gives is None:
            continue
        values = np.asarray(gives, dtype=np.float64)
        if values.shape != case.got.shape and values.size == 1 and values.ndim <= case.got.ndim:
            values = np.broadcast_to(values, case.got.shape)
        tol = case.tolerance
        # A mistake that gives the right value for this part cannot explain it.
        if values.shape == case.got.shape and not matches(
            values, case.expected, tol.rtol, tol.atol
        ):
            yield mistake, values


def _recognised(case: Case, values, where_finite: bool) -> bool:
    got, floor = case.got, max(case.tolerance.atol, floor_of(case.expected))
    rtol = case.tolerance.rtol
    if where_finite:
        finite = np.isfinite(got)
        if finite.sum() * 2 < got.size or not finite.any():
            return False
        if matches(got[finite], case.expected[finite], max(rtol, 1e-4), floor):
            return False  # right wherever finite: the far ends are the mistake
        return matches(got[finite], values[finite], max(rtol, 1e-4), floor)
    if matches(got, case.expected, rtol, floor):
        return False  # as near the answer as to the mistake: the numbers cannot tell them apart
    return matches(got, values, rtol, floor)


def named_mistake(case: Case, mistake_list, *, mostly: bool = True) -> Wrong | None:
    """The first of ``mistake_list`` that the case's values are, in declared order (then
    with the sign flipped, then, with ``mostly``, by majority of the points)."""
    candidates = list(_candidates(mistake_list, case))
    for mistake, values in candidates:
        if _recognised(case, values, mistake.where_finite):
            return Wrong(fill(mistake.hint, case.probe), mistake.code)
    for mistake, values in candidates:
        if mistake.code != "sign_flipped" and _recognised(case, -values, mistake.where_finite):
            hint = fill(mistake.hint, case.probe) + " (The sign is flipped as well.)"
            return Wrong(hint, mistake.code)
    for mistake, values in candidates if mostly else ():
        if _mostly(case, values):
            return Wrong(fill(mistake.hint, case.probe), mistake.code)
    return None


def _mostly(case: Case, values) -> bool:
    """The mistake's formula, with digits lost at a few points: among the points where
    the mistake and the answer differ (five or more), at least 80% match the mistake,
    30% more than match the answer, and the others are within 1% of the mistake, as
    every point is where the two agree (an answer wrong there is another mistake)."""
    if np.shape(values) != np.shape(case.expected):
        return False  # a mistake of another shape: its values are named exactly or not at all
    floor = max(case.tolerance.atol, floor_of(case.expected))
    telling = ~close_points(values, case.expected, 1e-3, floor)
    if telling.sum() < 5:
        return False
    near = close_points(case.got, values, 1e-3, floor)[telling]
    near_answer = close_points(case.got, case.expected, 1e-3, floor)[telling]
    roughly = close_points(case.got, values, 1e-2, 100 * floor)
    return near.mean() >= 0.8 and near.mean() >= near_answer.mean() + 0.3 and roughly.all()


def _symptom(case: Case, symptom: Symptom) -> Wrong | None:
    region = (
        np.ones(case.got.shape, bool)
        if symptom.region is None
        else np.broadcast_to(symptom.region(case.probe), case.got.shape)
    )
    shows = np.asarray(symptom.shows(case.got, case.probe), bool) & region
    if not shows.any():
        return None
    where = symptom.at(case.probe) if symptom.at is not None else case.at
    got = case.got[shows]
    if where is not None and np.shape(where) == shows.shape:
        points = np.asarray(where, dtype=np.float64)[shows]
        # The most telling first: inf and nan, then exact zeros, each nearest 0 first.
        order = np.lexsort((np.abs(points), got != 0, np.isfinite(got)))
        points, got = list(points[order]), got[order]
    else:
        points = [list(map(int, i)) if len(i) > 1 else int(i[0]) for i in np.argwhere(shows)]
    text = fill(symptom.hint, case.probe, points=sample(points), value=number(got[0]))
    return Wrong(text, symptom.code)


def _declared(case: Case, cases) -> Wrong | None:
    found = named_mistake(case, case.exercise.mistakes)
    if found is not None:
        return found
    main = case.exercise.harness.main
    for item in case.exercise.mistakes:
        if not isinstance(item, (Symptom, Pattern)) or (item.part or main) != case.part:
            continue
        if isinstance(item, Symptom):
            found = _symptom(case, item)
        else:
            found = _pattern(item, case.got, case.probe)
        if found is not None:
            return found
    return None


def _pattern(pattern: Pattern, got, probe: Probe) -> Wrong | None:
    """The declared ``pattern``'s verdict, when ``got`` shows it."""
    fields = pattern.find(got, probe)
    return None if fields is None else Wrong(fill(pattern.hint, probe, **fields), pattern.code)


# -- 2. the harness's own ------------------------------------------------------------------


def _generated(case: Case, cases) -> Wrong | None:
    harness = case.exercise.harness
    found = harness.evidence(case)
    return found or named_mistake(case, harness.generated(case), mostly=False)


# -- 3. stories --------------------------------------------------------------------------


def _stories(case: Case, cases) -> Wrong | None:
    if case is not cases[0]:
        return None  # a story looks at every part at once
    main = case.exercise.harness.main
    for story in case.exercise.stories:
        parts = {symptom.part or main for symptom in story.symptoms}
        quiet_parts = set()
        for other in (c for c in cases if c.part in parts):
            quiet = np.broadcast_to(story.quiet(other.probe), other.got.shape)
            tol = other.tolerance
            if matches(other.got[quiet], other.expected[quiet], tol.rtol, tol.atol):
                quiet_parts.add(other.part)
        found = []
        for symptom in story.symptoms:
            part = symptom.part or case.exercise.harness.main
            other = next((c for c in cases if c.part == part), None)
            if other is not None and part in quiet_parts:
                wrong = _symptom(other, symptom)
                if wrong is not None:
                    found.append(wrong)
        if found:
            modes = "failure mode" if len(found) == 1 else "failure modes"
            listed = "; ".join(f"({i}) {w.hint}" for i, w in enumerate(found, 1))
            return Wrong(f"Still {len(found)} {modes} of {story.name}: {listed}.", found[0].mistake)
    return None


# -- 4. shared patterns --------------------------------------------------------------------


def _shared(case: Case, cases) -> Wrong | None:
    got, expected, tol = case.got, case.expected, case.tolerance
    if case.probe.dtype == "float64" and float32_digits(case):
        return float32_digits_wrong(case.noun)
    if case.probe.dtype == "float64" and (underflow := float32_underflow(case)):
        return underflow
    if got.size == 1:
        generic = one_number_mistake(got.item(), expected.item(), case.noun)
    else:
        batch = case.probe.data.get("batch")
        generic = generic_mistake(
            got, expected, rtol=tol.rtol, atol=tol.atol, batch=batch, what=case.noun
        )
    if generic is not None or got.size == 1:  # one number: nothing more to read in it
        return None if generic is None else Wrong(generic[1], generic[0], point=case.point())
    should = case.exercise.describe.get(case.part, "")
    return (
        constant_where_varying(got, expected, case.noun)
        or repeated_slice(got, expected, case.noun)
        or permuted_axes(got, expected, case.noun, should)
        or partly_right(got, expected, tol.rtol, tol.atol, case.noun, at=case.at)
        or close_on_the_whole(got, expected, case.noun)
    )


# -- a result of another shape ----------------------------------------------------------


def wrong_shape(exercise, probe: Probe, got, name: str, *, part=None, method=None) -> Wrong:
    """The verdict on ``got`` (float64), read at ``probe`` with another shape than the
    reference's ``part`` (the main one by default): the first declared mistake that gives
    that shape and those numbers (or a declared :class:`~.spec.Pattern` that finds it),
    the ``method`` verdict when there is one, the reference with its axes in another
    order, else the shape in words."""
    part = part or exercise.harness.main
    expected = exercise.expected(probe)[part]
    got = np.asarray(got, dtype=np.float64)
    case = Case(exercise, probe, None, part, got, expected, tolerance_of(exercise, probe, part))
    found = named_mistake(case, exercise.mistakes)
    for item in exercise.mistakes if found is None else ():
        if isinstance(item, Pattern) and (item.part or part) == part:
            try:
                found = _pattern(item, got, probe)
            except ValueError:  # a pattern written for the reference's shape
                continue
            if found is not None:
                return found
    should = exercise.describe.get(part, "")
    return (
        found
        or method
        or reshaped_answer(got, expected, case.noun)
        or permuted_axes(got, expected, case.noun, should)
        or other_size(got, expected, case.noun)
        or shape_wrong(name, got.shape, expected.shape)
    )


# -- 6. the fallback ----------------------------------------------------------------------


def _fallback(case: Case, cases) -> Wrong:
    should = case.exercise.describe.get(case.part)
    head = f"{_head(case.noun)} should be {should}." if should else "Not the answer yet."
    code = case.exercise.harness.fallback_code(case.part)
    return Wrong(fill(head, case.probe), code, point=case.point())


STAGES = (  # each (case, cases) -> Wrong | None, in the order the module docstring gives
    lambda case, cases: case.exercise.harness.explained(case),
    _declared,
    lambda case, cases: case.observation.method,
    _generated,
    _stories,
    _shared,
    lambda case, cases: case.exercise.harness.diagnose(case),
    _fallback,
)


def number(value) -> str:
    """A value as a hint shows it: 0.0, inf, nan, or six significant digits."""
    value = float(value)
    return "0.0" if value == 0 else f"{value:.6g}"


def sample(values, limit: int = 3) -> str:
    """The first few points where a symptom shows: x values (``{:g}``) or indices."""
    values = values if isinstance(values, list) else list(np.asarray(values).ravel())
    shown = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")
