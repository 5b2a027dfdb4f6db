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
from dataclasses import dataclass, field

import numpy as np

from .answers import LEARNER_ERRORS, call_answer
from .differentiating import why_none, none_hint
from .observing import MethodLog, observe
from .verdicts import Wrong

_FLAT = ", which TensorFlow gives no gradient (it is flat almost everywhere)"
FLAT_OPS = {"Round": "tf.round" + _FLAT, "Rint": "tf.math.rint" + _FLAT,
            "Floor": "tf.floor" + _FLAT, "Ceil": "tf.math.ceil" + _FLAT,
            "Sign": "tf.sign, whose derivative is 0"}
INTEGER_OPS = {
    "ArgMax": "tf.argmax, whose result is an integer index with nothing to differentiate",
    "ArgMin": "tf.argmin, whose result is an integer index with nothing to differentiate",
    "Cast": "a tf.cast to an integer dtype, which drops the fractional part and the "
            "gradient with it"}
STOP_GRADIENT = "tf.stop_gradient, which blocks the gradient on purpose"
ASSIGN_OPS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}

HINTS = {
    "variable_replaced": (
        "`w = w - ...` (or tf.Variable(...) made anew) gives the name a new object: "
        "the variable you were given never changes, and a plain tensor is not "
        "watched by the next tape, so its gradient is None. Update the variable in "
        "place with w.assign_sub(...)."),
    "stateful_assign": (
        "The gradient is None for {probe} because its value was written into a "
        "variable (assign, assign_add, or a new tf.Variable(...)), and the result read "
        "that variable afterwards: the tape records reads of a variable, not where "
        "its value came from. Compute the new value as an ordinary tensor, use that "
        "tensor, and assign it to the variable after the tape."),
    "computed_outside_tape": (
        "The gradient is None for {probe} because {what}. Compute everything between "
        "the source and the result inside the `with` block, while the tape records."),
    "cut_by_op": (
        "The gradient is None for {probe} because the path from it to the result goes "
        "through {op}. Take that operation off the path (or decide which derivative "
        "you want there)."),
    "source_not_used": (
        "The gradient is None for {probe}: it never took part in computing the "
        "result, so there is no path to it. Is it missing from the formula?"),
}


def hint(code: str, probe: str = "x", **details) -> str:
    """The plain-words hint for a cause of a missing gradient."""
    if code == "non_differentiable_op" and details.get("op"):
        return HINTS["cut_by_op"].format(probe=probe, op=details["op"])
    if code in HINTS:
        return HINTS[code].format(probe=probe, **details)
    return none_hint(code, probe)


@dataclass
class Operation:
    time: int
    name: str
    inputs: list
    outputs: list


