"""Lesson 05's checks: each accepts the reference, names typical mistakes, spots stubs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import ExerciseNotSolved, Status
from autodiff_course.checks import lesson05 as check


def stub(*args):
    raise NotImplementedError()


def verdict(check_function, answer):
    result = check_function.evaluate(answer)
    return result.status, result.mistake


# 5.1 the Jacobian of x * sigmoid(x) -------------------------------------------

def swish(x):
    return x * tf.sigmoid(x)


def swish_by_tape(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = swish(x)
    return tape.jacobian(y, x)


def swish_by_hand(x):
    s = tf.sigmoid(x)
    return tf.linalg.diag(s + x * s * (1.0 - s))


def swish_gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = swish(x)
    return tape.gradient(y, x)


@pytest.mark.parametrize("answer", [swish_by_tape, swish_by_hand])
def test_swish_jacobian_reference(answer):
    assert verdict(check.swish_jacobian, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (swish_gradient, "returned_diagonal"),
    (lambda x: tf.linalg.diag(tf.sigmoid(x)), "missed_product_rule"),
    (lambda x: tf.linalg.diag(x * tf.sigmoid(x) * (1 - tf.sigmoid(x))), "half_product_rule"),
    (lambda x: tf.linalg.diag(swish(x)), "value_not_derivative"),
    (lambda x: tf.ones((5, 1)) * tf.linalg.diag_part(swish_by_hand(x)), "off_diagonal_nonzero"),
    (lambda x: tf.linalg.diag_part(swish_by_hand(x))[:, None] * tf.ones((1, 5)),
     "off_diagonal_nonzero"),
    (lambda x: -swish_by_hand(x), "other"),
    (lambda x: x, "wrong_shape"),
    (lambda x: swish_by_hand(x)[:4], "wrong_shape"),
    (lambda x: swish_by_hand(x).numpy(), "returned_numpy"),
    (lambda x: tf.cast(swish_by_hand(x), tf.float64), "wrong_dtype"),
    (lambda x: None, "returned_none"),
])
def test_swish_jacobian_names_the_mistake(answer, mistake):
    assert verdict(check.swish_jacobian, answer) == (Status.WRONG, mistake)


# 5.2 a Jacobian row by row -----------------------------------------------------

def rows_reference(f, x):
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    rows = [tape.gradient(y, x, output_gradients=tf.one_hot(i, y.shape[0]))
            for i in range(y.shape[0])]
    del tape
    return tf.stack(rows)


def rows_with(persistent=True, watch=True, upstream=None, axis=0, reverse=False):
    def answer(f, x):
        with tf.GradientTape(persistent=persistent) as tape:
            if watch:
                tape.watch(x)
            y = f(x)
        m = y.shape[0]
        rows = [tape.gradient(y, x, output_gradients=(upstream(i, m) if upstream
                                                       else tf.one_hot(i, m)))
                for i in range(m)]
        if reverse:
            rows = rows[::-1]
        return tf.stack(rows, axis=axis)
    return answer


def rows_by_jacobian(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.jacobian(y, x)


def rows_gradient(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


@pytest.mark.parametrize("answer", [rows_reference, rows_with(), rows_by_jacobian])
def test_jacobian_by_rows_reference(answer):
    assert verdict(check.jacobian_by_rows, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (rows_with(axis=1), "stacked_columns"),
    (rows_with(upstream=lambda i, m: tf.ones(m)), "ones_upstream"),
    (rows_gradient, "returned_gradient"),
    (rows_with(persistent=False), "not_persistent"),
    (rows_with(watch=False), "not_watched"),
    (rows_with(reverse=True), "rows_reversed"),
    (rows_with(upstream=lambda i, m: 2.0 * tf.one_hot(i, m)), "other"),
    (lambda f, x: rows_reference(f, x).numpy(), "returned_numpy"),
    (lambda f, x: f(x), "wrong_shape"),
    (lambda f, x: None, "returned_none"),
])
def test_jacobian_by_rows_names_the_mistake(answer, mistake):
    assert verdict(check.jacobian_by_rows, answer) == (Status.WRONG, mistake)


def test_not_persistent_hint_names_the_fix():
    result = check.jacobian_by_rows.evaluate(rows_with(persistent=False))
    assert "persistent=True" in result.message


# 5.3 per-example Jacobians ----------------------------------------------------

def per_example_with(method="batch_jacobian", watch=True, swap=False):
    def answer(layer, x):
        with tf.GradientTape() as tape:
            if watch:
                tape.watch(x)
            y = layer(x)
        if method == "gradient":
            return tape.gradient(y, x)
        target, source = (x, y) if swap else (y, x)
        return getattr(tape, method)(target, source)
    return answer


def per_example_diagonal_blocks(layer, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    full = tape.jacobian(y, x)
    return tf.stack([full[b, :, b, :] for b in range(x.shape[0])])


@pytest.mark.parametrize("answer", [per_example_with(), per_example_diagonal_blocks])
def test_per_example_jacobian_reference(answer):
    assert verdict(check.per_example_jacobian, answer) == (Status.CORRECT, None)


def transposed_per_example(layer, x):
    return tf.transpose(per_example_with()(layer, x), [0, 2, 1])


@pytest.mark.parametrize("answer, mistake", [
    (per_example_with("jacobian"), "used_jacobian"),
    (transposed_per_example, "transposed"),
    (per_example_with(swap=True), "swapped_arguments"),
    (per_example_with("gradient"), "returned_gradient"),
    (lambda layer, x: per_example_with()(layer, x)[0], "single_example"),
    (per_example_with(watch=False), "not_watched"),
    (lambda layer, x: tf.tile(tf.constant(check.LAYER_W.T[None], tf.float32), [4, 1, 1]),
     "forgot_activation"),
    (lambda layer, x: 2.0 * per_example_with()(layer, x), "other"),
    (lambda layer, x: per_example_with()(layer, x).numpy(), "returned_numpy"),
    (lambda layer, x: per_example_with()(layer, x)[:, :1], "wrong_shape"),
    (lambda layer, x: None, "returned_none"),
])
def test_per_example_jacobian_names_the_mistake(answer, mistake):
    assert verdict(check.per_example_jacobian, answer) == (Status.WRONG, mistake)


def test_rank_one_batch_jacobian_error_is_reported_plainly():
    def rank_one(layer, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(layer(x), axis=1)
        return tape.batch_jacobian(y, x)
    result = check.per_example_jacobian.evaluate(rank_one)
    assert result.status is Status.WRONG and result.mistake == "raised"
    assert "rank at least 2" in result.message


# 5.4 the diagonal blocks of a full Jacobian -----------------------------------

def blocks_reference(full):
    return tf.stack([full[b, :, b, :] for b in range(full.shape[0])])


def blocks_by_diag_part(full):
    moved = tf.transpose(full, [1, 3, 0, 2])          # (outs, ins, batch, batch)
    return tf.transpose(tf.linalg.diag_part(moved), [2, 0, 1])


@pytest.mark.parametrize("answer", [blocks_reference, blocks_by_diag_part])
def test_diagonal_blocks_reference(answer):
    assert verdict(check.diagonal_blocks, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (lambda full: tf.transpose(tf.reduce_sum(full, axis=0), [1, 0, 2]), "summed_blocks"),
    (lambda full: tf.reduce_sum(full, axis=0), "summed_blocks"),
    (lambda full: tf.reduce_sum(full, axis=2), "summed_rows"),
    (lambda full: full[:, :, 0, :], "first_column"),
    (lambda full: full[0], "first_block_row"),
    (lambda full: tf.transpose(blocks_reference(full), [0, 2, 1]), "transposed"),
    (tf.linalg.diag_part, "diag_part_last_two"),
    (lambda full: -blocks_reference(full), "other"),
    (lambda full: blocks_reference(full).numpy(), "returned_numpy"),
    (lambda full: full, "wrong_shape"),
    (lambda full: None, "returned_none"),
])
def test_diagonal_blocks_names_the_mistake(answer, mistake):
    assert verdict(check.diagonal_blocks, answer) == (Status.WRONG, mistake)


# 5.5 the Hessian --------------------------------------------------------------

def hessian_with(inside=True, method="jacobian", zero=False):
    def answer(f, x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x)
            if inside:
                g = inner.gradient(y, x)
        if not inside:
            g = inner.gradient(y, x)
        if method == "gradient":
            return outer.gradient(g, x)
        if zero:
            return outer.jacobian(g, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        return outer.jacobian(g, x)
    return answer


def first_gradient(f, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_hessian_reference():
    assert verdict(check.hessian, hessian_with()) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (hessian_with(inside=False), "inner_gradient_outside"),
    (hessian_with(inside=False, zero=True), "inner_gradient_outside"),
    (first_gradient, "returned_gradient"),
    (hessian_with(method="gradient"), "gradient_of_gradient"),
    (lambda f, x: tf.linalg.diag(tf.linalg.diag_part(hessian_with()(f, x))), "diagonal_only"),
    (lambda f, x: first_gradient(f, x)[:, None] * first_gradient(f, x)[None, :],
     "gradient_outer_product"),
    (lambda f, x: hessian_with()(f, x) + 1.0, "other"),
    (lambda f, x: hessian_with()(f, x).numpy(), "returned_numpy"),
    (lambda f, x: tf.reshape(hessian_with()(f, x), (9,)), "wrong_shape"),
])
def test_hessian_names_the_mistake(answer, mistake):
    assert verdict(check.hessian, answer) == (Status.WRONG, mistake)


def test_hessian_none_hint_names_the_outer_block():
    result = check.hessian.evaluate(hessian_with(inside=False))
    assert "outer `with` block" in result.message


# 5.6 a JVP in forward mode -----------------------------------------------------

def jvp_with(tangent=None, inside=True, primal=False):
    def answer(f, x, v):
        with tf.autodiff.ForwardAccumulator(primals=x,
                                            tangents=v if tangent is None else tangent(v)) as acc:
            if inside:
                y = f(x)
        if not inside:
            y = f(x)
        return y if primal else acc.jvp(y)
    return answer


def vjp_answer(f, x, v):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x, output_gradients=v)


def full_jacobian(f, x, v):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.jacobian(y, x)


@pytest.mark.parametrize("answer", [
    jvp_with(), lambda f, x, v: tf.linalg.matvec(full_jacobian(f, x, v), v)])
def test_jvp_reference(answer):
    assert verdict(check.jvp, answer) == (Status.CORRECT, None)


@pytest.mark.parametrize("answer, mistake", [
    (jvp_with(inside=False), "computed_outside"),
    (full_jacobian, "returned_jacobian"),
    (vjp_answer, "vjp_instead"),
    (jvp_with(primal=True), "returned_primal"),
    (jvp_with(tangent=tf.ones_like), "ignored_tangent"),
    (jvp_with(tangent=lambda v: -v), "other"),
    (lambda f, x, v: jvp_with()(f, x, v).numpy(), "returned_numpy"),
    (lambda f, x, v: jvp_with()(f, x, v)[:2], "wrong_shape"),
])
def test_jvp_names_the_mistake(answer, mistake):
    assert verdict(check.jvp, answer) == (Status.WRONG, mistake)


# every exercise ------------------------------------------------------------------

ALL_CHECKS = [check.swish_jacobian, check.jacobian_by_rows, check.per_example_jacobian,
              check.diagonal_blocks, check.hessian, check.jvp]
REFERENCES = {"5.1": swish_by_tape, "5.2": rows_reference, "5.3": per_example_with(),
              "5.4": blocks_reference, "5.5": hessian_with(), "5.6": jvp_with()}


def test_exercise_numbers_are_in_order():
    assert [c.exercise for c in ALL_CHECKS] == ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6"]


@pytest.mark.parametrize("check_function", ALL_CHECKS, ids=lambda c: c.exercise)
@pytest.mark.parametrize("returned", [
    lambda: None, lambda: np.zeros((2, 2)), lambda: tf.zeros((7, 7, 7)), lambda: "text",
    lambda: [tf.zeros(3)]])
def test_bad_return_values_get_a_hint_not_a_traceback(check_function, returned):
    result = check_function.evaluate(lambda *args: returned())
    assert result.status is Status.WRONG
    assert result.mistake not in (None, "unjudgeable")
    assert len(result.message) > 20


@pytest.mark.parametrize("check_function", ALL_CHECKS, ids=lambda c: c.exercise)
def test_verdicts_print_in_lessons_and_raise_only_in_strict_mode(check_function, monkeypatch,
                                                                  capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "0")
    check_function(stub)
    assert "⏳ Exercise" in capsys.readouterr().out
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    with pytest.raises(ExerciseNotSolved):
        check_function(stub)
    check_function(REFERENCES[check_function.exercise])
    assert "✅ Exercise" in capsys.readouterr().out
