"""What the harness of :mod:`.function` reads from the tapes' record once a result is
found wrong (lessons 02, 04 and 05): zeros that stand for a None, a None the answer
went on without, float32 arithmetic inside a float64 answer, a function that mixes its
batch called on part of it, an estimate made without autodiff, the matrix an answer
linear in its upstream uses, an outer tape that differentiated the function again, and
steps computed right but combined wrong.
"""

from __future__ import annotations

import numpy as np

from .differentiating import _close_on_the_whole
from .harness import forgot_upstream
from .harness import linear_in_upstream
from .judging import float64_or_none
from .judging import matches
from .judging import worst_point
from .patterns import float32_digits
from .patterns import only_float32_digits
from .provenance import needs_provenance
from .recording import constants_added
from .verdicts import Wrong

STRUCTURAL_NONE = (
    "Your function returned None (or failed on it) for {label}, where the answer is zero "
    "everywhere. That None is no mistake of the tapes: the target does not depend on the "
    "source at all, so no path leads back to it. The exercise asks for zeros there: pass "
    "unconnected_gradients=tf.UnconnectedGradients.ZERO to that gradient call."
)
ZEROS_FOR_NONE = (
    "Your function returned zeros where a tape returned None, so the zeros hide a mistake. "
)
ZEROS_FROM_NO_PATH = (
    "acc.jvp(y) would have returned None: the accumulator saw no path from its primal to y, "
    "and unconnected_gradients='zero' turned that None into zeros, so the mistake did not "
    "stop your code. Only what runs inside `with tf.autodiff.ForwardAccumulator(primals=x, "
    "tangents=v) as acc:` is tracked: compute y = f(x) inside that block, from the very x "
    "you gave as the primal."
)
WENT_ON = "A tape returned None, and your function went on without it. "
OUTER_AGAIN = (
    "Your outer tape differentiated a result computed before the inner gradient (the "
    "function itself?), so it returned a first derivative again. It must differentiate "
    "the inner tape's gradient, or what you compute from it inside the outer block."
)
FLOAT32_INSIDE = (
    "Your result is float64, but only about as precise as float32: part of the computation "
    "ran in float32 (a tf.cast(..., tf.float32), or a constant made with dtype=tf.float32, "
    "converted back afterwards; a Keras optimizer keeps its learning rate in float32). Keep "
    "every step in the input's dtype."
)

KERAS_OPTIMIZER = (
    "Your result is float64, but only about as precise as float32: your function made "
    "variables of its own, one of them an integer step counter, as a Keras optimizer does. "
    "An optimizer keeps its learning rate as a float32 variable, so each update of a "
    "float64 variable is rounded to float32's digits. Write each update yourself, "
    "variable.assign_sub(learning_rate * gradient), in the variable's dtype."
)


