"""Checks for lesson 02, *Recording with tf.GradientTape*.

References are closed forms evaluated in float64 NumPy, independent of the
TensorFlow code the exercises ask for.

The three "fix the None gradient" exercises (2.2 to 2.4) also name *which* cause
from the lesson's catalogue is still present. To see it, a check

* runs the answer with a recording stand-in for ``tf.GradientTape`` (a subclass
  that notes what was watched and what each ``gradient`` call received and
  returned), so it knows which source came back ``None`` and whether that source
  was an integer tensor, an unwatched tensor, or a tensor that replaced a
  ``tf.Variable``;
* compares the variables' values before and after the call;
* and, when that is not enough, traces the answer with ``tf.function``: a detour
  through NumPy cannot be traced, and the traced graph lists non-differentiable
  operations (``Round``, ``ArgMax``, ...) and stateful assignments.

The verdict *correct* never depends on this diagnosis: it only compares values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..checking import (Wrong, as_values, call_answer, describe_difference,
                        diagnose_mistake, exercise, matches)

# ---------------------------------------------------------------------------
# The catalogue of None gradients, as hints
# ---------------------------------------------------------------------------

HINTS = {
    "unwatched_constant": (
        "The gradient is None for {probe}: the tape records operations only on "
        "tensors it watches. It watches trainable tf.Variables by itself, but never "
        "a plain tensor. Call tape.watch(x) at the start of the `with` block, before "
        "x is used."),
    "integer_dtype": (
        "The gradient is None for {probe}: the tape cannot differentiate with respect "
        "to an integer tensor. Convert first, x = tf.cast(x, tf.float32), then watch "
        "the converted tensor and differentiate with respect to it."),
    "watched_after_use": (
        "The gradient is None for {probe} although your tape watches x: it starts "
        "watching too late. Operations that ran before tape.watch(x) are not on the "
        "record, so move tape.watch(x) to the top of the `with` block."),
    "numpy_detour": (
        "The gradient is None because the computation leaves TensorFlow: `.numpy()`, "
        "np.* functions or float() produce values the tape cannot follow, and "
        "tf.constant(...) of such a value is a brand-new tensor with no history. "
        "Write that step with TensorFlow ops (tf.reduce_mean, tf.square, ...)."),
    "variable_replaced": (
        "`w = w - ...` replaces your tf.Variable by a plain tensor: the next tape "
        "does not watch it (its gradient is None), and the Variable you were given "
        "never changes. Update it in place with w.assign_sub(...)."),
    "stateful_assign": (
        "The gradient is None because the value goes through assign/assign_add: the "
        "tape records no link from a variable's new value back to what was assigned "
        "to it. Compute the new value as an ordinary tensor (new_total = total + x), "
        "use that tensor in the loss, and assign it to the variable after the tape."),
    "non_differentiable_op": (
        "The gradient is None because the computation goes through {op}, which has "
        "no gradient (rounding is flat almost everywhere, argmax returns an integer "
        "index, a cast to an integer drops the fractional part). Take it off the "
        "path from x to the result."),
    "zeros_hide_none": (
        "You returned zeros where the gradient is not zero: "
        "unconnected_gradients=tf.UnconnectedGradients.ZERO turns a None into zeros "
        "but does not connect the tape. Remove it and fix the cause of the None."),
    "unwatched_variable": (
        "The gradient is None for {probe}: that variable was never watched (it has "
        "trainable=False, or the tape was created with "
        "watch_accessed_variables=False). Watch it explicitly with tape.watch(...)."),
    "unconnected": (
        "The gradient is None for {probe}: the tape found no recorded path from the "
        "result back to it. Go through the catalogue in sections 5 and 6: is it "
        "watched, a float, used inside the `with` block, only through TensorFlow "
        "ops, and not through assign or round?"),
}

NON_DIFFERENTIABLE_OPS = {"Round": "tf.round", "Rint": "tf.math.rint",
                          "Floor": "tf.floor", "Ceil": "tf.math.ceil",
                          "ArgMax": "tf.argmax", "ArgMin": "tf.argmin"}
ASSIGN_OPS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}


# How the lesson's catalogue (sections 5 and 6) names each cause.
CATALOGUE = {
    "unwatched_constant": "Cause 1, an unwatched constant",
    "integer_dtype": "Cause 2, an integer dtype",
    "watched_after_use": "Cause 3, watching after use",
    "numpy_detour": "Cause 4, a detour through NumPy",
    "variable_replaced": "Cause 5, a variable replaced by a tensor",
    "stateful_assign": "Cause 6, a stateful assign in the chain",
    "non_differentiable_op": "Cause 7, an operation without a gradient",
    "zeros_hide_none": "unconnected_gradients=ZERO hides a None",
    "unwatched_variable": "A variable that is not watched (section 1)",
    "unconnected": "No recorded path",
}


def _named(code: str, text: str) -> str:
    """Prefix a hint with the catalogue's name for its cause."""
    return f"{CATALOGUE[code]}. {text}"


