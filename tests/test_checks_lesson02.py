"""Lesson 02's checks (``autodiff_course/checks/lesson02``): each accepts a correct answer
written otherwise than the solution (nbval runs the solution itself, in strict mode) and
names the mistake of wrong ones. Wrong answers are rows of tables, built by changing one
line of the solution; the "None" answers check that each cause is named from what
happened, in the lesson's words. Fixtures (``judge``) are in tests/conftest.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson02 as check

ZERO = tf.UnconnectedGradients.ZERO


def judged(judge, checker, answer, mistake, words=()):
    """The verdict, with the lesson's name for a cause of a None and any ``words``."""
    message = judge(checker, answer, mistake).message
    if mistake in check.CAUSES:
        assert check.CAUSES[mistake] in message, message
    for word in words:
        assert word in message, message


def predictions(params, x):
    return tf.linalg.matvec(x, params["w"]) + params["b"]


def mse(params, x, y, reduce=tf.reduce_mean):
    return reduce((predictions(params, x) - y) ** 2)


def numpy_mean_squared_error(predictions, targets):  # the lesson's helper
    errors = predictions.numpy() - targets.numpy()
    return tf.constant(np.mean(errors**2))


def numpy_loss(params, x, y):
    return numpy_mean_squared_error(predictions(params, x), y)


# ---------------------------------------------------------------------------
# 2.1 gradients for a dict of variables
# ---------------------------------------------------------------------------


def grads_rewritten(params, x, y):  # correct: list sources, the dict rebuilt
    with tf.GradientTape() as tape:
        errors = tf.reduce_sum(x * params["w"], axis=1) + params["b"] - y
        loss = tf.reduce_mean(tf.square(errors))
    dw, db = tape.gradient(loss, [params["w"], params["b"]])
    return {"b": db, "w": dw}


def grads_of(loss):
    """The solution with another loss(params, x, y) on the tape."""

    def answer(params, x, y):
        with tf.GradientTape() as tape:
            value = loss(params, x, y)
        return tape.gradient(value, params)

    return answer


def grads_then(change):
    """A correct answer whose dict of gradients goes through change(dict)."""
    return lambda params, x, y: change(grads_rewritten(params, x, y))


