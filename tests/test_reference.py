"""The reference answers that lessons import after an exercise are answers: each one
whose docstring names its exercise ("The answer to exercise 6.1: ...") passes that
exercise's own check, found where the learner's copy calls it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest
from exercises import exercises
from notebooks import LESSONS
from notebooks import load

import autodiff_course.reference as reference_package
from autodiff_course.checking import Status

NAMES_EXERCISE = re.compile(r"\b[Ee]xercise (\d+\.\d+)\b")


def reference_answers():
    """(exercise number, module name, function) for every reference answer."""
    found = []
    for module_info in pkgutil.iter_modules(reference_package.__path__):
        module = importlib.import_module(f"{reference_package.__name__}.{module_info.name}")
        for name in module.__all__:
            function = getattr(module, name)
            first_line = (inspect.getdoc(function) or "").split("\n", 1)[0]
            named = NAMES_EXERCISE.search(first_line)
            if named:
                found.append(pytest.param(named[1], module, function, id=f"{named[1]}-{name}"))
    return found


def check_for(number: str):
    lesson = next(lesson for lesson in LESSONS if lesson.number == int(number.split(".")[0]))
    exercise = next(e for e in exercises(load("lessons", lesson)) if e.number == number)
    checks = importlib.import_module(f"autodiff_course.checks.lesson{lesson.number:02d}")
    return getattr(checks, exercise.check)


def test_every_lesson_that_imports_reference_answers_has_some():
    numbers = {param.values[0].split(".")[0] for param in reference_answers()}
    assert {"3", "4", "5", "6"} <= numbers


@pytest.mark.parametrize("number, module, function", reference_answers())
def test_each_reference_answer_passes_its_exercises_check(number, module, function):
    result = check_for(number).evaluate(function)
    assert result.status == Status.CORRECT, result.message
