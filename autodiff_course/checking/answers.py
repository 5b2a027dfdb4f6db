"""Running a learner's code and reading what it returned (used by every check).

Whatever an answer does, the check answers in plain words:

* an exception from the learner's code is reported as theirs, with the line of
  their own code where it happened (never a traceback from inside TensorFlow);
* an answer still running after :data:`TIME_LIMIT_SECONDS` is stopped and
  reported (on platforms with ``SIGALRM``, in the main thread: a Jupyter kernel);
* returned values of any type (None, tuples, NumPy arrays, Python scalars,
  complex numbers, ragged or sparse tensors, strings) are converted by
  :func:`as_values`, or turned into a hint that says what came back instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import sysconfig
import threading
import traceback
from pathlib import Path

import numpy as np

from . import settings
from .verdicts import NotAttempted
from .verdicts import Wrong
from .verdicts import first_line

TIME_LIMIT_SECONDS = float(os.environ.get("AUTODIFF_COURSE_TIME_LIMIT", "20"))

_LIBRARY_FOLDERS = tuple(
    str(Path(p).resolve())
    for p in {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    | {str(Path(__file__).resolve().parent.parent)}
)


# The codes of verdicts that stand for an exception raised by the learner's code.
LEARNER_ERRORS = ("raised", "float32_not_float64", "integer_mixed_in", "python_scalar")


class AnswerTooSlow(BaseException):
    """Raised inside a learner's code when the time limit passes.

    A BaseException, so that a learner's ``except Exception`` cannot swallow it.
    """


def _is_learner_frame(filename: str) -> bool:
    if filename.startswith("<frozen"):
        return False
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return True
    return not resolved.startswith(_LIBRARY_FOLDERS)


def where_in_learner_code(error: BaseException) -> str:
    """' (line N of your code: `...`)' for the last frame of the learner's own code."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if _is_learner_frame(frame.filename)
    ]
    if not frames:
        return ""
    frame = frames[-1]
    line = (frame.line or "").strip()
    shown = f": `{line}`" if line else ""
    return f" (line {frame.lineno} of your code{shown})"


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`AnswerTooSlow` in the block after ``seconds`` (where possible)."""
    usable = (
        seconds
        and seconds > 0
        and hasattr(signal, "SIGALRM")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def stop(*_):
        raise AnswerTooSlow()

    previous_handler = signal.signal(signal.SIGALRM, stop)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *previous_timer)


@contextlib.contextmanager
def learner_code(label: str = "Your function"):
    """Run the block as learner code: its failures become verdicts, never tracebacks.

    ``label`` names the code in the message, e.g. "`slope`" or "Your gradient function".
    The block may run for :data:`TIME_LIMIT_SECONDS` (read when it starts). A
    ``sys.exit()`` or ``KeyboardInterrupt`` inside it is a verdict too, and so is a
    global setting it changed (:mod:`.settings`; the setting is put back).
    """
    seconds = TIME_LIMIT_SECONDS
    changed: list = []
    try:
        with settings.kept(changed), time_limit(seconds):
            yield
    except NotImplementedError:
        raise NotAttempted() from None
    except AnswerTooSlow:
        raise Wrong(
            f"{label} was still running after {seconds:g} s, so the check "
            f"stopped it. Look for a loop that never ends (a `while` whose "
            f"condition never changes), or work on whole tensors instead of "
            f"one element at a time.",
            "too_slow",
        ) from None
    except RecursionError as error:
        raise Wrong(
            f"{label} calls itself without end (RecursionError)"
            f"{where_in_learner_code(error)}. Did a function call itself "
            f"instead of the TensorFlow op of the same name?",
            "raised",
        ) from None
    except (Wrong, NotAttempted):
        raise
    except SystemExit as error:
        raise Wrong(
            f"{label} called sys.exit() (or exit(), quit()){where_in_learner_code(error)}, "
            "which would stop the whole notebook. A function hands back its result with "
            "`return`; to report a problem, raise an exception.",
            "exited",
        ) from None
    except KeyboardInterrupt as error:
        raise Wrong(
            f"{label} was interrupted (KeyboardInterrupt){where_in_learner_code(error)}. "
            "If it raised that itself, raise an ordinary exception instead; if you "
            "interrupted the kernel, run the check again.",
            "interrupted",
        ) from None
    except Exception as error:
        message = (
            f"{label} raised {type(error).__name__}: {first_line(error)}"
            f"{where_in_learner_code(error)}"
        )
        wrong = _dtype_clash(message) or Wrong(message, "raised")
        wrong.error = f"{type(error).__name__}: {error}"
        raise wrong from None
    if changed:
        raise Wrong(settings.changed_hint(label, changed), "changed_global_state")


_FLOAT_CLASH = re.compile(
    r"(double tensor but is a float tensor|float tensor but is a "
    r"double tensor|float64 != tf\.float32|float32 != tf\.float64|"
    r"dtype float32.*float64|dtype float64.*float32|"
    r"DT_FLOAT.*DT_DOUBLE|DT_DOUBLE.*DT_FLOAT|"
    r"expected float but got double|expected double but got float)",
    re.IGNORECASE,
)
_INTEGER_CLASH = re.compile(r"(int32|int64)")
_CONVERSION_CLASH = re.compile(r"Tensor conversion requested dtype|Expected tensor .* with dtype")


def _dtype_clash(message: str) -> Wrong | None:
    """A plain-words verdict for TensorFlow's refusal to mix dtypes, or for float() of
    a tensor of several numbers, or None."""
    if _FLOAT_CLASH.search(message):
        return Wrong(
            message + ". The check also calls your function with float64 "
            "tensors, and a float32 value met them: write constants as plain "
            "Python numbers (1.0) or with dtype=x.dtype, and cast with "
            "tf.cast(..., x.dtype).",
            "float32_not_float64",
        )
    if "converted to Python scalars" in message:
        return Wrong(
            message + ". float(), int() and the math module take one number, but the check "
            "hands your function tensors of any shape: write the formula with TensorFlow "
            "ops (tf.exp, tf.math.log, ...), which work entry by entry and return a tensor.",
            "python_scalar",
        )
    if "IndexedSlices" in message and "unsupported type" in message:
        return Wrong(
            message + ". tf.convert_to_tensor turns one IndexedSlices into a dense tensor, but "
            "not a list holding one: tape.gradient returns a list when its sources are a list "
            "(such as layer.trainable_variables). Take the one gradient out of the list "
            "first, or pass the variable itself as the source, then convert it.",
            "wrong_structure",
        )
    if _CONVERSION_CLASH.search(message):
        return Wrong(
            message + ". tf.convert_to_tensor(x, dtype=...) (and tf.constant) never changes "
            "the dtype of a tensor: given a tensor of another dtype, it raises. Change a dtype "
            "with tf.cast(x, dtype).",
            "convert_not_cast",
        )
    if _INTEGER_CLASH.search(message) and ("float" in message or "double" in message):
        return Wrong(
            message + ". tf.size and tf.shape give integer tensors, and "
            "TensorFlow does not mix integers with floats: convert first, "
            "e.g. tf.cast(tf.size(x), x.dtype).",
            "integer_mixed_in",
        )
    return None


def _require_callable(answer) -> None:
    if answer is None:
        raise Wrong(
            "The check received None instead of your function: pass "
            "the function itself, e.g. check.this(my_function).",
            "not_callable",
        )
    if not callable(answer):
        raise Wrong(
            f"The check expects a function, but received a "
            f"{type(answer).__name__}. Pass your function itself, without "
            "calling it.",
            "not_callable",
        )


def call_answer(answer, *args, name: str | None = None, **kwargs):
    """Call the learner's function; translate what can go wrong into verdicts."""
    _require_callable(answer)
    with learner_code(name or f"`{getattr(answer, '__name__', 'your function')}`"):
        return answer(*args, **kwargs)


