"""Lesson 03's checks: each accepts the reference, names typical mistakes, spots stubs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import ExerciseNotSolved, Status
from autodiff_course.checks import lesson03 as check


def stub(*args):
    raise NotImplementedError()


def verdict(check_function, answer):
    result = check_function.evaluate(answer)
    return result.status, result.mistake


def custom(forward, backward):
    """A custom-gradient function from a forward rule and a backward(upstream, x) rule."""

    @tf.custom_gradient
    def answer(x):
        def grad(upstream):
            return backward(upstream, x)
        return forward(x), grad

    return answer


def raising(*args):
    raise ValueError("something broke")


# 3.1 stable log1pexp ---------------------------------------------------------

stable_log1pexp = custom(tf.nn.softplus, lambda up, x: up * tf.sigmoid(x))


@pytest.mark.parametrize("answer", [
    stable_log1pexp,
    custom(lambda x: tf.maximum(x, 0.0) + tf.math.log1p(tf.exp(-tf.abs(x))),
           lambda up, x: up / (1.0 + tf.exp(-x))),
    custom(tf.nn.softplus, lambda up, x: up * tf.exp(x - tf.nn.softplus(x))),
])
def test_log1pexp_accepts_stable_forms(answer):
    assert verdict(check.log1pexp_stable, answer) == (Status.CORRECT, None)


def naive(x):
    return tf.math.log(1.0 + tf.exp(x))


@tf.custom_gradient
def documented(x):
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))
    return tf.math.log(1 + e), grad


@pytest.mark.parametrize("answer, mistake", [
    # the tape differentiates log(1 + exp(x)) itself
    (naive, "forward_overflow"),
    # the documentation's rule, forward and backward
    (documented, "forward_overflow"),
    (custom(naive, lambda up, x: up * tf.sigmoid(x)), "forward_overflow"),
    (custom(lambda x: tf.where(x > 20.0, x, tf.math.log(1.0 + tf.exp(x))),
            lambda up, x: up * tf.sigmoid(x)), "forward_rounds_to_zero"),
    (custom(tf.nn.softplus, lambda up, x: up * tf.exp(x) * (1.0 / (1.0 + tf.exp(x)))),
     "flush_to_zero"),
    (custom(tf.nn.softplus, lambda up, x: up * tf.exp(x) / (1.0 + tf.exp(x))),
     "backward_overflow_nan"),
    (custom(tf.nn.softplus, lambda up, x: up * (1 - 1 / (1 + tf.exp(x)))),
     "documented_rule_cancellation"),
    (custom(tf.nn.softplus, lambda up, x: tf.sigmoid(x)), "forgot_upstream"),
    (custom(tf.nn.softplus, lambda up, x: up * tf.sigmoid(x) * tf.sigmoid(-x)),
     "differentiated_twice"),
    (custom(tf.nn.softplus, lambda up, x: up * tf.nn.softplus(x)), "value_as_gradient"),
    (custom(tf.nn.softplus, lambda up, x: up * tf.sigmoid(-x)), "sign_error"),
    (custom(tf.nn.softplus, lambda up, x: up * tf.sigmoid(2.0 * x)), "wrong_gradient"),
    (custom(tf.sigmoid, lambda up, x: up * tf.sigmoid(x)), "value_is_sigmoid"),
    (custom(tf.nn.softplus, lambda up, x: up * up * tf.sigmoid(x)), "other"),
    (lambda x: (tf.nn.softplus(x), lambda up: up * tf.sigmoid(x)), "forgot_decorator"),
    (custom(tf.nn.softplus, lambda up, x: None), "no_gradient"),
    (custom(tf.nn.softplus, lambda up, x: (up, up)), "grad_fn_raised"),
])
def test_log1pexp_names_the_mistake(answer, mistake):
    assert verdict(check.log1pexp_stable, answer) == (Status.WRONG, mistake)


def test_log1pexp_hint_lists_every_failure_mode_of_the_naive_function():
    result = check.log1pexp_stable.evaluate(naive)
    assert result.mistake == "forward_overflow"
    assert "Still 4 failure modes" in result.message
    for phrase in ("inf at x = 100", "0.0 at x = -17", "0.0 at x = 87.5", "nan"):
        assert phrase in result.message


# 3.2 straight-through estimator ----------------------------------------------

def ste(backward, forward=tf.sign):
    return custom(forward, backward)


def clipped_mask(x):
    return tf.cast(tf.abs(x) <= 1.0, x.dtype)


def test_binarize_reference():
    answer = ste(lambda up, x: up * clipped_mask(x))
    assert verdict(check.binarize_ste, answer) == (Status.CORRECT, None)


def test_binarize_accepts_the_stop_gradient_trick():
    def answer(x):
        clipped = tf.clip_by_value(x, -1.0, 1.0)
        return clipped + tf.stop_gradient(tf.sign(x) - clipped)
    assert verdict(check.binarize_ste, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (ste(lambda up, x: up), "not_clipped"),
    (ste(lambda up, x: clipped_mask(x)), "forgot_upstream"),
    (tf.sign, "no_straight_through"),
    (ste(lambda up, x: up * (1.0 - clipped_mask(x))), "inverted_clip"),
    (ste(lambda up, x: up * clipped_mask(x), forward=tf.identity), "forward_identity"),
    (ste(lambda up, x: up * clipped_mask(x), forward=tf.round), "forward_round"),
    (ste(lambda up, x: up * clipped_mask(x),
         forward=lambda x: tf.clip_by_value(x, -1.0, 1.0)), "forward_hardtanh"),
    (ste(lambda up, x: up * clipped_mask(x), forward=lambda x: 2.0 * tf.sign(x)),
     "wrong_value"),
    (ste(lambda up, x: 2.0 * up * clipped_mask(x)), "other"),
    (lambda x: tf.cast(tf.sign(x), tf.float64), "wrong_dtype"),
    (tf.round, "forward_round"),
])
def test_binarize_names_the_mistake(answer, mistake):
    assert verdict(check.binarize_ste, answer) == (Status.WRONG, mistake)


def test_binarize_none_gradient_is_explained():
    @tf.custom_gradient
    def answer(x):
        return tf.sign(x), lambda up: None
    result = check.binarize_ste.evaluate(answer)
    assert (result.status, result.mistake) == (Status.WRONG, "no_gradient")
    assert "None" in result.message


# 3.3 clipped upstream --------------------------------------------------------

def cube(backward, forward=lambda x: x**3):
    return custom(forward, backward)


def test_clipped_upstream_reference():
    answer = cube(lambda up, x: tf.clip_by_value(up, -1.0, 1.0) * 3.0 * x**2)
    assert verdict(check.clipped_upstream, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (cube(lambda up, x: tf.clip_by_value(up * 3.0 * x**2, -1.0, 1.0)),
     "clipped_after_local"),
    (cube(lambda up, x: up * 3.0 * x**2), "not_clipped"),
    (lambda x: x**3, "not_clipped"),
    (cube(lambda up, x: tf.clip_by_value(up, -1.0, 1.0)), "forgot_local_derivative"),
    (cube(lambda up, x: 3.0 * x**2), "forgot_upstream"),
    (cube(lambda up, x: tf.clip_by_value(3.0 * x**2, -1.0, 1.0)), "forgot_upstream"),
    (cube(lambda up, x: tf.clip_by_norm(up, 1.0) * 3.0 * x**2), "clipped_norm"),
    (cube(lambda up, x: tf.clip_by_value(up, -1.0, 1.0) * 3.0 * x**2,
          forward=lambda x: tf.clip_by_value(x**3, -1.0, 1.0)), "clipped_forward"),
    (cube(lambda up, x: tf.clip_by_value(up, -1.0, 1.0) * 3.0 * x**2,
          forward=lambda x: x**2), "wrong_value"),
    (cube(lambda up, x: tf.clip_by_value(up, -2.0, 2.0) * 3.0 * x**2), "other"),
])
def test_clipped_upstream_names_the_mistake(answer, mistake):
    assert verdict(check.clipped_upstream, answer) == (Status.WRONG, mistake)


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


def reference_backward(up, x, w):
    s = tf.sigmoid(w * x)
    return up * w * s, [tf.reduce_sum(up * x * s)]


def test_scaled_softplus_reference():
    assert verdict(check.scaled_softplus, make_layer(reference_backward)) == (
        Status.CORRECT, None)


def test_scaled_softplus_accepts_the_variables_argument():
    def make(w):
        @tf.custom_gradient
        def layer(x):
            def grad(upstream, variables=None):
                (v,) = variables
                s = tf.sigmoid(v * x)
                return upstream * v * s, [tf.reduce_sum(upstream * x * s)]
            return tf.nn.softplus(w * x), grad
        return layer

    assert verdict(check.scaled_softplus, make) == (Status.CORRECT, None)


def sig(w, x):
    return tf.sigmoid(w * x)


def make_without_variables_keyword(w):
    @tf.custom_gradient
    def layer(x):
        def grad(upstream):
            return upstream * w * sig(w, x)
        return tf.nn.softplus(w * x), grad
    return layer


@pytest.mark.parametrize("answer, mistake", [
    (make_layer(lambda up, x, w: (w * sig(w, x), [tf.reduce_sum(up * x * sig(w, x))])),
     "forgot_upstream"),
    (make_layer(lambda up, x, w: (up * w * sig(w, x), [tf.reduce_sum(x * sig(w, x))])),
     "forgot_upstream"),
    (make_layer(lambda up, x, w: (up * sig(w, x), [tf.reduce_sum(up * x * sig(w, x))])),
     "forgot_w"),
    (make_layer(lambda up, x, w: (up * w * sig(w, x), [tf.reduce_sum(up * sig(w, x))])),
     "forgot_x"),
    (make_layer(lambda up, x, w: (up * x * sig(w, x), [tf.reduce_sum(up * w * sig(w, x))])),
     "swapped_gradients"),
    (make_layer(lambda up, x, w: (up * w * sig(w, x), [up * x * sig(w, x)])),
     "variable_grad_not_reduced"),
    (make_layer(lambda up, x, w: (up * w * sig(w, x), tf.reduce_sum(up * x * sig(w, x)))),
     "variable_grads_not_list"),
    (make_layer(lambda up, x, w: (up * w * sig(w, x), [None])), "no_variable_gradient"),
    (make_without_variables_keyword, "no_variables_keyword"),
    (make_layer(reference_backward, forward=lambda w, x: w * tf.nn.softplus(x)),
     "value_not_scaled_inside"),
    (make_layer(reference_backward, forward=lambda w, x: tf.nn.softplus(x)),
     "wrong_value"),
    (make_layer(lambda up, x, w: (2.0 * up * w * sig(w, x),
                                  [tf.reduce_sum(up * x * sig(w, x))])), "other"),
    (lambda w: None, "returned_none"),
    (lambda w: tf.nn.softplus(w * 2.0), "not_a_function"),
    (lambda w: raising, "raised"),
])
def test_scaled_softplus_names_the_mistake(answer, mistake):
    assert verdict(check.scaled_softplus, answer) == (Status.WRONG, mistake)


def test_scaled_softplus_stub_inside_the_layer_is_not_attempted():
    def make(w):
        def layer(x):
            raise NotImplementedError()
        return layer
    assert verdict(check.scaled_softplus, make) == (Status.NOT_ATTEMPTED, "not_attempted")


# Every check: stubs, bad input, strict mode ----------------------------------

ALL_CHECKS = [check.log1pexp_stable, check.binarize_ste, check.clipped_upstream,
              check.scaled_softplus]
IDS = ["3.1", "3.2", "3.3", "3.4"]


@pytest.mark.parametrize("check_function", ALL_CHECKS, ids=IDS)
def test_stub_is_not_attempted(check_function):
    assert verdict(check_function, stub) == (Status.NOT_ATTEMPTED, "not_attempted")


@tf.custom_gradient
def decorated_stub(x):
    raise NotImplementedError()


@pytest.mark.parametrize("check_function", ALL_CHECKS[:3], ids=IDS[:3])
def test_decorated_stub_is_not_attempted(check_function):
    assert verdict(check_function, decorated_stub) == (Status.NOT_ATTEMPTED,
                                                       "not_attempted")


BAD_INPUTS = {
    "none": (None, "not_callable"),
    "not_callable": (3.0, "not_callable"),
    "raises": (raising, "raised"),
}
BAD_RESULTS = {  # for 3.1-3.3, which return a tensor shaped like x
    "returns_none": (lambda x: None, "returned_none"),
    "returns_numpy": (lambda x: np.asarray(x) * 0.0, "returned_numpy"),
    "wrong_shape": (lambda x: tf.reduce_sum(x), "wrong_shape"),
    "returns_list": (lambda x: [x, x], "returned_list"),
}


@pytest.mark.parametrize("check_function", ALL_CHECKS, ids=IDS)
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_wrong_with_a_hint(check_function, case):
    answer, mistake = BAD_INPUTS[case]
    result = check_function.evaluate(answer)
    assert (result.status, result.mistake) == (Status.WRONG, mistake)
    assert len(result.message) > 20


@pytest.mark.parametrize("check_function", ALL_CHECKS[:3], ids=IDS[:3])
@pytest.mark.parametrize("case", sorted(BAD_RESULTS))
def test_bad_result_is_wrong_with_a_hint(check_function, case):
    answer, mistake = BAD_RESULTS[case]
    result = check_function.evaluate(answer)
    assert (result.status, result.mistake) == (Status.WRONG, mistake)
    assert len(result.message) > 20


@pytest.mark.parametrize("case, mistake", [
    ("returns_none", "returned_none"),
    ("returns_numpy", "returned_numpy"),
    ("wrong_shape", "wrong_shape"),
])
def test_scaled_softplus_layer_with_bad_result(case, mistake):
    layer = BAD_RESULTS[case][0]
    result = check.scaled_softplus.evaluate(lambda w: layer)
    assert (result.status, result.mistake) == (Status.WRONG, mistake)


def test_scaled_softplus_wrong_shape_variable_gradient_names_its_shape():
    answer = make_layer(lambda up, x, w: (up * w * sig(w, x), [up * x * sig(w, x)]))
    assert "shape (5,)" in check.scaled_softplus.evaluate(answer).message


def test_strict_mode_raises_unless_correct(monkeypatch, capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    check.log1pexp_stable(stable_log1pexp)  # correct: no exception
    assert "✅" in capsys.readouterr().out
    with pytest.raises(ExerciseNotSolved):
        check.log1pexp_stable(naive)
    with pytest.raises(ExerciseNotSolved):
        check.binarize_ste(stub)


def test_lesson_mode_only_prints(monkeypatch, capsys):
    monkeypatch.delenv("AUTODIFF_COURSE_STRICT", raising=False)
    check.clipped_upstream(stub)
    check.scaled_softplus(None)
    out = capsys.readouterr().out
    assert "⏳ Exercise 3.3" in out and "❌ Exercise 3.4" in out
