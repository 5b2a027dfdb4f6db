"""Lesson 01's checks: each accepts right answers written otherwise than the solution
(nbval runs the solution itself, in strict mode) and names the mistake of wrong ones.

Wrong answers are rows of tables, most of them the solution with one line changed (a
lambda, or a factory such as ``central_with`` and ``loss_gradient_with``). The ``judge``
fixture is in tests/conftest.py; what every check promises whatever its lesson (stubs,
non-functions, answers that raise, malformed return values, strict mode) is tested once
for all in tests/test_checker_contract.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course import gradcheck
from autodiff_course.checks import lesson01 as check
from autodiff_course.gradcheck import central_difference


def rows(table):
    """pytest.param rows named by their mistake, numbered where a mistake repeats."""
    return [pytest.param(*row, id=f"{i}-{row[-1]}") for i, row in enumerate(table)]


def count(tensor):
    return tf.cast(tf.size(tensor), tensor.dtype)


def log1pexp(x):
    return tf.math.log(1.0 + tf.exp(x))


# d f(x)/dx from one tape (method="jacobian": the whole Jacobian): right numbers, by the
# method that the exercises done by hand forbid.
def by_tape(f, x, method="gradient", **options):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return getattr(tape, method)(y, x, **options)


def cached_per_shape(answer):
    """``answer`` with its first result per input shape remembered: right on every probe
    of a new shape, wrong for new values of a shape it has seen."""
    seen = {}

    def cached(*args):
        key = tuple(tuple(np.shape(a)) for a in args if hasattr(a, "shape"))
        if key not in seen:
            seen[key] = answer(*args)
        return seen[key]

    return cached


# 1.1 the derivative of the logistic loss by hand ---------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        lambda x: -tf.exp(-x) / (1.0 + tf.exp(-x)),
        lambda x: -tf.sigmoid(-x),
        lambda x: -1.0 / (1.0 + tf.exp(x)),
    ],
    ids=["the product", "minus sigmoid of -x", "1/(1+e^x)"],
)
def test_logistic_derivative_accepts_equivalent_forms(judge, answer):
    judge(check.logistic_derivative, answer)


def by_graph_gradients(f, x, grad_ys=None):
    """tf.gradients inside a tf.function: automatic differentiation in graph mode."""

    @tf.function
    def graph(x):
        return tf.gradients(f(x), x, grad_ys=grad_ys)[0]

    return graph(x)


def compute_gradient_diagonal(x):
    theoretical, _ = tf.test.compute_gradient(lambda v: tf.nn.softplus(-v), [tf.reshape(x, [-1])])
    return tf.reshape(tf.linalg.diag_part(tf.constant(theoretical[0], x.dtype)), x.shape)


def central_with_a_tensor_step(x):
    step = tf.constant(1e-4, x.dtype)
    return (tf.nn.softplus(-x - step) - tf.nn.softplus(step - x)) / (2 * step)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            # one factor of the chain rule wrong, or the function itself
            (lambda x: tf.sigmoid(-x), "sign_flipped"),
            (lambda x: tf.exp(-x), "forgot_outer_derivative"),
            (lambda x: -tf.sigmoid(x), "inverted_fraction"),
            (lambda x: -tf.exp(x) / (1.0 + tf.exp(x)), "inverted_fraction"),  # e^x throughout
            (lambda x: tf.exp(x) / (1.0 + tf.exp(x)), "derivative_of_softplus"),
            (lambda x: tf.nn.softplus(-x), "value_not_derivative"),
            (lambda x: tf.nn.softplus(-x) * tf.exp(-x), "value_not_derivative"),
            (lambda x: tf.sigmoid(x) * tf.sigmoid(-x), "differentiated_twice"),
            (lambda x: -tf.exp(-x) / tf.square(1.0 + tf.exp(-x)), "quotient_rule_slip"),
            (lambda x: -tf.exp(-x) * (1.0 + tf.exp(-x)) ** -1.5, "wrong_outer_factor"),
            (lambda x: -tf.exp(x) / (1.0 + tf.exp(-x)), "wrong_outer_factor"),  # e^x on top
            (lambda x: -math.exp(-float(x)) / (1.0 + math.exp(-float(x))), "python_scalar"),
            # the method: by hand, not by a tape
            (lambda x: by_tape(lambda v: tf.nn.softplus(-v), x), "used_tape"),
            (compute_gradient_diagonal, "used_tape"),
            (lambda x: by_graph_gradients(lambda v: tf.nn.softplus(-v), x), "used_tape"),
            # float64 in, float64 out and precision
            (
                lambda x: tf.cast(-tf.sigmoid(-tf.cast(x, tf.float32)), tf.float32),
                "float32_not_float64",
            ),
            (lambda x: -tf.sigmoid(-x) * tf.constant(1.0), "float32_not_float64"),
            (
                lambda x: tf.cast(-tf.sigmoid(-tf.cast(x, tf.float32)), x.dtype),
                "float32_not_float64",
            ),
            (
                lambda x: (tf.nn.softplus(-(x + 1e-3)) - tf.nn.softplus(-(x - 1e-3))) / 2e-3,
                "finite_differences",
            ),
            (
                lambda x: (tf.nn.softplus(-(x + 1e-3)) - tf.nn.softplus(-x)) / 1e-3,
                "finite_differences",
            ),
            (central_with_a_tensor_step, "finite_differences"),  # -x - h, h - x
            # the generic patterns
            (lambda x: tf.fill(tf.shape(x), tf.constant(-0.5, x.dtype)), "hard_coded"),
            (lambda x: -tf.sigmoid(-tf.abs(x)), "one_tail"),
            (lambda x: -tf.sigmoid(-tf.maximum(x, 0.0)), "clipped"),
            (lambda x: -1.0 / (1.0 + tf.exp(tf.clip_by_value(x, -20.0, 20.0))), "clipped_input"),
            (lambda x: -1.0 / (1.0 + tf.exp(tf.clip_by_value(x, -80.0, 80.0))), "clipped_input"),
            (lambda x: 3.0 * tf.sigmoid(x) - 1.0, "scale_and_offset"),
            (lambda x: -tf.sigmoid(-x) * x, "extra_factor"),
            (lambda x: (-tf.sigmoid(-x)).numpy(), "returned_numpy"),
            (lambda x: tf.reduce_sum(-tf.sigmoid(-x)), "wrong_shape"),
            # the right formula, but as a difference of numbers near 1: the tail cancels
            (lambda x: tf.sigmoid(x) - 1.0, "cancellation"),
            (lambda x: 1.0 / (1.0 + tf.exp(-x)) - 1.0, "cancellation"),
            # size-1 axes, and state kept between calls
            (lambda x: tf.squeeze(-tf.sigmoid(-x)), "broadcast_shape"),
            (cached_per_shape(lambda x: -tf.sigmoid(-x)), "keeps_state"),
        ]
    ),
)
def test_logistic_derivative_names_the_mistake(judge, answer, mistake):
    judge(check.logistic_derivative, answer, mistake)


# 1.2 central-difference gradient ---------------------------------------------


def central(f, x, s, h):
    return (f(x + s) - f(x - s)) / (2 * h)


def central_with(rule=central, step=np.zeros_like, result=np.zeros_like):
    """The solution of 1.2 with its difference line ``rule(f, x, step, h)`` or the
    making of its step or result array changed."""

    def answer(f, x, h):
        gradient = result(x)
        for i in range(x.size):
            s = step(x)
            s[i] = h
            gradient[i] = rule(f, x, s, h)
        return gradient

    return answer


def central_with_copies(f, x, h):
    gradient = []
    for i in range(len(x)):
        above, below = x.copy(), x.copy()
        above[i] += h
        below[i] -= h
        gradient.append((f(above) - f(below)) / (2 * h))
    return np.array(gradient)


def central_as_list(f, x, h):
    return list(central_with_copies(f, x, h))


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


@pytest.mark.parametrize(
    "answer",
    [
        lambda f, x, h: np.array([central(f, x, h * e, h) for e in np.eye(len(x))]),
        central_with_copies,
        central_in_place_restored,
    ],
    ids=["eye", "copies", "in place, restored"],
)
def test_central_gradient_accepts_equivalent_forms(judge, answer):
    judge(check.central_gradient, answer)


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
    gradient = central_as_list(f, x, h)
    x += 1.0  # the caller's array is not what it was
    return gradient


def central_with_step(step):
    """The central difference with its own fixed step, whatever h says."""
    return central_with(lambda f, x, s, h: (f(x + s * step / h) - f(x - s * step / h)) / (2 * step))


def relative_step(f, x, h):
    """A step scaled to the coordinate, as scipy does, instead of the h given."""
    gradient = np.zeros_like(x)
    for i in range(len(x)):
        s = np.zeros_like(x)
        s[i] = h * max(1.0, abs(x[i]))
        gradient[i] = (f(x + s) - f(x - s)) / (2 * s[i])
    return gradient


def at_whole_numbers(f, x, h):
    gradient = np.zeros(len(x))
    for i in range(len(x)):
        above, below = x.astype(int) + 0.0, x.astype(int) + 0.0
        above[i] += h
        below[i] -= h
        gradient[i] = (f(above) - f(below)) / (2 * h)
    return gradient


def float32_copies(f, x, h):
    gradient = np.zeros_like(x)
    for i in range(len(x)):
        above, below = x.astype(np.float32), x.astype(np.float32)
        above[i] += h
        below[i] -= h
        gradient[i] = (f(above) - f(below)) / (2 * h)
    return gradient


def remembered_per_length(f, x, h, _seen={}):  # noqa: B006 - the state is the mistake
    if (len(x), h) not in _seen:
        _seen[(len(x), h)] = central_with_copies(f, x, h)
    return _seen[(len(x), h)]


def one_array_two_names(f, x, h):
    gradient = np.zeros(len(x))
    for i in range(len(x)):
        above = below = x.copy()
        above[i] += h
        below[i] -= h
        gradient[i] = (f(above) - f(below)) / (2 * h)
    return gradient


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            (central_with(lambda f, x, s, h: (f(x + s) - f(x)) / h), "forward_difference"),
            (central_with(lambda f, x, s, h: (f(x) - f(x - s)) / h), "backward_difference"),
            (central_with(lambda f, x, s, h: (f(x) - f(x - s)) / (2 * h)), "backward_difference"),
            (central_with(lambda f, x, s, h: 0.5 * (f(x + s) - f(x - s)) * h), "scale_factor"),
            (central_with(lambda f, x, s, h: (f(x + s) - f(x - s)) / h), "missing_half"),
            (central_with(lambda f, x, s, h: (f(x - s) - f(x + s)) / (2 * h)), "sign_flipped"),
            (
                central_with(
                    lambda f, x, s, h: (f(x + s * np.abs(x)) - f(x - s * np.abs(x))) / (2 * h)
                ),
                "step_not_h",
            ),
            (
                central_with(lambda f, x, s, h: (f(x + 2 * s) - f(x - 2 * s)) / (2 * h)),
                "step_not_h",
            ),
            (central_with(lambda f, x, s, h: (f(x + s / 2) - f(x - s / 2)) / h), "step_not_h"),
            (central_with(step=lambda x: np.zeros(len(x), dtype=int)), "zeros"),
            (one_array_two_names, "zeros"),
            (lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h), "perturbed_all"),
            (lambda f, x, h: np.ones_like(x) * (f(x + h) - f(x - h)) / (2 * h), "perturbed_all"),
            (in_place_not_restored, "mutated_input"),
            (right_but_moves_x, "mutated_input"),
            (copies_made_once, "steps_accumulate"),
            (
                lambda f, x, h: np.array(
                    [0.0] + [central(f, x, h * e, h) for e in np.eye(len(x))[1:]]
                ),
                "missed_coordinates",
            ),
            (central_with_step(1e-5), "own_step"),
            (relative_step, "own_step"),
            (at_whole_numbers, "wrong_point"),
            (lambda f, x, h: central_with_copies(f, np.round(x), h), "wrong_point"),
            (float32_copies, "float32_not_float64"),
            (lambda f, x, h: [(f(x + h) - f(x - h)) / (2 * h)], "wrong_shape"),
            (lambda f, x, h: f(x[0] + h), "raised"),
            # what the text asks for: an array, and the difference written out
            (central_as_list, "returned_list"),
            (lambda f, x, h: tuple(central_with_copies(f, x, h)), "returned_list"),
            (lambda f, x, h: tf.constant(central_with_copies(f, x, h)), "wrong_type"),
            (lambda f, x, h: central_difference(f, x, h), "used_course_helper"),
            (lambda f, x, h: gradcheck.central_jacobian(f, x, h), "used_course_helper"),
            # a step of its own is named first; the helper is named once the step is h
            (lambda f, x, h: tf.constant(central_difference(f, x, 1e-5)), "own_step"),
            # size-1 axes, and state kept between calls
            (lambda f, x, h: np.squeeze(central_with_copies(f, x, h)), "broadcast_shape"),
            (remembered_per_length, "keeps_state"),
        ]
    ),
)
def test_central_gradient_names_the_mistake(judge, answer, mistake):
    judge(check.central_gradient, answer, mistake)


# 1.3 the upstream gradient of a mean squared error ---------------------------


@pytest.mark.parametrize(
    "answer",
    [
        lambda o, t: (o - t) * (2.0 / tf.cast(tf.reduce_prod(tf.shape(o)), o.dtype)),
        lambda o, t: 2 * (o - t) / np.prod(o.shape.as_list()),
    ],
    ids=["reduce_prod of shape", "np.prod"],
)
def test_upstream_dy_accepts_equivalent_forms(judge, answer):
    judge(check.upstream_dy, answer)


def test_upstream_dy_probes_change_from_call_to_call(judge):
    seen = []

    def spy(o, t):
        seen.append(o.numpy().copy())
        return 2.0 * (o - t) / count(o)

    judge(check.upstream_dy, spy, runs=2)
    assert not np.array_equal(seen[0], seen[len(seen) // 2])


def upstream_in_float32(o, t):
    o32, t32 = tf.cast(o, tf.float32), tf.cast(t, tf.float32)
    return 2.0 * (o32 - t32) / count(o32)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            (lambda o, t: 2.0 * (t - o) / count(o), "sign_flipped"),
            (lambda o, t: 2.0 * (o - t), "sum_not_mean"),
            (lambda o, t: (o - t) / count(o), "scale_factor"),
            (lambda o, t: 2.0 * (o - t) / count(o) / count(o), "scale_factor"),
            (lambda o, t: 2.0 * (o - t) / tf.cast(tf.size(o) - 1, o.dtype), "n_minus_one"),
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
            (lambda o, t: 2.0 * tf.reduce_mean((o - t) ** 2) * tf.ones_like(o), "reduced_dy"),
            (lambda o, t: by_tape(lambda o: tf.reduce_mean((o - t) ** 2), o), "used_tape"),
            (
                lambda o, t: by_graph_gradients(lambda o: tf.reduce_mean((o - t) ** 2), o),
                "used_tape",
            ),
            (lambda o, t: 2.0 * (o - t) / tf.size(o), "integer_mixed_in"),
            (lambda o, t: tf.cast(2.0 * (o - t) / count(o), tf.float32), "float32_not_float64"),
            (lambda o, t: tf.cast(upstream_in_float32(o, t), o.dtype), "float32_not_float64"),
            (lambda o, t: (2.0 * (o - t) / count(o))[..., None], "broadcast_shape"),
            # size-1 axes and a batch of one, and state kept between calls
            (lambda o, t: tf.squeeze(2.0 * (o - t) / count(o)), "broadcast_shape"),
            (lambda o, t: 2.0 * (o - t) / o.shape[-1], "mean_over_one_axis"),
            (cached_per_shape(lambda o, t: 2.0 * (o - t) / count(o)), "keeps_state"),
        ]
    ),
)
def test_upstream_dy_names_the_mistake(judge, answer, mistake):
    judge(check.upstream_dy, answer, mistake)


# 1.4 d(loss)/dx through output_gradients ---------------------------------------


def reference_dy(output, target, x):
    return 2.0 * (output - target) / count(output)


def mean_squared_error(output, target):
    return tf.reduce_mean((output - target) ** 2)


def loss_gradient_with(
    dy=reference_dy, *, output=log1pexp, recorded=None, watch="x", source="x", returns_dy=False
):
    """The solution of 1.4 with one line changed: ``dy(output, target, x)`` (None: no
    output_gradients), the ``output`` function, what the tape records after the output
    (``recorded(output, target)``), what it watches, the source, or what is returned."""

    def answer(x, target):
        named = {"x": x, "target": target}
        with tf.GradientTape() as tape:
            if watch:
                tape.watch(named[watch])
            out = output(x)
            differentiated = out if recorded is None else recorded(out, target)
        upstream = None if dy is None else dy(out, target, x)
        gradient = tape.gradient(differentiated, named[source], output_gradients=upstream)
        return upstream if returns_dy else gradient

    return answer


def dy_inside_the_block(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = tf.nn.softplus(x)
        dy = reference_dy(output, target, x)  # recorded, but never differentiated
    return tape.gradient(output, x, output_gradients=dy)


@pytest.mark.parametrize(
    "answer",
    [loss_gradient_with(output=tf.nn.softplus), dy_inside_the_block],
    ids=["softplus", "dy computed inside the block"],
)
def test_loss_gradient_accepts_equivalent_forms(judge, answer):
    judge(check.loss_gradient, answer)


def dy_by_tape(total=tf.reduce_mean, after=lambda dy, output: dy, same_tape=False):
    """dy = d(loss)/d(output) from a tape (a second one, or the output's own persistent
    tape that recorded the loss too), with ``total`` the loss's reduction and ``after``
    what is done to it by hand."""

    def answer(x, target):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            output = log1pexp(x)
            if same_tape:
                loss = total((output - target) ** 2)
        if not same_tape:
            with tf.GradientTape() as second:
                second.watch(output)
                loss = total((output - target) ** 2)
        dy = (tape if same_tape else second).gradient(loss, output)
        return tape.gradient(output, x, output_gradients=after(dy, output))

    return answer


def ones_then_dy(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = log1pexp(x)
    ones = tf.ones_like(output)
    return tape.gradient(output, x, output_gradients=ones) * reference_dy(output, target, x)


def tape_result_thrown_away(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = log1pexp(x)
    dy = reference_dy(output, target, x)
    tape.gradient(output, x, output_gradients=dy)
    return dy * tf.sigmoid(x)


def dy_times_the_jacobian(x, target):
    with tf.GradientTape() as tape:
        tape.watch(x)
        output = log1pexp(x)
    jacobian = tape.jacobian(output, x)
    return tf.tensordot(reference_dy(output, target, x), jacobian, axes=len(x.shape))


def log1pexp_in_float32(x):
    return tf.cast(log1pexp(tf.cast(x, tf.float32)), x.dtype)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            # the method: dy passed as output_gradients, at the output
            (loss_gradient_with(None, recorded=mean_squared_error), "no_output_gradients"),
            (lambda x, t: reference_dy(log1pexp(x), t, x) * tf.sigmoid(x), "no_output_gradients"),
            (
                loss_gradient_with(
                    lambda o, t, x: tf.constant(1.0, x.dtype), recorded=mean_squared_error
                ),
                "no_output_gradients",
            ),
            (loss_gradient_with(recorded=lambda o, t: (o - t) ** 2 / count(o)), "dy_applied_twice"),
            (loss_gradient_with(recorded=mean_squared_error), "upstream_shape"),
            (loss_gradient_with(watch=None), "unwatched_constant"),
            (loss_gradient_with(watch="target", source="target"), "wrong_source"),
            (loss_gradient_with(returns_dy=True), "returned_dy"),
            (lambda x, t: loss_gradient_with()(x, t) * tf.sigmoid(x), "local_derivative_twice"),
            # the upstream gradient dy itself
            (loss_gradient_with(lambda o, t, x: tf.ones_like(o)), "forgot_upstream"),
            (loss_gradient_with(lambda o, t, x: 2.0 * (o - t)), "sum_not_mean"),
            (loss_gradient_with(lambda o, t, x: -reference_dy(o, t, x)), "sign_flipped"),
            (loss_gradient_with(lambda o, t, x: (o - t) / count(o)), "scale_factor"),
            (loss_gradient_with(lambda o, t, x: 2.0 * (x - t) / count(x)), "dy_from_x"),
            (loss_gradient_with(lambda o, t, x: tf.abs(reference_dy(o, t, x))), "lost_sign"),
            (loss_gradient_with(lambda o, t, x: 2.0 * (o - t) / tf.size(o)), "integer_mixed_in"),
            (loss_gradient_with(lambda o, t, x: reference_dy(o, t, x) + 0.1), "wrong_dy"),
            (lambda x, t: loss_gradient_with()(x, t) / count(x), "scale_factor"),  # N twice
            (  # one number for every element: 2 * loss
                loss_gradient_with(lambda o, t, x: 2.0 * mean_squared_error(o, t) + 0.0 * o),
                "reduced_dy",
            ),
            (lambda x, t: loss_gradient_with()(x, t) * x, "extra_factor"),
            (loss_gradient_with(output=log1pexp_in_float32), "float32_not_float64"),
            # dy by hand: not from another tape, not ones with dy multiplied in afterwards
            (dy_by_tape(), "used_tape"),
            (dy_by_tape(same_tape=True), "used_tape"),
            (dy_by_tape(tf.reduce_sum, lambda dy, o: dy / count(o)), "used_tape"),
            (dy_by_tape(after=lambda dy, o: tf.identity(1.0 * dy)), "used_tape"),
            (ones_then_dy, "no_output_gradients"),
            (tape_result_thrown_away, "no_output_gradients"),
            # size-1 axes and a batch of one, and state kept between calls
            (lambda x, t: tf.squeeze(loss_gradient_with()(x, t)), "broadcast_shape"),
            (loss_gradient_with(lambda o, t, x: 2.0 * (o - t) / o.shape[0]), "mean_over_one_axis"),
            (cached_per_shape(loss_gradient_with()), "keeps_state"),
        ]
    ),
)
def test_loss_gradient_names_the_mistake(judge, answer, mistake):
    judge(check.loss_gradient, answer, mistake)


@pytest.mark.parametrize(
    "answer, words, mistake",
    rows(
        [
            (
                loss_gradient_with(lambda o, t, x: tf.ones_like(o)),
                ["output_gradients=dy", "dy = 1"],
                "forgot_upstream",
            ),
            (
                loss_gradient_with(None, recorded=mean_squared_error),
                ["without output_gradients"],
                "no_output_gradients",
            ),
            (
                dy_times_the_jacobian,
                ["tape.jacobian", "without ever forming"],
                "no_output_gradients",
            ),
        ]
    ),
)
def test_loss_gradient_hints_are_specific_sentences(judge, answer, words, mistake):
    message = judge(check.loss_gradient, answer, mistake).message
    assert all(word in message for word in words), message


# 1.5 a vector-Jacobian product by hand -------------------------------------------


def local(W, x):
    return tf.sigmoid(tf.linalg.matvec(W, x))


@pytest.mark.parametrize(
    "answer",
    [
        lambda W, x, dy: tf.einsum("i,ij->j", dy * local(W, x), W),
        lambda W, x, dy: tf.reduce_sum(W * (dy * local(W, x))[:, None], axis=0),
    ],
    ids=["einsum", "broadcast and sum"],
)
def test_vector_jacobian_product_accepts_equivalent_forms(judge, answer):
    judge(check.vector_jacobian_product, answer)


def back_through_w(W, u):
    return tf.linalg.matvec(W, u, transpose_a=True)


def softplus_of_wx(W):
    return lambda x: tf.nn.softplus(tf.linalg.matvec(W, x))


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            # the method: by hand, not by a tape
            (lambda W, x, dy: by_tape(softplus_of_wx(W), x, output_gradients=dy), "used_tape"),
            (lambda W, x, dy: by_graph_gradients(softplus_of_wx(W), x, dy), "used_tape"),
            (
                lambda W, x, dy: back_through_w(by_tape(softplus_of_wx(W), x, "jacobian"), dy),
                "used_tape",
            ),
            # back through W: transposed, in order, along the right axis
            (lambda W, x, dy: tf.linalg.matvec(W, dy * local(W, x)), "no_transpose"),
            (lambda W, x, dy: tf.transpose(W) @ (dy * local(W, x)), "raised"),
            (lambda W, x, dy: back_through_w(W, dy) * local(W, x), "wrong_order"),
            (lambda W, x, dy: back_through_w(W, local(W, x)) * dy, "wrong_order"),  # dy after
            (lambda W, x, dy: tf.reduce_sum(W * (dy * local(W, x))[:, None], axis=1), "wrong_axis"),
            (
                lambda W, x, dy: tf.reduce_mean(W * (dy * local(W, x))[:, None], axis=0),
                "mean_not_sum",
            ),
            (lambda W, x, dy: W * local(W, x)[:, None], "returned_jacobian"),
            (lambda W, x, dy: tf.matmul((dy * local(W, x))[None, :], W), "broadcast_shape"),
            (lambda W, x, dy: back_through_w(tf.sign(W), dy * local(W, x)), "wrong_jacobian"),
            # the local derivative and dy
            (lambda W, x, dy: back_through_w(W, dy), "forgot_local_derivative"),
            (lambda W, x, dy: back_through_w(W, local(W, x)), "forgot_upstream"),
            (
                lambda W, x, dy: back_through_w(W, dy * tf.nn.softplus(tf.linalg.matvec(W, x))),
                "value_not_derivative",
            ),
            (
                lambda W, x, dy: back_through_w(W, dy * local(W, x) * (1.0 - local(W, x))),
                "differentiated_twice",
            ),
            (lambda W, x, dy: back_through_w(W, dy) * tf.sigmoid(x), "local_at_input"),
            (lambda W, x, dy: back_through_w(W, dy * tf.sigmoid(x)), "local_at_input"),
            (lambda W, x, dy: back_through_w(W, dy + local(W, x)), "added_not_multiplied"),
            (
                lambda W, x, dy: tf.reduce_sum(dy * local(W, x)) * tf.reduce_mean(W, axis=0),
                "reduced_dy",
            ),
            (lambda W, x, dy: tf.reduce_mean(dy) * back_through_w(W, local(W, x)), "reduced_dy"),
            (lambda W, x, dy: back_through_w(W, tf.abs(dy) * local(W, x)), "upstream_not_linear"),
            (
                lambda W, x, dy: back_through_w(W, dy * tf.exp(tf.linalg.matvec(W, x))),
                "wrong_local_derivative",
            ),
            (lambda W, x, dy: back_through_w(W, dy * (1.0 - local(W, x))), "inverted_fraction"),
            (lambda W, x, dy: back_through_w(W, dy * local(-W, x)), "inverted_fraction"),
            (  # J dy with J built right: the product from the wrong side
                lambda W, x, dy: tf.linalg.matvec(local(W, x)[:, None] * W, dy),
                "no_transpose",
            ),
            # the generic patterns
            (lambda W, x, dy: back_through_w(W, dy * local(W, x)) - x, "added_term"),
            (lambda W, x, dy: -back_through_w(W, dy * local(W, x)), "sign_flipped"),
            (
                lambda W, x, dy: tf.cast(
                    back_through_w(tf.cast(W, tf.float32), tf.cast(dy * local(W, x), tf.float32)),
                    tf.float32,
                ),
                "float32_not_float64",
            ),
            # one output or one input (size-1 axes), and state kept between calls
            (lambda W, x, dy: tf.squeeze(back_through_w(W, dy * local(W, x))), "broadcast_shape"),
            (lambda W, x, dy: dy * local(W, x), "forgot_matrix"),
            (cached_per_shape(lambda W, x, dy: back_through_w(W, dy * local(W, x))), "keeps_state"),
        ]
    ),
)
def test_vector_jacobian_product_names_the_mistake(judge, answer, mistake):
    judge(check.vector_jacobian_product, answer, mistake)


# the cause named in words ----------------------------------------------------------


@pytest.mark.parametrize(
    "checker, answer, mistake, words",
    [
        (check.logistic_derivative, lambda x: tf.sigmoid(x) - 1.0, "cancellation", ["x = 87"]),
        (check.central_gradient, central_with_step(1e-5), "own_step", ["a step of 1e-05"]),
        (check.central_gradient, relative_step, "own_step", ["h * max(1, |x[i]|)"]),
        (check.central_gradient, at_whole_numbers, "wrong_point", ["truncated"]),
        (check.central_gradient, float32_copies, "float32_not_float64", ["float32"]),
        (
            check.central_gradient,
            central_with(result=lambda x: np.zeros(len(x), dtype=int)),
            "integer_result",
            ["integer dtype", "truncated"],
        ),
        (
            check.vector_jacobian_product,
            lambda W, x, dy: back_through_w(
                W, dy * tf.sigmoid(tf.nn.softplus(tf.linalg.matvec(W, x)))
            ),
            "local_at_input",
            ["at the output y"],
        ),
        (
            check.vector_jacobian_product,
            lambda W, x, dy: tf.reduce_sum(dy * local(W, x)) * x,
            "wrong_jacobian",
            ["x is the Jacobian of W x with respect to W"],
        ),
    ],
)
def test_mistakes_are_named_with_their_cause(judge, checker, answer, mistake, words):
    message = judge(checker, answer, mistake).message
    assert all(word in message for word in words), message
