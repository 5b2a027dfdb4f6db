"""Run one learner's copy of a lesson and give every exercise its verdict.

Used by :mod:`course_tools.progress` (and the benchmark). Each notebook is copied to
a scratch folder and run there from top to bottom in a fresh kernel, with checks
printing rather than raising and every verdict written to a report file
(``AUTODIFF_COURSE_REPORT``); the saved outputs of the learner's file are never
trusted. Every exercise then gets one verdict:

    correct · not yet (with the check's mistake code) · not attempted ·
    error (a cell raised, or the kernel died, before the check ran) ·
    timeout (the notebook was stopped at the time limit before the check ran) ·
    no verdict (the check was not called) ·
    missing (no notebook for that lesson, or no such exercise in it)
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from autodiff_course.checking import REPORT_ENVIRONMENT_VARIABLE
from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE
from autodiff_course.checking.verdicts import REPEAT_ENVIRONMENT_VARIABLE
from autodiff_course.checking.verdicts import Status

from .config import Lesson
from .lessons import CourseExercises
from .lessons import Exercise
from .lessons import find_exercises
from .lessons import source
from .notebook_format import read

KERNEL_NAME = "python3"
# A lesson's kernel peaks below 0.7 GB (./course.sh bench measures it): allow 1 GB each,
# and run no more at once than memory holds.
KERNEL_MEMORY = 1 << 30

CORRECT = "correct"
WRONG = "not yet"
NOT_ATTEMPTED = "not attempted"
ERROR = "error"
TIMEOUT = "timeout"
NO_VERDICT = "no verdict"
MISSING = "missing"

STATUS_TO_VERDICT = {
    Status.CORRECT.value: CORRECT,
    Status.WRONG.value: WRONG,
    Status.NOT_ATTEMPTED.value: NOT_ATTEMPTED,
}
# How IPython names a cell in a SyntaxError: "(3938975783.py, line 18)".
KERNEL_FILE = re.compile(r"\(\d+\.py, line (\d+)\)")


@dataclass
class Submission:
    """One learner's copy of one lesson, ready to run."""

    learner: str
    path: Path
    lesson: Lesson
    nb: object = field(repr=False)


def shown(path: Path) -> str:
    """``path`` as the user would type it: relative to the current folder if inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# ----------------------------------------------------------------------- execution


@dataclass
class Run:
    """What happened when one notebook ran."""

    nb: object = None
    records: list[dict] = field(default_factory=list)
    stopped_cell: int | None = None  # the cell running when it was stopped
    stopped_reason: str | None = None  # TIMEOUT, or ERROR when the kernel died
    failure: str | None = None  # it could not be run at all
    seconds: float = 0.0


class _OutOfTime(Exception):
    pass


# nbclient logs a time-out or a dead kernel as an error; the report says it better.
QUIET = logging.getLogger("course_tools.grading.notebooks")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False
# Every cell runs, whatever raised before it (each error is read from the outputs);
# a notebook out of time is stopped at once; nothing is kept but the outputs.
CLIENT_SETTINGS = dict(
    log=QUIET,
    kernel_name=KERNEL_NAME,
    allow_errors=True,
    interrupt_on_timeout=False,
    shutdown_kernel="immediate",
    record_timing=False,
    store_widget_state=False,
)


def kernel_environment(report: Path, repeat: int = 1) -> dict[str, str]:
    """Checks print (never raise) and report to ``report``; each judges its answer
    ``repeat`` times (the benchmark's medians), once unless asked."""
    environment = dict(os.environ)
    environment[STRICT_ENVIRONMENT_VARIABLE] = "0"
    environment[REPORT_ENVIRONMENT_VARIABLE] = str(report)
    environment.pop(REPEAT_ENVIRONMENT_VARIABLE, None)
    if repeat > 1:
        environment[REPEAT_ENVIRONMENT_VARIABLE] = str(repeat)
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


async def run_notebook(original: Path, workdir: Path, timeout: float, repeat: int = 1) -> Run:
    """Run a copy of ``original`` in ``workdir`` with a fresh kernel; never raises."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError
    from nbclient.exceptions import DeadKernelError

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
        nb = read(copy)
        run.nb = nb
        client = NotebookClient(
            nb,
            timeout_func=remaining,
            startup_timeout=max(30, int(timeout)),
            resources={"metadata": {"path": str(workdir)}},
            on_cell_start=on_cell_start,
            **CLIENT_SETTINGS,
        )
        with open(workdir / "kernel.log", "wb") as log:
            # The kernel's own chatter goes to a log file, not to the report.
            await asyncio.wait_for(
                client.async_execute(
                    env=kernel_environment(report, repeat), stdout=log, stderr=log
                ),
                timeout + 60,
            )
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
            results.append(
                Verdict(
                    exercise,
                    MISSING,
                    detail=(
                        f"this notebook has no exercise {exercise.number} (it is from another "
                        f"version of the lesson)"
                    ),
                )
            )
            continue
        check_cell = found.check_cell
        last = check_cell if check_cell is not None else found.heading_cell
        if run.stopped_reason and (run.stopped_cell is None or run.stopped_cell <= last):
            place = (
                "before its first cell ran"
                if run.stopped_cell is None
                else f"in {cell_label(nb, run.stopped_cell)}"
            )
            if run.stopped_reason == TIMEOUT:
                results.append(
                    Verdict(
                        exercise,
                        TIMEOUT,
                        detail=(f"the notebook was stopped at the time limit {place}"),
                    )
                )
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
            results.append(
                Verdict(exercise, ERROR, detail=(f"{cell_label(nb, index)} raised {message}"))
            )
        elif check_cell is None:
            results.append(
                Verdict(
                    exercise,
                    NO_VERDICT,
                    detail=(f"the check call `check.{exercise.check}(...)` is not in the notebook"),
                )
            )
        else:
            results.append(
                Verdict(
                    exercise,
                    NO_VERDICT,
                    detail=(f"{cell_label(nb, check_cell)} ran but its check reported nothing"),
                )
            )
    return results


# -------------------------------------------------------------------------- grading


@dataclass
class Graded:
    submission: Submission
    run: Run
    verdicts: list[Verdict]


def run_to_completion(coroutine):
    """Run ``coroutine`` and return its result, also where an event loop already runs.

    ``asyncio.run`` refuses to start inside a running loop (a notebook, or a process that
    drives a browser through Playwright's synchronous API); there the coroutine gets a
    loop of its own in a short-lived thread, and any error it raised is raised here.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    outcome: dict[str, object] = {}

    def run_in_thread() -> None:
        try:
            outcome["result"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 (handed back to the caller below)
            outcome["error"] = error

    worker = threading.Thread(target=run_in_thread, name="grading")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


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


async def grade_all(
    submissions: list[Submission], course: CourseExercises, timeout: float, jobs: int, say
) -> tuple[list[Graded], list[str]]:
    graded: list[Graded] = []
    failures: list[str] = []
    gate = asyncio.Semaphore(jobs)
    done = {"count": 0}
    with tempfile.TemporaryDirectory(prefix="course-progress-") as scratch:

        async def grade(number: int, submission: Submission):
            async with gate:
                run = await run_notebook(submission.path, Path(scratch) / f"{number:04d}", timeout)
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
            say(
                f"[{done['count']}/{len(submissions)}] {label}: {passed} of {len(verdicts)} "
                f"correct ({run.seconds:.1f} s{stop})"
            )

        await asyncio.gather(*(grade(i, s) for i, s in enumerate(submissions)))
    order = {id(s): i for i, s in enumerate(submissions)}
    graded.sort(key=lambda g: order[id(g.submission)])
    return graded, failures
