"""Unit tests of lesson 06's checks (``autodiff_course.checks.lesson06``).

For every exercise: correct answers written otherwise than the solution (nbval runs the
solution itself, in strict mode) are accepted, and typical wrong answers get their own
mistake code, the same on two calls with fresh probes: one table per exercise, judged
by one test at the end with the ``judge`` fixture of tests/conftest.py. What every
check promises whatever its lesson is tested once for all in ``test_checker_contract.py``.
The answers are NumPy functions, as in the notebook.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checks import lesson06 as check


def unbroadcast(g, shape, reduce=np.sum, keepdims=True, stretched=True):
    """The lesson's unbroadcast; the keywords make its slips: another ``reduce``, no
    ``keepdims``, the axes broadcasting stretched from size 1 left alone."""
    while g.ndim > len(shape):
        g = reduce(g, axis=0)
    for axis, size in enumerate(shape):
        if stretched and size == 1 and g.shape[axis] != 1:
            g = reduce(g, axis=axis, keepdims=keepdims)
    return g


# --- 6.1 accumulate_gradient ----------------------------------------------------------


def accumulate_get_zero(grads, key, contribution):
    grads[key] = grads.get(key, 0) + contribution


def accumulate_private_copy(grads, key, contribution):
    if key in grads:
        grads[key] += contribution  # safe: the array below is this function's own
    else:
        grads[key] = np.array(contribution, copy=True)


def accumulate_in_place(grads, key, contribution):
    if key in grads:
        grads[key] += contribution
    else:
        grads[key] = contribution


def accumulate_out(grads, key, contribution):
    if key in grads:
        np.add(grads[key], contribution, out=grads[key])
    else:
        grads[key] = contribution


def accumulate_into_contribution(grads, key, contribution):
    if key in grads:
        contribution += grads[key]
    grads[key] = contribution


def accumulate_zeros_float64(grads, key, contribution):
    grads[key] = grads.get(key, np.zeros(np.shape(contribution))) + contribution


def returned_not_stored(grads, key, contribution):
    """The sum returned, grads[key] left as it was."""
    if key in grads:
        return grads[key] + contribution
    grads[key] = contribution


ACCUMULATE_CORRECT = [accumulate_get_zero, accumulate_private_copy]

ACCUMULATE_WRONG = [
    (accumulate_in_place, "changed_in_place"),  # the method the exercise demands
    (accumulate_out, "changed_in_place"),
    (accumulate_into_contribution, "changed_in_place"),
    (lambda grads, key, c: grads.__setitem__(key, c), "overwrote_gradient"),
    (lambda grads, key, c: grads.setdefault(key, c), "kept_first_gradient"),
    (returned_not_stored, "returned_not_stored"),
    (  # a stored gradient with a 0 entry is replaced
        lambda grads, key, c: grads.__setitem__(
            key, grads[key] + c if key in grads and grads[key].all() else c
        ),
        "overwrote_gradient",
    ),
    (
        lambda grads, key, c: grads.__setitem__(key, grads[key] * c if key in grads else c),
        "multiplied_gradients",
    ),
    (lambda grads, key, c: grads.__setitem__(key, grads.get(key, c) + c), "added_twice"),
    (
        lambda grads, key, c: grads.__setitem__(key, grads[key] - c if key in grads else c),
        "subtracted_gradient",
    ),
    (
        lambda grads, key, c: grads.__setitem__(key, (grads[key] + c) / 2 if key in grads else c),
        "averaged_gradients",
    ),
    (
        lambda grads, key, c: grads.__setitem__(key, 2 * (grads[key] + c) if key in grads else c),
        "other",
    ),
    (
        lambda grads, key, c: grads.__setitem__(key, grads[key] + c + 0.5 if key in grads else c),
        "constant_offset",
    ),
    (
        lambda grads, key, c: grads.__setitem__(key, grads[key] + c * c if key in grads else c),
        "upstream_not_linear",
    ),
    (
        lambda grads, key, c: grads.__setitem__(key, np.squeeze(grads.get(key, 0) + c)),
        "broadcast_shape",
    ),  # a size-1 axis dropped
    (
        lambda grads, key, c: grads.__setitem__(
            key, grads[key] + grads[key] if key in grads else c
        ),
        "contribution_ignored",
    ),
    (accumulate_zeros_float64, "wrong_dtype"),
    (
        lambda grads, key, c: grads.__setitem__(
            key, np.asarray(grads.get(key, 0) + c, dtype=np.float32)
        ),
        "float32_not_float64",
    ),
    (lambda grads, key, c: grads.__setitem__(key, np.sum(grads.get(key, 0) + c)), "wrong_shape"),
    (lambda grads, key, c: grads.setdefault(key, []).append(c), "returned_list"),
    (lambda grads, key, c: None, "not_stored"),
    (lambda grads, key, c: {**grads, key: c}, "returned_new_dict"),
    (lambda grads, key, c: grads.__setitem__(key, None), "stored_none"),
]


def test_the_in_place_hint_names_the_aliasing():
    message = check.accumulate_gradient.evaluate(accumulate_in_place).message
    assert "in place" in message and "same upstream array" in message
    assert "grads[key] = grads[key] + contribution" in message


def test_the_in_place_hint_names_the_stored_entry():
    message = check.accumulate_gradient.evaluate(accumulate_in_place).message
    assert "the array stored in grads['x']" in message and "changed `contribution`" not in message
    message = check.accumulate_gradient.evaluate(accumulate_into_contribution).message
    assert "changed `contribution` in place" in message, message


def test_accumulate_hints_name_the_graph():
    message = check.accumulate_gradient.evaluate(
        lambda grads, key, c: grads.__setitem__(key, c)
    ).message
    assert "v = x*x + x" in message and "'x'" in message


# --- 6.2 multiply_vjp -----------------------------------------------------------------


def rule(grad_a=lambda up, a, b: up * b, grad_b=lambda up, a, b: up * a, back=None):
    """A multiply rule from the formula of each gradient, each summed back to its input's
    shape by ``back(g, shape)`` (by default the lesson's unbroadcast)."""
    back = back or unbroadcast

    def answer(upstream, a, b):
        return (
            back(grad_a(upstream, a, b), np.shape(a)),
            back(grad_b(upstream, a, b), np.shape(b)),
        )

    return answer


def by_axes(g, shape):  # correct: one sum over every axis to remove, then a reshape
    added = g.ndim - len(shape)
    axes = tuple(range(added)) + tuple(
        added + i for i, size in enumerate(shape) if size == 1 and g.shape[added + i] != 1
    )
    return g.sum(axis=axes).reshape(shape)


def trailing(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=-1)
    return g


def first_of_each(g, shape):  # the first slice along every axis to remove, no sum
    g = g[(0,) * (g.ndim - len(shape))]
    return g[tuple(slice(0, 1) if size == 1 else slice(None) for size in shape)]


def axis_0_whenever_shapes_differ(g, shape):
    """Sums over axis 0 once where the shapes differ, whatever broadcasting did."""
    return g.sum(axis=0) if g.shape != tuple(shape) else g


def one_leading(g, shape):  # `if` where `while` belongs: one added leading axis summed
    if g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def summed_then_multiplied(upstream, a, b):  # the upstream summed back first, then the product
    return unbroadcast(upstream, np.shape(a)) * b, unbroadcast(upstream, np.shape(b)) * a


def multiply_in_place(upstream, a, b):
    grad_a = unbroadcast(upstream * b, a.shape)
    upstream *= a
    return grad_a, unbroadcast(upstream, b.shape)


def each(change):
    """The correct rule with each gradient passed through change(g)."""
    return lambda upstream, a, b: tuple(change(g) for g in rule()(upstream, a, b))


MULTIPLY_WRONG = [
    (rule(back=lambda g, shape: g), "not_summed_back"),
    (rule(back=lambda g, shape: np.sum(g)), "wrong_shape"),  # a single number
    (rule(back=lambda g, shape: unbroadcast(g, shape, stretched=False)), "not_summed_back"),
    (rule(back=lambda g, shape: unbroadcast(g, shape, keepdims=False)), "broadcast_shape"),
    (rule(back=trailing), "summed_trailing_axes"),
    (lambda up, a, b: rule()(up, a, b)[::-1], "reversed_order"),
    (
        lambda up, a, b: (unbroadcast(up * b, b.shape), unbroadcast(up * a, a.shape)),
        "summed_to_other_shape",
    ),
    (rule(lambda up, a, b: up * a, lambda up, a, b: up * b), "swapped_operands"),
    (
        rule(lambda up, a, b: np.ones_like(up) * b, lambda up, a, b: np.ones_like(up) * a),
        "forgot_upstream",
    ),
    (rule(lambda up, a, b: up, lambda up, a, b: up), "forgot_local_derivative"),
    (rule(back=lambda g, shape: unbroadcast(g, shape, reduce=np.mean)), "mean_not_sum"),
    (each(lambda g: -g), "sign_flipped"),
    (each(lambda g: 2 * g), "scale_factor"),
    (multiply_in_place, "changed_in_place"),
    (each(lambda g: np.asarray(g, dtype=np.float64)), "wrong_dtype"),
    (each(lambda g: np.asarray(g, dtype=np.float32)), "float32_not_float64"),
    (lambda up, a, b: up * b, "not_a_pair"),
    (lambda up, a, b: (rule()(up, a, b)[0], None), "returned_none"),
    (rule(grad_b=lambda up, a, b: up * b), "swapped_operands"),  # one gradient only
    (rule(grad_b=lambda up, a, b: a + 0 * up), "forgot_upstream"),  # one gradient only
    (rule(lambda up, a, b: up / b, lambda up, a, b: up / a), "wrong_local_derivative"),
    (rule(grad_a=lambda up, a, b: up * up * b), "upstream_not_linear"),
    (each(np.squeeze), "broadcast_shape"),  # size-1 axes dropped
    (each(lambda g: g.tolist()), "returned_list"),
    (rule(back=lambda g, shape: np.resize(g, shape)), "picked_not_summed"),
    (rule(back=first_of_each), "picked_not_summed"),
    (rule(back=one_leading), "partly_summed_back"),  # a scalar: one of two added axes left
    (rule(back=axis_0_whenever_shapes_differ), "partly_summed_back"),  # the wrong axis
    (summed_then_multiplied, "summed_before_multiplying"),  # the output's shape
    (
        lambda up, a, b: tuple(
            unbroadcast(unbroadcast(up, np.shape(own)) * other, np.shape(own))
            for own, other in ((a, b), (b, a))
        ),
        "summed_before_multiplying",
    ),  # sum(upstream) * b, not sum(upstream * b)
]


def test_multiply_hints_name_the_axes_and_the_order():
    message = check.multiply_vjp.evaluate(rule(back=trailing)).message
    assert "leading axes" in message and "not the trailing ones" in message, message
    message = check.multiply_vjp.evaluate(MULTIPLY_WRONG[-1][0]).message
    assert "sum(upstream) * a is not sum(upstream * a)" in message, message


def test_multiply_hints_name_the_axes_left_and_the_order_of_sum_and_product():
    message = check.multiply_vjp.evaluate(rule(back=one_leading)).message
    assert "adding 2 leading axes" in message and "1 of the 2 added axes was summed" in message
    assert "1 is left" in message and "`while`" in message, message
    message = check.multiply_vjp.evaluate(summed_then_multiplied).message
    assert "has the output's shape" in message and "multiply the upstream by" in message
    assert "then sum the product back" in message, message


def test_multiply_shapes_are_drawn_fresh():
    seen = set()

    def spy(upstream, a, b):
        seen.add((a.shape, b.shape))
        return rule()(upstream, a, b)

    for _ in range(3):
        check.multiply_vjp.evaluate(spy)
    assert len(seen) > 7  # seven shape pairs per call, new sizes on each call
    assert any(len(a) < len(b) for a, b in seen) and any(1 in a for a, _ in seen)


def test_numbers_copied_from_one_run_fail_the_next():
    recorded = []

    def record(upstream, a, b):
        recorded.append(rule()(upstream, a, b))
        return recorded[-1]

    assert check.multiply_vjp.evaluate(record).status is Status.CORRECT
    replies = iter(recorded)
    result = check.multiply_vjp.evaluate(lambda upstream, a, b: next(replies))
    assert result.status is Status.WRONG and result.mistake != "other", result


@pytest.mark.parametrize("check_name", ["multiply_vjp", "matmul_vjp"])
def test_random_numbers_of_the_right_shape_are_named_as_such(check_name):
    draw = np.random.default_rng(7)

    def random_gradients(upstream, a, b):
        return draw.normal(size=a.shape), draw.normal(size=b.shape)

    result = getattr(check, check_name).evaluate(random_gradients)
    assert (result.status, result.mistake) == (Status.WRONG, "not_repeatable"), result


# --- 6.3 matmul_vjp -------------------------------------------------------------------


def matmul_reference(upstream, a, b):
    return upstream @ b.T, a.T @ upstream


def matmul_einsum(upstream, a, b):
    return np.einsum("ij,kj->ik", upstream, b), np.einsum("ik,ij->kj", a, upstream)


def matmul_square_only(upstream, a, b):
    if a.shape[0] == a.shape[1] == b.shape[1]:
        return upstream @ b.T, a.T @ upstream
    return upstream @ b, a.T @ upstream  # fails to run on rectangular shapes


def matmul_factorised(upstream, a, b):
    """A product of sums where a sum of products belongs."""
    grad_a = upstream.sum(axis=1, keepdims=True) * b.sum(axis=1)[None, :]
    return grad_a, a.sum(axis=0)[:, None] * upstream.sum(axis=0, keepdims=True)


MATMUL_WRONG = [
    (matmul_factorised, "product_of_sums"),
    (lambda up, a, b: (up @ b.T, np.outer(a.sum(axis=0), up.sum(axis=0))), "product_of_sums"),
    (lambda up, a, b: (up @ b, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: (up @ b.T, a @ up), "transposes_wrong"),
    (lambda up, a, b: (b.T @ up, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: ((up @ b.T).T, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: (up @ b.T, up.T @ a), "transposes_wrong"),
    (matmul_square_only, "transposes_wrong"),
    (lambda up, a, b: (up.T @ b.T, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: (a.T @ up, up @ b.T), "reversed_order"),
    (lambda up, a, b: (np.ones_like(up) @ b.T, a.T @ np.ones_like(up)), "forgot_upstream"),
    (lambda up, a, b: (np.ones_like(up) @ b.T, a.T @ up), "forgot_upstream"),  # one only
    (lambda up, a, b: (up * b, up * a), "elementwise_rule"),
    (lambda up, a, b: (up * b.T, a.T * up), "elementwise_rule"),  # transposed, still element-wise
    (lambda up, a, b: (-(up @ b.T), -(a.T @ up)), "sign_flipped"),
    (lambda up, a, b: (0.5 * up @ b.T, 0.5 * a.T @ up), "scale_factor"),
    (
        lambda up, a, b: ((up @ b.T).astype(np.float32), (a.T @ up).astype(np.float32)),
        "float32_not_float64",
    ),
    (lambda up, a, b: (up @ b.T, a.T @ up.__imul__(2.0) / 2.0), "changed_in_place"),
    (lambda up, a, b: (up @ b.T @ b.T @ b, a.T @ up), "wrong_local_derivative"),
    (lambda up, a, b: up @ b.T, "not_a_pair"),
    (lambda up, a, b: (up @ b.T, (a.T @ up).ravel()), "wrong_shape"),
    (lambda up, a, b: (np.squeeze(up @ b.T), np.squeeze(a.T @ up)), "broadcast_shape"),
    (lambda up, a, b: (a.T @ up, up @ b.T), "reversed_order"),  # named on square matrices too
]


def test_matmul_shape_error_says_which_product_fits():
    message = check.matmul_vjp.evaluate(matmul_square_only).message
    assert "upstream @ b.T" in message and "ValueError" in message


# --- 6.4 log1pexp_rule ------------------------------------------------------------------


def rule_reference(x):
    def grad_fn(upstream):
        return upstream * np.exp(-np.logaddexp(0.0, -x))

    return np.logaddexp(0.0, x), grad_fn


def rule_piecewise(x):
    e = np.exp(-np.abs(x))
    value = np.maximum(x, 0) + np.log1p(e)
    sigmoid = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    return value, lambda upstream: [upstream * sigmoid]  # a 1-element list is fine


def rule_exp_of_difference(x):
    value = np.logaddexp(0.0, x)
    return value, lambda upstream: upstream * np.exp(x - value)  # e^x / (1 + e^x)


def rule_naive_value(x):
    return np.log(1.0 + np.exp(x)), rule_reference(x)[1]


def rule_naive_gradient(x):
    return np.logaddexp(0.0, x), lambda upstream: upstream * np.exp(x) / (1.0 + np.exp(x))


def rule_documented(x):
    return (np.logaddexp(0.0, x), lambda upstream: upstream * (1.0 - 1.0 / (1.0 + np.exp(x))))


def rule_float32(x):
    value, grad_fn = rule_reference(x.astype(np.float32))
    return value, lambda upstream: grad_fn(upstream.astype(np.float32))


def rule_finite_difference(x):
    def grad_fn(upstream):
        h = 1e-3 * np.ones_like(x)
        return upstream * (np.logaddexp(0.0, x + h) - np.logaddexp(0.0, x - h)) / (2 * h)

    return np.logaddexp(0.0, x), grad_fn


def rule_through_tensorflow(x):  # the right numbers, through TensorFlow and back
    def grad_fn(upstream):
        return upstream * tf.sigmoid(x).numpy()

    return tf.nn.softplus(x).numpy(), grad_fn


def rule_decorated(x):
    return rule_reference(x)


rule_decorated.__wrapped__ = rule_reference  # what functools.wraps leaves behind


_LATEST = {}


def rule_latest_x(x):
    _LATEST["x"] = x

    def grad_fn(upstream):
        return upstream * np.exp(-np.logaddexp(0.0, -_LATEST["x"]))

    return np.logaddexp(0.0, x), grad_fn


def rule_changes_upstream(x):
    def grad_fn(upstream):
        upstream *= np.exp(-np.logaddexp(0.0, -x))
        return upstream

    return np.logaddexp(0.0, x), grad_fn


def rule_changes_x(x):
    value = np.logaddexp(0.0, x)
    np.negative(x, out=x)  # x is now -x: sigmoid(x) = exp(-logaddexp(0, x))
    return value, lambda upstream: upstream * np.exp(-np.logaddexp(0.0, x))


class TapeTensor:
    """Stands in for the notebook's Tensor: a rule built from the tape's operations."""

    def __init__(self, value):
        self.value = value
        self.shape = np.shape(value)


LOG1PEXP_WRONG = [
    (rule_decorated, "rule_decorated"),  # the method: the rule itself, not the registration
    (lambda x: TapeTensor(np.logaddexp(0.0, x)), "used_tape"),
    (lambda x: (TapeTensor(np.logaddexp(0.0, x)), lambda up: up), "used_tape"),
    (rule_naive_value, "forward_overflow"),
    (rule_through_tensorflow, "used_tensorflow"),
    (rule_naive_gradient, "backward_overflow_nan"),
    (
        lambda x: (x + np.log1p(np.exp(-x)), rule_reference(x)[1]),
        "forward_overflow",
    ),  # the mirrored formula: inf far below 0
    (rule_documented, "documented_rule_cancellation"),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: up * 0.5 * (1 + np.tanh(x / 2))),
        "documented_rule_cancellation",
    ),
    (
        lambda x: (
            np.where(x > 30, x, np.log(1 + np.exp(np.minimum(x, 30)))),
            rule_reference(x)[1],
        ),
        "forward_rounds_to_zero",
    ),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: np.exp(-np.logaddexp(0.0, -x))),
        "forgot_upstream",
    ),
    (lambda x: (np.logaddexp(0.0, x), lambda up: up), "forgot_local_derivative"),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: up * np.exp(-np.logaddexp(0.0, x))),
        "sigmoid_of_minus_x",
    ),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: up * np.logaddexp(0.0, x)),
        "value_not_derivative",
    ),
    (lambda x: (np.exp(-np.logaddexp(0.0, -x)), lambda up: up), "value_is_sigmoid"),
    (rule_float32, "float32_not_float64"),
    (lambda x: (np.logaddexp(np.float64(0), x), rule_reference(x)[1]), "wrong_dtype"),
    (rule_finite_difference, "approximation"),
    (
        lambda x: (np.logaddexp(0.0, np.maximum(x, -30.0)), rule_reference(x)[1]),
        "one_tail",
    ),  # a clipped tail
    (lambda x: rule_reference(np.clip(x, -30.0, 30.0)), "clipped_x"),  # value and gradient
    (lambda x: rule_reference(np.minimum(x, 30.0)), "clipped_x"),  # from above only
    (
        lambda x: (
            np.logaddexp(0.0, x),
            lambda up: np.where(x < -25, 0.0, rule_reference(x)[1](up)),
        ),
        "one_tail",
    ),  # a tail cut off to zero
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: np.where(x > 0, up, rule_reference(x)[1](up))),
        "one_tail",
    ),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: np.abs(up) * np.exp(-np.logaddexp(0.0, -x))),
        "sign_flipped",
    ),  # the hint names the abs()
    (lambda x: (np.maximum(x, 0.0), rule_reference(x)[1]), "relu_not_softplus"),
    # e^-x overflows far below 0 (float32 from -88.7, float64 from -709.8): 0.0 for e^x
    (lambda x: (np.logaddexp(0.0, x), lambda up: up / (1.0 + np.exp(-x))), "tiny_tail_lost"),
    (
        lambda x: (np.where(x < -700, 0.0, np.logaddexp(0.0, x)), rule_reference(x)[1]),
        "tiny_tail_lost",
    ),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: up * (x > 0).astype(x.dtype)),
        "relu_not_softplus",
    ),
    (
        lambda x: (
            np.logaddexp(0.0, x),
            lambda up: up * np.exp(-np.logaddexp(0.0, -x)) * np.exp(-np.logaddexp(0.0, x)),
        ),
        "differentiated_twice",
    ),
    (lambda x: (np.logaddexp(0.0, x), lambda up: up * np.exp(x)), "nan_or_inf"),
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: up + np.exp(-np.logaddexp(0.0, -x))),
        "upstream_not_linear",
    ),
    (
        lambda x: (
            np.logaddexp(0.0, x),
            lambda up: up / (1.0 + np.exp(-x)) * (1.0 + 0.1 * np.sin(x)),
        ),
        "wrong_local_derivative",
    ),  # wrong on both sides of 0, whatever the fresh points
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: up[::-1] * np.exp(-np.logaddexp(0.0, -x))),
        "upstream_used_wrongly",
    ),  # the upstream of another point
    (
        lambda x: (np.logaddexp(0.0, x), lambda up: -up * np.exp(-np.logaddexp(0.0, -x))),
        "sign_flipped",
    ),
    (lambda x: (np.logaddexp(0.0, x), 1.0), "grad_fn_not_callable"),
    (lambda x: np.logaddexp(0.0, x), "not_a_pair"),
    (lambda x: (np.logaddexp(0.0, x), lambda up: (up, up)), "wrong_structure"),
    (lambda x: (np.logaddexp(0.0, x)[:2], lambda up: up), "wrong_shape"),
    (lambda x: (np.squeeze(np.logaddexp(0.0, x)), rule_reference(x)[1]), "broadcast_shape"),
    (rule_latest_x, "keeps_state"),  # grad_fn reads the latest call's x
    (rule_changes_upstream, "changed_in_place"),
    (rule_changes_x, "changed_in_place"),
    (
        lambda x: (np.where(x > 20, x, np.logaddexp(0.0, x)), rule_reference(x)[1]),
        "float32_threshold",
    ),
    (lambda x: (tf.nn.softplus(x), rule_reference(x)[1]), "wrong_type"),
]


