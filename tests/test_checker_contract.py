"""The contract every exercise check keeps, whatever its lesson.

Every check found in ``autodiff_course.checks`` is held to the same promises, so
a check added later is covered without writing these tests again:

* a stub that still raises ``NotImplementedError`` is *not attempted yet*;
* something that is not a function gets a hint, never a traceback;
* an answer that raises is reported in one plain sentence;
* in a lesson a check only prints; in strict mode anything but *correct* raises;
* no answer can break a check: whatever a function returns (None, complex
  numbers, Python scalars, NumPy arrays, tuples of any length, strings, ragged
  tensors, functions, objects that refuse conversion, nan), however it fails, and
  however long it runs, the verdict is a plain *not yet*, never "the check could
  not judge this answer" and never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import time

import numpy as np
import pytest
import tensorflow as tf

import autodiff_course.checks
from autodiff_course.checking import ExerciseNotSolved
from autodiff_course.checking import Status
from autodiff_course.checking import answers


def all_checks():
    found = []
    for module_info in pkgutil.iter_modules(autodiff_course.checks.__path__):
        module = importlib.import_module(f"autodiff_course.checks.{module_info.name}")
        for value in vars(module).values():
            if callable(value) and hasattr(value, "evaluate") and hasattr(value, "exercise"):
                found.append(pytest.param(value, id=f"{value.exercise} {value.__name__}"))
    return found


CHECKS = all_checks()


def stub(*args, **kwargs):
    raise NotImplementedError()


def test_every_lesson_has_checks():
    lessons = {param.values[0].exercise.split(".")[0] for param in CHECKS}
    assert lessons == {"0", "1", "2", "3", "4", "5", "6", "7"}


@pytest.mark.parametrize("check", CHECKS)
def test_stub_is_not_attempted(check):
    result = check.evaluate(stub)
    assert (result.status, result.mistake) == (Status.NOT_ATTEMPTED, "not_attempted")
    assert "NotImplementedError" in result.message


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    "bad", [None, 3.0, "my_function", np.eye(2)], ids=["None", "float", "str", "array"]
)
def test_something_not_callable_gets_a_hint(check, bad):
    result = check.evaluate(bad)
    assert result.status is Status.WRONG
    assert result.mistake == "not_callable"
    assert "function" in result.message and "Traceback" not in result.message


@pytest.mark.parametrize("check", CHECKS)
def test_an_answer_that_raises_is_reported_in_plain_words(check):
    def broken(*args, **kwargs):
        raise ValueError("shapes do not fit")

    result = check.evaluate(broken)
    assert result.status is Status.WRONG
    assert "ValueError: shapes do not fit" in result.message
    assert "Traceback" not in result.message


@pytest.mark.parametrize("check", CHECKS)
def test_lessons_print_and_strict_mode_raises(check, monkeypatch, capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "0")
    assert check(stub) is None
    assert f"Exercise {check.exercise}" in capsys.readouterr().out
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    with pytest.raises(ExerciseNotSolved):
        check(stub)


class RefusesConversion:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array for you")

    def __len__(self):
        raise RuntimeError("no length either")


def _returning(make):
    def answer(*args, **kwargs):
        return make()

    return answer


def _raising(error):
    def answer(*args, **kwargs):
        raise error

    return answer


def _sleeping(*args, **kwargs):
    while True:
        time.sleep(0.01)


MALFORMED = {
    "None": _returning(lambda: None),
    "complex": _returning(lambda: tf.complex(1.0, 2.0)),
    "complex vector": _returning(lambda: tf.complex(tf.ones(3), tf.ones(3))),
    "python float": _returning(lambda: 3.0),
    "python int": _returning(lambda: 2),
    "python complex": _returning(lambda: 1 + 2j),
    "numpy array": _returning(lambda: np.ones(3)),
    "numpy scalar": _returning(lambda: np.float32(1.5)),
    "empty tuple": _returning(lambda: ()),
    "1-tuple": _returning(lambda: (tf.ones(3),)),
    "3-tuple": _returning(lambda: (1.0, 2.0, 3.0)),
    "list of mixed shapes": _returning(lambda: [tf.ones(2), tf.ones(3)]),
    "dict": _returning(lambda: {"a": 1.0}),
    "string": _returning(lambda: "my answer"),
    "bytes": _returning(lambda: b"abc"),
    "generator": _returning(lambda: (i for i in range(3))),
    "function": _returning(lambda: lambda *a: None),
    "object": _returning(RefusesConversion),
    "ragged": _returning(lambda: tf.ragged.constant([[1.0], [2.0, 3.0]])),
    "sparse": _returning(lambda: tf.sparse.from_dense(tf.eye(2))),
    "bool tensor": _returning(lambda: tf.constant([True, False])),
    "int tensor": _returning(lambda: tf.constant([1, 2, 3])),
    "string tensor": _returning(lambda: tf.constant(["a", "b"])),
    "nan tensor": _returning(lambda: tf.fill([3], float("nan"))),
    "empty tensor": _returning(lambda: tf.zeros([0])),
    "big tensor": _returning(lambda: tf.zeros([50, 50])),
    "variable": _returning(lambda: tf.Variable([1.0, 2.0])),
    "raises TypeError": _raising(TypeError("unsupported operand")),
    "raises InvalidArgumentError": _raising(
        tf.errors.InvalidArgumentError(None, None, "{{function_node x}} Incompatible shapes")
    ),
    "raises KeyError": _raising(KeyError("w")),
    "raises RecursionError": _raising(RecursionError("maximum recursion depth exceeded")),
    "never returns": _sleeping,
}


def _exits(*args, **kwargs):
    import sys

    sys.exit(0)


def _interrupted(*args, **kwargs):
    raise KeyboardInterrupt()


def _changes_settings(*args, **kwargs):
    np.seterr(all="raise")
    np.random.seed(0)


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize(
    "answer, mistake",
    [
        (_exits, "exited"),
        (_interrupted, "interrupted"),
        (_changes_settings, "changed_global_state"),
    ],
    ids=["sys.exit", "KeyboardInterrupt", "np.seterr and a seed"],
)
def test_an_answer_that_leaves_the_rules_gets_a_plain_verdict(check, answer, mistake):
    errors, state = np.geterr(), np.random.get_state()[1].copy()
    result = check.evaluate(answer)
    assert (result.status, result.mistake) == (Status.WRONG, mistake), result.message
    assert "Traceback" not in result.message
    assert np.geterr() == errors and np.array_equal(np.random.get_state()[1], state)


@pytest.mark.parametrize("check", CHECKS)
def test_no_answer_can_break_a_check(check, monkeypatch):
    monkeypatch.setattr(answers, "TIME_LIMIT_SECONDS", 0.5)
    for name, answer in MALFORMED.items():
        result = check.evaluate(answer)
        assert result.status is Status.WRONG, (name, result)
        assert result.mistake != "unjudgeable", (name, result.message)
        assert "Traceback" not in result.message, name
        assert result.message.strip(), name
