"""Where each learner stands: re-run their lesson notebooks and gather every verdict.

    python -m course_tools.progress PATH... [--csv FILE] [--timeout SECONDS] [--jobs N]
    ./course.sh progress PATH...                  (the same, after setting up .venv)

PATH is a lesson notebook, a folder of one learner's lesson notebooks, or a class
folder with one sub-folder per learner (the sub-folder's name is the learner; its
notebooks may sit at any depth, as in nbgrader's ``submitted/<learner>/<lesson>/``).
With no PATH it grades your own lessons: the current folder when it holds lesson
notebooks (you are in ``lessons/``), else the ``lessons/`` folder inside the current
one (you are in the course folder), else the ``lessons/`` folder of this course.

Each notebook is copied to a temporary folder and run there from top to bottom in a
fresh kernel, with checks printing rather than raising and every verdict written to a
report file (``AUTODIFF_COURSE_REPORT``). The learner's files are only read, and the
outputs saved in them are ignored. Every exercise then gets one verdict:

    correct · not yet (with the check's mistake code) · not attempted ·
    error (a cell raised, or the kernel died, before the check ran) ·
    timeout (the notebook was stopped at the time limit before the check ran) ·
    no verdict (the check was not called) ·
    missing (no notebook for that lesson, or no such exercise in it)

The exercises, their titles and their order are read from ``solutions/`` when the
tool runs. Input that cannot be graded (a folder with no notebooks, a file that is
not one of the course's lessons, a corrupt file) is reported in one line and skipped;
a notebook from another version of the course is reported and graded as far as its
exercises match. The exit status is 1 only when nothing at all could be graded.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import math
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from autodiff_course.checking import (
    REPORT_ENVIRONMENT_VARIABLE, STRICT_ENVIRONMENT_VARIABLE,
)
from autodiff_course.checking.verdicts import REPEAT_ENVIRONMENT_VARIABLE, Status
from autodiff_course.course_config import Lesson

from .lessons import CourseExercises, Exercise, find_exercises, read_notebook, source

DEFAULT_TIMEOUT = 120.0
KERNEL_NAME = "python3"
# A lesson's kernel peaks near 0.7 GB: run no more at once than memory holds.
KERNEL_MEMORY = 1 << 30

CORRECT = "correct"
WRONG = "not yet"
NOT_ATTEMPTED = "not attempted"
ERROR = "error"
TIMEOUT = "timeout"
NO_VERDICT = "no verdict"
MISSING = "missing"

SYMBOLS = {CORRECT: "+", WRONG: "x", NOT_ATTEMPTED: ".", ERROR: "E", TIMEOUT: "T",
           NO_VERDICT: "?", MISSING: "-"}
LEGEND = {
    CORRECT: "correct",
    WRONG: "not yet",
    NOT_ATTEMPTED: "not attempted",
    ERROR: "error: a cell raised before the check ran",
    TIMEOUT: "stopped at the time limit before the check ran",
    NO_VERDICT: "the check was not called",
    MISSING: "no notebook, or no such exercise in it",
}
STATUS_TO_VERDICT = {Status.CORRECT.value: CORRECT, Status.WRONG.value: WRONG,
                     Status.NOT_ATTEMPTED.value: NOT_ATTEMPTED}
# How IPython names a cell in a SyntaxError: "(3938975783.py, line 18)".
KERNEL_FILE = re.compile(r"\(\d+\.py, line (\d+)\)")
CSV_COLUMNS = ["learner", "notebook", "exercise", "verdict", "mistake", "detail"]


# --------------------------------------------------------------------------- input

@dataclass
class Submission:
    """One learner's copy of one lesson, ready to run."""

    learner: str
    path: Path
    lesson: Lesson
    nb: object = field(repr=False)


@dataclass
class Gathered:
    submissions: list[Submission]
    learners: list[str]
    notes: list[str]


def shown(path: Path) -> str:
    """``path`` as the user would type it: relative to the current folder if inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def learner_name(folder: Path) -> str:
    """A folder's learner: its name, or its parent's when it is a ``lessons/`` folder."""
    folder = folder.resolve()
    if folder.name == "lessons" and folder.parent.name:
        return folder.parent.name
    return folder.name or str(folder)


def visible(path: Path) -> bool:
    return not any(part.startswith(".") for part in path.parts)


def notebooks_in(folder: Path, deep: bool) -> list[Path]:
    found = folder.rglob("*.ipynb") if deep else folder.glob("*.ipynb")
    return sorted(p for p in found
                  if p.is_file() and visible(p.relative_to(folder)))


def is_course_folder(folder: Path) -> bool:
    return (folder / "course.toml").is_file() and (folder / "lessons").is_dir()


def learner_notebooks(folder: Path) -> list[Path]:
    """A class member's notebooks: at any depth, or in lessons/ of a copy of the course."""
    if is_course_folder(folder):
        return notebooks_in(folder / "lessons", deep=False)
    return notebooks_in(folder, deep=True)