def _hint(code: str, **details) -> str:
    details.setdefault("probe", "x")
    details.setdefault("op", "an operation without a gradient")
    return _named(code, HINTS[code].format(**details))


# ---------------------------------------------------------------------------
# A recording stand-in for tf.GradientTape
# ---------------------------------------------------------------------------

@dataclass
class _GradientCall:
    """One call of ``tape.gradient`` as the recording tape saw it."""

    target_is_numpy: bool
    sources: list
    auto_watch: bool
    zero_for_unconnected: bool
    results: list | None = None  # None while (or if) the call raised


@dataclass
class _TapeLog:
    watched: list = field(default_factory=list)
    calls: list = field(default_factory=list)

    def was_watched(self, tensor) -> bool:
        return any(tensor is seen for seen in self.watched)

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
        return any(call.zero_for_unconnected for call in self.calls)


def _real_gradient_tape():
    import tensorflow as tf

    tape_class = tf.GradientTape
    while getattr(tape_class, "_records_for_course_checks", False):
        tape_class = tape_class.__bases__[0]
    return tape_class


@contextlib.contextmanager
def _recording_tapes():
    """Within the block, ``tf.GradientTape`` is a subclass that logs what it sees."""
    import tensorflow as tf

    real = _real_gradient_tape()
    log = _TapeLog()

    class RecordingTape(real):
        _records_for_course_checks = True

        def __init__(self, persistent=False, watch_accessed_variables=True):
            super().__init__(persistent=persistent,
                             watch_accessed_variables=watch_accessed_variables)
            self._auto_watch_for_checks = bool(watch_accessed_variables)

        def watch(self, tensor):
            log.watched.extend(tf.nest.flatten(tensor))
            return super().watch(tensor)

        def gradient(self, target, sources, *args, **kwargs):
            unconnected = kwargs.get("unconnected_gradients",
                                     args[1] if len(args) > 1 else None)
            call = _GradientCall(
                target_is_numpy=any(isinstance(t, (np.ndarray, np.generic, float, int))
                                    for t in tf.nest.flatten(target)),
                sources=tf.nest.flatten(sources),
                auto_watch=self._auto_watch_for_checks,
                zero_for_unconnected=unconnected in (tf.UnconnectedGradients.ZERO, "zero"),
            )
            log.calls.append(call)
            result = super().gradient(target, sources, *args, **kwargs)
            call.results = tf.nest.flatten(result)
            return result

    tf.GradientTape = RecordingTape
    try:
        yield log
    finally:
        tf.GradientTape = real


def _call_recorded(answer, *args, name: str | None = None):
    """Call the answer with recording tapes: ``(value, log, wrong)``.

    ``wrong`` is the :class:`Wrong` that :func:`call_answer` raised when the answer
    raised an exception (the log may explain it better), else None.
    """
    with _recording_tapes() as log:
        try:
            return call_answer(answer, *args, name=name), log, None
        except Wrong as wrong:
            if wrong.mistake != "raised":
                raise
            return None, log, wrong


# ---------------------------------------------------------------------------
# Tracing: NumPy detours, non-differentiable ops, assignments
# ---------------------------------------------------------------------------

def _is_detour_error(error: BaseException) -> bool:
    text = str(error).lower()
    return "numpy" in text or "symbolictensor" in text or "symbolic tensor" in text


def _trace(answer, *specs):
    """Trace ``answer`` with tf.function; return ``(detour, non_differentiable, assigns)``.

    ``specs`` are tf.TensorSpecs, variables or Python values. Tracing runs no
    operation, so variables keep their values.
    """
    import tensorflow as tf

    try:
        graph = tf.function(answer).get_concrete_function(*specs).graph
    except Exception as error:  # noqa: BLE001 - any failure: only a detour is informative
        return _is_detour_error(error), None, False
    operations = graph.get_operations()
    non_differentiable = None
    for operation in operations:
        if operation.type in NON_DIFFERENTIABLE_OPS:
            non_differentiable = NON_DIFFERENTIABLE_OPS[operation.type]
            break
        if operation.type == "Cast" and operation.get_attr("DstT").is_integer:
            non_differentiable = "tf.cast to an integer dtype"
            break
    assigns = any(operation.type in ASSIGN_OPS for operation in operations)
    return False, non_differentiable, assigns


