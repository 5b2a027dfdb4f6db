"""Shared rules for the course's notebooks: tags, markers, navigation, normal form.

Used by ``tools/build_lessons.py`` and by the structure tests, so that what the
generator writes and what the tests demand cannot drift apart.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autodiff_course.course_config import Course, Lesson, load_course  # noqa: E402

LESSONS_DIR = ROOT / "lessons"
SOLUTIONS_DIR = ROOT / "solutions"
README = ROOT / "README.md"

# Cells with one of these tags exist only in solutions/.
SOLUTION_ONLY_TAGS = {"solution-only", "instructor-only", "answers"}
NAV_TOP_TAG = "navigation-top"
NAV_BOTTOM_TAG = "navigation-bottom"
COURSE_MAP_TAG = "course-map"
IGNORE_OUTPUT_TAG = "nbval-ignore-output"
# The cell metadata JupyterLab uses to show a cell collapsed; kept by the normal form.
COLLAPSE_KEYS = ("source_hidden", "outputs_hidden")

BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
MARKDOWN_STUB = "_Your answer here._"

TIME_LINE = re.compile(r"^\*\*Time:\*\*.*$", re.MULTILINE)
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
LANGUAGE_INFO = {"name": "python", "pygments_lexer": "ipython3"}
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"

README_START = "<!-- course-contents:start (generated from course.toml) -->"
README_END = "<!-- course-contents:end -->"


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def replace_solution_regions(source: str, markdown: bool) -> str:
    """Replace every BEGIN/END SOLUTION region with the learner's stub."""
    lines = source.split("\n")
    result: list[str] = []
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(BEGIN_SOLUTION):
            if inside:
                raise ValueError("nested BEGIN SOLUTION marker")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            stub = MARKDOWN_STUB if markdown else CODE_STUB
            result.extend(indent + stub_line for stub_line in stub.split("\n"))
            continue
        if stripped.startswith(END_SOLUTION):
            if not inside:
                raise ValueError("END SOLUTION without BEGIN SOLUTION")
            inside = False
            continue
        if not inside:
            result.append(line)
    if inside:
        raise ValueError("BEGIN SOLUTION without END SOLUTION")
    return "\n".join(result)


def time_line(lesson: Lesson) -> str:
    if lesson.exercise_minutes:
        return (f"**Time:** {lesson.teaching_minutes} min teaching, "
                f"{lesson.exercise_minutes} min exercises")
    return f"**Time:** {lesson.teaching_minutes} min"


def navigation(course: Course, lesson: Lesson, folder: str) -> str:
    """The navigation bar for ``lesson`` in ``folder`` ('lessons' or 'solutions')."""
    previous, following = course.neighbours(lesson.slug)
    parts = []
    if previous:
        parts.append(f"[← {previous.number:02d} {previous.title}]({previous.filename})")
    parts.append("[Contents](../README.md#contents)")
    if following:
        parts.append(f"[{following.number:02d} {following.title} →]({following.filename})")
    copy = ("[solutions copy](../solutions/{f})" if folder == "lessons"
            else "[learner's copy](../lessons/{f})").format(f=lesson.filename)
    binder = course.binder_url(f"{folder}/{lesson.filename}")
    return (
        " · ".join(parts)
        + f" · This lesson's {copy}"
        + f"\n\n[![Launch on Binder]({BINDER_BADGE})]({binder})"
        + f" Lesson {lesson.number:02d} of {course.lessons[0].number:02d}"
        + f"–{course.lessons[-1].number:02d}"
        + f" · {time_line(lesson).replace('**Time:** ', '')}"
    )


def course_map(course: Course) -> str:
    rows = ["| # | lesson | time | learner's copy | solutions |", "|---|---|---|---|---|"]
    for lesson in course.lessons:
        minutes = time_line(lesson).replace("**Time:** ", "")
        rows.append(
            f"| {lesson.number:02d} | {lesson.title} | {minutes} | "
            f"[{lesson.filename}](../lessons/{lesson.filename}) | "
            f"[{lesson.filename}](../solutions/{lesson.filename}) |"
        )
    return "\n".join(rows)


