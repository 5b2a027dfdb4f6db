"""Seeing *how* an answer differentiates, not only what it returns (lessons 01-06).

Many exercises demand a method: work it out by hand (no tape), use
``output_gradients``, nest two tapes, use forward mode, write a
``@tf.custom_gradient`` rule, do not call ``tape.jacobian``. The right numbers by
another method are not the exercise. Inside :func:`observe`, the check notes

* every ``tf.GradientTape`` the answer creates (under any alias, including
  ``tf.autodiff.GradientTape``): what it watches, when it records, and every
  ``gradient``, ``jacobian`` and ``batch_jacobian`` call with its arguments and
  results;
* every ``tf.autodiff.ForwardAccumulator`` and ``jvp`` call;
* every call of a ``@tf.custom_gradient`` function in eager mode, and every time
  its gradient function later runs (with the upstream it received and what it
  returned), so a check can tell whether the learner's rule produced the gradient;
* calls of ``tf.test.compute_gradient`` and of ``tf.gradients`` (graph mode, as inside a
  ``tf.function``).

The instruments wrap TensorFlow's own classes while the block runs and are
removed after it; tapes created outside the block (the check's own) are ignored.
Times are read from TensorFlow's own id counter, which also numbers every eager
tensor (``tensor._id``), so "was this result computed inside the tape's block?"
is a comparison of two numbers.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from dataclasses import field

import numpy as np

_active_logs: list = []
_recording: list = []  # TapeInfo of observed tapes currently recording
_originals: dict = {}


@dataclass(eq=False)
class TapeInfo:
    """One ``tf.GradientTape`` created by the answer."""

    persistent: bool
    watch_accessed_variables: bool
    watched: list = field(default_factory=list)
    entered: int | None = None
    exited: int | None = None
    recording: bool = False
    internal: int = 0  # > 0 while jacobian() runs its own gradient calls
    paused: list = field(default_factory=list)  # (start, end) of each stop_recording

    def was_watched(self, tensor) -> bool:
        return any(tensor is seen for seen, _ in self.watched)


@dataclass(eq=False)
class DifferentiationCall:
    """One ``gradient``, ``jacobian`` or ``batch_jacobian`` call on an observed tape."""

    kind: str
    tape: TapeInfo
    time: int
    target_is_numpy: bool
    sources: list
    output_gradients: bool
    unconnected_zero: bool
    recording_tapes: tuple  # other observed tapes recording at the time
    target: object = None
    upstream: object = None  # the output_gradients passed, if any
    results: list | None = None
    error: BaseException | None = None


@dataclass(eq=False)
class CustomGradientCall:
    """One call of a ``@tf.custom_gradient`` function; ``backward`` lists its grad_fn runs."""

    input_count: int
    backward: list = field(default_factory=list)  # (upstreams, returned) per run


@dataclass(eq=False)
class ForwardAccumulatorInfo:
    """One ``tf.autodiff.ForwardAccumulator``: its primals and tangents as given (noted
    before TensorFlow checks them, so a refused tangent is on the record too)."""

    jvp_results: list = field(default_factory=list)
    primals: list = field(default_factory=list)
    tangents: list = field(default_factory=list)
    unconnected: int = 0  # jvp results that are zeros only by unconnected_gradients="zero"


@dataclass
class MethodLog:
    """What the answer did to differentiate, collected by :func:`observe`."""

    tapes: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    custom_calls: list = field(default_factory=list)
    accumulators: list = field(default_factory=list)
    compute_gradient_calls: int = 0
    graph_gradient_calls: int = 0  # tf.gradients, which works only inside a tf.function
    course_gradchecks: int = 0  # calls of autodiff_course.gradcheck's finite differences
    provenance: object = None  # the run's operations (.recording.Provenance), when recorded

    # -- what was used -------------------------------------------------------
    @property
    def used_reverse_mode(self) -> bool:
        return bool(self.tapes or self.calls)

    @property
    def used_forward_mode(self) -> bool:
        return any(result is not None for acc in self.accumulators for result in acc.jvp_results)

    @property
    def used_any_autodiff(self) -> bool:
        return (
            self.used_reverse_mode
            or bool(self.accumulators)
            or self.compute_gradient_calls + self.graph_gradient_calls > 0
        )

    @property
    def used_jacobian(self) -> bool:
        return any(call.kind in ("jacobian", "batch_jacobian") for call in self.calls)

    @property
    def used_output_gradients(self) -> bool:
        return any(call.output_gradients for call in self.calls)

    @property
    def used_custom_gradient(self) -> bool:
        return bool(self.custom_calls)

    @property
    def custom_backward_ran(self) -> bool:
        return any(call.backward for call in self.custom_calls)

    @property
    def nested(self) -> bool:
        """A differentiation on one tape while another recorded, which later differentiated."""
        for inner in self.calls:
            for outer_tape in inner.recording_tapes:
                if any(call.tape is outer_tape and call.time > inner.time for call in self.calls):
                    return True
        return False

    def first_none(self):
        """``(call, source)`` of the first source whose gradient came back None."""
        for call in self.calls:
            if call.target_is_numpy:
                return call, None
            if call.results is None:
                continue
            for source, result in zip(call.sources, call.results):
                if result is None:
                    return call, source
        return None

    @property
    def used_zero_option(self) -> bool:
        return any(call.unconnected_zero for call in self.calls)


def _asks_for_zeros(unconnected_gradients=None) -> bool:
    """``jvp(..., unconnected_gradients=...)`` given ``"zero"`` or its enum member."""
    return str(getattr(unconnected_gradients, "value", unconnected_gradients)).lower() == "zero"


def recording() -> bool:
    """An observed tape (one the answer made) is recording now."""
    return bool(_recording)


def _clock() -> int:
    from tensorflow.python.framework import ops

    return ops.uid()


def _from_tensorflow() -> bool:
    """True when the instrumented call comes from TensorFlow itself, not the answer.

    (ForwardAccumulator, for one, runs tapes of its own.)
    """
    import sys

    caller = sys._getframe(2).f_code.co_filename.replace("\\", "/")
    return "/tensorflow/" in caller or "/keras/" in caller


def _info(tape) -> TapeInfo | None:
    return getattr(tape, "_course_observed", None)


def _is_numpy(value) -> bool:
    import tensorflow as tf

    return any(
        isinstance(item, (np.ndarray, np.generic, float, int)) for item in tf.nest.flatten(value)
    )


def _install() -> None:
    import tensorflow as tf
    from tensorflow.python.eager import backprop
    from tensorflow.python.eager import forwardprop
    from tensorflow.python.eager import record

    tape_class = backprop.GradientTape
    accumulator_class = forwardprop.ForwardAccumulator
    originals = {}  # (owner, name) -> what the instrument replaced, filled below

    def original(owner, name):
        return originals[(owner, name)]

    def init(self, persistent=False, watch_accessed_variables=True):
        original(tape_class, "__init__")(self, persistent, watch_accessed_variables)
        if _active_logs and not _from_tensorflow():
            info = TapeInfo(bool(persistent), bool(watch_accessed_variables))
            self._course_observed = info
            for log in _active_logs:
                log.tapes.append(info)

    def enter(self):
        result = original(tape_class, "__enter__")(self)
        info = _info(self)
        if info is not None:
            info.entered, info.recording = _clock(), True
            _recording.append(info)
        return result

    def exit(self, typ, value, traceback):
        info = _info(self)
        if info is not None:
            info.exited, info.recording = _clock(), False
            if info in _recording:
                _recording.remove(info)
        return original(tape_class, "__exit__")(self, typ, value, traceback)

    def watch(self, tensor):
        info = _info(self)
        if info is not None:
            time = _clock()
            info.watched.extend((item, time) for item in tf.nest.flatten(tensor))
        return original(tape_class, "watch")(self, tensor)

    def differentiation(kind):
        def run(self, target, sources, *args, **kwargs):
            method, info = original(tape_class, kind), _info(self)
            if info is None or info.internal:
                return method(self, target, sources, *args, **kwargs)
            arguments = dict(zip(_ARGUMENT_NAMES[kind], args), **kwargs)
            unconnected = arguments.get("unconnected_gradients")
            call = DifferentiationCall(
                kind=kind,
                tape=info,
                time=_clock(),
                target_is_numpy=_is_numpy(target),
                sources=tf.nest.flatten(sources),
                output_gradients=arguments.get("output_gradients") is not None,
                unconnected_zero=unconnected in (tf.UnconnectedGradients.ZERO, "zero"),
                recording_tapes=tuple(t for t in _recording if t is not info),
                target=target,
                upstream=arguments.get("output_gradients"),
            )
            for log in _active_logs:
                log.calls.append(call)
            info.internal += 1
            try:
                result = method(self, target, sources, *args, **kwargs)
            except BaseException as error:
                call.error = error
                raise
            finally:
                info.internal -= 1
            call.results = tf.nest.flatten(result) if kind == "gradient" else [result]
            return result

        return run

    @contextlib.contextmanager
    def stop_recording(self):
        info = _info(self)
        started = _clock()
        with original(tape_class, "stop_recording")(self):
            yield
        if info is not None:
            info.paused.append((started, _clock()))

    def accumulator_init(self, primals, tangents):
        if _active_logs:
            info = ForwardAccumulatorInfo(
                primals=tf.nest.flatten(primals), tangents=tf.nest.flatten(tangents)
            )
            self._course_observed = info
            for log in _active_logs:
                log.accumulators.append(info)
        original(accumulator_class, "__init__")(self, primals, tangents)

    def jvp(self, primals, *args, **kwargs):
        result = original(accumulator_class, "jvp")(self, primals, *args, **kwargs)
        info = _info(self)
        if info is not None:
            info.jvp_results.extend(tf.nest.flatten(result))
            if _asks_for_zeros(*args, **kwargs):
                bare = original(accumulator_class, "jvp")(self, primals)
                info.unconnected += sum(r is None for r in tf.nest.flatten(bare))
        return result

    def record_operation(
        op_type, output_tensors, input_tensors, backward_function, *args, **kwargs
    ):
        if _active_logs and getattr(backward_function, "__name__", "") == "actual_grad_fn":
            call = CustomGradientCall(len(input_tensors))
            for log in _active_logs:
                log.custom_calls.append(call)
            backward_function = _watched_backward(backward_function, call)
        return original(record, "record_operation")(
            op_type, output_tensors, input_tensors, backward_function, *args, **kwargs
        )

    def compute_gradient(*args, **kwargs):
        for log in _active_logs:
            log.compute_gradient_calls += 1
        return original(tf.test, "compute_gradient")(*args, **kwargs)

    def gradients(*args, **kwargs):
        for log in _active_logs:
            log.graph_gradient_calls += 1
        return original(tf, "gradients")(*args, **kwargs)

    replacements = {
        (tape_class, "__init__"): init,
        (tape_class, "__enter__"): enter,
        (tape_class, "__exit__"): exit,
        (tape_class, "watch"): watch,
        **{(tape_class, kind): differentiation(kind) for kind in _ARGUMENT_NAMES},
        (tape_class, "stop_recording"): stop_recording,
        (accumulator_class, "__init__"): accumulator_init,
        (accumulator_class, "jvp"): jvp,
        (record, "record_operation"): record_operation,
        (tf.test, "compute_gradient"): compute_gradient,
        (tf, "gradients"): gradients,
    }
    originals.update({key: getattr(*key) for key in replacements})
    _originals.update(originals)
    for (owner, name), replacement in replacements.items():
        setattr(owner, name, replacement)


_ARGUMENT_NAMES = {
    "gradient": ("output_gradients", "unconnected_gradients"),
    "jacobian": ("unconnected_gradients", "parallel_iterations", "experimental_use_pfor"),
    "batch_jacobian": ("unconnected_gradients", "parallel_iterations", "experimental_use_pfor"),
}


def _watched_backward(backward_function, call: CustomGradientCall):
    def backward(*upstreams):
        returned = backward_function(*upstreams)
        call.backward.append((list(upstreams), list(returned)))
        return returned

    backward.__name__ = "actual_grad_fn"
    return backward


def _uninstall() -> None:
    for (owner, name), value in _originals.items():
        setattr(owner, name, value)
    _originals.clear()
    _recording.clear()


@contextlib.contextmanager
def observe():
    """Collect a :class:`MethodLog` of how the code in the block differentiates."""
    from .. import gradcheck

    log = MethodLog()
    if not _active_logs:
        _install()
    _active_logs.append(log)
    before = gradcheck.calls()
    try:
        yield log
    finally:
        log.course_gradchecks = gradcheck.calls() - before
        _active_logs.remove(log)
        if not _active_logs:
            _uninstall()
