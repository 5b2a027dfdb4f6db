"""Lesson 03's checks: each accepts correct rules written otherwise than the solution
(nbval runs the solution itself, in strict mode) and names the mistake of wrong ones.

Most answers are a ``@tf.custom_gradient`` rule given as a table row ``(forward,
backward, mistake)``, built by the ``custom_gradient`` fixture (tests/conftest.py).
"""

from __future__ import annotations

import re

import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson03 as check


def rows(table):
    """pytest.param rows named by their mistake, numbered where a mistake repeats."""
    return [pytest.param(*row, id=f"{i}-{row[-1]}") for i, row in enumerate(table)]


# 3.1 stable log1pexp ---------------------------------------------------------


def naive(x):
    return tf.math.log(1.0 + tf.exp(x))


def sigmoid_backward(up, x):
    return up * tf.sigmoid(x)


def softplus_by_parts(x):
    return tf.maximum(x, 0.0) + tf.math.log1p(tf.exp(-tf.abs(x)))


def softplus_rule_by_tape(up, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softplus(x)
    return tape.gradient(y, x, output_gradients=up)


@pytest.mark.parametrize(
    "forward, backward",
    [
        (softplus_by_parts, lambda up, x: up / (1.0 + tf.exp(-x))),
        (tf.nn.softplus, lambda up, x: up * tf.exp(x - tf.nn.softplus(x))),
        (tf.math.softplus, softplus_rule_by_tape),
    ],
    ids=["by parts", "exp of difference", "rule asks the tape"],
)
def test_log1pexp_accepts_stable_rules(judge, custom_gradient, forward, backward):
    judge(check.log1pexp_stable, custom_gradient(forward, backward))


def test_log1pexp_accepts_a_rule_called_from_a_wrapper(judge, custom_gradient):
    rule = custom_gradient(tf.nn.softplus, sigmoid_backward)
    judge(check.log1pexp_stable, lambda x: rule(x))


def identity_around(inner):
    @tf.custom_gradient
    def passthrough(y):
        return tf.identity(y), lambda up: up

    return lambda x: passthrough(inner(x))


@tf.custom_gradient
def output_without_grad_fn(x):
    return tf.nn.softplus(x)


@tf.custom_gradient
def grad_fn_first(x):
    return (lambda up: up * tf.sigmoid(x)), tf.nn.softplus(x)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            # the method: no custom rule produced the gradient
            (naive, "custom_gradient_not_used"),
            (tf.nn.softplus, "custom_gradient_not_used"),
            (identity_around(tf.nn.softplus), "custom_gradient_not_used"),
            # the decorator's contract
            (lambda x: (tf.nn.softplus(x), lambda up: up * tf.sigmoid(x)), "forgot_decorator"),
            (output_without_grad_fn, "forgot_grad_fn"),
            (grad_fn_first, "reversed_order"),
        ]
    ),
)
def test_log1pexp_names_the_mistake_of_an_answer(judge, answer, mistake):
    judge(check.log1pexp_stable, answer, mistake)


def gap_after_overflow(up, x):
    broken = (x > 88.72) & (x <= 95.0)
    return up * tf.where(broken, tf.fill(tf.shape(x), float("nan")), tf.sigmoid(x))


def hole_in_band(up, x):
    return up * tf.where((x > 88.05) & (x < 88.15), tf.zeros_like(x), tf.sigmoid(x))


def threshold_forward(x):
    return tf.where(x > 15.0, x, tf.nn.softplus(x))


def float32_backward(up, x):
    return tf.cast(up, tf.float32) * tf.sigmoid(tf.cast(x, tf.float32))


def e_to_the_x_below_0(up, x):
    return up * tf.where(x < 0.0, tf.exp(tf.minimum(x, 0.0)), tf.sigmoid(x))


softplus = tf.nn.softplus


