"""Why a gradient is missing, settled from what the answer actually did (lessons 02-05).

:func:`run_answer` calls the learner's function on a persistent tape of the
check's own that watches every input from the start, while
:func:`~.observing.observe` notes the learner's tapes and this module notes, in
the same run and on TensorFlow's single id counter:

* every eager operation (name, input and output tensors): when the source was
  first used, which ``assign`` wrote which value into which variable and which
  reads followed, which operation without a gradient saw it;
* every conversion of a tensor to NumPy or to a Python number.

The check's own tape then settles *is there a path at all?* If it can
differentiate the learner's target with respect to the source, the path exists
and the learner's tape did not record it: the source was never watched, watched
after its first use, or the target was computed outside the ``with`` block or
inside ``stop_recording``. If it cannot, the path is cut, and the cut is the
assign, the operation without a gradient or the NumPy conversion that actually
took a value connected to the source. No cause is ever guessed by elimination.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import LEARNER_ERRORS
from .answers import call_answer
from .observing import MethodLog
from .observing import observe
from .recording import Provenance
from .recording import record_operations
from .verdicts import Wrong

HINTS = {
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
    "watched_before_cast": (
        "The gradient is None for {probe}: your tape watched it while it was still an "
        "integer tensor, and a tape ignores integers (it cannot differentiate them). "
        "tf.cast then made a new float tensor, which the tape never watched. Cast first, "
        "then watch the converted tensor: x = tf.cast(x, tf.float32), then tape.watch(x)."
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
    "variable_replaced": (
        "`w = w - ...` (or tf.Variable(...) made anew) gives the name a new object: "
        "the variable you were given never changes, and a plain tensor is not "
        "watched by the next tape, so its gradient is None. Update the variable in "
        "place with w.assign_sub(...)."
    ),
    "stateful_assign": (
        "The gradient is None for {probe} because its value was written into a "
        "variable (assign, assign_add, or a new tf.Variable(...)), and the result read "
        "that variable afterwards: the tape records reads of a variable, not where "
        "its value came from. Compute the new value as an ordinary tensor, use that "
        "tensor, and assign it to the variable after the tape."
    ),
    "non_differentiable_op": (
        "The gradient is None for {probe} because the path from it to the result goes "
        "through {op}. Take that operation off the path (or decide which derivative "
        "you want there)."
    ),
    "source_not_used": (
        "The gradient is None for {probe}: it never took part in computing the "
        "result, so there is no path to it. Is it missing from the formula?"
    ),
}


def hint(code: str, probe: str = "x", **details) -> str:
    """The plain-words hint for a cause of a missing gradient."""
    details.setdefault("what", "it was not recorded")
    details["op"] = details.get("op") or "an operation without a gradient"
    return HINTS[code].format(probe=probe, **details)


def why_none(log: MethodLog, *, probe: str = "x"):
    """``(code, hint)`` for the causes of the first ``None`` the log saw that only the
    tapes' own record shows (an unwatched variable or constant, nested tapes that missed
    the inner gradient), else None: :func:`explain_missing` settles the others."""
    found = log.first_none()
    return None if found is None else _unseen(log.calls, *found, probe=probe)


def _unseen(calls, call, source, *, probe: str):
    """:func:`why_none` for the None ``call`` gave for ``source``, among ``calls``."""
    import tensorflow as tf

    dtype = getattr(source, "dtype", None)
    if call.target_is_numpy or (dtype is not None and not (dtype.is_floating or dtype.is_complex)):
        return None
    tape = call.tape
    watched = tape.was_watched(source)
    is_variable = isinstance(source, tf.Variable)
    if is_variable and not watched and (not source.trainable or not tape.watch_accessed_variables):
        return "unwatched_variable", hint("unwatched_variable", probe)
    # Inner calls are those of other tapes made after this one opened: a tape of an
    # earlier step of a loop, closed before this one opened, is no inner tape.
    opened = tape.entered if tape.entered is not None else call.time
    earlier_inner = [c for c in calls if c.tape is not tape and opened < c.time < call.time]
    if earlier_inner:
        outside = [
            c
            for c in earlier_inner
            if tape.entered is not None and c.time > tape.entered and tape not in c.recording_tapes
        ]
        if outside:
            return "gradient_outside_tape", hint("gradient_outside_tape", probe)
        if not is_variable and not watched:
            return "outer_not_watching", hint("outer_not_watching", probe)
    if not is_variable and not watched:
        if any(getattr(getattr(t, "dtype", None), "is_integer", False) for t, _ in tape.watched):
            return "watched_before_cast", hint("watched_before_cast", probe)
        return "unwatched_constant", hint("unwatched_constant", probe)
    return None


@dataclass
class Run:
    """One call of an answer: what it returned (or raised) and everything it did."""

    value: object
    raised: Wrong | None
    log: MethodLog
    provenance: Provenance
    changed: list = field(default_factory=list)  # the answer's own state the call changed


def run_answer(answer, *args, name: str | None = None, record: bool = True) -> Run:
    """Call the answer on the check's own tape, noting how it differentiates.

    An exception raised by the answer comes back as ``raised``, so that what
    happened before it can explain it. With ``record=False`` only the learner's
    tapes are noted (no check tape, no operations: ``provenance`` is None), a third
    of the cost, for a first look.
    """
    import tensorflow as tf

    nothing = contextlib.nullcontext()
    check_tape = tf.GradientTape(persistent=True) if record else nothing  # outside observe()
    provenance = Provenance(check_tape) if record else None
    raised = value = None
    with check_tape:
        for tensor in tf.nest.flatten(args) if record else ():
            if isinstance(tensor, (tf.Tensor, tf.Variable)) and tensor.dtype.is_floating:
                check_tape.watch(tensor)
        with observe() as log, record_operations(provenance) if record else nothing:
            try:
                value = call_answer(answer, *args, name=name)
            except Wrong as wrong:
                if wrong.mistake not in LEARNER_ERRORS:
                    raise
                raised = wrong
    return Run(value, raised, log, provenance)


def needs_provenance(log: MethodLog) -> bool:
    """A gradient came back None, or zeros that may stand for a missing path: from a
    batch_jacobian whose source was not watched, whose target was not made inside the
    tape's block, or among nested tapes (zeros on a watched path made inside are right)."""
    if first_missing(log, hidden=True) is not None:
        return True
    for call in log.calls:
        if call.kind == "batch_jacobian" and call.results and _is_zero(call.results[0]):
            tape, made = call.tape, getattr(call.target, "_id", None)
            inside = made is not None and tape.entered is not None and tape.entered < made
            inside = inside and (tape.exited is None or made < tape.exited)
            nested = any(other.tape is not tape for other in log.calls)
            if nested or not inside or not tape.was_watched(call.sources[0]):
                return True
    return False


