"""Checks for lesson 02, *Recording with tf.GradientTape*.

References are closed forms evaluated in float64 NumPy, independent of the
TensorFlow code the exercises ask for. Every call of a check draws fresh probes
(:func:`~autodiff_course.checking.fresh_rng`), so numbers copied from an earlier
run, or typed in, fail.

**Explaining a None from what happened.** Exercises 2.2 to 2.4 fix the lesson's
catalogue of ``None`` gradients, and their checks name the cause still present,
using :mod:`autodiff_course.checking.provenance`. The answer runs on a persistent
tape of the check's own that watches every input from the start, while the
framework notes the learner's tapes (under any alias, ``tf.autodiff.GradientTape``
included) and, in the same run, on TensorFlow's single id counter:

* every eager operation that ran (name, input and output tensors), so it knows
  when the source was first used, which ``assign`` wrote which value into which
  variable and which variable reads followed, and which operation without a
  gradient (``tf.round``, ``tf.argmax``, a cast to an integer...) saw it;
* every conversion of a tensor to NumPy or to a Python number;
* when each learner tape was entered, left and told to watch what, and the
  target of each ``tape.gradient`` call.

The check's own tape then settles the question *is there a path at all?* If it
can differentiate the learner's target with respect to the source, the path
exists and the learner's tape did not record it (the source was never watched,
watched after its first use, or the target was computed outside the ``with``
block). If it cannot, the path is cut, and the cut is the assign, the operation
without a gradient or the NumPy conversion that actually took a value connected
to the source. :func:`~autodiff_course.checking.why_none` settles the causes it
sees itself (a NumPy target, an integer source, an unwatched constant or
variable). The verdict *correct* never depends on this diagnosis: it compares
values and the variables' final state.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..checking import (
    FLOAT32, FLOAT64, Run, Wrong, as_values, describe_difference,
    diagnose_mistake, exercise, explain_difference, first_missing, fresh_rng,
    generic_mistake, matches, mistakes, raise_if_missing, raise_if_partly_cut,
    raise_if_zeros_hide, run_answer, signed,
)
from ..checking.provenance import hint as cause_hint

mistakes.register({
    "no_tape": "no tf.GradientTape where the exercise asks for one",
    "ignored_function": "the lesson's example formula instead of the function passed in",
    "wrong_keys": "a dict whose keys are not those of params",
    "differentiated_predictions": "the gradient of the predictions instead of the loss",
    "returned_parameters": "the parameters' values instead of their gradients",
    "absolute_error": "the gradient of the mean absolute error instead of the squared one",
    "ascent_not_descent": "the parameters moved up the gradient instead of down",
    "no_update": "the parameters were never updated",
    "missed_parameter": "only some of the parameters were updated",
    "loss_after_update": "each step's loss was computed after that step's update",
    "returned_gradients": "gradients returned where losses were asked for",
    "state_not_updated": "the variable still holds its old value",
    "wrong_update": "the variable was updated to a wrong value",
    "differentiated_average": "the gradient with respect to the average, not x",
    "gradient_of_intermediate": "the gradient with respect to the new average, not x",
    "swapped_decay": "decay and 1 - decay swapped in the moving average",
    "lost_fraction": "a float input cast to an integer or rounded before differentiating",
    "wrong_power": "the errors raised to another power than 2",
    "other_loss": "a different loss than the one the exercise names",
    "extra_factor": "the right answer times a factor that varies with the input",
    "other_source": "the gradient taken with respect to something other than the "
                    "exercise's source",
    "moving_average_formula": "the moving average inside the loss computed with a "
                              "wrong formula",
})

# How the lesson (sections 5 and 6) names each cause of a None.
CATALOGUE = {
    "unwatched_constant": "Cause 1, an unwatched constant",
    "integer_dtype": "Cause 2, an integer dtype",
    "watched_after_use": "Cause 3, watching after use",
    "numpy_detour": "Cause 4, a detour through NumPy",
    "variable_replaced": "Cause 5, a variable replaced by a tensor",
    "stateful_assign": "Cause 6, a stateful assign in the chain",
    "non_differentiable_op": "Cause 7, an operation without a gradient",
    "zeros_hide_none": "unconnected_gradients=ZERO hides a None",
    "unwatched_variable": "A variable the tape does not watch (section 1)",
    "computed_outside_tape": "Outside the recording (section 1)",
    "source_not_used": "A source that takes no part",
    "no_gradient": "No recorded path",
}

def _named(code: str, text: str) -> str:
    """Prefix a hint with the lesson's name for its cause."""
    return f"{CATALOGUE[code]}. {text}" if code in CATALOGUE else text


def _hint(code: str, probe: str = "x", **details) -> str:
    return _named(code, cause_hint(code, probe, **details))


def _run(answer, *args, name: str | None = None) -> Run:
    return run_answer(answer, *args, name=name, name_cause=_named)