@pytest.mark.parametrize(
    "forward, backward, mistake",
    rows(
        [
            # the failure modes of the log1pexp story, the whole band and past the overflow
            (naive, sigmoid_backward, "forward_overflow"),
            (lambda x: tf.where(x > 20.0, x, naive(x)), sigmoid_backward, "forward_rounds_to_zero"),
            (softplus, lambda up, x: up * tf.exp(x) * (1.0 / (1.0 + tf.exp(x))), "flush_to_zero"),
            (softplus, hole_in_band, "flush_to_zero"),
            (softplus, lambda up, x: up * tf.exp(x) / (1.0 + tf.exp(x)), "backward_overflow_nan"),
            (softplus, gap_after_overflow, "backward_overflow_nan"),
            (
                softplus,
                lambda up, x: up * (1 - 1 / (1 + tf.exp(x))),
                "documented_rule_cancellation",
            ),
            # whole-formula slips
            (softplus, lambda up, x: tf.sigmoid(x), "forgot_upstream"),
            (softplus, lambda up, x: up * tf.sigmoid(x) * tf.sigmoid(-x), "differentiated_twice"),
            (softplus, lambda up, x: up * tf.nn.softplus(x), "value_not_derivative"),
            (softplus, lambda up, x: up * tf.sigmoid(-x), "sigmoid_of_minus_x"),
            (softplus, e_to_the_x_below_0, "asymptote_for_negative"),
            (
                lambda x: tf.where(x < 0.0, tf.exp(tf.minimum(x, 0.0)), tf.nn.softplus(x)),
                sigmoid_backward,
                "asymptote_for_negative",
            ),
            (softplus, lambda up, x: -up * tf.sigmoid(x), "sign_flipped"),
            (softplus, lambda up, x: 2.0 * up * tf.sigmoid(x), "scale_factor"),
            (softplus, lambda up, x: up * tf.sigmoid(2.0 * x), "wrong_local_derivative"),
            (softplus, lambda up, x: up * tf.sigmoid(x) + up**2, "upstream_not_linear"),
            (softplus, lambda up, x: tf.reduce_sum(up) * tf.sigmoid(x), "upstream_reduced"),
            (softplus, lambda up, x: tf.reduce_mean(up) * tf.sigmoid(x), "upstream_reduced"),
            (tf.sigmoid, sigmoid_backward, "value_is_sigmoid"),
            (lambda x: tf.nn.softplus(x) + 1.0, sigmoid_backward, "constant_offset"),
            (lambda x: tf.nn.softplus(x) - 0.5, sigmoid_backward, "constant_offset"),
            (softplus, lambda up, x: None, "no_gradient"),
            (softplus, lambda up, x: (up, up), "grad_fn_raised"),
            # float64: dtype in = dtype out, and float32-only shortcuts
            (softplus, float32_backward, "float32_not_float64"),
            (
                lambda x: tf.nn.softplus(tf.cast(x, tf.float32)),
                sigmoid_backward,
                "float32_not_float64",
            ),
            (threshold_forward, sigmoid_backward, "float32_threshold"),
            (
                softplus,
                lambda up, x: up * tf.cast(tf.sigmoid(tf.cast(x, tf.float32)), x.dtype),
                "float32_not_float64",
            ),  # float64 out, but the local derivative went through float32
            (
                softplus,
                lambda up, x: up * tf.where(x > 20.0, tf.ones_like(x), tf.sigmoid(x)),
                "float32_threshold",
            ),
            (  # 9e-14 off at x = 31 in float64: more than any right formula's rounding
                softplus,
                lambda up, x: up * tf.where(x > 30.0, tf.ones_like(x), tf.sigmoid(x)),
                "float32_threshold",
            ),
        ]
    ),
)
def test_log1pexp_names_the_mistake_of_a_rule(judge, custom_gradient, forward, backward, mistake):
    judge(check.log1pexp_stable, custom_gradient(forward, backward), mistake)


_latest = {}


@tf.custom_gradient
def reads_the_latest_x(x):
    _latest["x"] = x
    return tf.nn.softplus(x), lambda up: up * tf.sigmoid(_latest["x"])


def test_log1pexp_catches_a_rule_that_reads_the_latest_call(judge):
    judge(check.log1pexp_stable, reads_the_latest_x, "keeps_state")


@tf.custom_gradient
def _softplus_rule(x):
    return tf.nn.softplus(x), lambda up: up * tf.sigmoid(x)


def test_log1pexp_names_the_keyword_argument_trap(judge):
    message = judge(
        check.log1pexp_stable, lambda x: _softplus_rule(x=x), "custom_gradient_not_used"
    )
    assert "keyword-argument trap" in message.message
    assert "Pass x positionally" in message.message