class Provenance:
    """The operations and conversions of one run, and the check's own tape."""

    def __init__(self, tape):
        self.tape = tape  # persistent, watching every input from the start
        self.operations: list[Operation] = []
        self.conversions: list = []  # (time, tensor)
        self._connected: dict = {}

    def connected(self, target, source) -> bool:
        """The check's tape finds a path from ``source`` to ``target``."""
        key = (id(target), id(source))
        if key not in self._connected:
            import tensorflow as tf

            found = False
            if isinstance(target, (tf.Tensor, tf.Variable)) and target.dtype.is_floating:
                try:
                    found = self.tape.gradient(target, source) is not None
                except Exception:  # noqa: BLE001 - no path we can show
                    found = False
            self._connected[key] = found
        return self._connected[key]

    def check_gradient(self, target, source):
        try:
            return self.tape.gradient(target, source)
        except Exception:  # noqa: BLE001
            return None

    def uses_of(self, source) -> list[int]:
        """Times of the operations that read ``source`` directly."""
        handle = getattr(source, "handle", None)
        return [op.time for op in self.operations
                if any(t is source or (handle is not None and t is handle)
                       for t in op.inputs)]

    def reads_of(self, variable, handle=None) -> list[Operation]:
        """Operations that read ``variable`` (the fast path reads a variable passed to
        an operation itself, without a ReadVariableOp), or its ``handle``."""
        handle = handle if handle is not None else getattr(variable, "handle", None)
        return [op for op in self.operations
                if any(t is variable for t in op.inputs)
                or (op.name == "ReadVariableOp" and op.inputs and op.inputs[0] is handle)]

    def variable_of(self, handle):
        for op in self.operations:
            for t in op.inputs:
                if getattr(t, "handle", None) is handle:
                    return t
        return None

    def narrowed_to_float32(self) -> bool:
        """Some operation took float64 in and gave float32 out."""
        return any(
            any(getattr(t, "dtype", None) is not None and t.dtype.name == "float64"
                for t in op.inputs)
            and any(t.dtype.name == "float32" for t in op.outputs)
            for op in self.operations)

    def cut_by(self, target, source, *, inside=None):
        """``(code, detail)`` for what cut the path from ``source`` to ``target``.

        ``inside`` (a tape's entry and exit times) is given when only part of a
        gradient is missing: evidence that cannot be linked to the target (integer
        results, NumPy conversions) must then come from that block, and assigns are
        left out (a training loop's assign between steps is meant to cut the path).
        """
        import tensorflow as tf

        def in_block(time):
            if inside is None:
                return True
            entered, exited = inside
            return entered is not None and time > entered and (exited is None
                                                               or time < exited)

        def fed_by_source(op):
            return any(t is source or (isinstance(t, tf.Tensor) and t.dtype.is_floating
                                       and self.connected(t, source)) for t in op.inputs)

        for op in self.operations:  # an assign whose value came from the source
            if op.name in ASSIGN_OPS and len(op.inputs) >= 2 and inside is None \
                    and self.connected(op.inputs[1], source):
                handle = op.inputs[0]
                variable = self.variable_of(handle) if isinstance(handle, tf.Tensor) \
                    else handle
                later = [read for read in self.reads_of(variable, handle)
                         if read.time > op.time and read.outputs]
                if any(self.connected(target, read.outputs[0]) for read in later):
                    return "stateful_assign", None
        for op in self.operations:  # an operation without a gradient on the path
            if not op.inputs or not op.outputs:
                continue
            output = op.outputs[0]
            if op.name in FLAT_OPS:
                if fed_by_source(op) and self.connected(target, output):
                    return "non_differentiable_op", FLAT_OPS[op.name]
            elif op.name in INTEGER_OPS:
                if not output.dtype.is_floating and in_block(op.time) and fed_by_source(op):
                    return "non_differentiable_op", INTEGER_OPS[op.name]
            elif op.name == "StopGradient":
                if in_block(op.time) and fed_by_source(op):
                    return "non_differentiable_op", STOP_GRADIENT
        for time, tensor in self.conversions:  # a detour through NumPy
            if in_block(time) and (tensor is source or (
                    tensor.dtype.is_floating and self.connected(tensor, source))):
                return "numpy_detour", None
        return None


@contextlib.contextmanager
def _instruments(provenance: Provenance):
    """Note eager operations and NumPy conversions while the block runs."""
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import execute
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import resource_variable_ops

    tensor_base = ops._EagerTensorBase
    kinds = (ops.EagerTensor, resource_variable_ops.BaseResourceVariable)
    saved = {
        (pywrap_tfe, "TFE_Py_FastPathExecute"): pywrap_tfe.TFE_Py_FastPathExecute,
        (execute, "execute"): execute.execute,
        (tensor_base, "numpy"): tensor_base.numpy,
        (tensor_base, "__array__"): tensor_base.__array__,
        (tensor_base, "__float__"): tensor_base.__float__,
        (tensor_base, "__int__"): tensor_base.__int__,
    }

    def tensors(values) -> list:
        found = []
        for value in values:
            if isinstance(value, kinds):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(item for item in value if isinstance(item, kinds))
        return found

    def note(name, inputs, result):
        outputs = tensors(result if isinstance(result, (list, tuple)) else [result])
        name = name.decode() if isinstance(name, bytes) else str(name)
        provenance.operations.append(Operation(ops.uid(), name, tensors(inputs), outputs))

    fast_path = saved[(pywrap_tfe, "TFE_Py_FastPathExecute")]
    slow_path = saved[(execute, "execute")]

    def fast_path_execute(ctx, op_name, name, *args):
        result = fast_path(ctx, op_name, name, *args)
        note(op_name, args, result)
        return result

    def slow_execute(op_name, num_outputs, inputs, attrs, ctx, name=None):
        result = slow_path(op_name, num_outputs, inputs, attrs, ctx, name)
        note(op_name, inputs, result)
        return result

    def conversion(method):
        original = saved[(tensor_base, method)]

        def convert(self, *args, **kwargs):
            provenance.conversions.append((ops.uid(), self))
            return original(self, *args, **kwargs)

        return convert

    pywrap_tfe.TFE_Py_FastPathExecute = fast_path_execute
    execute.execute = slow_execute
    for method in ("numpy", "__array__", "__float__", "__int__"):
        setattr(tensor_base, method, conversion(method))
    try:
        yield
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)


