"""Exercise 2.3: a training loop that keeps learning."""

import numpy as np

from ...checking import mistakes
from ...checking.answers import as_values
from ...checking.judging import matches
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern
from ...checking.verdicts import Wrong
from . import linear_model as model
from .causes import CAUSES
from .causes import taped

mistakes.register(
    {
        "returned_gradients": "gradients returned where losses were asked for",
        "clipped_gradients": "the gradients clipped where plain gradient descent is asked for",
        "rate_not_applied": "a parameter updated with the raw gradient, without the rate",
        "rate_changed": "a learning rate that changes from step to step",
        "stale_gradient": "each update applies the previous step's gradient",
        "extra_step": "one step more (or fewer) than asked, its losses cut to the count",
        "mixed_gradients": "a variable updated with another variable's gradient",
    }
)


def draw(rng) -> list:
    """float32 and float64 runs on fresh data, 3 to 5 steps at a rate in [0.02, 0.06],
    with size-1 axes in two of them: one feature, and one row; then a start far from the
    fit (residuals 20 times larger: clipped gradients show)."""
    sizes = (("float32", rng.integers(4, 8), 2), ("float64", rng.integers(4, 8), 1))
    sizes = (*sizes, ("float32", 1, 3), ("float64", rng.integers(4, 8), 2, 20.0))
    return [
        model.probe(rng, *size, steps=rng.integers(3, 6), rate=rng.uniform(0.02, 0.06))
        for size in sizes
    ]


def number(item, p):
    """A NumPy number at least as precise as the run (``np.float64(loss)``, an entry of a
    float64 array) as the number ``float(loss)`` gives; anything else as it is."""
    precise = isinstance(item, np.floating) and item.dtype.itemsize >= np.dtype(p.dtype).itemsize
    return float(item) if precise else item


def read(value, p, exercise, name) -> dict:
    """One loss per step, each a scalar tensor or a number (``float(loss)`` is welcome)."""
    if value is None:
        as_values(value, name=name)  # says: returned None
    listed = isinstance(value, (list, tuple)) or getattr(value, "ndim", 0) == 1
    items = list(value) if listed else [value]
    if listed and not isinstance(value, (list, tuple)):
        kind = "NumPy array" if isinstance(value, np.ndarray) else "tensor"
        raise Wrong(
            f"{name} returned the losses stacked into one {kind} of shape "
            f"({len(items)},); the exercise asks for a Python list, one loss per step: "
            "append each step's loss to a list and return the list itself (no tf.stack, "
            "tf.convert_to_tensor or np.array around it).",
            "wrong_structure",
        )
    if any(isinstance(item, (dict, list, tuple)) for item in items):
        raise Wrong(
            "Your function returns gradients, but the exercise asks for each step's loss.",
            "returned_gradients",
        )
    if not listed or len(items) != p.steps:
        got = f"{len(items)} losses" if listed else f"a {type(value).__name__}"
        raise Wrong(
            f"{name} returned {got}; return a Python list with each step's loss, one per "
            f"step ({p.steps} here).",
            "wrong_structure",
        )
    loose = dict(shape=(), dtype=p.dtype, require_tensor=False)
    losses = [
        as_values(number(v, p), name=f"The loss of step {i}", **loose)
        for i, v in enumerate(items, 1)
    ]
    return {"losses": np.array(losses)}


def descend(
    p,
    *,
    sign=-1,
    factor=1.0,
    total=False,
    keys="wb",
    after=False,
    power=1,
    table=False,
    clip=None,
    rates=None,
    lag=False,
    once=False,
    b_step=None,
    w_first=False,
) -> dict:
    """Each step's loss and the final [w, b] of gradient descent on factor times the mean
    (the sum, with ``total``) of the squared errors, at the rate to the ``power``; with
    ``table``, of the errors of every prediction against every target (an (n, 1) column
    minus y of shape (n,)): the squared errors against mean(y), plus y's variance. The
    exercise's by default; with ``clip``, (how, limit), each step's gradients are clipped;
    ``rates(i, key, rate)`` is step i's rate for w or b; with ``lag``, each step applies the
    previous step's gradients; with ``once``, the first step's gradients at every step;
    ``b_step(step)`` is what b is updated with (w's gradient reduced, say); with ``w_first``,
    w is updated first and b's gradient is taken after, at the new w."""
    w, b, losses, factor = np.array(p.w), p.b, [], factor * (p.n if total else 1)
    first = None
    rate, y = p.rate**power, np.full_like(p.y, np.mean(p.y)) if table else p.y
    offset, rates, previous = (
        factor * np.var(p.y) if table else 0.0,
        rates or (lambda i, k, r: r),
        {},
    )
    for i in range(p.steps):
        step = model.gradients(p, w, b, y=y, slope=lambda r: 2 * factor * r)
        step = clipped_step(step, *clip) if clip else step
        step, previous = (previous, step) if lag else (step, step)
        first = step if once and i == 0 else first if once else None
        step = first if once else step
        step = {**step, "b": b_step(step)} if b_step and step else step
        before = factor * np.mean((p.x @ w + b - y) ** 2) + offset
        w = w + sign * rates(i, "w", rate) * step["w"] if "w" in keys and step else w
        if w_first:
            other = model.gradients(p, w, b, y=y, slope=lambda r: 2 * factor * r)
            step = {**step, "b": other["b"]}
        b = b + sign * rates(i, "b", rate) * step["b"] if "b" in keys and step else b
        losses.append(factor * np.mean((p.x @ w + b - y) ** 2) + offset if after else before)
    return {"losses": np.array(losses), "params": np.append(w, b)}


