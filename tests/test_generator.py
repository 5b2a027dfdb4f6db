"""The lesson generator: stubs, removed cells, navigation, and its --check mode."""

from __future__ import annotations

import copy
import shutil

import nbformat
import pytest
from notebooks import COURSE
from notebooks import LESSONS
from notebooks import ROOT

from course_tools import build_lessons
from course_tools import notebook_format


def test_generated_files_are_current():
    assert build_lessons.check(COURSE) == []


def test_solution_region_becomes_an_indented_stub():
    source = (
        'def f(x):\n    """doc"""\n    ### BEGIN SOLUTION\n    y = 2 * x\n'
        "    return y\n    ### END SOLUTION\n\ncheck(f)"
    )
    stubbed = notebook_format.replace_solution_regions(source, markdown=False)
    assert stubbed == (
        'def f(x):\n    """doc"""\n    # YOUR CODE HERE\n'
        "    raise NotImplementedError()\n\ncheck(f)"
    )


def test_markdown_solution_region_becomes_a_prompt():
    stubbed = notebook_format.replace_solution_regions(
        "Why?\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION", markdown=True
    )
    assert stubbed == "Why?\n_Your answer here._"


@pytest.mark.parametrize(
    "broken",
    [
        "### BEGIN SOLUTION\nx = 1",
        "x = 1\n### END SOLUTION",
        "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
    ],
)
def test_unbalanced_markers_are_refused(broken):
    with pytest.raises(ValueError):
        notebook_format.replace_solution_regions(broken, markdown=False)


def test_solution_only_cells_are_dropped_and_others_kept():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_markdown_cell("answers", metadata={"tags": ["answers"]}),
        nbformat.v4.new_markdown_cell("notes", metadata={"tags": ["instructor-only"]}),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["solution-only"]}),
        nbformat.v4.new_code_cell(
            "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
            execution_count=3,
            outputs=[nbformat.v4.new_output("stream", text="hi")],
        ),
    ]
    learner = notebook_format.lesson_from_solution(nb)
    assert [cell.source for cell in learner.cells] == [
        "# Title",
        "def f():\n    # YOUR CODE HERE\n    raise NotImplementedError()",
    ]
    assert learner.cells[1].outputs == [] and learner.cells[1].execution_count is None


def test_check_reports_a_stale_lesson(tmp_path, monkeypatch):
    lessons = tmp_path / "lessons"
    shutil.copytree(ROOT / "lessons", lessons)
    lesson = LESSONS[-1]
    nb = notebook_format.read(lessons / lesson.filename)
    nb.cells[3].source += "\nan edit made in the lesson instead of the solution"
    notebook_format.write(nb, lessons / lesson.filename)
    monkeypatch.setattr(build_lessons, "LESSONS_DIR", lessons)
    problems = build_lessons.check(COURSE)
    assert problems == [
        f"lessons/{lesson.filename} is stale: it no longer matches solutions/{lesson.filename}"
    ]


def test_check_reports_stale_navigation_and_readme(tmp_path, monkeypatch):
    solutions = tmp_path / "solutions"
    shutil.copytree(ROOT / "solutions", solutions)
    lesson = LESSONS[0]
    nb = notebook_format.read(solutions / lesson.filename)
    nb.cells[1].source = "[old link](nowhere.ipynb)"
    notebook_format.write(nb, solutions / lesson.filename)
    readme = tmp_path / "README.md"
    readme.write_text((ROOT / "README.md").read_text().replace("| 01 |", "| 1 |"))
    monkeypatch.setattr(build_lessons, "SOLUTIONS_DIR", solutions)
    monkeypatch.setattr(build_lessons, "README", readme)
    problems = build_lessons.check(COURSE)
    assert (
        f"solutions/{lesson.filename} is not in normal form (navigation, ids, time "
        f"line, metadata or code formatting)" in problems
    )
    assert "README.md's contents table is stale" in problems


def test_normal_form_is_stable():
    lesson = LESSONS[1]
    nb = notebook_format.read(ROOT / "solutions" / lesson.filename)
    once = notebook_format.normalise(copy.deepcopy(nb), lesson, COURSE, "solutions")
    twice = notebook_format.normalise(copy.deepcopy(once), lesson, COURSE, "solutions")
    assert notebook_format.source_view(once) == notebook_format.source_view(twice)
    assert all(cell["id"].startswith(f"{lesson.number:02d}-") for cell in once.cells)
