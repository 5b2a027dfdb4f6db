"""Unit tests for the checks of lesson 02 (autodiff_course/checks/lesson02.py).

For every exercise the reference answer and a second, differently written correct
answer are accepted, and typical wrong answers get their specific mistake code. The
"None" answers check that each cause is named from what happened. What every check
promises whatever its lesson (stubs, non-callables, raising or malformed answers,
strict mode) is tested once for all in tests/test_checker_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson02 as check

ZERO = tf.UnconnectedGradients.ZERO


def assert_correct(checker, answer):
    result = checker.evaluate(answer)
    assert result.status is Status.CORRECT, result


def assert_mistake(checker, answer, mistake):
    result = checker.evaluate(answer)
    assert result.status is Status.WRONG, result
    assert result.mistake == mistake, result
    assert result.message and "Traceback" not in result.message


# ---------------------------------------------------------------------------
# 2.1 gradients for a dict of variables
# ---------------------------------------------------------------------------

def mse(params, x, y, reduce=tf.reduce_mean):
    return reduce((tf.linalg.matvec(x, params["w"]) + params["b"] - y) ** 2)


def grads_reference(params, x, y):
    with tf.GradientTape() as tape:
        predictions = tf.linalg.matvec(x, params["w"]) + params["b"]
        loss = tf.reduce_mean((predictions - y) ** 2)
    return tape.gradient(loss, params)


def grads_rewritten(params, x, y):  # a second correct answer: list sources, dict rebuilt
    with tf.GradientTape() as tape:
        errors = tf.reduce_sum(x * params["w"], axis=1) + params["b"] - y
        loss = tf.reduce_mean(tf.square(errors))
    dw, db = tape.gradient(loss, [params["w"], params["b"]])
    return {"b": db, "w": dw}


def grads_as_list(params, x, y):
    with tf.GradientTape() as tape:
        loss = mse(params, x, y)
    return tape.gradient(loss, list(params.values()))


def grads_summed(params, x, y):
    with tf.GradientTape() as tape:
        loss = mse(params, x, y, reduce=tf.reduce_sum)
    return tape.gradient(loss, params)


def grads_halved(params, x, y):
    with tf.GradientTape() as tape:
        loss = mse(params, x, y) / 2
    return tape.gradient(loss, params)


def grads_of_predictions(params, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.linalg.matvec(x, params["w"]) + params["b"])
    return tape.gradient(loss, params)


def grads_values(params, x, y):
    return {key: tf.identity(value) for key, value in params.items()}


def grads_abs(params, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.abs(tf.linalg.matvec(x, params["w"]) + params["b"] - y))
    return tape.gradient(loss, params)


def grads_wrong_keys(params, x, y):
    gradients = grads_reference(params, x, y)
    return {"weights": gradients["w"], "bias": gradients["b"]}


def grads_without_bias(params, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.linalg.matvec(x, params["w"]) - y) ** 2)
    return tape.gradient(loss, params)


def grads_predicted_before(params, x, y):
    predictions = tf.linalg.matvec(x, params["w"]) + params["b"]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((predictions - y) ** 2)
    return tape.gradient(loss, params)


def grads_negated(params, x, y):
    return {key: -value for key, value in grads_reference(params, x, y).items()}


def grads_column(params, x, y):
    gradients = grads_reference(params, x, y)
    return {"w": gradients["w"][:, None], "b": gradients["b"]}


@pytest.mark.parametrize("answer", [grads_reference, grads_rewritten])
def test_2_1_correct_answers_are_accepted(answer):
    assert_correct(check.parameter_gradients, answer)


@pytest.mark.parametrize("answer, mistake", [
    (grads_as_list, "wrong_structure"),
    (grads_summed, "sum_not_mean"),
    (grads_halved, "scale_factor"),
    (grads_of_predictions, "differentiated_predictions"),
    (grads_values, "returned_parameters"),
    (grads_abs, "absolute_error"),
    (grads_wrong_keys, "wrong_keys"),
    (grads_without_bias, "source_not_used"),
    (grads_predicted_before, "computed_outside_tape"),
    (grads_negated, "sign_flipped"),
    (grads_column, "broadcast_shape"),
])
def test_2_1_mistakes_are_named(answer, mistake):
    assert_mistake(check.parameter_gradients, answer, mistake)


# ---------------------------------------------------------------------------
# 2.2 a derivative for any kind of x
# ---------------------------------------------------------------------------

def derivative_reference(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def derivative_rewritten(f, x):  # a second correct answer: a fresh variable, auto-watched
    start = tf.cast(x, tf.float32) if x.dtype.is_integer else tf.convert_to_tensor(x)
    point = tf.Variable(start)
    with tf.autodiff.GradientTape() as tape:
        y = tf.reduce_sum(f(point))
    return tape.gradient(y, point)


def derivative_template(f, x):  # the lesson's broken_slope, generalised
    with tf.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)


def derivative_alias_template(f, x):  # the same under the tf.autodiff alias
    with tf.autodiff.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)


def derivative_watch_late(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        y = f(x)
        tape.watch(x)
    return tape.gradient(y, x)


def derivative_cast_inside(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(tf.cast(x, tf.float32) if x.dtype.is_integer else x)
    return tape.gradient(y, x)


def derivative_float32_copy(f, x):
    xf = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(xf)
        y = f(xf)
    return tape.gradient(y, xf)


def derivative_value(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    return f(x) * tf.ones_like(x)


def derivative_of_example(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x**3 - 2 * x
    return tape.gradient(y, x)


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


def derivative_numpy(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(tf.constant(x.numpy()))
    return tape.gradient(y, x)


def derivative_rounded(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(tf.round(x * 100) / 100)
    return tape.gradient(y, x)


def derivative_zeros(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x, unconnected_gradients=ZERO)


def derivative_new_variable_if_needed(f, x):
    if not isinstance(x, tf.Variable):
        x = tf.Variable(tf.cast(x, tf.float32) if x.dtype.is_integer else x)
    with tf.GradientTape() as tape:
        y = f(x)
    return tape.gradient(y, x)


def derivative_forward_difference(f, x):
    x = tf.cast(x, tf.float32) if x.dtype.is_integer else tf.convert_to_tensor(x)
    return (f(x + 1e-4) - f(x)) / 1e-4


def derivative_before_tape(f, x):
    if x.dtype.is_integer:
        x = tf.cast(x, tf.float32)
    y = f(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
    return tape.gradient(y, x)


@pytest.mark.parametrize("answer", [derivative_reference, derivative_rewritten])
def test_2_2_correct_answers_are_accepted(answer):
    assert_correct(check.derivative, answer)


@pytest.mark.parametrize("answer, mistake", [
    (derivative_template, "unwatched_constant"),
    (derivative_alias_template, "unwatched_constant"),
    (derivative_watch_late, "watched_after_use"),
    (derivative_cast_inside, "integer_dtype"),
    (derivative_float32_copy, "float32_not_float64"),
    (derivative_value, "value_not_derivative"),
    (derivative_of_example, "ignored_function"),
    (derivative_second, "differentiated_twice"),
    (derivative_numpy, "numpy_detour"),
    (derivative_rounded, "non_differentiable_op"),
    (derivative_zeros, "zeros_hide_none"),
    (derivative_new_variable_if_needed, "unwatched_variable"),
    (derivative_forward_difference, "finite_differences"),
    (derivative_before_tape, "computed_outside_tape"),
])
def test_2_2_mistakes_are_named(answer, mistake):
    assert_mistake(check.derivative, answer, mistake)


def test_2_2_the_zeros_hint_names_the_none_behind_them():
    message = check.derivative.evaluate(derivative_zeros).message
    assert "Cause 1" in message and "tape.watch" in message


def test_2_2_probes_are_fresh_on_every_call():
    def hard_coded(f, x):
        return tf.constant(seen, dtype=tf.float32)

    first = check.derivative.evaluate(derivative_template).message
    second = check.derivative.evaluate(derivative_template).message
    assert first != second  # new x values, so hard-coded numbers cannot pass
    seen = [1.0, 2.0, 3.0]
    assert check.derivative.evaluate(hard_coded).status is Status.WRONG


# ---------------------------------------------------------------------------
# 2.3 a training loop that keeps learning
# ---------------------------------------------------------------------------

def numpy_mean_squared_error(predictions, targets):
    errors = predictions.numpy() - targets.numpy()
    return tf.constant(np.mean(errors**2))


def train_reference(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            predictions = tf.linalg.matvec(x, params["w"]) + params["b"]
            loss = tf.reduce_mean((predictions - y) ** 2)
        gradients = tape.gradient(loss, params)
        for key, variable in params.items():
            variable.assign_sub(learning_rate * gradients[key])
        losses.append(loss)
    return losses


def train_rewritten(params, x, y, steps, learning_rate):  # a second correct answer
    w, b = params["w"], params["b"]
    history = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.linalg.matvec(x, w) + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign(w - learning_rate * dw)
        b.assign(b - learning_rate * db)
        history.append(loss)
    return tf.stack(history)


def train_template(params, x, y, steps, learning_rate):  # both bugs of the lesson
    w, b = params["w"], params["b"]
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = numpy_mean_squared_error(tf.linalg.matvec(x, w) + b, y)
        dw, db = tape.gradient(loss, [w, b])
        losses.append(loss)
        w = w - learning_rate * dw
        b = b - learning_rate * db
    return losses


def train_rebound(params, x, y, steps, learning_rate):  # NumPy fixed, names rebound
    w, b = params["w"], params["b"]
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((tf.linalg.matvec(x, w) + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        losses.append(loss)
        w = w - learning_rate * dw
        b = b - learning_rate * db
    return losses


def train_watched_copies(params, x, y, steps, learning_rate):  # right losses, no update
    w, b = params["w"], params["b"]
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            loss = tf.reduce_mean((tf.linalg.matvec(x, w) + b - y) ** 2)
        dw, db = tape.gradient(loss, [w, b])
        losses.append(loss)
        w, b = w - learning_rate * dw, b - learning_rate * db
    return losses


def train_numpy_target(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = np.mean((mse(params, x, y, reduce=tf.identity)).numpy())
        gradients = tape.gradient(loss, params)
        losses.append(loss)
    return losses


def train_no_update(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        tape.gradient(loss, params)
        losses.append(loss)
    return losses


def train_ascent(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        gradients = tape.gradient(loss, params)
        for key in params:
            params[key].assign(params[key] + learning_rate * gradients[key])
        losses.append(loss)
    return losses


def train_summed(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y, reduce=tf.reduce_sum)
        gradients = tape.gradient(loss, params)
        for key in params:
            params[key].assign_sub(learning_rate * gradients[key])
        losses.append(loss)
    return losses


def train_only_b(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        params["b"].assign_sub(learning_rate * tape.gradient(loss, params["b"]))
        losses.append(loss)
    return losses


def train_zeros(params, x, y, steps, learning_rate):
    losses = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = numpy_mean_squared_error(
                tf.linalg.matvec(x, params["w"]) + params["b"], y)
        gradients = tape.gradient(loss, params, unconnected_gradients=ZERO)
        for key in params:
            params[key].assign_sub(learning_rate * gradients[key])
        losses.append(loss)
    return losses


def train_returns_gradients(params, x, y, steps, learning_rate):
    history = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = mse(params, x, y)
        gradients = tape.gradient(loss, params)
        for key in params:
            params[key].assign_sub(learning_rate * gradients[key])
        history.append(gradients)
    return history


def train_one_short(params, x, y, steps, learning_rate):
    return train_reference(params, x, y, steps - 1, learning_rate)


@pytest.mark.parametrize("answer", [train_reference, train_rewritten])
def test_2_3_correct_answers_are_accepted(answer):
    assert_correct(check.train, answer)


@pytest.mark.parametrize("answer, mistake", [
    (train_template, "numpy_detour"),
    (train_rebound, "variable_replaced"),
    (train_watched_copies, "variable_replaced"),
    (train_numpy_target, "numpy_detour"),
    (train_no_update, "no_update"),
    (train_ascent, "ascent_not_descent"),
    (train_summed, "sum_not_mean"),
    (train_only_b, "missed_parameter"),
    (train_zeros, "zeros_hide_none"),
    (train_returns_gradients, "returned_gradients"),
    (train_one_short, "wrong_structure"),
])
def test_2_3_mistakes_are_named(answer, mistake):
    assert_mistake(check.train, answer, mistake)


def test_2_3_hint_says_which_step():
    assert ", step 2: " in check.train.evaluate(train_rebound).message
    assert ", step 1: " in check.train.evaluate(train_template).message


# ---------------------------------------------------------------------------
# 2.4 a moving average updated in place
# ---------------------------------------------------------------------------

def update_reference(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, x)


def update_rewritten(average, x, decay):  # a second correct answer: assign_add afterwards
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        step = (1 - decay) * (x - average)
        loss = tf.reduce_sum(tf.square(average + step))
    gradient = tape.gradient(loss, x)
    average.assign_add(step)
    return gradient


def update_template(average, x, decay):  # the lesson's broken version
    with tf.GradientTape() as tape:
        tape.watch(x)
        average.assign(decay * average + (1 - decay) * x)
        loss = tf.reduce_sum(average**2)
    return tape.gradient(loss, x)


def update_unwatched(average, x, decay):
    with tf.GradientTape() as tape:
        new_average = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, x)


def update_both_sources(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, [x, average])[1]


def update_wrt_new(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, new_average)


def update_swapped(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = decay * x + (1 - decay) * average
        loss = tf.reduce_sum(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, x)


def update_copy_only(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        average = decay * average + (1 - decay) * x
        loss = tf.reduce_sum(average**2)
    return tape.gradient(loss, x)


def update_twice(average, x, decay):
    gradient = update_reference(average, x, decay)
    average.assign(decay * average + (1 - decay) * x)
    return gradient


def update_mean(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = decay * average + (1 - decay) * x
        loss = tf.reduce_mean(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, x)


def update_zeros(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        average.assign(decay * average + (1 - decay) * x)
        loss = tf.reduce_sum(average**2)
    return tape.gradient(loss, x, unconnected_gradients=ZERO)


def update_numpy(average, x, decay):
    with tf.GradientTape() as tape:
        tape.watch(x)
        new_average = tf.constant(decay * average.numpy() + (1 - decay) * x.numpy())
        loss = tf.reduce_sum(new_average**2)
    average.assign(new_average)
    return tape.gradient(loss, x)


def update_negated(average, x, decay):
    return -update_reference(average, x, decay)


@pytest.mark.parametrize("answer", [update_reference, update_rewritten])
def test_2_4_correct_answers_are_accepted(answer):
    assert_correct(check.update_and_differentiate, answer)


@pytest.mark.parametrize("answer, mistake", [
    (update_template, "stateful_assign"),
    (update_unwatched, "unwatched_constant"),
    (update_both_sources, "differentiated_average"),
    (update_wrt_new, "gradient_of_intermediate"),
    (update_swapped, "swapped_decay"),
    (update_copy_only, "state_not_updated"),
    (update_twice, "wrong_update"),
    (update_mean, "mean_not_sum"),
    (update_zeros, "zeros_hide_none"),
    (update_numpy, "numpy_detour"),
    (update_negated, "sign_flipped"),
])
def test_2_4_mistakes_are_named(answer, mistake):
    assert_mistake(check.update_and_differentiate, answer, mistake)


# ---------------------------------------------------------------------------
# Hints name the cause as the lesson does, and the instruments are removed
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("checker, answer", [
    (check.derivative, derivative_template), (check.derivative, derivative_watch_late),
    (check.derivative, derivative_cast_inside), (check.derivative, derivative_numpy),
    (check.derivative, derivative_rounded), (check.train, train_template),
    (check.train, train_rebound), (check.update_and_differentiate, update_template)])
def test_none_hints_name_the_cause_as_the_lesson_does(checker, answer):
    result = checker.evaluate(answer)
    assert check.CATALOGUE[result.mistake] in result.message, result.message


def test_instruments_are_removed_afterwards():
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import backprop
    from tensorflow.python.framework import ops

    before = (pywrap_tfe.TFE_Py_FastPathExecute, ops._EagerTensorBase.numpy,
              backprop.GradientTape.gradient, backprop.GradientTape.watch)
    check.derivative.evaluate(derivative_template)
    check.update_and_differentiate.evaluate(lambda *args: 1 / 0)
    after = (pywrap_tfe.TFE_Py_FastPathExecute, ops._EagerTensorBase.numpy,
             backprop.GradientTape.gradient, backprop.GradientTape.watch)
    assert before == after
