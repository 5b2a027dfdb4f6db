"""The methods an exercise demands, read from how the answer differentiated (lessons 01
to 06).

``require_*`` functions turn a method into a verdict, from the
:class:`~.observing.MethodLog` of the answer's tapes and accumulators; :class:`Demands`
holds the method flags of :class:`~.function.Function` as verdicts; :func:`why_it_raised`
names the tape or accumulator call behind an error the answer raised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import astuple

import numpy as np

from .judge import tolerance_of
from .judging import float64_or_none
from .judging import matches
from .observing import MethodLog
from .verdicts import Wrong

FORWARD_OVER_REVERSE = (
    "Your function used a ForwardAccumulator around the gradient (forward over reverse). "
    "This exercise asks for reverse over reverse: nested GradientTapes, the outer one "
    "differentiating what you compute from the inner gradient."
)


# -- methods the exercise demands -------------------------------------------------


def require_by_hand(log: MethodLog) -> None:
    """The answer used no tape, accumulator, ``tf.gradients`` or ``tf.test.compute_gradient``
    (lesson 01)."""
    if log.used_any_autodiff:
        tool = (
            "tf.gradients"
            if log.graph_gradient_calls and not log.tapes
            else "tf.test.compute_gradient"
            if log.compute_gradient_calls and not log.tapes
            else "tf.autodiff.ForwardAccumulator"
            if log.accumulators and not log.tapes
            else "tf.GradientTape"
        )
        raise Wrong(
            "The numbers may be right, but this exercise asks you to work the "
            f"derivative out by hand, and your function used {tool}. Write the "
            f"formula with TensorFlow ops (tf.exp, tf.sigmoid, *, +) and no tape.",
            "used_tape",
        )


def require_output_gradients(log: MethodLog) -> None:
    """The answer passed the upstream as ``output_gradients=`` (lesson 01)."""
    if not log.calls:
        raise Wrong(
            "The exercise asks for tape.gradient(..., output_gradients=dy), and "
            "your function called no tape at all.",
            "no_output_gradients",
        )
    if not log.used_output_gradients:
        raise Wrong(
            "The numbers may be right, but the exercise asks you to pass the "
            "upstream gradient to the tape: tape.gradient(output, x, "
            "output_gradients=dy), recording only the output. Your function "
            + (
                "built the whole Jacobian with tape.jacobian and multiplied by dy itself: "
                "output_gradients gets the same numbers without ever forming it."
                if log.used_jacobian
                else "called tape.gradient without output_gradients."
            ),
            "no_output_gradients",
        )


def forbid_jacobian(log: MethodLog, instead: str) -> None:
    """No ``tape.jacobian`` or ``batch_jacobian``; ``instead`` says what to build with
    (lessons 04 and 05)."""
    if log.used_jacobian:
        raise Wrong(
            f"The exercise asks you to build this without tape.jacobian or "
            f"batch_jacobian: {instead}",
            "used_jacobian",
        )


def require_nested(log: MethodLog) -> None:
    """One tape differentiated inside another's block, then by it (lessons 04 and 05)."""
    if not log.nested:
        if not log.calls:
            hint = "your function called no tape"
        elif len({id(call.tape) for call in log.calls}) == 1:
            hint = "your function differentiated with one tape only"
        else:
            hint = (
                "your tapes ran one after the other, not one inside the other, so "
                "the outer tape never recorded the inner gradient"
            )
        raise Wrong(
            f"The exercise asks for nested tapes (an inner tape's gradient "
            f"computed while an outer tape records, then differentiated by the "
            f"outer tape), but {hint}.",
            "not_nested",
        )


def require_forward_mode(log: MethodLog) -> None:
    """A ``ForwardAccumulator``'s ``jvp`` and no ``tf.GradientTape`` (lesson 05)."""
    if not log.used_forward_mode:
        used = (
            "a tf.GradientTape (reverse mode)"
            if log.used_reverse_mode
            else "no automatic differentiation (finite differences or a formula?)"
        )
        raise Wrong(
            f"The exercise asks for forward mode: "
            f"tf.autodiff.ForwardAccumulator(primals=x, tangents=v) and "
            f"acc.jvp(y). Your function used {used}.",
            "not_forward_mode",
        )
    if log.used_reverse_mode:
        raise Wrong(
            "Your function used a ForwardAccumulator, but also a "
            "tf.GradientTape. A Jacobian-vector product needs forward mode "
            "only: one pass with tangent v.",
            "not_forward_mode",
        )


