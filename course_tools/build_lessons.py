"""Generate lessons/ from solutions/, refresh outputs, and keep derived text current.

    python -m course_tools.build_lessons            # normalise, generate, execute, write
    python -m course_tools.build_lessons 01 03      # only the lessons whose slug starts so
    python -m course_tools.build_lessons --check    # fail if anything derived is stale

``solutions/`` is the only source. For each lesson listed in ``course.toml``:

1. the solutions notebook is brought to normal form: navigation bars, the course
   map, the time line and slide types regenerated from ``course.toml``; stable
   cell ids; minimal metadata; code cells formatted with ruff;
2. the learner's copy is derived from it: every ``### BEGIN SOLUTION`` ...
   ``### END SOLUTION`` region becomes a stub that raises ``NotImplementedError``,
   cells tagged ``solution-only``, ``instructor-only`` or ``answers`` are dropped;
3. both are executed top to bottom in a fresh kernel (solutions in strict mode,
   so a check that is not *correct* stops the build) and written with outputs
   and widget state.

The README's contents table and ``autodiff_course/_pins.py`` (the pinned versions
of requirements.txt, for the setup cell) are regenerated too. ``--check`` changes
nothing: it exits with status 1 and names every notebook or file that is out of date.
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time

from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE

from . import pins
from .config import LESSONS_DIR
from .config import README
from .config import SOLUTIONS_DIR
from .config import load_course
from .derived import between_markers
from .derived import report_stale
from .notebook_format import README_END
from .notebook_format import README_START
from .notebook_format import lesson_from_solution
from .notebook_format import normalise
from .notebook_format import read
from .notebook_format import readme_contents
from .notebook_format import source_view
from .notebook_format import write
from .style import format_code_cells

COMMAND = "python -m course_tools.build_lessons"


def execute(nb, folder, strict: bool):
    """Run every cell in a fresh kernel whose working directory is ``folder``."""
    from nbclient import NotebookClient

    previous = os.environ.get(STRICT_ENVIRONMENT_VARIABLE)
    os.environ[STRICT_ENVIRONMENT_VARIABLE] = "1" if strict else "0"
    try:
        client = NotebookClient(
            nb,
            timeout=600,
            kernel_name="python3",
            allow_errors=False,
            resources={"metadata": {"path": str(folder)}},
            store_widget_state=True,
            record_timing=False,
        )
        client.execute()
    finally:
        if previous is None:
            os.environ.pop(STRICT_ENVIRONMENT_VARIABLE, None)
        else:
            os.environ[STRICT_ENVIRONMENT_VARIABLE] = previous
    return nb


def updated_readme(course) -> str | None:
    if not README.exists():
        return None
    text = README.read_text(encoding="utf-8")
    return between_markers(text, README_START, README_END, readme_contents(course))


def normal_solution(solution, lesson, course):
    """The solutions notebook in normal form, its code cells formatted.

    Normalised again after formatting, since the slide types depend on the code's
    length (course_tools.slides).
    """
    formatted = format_code_cells(normalise(solution, lesson, course, "solutions"))
    return normalise(formatted, lesson, course, "solutions")


def learner_copy(solution, lesson, course):
    """The learner's copy derived from a solutions notebook in normal form."""
    return format_code_cells(normalise(lesson_from_solution(solution), lesson, course, "lessons"))


def both_copies(solution, lesson, course):
    """The solutions notebook in normal form and the learner's copy derived from it."""
    solution = normal_solution(solution, lesson, course)
    return solution, learner_copy(solution, lesson, course)


def check(course) -> list[str]:
    problems = []
    listed = {notebook.filename for notebook in course.notebooks}
    for folder in (SOLUTIONS_DIR, LESSONS_DIR):
        for path in sorted(folder.glob("*.ipynb")):
            if path.name not in listed:
                problems.append(f"{folder.name}/{path.name} is not listed in course.toml")
    for lesson in course.notebooks:
        solution_path = SOLUTIONS_DIR / lesson.filename
        lesson_path = LESSONS_DIR / lesson.filename
        if not solution_path.exists():
            problems.append(f"solutions/{lesson.filename} is missing")
            continue
        solution = read(solution_path)
        normal, expected = both_copies(copy.deepcopy(solution), lesson, course)
        if source_view(solution) != source_view(normal) or any(
            solution.metadata.get(key) != normal.metadata.get(key) for key in ("kernelspec", "rise")
        ):
            problems.append(
                f"solutions/{lesson.filename} is not in normal form "
                f"(navigation, ids, time line, metadata or code formatting)"
            )
        if not lesson_path.exists():
            problems.append(f"lessons/{lesson.filename} is missing")
        elif source_view(read(lesson_path)) != source_view(expected):
            problems.append(
                f"lessons/{lesson.filename} is stale: it no longer matches "
                f"solutions/{lesson.filename}"
            )
    readme = updated_readme(course)
    if readme is None:
        problems.append("README.md lacks the generated contents markers")
    elif readme != README.read_text(encoding="utf-8"):
        problems.append("README.md's contents table is stale")
    return problems + pins.stale()


def build(course, prefixes: list[str], run: bool) -> None:
    if pins.write():
        print("autodiff_course/_pins.py: written from requirements.txt")
    for lesson in course.notebooks:
        if prefixes and not any(lesson.slug.startswith(p) for p in prefixes):
            continue
        # The learner's copy is derived once the solutions' outputs are final: its slide
        # types are those of the solutions, which depend on the outputs' sizes.
        solution = normal_solution(read(SOLUTIONS_DIR / lesson.filename), lesson, course)
        for folder, strict in ((SOLUTIONS_DIR, True), (LESSONS_DIR, False)):
            nb = solution if folder is SOLUTIONS_DIR else learner_copy(solution, lesson, course)
            started = time.perf_counter()
            if run:
                execute(nb, folder, strict)
                normalise(nb, lesson, course, folder.name)
            write(nb, folder / lesson.filename)
            took = f", executed in {time.perf_counter() - started:.1f} s" if run else ""
            print(f"{folder.name}/{lesson.filename}: written{took}")
    readme = updated_readme(course)
    if readme is not None:
        README.write_text(readme, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lessons", nargs="*", help="slug prefixes, e.g. 01 03")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything derived is stale"
    )
    parser.add_argument(
        "--no-execute",
        action="store_true",
        help="write without running the notebooks (drafting only)",
    )
    args = parser.parse_args(argv)
    course = load_course()
    if args.check:
        return report_stale(
            check(course),
            COMMAND,
            f"lessons/, solutions/, README.md and autodiff_course/_pins.py are current "
            f"({len(course.lessons)} lessons).",
        )
    build(course, args.lessons, run=not args.no_execute)
    return 0


if __name__ == "__main__":
    sys.exit(main())
