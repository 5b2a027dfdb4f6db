"""The instructor guide covers every lesson and is generated from the notebooks."""

from __future__ import annotations

import re

import pytest

from notebooks import LESSONS, ROOT, load, notebook_format  # puts tools/ on sys.path

import build_instructor_guide  # noqa: E402

GUIDE = ROOT / "instructors" / "guide.md"


def test_guide_is_current():
    assert build_instructor_guide.main(["--check"]) == 0, (
        "run python tools/build_instructor_guide.py")


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_guide_covers_the_lesson(lesson):
    text = GUIDE.read_text(encoding="utf-8")
    part = text.split(f"## {lesson.number:02d} {lesson.title}", 1)[1]
    part = re.split(r"\n## \d\d ", part, maxsplit=1)[0]
    for heading in ("### Objectives", "### Live coding", "### Misconceptions to expect",
                    "### Answers to *Check your understanding*"):
        assert heading in part, f"{lesson.slug}: {heading} missing"
    assert f"Teaching {lesson.teaching_minutes} min, exercises {lesson.exercise_minutes} min" \
        in part


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_each_misconception_cell_exists_in_both_copies(lesson):
    notes = next(cell.source for cell in load("solutions", lesson).cells
                 if "instructor-only" in notebook_format.tags(cell))
    references = build_instructor_guide.REFERENCE.findall(notes)
    assert references, "name the cell that exposes each misconception"
    for folder in ("solutions", "lessons"):
        tagged = {tag for cell in load(folder, lesson).cells
                  for tag in notebook_format.tags(cell)}
        assert set(references) <= tagged, f"{folder}: {set(references) - tagged}"


def test_memory_per_learner_comes_from_the_benchmark():
    text = GUIDE.read_text(encoding="utf-8")
    assert "{{memory_table}}" not in text
    assert re.search(r"\| 00 Welcome \| \d+ MB \| \d+ MB \|", text)


def test_nbgitpuller_link_format_is_given():
    text = GUIDE.read_text(encoding="utf-8")
    assert "/hub/user-redirect/git-pull?repo=" in text and "urlpath=lab%2Ftree%2F" in text