def clipped_step(step, how, c, keys="wb") -> dict:
    """``step`` with the gradients of ``keys`` as tf.{how} clips them to ``c``: each entry,
    each gradient's norm, or their global norm."""
    total = np.sqrt(sum(np.sum(np.square(g)) for g in step.values()))

    def clip(g):
        if how == "clip_by_value":
            return np.clip(g, -c, c)
        return g * min(1.0, c / ((np.linalg.norm(g) if how == "clip_by_norm" else total) or 1.0))

    return {key: clip(g) if key in keys else g for key, g in step.items()}


CLIPS = [(how, keys) for how in ("clip_by_value", "clip_by_norm") for keys in ("wb", "w", "b")]
LIMITS = (0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 10.0)


def clipped(got, p):
    """The clip, when ``got`` are the losses of descent with the gradients (or one of them)
    clipped by tf.clip_by_value, clip_by_norm or clip_by_global_norm to a round limit."""
    tol = model.tolerance(p, "losses")

    def gives(how, c, keys):
        runs = (descend(p.but(steps=k), clip=(how, c, keys))["losses"] for k in (2, p.steps))
        return all(matches(got[: len(run)], run, tol.rtol, tol.atol) for run in runs)

    hows = ("clip_by_value", "clip_by_norm", "clip_by_global_norm")
    for how, keys in (*CLIPS, ("clip_by_global_norm", "wb")):
        for c in LIMITS:  # the first step's loss after it first, to be quick
            if gives(how, c, keys):  # where two clips agree on these numbers, both are named
                both = [h for h in hows if h == how or (h, keys) in CLIPS and gives(h, c, keys)]
                which = "" if keys == "wb" else f", on the gradient of {keys} only"
                return {"how": f"{' or '.join(f'tf.{h}' for h in both)} to {c:g}{which}"}
    return None


def decayed(got, p):
    """The decay, when ``got`` are the losses of descent whose rate is multiplied by a
    round factor after every step."""
    tol = model.tolerance(p, "losses")
    for decay in (0.1, 0.5, 0.9, 0.95, 0.99, 2.0):
        run = descend(p, rates=lambda i, k, r: r * decay**i)["losses"]
        if matches(got, run, tol.rtol, tol.atol):
            return {"decay": f"{decay:g}"}
    return None


def _raw(keys):
    return lambda i, key, rate: 1.0 if key in keys else rate


def variant(code: str, hint: str, means: str = "", **change) -> Mistake:
    return Mistake(code, hint, lambda p: descend(p, **change)["losses"], means=means)