def own_lessons_folder(here: Path, course_root: Path) -> Path:
    """Where the no-argument mode looks (see the module's docstring)."""
    if notebooks_in(here, deep=False):
        return here
    if (here / "lessons").is_dir():
        return here / "lessons"
    return course_root / "lessons"


def gather(paths: list[str], course: CourseExercises,
           learner_for_folder: str | None = None) -> Gathered:
    """Sort the PATH arguments into submissions, with one note per unusable input."""
    notes: list[str] = []
    candidates: list[tuple[str, Path, bool]] = []  # (learner, notebook, named directly)
    for argument in paths:
        path = Path(argument).expanduser()
        if not path.exists():
            notes.append(f"{argument}: no such file or folder.")
        elif path.is_file():
            if path.suffix != ".ipynb":
                notes.append(f"{argument}: not a notebook (only .ipynb files are graded).")
            else:
                candidates.append((learner_for_folder or learner_name(path.parent), path, True))
        elif is_course_folder(path) and notebooks_in(path / "lessons", deep=False):
            for notebook in notebooks_in(path / "lessons", deep=False):
                candidates.append((learner_for_folder or path.resolve().name, notebook, False))
        elif notebooks_in(path, deep=False):
            for notebook in notebooks_in(path, deep=False):
                candidates.append((learner_for_folder or learner_name(path), notebook, False))
        else:
            try:
                folders = sorted(p for p in path.iterdir()
                                 if p.is_dir() and not p.name.startswith("."))
                learners = [(folder, learner_notebooks(folder)) for folder in folders]
            except OSError as error:
                notes.append(f"{argument}: could not be read ({error.strerror or error}).")
                continue
            if not any(found for _, found in learners):
                notes.append(f"{argument}: no notebooks here.")
                continue
            for folder, found in learners:
                if not found:
                    notes.append(f"{shown(folder)}: no notebooks here.")
                for notebook in found:
                    candidates.append((folder.name, notebook, False))

    submissions: list[Submission] = []
    learners: list[str] = []
    seen: set[Path] = set()
    for learner, path, direct in candidates:
        if path.resolve() in seen:
            continue  # named twice
        seen.add(path.resolve())
        label = shown(path)
        try:
            nb = read_notebook(path)
            cells = nb.cells
        except Exception as error:  # noqa: BLE001 (any unreadable file gets one line)
            reason = str(error).strip().splitlines()[0] if str(error).strip() else \
                type(error).__name__
            notes.append(f"{label}: not a readable notebook ({reason[:120]}).")
            continue
        if not isinstance(cells, list):
            notes.append(f"{label}: not a readable notebook (it has no list of cells).")
            continue
        lesson, _ = course.identify(path, nb)
        if lesson is None:
            notes.append(f"{label}: not one of the course's lessons.")
            continue
        if not course.exercises(lesson):
            if direct:
                notes.append(f"{label}: lesson {lesson.number:02d} has no exercises to grade.")
            continue
        if learner not in learners:
            learners.append(learner)
        previous = next((s for s in submissions
                         if s.learner == learner and s.lesson == lesson), None)
        if previous is not None:
            # Two copies of one lesson: the one with the lesson's own name wins, else
            # the first found.
            replace = path.name == lesson.filename and previous.path.name != lesson.filename
            kept, dropped = (path, previous.path) if replace else (previous.path, path)
            notes.append(f"{shown(dropped)}: a second copy of lesson {lesson.number:02d} for "
                         f"{learner}; graded {shown(kept)} instead.")
            if not replace:
                continue
            submissions.remove(previous)
        difference = course.version_difference(lesson, nb)
        if difference:
            notes.append(f"{label}: from another version of lesson {lesson.number:02d} "
                         f"({difference}); graded as far as its exercises match.")
        submissions.append(Submission(learner, path, lesson, nb))
    return Gathered(submissions, learners, notes)


# ----------------------------------------------------------------------- execution