class Demands:
    """The method flags of :class:`~.function.Function`, as verdicts:

    * ``by_hand``: no tape, accumulator or ``tf.test.compute_gradient``;
    * ``output_gradients``: ``tape.gradient(..., output_gradients=dy)``; ``"by_hand"``
      also demands that ``dy`` was worked out by hand (not the result of a tape, of a
      differentiation with respect to the output, or of ``tf.test.compute_gradient``), that
      it is not all ones, and that the answer returns what that call gave (no factor
      multiplied in afterwards);
    * ``nested``: an inner tape's gradient computed while an outer tape records;
    * ``forward_mode``: ``tf.autodiff.ForwardAccumulator`` and no reverse mode;
    * ``forbid``: ``"jacobian"`` (no ``tape.jacobian``/``batch_jacobian``),
      ``"gradcheck"`` (not the course's own finite differences),
      ``"finite_differences"`` (a wrong result near the answer from code that used no
      automatic differentiation is named an estimate, before anything else) or
      ``"accumulator"`` (no ``ForwardAccumulator``);
    * ``record_once``: each function the check hands over (``f``, ``layer``) is recorded at
      most once by the answer's tapes; the text says what to do instead;
    * ``whole_batch``: those functions mix the examples of their batch, so a wrong result
      from calling one on part of the batch is named (the text says why);
    * ``tape``: a ``tf.GradientTape`` computed it (the right numbers without one are
      *not yet*, and close ones are named finite differences);
    * ``wrt``: the names (in ``names``, the answer's parameters, which also name a missing
      gradient's source unless ``sources`` does) of the arguments the exercise differentiates
      with respect to; a tape asked about another argument is ``wrong_source``;
    * ``numpy``: the answer works in NumPy and returns an array (a list, a tuple or a tensor
      of the right numbers is named once the numbers are right);
    * ``scalars``: :class:`~.spec.Mistake` that give one number (the loss for its gradient,
      a slope along the diagonal), named when one number comes back where the answer has
      several.
    """

    def demand(self, log, calls=()) -> None:
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
        recorded = Counter(call.name for call in calls if call.recording)
        if self.record_once and recorded and max(recorded.values()) > 1:
            name, count = recorded.most_common(1)[0]
            raise Wrong(
                f"The numbers may be right, but your tapes recorded `{name}` {count} times, one "
                f"forward pass each. One record serves every backward pass: "
                f"{self.record_once}",
                "re_recorded",
            )
        if self.by_hand:
            require_by_hand(log)
        if self.output_gradients:
            require_output_gradients(log)
        if self.output_gradients == "by_hand" and _dy_from_a_tape(log):
            raise Wrong(
                "The numbers may be right, but the upstream gradient you passed as "
                "output_gradients came from automatic differentiation (another tape, or "
                "tf.test.compute_gradient): the exercise asks you to work dy out by hand (a "
                "formula of the output and the target), and to let one tape do the rest.",
                "used_tape",
            )
        if self.forward_mode:
            require_forward_mode(log)

    def _why(self, name: str, default: str) -> str:
        return self.forbid.get(name, default) if isinstance(self.forbid, Mapping) else default

    def _without_tape(self, log, parts, probe, exercise) -> Wrong | None:
        if not self.tape or log.calls:
            return None
        expected = exercise.expected(probe)
        if all(
            matches(parts[part], want, *astuple(tolerance_of(exercise, probe, part)))
            for part, want in expected.items()
        ):
            return Wrong(
                "The numbers are right, but no tf.GradientTape computed them. This "
                "exercise is about the tape: record the computation on a tf.GradientTape "
                "and ask it for tape.gradient.",
                "no_tape",
            )
        if all(_close_on_the_whole(parts[part], want) for part, want in expected.items()):
            raise Wrong(
                "Your numbers come close, but no tf.GradientTape computed them: that is "
                "an approximation such as a finite difference. Record the computation on "
                "a tf.GradientTape and ask it for tape.gradient.",
                "finite_differences",
            )
        return None

    def differentiated_by(self, log, arguments) -> None:
        """With ``wrt``: no tape was asked about another of the named arguments."""
        others = {id(a): n for n, a in zip(self.names, arguments) if self.wrt and n not in self.wrt}
        for call in log.calls:
            asked = [others[id(s)] for s in call.sources if id(s) in others]
            if asked:
                raise Wrong(
                    f"{self.name} differentiated with respect to {asked[0]}. The exercise "
                    f"asks for the gradient with respect to {' and '.join(self.wrt)}: pass "
                    f"{self.wrt[0]} as the source of tape.gradient.",
                    "wrong_source",
                )

    def kind_of_value(self, value) -> Wrong | None:
        """With ``numpy``: the right numbers, but not as a NumPy array."""
        if not self.numpy or isinstance(value, np.ndarray):
            return None
        if isinstance(value, (list, tuple)):
            return Wrong(
                f"The numbers are right, but {self.name} returned a Python "
                f"{type(value).__name__}; the exercise asks for a NumPy array: np.array(...) "
                "makes one (or fill an array made with np.zeros_like(x)).",
                "returned_list",
            )
        return Wrong(
            f"The numbers are right, but {self.name} returned a {type(value).__name__}; the "
            "exercise works in NumPy and asks for a NumPy array (np.asarray(...) makes one).",
            "wrong_type",
        )

    def dy_applied_by_the_tape(self, log, value) -> Wrong | None:
        if self.output_gradients != "by_hand":
            return None
        calls = [c for c in log.calls if c.output_gradients]
        if calls and all(_all_ones(c.upstream) for c in calls):
            return Wrong(
                "The numbers are right, but the output_gradients you passed is all ones, "
                "which is where the tape starts anyway. Pass the upstream gradient itself: "
                "tape.gradient(output, x, output_gradients=dy), with dy = d(loss)/d(output) "
                "worked out by hand.",
                "no_output_gradients",
            )
        if not any(_identical(value, r) for c in calls for r in c.results or ()):
            return Wrong(
                "The numbers are right, but your result is not what "
                "tape.gradient(output, x, output_gradients=dy) returned: something was "
                "computed or multiplied in after it. The exercise lets the tape apply dy: "
                "return the tape's result as it is.",
                "no_output_gradients",
            )
        return None

    def _not_nested(self, log) -> Wrong | None:
        if self.nested:
            try:
                require_nested(log)
            except Wrong as wrong:
                return wrong
        return None


