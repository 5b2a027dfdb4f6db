"""Exercise 2.4: a moving average updated in place."""

import numpy as np

from ...checking.judging import of_terms
from ...checking.probes import signed
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Probe
from ...checking.spec import as_dtype
from .causes import taped


def draw(rng) -> list:
    """decay in [0.6, 0.94) tells d(loss)/dx = 2 (1 - decay) new from d(loss)/d(average) =
    2 decay new and d(loss)/d(new); its third decimal is never 0, so a decay rounded (to
    0.9, 0.72) shows, and it never rounds to 1 (an average that keeps its value is another
    mistake). Lengths 3 to 6 and 1; x a tf.Variable once."""
    found = []
    for dtype, m, variable in (("float32", 0, True), ("float64", 0, False), ("float32", 1, False)):
        m = m or int(rng.integers(3, 7))
        decay = round(rng.uniform(0.6, 0.93), 2) + int(rng.integers(1, 10)) / 1000
        start, x = (as_dtype(signed(rng, m, 0.2, 2.0), dtype) for _ in "ax")
        data = dict(start=start, batch=m, variable=variable, decay=decay)
        label = f"{dtype} values of length {m}, x a {'tf.Variable' if variable else 'plain tensor'}"
        found.append(Probe(dtype, x, data=data, label=label))
    found[0] = found[0].but(handed={}, seed=int(rng.integers(2**31)))
    return found


def arguments(p) -> tuple:
    """A new average variable, or for :func:`again`'s probe the one handed over last."""
    import tensorflow as tf

    x = tf.Variable(p.x, dtype=p.dtype, name="x") if p.variable else tf.constant(p.x, p.dtype)
    average = (getattr(p, "reuse", None) or {}).get("average")
    if average is None:
        average = tf.Variable(p.start, dtype=p.dtype, name="average")
    else:
        average.assign(p.start)  # the value it holds after a right first update
    if isinstance(getattr(p, "handed", None), dict):
        p.handed["average"] = average
    return average, x, float(p.decay)


def again(p):
    """The first probe's average variable updated once more, with a new x: a moving
    average is updated again and again, so nothing may be kept from the last update."""
    if not isinstance(getattr(p, "handed", None), dict):
        return None
    x = as_dtype(signed(np.random.default_rng(p.seed), p.x.shape, 0.2, 2.0), p.dtype)
    start = as_dtype(averaged()(p)["average"], p.dtype)
    label = f"{p.label}, the same average updated again"
    return p.but(x=x, start=start, reuse=p.handed, handed=None, label=label)


def averaged(keep=lambda d: d, add=lambda d: 1 - d):
    """The gradient and new average when it keeps keep(decay) of the old, adds add(decay) x."""

    def gives(p):
        new = keep(p.decay) * p.start + add(p.decay) * p.x
        return {"gradient": 2 * add(p.decay) * new, "average": new}

    return gives


def twice(p) -> dict:
    """The gradient and average of a second update, from the new average."""
    return averaged()(p.but(start=averaged()(p)["average"]))


