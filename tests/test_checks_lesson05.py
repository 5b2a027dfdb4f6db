"""Lesson 05's checks: each accepts right answers written otherwise than the solution
(nbval runs the solution itself, in strict mode) and names the mistake in wrong ones.

Wrong answers are rows of tables, most built by a factory that changes one line of a
correct answer (``rows_with``, ``per_example_with``, ...). The ``judge`` fixture is in
tests/conftest.py; the promises every check keeps whatever its lesson are tested once
for all in tests/test_checker_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checking.jacobian_rows import jacobians_row_by_row
from autodiff_course.checks import lesson05 as check


def by_differences(function, x, h, axis, along_last=False):
    """Central differences of ``function`` along every unit vector of x (shaped like x;
    with ``along_last``, of x's last axis, the same step for every row), stacked along
    ``axis``: right to about h**2, and no automatic differentiation."""
    h = tf.constant(h, x.dtype)
    columns = []
    for e in tf.unstack(tf.eye(x.shape[-1] if along_last else int(tf.size(x)), dtype=x.dtype)):
        e = e if along_last else tf.reshape(e, x.shape)
        columns.append((function(x + h * e) - function(x - h * e)) / (2 * h))
    return tf.stack(columns, axis=axis)


def recorded(f, x, persistent=False, watch=True):
    """A tape that recorded y = f(x)."""
    tape = tf.GradientTape(persistent=persistent)
    with tape:
        if watch:
            tape.watch(x)
        y = f(x)
    return tape, y


# 5.1 the Jacobian of x * sigmoid(x) -------------------------------------------


def swish(x):
    return x * tf.sigmoid(x)


def swish_by_tape(x):
    tape, y = recorded(swish, x)
    return tape.jacobian(y, x)


def swish_by_hand(x):
    s = tf.sigmoid(x)
    return tf.linalg.diag(s + x * s * (1.0 - s))


def swish_diag(values_of):
    return lambda x: tf.linalg.diag(values_of(x, tf.sigmoid(x)))


def swish_with_float32_sigmoid(x):
    """The hand formula, right, with only the sigmoid computed in float32."""
    s = tf.cast(tf.sigmoid(tf.cast(x, tf.float32)), x.dtype)
    return tf.linalg.diag(s + x * s * (1.0 - s))


def memorised_by_function(answer):
    """The answer's result for the first call with each function or layer, whatever x:
    state kept between calls, keyed on the object handed over."""
    seen = {}

    def memorised(f, x):
        if id(f) not in seen:
            seen[id(f)] = answer(f, x)
        return seen[id(f)]

    return memorised


def memorised_by_shape(answer):
    """The answer's result for the first input of each shape, whatever the numbers: state
    kept between calls."""
    seen = {}

    def memorised(*args):
        key = tuple(tuple(a.shape) for a in args if hasattr(a, "shape"))
        if key not in seen:
            seen[key] = answer(*args)
        return seen[key]

    return memorised


def test_swish_jacobian_accepts_the_formula(judge):
    judge(check.swish_jacobian, swish_by_hand)


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (lambda x: (lambda tape, y: tape.gradient(y, x))(*recorded(swish, x)), "returned_diagonal"),
        (swish_diag(lambda x, s: s), "missed_product_rule"),
        (  # the sigmoid as e^x / (1 + e^x): inf / inf at x = 100 (float32), 800 (float64)
            lambda x: tf.linalg.diag((lambda s: s + x * s * (1 - s))(tf.exp(x) / (1 + tf.exp(x)))),
            "nan_or_inf",
        ),
        (swish_diag(lambda x, s: x * s * (1 - s)), "half_product_rule"),
        (swish_diag(lambda x, s: s * (1 - s)), "half_product_rule"),
        (swish_diag(lambda x, s: s + x * s * s), "sigmoid_squared"),
        (swish_diag(lambda x, s: s - x * s * (1 - s)), "product_rule_sign"),
        (swish_diag(lambda x, s: s + s * (1 - s)), "product_rule_lost_x"),
        (swish_diag(lambda x, s: x * s), "value_not_derivative"),
        (swish_diag(lambda x, s: s + x * (1 - s)), "sigmoid_slope_one_factor"),
        (swish_diag(lambda x, s: s + x * s), "sigmoid_slope_one_factor"),
        (
            lambda x: tf.ones_like(x)[:, None] * tf.linalg.diag_part(swish_by_hand(x))[None, :],
            "off_diagonal_nonzero",
        ),
        (  # the derivative broadcast down the columns, and the identity added to it
            lambda x: tf.linalg.diag_part(swish_by_hand(x))[:, None] * tf.ones_like(x)[None, :],
            "off_diagonal_nonzero",
        ),
        (  # an outer product of the derivatives
            lambda x: (lambda d: d[:, None] * d[None, :])(tf.linalg.diag_part(swish_by_tape(x))),
            "off_diagonal_nonzero",
        ),
        (lambda x: -swish_by_hand(x), "sign_flipped"),
        (lambda x: 2.0 * swish_by_hand(x), "scale_factor"),
        (lambda x: tf.cast(swish_by_hand(tf.cast(x, tf.float32)), x.dtype), "float32_not_float64"),
        (lambda x: swish_by_tape(tf.cast(x, tf.float32)), "float32_not_float64"),
        (swish_with_float32_sigmoid, "float32_not_float64"),  # by hand: no estimate
        (
            lambda x: (lambda tape, y: tape.jacobian(y, x))(*recorded(swish, x, watch=False)),
            "unwatched_constant",
        ),
        (lambda x: tf.linalg.diag(0.5 + 0 * x), "hard_coded"),
        (lambda x: swish_by_hand(x)[:, :1], "wrong_shape"),
        (lambda x: tf.squeeze(swish_by_tape(x)), "broadcast_shape"),
        (lambda x: swish_by_hand(x)[:, :, None], "broadcast_shape"),
        (memorised_by_shape(swish_by_hand), "keeps_state"),
    ],
)
def test_swish_jacobian_names_the_mistake(judge, answer, mistake):
    judge(check.swish_jacobian, answer, mistake)


def test_swish_finite_differences_are_named(judge):
    def by_differences(x):
        h = tf.constant(1e-6, x.dtype)
        return tf.linalg.diag((swish(x + h) - swish(x - h)) / (2 * h))

    judge(check.swish_jacobian, by_differences, "finite_differences")


def test_a_float32_sigmoid_by_hand_is_not_called_an_estimate():
    message = check.swish_jacobian.evaluate(swish_with_float32_sigmoid).message
    assert "float32" in message and "finite-difference" not in message, message


def test_a_missing_sigmoid_factor_is_named():
    message = check.swish_jacobian.evaluate(swish_diag(lambda x, s: s + x * (1 - s))).message
    assert "factor sigmoid(x) is missing" in message, message


def test_a_squeeze_is_named_as_one():
    message = check.swish_jacobian.evaluate(lambda x: tf.squeeze(swish_by_tape(x))).message
    assert "tf.squeeze" in message and "size 1 was dropped" in message, message


# 5.2 a Jacobian row by row -----------------------------------------------------


def rows_with(persistent=True, watch=True, upstream=None, axis=0, rows=None, dtype=True):
    def answer(f, x):
        tape, y = recorded(f, x, persistent=persistent, watch=watch)
        m = y.shape[0] if rows is None else rows
        kind = y.dtype if dtype else tf.float32
        result = [
            tape.gradient(
                y,
                x,
                output_gradients=(
                    upstream(i, m, kind) if upstream else tf.one_hot(i, m, dtype=kind)
                ),
            )
            for i in range(m)
        ]
        return tf.stack(result, axis=axis)

    return answer


def rows_by_slicing(f, x):
    rows = []
    for i in range(f(x).shape[0]):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y_i = f(x)[i]
        rows.append(tape.gradient(y_i, x))
    return tf.stack(rows)


def rows_by_jacobian(f, x):
    tape, y = recorded(f, x)
    return tape.jacobian(y, x)


def rows_by_forward_mode(f, x):
    n = x.shape[0]
    columns = []
    for j in range(n):
        with tf.autodiff.ForwardAccumulator(x, tf.one_hot(j, n, dtype=x.dtype)) as acc:
            y = f(x)
        columns.append(acc.jvp(y))
    return tf.stack(columns, axis=1)


def rows_by_differences(f, x):
    return by_differences(f, x, 1e-4, axis=1)


def rows_one_tape_each(f, x):
    """One tape per row, each recording f(x) again, with output_gradients as asked."""
    rows, m = [], f(x).shape[0]
    for i in range(m):
        tape, y = recorded(f, x)
        rows.append(tape.gradient(y, x, output_gradients=tf.one_hot(i, m, dtype=x.dtype)))
    return tf.stack(rows)


def rows_of_the_first_size(f, x, _size=[]):  # noqa: B006 - the state under test
    """The number of rows read once, on the first call, and kept."""
    tape, y = recorded(f, x, persistent=True)
    _size[:] = _size or [y.shape[0]]
    one_hot = [tf.one_hot(i, _size[0], dtype=x.dtype) for i in range(_size[0])]
    return tf.stack([tape.gradient(y, x, output_gradients=e) for e in one_hot])


def rows_of_a_typed_count(f, x):
    """The rows of the first three outputs only."""
    tape, y = recorded(f, x, persistent=True)
    one_hot = [tf.one_hot(i, y.shape[0], dtype=x.dtype) for i in range(3)]
    return tf.stack([tape.gradient(y, x, output_gradients=e) for e in one_hot])


def rows_over_inputs(f, x):
    """One row per input, not per output: one_hot(i, m) is all zeros for i >= m."""
    tape, y = recorded(f, x, persistent=True)
    m, n = y.shape[0], x.shape[0]
    one_hot = [tf.one_hot(i, m, dtype=x.dtype) for i in range(n)]
    return tf.stack([tape.gradient(y, x, output_gradients=e) for e in one_hot])


def test_jacobian_by_rows_accepts_other_spellings(judge):
    def by_unstacking_eye(f, x):
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = f(x)
        eye = tf.eye(int(tf.size(y)), dtype=y.dtype)
        return tf.stack([tape.gradient(y, x, output_gradients=e) for e in tf.unstack(eye)])

    judge(check.jacobian_by_rows, by_unstacking_eye)


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (rows_by_jacobian, "used_jacobian"),
        (rows_by_forward_mode, "no_output_gradients"),
        (rows_by_differences, "finite_differences"),
        (rows_by_slicing, "re_recorded"),
        (rows_one_tape_each, "re_recorded"),
        (rows_with(axis=1), "transposed"),
        (rows_with(upstream=lambda i, m, kind: tf.ones(m, kind)), "ones_upstream"),
        (lambda f, x: (lambda tape, y: tape.gradient(y, x))(*recorded(f, x)), "returned_gradient"),
        (rows_with(persistent=False), "not_persistent"),
        (rows_with(watch=False), "unwatched_constant"),
        (rows_with(dtype=False), "float32_not_float64"),
        (rows_with(rows=3), "upstream_shape"),
        (rows_of_a_typed_count, "hard_coded_size"),
        (rows_over_inputs, "rows_per_input"),
        (lambda f, x: tf.squeeze(rows_with()(f, x)), "broadcast_shape"),
        (memorised_by_shape(rows_with()), "keeps_state"),
        (rows_of_the_first_size, "keeps_state"),
        (rows_with(upstream=lambda i, m, kind: -tf.one_hot(i, m, dtype=kind)), "sign_flipped"),
        (lambda f, x: rows_with()(f, x)[::-1], "reversed_order"),
        (lambda f, x: tf.cast(rows_with()(f, x), tf.float32), "float32_not_float64"),
    ],
)
def test_jacobian_by_rows_names_the_mistake(judge, answer, mistake):
    judge(check.jacobian_by_rows, answer, mistake)


def test_not_persistent_hint_names_the_fix():
    assert "persistent=True" in check.jacobian_by_rows.evaluate(rows_with(persistent=False)).message


def test_rows_per_input_hint_says_one_row_per_output():
    message = check.jacobian_by_rows.evaluate(rows_over_inputs).message
    assert "one row per output" in message and "y.shape[0]" in message, message


def test_the_dtype_hint_is_given_once():
    message = check.jacobian_by_rows.evaluate(rows_with(dtype=False)).message
    assert message.count("dtype=y.dtype") == 1 and message.count("but its target is") == 1, message


# 5.3 per-example Jacobians ----------------------------------------------------


def per_example_with(method="batch_jacobian", watch=True, swap=False):
    def answer(layer, x):
        tape, y = recorded(layer, x, watch=watch)
        if method == "gradient":
            return tape.gradient(y, x)
        target, source = (x, y) if swap else (y, x)
        return getattr(tape, method)(target, source)

    return answer


def per_example_diagonal_blocks(layer, x):
    tape, y = recorded(layer, x)
    full = tape.jacobian(y, x)
    return tf.stack([full[b, :, b, :] for b in range(x.shape[0])])


def test_per_example_jacobian_accepts_the_diagonal_blocks(judge):
    judge(check.per_example_jacobian, per_example_diagonal_blocks)


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (per_example_with("jacobian"), "returned_full_jacobian"),
        (lambda layer, x: tf.transpose(per_example_with()(layer, x), [0, 2, 1]), "transposed"),
        (per_example_with(swap=True), "swapped_arguments"),
        (per_example_with("gradient"), "returned_gradient"),
        (lambda layer, x: per_example_with()(layer, x)[0], "single_example"),
        (
            lambda layer, x: (
                lambda tape, y: tf.stack(
                    [tape.jacobian(y, x)[b, :, 0, :] for b in range(x.shape[0])]
                )
            )(*recorded(layer, x, persistent=True)),
            "first_column",
        ),
        (per_example_with(watch=False), "unwatched_constant"),
        (
            lambda layer, x: per_example_with()(
                lambda z: tf.reduce_sum(layer(z), axis=1, keepdims=True), x
            ),
            "summed_outputs",
        ),
        (
            lambda layer, x: (lambda j: tf.tile(j[:1], [x.shape[0], 1, 1]))(
                per_example_with()(layer, x)
            ),
            "repeated_slice",
        ),
        (lambda layer, x: 0.5 * per_example_with()(layer, x), "scale_factor"),
        (lambda layer, x: tf.cast(per_example_with()(layer, x), tf.float32), "float32_not_float64"),
        (lambda layer, x: tf.squeeze(per_example_with()(layer, x)), "broadcast_shape"),
        (memorised_by_shape(per_example_with()), "keeps_state"),
        (memorised_by_function(per_example_with()), "keeps_state"),
    ],
)
def test_per_example_jacobian_names_the_mistake(judge, answer, mistake):
    judge(check.per_example_jacobian, answer, mistake)


# 5.4 a batch_jacobian that stays right when examples interact -----------------


def own_blocks_by_gather(layer, x):
    tape, y = recorded(layer, x)
    full = tape.jacobian(y, x)
    return tf.stack([tf.gather(full[b], b, axis=len(y.shape) - 1) for b in range(x.shape[0])])


def own_blocks_axis_from_x(layer, x, sliced=False):
    """The source's batch axis of full[b] counted from x's rank, not y's: right only where
    y and x have the same rank (else an index past an axis's end)."""
    tape, y = recorded(layer, x)
    full = tape.jacobian(y, x)
    axis = len(x.shape) - 1
    if sliced:
        return tf.stack([full[b][(slice(None),) * axis + (b,)] for b in range(x.shape[0])])
    return tf.stack([tf.gather(full[b], b, axis=axis) for b in range(x.shape[0])])


def own_blocks_gathered_without_axis(layer, x):
    """tf.gather(full[b], b) without axis=: index b on y's first axis (past its end, here)."""
    tape, y = recorded(layer, x)
    full = tape.jacobian(y, x)
    return tf.stack([tf.gather(full[b], b) for b in range(x.shape[0])])


def own_blocks_with(take, transposed=False):
    """take(full (B, O, B, I), b) -> a block of shape (O, I), reshaped back (with the
    source's axes first when ``transposed``)."""

    def answer(layer, x):
        tape, y = recorded(layer, x)
        batch, outs, ins = x.shape[0], y.shape[1:], x.shape[1:]
        full = tf.reshape(
            tape.jacobian(y, x), [batch, outs.num_elements(), batch, ins.num_elements()]
        )
        blocks = tf.stack([take(full, b) for b in range(batch)])
        return tf.reshape(blocks, [batch, *ins, *outs] if transposed else [batch, *outs, *ins])

    return answer


def own_blocks_one_example_at_a_time(layer, x):
    """The layer called on each example alone: right for independent examples only."""
    blocks = []
    for b in range(x.shape[0]):
        example = x[b : b + 1]
        tape, y = recorded(layer, example, persistent=True)
        blocks.append(tape.jacobian(y, example, experimental_use_pfor=False)[0, :, 0])
    return tf.stack(blocks)


def test_true_batch_jacobian_accepts_any_rank(judge):
    judge(check.true_batch_jacobian, own_blocks_with(lambda full, b: full[b, :, b, :]))


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (per_example_with(), "batch_jacobian_sums"),
        (own_blocks_with(lambda full, b: tf.reduce_sum(full[b], axis=1)), "summed_rows"),
        (own_blocks_with(lambda full, b: full[b, :, 0, :]), "first_column"),
        (own_blocks_with(lambda full, b: full[0, :, b, :]), "first_row"),
        (own_blocks_with(lambda full, b: full[b, :, (b + 1) % full.shape[0], :]), "other_block"),
        (own_blocks_with(lambda full, b: full[0, :, 0, :]), "repeated_slice"),
        (per_example_diagonal_blocks, "rank_two_only"),
        (
            lambda layer, x: (
                lambda tape, y: tf.linalg.diag_part(
                    tf.reshape(tape.jacobian(y, x), [tf.size(y), tf.size(x)])
                )
            )(*recorded(layer, x)),
            "diagonal_entries",
        ),
        (
            lambda layer, x: (lambda tape, y: tape.jacobian(y, x))(*recorded(layer, x)),
            "returned_full_jacobian",
        ),
        (lambda layer, x: own_blocks_by_gather(layer, x)[:2], "hard_coded_size"),
        (per_example_with(watch=False), "unwatched_constant"),
        (
            own_blocks_with(lambda full, b: tf.transpose(full[b, :, b, :]), transposed=True),
            "transposed",
        ),
        (lambda layer, x: -own_blocks_by_gather(layer, x), "sign_flipped"),
        (
            lambda layer, x: tf.cast(own_blocks_by_gather(layer, x), tf.float32),
            "float32_not_float64",
        ),
        (own_blocks_one_example_at_a_time, "called_on_slices"),
        (lambda layer, x: tf.squeeze(own_blocks_by_gather(layer, x)), "broadcast_shape"),
        (memorised_by_shape(own_blocks_by_gather), "keeps_state"),
        (own_blocks_axis_from_x, "axis_from_wrong_rank"),
        (lambda layer, x: own_blocks_axis_from_x(layer, x, sliced=True), "axis_from_wrong_rank"),
        (own_blocks_gathered_without_axis, "first_axis_not_batch"),
    ],
)
def test_true_batch_jacobian_names_the_mistake(judge, answer, mistake):
    judge(check.true_batch_jacobian, answer, mistake)


