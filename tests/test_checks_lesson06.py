"""Unit tests of the exercise checks of lesson 06 (autodiff_course/checks/lesson06.py).

For every exercise: the reference answer is correct; typical wrong answers are
rejected with their specific mistake code; a stub is *not attempted*; bad input
(None, wrong type, wrong shape, an exception, something not callable) is *wrong*
with a hint and never makes the check itself raise. The answers are NumPy
functions, as in the notebook.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from autodiff_course.checking import ExerciseNotSolved, Status
from autodiff_course.checks import lesson06 as check


def stub(*args):
    raise NotImplementedError()


def unbroadcast(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def assert_wrong(result, mistake):
    assert result.status is Status.WRONG, result
    assert result.mistake == mistake, result
    assert result.message.strip(), "a wrong answer needs a hint"


def assert_wrong_with_hint(result):
    assert result.status is Status.WRONG, result
    assert len(result.message) > 20, result


# --- 6.1 accumulate_gradient ----------------------------------------------------------

def accumulate_reference(grads, key, contribution):
    grads[key] = grads[key] + contribution if key in grads else contribution


def accumulate_in_place(grads, key, contribution):
    if key in grads:
        grads[key] += contribution
    else:
        grads[key] = contribution


def accumulate_overwrite(grads, key, contribution):
    grads[key] = contribution


def accumulate_keep_first(grads, key, contribution):
    grads.setdefault(key, contribution)


def accumulate_multiply(grads, key, contribution):
    grads[key] = grads[key] * contribution if key in grads else contribution


def accumulate_twice(grads, key, contribution):
    grads[key] = grads.get(key, contribution) + contribution


def accumulate_copy_then_in_place(grads, key, contribution):
    if key in grads:
        grads[key] += contribution
    else:
        grads[key] = contribution.copy()  # a private copy makes += safe


def test_accumulate_reference_is_correct():
    assert check.accumulate_gradient.evaluate(accumulate_reference).status is Status.CORRECT


def test_accumulate_private_copy_is_also_correct():
    result = check.accumulate_gradient.evaluate(accumulate_copy_then_in_place)
    assert result.status is Status.CORRECT, result


@pytest.mark.parametrize("answer, mistake", [
    (accumulate_overwrite, "overwrote"),
    (accumulate_keep_first, "kept_first"),
    (accumulate_multiply, "multiplied"),
    (accumulate_in_place, "in_place"),
    (accumulate_twice, "counted_twice"),
])
def test_accumulate_typical_mistakes(answer, mistake):
    assert_wrong(check.accumulate_gradient.evaluate(answer), mistake)


def test_accumulate_overwrite_hint_names_x_times_x():
    result = check.accumulate_gradient.evaluate(accumulate_overwrite)
    assert "x*x" in result.message and "2x" in result.message


def test_accumulate_stub_is_not_attempted():
    assert check.accumulate_gradient.evaluate(stub).status is Status.NOT_ATTEMPTED


@pytest.mark.parametrize("answer, mistake", [
    (lambda grads, key, contribution: None, "not_stored"),
    (lambda grads, key, contribution: {**grads, key: contribution}, "returned_new_dict"),
    (lambda grads, key, contribution: grads.__setitem__(key, None), "stored_none"),
    (lambda grads, key, contribution: grads.__setitem__(key, "gradient"), "wrong_type"),
    (lambda grads, key, contribution: grads.__setitem__(key, contribution.sum()),
     "wrong_shape"),
    (lambda grads, key, contribution: 1 / 0, "raised"),
    (None, "not_callable"),
    ("accumulate_gradient", "not_callable"),
])
def test_accumulate_bad_input_is_wrong_with_a_hint(answer, mistake):
    result = check.accumulate_gradient.evaluate(answer)
    assert_wrong_with_hint(result)
    assert result.mistake == mistake, result


# --- 6.2 multiply_vjp -----------------------------------------------------------------

def multiply_reference(upstream, a, b):
    return unbroadcast(upstream * b, a.shape), unbroadcast(upstream * a, b.shape)


def test_multiply_reference_is_correct():
    assert check.multiply_vjp.evaluate(multiply_reference).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (lambda up, a, b: (up * b, up * a), "not_summed_back"),
    (lambda up, a, b: (unbroadcast(up * a, a.shape), unbroadcast(up * b, b.shape)),
     "swapped_operands"),
    (lambda up, a, b: multiply_reference(up, a, b)[::-1], "swapped_operands"),
    (lambda up, a, b: (unbroadcast(np.ones_like(up) * b, a.shape),
                       unbroadcast(np.ones_like(up) * a, b.shape)), "forgot_upstream"),
    (lambda up, a, b: (unbroadcast(up, a.shape), unbroadcast(up, b.shape)), "forgot_local"),
    (lambda up, a, b: (np.sum(up * b), np.sum(up * a)) if a.shape != b.shape
     else (up * b, up * a), "summed_everything"),
    (lambda up, a, b: (np.reshape(multiply_reference(up, a, b)[0], -1),
                       np.reshape(multiply_reference(up, a, b)[1], -1)), "kept_dims_wrong"),
])
def test_multiply_typical_mistakes(answer, mistake):
    assert_wrong(check.multiply_vjp.evaluate(answer), mistake)


def test_multiply_not_summed_back_hint_names_shapes():
    result = check.multiply_vjp.evaluate(lambda up, a, b: (up * b, up * a))
    assert "(3, 4)" in result.message and "(4,)" in result.message


def test_multiply_stub_is_not_attempted():
    assert check.multiply_vjp.evaluate(stub).status is Status.NOT_ATTEMPTED


@pytest.mark.parametrize("answer, mistake", [
    (lambda up, a, b: None, "returned_none"),
    (lambda up, a, b: up * b, "not_a_pair"),
    (lambda up, a, b: (up * b, up * a, up), "not_a_pair"),
    (lambda up, a, b: ("grad", "grad"), "wrong_type"),
    (lambda up, a, b: (np.zeros((5, 5)), np.zeros((5, 5))), "wrong_shape"),
    (lambda up, a, b: (None, up * a), "returned_none"),
    (lambda up, a, b: a.nonexistent, "raised"),
    (42, "not_callable"),
    (None, "not_callable"),
])
def test_multiply_bad_input_is_wrong_with_a_hint(answer, mistake):
    result = check.multiply_vjp.evaluate(answer)
    assert_wrong_with_hint(result)
    assert result.mistake == mistake, result


# --- 6.3 matmul_vjp -------------------------------------------------------------------

def matmul_reference(upstream, a, b):
    return upstream @ b.T, a.T @ upstream


def test_matmul_reference_is_correct():
    assert check.matmul_vjp.evaluate(matmul_reference).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (lambda up, a, b: (up @ b, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: (up @ b.T, a @ up), "transposes_wrong"),
    (lambda up, a, b: (b.T @ up, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: ((up @ b.T).T, a.T @ up), "transposes_wrong"),
    (lambda up, a, b: (up @ b.T, up.T @ a), "transposes_wrong"),
    (lambda up, a, b: (a.T @ up, up @ b.T), "swapped_operands"),
    (lambda up, a, b: (np.ones_like(up) @ b.T, a.T @ np.ones_like(up)), "forgot_upstream"),
    (lambda up, a, b: (up * b, up * a), "elementwise_rule"),
])
def test_matmul_typical_mistakes(answer, mistake):
    assert_wrong(check.matmul_vjp.evaluate(answer), mistake)


def test_matmul_shape_error_is_explained_as_a_transpose_mistake():
    # Right for square matrices by accident: (a.T @ up) equals (up.T @ a).T only when
    # transposes line up, so use an answer that only fails on rectangular shapes.
    def square_only(up, a, b):
        if a.shape[0] == a.shape[1] == b.shape[1]:
            return up @ b.T, a.T @ up
        return up @ b, a.T @ up  # (2, 4) @ (3, 4) raises ValueError

    result = check.matmul_vjp.evaluate(square_only)
    assert_wrong(result, "transposes_wrong")
    assert "upstream @ b.T" in result.message


def test_matmul_transposed_result_on_rectangular_shapes():
    def transposed_when_rectangular(up, a, b):
        if a.shape == b.shape:
            return up @ b.T, a.T @ up
        return (up @ b.T).T, a.T @ up

    assert_wrong(check.matmul_vjp.evaluate(transposed_when_rectangular), "transposes_wrong")


def test_matmul_stub_is_not_attempted():
    assert check.matmul_vjp.evaluate(stub).status is Status.NOT_ATTEMPTED


@pytest.mark.parametrize("answer, mistake", [
    (lambda up, a, b: None, "returned_none"),
    (lambda up, a, b: up @ b.T, "not_a_pair"),
    (lambda up, a, b: (np.zeros(3), np.zeros(3)), "wrong_shape"),
    (lambda up, a, b: ("grad_a", "grad_b"), "wrong_type"),
    (lambda up, a, b: np.linalg.inv(np.zeros((2, 2))), "raised"),
    (np.eye(3), "not_callable"),
])
def test_matmul_bad_input_is_wrong_with_a_hint(answer, mistake):
    result = check.matmul_vjp.evaluate(answer)
    assert_wrong_with_hint(result)
    assert result.mistake == mistake, result


# --- 6.4 log1pexp ---------------------------------------------------------------------

def custom_gradient(f):
    """A stand-in for the notebook's decorator: keeps the rule as __wrapped__."""
    @functools.wraps(f)
    def wrapper(*inputs):
        raise AssertionError("the check must call the rule, not the decorated function")
    return wrapper