def test_log1pexp_names_the_asymptote_taken_below_0(judge, custom_gradient):
    answer = custom_gradient(softplus, e_to_the_x_below_0)
    assert (
        "e^x is only the asymptote"
        in judge(check.log1pexp_stable, answer, "asymptote_for_negative").message
    )


def test_log1pexp_hint_lists_every_failure_mode(judge, custom_gradient):
    answer = custom_gradient(naive, lambda up, x: up * tf.exp(x) / (1.0 + tf.exp(x)))
    message = judge(check.log1pexp_stable, answer, "forward_overflow").message
    assert "Still 3 failure modes" in message
    # The first point listed may be a fresh one just below 88.75 (the first fixed probe).
    assert re.search(r"\(1\) the value is inf at x = 88\.(7[2-9]|8)", message), message
    for phrase in ("(2) the value is 0.0 at x = -", "(3) the gradient is nan at x = "):
        assert phrase in message


def test_log1pexp_probes_are_fresh_so_hard_coded_numbers_fail(custom_gradient):
    table = {
        float(x): float(tf.sigmoid(tf.constant(x, tf.float32))) for x in check.LOG1PEXP_FIXED_32
    }

    def looked_up(up, x):
        return up * tf.constant(
            [table.get(float(v), 0.5) for v in x.numpy().ravel()], dtype=x.dtype, shape=x.shape
        )

    result = check.log1pexp_stable.evaluate(custom_gradient(tf.nn.softplus, looked_up))
    assert result.status is Status.WRONG


# 3.2 straight-through estimator ----------------------------------------------


def mask(x, limit=1.0):
    return tf.cast(tf.abs(x) <= limit, x.dtype)


def masked(up, x):
    return up * mask(x)


@pytest.mark.parametrize(
    "backward",
    [
        lambda up, x: tf.where(tf.abs(x) <= 1.0, up, tf.zeros_like(up)),
        lambda up, x: up * tf.cast((x >= -1.0) & (x <= 1.0), up.dtype),
    ],
    ids=["where", "two comparisons"],
)
def test_binarize_accepts_correct_rules(judge, custom_gradient, backward):
    judge(check.binarize_ste, custom_gradient(tf.sign, backward))


def stop_gradient_trick(x):
    clipped = tf.clip_by_value(x, -1.0, 1.0)
    return clipped + tf.stop_gradient(tf.sign(x) - clipped)


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            (tf.sign, "custom_gradient_not_used"),
            (stop_gradient_trick, "custom_gradient_not_used"),
            (lambda x: tf.cast(tf.sign(x), tf.float64), "wrong_dtype"),
        ]
    ),
)
def test_binarize_names_the_mistake_of_an_answer(judge, answer, mistake):
    judge(check.binarize_ste, answer, mistake)


@pytest.mark.parametrize(
    "forward, backward, mistake",
    rows(
        [
            (tf.sign, lambda up, x: up, "not_clipped"),
            (tf.sign, lambda up, x: mask(x), "forgot_upstream"),
            (tf.sign, lambda up, x: up * (1.0 - mask(x)), "inverted_clip"),
            (tf.sign, lambda up, x: up * tf.cast(tf.abs(x) < 1.0, up.dtype), "boundary_excluded"),
            (tf.sign, lambda up, x: up * mask(x, 2.0), "wrong_mask"),
            (tf.sign, lambda up, x: up * tf.cast(x <= 1.0, up.dtype), "wrong_mask"),
            (tf.sign, lambda up, x: 2.0 * up * mask(x), "scale_factor"),
            (tf.sign, lambda up, x: -up * mask(x), "sign_flipped"),
            (tf.sign, lambda up, x: up * mask(x) * (1.0 - tf.abs(x)), "wrong_local_derivative"),
            (tf.sign, lambda up, x: tf.sign(up) * mask(x), "upstream_not_linear"),
            (tf.sign, lambda up, x: up * mask(up), "mask_from_upstream"),
            (
                tf.sign,
                lambda up, x: up * tf.cast(tf.reduce_all(tf.abs(x) <= 1), up.dtype),
                "blocked_everywhere",
            ),
            (tf.sign, lambda up, x: up * (1.0 - tf.tanh(x) ** 2), "tanh_surrogate"),
            (
                tf.sign,
                lambda up, x: up * tf.cast(tf.abs(x) <= 1.0, tf.float32),
                "float32_not_float64",
            ),
            (tf.sign, lambda up, x: None, "no_gradient"),
            (tf.identity, masked, "forward_identity"),
            (tf.round, masked, "forward_round"),
            (lambda x: tf.round(tf.clip_by_value(x, -1.0, 1.0)), masked, "forward_round"),
            (lambda x: tf.clip_by_value(x, -1.0, 1.0), masked, "forward_hardtanh"),
            (
                lambda x: tf.where(x >= 0.0, tf.ones_like(x), -tf.ones_like(x)),
                masked,
                "sign_at_zero",
            ),
            (lambda x: 2.0 * tf.sign(x), masked, "scale_factor"),
        ]
    ),
)
def test_binarize_names_the_mistake_of_a_rule(judge, custom_gradient, forward, backward, mistake):
    judge(check.binarize_ste, custom_gradient(forward, backward), mistake)