def _raise_generic_then_weak(run: Run, got, expected, *, label: str, probe: str,
                             prefix: str, batch=None, what: str, at=None,
                             tolerance: dict) -> None:
    """A generic numerical pattern that fits exactly, else weaker evidence of a cut."""
    found = generic_mistake(got, expected, batch=batch, what=what, **tolerance)
    if found is not None:
        code, hint = found
        raise _labelled(label, Wrong(
            f"{hint} {describe_difference(got, expected, at, **tolerance)}", code))
    raise_if_partly_cut(run, probe=probe, prefix=prefix, strong=False)


def _labelled(label: str, wrong: Wrong) -> Wrong:
    """The same verdict, opened with the probe's description."""
    if wrong.hint.startswith(label):
        return wrong
    return Wrong(f"{label}: {wrong.hint[0].lower()}{wrong.hint[1:]}"
                 if not wrong.hint.startswith(("For ", "With ")) else wrong.hint,
                 wrong.mistake)


def _raise_if_float32_inside(run: Run, got, expected, dtype, label: str) -> None:
    """float64 in and out, but float32's precision: say so when a float32 step ran."""
    if getattr(dtype, "name", "") != "float64" or not matches(
            got, expected, rtol=1e-4, atol=FLOAT32.atol):
        return
    if run.provenance.narrowed_to_float32():
        raise Wrong(f"{label}: your result is float64, but only as precise as float32: "
                    "part of the computation ran in float32 (a tf.cast(..., tf.float32), "
                    "or a constant made with dtype=tf.float32, converted back "
                    "afterwards). Keep every step in the input's dtype.",
                    "float32_not_float64")


def _raise_if_other_source(run: Run, sources, label: str, wanted: str) -> None:
    """The answer's tapes were asked about other tensors than the exercise's sources."""
    sources = list(sources)
    asked = [s for call in run.log.calls for s in call.sources]
    if run.log.calls and not any(any(a is s for s in sources) for a in asked):
        import tensorflow as tf

        def described(tensor) -> str:
            if isinstance(tensor, tf.Variable):
                return f"a variable named {tensor.name.split(':')[0]!r}"
            shape = getattr(tensor, "shape", None)
            return (f"a tensor of shape {tuple(shape)}" if shape is not None
                    else f"a {type(tensor).__name__}")

        shown = ", ".join(sorted({described(a) for a in asked})[:3])
        raise Wrong(f"{label}: your tape.gradient calls asked for the gradient with "
                    f"respect to {shown or 'other tensors'}, never with respect to "
                    f"{wanted}.", "other_source")


def _tolerance(dtype) -> dict:
    chosen = FLOAT64 if getattr(dtype, "name", "") == "float64" else FLOAT32
    return dict(rtol=chosen.rtol, atol=chosen.atol)


def _float32_for_float64(name: str, value, dtype, fix: str) -> None:
    """float32 back for float64 in: say where the digits went."""
    import tensorflow as tf

    if isinstance(value, (tf.Tensor, tf.Variable)) and dtype == tf.float64 \
            and value.dtype == tf.float32:
        raise Wrong(f"{name} is float32 for a float64 input: {fix}",
                    "float32_not_float64")


def _show(array) -> str:
    array = np.asarray(array)
    if array.ndim == 0:
        return f"{float(array):g}"
    return "[" + ", ".join(f"{float(v):g}" for v in array.ravel()) + "]"


# ---------------------------------------------------------------------------
# Exercise 2.1: gradients for a dict of variables
# ---------------------------------------------------------------------------

def _linear_data(rng, n: int, k: int):
    """x, y, w, b with residuals x w + b - y of both signs, some below 1 in size and
    some above (so squared, absolute and Huber-like losses all differ)."""
    x = signed(rng, (n, k), 0.2, 2.0)
    w = signed(rng, (k,), 0.2, 1.5)
    b = float(signed(rng, (), 0.2, 1.5))
    residual = signed(rng, (n,), 1.2, 2.5)
    residual[0] = float(signed(rng, (), 0.1, 0.8))
    y = np.round(x @ w + b - residual, 3)
    return x, y, w, b


def _mse_gradients(x, y, w, b, *, reduce="mean", scale=2.0):
    residual = x @ w + b - y
    divide = len(y) if reduce == "mean" else 1.0
    return scale * x.T @ residual / divide, scale * residual.sum() / divide


