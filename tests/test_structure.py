"""Structure tests: names, anatomy and saved state of every notebook.

What each notebook must contain is spelled out in README.md ("Each lesson has the
same anatomy") and in the course's conventions; these tests enforce it.
"""

from __future__ import annotations

import re

import pytest
from notebooks import COURSE
from notebooks import FOLDERS
from notebooks import LESSONS
from notebooks import ROOT
from notebooks import every_notebook
from notebooks import load

from course_tools import notebook_format
from course_tools.notebook_format import EXERCISE_HEADING

SLUG = re.compile(r"^\d\d-[a-z0-9]+(-[a-z0-9]+)*$")
REQUIRED_SECTIONS = [
    "## Overview",
    "## Setup",
    "## Key points",
    "## Check your understanding",
    "## Going further",
]


def markdown(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "markdown"]


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_lesson_numbers_are_consecutive_and_slugs_are_kebab_case():
    assert [lesson.number for lesson in LESSONS] == list(range(len(LESSONS)))
    for lesson in LESSONS:
        assert SLUG.match(lesson.slug), lesson.slug
        assert lesson.slug.startswith(f"{lesson.number:02d}-")


@pytest.mark.parametrize("folder", FOLDERS)
def test_folder_holds_exactly_the_configured_lessons(folder):
    on_disk = sorted(path.name for path in (ROOT / folder).glob("*.ipynb"))
    assert on_disk == sorted(notebook.filename for notebook in COURSE.notebooks)


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_one_h1_title_first(folder, lesson):
    nb = load(folder, lesson)
    titles = [
        line for source in markdown(nb) for line in source.split("\n") if line.startswith("# ")
    ]
    assert len(titles) == 1, titles
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_required_sections_in_order(folder, lesson):
    text = "\n".join(markdown(load(folder, lesson)))
    positions = []
    for heading in REQUIRED_SECTIONS:
        match = re.search(rf"^{re.escape(heading)}\b.*$", text, re.MULTILINE)
        assert match, f"missing section {heading!r}"
        positions.append(match.start())
    assert positions == sorted(positions), "sections out of order"
    overview = text[positions[0] : positions[1]]
    for part in ("**Questions**", "**Objectives**", "**Time:**"):
        assert part in overview, f"overview lacks {part}"
    assert notebook_format.time_line(lesson) in overview


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_navigation_at_top_and_bottom(folder, lesson):
    nb = load(folder, lesson)
    expected = notebook_format.navigation(COURSE, lesson, folder)
    assert notebook_format.NAV_TOP_TAG in notebook_format.tags(nb.cells[1])
    assert nb.cells[1].source == expected
    assert notebook_format.NAV_BOTTOM_TAG in notebook_format.tags(nb.cells[-1])
    assert nb.cells[-1].source == expected


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_navigation_links_point_at_files_that_exist(folder, lesson):
    nb = load(folder, lesson)
    links = re.findall(r"\]\(([^)\s]+)\)", nb.cells[1].source)
    local = [link for link in links if not link.startswith("http")]
    assert local, "no local links in the navigation bar"
    for link in local:
        target = (ROOT / folder / link.split("#")[0]).resolve()
        assert target.exists(), f"{link} does not exist"
    binder = [link for link in links if "mybinder.org/v2/gh/" in link]
    assert binder == [COURSE.binder_url(f"{folder}/{lesson.filename}")]


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_single_setup_cell_is_the_first_code_cell(folder, lesson):
    cells = code_cells(load(folder, lesson))
    calls = [i for i, cell in enumerate(cells) if "setup_notebook()" in cell.source]
    assert calls == [0], "setup_notebook() must be called once, in the first code cell"
    first = cells[0].source
    assert (
        first.index("setup_notebook()") < first.find("import tensorflow")
        or "import tensorflow" not in first.split("setup_notebook()")[0]
    )


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_every_code_cell_was_run_and_saved_without_errors(folder, lesson):
    for index, cell in enumerate(code_cells(load(folder, lesson))):
        assert cell.execution_count is not None, f"code cell {index} was never run"
        for output in cell.outputs:
            assert output.output_type != "error", f"code cell {index} saved an error"
            if output.output_type == "stream":
                assert output.name == "stdout", (
                    f"code cell {index} saved stderr: {output.text[:200]!r}"
                )
    counts = [cell.execution_count for cell in code_cells(load(folder, lesson))]
    assert counts == list(range(1, len(counts) + 1)), "cells not run top to bottom"


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_ignore_output_tag_only_on_timing_cells(folder, lesson):
    for cell in load(folder, lesson).cells:
        if notebook_format.IGNORE_OUTPUT_TAG in notebook_format.tags(cell):
            assert re.search(r"time|timeit|perf_counter", cell.source), (
                "nbval-ignore-output is only for cells that print wall-clock timings"
            )


@pytest.mark.parametrize(
    "lesson", [lesson for lesson in LESSONS if lesson.number > 0], ids=lambda lesson: lesson.slug
)
def test_exercises_have_difficulty_minutes_and_checks(lesson):
    nb = load("solutions", lesson)
    headings = list(EXERCISE_HEADING.finditer("\n".join(markdown(nb))))
    assert len(headings) >= 3, "at least three exercises per lesson"
    assert all(int(heading["lesson"]) == lesson.number for heading in headings)
    assert [int(heading["part"]) for heading in headings] == list(range(1, len(headings) + 1))
    assert sum(int(heading["minutes"]) for heading in headings) == lesson.exercise_minutes, (
        "the exercises' minutes must add up to exercise_minutes in course.toml"
    )
    check_calls = [
        cell for cell in code_cells(nb) if re.search(r"^check\.\w+\(", cell.source, re.M)
    ]
    assert len(check_calls) >= len(headings), "every exercise is followed by a check"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_solutions_pass_every_check_and_lessons_start_unattempted(lesson):
    solution_text = "".join(
        output.get("text", "")
        for cell in code_cells(load("solutions", lesson))
        for output in cell.outputs
    )
    lesson_text = "".join(
        output.get("text", "")
        for cell in code_cells(load("lessons", lesson))
        for output in cell.outputs
    )
    if lesson.number > 0:  # lesson 00 demonstrates all three verdicts on purpose
        assert "⏳ Exercise" not in solution_text and "❌ Exercise" not in solution_text
        assert "✅ Exercise" in solution_text
        assert "✅ Exercise" not in lesson_text, "a lesson's stub was judged correct"
        assert "⏳ Exercise" in lesson_text


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_lessons_hide_solutions_and_answers(lesson):
    nb = load("lessons", lesson)
    for cell in nb.cells:
        assert notebook_format.BEGIN_SOLUTION not in cell.source
        assert not notebook_format.tags(cell) & notebook_format.SOLUTION_ONLY_TAGS
    solution = load("solutions", lesson)
    assert any("answers" in notebook_format.tags(cell) for cell in solution.cells), (
        "the solutions copy answers 'Check your understanding'"
    )


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_figures_referenced_exist(folder, lesson):
    for source in markdown(load(folder, lesson)):
        for link in re.findall(r"!\[[^\]]*\]\((\.\./figures/[^)\s]+)\)", source):
            assert (ROOT / folder / link).resolve().exists(), link


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_images_have_alt_text(folder, lesson):
    for source in markdown(load(folder, lesson)):
        for alt, link in re.findall(r"!\[([^\]]*)\]\(([^)\s]+)\)", source):
            if "badge" not in link:
                assert len(alt.strip()) >= 15, f"image {link} needs descriptive alt text"