def test_an_axis_from_xs_rank_is_named():
    message = check.true_batch_jacobian.evaluate(own_blocks_axis_from_x).message
    assert "different ranks" in message and "from x's rank" in message, message
    assert "axis len(y.shape) - 1 of its slice full[b]" in message, message


def test_a_layer_called_one_example_at_a_time_is_not_called_a_cut_path():
    message = check.true_batch_jacobian.evaluate(own_blocks_one_example_at_a_time).message
    assert "part of the batch" in message and "path was cut" not in message, message


@pytest.mark.parametrize("typed", [3, 5])
def test_true_batch_jacobian_names_a_typed_in_range_on_every_call(judge, typed):
    def typed_in(layer, x):
        tape, y = recorded(layer, x)
        full = tape.jacobian(y, x)
        return tf.stack([tf.gather(full[b], b, axis=len(y.shape) - 1) for b in range(typed)])

    # fresh batch sizes on each call: a typed-in range never passes
    judge(check.true_batch_jacobian, typed_in, "hard_coded_size", runs=3)


# 5.5 per-example Hessians -------------------------------------------------------


def hessians_with(inside=True, method="batch_jacobian", watch_outer=True, scale=None):
    def answer(f, x):
        with tf.GradientTape() as outer:
            if watch_outer:
                outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = f(x) if scale is None else scale(f(x))
            if inside:
                g = inner.gradient(y, x)
        if not inside:
            g = inner.gradient(y, x)
        if method == "gradient":
            return outer.gradient(g, x)
        return getattr(outer, method)(g, x)

    return answer


