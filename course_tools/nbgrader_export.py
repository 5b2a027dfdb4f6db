"""Export the course as an nbgrader course source.

    python -m course_tools.nbgrader_export DIR [--lessons 01 03]
    ./course.sh nbgrader DIR                      (the same, after setting up .venv)

Writes ``DIR/source/<lesson>/<lesson>.ipynb`` for every lesson with exercises, from
``solutions/`` as it is now, and ``DIR/nbgrader_config.py`` when DIR has none yet:

* every cell holding a ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` region (the
  course already uses nbgrader's markers) becomes an nbgrader solution cell, which
  ``nbgrader generate_assignment`` turns into the same stub the lessons have;
* every exercise's check call becomes a locked, autograded test cell that runs the
  check inside :func:`autodiff_course.checking.strict_checks`, so that anything but
  *correct* fails the cell (nbgrader's kernel needs no particular environment);
* every other cell is read-only (locked);
* ``nbgrader autograde`` runs each submission contained (:mod:`course_tools.nbgrader_sandbox`):
  in the sandbox where there is one, within resource limits everywhere;
* cells that exist only in solutions/ (tagged ``answers``, ``solution-only`` or
  ``instructor-only``) are left out, as in the learner's copy.

Points: one per filled difficulty star of the exercise's heading, so an easy (★☆☆)
exercise is worth 1, a medium (★★☆) 2 and a hard (★★★) 3.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

from .lessons import CourseExercises
from .lessons import find_exercises
from .lessons import source
from .notebook_format import BEGIN_SOLUTION
from .notebook_format import CODE_STUB
from .notebook_format import MARKDOWN_STUB
from .notebook_format import SOLUTION_ONLY_TAGS
from .notebook_format import read
from .notebook_format import tags
from .notebook_format import write

SCHEMA_VERSION = 3
POINTS_SCHEME = "one point per filled difficulty star: ★☆☆ easy = 1, ★★☆ medium = 2, ★★★ hard = 3"
STRICT_IMPORT = "from autodiff_course.checking import strict_checks"

NBGRADER_CONFIG = '''\
"""nbgrader settings for the course "{title}".

Written by `./course.sh nbgrader` (course_tools/nbgrader_export.py); edit freely:
exporting again never overwrites this file. Run every nbgrader command in this folder.
"""

c = get_config()  # noqa: F821 (nbgrader provides it)

c.CourseDirectory.course_id = "{course_id}"

# The course's solution markers are nbgrader's own, and its stubs are the lessons'.
c.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
c.ClearSolutions.end_solution_delimeter = "END SOLUTION"
c.ClearSolutions.code_stub = {{"python": {code_stub!r}}}
c.ClearSolutions.text_stub = {text_stub!r}

# A lesson runs in well under a minute on two cores; leave room for a slow machine.
# The kernel that autograde starts is the notebooks' own, "python3": it must have the
# course's packages (TensorFlow and autodiff_course), as the course's .venv and the
# hub image have (./course.sh nbgrader points nbgrader's "python3" at the course's .venv).
c.Execute.timeout = 300

# Learners' notebooks are someone else's code: autograde runs each one contained, in
# a sandbox where this machine has one (bubblewrap on Linux: the course read-only, your
# home hidden, a temporary home and working folder, no network) and, everywhere, within
# limits of memory, processes, CPU time and file size (c.SandboxedKernelManager.*).
# It needs the course's tools beside nbgrader, as ./course.sh nbgrader installs them.
from course_tools.nbgrader_sandbox import autograde_steps  # noqa: E402

c.Autograde.autograde_preprocessors = autograde_steps()
c.SandboxedKernelManager.copy_working_folder = True
'''


def grade_id(text: str) -> str:
    """An nbgrader grade_id: letters, digits, hyphens and underscores only."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


def nbgrader_metadata(kind: str, ident: str, points: int = 0) -> dict:
    """nbgrader's cell metadata: ``kind`` is "readonly", "solution" (code the student
    writes), "written" (a Markdown answer, graded by hand) or "test" (autograded)."""
    meta = {
        "grade": kind in ("test", "written"),
        "grade_id": ident,
        "locked": kind in ("test", "readonly"),
        "schema_version": SCHEMA_VERSION,
        "solution": kind in ("solution", "written"),
        "task": False,
    }
    if meta["grade"]:
        meta["points"] = points
    return meta


def strict_check_source(text: str) -> str:
    """A check cell's code, run so that anything but *correct* raises."""
    body = "\n".join(("    " + line) if line.strip() else "" for line in text.split("\n"))
    return f"{STRICT_IMPORT}\n\nwith strict_checks():\n{body.rstrip()}"