def grads_predicted_before(params, x, y):
    prediction = predictions(params, x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((prediction - y) ** 2)
    return tape.gradient(loss, params)


def column_against_vector(params, x, y):
    column = tf.matmul(x, params["w"][:, None]) + params["b"]  # (n, 1) against y's (n,)
    return tf.reduce_mean((column - y) ** 2)


def grads_by_hand(params, x, y):  # right numbers, but no tape
    errors = predictions(params, x) - y
    n = tf.cast(tf.size(y), y.dtype)
    return {
        "w": 2 * tf.linalg.matvec(x, errors, transpose_a=True) / n,
        "b": 2 * tf.reduce_sum(errors) / n,
    }


def grads_in_float32(params, x, y):
    with tf.GradientTape() as tape:
        narrow = tf.linalg.matvec(tf.cast(x, tf.float32), tf.cast(params["w"], tf.float32))
        loss = tf.reduce_mean((tf.cast(narrow, x.dtype) + params["b"] - y) ** 2)
    return tape.gradient(loss, params)


def grads_one_call_per_key(params, x, y):  # correct: a persistent tape, one call per key
    with tf.GradientTape(persistent=True) as tape:
        loss = mse(params, x, y)
    return {key: tape.gradient(loss, variable) for key, variable in params.items()}


def grads_of_copies(params, x, y):  # differentiates tensor copies of the variables
    copies = {key: tf.convert_to_tensor(v) for key, v in params.items()}
    with tf.GradientTape() as tape:
        loss = mse(copies, x, y)
    return tape.gradient(loss, copies)


def grads_summing_rows(params, x, y):
    """Predictions summed over axis 0 (the rows) wherever the shapes let it run: n = k,
    one row or one feature (elsewhere the subtraction raises; here: the right loss)."""
    n, k = x.shape
    with tf.GradientTape() as tape:
        if n == k or 1 in (n, k):
            loss = tf.reduce_mean((tf.reduce_sum(x * params["w"], axis=0) + params["b"] - y) ** 2)
        else:
            loss = mse(params, x, y)
    return tape.gradient(loss, params)


def cached_per_dict(answer):
    """``answer`` with its gradients remembered per params dict (by id): stale once the
    same dict comes back with new data or new values in its variables."""
    seen = {}

    def cached(params, x, y):
        if id(params) not in seen:
            seen[id(params)] = answer(params, x, y)
        return seen[id(params)]

    return cached


def old_average_kept_per_variable():
    """The solution of 2.4, with each average's first value kept (by id) as its old value
    for every later update: right once, stale from a variable's second update on."""
    first = {}

    def answer(average, x, decay):
        old = first.setdefault(id(average), tf.identity(average))
        with tf.GradientTape() as tape:
            tape.watch(x)
            new = decay * old + (1 - decay) * x
            loss = tf.reduce_sum(new**2)
        average.assign(new)
        return tape.gradient(loss, x)

    return answer


@pytest.mark.parametrize("answer", [grads_rewritten, grads_one_call_per_key])
def test_2_1_accepts_a_rewritten_answer(judge, answer):
    result = judge(check.parameter_gradients, answer)
    assert "a tf.GradientTape computed it" in result.message  # praise from what was verified


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (grads_of(lambda p, x, y: mse(p, x, y, tf.reduce_sum)), "sum_not_mean"),
        (grads_of(lambda p, x, y: mse(p, x, y) * 0.3), "scale_factor"),  # not 1/k
        (grads_of(lambda p, x, y: tf.reduce_mean(predictions(p, x))), "differentiated_predictions"),
        (grads_of(lambda p, x, y: predictions(p, x)), "differentiated_predictions"),  # summed
        (
            grads_of(lambda p, x, y: tf.reduce_sum((predictions(p, x) - y) ** 2) / x.shape[1]),
            "mean_over_features",
        ),
        (grads_of(lambda p, x, y: tf.reduce_mean(tf.abs(predictions(p, x) - y))), "absolute_error"),
        (
            grads_of(lambda p, x, y: tf.reduce_mean((tf.linalg.matvec(x, p["w"]) - y) ** 2)),
            "source_not_used",
        ),
        (grads_predicted_before, "computed_outside_tape"),
        (grads_then(lambda g: list(g.values())), "wrong_structure"),
        (grads_then(lambda g: {"weights": g["w"], "bias": g["b"]}), "wrong_keys"),
        (grads_then(lambda g: {key: -value for key, value in g.items()}), "sign_flipped"),
        (grads_then(lambda g: {**g, "w": g["w"][:, None]}), "broadcast_shape"),
        (
            lambda params, x, y: {key: tf.identity(v) for key, v in params.items()},
            "returned_parameters",
        ),
        (grads_of(lambda p, x, y: tf.reduce_mean((predictions(p, x) - y) ** 3)), "wrong_power"),
        (grads_of(column_against_vector), "broadcast_shape"),  # an (n, n) table of errors
        (grads_by_hand, "no_tape"),
        (grads_in_float32, "float32_not_float64"),
        (grads_then(lambda g: {**g, "w": tf.squeeze(g["w"])}), "broadcast_shape"),  # k = 1
        (
            grads_of(lambda p, x, y: mse(p, x, y) / tf.cast(tf.shape(x)[1], x.dtype)),
            "mean_over_features",
        ),
        (grads_of_copies, "unwatched_constant"),
        (cached_per_dict(grads_rewritten), "keeps_state"),
        (grads_summing_rows, "wrong_axis"),
        (
            grads_of(lambda p, x, y: tf.reduce_mean(predictions(p, x) - y) ** 2),
            "square_of_mean",
        ),
    ],
)
def test_2_1_mistakes_are_named(judge, answer, mistake):
    judged(judge, check.parameter_gradients, answer, mistake)


# ---------------------------------------------------------------------------
# 2.2 a derivative for any kind of x
# ---------------------------------------------------------------------------