def hessians_one_example_at_a_time(f, x):
    """Nested tapes for each example's row alone, its Hessian as a looped jacobian (no
    pfor: one trace per example would be slow), stacked."""
    found = []
    for b in range(x.shape[0]):
        row = x[b : b + 1]
        with tf.GradientTape(persistent=True) as outer:
            outer.watch(row)
            with tf.GradientTape() as inner:
                inner.watch(row)
                value = f(row)
            g = inner.gradient(value, row)[0]
        found.append(outer.jacobian(g, row, experimental_use_pfor=False)[:, 0])
    return tf.stack(found)


def gradients_of(f, x):
    tape, y = recorded(f, x)
    return tape.gradient(y, x)


def hessians_by_differences(f, x):  # the columns of each example's Hessian, estimated
    return by_differences(lambda z: gradients_of(f, z), x, 1e-5, axis=2, along_last=True)


def hessians_forward_over_reverse(f, x):
    """Column j of every Hessian as the JVP of the gradients along e_j: a ForwardAccumulator
    around one tape (forward over reverse), where nested tapes are asked for."""
    columns = []
    for j in range(x.shape[1]):
        tangent = tf.ones_like(x) * tf.one_hot(j, x.shape[1], dtype=x.dtype)
        with tf.autodiff.ForwardAccumulator(x, tangent) as acc:
            g = gradients_of(f, x)
        columns.append(acc.jvp(g))
    return tf.stack(columns, axis=2)


