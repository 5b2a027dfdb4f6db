"""Shared access to the course's notebooks for the structure tests."""

from __future__ import annotations

from pathlib import Path

from course_tools import notebook_format
from course_tools.config import ROOT
from course_tools.config import load_course

COURSE = load_course()
LESSONS = COURSE.lessons
FOLDERS = ("lessons", "solutions")


def notebook_path(folder: str, lesson) -> Path:
    return ROOT / folder / lesson.filename


def load(folder: str, lesson):
    return notebook_format.read(notebook_path(folder, lesson))


def every_notebook():
    """(folder, lesson) pairs, as pytest parameters with readable ids."""
    import pytest

    return [
        pytest.param(folder, lesson, id=f"{folder}/{lesson.slug}")
        for folder in FOLDERS
        for lesson in LESSONS
    ]
