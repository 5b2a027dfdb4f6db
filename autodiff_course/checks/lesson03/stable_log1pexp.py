"""Exercise 3.1: a stable log1pexp, with a custom gradient of one's own."""

from __future__ import annotations

import numpy as np

from ...checking.on_tape import OnTape
from ...checking.spec import Exercise
from ...checking.spec import Probes
from ...log1pexp import reference_sigmoid as sigmoid
from ...log1pexp import reference_softplus as softplus
from .. import log1pexp_story as story


def _x(probe):
    return probe.x


def _upstream(probe):
    return probe.upstream


EXERCISE = Exercise(
    number="3.1",
    title="A stable log1pexp",
    stars=3,
    minutes=15,
    harness=OnTape("`log1pexp_stable`", produced=True, local="sigmoid(x)"),
    probes=Probes(
        points={"float32": story.points("float32"), "float64": story.points("float64")},
        shapes={"float32": ("points", (2, 3), ())},
        upstream=True,
        data=lambda rng, probe: story.landmarks(probe.dtype),
    ),
    reference=lambda p: {"value": softplus(p.x), "gradient": p.upstream * sigmoid(p.x)},
    mistakes=story.mistakes(_x, _upstream) + story.threshold_slips(_x),
    stories=(story.story(_x, _upstream),),
    describe={"value": "log(1 + e^x)", "gradient": "upstream * sigmoid(x)"},
    claim="Value log(1 + e^x) and gradient upstream * sigmoid(x), accurate across the "
    "flush band and past the overflow of each dtype",
)
log1pexp_stable = EXERCISE.check

# The thresholds the probes straddle, for the lesson's own cells.
LOG1PEXP_FIXED_32 = np.asarray(story.points("float32").fixed)
LOG1PEXP_FIXED_64 = np.asarray(story.points("float64").fixed)
