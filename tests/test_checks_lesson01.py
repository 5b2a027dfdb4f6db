"""Lesson 01's checks: each accepts correct answers and names the typical mistakes.

The contract shared by every check (stubs, non-functions, answers that raise,
malformed return values, strict mode) is tested once for all lessons in
test_checker_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson01 as check
from autodiff_course.gradcheck import central_difference


def verdict(check_function, answer):
    result = check_function.evaluate(answer)
    assert "Traceback" not in result.message
    return result.status, result.mistake


def accepted(check_function, answer):
    result = check_function.evaluate(answer)
    assert (result.status, result.mistake) == (Status.CORRECT, None), result.message


def count(tensor):
    return tf.cast(tf.size(tensor), tensor.dtype)


def log1pexp(x):
    return tf.math.log(1.0 + tf.exp(x))


def taped(function):
    """d function(x) / dx with a tape: right numbers, wrong method where "by hand"."""
    def answer(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = function(x)
        return tape.gradient(y, x)
    return answer


# 1.1 d/dx log(1 + e^-x) by hand ---------------------------------------------

@pytest.mark.parametrize("answer", [
    lambda x: -tf.exp(-x) / (1.0 + tf.exp(-x)),
    lambda x: tf.sigmoid(x) - 1.0,
    lambda x: -tf.sigmoid(-x),
    lambda x: -1.0 / (1.0 + tf.exp(x)),
], ids=["exp form", "sigmoid minus one", "minus sigmoid of -x", "1/(1+e^x)"])
def test_logistic_derivative_accepts_equivalent_forms(answer):
    accepted(check.logistic_derivative, answer)


def finite_difference_by_tf(x):
    h = 1e-3
    return (tf.nn.softplus(-(x + h)) - tf.nn.softplus(-(x - h))) / (2 * h)


def compute_gradient_diagonal(x):
    theoretical, _ = tf.test.compute_gradient(lambda v: tf.nn.softplus(-v),
                                              [tf.reshape(x, [-1])])
    return tf.reshape(tf.linalg.diag_part(tf.constant(theoretical[0], x.dtype)), x.shape)


@pytest.mark.parametrize("answer, mistake", [
    (lambda x: tf.sigmoid(-x), "sign_flipped"),
    (lambda x: tf.exp(-x), "forgot_outer_derivative"),
    (lambda x: -tf.sigmoid(x), "inverted_fraction"),
    (lambda x: tf.exp(x) / (1.0 + tf.exp(x)), "derivative_of_softplus"),
    (lambda x: tf.nn.softplus(-x), "value_not_derivative"),
    (lambda x: tf.nn.softplus(-x) * tf.exp(-x), "value_not_derivative"),
    (lambda x: tf.sigmoid(x) * tf.sigmoid(-x), "differentiated_twice"),
    (lambda x: -tf.exp(-x) / tf.square(1.0 + tf.exp(-x)), "quotient_rule_slip"),
    (taped(lambda x: tf.nn.softplus(-x)), "used_tape"),
    (compute_gradient_diagonal, "used_tape"),
    (lambda x: tf.cast(tf.sigmoid(tf.cast(x, tf.float32)) - 1.0, tf.float32),
     "float32_not_float64"),
    (lambda x: tf.sigmoid(x) - tf.constant(1.0), "float32_not_float64"),
    (lambda x: tf.cast(-tf.sigmoid(-tf.cast(x, tf.float32)), x.dtype), "float32_not_float64"),
    (lambda x: tf.fill(tf.shape(x), tf.constant(-0.5, x.dtype)), "hard_coded"),
    (finite_difference_by_tf, "approximation"),
    (lambda x: (tf.nn.softplus(-(x + 1e-3)) - tf.nn.softplus(-x)) / 1e-3, "approximation"),
    (lambda x: tf.sigmoid(tf.abs(x)) - 1.0, "one_tail"),
    (lambda x: -tf.sigmoid(-tf.maximum(x, 0.0)), "clipped"),
    (lambda x: -tf.exp(-x) * (1.0 + tf.exp(-x)) ** -1.5, "wrong_outer_factor"),
    (lambda x: 3.0 * tf.sigmoid(x) - 1.0, "scale_and_offset"),
    (lambda x: (tf.sigmoid(x) - 1.0) * x, "extra_factor"),
    (lambda x: (tf.sigmoid(x) - 1.0).numpy(), "returned_numpy"),
    (lambda x: tf.reduce_sum(tf.sigmoid(x) - 1.0), "wrong_shape"),
])
def test_logistic_derivative_names_the_mistake(answer, mistake):
    assert verdict(check.logistic_derivative, answer) == (Status.WRONG, mistake)


# 1.2 central-difference gradient ---------------------------------------------

def one_coordinate_at_a_time(rule):
    def answer(f, x, h):
        return np.array([rule(f, x, h * e, h) for e in np.eye(len(x))])
    return answer


def central_with_copies(f, x, h):
    gradient = []
    for i in range(len(x)):
        above, below = x.copy(), x.copy()
        above[i] += h
        below[i] -= h
        gradient.append((f(above) - f(below)) / (2 * h))
    return gradient  # a list is fine


def central_in_place_restored(f, x, h):
    gradient = np.empty_like(x)
    for i in range(len(x)):
        kept = x[i]
        x[i] = kept + h
        above = f(x)
        x[i] = kept - h
        below = f(x)
        x[i] = kept
        gradient[i] = (above - below) / (2 * h)
    return gradient


@pytest.mark.parametrize("answer", [
    one_coordinate_at_a_time(lambda f, x, e, h: (f(x + e) - f(x - e)) / (2 * h)),
    central_with_copies,
    central_in_place_restored,
    lambda f, x, h: tf.constant(central_difference(f, x, h)),
], ids=["eye", "copies, list", "in place, restored", "course helper, tensor"])
def test_central_gradient_accepts_equivalent_forms(answer):
    accepted(check.central_gradient, answer)


def in_place_not_restored(f, x, h):
    gradient = np.zeros(len(x))
    for i in range(len(x)):
        x[i] = x[i] + h
        above = f(x)
        x[i] = x[i] - 2 * h
        gradient[i] = (above - f(x)) / (2 * h)
    return gradient


def copies_made_once(f, x, h):
    plus, minus = np.array(x), np.array(x)
    gradient = []
    for i in range(len(x)):
        plus[i] = plus[i] + h
        minus[i] = minus[i] - h
        gradient.append((f(plus) - f(minus)) / (2 * h))
    return np.array(gradient)


def right_but_moves_x(f, x, h):
    gradient = central_with_copies(f, x, h)
    x += 1.0  # the caller's array is not what it was
    return gradient


def one_array_two_names(f, x, h):
    gradient = np.zeros(len(x))
    for i in range(len(x)):
        above = below = x.copy()
        above[i] += h
        below[i] -= h
        gradient[i] = (f(above) - f(below)) / (2 * h)
    return gradient


def integer_step(f, x, h):
    gradient = np.zeros(len(x))
    for i in range(len(x)):
        step = np.zeros(len(x), dtype=int)
        step[i] = h
        gradient[i] = (f(x + step) - f(x - step)) / (2 * h)
    return gradient


@pytest.mark.parametrize("answer, mistake", [
    (one_coordinate_at_a_time(lambda f, x, e, h: (f(x + e) - f(x)) / h),
     "forward_difference"),
    (one_coordinate_at_a_time(lambda f, x, e, h: (f(x) - f(x - e)) / h),
     "backward_difference"),
    (one_coordinate_at_a_time(lambda f, x, e, h: (f(x) - f(x - e)) / (2 * h)),
     "backward_difference"),
    (one_coordinate_at_a_time(lambda f, x, e, h: 0.5 * (f(x + e) - f(x - e)) * h),
     "scale_factor"),
    (one_coordinate_at_a_time(lambda f, x, e, h: (f(x + e) - f(x - e)) / h),
     "missing_half"),
    (one_coordinate_at_a_time(lambda f, x, e, h: (f(x - e) - f(x + e)) / (2 * h)),
     "sign_flipped"),
    (lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h), "perturbed_all"),
    (lambda f, x, h: np.ones_like(x) * (f(x + h) - f(x - h)) / (2 * h), "perturbed_all"),
    (in_place_not_restored, "mutated_input"),
    (right_but_moves_x, "mutated_input"),
    (copies_made_once, "steps_accumulate"),
    (lambda f, x, h: np.array([0.0] + [
        (f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))[1:]]),
     "missed_coordinates"),
    (one_coordinate_at_a_time(lambda f, x, e, h: (
        f(x + e * np.abs(x)) - f(x - e * np.abs(x))) / (2 * h)), "step_not_h"),
    (lambda f, x, h: central_difference(f, x, 1e-5), "approximation"),
    (one_array_two_names, "zeros"),
    (integer_step, "zeros"),
    (lambda f, x, h: [(f(x + h) - f(x - h)) / (2 * h)], "wrong_shape"),
    (lambda f, x, h: f(x[0] + h), "raised"),
])
def test_central_gradient_names_the_mistake(answer, mistake):
    assert verdict(check.central_gradient, answer) == (Status.WRONG, mistake)


# 1.3 the upstream gradient of a mean squared error ---------------------------

@pytest.mark.parametrize("answer", [
    lambda o, t: 2.0 * (o - t) / count(o),
    lambda o, t: (o - t) * (2.0 / tf.cast(tf.reduce_prod(tf.shape(o)), o.dtype)),
    lambda o, t: 2 * (o - t) / np.prod(o.shape.as_list()),
], ids=["tf.size", "reduce_prod of shape", "np.prod"])
def test_upstream_dy_accepts_equivalent_forms(answer):
    accepted(check.upstream_dy, answer)


def upstream_in_float32(o, t):
    o32, t32 = tf.cast(o, tf.float32), tf.cast(t, tf.float32)
    return 2.0 * (o32 - t32) / count(o32)


def dy_by_tape(o, t):
    with tf.GradientTape() as tape:
        tape.watch(o)
        loss = tf.reduce_mean((o - t) ** 2)
    return tape.gradient(loss, o)


@pytest.mark.parametrize("answer, mistake", [
    (lambda o, t: 2.0 * (t - o) / count(o), "sign_flipped"),
    (lambda o, t: 2.0 * (o - t), "sum_not_mean"),
    (lambda o, t: (o - t) / count(o), "scale_factor"),
    (lambda o, t: 2.0 * (o - t) / count(o) / count(o), "scale_factor"),
    (lambda o, t: 2.0 * (o - t) / tf.cast(tf.size(o) - 1, o.dtype), "scale_factor"),
    (lambda o, t: 3.0 * (o - t) ** 2, "value_not_derivative"),
    (lambda o, t: tf.clip_by_value(2.0 * (o - t) / count(o), -0.05, 0.05), "clipped"),
    (lambda o, t: tf.nn.relu(2.0 * (o - t) / count(o)), "masked_entries"),
    (lambda o, t: 2.0 * (o - 0.5 * t) / count(o), "wrong_dy"),
    (lambda o, t: 2.0 * (o - t) / o.shape[0], "mean_over_one_axis"),
    (lambda o, t: 2.0 * o / count(o), "ignored_target"),
    (lambda o, t: 2.0 * tf.sqrt((o - t) ** 2) / count(o), "lost_sign"),
    (lambda o, t: tf.ones_like(o), "dy_of_ones"),
    (lambda o, t: tf.reduce_mean(tf.square(o - t)), "value_not_derivative"),
    (lambda o, t: 2.0 * tf.reduce_mean(o - t) * tf.ones_like(o), "reduced_dy"),
    (dy_by_tape, "used_tape"),
    (lambda o, t: 2.0 * (o - t) / tf.size(o), "integer_mixed_in"),
    (lambda o, t: tf.cast(2.0 * (o - t) / count(o), tf.float32), "float32_not_float64"),
    (lambda o, t: tf.cast(upstream_in_float32(o, t), o.dtype), "float32_not_float64"),
    (lambda o, t: (2.0 * (o - t) / count(o))[..., None], "broadcast_shape"),
])
def test_upstream_dy_names_the_mistake(answer, mistake):
    assert verdict(check.upstream_dy, answer) == (Status.WRONG, mistake)


# 1.4 d(loss)/dx through output_gradients ---------------------------------------

def through_output_gradients(make_dy, output_function=log1pexp):
    def answer(x, target):
        with tf.GradientTape() as tape:
            tape.watch(x)
            output = output_function(x)
        return tape.gradient(output, x, output_gradients=make_dy(output, target, x))
    return answer


def reference_dy(output, target, x):
    return 2.0 * (output - target) / count(output)


@pytest.mark.parametrize("answer", [
    through_output_gradients(reference_dy),
    through_output_gradients(reference_dy, output_function=tf.nn.softplus),
], ids=["log1pexp", "softplus"])
def test_loss_gradient_accepts_the_reference(answer):
    accepted(check.loss_gradient, answer)


def tape_on_the_loss(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_mean((log1pexp(x) - target) ** 2)
    return tape.gradient(loss, x)


def elementwise_loss_with_dy(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = log1pexp(x)
        loss = (output - target) ** 2 / count(output)
    return tape.gradient(loss, x, output_gradients=reference_dy(output, target, x))


def scalar_loss_with_dy(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = log1pexp(x)
        loss = tf.reduce_mean((output - target) ** 2)
    return tape.gradient(loss, x, output_gradients=reference_dy(output, target, x))


def unwatched(x, target):
    with tf.GradientTape() as tape:
        output = log1pexp(x)
    return tape.gradient(output, x, output_gradients=reference_dy(output, target, x))


def with_respect_to_target(x, target):
    with tf.GradientTape() as tape:
        tape.watch(target)
        output = log1pexp(x)
    return tape.gradient(output, target, output_gradients=reference_dy(output, target, x))


def loss_with_trivial_output_gradients(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_mean((log1pexp(x) - target) ** 2)
    return tape.gradient(loss, x, output_gradients=tf.constant(1.0, x.dtype))


def log1pexp_in_float32(x):
    return tf.cast(log1pexp(tf.cast(x, tf.float32)), x.dtype)


def returns_dy(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = log1pexp(x)
    dy = reference_dy(output, target, x)
    tape.gradient(output, x, output_gradients=dy)
    return dy


@pytest.mark.parametrize("answer, mistake", [
    (tape_on_the_loss, "no_output_gradients"),
    (lambda x, t: reference_dy(log1pexp(x), t, x) * tf.sigmoid(x), "no_output_gradients"),
    (through_output_gradients(lambda o, t, x: tf.ones_like(o)), "forgot_upstream"),
    (through_output_gradients(lambda o, t, x: 2.0 * (o - t)), "sum_not_mean"),
    (through_output_gradients(lambda o, t, x: -reference_dy(o, t, x)), "sign_flipped"),
    (through_output_gradients(lambda o, t, x: (o - t) / count(o)), "scale_factor"),
    (through_output_gradients(lambda o, t, x: 2.0 * (x - t) / count(x)), "dy_from_x"),
    (through_output_gradients(lambda o, t, x: tf.abs(reference_dy(o, t, x))), "lost_sign"),
    (through_output_gradients(lambda o, t, x: 2.0 * (o - t) / tf.size(o)),
     "integer_mixed_in"),
    (elementwise_loss_with_dy, "dy_applied_twice"),
    (scalar_loss_with_dy, "output_gradients_shape"),
    (unwatched, "unwatched_constant"),
    (returns_dy, "returned_dy"),
    (lambda x, t: through_output_gradients(reference_dy)(x, t) * tf.sigmoid(x),
     "local_derivative_twice"),
    (with_respect_to_target, "wrong_source"),
    (loss_with_trivial_output_gradients, "no_output_gradients"),
    (lambda x, t: through_output_gradients(reference_dy)(x, t) * x, "extra_factor"),
    (through_output_gradients(lambda o, t, x: reference_dy(o, t, x) + 0.1), "wrong_dy"),
    (through_output_gradients(reference_dy, output_function=log1pexp_in_float32),
     "float32_not_float64"),
])
def test_loss_gradient_names_the_mistake(answer, mistake):
    assert verdict(check.loss_gradient, answer) == (Status.WRONG, mistake)


def test_loss_gradient_hints_are_specific_sentences():
    result = check.loss_gradient.evaluate(
        through_output_gradients(lambda o, t, x: tf.ones_like(o)))
    assert "output_gradients=dy" in result.message and "dy = 1" in result.message
    result = check.loss_gradient.evaluate(tape_on_the_loss)
    assert "without output_gradients" in result.message


# 1.5 a vector-Jacobian product by hand -------------------------------------------

def local(W, x):
    return tf.sigmoid(tf.linalg.matvec(W, x))


@pytest.mark.parametrize("answer", [
    lambda W, x, dy: tf.linalg.matvec(W, dy * local(W, x), transpose_a=True),
    lambda W, x, dy: tf.einsum("i,ij->j", dy * local(W, x), W),
    lambda W, x, dy: tf.reduce_sum(W * (dy * local(W, x))[:, None], axis=0),
], ids=["matvec", "einsum", "broadcast and sum"])
def test_vector_jacobian_product_accepts_equivalent_forms(answer):
    accepted(check.vector_jacobian_product, answer)


def vjp_by_tape(W, x, dy):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softplus(tf.linalg.matvec(W, x))
    return tape.gradient(y, x, output_gradients=dy)


def vjp_by_jacobian(W, x, dy):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softplus(tf.linalg.matvec(W, x))
    return tf.linalg.matvec(tape.jacobian(y, x), dy, transpose_a=True)


@pytest.mark.parametrize("answer, mistake", [
    (vjp_by_tape, "used_tape"),
    (vjp_by_jacobian, "used_tape"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy * local(W, x)), "no_transpose"),
    (lambda W, x, dy: tf.transpose(W) @ (dy * local(W, x)), "raised"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy, transpose_a=True), "forgot_local_derivative"),
    (lambda W, x, dy: tf.linalg.matvec(W, local(W, x), transpose_a=True), "forgot_upstream"),
    (lambda W, x, dy: tf.linalg.matvec(
        W, dy * tf.nn.softplus(tf.linalg.matvec(W, x)), transpose_a=True),
     "value_not_derivative"),
    (lambda W, x, dy: tf.linalg.matvec(
        W, dy * local(W, x) * (1.0 - local(W, x)), transpose_a=True),
     "differentiated_twice"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy, transpose_a=True) * tf.sigmoid(x),
     "local_at_input"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy, transpose_a=True) * local(W, x), "wrong_order"),
    (lambda W, x, dy: tf.reduce_sum(W * (dy * local(W, x))[:, None], axis=1), "wrong_axis"),
    (lambda W, x, dy: tf.reduce_mean(W * (dy * local(W, x))[:, None], axis=0), "mean_not_sum"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy + local(W, x), transpose_a=True),
     "added_not_multiplied"),
    (lambda W, x, dy: tf.linalg.matvec(W, tf.abs(dy) * local(W, x), transpose_a=True),
     "not_linear_in_dy"),
    (lambda W, x, dy: tf.linalg.matvec(
        W, dy * tf.exp(tf.linalg.matvec(W, x)), transpose_a=True), "wrong_local_derivative"),
    (lambda W, x, dy: tf.linalg.matvec(tf.sign(W), dy * local(W, x), transpose_a=True),
     "wrong_jacobian"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy * local(W, x), transpose_a=True) - x,
     "added_term"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy * (1.0 - local(W, x)), transpose_a=True),
     "inverted_fraction"),
    (lambda W, x, dy: tf.linalg.matvec(W, dy * tf.sigmoid(x), transpose_a=True),
     "local_at_input"),
    (lambda W, x, dy: W * local(W, x)[:, None], "returned_jacobian"),
    (lambda W, x, dy: tf.matmul((dy * local(W, x))[None, :], W), "broadcast_shape"),
    (lambda W, x, dy: -tf.linalg.matvec(W, dy * local(W, x), transpose_a=True),
     "sign_flipped"),
    (lambda W, x, dy: tf.cast(tf.linalg.matvec(tf.cast(W, tf.float32), tf.cast(
        dy * local(W, x), tf.float32), transpose_a=True), tf.float32),
     "float32_not_float64"),
])
def test_vector_jacobian_product_names_the_mistake(answer, mistake):
    assert verdict(check.vector_jacobian_product, answer) == (Status.WRONG, mistake)


# Fresh probes: numbers copied from one call fail the next ---------------------

def test_probes_change_from_call_to_call():
    seen = []

    def spy(o, t):
        seen.append(o.numpy().copy())
        return 2.0 * (o - t) / count(o)

    accepted(check.upstream_dy, spy)
    accepted(check.upstream_dy, spy)
    assert not np.array_equal(seen[0], seen[len(seen) // 2])