NO_UPDATE = (
    "Every step returns the same loss, the first one: no step computed it again from updated "
    "variables. Inside the loop, record each step's loss on a fresh tape (a tape recorded "
    "once, before the loop, gives the same loss and gradient every step), then update each "
    "variable: assign_sub(learning_rate * gradient)."
)
ASCENT = (
    "Your losses grow: the update climbs the gradient. Gradient descent subtracts: "
    "assign_sub(learning_rate * gradient)."
)
SUMMED = "Your losses are those of the summed squared errors: the loss is their mean."
ONLY_W = "Your losses are those of a loop that updates w only: update b too."
ONLY_B = "Your losses are those of a loop that updates b only: update w too."
HALF = "Your losses are those of half the mean squared error: the loss has no 1/2."
RATE_TWICE = (
    "Your losses are those of descent at learning_rate squared: the rate was applied twice. "
    "Multiply each gradient by it once: assign_sub(learning_rate * gradient)."
)
TABLE = (
    "Your losses are those of errors broadcast into an (n, n) table: an (n, 1) column of "
    "predictions met y of shape (n,). Keep both of shape (n,)."
)
AFTER = (
    "Each of your losses is the one after that step's update; keep the loss the step's "
    "gradients came from, before updating."
)
RAW = (
    "Your losses are those of a loop that updates {key} with the raw gradient: multiply "
    "every variable's gradient by the rate, assign_sub(learning_rate * gradient)."
)
DECAYED = (
    "Your losses are those of descent whose learning rate is multiplied by {decay} after "
    "every step: the exercise asks for one fixed rate, learning_rate at every step."
)
LAGGED = (
    "Your losses are those of a loop whose update applies the previous step's gradient "
    "(and none at the first step): apply the gradient the tape just returned, in the same "
    "step."
)
ONCE = (
    "Your losses are those of a loop that applies the first step's gradient at every step: "
    "the gradient was computed once, before the loop. Record each step's loss on a new tape "
    "inside the loop and take that step's gradient from it."
)
EXTRA = (
    "Your losses are right, but the variables end up {how}: the loop ran {count} (a "
    "range(steps + 1) or an update after the loop?). Run exactly steps steps, one update each."
)
W_FIRST = (
    "Your losses are those of a loop that updates w first and then takes b's gradient from "
    "the updated w (a second loss, on a second tape): both gradients of a step come from "
    "one loss, before any update. Record the loss once, take both gradients from that tape, "
    "then update both variables."
)
MIXED = (
    "Your losses are those of a loop that updates b with w's gradient ({how}): each variable "
    "takes its own gradient, params['b'].assign_sub(learning_rate * gradients['b'])."
)
CLIPPED = (
    "Your losses are those of descent with the gradients clipped ({how}): the exercise asks for "
    "plain gradient descent. Apply each gradient as the tape returns it: "
    "assign_sub(learning_rate * gradient)."
)
EXERCISE = Exercise(
    number="2.3",
    title="A training loop that keeps learning",
    stars=2,
    minutes=12,
    harness=taped(
        "`train`",
        arguments=lambda p: (*model.arguments(p), int(p.steps), float(p.rate)),
        read=read,
        sources=model.sources,
        state=lambda args: {"params": [args[0]["w"], args[0]["b"]]},
        main="losses",
    ),
    probes=draw,
    reference=descend,
    mistakes=(
        variant("no_update", NO_UPDATE, "the parameters were never updated", keys=""),
        variant(
            "ascent_not_descent",
            ASCENT,
            "the parameters moved up the gradient instead of down",
            sign=1,
        ),
        variant("sum_not_mean", SUMMED, total=True),
        variant("missed_parameter", ONLY_W, "only some of the parameters were updated", keys="w"),
        variant("missed_parameter", ONLY_B, keys="b"),
        variant("scale_factor", HALF, factor=0.5),
        variant("rate_applied_twice", RATE_TWICE, "the learning rate applied twice", power=2),
        variant("broadcast_shape", TABLE, table=True),
        variant(
            "loss_after_update",
            AFTER,
            "the loss computed after the update instead of before",
            after=True,
        ),
        Pattern("clipped_gradients", CLIPPED, clipped),
        *(
            variant("rate_not_applied", RAW.format(key=key), rates=_raw(key))
            for key in ("b", "w", "w and b")
        ),
        Pattern("rate_changed", DECAYED, decayed),
        variant("stale_gradient", LAGGED, lag=True),
        variant("stale_gradient", ONCE, once=True),
        Mistake(
            "rate_not_applied",
            "Your losses are those of descent at learning_rate / n (n = {n} rows): each update "
            "divides the gradient by n again, but the mean in the loss already did. Apply the "
            "gradient as the tape returns it: assign_sub(learning_rate * gradient).",
            lambda p: descend(p, rates=lambda i, k, r: r / p.n)["losses"] if p.n > 1 else None,
        ),
        variant(
            "sequential_updates",
            W_FIRST,
            "one variable updated before the next one's gradient is taken",
            w_first=True,
        ),
        variant("mixed_gradients", MIXED.format(how="its mean"), b_step=lambda g: g["w"].mean()),
        variant("mixed_gradients", MIXED.format(how="its sum"), b_step=lambda g: g["w"].sum()),
        Mistake(
            "extra_step",
            EXTRA.format(how="one step further", count="steps + 1 updates"),
            lambda p: descend(p.but(steps=p.steps + 1))["params"],
            part="params",
        ),
        Mistake(
            "extra_step",
            EXTRA.format(how="one step short", count="steps - 1 updates"),
            lambda p: descend(p.but(steps=p.steps - 1))["params"] if p.steps > 1 else None,
            part="params",
        ),
        Mistake(
            "variable_replaced",
            f"{CAUSES['variable_replaced']}. Your losses are right, but the variables handed "
            "to you still hold their starting values: your loop updated new objects (w = w - "
            "..., params[name] = tf.Variable(...)). Update them in place: assign_sub(...).",
            lambda p: np.append(p.w, p.b),
            part="params",
        ),
    ),
    describe={"losses": "the losses of gradient descent, each before its step's update"},
    claim="Each step's loss and the final variables of gradient descent on the mean squared error",
    tolerance=model.tolerance,
)
train = EXERCISE.check
