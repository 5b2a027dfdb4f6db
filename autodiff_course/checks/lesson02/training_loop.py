"""Exercise 2.3: a training loop that keeps learning."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import first_missing
from ...checking import fresh_rng
from ...checking import matches
from ...checking import raise_if_missing
from ...checking import raise_if_partly_cut
from .shared import _hint
from .shared import _linear_data
from .shared import _mse_gradients
from .shared import _named
from .shared import _raise_difference
from .shared import _raise_if_float32_inside
from .shared import _run
from .shared import _show
from .shared import _tolerance


def _train_reference(
    x,
    y,
    w,
    b,
    steps,
    rate,
    *,
    sign=-1.0,
    reduce="mean",
    update=("w", "b"),
    after=False,
    absolute=False,
    scale=1.0,
):
    """Each step's loss and the final (w, b), in float64."""
    w, b = np.array(w, dtype=np.float64), float(b)
    losses = []
    for _ in range(steps):
        residual = x @ w + b - y
        loss = np.mean(residual**2) if reduce == "mean" else np.sum(residual**2)
        dw, db = _mse_gradients(x, y, w, b, reduce=reduce)
        if absolute:
            loss = np.mean(np.abs(residual))
            dw, db = x.T @ np.sign(residual) / len(y), np.sign(residual).mean()
        loss, dw, db = scale * loss, scale * dw, scale * db
        if "w" in update:
            w = w + sign * rate * dw
        if "b" in update:
            b = b + sign * rate * db
        if after:
            residual = x @ w + b - y
            loss = scale * (np.mean(residual**2) if reduce == "mean" else np.sum(residual**2))
        losses.append(loss)
    return np.array(losses), w, b


def _losses(value, steps: int, dtype, label: str) -> np.ndarray:
    import tensorflow as tf

    if value is None:
        as_values(value, name="Your function")
    if isinstance(value, (tf.Tensor, tf.Variable)) and value.shape.rank == 1:
        items = [value[i] for i in range(value.shape[0])]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        kind = (
            f"one tensor of shape {tuple(value.shape)}"
            if isinstance(value, (tf.Tensor, tf.Variable))
            else f"a value of type {type(value).__name__}"
        )
        raise Wrong(
            f"You returned {kind}; return a Python list with the loss of each "
            f"step ({steps} steps here).",
            "wrong_structure",
        )
    if items and all(isinstance(item, (Mapping, list, tuple)) for item in items):
        raise Wrong(
            "Your list holds gradients (dicts or lists), but the exercise asks "
            "for each step's loss: append the loss tensor.",
            "returned_gradients",
        )
    if len(items) != steps:
        raise Wrong(
            f"You returned {len(items)} losses for {steps} steps; append one loss per step.",
            "wrong_structure",
        )
    return np.array(
        [
            as_values(item, name=f"{label}, the loss of step {i + 1}", shape=(), dtype=dtype)
            for i, item in enumerate(items)
        ]
    )