def test_per_example_hessians_accepts_one_example_at_a_time(judge):
    judge(check.per_example_hessians, hessians_one_example_at_a_time)


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (hessians_by_differences, "not_nested"),
        (hessians_with(inside=False), "gradient_outside_tape"),
        (hessians_with(watch_outer=False), "outer_not_watching"),
        (hessians_with(method="jacobian"), "returned_full_jacobian"),
        (gradients_of, "returned_gradient"),
        (hessians_with(method="gradient"), "gradient_of_gradient"),
        (
            lambda f, x: tf.linalg.diag(hessians_with(method="gradient")(f, x)),
            "gradient_of_gradient",
        ),
        (lambda f, x: tf.linalg.diag(tf.linalg.diag_part(hessians_with()(f, x))), "diagonal_only"),
        (
            lambda f, x: (lambda g: g[:, :, None] * g[:, None, :])(gradients_of(f, x)),
            "gradient_outer_product",
        ),
        (hessians_with(scale=tf.reduce_mean), "mean_not_sum"),
        (hessians_with(scale=lambda v: 2.0 * v), "scale_factor"),
        (lambda f, x: tf.cast(hessians_with()(f, x), tf.float32), "float32_not_float64"),
        (lambda f, x: tf.squeeze(hessians_with()(f, x)), "broadcast_shape"),
        (memorised_by_shape(hessians_with()), "keeps_state"),
        (memorised_by_function(hessians_with()), "keeps_state"),
        (hessians_forward_over_reverse, "forward_over_reverse"),
    ],
)
def test_per_example_hessians_names_the_mistake(judge, answer, mistake):
    judge(check.per_example_hessians, answer, mistake)


