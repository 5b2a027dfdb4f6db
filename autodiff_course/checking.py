"""The exercise checker (introduced in lesson 00, used from lesson 01 on).

Each check reports exactly one of three verdicts:

* **correct**;
* **not yet**, with a hint that names the likely mistake (forgot the upstream
  ``dy``, returned a NumPy value, wrong shape, ...);
* **not attempted**, while the learner's stub still raises ``NotImplementedError``.

In a lesson a check only prints, so every lesson runs top to bottom whatever the
learner typed. In *strict* mode (``AUTODIFF_COURSE_STRICT=1``, set by the test
suite for ``solutions/``) anything but *correct* raises :class:`ExerciseNotSolved`.

Checks compare with independent references (closed forms in float64, finite
differences), never with the code path the exercise asks for. A check module
writes one *evaluator* per exercise: a function that calls the answer through
:func:`call_answer`, converts what came back with :func:`as_values`, and either
returns a message of praise or raises :class:`Wrong` with a hint.
"""

from __future__ import annotations

import enum
import functools
import os
from dataclasses import dataclass

import numpy as np

STRICT_ENVIRONMENT_VARIABLE = "AUTODIFF_COURSE_STRICT"


class Status(enum.Enum):
    CORRECT = "correct"
    WRONG = "not yet"
    NOT_ATTEMPTED = "not attempted yet"


_ICONS = {Status.CORRECT: "✅", Status.WRONG: "❌", Status.NOT_ATTEMPTED: "⏳"}


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one exercise; ``mistake`` names the detected mistake."""

    exercise: str
    title: str
    status: Status
    message: str
    mistake: str | None = None

    def __str__(self) -> str:
        head = f"{_ICONS[self.status]} Exercise {self.exercise} ({self.title}): {self.status.value}."
        return f"{head} {self.message}".rstrip()


class Wrong(Exception):
    """Raised by an evaluator: the answer is wrong; ``hint`` says why."""

    def __init__(self, hint: str, mistake: str = "other"):
        super().__init__(hint)
        self.hint = hint
        self.mistake = mistake


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


def _first_line(error: BaseException, limit: int = 160) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    # TensorFlow errors start with a long op description in braces; keep the gist.
    if line.startswith("{{function_node") and "}}" in line:
        line = line.split("}}", 1)[1].strip()
    return line if len(line) <= limit else line[: limit - 3] + "..."


def evaluate(exercise: str, title: str, evaluator, *answers) -> CheckResult:
    """Run ``evaluator(*answers)`` and turn its outcome into a :class:`CheckResult`."""
    try:
        praise = evaluator(*answers)
    except NotAttempted:
        return CheckResult(exercise, title, Status.NOT_ATTEMPTED, NOT_ATTEMPTED_MESSAGE,
                           "not_attempted")
    except Wrong as wrong:
        return CheckResult(exercise, title, Status.WRONG, wrong.hint, wrong.mistake)
    except Exception as error:  # a surprise in the checker itself: say so plainly
        return CheckResult(
            exercise, title, Status.WRONG,
            f"The check could not judge this answer ({type(error).__name__}: "
            f"{_first_line(error)}). Compare your code with the exercise text.",
            "unjudgeable",
        )
    return CheckResult(exercise, title, Status.CORRECT, praise or "", None)


def exercise(number: str, title: str):
    """Turn an evaluator into a check that prints its verdict (and raises if strict).

    The check keeps the evaluator as ``check.evaluate(*answers) -> CheckResult``
    for unit tests.
    """

    def decorate(evaluator):
        @functools.wraps(evaluator)
        def check(*answers) -> None:
            result = evaluate(number, title, evaluator, *answers)
            print(result)
            if strict_mode() and result.status is not Status.CORRECT:
                raise ExerciseNotSolved(str(result))

        check.evaluate = functools.partial(evaluate, number, title, evaluator)
        check.exercise = number
        check.title = title
        return check

    return decorate


def call_answer(answer, *args, name: str | None = None):
    """Call the learner's function; translate what can go wrong into verdicts."""
    label = name or f"`{getattr(answer, '__name__', 'your function')}`"
    if answer is None:
        raise Wrong("The check received None instead of your function: pass "
                    "the function itself, e.g. check.this(my_function).", "not_callable")
    if not callable(answer):
        raise Wrong(f"The check expects a function, but received a "
                    f"{type(answer).__name__}. Pass the function itself, without "
                    "calling it.", "not_callable")
    try:
        return answer(*args)
    except NotImplementedError:
        raise NotAttempted() from None
    except Exception as error:
        raise Wrong(f"{label} raised {type(error).__name__}: {_first_line(error)}",
                    "raised") from None