@exercise("2.1", "gradients for a dict of variables")
def parameter_gradients(answer):
    """d(loss)/d(params) for loss = mean((x w + b - y)**2), returned as a dict.

    Probes (fresh each call): a float32 set and a float64 set, each with its own
    number of rows n (3 to 7) and features k (1 to 4), values of both signs,
    so a factor n (a sum instead of a mean) differs between the two, hard-coded
    numbers or shapes fail, and the float64 one is judged with float64 tolerance
    (float32 shortcuts fail). The gradients must come back as a dict with the
    keys of params, each shaped and typed like its variable.

    Catalogue: a list or tuple instead of the dict; other keys; None for a key
    (named from what happened: the variable unused, the loss computed outside
    the block); a sum instead of the mean; the 1/2 convention; the gradient of the
    predictions, of the mean absolute error, or the parameters' own values; then
    the generic patterns (sign, scale, approximation) and a point that differs.
    """
    import tensorflow as tf

    rng = fresh_rng("2.1")
    sizes = [(int(rng.integers(3, 6)), int(rng.integers(1, 4))),
             (int(rng.integers(6, 8)), int(rng.integers(2, 5)))]
    for (n, k), dtype in zip(sizes, (tf.float32, tf.float64)):
        x, y, w, b = _linear_data(rng, n, k)
        params = {"w": tf.Variable(w, dtype=dtype, name="w"),
                  "b": tf.Variable(b, dtype=dtype, name="b")}
        inputs = (tf.constant(x, dtype), tf.constant(y, dtype))
        run = _run(answer, params, *inputs)
        label = f"For {n} rows of {k} features in {dtype.name}"
        if run.raised is not None:
            raise run.raised
        value = run.value
        if value is None:
            as_values(value)
        if not isinstance(value, Mapping):
            if isinstance(value, (list, tuple)):
                raise Wrong(f"You returned a {type(value).__name__}. Pass the dict "
                            "itself as the sources, tape.gradient(loss, params): the "
                            "tape returns the gradients in the same structure, a dict "
                            "with keys 'w' and 'b'.", "wrong_structure")
            raise Wrong(f"You returned a value of type {type(value).__name__}; a dict "
                        "with keys 'w' and 'b' (the structure of params) was expected. "
                        "tape.gradient(loss, params) returns exactly that.",
                        "wrong_structure")
        if set(value) != {"w", "b"}:
            raise Wrong(f"Your dict has keys {sorted(map(str, value))}; it should have "
                        "the keys of params, ['b', 'w']. Pass params itself as the "
                        "sources.", "wrong_keys")
        for key in ("w", "b"):
            if value[key] is None:
                raise_if_missing(run, probe=f"params['{key}']")
                raise Wrong(f"The gradient for '{key}' is None: the tape saw no path "
                            f"from the loss to params['{key}'].", "no_gradient")
        got_w, got_b = (
            as_values(value[key], name=f"{label}, the gradient for '{key}'",
                    shape=shape, dtype=dtype)
            for key, shape in (("w", (k,)), ("b", ())))
        got = np.append(got_w, got_b)
        expected = np.append(*_mse_gradients(x, y, w, b))
        tolerance = _tolerance(dtype)
        if matches(got, expected, **tolerance):
            continue
        residual = x @ w + b - y
        known = [
            ("sum_not_mean",
             f"Your gradients are {n} times too large, and there are {n} rows: the loss "
             "is the mean of the squared errors (tf.reduce_mean), not their sum.",
             np.append(*_mse_gradients(x, y, w, b, reduce="sum"))),
            ("scale_factor",
             "Your gradients are half the right size: the loss is mean((x w + b - y)**2), "
             "without the factor 1/2 some textbooks put in front.",
             np.append(*_mse_gradients(x, y, w, b, scale=1.0))),
            ("differentiated_predictions",
             "You differentiated the mean prediction, not the loss: square the errors "
             "(prediction - y) before averaging them.", np.append(x.mean(axis=0), 1.0)),
            ("differentiated_predictions",
             "You differentiated the sum of the errors (prediction - y), not the loss: "
             "square them, then take their mean.", np.append(x.sum(axis=0), float(n))),
            ("returned_parameters",
             "You returned the parameters' values, not their gradients.",
             np.append(w, b)),
            ("absolute_error",
             "That is the gradient of the mean absolute error; the loss squares the "
             "errors.", np.append(x.T @ np.sign(residual) / n, np.sign(residual).mean())),
        ]
        known.append((
            "mean_not_sum",
            "Your gradients are those of predictions that average x * w over the "
            f"{k} features (tf.reduce_mean); a linear model sums them: "
            "tf.linalg.matvec(x, w), or tf.reduce_sum(x * w, axis=1).",
            np.append(*_mse_gradients(x / k, y, w, b))))
        for power in (3, 4):
            for sign in (1.0, -1.0):
                scaled = power * (sign * residual) ** (power - 1) * sign / n
                known.append((
                    "wrong_power",
                    f"Your gradients are those of the mean of the errors to the power "
                    f"{power}; the loss squares them: (prediction - y)**2.",
                    np.append(x.T @ scaled, scaled.sum())))
        rmse = np.sqrt(np.mean(residual**2))
        known.append((
            "scale_factor",
            "Your gradients are those of the root of the mean squared error (tf.sqrt "
            "or a norm): the loss here is the mean squared error itself, with no root.",
            expected / (2 * rmse)))
        huber = np.where(np.abs(residual) < 1.0, residual, np.sign(residual)) / n
        known.append((
            "other_loss",
            "Your gradients are those of the Huber loss (squared for small errors, "
            "absolute for large ones); the exercise's loss is the mean squared error.",
            np.append(x.T @ huber, huber.sum())))
        centred = x @ w + b - y.mean()
        known.append((
            "broadcast_shape",
            "Your gradients are those of a loss whose errors were broadcast into a "
            f"({n}, {n}) table: a (n, 1) column met a (n,) vector, so every prediction "
            "was compared with every target. Keep predictions and y both of shape (n,).",
            np.append(2 * x.T @ centred / n, 2 * centred.sum() / n)))
        raise_if_missing(run, probe="params", hidden=True)
        _raise_if_float32_inside(run, got, expected, dtype, label)
        diagnose_mistake(got, known, **tolerance)
        _raise_if_other_source(run, params.values(), label,
                               "the variables in params: tape.gradient(loss, params)")
        raise_if_partly_cut(run, probe="params", prefix=f"{label}: ")
        right_w = matches(got_w, expected[:k], **tolerance)
        right_b = matches(got_b, expected[k], **tolerance)
        if right_w != right_b:
            good, bad = ("w", "b") if right_w else ("b", "w")
            if bad == "b":  # one number: no pattern to name, only the difference
                detail = describe_difference(got_b, expected[k], **tolerance)
            else:
                detail = explain_difference(
                    got_w, expected[:k], what="the gradient for 'w'",
                    summary="", **tolerance).hint.strip()
            raise Wrong(f"{label}: the gradient for '{good}' is right, the one for "
                        f"'{bad}' is not. {detail}", "wrong_gradient")
        _raise_generic_then_weak(run, got, expected, label=label, probe="params",
                                 prefix=f"{label}: ", batch=n, what="your result",
                                 tolerance=tolerance)
        raise _labelled(label, explain_difference(
            got, expected, batch=n, what="your result",
            summary=f"{label}: not the gradients of mean((x w + b - y)**2) "
                    "(the values are w's gradients, then b's).", **tolerance))
    return ("Your gradients match d(loss)/dw and d(loss)/db for fresh data in float32 "
            "and float64, returned as a dict shaped like params.")


