"""The checks of lesson 04 (nested tapes and higher-order gradients).

For every exercise: the reference answer and differently written correct answers
are accepted, and wrong answers of the kinds learners write each get their own
mistake code, method violations included. What every check promises whatever its
lesson (stubs, non-callables, raising or malformed answers, strict mode) is tested
once for all in tests/test_checker_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson04 as check
from autodiff_course.reference import lesson04 as reference

ZERO = tf.UnconnectedGradients.ZERO


def verdict(checker, answer):
    result = checker.evaluate(answer)
    assert "Traceback" not in result.message
    return result


def assert_correct(checker, answer):
    result = verdict(checker, answer)
    assert result.status is Status.CORRECT, result


def assert_mistake(checker, answer, mistake, *words):
    result = verdict(checker, answer)
    assert (result.status, result.mistake) == (Status.WRONG, mistake), result
    for word in words:
        assert word in result.message, result.message


def nested(f, x, *, watch_outer=True, watch_inner=True, inside=True, zero=False):
    """f' and f'' of an element-wise f, laid out the ways learners lay them out."""
    outer = tf.GradientTape()
    with outer:
        if watch_outer:
            outer.watch(x)
        with tf.GradientTape() as inner:
            if watch_inner:
                inner.watch(x)
            y = f(x)
        if inside:
            first = inner.gradient(y, x)
    if not inside:
        first = inner.gradient(y, x)
    options = {"unconnected_gradients": ZERO} if zero else {}
    return first, outer.gradient(first, x, **options)


# --------------------------------------------------------------------------
# 4.1 one Newton step