def test_grad_fn_runs_with_an_upstream_that_is_not_one():
    seen = []

    def spy(x):
        value, grad_fn = rule_reference(x)

        def watched(upstream):
            seen.append((x.dtype, upstream.copy()))
            return grad_fn(upstream)

        return value, watched

    assert check.log1pexp_rule.evaluate(spy).status is Status.CORRECT
    assert {np.dtype(dtype).name for dtype, _ in seen} == {"float32", "float64"}
    for _, upstream in seen:  # 1 at most by chance at a point or two
        assert np.mean(np.abs(upstream) == 1.0) < 0.2
        assert upstream.size < 2 or ((upstream < 0).any() and (upstream > 0).any())


def test_a_clipped_x_is_named_as_a_clip_on_both_sides():
    message = check.log1pexp_rule.evaluate(lambda x: rule_reference(np.clip(x, -30, 30))).message
    assert "clipped to at most 30" in message and "at least -30" in message, message
    assert "right for every" not in message, message


def test_log1pexp_hints_name_the_probe_points():
    assert "x = " in check.log1pexp_rule.evaluate(rule_naive_value).message
    message = check.log1pexp_rule.evaluate(rule_documented).message
    assert "x = -" in message


def test_checks_print_no_numpy_warnings(recwarn):
    check.log1pexp_rule.evaluate(rule_naive_value)
    check.log1pexp_rule.evaluate(rule_naive_gradient)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# --- state kept between calls (fresh state for each test) -------------------------------