def _why_none(log, answer, trace_specs, *, probe="x", original_variable=None,
              state_changed=False) -> tuple[str, str] | None:
    """Name the catalogued cause of the first None gradient: ``(code, hint)``."""
    import tensorflow as tf

    found = log.first_none()
    if found is None:
        return None
    call, source = found
    if call.target_is_numpy:
        return "numpy_detour", _named("numpy_detour", (
            "Your loss is a NumPy (or Python) number, not a tensor: it has left "
            "TensorFlow, so tape.gradient cannot start from it (it raises an "
            "AttributeError). Compute the loss with TensorFlow ops, e.g. tf.reduce_mean."))
    dtype = getattr(source, "dtype", None)
    if dtype is not None and not (dtype.is_floating or dtype.is_complex):
        return "integer_dtype", _hint("integer_dtype", probe=probe)
    is_variable = isinstance(source, tf.Variable)
    watched = log.was_watched(source)
    if original_variable is not None and not is_variable and source is not original_variable:
        return "variable_replaced", _hint("variable_replaced")
    if is_variable and not watched and (not source.trainable or not call.auto_watch):
        return "unwatched_variable", _hint("unwatched_variable", probe=probe)
    if not is_variable and not watched:
        return "unwatched_constant", _hint("unwatched_constant", probe=probe)
    detour, non_differentiable, assigns = _trace(answer, *trace_specs)
    if detour:
        return "numpy_detour", _hint("numpy_detour")
    if non_differentiable:
        return "non_differentiable_op", _hint("non_differentiable_op", op=non_differentiable)
    if assigns and state_changed:
        return "stateful_assign", _hint("stateful_assign")
    if watched and not is_variable:
        return "watched_after_use", _hint("watched_after_use", probe=probe)
    return "unconnected", _hint("unconnected", probe=probe)


def _raise_if_path_cut(answer, trace_specs) -> None:
    """A wrong value (not None) can come from one of two paths being cut: say so."""
    detour, non_differentiable, _ = _trace(answer, *trace_specs)
    if non_differentiable:
        raise Wrong(_named("non_differentiable_op",
                           f"Part of the path from the input to the result goes through "
                           f"{non_differentiable}, which has no gradient, so that part "
                           f"adds nothing to the gradient. Take it off the path."),
                    "non_differentiable_op")
    if detour:
        raise Wrong(_named("numpy_detour",
                           "Part of the computation leaves TensorFlow (`.numpy()`, np.* "
                           "functions or float()), so that part adds nothing to the "
                           "gradient. Write it with TensorFlow ops."), "numpy_detour")


def _raise_if_none_explained(log, answer, trace_specs, **context) -> None:
    explained = _why_none(log, answer, trace_specs, **context)
    if explained is not None:
        code, hint = explained
        raise Wrong(hint, code)


# ---------------------------------------------------------------------------
# Exercise 2.1: gradients for a dict of variables
# ---------------------------------------------------------------------------

DICT_X = np.array([[1.0, 2.0], [0.5, -1.0], [-2.0, 1.5]])
DICT_Y = np.array([1.0, -0.5, 2.0])
DICT_W = np.array([0.5, -1.5])
DICT_B = 0.25


def _dict_reference(scale=2.0, reduce="mean"):
    residual = DICT_X @ DICT_W + DICT_B - DICT_Y
    divide = len(DICT_Y) if reduce == "mean" else 1.0
    return (scale * DICT_X.T @ residual / divide, scale * residual.sum() / divide)


