"""What the checks of lesson 02 share: the lesson's names for the causes of a
None, the answer run on the check's own tape, the verdicts that follow a wrong
value, and the linear-regression probes of exercises 2.1 and 2.3."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ...checking import FLOAT32
from ...checking import Run
from ...checking import Wrong
from ...checking import describe_difference
from ...checking import explain_difference
from ...checking import generic_mistake
from ...checking import matches
from ...checking import raise_if_partly_cut
from ...checking import run_answer
from ...checking import signed
from ...checking import tolerance_for
from ...checking.provenance import hint as cause_hint

# How the lesson (sections 5 and 6) names each cause of a None.
CATALOGUE = {
    "unwatched_constant": "Cause 1, an unwatched constant",
    "integer_dtype": "Cause 2, an integer dtype",
    "watched_after_use": "Cause 3, watching after use",
    "numpy_detour": "Cause 4, a detour through NumPy",
    "variable_replaced": "Cause 5, a variable replaced by a tensor",
    "stateful_assign": "Cause 6, a stateful assign in the chain",
    "non_differentiable_op": "Cause 7, an operation without a gradient",
    "zeros_hide_none": "unconnected_gradients=ZERO hides a None",
    "unwatched_variable": "A variable the tape does not watch (section 1)",
    "computed_outside_tape": "Outside the recording (section 1)",
    "source_not_used": "A source that takes no part",
    "no_gradient": "No recorded path",
}


def _named(code: str, text: str) -> str:
    """Prefix a hint with the lesson's name for its cause."""
    return f"{CATALOGUE[code]}. {text}" if code in CATALOGUE else text


def _hint(code: str, probe: str = "x", **details) -> str:
    return _named(code, cause_hint(code, probe, **details))


def _run(answer, *args, name: str | None = None) -> Run:
    return run_answer(answer, *args, name=name, name_cause=_named)


def _raise_difference(
    run: Run,
    got,
    expected,
    *,
    label: str,
    probe: str,
    what: str,
    summary: str,
    tolerance: dict,
    batch=None,
    at=None,
) -> None:
    """Raise the verdict on values that differ: a generic numerical pattern that fits
    exactly, else weaker evidence of a cut path, else the difference itself (opened
    with ``summary``), each opened with the probe's ``label``."""
    found = generic_mistake(got, expected, batch=batch, what=what, **tolerance)
    if found is not None:
        code, hint = found
        raise _labelled(
            label, Wrong(f"{hint} {describe_difference(got, expected, at, **tolerance)}", code)
        )
    raise_if_partly_cut(run, probe=probe, prefix=f"{label}: ", strong=False)
    explained = explain_difference(
        got, expected, at=at, batch=batch, what=what, summary=summary, **tolerance
    )
    raise _labelled(label, explained)


def _labelled(label: str, wrong: Wrong) -> Wrong:
    """The same verdict, opened with the probe's description."""
    if wrong.hint.startswith(label):
        return wrong
    return Wrong(
        f"{label}: {wrong.hint[0].lower()}{wrong.hint[1:]}"
        if not wrong.hint.startswith(("For ", "With "))
        else wrong.hint,
        wrong.mistake,
    )


def _raise_if_float32_inside(run: Run, got, expected, dtype, label: str) -> None:
    """float64 in and out, but float32's precision: say so when a float32 step ran."""
    if getattr(dtype, "name", "") != "float64" or not matches(
        got, expected, rtol=1e-4, atol=FLOAT32.atol
    ):
        return
    if run.provenance.narrowed_to_float32():
        raise Wrong(
            f"{label}: your result is float64, but only as precise as float32: "
            "part of the computation ran in float32 (a tf.cast(..., tf.float32), "
            "or a constant made with dtype=tf.float32, converted back "
            "afterwards). Keep every step in the input's dtype.",
            "float32_not_float64",
        )


def _tolerance(dtype, terms: float | None = None) -> dict:
    """The dtype's tolerance as keyword arguments. ``terms``, the largest term that a
    sum in the answer adds up, widens the absolute part to a few units of the dtype's
    epsilon times it: where terms cancel, that is all a correct answer can promise."""
    tolerance = asdict(tolerance_for(dtype))
    if terms is not None:
        epsilon = float(np.finfo(np.dtype(getattr(dtype, "name", dtype))).eps)
        tolerance["atol"] = max(tolerance["atol"], 8 * epsilon * float(terms))
    return tolerance


def _float32_for_float64(name: str, value, dtype, fix: str) -> None:
    """float32 back for float64 in: say where the digits went."""
    import tensorflow as tf

    if (
        isinstance(value, (tf.Tensor, tf.Variable))
        and dtype == tf.float64
        and value.dtype == tf.float32
    ):
        raise Wrong(f"{name} is float32 for a float64 input: {fix}", "float32_not_float64")


def _show(array) -> str:
    array = np.asarray(array)
    if array.ndim == 0:
        return f"{float(array):g}"
    return "[" + ", ".join(f"{float(v):g}" for v in array.ravel()) + "]"


def _linear_data(rng, n: int, k: int):
    """x, y, w, b with residuals x w + b - y of both signs, some below 1 in size and
    some above (so squared, absolute and Huber-like losses all differ)."""
    x = signed(rng, (n, k), 0.2, 2.0)
    w = signed(rng, (k,), 0.2, 1.5)
    b = float(signed(rng, (), 0.2, 1.5))
    residual = signed(rng, (n,), 1.2, 2.5)
    residual[0] = float(signed(rng, (), 0.1, 0.8))
    # Both signs on every draw: with one sign only, the absolute error's gradient
    # would equal the gradient of the mean prediction.
    residual[1:] = np.abs(residual[1:])
    residual[-1] = -residual[-1]
    y = np.round(x @ w + b - residual, 3)
    return x, y, w, b


def _mse_gradients(x, y, w, b, *, reduce="mean", scale=2.0):
    residual = x @ w + b - y
    divide = len(y) if reduce == "mean" else 1.0
    return scale * x.T @ residual / divide, scale * residual.sum() / divide
