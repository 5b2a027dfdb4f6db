"""The verdict of every exercise of a learner's notebook, from what running it gave.

:mod:`course_tools.grading` runs the notebook (contained, its report read between
cells) and hands the run here; :func:`verdicts_for` gives one verdict per exercise:

    correct · not yet (with the check's mistake code) · not attempted ·
    error (a cell raised, or the kernel died, before the check ran) ·
    timeout (the notebook was stopped at the time limit before the check ran) ·
    stopped: memory limit · stopped: process limit · stopped: CPU time limit ·
    stopped: file size limit (the kernel reached one of its limits before the check ran) ·
    stopped: sandbox (it tried what the sandbox forbids: a file outside its folder, the
    network) · tampered (the notebook wrote a verdict to the report itself) ·
    no verdict (the check was not called) ·
    missing (no notebook for that lesson, or no such exercise in it)

A verdict counts only if it was written while a cell that calls that exercise's check
ran (:func:`genuine_records`); what contained the kernel is read from its errors and
its exit status (:func:`containment_verdict`, :func:`death_verdict`).
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autodiff_course.checking.verdicts import Status

from .lessons import Exercise
from .lessons import check_alias
from .lessons import find_exercises
from .lessons import source

if TYPE_CHECKING:
    from .grading import Run
    from .grading import Submission

CORRECT = "correct"
WRONG = "not yet"
NOT_ATTEMPTED = "not attempted"
ERROR = "error"
TIMEOUT = "timeout"
NO_VERDICT = "no verdict"
MISSING = "missing"
MEMORY_LIMIT = "stopped: memory limit"
PROCESS_LIMIT = "stopped: process limit"
CPU_LIMIT = "stopped: CPU time limit"
FILE_SIZE_LIMIT = "stopped: file size limit"
SANDBOX = "stopped: sandbox"
TAMPERED = "tampered"

STATUS_TO_VERDICT = {
    Status.CORRECT.value: CORRECT,
    Status.WRONG.value: WRONG,
    Status.NOT_ATTEMPTED.value: NOT_ATTEMPTED,
}
# How IPython names a cell in a SyntaxError: "(3938975783.py, line 18)".
KERNEL_FILE = re.compile(r"\(\d+\.py, line (\d+)\)")
# What a kernel's own errors look like when it ran into a limit or the sandbox's walls.
ERRNO = re.compile(r"^\[Errno (-?\d+)\]")
LIMIT_ERRNOS = {11: PROCESS_LIMIT, 27: FILE_SIZE_LIMIT}  # EAGAIN from fork, EFBIG
# EPERM, EACCES, EROFS; ENETUNREACH, ECONNREFUSED (nothing listens in its own network);
# name resolution without a network.
SANDBOX_ERRNOS = {1, 13, 30, 101, 111, -2, -3, -5}
QUOTED_PATH = re.compile(r": '(/[^']+)'$")


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


@dataclass(frozen=True)
class Raised:
    """A cell's error: its index, "Type: first line of the message", and its verdict
    (ERROR, or what contained the notebook)."""

    index: int
    message: str
    verdict: str


def containment_verdict(ename: str, evalue: str, sandboxed: bool) -> str:
    """What an error means: a limit or the sandbox stopped the code, or plainly ERROR."""
    if ename == "MemoryError" or ename.endswith("ResourceExhaustedError"):
        return MEMORY_LIMIT
    if "can't start new thread" in evalue:
        return PROCESS_LIMIT
    match = ERRNO.match(evalue.strip())
    if match:
        number = int(match.group(1))
        if number in LIMIT_ERRNOS:
            return LIMIT_ERRNOS[number]
        if sandboxed and number in SANDBOX_ERRNOS:
            return SANDBOX
        named = QUOTED_PATH.search(evalue.strip())
        if sandboxed and number == 2 and named:
            path = named.group(1)
            if os.path.exists(path) or os.path.isdir(os.path.dirname(path)):
                return SANDBOX  # there (or its folder is), but the sandbox hid it
    return ERROR


def raised_cells(nb, sandboxed: bool = False) -> list[Raised]:
    """Every cell that raised, with the first line of its error."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                ename, evalue = str(output.get("ename", "Error")), str(output.get("evalue", ""))
                lines = evalue.strip().splitlines()
                first = KERNEL_FILE.sub(r"(line \1 of the cell)", lines[0] if lines else "")
                message = one_line(f"{ename}: {first}".rstrip(": "), 200)
                found.append(Raised(index, message, containment_verdict(ename, evalue, sandboxed)))
                break
    return found


def death_verdict(run: Run) -> tuple[str, str]:
    """(verdict, why) for a kernel that died: a limit that killed it, or ERROR."""
    status = run.exit_status
    # A signal: negative from the kernel itself, 128 + signal from the sandbox around it.
    number = -status if status is not None and status < 0 else (status or 0) - 128
    if number == signal.SIGXCPU:
        return CPU_LIMIT, "the kernel used up its CPU time"
    if "bad_alloc" in run.log_tail or "Cannot allocate memory" in run.log_tail:
        return MEMORY_LIMIT, "the kernel ran out of memory"
    if number == signal.SIGKILL:
        return ERROR, "the kernel was killed (by the system, perhaps for want of memory)"
    return ERROR, "the kernel died"


def genuine_records(nb, run: Run, exercises) -> tuple[dict[str, dict], dict[str, int | None]]:
    """The last genuine verdict per exercise, and the cell of each forged one.

    A verdict is genuine when it was written while a code cell that calls that
    exercise's check ran; any other (written by the notebook's own code into the
    report, from any other cell) is forged.
    """
    _, alias = check_alias(nb)
    checks = {exercise.number: exercise.check for exercise in exercises}
    latest: dict[str, dict] = {}
    forged: dict[str, int | None] = {}
    for index, record in run.entries:
        number = str(record.get("exercise"))
        if number not in checks:
            continue
        code = source(nb.cells[index]) if index is not None and index < len(nb.cells) else ""
        calls = checks[number] and re.search(
            rf"\b{re.escape(alias)}\.{re.escape(checks[number])}\s*\(", code
        )
        if calls:
            latest[number] = record  # the last check of each counts
        else:
            forged.setdefault(number, index)
    return latest, forged


def verdicts_for(submission: Submission, run: Run, exercises) -> list[Verdict]:
    """One verdict per current exercise of the lesson, from what the run reported."""
    nb = run.nb
    latest, forged = genuine_records(nb, run, exercises)
    where = {found.number: found for found in find_exercises(nb)}
    errors = raised_cells(nb, run.sandboxed)
    results = []
    for exercise in exercises:
        if exercise.number in forged:
            index = forged[exercise.number]
            writer = cell_label(nb, index) if index is not None else "the notebook"
            results.append(
                Verdict(
                    exercise,
                    TAMPERED,
                    detail=f"{writer} wrote a verdict for this exercise into the report "
                    f"itself; its check did not",
                )
            )
            continue
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
                verdict, why = death_verdict(run)
                results.append(Verdict(exercise, verdict, detail=f"{why} {place}"))
            continue
        # The first cell that raised: the learner's own code of this exercise, else
        # anything above it (the setup cell, an earlier exercise), else the check
        # call itself.
        inside = [e for e in errors if found.heading_cell <= e.index < last]
        before = [e for e in errors if e.index < found.heading_cell]
        itself = [e for e in errors if e.index == last and check_cell is not None]
        culprit = (inside or before or itself or [None])[0]
        if culprit is not None:
            results.append(
                Verdict(
                    exercise,
                    culprit.verdict,
                    detail=f"{cell_label(nb, culprit.index)} raised {culprit.message}",
                )
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