@exercise("2.1", "gradients for a dict of variables")
def parameter_gradients(answer):
    import tensorflow as tf

    params = {"w": tf.Variable(DICT_W, dtype=tf.float32, name="w"),
              "b": tf.Variable(DICT_B, dtype=tf.float32, name="b")}
    x = tf.constant(DICT_X, dtype=tf.float32)
    y = tf.constant(DICT_Y, dtype=tf.float32)
    value = call_answer(answer, params, x, y)
    if value is None:
        as_values(value)
    if not isinstance(value, Mapping):
        if isinstance(value, (list, tuple)):
            raise Wrong(f"You returned a value of type {type(value).__name__}. Pass the dict itself as "
                        "the sources, tape.gradient(loss, params): the tape returns its "
                        "gradients in the same structure, a dict with keys 'w' and 'b'.",
                        "wrong_structure")
        raise Wrong(f"You returned a value of type {type(value).__name__}; a dict with keys 'w' and "
                    "'b' (the structure of params) was expected. tape.gradient(loss, "
                    "params) returns exactly that.", "wrong_structure")
    if set(value) != {"w", "b"}:
        raise Wrong(f"Your dict has keys {sorted(map(str, value))}; it should have the "
                    "keys of params, ['b', 'w']. Pass params itself as the sources.",
                    "wrong_keys")
    for key in ("w", "b"):
        if value[key] is None:
            raise Wrong(f"The gradient for '{key}' is None: the tape saw no path from the "
                        f"loss to params['{key}']. Compute the whole loss, "
                        f"tf.linalg.matvec(x, params['w']) + params['b'], inside the "
                        f"`with` block.", "none_for_key")
    got_w = as_values(value["w"], name="The gradient for 'w'", shape=(2,), dtype=tf.float32)
    got_b = as_values(value["b"], name="The gradient for 'b'", shape=(), dtype=tf.float32)
    expected_w, expected_b = _dict_reference()
    got = np.append(got_w, got_b)
    expected = np.append(expected_w, expected_b)
    if matches(got, expected):
        return ("tape.gradient(loss, params) returns a dict shaped like params: "
                "{'w': dloss/dw, 'b': dloss/db}.")
    residual = DICT_X @ DICT_W + DICT_B - DICT_Y
    diagnose_mistake(got, [
        ("sum_not_mean",
         "Your gradients are 3 times too large: the loss is the mean of the squared "
         "errors (tf.reduce_mean), not their sum.", np.append(*_dict_reference(reduce="sum"))),
        ("missing_factor_two",
         "Your gradients are half the right size: is the loss the mean of the squared "
         "errors, (prediction - y)**2, and not of some other power?",
         np.append(*_dict_reference(scale=1.0))),
        ("differentiated_predictions",
         "You differentiated the mean prediction, not the loss: square the errors "
         "(prediction - y) before averaging them.",
         np.append(DICT_X.mean(axis=0), 1.0)),
        ("returned_parameters",
         "You returned the parameters' values, not their gradients.",
         np.append(DICT_W, DICT_B)),
        ("absolute_error",
         "That is the gradient of the mean absolute error; the loss squares the "
         "errors.", np.append(DICT_X.T @ np.sign(residual) / 3, np.sign(residual).mean())),
    ])
    raise Wrong("Not the gradient of loss = mean((x w + b - y)**2). "
                + describe_difference(got, expected), "other")


# ---------------------------------------------------------------------------
# Exercise 2.2: slope(x) for variables, float tensors and int tensors
# ---------------------------------------------------------------------------

def _slope_reference(x):
    return 3.0 * x**2 - 2.0


SLOPE_PROBES = [
    # (description, value, kind)
    ("a float32 tf.Variable x = 1.5", 1.5, "variable"),
    ("a float32 tensor x = tf.constant(-0.5)", -0.5, "float"),
    ("an int32 tensor x = tf.constant(2)", 2, "int"),
]


def _slope_probe(value, kind):
    import tensorflow as tf

    if kind == "variable":
        return tf.Variable(value, dtype=tf.float32), tf.Variable(value, dtype=tf.float32)
    dtype = tf.float32 if kind == "float" else tf.int32
    return tf.constant(value, dtype=dtype), tf.TensorSpec([], dtype)


