"""The exercises of each lesson, read from the course's solutions notebooks, and
how to recognise a learner's copy of a lesson.

An exercise is announced by a Markdown heading

    ### Exercise 1.2: Central differences (★☆☆ easy, 10 min)

and checked by the first call of the lesson's check module after it, e.g.
``check.central_difference(central_difference_1d)``, where ``check`` is the name the
setup cell gave ``autodiff_course.checks.lessonNN``. Nothing here is a list kept by
hand: whatever the solutions say when a tool runs is what the tool uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .config import SOLUTIONS_DIR
from .config import Course
from .config import Lesson
from .config import load_course
from .notebook_format import EXERCISE_HEADING
from .notebook_format import read

CHECKS_IMPORT = re.compile(
    r"^\s*from\s+autodiff_course\.checks\s+import\s+lesson(?P<number>\d+)"
    r"(?:\s+as\s+(?P<alias>[A-Za-z_]\w*))?",
    re.MULTILINE,
)
CELL_ID = re.compile(r"^(\d\d)-\d{3}$")


def exercise_key(number: str) -> tuple[int, ...]:
    """Sorts exercise numbers as numbers: "1.10" after "1.9"."""
    return tuple(int(part) for part in number.split("."))


@dataclass(frozen=True)
class Exercise:
    """One exercise of the course as the solutions notebook states it."""

    lesson: str  # the lesson's slug
    number: str  # "1.2"
    title: str
    stars: int  # difficulty: filled stars in the heading
    minutes: int
    check: str | None  # the check function's name, e.g. "central_difference"
    answer: str | None  # what the check call is given, e.g. "central_difference_1d"

    @property
    def points(self) -> int:
        """nbgrader points: one per filled difficulty star (at least one)."""
        return max(1, self.stars)


@dataclass(frozen=True)
class Found:
    """Where one exercise sits in a particular notebook (cell indices)."""

    number: str
    title: str
    stars: int
    minutes: int
    heading_cell: int
    check_cell: int | None
    check: str | None
    answer: str | None


def source(cell) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def check_alias(nb) -> tuple[int | None, str]:
    """The lesson number whose checks the notebook imports, and the name they get."""
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            match = CHECKS_IMPORT.search(source(cell))
            if match:
                return int(match["number"]), match["alias"] or f"lesson{match['number']}"
    return None, "check"


def _heading(cell):
    if cell.get("cell_type") != "markdown":
        return None
    return EXERCISE_HEADING.search(source(cell))


def find_exercises(nb) -> list[Found]:
    """Every exercise heading of ``nb`` with the cell of its check call."""
    _, alias = check_alias(nb)
    # A call of a check at the start of a line: check.name(answer), possibly over
    # several lines (then only its name is kept).
    call = re.compile(
        rf"^\s*{re.escape(alias)}\.(?P<name>[A-Za-z_]\w*)\((?P<args>.*)$", re.MULTILINE
    )
    headings = [(index, _heading(cell)) for index, cell in enumerate(nb.cells)]
    headings = [(index, match) for index, match in headings if match]
    found = []
    for position, (index, match) in enumerate(headings):
        end = headings[position + 1][0] if position + 1 < len(headings) else len(nb.cells)
        check_cell = name = answer = None
        for later in range(index + 1, end):
            cell = nb.cells[later]
            if cell.get("cell_type") != "code":
                continue
            hit = call.search(source(cell))
            if hit:
                args = hit["args"].strip()
                whole = args.endswith(")") and args.count("(") == args.count(")") - 1
                check_cell, name = later, hit["name"]
                answer = args[:-1].strip() if whole else None
                break
        found.append(
            Found(
                match["number"],
                match["title"],
                match["difficulty"].count("★"),
                int(match["minutes"]),
                index,
                check_cell,
                name,
                answer,
            )
        )
    return found


def exercises_of(lesson: Lesson, solutions_dir: Path = SOLUTIONS_DIR) -> tuple[Exercise, ...]:
    """The exercises of ``lesson`` as its solutions notebook states them now."""
    nb = read(solutions_dir / lesson.filename)
    return tuple(
        Exercise(lesson.slug, f.number, f.title, f.stars, f.minutes, f.check, f.answer)
        for f in find_exercises(nb)
    )


class CourseExercises:
    """The course's lessons (course.toml) and their exercises (solutions/), read once."""

    def __init__(self, course: Course | None = None, solutions_dir: Path = SOLUTIONS_DIR):
        self.course = course or load_course()
        self.solutions_dir = solutions_dir
        self._exercises: dict[str, tuple[Exercise, ...]] = {}

    @property
    def lessons(self) -> tuple[Lesson, ...]:
        return self.course.lessons

    def exercises(self, lesson: Lesson) -> tuple[Exercise, ...]:
        if lesson.slug not in self._exercises:
            self._exercises[lesson.slug] = exercises_of(lesson, self.solutions_dir)
        return self._exercises[lesson.slug]

    def by_filename(self, name: str) -> Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.filename == name), None)

    def by_number(self, number: int) -> Lesson | None:
        return next((lesson for lesson in self.lessons if lesson.number == number), None)

    def identify(self, path: Path, nb) -> tuple[Lesson | None, str]:
        """Which lesson ``nb`` is a copy of, and how that was decided.

        The file name (``NN-slug.ipynb`` as listed in course.toml) decides first. A
        renamed copy ("03-custom-gradients (1).ipynb") is recognised by its content:
        the lesson's checks imported by the setup cell, the cell ids the course gives
        every cell (``NN-iii``), or its title.
        """
        lesson = self.by_filename(path.name)
        if lesson is not None:
            return lesson, "name"
        number, _ = check_alias(nb)
        if number is not None and self.by_number(number) is not None:
            return self.by_number(number), "content"
        ids = [CELL_ID.match(str(cell.get("id", ""))) for cell in nb.cells]
        numbers = {match.group(1) for match in ids if match}
        if len(numbers) == 1 and sum(1 for match in ids if match) >= len(nb.cells) // 2:
            lesson = self.by_number(int(numbers.pop()))
            if lesson is not None:
                return lesson, "content"
        for cell in nb.cells:
            if cell.get("cell_type") == "markdown":
                first = source(cell).lstrip().split("\n", 1)[0]
                if first.startswith("# "):
                    title = first[2:].replace("`", "").strip().lower()
                    for lesson in self.lessons:
                        if lesson.title.replace("`", "").strip().lower() == title:
                            return lesson, "content"
                break
        return None, ""

    def version_difference(self, lesson: Lesson, nb) -> str | None:
        """None when ``nb`` has the current exercises of ``lesson``; else what differs."""
        current = {e.number: e.title for e in self.exercises(lesson)}
        theirs = {f.number: f.title for f in find_exercises(nb)}
        if current == theirs:
            return None

        def numbers(items) -> str:
            items = sorted(items, key=exercise_key)
            return ("exercise " if len(items) == 1 else "exercises ") + ", ".join(items)

        changed = [n for n in current if n in theirs and theirs[n] != current[n]]
        missing = [n for n in current if n not in theirs]
        extra = [n for n in theirs if n not in current]
        parts = []
        if changed:
            parts.append(
                f"{numbers(changed)} differ{'s' if len(changed) == 1 else ''} "
                f"from the current lesson's"
            )
        if missing:
            parts.append(f"{numbers(missing)} {'is' if len(missing) == 1 else 'are'} missing")
        if extra:
            parts.append(f"{numbers(extra)} no longer exist{'s' if len(extra) == 1 else ''}")
        return "; ".join(parts)