# ---------------------------------------------------------------------------
# Exercise 2.2: a derivative for any kind of x
# ---------------------------------------------------------------------------

def _test_function(rng):
    """f(x) = a x**3 + b x**2 + c sin(x) with fresh coefficients, and its references."""
    a, b, c = (float(v) for v in signed(rng, 3, 0.5, 2.0, decimals=2))

    def f(x):
        import tensorflow as tf

        return a * x**3 + b * x**2 + c * tf.sin(x)

    def value(x):
        return a * x**3 + b * x**2 + c * np.sin(x)

    def slope(x):
        return 3 * a * x**2 + 2 * b * x + c * np.cos(x)

    def curvature(x):
        return 6 * a * x + 2 * b - c * np.sin(x)

    f.__name__ = "f"
    return f, value, slope, curvature, (a, b, c)


def _kinds_of_x(rng):
    """(description, x, result dtype) for each kind of x the exercise names."""
    import tensorflow as tf

    vector = signed(rng, int(rng.integers(3, 6)), 0.1, 2.0)
    vector[rng.integers(len(vector))] = 0.0
    integers = rng.integers(-3, 4, size=int(rng.integers(3, 6)))
    integers[0] = -abs(integers[0]) - 1
    scalar = float(signed(rng, (), 0.2, 2.0))
    float64 = signed(rng, int(rng.integers(2, 5)), 0.1, 2.5, decimals=None)
    frozen = signed(rng, int(rng.integers(2, 4)), 0.1, 2.0)
    return [
        (f"a float32 tensor x = {_show(vector)}", tf.constant(vector, tf.float32),
         tf.float32),
        (f"an int32 tensor x = {_show(integers)}", tf.constant(integers, tf.int32),
         tf.float32),
        ("a float64 tensor x", tf.constant(float64, tf.float64), tf.float64),
        (f"a trainable tf.Variable x = {scalar:g}", tf.Variable(scalar, dtype=tf.float32),
         tf.float32),
        (f"a tf.Variable with trainable=False, x = {_show(frozen)}",
         tf.Variable(frozen, dtype=tf.float32, trainable=False), tf.float32),
    ]