def test_binarize_mask_hint_names_the_points(judge, custom_gradient):
    answer = custom_gradient(tf.sign, lambda up, x: up * mask(x, 2.0))
    message = judge(check.binarize_ste, answer, "wrong_mask").message
    assert "lets the upstream through at x = " in message and "|x| > 1" in message


# 3.3 clipped upstream --------------------------------------------------------


def cube(x):
    return x**3


def clip(up, low=-1.0, high=1.0):
    return tf.clip_by_value(up, low, high)


@tf.custom_gradient
def clip_gradient(x):
    return tf.identity(x), lambda up: tf.clip_by_value(up, -1.0, 1.0)


def test_clipped_upstream_accepts_correct_rules(judge, custom_gradient):
    judge(check.clipped_upstream, lambda x: clip_gradient(x**3))
    judge(
        check.clipped_upstream,
        custom_gradient(cube, lambda up, x: tf.minimum(tf.maximum(up, -1.0), 1.0) * 3.0 * x * x),
    )


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            (cube, "custom_gradient_not_used"),
            (lambda x: clip_gradient(x) ** 3, "clipped_after_local"),
        ]
    ),
)
def test_clipped_upstream_names_the_mistake_of_an_answer(judge, answer, mistake):
    judge(check.clipped_upstream, answer, mistake)


@pytest.mark.parametrize(
    "forward, backward, mistake",
    rows(
        [
            (cube, lambda up, x: clip(up * 3.0 * x**2), "clipped_after_local"),
            (cube, lambda up, x: up * 3.0 * x**2, "not_clipped"),
            (cube, lambda up, x: clip(up), "forgot_local_derivative"),
            (cube, lambda up, x: 3.0 * x**2, "forgot_upstream"),
            (cube, lambda up, x: clip(3.0 * x**2), "forgot_upstream"),
            (
                cube,
                lambda up, x: tf.clip_by_value(up, 1.0, -1.0) * 3.0 * x**2,
                "forgot_upstream",
            ),
            (cube, lambda up, x: tf.clip_by_norm(up, 1.0) * 3.0 * x**2, "clipped_norm"),
            (cube, lambda up, x: up * 3.0 * clip(x) ** 2, "clipped_input"),
            (cube, lambda up, x: up * clip(3.0 * x**2), "clipped_local_derivative"),
            (cube, lambda up, x: clip(up, -2.0, 2.0) * 3.0 * x**2, "wrong_clip_range"),
            (cube, lambda up, x: tf.minimum(up, 1.0) * 3.0 * x**2, "wrong_clip_range"),
            (cube, lambda up, x: clip(up) * 2.0 * x**2, "scale_factor"),
            (
                cube,
                lambda up, x: tf.reduce_mean(clip(up) * 3.0 * x**2) * tf.ones_like(x),
                "reduced_gradient",
            ),
            (cube, lambda up, x: clip(up) * 3.0 * x, "wrong_power"),
            (cube, lambda up, x: clip(up) * 2.0 * x, "wrong_power"),
            (cube, lambda up, x: clip(up) * 3.0 * x**3, "wrong_power"),
            (cube, lambda up, x: clip(up) * tf.exp(x), "wrong_local_derivative"),
            (cube, lambda up, x: clip(up) * 3.0 * x**2 + 0.1 * up, "upstream_not_linear"),
            (
                cube,
                lambda up, x: clip(up, tf.constant(-1.0), tf.constant(1.0)) * 3.0 * x**2,
                "float32_not_float64",
            ),
            (lambda x: clip(x**3), lambda up, x: clip(up) * 3.0 * x**2, "clipped_forward"),
            (lambda x: x**2, lambda up, x: clip(up) * 3.0 * x**2, "wrong_value"),
        ]
    ),
)
def test_clipped_upstream_names_the_mistake_of_a_rule(
    judge, custom_gradient, forward, backward, mistake
):
    judge(check.clipped_upstream, custom_gradient(forward, backward), mistake)