def nbgrader_notebook(solution_nb, exercises) -> tuple[object, list[tuple[str, int]]]:
    """The nbgrader source of one lesson, and its (exercise, points) in order."""
    nb = copy.deepcopy(solution_nb)
    nb.cells = [cell for cell in nb.cells if not tags(cell) & SOLUTION_ONLY_TAGS]
    points = {exercise.number: exercise.points for exercise in exercises}
    found = find_exercises(nb)
    check_cells = {f.check_cell: f.number for f in found if f.check_cell is not None}
    # The exercise each cell belongs to (for readable grade ids).
    owner: dict[int, str] = {}
    for position, f in enumerate(found):
        end = found[position + 1].heading_cell if position + 1 < len(found) else len(nb.cells)
        for index in range(f.heading_cell, end):
            owner[index] = f.number
    used: set[str] = set()

    def unique(ident: str) -> str:
        ident, n = grade_id(ident), 2
        candidate = ident
        while candidate in used:
            candidate, n = f"{ident}-{n}", n + 1
        used.add(candidate)
        return candidate

    graded = []
    for index, cell in enumerate(nb.cells):
        cell.source = source(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.metadata.pop("nbgrader", None)
        if index in check_cells and cell.cell_type == "code":
            number = check_cells[index]
            worth = points.get(number, 1)
            cell.source = strict_check_source(cell.source)
            cell.metadata["nbgrader"] = nbgrader_metadata(
                "test", unique(f"exercise-{number}-check"), worth
            )
            graded.append((number, worth))
        elif BEGIN_SOLUTION in cell.source and cell.cell_type == "code":
            where = owner.get(index)
            ident = f"exercise-{where}-answer" if where else f"answer-{cell.get('id', index)}"
            cell.metadata["nbgrader"] = nbgrader_metadata("solution", unique(ident))
        elif BEGIN_SOLUTION in cell.source:
            # A written answer: nbgrader wants Markdown answers graded by hand. Worth
            # no points, so that the totals stay those of the checks.
            ident = f"answer-{cell.get('id', index)}"
            cell.metadata["nbgrader"] = nbgrader_metadata("written", unique(ident))
        else:
            cell.metadata["nbgrader"] = nbgrader_metadata(
                "readonly", unique(f"cell-{cell.get('id', index)}")
            )
    nb.metadata.pop("widgets", None)
    return nb, graded


def export(
    target: Path,
    course: CourseExercises | None = None,
    prefixes: list[str] | None = None,
    say=print,
) -> list[Path]:
    """Write the nbgrader course source under ``target``; returns the notebooks written."""
    course = course or CourseExercises()
    written = []
    for lesson in course.lessons:
        if prefixes and not any(lesson.slug.startswith(p) for p in prefixes):
            continue
        solution_path = course.solutions_dir / lesson.filename
        try:
            solution_nb = read(solution_path)
            exercises = course.exercises(lesson)
        except Exception as error:  # noqa: BLE001 (one line per unusable lesson)
            text = str(error).strip().splitlines()
            say(
                f"{lesson.slug}: skipped, solutions/{lesson.filename} could not be read "
                f"({text[0] if text else type(error).__name__})."
            )
            continue
        if not exercises:
            say(f"{lesson.slug}: skipped, it has no exercises.")
            continue
        nb, graded = nbgrader_notebook(solution_nb, exercises)
        nbformat.validate(nb)
        path = target / "source" / lesson.slug / lesson.filename
        path.parent.mkdir(parents=True, exist_ok=True)
        write(nb, path)
        written.append(path)
        total = sum(points for _, points in graded)
        say(
            f"{path.relative_to(target)}: {len(graded)} autograded checks, {total} points "
            f"({', '.join(f'{number}: {points}' for number, points in graded)})."
        )
        ungraded = [e.number for e in exercises if e.number not in dict(graded)]
        if ungraded:
            say(
                f"{lesson.slug}: no check call found for exercise "
                f"{', '.join(ungraded)}; not graded."
            )
    config = target / "nbgrader_config.py"
    if written:
        if config.exists():
            say(f"{config.name}: kept as it is.")
        else:
            config.write_text(
                NBGRADER_CONFIG.format(
                    title=course.course.title,
                    course_id=grade_id(course.course.repository.split("/")[-1]),
                    code_stub=CODE_STUB,
                    text_stub=MARKDOWN_STUB,
                ),
                encoding="utf-8",
            )
            say(f"{config.name}: written.")
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="nbgrader", description=__doc__.split("\n\n")[0], epilog=f"Points: {POINTS_SCHEME}."
    )
    p.add_argument(
        "directory",
        metavar="DIR",
        type=Path,
        help="the nbgrader course folder to write (created if absent)",
    )
    p.add_argument(
        "--lessons",
        nargs="+",
        metavar="NN",
        default=None,
        help="only the lessons whose slug starts so, e.g. 01 03",
    )
    args = p.parse_args(argv)
    target = args.directory
    if target.exists() and not target.is_dir():
        print(f"{target}: exists and is not a folder; name a folder for the course.")
        return 1
    try:
        target.mkdir(parents=True, exist_ok=True)
        written = export(target, prefixes=args.lessons)
    except OSError as error:
        print(f"{target}: could not write there ({error.strerror or error}).")
        return 1
    if not written:
        print("Nothing was exported.")
        return 1
    print(f"Points: {POINTS_SCHEME}.")
    grading = Path(f"{sys.prefix}-nbgrader")  # where ./course.sh nbgrader installs nbgrader
    activate = f"source {grading}/bin/activate && " if (grading / "bin").is_dir() else ""
    print(f"Next: {activate}cd {target} && nbgrader generate_assignment {written[0].parent.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
