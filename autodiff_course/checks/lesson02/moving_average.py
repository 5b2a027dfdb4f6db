"""Exercise 2.4: a moving average updated in place."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import raise_if_missing
from ...checking import raise_if_partly_cut
from ...checking import raise_if_zeros_hide
from ...checking import signed
from .shared import _float32_for_float64
from .shared import _raise_difference
from .shared import _raise_if_float32_inside
from .shared import _run
from .shared import _show
from .shared import _tolerance


@exercise("2.4", "a moving average updated in place")
def update_and_differentiate(answer):
    """update_and_differentiate(average, x, decay): update in place, return d(loss)/dx.

    new = decay * average + (1 - decay) * x, loss = sum(new**2), so
    d(loss)/dx = 2 (1 - decay) new while d(loss)/d(average) = 2 decay new: with
    decay never 0.5 the loss is asymmetric in average and x, so the wrong source,
    swapped weights and d(loss)/d(new) all differ from the answer.

    Probes (fresh each call): two runs, float32 with x a tf.Variable and float64
    with x a plain tensor (which must be watched; float64 tolerance), each with its
    own length (3 to 6: never 2, where a mean over 2 terms would look like a missing
    factor 2), values of both signs and decay in [0.6, 0.95]. The
    gradient and the variable's final value must both be right.

    Catalogue: every None named from what happened (the assign in the chain, the
    unwatched x, zeros from unconnected_gradients=ZERO hiding one of them);
    float32 for float64; the gradient with respect to the average or to the new
    average; decay and 1 - decay swapped; the mean instead of the sum; the
    variable not updated, or updated wrongly; then the generic patterns.
    """
    import tensorflow as tf

    rng = fresh_rng("2.4")
    for dtype, x_is_variable in ((tf.float32, True), (tf.float64, False)):
        m = int(rng.integers(3, 7))  # never 2: a mean over 2 terms would look like a missing 2
        decay = float(np.round(rng.uniform(0.6, 0.95), 2))
        start = signed(rng, m, 0.2, 2.0)
        step = signed(rng, m, 0.2, 2.0)
        average = tf.Variable(start, dtype=dtype, name="average")
        x = tf.Variable(step, dtype=dtype, name="x") if x_is_variable else tf.constant(step, dtype)
        kind = "a tf.Variable" if x_is_variable else "a plain tensor"
        label = f"With {dtype.name} values of length {m}, x {kind} and decay = {decay:g}"
        run = _run(answer, average, x, decay)
        raise_if_missing(run, probe="x", prefix=f"{label}: ")
        if run.raised is not None:
            hint = run.raised.hint
            if dtype == tf.float64 and "float" in hint and ("double" in hint or "float64" in hint):
                hint += (
                    " A float32 constant met float64 values: use decay as the "
                    "Python number it is, or build constants with dtype=x.dtype."
                )
            raise Wrong(hint, "raised")
        raise_if_zeros_hide(run, run.value, probe="x", prefix=f"{label}: ")
        _float32_for_float64(
            f"{label}: your gradient",
            run.value,
            dtype,
            "a float32 constant or cast lost half the digits. Use decay "
            "as the Python number it is.",
        )
        got = as_values(run.value, name=f"{label}: your gradient", shape=(m,), dtype=dtype)
        new = decay * start + (1 - decay) * step
        expected = 2 * (1 - decay) * new
        state = average.numpy().astype(np.float64)
        # new = decay * start + (1 - decay) * step can cancel: rounding of the two
        # terms is the error a right answer may carry, not a mistake.
        terms = np.max(np.abs(decay * start) + np.abs((1 - decay) * step))
        tolerance = _tolerance(dtype, terms=terms)
        if matches(got, expected, **tolerance):
            if matches(state, new, **tolerance):
                continue
            if matches(state, start, **tolerance):
                raise Wrong(
                    f"{label}: the gradient is right, but average still holds "
                    "its old value: assign the new average to it "
                    "(average.assign(new_average)) after the tape.",
                    "state_not_updated",
                )
            raise Wrong(
                f"{label}: the gradient is right, but average ends as "
                f"{_show(state)} instead of {_show(new)}: assign "
                "decay * average + (1 - decay) * x once.",
                "wrong_update",
            )
        swapped = (1 - decay) * start + decay * step
        asked_average = any(source is average for call in run.log.calls for source in call.sources)
        if asked_average and (
            matches(got, 2 * new, **tolerance) or matches(got, 2 * decay * new, **tolerance)
        ):
            raise Wrong(
                f"{label}: your result uses the gradient with respect to average "
                "(2 * decay * new_average), alone or added to the one for x. The "
                "exercise asks for d(loss)/dx only: tape.gradient(loss, x).",
                "differentiated_average",
            )
        known = [
            (
                "differentiated_average",
                f"{label}: you returned the gradient with respect to average, 2 * decay * "
                "new_average. The exercise asks for d(loss)/dx.",
                2 * decay * new,
            ),
            (
                "gradient_of_intermediate",
                f"{label}: you returned 2 * new_average, the gradient with respect to the "
                "new average. Differentiate with respect to x: the chain rule brings the "
                "factor (1 - decay).",
                2 * new,
            ),
            (
                "swapped_decay",
                f"{label}: decay and 1 - decay are swapped: the new average keeps decay of "
                "the old one and adds (1 - decay) of x.",
                2 * decay * swapped,
            ),
            (
                "moving_average_formula",
                f"{label}: the new average inside your loss adds x itself, not (1 - decay) "
                "* x: new_average = decay * average + (1 - decay) * x.",
                2 * (decay * start + step),
            ),
            (
                "moving_average_formula",
                f"{label}: the new average inside your loss is average + (1 - decay) * x, "
                "without the factor decay on the old average.",
                2 * (1 - decay) * (start + (1 - decay) * step),
            ),
            (
                "moving_average_formula",
                f"{label}: x is weighted by decay in your new average, like the old "
                "average: the two weights must add up to 1, so x gets (1 - decay): "
                "new_average = decay * average + (1 - decay) * x.",
                2 * decay * (decay * start + decay * step),
            ),
            (
                "scale_factor",
                f"{label}: your gradient is half the right size: the loss is "
                "sum(new_average**2), without a factor 1/2 in front.",
                (1 - decay) * new,
            ),
            (
                "moving_average_formula",
                f"{label}: the new average inside your loss subtracts (1 - decay) * x; "
                "it adds it: new_average = decay * average + (1 - decay) * x.",
                -2 * (1 - decay) * (decay * start - (1 - decay) * step),
            ),
            (
                "loss_after_update",
                f"{label}: your loss was computed from average after it had been updated, "
                "so the update was applied twice inside the loss. Compute new_average from "
                "the old value, and assign it after the tape.",
                2 * (1 - decay) * (decay * new + (1 - decay) * step),
            ),
            (
                "absolute_error",
                f"{label}: that is the gradient of sum(|new_average|); the loss squares "
                "the new average: sum(new_average**2).",
                (1 - decay) * np.sign(new),
            ),
        ]
        raise_if_missing(run, probe="x", prefix=f"{label}: ", hidden=True)
        _raise_if_float32_inside(run, got, expected, dtype, label)
        diagnose_mistake(got, known, **tolerance)
        raise_if_partly_cut(run, probe="x", prefix=f"{label}: ")
        _raise_difference(
            run,
            got,
            expected,
            label=label,
            probe="x",
            batch=m,
            what="your gradient",
            tolerance=tolerance,
            summary=f"{label}: not d/dx sum((decay * average + (1 - decay) * x)**2).",
        )
    return (
        "For float32 and float64, with x a variable and a plain tensor, your "
        "gradient is 2 (1 - decay) * new_average and average ends holding the new "
        "value: the tape recorded an ordinary tensor, and the assign came after."
    )