@exercise("2.2", "a derivative for any kind of x")
def derivative(answer):
    """derivative(f, x): df/dx element-wise, with a tape, for every kind of x.

    Probes (fresh each call): a new f(x) = a x**3 + b x**2 + c sin(x) with
    coefficients of both signs (so the lesson's x**3 - 2x, a value, a second
    derivative or hard-coded numbers fail), and five kinds of x: a float32
    vector (one element 0), an int32 vector with negative entries (float32
    result), a float64 vector (float64 result, float64 tolerance), a trainable
    float32 Variable, and a non-trainable float32 Variable. A tf.GradientTape
    must produce the result (finite differences are *not yet*).

    Catalogue: every None named from what happened (unwatched constant,
    non-trainable variable, integer source, watched after use, computed outside
    the block, NumPy detour, operation without a gradient, zeros from
    unconnected_gradients=ZERO hiding one of these); float32 for a float64 x;
    f(x) itself; the lesson's example formula; the second derivative; a
    partly cut path; finite differences; then the generic patterns.
    """
    rng = fresh_rng("2.2")
    f, value_of, slope_of, curvature_of, _ = _test_function(rng)
    for description, x, dtype in _kinds_of_x(rng):
        label = f"`{getattr(answer, '__name__', 'your function')}` called with {description}"
        run = _run(answer, f, x, name=label)
        where = f"For {description}: "
        raise_if_missing(run, prefix=where)
        if run.raised is not None:
            extra = (" Convert an integer x to float32 with tf.cast before f sees it."
                     if x.dtype.is_integer else "")
            ending = "" if run.raised.hint.endswith((".", "!", "?")) else "."
            raise Wrong(run.raised.hint + ending + extra, "raised")
        result = run.value
        raise_if_zeros_hide(run, result, prefix=where)
        _float32_for_float64(f"{where}your result", result, dtype,
                             "convert only integer inputs (`if x.dtype.is_integer:`), "
                             "so that a float x keeps its dtype.")
        got = as_values(result, name=label, shape=tuple(x.shape), dtype=dtype)
        points = np.asarray(x.numpy(), dtype=np.float64)
        expected = slope_of(points)
        tolerance = _tolerance(dtype)
        if not run.log.calls:
            if matches(got, expected, **tolerance):
                raise Wrong(f"{where}the numbers are right, but no tf.GradientTape "
                            "produced them. This exercise is about the tape: record "
                            "f(x) on a tf.GradientTape and ask it for tape.gradient.",
                            "no_tape")
            if matches(got, expected, rtol=1e-2, atol=1e-6):
                raise Wrong(f"{where}your numbers come close, but no tf.GradientTape "
                            "computed them: that is an approximation such as a finite "
                            "difference. Record f(x) on a tape and ask it for "
                            "tape.gradient.", "finite_differences")
        elif matches(got, expected, **tolerance):
            continue
        known = [
            ("value_not_derivative",
             f"{where}you returned f(x) itself, not its derivative: return "
             "tape.gradient(y, x).", value_of(points)),
            ("ignored_function",
             f"{where}you returned 3x**2 - 2, the slope of the lesson's x**3 - 2x. "
             "The check passes a different f each time: call f(x) on the tape.",
             3 * points**2 - 2),
            ("differentiated_twice",
             f"{where}you returned the second derivative f''(x): differentiate once.",
             curvature_of(points)),
            ("extra_factor",
             f"{where}you returned the derivative times x: tape.gradient(y, x) is "
             "already df/dx, with nothing to multiply.", slope_of(points) * points),
            ("lost_fraction",
             f"{where}you returned the derivative at x without its fractional part: a "
             "cast of a float x to an integer dtype dropped it. Cast only integer "
             "inputs, and to a float dtype.", slope_of(np.trunc(points))),
            ("lost_fraction",
             f"{where}you returned the derivative at x rounded to whole numbers: "
             "rounding (or a cast to an integer) changed the point. Leave float "
             "inputs as they are.", slope_of(np.round(points))),
        ]
        _raise_if_float32_inside(run, got, expected, dtype, where[:-2])
        raise_if_missing(run, prefix=where, hidden=True)
        diagnose_mistake(got, known, **tolerance)
        raise_if_partly_cut(run, prefix=where)
        _raise_generic_then_weak(run, got, expected, label=where[:-2], probe="x",
                                 prefix=where, batch=points.size, at=points,
                                 what="your derivative", tolerance=tolerance)
        raise _labelled(where[:-2], explain_difference(
            got, expected, at=points, batch=points.size, what="your derivative",
            summary=f"{where}not the derivative of the f the check passed in.",
            **tolerance))
    return ("For a fresh f and every kind of x (float32 and float64 tensors, an int32 "
            "tensor, trainable and non-trainable variables) your tape returns df/dx in "
            "the right dtype.")


# ---------------------------------------------------------------------------
# Exercise 2.3: a training loop that keeps learning
# ---------------------------------------------------------------------------

def _train_reference(x, y, w, b, steps, rate, *, sign=-1.0, reduce="mean",
                     update=("w", "b"), after=False, absolute=False, scale=1.0):
    """Each step's loss and the final (w, b), in float64."""
    w, b = np.array(w, dtype=np.float64), float(b)
    losses = []
    for _ in range(steps):
        residual = x @ w + b - y
        loss = np.mean(residual**2) if reduce == "mean" else np.sum(residual**2)
        dw, db = _mse_gradients(x, y, w, b, reduce=reduce)
        if absolute:
            loss = np.mean(np.abs(residual))
            dw, db = x.T @ np.sign(residual) / len(y), np.sign(residual).mean()
        loss, dw, db = scale * loss, scale * dw, scale * db
        if "w" in update:
            w = w + sign * rate * dw
        if "b" in update:
            b = b + sign * rate * db
        if after:
            residual = x @ w + b - y
            loss = scale * (np.mean(residual**2) if reduce == "mean"
                            else np.sum(residual**2))
        losses.append(loss)
    return np.array(losses), w, b