FORGOT_DECORATOR_HINT = (
    "Your function returned a pair (output, gradient function) instead of a tensor: "
    "the `@tf.custom_gradient` line above `def` is missing. The decorator is what "
    "turns that pair into an output whose backward rule is your function."
)


def forgot_custom_gradient_decorator(value) -> bool:
    """True for the ``(output, grad_fn)`` pair an undecorated custom gradient returns."""
    return isinstance(value, tuple) and len(value) == 2 and callable(value[1])


def _kind(value) -> str:
    """A plain-words name for a value's type."""
    name = type(value).__name__
    module = type(value).__module__ or ""
    if module.startswith("tensorflow"):
        return f"tf.{name}"
    if module.startswith("numpy"):
        return f"NumPy {name}"
    return name


def shape_of(value):
    """The shape of what an answer returned, as a tuple, or None when it has none that
    can be read (no ``shape`` attribute, as for a Python number or a list, or an exotic
    one): a check tests for a telling shape first and leaves the rest to :func:`as_values`."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(shape)
    except Exception:  # noqa: BLE001 - an exotic object: as_values names it
        return None


def as_values(
    value, *, name: str = "Your function", shape=None, dtype=None, require_tensor: bool = True
) -> np.ndarray:
    """Check a returned value's kind, shape and dtype; return it as float64 NumPy.

    ``shape`` is the expected shape as a tuple; ``dtype`` a ``tf.DType`` or NumPy
    dtype, which the value must have exactly (a float64 input gives a float64 result).
    With ``require_tensor=False`` NumPy arrays and Python numbers are welcome.
    """
    import tensorflow as tf

    if value is None:
        raise Wrong(
            f"{name} returned None. Did you forget `return`? (If None came "
            f"from `tape.gradient`, the tape did not connect the target to "
            f"the source.)",
            "returned_none",
        )
    if isinstance(value, (str, bytes)):
        raise Wrong(f"{name} returned a string ({value!r:.40}), not numbers.", "wrong_type")
    if forgot_custom_gradient_decorator(value):
        raise Wrong(FORGOT_DECORATOR_HINT, "forgot_decorator")
    if isinstance(value, tf.IndexedSlices):
        value = tf.convert_to_tensor(value)
    if isinstance(value, (tf.RaggedTensor, tf.SparseTensor)):
        raise Wrong(
            f"{name} returned a {_kind(value)}; an ordinary dense tf.Tensor "
            f"was expected (tf.convert_to_tensor or .to_tensor() makes one).",
            "wrong_type",
        )
    if isinstance(value, (list, tuple)) and require_tensor:
        raise Wrong(
            f"{name} returned a Python {type(value).__name__}; return one "
            f"tensor (tf.stack or tf.convert_to_tensor can combine values).",
            "returned_list",
        )
    is_tensor = isinstance(value, (tf.Tensor, tf.Variable))
    if require_tensor and not is_tensor:
        if isinstance(value, (np.ndarray, np.generic, float, int, complex)):
            raise Wrong(
                f"{name} returned a NumPy or Python number "
                f"({_kind(value)}), not a tf.Tensor. Keep the "
                f"computation in TensorFlow ops (no `.numpy()`, no `np.` "
                f"functions) so the tape can differentiate it.",
                "returned_numpy",
            )
        raise Wrong(f"{name} returned a {_kind(value)}; a tf.Tensor was expected.", "wrong_type")
    if is_tensor:
        if value.dtype.is_complex:
            raise Wrong(
                f"{name} returned complex numbers ({value.dtype.name}); the "
                f"answer is real. Look for a complex constant or tf.complex.",
                "complex_values",
            )
        if dtype is not None and value.dtype != tf.as_dtype(dtype):
            raise _dtype_wrong(
                name,
                value.dtype.name,
                tf.as_dtype(dtype).name,
                casts="somewhere a float32 constant or cast (tf.constant(...), tf.cast(..., "
                "tf.float32), dtype=tf.float32)",
                advice="Build constants with dtype=x.dtype.",
                why=" (mixing in other constants or integers changes it)",
            )
        if not (value.dtype.is_floating or value.dtype.is_integer or value.dtype.is_bool):
            raise Wrong(
                f"{name} returned a tensor of {value.dtype.name}, not numbers.", "wrong_type"
            )
        array = value.numpy()
    else:
        try:
            with np.errstate(all="ignore"):
                array = np.asarray(value)
        except Exception:
            raise Wrong(
                f"{name} returned a {_kind(value)}, which is not a number or an array.",
                "wrong_type",
            ) from None
        if np.iscomplexobj(array):
            raise Wrong(f"{name} returned complex numbers; the answer is real.", "complex_values")
        # A Python number has no dtype of its own: float(loss) is a float32 loss too.
        plain = isinstance(value, (int, float)) and not isinstance(value, np.generic)
        wanted = None if dtype is None or plain else np.dtype(tf.as_dtype(dtype).as_numpy_dtype)
        if wanted is not None and array.dtype != wanted:
            raise _dtype_wrong(
                name,
                str(array.dtype),
                str(wanted),
                casts="a float32 constant or cast (np.float32(...), dtype=np.float32, "
                ".astype(np.float32))",
                advice="Keep the input's dtype.",
            )
    if shape is not None and tuple(array.shape) != tuple(shape):
        raise shape_wrong(name, tuple(array.shape), tuple(shape))
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.number):
        raise Wrong(f"{name} returned values of type {array.dtype}, not numbers.", "wrong_type")
    return array.astype(np.float64)


def _dtype_wrong(name: str, got: str, wanted: str, *, casts: str, advice: str, why: str = ""):
    """The :class:`Wrong` for a result whose dtype is not the input's (lesson 01 on, via
    :func:`as_values`): float32 for float64 blamed on the ``casts`` that lose digits,
    followed by ``advice``; any other dtype named as it is (``why`` adds a cause)."""
    if wanted == "float64" and got == "float32":
        return Wrong(
            f"{name} returned float32 for a float64 input: {casts} lost half the digits. {advice}",
            "float32_not_float64",
        )
    return Wrong(
        f"{name} returned dtype {got}, expected {wanted}. Keep the input's dtype{why}.",
        "wrong_dtype",
    )


def _squeezed(shape) -> tuple:
    return tuple(size for size in shape if size != 1)


def shape_wrong(name: str, got: tuple, expected: tuple) -> Wrong:
    """The verdict on a result of shape ``got`` where ``expected`` belongs, in words."""
    squeezed = _squeezed(got) == _squeezed(expected) and got != expected
    return Wrong(shape_hint(name, got, expected), "broadcast_shape" if squeezed else "wrong_shape")


def shape_hint(name: str, got: tuple, expected: tuple) -> str:
    """A shape mismatch in words, naming the common broadcasting slips."""
    text = f"{name} returned shape {got}, but the answer has shape {expected}."
    if _squeezed(got) == _squeezed(expected) and len(got) < len(expected):
        return (
            text + " The numbers may be right, but an axis of size 1 was dropped: tf.squeeze "
            "(it drops every axis of size 1, a batch of one included), an index such as [0], "
            "or reshape(-1). Keep every axis, even one of size 1: leave out the squeeze."
        )
    if _squeezed(got) == _squeezed(expected):
        return (
            text + " The numbers may be right, but an axis of size 1 was added or "
            "kept (keepdims=True, x[:, None], a (n, 1) column): reshape to "
            f"{expected}."
        )
    if len(got) == 2 and len(expected) == 2 and got == expected[::-1]:
        return text + " It is transposed: rows and columns are swapped."
    if got == () and expected != ():
        return (
            text + " A single number came back: was everything summed or "
            "averaged (a sum or mean without an axis)?"
        )
    if expected == () and got != ():
        return text + " The answer is one number; reduce your result to a scalar."
    if np.prod(got, dtype=np.int64) == np.prod(expected, dtype=np.int64):
        return text + " The sizes agree, so the axes are in another order or reshaped."
    return text


if sys.platform == "win32":  # pragma: no cover - documented limitation
    __doc__ += "\nOn Windows there is no SIGALRM: a slow answer is not stopped.\n"