EXERCISE = Exercise(
    number="2.4",
    title="A moving average updated in place",
    stars=2,
    minutes=10,
    harness=taped(
        "`update_and_differentiate`",
        arguments=arguments,
        state=lambda args: {"average": [args[0]]},
        vary=again,
        main="gradient",
    ),
    probes=draw,
    reference=averaged(),
    mistakes=(
        Mistake(
            "differentiated_average",
            "You returned the gradient with respect to average, 2 * decay * new_average. "
            "The exercise asks for d(loss)/dx: tape.gradient(loss, x).",
            lambda p: {"gradient": 2 * p.decay * averaged()(p)["average"]},
            means="the gradient with respect to the average, not x",
        ),
        Mistake(
            "gradient_of_intermediate",
            "You returned 2 * new_average, the gradient with respect to the new average. "
            "Differentiate with respect to x: the chain rule brings the factor (1 - decay).",
            lambda p: {"gradient": 2 * averaged()(p)["average"]},
            means="the gradient with respect to the new average, not x",
        ),
        Mistake(
            "old_average_in_loss",
            "Your gradient is (1 - decay) times the old average: your loss read average before "
            "its update. The loss is sum(new_average**2), of the new value alone.",
            lambda p: {"gradient": (1 - p.decay) * p.start},
            means="the loss computed with the average before its update",
        ),
        Mistake(
            "swapped_decay",
            "decay and 1 - decay are swapped: keep decay of the old average, add 1 - decay of x.",
            averaged(lambda d: 1 - d, lambda d: d),
            means="decay and 1 - decay swapped in the moving average",
        ),
        Mistake(
            "moving_average_formula",
            "x is weighted by decay in your new average, like the old average: the two "
            "weights must add up to 1: new_average = decay * average + (1 - decay) * x.",
            averaged(add=lambda d: d),
            means="the moving average computed with a wrong formula",
        ),
        Mistake(
            "moving_average_formula",
            "Your new average adds all of x (decay * average + x): x is weighted by 1 - decay, "
            "new_average = decay * average + (1 - decay) * x (and so is the average you assign).",
            averaged(add=lambda d: 1.0),
        ),
        Mistake(
            "moving_average_formula",
            "Your new average keeps all of the old average (average + (1 - decay) * x): it "
            "keeps only the fraction decay of it: new_average = decay * average + (1 - decay) * x.",
            averaged(keep=lambda d: 1.0),
        ),
        *(
            Mistake(
                "decay_rounded",
                f"Your update and gradient use decay rounded to {places} "
                f"decimal{'s' * (places > 1)} (decay = {{decay}} here): use the decay you "
                "are given as it is, without round() or a cast.",
                lambda p, places=places: averaged()(p.but(decay=round(p.decay, places))),
                means="decay rounded before use",
            )
            for places in (2, 1)
        ),
        Mistake(
            "gradient_of_intermediate",
            "Your gradient is 1 - decay at every entry: that of the new average itself (its "
            "sum), tape.gradient(new_average, x). The exercise asks for the gradient of the "
            "loss, sum(new_average**2): tape.gradient(loss, x).",
            lambda p: {"gradient": np.full_like(p.x, 1 - p.decay)},
        ),
        Mistake(
            "wrong_loss",
            "Your gradient is (1 - decay) new_average / |new_average|: your loss is the norm, "
            "tf.norm(new_average), the square root of the sum of squares. The loss is the sum "
            "of squares itself, tf.reduce_sum(new_average**2), with no square root.",
            lambda p: {
                "gradient": (1 - p.decay)
                * averaged()(p)["average"]
                / np.linalg.norm(averaged()(p)["average"])
            },
            means="another loss than the one the exercise gives",
        ),
        Mistake(
            "squares_split",
            "Your gradient is 2 (1 - decay)**2 x: your loss squares decay * average and "
            "(1 - decay) * x separately. Square their sum, the new average: "
            "loss = sum(new_average**2).",
            lambda p: {"gradient": 2 * (1 - p.decay) ** 2 * p.x},
            means="the square of a sum taken as the sum of the squares of its terms",
        ),
        Mistake(
            "square_of_sum",
            "Your gradient is the same at every entry, 2 (1 - decay) sum(new_average): your "
            "loss is sum(new_average)**2, the square of the sum. Square each entry first, "
            "then sum: loss = tf.reduce_sum(new_average**2).",
            lambda p: {
                "gradient": np.full_like(p.x, 2 * (1 - p.decay) * averaged()(p)["average"].sum())
            },
            means="the square of a sum where the sum of squares belongs",
        ),
        Mistake(
            "updated_then_recomputed",
            "Your gradient is that of a second update: you assigned the new average first and "
            "then computed it again, from the updated variable, for the loss. Compute the new "
            "average once, on the tape, from the old value; assign it after the tape.",
            lambda p: {"gradient": twice(p)["gradient"]},
            means="the variable updated first, its new value recomputed from the updated one",
        ),
        Mistake(
            "state_not_updated",
            "The gradient is right, but average is not updated: assign the new one after the tape.",
            lambda p: p.start,
            part="average",
            means="the variable still holds its old value",
        ),
        Mistake(
            "wrong_update",
            "The gradient is right, but average holds the old average plus the new one: "
            "assign_add adds to the value. Replace it: average.assign(new_average).",
            lambda p: p.start + averaged()(p)["average"],
            part="average",
        ),
        Mistake(
            "wrong_update",
            "The gradient is right, but average was updated twice: assign the new average once.",
            lambda p: twice(p)["average"],
            part="average",
            means="the variable was updated to a wrong value",
        ),
    ),
    describe={"gradient": "2 (1 - decay) new_average", "average": "the new average"},
    claim="The gradient 2 (1 - decay) new_average, and average holding the new value, also "
    "for the same average variable updated again",
    tolerance=of_terms(lambda p: np.max(np.abs(p.start) + np.abs(p.x))),
)
update_and_differentiate = EXERCISE.check