@pytest.mark.parametrize(
    "backward, mistake, words",
    [
        (
            lambda up, x: tf.where(tf.abs(up) <= 1.0, up, tf.ones_like(up)) * 3.0 * x**2,
            "clip_sign_lost",
            "into 1, whatever its sign",
        ),
        (
            lambda up, x: tf.where(tf.abs(up) <= 1.0, up, -tf.ones_like(up)) * 3.0 * x**2,
            "clip_sign_lost",
            "into -1, whatever its sign",
        ),
        (lambda up, x: clip(up) * 3 * x, "wrong_power", "multiplies the clipped upstream by 3x"),
        (
            lambda up, x: clip(up) * 3.0 * tf.pow(x**3, 2.0 / 3.0),
            "fractional_power_of_negative",
            "nan at every negative x",
        ),
    ],
    ids=["+1 beyond the clip", "-1 beyond the clip", "3x for 3x^2", "power of the output"],
)
def test_clipped_upstream_names_how_the_rule_breaks(
    judge, custom_gradient, backward, mistake, words
):
    answer = custom_gradient(cube, backward)
    assert words in judge(check.clipped_upstream, answer, mistake).message


# 3.4 custom gradient reading a variable ---------------------------------------


def make_layer(backward, forward=lambda w, x: tf.nn.softplus(w * x)):
    """A make_scaled_softplus answer from backward(upstream, x, w) -> (gx, [gw])."""

    def make(w):
        @tf.custom_gradient
        def layer(x):
            def grad(upstream, variables=None):
                return backward(upstream, x, w)

            return forward(w, x), grad

        return layer

    return make


def sig(w, x):
    return tf.sigmoid(w * x)


def reference_backward(up, x, w):
    return up * w * sig(w, x), [tf.reduce_sum(up * x * sig(w, x))]


def make_with_variables_argument(w):
    @tf.custom_gradient
    def layer(x):
        def grad(upstream, variables=None):
            (v,) = variables
            s = tf.sigmoid(v * x)
            return upstream * v * s, [tf.reduce_sum(upstream * x * s)]

        return tf.nn.softplus(w * x), grad

    return layer


def make_with_w_as_input(w):
    @tf.custom_gradient
    def inner(x, v):
        def grad(upstream):
            s = tf.sigmoid(v * x)
            return upstream * v * s, tf.reduce_sum(upstream * x * s)

        return tf.nn.softplus(v * x), grad

    return lambda x: inner(x, w)


@pytest.mark.parametrize(
    "answer",
    [make_with_variables_argument, make_with_w_as_input],
    ids=["variables argument", "w passed as an input"],
)
def test_scaled_softplus_accepts_correct_layers(judge, answer):
    judge(check.scaled_softplus, answer)


def make_without_variables_keyword(w):
    @tf.custom_gradient
    def layer(x):
        def grad(upstream):
            return upstream * w * sig(w, x)

        return tf.nn.softplus(w * x), grad

    return layer


def make_rule_outside(w):
    @tf.custom_gradient
    def stable(z):
        return tf.nn.softplus(z), lambda up: up * tf.sigmoid(z)

    return lambda x: stable(w * x)


def exp_sigmoid(w, x):
    e = tf.exp(w * x)
    return e / (1.0 + e)