@exercise("2.2", "fix the None gradient: constants and integers")
def slope(answer):
    import tensorflow as tf

    for description, value, kind in SLOPE_PROBES:
        x, spec = _slope_probe(value, kind)
        label = f"`{getattr(answer, '__name__', 'your function')}` called with {description}"
        result, log, raised = _call_recorded(answer, x, name=label)
        if raised is not None:
            _raise_if_none_explained(log, answer, [spec], probe=description)
            extra = (" Convert an integer x with tf.cast(x, tf.float32) before using it."
                     if kind == "int" else "")
            ending = "" if raised.hint.endswith((".", "!", "?")) else "."
            raise Wrong(raised.hint + ending + extra, "raised")
        if result is None:
            _raise_if_none_explained(log, answer, [spec], probe=description)
        got = as_values(result, name=label, shape=(), dtype=tf.float32)
        expected = _slope_reference(float(value))
        if matches(got, expected):
            continue
        if got == 0.0 and log.used_zero_option:
            raise Wrong(_hint("zeros_hide_none"), "zeros_hide_none")
        diagnose_mistake(got, [
            ("value_not_slope",
             f"For {description} you returned f(x) = x**3 - 2x itself, not its "
             f"derivative: return tape.gradient(y, x).", float(value) ** 3 - 2 * value),
        ])
        _raise_if_path_cut(answer, [spec])
        raise Wrong(f"For {description} the slope 3x**2 - 2 is {expected:.6g}, but your "
                    f"function returned {float(got):.6g}.", "other")
    return ("Every kind of x works: cast to float32, watch before use, then the tape "
            "sees the whole computation.")


# ---------------------------------------------------------------------------
# Exercise 2.3: a training loop that stops learning
# ---------------------------------------------------------------------------

TRAIN_X = np.array([0.5, 1.0, 2.0, 3.0])
TRAIN_Y = np.array([1.2, 1.9, 4.3, 5.8])
TRAIN_W0 = 0.25
TRAIN_STEPS = 4
TRAIN_RATE = 0.05


def _train_reference(sign=-1.0, update=True, reduce="mean", scale=2.0):
    """Gradients of each step and the final w, in float64."""
    w = TRAIN_W0
    gradients = []
    for _ in range(TRAIN_STEPS):
        residual = w * TRAIN_X - TRAIN_Y
        total = scale * np.sum(TRAIN_X * residual)
        gradient = total / len(TRAIN_X) if reduce == "mean" else total
        gradients.append(gradient)
        if update:
            w = w + sign * TRAIN_RATE * gradient
    return np.array(gradients), w


@exercise("2.3", "fix the None gradient: a training loop that stops learning")
def train(answer):
    import tensorflow as tf

    w = tf.Variable(TRAIN_W0, dtype=tf.float32, name="w")
    x = tf.constant(TRAIN_X, dtype=tf.float32)
    y = tf.constant(TRAIN_Y, dtype=tf.float32)
    value, log, raised = _call_recorded(answer, w, x, y, TRAIN_STEPS, TRAIN_RATE)
    w_after = float(w.numpy())
    trace_specs = [tf.Variable(TRAIN_W0, dtype=tf.float32),
                   tf.TensorSpec([len(TRAIN_X)], tf.float32),
                   tf.TensorSpec([len(TRAIN_X)], tf.float32), TRAIN_STEPS, TRAIN_RATE]
    explained = _why_none(log, answer, trace_specs, probe="w", original_variable=w)
    if explained is not None:
        code, hint = explained
        step = next(i for i, call in enumerate(log.calls) if call is log.first_none()[0])
        raise Wrong(f"Step {step + 1}: {hint}", code)
    if raised is not None:
        raise Wrong(raised.hint, "raised")
    if value is None:
        as_values(value)
    if not isinstance(value, (list, tuple)):
        raise Wrong(f"You returned a value of type {type(value).__name__}; return a Python list with "
                    f"one gradient per step ({TRAIN_STEPS} steps here).", "wrong_structure")
    if len(value) != TRAIN_STEPS:
        raise Wrong(f"You returned {len(value)} gradients for {TRAIN_STEPS} steps; "
                    f"append one gradient per step.", "wrong_length")
    got = np.array([as_values(g, name=f"The gradient of step {i + 1}", shape=(),
                              dtype=tf.float32) for i, g in enumerate(value)])
    expected, w_expected = _train_reference()
    if matches(got, expected):
        if matches(np.array(w_after), w_expected):
            return ("The loss stays in TensorFlow and w stays a Variable, updated in "
                    "place: every step has a gradient.")
        if np.isclose(w_after, TRAIN_W0):
            raise Wrong(_named("variable_replaced",
                               "Your gradients are right, but the tf.Variable w you were "
                               "given still holds its starting value: `w = w - ...` works "
                               "on a new tensor. Update the Variable itself with "
                               "w.assign_sub(...)."), "variable_replaced")
        raise Wrong(f"Your gradients are right, but w ends at {w_after:.6g} instead of "
                    f"{w_expected:.6g}: update it once per step with "
                    f"w.assign_sub(learning_rate * gradient).", "wrong_update")
    if np.all(got == 0.0) and log.used_zero_option:
        raise Wrong(_hint("zeros_hide_none"), "zeros_hide_none")
    diagnose_mistake(got, [
        ("no_update",
         "Every step returns the same gradient: w never changes. Update it after each "
         "step with w.assign_sub(learning_rate * gradient).",
         _train_reference(update=False)[0]),
        ("ascent_not_descent",
         "The gradients grow: you move w up the gradient. Gradient descent subtracts, "
         "w.assign_sub(learning_rate * gradient).", _train_reference(sign=+1.0)[0]),
        ("sum_not_mean",
         "Your gradients are 4 times too large (there are 4 points): the loss is the "
         "mean of the squared errors, tf.reduce_mean, not their sum.",
         _train_reference(reduce="sum")[0]),
        ("sum_not_mean",
         "Your gradients are 4 times too large (there are 4 points): the loss is the "
         "mean of the squared errors, tf.reduce_mean, not their sum.",
         len(TRAIN_X) * _train_reference()[0]),
        ("missing_factor_two",
         "Your gradients are half the right size: the loss squares the errors, "
         "(w * x - y)**2, whose derivative brings a factor 2.",
         _train_reference(scale=1.0)[0]),
    ])
    _raise_if_path_cut(answer, trace_specs)
    raise Wrong("Not the gradients of loss = mean((w * x - y)**2) along gradient descent. "
                + describe_difference(got, expected), "other")


