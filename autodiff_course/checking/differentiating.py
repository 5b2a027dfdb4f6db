"""Running an answer under a tape, demanding a method, explaining a ``None``.

Used by the checks of lessons 01 to 06:

* :func:`record_answer` calls the learner's function on a tape of the check's
  own (as a model would use it) while :func:`~.observing.observe` watches how the
  answer differentiates; :meth:`Recorded.gradient` then differentiates the result
  with any upstream, so a forgotten ``upstream *`` shows, and attributes an error
  in the learner's ``grad_fn`` to the learner.
* ``require_*`` functions turn a method the exercise demands into a verdict.
* :func:`why_none` names the cause of a ``None`` gradient from what the tapes
  actually saw (unwatched constant, integer dtype, missing outer ``watch``, inner
  gradient computed after the outer block, NumPy detour, operation without a
  gradient, stateful assign), instead of guessing one cause.
"""

from __future__ import annotations

from dataclasses import dataclass

from .answers import LEARNER_ERRORS
from .answers import as_values
from .answers import call_answer
from .answers import learner_code
from .observing import MethodLog
from .observing import observe
from .verdicts import NotAttempted
from .verdicts import Wrong


@dataclass
class Recorded:
    """An answer's output, recorded on the check's own tape, and how it was made."""

    tape: object
    value: object
    inputs: tuple
    log: MethodLog

    def gradient(self, upstream=None, sources=None, *, label: str = "Your gradient function"):
        """d(value)/d(sources) with ``upstream`` as ``output_gradients``.

        Errors raised while TensorFlow runs the learner's ``grad_fn`` are reported
        as the learner's. Returns TensorFlow's result unchanged (None included).
        """
        sources = list(self.inputs) if sources is None else sources
        with learner_code(label):
            return self.tape.gradient(self.value, sources, output_gradients=upstream)


def record_answer(answer, *inputs, name: str | None = None, watch=None) -> Recorded:
    """Call ``answer(*inputs)`` on a persistent tape that watches ``watch`` (default: inputs)."""
    import tensorflow as tf

    tape = tf.GradientTape(persistent=True)  # the check's own: not observed
    with tape:
        for tensor in inputs if watch is None else watch:
            if isinstance(tensor, (tf.Tensor, tf.Variable)) and tensor.dtype.is_floating:
                tape.watch(tensor)
        with observe() as log:
            value = call_answer(answer, *inputs, name=name)
    return Recorded(tape, value, inputs, log)


def observed_call(answer, *args, name: str | None = None):
    """``(value, log)``: the answer's result and how it differentiated."""
    with observe() as log:
        value = call_answer(answer, *args, name=name)
    return value, log


def observed_call_keeping_errors(answer, *args, name: str | None = None):
    """``(value, log, wrong)``: like :func:`observed_call`, but an exception raised by
    the answer comes back as ``wrong`` so the log can explain it first."""
    with observe() as log:
        try:
            return call_answer(answer, *args, name=name), log, None
        except Wrong as wrong:
            if wrong.mistake not in LEARNER_ERRORS:
                raise
            return None, log, wrong


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


def require_custom_gradient(log: MethodLog) -> None:
    """The answer called a ``@tf.custom_gradient`` function (in eager mode)."""
    if not log.used_custom_gradient:
        raise Wrong(
            "The numbers come from TensorFlow's own gradients: no "
            "@tf.custom_gradient function ran. The exercise asks you to write "
            "the backward rule yourself: decorate the function with "
            "@tf.custom_gradient and return (output, grad_fn). (If you wrapped "
            "it in tf.function, take that off: the check watches eager calls.)",
            "custom_gradient_not_used",
        )


def require_custom_backward_ran(log: MethodLog) -> None:
    """After a gradient: the learner's ``grad_fn`` is what produced it."""
    require_custom_gradient(log)
    if not log.custom_backward_ran:
        raise Wrong(
            "Your @tf.custom_gradient function ran, but its grad_fn never did: "
            "the gradient came from other operations. Is the output you return "
            "the custom function's output (not a value computed beside it)?",
            "custom_gradient_not_used",
        )


# -- explaining a None -------------------------------------------------------------