@exercise("2.3", "a training loop that keeps learning")
def train(answer):
    """train(params, x, y, steps, learning_rate): each step's loss, params updated in place.

    Probes (fresh each call): two runs, float32 and float64 (float64 judged with
    float64 tolerance), each with its own rows n (4 to 7), features k (1 to 3),
    starting parameters of both signs, 3 to 5 steps and a learning rate in
    [0.02, 0.06]. The losses (before each step's update) and the variables'
    final values must both match a float64 NumPy run of gradient descent.

    Catalogue: a None at some step named from what happened (the NumPy detour
    of the lesson's loss helper, the variable replaced by `w = w - ...` or by a
    new tf.Variable, zeros from unconnected_gradients=ZERO hiding either, a
    NumPy loss); the list's structure and length; gradients instead of losses;
    no update; ascent instead of descent; a sum instead of the mean; only one
    parameter updated; the loss computed after the update; the variables not
    updated although the losses are right; then the generic patterns.
    """
    import tensorflow as tf

    rng = fresh_rng("2.3")
    for dtype in (tf.float32, tf.float64):
        n, k = int(rng.integers(4, 8)), int(rng.integers(1, 4))
        steps, rate = int(rng.integers(3, 6)), float(np.round(rng.uniform(0.02, 0.06), 3))
        x, y, w0, b0 = _linear_data(rng, n, k)
        params = {
            "w": tf.Variable(w0, dtype=dtype, name="w"),
            "b": tf.Variable(b0, dtype=dtype, name="b"),
        }
        originals = (params["w"], params["b"])
        run = _run(answer, params, tf.constant(x, dtype), tf.constant(y, dtype), steps, rate)
        label = f"With {n} rows, {k} features, {steps} steps in {dtype.name}"

        def step_offirst_missing(hidden=False):
            found = first_missing(run.log, hidden=hidden)
            step = 1 + next(
                (i for i, call in enumerate(run.log.calls) if found and call is found[0]), 0
            )
            return f"{label}, step {step}: "

        raise_if_missing(run, probe="params", originals=originals, prefix=step_offirst_missing())
        if run.raised is not None:
            raise run.raised
        got = _losses(run.value, steps, dtype, label)
        tolerance = _tolerance(dtype)
        expected, w_end, b_end = _train_reference(x, y, w0, b0, steps, rate)
        state = np.append(params["w"].numpy(), params["b"].numpy()).astype(np.float64)
        unchanged = np.array_equal(state, np.append(w0, b0).astype(state.dtype)) or matches(
            state, np.append(w0, b0), **tolerance
        )
        if matches(got, expected, **tolerance):
            if matches(state, np.append(w_end, b_end), **tolerance):
                continue
            if unchanged:
                raise Wrong(
                    _named(
                        "variable_replaced",
                        (
                            f"{label}: your losses are right, but the variables in params still "
                            "hold their starting values, so your loop updated copies "
                            "(`w = w - ...`, or a new tf.Variable). Update the variables "
                            "themselves with params['w'].assign_sub(...)."
                        ),
                    ),
                    "variable_replaced",
                )
            raise Wrong(
                f"{label}: your losses are right, but the variables end at "
                f"{_show(state)} instead of {_show(np.append(w_end, b_end))}: "
                "update each one once per step with assign_sub(learning_rate * "
                "gradient).",
                "wrong_update",
            )
        known = [
            (
                "no_update",
                f"{label}: every step returns the same loss, because the variables never "
                "change. Update them after each step with assign_sub(learning_rate * "
                "gradient).",
                np.full(steps, expected[0]),
            ),
            (
                "ascent_not_descent",
                f"{label}: your losses grow: the update moves up the gradient. Gradient "
                "descent subtracts: assign_sub(learning_rate * gradient).",
                _train_reference(x, y, w0, b0, steps, rate, sign=+1.0)[0],
            ),
            (
                "sum_not_mean",
                f"{label}: your losses are those of the summed squared errors: the loss is "
                "their mean (tf.reduce_mean).",
                _train_reference(x, y, w0, b0, steps, rate, reduce="sum")[0],
            ),
            (
                "missed_parameter",
                f"{label}: your losses are those of a loop that updates w only: update b "
                "too (every entry of params).",
                _train_reference(x, y, w0, b0, steps, rate, update=("w",))[0],
            ),
            (
                "missed_parameter",
                f"{label}: your losses are those of a loop that updates b only: update w "
                "too (every entry of params).",
                _train_reference(x, y, w0, b0, steps, rate, update=("b",))[0],
            ),
            (
                "scale_factor",
                f"{label}: your losses are those of half the mean squared error: the loss "
                "is mean((x w + b - y)**2), without a factor 1/2 in front.",
                _train_reference(x, y, w0, b0, steps, rate, scale=0.5)[0],
            ),
            (
                "absolute_error",
                f"{label}: your losses are those of the mean absolute error; the loss is "
                "the mean of the squared errors.",
                _train_reference(x, y, w0, b0, steps, rate, absolute=True)[0],
            ),
            (
                "loss_after_update",
                f"{label}: each of your losses is the loss after that step's update; "
                "return the loss the step computed its gradient from (before updating).",
                _train_reference(x, y, w0, b0, steps, rate, after=True)[0],
            ),
        ]
        raise_if_missing(
            run,
            probe="params",
            originals=originals,
            hidden=True,
            prefix=step_offirst_missing(hidden=True),
        )
        if (
            unchanged
            and run.log.calls
            and not matches(got, np.full(steps, expected[0]), **tolerance)
        ):
            sources = [s for call in run.log.calls for s in call.sources]
            if not all(any(s is v for v in originals) for s in sources):
                raise Wrong(_hint("variable_replaced", "params"), "variable_replaced")
        _raise_if_float32_inside(run, got, expected, dtype, label)
        diagnose_mistake(got, known, **tolerance)
        raise_if_partly_cut(run, probe="params", prefix=f"{label}: ")
        if matches(got[:1], expected[:1], **tolerance):
            raise Wrong(
                f"{label}: your first loss is right, so the loss is; the losses "
                f"after it are not ({_show(got[1:])} instead of "
                f"{_show(expected[1:])}), so the update is wrong. Each step "
                "must do params[name].assign_sub(learning_rate * gradient), "
                "once per variable, with that step's gradient.",
                "wrong_update",
            )
        _raise_difference(
            run,
            got,
            expected,
            label=label,
            probe="params",
            what="your losses",
            tolerance=tolerance,
            summary=f"{label}: not the losses of gradient descent on mean((x w + b - y)**2).",
        )
    return (
        "In float32 and float64, on fresh data, your loop's losses and the variables' "
        "final values match gradient descent on the mean squared error: the loss "
        "stays in TensorFlow and params are updated in place."
    )