def log1pexp_reference(x):
    def grad_fn(upstream):
        return upstream * np.exp(-np.logaddexp(0.0, -x))
    return np.logaddexp(0.0, x), grad_fn


def naive_value(x):
    def grad_fn(upstream):
        return upstream * np.exp(-np.logaddexp(0.0, -x))
    return np.log(1.0 + np.exp(x)), grad_fn


def naive_gradient(x):
    def grad_fn(upstream):
        return upstream * np.exp(x) / (1.0 + np.exp(x))
    return np.logaddexp(0.0, x), grad_fn


def forgot_upstream(x):
    return np.logaddexp(0.0, x), lambda upstream: np.exp(-np.logaddexp(0.0, -x))


def documented_rule(x):
    def grad_fn(upstream):
        return upstream * (1.0 - 1.0 / (1.0 + np.exp(x)))
    return np.logaddexp(0.0, x), grad_fn


def sign_error(x):
    return np.logaddexp(0.0, x), lambda upstream: upstream * np.exp(-np.logaddexp(0.0, x))


def value_cancels(x):
    value = np.where(x > 20, x, np.log(1.0 + np.exp(np.minimum(x, 20))))
    return value, lambda upstream: upstream * np.exp(-np.logaddexp(0.0, -x))


def test_log1pexp_reference_is_correct():
    assert check.log1pexp.evaluate(log1pexp_reference).status is Status.CORRECT