def readme_contents(course: Course) -> str:
    rows = ["| # | lesson | time | open | launch |", "|---|---|---|---|---|"]
    for lesson in course.lessons:
        minutes = time_line(lesson).replace("**Time:** ", "")
        binder = course.binder_url(f"lessons/{lesson.filename}")
        rows.append(
            f"| {lesson.number:02d} | {lesson.title} | {minutes} | "
            f"[lesson](lessons/{lesson.filename}) · "
            f"[solutions](solutions/{lesson.filename}) | "
            f"[![Binder]({BINDER_BADGE})]({binder}) |"
        )
    total = sum(lesson.minutes for lesson in course.lessons)
    rows.append("")
    rows.append(f"Total: about {total // 60} h {total % 60:02d} min, exercises included.")
    return "\n".join(rows)


def slide_type(cell) -> str:
    if cell.cell_type == "markdown":
        first = cell.source.lstrip().split("\n", 1)[0]
        if first.startswith("# ") or first.startswith("## "):
            return "slide"
        if first.startswith("### "):
            return "subslide"
    return "-"


def merge_streams(outputs: list) -> list:
    """Join consecutive stream outputs of the same name, which a kernel may split
    at arbitrary points, so that saved notebooks are identical from run to run."""
    merged: list = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged
                and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1]["text"] = "".join(merged[-1]["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def normalise(nb, lesson: Lesson, course: Course, folder: str):
    """Bring a notebook to the course's normal form (in place) and return it."""
    nb.nbformat, nb.nbformat_minor = 4, 5
    widgets = nb.metadata.get("widgets")
    nb.metadata = nbformat.NotebookNode({"kernelspec": dict(KERNELSPEC),
                                         "language_info": dict(LANGUAGE_INFO)})
    if widgets:
        nb.metadata["widgets"] = widgets
    for index, cell in enumerate(nb.cells):
        cell_tags = sorted(tags(cell))
        collapsed = {key: True for key in COLLAPSE_KEYS
                     if cell.metadata.get("jupyter", {}).get(key)}
        cell.metadata = nbformat.NotebookNode()
        if cell_tags:
            cell.metadata["tags"] = cell_tags
        if collapsed:
            # A collapsed source (JupyterLab's jupyter.source_hidden) hides code that
            # would give an exercise away; the learner expands it on purpose.
            cell.metadata["jupyter"] = collapsed
        cell.metadata["slideshow"] = {"slide_type": slide_type(cell)}
        cell["id"] = f"{lesson.number:02d}-{index:03d}"
        if isinstance(cell.source, list):
            cell.source = "".join(cell.source)
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
        if cell.cell_type == "markdown":
            if NAV_TOP_TAG in cell_tags or NAV_BOTTOM_TAG in cell_tags:
                cell.source = navigation(course, lesson, folder)
            elif COURSE_MAP_TAG in cell_tags:
                cell.source = course_map(course)
            elif TIME_LINE.search(cell.source):
                cell.source = TIME_LINE.sub(time_line(lesson), cell.source)
            if not cell.get("attachments"):
                cell.pop("attachments", None)
    return nb


def lesson_from_solution(solution_nb):
    """The learner's copy: solution regions stubbed, solution-only cells removed."""
    nb = nbformat.from_dict(solution_nb)
    kept = []
    for cell in nb.cells:
        if tags(cell) & SOLUTION_ONLY_TAGS:
            continue
        if BEGIN_SOLUTION in cell.source:
            cell.source = replace_solution_regions(cell.source, cell.cell_type == "markdown")
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        kept.append(cell)
    nb.cells = kept
    return nb


def source_view(nb) -> list[tuple]:
    """What must agree between a committed notebook and a regenerated one."""
    return [(cell.cell_type, cell.source, tuple(sorted(tags(cell))),
             cell.metadata.get("slideshow", {}).get("slide_type"), cell.get("id"),
             tuple(sorted(cell.metadata.get("jupyter", {}))))
            for cell in nb.cells]


def read(path: Path):
    return nbformat.read(path, as_version=4)


def write(nb, path: Path) -> None:
    text = nbformat.writes(nb, version=4)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