@dataclass
class Run:
    """One call of an answer: what it returned (or raised) and everything it did."""

    value: object
    raised: Wrong | None
    log: MethodLog
    provenance: Provenance
    name_cause: object = field(default=lambda code, text: text)


def _watchable(values) -> list:
    import tensorflow as tf

    return [value for value in tf.nest.flatten(values)
            if isinstance(value, (tf.Tensor, tf.Variable)) and value.dtype.is_floating]


def run_answer(answer, *args, name: str | None = None, name_cause=None) -> Run:
    """Call the answer on the check's own tape, noting how it differentiates.

    An exception raised by the answer comes back as ``raised``, so that what
    happened before it can explain it. ``name_cause(code, text)`` lets a lesson
    prefix a hint with its own name for the cause ("Cause 3, watching after use").
    """
    import tensorflow as tf

    check_tape = tf.GradientTape(persistent=True)  # created outside observe(): ignored
    provenance = Provenance(check_tape)
    raised = value = None
    with check_tape:
        for tensor in _watchable(args):
            check_tape.watch(tensor)
        with observe() as log, _instruments(provenance):
            try:
                value = call_answer(answer, *args, name=name)
            except Wrong as wrong:
                if wrong.mistake not in LEARNER_ERRORS:
                    raise
                raised = wrong
    return Run(value, raised, log, provenance, name_cause or (lambda code, text: text))


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


class _Focused:
    """The run's method log, with ``first_none`` fixed on one call and source, for
    :func:`why_none` (which also looks at the other calls: nested tapes)."""

    def __init__(self, log: MethodLog, call, source):
        self.calls = log.calls
        self._found = (call, source)

    def first_none(self):
        return self._found


def explain_missing(run: Run, call, source, *, probe: str = "x", originals=()):
    """``(code, hint)`` naming why ``call`` found no path to ``source``."""
    import tensorflow as tf

    named, seen = run.name_cause, run.provenance
    if call.target_is_numpy:
        return "numpy_detour", named("numpy_detour", (
            "Your result is a NumPy (or Python) number, not a tensor: it has left "
            "TensorFlow, so tape.gradient cannot start from it (it raises an "
            "AttributeError about `_id`). Compute it with TensorFlow ops, e.g. "
            "tf.reduce_mean."))
    dtype = getattr(source, "dtype", None)
    if dtype is not None and not (dtype.is_floating or dtype.is_complex):
        return "integer_dtype", named("integer_dtype", hint("integer_dtype", probe))
    tape = call.tape
    watched = tape.was_watched(source)
    if originals and not watched and not any(source is v for v in originals) \
            and any(seen.connected(source, v) for v in originals):
        return "variable_replaced", named("variable_replaced", hint("variable_replaced"))
    if not watched:  # what the tape could not see at all
        explained = why_none(_Focused(run.log, call, source), probe=probe)
        if explained is not None and explained[0] in ("unwatched_variable",
                                                      "unwatched_constant",
                                                      "outer_not_watching",
                                                      "gradient_outside_tape"):
            return explained[0], named(explained[0], explained[1])
    target = call.target
    if target is None:
        return "no_gradient", named("no_gradient", hint("no_gradient", probe))
    if isinstance(source, tf.Variable) and not seen.reads_of(source):
        return "source_not_used", named("source_not_used", hint("source_not_used", probe))
    if seen.connected(target, source):
        code, text = not_recorded(run, call, source, probe)
        return code, named(code, text)
    cut = seen.cut_by(target, source)
    if cut is not None:
        code, op = cut
        return code, named(code, hint(code, probe, op=op or ""))
    return "no_gradient", named("no_gradient", hint("no_gradient", probe))