def newton_reference(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        slope = inner.gradient(y, x)
    curvature = outer.gradient(slope, x)
    return x - slope / curvature


def newton_divide(f, x):
    first, second = nested(f, x)
    return tf.math.subtract(x, tf.math.divide(first, second))


def newton_finite_differences(f, x):
    step = 1e-3
    first = (f(x + step) - f(x - step)) / (2 * step)
    second = (f(x + step) - 2 * f(x) + f(x - step)) / step**2
    return x - first / second


def newton_two_separate_tapes(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    first = tape.gradient(y, x)
    step = 1e-4
    with tf.GradientTape() as a:
        a.watch(x)
        ya = f(x + step)
    with tf.GradientTape() as b:
        b.watch(x)
        yb = f(x - step)
    second = (a.gradient(ya, x) - b.gradient(yb, x)) / (2 * step)
    return x - first / second


def newton_jacobian(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        first = inner.gradient(y, x)
    hessian = outer.jacobian(first, x)
    return x - first / tf.linalg.diag_part(hessian)


def newton_target_after_block(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        first = inner.gradient(y, x)
    doubled = 2.0 * first
    return x - first / (0.5 * outer.gradient(doubled, x))


def newton_float32(f, x):
    x32 = tf.cast(x, tf.float32)
    first, second = nested(f, x32)
    return x32 - first / second


@pytest.mark.parametrize("answer", [newton_reference, newton_divide])
def test_newton_correct_answers(answer):
    assert_correct(check.newton_step, answer)


@pytest.mark.parametrize("answer, mistake, words", [
    (lambda f, x: x - tf.math.divide_no_nan(*nested(f, x, inside=False)),
     "gradient_outside_tape", ["outer tape's `with` block"]),
    (lambda f, x: x - tf.math.divide(*nested(f, x, watch_outer=False)),
     "outer_not_watching", ["outer.watch"]),
    (lambda f, x: x - tf.math.divide(*nested(f, x, inside=False, zero=True)),
     "zeros_hide_none", ["unconnected_gradients=ZERO", "after the outer tape's"]),
    (lambda f, x: x - tf.math.divide(*nested(f, x, watch_inner=False)),
     "unwatched_constant", ["tape.watch"]),
    (newton_finite_differences, "not_nested", ["called no tape"]),
    (newton_two_separate_tapes, "not_nested", ["one after the other"]),
    (newton_jacobian, "used_jacobian", ["diagonal"]),
    (newton_target_after_block, "computed_outside_tape", ["after the tape's `with` block had closed"]),
    (lambda f, x: x - tf.math.multiply(*nested(f, x)), "wrong_combination",
     ["computed f'(x) and f''(x) correctly"]),
    (newton_float32, "float32_not_float64", []),
    (lambda f, x: x + tf.math.divide(*nested(f, x)), "newton_uphill", []),
    (lambda f, x: x - nested(f, x)[1] / nested(f, x)[0], "newton_ratio_inverted", []),
    (lambda f, x: tf.math.divide(*nested(f, x)), "newton_step_only", []),
    (lambda f, x: x - f(x) / nested(f, x)[0], "newton_root_finding", []),
    (lambda f, x: x - nested(f, x)[0], "gradient_descent_step", []),
    (lambda f, x: nested(f, x)[1], "second_not_newton", []),
    (lambda f, x: tf.cast(newton_reference(f, tf.cast(x, tf.float32)), x.dtype),
     "approximation", []),
    (lambda f, x: tf.constant([0.1, -0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), "wrong_shape", []),
])
def test_newton_mistakes(answer, mistake, words):
    assert_mistake(check.newton_step, answer, mistake, *words)


# --------------------------------------------------------------------------
# 4.2 mixed partial

def mixed_reference(f, x, y):
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = f(x, y)
        dz_dx = inner.gradient(z, x)
    return outer.gradient(dz_dx, y, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def mixed_other_order_none_replaced(f, x, y):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(y)
            z = f(x, y)
        dz_dy = inner.gradient(z, y)
    result = outer.gradient(dz_dy, x)
    return tf.zeros_like(x) if result is None else result


def mixed(f, x, y, *, inner_source="x", outer_source="y", outer_watch="y", inside=True,
          zero=True):
    sources = {"x": x, "y": y}
    with tf.GradientTape() as outer:
        outer.watch(sources[outer_watch])
        with tf.GradientTape() as inner:
            inner.watch(sources[inner_source])
            z = f(x, y)
        if inside:
            first = inner.gradient(z, sources[inner_source])
    if not inside:
        first = inner.gradient(z, sources[inner_source])
    options = {"unconnected_gradients": ZERO} if zero else {}
    return outer.gradient(first, sources[outer_source], **options)


def mixed_finite_difference_in_y(f, x, y):
    def slope_in_x(at_y):
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = f(x, at_y)
        return tape.gradient(z, x)
    return (slope_in_x(y + 1e-3) - slope_in_x(y - 1e-3)) / 2e-3


def _none_as_zeros(result, x):
    return tf.zeros_like(x) if result is None else result


def _none_as_float32_zeros(result, x):
    return tf.zeros(x.shape) if result is None else result


def mixed_jacobian_diagonal(f, x, y):
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = f(x, y)
        dz_dx = inner.gradient(z, x)
    jacobian = outer.jacobian(dz_dx, y, unconnected_gradients=ZERO)
    return tf.reshape(tf.linalg.diag_part(tf.reshape(jacobian, [tf.size(x), tf.size(y)])),
                      x.shape)


def mixed_first_partials_product(f, x, y):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(y)
        z = f(x, y)
    return tape.gradient(z, x) * tape.gradient(z, y)


@pytest.mark.parametrize("answer", [mixed_reference, mixed_other_order_none_replaced])
def test_mixed_partial_correct_answers(answer):
    assert_correct(check.mixed_partial, answer)


@pytest.mark.parametrize("answer, mistake, words", [
    (lambda f, x, y: mixed(f, x, y, zero=False), "structural_none", ["ZERO"]),
    (lambda f, x, y: mixed(f, x, y, inside=False, zero=False), "gradient_outside_tape", []),
    (lambda f, x, y: mixed(f, x, y, inside=False), "zeros_hide_none",
     ["after the outer tape's"]),
    (lambda f, x, y: mixed(f, x, y, outer_watch="x"), "zeros_hide_none",
     ["outer.watch"]),
    (lambda f, x, y: mixed(f, x, y, outer_watch="x", zero=False), "outer_not_watching", []),
    (lambda f, x, y: mixed(f, x, y, outer_source="x", outer_watch="x"), "wrong_source",
     ["d2z/dx2"]),
    (lambda f, x, y: mixed(f, x, y, inner_source="y"), "wrong_source", ["d2z/dy2"]),
    (mixed_first_partials_product, "product_of_partials", []),
    (mixed_finite_difference_in_y, "not_nested", []),
    (mixed_jacobian_diagonal, "used_jacobian", []),
    (lambda f, x, y: _none_as_float32_zeros(mixed(f, x, y, zero=False), x),
     "float32_not_float64", []),
    (lambda f, x, y: _none_as_zeros(mixed(f, x, y, outer_watch="x", zero=False), x),
     "outer_not_watching", ["returned zeros where a tape returned None"]),
    (lambda f, x, y: tf.math.sin(mixed_reference(f, x, y)), "wrong_combination", []),
    (lambda f, x, y: -mixed_reference(f, x, y), "sign_flipped", []),
    (lambda f, x, y: tf.cast(mixed_reference(f, tf.cast(x, tf.float32),
                                             tf.cast(y, tf.float32)), x.dtype),
     "approximation", []),
])
def test_mixed_partial_mistakes(answer, mistake, words):
    assert_mistake(check.mixed_partial, answer, mistake, *words)


# --------------------------------------------------------------------------
# 4.3 a sigmoid whose gradient stays accurate

@tf.custom_gradient
def sigmoid_from_softplus(x):
    def grad_fn(upstream):
        return upstream * tf.exp(-tf.nn.softplus(x) - tf.nn.softplus(-x))
    return tf.math.sigmoid(x), grad_fn


def sigmoid_rule(backward, forward=tf.sigmoid):
    @tf.custom_gradient
    def answer(x):
        def grad_fn(upstream):
            return backward(x, upstream)
        return forward(x), grad_fn
    return answer


def sigmoid_plus_own_gradient(x):
    return reference.smooth_sigmoid(x) + 0.0 * tf.sigmoid(x) + (tf.sigmoid(x) - tf.sigmoid(x))


def sigmoid_no_decorator(x):
    def grad_fn(upstream):
        return upstream * tf.sigmoid(x) * tf.sigmoid(-x)
    return tf.sigmoid(x), grad_fn


def sigmoid_bypassed(x):
    return reference.smooth_sigmoid(x) * 0.5 + 0.5 * tf.sigmoid(x)


@pytest.mark.parametrize("answer", [
    reference.smooth_sigmoid, sigmoid_from_softplus, sigmoid_plus_own_gradient,
    sigmoid_rule(lambda x, dy: dy * tf.cosh(x / 2.0) ** -2 / 4.0),  # sech(x/2)**2 / 4
])
def test_smooth_sigmoid_correct_answers(answer):
    assert_correct(check.smooth_sigmoid, answer)


@pytest.mark.parametrize("answer, mistake", [
    (tf.sigmoid, "custom_gradient_not_used"),
    (sigmoid_no_decorator, "forgot_decorator"),
    (sigmoid_bypassed, "custom_rule_bypassed"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * (1.0 - tf.sigmoid(x))),
     "sigmoid_cancellation"),
    (sigmoid_rule(lambda x, dy: dy * tf.exp(-x) / (1.0 + tf.exp(-x)) ** 2), "exp_overflow"),
    (sigmoid_rule(lambda x, dy: dy * (1.0 - tf.sigmoid(-x)) * tf.sigmoid(-x)),
     "sigmoid_cancellation"),
    (sigmoid_rule(lambda x, dy: dy * (tf.sigmoid(x) - tf.sigmoid(x) ** 2)),
     "sigmoid_cancellation"),
    (sigmoid_rule(lambda x, dy: dy * tf.exp(-x) * tf.sigmoid(x) ** 2), "exp_overflow"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * (1.0 - tf.tanh(x / 2.0)) / 2.0),
     "tail_inaccurate"),
    (sigmoid_rule(lambda x, dy: tf.sigmoid(x) * tf.sigmoid(-x)), "forgot_upstream"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x)), "softplus_slope"),
    (sigmoid_rule(lambda x, dy: dy), "forgot_local_derivative"),
    (sigmoid_rule(lambda x, dy: tf.reduce_mean(dy) * tf.sigmoid(x) * tf.sigmoid(-x)),
     "reduced_dy"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * tf.sigmoid(-x) * tf.sigmoid(x)),
     "wrong_local_derivative"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * tf.sigmoid(-x),
                  forward=lambda x: 1.0 - tf.sigmoid(-x)), "tail_inaccurate"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * tf.sigmoid(-x),
                  forward=lambda x: 1.0 - tf.sigmoid(x)), "wrong_value"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * tf.sigmoid(-x),
                  forward=tf.math.softplus), "wrong_value"),
    (sigmoid_rule(lambda x, dy: dy * dy * tf.sigmoid(x) * tf.sigmoid(-x)),
     "upstream_not_linear"),
    (sigmoid_rule(lambda x, dy: dy * (1.0 - tf.tanh(x / 2.0) ** 2) / 4.0), "tail_inaccurate"),
    (sigmoid_rule(lambda x, dy: None), "returned_none"),
    (sigmoid_rule(lambda x, dy: -dy * tf.sigmoid(x) * tf.sigmoid(-x)), "sign_flipped"),
    (sigmoid_rule(lambda x, dy: 2.0 * dy * tf.sigmoid(x) * tf.sigmoid(-x)), "scale_factor"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * tf.sigmoid(-x),
                  forward=lambda x: tf.sigmoid(x) * tf.sigmoid(-x)), "slope_as_value"),
    (sigmoid_rule(lambda x, dy: dy * tf.cast(tf.sigmoid(tf.cast(x, tf.float32))
                                             * tf.sigmoid(-tf.cast(x, tf.float32)), x.dtype)),
     "approximation"),
    (sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) * tf.sigmoid(-x),
                  forward=lambda x: tf.sigmoid(tf.cast(x, tf.float32))),
     "float32_not_float64"),
])
def test_smooth_sigmoid_mistakes(answer, mistake):
    assert_mistake(check.smooth_sigmoid, answer, mistake)