@dataclass
class Run:
    """What happened when one notebook ran."""

    nb: object = None
    records: list[dict] = field(default_factory=list)
    stopped_cell: int | None = None   # the cell running when it was stopped
    stopped_reason: str | None = None  # TIMEOUT, or ERROR when the kernel died
    failure: str | None = None         # it could not be run at all
    seconds: float = 0.0


class _OutOfTime(Exception):
    pass


# nbclient logs a time-out or a dead kernel as an error; the report says it better.
QUIET = logging.getLogger("course_tools.progress.notebooks")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


def kernel_environment(report: Path) -> dict[str, str]:
    environment = dict(os.environ)
    environment[STRICT_ENVIRONMENT_VARIABLE] = "0"
    environment[REPORT_ENVIRONMENT_VARIABLE] = str(report)
    environment.pop(REPEAT_ENVIRONMENT_VARIABLE, None)
    return environment


def read_report(report: Path) -> list[dict]:
    records = []
    if report.exists():
        for line in report.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "exercise" in record:
                records.append(record)
    return records


async def run_notebook(original: Path, workdir: Path, timeout: float) -> Run:
    """Run a copy of ``original`` in ``workdir`` with a fresh kernel; never raises."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    workdir.mkdir(parents=True)
    copy = workdir / original.name
    shutil.copyfile(original, copy)
    report = workdir / "verdicts.jsonl"
    run = Run()
    started = time.monotonic()
    deadline = started + timeout
    current = {"cell": None}

    def remaining(cell) -> int:
        return max(1, math.ceil(deadline - time.monotonic()))

    def on_cell_start(cell, cell_index):
        current["cell"] = cell_index
        if time.monotonic() >= deadline:
            raise _OutOfTime()

    try:
        nb = read_notebook(copy)
        run.nb = nb
        client = NotebookClient(
            nb, log=QUIET, kernel_name=KERNEL_NAME, allow_errors=True, timeout_func=remaining,
            interrupt_on_timeout=False, shutdown_kernel="immediate", record_timing=False,
            store_widget_state=False, startup_timeout=max(30, int(timeout)),
            resources={"metadata": {"path": str(workdir)}}, on_cell_start=on_cell_start)
        with open(workdir / "kernel.log", "wb") as log:
            # The kernel's own chatter goes to a log file, not to the report.
            await asyncio.wait_for(
                client.async_execute(env=kernel_environment(report), stdout=log, stderr=log),
                timeout + 60)
    except (CellTimeoutError, _OutOfTime, asyncio.TimeoutError):
        run.stopped_cell, run.stopped_reason = current["cell"], TIMEOUT
    except DeadKernelError:
        run.stopped_cell, run.stopped_reason = current["cell"], ERROR
    except Exception as error:  # noqa: BLE001 (reported as one line, never a traceback)
        text = str(error).strip().splitlines()
        run.failure = f"{type(error).__name__}: {text[0] if text else ''}".strip()
    run.seconds = time.monotonic() - started
    run.records = read_report(report)
    return run


# ------------------------------------------------------------------------- verdicts

@dataclass
class Verdict:
    exercise: Exercise
    verdict: str
    mistake: str = ""
    detail: str = ""


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def code_cell_number(nb, index: int) -> int:
    return sum(1 for cell in nb.cells[: index + 1] if cell.get("cell_type") == "code")


def cell_label(nb, index: int) -> str:
    lines = [line.strip() for line in source(nb.cells[index]).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    if len(first) > 50:
        first = first[:47] + "..."
    return f"code cell {code_cell_number(nb, index)}" + (f" (`{first}`)" if first else "")


def raised_cells(nb) -> list[tuple[int, str]]:
    """(cell index, "Type: first line of the message") for every cell that raised."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                lines = str(output.get("evalue", "")).strip().splitlines()
                first = KERNEL_FILE.sub(r"(line \1 of the cell)", lines[0] if lines else "")
                message = f"{output.get('ename', 'Error')}: {first}"
                found.append((index, one_line(message.rstrip(": "), 200)))
                break
    return found


