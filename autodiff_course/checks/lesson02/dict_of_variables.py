"""Exercise 2.1: gradients for a dict of variables."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...checking import Run
from ...checking import Wrong
from ...checking import as_values
from ...checking import describe_difference
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import explain_difference
from ...checking import fresh_rng
from ...checking import matches
from ...checking import raise_if_missing
from ...checking import raise_if_partly_cut
from .shared import _linear_data
from .shared import _mse_gradients
from .shared import _raise_difference
from .shared import _raise_if_float32_inside
from .shared import _run
from .shared import _tolerance


def _raise_if_other_source(run: Run, sources, label: str, wanted: str) -> None:
    """The answer's tapes were asked about other tensors than the exercise's sources."""
    sources = list(sources)
    asked = [s for call in run.log.calls for s in call.sources]
    if run.log.calls and not any(any(a is s for s in sources) for a in asked):
        import tensorflow as tf

        def described(tensor) -> str:
            if isinstance(tensor, tf.Variable):
                return f"a variable named {tensor.name.split(':')[0]!r}"
            shape = getattr(tensor, "shape", None)
            return (
                f"a tensor of shape {tuple(shape)}"
                if shape is not None
                else f"a {type(tensor).__name__}"
            )

        shown = ", ".join(sorted({described(a) for a in asked})[:3])
        raise Wrong(
            f"{label}: your tape.gradient calls asked for the gradient with "
            f"respect to {shown or 'other tensors'}, never with respect to "
            f"{wanted}.",
            "other_source",
        )


@exercise("2.1", "gradients for a dict of variables")
def parameter_gradients(answer):
    """d(loss)/d(params) for loss = mean((x w + b - y)**2), returned as a dict.

    Probes (fresh each call): a float32 set and a float64 set, each with its own
    number of rows n (3 to 7) and features k (1 to 4), values of both signs,
    so a factor n (a sum instead of a mean) differs between the two, hard-coded
    numbers or shapes fail, and the float64 one is judged with float64 tolerance
    (float32 shortcuts fail). The gradients must come back as a dict with the
    keys of params, each shaped and typed like its variable.

    Catalogue: a list or tuple instead of the dict; other keys; None for a key
    (named from what happened: the variable unused, the loss computed outside
    the block); a sum instead of the mean; the 1/2 convention; the gradient of the
    predictions, of the mean absolute error, or the parameters' own values; then
    the generic patterns (sign, scale, approximation) and a point that differs.
    """
    import tensorflow as tf

    rng = fresh_rng("2.1")
    sizes = [
        (int(rng.integers(3, 6)), int(rng.integers(1, 4))),
        (int(rng.integers(6, 8)), int(rng.integers(2, 5))),
    ]
    for (n, k), dtype in zip(sizes, (tf.float32, tf.float64)):
        x, y, w, b = _linear_data(rng, n, k)
        params = {
            "w": tf.Variable(w, dtype=dtype, name="w"),
            "b": tf.Variable(b, dtype=dtype, name="b"),
        }
        inputs = (tf.constant(x, dtype), tf.constant(y, dtype))
        run = _run(answer, params, *inputs)
        label = f"For {n} rows of {k} features in {dtype.name}"
        if run.raised is not None:
            raise run.raised
        value = run.value
        if value is None:
            as_values(value)
        if not isinstance(value, Mapping):
            if isinstance(value, (list, tuple)):
                raise Wrong(
                    f"You returned a {type(value).__name__}. Pass the dict "
                    "itself as the sources, tape.gradient(loss, params): the "
                    "tape returns the gradients in the same structure, a dict "
                    "with keys 'w' and 'b'.",
                    "wrong_structure",
                )
            raise Wrong(
                f"You returned a value of type {type(value).__name__}; a dict "
                "with keys 'w' and 'b' (the structure of params) was expected. "
                "tape.gradient(loss, params) returns exactly that.",
                "wrong_structure",
            )
        if set(value) != {"w", "b"}:
            raise Wrong(
                f"Your dict has keys {sorted(map(str, value))}; it should have "
                "the keys of params, ['b', 'w']. Pass params itself as the "
                "sources.",
                "wrong_keys",
            )
        for key in ("w", "b"):
            if value[key] is None:
                raise_if_missing(run, probe=f"params['{key}']")
                raise Wrong(
                    f"The gradient for '{key}' is None: the tape saw no path "
                    f"from the loss to params['{key}'].",
                    "no_gradient",
                )
        got_w, got_b = (
            as_values(
                value[key], name=f"{label}, the gradient for '{key}'", shape=shape, dtype=dtype
            )
            for key, shape in (("w", (k,)), ("b", ()))
        )
        got = np.append(got_w, got_b)
        expected = np.append(*_mse_gradients(x, y, w, b))
        residual = x @ w + b - y
        # Each gradient sums one term per row (2 x r / n, or x / n for the mean
        # prediction); terms of both signs can cancel.
        terms = np.max(np.abs(x)) * max(1.0, 2 * float(np.max(np.abs(residual))))
        tolerance = _tolerance(dtype, terms=terms)
        if matches(got, expected, **tolerance):
            continue
        known = [
            (
                "sum_not_mean",
                f"Your gradients are {n} times too large, and there are {n} rows: the loss "
                "is the mean of the squared errors (tf.reduce_mean), not their sum.",
                np.append(*_mse_gradients(x, y, w, b, reduce="sum")),
            ),
            (
                "scale_factor",
                "Your gradients are half the right size: the loss is mean((x w + b - y)**2), "
                "without the factor 1/2 some textbooks put in front.",
                np.append(*_mse_gradients(x, y, w, b, scale=1.0)),
            ),
            (
                "differentiated_predictions",
                "You differentiated the mean prediction, not the loss: square the errors "
                "(prediction - y) before averaging them.",
                np.append(x.mean(axis=0), 1.0),
            ),
            (
                "differentiated_predictions",
                "You differentiated the sum of the errors (prediction - y), not the loss: "
                "square them, then take their mean.",
                np.append(x.sum(axis=0), float(n)),
            ),
            (
                "returned_parameters",
                "You returned the parameters' values, not their gradients.",
                np.append(w, b),
            ),
            (
                "absolute_error",
                "That is the gradient of the mean absolute error; the loss squares the errors.",
                np.append(x.T @ np.sign(residual) / n, np.sign(residual).mean()),
            ),
        ]
        known.append(
            (
                "mean_not_sum",
                "Your gradients are those of predictions that average x * w over the "
                f"{k} features (tf.reduce_mean); a linear model sums them: "
                "tf.linalg.matvec(x, w), or tf.reduce_sum(x * w, axis=1).",
                np.append(*_mse_gradients(x / k, y, w, b)),
            )
        )
        for power in (3, 4):
            for sign in (1.0, -1.0):
                scaled = power * (sign * residual) ** (power - 1) * sign / n
                known.append(
                    (
                        "wrong_power",
                        f"Your gradients are those of the mean of the errors to the power "
                        f"{power}; the loss squares them: (prediction - y)**2.",
                        np.append(x.T @ scaled, scaled.sum()),
                    )
                )
        rmse = np.sqrt(np.mean(residual**2))
        known.append(
            (
                "scale_factor",
                "Your gradients are those of the root of the mean squared error (tf.sqrt "
                "or a norm): the loss here is the mean squared error itself, with no root.",
                expected / (2 * rmse),
            )
        )
        huber = np.where(np.abs(residual) < 1.0, residual, np.sign(residual)) / n
        known.append(
            (
                "other_loss",
                "Your gradients are those of the Huber loss (squared for small errors, "
                "absolute for large ones); the exercise's loss is the mean squared error.",
                np.append(x.T @ huber, huber.sum()),
            )
        )
        centred = x @ w + b - y.mean()
        known.append(
            (
                "broadcast_shape",
                "Your gradients are those of a loss whose errors were broadcast into a "
                f"({n}, {n}) table: a (n, 1) column met a (n,) vector, so every prediction "
                "was compared with every target. Keep predictions and y both of shape (n,).",
                np.append(2 * x.T @ centred / n, 2 * centred.sum() / n),
            )
        )
        raise_if_missing(run, probe="params", hidden=True)
        _raise_if_float32_inside(run, got, expected, dtype, label)
        diagnose_mistake(got, known, **tolerance)
        _raise_if_other_source(
            run, params.values(), label, "the variables in params: tape.gradient(loss, params)"
        )
        raise_if_partly_cut(run, probe="params", prefix=f"{label}: ")
        right_w = matches(got_w, expected[:k], **tolerance)
        right_b = matches(got_b, expected[k], **tolerance)
        if right_w != right_b:
            good, bad = ("w", "b") if right_w else ("b", "w")
            if bad == "b":  # one number: no pattern to name, only the difference
                detail = describe_difference(got_b, expected[k], **tolerance)
            else:
                detail = explain_difference(
                    got_w, expected[:k], what="the gradient for 'w'", summary="", **tolerance
                ).hint.strip()
            raise Wrong(
                f"{label}: the gradient for '{good}' is right, the one for "
                f"'{bad}' is not. {detail}",
                "wrong_gradient",
            )
        _raise_difference(
            run,
            got,
            expected,
            label=label,
            probe="params",
            batch=n,
            what="your result",
            tolerance=tolerance,
            summary=f"{label}: not the gradients of mean((x w + b - y)**2) "
            "(the values are w's gradients, then b's).",
        )
    return (
        "Your gradients match d(loss)/dw and d(loss)/db for fresh data in float32 "
        "and float64, returned as a dict shaped like params."
    )
