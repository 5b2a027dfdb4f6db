"""Unit tests for the checks of lesson 02 (autodiff_course/checks/lesson02.py).

For every exercise: the reference answer is correct; typical wrong answers are
rejected with their specific mistake code; a stub is *not attempted*; bad input
is *wrong* with a hint and never an exception. For the "fix the None gradient"
exercises, every catalogued cause is named.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import ExerciseNotSolved, Status
from autodiff_course.checks import lesson02 as check


def verdict(checker, answer):
    return checker.evaluate(answer)


def assert_wrong(result, mistake=None):
    assert result.status is Status.WRONG, result
    assert result.message, "a wrong answer needs a hint"
    if mistake is not None:
        assert result.mistake == mistake, result


def stub(*args):
    raise NotImplementedError()


def raises(*args):
    raise ValueError("something broke")


# ---------------------------------------------------------------------------
# 2.1 gradients for a dict of variables
# ---------------------------------------------------------------------------

def loss_of(params, x, y, reduce=tf.reduce_mean, power=2):
    return reduce((tf.linalg.matvec(x, params["w"]) + params["b"] - y) ** power)


def grads_reference(params, x, y):
    with tf.GradientTape() as tape:
        loss = loss_of(params, x, y)
    return tape.gradient(loss, params)


def grads_as_list(params, x, y):
    with tf.GradientTape() as tape:
        loss = loss_of(params, x, y)
    return tape.gradient(loss, [params["w"], params["b"]])


def grads_summed(params, x, y):
    with tf.GradientTape() as tape:
        loss = loss_of(params, x, y, reduce=tf.reduce_sum)
    return tape.gradient(loss, params)


def grads_no_square(params, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.linalg.matvec(x, params["w"]) + params["b"])
    return tape.gradient(loss, params)


def grads_without_bias(params, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.linalg.matvec(x, params["w"]) - y) ** 2)
    return tape.gradient(loss, params)


def grads_halved(params, x, y):
    with tf.GradientTape() as tape:
        loss = 0.5 * loss_of(params, x, y)
    return tape.gradient(loss, params)


def grads_values(params, x, y):
    return {key: tf.convert_to_tensor(value) for key, value in params.items()}


def grads_wrong_keys(params, x, y):
    gradients = grads_reference(params, x, y)
    return {"weights": gradients["w"], "bias": gradients["b"]}


def grads_numpy(params, x, y):
    return np.zeros(3)


def grads_wrong_shape(params, x, y):
    gradients = grads_reference(params, x, y)
    return {"w": tf.reshape(gradients["w"], (1, 2)), "b": gradients["b"]}


def test_2_1_reference_is_correct():
    assert verdict(check.parameter_gradients, grads_reference).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (grads_as_list, "wrong_structure"),
    (grads_summed, "sum_not_mean"),
    (grads_no_square, "differentiated_predictions"),
    (grads_without_bias, "none_for_key"),
    (grads_halved, "missing_factor_two"),
    (grads_values, "returned_parameters"),
    (grads_wrong_keys, "wrong_keys"),
])
def test_2_1_typical_mistakes_are_named(answer, mistake):
    assert_wrong(verdict(check.parameter_gradients, answer), mistake)


@pytest.mark.parametrize("answer", [
    lambda params, x, y: None, grads_numpy, grads_wrong_shape, raises, None, 3.0])
def test_2_1_bad_input_is_wrong_with_a_hint(answer):
    assert_wrong(verdict(check.parameter_gradients, answer))


def test_2_1_stub_is_not_attempted():
    assert verdict(check.parameter_gradients, stub).status is Status.NOT_ATTEMPTED


# ---------------------------------------------------------------------------
# 2.2 slope(x): constants and integers
# ---------------------------------------------------------------------------

def slope_reference(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x**3 - 2 * x
    return tape.gradient(y, x)


def slope_template(x):  # the broken function of the lesson: no watch
    with tf.GradientTape() as tape:
        y = x**3 - 2 * x
    return tape.gradient(y, x)


def slope_watch_after_use(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        y = x**3 - 2 * x
        tape.watch(x)
    return tape.gradient(y, x)


def slope_no_cast(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x**3 - 2 * x
    return tape.gradient(y, x)


def slope_cast_inside(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        xf = tf.cast(x, tf.float32)
        y = xf**3 - 2 * xf
    return tape.gradient(y, x)


def slope_numpy(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = x.numpy()
        y = tf.constant(value**3 - 2 * value)
    return tape.gradient(y, x)


def slope_rounded(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.round(x) ** 3 - 2 * x
    return tape.gradient(y, x)


def slope_rounded_everywhere(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.round(x**3 - 2 * x)
    return tape.gradient(y, x)


def slope_argmax(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(tf.argmax(tf.stack([x, x**3 - 2 * x])), tf.float32)
    return tape.gradient(y, x)


def slope_zeros(x):
    with tf.GradientTape() as tape:
        y = x**3 - 2 * x
    return tape.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def slope_unwatched_conversion(x):
    x = tf.cast(x, tf.float32)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = x**3 - 2 * x
    return tape.gradient(y, x)


def slope_value(x):
    x = tf.cast(x, tf.float32)
    return x**3 - 2 * x


def slope_numpy_result(x):
    return np.float32(slope_reference(x).numpy())


def slope_wrong_shape(x):
    return tf.reshape(slope_reference(x), (1,))


def slope_float64(x):
    return tf.cast(slope_reference(x), tf.float64)


def test_2_2_reference_is_correct():
    assert verdict(check.slope, slope_reference).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (slope_template, "unwatched_constant"),
    (slope_watch_after_use, "watched_after_use"),
    (slope_no_cast, "integer_dtype"),
    (slope_cast_inside, "integer_dtype"),
    (slope_numpy, "numpy_detour"),
    (slope_rounded, "non_differentiable_op"),
    (slope_rounded_everywhere, "non_differentiable_op"),
    (slope_argmax, "non_differentiable_op"),
    (slope_zeros, "zeros_hide_none"),
    (slope_unwatched_conversion, "unwatched_variable"),
    (slope_value, "value_not_slope"),
])
def test_2_2_each_cause_is_named(answer, mistake):
    assert_wrong(verdict(check.slope, answer), mistake)


def test_2_2_hints_name_the_probe_and_the_fix():
    message = verdict(check.slope, slope_no_cast).message
    assert "int32" in message and "tf.cast" in message
    message = verdict(check.slope, slope_rounded).message
    assert "tf.round" in message


@pytest.mark.parametrize("answer, mistake", [
    (lambda x: None, None), (slope_numpy_result, "returned_numpy"),
    (slope_wrong_shape, "wrong_shape"), (slope_float64, "wrong_dtype"),
    (raises, "raised"), (None, "not_callable"), ("slope", "not_callable")])
def test_2_2_bad_input_is_wrong_with_a_hint(answer, mistake):
    assert_wrong(verdict(check.slope, answer), mistake)


def test_2_2_stub_is_not_attempted():
    assert verdict(check.slope, stub).status is Status.NOT_ATTEMPTED


def test_2_2_recording_tape_is_removed_afterwards():
    real = tf.GradientTape
    verdict(check.slope, slope_template)
    verdict(check.slope, raises)
    verdict(check.slope, stub)
    assert tf.GradientTape is real


# ---------------------------------------------------------------------------
# 2.3 a training loop that stops learning
# ---------------------------------------------------------------------------

def numpy_mean_squared_error(predictions, targets):
    errors = predictions.numpy() - targets.numpy()
    return tf.constant(np.mean(errors**2))


def train_reference(w, x, y, steps, learning_rate):
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        w.assign_sub(learning_rate * gradient)
    return gradients


def train_template(w, x, y, steps, learning_rate):  # both bugs of the lesson
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = numpy_mean_squared_error(w * x, y)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        w = w - learning_rate * gradient
    return gradients


def train_replaced(w, x, y, steps, learning_rate):  # NumPy fixed, the Variable replaced
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        w = w - learning_rate * gradient
    return gradients


def train_numpy_only(w, x, y, steps, learning_rate):  # update fixed, NumPy kept
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = numpy_mean_squared_error(w * x, y)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        if gradient is not None:
            w.assign_sub(learning_rate * gradient)
    return gradients


def train_numpy_target(w, x, y, steps, learning_rate):  # the loss stays a NumPy number
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = np.mean(((w * x - y) ** 2).numpy())
        gradients.append(tape.gradient(loss, w))
    return gradients


def train_watched_tensor(w, x, y, steps, learning_rate):  # watches the replacing tensor
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            tape.watch(w)
            loss = tf.reduce_mean((w * x - y) ** 2)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        w = w - learning_rate * gradient
    return gradients


def train_no_update(w, x, y, steps, learning_rate):
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        gradients.append(tape.gradient(loss, w))
    return gradients


def train_ascent(w, x, y, steps, learning_rate):
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((w * x - y) ** 2)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        w.assign_add(learning_rate * gradient)
    return gradients


def train_summed(w, x, y, steps, learning_rate):
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((w * x - y) ** 2)
        gradient = tape.gradient(loss, w)
        gradients.append(gradient)
        w.assign_sub(learning_rate * gradient)
    return gradients


def train_zeros(w, x, y, steps, learning_rate):
    gradients = []
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = numpy_mean_squared_error(w * x, y)
        gradient = tape.gradient(loss, w, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        gradients.append(gradient)
        w.assign_sub(learning_rate * gradient)
    return gradients


def train_stacked(w, x, y, steps, learning_rate):
    return tf.stack(train_reference(w, x, y, steps, learning_rate))


def train_numpy_array(w, x, y, steps, learning_rate):
    return np.array([g.numpy() for g in train_reference(w, x, y, steps, learning_rate)])


def train_too_short(w, x, y, steps, learning_rate):
    return train_reference(w, x, y, steps, learning_rate)[:-1]


def train_wrong_shape(w, x, y, steps, learning_rate):
    return [tf.reshape(g, (1,)) for g in train_reference(w, x, y, steps, learning_rate)]


def test_2_3_reference_is_correct():
    assert verdict(check.train, train_reference).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (train_template, "numpy_detour"),
    (train_numpy_only, "numpy_detour"),
    (train_numpy_target, "numpy_detour"),
    (train_replaced, "variable_replaced"),
    (train_watched_tensor, "variable_replaced"),
    (train_no_update, "no_update"),
    (train_ascent, "ascent_not_descent"),
    (train_summed, "sum_not_mean"),
    (train_zeros, "zeros_hide_none"),
])
def test_2_3_each_cause_is_named(answer, mistake):
    assert_wrong(verdict(check.train, answer), mistake)


def test_2_3_hint_says_which_step():
    result = verdict(check.train, train_replaced)
    assert result.message.startswith("Step 2:"), result.message


@pytest.mark.parametrize("answer, mistake", [
    (lambda *args: None, "returned_none"), (train_numpy_array, "wrong_structure"),
    (train_stacked, "wrong_structure"), (train_too_short, "wrong_length"),
    (train_wrong_shape, "wrong_shape"), (raises, "raised"), (None, "not_callable"),
    (42, "not_callable")])
def test_2_3_bad_input_is_wrong_with_a_hint(answer, mistake):
    assert_wrong(verdict(check.train, answer), mistake)


def test_2_3_stub_is_not_attempted():
    assert verdict(check.train, stub).status is Status.NOT_ATTEMPTED


# ---------------------------------------------------------------------------
# 2.4 a running total
# ---------------------------------------------------------------------------

def total_reference(total, x):
    with tf.GradientTape() as tape:
        new_total = total + x
        loss = tf.reduce_sum(new_total**2)
    total.assign(new_total)
    return tape.gradient(loss, x)


def total_template(total, x):  # the broken function of the lesson
    with tf.GradientTape() as tape:
        total.assign_add(x)
        loss = tf.reduce_sum(total**2)
    return tape.gradient(loss, x)


def total_not_updated(total, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum((total + x) ** 2)
    return tape.gradient(loss, x)


def total_added_twice(total, x):
    gradient = total_reference(total, x)
    total.assign_add(x)
    return gradient


def total_read_after_update(total, x):
    total.assign_add(x)
    with tf.GradientTape() as tape:
        new_total = total + x
        loss = tf.reduce_sum(new_total**2)
    return tape.gradient(loss, x)


def total_forgotten(total, x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x**2)
    total.assign_add(x)
    return tape.gradient(loss, x)


def total_gradient_of_total(total, x):
    with tf.GradientTape() as tape:
        new_total = total + x
    total.assign(new_total)
    return tape.gradient(new_total, x)


def total_zeros(total, x):
    with tf.GradientTape() as tape:
        total.assign_add(x)
        loss = tf.reduce_sum(total**2)
    return tape.gradient(loss, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def total_numpy(total, x):
    with tf.GradientTape() as tape:
        new_total = tf.constant(total.numpy() + x.numpy())
        loss = tf.reduce_sum(new_total**2)
    total.assign(new_total)
    return tape.gradient(loss, x)


def total_rounded(total, x):
    with tf.GradientTape() as tape:
        new_total = total + tf.round(x)
        loss = tf.reduce_sum(new_total**2)
    total.assign(new_total)
    return tape.gradient(loss, x)


def total_numpy_result(total, x):
    return total_reference(total, x).numpy()


def total_wrong_shape(total, x):
    return tf.reduce_sum(total_reference(total, x))


def test_2_4_reference_is_correct():
    assert verdict(check.add_and_differentiate, total_reference).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (total_template, "stateful_assign"),
    (total_not_updated, "total_not_updated"),
    (total_added_twice, "added_twice"),
    (total_read_after_update, "read_after_update"),
    (total_forgotten, "forgot_total"),
    (total_gradient_of_total, "gradient_of_total"),
    (total_zeros, "zeros_hide_none"),
    (total_numpy, "numpy_detour"),
    (total_rounded, "non_differentiable_op"),
])
def test_2_4_each_cause_is_named(answer, mistake):
    assert_wrong(verdict(check.add_and_differentiate, answer), mistake)


@pytest.mark.parametrize("answer, mistake", [
    (lambda total, x: None, None), (total_numpy_result, "returned_numpy"),
    (total_wrong_shape, "wrong_shape"), (raises, "raised"), (None, "not_callable"),
    ([1, 2], "not_callable")])
def test_2_4_bad_input_is_wrong_with_a_hint(answer, mistake):
    assert_wrong(verdict(check.add_and_differentiate, answer), mistake)


def test_2_4_stub_is_not_attempted():
    assert verdict(check.add_and_differentiate, stub).status is Status.NOT_ATTEMPTED


# ---------------------------------------------------------------------------
# Printing and strict mode
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("checker, reference", [
    (check.parameter_gradients, grads_reference), (check.slope, slope_reference),
    (check.train, train_reference), (check.add_and_differentiate, total_reference)])
def test_checks_print_and_are_strict_when_asked(checker, reference, capsys, monkeypatch):
    monkeypatch.delenv("AUTODIFF_COURSE_STRICT", raising=False)
    checker(stub)
    assert "not attempted" in capsys.readouterr().out
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    checker(reference)
    assert "✅" in capsys.readouterr().out
    with pytest.raises(ExerciseNotSolved):
        checker(stub)


@pytest.mark.parametrize("checker, answer", [
    (check.slope, slope_template), (check.slope, slope_watch_after_use),
    (check.slope, slope_no_cast), (check.slope, slope_numpy), (check.slope, slope_rounded),
    (check.train, train_template), (check.train, train_replaced),
    (check.add_and_differentiate, total_template)])
def test_fix_hints_name_the_cause_as_the_lesson_does(checker, answer):
    result = verdict(checker, answer)
    assert check.CATALOGUE[result.mistake] in result.message, result.message