NON_DIFFERENTIABLE_OPS = {
    "Round": "tf.round",
    "Rint": "tf.math.rint",
    "Floor": "tf.floor",
    "Ceil": "tf.math.ceil",
    "ArgMax": "tf.argmax",
    "ArgMin": "tf.argmin",
    "Sign": "tf.sign",
}
ASSIGN_OPS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}


@dataclass
class Trace:
    """What tracing the answer with tf.function reveals."""

    numpy_detour: bool = False
    non_differentiable: str | None = None
    assigns: bool = False


def trace(answer, *specs) -> Trace:
    """Trace ``answer`` with tf.function (no op runs; variables keep their values).

    ``specs`` are tf.TensorSpecs, variables or Python values.
    """
    import tensorflow as tf

    try:
        with learner_code("Your function"):
            graph = tf.function(answer).get_concrete_function(*specs).graph
    except Wrong as wrong:
        text = wrong.hint.lower()
        return Trace(numpy_detour="numpy" in text or "symbolic" in text)
    except (Exception, NotAttempted):  # noqa: BLE001 - only a detour is informative
        return Trace()
    found = Trace()
    for operation in graph.get_operations():
        if found.non_differentiable is None:
            if operation.type in NON_DIFFERENTIABLE_OPS:
                found.non_differentiable = NON_DIFFERENTIABLE_OPS[operation.type]
            elif operation.type == "Cast" and operation.get_attr("DstT").is_integer:
                found.non_differentiable = "tf.cast to an integer dtype"
        if operation.type in ASSIGN_OPS:
            found.assigns = True
    return found


NONE_HINTS = {
    "unwatched_constant": (
        "The gradient is None for {probe}: the tape records operations only on "
        "tensors it watches. It watches trainable tf.Variables by itself, but never "
        "a plain tensor. Call tape.watch(x) at the start of the `with` block, before "
        "x is used."
    ),
    "outer_not_watching": (
        "The outer tape returned None for {probe}: it does not watch {probe}, so it "
        "recorded nothing about how the inner gradient depends on {probe}. Each tape "
        "keeps its own record: call outer.watch({probe}) at the start of the outer block."
    ),
    "gradient_outside_tape": (
        "The outer tape returned None for {probe} because the inner gradient was "
        "computed after the outer tape's `with` block had ended: the outer tape never "
        "recorded how the first derivative was made. Indent the inner "
        "`tape.gradient(...)` call so it runs inside the outer block."
    ),
    "integer_dtype": (
        "The gradient is None for {probe}: the tape cannot differentiate with respect "
        "to an integer tensor. Convert first, x = tf.cast(x, tf.float32), then watch "
        "the converted tensor and differentiate with respect to it."
    ),
    "watched_after_use": (
        "The gradient is None for {probe} although your tape watches it: it starts "
        "watching too late. Operations that ran before tape.watch(x) are not on the "
        "record, so move tape.watch(x) to the top of the `with` block."
    ),
    "numpy_detour": (
        "The gradient is None because the computation leaves TensorFlow: `.numpy()`, "
        "np.* functions or float() produce values the tape cannot follow, and "
        "tf.constant(...) of such a value is a brand-new tensor with no history. "
        "Write that step with TensorFlow ops (tf.reduce_mean, tf.square, ...)."
    ),
    "non_differentiable_op": (
        "The gradient is None because the computation goes through {op}, which has "
        "no gradient: {why}. Take it off the path from x to the result."
    ),
    "unwatched_variable": (
        "The gradient is None for {probe}: that variable was never watched (it has "
        "trainable=False, or the tape was created with "
        "watch_accessed_variables=False). Watch it explicitly with tape.watch(...)."
    ),
    "computed_outside_tape": (
        "The gradient is None for {probe} because {what}. Compute everything between "
        "the source and the result inside the `with` block, while the tape records."
    ),
    "no_gradient": (
        "The gradient is None for {probe}: the tape found no recorded path from the "
        "result back to it. Is it watched, a float, used inside the `with` block, "
        "only through TensorFlow ops?"
    ),
}


WHY_NO_GRADIENT = {
    "tf.round": "rounding is flat almost everywhere, so TensorFlow registers none",
    "tf.math.rint": "rounding is flat almost everywhere, so TensorFlow registers none",
    "tf.floor": "it is flat almost everywhere, so TensorFlow registers none",
    "tf.math.ceil": "it is flat almost everywhere, so TensorFlow registers none",
    "tf.sign": "it is flat almost everywhere",
    "tf.argmax": "it returns an integer index, and integers carry no gradient",
    "tf.argmin": "it returns an integer index, and integers carry no gradient",
    "tf.cast to an integer dtype": "integers carry no gradient",
}