FORGOT_DECORATOR_HINT = (
    "Your function returned a pair (output, gradient function) instead of a tensor: "
    "the `@tf.custom_gradient` line above `def` is missing. The decorator is what "
    "turns that pair into an output whose backward rule is your function.")


def forgot_custom_gradient_decorator(value) -> bool:
    """True for the ``(output, grad_fn)`` pair an undecorated custom gradient returns."""
    return isinstance(value, tuple) and len(value) == 2 and callable(value[1])


def as_values(value, *, name: str = "Your function", shape=None, dtype=None,
              require_tensor: bool = True) -> np.ndarray:
    """Check a returned value's kind, shape and dtype; return it as float64 NumPy.

    ``shape`` is the expected shape as a tuple; ``dtype`` a ``tf.DType``.
    """
    import tensorflow as tf

    if value is None:
        raise Wrong(f"{name} returned None. Did you forget `return`? (If None came "
                    f"from `tape.gradient`, the tape did not connect the target to "
                    f"the source.)", "returned_none")
    if isinstance(value, (list, tuple)) and require_tensor:
        raise Wrong(f"{name} returned a Python {type(value).__name__}; return one "
                    f"tensor (tf.stack or tf.convert_to_tensor can combine values).",
                    "returned_list")
    if require_tensor and not isinstance(value, (tf.Tensor, tf.Variable)):
        if isinstance(value, (np.ndarray, np.generic, float, int)):
            raise Wrong(f"{name} returned a NumPy or Python number "
                        f"({type(value).__name__}), not a tf.Tensor. Keep the "
                        f"computation in TensorFlow ops (no `.numpy()`, no `np.` "
                        f"functions) so the tape can differentiate it.",
                        "returned_numpy")
        raise Wrong(f"{name} returned a {type(value).__name__}; a tf.Tensor was "
                    f"expected.", "wrong_type")
    if isinstance(value, (tf.Tensor, tf.Variable)):
        if dtype is not None and value.dtype != dtype:
            raise Wrong(f"{name} returned dtype {value.dtype.name}, expected "
                        f"{tf.as_dtype(dtype).name}. Keep the input's dtype "
                        f"(mixing in float64 constants or integers changes it).",
                        "wrong_dtype")
        array = value.numpy()
    else:
        try:
            array = np.asarray(value)
        except Exception:
            raise Wrong(f"{name} returned a {type(value).__name__}, which is not a "
                        f"number or an array.", "wrong_type") from None
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise Wrong(f"{name} returned shape {tuple(array.shape)}, but the answer has "
                    f"shape {tuple(shape)}.", "wrong_shape")
    if not np.issubdtype(array.dtype, np.number):
        raise Wrong(f"{name} returned values of type {array.dtype}, not numbers.",
                    "wrong_type")
    return array.astype(np.float64)


def matches(got: np.ndarray, expected, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    """True when ``got`` equals ``expected`` within tolerance (``nan`` never matches)."""
    expected = np.asarray(expected, dtype=np.float64)
    if np.shape(got) != np.shape(expected):
        return False
    return bool(np.all(np.isfinite(got)) and np.allclose(got, expected, rtol=rtol, atol=atol))


def diagnose_mistake(got: np.ndarray, known_mistakes, rtol: float = 1e-4,
                     atol: float = 1e-6) -> None:
    """Raise :class:`Wrong` with the hint of the first known mistake ``got`` matches.

    ``known_mistakes`` is a list of ``(code, hint, values_that_mistake_gives)``.
    """
    for code, hint, values in known_mistakes:
        if matches(got, values, rtol=rtol, atol=atol):
            raise Wrong(hint, code)


def describe_difference(got: np.ndarray, expected, at=None) -> str:
    """A short 'at x=..., expected ..., got ...' sentence for the worst point."""
    expected = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        error = np.abs(np.nan_to_num(got, nan=np.inf) - expected).reshape(-1)
    worst = int(np.argmax(error))
    where = ""
    if at is not None:
        point = np.asarray(at, dtype=np.float64).reshape(-1)
        if point.size == error.size:
            where = f" at x = {point[worst]:g}"
    return (f"For example{where}: expected {expected.reshape(-1)[worst]:.6g}, "
            f"got {got.reshape(-1)[worst]:.6g}.")
