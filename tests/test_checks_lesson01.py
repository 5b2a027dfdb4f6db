"""Lesson 01's checks: each accepts the reference, names typical mistakes, spots stubs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson01 as check


def stub(*args):
    raise NotImplementedError()


def verdict(check_function, answer):
    result = check_function.evaluate(answer)
    return result.status, result.mistake


# 1.1 local derivative -------------------------------------------------------

@pytest.mark.parametrize("answer", [
    lambda x: tf.exp(x) / (1.0 + tf.exp(x)),
    tf.sigmoid,
    lambda x: 1.0 / (1.0 + tf.exp(-x)),
])
def test_local_derivative_accepts_equivalent_forms(answer):
    assert verdict(check.local_derivative, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (tf.exp, "forgot_outer_derivative"),
    (lambda x: tf.math.log(1.0 + tf.exp(x)), "value_not_derivative"),
    (lambda x: 1.0 / (1.0 + tf.exp(x)), "inverted_fraction"),
    (lambda x: tf.exp(x) / (1.0 + tf.exp(x)) ** 2, "differentiated_twice"),
    (lambda x: tf.exp(x) * (1.0 + tf.exp(x)), "other"),
    (lambda x: x, "other"),
    (lambda x: tf.sigmoid(x).numpy(), "returned_numpy"),
    (lambda x: tf.cast(tf.sigmoid(x), tf.float64), "wrong_dtype"),
    (lambda x: tf.reduce_sum(tf.sigmoid(x)), "wrong_shape"),
    (lambda x: None, "returned_none"),
    (lambda x: np.exp(x) / (1 + np.exp(x)), "returned_numpy"),
])
def test_local_derivative_names_the_mistake(answer, mistake):
    assert verdict(check.local_derivative, answer) == (Status.WRONG, mistake)


# 1.2 central differences ----------------------------------------------------

def test_central_difference_reference():
    answer = lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h)  # noqa: E731
    assert verdict(check.central_difference, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (lambda f, x, h: (f(x + h) - f(x)) / h, "forward_difference"),
    (lambda f, x, h: (f(x) - f(x - h)) / h, "backward_difference"),
    (lambda f, x, h: (f(x + h) - f(x - h)) / h, "missing_half"),
    (lambda f, x, h: (f(x - h) - f(x + h)) / (2 * h), "sign_flipped"),
    (lambda f, x, h: (f(x + h) - f(x - h)) / 2 * h, "other"),
    (lambda f, x, h: None, "returned_none"),
    (lambda f, x, h: [f(x)], "wrong_shape"),
    (lambda f, x, h: f(x + h, x), "raised"),
])
def test_central_difference_names_the_mistake(answer, mistake):
    assert verdict(check.central_difference, answer) == (Status.WRONG, mistake)


# 1.3 upstream dy ------------------------------------------------------------

@pytest.mark.parametrize("answer", [lambda o: 2.0 * o, lambda o: o + o])
def test_upstream_dy_reference(answer):
    assert verdict(check.upstream_dy, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (tf.ones_like, "dy_of_ones"),
    (lambda o: o**2, "returned_loss"),
    (lambda o: o, "missing_factor_two"),
    (lambda o: tf.fill(tf.shape(o), 2.0), "constant_two"),
    (lambda o: 3.0 * o, "other"),
    (lambda o: tf.constant(2.0), "wrong_shape"),
])
def test_upstream_dy_names_the_mistake(answer, mistake):
    assert verdict(check.upstream_dy, answer) == (Status.WRONG, mistake)


# 1.4 loss gradient through output_gradients ----------------------------------

def log1pexp(x):
    return tf.math.log(1.0 + tf.exp(x))


def with_dy(make_dy):
    def answer(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            output = log1pexp(x)
        return tape.gradient(output, x, output_gradients=make_dy(x, output))
    return answer


def test_loss_gradient_reference():
    answer = with_dy(lambda x, output: 2.0 * output)
    assert verdict(check.loss_gradient, answer) == (Status.CORRECT, None)


def test_loss_gradient_accepts_the_tape_on_the_loss():
    def answer(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = log1pexp(x) ** 2
        return tape.gradient(loss, x)
    assert verdict(check.loss_gradient, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (with_dy(lambda x, output: tf.ones_like(output)), "forgot_upstream"),
    (lambda x: 2.0 * log1pexp(x), "returned_dy"),
    (with_dy(lambda x, output: output), "missing_factor_two"),
    (with_dy(lambda x, output: 2.0 * x), "dy_from_x"),
    (with_dy(lambda x, output: output**2), "squared_dy"),
    (lambda x: tf.GradientTape().gradient(log1pexp(x), x), "raised"),
])
def test_loss_gradient_names_the_mistake(answer, mistake):
    assert verdict(check.loss_gradient, answer) == (Status.WRONG, mistake)


def test_loss_gradient_explains_a_none_from_the_tape():
    def unwatched(x):
        with tf.GradientTape() as tape:
            output = log1pexp(x)
        return tape.gradient(output, x, output_gradients=2.0 * output)
    result = check.loss_gradient.evaluate(unwatched)
    assert result.mistake == "returned_none" and "tape" in result.message


# 1.5 vector-Jacobian product -------------------------------------------------

def jacobian_by_hand(x):
    x0, x1 = x[0], x[1]
    return tf.stack([tf.stack([x1, x0]), tf.stack([1.0, 1.0]), tf.stack([2.0 * x0, 0.0])])


def test_vjp_reference():
    answer = lambda x, dy: tf.linalg.matvec(jacobian_by_hand(x), dy, transpose_a=True)  # noqa: E731
    assert verdict(check.vector_jacobian_product, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (lambda x, dy: jacobian_by_hand(x), "returned_jacobian"),
    (lambda x, dy: dy * 2.0, "wrong_shape"),
    (lambda x, dy: tf.reduce_sum(jacobian_by_hand(x), axis=0), "ignored_dy"),
    (lambda x, dy: tf.linalg.matvec(jacobian_by_hand(x[::-1]), dy, transpose_a=True), "wrong_row"),
    (lambda x, dy: tf.zeros(2), "other"),
    (lambda x, dy: tf.zeros(4), "wrong_shape"),
])
def test_vjp_names_the_mistake(answer, mistake):
    assert verdict(check.vector_jacobian_product, answer) == (Status.WRONG, mistake)


# The contract shared by every check (stubs, non-functions, answers that raise,
# strict mode) is tested once for all lessons in test_checker_contract.py.

def test_hints_are_specific_sentences():
    result = check.loss_gradient.evaluate(with_dy(lambda x, output: tf.ones_like(output)))
    assert "output_gradients" in result.message and "dy = 1" in result.message
    assert "dy = 2 * output" in result.message