def verdicts_for(submission: Submission, run: Run, exercises) -> list[Verdict]:
    """One verdict per current exercise of the lesson, from what the run reported."""
    nb = run.nb
    latest: dict[str, dict] = {}
    for record in run.records:
        latest[str(record.get("exercise"))] = record  # the last check of each counts
    where = {found.number: found for found in find_exercises(nb)}
    errors = raised_cells(nb)
    results = []
    for exercise in exercises:
        record = latest.get(exercise.number)
        if record is not None:
            verdict = STATUS_TO_VERDICT.get(record.get("status"), WRONG)
            mistake = (record.get("mistake") or "") if verdict == WRONG else ""
            detail = "" if verdict == NOT_ATTEMPTED else one_line(record.get("message", ""))
            results.append(Verdict(exercise, verdict, mistake, detail))
            continue
        found = where.get(exercise.number)
        if found is None:
            results.append(Verdict(exercise, MISSING, detail=(
                f"this notebook has no exercise {exercise.number} (it is from another "
                f"version of the lesson)")))
            continue
        check_cell = found.check_cell
        last = check_cell if check_cell is not None else found.heading_cell
        if run.stopped_reason and (run.stopped_cell is None or run.stopped_cell <= last):
            place = ("before its first cell ran" if run.stopped_cell is None
                     else f"in {cell_label(nb, run.stopped_cell)}")
            if run.stopped_reason == TIMEOUT:
                results.append(Verdict(exercise, TIMEOUT, detail=(
                    f"the notebook was stopped at the time limit {place}")))
            else:
                results.append(Verdict(exercise, ERROR, detail=f"the kernel died {place}"))
            continue
        # The first cell that raised: the learner's own code of this exercise, else
        # anything above it (the setup cell, an earlier exercise), else the check
        # call itself.
        inside = [(i, m) for i, m in errors if found.heading_cell <= i < last]
        before = [(i, m) for i, m in errors if i < found.heading_cell]
        itself = [(i, m) for i, m in errors if i == last and check_cell is not None]
        culprit = (inside or before or itself or [None])[0]
        if culprit is not None:
            index, message = culprit
            results.append(Verdict(exercise, ERROR, detail=(
                f"{cell_label(nb, index)} raised {message}")))
        elif check_cell is None:
            results.append(Verdict(exercise, NO_VERDICT, detail=(
                f"the check call `check.{exercise.check}(...)` is not in the notebook")))
        else:
            results.append(Verdict(exercise, NO_VERDICT, detail=(
                f"{cell_label(nb, check_cell)} ran but its check reported nothing")))
    return results


# -------------------------------------------------------------------------- grading

@dataclass
class Graded:
    submission: Submission
    run: Run
    verdicts: list[Verdict]