NOT_PERSISTENT = (
    "Your tape was asked for a second gradient, and a tape is released after its first "
    "gradient (or jacobian) call unless it is created with tf.GradientTape(persistent=True). "
    "Make it persistent (then `del tape` when done)."
)


def _mismatch(what: str, noun: str, given, other: str, reference, fix: str):
    """A Wrong when ``given`` (``noun``: an upstream or a tangent) has another dtype or
    shape than ``reference`` (its target or primal), else None."""
    import tensorflow as tf

    if not isinstance(given, tf.Tensor) or not isinstance(reference, (tf.Tensor, tf.Variable)):
        return None
    if given.dtype != reference.dtype:
        code = (
            "float32_not_float64"
            if (given.dtype.name, reference.dtype.name) == ("float32", "float64")
            else "wrong_dtype"
        )
        return Wrong(
            f"The {what} is {given.dtype.name}, but its {other} is {reference.dtype.name}: "
            f"{noun} has its {other}'s dtype. tf.one_hot, tf.ones and tf.constant make float32 "
            f"unless given dtype=...: {fix}",
            code,
        )
    if tuple(given.shape) != tuple(reference.shape):
        code = "upstream_shape" if "upstream" in noun else "tangent_shape"
        return Wrong(
            f"The {what} has shape {tuple(given.shape)}, but its {other} has shape "
            f"{tuple(reference.shape)}: it needs one entry per entry of the {other}. Build it "
            f"from the {other}'s shape, not from a number typed in (reshape a one-hot vector "
            f"of tf.size entries to that shape).",
            code,
        )
    return None