def none_hint(
    code: str,
    probe: str = "x",
    op: str = "an operation without a gradient",
    what: str = "it was not recorded",
) -> str:
    why = WHY_NO_GRADIENT.get(op, "TensorFlow registers no gradient for it")
    return NONE_HINTS[code].format(probe=probe, op=op, why=why, what=what)


def why_none(log: MethodLog, *, probe: str = "x", answer=None, trace_specs=None):
    """``(code, hint)`` naming the cause of the first ``None`` the log saw, or None.

    With ``answer`` and ``trace_specs``, tracing settles the causes the log cannot
    see (a NumPy detour, an operation without a gradient).
    """
    import tensorflow as tf

    found = log.first_none()
    if found is None:
        return None
    call, source = found
    if call.target_is_numpy:
        return "numpy_detour", (
            "Your result is a NumPy (or Python) number, not a tensor: it has left "
            "TensorFlow, so tape.gradient cannot start from it. Compute it with "
            "TensorFlow ops, e.g. tf.reduce_mean."
        )
    dtype = getattr(source, "dtype", None)
    if dtype is not None and not (dtype.is_floating or dtype.is_complex):
        return "integer_dtype", none_hint("integer_dtype", probe)
    tape = call.tape
    watched = tape.was_watched(source)
    is_variable = isinstance(source, tf.Variable)
    if is_variable and not watched and (not source.trainable or not tape.watch_accessed_variables):
        return "unwatched_variable", none_hint("unwatched_variable", probe)
    # Inner calls are those of other tapes made after this one opened: a tape of an
    # earlier step of a loop, closed before this one opened, is no inner tape.
    opened = tape.entered if tape.entered is not None else call.time
    earlier_inner = [c for c in log.calls if c.tape is not tape and opened < c.time < call.time]
    if earlier_inner:
        outside = [
            c
            for c in earlier_inner
            if tape.entered is not None and c.time > tape.entered and tape not in c.recording_tapes
        ]
        if outside:
            return "gradient_outside_tape", none_hint("gradient_outside_tape", probe)
        if not is_variable and not watched:
            return "outer_not_watching", none_hint("outer_not_watching", probe)
    if not is_variable and not watched:
        return "unwatched_constant", none_hint("unwatched_constant", probe)
    outside = _target_outside_block(call)
    if outside:
        return "computed_outside_tape", NONE_HINTS["computed_outside_tape"].format(
            probe=probe, what=outside
        )
    if answer is not None and trace_specs is not None:
        traced = trace(answer, *trace_specs)
        if traced.numpy_detour:
            return "numpy_detour", none_hint("numpy_detour", probe)
        if traced.non_differentiable:
            return "non_differentiable_op", none_hint(
                "non_differentiable_op", probe, traced.non_differentiable
            )
    if watched and not is_variable:
        return "watched_after_use", none_hint("watched_after_use", probe)
    return "no_gradient", none_hint("no_gradient", probe)


def _target_outside_block(call) -> str:
    """Why the target was not recorded, when its own id says it was made outside."""
    tape, made = call.tape, getattr(call.target, "_id", None)
    if made is None or tape.entered is None:
        return ""
    if any(start < made < end for start, end in tape.paused):
        return (
            "the result was computed inside `with tape.stop_recording():`, where the tape is paused"
        )
    if made < tape.entered:
        return (
            "the result was computed before the tape's `with` block opened, where "
            "nothing is recorded"
        )
    if tape.exited is not None and made > tape.exited:
        return (
            "the result was computed after the tape's `with` block had closed, "
            "where nothing is recorded"
        )
    return ""


def raise_if_none(log: MethodLog, **context) -> None:
    explained = why_none(log, **context)
    if explained is not None:
        raise Wrong(explained[1], explained[0])


def gradient_values(
    gradient, *, name: str = "The gradient", shape=None, dtype=None, probe: str = "x"
):
    """A gradient the check computed, as float64 NumPy; None explained plainly."""
    if gradient is None:
        raise Wrong(none_hint("no_gradient", probe), "no_gradient")
    return as_values(gradient, name=name, shape=shape, dtype=dtype)