def test_log1pexp_decorated_reference_is_correct():
    decorated = custom_gradient(log1pexp_reference)
    assert check.log1pexp.evaluate(decorated).status is Status.CORRECT


def test_log1pexp_gradient_as_a_one_element_list_is_accepted():
    def one_element(x):
        value, grad_fn = log1pexp_reference(x)
        return value, lambda upstream: [grad_fn(upstream)]

    assert check.log1pexp.evaluate(one_element).status is Status.CORRECT


@pytest.mark.parametrize("answer, mistake", [
    (naive_value, "inf_value"),
    (naive_gradient, "nan_gradient"),
    (forgot_upstream, "forgot_upstream"),
    (documented_rule, "documented_rule_cancels"),
    (sign_error, "sign_error"),
    (value_cancels, "value_cancels"),
    (lambda x: (np.exp(-np.logaddexp(0.0, -x)), lambda up: up), "returned_gradient_as_output"),
    (lambda x: (np.logaddexp(0.0, x), lambda up: up), "forgot_local"),
])
def test_log1pexp_typical_mistakes(answer, mistake):
    assert_wrong(check.log1pexp.evaluate(answer), mistake)


def test_log1pexp_hints_name_the_probe_points():
    assert "x = 100" in check.log1pexp.evaluate(naive_value).message
    assert "x = 100" in check.log1pexp.evaluate(naive_gradient).message
    assert "x = -30" in check.log1pexp.evaluate(documented_rule).message


