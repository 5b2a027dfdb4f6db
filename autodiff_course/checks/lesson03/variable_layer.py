"""Exercise 3.4: a scaled softplus layer whose custom gradient reads a variable."""

from __future__ import annotations

import numpy as np

from ...checking.judging import Tolerance
from ...checking.judging import tolerance_for
from ...checking.on_tape import OnTape
from ...checking.probes import upstream as draw_upstream
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Probe
from ...checking.spec import as_dtype
from ...log1pexp import reference_sigmoid as sigmoid
from ...log1pexp import reference_softplus as softplus
from .. import log1pexp_story as story

WX = (-100.0, -40.0, -17.0, -3.0, -0.5, 0.0, 0.5, 3.0, 17.0, 40.0, 88.5, 95.0, 100.0)


def draw(rng) -> list:
    """A fresh w of random sign and size (0.5 to 2.5) and x such that w x spans -100 ...
    100 (0, +-0.5, +-3, +-17, +-40, 88.5 in float32's flush band, 95 and 100 past exp's
    overflow, and fresh values): a float32 vector, a float32 (1, 3) row, and a float64
    (3, 4) batch, both with w x = -100 and 100. Upstreams of both signs, never 1."""
    probes = []
    for dtype, shape in (("float32", (len(WX) + 8,)), ("float32", (1, 3)), ("float64", (3, 4))):
        w = as_dtype(np.round(rng.uniform(0.5, 2.5), 3) * rng.choice([-1.0, 1.0]), dtype)
        wx = np.concatenate([WX, np.round(rng.uniform(-100.0, 100.0, 8), 3)])
        wx = rng.permutation(wx)[: int(np.prod(shape))]
        if wx.size > 4:  # both ends, -100 and 100, in every batch (float32 flushes the slope)
            wx[np.argsort(np.abs(wx))[:2]] = -100.0, 100.0
        x = as_dtype(wx.reshape(shape) / w, dtype)
        up = as_dtype(draw_upstream(rng, shape), dtype)
        label = f"w = {float(w):g} and a {dtype} x of shape {shape}"
        probes.append(Probe(dtype, x, up, {"w": float(w), **story.landmarks(dtype)}, label))
    return probes


def _wx(p):
    return p.w * p.x


def _scale(p):
    return p.upstream * p.w


def _grad_w(local):
    return lambda p: np.sum(local(p))


def _s(p):
    return sigmoid(_wx(p))


AT_X = "Your rule takes the sigmoid at x, the slope of softplus(x). The layer is softplus(w x), "
AT_X += "so its slope is taken at w x: upstream * w * sigmoid(w x) for x, and the sum of upstream "
AT_X += "* x * sigmoid(w x) for w."
MEANS = "a local derivative evaluated at the wrong point"
AT_X_GIVES = (  # (part, what it gives): for x and for w, and for x without the factor w
    ("gradient", lambda p: p.upstream * p.w * sigmoid(p.x)),
    ("grad_w", _grad_w(lambda p: p.upstream * p.x * sigmoid(p.x))),
    ("gradient", lambda p: p.upstream * sigmoid(p.x)),
)


def _tolerance(p, part):
    """For d/dw, a sum over every element, the dtype's rtol of the sum of its terms' sizes."""
    if part != "grad_w":
        return None
    rtol = tolerance_for(p.dtype).rtol
    return Tolerance(rtol, rtol * float(np.sum(np.abs(p.upstream * p.x * _s(p)))))


EXERCISE = Exercise(
    number="3.4",
    title="A scaled softplus layer with a learnable scale",
    stars=3,
    minutes=15,
    harness=OnTape("`make_scaled_softplus`", factory=True, local="w * sigmoid(w x)"),
    probes=draw,
    reference=lambda p: {
        "value": softplus(_wx(p)),
        "gradient": p.upstream * p.w * _s(p),
        "grad_w": np.sum(p.upstream * p.x * _s(p)),
    },
    mistakes=(
        Mistake(
            "value_not_scaled_inside",
            "The layer returns w * softplus(x); it should be softplus(w * x).",
            lambda p: p.w * softplus(p.x),
            part="value",
            means="w * softplus(x) where softplus(w * x) belongs",
        ),
        Mistake(
            "forgot_w",
            "The gradient for x lacks the factor w from the inner w * x: upstream * w * "
            "sigmoid(w x).",
            lambda p: p.upstream * _s(p),
            part="gradient",
            means="d/dx of softplus(w x) without the factor w",
        ),
        Mistake(
            "swapped_gradients",
            "The gradient for x has x where w belongs: d/dx softplus(w x) = w * sigmoid(w x); "
            "the factor x belongs to d/dw.",
            lambda p: p.upstream * p.x * _s(p),
            part="gradient",
            means="x and w swapped between the two gradients",
        ),
        Mistake(
            "forgot_x",
            "The gradient for w lacks the factor x from the inner w * x: sum(upstream * x * "
            "sigmoid(w x)).",
            _grad_w(lambda p: p.upstream * _s(p)),
            part="grad_w",
            means="d/dw of softplus(w x) without the factor x",
        ),
        Mistake(
            "swapped_gradients",
            "The gradient for w has w where x belongs: d/dw softplus(w x) = x * sigmoid(w x).",
            _grad_w(lambda p: p.upstream * p.w * _s(p)),
            part="grad_w",
        ),
        Mistake(
            "mean_not_sum",
            "The gradient for w is the mean of the contributions, {n} times too small: w is "
            "used by every element, so its gradient is their sum (tf.reduce_sum).",
            lambda p: np.mean(p.upstream * p.x * _s(p)),
            part="grad_w",
        ),
        *(Mistake("local_at_input", AT_X, gives, part, MEANS) for part, gives in AT_X_GIVES),
    ),
    stories=(story.story(_wx, _scale, "w x"),),
    describe={
        "value": "softplus(w * x)",
        "gradient": "upstream * w * sigmoid(w x)",
        "grad_w": "sum(upstream * x * sigmoid(w x)), one sum over every element of x",
    },
    claim="d/dx = upstream * w * sigmoid(w x) and d/dw = sum(upstream * x * sigmoid(w x)), "
    "for w of either sign and w x from -100 to 100",
    tolerance=_tolerance,
)
scaled_softplus = EXERCISE.check