def test_an_error_in_grad_fn_is_shown_as_the_learners():
    result = verdict(check.smooth_sigmoid,
                     sigmoid_rule(lambda x, dy: dy * tf.sigmoid(x) @ tf.ones((2, 2))))
    assert result.mistake == "raised" and "of your code" in result.message


# --------------------------------------------------------------------------
# 4.4 Hessian-vector product

def hvp_reference(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        g_dot_v = tf.reduce_sum(g * v)
    return outer.gradient(g_dot_v, x)


def hvp_output_gradients(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return outer.gradient(g, x, output_gradients=v)


def hvp_variants(f, x, v, *, product_inside=True, times_v_after=False, ignore_v=False):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
        if product_inside:
            target = tf.reduce_sum(g * v)
    if not product_inside:
        target = tf.reduce_sum(g * v)
    if times_v_after:
        return outer.gradient(g, x) * v
    if ignore_v:
        return outer.gradient(g, x)
    return outer.gradient(target, x)


def hvp_forward_over_reverse(f, x, v):
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as accumulator:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    return accumulator.jvp(g)


def hvp_explicit_hessian(f, x, v):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return tf.linalg.matvec(outer.jacobian(g, x), v)


def hvp_difference_of_gradients(f, x, v):
    def gradient_at(point):
        with tf.GradientTape() as tape:
            tape.watch(point)
            y = f(point)
        return tape.gradient(y, point)
    return (gradient_at(x + 1e-4 * v) - gradient_at(x - 1e-4 * v)) / 2e-4


def hvp_first_only(f, x, v):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


@pytest.mark.parametrize("answer", [hvp_reference, hvp_output_gradients])
def test_hvp_correct_answers(answer):
    assert_correct(check.hvp, answer)


@pytest.mark.parametrize("answer, mistake", [
    (hvp_forward_over_reverse, "forward_over_reverse"),
    (hvp_explicit_hessian, "used_jacobian"),
    (hvp_difference_of_gradients, "not_nested"),
    (hvp_first_only, "first_not_second"),
    (lambda f, x, v: hvp_variants(f, x, v, product_inside=False), "computed_outside_tape"),
    (lambda f, x, v: hvp_variants(f, x, v, times_v_after=True), "hessian_row_sums"),
    (lambda f, x, v: hvp_variants(f, x, v, ignore_v=True), "hessian_row_sums"),
    (lambda f, x, v: tf.reduce_sum(v * hvp_reference(f, x, v)), "directional_derivative"),
    (lambda f, x, v: hvp_reference(f, x, v)[:, None] * tf.ones_like(v), "returned_hessian"),
    (lambda f, x, v: -hvp_reference(f, x, v), "sign_flipped"),
    (lambda f, x, v: 0.5 * hvp_reference(f, x, v), "scale_factor"),
    (lambda f, x, v: hvp_reference(f, x, v / tf.norm(v)), "scale_factor"),
    (lambda f, x, v: hvp_reference(f, x, v) * tf.abs(v), "wrong_combination"),
    (lambda f, x, v: hvp_reference(f, tf.cast(x, tf.float32), tf.cast(v, tf.float32)),
     "float32_not_float64"),
])
def test_hvp_mistakes(answer, mistake):
    assert_mistake(check.hvp, answer, mistake)


# --------------------------------------------------------------------------
# 4.5 safe norm

def squares(g):
    return tf.reduce_sum(tf.square(g), axis=-1)


@pytest.mark.parametrize("answer", [
    reference.safe_norm,
    lambda g: tf.where(squares(g) > 0, tf.sqrt(squares(g)), tf.zeros_like(squares(g))),
    lambda g: tf.where(squares(g) > 0, tf.norm(g, axis=-1), 0.0 * squares(g)),
    lambda g: tf.sqrt(tf.maximum(squares(g), 1e-12)),
    lambda g: tf.where(squares(g) > 0,
                       tf.sqrt(tf.where(squares(g) > 0, squares(g), tf.ones_like(squares(g)))),
                       tf.zeros_like(squares(g))),
], ids=["eps", "where around sqrt", "where around tf.norm", "maximum", "double where"])
def test_safe_norm_correct_answers(answer):
    assert_correct(check.safe_norm, answer)


@pytest.mark.parametrize("answer, mistake", [
    (lambda g: tf.norm(g, axis=-1), "nan_gradient_at_zero"),
    (lambda g: tf.sqrt(squares(g)) + 1e-9, "eps_outside_sqrt"),
    (lambda g: tf.where(squares(g) > 0, tf.pow(squares(g), 0.5), tf.zeros_like(squares(g))),
     "where_without_safe_branch"),
    (lambda g: tf.where(squares(g) > 0, tf.math.reduce_euclidean_norm(g, axis=-1),
                        tf.zeros_like(squares(g))), "where_without_safe_branch"),
    (lambda g: tf.sqrt(squares(g) + 1e-3), "eps_too_large"),
    (lambda g: tf.norm(tf.maximum(g, 1e-7), axis=-1), "clipped_input"),
    (lambda g: tf.sqrt(tf.square(tf.reduce_sum(g, axis=-1)) + 1e-12), "square_of_sum"),
    (lambda g: tf.where(tf.norm(g, axis=-1) > 0.1, tf.norm(g, axis=-1),
                        tf.zeros_like(g[:, 0])), "threshold_too_large"),
    (lambda g: tf.where(squares(g) > 0, squares(g) * tf.math.rsqrt(squares(g)),
                        tf.zeros_like(squares(g))), "where_without_safe_branch"),
    (lambda g: tf.where(squares(g) > 0, tf.exp(0.5 * tf.math.log(squares(g))),
                        tf.zeros_like(squares(g))), "where_without_safe_branch"),
    (lambda g: squares(g) + 1e-12, "squared_norm"),
    (lambda g: tf.reduce_sum(tf.abs(g), axis=-1), "l1_norm"),
    (lambda g: tf.sqrt(tf.reduce_mean(g * g, axis=-1) + 1e-12), "mean_not_sum"),
    (lambda g: tf.sqrt(tf.reduce_sum(g**2) + 1e-12), "whole_tensor_norm"),
    (lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=0) + 1e-12), "wrong_axis"),
    (lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=-1, keepdims=True) + 1e-12),
     "broadcast_shape"),
    (lambda g: tf.sqrt(tf.cast(squares(g), tf.float32) + 1e-12), "float32_not_float64"),
    (lambda g: tf.sqrt(squares(g) + 1e-12).numpy(), "returned_numpy"),
    (lambda g: tf.constant(np.sqrt(np.sum(g.numpy() ** 2, axis=-1) + 1e-12)), "numpy_detour"),
    (lambda g: tf.stop_gradient(tf.sqrt(squares(g) + 1e-12)), "no_gradient"),
])
def test_safe_norm_mistakes(answer, mistake):
    assert_mistake(check.safe_norm, answer, mistake)


