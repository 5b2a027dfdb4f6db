"""Read ``course.toml``: the ordered list of lessons and the repository setting.

Used by the lesson generator, the tests and the navigation bars (lesson 00 shows
the map of the course built from it).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

COURSE_ROOT = Path(__file__).resolve().parent.parent
CONFIG_FILE = COURSE_ROOT / "course.toml"


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    teaching_minutes: int
    exercise_minutes: int

    @property
    def filename(self) -> str:
        return f"{self.slug}.ipynb"

    @property
    def minutes(self) -> int:
        return self.teaching_minutes + self.exercise_minutes


@dataclass(frozen=True)
class Course:
    title: str
    subtitle: str
    repository: str
    branch: str
    tensorflow: str
    lessons: tuple[Lesson, ...]

    def neighbours(self, slug: str) -> tuple[Lesson | None, Lesson | None]:
        index = [lesson.slug for lesson in self.lessons].index(slug)
        previous = self.lessons[index - 1] if index > 0 else None
        following = self.lessons[index + 1] if index + 1 < len(self.lessons) else None
        return previous, following

    def binder_url(self, path: str) -> str:
        return (
            f"https://mybinder.org/v2/gh/{self.repository}/{self.branch}"
            f"?urlpath=lab/tree/{path}"
        )


def load_course(path: Path = CONFIG_FILE) -> Course:
    with open(path, "rb") as handle:
        raw = tomllib.load(handle)
    lessons = []
    for entry in raw["lessons"]:
        number = int(entry["slug"][:2])
        lessons.append(
            Lesson(
                number=number,
                slug=entry["slug"],
                title=entry["title"],
                teaching_minutes=int(entry["teaching_minutes"]),
                exercise_minutes=int(entry["exercise_minutes"]),
            )
        )
    info = raw["course"]
    return Course(
        title=info["title"],
        subtitle=info["subtitle"],
        repository=info["repository"],
        branch=info["branch"],
        tensorflow=info["tensorflow"],
        lessons=tuple(lessons),
    )
