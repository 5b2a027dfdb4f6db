"""Verdicts, and the decorator that turns an evaluator into a check (lesson 00).

Each check reports exactly one of three verdicts:

* **correct**, with praise that says only what the check verified;
* **not yet**, with a hint that names the likely mistake and a mistake code
  from :mod:`autodiff_course.checking.mistakes`;
* **not attempted yet**, while the learner's stub still raises
  ``NotImplementedError``.

In a lesson a check only prints, so every lesson runs top to bottom whatever the
learner typed. In *strict* mode (``AUTODIFF_COURSE_STRICT=1``, set by the test
suite for ``solutions/``) anything but *correct* raises
:class:`ExerciseNotSolved`. When ``AUTODIFF_COURSE_REPORT`` names a file, every
verdict is also appended to it as one line of JSON (the progress report reads it),
with the seconds the check took; ``AUTODIFF_COURSE_REPEAT=N`` makes each check
judge its answer N times and report every duration (the benchmark's medians).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import json
import os
import time
from dataclasses import asdict
from dataclasses import dataclass

from . import mistakes

STRICT_ENVIRONMENT_VARIABLE = "AUTODIFF_COURSE_STRICT"
REPORT_ENVIRONMENT_VARIABLE = "AUTODIFF_COURSE_REPORT"
REPEAT_ENVIRONMENT_VARIABLE = "AUTODIFF_COURSE_REPEAT"


class Status(enum.Enum):
    CORRECT = "correct"
    WRONG = "not yet"
    NOT_ATTEMPTED = "not attempted yet"


_ICONS = {Status.CORRECT: "✅", Status.WRONG: "❌", Status.NOT_ATTEMPTED: "⏳"}


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one exercise; ``mistake`` is the detected mistake's code."""

    exercise: str
    title: str
    status: Status
    message: str
    mistake: str | None = None

    def __str__(self) -> str:
        head = (
            f"{_ICONS[self.status]} Exercise {self.exercise} ({self.title}): {self.status.value}."
        )
        return f"{head} {self.message}".rstrip()


class Wrong(Exception):
    """Raised by an evaluator: the answer is wrong; ``hint`` says why.

    A verdict has structure: ``mistake``, a registered code (see :mod:`.mistakes`);
    ``hint``, the words for that mistake; ``point``, the example where the values differ
    ("For example at x = 3: expected 1.5, got 3."); and ``probe``, which of the check's
    probes showed it; and ``error``, for an answer that raised, the exception as
    "TypeName: message", which hooks read to name the cause (never the hint's words).
    :attr:`message` puts hint, point and probe together, and :meth:`explained` adds an
    exercise's reading after a structural hint; nothing else edits a hint.
    """

    def __init__(
        self,
        hint: str,
        mistake: str = "other",
        *,
        point: str = "",
        probe: str = "",
        error: str = "",
    ):
        if not mistakes.is_known(mistake):
            raise ValueError(f"unregistered mistake code {mistake!r}")
        super().__init__(hint)
        self.hint = hint
        self.mistake = mistake
        self.point = point
        self.probe = probe
        self.error = error

    def about(self, probe: str) -> Wrong:
        """The same verdict, saying which probe showed it (when there were several)."""
        if not probe or self.probe:
            return self
        return Wrong(self.hint, self.mistake, point=self.point, probe=probe, error=self.error)

    def explained(self, why: str, mistake: str) -> Wrong:
        """The verdict read in the exercise's words: its hint followed by ``why``, under the
        ``mistake`` that reading names (a harness's ``raised`` hook, lesson 05)."""
        hint = f"{self.hint.rstrip('.')}. {why}"
        return Wrong(hint, mistake, point=self.point, probe=self.probe, error=self.error)

    @property
    def message(self) -> str:
        text = " ".join(part for part in (self.hint, self.point) if part)
        return f"{text} (Seen with {self.probe}.)" if self.probe else text


class NotAttempted(Exception):
    """Raised by an evaluator when the stub has not been replaced yet."""


class ExerciseNotSolved(AssertionError):
    """Raised in strict mode when a check is not *correct*."""


NOT_ATTEMPTED_MESSAGE = (
    "Replace the line `raise NotImplementedError()` with your code, run that cell, "
    "then run this check again."
)


def strict_mode() -> bool:
    return os.environ.get(STRICT_ENVIRONMENT_VARIABLE, "") not in ("", "0", "false")


@contextlib.contextmanager
def strict_checks():
    """Within the block, every check raises unless *correct* (autograders use this)."""
    previous = os.environ.get(STRICT_ENVIRONMENT_VARIABLE)
    os.environ[STRICT_ENVIRONMENT_VARIABLE] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(STRICT_ENVIRONMENT_VARIABLE, None)
        else:
            os.environ[STRICT_ENVIRONMENT_VARIABLE] = previous


def first_line(error: BaseException, limit: int = 160) -> str:
    """The gist of an exception's message: its first line, without TF's op prefix."""
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    if line.startswith("{{function_node") and "}}" in line:
        line = line.split("}}", 1)[1].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def evaluate(exercise: str, title: str, evaluator, *answers) -> CheckResult:
    """Run ``evaluator(*answers)`` and turn its outcome into a :class:`CheckResult`."""
    try:
        praise = evaluator(*answers)
    except NotAttempted:
        return CheckResult(
            exercise, title, Status.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE, "not_attempted"
        )
    except Wrong as wrong:
        return CheckResult(exercise, title, Status.WRONG, wrong.message, wrong.mistake)
    except Exception as error:  # a surprise in the checker itself: say so plainly
        return CheckResult(
            exercise,
            title,
            Status.WRONG,
            f"The check could not judge this answer ({type(error).__name__}: "
            f"{first_line(error)}). Compare your code with the exercise text.",
            "unjudgeable",
        )
    return CheckResult(exercise, title, Status.CORRECT, praise or "", None)


def _report(result: CheckResult, seconds: list[float]) -> None:
    path = os.environ.get(REPORT_ENVIRONMENT_VARIABLE)
    if not path:
        return
    record = dict(
        asdict(result), status=result.status.value, seconds=[round(s, 6) for s in seconds]
    )
    try:
        with open(path, "a", encoding="utf-8") as report:
            report.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OSError:
        pass  # a report that cannot be written must never break a lesson


def _repeats() -> int:
    if not os.environ.get(REPORT_ENVIRONMENT_VARIABLE):
        return 1
    try:
        return max(1, int(os.environ.get(REPEAT_ENVIRONMENT_VARIABLE, "1")))
    except ValueError:
        return 1


def exercise(number: str, title: str):
    """Turn an evaluator into a check that prints its verdict (and raises if strict).

    The check keeps the evaluator as ``check.evaluate(*answers) -> CheckResult``
    for unit tests.
    """

    def decorate(evaluator):
        @functools.wraps(evaluator)
        def check(*answers) -> None:
            seconds, results = [], []
            for _ in range(_repeats()):
                started = time.perf_counter()
                results.append(evaluate(number, title, evaluator, *answers))
                seconds.append(time.perf_counter() - started)
            result = results[0]
            print(result)
            _report(result, seconds)
            if strict_mode() and result.status is not Status.CORRECT:
                raise ExerciseNotSolved(str(result))

        check.evaluate = functools.partial(evaluate, number, title, evaluator)
        check.exercise = number
        check.title = title
        return check

    return decorate