# ---------------------------------------------------------------------------
# Exercise 2.4: a running total updated in place
# ---------------------------------------------------------------------------

TOTAL_START = np.array([1.0, -2.0, 0.5])
TOTAL_X = np.array([0.5, 0.25, -1.5])


@exercise("2.4", "fix the None gradient: a running total")
def add_and_differentiate(answer):
    import tensorflow as tf

    total = tf.Variable(TOTAL_START, dtype=tf.float32, name="total")
    x = tf.Variable(TOTAL_X, dtype=tf.float32, name="x")
    value, log, raised = _call_recorded(answer, total, x)
    total_after = total.numpy().astype(np.float64)
    changed = not np.allclose(total_after, TOTAL_START)
    trace_specs = [tf.Variable(TOTAL_START, dtype=tf.float32),
                   tf.Variable(TOTAL_X, dtype=tf.float32)]
    if raised is not None or value is None:
        _raise_if_none_explained(log, answer, trace_specs, probe="x", state_changed=changed)
    if raised is not None:
        raise Wrong(raised.hint, "raised")
    got = as_values(value, shape=TOTAL_X.shape, dtype=tf.float32)
    new_total = TOTAL_START + TOTAL_X
    expected = 2.0 * new_total
    if matches(got, expected):
        if matches(total_after, new_total):
            return ("The loss uses new_total = total + x, an ordinary tensor the tape "
                    "records; the variable is updated after the tape.")
        if not changed:
            raise Wrong("The gradient is right, but total still holds its old value: "
                        "assign the new total to the variable (total.assign(new_total)) "
                        "after the tape.", "total_not_updated")
        if matches(total_after, TOTAL_START + 2.0 * TOTAL_X):
            raise Wrong("The gradient is right, but x was added to total twice: assign "
                        "new_total, do not add x again.", "added_twice")
        raise Wrong(f"The gradient is right, but total ends as {total_after} instead of "
                    f"{new_total}.", "wrong_update")
    if np.all(got == 0.0) and log.used_zero_option:
        raise Wrong(_hint("zeros_hide_none"), "zeros_hide_none")
    diagnose_mistake(got, [
        ("forgot_total",
         "You returned 2x: the gradient of sum(x**2). The loss is sum((total + x)**2), "
         "so the old total belongs in it.", 2.0 * TOTAL_X),
        ("read_after_update",
         "You returned 2 * (total + 2x): the loss read total after x had already been "
         "added to it, then added x again. Compute new_total = total + x once, before "
         "assigning.", 2.0 * (TOTAL_START + 2.0 * TOTAL_X)),
        ("gradient_of_total",
         "You returned ones: the gradient of sum(total + x). Differentiate the loss, "
         "sum(new_total**2).", np.ones_like(TOTAL_X)),
        ("missing_factor_two",
         "You returned total + x: the derivative of new_total**2 is 2 * new_total.",
         new_total),
    ])
    _raise_if_path_cut(answer, trace_specs)
    raise Wrong("Not d/dx sum((total + x)**2). " + describe_difference(got, expected),
                "other")
