"""How long each exercise check takes to judge its reference answer.

Every solutions notebook runs once, top to bottom in a fresh kernel, with
``AUTODIFF_COURSE_REPORT`` naming a report file and ``AUTODIFF_COURSE_REPEAT=9``:
each check then judges the reference answer nine times (fresh probes every time)
and reports every duration. Target: a median of at most 300 ms per check on two cores.
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path

from .config import SOLUTIONS_DIR
from .config import load_course
from .grading import run_notebook
from .grading import run_to_completion

REPEAT = 9
TARGET_MS = 300.0
TIMEOUT = 600.0


def check_times(repeat: int = REPEAT) -> list[dict]:
    """One entry per check called on a reference answer in ``solutions/``, in order:
    ``exercise``, ``title``, ``status`` and ``median_ms`` over ``repeat`` judgements."""
    course = load_course()

    async def run_all() -> list[dict]:
        records = []
        with tempfile.TemporaryDirectory(prefix="course-check-times-") as scratch:
            for index, lesson in enumerate(course.lessons):
                run = await run_notebook(
                    SOLUTIONS_DIR / lesson.filename,
                    Path(scratch) / f"{index:02d}",
                    TIMEOUT,
                    repeat=repeat,
                )
                if run.failure or run.stopped_reason:
                    problem = run.failure or run.stopped_reason
                    raise RuntimeError(f"solutions/{lesson.filename} did not run: {problem}")
                records += run.records
        return records

    return [
        {
            "exercise": record["exercise"],
            "title": record.get("title", ""),
            "status": record.get("status", ""),
            "median_ms": 1e3 * statistics.median(record["seconds"]),
        }
        for record in run_to_completion(run_all())
        if record.get("seconds")
    ]
