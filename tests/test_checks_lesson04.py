"""Unit tests for the checks of lesson 04 (nested tapes and higher-order gradients).

For every exercise: the reference answer is correct, typical wrong answers are
recognised with their specific mistake code, a stub is *not attempted*, and bad
input (None, NumPy, wrong shape, an exception, a non-callable) is *wrong* with a
hint, never an exception.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import ExerciseNotSolved, Status
from autodiff_course.checks import lesson04 as check


def stub(*args):
    raise NotImplementedError()


def raises(*args):
    raise ValueError("something broke")


def assert_wrong(result, mistake=None):
    assert result.status is Status.WRONG, result
    assert result.message, "a wrong answer needs a hint"
    if mistake is not None:
        assert result.mistake == mistake, result


def assert_bad_inputs_are_wrong(checker, returns_none, returns_numpy, wrong_shape):
    for answer in (returns_none, returns_numpy, wrong_shape, raises, 42, None):
        assert_wrong(checker.evaluate(answer))


# --------------------------------------------------------------------------
# 4.1 second derivative


def second_derivative(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy_dx = inner.gradient(y, x)
    return outer.gradient(dy_dx, x)


def second_outside_context(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy_dx = inner.gradient(y, x)
    return outer.gradient(dy_dx, x)


def second_outside_context_zero(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy_dx = inner.gradient(y, x)
    return outer.gradient(dy_dx, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def first_derivative_only(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_second_derivative_reference_is_correct():
    assert check.second_derivative.evaluate(second_derivative).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (second_outside_context, "outside_context"),
    (second_outside_context_zero, "zeros"),
    (first_derivative_only, "first_derivative"),
    (lambda f, x: f(x), "returned_value"),
])
def test_second_derivative_mistakes(answer, mistake):
    assert_wrong(check.second_derivative.evaluate(answer), mistake)


def test_second_derivative_outside_context_hint_names_the_mistake():
    result = check.second_derivative.evaluate(second_outside_context)
    assert "outer tape" in result.message and "with" in result.message


def test_second_derivative_stub_and_bad_inputs():
    assert check.second_derivative.evaluate(stub).status is Status.NOT_ATTEMPTED
    assert_bad_inputs_are_wrong(
        check.second_derivative,
        lambda f, x: None,
        lambda f, x: second_derivative(f, x).numpy(),
        lambda f, x: tf.reshape(second_derivative(f, x), (-1, 1)),
    )


# --------------------------------------------------------------------------
# 4.2 mixed partial


def surface(x, y):
    return x**2 * y**3 + tf.sin(x * y)


def mixed_partial(x, y):
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = surface(x, y)
        dz_dx = inner.gradient(z, x)
    return outer.gradient(dz_dx, y)


def mixed_broken(x, y):
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = surface(x, y)
    dz_dx = inner.gradient(z, x)
    return outer.gradient(dz_dx, y)


def mixed_broken_zero(x, y):
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = surface(x, y)
    dz_dx = inner.gradient(z, x)
    return outer.gradient(dz_dx, y, unconnected_gradients="zero")


def mixed_first_partial(x, y):
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = surface(x, y)
    return tape.gradient(z, x)


def mixed_wrong_outer_source(x, y):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = surface(x, y)
        dz_dx = inner.gradient(z, x)
    return outer.gradient(dz_dx, x)


def mixed_both_y(x, y):
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(y)
            z = surface(x, y)
        dz_dy = inner.gradient(z, y)
    return outer.gradient(dz_dy, y)


def mixed_swapped_order(x, y):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(y)
            z = surface(x, y)
        dz_dy = inner.gradient(z, y)
    return outer.gradient(dz_dy, x)


def test_mixed_partial_reference_is_correct():
    assert check.mixed_partial.evaluate(mixed_partial).status is Status.CORRECT
    # The other order of differentiation gives the same mixed partial.
    assert check.mixed_partial.evaluate(mixed_swapped_order).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (mixed_broken, "still_none"),
    (mixed_broken_zero, "zeros"),
    (mixed_first_partial, "first_partial"),
    (mixed_wrong_outer_source, "d2_dx2"),
    (mixed_both_y, "d2_dy2"),
])
def test_mixed_partial_mistakes(answer, mistake):
    assert_wrong(check.mixed_partial.evaluate(answer), mistake)


def test_mixed_partial_stub_and_bad_inputs():
    assert check.mixed_partial.evaluate(stub).status is Status.NOT_ATTEMPTED
    assert_bad_inputs_are_wrong(
        check.mixed_partial,
        lambda x, y: None,
        lambda x, y: mixed_partial(x, y).numpy(),
        lambda x, y: mixed_partial(x, y)[:2],
    )


# --------------------------------------------------------------------------
# 4.3 smooth sigmoid


@tf.custom_gradient
def smooth_sigmoid(x):
    s = tf.sigmoid(x)

    def grad_fn(upstream):
        return upstream * s * tf.sigmoid(-x)

    return s, grad_fn


@tf.custom_gradient
def sigmoid_forgot_upstream(x):
    s = tf.sigmoid(x)
    return s, lambda upstream: s * tf.sigmoid(-x)


@tf.custom_gradient
def sigmoid_cancelling(x):
    s = tf.sigmoid(x)
    return s, lambda upstream: upstream * s * (1.0 - s)


@tf.custom_gradient
def sigmoid_overflowing(x):
    e = tf.exp(x)
    return tf.sigmoid(x), lambda upstream: upstream * e / (1.0 + e) ** 2


@tf.custom_gradient
def sigmoid_softplus_slope(x):
    s = tf.sigmoid(x)
    return s, lambda upstream: upstream * s


@tf.custom_gradient
def sigmoid_negative(x):
    s = tf.sigmoid(x)
    return s, lambda upstream: -upstream * s * tf.sigmoid(-x)


@tf.custom_gradient
def sigmoid_grad_raises(x):
    def grad_fn(upstream):
        raise ValueError("broken backward rule")

    return tf.sigmoid(x), grad_fn


@tf.custom_gradient
def sigmoid_bad_grad_shape(x):
    s = tf.sigmoid(x)
    return s, lambda upstream: tf.reduce_sum(upstream) * tf.ones((2, 2))


def sigmoid_without_decorator(x):
    s = tf.sigmoid(x)
    return s, lambda upstream: upstream * s * tf.sigmoid(-x)


def test_smooth_sigmoid_reference_is_correct():
    assert check.smooth_sigmoid.evaluate(smooth_sigmoid).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (sigmoid_forgot_upstream, "forgot_upstream"),
    (sigmoid_cancelling, "cancellation"),
    (tf.sigmoid, "cancellation"),
    (sigmoid_overflowing, "exp_overflow"),
    (sigmoid_softplus_slope, "returned_sigmoid"),
    (sigmoid_negative, "sign_error"),
    (lambda x: tf.constant(1.0 / (1.0 + np.exp(-x.numpy()))), "no_gradient"),
    (sigmoid_grad_raises, "gradient_raised"),
    (sigmoid_bad_grad_shape, "wrong_shape"),
    (lambda x: tf.sigmoid(x) * tf.sigmoid(-x), "returned_slope"),
    (sigmoid_without_decorator, "forgot_decorator"),
])
def test_smooth_sigmoid_mistakes(answer, mistake):
    assert_wrong(check.smooth_sigmoid.evaluate(answer), mistake)


@tf.custom_gradient
def sigmoid_stub(x):
    raise NotImplementedError()


def test_smooth_sigmoid_stub_and_bad_inputs():
    assert check.smooth_sigmoid.evaluate(stub).status is Status.NOT_ATTEMPTED
    # the learner's copy keeps the decorator around the stub
    assert check.smooth_sigmoid.evaluate(sigmoid_stub).status is Status.NOT_ATTEMPTED
    assert_bad_inputs_are_wrong(
        check.smooth_sigmoid,
        lambda x: None,
        lambda x: smooth_sigmoid(x).numpy(),
        lambda x: smooth_sigmoid(x)[:3],
    )


# --------------------------------------------------------------------------
# 4.4 Hessian-vector product


def hvp_reverse_over_reverse(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        g_dot_v = tf.reduce_sum(g * v)
    return outer.gradient(g_dot_v, x)


def hvp_forward_over_reverse(f, x, v):
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    return accumulator.jvp(g)


def hessian(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.jacobian(g, x)


def gradient(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def hvp_outside_context(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    g = inner.gradient(y, x)
    return outer.gradient(tf.reduce_sum(g * v), x)


def hvp_v_after(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.gradient(g, x) * v


def hvp_ignores_v(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.gradient(g, x)


def test_hvp_references_are_correct():
    for answer in (hvp_reverse_over_reverse, hvp_forward_over_reverse,
                   lambda f, x, v: tf.linalg.matvec(hessian(f, x), v)):
        assert check.hvp.evaluate(answer).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (lambda f, x, v: gradient(f, x), "returned_gradient"),
    (lambda f, x, v: gradient(f, x) * v, "gradient_times_v"),
    (lambda f, x, v: tf.reduce_sum(gradient(f, x) * v), "directional_derivative"),
    (lambda f, x, v: hessian(f, x), "returned_hessian"),
    (lambda f, x, v: hessian(f, x) * v, "returned_hessian"),
    (lambda f, x, v: hessian(f, x) @ v[:, None], "matrix_shape"),
    (hvp_v_after, "v_after_differentiating"),
    (hvp_ignores_v, "ignored_v"),
    (hvp_outside_context, "returned_none"),
    (lambda f, x, v: -hvp_reverse_over_reverse(f, x, v), "sign_error"),
])
def test_hvp_mistakes(answer, mistake):
    assert_wrong(check.hvp.evaluate(answer), mistake)


def test_hvp_stub_and_bad_inputs():
    assert check.hvp.evaluate(stub).status is Status.NOT_ATTEMPTED
    assert_bad_inputs_are_wrong(
        check.hvp,
        lambda f, x, v: None,
        lambda f, x, v: hvp_reverse_over_reverse(f, x, v).numpy(),
        lambda f, x, v: hvp_reverse_over_reverse(f, x, v)[:2],
    )


# --------------------------------------------------------------------------
# 4.5 safe norm


def safe_norm(g):
    return tf.sqrt(tf.reduce_sum(g**2, axis=-1) + 1e-12)


def double_where_norm(g):
    squared = tf.reduce_sum(g**2, axis=-1)
    positive = squared > 0.0
    return tf.where(positive, tf.sqrt(tf.where(positive, squared, 1.0)), 0.0)


def single_where_norm(g):
    # `where` does not protect the branch it does not take: the power's derivative at
    # 0 is infinite, and 0 * inf = nan. (tf.sqrt's own gradient returns 0 for a zero
    # upstream, so with tf.sqrt a single `where` happens to be safe in TF 2.21.)
    squared = tf.reduce_sum(g**2, axis=-1)
    return tf.where(squared > 0.0, squared**0.5, 0.0)


def test_safe_norm_references_are_correct():
    for answer in (safe_norm, double_where_norm,
                   lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=-1) + 1e-8)):
        assert check.safe_norm.evaluate(answer).status is Status.CORRECT, answer


@pytest.mark.parametrize("answer, mistake", [
    (lambda g: tf.norm(g, axis=-1), "nan_gradient_at_zero"),
    (single_where_norm, "nan_gradient_at_zero"),
    (lambda g: tf.norm(g, axis=-1) + 1e-12, "nan_gradient_at_zero"),
    (lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=-1)), "nan_gradient_at_zero"),
    (lambda g: tf.reduce_sum(g**2, axis=-1), "squared_norm"),
    (lambda g: tf.reduce_sum(tf.abs(g), axis=-1), "l1_norm"),
    (lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=-1) + 1e-2), "eps_too_large"),
    (lambda g: tf.norm(g), "whole_tensor_norm"),
    (lambda g: safe_norm(g)[:, None], "keepdims"),
    (lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=0) + 1e-12), "wrong_axis"),
    (lambda g: tf.constant(np.linalg.norm(g.numpy(), axis=-1)), "no_gradient"),
])
def test_safe_norm_mistakes(answer, mistake):
    assert_wrong(check.safe_norm.evaluate(answer), mistake)


def test_safe_norm_stub_and_bad_inputs():
    assert check.safe_norm.evaluate(stub).status is Status.NOT_ATTEMPTED
    assert_bad_inputs_are_wrong(
        check.safe_norm,
        lambda g: None,
        lambda g: safe_norm(g).numpy(),
        lambda g: safe_norm(g)[:2],
    )


# --------------------------------------------------------------------------
# verdicts in lessons and in strict mode


def test_checks_print_and_only_raise_in_strict_mode(monkeypatch, capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "0")
    check.second_derivative(stub)
    assert "not attempted" in capsys.readouterr().out
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    with pytest.raises(ExerciseNotSolved):
        check.second_derivative(stub)
    with pytest.raises(ExerciseNotSolved):
        check.safe_norm(lambda g: tf.norm(g, axis=-1))
    check.safe_norm(safe_norm)
    assert "✅" in capsys.readouterr().out