def test_log1pexp_stub_is_not_attempted():
    assert check.log1pexp.evaluate(stub).status is Status.NOT_ATTEMPTED
    assert check.log1pexp.evaluate(custom_gradient(stub)).status is Status.NOT_ATTEMPTED


@pytest.mark.parametrize("answer, mistake", [
    (lambda x: None, "not_a_pair"),
    (lambda x: np.logaddexp(0.0, x), "not_a_pair"),
    (lambda x: (None, lambda up: up), "returned_none"),
    (lambda x: (np.logaddexp(0.0, x), 1.0), "grad_fn_not_callable"),
    (lambda x: (np.logaddexp(0.0, x), lambda up: None), "returned_none"),
    (lambda x: (np.logaddexp(0.0, x), lambda up: np.zeros(2)), "wrong_shape"),
    (lambda x: (np.logaddexp(0.0, x)[:2], lambda up: up), "wrong_shape"),
    (lambda x: (np.logaddexp(0.0, x), lambda up: 1 / 0), "raised"),
    (lambda x: ("value", lambda up: up), "wrong_type"),
    (lambda x: x.undefined, "raised"),
    (None, "not_callable"),
    ("log1pexp", "not_callable"),
])
def test_log1pexp_bad_input_is_wrong_with_a_hint(answer, mistake):
    result = check.log1pexp.evaluate(answer)
    assert_wrong_with_hint(result)
    assert result.mistake == mistake, result


def test_log1pexp_check_prints_no_numpy_warnings(recwarn):
    check.log1pexp.evaluate(naive_value)
    check.log1pexp.evaluate(naive_gradient)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# --- every check ----------------------------------------------------------------------

ALL_CHECKS = [
    (check.accumulate_gradient, accumulate_reference, accumulate_overwrite),
    (check.multiply_vjp, multiply_reference, lambda up, a, b: (up * b, up * a)),
    (check.matmul_vjp, matmul_reference, lambda up, a, b: (up @ b, a.T @ up)),
    (check.log1pexp, log1pexp_reference, naive_value),
]


@pytest.mark.parametrize("check_function, reference, wrong", ALL_CHECKS,
                         ids=lambda value: getattr(value, "exercise", ""))
def test_strict_mode_raises_unless_correct(monkeypatch, capsys, check_function, reference,
                                           wrong):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    check_function(reference)
    assert "✅" in capsys.readouterr().out
    with pytest.raises(ExerciseNotSolved):
        check_function(wrong)
    with pytest.raises(ExerciseNotSolved):
        check_function(stub)


@pytest.mark.parametrize("check_function, reference, wrong", ALL_CHECKS,
                         ids=lambda value: getattr(value, "exercise", ""))
def test_lesson_mode_prints_and_never_raises(monkeypatch, capsys, check_function, reference,
                                             wrong):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "0")
    check_function(stub)
    check_function(wrong)
    out = capsys.readouterr().out
    assert "⏳" in out and "❌" in out