def _losses(value, steps: int, dtype, label: str) -> np.ndarray:
    import tensorflow as tf

    if value is None:
        as_values(value, name="Your function")
    if isinstance(value, (tf.Tensor, tf.Variable)) and value.shape.rank == 1:
        items = [value[i] for i in range(value.shape[0])]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        kind = (f"one tensor of shape {tuple(value.shape)}"
                if isinstance(value, (tf.Tensor, tf.Variable))
                else f"a value of type {type(value).__name__}")
        raise Wrong(f"You returned {kind}; return a Python list with the loss of each "
                    f"step ({steps} steps here).", "wrong_structure")
    if items and all(isinstance(item, (Mapping, list, tuple)) for item in items):
        raise Wrong("Your list holds gradients (dicts or lists), but the exercise asks "
                    "for each step's loss: append the loss tensor.", "returned_gradients")
    if len(items) != steps:
        raise Wrong(f"You returned {len(items)} losses for {steps} steps; append one "
                    "loss per step.", "wrong_structure")
    return np.array([as_values(item, name=f"{label}, the loss of step {i + 1}",
                               shape=(), dtype=dtype) for i, item in enumerate(items)])


@exercise("2.3", "a training loop that keeps learning")
def train(answer):
    """train(params, x, y, steps, learning_rate): each step's loss, params updated in place.

    Probes (fresh each call): two runs, float32 and float64 (float64 judged with
    float64 tolerance), each with its own rows n (4 to 7), features k (1 to 3),
    starting parameters of both signs, 3 to 5 steps and a learning rate in
    [0.02, 0.06]. The losses (before each step's update) and the variables'
    final values must both match a float64 NumPy run of gradient descent.

    Catalogue: a None at some step named from what happened (the NumPy detour
    of the lesson's loss helper, the variable replaced by `w = w - ...` or by a
    new tf.Variable, zeros from unconnected_gradients=ZERO hiding either, a
    NumPy loss); the list's structure and length; gradients instead of losses;
    no update; ascent instead of descent; a sum instead of the mean; only one
    parameter updated; the loss computed after the update; the variables not
    updated although the losses are right; then the generic patterns.
    """
    import tensorflow as tf

    rng = fresh_rng("2.3")
    for dtype in (tf.float32, tf.float64):
        n, k = int(rng.integers(4, 8)), int(rng.integers(1, 4))
        steps, rate = int(rng.integers(3, 6)), float(np.round(rng.uniform(0.02, 0.06), 3))
        x, y, w0, b0 = _linear_data(rng, n, k)
        params = {"w": tf.Variable(w0, dtype=dtype, name="w"),
                  "b": tf.Variable(b0, dtype=dtype, name="b")}
        originals = (params["w"], params["b"])
        run = _run(answer, params, tf.constant(x, dtype), tf.constant(y, dtype),
                   steps, rate)
        label = f"With {n} rows, {k} features, {steps} steps in {dtype.name}"
        def step_offirst_missing(hidden=False):
            found = first_missing(run.log, hidden=hidden)
            step = 1 + next((i for i, call in enumerate(run.log.calls)
                             if found and call is found[0]), 0)
            return f"{label}, step {step}: "

        raise_if_missing(run, probe="params", originals=originals,
                          prefix=step_offirst_missing())
        if run.raised is not None:
            raise run.raised
        got = _losses(run.value, steps, dtype, label)
        tolerance = _tolerance(dtype)
        expected, w_end, b_end = _train_reference(x, y, w0, b0, steps, rate)
        state = np.append(params["w"].numpy(), params["b"].numpy()).astype(np.float64)
        unchanged = np.array_equal(state, np.append(w0, b0).astype(state.dtype)) or \
            matches(state, np.append(w0, b0), **tolerance)
        if matches(got, expected, **tolerance):
            if matches(state, np.append(w_end, b_end), **tolerance):
                continue
            if unchanged:
                raise Wrong(_named("variable_replaced", (
                    f"{label}: your losses are right, but the variables in params still "
                    "hold their starting values, so your loop updated copies "
                    "(`w = w - ...`, or a new tf.Variable). Update the variables "
                    "themselves with params['w'].assign_sub(...).")), "variable_replaced")
            raise Wrong(f"{label}: your losses are right, but the variables end at "
                        f"{_show(state)} instead of {_show(np.append(w_end, b_end))}: "
                        "update each one once per step with assign_sub(learning_rate * "
                        "gradient).", "wrong_update")
        known = [
            ("no_update",
             f"{label}: every step returns the same loss, because the variables never "
             "change. Update them after each step with assign_sub(learning_rate * "
             "gradient).", np.full(steps, expected[0])),
            ("ascent_not_descent",
             f"{label}: your losses grow: the update moves up the gradient. Gradient "
             "descent subtracts: assign_sub(learning_rate * gradient).",
             _train_reference(x, y, w0, b0, steps, rate, sign=+1.0)[0]),
            ("sum_not_mean",
             f"{label}: your losses are those of the summed squared errors: the loss is "
             "their mean (tf.reduce_mean).",
             _train_reference(x, y, w0, b0, steps, rate, reduce="sum")[0]),
            ("missed_parameter",
             f"{label}: your losses are those of a loop that updates w only: update b "
             "too (every entry of params).",
             _train_reference(x, y, w0, b0, steps, rate, update=("w",))[0]),
            ("missed_parameter",
             f"{label}: your losses are those of a loop that updates b only: update w "
             "too (every entry of params).",
             _train_reference(x, y, w0, b0, steps, rate, update=("b",))[0]),
            ("scale_factor",
             f"{label}: your losses are those of half the mean squared error: the loss "
             "is mean((x w + b - y)**2), without a factor 1/2 in front.",
             _train_reference(x, y, w0, b0, steps, rate, scale=0.5)[0]),
            ("absolute_error",
             f"{label}: your losses are those of the mean absolute error; the loss is "
             "the mean of the squared errors.",
             _train_reference(x, y, w0, b0, steps, rate, absolute=True)[0]),
            ("loss_after_update",
             f"{label}: each of your losses is the loss after that step's update; "
             "return the loss the step computed its gradient from (before updating).",
             _train_reference(x, y, w0, b0, steps, rate, after=True)[0]),
        ]
        raise_if_missing(run, probe="params", originals=originals, hidden=True,
                          prefix=step_offirst_missing(hidden=True))
        if unchanged and run.log.calls and not matches(got, np.full(steps, expected[0]),
                                                       **tolerance):
            sources = [s for call in run.log.calls for s in call.sources]
            if not all(any(s is v for v in originals) for s in sources):
                raise Wrong(_hint("variable_replaced", "params"), "variable_replaced")
        _raise_if_float32_inside(run, got, expected, dtype, label)
        diagnose_mistake(got, known, **tolerance)
        raise_if_partly_cut(run, probe="params", prefix=f"{label}: ")
        if matches(got[:1], expected[:1], **tolerance):
            raise Wrong(f"{label}: your first loss is right, so the loss is; the losses "
                        f"after it are not ({_show(got[1:])} instead of "
                        f"{_show(expected[1:])}), so the update is wrong. Each step "
                        "must do params[name].assign_sub(learning_rate * gradient), "
                        "once per variable, with that step's gradient.", "wrong_update")
        _raise_generic_then_weak(run, got, expected, label=label, probe="params",
                                 prefix=f"{label}: ", what="your losses",
                                 tolerance=tolerance)
        raise _labelled(label, explain_difference(
            got, expected, what="your losses",
            summary=f"{label}: not the losses of gradient descent on mean((x w + b - y)"
                    "**2).", **tolerance))
    return ("In float32 and float64, on fresh data, your loop's losses and the variables' "
            "final values match gradient descent on the mean squared error: the loss "
            "stays in TensorFlow and params are updated in place.")