class Diagnosis:
    """The diagnostics of :class:`~.function.Function` for a wrong result."""

    def recorded(self, case):
        """``(run, handed, explained)`` of the case's probe, recorded (run again if the
        first look was light)."""
        details = case.observation.details
        run, handed, explained = details["run"], details["handed"], details["missing"]
        if run.provenance is None:
            run, _, handed = details["recorded"]()
            explained = self._explain(run, handed)
        return run, handed, explained

    def explained(self, case):
        """For a wrong result: zeros that the recorded run shows in place of a None (from
        ``unconnected_gradients=ZERO``, or from a ``batch_jacobian`` without a path); a
        function that mixes its batch called on part of it; an estimate made without
        automatic differentiation where the exercise forbids finite differences."""
        observation = case.observation
        if needs_provenance(observation.log):
            run, handed, explained = self.recorded(case)
            found = self._hidden_none(run, handed) or self._went_on(case, run, explained)
            if found is not None:
                return found  # a None behind a wrong result explains it before any mistake
        if any(accumulator.unconnected for accumulator in observation.log.accumulators):
            return Wrong(ZEROS_FROM_NO_PATH, "computed_outside")
        tensors = [a for a in observation.details["arguments"] if hasattr(a, "shape")]
        batch = tuple(tensors[0].shape) if tensors else ()
        for call in observation.details["handed"]["calls"] if self.whole_batch and batch else ():
            if call.shapes and call.shapes[0][:1] and call.shapes[0][0] < batch[0]:
                return Wrong(
                    f"{self.name} called `{call.name}` on part of the batch (an input of "
                    f"shape {call.shapes[0]}, where x has shape {batch}). {self.whole_batch}",
                    "called_on_slices",
                )
        if self.nested and not observation.log.nested:
            found = self._shifted(
                case, OF_TAPE_GRADIENTS if observation.log.used_any_autodiff else ""
            )
            if found is not None:
                return found
        if observation.log.used_any_autodiff:
            return None
        if self.by_hand:
            return self._shifted(case)
        if "finite_differences" not in self.forbid:
            return None
        got, expected = case.got, case.expected
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        if not np.all(np.isfinite(got)) or scale == 0.0 or only_float32_digits(got, expected):
            return None
        if (
            case.probe.dtype == "float64"
            and self.recorded(case)[0].provenance.narrowed_to_float32()
        ):
            return None  # float32 arithmetic, not an estimate: evidence() names it
        largest = float(np.max(np.abs(got - expected)))
        if largest > 1e-2 * scale:
            return None
        return Wrong(
            f"Your numbers are near the answer (off by up to {100 * largest / scale:.2g}% of its "
            "largest value) but not exact, and your function used no automatic "
            "differentiation: that is a finite-difference estimate. Its error cannot fall "
            "below the rounding error divided by the step, and the check allows a relative "
            f"{case.tolerance.rtol:.0e}. Differentiate with a tape.",
            "finite_differences",
            point=case.point(),
        )

    def _shifted(self, case, of: str = "") -> Wrong | None:
        """An answer near the answer that evaluated at x plus or minus a small step: a
        finite difference (``of`` first derivatives, when it took them with a tape) where
        the exercise asks for a formula by hand, or for nested tapes."""
        got, expected = case.got, case.expected
        if not _close_on_the_whole(got, expected, 1e-2):
            return None
        run, arguments, _ = case.observation.details["recorded"]()
        found = run.provenance and _step_added(run.provenance.operations, arguments)
        if not found:
            return None
        step, index = found
        names = self.names or (self.arguments if isinstance(self.arguments, tuple) else ())
        several = sum(hasattr(a, "shape") for a in arguments) > 1
        x = names[index] if several and index < len(names) else "x"
        largest = float(np.max(np.abs(got - expected)))
        scale = float(np.max(np.abs(expected)))
        return Wrong(
            f"Your function evaluates at {x} + {step:g} or {x} - {step:g} and is near the answer "
            f"(off by up to {100 * largest / scale:.2g}% of its largest value) but not exact: "
            f"that is a finite-difference estimate{of}. The exercise asks for "
            + (ASKED_NESTED if self.nested else ASKED_BY_HAND),
            "finite_differences",
            point=case.point(),
        )

    def evidence(self, case) -> Wrong | None:
        """For a wrong result, from the recorded run: a None the answer went on without
        (or a variable rebound), float32 arithmetic inside a float64 answer, then the
        nesting the exercise demands."""
        run, handed, explained = self.recorded(case)
        found = self._went_on(case, run, explained)
        return found or self._float32_inside(case, run) or self._not_nested(run.log)

    def _went_on(self, case, run, explained) -> Wrong | None:
        """The recorded run's explanation of a None (or a variable rebound) behind a wrong
        result."""
        if explained is None:
            return None
        code, text = explained
        if code in ("no_gradient", "source_not_used") and not np.any(case.expected):
            return Wrong(STRUCTURAL_NONE.format(label=case.probe.label), "structural_none")
        if code == "variable_replaced":
            return Wrong(text, code)
        lead = ZEROS_FOR_NONE if not np.any(case.got) and np.any(case.expected) else WENT_ON
        return Wrong(lead + text, code, point=_which_call(run.log))

    def _hidden_none(self, run, handed) -> Wrong | None:
        """Zeros that ``unconnected_gradients=ZERO`` put where the record shows a None."""
        if run.log.used_zero_option:
            found = self._explain(run, handed, hidden=True)
            if found is not None and found[0] == "zeros_hide_none":
                return Wrong(found[1], found[0])
        return None

    def _float32_inside(self, case, run) -> Wrong | None:
        """A float64 result close to the answer, from a run that narrowed to float32, where
        the numbers alone do not show float32's digits (the shared pattern names those)."""
        if case.probe.dtype != "float64" or float32_digits(case):
            return None
        if not _close_on_the_whole(case.got, case.expected, 1e-4):
            return None
        if not run.provenance.narrowed_to_float32():
            return None
        if _made_a_step_counter(run.provenance.operations):
            return Wrong(KERAS_OPTIMIZER, "keras_optimizer")
        return Wrong(FLOAT32_INSIDE, "float32_not_float64")

    def generated(self, case) -> list:
        return forgot_upstream(case) if self.upstream is not None else []

    def diagnose(self, case) -> Wrong | None:
        """With ``upstream``, the matrix the answer uses, one unit upstream at a time; from
        the tapes' record: the outer tape differentiated the function again, or every step
        was computed right and only combined wrong."""
        if self.upstream is not None and case.probe.upstream is not None:
            answer = case.observation.details["answer"]

            def row(unit):
                probe = case.probe.but(upstream=unit)
                run = self.run(answer, self.arguments_of(probe))
                if run.raised is not None:
                    raise run.raised
                return self.read(run.value, probe, case.exercise, self.name)[case.part]

            found = linear_in_upstream(case, row)
            if found is not None:
                return found
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
        results = [float64_or_none(r) for call in log.calls for r in call.results or ()]
        results = [r for r in results if r is not None]  # an IndexedSlices or the like: skipped
        tol = case.tolerance
        for values in steps.values():
            if not any(matches(r, values, max(tol.rtol, 1e-9) * 10, tol.atol) for r in results):
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


