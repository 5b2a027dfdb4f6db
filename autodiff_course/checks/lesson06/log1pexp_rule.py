"""Exercise 6.4: the stable log1pexp rule, in NumPy, for the notebook's custom_gradient."""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from ...checking.numpy_rule import NumpyRule
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Probes
from ...log1pexp import reference_sigmoid as sigmoid
from ...log1pexp import reference_softplus as softplus
from .. import log1pexp_story as story

_x, _upstream = attrgetter("x"), attrgetter("upstream")  # the softplus's argument and scale

EXERCISE = Exercise(
    number="6.4",
    title="The stable log1pexp rule",
    stars=3,
    minutes=15,
    harness=NumpyRule("`log1pexp_rule`", grad_fn=True, elementwise=True, local="sigmoid(x)"),
    probes=Probes(
        points={"float32": story.points("float32"), "float64": story.points("float64")},
        shapes={"float32": ("points", (2, 3), ())},
        upstream=True,
        data=lambda rng, probe: story.landmarks(probe.dtype),
    ),
    reference=lambda p: {"value": softplus(p.x), "gradient": p.upstream * sigmoid(p.x)},
    mistakes=story.mistakes(_x, _upstream, library="np")
    + (
        Mistake(
            "relu_not_softplus",
            "Your output is max(x, 0), which softplus approaches far from 0, but not softplus: "
            "log(1 + e^x) is log 2 at 0 and e^x, not 0, far below it.",
            lambda p: np.maximum(p.x, 0.0),
            part="value",
            means="max(x, 0) or its step derivative where softplus belongs",
        ),
        Mistake(
            "relu_not_softplus",
            "Your grad_fn returns the upstream times a step (1 for x > 0, 0 below): the "
            "derivative of max(x, 0). The sigmoid is the smooth version of that step.",
            lambda p: p.upstream * (p.x > 0),
            part="gradient",
        ),
        Mistake(
            "forgot_local_derivative",
            "Your grad_fn returns the upstream unchanged: multiply it by the local derivative, "
            "sigmoid(x).",
            lambda p: p.upstream,
            part="gradient",
        ),
    )
    + story.threshold_slips(_x, library="np"),
    stories=(story.story(_x, _upstream, library="np", flushes=False), *story.tails(_x, _upstream)),
    describe={"value": "log(1 + e^x)", "gradient": "upstream * sigmoid(x)"},
    claim="Softplus forward and upstream * sigmoid(x) backward, accurate on both sides of "
    "every landmark of the log1pexp story (the cancellation for negative x, the band where "
    "1/(1 + e^x) is below the smallest normal number, the overflow of exp)",
)
log1pexp_rule = EXERCISE.check
