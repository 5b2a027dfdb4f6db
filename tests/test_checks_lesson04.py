"""Lesson 04's checks: each accepts right answers written otherwise than the solution
(nbval runs the solution itself, in strict mode) and names the mistake of wrong ones,
method violations included.

The nested-tape answers of 4.1, 4.2 and 4.4 are the solutions laid out by one factory,
``nested``, with one keyword changed; the custom rules of 4.3 are ``(forward,
backward)`` rows built by the ``custom_gradient`` fixture. The ``judge`` fixture is in
tests/conftest.py; what every check promises whatever its lesson (stubs, non-callables,
raising or malformed answers, strict mode) is tested once for all in
tests/test_checker_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checks import lesson04 as check
from autodiff_course.reference import lesson04 as reference

ZERO = tf.UnconnectedGradients.ZERO
SOURCE = "source"


def rows(table):
    """pytest.param rows named by their mistake, numbered where a mistake repeats."""
    return [pytest.param(*row, id=f"{i}-{row[-1]}") for i, row in enumerate(table)]


def nested(
    f,
    *inputs,
    inner=0,
    outer=0,
    watch=SOURCE,
    watch_inner=True,
    inside=True,
    target=lambda first: first,
    target_inside=True,
    method="gradient",
    **options,
):
    """The solutions' two nested tapes, laid out the ways learners lay them out.

    Returns ``(first, second)``: the inner tape differentiates ``f(*inputs)`` with
    respect to ``inputs[inner]`` (watched unless ``watch_inner`` is False); the outer
    one differentiates ``target(first)`` with respect to ``inputs[outer]`` by
    ``method`` ("gradient" or "jacobian") with ``options``, watching ``inputs[watch]``
    (its own source by default, nothing for None). ``inside=False`` computes ``first``
    after the outer block, ``target_inside=False`` only the target.
    """
    outer_tape = tf.GradientTape()
    with outer_tape:
        if watch is not None:
            outer_tape.watch(inputs[outer if watch == SOURCE else watch])
        with tf.GradientTape() as inner_tape:
            if watch_inner:
                inner_tape.watch(inputs[inner])
            y = f(*inputs)
        if inside:
            first = inner_tape.gradient(y, inputs[inner])
            if target_inside:
                differentiated = target(first)
    if not inside:
        first = inner_tape.gradient(y, inputs[inner])
    if not (inside and target_inside):
        differentiated = target(first)
    return first, getattr(outer_tape, method)(differentiated, inputs[outer], **options)


# d f(x)/dx from one tape: a first derivative, for the answers that do not nest tapes.
def by_tape(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


# --------------------------------------------------------------------------
# 4.1 one Newton step


def newton(f, x, **changes):
    first, second = nested(f, x, **changes)
    return x - first / second


def test_newton_accepts_another_form(judge):
    judge(check.newton_step, lambda f, x: tf.math.subtract(x, tf.math.divide(*nested(f, x))))


def newton_finite_differences(f, x):
    step = 1e-3
    first = (f(x + step) - f(x - step)) / (2 * step)
    second = (f(x + step) - 2 * f(x) + f(x - step)) / step**2
    return x - first / second


def newton_two_separate_tapes(f, x):
    first, step = by_tape(f, x), 1e-4
    second = (by_tape(f, x + step) - by_tape(f, x - step)) / (2 * step)
    return x - first / second


def newton_jacobian(f, x):
    first, hessian = nested(f, x, method="jacobian")
    return x - first / tf.linalg.diag_part(hessian)


def newton_until_converged(f, x):
    for _ in range(30):
        x = newton(f, x)
    return x


def newton_three_steps(f, x):  # from |x| >= 0.5, still far from the minimum (five may not be)
    for _ in range(3):
        x = newton(f, x)
    return x


def newton_abs_curvature(f, x):
    first, second = nested(f, x)
    return x - first / tf.abs(second)


def newton_outer_repeats_f(f, x):
    outer = tf.GradientTape()
    with outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        slope = inner.gradient(y, x)
    return x - slope / outer.gradient(y, x)


def cached(solution):
    """The solution, but remembering its result for each kind of input (shape, dtype and
    the function): right for every probe the first time, wrong for new values."""
    seen = {}

    def answer(*args):
        key = [(tuple(a.shape), a.dtype.name) if hasattr(a, "shape") else id(a) for a in args]
        key = tuple(key)
        if key not in seen:
            seen[key] = solution(*args)
        return seen[key]

    return answer


def newton_regularised(f, x):
    first, second = nested(f, x)
    return x - first / (second + 1e-8)


def newton_target_after_block(f, x):
    first, doubled = nested(f, x, target=lambda first: 2.0 * first, target_inside=False)
    return x - first / (0.5 * doubled)


@pytest.mark.parametrize(
    "answer, words, mistake",
    rows(
        [
            # the tapes: a None, or no nesting at all
            (
                lambda f, x: x - tf.math.divide_no_nan(*nested(f, x, inside=False)),
                ["outer tape's `with` block"],
                "gradient_outside_tape",
            ),
            (lambda f, x: newton(f, x, watch=None), ["outer.watch"], "outer_not_watching"),
            (
                lambda f, x: newton(f, x, inside=False, unconnected_gradients=ZERO),
                ["unconnected_gradients=ZERO", "after the outer tape's"],
                "zeros_hide_none",
            ),
            (lambda f, x: newton(f, x, watch_inner=False), ["tape.watch"], "unwatched_constant"),
            (
                newton_finite_differences,
                ["x + 0.001", "asks for nested tapes"],
                "finite_differences",
            ),
            (
                newton_two_separate_tapes,
                ["x + 0.0001", "tape's first derivatives"],
                "finite_differences",
            ),
            (newton_jacobian, ["diagonal"], "used_jacobian"),
            (
                newton_target_after_block,
                ["after the tape's `with` block had closed"],
                "computed_outside_tape",
            ),
            (
                lambda f, x: x - tf.math.multiply(*nested(f, x)),
                ["computed f'(x) and f''(x) correctly"],
                "wrong_combination",
            ),
            # the formula of the step
            (lambda f, x: newton(f, tf.cast(x, tf.float32)), [], "float32_not_float64"),
            (lambda f, x: x + tf.math.divide(*nested(f, x)), [], "newton_uphill"),
            (lambda f, x: x - nested(f, x)[1] / nested(f, x)[0], [], "newton_ratio_inverted"),
            (lambda f, x: tf.math.divide(*nested(f, x)), [], "newton_step_only"),
            (lambda f, x: x - f(x) / nested(f, x)[0], [], "newton_root_finding"),
            (lambda f, x: x - nested(f, x)[0], [], "gradient_descent_step"),
            (lambda f, x: nested(f, x)[1], [], "second_not_newton"),
            (
                lambda f, x: tf.cast(newton(f, tf.cast(x, tf.float32)), x.dtype),
                ["float32's digits"],
                "float32_not_float64",
            ),
            # seven numbers typed in, where the probe has three: a size typed in
            (lambda f, x: tf.constant([0.1, -0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), [], "hard_coded_size"),
            # a loop that converged returned the minimum, zeros: no path was cut
            (newton_until_converged, ["repeated the step"], "newton_iterated"),
            (newton_three_steps, ["after 3 Newton steps", "one step"], "newton_iterated"),
            (newton_abs_curvature, ["|f''(x)|", "f''(x) < 0"], "newton_abs_curvature"),
            (
                lambda f, x: x - 0.5 * tf.math.divide(*nested(f, x)),
                ["scaled by 0.5", "damping"],
                "newton_damped",
            ),
            (newton_regularised, ["f''(x) + 1e-08"], "eps_in_denominator"),
            (newton_outer_repeats_f, ["outer tape differentiated a result"], "wrong_target"),
            # size-1 axes, and state kept between calls
            (
                lambda f, x: tf.squeeze(newton(f, x)),
                ["axis of size 1 was dropped"],
                "broadcast_shape",
            ),
            (cached(newton), ["keeps state"], "keeps_state"),
        ]
    ),
)
def test_newton_mistakes(judge, answer, words, mistake):
    message = judge(check.newton_step, answer, mistake).message
    assert all(word in message for word in words), message


def test_the_target_outside_hint_of_4_1_does_not_speak_of_v(judge):
    message = judge(check.newton_step, newton_target_after_block, "computed_outside_tape").message
    assert "product with v" not in message


# --------------------------------------------------------------------------
# 4.2 mixed partial


def mixed(f, x, y, zero=True, **changes):
    """The solution of 4.2 laid out by ``nested``: the outer tape differentiates with
    respect to y, with ``unconnected_gradients=ZERO`` unless ``zero`` is False."""
    options = {"unconnected_gradients": ZERO} if zero else {}
    return nested(f, x, y, **{"outer": 1, **options, **changes})[1]


def none_as_zeros(result, x, dtype=None):
    return tf.zeros(x.shape, dtype or x.dtype) if result is None else result


def test_mixed_partial_accepts_the_other_order_with_none_replaced(judge):
    judge(
        check.mixed_partial,
        lambda f, x, y: none_as_zeros(mixed(f, x, y, inner=1, outer=0, zero=False), x),
    )


def none_as_ones(f, x, y):
    result = mixed(f, x, y, zero=False)
    return tf.ones_like(x) if result is None else result


def none_as_scalar_zero(f, x, y):
    result = mixed(f, x, y, zero=False)
    return tf.constant(0.0, x.dtype) if result is None else result


def mixed_jacobian_diagonal(f, x, y):
    jacobian = mixed(f, x, y, method="jacobian")
    return tf.reshape(tf.linalg.diag_part(tf.reshape(jacobian, [tf.size(x), tf.size(y)])), x.shape)


def mixed_sum_of_firsts_inside(f, x, y):
    """The outer tape differentiates dz/dx + dz/dy with respect to y."""
    with tf.GradientTape() as outer:
        outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch([x, y])
            z = f(x, y)
        total = tf.add_n(inner.gradient(z, [x, y], unconnected_gradients=ZERO))
    return outer.gradient(total, y, unconnected_gradients=ZERO)


def mixed_finite_difference_in_y(f, x, y):
    def slope_in_x(at_y):
        return by_tape(lambda x: f(x, at_y), x)

    return (slope_in_x(y + 1e-3) - slope_in_x(y - 1e-3)) / 2e-3


@pytest.mark.parametrize(
    "answer, words, mistake",
    rows(
        [
            # the tapes: a None (also one hidden as zeros), or no nesting
            (lambda f, x, y: mixed(f, x, y, zero=False), ["ZERO"], "structural_none"),
            (lambda f, x, y: mixed(f, x, y, inside=False, zero=False), [], "gradient_outside_tape"),
            (
                lambda f, x, y: mixed(f, x, y, inside=False),
                ["after the outer tape's"],
                "zeros_hide_none",
            ),
            (lambda f, x, y: mixed(f, x, y, watch=0), ["outer.watch"], "zeros_hide_none"),
            (lambda f, x, y: mixed(f, x, y, watch=0, zero=False), [], "outer_not_watching"),
            (
                lambda f, x, y: none_as_zeros(mixed(f, x, y, watch=0, zero=False), x),
                ["returned zeros where a tape returned None"],
                "outer_not_watching",
            ),
            (
                lambda f, x, y: none_as_zeros(mixed(f, x, y, zero=False), x, tf.float32),
                [],
                "float32_not_float64",
            ),
            (mixed_finite_difference_in_y, ["y + ", "first derivatives"], "finite_differences"),
            (mixed_jacobian_diagonal, [], "used_jacobian"),
            # what the tapes differentiate, and what is done with it
            (lambda f, x, y: mixed(f, x, y, outer=0), ["d2z/dx2"], "wrong_source"),
            (lambda f, x, y: mixed(f, x, y, inner=1), ["d2z/dy2"], "wrong_source"),
            (
                lambda f, x, y: by_tape(lambda x: f(x, y), x) * by_tape(lambda y: f(x, y), y),
                [],
                "product_of_partials",
            ),
            (lambda f, x, y: tf.math.sin(mixed(f, x, y)), [], "wrong_combination"),
            (  # the outer tape asked for x and y, the two added
                lambda f, x, y: mixed(f, x, y, outer=0) + mixed(f, x, y),
                ["d2z/dx2 + d2z/(dx dy)", "both x and y"],
                "added_term",
            ),
            (mixed_sum_of_firsts_inside, ["d2z/(dx dy) + d2z/dy2", "dz/dx + dz/dy"], "added_term"),
            (lambda f, x, y: -mixed(f, x, y), [], "sign_flipped"),
            (
                lambda f, x, y: tf.cast(
                    mixed(f, tf.cast(x, tf.float32), tf.cast(y, tf.float32)), x.dtype
                ),
                ["float32's digits"],
                "float32_not_float64",
            ),
            # the None where the answer is zero breaks the answer
            (
                lambda f, x, y: mixed(f, x, y, zero=False) + 0.0,
                ["answer is zero"],
                "structural_none",
            ),
            (none_as_ones, ["answer is zero"], "structural_none"),
            (none_as_scalar_zero, ["a single 0", "tf.zeros_like"], "wrong_shape"),
            # size-1 axes, and state kept between calls
            (lambda f, x, y: tf.squeeze(mixed(f, x, y)), [], "broadcast_shape"),
            (cached(mixed), ["keeps state"], "keeps_state"),
        ]
    ),
)
def test_mixed_partial_mistakes(judge, answer, words, mistake):
    message = judge(check.mixed_partial, answer, mistake).message
    assert all(word in message for word in words), message


# --------------------------------------------------------------------------
# 4.3 a sigmoid whose gradient stays accurate


def slope(up, x):
    return up * tf.sigmoid(x) * tf.sigmoid(-x)


@pytest.mark.parametrize(
    "forward, backward",
    [
        (tf.math.sigmoid, lambda up, x: up * tf.exp(-tf.nn.softplus(x) - tf.nn.softplus(-x))),
        (tf.sigmoid, lambda up, x: up * tf.cosh(x / 2.0) ** -2 / 4.0),  # sech(x/2)**2 / 4
    ],
    ids=["exp of softplus", "sech squared"],
)
def test_smooth_sigmoid_accepts_other_rules(judge, custom_gradient, forward, backward):
    judge(check.smooth_sigmoid, custom_gradient(forward, backward))


def test_smooth_sigmoid_accepts_a_rule_whose_own_gradient_adds_zero(judge):
    judge(
        check.smooth_sigmoid,
        lambda x: (
            reference.smooth_sigmoid(x) + 0.0 * tf.sigmoid(x) + (tf.sigmoid(x) - tf.sigmoid(x))
        ),
    )


def sigmoid_no_decorator(x):
    return tf.sigmoid(x), lambda upstream: slope(upstream, x)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            (tf.sigmoid, "custom_gradient_not_used"),
            (sigmoid_no_decorator, "forgot_decorator"),
            (
                lambda x: reference.smooth_sigmoid(x) * 0.5 + 0.5 * tf.sigmoid(x),
                "custom_gradient_not_used",
            ),
        ]
    ),
)
def test_smooth_sigmoid_names_the_mistake_of_an_answer(judge, answer, mistake):
    judge(check.smooth_sigmoid, answer, mistake)


sigmoid = tf.sigmoid


@pytest.mark.parametrize(
    "forward, backward, mistake",
    rows(
        [
            # right on paper, wrong in floating point on a tail
            (
                sigmoid,
                lambda up, x: up * tf.sigmoid(x) * (1.0 - tf.sigmoid(x)),
                "cancellation",
            ),
            (
                sigmoid,
                lambda up, x: up * (1.0 - tf.sigmoid(-x)) * tf.sigmoid(-x),
                "cancellation",
            ),
            (
                sigmoid,
                lambda up, x: up * (tf.sigmoid(x) - tf.sigmoid(x) ** 2),
                "cancellation",
            ),
            (sigmoid, lambda up, x: up * tf.exp(-x) / (1.0 + tf.exp(-x)) ** 2, "exp_overflow"),
            (sigmoid, lambda up, x: up * tf.exp(-x) * tf.sigmoid(x) ** 2, "exp_overflow"),
            (
                sigmoid,
                lambda up, x: up * tf.sigmoid(x) * (1.0 - tf.tanh(x / 2.0)) / 2.0,
                "tail_inaccurate",
            ),
            (sigmoid, lambda up, x: up * (1.0 - tf.tanh(x / 2.0) ** 2) / 4.0, "tail_inaccurate"),
            (lambda x: 1.0 - tf.sigmoid(-x), slope, "tail_inaccurate"),
            # the rule's formula
            (sigmoid, lambda up, x: tf.sigmoid(x) * tf.sigmoid(-x), "forgot_upstream"),
            (sigmoid, lambda up, x: up * tf.sigmoid(x), "softplus_slope"),
            (sigmoid, lambda up, x: up, "forgot_local_derivative"),
            (sigmoid, lambda up, x: up * tf.sigmoid(-x), "slope_factor_missing"),
            (  # e^-|x| / (1 + e^-|x|), the square forgotten
                sigmoid,
                lambda up, x: up * tf.exp(-tf.abs(x)) / (1.0 + tf.exp(-tf.abs(x))),
                "slope_factor_missing",
            ),
            (sigmoid, lambda up, x: up * tf.sigmoid(x) ** 2, "sigmoid_squared"),
            (sigmoid, lambda up, x: up * tf.sigmoid(x) * (1.0 - tf.sigmoid(-x)), "sigmoid_squared"),
            (sigmoid, lambda up, x: up * (1.0 - tf.sigmoid(x) ** 2), "sigmoid_squared"),
            (
                sigmoid,
                lambda up, x: tf.reduce_mean(up) * tf.sigmoid(x) * tf.sigmoid(-x),
                "reduced_dy",
            ),
            (sigmoid, lambda up, x: slope(up, x) * tf.sigmoid(x), "wrong_local_derivative"),
            (sigmoid, lambda up, x: up * slope(up, x), "upstream_not_linear"),
            (sigmoid, lambda up, x: None, "no_gradient"),
            (sigmoid, lambda up, x: -slope(up, x), "sign_flipped"),
            (
                sigmoid,
                lambda up, x: up * tf.sigmoid(x) * (tf.sigmoid(x) - 1.0),
                "slope_sign_flipped",  # minus the slope, cancelling to 0 on the tail
            ),
            (sigmoid, lambda up, x: 2.0 * slope(up, x), "scale_factor"),
            # the forward value
            (lambda x: 1.0 - tf.sigmoid(x), slope, "wrong_value"),
            (tf.math.softplus, slope, "wrong_value"),
            (lambda x: tf.sigmoid(x) * tf.sigmoid(-x), slope, "slope_as_value"),
            # float64 in, float64 out
            (
                sigmoid,
                lambda up, x: (
                    up
                    * tf.cast(
                        tf.sigmoid(tf.cast(x, tf.float32)) * tf.sigmoid(-tf.cast(x, tf.float32)),
                        x.dtype,
                    )
                ),
                "float32_not_float64",  # a float32 slope inside a float64 rule
            ),
            (lambda x: tf.sigmoid(tf.cast(x, tf.float32)), slope, "float32_not_float64"),
            (sigmoid, lambda up, x: up * tf.exp(x) / (1.0 + tf.exp(x)) ** 2, "exp_overflow"),
            (lambda x: tf.squeeze(tf.sigmoid(x)), slope, "broadcast_shape"),
        ]
    ),
)
def test_smooth_sigmoid_names_the_mistake_of_a_rule(
    judge, custom_gradient, forward, backward, mistake
):
    judge(check.smooth_sigmoid, custom_gradient(forward, backward), mistake)


@pytest.mark.parametrize(
    "low, high, words",
    [(-20.0, 20.0, "[-20, 20]"), (-30.0, 15.0, "[-30, 15]"), (-1e9, 25.0, "[-infinity, 25]")],
    ids=["symmetric", "asymmetric", "upper only"],
)
def test_smooth_sigmoid_names_a_clip_of_x(judge, custom_gradient, low, high, words):
    def clipped(up, x):
        return slope(up, tf.clip_by_value(x, tf.cast(low, x.dtype), tf.cast(high, x.dtype)))

    message = judge(
        check.smooth_sigmoid, custom_gradient(sigmoid, clipped), "clipped_input"
    ).message
    assert words in message and "clips x" in message, message


def test_an_error_in_grad_fn_is_shown_as_the_learners(judge, custom_gradient):
    answer = custom_gradient(sigmoid, lambda up, x: up * tf.sigmoid(x) @ tf.ones((2, 2)))
    assert "of your code" in judge(check.smooth_sigmoid, answer, "grad_fn_raised").message


def test_a_grad_fn_that_reads_the_latest_call_keeps_state(judge):
    latest = {}

    @tf.custom_gradient
    def answer(x):
        latest["x"] = x
        return tf.sigmoid(x), lambda up: slope(up, latest["x"])

    assert "called twice" in judge(check.smooth_sigmoid, answer, "keeps_state").message


# --------------------------------------------------------------------------
# 4.4 Hessian-vector product


def hvp(f, x, v, **changes):
    return nested(f, x, target=lambda g: tf.reduce_sum(g * v), **changes)[1]


def test_hvp_accepts_v_as_output_gradients(judge):
    judge(check.hvp, lambda f, x, v: nested(f, x, output_gradients=v)[1])


def hvp_forward_over_reverse(f, x, v):
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as accumulator:
        g = by_tape(f, x)
    return accumulator.jvp(g)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            # the method: reverse over reverse, H never formed
            (hvp_forward_over_reverse, "forward_over_reverse"),
            (
                lambda f, x, v: tf.linalg.matvec(nested(f, x, method="jacobian")[1], v),
                "used_jacobian",
            ),
            (
                lambda f, x, v: (by_tape(f, x + 1e-4 * v) - by_tape(f, x - 1e-4 * v)) / 2e-4,
                "not_nested",
            ),
            (lambda f, x, v: hvp(f, x, v, target_inside=False), "computed_outside_tape"),
            # what the outer tape differentiates, and what is done with it
            (lambda f, x, v: by_tape(f, x), "first_not_second"),
            (lambda f, x, v: nested(f, x)[1] * v, "hessian_row_sums"),
            (lambda f, x, v: nested(f, x)[1], "hessian_row_sums"),
            (  # sum(g) * v: sum(v) times H @ ones
                lambda f, x, v: nested(f, x, target=lambda g: tf.reduce_sum(g) * v)[1],
                "hessian_row_sums",
            ),
            (  # v in the inner target, f(x) * sum(v): the same numbers
                lambda f, x, v: nested(lambda x: f(x) * tf.reduce_sum(v), x)[1],
                "hessian_row_sums",
            ),
            (lambda f, x, v: hvp(f, v, x), "swapped_point_direction"),
            (  # the outer tape differentiates (v . g)**2 / 2: H v times v . g
                lambda f, x, v: nested(f, x, target=lambda g: 0.5 * tf.reduce_sum(g * v) ** 2)[1],
                "wrong_target",
            ),
            (lambda f, x, v: tf.reduce_sum(v * hvp(f, x, v)), "directional_derivative"),
            (lambda f, x, v: hvp(f, x, v)[:, None] * tf.ones_like(v), "returned_hessian"),
            (lambda f, x, v: -hvp(f, x, v), "sign_flipped"),
            (lambda f, x, v: 0.5 * hvp(f, x, v), "scale_factor"),
            (lambda f, x, v: hvp(f, x, v / tf.norm(v)), "scale_factor"),
            (lambda f, x, v: hvp(f, x, v) * tf.abs(v), "wrong_combination"),
            (
                lambda f, x, v: hvp(f, tf.cast(x, tf.float32), tf.cast(v, tf.float32)),
                "float32_not_float64",
            ),
            # one input squeezed away is a shape slip, not a directional derivative
            (lambda f, x, v: tf.squeeze(hvp(f, x, v)), "broadcast_shape"),
            (cached(hvp), "keeps_state"),
        ]
    ),
)
def test_hvp_mistakes(judge, answer, mistake):
    judge(check.hvp, answer, mistake)


# --------------------------------------------------------------------------
# 4.5 safe norm


def squares(g):
    return tf.reduce_sum(tf.square(g), axis=-1)


def where_nonzero(norm):
    """A single tf.where that gives 0 at zero rows and ``norm(squares)`` elsewhere."""
    return lambda g: tf.where(squares(g) > 0, norm(squares(g)), tf.zeros_like(squares(g)))


@tf.custom_gradient
def norm_unguarded_rule(g):
    """A custom rule upstream * g / n, with no guard: 0/0 at rows of zeros."""
    n = tf.sqrt(squares(g))
    return n, lambda upstream: upstream[:, None] * g / n[:, None]


@pytest.mark.parametrize(
    "answer",
    [
        # a single tf.where around tf.sqrt or tf.norm is enough (lesson 03): their gradient
        # is 0 where the upstream is 0, so they are never blamed
        where_nonzero(tf.sqrt),
        lambda g: tf.where(squares(g) > 0, tf.norm(g, axis=-1), 0.0 * squares(g)),
        lambda g: tf.where(tf.norm(g, axis=-1) > 0, tf.norm(g, axis=-1), 0.0),
        lambda g: tf.sqrt(tf.maximum(squares(g), 1e-12)),
        where_nonzero(lambda s: tf.sqrt(tf.where(s > 0, s, tf.ones_like(s)))),
        lambda g: tf.maximum(tf.norm(g, axis=-1), 1e-7),
        lambda g: tf.norm(g + 1e-8, axis=-1),
    ],
    ids=[
        "where around sqrt",
        "where around tf.norm",
        "where on the norm",
        "maximum",
        "double where",
        "maximum around tf.norm",
        "epsilon added to g: a unit slope at zero rows",
    ],
)
def test_safe_norm_correct_answers(judge, answer):
    judge(check.safe_norm, answer)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            # the gradient at zero rows
            (lambda g: tf.norm(g, axis=-1), "nan_gradient_at_zero"),
            (norm_unguarded_rule, "nan_gradient_at_zero"),
            (lambda g: tf.sqrt(squares(g) + 1e-40), "eps_subnormal"),  # 0 in float32
            (lambda g: tf.sqrt(squares(g)) + 1e-9, "eps_outside_sqrt"),
            (lambda g: tf.sqrt(squares(g)) + 1e-6, "eps_outside_sqrt"),  # the value off too
            (
                lambda g: tf.where(
                    squares(g) > 0,
                    tf.math.reduce_euclidean_norm(g, axis=-1),
                    tf.zeros_like(squares(g)),
                ),
                "where_without_safe_branch",
            ),
            (lambda g: tf.stop_gradient(tf.sqrt(squares(g) + 1e-12)), "non_differentiable_op"),
            (
                lambda g: tf.constant(np.sqrt(np.sum(g.numpy() ** 2, axis=-1) + 1e-12)),
                "numpy_detour",
            ),
            # the values
            (lambda g: tf.sqrt(squares(g) + 1e-3), "eps_too_large"),
            (
                lambda g: tf.where(
                    tf.norm(g, axis=-1) > 0.1, tf.norm(g, axis=-1), tf.zeros_like(g[:, 0])
                ),
                "threshold_too_large",
            ),
            (lambda g: tf.norm(tf.maximum(g, 1e-7), axis=-1), "clipped_input"),
            (lambda g: tf.sqrt(tf.square(tf.reduce_sum(g, axis=-1)) + 1e-12), "square_of_sum"),
            (lambda g: squares(g) + 1e-12, "squared_norm"),
            (lambda g: tf.reduce_sum(tf.abs(g), axis=-1), "l1_norm"),
            (lambda g: tf.reduce_max(tf.abs(g), axis=-1), "max_norm"),
            (lambda g: tf.sqrt(tf.reduce_mean(g * g, axis=-1) + 1e-12), "mean_not_sum"),
            # shapes and dtypes
            (lambda g: tf.sqrt(tf.reduce_sum(g**2) + 1e-12), "whole_tensor_norm"),
            (lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=0) + 1e-12), "wrong_axis"),
            (
                lambda g: tf.sqrt(tf.reduce_sum(g**2, axis=-1, keepdims=True) + 1e-12),
                "broadcast_shape",
            ),
            (lambda g: tf.sqrt(tf.cast(squares(g), tf.float32) + 1e-12), "float32_not_float64"),
            (lambda g: tf.sqrt(squares(g) + 1e-12).numpy(), "returned_numpy"),
            (lambda g: tf.sqrt(squares(g) + 1e-6), "eps_too_large"),
            (lambda g: tf.squeeze(tf.sqrt(squares(g) + 1e-12)), "broadcast_shape"),
            (cached(lambda g: tf.sqrt(squares(g) + 1e-12)), "keeps_state"),
        ]
    ),
)
def test_safe_norm_mistakes(judge, answer, mistake):
    judge(check.safe_norm, answer, mistake)


@pytest.mark.parametrize(
    "norm, named, not_named",
    [
        (lambda s: s * tf.math.rsqrt(s), "rsqrt", "x**0.5"),
        (lambda s: tf.exp(0.5 * tf.math.log(s)), "tf.math.log", "x**0.5"),
        (lambda s: tf.pow(s, 0.5), "x**0.5", "rsqrt"),
    ],
    ids=["rsqrt", "log", "pow"],
)
def test_the_where_hint_names_the_op_that_was_used(judge, norm, named, not_named):
    """g**2 is a power too: only a fractional power may be blamed."""
    message = judge(check.safe_norm, where_nonzero(norm), "where_without_safe_branch").message
    assert named in message and not_named not in message


def test_a_custom_rule_that_divides_by_a_zero_norm_is_blamed_not_tf_sqrt(judge):
    message = judge(check.safe_norm, norm_unguarded_rule, "nan_gradient_at_zero").message
    assert "your own grad_fn" in message and "slope of tf.sqrt" not in message, message


@tf.custom_gradient
def norm_rule_without_an_axis(g):
    """A guarded custom rule whose upstream, one number per row, lacks its [:, None]."""
    n = tf.sqrt(squares(g))
    return n, lambda upstream: upstream * g / tf.maximum(n, 1e-12)[:, None]


def test_a_custom_rule_whose_upstream_lacks_an_axis_is_told_to_add_it(judge):
    message = judge(check.safe_norm, norm_rule_without_an_axis, "grad_fn_raised").message
    assert "upstream[:, None]" in message and "of your code" in message, message
