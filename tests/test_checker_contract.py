"""The contract every exercise check keeps, whatever its lesson.

Every check found in ``autodiff_course.checks`` is held to the same promises, so
a check added later is covered without writing these tests again:

* a stub that still raises ``NotImplementedError`` is *not attempted yet*;
* something that is not a function gets a hint, never a traceback;
* an answer that raises is reported in one plain sentence;
* in a lesson a check only prints; in strict mode anything but *correct* raises.
"""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import autodiff_course.checks
from autodiff_course.checking import ExerciseNotSolved, Status


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
    assert lessons == {"0", "1", "2", "3", "4", "5", "6"}


@pytest.mark.parametrize("check", CHECKS)
def test_stub_is_not_attempted(check):
    result = check.evaluate(stub)
    assert (result.status, result.mistake) == (Status.NOT_ATTEMPTED, "not_attempted")
    assert "NotImplementedError" in result.message


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("bad", [None, 3.0, "my_function", np.eye(2)],
                         ids=["None", "float", "str", "array"])
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
