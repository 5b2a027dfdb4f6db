"""Shared rules for the course's notebooks: tags, markers, headings, navigation, normal form.

Used by the lesson and guide builders, the progress report, the nbgrader export and
the structure tests, so that what the generator writes and what the tools and tests
read cannot drift apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

from autodiff_course.notebook_setup import COLAB_ENVIRONMENT_VARIABLE

from .config import ROOT
from .config import Course
from .config import Lesson
from .slides import slide_types

# Cells with one of these tags exist only in solutions/.
SOLUTION_ONLY_TAGS = frozenset({"solution-only", "instructor-only", "answers"})
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

# An exercise's heading, the one pattern every tool and test reads exercises with:
#     ### Exercise 1.2: Central differences (★☆☆ easy, 10 min)
# ``number`` is "1.2" (``lesson`` "1", ``part`` "2"); one filled star per point of
# difficulty.
EXERCISE_HEADING = re.compile(
    r"^### Exercise (?P<number>(?P<lesson>\d+)\.(?P<part>\d+)): (?P<title>.+) "
    r"\((?P<difficulty>★☆☆ easy|★★☆ medium|★★★ hard), (?P<minutes>\d+) min\)$",
    re.MULTILINE,
)

TIME_LINE = re.compile(r"^\*\*Time:\*\*.*$", re.MULTILINE)
# Slide mode (jupyterlab-rise): a slide taller than the screen scrolls instead of
# being cut off; the notebook's own metadata wins over the user's RISE settings.
# Where slides start is course_tools.slides' rule.
RISE_SETTINGS = {"scroll": True}
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
LANGUAGE_INFO = {"name": "python", "pygments_lexer": "ipython3"}
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"

README_START = "<!-- course-contents:start (generated from course.toml) -->"
README_END = "<!-- course-contents:end -->"


def exercise_headings() -> dict[str, str]:
    """Every exercise's heading as its check's spec states it (the one source of an
    exercise's title, difficulty and minutes), by exercise number."""
    from autodiff_course.checks import all_exercises

    return {number: f"### {spec.heading}" for number, spec in all_exercises().items()}


def with_exercise_heading(source: str, headings: dict[str, str]) -> str:
    """``source`` with an exercise heading rewritten from its spec (unchanged when the
    exercise has none)."""

    def heading(match):
        return headings.get(match.group("number"), match.group(0))

    return EXERCISE_HEADING.sub(heading, source)


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
        return (
            f"**Time:** {lesson.teaching_minutes} min teaching, "
            f"{lesson.exercise_minutes} min exercises"
        )
    return f"**Time:** {lesson.teaching_minutes} min"


def aside_navigation(course: Course, aside, folder: str) -> str:
    """The navigation bar of an aside: back to its lesson, the contents, its other copy."""
    lesson = course.lesson_of(aside)
    other = "solutions" if folder == "lessons" else "lessons"
    copy_name = "solutions copy" if folder == "lessons" else "learner's copy"
    binder = course.binder_url(f"{folder}/{aside.filename}")
    colab = course.colab_url(f"{folder}/{aside.filename}")
    back = course.colab_url(f"{folder}/{lesson.filename}")
    return (
        f"[← back to {lesson.number:02d} {lesson.title}]({lesson.filename})"
        f" · [Contents](../README.md#Contents) · This aside's [{copy_name}](../{other}/"
        f"{aside.filename})\n\n[![Launch on Binder]({BINDER_BADGE})]({binder})"
        f" [![Open in Colab]({COLAB_BADGE})]({colab}) Optional aside to lesson "
        f"{lesson.number:02d} · {aside.teaching_minutes} min\n\n*In Colab:* "
        f"[← {lesson.number:02d}]({back}) · [Contents]({course.github_url('README.md')}#contents)"
    )


def navigation(course: Course, lesson: Lesson, folder: str) -> str:
    """The navigation bar for ``lesson`` in ``folder`` ('lessons' or 'solutions').

    Two sets of links, because no single address works everywhere:

    * the first line is relative, so it stays inside whatever serves the notebook
      (JupyterLab on a laptop, Binder, a hub, GitHub's viewer). "Contents" points at
      the README's heading as ``#Contents``: JupyterLab opens the README rendered and
      scrolls to the heading whose id is its exact text, and GitHub matches the
      fragment without regard to case;
    * the last line is absolute, for Colab, which opens one notebook at a time
      from GitHub and cannot follow a relative link to another file: its lesson
      links open the neighbours in Colab, its Contents link opens the README on
      GitHub. Both lines are built from ``repository`` and ``ref`` in course.toml.
    """
    if lesson in course.asides:
        return aside_navigation(course, lesson, folder)
    previous, following = course.neighbours(lesson.slug)
    other = "solutions" if folder == "lessons" else "lessons"
    parts, colab_parts = [], []
    if previous:
        parts.append(f"[← {previous.number:02d} {previous.title}]({previous.filename})")
        colab_parts.append(
            f"[← {previous.number:02d}]({course.colab_url(f'{folder}/{previous.filename}')})"
        )
    parts.append("[Contents](../README.md#Contents)")
    colab_parts.append(f"[Contents]({course.github_url('README.md')}#contents)")
    if following:
        parts.append(f"[{following.number:02d} {following.title} →]({following.filename})")
        colab_parts.append(
            f"[{following.number:02d} →]({course.colab_url(f'{folder}/{following.filename}')})"
        )
    copy_name = "solutions copy" if folder == "lessons" else "learner's copy"
    colab_parts.append(f"[{copy_name}]({course.colab_url(f'{other}/{lesson.filename}')})")
    binder = course.binder_url(f"{folder}/{lesson.filename}")
    colab = course.colab_url(f"{folder}/{lesson.filename}")
    return (
        " · ".join(parts)
        + f" · This lesson's [{copy_name}](../{other}/{lesson.filename})"
        + f"\n\n[![Launch on Binder]({BINDER_BADGE})]({binder})"
        + f" [![Open in Colab]({COLAB_BADGE})]({colab})"
        + f" Lesson {lesson.number:02d} of {course.lessons[0].number:02d}"
        + f"–{course.lessons[-1].number:02d}"
        + f" · {time_line(lesson).replace('**Time:** ', '')}"
        + "\n\n*In Colab:* "
        + " · ".join(colab_parts)
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
        for aside in course.asides_of(lesson):
            rows.append(
                f"| {aside.number:02d} | *Optional aside:* {aside.title} | "
                f"{aside.teaching_minutes} min | [{aside.filename}](../lessons/{aside.filename}) "
                f"| [{aside.filename}](../solutions/{aside.filename}) |"
            )
    return "\n".join(rows)


def readme_contents(course: Course) -> str:
    rows = ["| # | lesson | time | open | launch |", "|---|---|---|---|---|"]
    for lesson in course.lessons:
        minutes = time_line(lesson).replace("**Time:** ", "")
        binder = course.binder_url(f"lessons/{lesson.filename}")
        colab = course.colab_url(f"lessons/{lesson.filename}")
        rows.append(
            f"| {lesson.number:02d} | {lesson.title} | {minutes} | "
            f"[lesson](lessons/{lesson.filename}) · "
            f"[solutions](solutions/{lesson.filename}) | "
            f"[![Binder]({BINDER_BADGE})]({binder}) [![Colab]({COLAB_BADGE})]({colab}) |"
        )
        for aside in course.asides_of(lesson):
            rows.append(
                f"| {aside.number:02d} | *Optional aside:* {aside.title} | "
                f"{aside.teaching_minutes} min | [aside](lessons/{aside.filename}) | |"
            )
    total = sum(lesson.minutes for lesson in course.lessons)
    rows.append("")
    rows.append(
        f"Total: about {total // 60} h {total % 60:02d} min, exercises included"
        + (", asides not." if course.asides else ".")
    )
    return "\n".join(rows)


# The head of every notebook's setup cell, up to and including this line, is owned
# by the generator (see setup_preamble); the lesson's own imports follow it.
SETUP_CALL = "setup_notebook()"


def setup_preamble(course: Course) -> str:
    """The first lines of every setup cell, identical in every notebook.

    Where the helper package is installed (``./course.sh``, Binder, a hub image) the
    import succeeds and nothing else runs, so the cell prints exactly what it always
    did. On Google Colab, which starts from Colab's own environment, the import
    fails once: the cell then installs the helper package from the repository at the
    ``ref`` named in course.toml, with ``--no-deps`` so that pip never installs a
    second TensorFlow, NumPy or ipywidgets over Colab's. Anywhere else a missing
    package is an installation problem, reported in plain words.
    ``AUTODIFF_COURSE_FORCE_COLAB=1`` makes a kernel take the Colab path (the
    simulated-Colab test sets it).
    """
    return (
        "try:  # On Google Colab, the first run of this cell installs the course's helper"
        " package.\n"
        "    from autodiff_course import setup_notebook\n"
        "except ModuleNotFoundError:\n"
        "    import os\n"
        "    from importlib.util import find_spec\n"
        "\n"
        '    on_colab = find_spec("google") and find_spec("google.colab")\n'
        f'    if not on_colab and os.environ.get("{COLAB_ENVIRONMENT_VARIABLE}") != "1":\n'
        "        raise ModuleNotFoundError(\n"
        '            "The course\'s helper package, autodiff_course, is not "\n'
        '            "installed for this kernel: see Start in the README."\n'
        "        ) from None\n"
        f"    %pip install --quiet --no-deps {course.helper_package_source}\n"
        "    from autodiff_course import setup_notebook\n"
        "\n"
        f"{SETUP_CALL}"
    )


def with_setup_preamble(source: str, course: Course) -> str:
    """``source`` (a setup cell) with everything up to its setup call replaced."""
    lines = source.split("\n")
    if SETUP_CALL not in lines:
        return source
    rest = lines[lines.index(SETUP_CALL) + 1 :]
    return "\n".join([setup_preamble(course), *rest])


def merge_streams(outputs: list) -> list:
    """Join consecutive stream outputs of the same name, which a kernel may split
    at arbitrary points, so that saved notebooks are identical from run to run."""
    merged: list = []
    for output in outputs:
        if (
            output.get("output_type") == "stream"
            and merged
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == output.get("name")
        ):
            merged[-1]["text"] = "".join(merged[-1]["text"]) + "".join(output["text"])
        else:
            merged.append(output)
    return merged


def normalise(nb, lesson: Lesson, course: Course, folder: str):
    """Bring a notebook to the course's normal form (in place) and return it.

    The slide types of a solutions notebook follow :func:`course_tools.slides.slide_types`;
    a learner's copy keeps those it inherited from its solutions notebook
    (:func:`lesson_from_solution`), so that both present the same slides.
    """
    nb.nbformat, nb.nbformat_minor = 4, 5
    widgets = nb.metadata.get("widgets")
    nb.metadata = nbformat.NotebookNode(
        {
            "kernelspec": dict(KERNELSPEC),
            "language_info": dict(LANGUAGE_INFO),
            "rise": dict(RISE_SETTINGS),
        }
    )
    if widgets:
        nb.metadata["widgets"] = widgets
    setup_cell = next((cell for cell in nb.cells if cell.cell_type == "code"), None)
    headings = exercise_headings()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)  # before the slide types: they count outputs
    if folder == "solutions":
        kinds = slide_types(nb.cells, ROOT / folder)
    else:
        kinds = [cell.metadata.get("slideshow", {}).get("slide_type", "-") for cell in nb.cells]
    for index, cell in enumerate(nb.cells):
        cell_tags = sorted(tags(cell))
        collapsed = {
            key: True for key in COLLAPSE_KEYS if cell.metadata.get("jupyter", {}).get(key)
        }
        cell.metadata = nbformat.NotebookNode()
        if cell_tags:
            cell.metadata["tags"] = cell_tags
        if collapsed:
            # A collapsed source (JupyterLab's jupyter.source_hidden) hides code that
            # would give an exercise away; the learner expands it on purpose.
            cell.metadata["jupyter"] = collapsed
        cell.metadata["slideshow"] = {"slide_type": kinds[index]}
        cell["id"] = f"{lesson.number:02d}-{index:03d}"
        if isinstance(cell.source, list):
            cell.source = "".join(cell.source)
        if cell.cell_type == "code":
            if cell is setup_cell:
                cell.source = with_setup_preamble(cell.source, course)
        if cell.cell_type == "markdown":
            if NAV_TOP_TAG in cell_tags or NAV_BOTTOM_TAG in cell_tags:
                cell.source = navigation(course, lesson, folder)
            elif COURSE_MAP_TAG in cell_tags:
                cell.source = course_map(course)
            elif TIME_LINE.search(cell.source):
                cell.source = TIME_LINE.sub(time_line(lesson), cell.source)
            cell.source = with_exercise_heading(cell.source, headings)
            if not cell.get("attachments"):
                cell.pop("attachments", None)
    return nb


def lesson_from_solution(solution_nb):
    """The learner's copy: solution regions stubbed, solution-only cells removed.

    Cells keep their slide types; where a removed cell started a slide or sub-slide,
    the next cell kept starts it instead.
    """
    nb = nbformat.from_dict(solution_nb)
    kept, boundary = [], None
    for cell in nb.cells:
        kind = cell.metadata.get("slideshow", {}).get("slide_type", "-")
        if tags(cell) & SOLUTION_ONLY_TAGS:
            if kind in ("slide", "subslide") and boundary != "slide":
                boundary = kind
            continue
        if boundary and kind not in ("slide", "subslide"):
            cell.metadata["slideshow"] = {"slide_type": boundary}
        boundary = None
        if BEGIN_SOLUTION in cell.source:
            cell.source = replace_solution_regions(cell.source, cell.cell_type == "markdown")
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        kept.append(cell)
    nb.cells = kept
    return nb


def source_view(nb) -> list[tuple]:
    """What must agree between a committed notebook and a regenerated one."""
    return [
        (
            cell.cell_type,
            cell.source,
            tuple(sorted(tags(cell))),
            cell.metadata.get("slideshow", {}).get("slide_type"),
            cell.get("id"),
            tuple(sorted(cell.metadata.get("jupyter", {}))),
        )
        for cell in nb.cells
    ]


def read(path: Path):
    return nbformat.read(path, as_version=4)


def write(nb, path: Path) -> None:
    text = nbformat.writes(nb, version=4)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
