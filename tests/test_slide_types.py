"""Where slides start (course_tools.slides): at the lesson's headings, and at paragraph
boundaries wherever a stretch between headings would not fit the budget. The browser
test (tests/browser/test_slides.py) measures the slides these rules make."""

from __future__ import annotations

import nbformat
import pytest
from notebooks import LESSONS
from notebooks import load

from course_tools import notebook_format
from course_tools import slides
from course_tools.slides import SLIDE_BUDGET
from course_tools.slides import estimated_height
from course_tools.slides import slide_types


def markdown(source, **metadata):
    return nbformat.v4.new_markdown_cell(source, metadata=metadata)


def code(lines: int, output_lines: int = 0, **metadata):
    cell = nbformat.v4.new_code_cell(
        "\n".join(f"x{k} = {k}" for k in range(lines)), metadata=metadata
    )
    if output_lines:
        text = "".join(f"line {k}\n" for k in range(output_lines))
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return cell


def test_headings_start_slides_and_sub_slides():
    cells = [
        markdown("# Title"),
        markdown("## A section"),
        code(3),
        markdown("### A part"),
        code(2),
    ]
    assert slide_types(cells) == ["slide", "slide", "-", "subslide", "-"]


def test_a_short_section_stays_one_slide():
    cells = [markdown("## Short"), code(5), markdown("Then this."), code(5)]
    assert slide_types(cells) == ["slide", "-", "-", "-"]


def test_a_long_section_is_cut_before_a_paragraph_never_between_it_and_its_code():
    cells = [markdown("## Long")]
    for k in range(6):
        cells += [markdown(f"Step {k}: some words about the code below."), code(12, 8)]
    kinds = slide_types(cells)
    assert kinds.count("subslide") >= 2
    for cell, kind in zip(cells, kinds):
        if kind == "subslide":
            assert cell.cell_type == "markdown", "a paragraph was parted from its code"
    assert max(slide_heights(cells, kinds)) <= SLIDE_BUDGET


def test_a_paragraph_whose_code_alone_overflows_is_cut_before_the_code():
    cells = [markdown("## Tall"), markdown("Two long cells follow."), code(40), code(40)]
    assert slide_types(cells) == ["slide", "-", "-", "subslide"]


def test_the_estimate_grows_with_what_a_cell_shows():
    assert estimated_height(code(20)) > estimated_height(code(2))
    assert estimated_height(code(2, 30)) > estimated_height(code(2))
    folded = code(40, jupyter={"source_hidden": True})
    assert estimated_height(folded) < estimated_height(code(40))
    assert estimated_height(markdown("word " * 400)) > estimated_height(markdown("word " * 20))
    table = markdown("| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 10)
    assert estimated_height(table) > estimated_height(markdown("| a | b |\n|---|---|\n| 1 | 2 |"))


def test_the_learner_copy_keeps_the_solutions_cuts_and_moves_those_of_removed_cells():
    solution = nbformat.v4.new_notebook()
    solution.cells = [
        markdown("## A", slideshow={"slide_type": "slide"}),
        markdown(
            "Instructor aside.", tags=["instructor-only"], slideshow={"slide_type": "subslide"}
        ),
        code(3, slideshow={"slide_type": "-"}),
        markdown("More.", slideshow={"slide_type": "subslide"}),
    ]
    learner = notebook_format.lesson_from_solution(solution)
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in learner.cells]
    assert kinds == ["slide", "subslide", "subslide"]


def slide_heights(cells, kinds) -> list[float]:
    heights, current = [], 0.0
    for cell, kind in zip(cells, kinds):
        if kind in ("slide", "subslide") and current:
            heights.append(current)
            current = 0.0
        current += estimated_height(cell)
    return heights + [current]


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_every_slide_of_every_learner_copy_is_estimated_within_the_budget(lesson):
    nb = load("lessons", lesson)
    kinds = [cell.metadata["slideshow"]["slide_type"] for cell in nb.cells]
    tallest = max(slide_heights(nb.cells, kinds))
    assert tallest <= SLIDE_BUDGET, (
        f"{lesson.slug}: a slide is estimated at {tallest:.0f} px; one of its cells is too "
        f"tall to share a slide (split it) or the budget of {SLIDE_BUDGET} px is exceeded"
    )


def test_the_module_constants_describe_a_1280x720_screen():
    assert 2 * 720 > SLIDE_BUDGET > 720
    assert slides.PROSE_CHARACTERS_PER_LINE > slides.OUTPUT_CHARACTERS_PER_LINE


def test_a_script_in_an_html_output_takes_no_room_on_a_slide():
    """A widget's still picture carries the script that draws it without a kernel; only
    what the reader sees counts."""
    shown = {"output_type": "display_data", "data": {"text/html": "<p>At x = 88.5</p>"}}
    with_script = {
        "output_type": "display_data",
        "data": {"text/html": "<p>At x = 88.5</p><script>" + "let a = 1;\n" * 500 + "</script>"},
    }
    assert slides.output_height(with_script) == slides.output_height(shown)