def _is_zero(value) -> bool:
    try:
        return value is not None and not np.any(np.asarray(value) != 0.0)
    except Exception:  # noqa: BLE001
        return False


def first_missing(log: MethodLog, *, hidden: bool = False):
    """``(call, source, hidden)``: the first None; with ``hidden``, else the first
    zeros that unconnected_gradients=ZERO may have put in place of one."""
    found = log.first_none()
    if found is not None:
        return found[0], found[1], False
    if hidden:
        for call in log.calls:
            if call.unconnected_zero and call.results:
                for source, result in zip(call.sources, call.results):
                    if _is_zero(result):
                        return call, source, True
    return None


def explain_missing(run: Run, call, source, *, probe: str = "x", originals=()):
    """``(code, hint)`` naming why ``call`` found no path to ``source``."""
    import tensorflow as tf

    seen = run.provenance
    if call.target_is_numpy:
        return "numpy_detour", (
            "Your result is a NumPy (or Python) number, not a tensor: it has left "
            "TensorFlow, so tape.gradient cannot start from it (it raises an "
            "AttributeError about `_id`). Compute it with TensorFlow ops, e.g. "
            "tf.reduce_mean."
        )
    dtype = getattr(source, "dtype", None)
    if dtype is not None and not (dtype.is_floating or dtype.is_complex):
        return "integer_dtype", hint("integer_dtype", probe)
    tape = call.tape
    watched = tape.was_watched(source)
    if (
        originals
        and not watched
        and not any(source is v for v in originals)
        and any(seen.connected(source, v) for v in originals)
    ):
        return "variable_replaced", hint("variable_replaced")
    if not watched:  # what the tape could not see at all
        explained = _unseen(run.log.calls, call, source, probe=probe)
        if explained is not None:
            return explained
    target = call.target
    if target is None:
        return "no_gradient", hint("no_gradient", probe)
    if isinstance(source, tf.Variable) and not seen.reads_of(source):
        return "source_not_used", hint("source_not_used", probe)
    if seen.connected(target, source):
        return not_recorded(run, call, source, probe)
    cut = seen.cut_by(target, source)
    if cut is not None:
        code, op = cut
        return code, hint(code, probe, op=op or "")
    if not seen.depends_on(target, source):  # no operation links them at all
        copied = seen.depends_on(target, source, copies=True)  # but a copy of its values
        code = "numpy_detour" if copied else "source_not_used"
        return code, hint(code, probe)
    return "no_gradient", hint("no_gradient", probe)


