"""The course's configuration, ``course.toml``, and where everything lives.

``course.toml`` lists the lessons in order (slug, title, minutes), the optional asides
that a lesson links to, and names the
repository and git ref that every address leaving the repository is built from
(Binder, Colab, GitHub, the helper package the setup cell installs on Colab).
The paths below are the folders the tools read and write.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CONFIG_FILE = ROOT / "course.toml"
LESSONS_DIR = ROOT / "lessons"
SOLUTIONS_DIR = ROOT / "solutions"
README = ROOT / "README.md"
REQUIREMENTS = ROOT / "requirements.txt"


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
class Aside:
    """An optional notebook that one lesson links to, for a deep dive off its main path:
    no exercises, checked by nbval like every notebook, numbered like its lesson."""

    slug: str
    title: str
    lesson: str
    teaching_minutes: int
    exercise_minutes: int = 0

    @property
    def number(self) -> int:
        return int(self.slug[:2])

    @property
    def filename(self) -> str:
        return f"{self.slug}.ipynb"

    @property
    def minutes(self) -> int:
        return self.teaching_minutes


@dataclass(frozen=True)
class Course:
    title: str
    subtitle: str
    repository: str
    ref: str
    lessons: tuple[Lesson, ...]
    asides: tuple[Aside, ...] = ()

    @property
    def notebooks(self) -> tuple:
        """Every notebook the course builds: the lessons, then the asides."""
        return self.lessons + self.asides

    def asides_of(self, lesson) -> tuple[Aside, ...]:
        return tuple(aside for aside in self.asides if aside.lesson == lesson.slug)

    def lesson_of(self, aside: Aside) -> Lesson:
        return next(lesson for lesson in self.lessons if lesson.slug == aside.lesson)

    def neighbours(self, slug: str) -> tuple[Lesson | None, Lesson | None]:
        index = [lesson.slug for lesson in self.lessons].index(slug)
        previous = self.lessons[index - 1] if index > 0 else None
        following = self.lessons[index + 1] if index + 1 < len(self.lessons) else None
        return previous, following

    def binder_url(self, path: str) -> str:
        """Binder, opening ``path`` (relative to the repository root) in JupyterLab."""
        return f"https://mybinder.org/v2/gh/{self.repository}/{self.ref}?urlpath=lab/tree/{path}"

    def colab_url(self, path: str) -> str:
        """Google Colab, opening the notebook at ``path`` straight from GitHub."""
        return f"https://colab.research.google.com/github/{self.repository}/blob/{self.ref}/{path}"

    def github_url(self, path: str) -> str:
        """The file at ``path`` as GitHub shows it (used where relative links break)."""
        return f"https://github.com/{self.repository}/blob/{self.ref}/{path}"

    @property
    def helper_package_source(self) -> str:
        """What the setup cell hands to ``pip install`` on Colab: this repository at ``ref``."""
        return f"git+https://github.com/{self.repository}@{self.ref}"


# Letters, digits, dots, dashes and underscores: a name that stands unchanged in a
# Binder, Colab or GitHub address and in a pip requirement (no "/", "@" or "#").
REF_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
REPOSITORY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")


def _checked_ref(ref) -> str:
    """The ``ref`` setting: a git branch or tag name that can stand in any address."""
    if not isinstance(ref, str) or not REF_PATTERN.fullmatch(ref) or ref.endswith(".lock"):
        raise ValueError(
            f"course.toml: ref must be a git branch or tag name such as "
            f"'main' or 'workshop-2027-03', not {ref!r}"
        )
    return ref


def _checked_repository(repository) -> str:
    if not isinstance(repository, str) or not REPOSITORY_PATTERN.fullmatch(repository):
        raise ValueError(
            f"course.toml: repository must be a GitHub repository written "
            f"owner/name, such as 'gradients-on-tape/gradients-on-tape', "
            f"not {repository!r}"
        )
    return repository


def load_course(path: Path = CONFIG_FILE) -> Course:
    with open(path, "rb") as handle:
        raw = tomllib.load(handle)
    lessons = tuple(
        Lesson(
            number=int(entry["slug"][:2]),
            slug=entry["slug"],
            title=entry["title"],
            teaching_minutes=int(entry["teaching_minutes"]),
            exercise_minutes=int(entry["exercise_minutes"]),
        )
        for entry in raw["lessons"]
    )
    asides = tuple(
        Aside(
            slug=entry["slug"],
            title=entry["title"],
            lesson=entry["lesson"],
            teaching_minutes=int(entry["teaching_minutes"]),
        )
        for entry in raw.get("asides", [])
    )
    slugs = {lesson.slug for lesson in lessons}
    for aside in asides:
        if aside.lesson not in slugs or not aside.slug.startswith(aside.lesson[:3]):
            raise ValueError(
                f"course.toml: aside {aside.slug!r} must name one of the lessons, and share "
                f"its number, in lesson = ..."
            )
    info = raw["course"]
    return Course(
        title=info["title"],
        subtitle=info["subtitle"],
        repository=_checked_repository(info["repository"]),
        ref=_checked_ref(info["ref"]),
        lessons=lessons,
        asides=asides,
    )
