"""What a training step on a Keras model must do, read from what it did (lesson 07).

For an answer called as ``step(model, optimizer, ...)`` with Keras objects the check
built (:mod:`.keras_call`): its gradients come back as one float32 tensor per trainable
variable (:func:`read_gradients`); its tapes differentiated ``model.trainable_variables``
and nothing else (:func:`demand_trainable_sources`); the tape walked from the loss times
the loss scale it was given (:func:`demand_scaled_loss`, from the ``tape.gradient`` call
itself); and the weights moved by ``-learning_rate`` times what it returned, once
(:func:`demand_applied`, plain SGD).
"""

from __future__ import annotations

import numpy as np

from .answers import as_values
from .judging import matches
from .verdicts import Wrong


def _ids(variables) -> set:
    return {id(getattr(v, "value", v)) for v in variables}


def read_gradients(value, model, name: str) -> np.ndarray:
    """One float32 tensor per trainable variable, in order, flattened into one array."""
    trainable = model.trainable_variables
    if not isinstance(value, (list, tuple)) or len(value) != len(trainable):
        size = f" of {len(value)}" if isinstance(value, (list, tuple)) else ""
        raise Wrong(
            f"{name} should return a list of {len(trainable)} gradients, one per trainable "
            f"variable in order; it returned a {type(value).__name__}{size}.",
            "wrong_structure",
        )
    return np.concatenate(
        [
            np.ravel(as_values(g, name=f"Gradient {i + 1}", shape=tuple(v.shape), dtype="float32"))
            for i, (g, v) in enumerate(zip(value, trainable))
        ]
    )


def demand_trainable_sources(log, model) -> None:
    """No tape differentiated a weight outside ``model.trainable_variables``."""
    others = _ids(model.weights) - _ids(model.trainable_variables)
    if any(_ids(call.sources) & others for call in log.calls):
        raise Wrong(
            "Your tape differentiated variables that are not in model.trainable_variables "
            "(model.variables or model.weights): a frozen layer's weights are still "
            "trainable tf.Variables, so they get gradients and train, and a non-trainable "
            "one gets None. Differentiate and apply model.trainable_variables only.",
            "trained_frozen_layer",
        )


def _factor(call, loss: float) -> float | None:
    try:
        factor = float(np.asarray(call.target, np.float64)) / loss
        if call.upstream is not None:
            factor *= float(np.asarray(call.upstream, np.float64))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return factor if np.isfinite(factor) and factor != 0 else None


def demand_scaled_loss(log, model, loss, scale, earlier=(), sums=(), got=None, right=None):
    """The first ``tape.gradient`` call on the model's variables walked from ``scale``
    times ``loss`` (the target times its ``output_gradients``). Named otherwise: the loss
    itself (and ``got``, ``scale`` times ``right``: the gradients scaled afterwards); a
    scale of an ``earlier`` call (state kept); another power of two (not ``sums``, the
    factors of a loss that is a sum: its numbers name it)."""
    mine = _ids(model.trainable_variables)
    call = next((c for c in log.calls if _ids(c.sources) & mine), None)
    factor = None if call is None else _factor(call, loss)
    if factor is None or abs(factor / scale - 1) < 1e-2:
        return

    def near(value):
        return abs(factor / value - 1) < 1e-2

    if near(1.0 / scale) and scale != 1:
        raise Wrong(
            "Your tape walked from the loss divided by loss_scale: that makes dy smaller, and "
            "float16 rounds more of it to 0.0. Multiply the loss by loss_scale, then divide "
            "the gradients by it.",
            "loss_not_scaled",
        )
    if near(1.0):
        ratio = np.median(np.abs(got) / np.maximum(np.abs(right), 1e-300))
        after = got is not None and abs(ratio / scale - 1) < 0.1
        raise Wrong(
            "Your tape differentiated the loss itself, not the loss times loss_scale"
            + (
                ", and you multiplied the gradients afterwards: by then float16 had rounded "
                "the small ones to 0.0."
                if after
                else ": the float16 gradients of a close fit underflow to 0.0 or lose digits."
            )
            + " Scale the loss (or pass output_gradients=loss_scale), then divide.",
            "scaled_gradients_not_loss" if after else "loss_not_scaled",
        )
    if abs(np.log2(abs(factor)) - round(np.log2(abs(factor)))) > 1e-3 or any(map(near, sums)):
        return
    if any(map(near, earlier)):
        raise Wrong(
            f"Your step scaled the loss by {factor:g}, the loss_scale of an earlier call, not "
            f"this call's {scale:g}: it keeps state between calls. Use each call's loss_scale.",
            "keeps_state",
        )
    raise Wrong(
        f"Your step scaled the loss by {factor:g}, not by the loss_scale it was given "
        f"({scale:g}): use the argument (a LossScaleOptimizer has a scale of its own; the "
        "optimizer given has none).",
        "hard_coded_scale",
    )


def demand_applied(built, got, learning_rate, right, tolerance) -> None:
    """The trainable weights moved by ``-learning_rate * got`` (``built.details`` holds
    the ``model`` and its weights ``before`` the call, in the order of ``model.weights``):
    not at all, twice, or by other gradients are named; so are right gradients applied
    and their negatives returned."""
    model, before = built.details["model"], built.details["before"]
    index = {id(v): i for i, v in enumerate(model.weights)}
    rows = [index[id(v)] for v in model.trainable_variables]
    delta = np.concatenate([np.ravel(model.weights[i].numpy() - before[i]) for i in rows])
    step = -learning_rate * got
    floor = 1e-6 * max(float(np.max(np.abs(b))) for b in before) + 1e-3 * np.abs(step)
    if not np.all(np.isfinite(got)) or np.all(np.abs(delta - step) <= floor):
        return
    applied = -delta / learning_rate
    if np.all(np.abs(delta) <= floor):
        code, what = "not_applied", "not at all"
    elif np.all(np.abs(delta - 2 * step) <= floor):
        code, what = "applied_twice", "twice"
    elif not matches(got, right, tolerance.rtol, tolerance.atol) and matches(
        -got, applied, 1e-3, tolerance.atol
    ):
        raise Wrong(
            "Your step applied the right gradients but returned their negatives: return the "
            "very list you apply.",
            "sign_flipped",
        )
    else:
        code, what = "applied_other_than_returned", "with other gradients than those returned"
    raise Wrong(
        f"The weights after your step moved {what}: they should move by -learning_rate times "
        "the gradients you return, applied once with optimizer.apply(gradients, "
        "model.trainable_variables).",
        code,
    )
