"""Exercise 1.4: d(loss)/dx through ``output_gradients``, with dy worked out by hand."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.judging import Tolerance
from ...checking.patterns import stray
from ...checking.probes import tensor
from ...log1pexp import reference_sigmoid as sig
from ...log1pexp import reference_softplus
from . import dy_of_mse as mse


def gradient(p):
    return mse.dy(p) * sig(p.x)


def tolerance(p, part) -> Tolerance:
    """The dtype's, widened by a few ulps of the output (all a residual near 0 is)."""
    rounding = 8.0 * np.finfo(p.dtype).eps * float(np.max(np.abs(p.output))) / p.x.size
    rtol, atol = (1e-11, 1e-14) if p.dtype == "float64" else (2e-5, 1e-7)
    return Tolerance(rtol, max(atol, rounding))


PASS = "tape.gradient(output, x, output_gradients=dy)"
ONES = "You returned sigmoid(x) alone: with dy = 1 the walk starts as if the output were "
ONES += "the target. Pass output_gradients=dy with dy = 2 (output - target) / N."
FROM_X = "You computed dy from x; it is the loss's derivative with respect to the output."
DY = f"You returned dy itself: return {PASS}, dy times the local derivative."
AGAIN = f"You multiplied by sigmoid(x) after the tape: {PASS} already is dy * sigmoid(x)."
TWICE = (
    "dy was applied twice: once through output_gradients=dy and once more (multiplied in "
    f"after the call, or with the loss as the target). Call {PASS} and return its result."
)
EXERCISE = spec.Exercise(
    number="1.4",
    title="The whole chain through `output_gradients`",
    stars=2,
    minutes=10,
    harness=Function(
        "`loss_gradient`",
        arguments=lambda p: (tensor(p.x, p.dtype), tensor(p.target, p.dtype)),
        output_gradients="by_hand",
        names=("x", "target"),
        wrt=("x",),
        nouns={"value": "your gradient"},
    ),
    probes=mse.probes_for(reference_softplus, 6.0),
    reference=gradient,
    tolerance=tolerance,
    mistakes=(
        spec.Mistake("forgot_upstream", ONES, lambda p: sig(p.x)),
        *mse.dy_mistakes(
            lambda p: sig(p.x), ("dy_of_ones", "scale_factor"), " Mend dy and pass it again."
        ),
        spec.Mistake(
            "scale_factor",
            "Your gradient is N = {n} times too small: N was divided twice, once in dy = "
            "2 (output - target) / N and once more (inside dy, or on the tape's result). "
            "Divide by N once, in dy.",
            lambda p: gradient(p) / p.x.size if p.x.size > 1 else None,
        ),
        spec.Mistake("dy_from_x", FROM_X, lambda p: 2.0 * (p.x - p.target) / p.x.size * sig(p.x)),
        spec.Mistake("returned_dy", DY, mse.dy),
        spec.Mistake("local_derivative_twice", AGAIN, lambda p: gradient(p) * sig(p.x)),
        spec.Mistake("dy_applied_twice", TWICE, lambda p: mse.dy(p) ** 2 * sig(p.x)),
        *stray(gradient, x=lambda p: p.x),
        mse.constant_dy(lambda got, p: got / sig(p.x), "The dy your gradient implies"),
        mse.linear_dy(lambda got, p: got / sig(p.x), "The dy your gradient implies"),
    ),
    describe={"value": "dy * sigmoid(x), with dy = 2 (output - target) / N"},
    claim="d(loss)/dx = dy * sigmoid(x) with dy = 2 (output - target) / N, right for "
    "residuals of both signs and zero",
)
loss_gradient = EXERCISE.check
