"""Exercise 3.1: a stable log1pexp, with a custom gradient of one's own."""

from __future__ import annotations

import numpy as np

from ...checking.on_tape import OnTape
from ...checking.spec import Exercise
from .. import log1pexp_story as story

EXERCISE = Exercise(
    number="3.1",
    title="A stable log1pexp",
    stars=3,
    minutes=15,
    harness=OnTape("`log1pexp_stable`", produced=True, local="sigmoid(x)"),
    probes=story.PROBES,
    reference=story.reference,
    mistakes=story.mistakes() + story.asymptotes() + story.threshold_slips(),
    stories=(story.story(),),
    describe=story.DESCRIBE,
    tolerance=story.tolerance,
    claim="Value log(1 + e^x) and gradient upstream * sigmoid(x), accurate across the "
    "flush band and past the overflow of each dtype",
)
log1pexp_stable = EXERCISE.check

# The fixed points that straddle every threshold, for a look-up table to fail on (the tests).
LOG1PEXP_FIXED_32 = np.asarray(story.points("float32").fixed)
LOG1PEXP_FIXED_64 = np.asarray(story.points("float64").fixed)