def test_forward_over_reverse_is_not_called_tapes_one_after_the_other():
    message = check.per_example_hessians.evaluate(hessians_forward_over_reverse).message
    assert "ForwardAccumulator" in message and "forward over reverse" in message, message
    assert "nested GradientTapes" in message and "one after the other" not in message, message


@pytest.mark.parametrize("answer", [hessians_with(inside=False), hessians_with(watch_outer=False)])
def test_zeros_from_batch_jacobian_are_explained_as_zeros(answer):
    message = check.per_example_hessians.evaluate(answer).message
    assert "zeros, not None" in message and "outer" in message, message
    assert "returned None" not in message, message


# 5.6 a forward-mode Jacobian of any shape -------------------------------------


def forward_in_column_major_order(f, x):
    """The tangents walk x column-major (order="F"), the columns are laid out row-major."""
    columns = []
    for j in range(int(tf.size(x))):
        at = np.unravel_index(j, tuple(x.shape), order="F")
        tangent = tf.scatter_nd([list(at)], tf.ones([1], x.dtype), x.shape)
        with tf.autodiff.ForwardAccumulator(x, tangent) as acc:
            y = f(x)
        columns.append(acc.jvp(y))
    return tf.reshape(tf.stack(columns, axis=-1), y.shape + x.shape)


