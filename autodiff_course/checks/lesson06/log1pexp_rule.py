"""Exercise 6.4: the stable log1pexp rule, in NumPy, for the notebook's custom_gradient."""

from __future__ import annotations

import numpy as np

from ...checking.numpy_rule import NumpyRule
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from .. import log1pexp_story as story

RELU = "Your output is max(x, 0), which softplus approaches far from 0, but not softplus: "
RELU += "log(1 + e^x) is log 2 at 0 and e^x, not 0, far below it."
STEP = "Your grad_fn returns the upstream times a step (1 for x > 0, 0 below): the derivative "
STEP += "of max(x, 0). The sigmoid is the smooth version of that step."
NO_LOCAL = "Your grad_fn returns the upstream unchanged: multiply it by the local derivative, "
NO_LOCAL += "sigmoid(x)."
EXERCISE = Exercise(
    number="6.4",
    title="The stable log1pexp rule",
    stars=3,
    minutes=15,
    harness=NumpyRule("`log1pexp_rule`", grad_fn=True, elementwise=True, local="sigmoid(x)"),
    probes=story.PROBES,
    reference=story.reference,
    mistakes=(
        *story.mistakes("np"),
        Mistake(
            "relu_not_softplus",
            RELU,
            lambda p: np.maximum(p.x, 0.0),
            part="value",
            means="max(x, 0) or its step derivative where softplus belongs",
        ),
        Mistake("relu_not_softplus", STEP, lambda p: p.upstream * (p.x > 0), part="gradient"),
        Mistake("forgot_local_derivative", NO_LOCAL, lambda p: p.upstream, part="gradient"),
        *story.threshold_slips("np"),
    ),
    stories=(story.story(library="np", flushes=False), *story.tails()),
    describe=story.DESCRIBE,
    claim="Softplus forward and upstream * sigmoid(x) backward, accurate on both sides of "
    "every landmark of the log1pexp story (the cancellation for negative x, the band where "
    "1/(1 + e^x) is below the smallest normal number, the overflow of exp)",
)
log1pexp_rule = EXERCISE.check