# ---------------------------------------------------------------------------
# Exercise 2.4: a moving average updated in place
# ---------------------------------------------------------------------------

@exercise("2.4", "a moving average updated in place")
def update_and_differentiate(answer):
    """update_and_differentiate(average, x, decay): update in place, return d(loss)/dx.

    new = decay * average + (1 - decay) * x, loss = sum(new**2), so
    d(loss)/dx = 2 (1 - decay) new while d(loss)/d(average) = 2 decay new: with
    decay never 0.5 the loss is asymmetric in average and x, so the wrong source,
    swapped weights and d(loss)/d(new) all differ from the answer.

    Probes (fresh each call): two runs, float32 with x a tf.Variable and float64
    with x a plain tensor (which must be watched; float64 tolerance), each with its
    own length (2 to 5), values of both signs and decay in [0.6, 0.95]. The
    gradient and the variable's final value must both be right.

    Catalogue: every None named from what happened (the assign in the chain, the
    unwatched x, zeros from unconnected_gradients=ZERO hiding one of them);
    float32 for float64; the gradient with respect to the average or to the new
    average; decay and 1 - decay swapped; the mean instead of the sum; the
    variable not updated, or updated wrongly; then the generic patterns.
    """
    import tensorflow as tf

    rng = fresh_rng("2.4")
    for dtype, x_is_variable in ((tf.float32, True), (tf.float64, False)):
        m = int(rng.integers(2, 6))
        decay = float(np.round(rng.uniform(0.6, 0.95), 2))
        start = signed(rng, m, 0.2, 2.0)
        step = signed(rng, m, 0.2, 2.0)
        average = tf.Variable(start, dtype=dtype, name="average")
        x = (tf.Variable(step, dtype=dtype, name="x") if x_is_variable
             else tf.constant(step, dtype))
        kind = "a tf.Variable" if x_is_variable else "a plain tensor"
        label = f"With {dtype.name} values of length {m}, x {kind} and decay = {decay:g}"
        run = _run(answer, average, x, decay)
        raise_if_missing(run, probe="x", prefix=f"{label}: ")
        if run.raised is not None:
            hint = run.raised.hint
            if dtype == tf.float64 and "float" in hint and ("double" in hint or
                                                            "float64" in hint):
                hint += (" A float32 constant met float64 values: use decay as the "
                         "Python number it is, or build constants with dtype=x.dtype.")
            raise Wrong(hint, "raised")
        raise_if_zeros_hide(run, run.value, probe="x", prefix=f"{label}: ")
        _float32_for_float64(f"{label}: your gradient", run.value, dtype,
                             "a float32 constant or cast lost half the digits. Use decay "
                             "as the Python number it is.")
        got = as_values(run.value, name=f"{label}: your gradient", shape=(m,), dtype=dtype)
        new = decay * start + (1 - decay) * step
        expected = 2 * (1 - decay) * new
        state = average.numpy().astype(np.float64)
        tolerance = _tolerance(dtype)
        if matches(got, expected, **tolerance):
            if matches(state, new, **tolerance):
                continue
            if matches(state, start, **tolerance):
                raise Wrong(f"{label}: the gradient is right, but average still holds "
                            "its old value: assign the new average to it "
                            "(average.assign(new_average)) after the tape.",
                            "state_not_updated")
            raise Wrong(f"{label}: the gradient is right, but average ends as "
                        f"{_show(state)} instead of {_show(new)}: assign "
                        "decay * average + (1 - decay) * x once.", "wrong_update")
        swapped = (1 - decay) * start + decay * step
        asked_average = any(source is average for call in run.log.calls
                            for source in call.sources)
        if asked_average and (matches(got, 2 * new, **tolerance)
                              or matches(got, 2 * decay * new, **tolerance)):
            raise Wrong(f"{label}: your result uses the gradient with respect to average "
                        "(2 * decay * new_average), alone or added to the one for x. The "
                        "exercise asks for d(loss)/dx only: tape.gradient(loss, x).",
                        "differentiated_average")
        known = [
            ("differentiated_average",
             f"{label}: you returned the gradient with respect to average, 2 * decay * "
             "new_average. The exercise asks for d(loss)/dx.", 2 * decay * new),
            ("gradient_of_intermediate",
             f"{label}: you returned 2 * new_average, the gradient with respect to the "
             "new average. Differentiate with respect to x: the chain rule brings the "
             "factor (1 - decay).", 2 * new),
            ("swapped_decay",
             f"{label}: decay and 1 - decay are swapped: the new average keeps decay of "
             "the old one and adds (1 - decay) of x.", 2 * decay * swapped),
            ("moving_average_formula",
             f"{label}: the new average inside your loss adds x itself, not (1 - decay) "
             "* x: new_average = decay * average + (1 - decay) * x.",
             2 * (decay * start + step)),
            ("moving_average_formula",
             f"{label}: the new average inside your loss is average + (1 - decay) * x, "
             "without the factor decay on the old average.",
             2 * (1 - decay) * (start + (1 - decay) * step)),
            ("scale_factor",
             f"{label}: your gradient is half the right size: the loss is "
             "sum(new_average**2), without a factor 1/2 in front.", (1 - decay) * new),
            ("moving_average_formula",
             f"{label}: the new average inside your loss subtracts (1 - decay) * x; "
             "it adds it: new_average = decay * average + (1 - decay) * x.",
             -2 * (1 - decay) * (decay * start - (1 - decay) * step)),
            ("loss_after_update",
             f"{label}: your loss was computed from average after it had been updated, "
             "so the update was applied twice inside the loss. Compute new_average from "
             "the old value, and assign it after the tape.",
             2 * (1 - decay) * (decay * new + (1 - decay) * step)),
            ("absolute_error",
             f"{label}: that is the gradient of sum(|new_average|); the loss squares "
             "the new average: sum(new_average**2).", (1 - decay) * np.sign(new)),
        ]
        raise_if_missing(run, probe="x", prefix=f"{label}: ", hidden=True)
        _raise_if_float32_inside(run, got, expected, dtype, label)
        diagnose_mistake(got, known, **tolerance)
        raise_if_partly_cut(run, probe="x", prefix=f"{label}: ")
        _raise_generic_then_weak(run, got, expected, label=label, probe="x",
                                 prefix=f"{label}: ", batch=m, what="your gradient",
                                 tolerance=tolerance)
        raise _labelled(label, explain_difference(
            got, expected, batch=m, what="your gradient",
            summary=f"{label}: not d/dx sum((decay * average + (1 - decay) * x)**2).",
            **tolerance))
    return ("For float32 and float64, with x a variable and a plain tensor, your "
            "gradient is 2 (1 - decay) * new_average and average ends holding the new "
            "value: the tape recorded an ordinary tensor, and the assign came after.")