def forward_with(
    axis=-1, tangent=None, dtype=True, inside=True, flat_only=False, primal=None, zeros=False
):
    """``primal`` makes the accumulator's primal from x (a copy); ``zeros`` asks jvp for
    zeros where it has no path."""

    def answer(f, x):
        size = x.shape[0] if flat_only else int(tf.size(x))
        columns = []
        for j in range(size):
            e = tf.one_hot(j, size, dtype=x.dtype if dtype else tf.float32)
            t = e if flat_only else tf.reshape(e, x.shape)
            watched = x if primal is None else primal(x)
            with tf.autodiff.ForwardAccumulator(
                watched, t if tangent is None else tangent(x)
            ) as acc:
                if inside:
                    y = f(x)
            if not inside:
                y = f(x)
            columns.append(acc.jvp(y, **({"unconnected_gradients": "zero"} if zeros else {})))
        return tf.reshape(tf.stack(columns, axis=axis), y.shape + x.shape)

    return answer


def forward_by_row_and_column(f, x, scatter=False):
    """One pass per (row i, column j), for vectors and matrices only: tangents e_i e_j^T
    (at an x of rank 3, a tangent of the wrong shape), or with ``scatter`` a one put at
    [i, j] (at rank 3, a whole slice x[i, j, :] of ones, half the columns)."""
    rows, cols = x.shape[0], x.shape[1] if len(x.shape) > 1 else 1
    columns = []
    for i in range(rows):
        for j in range(cols):
            index = [i, j][: len(x.shape)]
            if scatter:
                ones = tf.ones_like(x[tuple(index)])[None]
                t = tf.tensor_scatter_nd_update(tf.zeros_like(x), [index], ones)
            else:
                t = tf.one_hot(i, rows, dtype=x.dtype)
                if len(x.shape) > 1:
                    t = t[:, None] * tf.one_hot(j, cols, dtype=x.dtype)[None, :]
            with tf.autodiff.ForwardAccumulator(x, t) as acc:
                y = f(x)
            columns.append(acc.jvp(y))
    found = tf.stack(columns, axis=-1)
    return found if len(columns) < int(tf.size(x)) else tf.reshape(found, y.shape + x.shape)


