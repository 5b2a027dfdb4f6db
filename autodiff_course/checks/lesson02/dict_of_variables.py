"""Exercise 2.1: gradients for a dict of variables."""

import numpy as np

from ...checking.function import one_tensor_per_key
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from . import linear_model as model
from .causes import taped


def draw(rng) -> list:
    """float32 and float64 data of different sizes (so a sum is no one fixed factor of a
    mean), then size-1 axes: one row, and one feature."""
    sizes = (("float32", rng.integers(3, 6), rng.integers(2, 4)), ("float64", 7, 3))
    first, *others = [
        model.probe(rng, *size) for size in (*sizes, ("float32", 1, 3), ("float32", 4, 1))
    ]
    return [first.but(handed={}, seed=int(rng.integers(2**31))), *others]


def arguments(p) -> tuple:
    """The model's arguments; for :func:`again`'s probe, the params dict handed over last
    time, the same dict and variables, assigned the new values."""
    params, x, y = model.arguments(p)
    reused = getattr(p, "reuse", None) or {}
    if "params" in reused:
        for key, variable in reused["params"].items():
            variable.assign(params[key])
        params = reused["params"]
    if isinstance(getattr(p, "handed", None), dict):
        p.handed["params"] = params
    return params, x, y


def again(p):
    """New data and new values of the variables, in the same params dict as the first
    probe's last call: an answer that caches its gradients per dict (or per variable)
    shows."""
    if not isinstance(getattr(p, "handed", None), dict):
        return None
    fresh = model.probe(np.random.default_rng(p.seed), p.dtype, p.n, p.k)
    return fresh.but(reuse=p.handed, handed=None, label=p.label)


def another_loss(code: str, hint: str, slope, means: str = "") -> Mistake:
    """The gradients of mean(loss(errors)) for another loss, whose derivative is ``slope``."""
    return Mistake(code, hint, lambda p: model.gradients(p, slope=slope), means=means)


def square_of_mean(p):
    """The gradients of mean(x w + b - y)**2: 2 mean(error) times mean(x) and 1."""
    m = float(np.mean(p.x @ p.w + p.b - p.y))
    return {"w": 2 * m * p.x.mean(axis=0), "b": 2 * m}


def summed_over_rows(p):
    """The gradients when the predictions are sum(x * w, axis=0) + b, one per feature,
    broadcast against y (where the shapes allow: n = k, one row or one feature)."""
    if p.n != p.k and 1 not in (p.n, p.k):
        return None
    column_sums = p.x.sum(axis=0)
    errors = column_sums * p.w + p.b - p.y
    d = 2 * errors / errors.size
    w = column_sums * d if p.k == errors.size else column_sums * d.sum()
    return {"w": w, "b": float(d.sum())}


ROWS = (
    "Your predictions sum x * w over axis 0, the rows, which gives one number per feature: "
    "each row's prediction sums its features, tf.linalg.matvec(x, w) + b (or "
    "tf.reduce_sum(x * w, axis=1) + b)."
)
ABSOLUTE = "That is the gradient of the mean absolute error; the loss squares the errors."
ABSOLUTE_MEANS = "an absolute error where the exercise squares the errors"
POWER = "Your gradients are those of the mean of {}; the loss squares the errors."
EXERCISE = Exercise(
    number="2.1",
    title="Gradients for a dict of variables",
    stars=1,
    minutes=5,
    harness=taped(
        "`parameter_gradients`",
        arguments=arguments,
        read=one_tensor_per_key,
        vary=again,
        sources=model.sources,
        main="w",
        nouns={"w": "your gradient for 'w'", "b": "your gradient for 'b'"},
    ),
    probes=draw,
    reference=model.gradients,
    mistakes=(
        Mistake(
            "differentiated_predictions",
            "You differentiated the mean prediction, not the loss: square the errors first.",
            lambda p: {"w": p.x.mean(axis=0), "b": 1.0},
            means="the gradient of the predictions instead of the loss",
        ),
        Mistake(
            "differentiated_predictions",
            "You differentiated the predictions, not the loss: for a vector target "
            "tape.gradient sums it, so 'w' got x's column sums and 'b' the number of rows. "
            "Pass the loss, tf.reduce_mean((x w + b - y)**2), as the target.",
            lambda p: {"w": p.x.sum(axis=0), "b": float(p.n)},
        ),
        Mistake(
            "returned_parameters",
            "You returned the parameters' values, not their gradients.",
            lambda p: {"w": p.w, "b": p.b},
            means="the parameters' values instead of their gradients",
        ),
        another_loss("absolute_error", ABSOLUTE, np.sign, ABSOLUTE_MEANS),
        another_loss("wrong_power", POWER.format("error**3"), lambda r: 3 * r**2),
        another_loss("wrong_power", POWER.format("|error|**3"), lambda r: 3 * r * abs(r)),
        Mistake(
            "mean_over_features",
            "Your gradients are 1/{k} of the answer, and {k} is the number of features: the "
            "loss is divided by k too. The mean runs over the n examples only, one squared "
            "error per row: tf.reduce_mean((x w + b - y)**2).",
            lambda p: {key: g / p.k for key, g in model.gradients(p).items()},
            means="the loss also divided by the number of features",
        ),
        Mistake(
            "mean_over_features",
            "Your gradients are n/k = {n}/{k} of the answer: the loss sums the {n} squared "
            "errors and divides by k = {k}, the number of features. The mean divides by n, "
            "the number of examples (rows): tf.reduce_mean((x w + b - y)**2).",
            lambda p: (
                {key: g * p.n / p.k for key, g in model.gradients(p).items()}
                if p.n != p.k
                else None
            ),
        ),
        Mistake(
            "square_of_mean",
            "Your gradients are those of (mean of the errors)**2, the square of the mean: "
            "tf.reduce_mean(error)**2 squares after averaging. The loss is the mean of the "
            "squared errors: tf.reduce_mean((x w + b - y)**2), the square inside.",
            square_of_mean,
            means="the square of the mean error instead of the mean of the squared errors",
        ),
        Mistake("wrong_axis", ROWS, summed_over_rows),
        Mistake(
            "broadcast_shape",
            "Your gradients are those of errors broadcast into an ({n}, {n}) table: an "
            "(n, 1) column of predictions met y of shape (n,). Keep both of shape (n,).",
            lambda p: model.gradients(p, y=np.full(p.n, np.mean(p.y))),
        ),
    ),
    describe={"w": "2 x^T (x w + b - y) / n", "b": "2 mean(x w + b - y)"},
    claim="d(loss)/dw and d(loss)/db of the mean squared error, as a dict like params, also "
    "for the same params dict called again with new data and its variables changed",
    tolerance=model.tolerance,
)
parameter_gradients = EXERCISE.check
