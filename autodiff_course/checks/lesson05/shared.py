"""What the checks of lesson 05 share: the probe's dtypes and tolerances, calling an
answer while watching how it differentiates, reading what it returned, explaining a
None or a Jacobian of zeros, and the dense tanh layer of exercises 5.2 and 5.6."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import matches
from ...checking import none_hint
from ...checking import observed_call_keeping_errors
from ...checking import shape_hint
from ...checking import why_none


def _tf():
    import tensorflow as tf

    return tf


def _dtypes():
    tf = _tf()
    return tf.float32, tf.float64


def _tolerance(dtype, expected) -> dict:
    """Per-point relative tolerance, plus an absolute one scaled to the values.

    float32 results are judged to 2e-5 of themselves, float64 results to 1e-12:
    a finite difference or a float32 detour cannot get that close in float64.
    Entries that are exactly zero in the reference get a tiny absolute slack.
    """
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 1.0
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    if dtype == _tf().float64:
        return {"rtol": 1e-12, "atol": 1e-14 * scale}
    return {"rtol": 2e-5, "atol": 2e-6 * scale}


def _numbers(value, dtype, name: str = "Your function") -> np.ndarray:
    """The returned tensor as float64 NumPy, once its kind and dtype are right.

    The shape is judged by each check, so that a wrong shape gets a hint that
    names the layout it came from.
    """
    return as_values(value, name=name, dtype=dtype)


def _require_shape(numbers: np.ndarray, want: tuple, name: str = "Your function") -> None:
    if tuple(numbers.shape) != tuple(want):
        shape = tuple(numbers.shape)
        squeezed = tuple(d for d in shape if d != 1) == tuple(d for d in want if d != 1)
        raise Wrong(
            shape_hint(name, shape, tuple(want)), "broadcast_shape" if squeezed else "wrong_shape"
        )


def _close(numbers: np.ndarray, expected, dtype) -> bool:
    """Loosely equal: for recognising a layout or a mistake, never for accepting."""
    expected = np.asarray(expected, dtype=np.float64)
    if numbers.shape != expected.shape:
        return False
    tol = _tolerance(dtype, expected)
    return matches(numbers, expected, rtol=max(tol["rtol"], 1e-4), atol=tol["atol"] * 10)


def _tensor(values, dtype):
    return _tf().constant(np.asarray(values), dtype=dtype)


def _used_autodiff(log) -> bool:
    return log.used_any_autodiff


def _call(answer, *args):
    """Call the answer while observing it; a raised error comes back after the log."""
    return observed_call_keeping_errors(answer, *args)


def _explain_none_or_error(log, wrong, *, probe: str = "x"):
    """A raised error or a None, explained from what the tapes saw where possible."""
    explained = why_none(log, probe=probe)
    if explained is not None:
        code, hint = explained
        if code == "watched_after_use":
            # The log cannot tell a late watch from a target computed after the block.
            code, hint = (
                "no_gradient",
                (
                    f"The tape returned None for {probe} although it watches it: it recorded "
                    f"no path from {probe} to the target. Either an operation on that path ran "
                    f"outside the tape's `with` block (a tf.reduce_mean or a slice written "
                    f"inside the gradient call, after the block closed), or tape.watch({probe}) "
                    f"came after {probe} was used. Compute the whole target inside the block, "
                    f"after the watch."
                ),
            )
        raise Wrong(hint, code)
    if wrong is not None:
        raise wrong


def _returned(value, log, wrong, dtype) -> np.ndarray:
    """What the answer returned, as float64, once a raised error or a None is explained."""
    if wrong is not None or value is None:
        _explain_none_or_error(log, wrong)
    return _numbers(value, dtype)


def _answer(answer, dtype, *args):
    """``(numbers, log)``: what ``answer(*args)`` returned, as float64 (a raised error
    or a None explained first), and how it differentiated."""
    value, log, wrong = _call(answer, *args)
    return _returned(value, log, wrong, dtype), log


def _dense_tanh(matrix, offset, dtype):
    """``f(x) = tanh(A x + c)`` for a vector x, in TensorFlow."""
    tf = _tf()
    a, c = _tensor(matrix, dtype), _tensor(offset, dtype)

    def f(x):
        return tf.tanh(tf.linalg.matvec(a, x) + c)

    return f


def _dense_tanh_jacobian(matrix, offset, x):
    y = np.tanh(matrix @ x + offset)
    return (1.0 - y**2)[:, None] * matrix


def _dtype_clash(text: str) -> bool:
    """An error message about float32 meeting float64."""
    return ("double" in text and "float" in text) or ("float64" in text and "float32" in text)


def _zeros_hint(log, what: str, probe: str = "x"):
    """Why a Jacobian call came back as zeros: the cause, from what the tapes saw."""
    calls = [c for c in log.calls if c.kind in ("jacobian", "batch_jacobian")]
    if not calls:
        return None
    call = calls[-1]
    tape = call.tape
    earlier = [c for c in log.calls if c.tape is not tape and c.time < call.time]
    outside = [c for c in earlier if tape.exited is not None and c.time > tape.exited]
    lead = (
        f"All zeros: {what} returns zeros, not None, when its target is not "
        f"connected to its source, so the mistake does not stop your code. "
    )
    if outside:
        return "gradient_outside_tape", lead + none_hint("gradient_outside_tape", probe)
    source = call.sources[0] if call.sources else None
    if source is not None and not tape.was_watched(source):
        code = "outer_not_watching" if earlier else "unwatched_constant"
        return code, lead + none_hint(code, probe)
    return None


def _raise_if_zeros(numbers, log, what: str = "batch_jacobian") -> None:
    """A result of zeros only: name its cause when the tapes' record shows one."""
    if np.all(numbers == 0.0):
        found = _zeros_hint(log, what)
        if found is not None:
            raise Wrong(found[1], found[0])