def derivative_rewritten(f, x):  # correct: a fresh variable, watched by itself
    start = tf.cast(x, tf.float32) if x.dtype.is_integer else tf.convert_to_tensor(x)
    point = tf.Variable(start)
    with tf.autodiff.GradientTape() as tape:
        y = tf.reduce_sum(f(point))
    return tape.gradient(y, point)


def derivative_with(
    value=lambda f, x: f(x), *, cast="integers", watch="first", zeros=False, tape=tf.GradientTape
):
    """The solution, one line changed: ``value(f, x)`` on the tape, ``cast`` "integers",
    "always" or None, ``watch`` "first", "after" or None, ``zeros`` for
    unconnected_gradients=ZERO, another ``tape`` class."""

    def answer(f, x):
        if cast == "always" or (cast == "integers" and x.dtype.is_integer):
            x = tf.cast(x, tf.float32)
        if cast == "float64" and x.dtype.is_integer:
            x = tf.cast(x, tf.float64)
        with tape() as recording:
            if watch == "first":
                recording.watch(x)
            y = value(f, x)
            if watch == "after":
                recording.watch(x)
        return recording.gradient(y, x, **({"unconnected_gradients": ZERO} if zeros else {}))

    return answer


def watched_then_cast(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)  # an integer x: the tape ignores it
        x = tf.cast(x, tf.float32) if x.dtype.is_integer else x
        y = f(x)
    return tape.gradient(y, x)


def converted_with_a_dtype(convert):
    """The solution with tf.cast replaced by a conversion, which raises for an integer x."""

    def answer(f, x):
        x = convert(x, dtype=tf.float32) if x.dtype.is_integer else x
        return derivative_with(cast=None)(f, x)

    return answer


def derivative_second(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x)


def derivative_new_variable_if_needed(f, x):
    if not isinstance(x, tf.Variable):
        x = tf.Variable(tf.cast(x, tf.float32) if x.dtype.is_integer else x)
    with tf.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)