def not_recorded(run: Run, call, source, probe: str):
    """The path exists, yet the learner's tape did not record it: say which part."""
    tape, uses = call.tape, run.provenance.uses_of(source)
    entered, exited, made = tape.entered, tape.exited, getattr(call.target, "_id", None)
    watch_times = [time for item, time in tape.watched if item is source]
    opened, unrecorded = entered is not None, ", where nothing is recorded"
    if made is not None and any(start < made < end for start, end in tape.paused):
        what = (
            "the result was computed inside `with tape.stop_recording():`, where the tape is paused"
        )
    elif opened and made is not None and made < entered:
        what = "the result was computed before the tape's `with` block opened" + unrecorded
    elif opened and made is not None and exited is not None and made > exited:
        what = "the result was computed after the tape's `with` block had closed" + unrecorded
    elif any(start < use < end for use in uses for start, end in tape.paused):
        what = "it was used inside `with tape.stop_recording():`, where the tape is paused"
    elif opened and watch_times and any(entered <= use < min(watch_times) for use in uses):
        return "watched_after_use", hint("watched_after_use", probe)
    elif opened and any(use < entered for use in uses):
        what = "part of the result was computed before the tape's `with` block opened" + unrecorded
    else:
        return "no_gradient", hint("no_gradient", probe)
    return "computed_outside_tape", hint("computed_outside_tape", probe, what=what)


NESTED_CAUSES = ("gradient_outside_tape", "outer_not_watching")


def _source_name(source, names) -> str:
    """The name ("x", "y", "params") the exercise gives the source of a missing gradient."""
    alone = names[0][1] if len(names) == 1 else "x"
    return next((name for tensor, name in names if tensor is source), alone)


def _cause(run: Run, call, source, probe: str, originals=()):
    """``(code, hint)``: why ``call`` found no path to ``source``. The two causes only
    nested tapes have (the inner gradient computed after the outer block, an outer tape
    that does not watch the source) are read from the whole method log; everything else
    from what the answer's operations did (:func:`explain_missing`; ``originals``, the
    variables the answer must update in place, name a rebinding of one of them)."""
    explained = _unseen(run.log.calls, call, source, probe=probe)
    if explained is not None and explained[0] in NESTED_CAUSES:
        return explained
    return explain_missing(run, call, source, probe=probe, originals=originals)