def default_jobs() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        cores = min(cores, max(1, memory // KERNEL_MEMORY))
    except (ValueError, OSError, AttributeError):
        pass
    return max(1, cores)


async def grade_all(submissions: list[Submission], course: CourseExercises, timeout: float,
                    jobs: int, say) -> tuple[list[Graded], list[str]]:
    graded: list[Graded] = []
    failures: list[str] = []
    gate = asyncio.Semaphore(jobs)
    done = {"count": 0}
    with tempfile.TemporaryDirectory(prefix="course-progress-") as scratch:
        async def grade(number: int, submission: Submission):
            async with gate:
                run = await run_notebook(submission.path, Path(scratch) / f"{number:04d}",
                                         timeout)
            done["count"] += 1
            label = f"{submission.learner} · {shown(submission.path)}"
            if run.failure:
                failures.append(f"{shown(submission.path)}: could not be run ({run.failure}).")
                say(f"[{done['count']}/{len(submissions)}] {label}: could not be run")
                return
            verdicts = verdicts_for(submission, run, course.exercises(submission.lesson))
            graded.append(Graded(submission, run, verdicts))
            passed = sum(v.verdict == CORRECT for v in verdicts)
            stop = ""
            if run.stopped_reason == TIMEOUT:
                stop = f", stopped at the {timeout:g} s time limit"
            elif run.stopped_reason == ERROR:
                stop = ", the kernel died"
            say(f"[{done['count']}/{len(submissions)}] {label}: {passed} of {len(verdicts)} "
                f"correct ({run.seconds:.1f} s{stop})")

        await asyncio.gather(*(grade(i, s) for i, s in enumerate(submissions)))
    order = {id(s): i for i, s in enumerate(submissions)}
    graded.sort(key=lambda g: order[id(g.submission)])
    return graded, failures


# --------------------------------------------------------------------------- output

def exercise_key(number: str) -> tuple[int, ...]:
    return tuple(int(part) for part in number.split("."))


def table_cells(gathered: Gathered, graded: list[Graded], course: CourseExercises):
    """(lessons shown, {(learner, exercise number): Verdict or None})."""
    by_learner_lesson = {(g.submission.learner, g.submission.lesson.slug): g for g in graded}
    lessons = [lesson for lesson in course.lessons
               if any(g.submission.lesson.slug == lesson.slug for g in graded)]
    learners = [learner for learner in gathered.learners
                if any(g.submission.learner == learner for g in graded)]
    cells = {}
    for learner in learners:
        for lesson in lessons:
            g = by_learner_lesson.get((learner, lesson.slug))
            for index, exercise in enumerate(course.exercises(lesson)):
                cells[learner, exercise.number] = (g, g.verdicts[index] if g else None)
    return lessons, learners, cells


def render_table(lessons, learners, cells, course: CourseExercises) -> str:
    name_width = max([len("learner")] + [len(learner) for learner in learners])
    groups = []
    for lesson in lessons:
        count = len(course.exercises(lesson))
        groups.append((lesson, max(count, 2)))
    head1 = "learner".ljust(name_width) + "  " + "  ".join(
        f"{lesson.number:02d}".ljust(width) for lesson, width in groups)
    head2 = " " * name_width + "  " + "  ".join(
        "".join(e.number.split(".")[-1][-1] for e in course.exercises(lesson)).ljust(width)
        for lesson, width in groups)
    rows = [head1.rstrip(), head2.rstrip()]
    for learner in learners:
        parts = []
        for lesson, width in groups:
            marks = ""
            for exercise in course.exercises(lesson):
                _, verdict = cells[learner, exercise.number]
                marks += SYMBOLS[verdict.verdict if verdict else MISSING]
            parts.append(marks.ljust(width))
        rows.append((learner.ljust(name_width) + "  " + "  ".join(parts)).rstrip())
    legend = [""]
    for item in (f"{SYMBOLS[key]} {LEGEND[key]}" for key in SYMBOLS):
        if legend[-1] and len(legend[-1]) + 3 + len(item) > 88:
            legend.append("")
        legend[-1] += ("   " if legend[-1] else "") + item
    return "\n".join(rows) + "\n\n" + "\n".join(legend)


def render_totals(lessons, learners, cells, course: CourseExercises) -> str:
    lines = [f"Passed, per exercise (of {len(learners)} learner"
             f"{'s' if len(learners) != 1 else ''}):"]
    width = len(str(len(learners)))
    for lesson in lessons:
        for exercise in course.exercises(lesson):
            passed = sum(1 for learner in learners
                         if (v := cells[learner, exercise.number][1]) and v.verdict == CORRECT)
            lines.append(f"  {exercise.number:>5}  {passed:>{width}}/{len(learners)}  "
                         f"{exercise.title}")
    return "\n".join(lines)


def render_attention(graded: list[Graded]) -> str:
    """Errors, timeouts and missing checks, grouped per notebook and cause."""
    lines = []
    for g in graded:
        grouped: dict[tuple[str, str], list[str]] = {}
        for v in g.verdicts:
            if v.verdict in (ERROR, TIMEOUT, NO_VERDICT):
                grouped.setdefault((v.verdict, v.detail), []).append(v.exercise.number)
        for (verdict, detail), numbers in grouped.items():
            which = ("exercise " if len(numbers) == 1 else "exercises ") + ", ".join(numbers)
            lines.append(f"  {g.submission.learner} · {shown(g.submission.path)} · {which}: "
                         f"{verdict}: {detail}")
    return "\n".join(["Needs a look:"] + lines) if lines else ""


def write_csv(path: Path, learners, lessons, cells, course: CourseExercises) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for learner in learners:
            for lesson in lessons:
                for exercise in course.exercises(lesson):
                    g, verdict = cells[learner, exercise.number]
                    if verdict is None:
                        writer.writerow([learner, "", exercise.number, MISSING, "",
                                         f"no notebook for lesson {lesson.number:02d}"])
                    else:
                        writer.writerow([learner, shown(g.submission.path), exercise.number,
                                         verdict.verdict, verdict.mistake, verdict.detail])


# ----------------------------------------------------------------------------- main

def parser() -> argparse.ArgumentParser:
    description = __doc__.split("\n\n")[0]
    p = argparse.ArgumentParser(
        prog="progress", description=description,
        epilog="Each notebook runs in its own kernel (about 0.7 GB of memory).")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="a lesson notebook, one learner's folder, or a class folder with "
                        "one sub-folder per learner (default: your own lessons/)")
    p.add_argument("--csv", metavar="FILE", type=Path,
                   help="also write one row per learner and exercise to FILE")
    p.add_argument("--timeout", metavar="SECONDS", type=float, default=DEFAULT_TIMEOUT,
                   help=f"stop a notebook that runs longer than this, kernel start included "
                        f"(default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--jobs", metavar="N", type=int, default=None,
                   help="notebooks to run at once (default: the number of cores, "
                        "fewer if memory is short)")
    return p


def main(argv: list[str] | None = None, out=None,
         course: CourseExercises | None = None) -> int:
    """The command line; ``course`` (default: this course) is where exercises come from."""
    out = out or sys.stdout

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    p = parser()
    args = p.parse_args(argv)
    if args.timeout <= 0:
        p.error("--timeout must be a positive number of seconds")
    if args.jobs is not None and args.jobs < 1:
        p.error("--jobs must be 1 or more")
    if args.csv and not args.csv.expanduser().resolve().parent.is_dir():
        p.error(f"--csv {args.csv}: its folder does not exist")
    jobs = args.jobs or default_jobs()

    course = course or CourseExercises()
    paths, learner = args.paths, None
    if not paths:
        folder = own_lessons_folder(Path.cwd(), course.solutions_dir.parent)
        say(f"Grading your lessons in {shown(folder)}.")
        paths, learner = [str(folder)], "you"
    gathered = gather(paths, course, learner)
    for note in gathered.notes:
        say(note)
    if gathered.submissions:
        say(f"Running {len(gathered.submissions)} notebook"
            f"{'s' if len(gathered.submissions) != 1 else ''}, {min(jobs, len(gathered.submissions))} "
            f"at a time (time limit {args.timeout:g} s each).")
    try:
        graded, failures = asyncio.run(
            grade_all(gathered.submissions, course, args.timeout, jobs, say))
    except KeyboardInterrupt:
        say("Stopped before every notebook was graded.")
        return 130
    for failure in failures:
        say(failure)
    if not graded:
        say("Nothing could be graded.")
        return 1
    lessons, learners, cells = table_cells(gathered, graded, course)
    say()
    say(render_table(lessons, learners, cells, course))
    say()
    say(render_totals(lessons, learners, cells, course))
    attention = render_attention(graded)
    if attention:
        say()
        say(attention)
    if args.csv:
        try:
            write_csv(args.csv, learners, lessons, cells, course)
        except OSError as error:
            say(f"{args.csv}: could not write the CSV file ({error.strerror or error}).")
            return 1
        say()
        say(f"Wrote {shown(args.csv)}: one row per learner and exercise.")
    return 0


# ------------------------------------------------------------------------ benchmark

def run_plainly(notebooks: list[Path]) -> float:
    """Seconds to run ``notebooks`` once each, one after the other, with nothing else."""
    import nbformat
    from nbclient import NotebookClient

    started = time.perf_counter()
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        with tempfile.TemporaryDirectory() as scratch, \
                open(Path(scratch) / "kernel.log", "wb") as log:
            NotebookClient(nb, kernel_name=KERNEL_NAME, allow_errors=True, timeout=600,
                           resources={"metadata": {"path": scratch}}).execute(
                stdout=log, stderr=log)
    return time.perf_counter() - started


def benchmark(folder: Path | None = None, jobs: tuple[int, ...] = (1, 2),
              out=None) -> dict[str, float]:
    """Time ``progress`` over one learner's lessons against running them once.

    Runs every notebook of ``folder`` (default: the course's ``lessons/``) once, one
    after the other, then grades the folder with each ``--jobs`` value in ``jobs``.
    Prints one line per figure and returns them (seconds, and ratios to the plain run).
    """
    import io

    out = out or sys.stdout
    course = CourseExercises()
    folder = Path(folder) if folder else course.solutions_dir.parent / "lessons"
    notebooks = [folder / lesson.filename for lesson in course.lessons
                 if (folder / lesson.filename).exists()]
    figures = {"plain": run_plainly(notebooks)}
    print(f"run {len(notebooks)} notebooks once, one after the other: "
          f"{figures['plain']:.1f} s", file=out, flush=True)
    for n in jobs:
        started = time.perf_counter()
        status = main([str(folder), "--jobs", str(n)], out=io.StringIO())
        seconds = time.perf_counter() - started
        if status != 0:
            raise RuntimeError(f"progress failed on {folder}")
        figures[f"progress_jobs_{n}"] = seconds
        figures[f"ratio_jobs_{n}"] = seconds / figures["plain"]
        print(f"progress --jobs {n} over the same notebooks: {seconds:.1f} s "
              f"({seconds / figures['plain']:.2f}x; target <= 1.5x)", file=out, flush=True)
    return figures


if __name__ == "__main__":
    sys.exit(main())
