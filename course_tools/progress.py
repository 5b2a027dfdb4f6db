"""Where each learner stands: re-run their lesson notebooks and gather every verdict.

    python -m course_tools.progress PATH... [--csv FILE] [--timeout SECONDS] [--jobs N]
                                            [--no-sandbox]
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
    stopped: memory limit · stopped: process limit · stopped: CPU time limit ·
    stopped: file size limit · stopped: sandbox (contained before the check ran) ·
    tampered (the notebook wrote a verdict into the report itself) ·
    no verdict (the check was not called) ·
    missing (no notebook for that lesson, or no such exercise in it)

A learner's notebook is someone else's code: each runs contained
(:mod:`course_tools.sandbox`), in a sandbox where the platform has one (bubblewrap on
Linux: the course read-only, the homes hidden, a temporary home and folder, no
network) and within limits of memory, processes, CPU time and file size everywhere.
The first line printed says which; ``--no-sandbox`` keeps only the limits.

The exercises, their titles and their order are read from ``solutions/`` when the
tool runs. Input that cannot be graded (a folder with no notebooks, a file that is
not one of the course's lessons, a corrupt file) is reported in one line and skipped;
a notebook from another version of the course is reported and graded as far as its
exercises match. The exit status is 1 only when nothing at all could be graded.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .grading import KERNEL_NAME
from .grading import Submission
from .grading import default_jobs
from .grading import grade_all
from .grading import run_to_completion
from .grading import shown
from .lessons import CourseExercises
from .notebook_format import read
from .progress_table import render_attention
from .progress_table import render_table
from .progress_table import render_totals
from .progress_table import table_cells
from .progress_table import write_csv
from .sandbox import Limits
from .sandbox import announcement
from .sandbox import sandbox_support

DEFAULT_TIMEOUT = 120.0


# --------------------------------------------------------------------------- input


@dataclass
class Gathered:
    submissions: list[Submission]
    learners: list[str]
    notes: list[str]


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
    return sorted(p for p in found if p.is_file() and visible(p.relative_to(folder)))


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


def gather(
    paths: list[str], course: CourseExercises, learner_for_folder: str | None = None
) -> Gathered:
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
                folders = sorted(
                    p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")
                )
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
            nb = read(path)
            cells = nb.cells
        except Exception as error:  # noqa: BLE001 (any unreadable file gets one line)
            reason = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
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
        previous = next(
            (s for s in submissions if s.learner == learner and s.lesson == lesson), None
        )
        if previous is not None:
            # Two copies of one lesson: the one with the lesson's own name wins, else
            # the first found.
            replace = path.name == lesson.filename and previous.path.name != lesson.filename
            kept, dropped = (path, previous.path) if replace else (previous.path, path)
            notes.append(
                f"{shown(dropped)}: a second copy of lesson {lesson.number:02d} for "
                f"{learner}; graded {shown(kept)} instead."
            )
            if not replace:
                continue
            submissions.remove(previous)
        difference = course.version_difference(lesson, nb)
        if difference:
            notes.append(
                f"{label}: from another version of lesson {lesson.number:02d} "
                f"({difference}); graded as far as its exercises match."
            )
        submissions.append(Submission(learner, path, lesson, nb))
    return Gathered(submissions, learners, notes)


# ----------------------------------------------------------------------------- main


def parser() -> argparse.ArgumentParser:
    description = __doc__.split("\n\n")[0]
    p = argparse.ArgumentParser(
        prog="progress",
        description=description,
        epilog="Each notebook runs in its own kernel (about 0.7 GB of memory).",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a lesson notebook, one learner's folder, or a class folder with "
        "one sub-folder per learner (default: your own lessons/)",
    )
    p.add_argument(
        "--csv",
        metavar="FILE",
        type=Path,
        help="also write one row per learner and exercise to FILE",
    )
    p.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"stop a notebook that runs longer than this, kernel start included "
        f"(default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--jobs",
        metavar="N",
        type=int,
        default=None,
        help="notebooks to run at once (default: the number of cores, fewer if memory is short)",
    )
    p.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="run the notebooks outside the sandbox even where there is one "
        "(their resource limits still apply)",
    )
    return p


def main(
    argv: list[str] | None = None,
    out=None,
    course: CourseExercises | None = None,
    limits: Limits | None = None,
) -> int:
    """The command line; ``course`` (default: this course) is where exercises come from,
    ``limits`` (default: :meth:`Limits.for_timeout`) what each kernel may use."""
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
    limits = limits or Limits.for_timeout(args.timeout)
    if gathered.submissions:
        count = len(gathered.submissions)
        say(
            f"Running {count} notebook{'s' if count != 1 else ''}, {min(jobs, count)} "
            f"at a time (time limit {args.timeout:g} s each)."
        )
        say(announcement(limits, sandboxed=args.sandbox and sandbox_support().available))
    try:
        graded, failures = run_to_completion(
            grade_all(gathered.submissions, course, args.timeout, jobs, say, limits, args.sandbox)
        )
    except KeyboardInterrupt:
        say("Stopped before every notebook was graded.")
        return 130
    for failure in failures:
        say(failure)
    if not graded:
        say("Nothing could be graded.")
        return 1
    lessons, learners, cells = table_cells(gathered.learners, graded, course)
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
        with (
            tempfile.TemporaryDirectory() as scratch,
            open(Path(scratch) / "kernel.log", "wb") as log,
        ):
            NotebookClient(
                nb,
                kernel_name=KERNEL_NAME,
                allow_errors=True,
                timeout=600,
                resources={"metadata": {"path": scratch}},
            ).execute(stdout=log, stderr=log)
    return time.perf_counter() - started


def benchmark(
    folder: Path | None = None, jobs: tuple[int, ...] = (1, 2), out=None
) -> dict[str, float]:
    """Time ``progress`` over one learner's lessons against running them once, and the
    sandbox's cost over a class.

    Runs every notebook of ``folder`` (default: the course's ``lessons/``) once, one
    after the other, then grades the folder with each ``--jobs`` value in ``jobs``, then
    a class of five copies of it with and without the sandbox. Prints one line per
    figure and returns them (seconds, and ratios).
    """

    out = out or sys.stdout
    course = CourseExercises()
    folder = Path(folder) if folder else course.solutions_dir.parent / "lessons"
    notebooks = [
        folder / lesson.filename for lesson in course.lessons if (folder / lesson.filename).exists()
    ]
    figures = {"plain": run_plainly(notebooks)}
    print(
        f"run {len(notebooks)} notebooks once, one after the other: {figures['plain']:.1f} s",
        file=out,
        flush=True,
    )
    for n in jobs:
        seconds = timed_progress([str(folder), "--jobs", str(n)])
        figures[f"progress_jobs_{n}"] = seconds
        figures[f"ratio_jobs_{n}"] = seconds / figures["plain"]
        print(
            f"progress --jobs {n} over the same notebooks: {seconds:.1f} s "
            f"({seconds / figures['plain']:.2f}x; target <= 1.5x)",
            file=out,
            flush=True,
        )
    figures.update(sandbox_overhead(folder, out=out))
    return figures


def timed_progress(arguments: list[str]) -> float:
    import io

    started = time.perf_counter()
    if main(arguments, out=io.StringIO()) != 0:
        raise RuntimeError(f"progress {' '.join(arguments)} failed")
    return time.perf_counter() - started


def sandbox_overhead(folder: Path, learners: int = 5, out=None) -> dict[str, float]:
    """``progress`` over a class of ``learners``, each with the notebooks of ``folder``,
    with the sandbox and without (the limits apply to both), in the order with,
    without, without, with, so that a drift of the machine's load cancels out."""
    out = out or sys.stdout
    if not sandbox_support().available:
        print(f"sandbox overhead: not measured ({sandbox_support().reason})", file=out)
        return {}
    with tempfile.TemporaryDirectory(prefix="course-class-") as scratch:
        for n in range(1, learners + 1):
            shutil.copytree(folder, Path(scratch) / f"learner{n}", ignore=_not_notebooks)
        runs: dict[bool, list[float]] = {True: [], False: []}
        for sandboxed in (True, False, False, True):
            flags = [] if sandboxed else ["--no-sandbox"]
            runs[sandboxed].append(timed_progress([scratch, *flags]))
    with_sandbox, without = (statistics.mean(runs[k]) for k in (True, False))
    overhead = with_sandbox / without - 1
    print(
        f"progress over a class of {learners}: {with_sandbox:.1f} s in the sandbox, "
        f"{without:.1f} s without ({100 * overhead:+.1f}%; target <= 10%)",
        file=out,
        flush=True,
    )
    return {
        "class_learners": learners,
        "class_sandbox": with_sandbox,
        "class_no_sandbox": without,
        "sandbox_overhead": overhead,
    }


def _not_notebooks(folder, names):
    return [name for name in names if not name.endswith(".ipynb")]


if __name__ == "__main__":
    sys.exit(main())
