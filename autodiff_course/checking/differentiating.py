"""Demanding a method, and explaining a ``None`` (lessons 01 to 06).

* ``require_*`` functions turn a method the exercise demands into a verdict, from the
  :class:`~.observing.MethodLog` of how the answer differentiated.
* :func:`why_none` names the causes of a ``None`` gradient that only the tapes' own
  record shows (an unwatched source or variable, nested tapes that missed the inner
  gradient); :mod:`.provenance` settles the others from the answer's operations.
"""

from __future__ import annotations

from .observing import MethodLog
from .verdicts import Wrong

# -- methods the exercise demands -------------------------------------------------


def require_by_hand(log: MethodLog, what: str = "this exercise") -> None:
    """The answer used no tape, accumulator or ``tf.test.compute_gradient`` (lesson 01)."""
    if log.used_any_autodiff:
        tool = (
            "tf.test.compute_gradient"
            if log.compute_gradient_calls and not log.tapes
            else "tf.autodiff.ForwardAccumulator"
            if log.accumulators and not log.tapes
            else "tf.GradientTape"
        )
        raise Wrong(
            f"The numbers may be right, but {what} asks you to work the "
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
            "called tape.gradient without output_gradients.",
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