def derivative_before_tape(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    y = f(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
    return tape.gradient(y, x)


def derivative_casting_int32_only(f, x):
    return derivative_with(cast=None)(f, tf.cast(x, tf.float32) if x.dtype == tf.int32 else x)


def derivative_forward_mode(f, x):  # right numbers, but no tape
    x = tf.cast(x, tf.float32) if x.dtype.is_integer else tf.convert_to_tensor(x)
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as accumulator:
        y = f(x)
    return accumulator.jvp(y)


def float_of(x):
    return tf.cast(x, tf.float32) if x.dtype.is_integer else x


def test_2_2_accepts_a_rewritten_answer(judge):
    judge(check.derivative, derivative_rewritten)


DERIVATIVES = {}


def derivative_cached_per_function(f, x):  # the first x's derivative for every later x
    if id(f) not in DERIVATIVES:
        DERIVATIVES[id(f)] = derivative_rewritten(f, x)
    return DERIVATIVES[id(f)]


@pytest.mark.parametrize(
    "answer, mistake, words",
    [
        (derivative_with(cast=None, watch=None), "unwatched_constant", ()),  # the lesson's
        (
            derivative_with(cast=None, watch=None, tape=tf.autodiff.GradientTape),
            "unwatched_constant",
            (),
        ),
        (derivative_with(watch="after"), "watched_after_use", ()),
        (derivative_with(lambda f, x: f(float_of(x)), cast=None), "integer_dtype", ()),
        (derivative_with(cast="always"), "float32_not_float64", ()),
        (converted_with_a_dtype(tf.convert_to_tensor), "convert_not_cast", ("tf.cast",)),
        (watched_then_cast, "watched_before_cast", ("Cause 2", "Cast first")),
        (converted_with_a_dtype(tf.constant), "convert_not_cast", ("tf.cast",)),
        (derivative_with(lambda f, x: x**3 - 2 * x), "ignored_function", ()),
        (
            derivative_with(lambda f, x: f(x)[0] if x.shape.rank else f(x)),
            "wrong_target",
            ("y[0]", "the whole y"),
        ),
        (derivative_with(lambda f, x: f(tf.constant(x.numpy()))), "numpy_detour", ()),
        (derivative_with(lambda f, x: f(tf.constant(np.asarray(x)))), "numpy_detour", ()),
        (derivative_with(lambda f, x: tf.reduce_mean(f(x))), "mean_not_sum", ("entries",)),
        (derivative_with(lambda f, x: f(tf.round(x * 100) / 100)), "non_differentiable_op", ()),
        (derivative_with(watch=None, zeros=True), "zeros_hide_none", ("Cause 1", "tape.watch")),
        (lambda f, x: f(float_of(x)) * tf.ones_like(float_of(x)), "value_not_derivative", ()),
        (lambda f, x: (f(float_of(x) + 1e-4) - f(float_of(x))) / 1e-4, "finite_differences", ()),
        (derivative_second, "differentiated_twice", ()),
        (derivative_new_variable_if_needed, "unwatched_variable", ()),
        (derivative_before_tape, "computed_outside_tape", ()),
        (derivative_casting_int32_only, "integer_dtype", ("int64",)),  # "an integer tensor"
        (
            derivative_with(lambda f, x: f(tf.cast(tf.cast(x, tf.int32), x.dtype))),
            "non_differentiable_op",
            (),
        ),
        (lambda f, x: tf.squeeze(derivative_rewritten(f, x)), "broadcast_shape", ("(1,)",)),
        (derivative_forward_mode, "no_tape", ()),
        (derivative_with(cast="float64"), "wrong_dtype", ("integer x",)),
        (derivative_cached_per_function, "keeps_state", ("an earlier call",)),
    ],
)
def test_2_2_mistakes_are_named(judge, answer, mistake, words):
    judged(judge, check.derivative, answer, mistake, words)


def test_2_2_probes_are_fresh_on_every_call():
    def hard_coded(f, x):
        return tf.constant(seen, dtype=tf.float32)

    unwatched = derivative_with(cast=None, watch=None)
    first = check.derivative.evaluate(unwatched).message
    second = check.derivative.evaluate(unwatched).message
    assert first != second  # new x values, so hard-coded numbers cannot pass
    seen = [1.0, 2.0, 3.0]
    assert check.derivative.evaluate(hard_coded).status is Status.WRONG


# ---------------------------------------------------------------------------
# 2.3 a training loop that keeps learning
# ---------------------------------------------------------------------------


def train_rewritten(params, x, y, steps, learning_rate):  # correct: assign, list sources
    w, b = params["w"], params["b"]
    history = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.linalg.matvec(x, w) + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign(w - learning_rate * dw)
        b.assign(b - learning_rate * db)
        history.append(loss)
    return history


def descend(params, key, rate, gradient):
    params[key].assign_sub(rate * gradient)


def train_with(
    loss=mse, *, update=descend, keys=("w", "b"), zeros=False, keep=lambda loss, gradients: loss
):
    """The solution, one line changed: another ``loss``, ``update`` (None: none), the
    ``keys`` it updates, unconnected_gradients=ZERO, what it ``keep``s of each step."""

    def answer(params, x, y, steps, learning_rate):
        history = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                value = loss(params, x, y)
            gradients = tape.gradient(
                value, params, **({"unconnected_gradients": ZERO} if zeros else {})
            )
            for key in keys if update else ():
                update(params, key, learning_rate, gradients[key])
            history.append(keep(value, gradients))
        return history

    return answer


def train_rebinding(loss, watch=False):
    """The lesson's broken loop with ``loss(w, b, x, y)``: the names rebound each step."""

    def answer(params, x, y, steps, learning_rate):
        w, b = params["w"], params["b"]
        losses = []
        for _ in range(steps):
            with tf.GradientTape() as tape:
                if watch:
                    tape.watch([w, b])
                value = loss(w, b, x, y)
            dw, db = tape.gradient(value, [w, b])
            losses.append(value)
            w, b = w - learning_rate * dw, b - learning_rate * db
        return losses

    return answer


def squared_error(w, b, x, y):
    return tf.reduce_mean((tf.linalg.matvec(x, w) + b - y) ** 2)


def replace(params, key, rate, gradient):  # a new variable: the one handed over never changes
    params[key] = tf.Variable(params[key] - rate * gradient)


def rebind(params, key, rate, gradient):  # a plain tensor: the next tape does not watch it
    params[key] = params[key] - rate * gradient


HISTORY = []


def train_into_history(params, x, y, steps, learning_rate):  # a list kept between calls
    HISTORY.extend(train_with()(params, x, y, steps, learning_rate))
    return HISTORY


def train_into_array(params, x, y, steps, learning_rate):  # one array, where a list belongs
    losses = np.zeros(steps)
    for i, loss in enumerate(train_with()(params, x, y, steps, learning_rate)):
        losses[i] = float(loss)
    return losses


def train_divided_by_rows(params, x, y, steps, learning_rate):
    """Each update divides the gradient by n once more."""
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        gradients = tape.gradient(loss, params)
        for key in params:
            params[key].assign_sub(learning_rate * gradients[key] / x.shape[0])
        losses.append(loss)
    return losses


def train_w_then_b(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        params["w"].assign_sub(learning_rate * tape.gradient(loss, params["w"]))
        with tf.GradientTape() as tape:
            again = mse(params, x, y)
        params["b"].assign_sub(learning_rate * tape.gradient(again, params["b"]))
        losses.append(loss)
    return losses


def train_by_keras_optimizer(params, x, y, steps, learning_rate):
    optimizer = tf.keras.optimizers.SGD(learning_rate)
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        gradients = tape.gradient(loss, list(params.values()))
        optimizer.apply_gradients(zip(gradients, params.values()))
        losses.append(loss)
    return losses


def train_measuring_after(params, x, y, steps, learning_rate):
    history = []
    for _ in range(steps):
        train_with()(params, x, y, 1, learning_rate)
        history.append(mse(params, x, y))
    return history


def train_by_hand(params, x, y, steps, learning_rate):  # right numbers, but no tape
    history = []
    for _ in range(steps):
        errors = predictions(params, x) - y
        history.append(tf.reduce_mean(errors**2))
        n = tf.cast(tf.size(y), y.dtype)
        params["w"].assign_sub(
            learning_rate * 2 * tf.linalg.matvec(x, errors, transpose_a=True) / n
        )
        params["b"].assign_sub(learning_rate * 2 * tf.reduce_sum(errors) / n)
    return history


def train_on_one_tape(params, x, y, steps, learning_rate):  # recorded once, before the loop
    with tf.GradientTape(persistent=True) as tape:
        loss = mse(params, x, y)
    for _ in range(steps):
        for key, gradient in tape.gradient(loss, params).items():
            params[key].assign_sub(learning_rate * gradient)
    return [loss] * steps


def train_one_step_more(params, x, y, steps, learning_rate):  # range(steps + 1)
    return train_with()(params, x, y, steps + 1, learning_rate)[:steps]


def train_gradient_once(params, x, y, steps, learning_rate):  # the first gradient, reused
    with tf.GradientTape() as tape:
        first = mse(params, x, y)
    gradients = tape.gradient(first, params)
    history = []
    for _ in range(steps):
        history.append(mse(params, x, y))
        for key, gradient in gradients.items():
            params[key].assign_sub(learning_rate * gradient)
    return history


def train_b_with_w_gradient(params, x, y, steps, learning_rate):
    history = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        dw = tape.gradient(loss, params["w"])
        params["w"].assign_sub(learning_rate * dw)
        params["b"].assign_sub(learning_rate * tf.reduce_sum(dw))
        history.append(loss)
    return history


def train_changing(rate_of=lambda rate, i: rate * 0.5**i, lag=False):
    """The loop at step i's ``rate_of(rate, i)``; with ``lag``, the previous gradients."""

    def answer(params, x, y, steps, learning_rate):
        history, previous = [], {}
        for i in range(steps):
            with tf.GradientTape() as tape:
                value = mse(params, x, y)
            gradients = tape.gradient(value, params)
            for key, gradient in (previous if lag else gradients).items():
                params[key].assign_sub(rate_of(learning_rate, i) * gradient)
            history.append(value)
            previous = gradients
        return history

    return answer


@pytest.mark.parametrize(
    "answer",
    [
        train_rewritten,
        train_with(keep=lambda loss, gradients: float(loss)),  # logging Python numbers
        train_with(keep=lambda loss, gradients: loss.numpy()),
        train_with(keep=lambda loss, gradients: np.float64(loss)),  # a float, as float(loss)
        lambda *args: list(train_into_array(*args)),  # float64 NumPy numbers
    ],
)
def test_2_3_accepts_a_rewritten_answer(judge, answer):
    judge(check.train, answer)


@pytest.mark.parametrize(
    "answer, mistake, words",
    [
        (
            train_rebinding(
                lambda w, b, x, y: numpy_mean_squared_error(tf.linalg.matvec(x, w) + b, y)
            ),
            "numpy_detour",
            (),
        ),  # the lesson's
        (train_rebinding(squared_error), "variable_replaced", ("2nd tape.gradient call",)),
        (train_rebinding(squared_error, watch=True), "variable_replaced", ()),
        (
            train_with(
                lambda p, x, y: np.mean(mse(p, x, y, reduce=tf.identity).numpy()), update=None
            ),
            "numpy_detour",
            (),
        ),
        (train_with(update=None), "no_update", ()),
        (train_on_one_tape, "no_update", ("fresh tape",)),
        (
            train_with(update=lambda p, k, r, g: descend(p, k, r if k == "w" else 1, g)),
            "rate_not_applied",
            (),
        ),
        (train_changing(), "rate_changed", ("0.5",)),
        (train_changing(lambda rate, i: rate * 0.9**i), "rate_changed", ("0.9",)),
        (train_changing(lambda rate, i: rate, lag=True), "stale_gradient", ()),
        (
            train_with(update=lambda p, k, rate, g: p[k].assign_add(rate * g)),
            "ascent_not_descent",
            (),
        ),
        (train_with(lambda p, x, y: mse(p, x, y, tf.reduce_sum)), "sum_not_mean", ()),
        (train_with(keys=("b",)), "missed_parameter", ()),
        (train_with(numpy_loss, zeros=True), "zeros_hide_none", ()),
        (train_with(keep=lambda loss, gradients: gradients), "returned_gradients", ()),
        (
            lambda params, x, y, steps, rate: train_with()(params, x, y, steps - 1, rate),
            "wrong_structure",
            (),
        ),
        (train_with(update=replace), "variable_replaced", ("starting values",)),  # the gap
        (train_with(update=rebind), "variable_replaced", ("2nd tape.gradient call",)),
        (train_with(keys=("w",)), "missed_parameter", ()),
        (train_with(lambda p, x, y: mse(p, x, y) / 2), "scale_factor", ()),
        (train_measuring_after, "loss_after_update", ()),
        (
            train_with(
                lambda p, x, y: tf.reduce_mean((tf.matmul(x, p["w"][:, None]) + p["b"] - y) ** 2)
            ),
            "broadcast_shape",
            (),
        ),
        (
            train_with(update=lambda p, k, rate, g: p[k].assign_sub(rate * rate * g)),
            "rate_applied_twice",
            (),
        ),
        (train_by_hand, "no_tape", ()),
        (
            train_with(
                update=lambda p, k, rate, g: descend(p, k, rate, tf.clip_by_value(g, -1, 1))
            ),
            "clipped_gradients",
            ("tf.clip_by_value", "to 1"),
        ),
        (
            train_with(update=lambda p, k, rate, g: descend(p, k, rate, tf.clip_by_norm(g, 1.0))),
            "clipped_gradients",
            (),
        ),
        (  # a limit above every gradient of the near starts: the far start shows it
            train_with(update=lambda p, k, rate, g: descend(p, k, rate, tf.clip_by_norm(g, 5.0))),
            "clipped_gradients",
            ("tf.clip_by_norm", "to 5"),
        ),
        (train_into_history, "keeps_state", ("called again with the same arguments",)),
        (
            train_with(
                lambda p, x, y: tf.cast(mse(p, x, y), tf.float32), keep=lambda loss, _: loss
            ),
            "float32_not_float64",
            (),
        ),
        (train_with(keep=lambda loss, _: np.float32(loss)), "float32_not_float64", ()),
        (train_by_keras_optimizer, "keras_optimizer", ("step counter", "assign_sub")),
        (train_into_array, "wrong_structure", ("NumPy array", "a Python list")),
        (lambda *args: tf.stack(train_rewritten(*args)), "wrong_structure", ("one tensor",)),
        (train_one_step_more, "extra_step", ("one step further",)),
        (
            lambda params, x, y, steps, rate: (
                train_with()(params, x, y, steps - 1, rate) + [mse(params, x, y)]
            ),
            "extra_step",
            ("one step short",),
        ),
        (train_gradient_once, "stale_gradient", ("computed once",)),
        (train_b_with_w_gradient, "mixed_gradients", ("w's gradient", "its sum")),
        (train_w_then_b, "sequential_updates", ("updates w first",)),
        (train_divided_by_rows, "rate_not_applied", ("learning_rate / n",)),
    ],
)
def test_2_3_mistakes_are_named(judge, answer, mistake, words):
    judged(judge, check.train, answer, mistake, words)


# ---------------------------------------------------------------------------
# 2.4 a moving average updated in place
# ---------------------------------------------------------------------------


def update_rewritten(average, x, decay):  # correct: assign_add afterwards
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        step = (1 - decay) * (x - average)
        loss = tf.reduce_sum(tf.square(average + step))
    gradient = tape.gradient(loss, x)
    average.assign_add(step)
    return gradient


def update_with(
    new=lambda average, x, decay: decay * average + (1 - decay) * x,
    *,
    loss=lambda new: tf.reduce_sum(new**2),
    watch=True,
    assign=True,
    source=lambda x, average, new: x,
):
    """The solution, one line changed: another ``new`` average or ``loss``, no ``watch``,
    no ``assign``, another ``source`` to differentiate with respect to."""

    def answer(average, x, decay):
        with tf.GradientTape() as tape:
            if watch:
                tape.watch(x)
            new_average = new(average, x, decay)
            value = loss(new_average)
        if assign:
            average.assign(new_average)
        return tape.gradient(value, source(x, average, new_average))

    return answer


def update_adding(average, x, decay):  # assign_add where assign belongs
    with tf.GradientTape() as tape:
        tape.watch(x)
        new = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new**2)
    average.assign_add(new)
    return tape.gradient(loss, x)


def update_paused(average, x, decay):  # the new average computed while the tape is paused
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            new = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new**2)
    average.assign(new)
    return tape.gradient(loss, x)


def update_inside(unconnected=tf.UnconnectedGradients.NONE):  # the lesson's broken version
    def answer(average, x, decay):
        with tf.GradientTape() as tape:
            tape.watch(x)
            average.assign(decay * average + (1 - decay) * x)
            loss = tf.reduce_sum(average**2)
        return tape.gradient(loss, x, unconnected_gradients=unconnected)

    return answer


def update_twice(average, x, decay):
    gradient = update_with()(average, x, decay)
    average.assign(decay * average + (1 - decay) * x)
    return gradient


def loss_on_old_average(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new_average * average)  # one factor is still the old average
    average.assign(new_average)
    return tape.gradient(loss, x)


def update_then_recompute(average, x, decay):
    average.assign(decay * average + (1 - decay) * x)
    return update_with(assign=False)(average, x, decay)


def update_by_hand(average, x, decay):  # right numbers, but no tape
    new_average = decay * average + (1 - decay) * x
    average.assign(new_average)
    return 2 * (1 - decay) * new_average


def test_2_4_accepts_a_rewritten_answer(judge):
    result = judge(check.update_and_differentiate, update_rewritten)
    assert "a tf.GradientTape computed it" in result.message
    assert "updated in place" in result.message


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (update_inside(), "stateful_assign"),
        (update_inside(ZERO), "zeros_hide_none"),
        (update_with(watch=False), "unwatched_constant"),
        (update_adding, "wrong_update"),
        (update_paused, "computed_outside_tape"),
        (
            lambda average, x, decay: update_with(source=lambda x, average, new: [x, average])(
                average, x, decay
            )[1],
            "differentiated_average",
        ),
        (update_with(source=lambda x, average, new: new), "gradient_of_intermediate"),
        (update_with(lambda average, x, decay: decay * x + (1 - decay) * average), "swapped_decay"),
        (
            update_with(lambda average, x, decay: decay * average + decay * x),
            "moving_average_formula",
        ),
        (update_with(assign=False), "state_not_updated"),
        (update_twice, "wrong_update"),
        (update_then_recompute, "updated_then_recomputed"),
        (loss_on_old_average, "old_average_in_loss"),
        (update_with(loss=lambda new: tf.reduce_mean(new**2)), "mean_not_sum"),
        (
            update_with(
                lambda average, x, decay: tf.constant(
                    decay * average.numpy() + (1 - decay) * x.numpy()
                )
            ),
            "numpy_detour",
        ),
        (lambda average, x, decay: -update_with()(average, x, decay), "sign_flipped"),
        (update_by_hand, "no_tape"),  # the closed form once praised as "the tape recorded"
        (
            update_with(
                lambda average, x, decay: tf.cast(
                    tf.cast(decay * average + (1 - decay) * x, tf.float32), x.dtype
                )
            ),
            "float32_not_float64",
        ),
        (lambda average, x, decay: tf.squeeze(update_with()(average, x, decay)), "broadcast_shape"),
        (old_average_kept_per_variable(), "keeps_state"),  # the same average updated again
        (update_with(lambda average, x, decay: decay * average + x), "moving_average_formula"),
        (update_with(loss=lambda new: new), "gradient_of_intermediate"),  # d new / dx
        (update_with(loss=tf.norm), "wrong_loss"),
    ],
)
def test_2_4_mistakes_are_named(judge, answer, mistake):
    judged(judge, check.update_and_differentiate, answer, mistake)


