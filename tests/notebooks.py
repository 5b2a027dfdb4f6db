"""Shared access to the course's notebooks for the structure tests."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

import notebook_format  # noqa: E402

COURSE = notebook_format.load_course()
LESSONS = COURSE.lessons
FOLDERS = ("lessons", "solutions")


def notebook_path(folder: str, lesson) -> Path:
    return ROOT / folder / lesson.filename


def load(folder: str, lesson):
    return notebook_format.read(notebook_path(folder, lesson))


def every_notebook():
    """(folder, lesson) pairs, as pytest parameters with readable ids."""
    import pytest

    return [pytest.param(folder, lesson, id=f"{folder}/{lesson.slug}")
            for folder in FOLDERS for lesson in LESSONS]