def with_w_gradient(change):
    """The reference rule with its gradient for w passed through change(tensor)."""
    return make_layer(
        lambda up, x, w: (up * w * sig(w, x), change(tf.reduce_sum(up * x * sig(w, x))))
    )


@pytest.mark.parametrize(
    "answer, mistake",
    rows(
        [
            (lambda w: lambda x: tf.nn.softplus(w * x), "custom_gradient_not_used"),
            (make_rule_outside, "variable_outside_rule"),
            (make_without_variables_keyword, "no_variables_keyword"),
            (
                make_layer(lambda up, x, w: (w * sig(w, x), [tf.reduce_sum(up * x * sig(w, x))])),
                "forgot_upstream",
            ),
            (
                make_layer(lambda up, x, w: (up * w * sig(w, x), [tf.reduce_sum(x * sig(w, x))])),
                "forgot_upstream",
            ),
            (
                make_layer(lambda up, x, w: (up * sig(w, x), [tf.reduce_sum(up * x * sig(w, x))])),
                "forgot_w",
            ),
            (
                make_layer(lambda up, x, w: (up * w * sig(w, x), [tf.reduce_sum(up * sig(w, x))])),
                "forgot_x",
            ),
            (
                make_layer(
                    lambda up, x, w: (up * x * sig(w, x), [tf.reduce_sum(up * w * sig(w, x))])
                ),
                "swapped_gradients",
            ),
            (
                make_layer(lambda up, x, w: (up * w * sig(w, x), [up * x * sig(w, x)])),
                "variable_grad_not_reduced",
            ),
            (with_w_gradient(lambda g: g), "variable_grads_not_list"),
            (make_layer(lambda up, x, w: (up * w * sig(w, x), [None])), "no_variable_gradient"),
            (
                make_layer(
                    lambda up, x, w: (up * w * sig(w, x), [tf.reduce_mean(up * x * sig(w, x))])
                ),
                "mean_not_sum",
            ),
            (with_w_gradient(lambda g: [g.numpy()]), "returned_numpy"),
            (
                make_layer(
                    lambda up, x, w: (
                        up * w * tf.sigmoid(x),
                        [tf.reduce_sum(up * x * tf.sigmoid(x))],
                    )
                ),
                "local_at_input",
            ),
            (with_w_gradient(lambda g: [tf.reshape(g, [1])]), "broadcast_shape"),  # keepdims
            (with_w_gradient(lambda g: [tf.cast(g, tf.float32)]), "float32_not_float64"),
            (with_w_gradient(lambda g: [2.0 * g]), "scale_factor"),
            (with_w_gradient(lambda g: [g + 1.0]), "wrong_gradient"),
            (
                make_layer(
                    lambda up, x, w: (
                        up * w * exp_sigmoid(w, x),
                        [tf.reduce_sum(up * x * exp_sigmoid(w, x))],
                    )
                ),
                "backward_overflow_nan",
            ),
            (
                make_layer(
                    reference_backward, forward=lambda w, x: tf.math.log(1.0 + tf.exp(w * x))
                ),
                "forward_overflow",
            ),
            (
                make_layer(reference_backward, forward=lambda w, x: w * tf.nn.softplus(x)),
                "value_not_scaled_inside",
            ),
            (make_layer(reference_backward, forward=lambda w, x: tf.nn.softplus(x)), "wrong_value"),
            (
                make_layer(
                    lambda up, x, w: (
                        tf.fill(tf.shape(x), tf.reduce_sum(up * w * sig(w, x))),
                        [tf.reduce_sum(up * x * sig(w, x))],
                    )
                ),
                "reduced_gradient",
            ),
            (
                make_layer(
                    lambda up, x, w: (
                        up * w * tf.sigmoid(w * x + 1.0),
                        [tf.reduce_sum(up * x * sig(w, x))],
                    )
                ),
                "wrong_local_derivative",
            ),
            (
                make_layer(
                    lambda up, x, w: (-up * w * sig(w, x), [tf.reduce_sum(up * x * sig(w, x))])
                ),
                "sign_flipped",
            ),
            (lambda w: None, "returned_none"),
            (lambda w: tf.nn.softplus(w * 2.0), "not_a_function"),
        ]
    ),
)
def test_scaled_softplus_names_the_mistake(judge, answer, mistake):
    judge(check.scaled_softplus, answer, mistake)


