"""The harness for a function the check calls directly, run under the learner's own tapes
(lessons 00, 01, 02, 04 and 05).

The check builds the arguments from the probe: ``arguments(probe)``, or ``arguments``
names the probe's fields to pass (by default ``("x",)``), arrays as tensors of the probe's
dtype, anything else (a function to differentiate) as it is, and a None is then named
after the field it came from. It calls the answer while noting every tape,
accumulator and operation it uses (:mod:`.observing`, and with ``provenance`` the whole
run, :mod:`.provenance`), and reads what came back with ``read`` (by default one tensor
of the reference's shape and the probe's dtype). Method flags say what the exercise
demands:

* ``by_hand``: no tape, accumulator or ``tf.test.compute_gradient``;
* ``output_gradients``: ``tape.gradient(..., output_gradients=dy)``; ``"by_hand"``
  also demands that ``dy`` did not come from another tape;
* ``nested``: an inner tape's gradient computed while an outer tape records;
* ``forward_mode``: ``tf.autodiff.ForwardAccumulator`` and no reverse mode;
* ``forbid``: ``"jacobian"`` (no ``tape.jacobian``/``batch_jacobian``) or
  ``"gradcheck"`` (not the course's own finite differences).

``forbid`` may map each name to the reason the hint ends with; ``"accumulator"``
forbids ``ForwardAccumulator`` where reverse over reverse is asked for. ``nested`` is
judged after the exercise's own mistakes when the result is wrong (an answer that nests
no tapes has usually computed something simpler, which those mistakes name exactly).

A ``None`` gradient that breaks the answer (it returns None or raises) is explained from
what the tapes saw, in the lesson's words (``cause_names``); a ``None`` where the
reference is zero is a true zero, and the hint asks for zeros. A ``None`` the answer went
on without, and zeros that ``unconnected_gradients=ZERO`` put in its place, are evidence
only when the result is wrong: a result of zeros is evidence of a cut path only when the
tapes' record shows the cut. When the result is wrong, the re-run diagnostics read the
tapes' record: an outer tape that differentiated a result made before the inner gradient
(the function again), or ``steps`` (``probe -> {name: values}``, what the tapes compute
on the way) all computed right and combined into the wrong result.

The answer runs once without the check's own tape (a third of the cost), and again with
it only where a None needs explaining. Statefulness: after all the others, the first
probe's shape is called with new values (``vary``: x negated and rolled by default), which
must give their own answer; with ``vary=None``, the first probe again must give its own.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import as_values
from .differentiating import forbid_jacobian
from .differentiating import require_by_hand
from .differentiating import require_forward_mode
from .differentiating import require_nested
from .differentiating import require_output_gradients
from .harness import Harness
from .harness import Observation
from .harness import keeps_state
from .harness import named_shape
from .harness import same_parts
from .judging import matches
from .judging import worst_point
from .provenance import missing
from .provenance import run_answer
from .verdicts import Wrong

FORBIDDEN = {
    "jacobian": "tape.jacobian",
    "accumulator": "ForwardAccumulator",
    "gradcheck": "course finite-difference helper",
}
STRUCTURAL_NONE = (
    "Your function returned None (or failed on it) for {label}, where the answer is zero "
    "everywhere. That None is no mistake of the tapes: the target does not depend on the "
    "source at all, so no path leads back to it. The exercise asks for zeros there: pass "
    "unconnected_gradients=tf.UnconnectedGradients.ZERO to that gradient call."
)
ZEROS_FOR_NONE = (
    "Your function returned zeros where a tape returned None, so the zeros hide a mistake. "
)
WENT_ON = "A tape returned None, and your function went on without it. "
OUTER_AGAIN = (
    "Your outer tape differentiated a result computed before the inner gradient (the "
    "function itself?), so it returned a first derivative again. It must differentiate "
    "the inner tape's gradient, or what you compute from it inside the outer block."
)
FORWARD_OVER_REVERSE = (
    "Your function used a ForwardAccumulator around the gradient (forward over reverse). "
    "This exercise asks for reverse over reverse: nested GradientTapes, the outer one "
    "differentiating what you compute from the inner gradient."
)


def _fields(probe, names) -> tuple:
    """The probe's fields ``names``: arrays as tensors of the probe's dtype."""
    import tensorflow as tf

    values = [getattr(probe, name) for name in names]
    return tuple(
        tf.constant(np.asarray(v, dtype=probe.dtype)) if isinstance(v, (np.ndarray, float)) else v
        for v in values
    )


def one_tensor(value, probe, exercise, name: str) -> dict:
    """What came back as one tensor of the reference's shape and the probe's dtype (a
    shape the exercise names as a mistake, :class:`~.spec.Shape`, first)."""
    named_shape(value, probe, exercise)
    shape = exercise.expected(probe)[exercise.harness.main].shape
    return {exercise.harness.main: as_values(value, name=name, shape=shape, dtype=probe.dtype)}


def negated(probe):
    """The probe with ``x`` negated and rolled by one place: new values, same shape."""
    return probe.but(x=-np.roll(probe.x, 1)) if probe.x is not None else None


@dataclass(frozen=True)
class Function(Harness):
    name: str = "Your function"
    arguments: Callable | tuple = ("x",)
    read: Callable = one_tensor
    by_hand: bool = False
    output_gradients: bool | str = False
    nested: bool = False
    forward_mode: bool = False
    forbid: tuple | Mapping = ()
    cause_names: Mapping = field(default_factory=dict)
    sources: Callable | None = None
    steps: Callable | None = None
    vary: Callable | None = negated
    main: str = "value"
    nouns: Mapping = field(default_factory=lambda: {"value": "your result"})

    def noun(self, part: str) -> str:
        return self.nouns.get(part, f"your {part}")

    def describe(self) -> str:
        found = []
        if self.by_hand:
            found.append("by hand: no tape, accumulator or tf.test.compute_gradient")
        if self.output_gradients:
            found.append("tape.gradient with output_gradients")
        if self.output_gradients == "by_hand":
            found.append("a dy worked out by hand, not by another tape")
        if self.nested:
            found.append("nested tapes")
        if self.forward_mode:
            found.append("forward mode (ForwardAccumulator) only")
        found += [f"no {FORBIDDEN.get(item, item)}" for item in self.forbid]
        return "; ".join(found) + "." if found else "any method."

    def call(self, answer, probe, record: bool = True):
        """``(run, arguments)``: the answer called on the probe's arguments (``record``:
        with the check's own tape and every operation, to explain a None)."""
        if callable(self.arguments):
            arguments = self.arguments(probe)
        else:
            arguments = _fields(probe, self.arguments)
        return run_answer(answer, *arguments, name=self.name, record=record), arguments

    def _names(self, probe, arguments) -> tuple:
        """The tensors handed to the answer, each with the name the exercise gives it."""
        if self.sources is not None:
            return self.sources(probe, arguments)
        if callable(self.arguments):
            return ()
        return tuple((a, n) for a, n in zip(arguments, self.arguments) if hasattr(a, "dtype"))

    def observe(self, answer, probe, exercise) -> Observation:
        run, arguments = self.call(answer, probe, record=False)
        if run.log.first_none() is not None:  # run again, recording all, to say why
            run, arguments = self.call(answer, probe)
        log = run.log
        names = self._names(probe, arguments)
        explained = missing(run, names, cause_names=self.cause_names)
        if explained is not None and (run.raised is not None or run.value is None):
            code, text = explained
            if code in ("no_gradient", "source_not_used") and _all_zero(exercise, probe):
                raise Wrong(STRUCTURAL_NONE.format(label=probe.label), "structural_none")
            raise Wrong(text, code)
        if run.raised is not None:
            raise run.raised
        self.demand(log)
        parts = self.read(run.value, probe, exercise, self.name)
        details = {"run": run, "names": names, "missing": explained}
        details["recorded"] = lambda: self.call(answer, probe)
        return Observation(parts, log, details=details, pending=self._not_nested(log))

    def _not_nested(self, log) -> Wrong | None:
        if self.nested:
            try:
                require_nested(log)
            except Wrong as wrong:
                return wrong
        return None

    def evidence(self, case) -> Wrong | None:
        """For a wrong result: a None hidden as zeros, a None the answer went on
        without, then the nesting the exercise demands."""
        details = case.observation.details
        run, names = details["run"], details["names"]
        if run.log.used_zero_option:
            if run.provenance is None:
                run, arguments = details["recorded"]()
                names = self._names(case.probe, arguments)
            found = missing(run, names, hidden=True, cause_names=self.cause_names)
            if found is not None and found[0] == "zeros_hide_none":
                return Wrong(found[1], found[0])
        if details["missing"] is not None:
            code, text = details["missing"]
            if code in ("no_gradient", "source_not_used") and not np.any(case.expected):
                return Wrong(STRUCTURAL_NONE.format(label=case.probe.label), "structural_none")
            lead = ZEROS_FOR_NONE if not np.any(case.got) and np.any(case.expected) else WENT_ON
            return Wrong(lead + text, code)
        return case.observation.pending

    def diagnose(self, case) -> Wrong | None:
        """From the tapes' record: the outer tape differentiated the function again, or
        every step was computed right and only combined wrong."""
        log = case.observation.log
        for call in log.calls:
            inner = [c.time for c in log.calls if call.tape in c.recording_tapes]
            inner = [time for time in inner if time < call.time]
            made = getattr(call.target, "_id", None)
            if inner and made is not None and made < min(inner):
                return Wrong(OUTER_AGAIN, "wrong_target")
        if self.steps is None:
            return None
        steps = self.steps(case.probe)
        results = _results(log)
        tol = case.tolerance
        for values in steps.values():
            if not any(
                r.shape == np.shape(values)
                and matches(r, values, max(tol.rtol, 1e-9) * 10, tol.atol)
                for r in results
            ):
                return None
        index = worst_point(case.got, case.expected, tol.rtol, tol.atol)
        at = case.at
        where = f"at x = {at[index]:.6g}" if at is not None else f"at index {list(index)}"
        names = " and ".join(steps)
        values = ", ".join(f"{k} = {np.asarray(v)[index]:.6g}" for k, v in steps.items())
        should = case.exercise.describe.get(case.part, "the answer")
        return Wrong(
            f"Your tapes computed {names} correctly, but what your function returns from "
            f"{'them' if len(steps) > 1 else 'it'} is not {should}. For example {where}: "
            f"{values}, so the answer is {case.expected[index]:.6g}, but your function "
            f"returned {case.got[index]:.6g}.",
            "wrong_combination",
        )

    def demand(self, log) -> None:
        if self.by_hand:
            require_by_hand(log)
        if self.output_gradients:
            require_output_gradients(log)
        if self.output_gradients == "by_hand" and _dy_from_a_tape(log):
            raise Wrong(
                "The numbers may be right, but the upstream gradient you passed as "
                "output_gradients came from another tape: the exercise asks you to work dy "
                "out by hand (a formula of the output and the target), and to let one tape "
                "do the rest.",
                "used_tape",
            )
        if self.forward_mode:
            require_forward_mode(log)
        if "jacobian" in self.forbid:
            forbid_jacobian(log, self._why("jacobian", "build it from tape.gradient calls."))
        if "accumulator" in self.forbid and log.accumulators:
            raise Wrong(FORWARD_OVER_REVERSE, "forward_over_reverse")
        if "gradcheck" in self.forbid and log.course_gradchecks:
            raise Wrong(
                "Your function calls the course's own finite-difference helper "
                "(autodiff_course.gradcheck). The exercise asks you to write the central "
                "difference yourself: move each coordinate by +h and -h and divide by 2h.",
                "used_course_helper",
            )

    def _why(self, name: str, default: str) -> str:
        return self.forbid.get(name, default) if isinstance(self.forbid, Mapping) else default

    def _again(self, answer, probe, exercise) -> dict:
        run, _ = self.call(answer, probe, record=False)
        try:
            if run.raised is not None:
                raise run.raised
            return self.read(run.value, probe, exercise, self.name)
        except Wrong:
            return {}

    def statefulness(self, answer, seen, exercise) -> None:
        """After the others, the first probe's shape with new values (``vary``) must give
        their own answer; without ``vary``, the first probe again must give its own."""
        from .judge import tolerance_of

        if len(seen) < 2:
            return
        probe, first = seen[0]
        other = self.vary(probe) if self.vary is not None else None
        if other is None:
            if not same_parts(first.parts, self._again(answer, probe, exercise), 1e-6, 1e-12):
                raise keeps_state(
                    self.name,
                    "called again with the first probe's arguments after the others, it "
                    "returned other numbers",
                )
            return
        got = self._again(answer, other, exercise)
        for part, want in exercise.expected(other).items():
            tol = tolerance_of(exercise, other, part)
            if part not in got or not matches(got[part], want, tol.rtol, tol.atol):
                raise keeps_state(
                    self.name,
                    "called after the others with new values of the first probe's shape, "
                    "it returned numbers that are not their answer",
                )

    def verified(self, exercise, probes) -> list:
        found = [self.describe().rstrip(".")] if self.describe() != "any method." else []
        if self.vary is None:
            return [*found, "the first probe called again after the others gave the same result"]
        return [*found, "called again after the others with new values, it gave their answer"]


def _all_zero(exercise, probe) -> bool:
    return not np.any(exercise.expected(probe)[exercise.harness.main])


def _results(log) -> list:
    """Every array a tape's gradient call returned, as float64."""
    found = []
    for call in log.calls:
        for result in call.results or ():
            try:
                found.append(np.asarray(result, dtype=np.float64))
            except Exception:  # noqa: BLE001 - an IndexedSlices or the like: skip it
                continue
    return found


def _dy_from_a_tape(log) -> bool:
    """A call's output_gradients is (numerically) the result of an earlier tape call."""
    for call in log.calls:
        if not call.output_gradients or call.upstream is None:
            continue
        try:
            upstream = np.asarray(call.upstream, dtype=np.float64)
        except Exception:  # noqa: BLE001 - a nested structure: not this mistake
            continue
        for earlier in log.calls:
            if earlier is call or earlier.time > call.time:
                continue
            for result in earlier.results or ():
                try:
                    values = np.asarray(result, dtype=np.float64)
                except Exception:  # noqa: BLE001
                    continue
                if values.shape == upstream.shape and np.allclose(values, upstream):
                    return True
    return False