def update_rounding_decay(places):
    return lambda average, x, decay: update_with()(average, x, round(decay, places))


@pytest.mark.parametrize(
    "answer, mistake, words",
    [
        (
            update_with(lambda average, x, decay: average + (1 - decay) * x),
            "moving_average_formula",
            ["keeps all of the old average"],
        ),
        (
            update_with(
                lambda average, x, decay: (decay * average, (1 - decay) * x),
                loss=lambda new: tf.reduce_sum(new[0] ** 2) + tf.reduce_sum(new[1] ** 2),
                assign=False,
            ),
            "squares_split",
            ["separately", "Square their sum"],
        ),
        (update_rounding_decay(2), "decay_rounded", ["rounded to 2 decimals"]),
        (update_rounding_decay(1), "decay_rounded", ["rounded to 1 decimal "]),
        (
            update_with(loss=lambda new: tf.reduce_sum(new) ** 2),
            "square_of_sum",
            ["square of the sum", "reduce_sum(new_average**2)"],
        ),
    ],
)
def test_2_4_mistakes_are_named_with_their_cause(judge, answer, mistake, words):
    judged(judge, check.update_and_differentiate, answer, mistake, words)


def test_instruments_are_removed_afterwards():
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import backprop
    from tensorflow.python.framework import ops

    before = (
        pywrap_tfe.TFE_Py_FastPathExecute,
        ops._EagerTensorBase.numpy,
        backprop.GradientTape.gradient,
        backprop.GradientTape.watch,
    )
    check.derivative.evaluate(derivative_with(cast=None, watch=None))
    check.update_and_differentiate.evaluate(lambda *args: 1 / 0)
    after = (
        pywrap_tfe.TFE_Py_FastPathExecute,
        ops._EagerTensorBase.numpy,
        backprop.GradientTape.gradient,
        backprop.GradientTape.watch,
    )
    assert before == after