def test_totals_kept_between_reverse_passes_are_named(judge):
    totals = {}

    def accumulate(grads, key, contribution):
        totals[key] = totals.get(key, 0) + contribution
        grads[key] = totals[key]

    judge(check.accumulate_gradient, accumulate, "not_repeatable")


def test_totals_kept_per_key_and_shape_are_named(judge):
    totals = {}

    def accumulate(grads, key, contribution):
        here = (key, np.shape(contribution))  # every graph has its own shape: right once
        totals[here] = totals.get(here, 0) + contribution
        grads[key] = totals[here]

    judge(check.accumulate_gradient, accumulate, "keeps_state")


@pytest.mark.parametrize(
    "check_name, right",
    [("multiply_vjp", rule()), ("matmul_vjp", matmul_reference)],
)
def test_a_rule_that_caches_by_shape_is_named(judge, check_name, right):
    cache = {}

    def cached(upstream, a, b):
        shapes = (a.shape, b.shape)
        if shapes not in cache:
            cache[shapes] = right(upstream, a, b)
        return cache[shapes]

    judge(getattr(check, check_name), cached, "keeps_state")


def test_a_grad_fn_that_reads_a_global_x_is_named_when_calls_interleave(judge):
    message = judge(check.log1pexp_rule, rule_latest_x, "keeps_state").message
    assert "called twice before either grad_fn ran" in message


# --- every exercise: the same verdict on two calls -------------------------------------

VERDICTS = {  # check: (correct answers, [(wrong answer, its mistake)])
    check.accumulate_gradient: (ACCUMULATE_CORRECT, ACCUMULATE_WRONG),
    check.multiply_vjp: (
        [rule(back=by_axes), lambda up, a, b: list(rule()(up, a, b))],
        MULTIPLY_WRONG,
    ),
    check.matmul_vjp: (
        [matmul_einsum, lambda up, a, b: (np.dot(up, b.T), np.dot(a.T, up))],
        MATMUL_WRONG,
    ),
    check.log1pexp_rule: ([rule_piecewise, rule_exp_of_difference], LOG1PEXP_WRONG),
}


@pytest.mark.parametrize(
    "checker, answer, mistake",
    [
        pytest.param(checker, answer, mistake, id=f"{checker.exercise}-{i}-{mistake or 'correct'}")
        for checker, (correct, wrong) in VERDICTS.items()
        for i, (answer, mistake) in enumerate([(a, None) for a in correct] + wrong)
    ],
)
def test_verdicts(judge, checker, answer, mistake):
    judge(checker, answer, mistake, runs=2)