def forward_by_unstacking_eye(f, x):
    n = int(tf.size(x))
    columns = []
    for e in tf.unstack(tf.eye(n, dtype=x.dtype)):
        with tf.autodiff.ForwardAccumulator(primals=x, tangents=tf.reshape(e, x.shape)) as acc:
            y = f(x)
        columns.append(tf.reshape(acc.jvp(y), [-1]))
    return tf.reshape(tf.transpose(tf.stack(columns)), y.shape + x.shape)


def reverse_mode_jacobian(f, x):
    tape, y = recorded(f, x)
    return tape.jacobian(y, x)


def forward_by_differences(f, x):
    return tf.reshape(by_differences(f, x, 1e-6, axis=-1), f(x).shape + x.shape)


def one_pass_of_ones(f, x):  # J·1, shape y.shape: the sum of the Jacobian's columns
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        y = f(x)
    return acc.jvp(y)


def source_first(f, x):
    full = forward_with()(f, x)
    y_rank = len(full.shape) - len(x.shape)
    order = list(range(y_rank, len(full.shape))) + list(range(y_rank))
    return tf.transpose(full, order)


@pytest.mark.parametrize("answer", [forward_by_unstacking_eye, forward_with(zeros=True)])
def test_forward_jacobian_accepts_forward_mode(judge, answer):
    judge(check.forward_jacobian_any_shape, answer)