_shared = {}


def make_with_one_w(w):
    """Every layer reads the w of the last layer made: a module-level variable."""
    _shared["w"] = w

    @tf.custom_gradient
    def layer(x):
        def grad(upstream, variables=None):
            s = tf.sigmoid(_shared["w"] * x)
            return upstream * _shared["w"] * s, [tf.reduce_sum(upstream * x * s)]

        return tf.nn.softplus(_shared["w"] * x), grad

    return layer


@tf.custom_gradient
def _layer_of_the_last_w(x):
    w = _shared["w"]  # read when called: right unless another layer was made since

    def grad(upstream, variables=None):
        s = tf.sigmoid(w * x)
        return upstream * w * s, [tf.reduce_sum(upstream * x * s)]

    return tf.nn.softplus(w * x), grad


def make_with_the_last_w(w):
    _shared["w"] = w
    return _layer_of_the_last_w


def make_with_a_cache(w):
    """The backward pass reads the last call's tensors, cached in a closure."""
    cache = {}

    @tf.custom_gradient
    def layer(x):
        cache["s"], cache["x"] = tf.sigmoid(w * x), x

        def grad(upstream, variables=None):
            s = cache["s"]
            return upstream * w * s, [tf.reduce_sum(upstream * cache["x"] * s)]

        return tf.nn.softplus(w * x), grad

    return layer


@pytest.mark.parametrize("answer", [make_with_one_w, make_with_the_last_w, make_with_a_cache])
def test_scaled_softplus_catches_layers_that_keep_state(judge, answer):
    judge(check.scaled_softplus, answer, "keeps_state")


def make_with_a_copy_of_w(w):
    """The layer reads a copy of w's value taken when it was made: it reads no variable."""
    return layer_reading(w.read_value())


def make_with_a_variable_copy_of_w(w):
    """The layer reads a new variable made from w's value: its gradient is not w's."""
    return layer_reading(tf.Variable(w))


def layer_reading(copy):
    """The lesson's layer, reading ``copy`` where w belongs."""

    @tf.custom_gradient
    def layer(x):
        def grad(upstream, variables=None):
            gx = upstream * copy * sig(copy, x)
            return (gx, [tf.reduce_sum(upstream * x * sig(copy, x))]) if variables else gx

        return tf.nn.softplus(copy * x), grad

    return layer


def make_with_a_stale_w(w):
    """The forward reads w; the backward uses the value w had when the layer was made."""
    copy = tf.constant(w.numpy())
    return make_layer(lambda up, x, _: reference_backward(up, x, copy))(w)


@pytest.mark.parametrize(
    "answer, mistake, words",
    [
        (make_with_a_copy_of_w, "variable_not_read", "your layer read no variable"),
        (make_with_a_variable_copy_of_w, "variable_not_read", "that variable is not w"),
        (make_with_a_stale_w, "stale_variable", "after w.assign(...)"),
    ],
    ids=["copy read once", "another variable", "copy in the backward"],
)
def test_scaled_softplus_names_a_copy_of_w_made_with_the_layer(judge, answer, mistake, words):
    assert words in judge(check.scaled_softplus, answer, mistake).message


def float32_sigmoid(up, x, w):
    s = tf.cast(tf.sigmoid(tf.cast(w * x, tf.float32)), x.dtype)
    return up * w * s, [tf.reduce_sum(up * x * s)]


def test_scaled_softplus_names_a_float32_detour_that_flushes_tiny_slopes(judge):
    judge(check.scaled_softplus, make_layer(float32_sigmoid), "float32_not_float64")


def test_scaled_softplus_stub_inside_the_layer_is_not_attempted(judge, stub):
    judge(check.scaled_softplus, lambda w: stub, "not_attempted")


@pytest.mark.parametrize(
    "check_function",
    [check.log1pexp_stable, check.binarize_ste, check.clipped_upstream],
    ids=["3.1", "3.2", "3.3"],
)
def test_a_decorated_stub_is_not_attempted(judge, custom_gradient, stub, check_function):
    judge(check_function, custom_gradient(stub, stub), "not_attempted")