def _which_call(log) -> str:
    """Which tape.gradient call a None came from, when it was not the first of several."""
    found = log.first_none()
    calls = [call for call in log.calls if call.kind == "gradient"]
    if found is None or found[0] not in calls or calls.index(found[0]) == 0:
        return ""
    number = calls.index(found[0]) + 1
    nth = {2: "2nd", 3: "3rd"}.get(number, f"{number}th")
    return f"It first shows at the {nth} tape.gradient call; the ones before it had every gradient."


OF_TAPE_GRADIENTS = " of the tape's first derivatives"
ASKED_NESTED = (
    "nested tapes: an inner tape's gradient computed while an outer tape records, then "
    "differentiated by the outer tape, which is exact to the last digits."
)
ASKED_BY_HAND = (
    "the derivative worked out by hand, a formula in x, which is exact to the last digits."
)


def _step_added(operations, sources) -> tuple[float, int] | None:
    """The small step (0 < |h| <= 0.1) an operation added to or took from one of the
    ``sources`` (or from its negative), and that source's index, or None."""
    origins = [(s, i) for i, s in enumerate(sources)]
    for op in operations:
        for t in op.inputs:
            source = next((i for s, i in origins if t is s), None)
            if source is None:
                continue
            if op.name == "Neg":
                origins.extend((out, source) for out in op.outputs)
            for value in constants_added(op, besides=[s for s, _ in origins]):
                if 0 < abs(value) <= 0.1:
                    return abs(value), source
    return None


def _made_a_step_counter(operations) -> bool:
    """The run created variables and assigned an integer to one: an optimizer's
    ``iterations``."""
    made = any(op.name == "VarHandleOp" for op in operations)
    return made and any(
        op.name == "AssignVariableOp" and op.inputs[1:] and op.inputs[-1].dtype.is_integer
        for op in operations
    )