def not_recorded(run: Run, call, source, probe: str):
    """The path exists, yet the learner's tape did not record it: say which part."""
    tape, seen = call.tape, run.provenance
    entered, exited = tape.entered, tape.exited
    target_time = getattr(call.target, "_id", None)
    if target_time is not None and any(start < target_time < end
                                       for start, end in tape.paused):
        return "computed_outside_tape", hint(
            "computed_outside_tape", probe,
            what="the result was computed inside `with tape.stop_recording():`, where "
                 "the tape is paused")
    if entered is not None and target_time is not None and (
            target_time < entered or (exited is not None and target_time > exited)):
        return "computed_outside_tape", hint(
            "computed_outside_tape", probe,
            what=("the result was computed before the tape's `with` block opened, "
                  "where nothing is recorded" if target_time < entered else
                  "the result was computed after the tape's `with` block had closed, "
                  "where nothing is recorded"))
    uses = seen.uses_of(source)
    watch_times = [time for item, time in tape.watched if item is source]
    if watch_times and entered is not None and any(
            entered <= use < min(watch_times) for use in uses):
        return "watched_after_use", hint("watched_after_use", probe)
    if entered is not None and any(use < entered for use in uses):
        return "computed_outside_tape", hint(
            "computed_outside_tape", probe,
            what="part of the result was computed before the tape's `with` block "
                 "opened, where nothing is recorded")
    return "no_gradient", hint("no_gradient", probe)


def partly(text: str) -> str:
    """A None hint reworded for a gradient that is only partly missing."""
    return (text.replace("The gradient is None for", "Part of the gradient is missing for")
                .replace("The gradient is None", "Part of the gradient is missing")
                .replace("its gradient is None", "part of its gradient is missing"))


def raise_if_missing(run: Run, *, probe: str = "x", originals=(), prefix: str = "",
                     hidden: bool = False) -> None:
    """Raise the named cause of the first None gradient (with ``hidden``, of zeros
    from unconnected_gradients=ZERO too: only for an answer already found wrong)."""
    found = first_missing(run.log, hidden=hidden)
    if found is None:
        return
    call, source, hidden = found
    code, text = explain_missing(run, call, source, probe=probe, originals=originals)
    if hidden:
        raise Wrong(prefix + run.name_cause("zeros_hide_none", (
            "Your gradient is zeros because unconnected_gradients="
            "tf.UnconnectedGradients.ZERO turned a None into zeros: it hides the "
            "cause, it does not connect the tape. The None itself: ")) + text,
            "zeros_hide_none")
    raise Wrong(prefix + text, code)


def _close(a, b) -> bool:
    try:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-5, atol=1e-12))
    except Exception:  # noqa: BLE001
        return False


def raise_if_partly_cut(run: Run, *, probe: str = "x", prefix: str = "",
                        strong: bool = True) -> None:
    """A wrong, non-None gradient: part of the path unrecorded or cut, if that happened.

    ``strong`` evidence is linked to the result: the check's tape differentiates the
    learner's target differently, or an operation without a gradient feeds it. The
    rest (integer results, NumPy conversions inside the block) is only looked at after
    the generic numerical patterns have found nothing (``strong=False``).
    """
    seen = run.provenance
    for call in run.log.calls:
        if call.target is None or not call.results:
            continue
        for source, result in zip(call.sources, call.results):
            if result is None:
                continue
            if strong:
                full = seen.check_gradient(call.target, source)
                if full is not None and not _close(result, full):
                    code, text = not_recorded(run, call, source, probe)
                    if code != "no_gradient":
                        raise Wrong(prefix + partly(run.name_cause(code, text)), code)
            cut = seen.cut_by(call.target, source,
                              inside=(call.tape.entered, call.tape.exited))
            if cut is not None and (cut[1] is not None and cut[1] in FLAT_OPS.values()) \
                    == strong:
                code, op = cut
                raise Wrong(prefix + partly(run.name_cause(
                    code, hint(code, probe, op=op or ""))), code)


def raise_if_zeros_hide(run: Run, value, **context) -> None:
    """Zeros from unconnected_gradients=ZERO: name the None behind them."""
    import tensorflow as tf

    if isinstance(value, (tf.Tensor, tf.Variable)) and _is_zero(value.numpy()) \
            and run.log.used_zero_option:
        raise_if_missing(run, hidden=True, **context)
