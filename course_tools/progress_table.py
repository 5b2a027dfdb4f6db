"""What ``progress`` prints and writes: the table of verdicts, the totals per
exercise, what needs a look, and the CSV file."""

from __future__ import annotations

import csv
from pathlib import Path

from .grading import Graded
from .grading import shown
from .grading_verdicts import CORRECT
from .grading_verdicts import CPU_LIMIT
from .grading_verdicts import ERROR
from .grading_verdicts import FILE_SIZE_LIMIT
from .grading_verdicts import MEMORY_LIMIT
from .grading_verdicts import MISSING
from .grading_verdicts import NO_VERDICT
from .grading_verdicts import NOT_ATTEMPTED
from .grading_verdicts import PROCESS_LIMIT
from .grading_verdicts import SANDBOX
from .grading_verdicts import TAMPERED
from .grading_verdicts import TIMEOUT
from .grading_verdicts import WRONG
from .lessons import CourseExercises

SYMBOLS = {
    CORRECT: "+",
    WRONG: "x",
    NOT_ATTEMPTED: ".",
    ERROR: "E",
    TIMEOUT: "T",
    MEMORY_LIMIT: "M",
    PROCESS_LIMIT: "P",
    CPU_LIMIT: "C",
    FILE_SIZE_LIMIT: "F",
    SANDBOX: "S",
    TAMPERED: "!",
    NO_VERDICT: "?",
    MISSING: "-",
}
LEGEND = {
    CORRECT: "correct",
    WRONG: "not yet",
    NOT_ATTEMPTED: "not attempted",
    ERROR: "error: a cell raised before the check ran",
    TIMEOUT: "stopped at the time limit before the check ran",
    MEMORY_LIMIT: "stopped at the memory limit",
    PROCESS_LIMIT: "stopped at the process limit",
    CPU_LIMIT: "stopped at the CPU time limit",
    FILE_SIZE_LIMIT: "stopped at the file size limit",
    SANDBOX: "stopped by the sandbox (a file outside its folder, the network)",
    TAMPERED: "the notebook wrote a verdict into the report itself",
    NO_VERDICT: "the check was not called",
    MISSING: "no notebook, or no such exercise in it",
}
CSV_COLUMNS = ["learner", "notebook", "exercise", "verdict", "mistake", "detail"]


# --------------------------------------------------------------------------- output


def table_cells(learners_in_order: list[str], graded: list[Graded], course: CourseExercises):
    """(lessons shown, learners shown, {(learner, exercise number): (Graded, Verdict) or
    (None, None)})."""
    by_learner_lesson = {(g.submission.learner, g.submission.lesson.slug): g for g in graded}
    lessons = [
        lesson
        for lesson in course.lessons
        if any(g.submission.lesson.slug == lesson.slug for g in graded)
    ]
    learners = [
        learner
        for learner in learners_in_order
        if any(g.submission.learner == learner for g in graded)
    ]
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
    head1 = (
        "learner".ljust(name_width)
        + "  "
        + "  ".join(f"{lesson.number:02d}".ljust(width) for lesson, width in groups)
    )
    head2 = (
        " " * name_width
        + "  "
        + "  ".join(
            "".join(e.number.split(".")[-1][-1] for e in course.exercises(lesson)).ljust(width)
            for lesson, width in groups
        )
    )
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
    lines = [
        f"Passed, per exercise (of {len(learners)} learner{'s' if len(learners) != 1 else ''}):"
    ]
    width = len(str(len(learners)))
    for lesson in lessons:
        for exercise in course.exercises(lesson):
            passed = sum(
                1
                for learner in learners
                if (v := cells[learner, exercise.number][1]) and v.verdict == CORRECT
            )
            lines.append(
                f"  {exercise.number:>5}  {passed:>{width}}/{len(learners)}  {exercise.title}"
            )
    return "\n".join(lines)


def render_attention(graded: list[Graded]) -> str:
    """Errors, timeouts, contained code and missing checks, grouped per notebook and cause."""
    lines = []
    for g in graded:
        grouped: dict[tuple[str, str], list[str]] = {}
        for v in g.verdicts:
            if v.verdict not in (CORRECT, WRONG, NOT_ATTEMPTED, MISSING):
                grouped.setdefault((v.verdict, v.detail), []).append(v.exercise.number)
        for (verdict, detail), numbers in grouped.items():
            which = ("exercise " if len(numbers) == 1 else "exercises ") + ", ".join(numbers)
            lines.append(
                f"  {g.submission.learner} · {shown(g.submission.path)} · {which}: "
                f"{verdict}: {detail}"
            )
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
                        writer.writerow(
                            [
                                learner,
                                "",
                                exercise.number,
                                MISSING,
                                "",
                                f"no notebook for lesson {lesson.number:02d}",
                            ]
                        )
                    else:
                        writer.writerow(
                            [
                                learner,
                                shown(g.submission.path),
                                exercise.number,
                                verdict.verdict,
                                verdict.mistake,
                                verdict.detail,
                            ]
                        )