@pytest.mark.parametrize(
    "answer, mistake",
    [
        (reverse_mode_jacobian, "not_forward_mode"),
        (forward_by_differences, "not_forward_mode"),
        (source_first, "transposed"),
        (forward_with(axis=0), "columns_misplaced"),
        (forward_in_column_major_order, "columns_misplaced"),
        (forward_with(tangent=tf.ones_like), "tangent_of_ones"),
        (one_pass_of_ones, "tangent_of_ones"),
        (forward_with(dtype=False), "float32_not_float64"),
        (lambda f, x: tf.squeeze(forward_with()(f, x)), "broadcast_shape"),
        (memorised_by_shape(forward_with()), "keeps_state"),
        (forward_with(flat_only=True), "tangent_shape"),
        (forward_with(inside=False), "computed_outside"),
        (forward_with(inside=False, zeros=True), "computed_outside"),
        (forward_with(primal=tf.identity, zeros=True), "computed_outside"),
        (lambda f, x: -forward_with()(f, x), "sign_flipped"),
        (lambda f, x: tf.cast(forward_with()(f, x), tf.float32), "float32_not_float64"),
        (lambda f, x: forward_with()(f, x)[..., :1], "wrong_shape"),
        (forward_by_row_and_column, "up_to_rank_two"),
        (lambda f, x: forward_by_row_and_column(f, x, scatter=True), "up_to_rank_two"),
    ],
)
def test_forward_jacobian_names_the_mistake(judge, answer, mistake):
    judge(check.forward_jacobian_any_shape, answer, mistake)


def test_code_for_vectors_and_matrices_only_is_named_at_rank_three():
    message = check.forward_jacobian_any_shape.evaluate(forward_by_row_and_column).message
    assert "this x has rank 3" in message and "vectors and matrices only" in message, message
    assert "range(tf.size(x))" in message, message


# every exercise ------------------------------------------------------------------

ALL_CHECKS = [
    check.swish_jacobian,
    check.jacobian_by_rows,
    check.per_example_jacobian,
    check.true_batch_jacobian,
    check.per_example_hessians,
    check.forward_jacobian_any_shape,
]


def test_exercise_numbers_are_in_order():
    assert [c.exercise for c in ALL_CHECKS] == ["5.1", "5.2", "5.3", "5.4", "5.5", "5.6"]


def test_probes_are_fresh_on_every_call():
    """A function that returns what it saw before fails when a length comes again.

    Two lengths out of 3 to 7 per call: by the third call one has come again.
    """
    seen = {}

    def memorised(x):
        seen.setdefault(int(x.shape[0]), swish_by_hand(x))
        return seen[int(x.shape[0])]

    statuses = [check.swish_jacobian.evaluate(memorised).status for _ in range(3)]
    assert Status.WRONG in statuses


# the checks' speed ----------------------------------------------------------------------


def swish_solution(x):
    tape, y = recorded(swish, x)
    return tape.jacobian(y, x)


def per_example_solution(layer, x):
    tape, y = recorded(layer, x)
    return tape.batch_jacobian(y, x)


def own_blocks_solution(layer, x):
    tape, y = recorded(layer, x)
    full = tape.jacobian(y, x)
    axis = len(y.shape) - 1
    return tf.stack([tf.gather(full[b], b, axis=axis) for b in range(x.shape[0])])


def hessians_solution(f, x):
    with tf.GradientTape() as outer:
        outer.watch(x)
        inner, values = recorded(f, x)
        grads = inner.gradient(values, x)
    return outer.batch_jacobian(grads, x)


def test_jacobians_row_by_row_are_tensorflows_own():
    """Inside the check, tape.jacobian and batch_jacobian give TensorFlow's numbers (to the
    last bit here; to rounding allowed), and a tape made without persistent=True is
    released after them as before."""
    x = tf.constant([[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]], tf.float64)

    def answers(x):
        tape, y = recorded(lambda v: tf.tanh(v - tf.reduce_mean(v, axis=0)) * v[:, :1], x)
        full = tape.jacobian(y, x)
        tape, y = recorded(lambda v: tf.sin(v) * v, x)
        per_example = tape.batch_jacobian(y, x)
        with pytest.raises(RuntimeError, match="non-persistent"):
            tape.gradient(y, x)
        tape, y = recorded(tf.exp, x, persistent=True)
        both = tape.jacobian(y, {"x": x, "c": tf.constant(1.0, tf.float64)})
        return [full, per_example, both["x"], both["c"], hessians_solution(tf.math.cosh, x)]

    with jacobians_row_by_row():
        rows = answers(x)
    for mine, theirs in zip(rows, answers(x)):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert mine.shape == theirs.shape
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-13, atol=1e-15)
