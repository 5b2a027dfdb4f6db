"""The checker framework: three verdicts, plain-word hints, strict mode."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import (
    ExerciseNotSolved, Status, Wrong, as_values, call_answer, evaluate, exercise, matches,
)


@exercise("9.1", "double")
def double_check(answer):
    x = tf.constant([1.0, 2.0])
    got = as_values(call_answer(answer, x), shape=(2,), dtype=tf.float32)
    if matches(got, [2.0, 4.0]):
        return "well done"
    raise Wrong("not doubled", "other")


def stub(x):
    raise NotImplementedError()


@pytest.mark.parametrize("answer, status, mistake", [
    (lambda x: 2.0 * x, Status.CORRECT, None),
    (stub, Status.NOT_ATTEMPTED, "not_attempted"),
    (lambda x: x, Status.WRONG, "other"),
    (lambda x: None, Status.WRONG, "returned_none"),
    (lambda x: (2.0 * x).numpy(), Status.WRONG, "returned_numpy"),
    (lambda x: [2.0, 4.0], Status.WRONG, "returned_list"),
    (lambda x: tf.constant([2.0, 4.0, 6.0]), Status.WRONG, "wrong_shape"),
    (lambda x: tf.constant([2.0, 4.0], tf.float64), Status.WRONG, "wrong_dtype"),
    (lambda x: "two", Status.WRONG, "wrong_type"),
    (lambda x: 1 / 0, Status.WRONG, "raised"),
    (lambda x: tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0]), Status.WRONG, "raised"),
    (None, Status.WRONG, "not_callable"),
    (tf.constant(2.0), Status.WRONG, "not_callable"),
])
def test_verdicts_and_mistake_codes(answer, status, mistake):
    result = double_check.evaluate(answer)
    assert result.status is status
    assert result.mistake == mistake
    assert "Traceback" not in result.message


def test_tensorflow_errors_are_shortened_to_their_gist():
    result = double_check.evaluate(
        lambda x: tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0]))
    assert result.message.startswith("`<lambda>` raised InvalidArgumentError")
    assert "{{function_node" not in result.message
    assert len(result.message) < 260


def test_check_prints_one_line_and_returns_none(capsys, monkeypatch):
    monkeypatch.delenv("AUTODIFF_COURSE_STRICT", raising=False)
    assert double_check(stub) is None
    printed = capsys.readouterr().out
    assert printed.startswith("⏳ Exercise 9.1 (double): not attempted yet.")
    assert printed.count("\n") == 1


@pytest.mark.parametrize("answer", [stub, lambda x: x])
def test_strict_mode_raises_unless_correct(answer, monkeypatch, capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    with pytest.raises(ExerciseNotSolved):
        double_check(answer)
    double_check(lambda x: 2.0 * x)  # correct: no exception
    assert "✅ Exercise 9.1 (double): correct. well done" in capsys.readouterr().out


def test_lessons_never_raise(monkeypatch):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "0")
    for answer in (stub, None, lambda x: 1 / 0, lambda x: x, 3):
        double_check(answer)


def test_a_bug_in_an_evaluator_becomes_a_plain_message():
    def broken(answer):
        raise KeyError("oops")

    result = evaluate("9.2", "broken", broken, lambda: None)
    assert result.status is Status.WRONG and result.mistake == "unjudgeable"
    assert "could not judge" in result.message


def test_call_answer_passes_values_through():
    assert call_answer(lambda a, b: a + b, 1, 2) == 3


def test_matches_rejects_nan_and_shape_mismatch():
    assert not matches(np.array([np.nan]), [np.nan])
    assert not matches(np.array([1.0, 2.0]), [1.0])
    assert matches(np.array([1.0, 2.0]), [1.0, 2.0 + 1e-9])