def missing(run: Run, names=(), *, hidden: bool = False, cause_names=None, originals=()):
    """``(code, hint)`` for the first None the learner's tapes returned (with ``hidden``,
    also for zeros that ``unconnected_gradients=ZERO`` put in its place), or None.

    ``names`` pairs the tensors handed to the answer with the names the exercise gives
    them; ``cause_names`` maps a code to the lesson's own name for that cause ("Cause 3,
    watching after use"), put in front of the hint; ``originals`` are the variables the
    answer must update in place (a None from rebinding one is ``variable_replaced``).
    """
    found = first_missing(run.log, hidden=hidden)
    if found is None:
        return None
    call, source, was_hidden = found
    code, text = _cause(run, call, source, _source_name(source, names), originals)
    seen = run.provenance if code == "unwatched_constant" else None
    copied = [n for t, n in names if seen and hasattr(t, "assign") and seen.connected(source, t)]
    if copied:  # a tensor made from a variable handed over: the tape watches the original
        text = (
            f"The gradient is None for a tensor copy of {copied[0]} (tf.convert_to_tensor, "
            "tf.identity, or arithmetic on it): the tape watches the variable itself, never "
            "a plain tensor made from it. Differentiate with respect to the variable itself."
        )
    named = dict(cause_names or {})
    if code in named:
        text = f"{named[code]}. {text}"
    if was_hidden:
        lead = named.get("zeros_hide_none")
        return "zeros_hide_none", (
            (f"{lead}. " if lead else "")
            + "unconnected_gradients=ZERO turned a None into zeros, so your result is wrong "
            "without any warning. Without that option the gradient is None, and here is why: "
            + text
        )
    return code, text


# batch_jacobian answers a target with no recorded path to its source with zeros, not
# None, whatever unconnected_gradients says: the causes of a None, worded for zeros.
ZEROS_CAUSES = {
    "unwatched_constant": (
        "the tape never watched {probe}: it watches trainable variables by itself, never a "
        "plain tensor. Call tape.watch({probe}) at the start of the `with` block."
    ),
    "outer_not_watching": (
        "the outer tape does not watch {probe}, so it recorded nothing about how the inner "
        "gradient depends on {probe}. Call outer.watch({probe}) at the start of the outer block."
    ),
    "gradient_outside_tape": (
        "the inner gradient was computed after the outer tape's `with` block had ended, so "
        "the outer tape never recorded how it was made. Indent the inner `tape.gradient(...)` "
        "call so that it runs inside the outer block."
    ),
    "computed_outside_tape": (
        "part of the target was computed outside the tape's `with` block, where nothing is "
        "recorded (a slice or [:, None] written after the block?). Compute all of it inside."
    ),
    "watched_after_use": (
        "tape.watch({probe}) came after {probe} was used, and what ran before the watch is not "
        "on the record. Move tape.watch({probe}) to the top of the `with` block."
    ),
}


def unconnected_zeros(run: Run, names=()):
    """``(code, hint)`` for a ``batch_jacobian`` whose zeros stand for a missing path (its
    source not watched, its arguments swapped, the inner gradient of nested tapes computed
    too late, ...), or None when no such cause shows (zeros can be the right numbers)."""
    for call in run.log.calls:
        if call.kind != "batch_jacobian" or not call.results or not _is_zero(call.results[0]):
            continue
        source, seen = call.sources[0], run.provenance
        probe = _source_name(source, names)
        lead = (
            f"batch_jacobian returned zeros, not None, for {probe}: it answers a target that "
            "has no recorded path to its source with zeros, whatever unconnected_gradients says, "
            "so the mistake does not stop your code. Here "
        )
        if seen.connected(source, call.target) and not seen.connected(call.target, source):
            return "swapped_arguments", lead + (
                "the arguments are swapped: the source was computed from the target. "
                "batch_jacobian(target, source) takes the result first, then what it depends on."
            )
        code, _ = _cause(run, call, source, probe)
        if code in ZEROS_CAUSES:
            return code, lead + ZEROS_CAUSES[code].format(probe=probe)
    return None
