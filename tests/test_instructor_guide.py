"""The instructor guide covers every lesson and is generated from the notebooks."""

from __future__ import annotations

import re

import pytest
from notebooks import COURSE
from notebooks import LESSONS
from notebooks import ROOT
from notebooks import load

from course_tools import build_instructor_guide
from course_tools import notebook_format

GUIDE = ROOT / "instructors" / "guide.md"


def test_guide_is_current():
    assert build_instructor_guide.main(["--check"]) == 0, (
        "run python -m course_tools.build_instructor_guide"
    )


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_guide_covers_the_lesson(lesson):
    text = GUIDE.read_text(encoding="utf-8")
    part = text.split(f"## {lesson.number:02d} {lesson.title}", 1)[1]
    part = re.split(r"\n## \d\d ", part, maxsplit=1)[0]
    for heading in (
        "### Objectives",
        "### Live coding",
        "### Misconceptions to expect",
        "### Answers to *Check your understanding*",
    ):
        assert heading in part, f"{lesson.slug}: {heading} missing"
    assert (
        f"Teaching {lesson.teaching_minutes} min, exercises {lesson.exercise_minutes} min" in part
    )


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_each_misconception_cell_exists_in_both_copies(lesson):
    notes = next(
        cell.source
        for cell in load("solutions", lesson).cells
        if "instructor-only" in notebook_format.tags(cell)
    )
    references = build_instructor_guide.REFERENCE.findall(notes)
    assert references, "name the cell that exposes each misconception"
    for folder in ("solutions", "lessons"):
        tagged = {tag for cell in load(folder, lesson).cells for tag in notebook_format.tags(cell)}
        assert set(references) <= tagged, f"{folder}: {set(references) - tagged}"


def test_memory_per_learner_comes_from_the_benchmark():
    text = GUIDE.read_text(encoding="utf-8")
    assert "{{memory_table}}" not in text
    assert re.search(r"\| 00 Welcome \| \d+ MB \| \d+ MB \|", text)


def test_nbgitpuller_link_format_is_given():
    text = GUIDE.read_text(encoding="utf-8")
    assert "/hub/user-redirect/git-pull?repo=" in text and "urlpath=lab%2Ftree%2F" in text


def test_hub_snippet_comes_from_course_toml_and_the_measured_peaks():
    import json

    text = GUIDE.read_text(encoding="utf-8")
    assert "{{" not in text
    results = json.loads((ROOT / "benchmark" / "latest.json").read_text())
    memory, hub = results["hub_memory"], results["hub"]
    assert f"guarantee: {memory['guarantee']}" in text and f"limit: {memory['limit']}" in text
    # The guarantee holds the heaviest learner with one lesson, the limit the learner
    # with three notebooks open, as a class on a hub measured them (plus 5%).
    for key, measured in (("guarantee", "one_lesson_mb"), ("limit", "three_notebooks_mb")):
        gigabytes = float(memory[key].rstrip("G"))
        needed = 1.05 * memory[measured] * 2**20 / 1e9
        assert needed <= gigabytes < needed + 0.25
    assert f"{hub['learners']} learners" in text
    assert f"load average was {hub['load_before']:.1f} before the run" in text  # shared or not
    assert f"REGISTRY/gradients-on-tape:{COURSE.ref}" in text
    assert "--target-repo-dir /srv/repo" in text and "notebookDir: /home/jovyan" in text
    assert f"https://github.com/{COURSE.repository}" in text
    assert f"&branch={COURSE.ref}&" in text