def test_a_single_where_around_sqrt_is_never_blamed():
    """What lesson 03 teaches: tf.sqrt's gradient is 0 where the upstream is 0."""
    for answer in (
            lambda g: tf.where(squares(g) > 0, tf.sqrt(squares(g)), tf.zeros_like(squares(g))),
            lambda g: tf.where(tf.norm(g, axis=-1) > 0, tf.norm(g, axis=-1), 0.0)):
        assert verdict(check.safe_norm, answer).status is Status.CORRECT


def test_the_checks_answer_quickly():
    import time

    answers = [(check.newton_step, newton_reference), (check.mixed_partial, mixed_reference),
               (check.smooth_sigmoid, reference.smooth_sigmoid), (check.hvp, hvp_reference),
               (check.safe_norm, reference.safe_norm)]
    for checker, answer in answers:
        checker.evaluate(answer)  # warm up
        durations = []
        for _ in range(5):
            started = time.perf_counter()
            checker.evaluate(answer)
            durations.append(time.perf_counter() - started)
        assert np.median(durations) < 0.3, (checker.exercise, durations)


@pytest.mark.parametrize("answer, named, not_named", [
    (lambda g: tf.where(squares(g) > 0, squares(g) * tf.math.rsqrt(squares(g)),
                        tf.zeros_like(squares(g))), "rsqrt", "x**0.5"),
    (lambda g: tf.where(squares(g) > 0, tf.exp(0.5 * tf.math.log(squares(g))),
                        tf.zeros_like(squares(g))), "tf.math.log", "x**0.5"),
    (lambda g: tf.where(squares(g) > 0, tf.pow(squares(g), 0.5), tf.zeros_like(squares(g))),
     "x**0.5", "rsqrt"),
])
def test_the_where_hint_names_the_op_that_was_used(answer, named, not_named):
    """g**2 is a power too: only a fractional power may be blamed."""
    message = verdict(check.safe_norm, answer).message
    assert named in message and not_named not in message


def test_the_target_outside_hint_of_4_1_does_not_speak_of_v():
    message = verdict(check.newton_step, newton_target_after_block).message
    assert "product with v" not in message