def why_it_raised(log) -> Wrong | None:
    """The learner's error (or None result) explained by the tape or accumulator call
    behind it: an output_gradients of another shape than its target (a dy for the
    output passed with the loss as target), a second gradient of a tape that is not
    persistent, an upstream or tangent of another dtype or shape than its target or
    primal, a jvp of a value computed outside the accumulator's block."""
    for call in log.calls:
        if call.error is None:
            continue
        shapes = _shapes(call.target, call.upstream) if call.output_gradients else None
        if shapes is not None and shapes[0] != shapes[1]:
            return Wrong(
                f"tape.gradient raised because output_gradients has shape {shapes[1]} and the "
                f"target has shape {shapes[0]}: output_gradients is d(loss)/d(target), one "
                "entry per element of the target. To pass dy = d(loss)/d(output), make the "
                "output the target: tape.gradient(output, x, output_gradients=dy).",
                "upstream_shape",
            )
        if isinstance(call.error, RuntimeError) and not call.tape.persistent:
            return Wrong(NOT_PERSISTENT, "not_persistent")
        found = _mismatch(
            "upstream you passed as output_gradients",
            "an upstream",
            call.upstream,
            "target",
            call.target,
            "pass dtype=y.dtype.",
        )
        if found is not None:
            return found
    for accumulator in log.accumulators:
        for primal, tangent in zip(accumulator.primals, accumulator.tangents):
            found = _mismatch(
                "tangent you gave ForwardAccumulator",
                "a tangent",
                tangent,
                "primal",
                primal,
                "pass dtype=x.dtype.",
            )
            if found is not None:
                return found
        if any(result is None for result in accumulator.jvp_results):
            return Wrong(
                "acc.jvp(y) returned None: the accumulator saw no path from its primal to y. "
                "Only what runs inside `with tf.autodiff.ForwardAccumulator(primals=x, "
                "tangents=v) as acc:` is tracked: compute y = f(x) inside that block.",
                "computed_outside",
            )
    return None


def _dy_from_a_tape(log) -> bool:
    """A call's output_gradients is (numerically) the result of an earlier tape call, or
    was made by differentiating with respect to that call's target, or
    tf.test.compute_gradient ran."""
    if log.compute_gradient_calls:
        return True
    for call in log.calls:
        if not call.output_gradients or call.upstream is None:
            continue
        if any(
            earlier is not call and any(s is call.target for s in earlier.sources)
            for earlier in log.calls
        ):
            return True
        upstream = float64_or_none(call.upstream)
        if upstream is None:  # a nested structure: not this mistake
            continue
        for earlier in log.calls:
            if earlier is call or earlier.time > call.time:
                continue
            for values in map(float64_or_none, earlier.results or ()):
                if values is not None and values.shape == upstream.shape:
                    if np.allclose(values, upstream):
                        return True
    return False


def _shapes(target, upstream):
    """``(target shape, upstream shape)`` as tuples, or None for nested structures."""
    try:
        return tuple(np.shape(target)), tuple(np.shape(upstream))
    except Exception:  # noqa: BLE001 - a nested structure: the error speaks for itself
        return None


def _all_ones(value) -> bool:
    values = float64_or_none(value)  # None for a nested structure: not a dy of ones
    return values is not None and bool(np.all(values == 1.0))


def _identical(a, b) -> bool:
    """The same numbers, to the last bit: the tape's own result, perhaps reshaped or cast
    to its own dtype (the same product computed by hand rounds differently somewhere)."""
    a, b = float64_or_none(a), float64_or_none(b)  # not numbers: not the tape's result
    return a is not None and b is not None and np.array_equal(a, b)


def _close_on_the_whole(got, want, fraction: float = 1e-2) -> bool:
    """Within ``fraction`` of the largest value everywhere (1%: a finite difference)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = float(np.max(np.abs(want), initial=0.0))
    with np.errstate(invalid="ignore"):
        return got.shape == want.shape and bool(np.all(np.abs(got - want) <= fraction * scale))
