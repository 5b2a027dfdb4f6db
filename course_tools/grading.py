"""Run one learner's copy of a lesson and give every exercise its verdict.

Used by :mod:`course_tools.progress` (and the benchmark). Each notebook is copied to
a scratch folder and run there from top to bottom in a fresh kernel, with checks
printing rather than raising and every verdict written to a report file
(``AUTODIFF_COURSE_REPORT``); the saved outputs of the learner's file are never
trusted. :mod:`course_tools.grading_verdicts` then gives every exercise one verdict
(correct, not yet, ..., stopped: memory limit, tampered) from what the run gave.

Each kernel runs contained (:mod:`course_tools.sandbox`): in a sandbox where the
platform has one, and within limits of memory, processes, CPU time and file size
everywhere. The report is read after every cell, so a verdict counts only if it was
written while a cell that calls that exercise's check ran.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
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

from .config import Lesson
from .grading_verdicts import CORRECT
from .grading_verdicts import ERROR
from .grading_verdicts import TIMEOUT
from .grading_verdicts import Verdict
from .grading_verdicts import death_verdict
from .grading_verdicts import one_line
from .grading_verdicts import verdicts_for
from .lessons import CourseExercises
from .notebook_format import read
from .sandbox import Limits
from .sandbox import SandboxedKernelManager

KERNEL_NAME = "python3"
# A lesson's kernel peaks below 0.7 GB (./course.sh bench measures it): allow 1 GB each,
# and run no more at once than memory holds.
KERNEL_MEMORY = 1 << 30


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
    """What happened when one notebook ran. ``entries`` holds every verdict the report
    received, with the index of the code cell that was running when it was written."""

    nb: object = None
    stopped_cell: int | None = None  # the cell running when it was stopped
    stopped_reason: str | None = None  # TIMEOUT, or ERROR when the kernel died
    failure: str | None = None  # it could not be run at all
    seconds: float = 0.0
    entries: list[tuple[int | None, dict]] = field(default_factory=list)  # (cell, record)
    exit_status: int | None = None  # the kernel's, when it died (negative: a signal)
    log_tail: str = ""  # the end of what the kernel printed to its standard error
    sandboxed: bool = False

    @property
    def records(self) -> list[dict]:
        return [record for _, record in self.entries]


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


class ReportWatch:
    """The report file, read between cells: each verdict is kept with the cell that was
    running when it was written, and nothing the notebook does to the file later (a
    rewrite, a deletion) loses what was already read."""

    def __init__(self, path: Path):
        self.path = path
        self.seen = b""
        self.entries: list[tuple[int | None, dict]] = []

    def collect(self, cell_index: int | None) -> None:
        """Take what appeared since the last look, as written while ``cell_index`` ran."""
        try:
            data = self.path.read_bytes()
        except OSError:
            data = b""
        fresh = data[len(self.seen) :] if data.startswith(self.seen) else data
        complete = fresh[: fresh.rfind(b"\n") + 1]  # a line still being written waits
        self.seen = data[: len(data) - len(fresh) + len(complete)]
        for line in complete.decode("utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "exercise" in record:
                self.entries.append((cell_index, record))


def kernel_manager(limits: Limits, sandbox: bool) -> SandboxedKernelManager:
    return SandboxedKernelManager(
        kernel_name=KERNEL_NAME,
        use_sandbox=sandbox,
        memory_limit=limits.memory,
        process_limit=limits.processes,
        cpu_limit=limits.cpu_seconds,
        file_size_limit=limits.file_size,
    )


async def run_notebook(
    original: Path,
    workdir: Path,
    timeout: float,
    repeat: int = 1,
    limits: Limits | None = None,
    sandbox: bool = True,
) -> Run:
    """Run a copy of ``original`` in ``workdir`` with a fresh, contained kernel (in the
    sandbox where there is one and ``sandbox`` allows it); never raises."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError
    from nbclient.exceptions import DeadKernelError

    workdir.mkdir(parents=True)
    copy = workdir / original.name
    shutil.copyfile(original, copy)
    report = ReportWatch(workdir / "verdicts.jsonl")
    run = Run()
    started = time.monotonic()
    deadline = started + timeout
    current: dict[str, int | None] = {"cell": None, "code": None}
    manager = kernel_manager(limits or Limits.for_timeout(timeout), sandbox)
    run.sandboxed = manager.sandboxed
    log_path = workdir.parent / f"{workdir.name}.kernel.log"  # outside the kernel's reach

    def remaining(cell) -> int:
        return max(1, math.ceil(deadline - time.monotonic()))

    def on_cell_start(cell, cell_index):
        report.collect(current["code"])
        current["cell"] = cell_index
        if cell.get("cell_type") == "code":
            current["code"] = cell_index
        if time.monotonic() >= deadline:
            raise _OutOfTime()

    try:
        nb = read(copy)
        run.nb = nb
        client = NotebookClient(
            nb,
            km=manager,
            timeout_func=remaining,
            startup_timeout=max(30, int(timeout)),
            resources={"metadata": {"path": str(workdir)}},
            on_cell_start=on_cell_start,
            **CLIENT_SETTINGS,
        )
        with open(log_path, "wb") as log:
            # The kernel's own chatter goes to a log file, not to the report.
            await asyncio.wait_for(
                client.async_execute(
                    env=kernel_environment(report.path, repeat), stdout=log, stderr=log
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
    finally:
        run.exit_status = manager.exit_status()
        await stop_kernel(manager)
    report.collect(current["code"])
    run.seconds = time.monotonic() - started
    run.entries = report.entries
    try:
        run.log_tail = log_path.read_bytes()[-4000:].decode("utf-8", errors="replace")
    except OSError:
        pass
    last_words = [line.strip() for line in run.log_tail.splitlines() if line.strip()]
    if run.failure and last_words:
        run.failure += f"; its last words: {one_line(last_words[-1], 200)}"
    return run


async def stop_kernel(manager: SandboxedKernelManager) -> None:
    """Stop the kernel and everything it started, and remove its temporary folders."""
    try:
        if manager.has_kernel:
            await manager.shutdown_kernel(now=True)
    except Exception:  # noqa: BLE001 (already gone: nothing more to stop)
        pass
    finally:
        await manager.cleanup_resources()


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
    submissions: list[Submission],
    course: CourseExercises,
    timeout: float,
    jobs: int,
    say,
    limits: Limits | None = None,
    sandbox: bool = True,
) -> tuple[list[Graded], list[str]]:
    """Grade every submission, ``jobs`` at a time, each in a contained kernel."""
    graded: list[Graded] = []
    failures: list[str] = []
    gate = asyncio.Semaphore(jobs)
    done = {"count": 0}
    with tempfile.TemporaryDirectory(prefix="course-progress-") as scratch:

        async def grade(number: int, submission: Submission):
            async with gate:
                run = await run_notebook(
                    submission.path,
                    Path(scratch) / f"{number:04d}",
                    timeout,
                    limits=limits,
                    sandbox=sandbox,
                )
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
                stop = f", {death_verdict(run)[1]}"
            say(
                f"[{done['count']}/{len(submissions)}] {label}: {passed} of {len(verdicts)} "
                f"correct ({run.seconds:.1f} s{stop})"
            )

        await asyncio.gather(*(grade(i, s) for i, s in enumerate(submissions)))
    order = {id(s): i for i, s in enumerate(submissions)}
    graded.sort(key=lambda g: order[id(g.submission)])
    return graded, failures
