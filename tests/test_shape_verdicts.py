"""The judge's verdicts on a result of another shape, and the shared patterns of arrays of
rank 2 or more (autodiff_course.checking.judge.wrong_shape and .patterns), on a toy
exercise: the outer product x x^T of a batch, one matrix per example."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_course.checking import patterns
from autodiff_course.checking.answers import shape_hint
from autodiff_course.checking.function import Function
from autodiff_course.checking.judge import wrong_shape
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Probe

X = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [0.3, -2.0, 1.0]])  # 3 examples of 3
OUTER = np.einsum("bi,bj->bij", X, X)  # (2, 3, 3), one matrix per example
PROBE = Probe("float64", X, label="a toy batch")

TOY = Exercise(
    number="99.1",
    title="A toy outer product",
    stars=1,
    minutes=1,
    harness=Function("`outer`"),
    probes=lambda rng: [PROBE],
    reference=lambda p: np.einsum("bi,bj->bij", p.x, p.x),
    mistakes=(
        Mistake(
            "reduced_gradient",
            "You summed each matrix's rows.",
            lambda p: np.einsum("bi,bj->bij", p.x, p.x).sum(axis=1),
        ),
    ),
    describe={"value": "x[b] x[b]^T for every example"},
)


def verdict(got):
    return wrong_shape(TOY, PROBE, np.asarray(got, dtype=np.float64), "`outer`")


def test_a_declared_mistake_of_another_shape_is_named_first():
    assert verdict(OUTER.sum(axis=1)).mistake == "reduced_gradient"


def test_a_method_verdict_comes_after_the_declared_mistakes_and_before_the_patterns():
    from autodiff_course.checking.verdicts import Wrong

    method = Wrong("Use the method the exercise asks for.", "used_jacobian")
    got = np.asarray(OUTER.sum(axis=1), dtype=np.float64)
    assert wrong_shape(TOY, PROBE, got, "f", method=method).mistake == "reduced_gradient"
    assert wrong_shape(TOY, PROBE, OUTER[0], "f", method=method) is method


@pytest.mark.parametrize(
    "got, code",
    [
        (np.einsum("bij,bc->bicj", OUTER, np.eye(3)), "returned_full_jacobian"),
        (OUTER[0], "single_example"),
        (np.transpose(OUTER, (1, 0, 2)), "transposed"),
        (OUTER[:2], "hard_coded_size"),
        (OUTER[:, None], "broadcast_shape"),
        (OUTER.reshape(3, 9), "wrong_shape"),
    ],
    ids=["full", "single", "permuted", "typed size", "axis added", "reshaped"],
)
def test_results_of_another_shape(got, code):
    assert verdict(got).mistake == code


def test_a_squeeze_is_named_as_one():
    text = shape_hint("f", (3,), (1, 3))
    assert "dropped" in text and "tf.squeeze" in text
    assert "added or kept" in shape_hint("f", (1, 3, 1), (1, 3))


def test_a_transposed_shape_and_one_number_expected_are_told_in_words():
    assert "It is transposed" in shape_hint("f", (3, 2), (2, 3))
    assert "The answer is one number" in shape_hint("f", (3,), ())


def test_a_diagonal_as_a_vector_is_named():
    matrix = np.diag([1.0, 2.0, 3.0]) + 0.5
    found = patterns.reshaped_answer(np.diag(matrix), matrix, "your result")
    assert found.mistake == "returned_diagonal"


def test_permuted_axes_name_the_order_and_skip_symmetric_answers():
    cube = np.arange(24.0).reshape(2, 3, 4)
    found = patterns.permuted_axes(np.transpose(cube, (2, 0, 1)), cube, "your result", "x")
    assert (
        found.mistake == "transposed" and "[2, 0, 1]" in found.hint and "should be x" in found.hint
    )
    symmetric = np.ones((3, 3))
    assert patterns.permuted_axes(symmetric.T, symmetric, "your result") is None


def test_a_repeated_slice_is_named_for_rank_two_or_more_only():
    rows = np.arange(12.0).reshape(3, 4)
    assert patterns.repeated_slice(np.tile(rows[:1], (3, 1)), rows, "it").mistake == (
        "repeated_slice"
    )
    assert patterns.repeated_slice(np.full(4, 2.0), np.arange(4.0), "it") is None
    assert patterns.repeated_slice(rows, rows, "it") is None


def test_one_number_where_the_answer_varies_is_hard_coded_even_with_zeros_around():
    answer = np.diag([1.0, 2.0, 3.0])
    assert patterns.constant_where_varying(np.diag([0.5] * 3), answer, "it").mistake == (
        "hard_coded"
    )
    assert patterns.constant_where_varying(answer, answer, "it") is None


def test_one_size_that_differs_is_a_typed_size():
    assert patterns.other_size(np.zeros((3, 4)), np.zeros((5, 4)), "it").mistake == (
        "hard_coded_size"
    )
    assert patterns.other_size(np.zeros((3, 5)), np.zeros((5, 4)), "it") is None
    rows = np.arange(12.0).reshape(4, 3)
    short = patterns.other_size(rows[:3], rows, "it").message
    assert "the last one is missing" in short and "range(n - 1)" in short
    assert "the first one is missing" in patterns.other_size(rows[1:], rows, "it").message
    assert "one too many" in patterns.other_size(np.vstack([rows, rows[:1]]), rows, "it").message
    assert "missing" not in patterns.other_size(rows[:3] + 1, rows, "it").message
    assert patterns.other_size(np.zeros((1, 4)), np.zeros((5, 4)), "it") is None
