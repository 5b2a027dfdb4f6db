"""What a learner meets while reading: answers kept back, and declared times that hold.

**Spoilers.** A learner scrolling through a lesson must not read an exercise's
answer before a clear spoiler point. For every ``### BEGIN SOLUTION`` region of
``solutions/``, the learner's copy is read from its first cell up to the first
cell tagged ``spoilers-below`` after that exercise (or to its end): every cell
whose source is shown (markdown included; cells collapsed with
``jupyter.source_hidden`` are not shown) is searched for the answer's lines. An
answer counts as given away when half or more of its substantive lines appear
there verbatim (after normalising spaces and dropping comments). Boilerplate
lines that every answer of a kind shares (``with tf.GradientTape() as tape:``,
``tape.watch(x)``, ``def grad_fn(upstream):``, a bare ``return``) are not
substantive.

**Pace.** A lesson's teaching time is estimated from what a learner reads and
runs outside the exercises: prose at 120 words per minute (technical text with
formulas), and per code cell 30 seconds to run it and read its output plus
5 seconds per line of code (collapsed cells: the 30 seconds only). An exercise
section runs from its heading to the next heading or spoiler point; teaching
cells after a spoiler point count as teaching. The minutes
declared in ``course.toml`` may differ from the estimate by at most 25%, and a
lesson's exercise minutes must add up to the minutes given in its exercise
headings.
"""

from __future__ import annotations

import re

import pytest
from notebooks import LESSONS
from notebooks import load

from course_tools.notebook_format import BEGIN_SOLUTION as BEGIN
from course_tools.notebook_format import END_SOLUTION as END
from course_tools.notebook_format import EXERCISE_HEADING

PROSE_WORDS_PER_MINUTE = 120
SECONDS_PER_CODE_CELL = 30
SECONDS_PER_CODE_LINE = 5
ALLOWED_TIME_DIFFERENCE = 0.25

HEADING = re.compile(r"^\s*#{1,3}\s")
SPOILER_TAG = "spoilers-below"

BOILERPLATE = [
    re.compile(pattern)
    for pattern in (
        r"^with tf\.(autodiff\.)?GradientTape\(.*\) as \w+:$",
        r"^with tf\.autodiff\.ForwardAccumulator\(.*\) as \w+:$",
        r"^\w+\.watch\(\w+\)$",
        r"^def \w+\([\w, =*]*\):$",
        r"^@tf\.custom_gradient$",
        r"^return( \w+(, \w+)*)?$",
        r"^(else|try|finally|pass|break|continue):?$",
        r"^del \w+$",
        r"^[\w\[\]]+ = \[\]$",
    )
]
MIN_SUBSTANTIVE_LENGTH = 12


def normalise(line: str) -> str:
    line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
    return " ".join(line.split())


def substantive(line: str) -> bool:
    return len(line) >= MIN_SUBSTANTIVE_LENGTH and not any(
        pattern.match(line) for pattern in BOILERPLATE
    )


def solution_regions(solution_nb):
    """(exercise number, substantive lines) per BEGIN/END SOLUTION region, in order."""
    regions, exercise, inside = [], None, False
    for cell in solution_nb.cells:
        if cell.cell_type == "markdown":
            found = EXERCISE_HEADING.search(cell.source)
            if found:
                exercise = found["number"]
        lines = []
        for raw in cell.source.split("\n"):
            stripped = raw.strip()
            if stripped.startswith(BEGIN):
                inside, lines = True, []
                continue
            if stripped.startswith(END):
                inside = False
                regions.append(
                    (exercise, [line for line in map(normalise, lines) if substantive(line)])
                )
                continue
            if inside:
                lines.append(raw)
    return regions


def is_shown(cell) -> bool:
    return not cell.metadata.get("jupyter", {}).get("source_hidden", False)


def exercise_positions(learner_nb) -> dict[str, int]:
    positions = {}
    for index, cell in enumerate(learner_nb.cells):
        if cell.cell_type == "markdown":
            for found in EXERCISE_HEADING.finditer(cell.source):
                positions[found["number"]] = index
    return positions


def readable_before_spoilers(learner_nb, start: int) -> set[str]:
    """Normalised lines a learner can read before the spoiler point after ``start``."""
    shown: set[str] = set()
    for index, cell in enumerate(learner_nb.cells):
        if index > start and SPOILER_TAG in cell.metadata.get("tags", []):
            break
        if is_shown(cell):
            shown.update(normalise(line) for line in cell.source.split("\n"))
    return shown


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_no_answer_is_readable_before_its_spoiler_point(lesson):
    solution, learner = load("solutions", lesson), load("lessons", lesson)
    positions = exercise_positions(learner)
    given_away = []
    for exercise, lines in solution_regions(solution):
        if not lines:
            continue
        start = positions.get(exercise, 0)
        readable = readable_before_spoilers(learner, start)
        seen = [line for line in lines if line in readable]
        if len(seen) * 2 >= len(lines):
            given_away.append(
                f"exercise {exercise}: {len(seen)} of {len(lines)} "
                f"answer lines readable, e.g. {seen[0]!r}"
            )
    assert not given_away, "\n".join(given_away)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_spoiler_points_say_so(lesson):
    for cell in load("lessons", lesson).cells:
        if SPOILER_TAG in cell.metadata.get("tags", []):
            assert cell.cell_type == "markdown" and "spoiler" in cell.source.lower()


# -- pace ------------------------------------------------------------------------


def teaching_estimate(learner_nb) -> tuple[float, int]:
    """(estimated teaching minutes, exercise minutes from the headings)."""
    seconds, exercise_minutes, in_exercise = 0.0, 0, False
    for cell in learner_nb.cells:
        tags = cell.metadata.get("tags", [])
        if "navigation-top" in tags or "navigation-bottom" in tags:
            continue
        if cell.cell_type == "markdown":
            found = EXERCISE_HEADING.search(cell.source)
            if found:
                in_exercise = True
                exercise_minutes += int(found["minutes"])
                continue
            if HEADING.match(cell.source) or SPOILER_TAG in tags:
                in_exercise = False
            if not in_exercise:
                words = len(re.findall(r"[A-Za-z0-9_']+", cell.source))
                seconds += 60.0 * words / PROSE_WORDS_PER_MINUTE
        elif cell.cell_type == "code" and not in_exercise:
            seconds += SECONDS_PER_CODE_CELL
            if is_shown(cell):
                code_lines = [line for line in cell.source.split("\n") if line.strip()]
                seconds += SECONDS_PER_CODE_LINE * len(code_lines)
    return seconds / 60.0, exercise_minutes


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_declared_teaching_time_matches_the_content(lesson):
    estimate, _ = teaching_estimate(load("lessons", lesson))
    declared = lesson.teaching_minutes
    assert abs(declared - estimate) <= ALLOWED_TIME_DIFFERENCE * estimate, (
        f"{lesson.slug}: declared {declared} min of teaching, the content suggests "
        f"{estimate:.0f} min (prose at {PROSE_WORDS_PER_MINUTE} words/min, "
        f"{SECONDS_PER_CODE_CELL} s per code cell plus {SECONDS_PER_CODE_LINE} s per line)"
    )


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_exercise_minutes_add_up(lesson):
    _, from_headings = teaching_estimate(load("lessons", lesson))
    assert lesson.exercise_minutes == from_headings
