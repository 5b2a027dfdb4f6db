"""Exercise 6.4: the stable log1pexp rule, in NumPy, for the notebook's custom_gradient."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...checking.judging import Tolerance
from ...checking.judging import close_points
from ...checking.judging import tolerance_for
from ...checking.numpy_rule import NumpyRule
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern
from ...checking.spec import Story
from ...checking.spec import Symptom
from .. import log1pexp_story as story

RELU = "Your output is max(x, 0), which softplus approaches far from 0, but not softplus: "
RELU += "log(1 + e^x) is log 2 at 0 and e^x, not 0, far below it."
STEP = "Your grad_fn returns the upstream times a step (1 for x > 0, 0 below): the derivative "
STEP += "of max(x, 0). The sigmoid is the smooth version of that step."
NO_LOCAL = "Your grad_fn returns the upstream unchanged: multiply it by the local derivative, "
NO_LOCAL += "sigmoid(x)."
# NumPy keeps numbers below the smallest normal one, so far below 0 the check wants e^x to a
# few units of the smallest subnormal, not to the dtype's atol (1e-300 hides x < -690); in
# float64 at -720, where e^x is subnormal but far from 0, in place of -50 (fresh points
# cover -60 to the cancellation): a vector of the same size.
F64 = story.PROBES.points["float64"]
F64 = replace(F64, fixed=tuple(-720.0 if x == -50.0 else x for x in F64.fixed))
PROBES = replace(story.PROBES, points={**story.PROBES.points, "float64": F64})


def tolerance(p, part) -> Tolerance:  # per point: rounding of the upstream's product too
    scale = 1 + np.abs(p.upstream) if part == "gradient" else 2.0
    return Tolerance(story.tolerance(p).rtol, 4 * np.finfo(p.dtype).smallest_subnormal * scale)


def _hidden(p):  # where the dtype's own atol would accept 0.0 for e^x
    return np.abs(story.reference(p)["value"]) < 100 * tolerance_for(p.dtype).atol


CLIPPED = (
    "Your value stops growing above x = {high}: it is {value} at x = {points}, where "
    "log(1 + e^x) is about x. That is x clipped to at most {high}{lower}, and softplus needs no "
    "clip: for x > 0 write it as x + log1p(e^-x) (or np.logaddexp(0, x)), which cannot "
    "overflow, and use x itself, unclipped, in the value and in grad_fn."
)
LOWER = (
    " (and to at least {low} below 0, where the value and the gradient are then stuck at "
    "e^{low} instead of the tiny e^x)"
)


def _clip_at(got, p, sign) -> float | None:
    """Where x was clipped on the side of ``sign``: the value is one constant, softplus(c),
    at every point beyond c where it is wrong (None when it is not)."""
    x, got = np.ravel(p.x), np.ravel(got)
    truth = np.ravel(story.reference(p)["value"])
    wrong = ~close_points(got, truth, 1e-2, tolerance(p, "value").atol) & (sign * x > 0)
    held = got[wrong]
    if held.size < 2 or not np.all(np.isfinite(held)) or held[0] <= 0:
        return None
    if np.ptp(held) > 1e-6 * abs(held[0]):
        return None
    with np.errstate(all="ignore"):
        c = float(held[0] + np.log(-np.expm1(-held[0])))  # softplus's inverse, log(e^v - 1)
    return c if np.isfinite(c) and sign * c < np.min(sign * x[wrong]) else None


def _clipped(got, p):
    high = _clip_at(got, p, 1.0)
    if high is None:
        return None  # a clip below 0 alone is the story of the negative tail
    x, got = np.ravel(p.x), np.ravel(got)
    beyond = x > high + 0.5
    low = _clip_at(got, p, -1.0)
    return {
        "high": f"{high:.4g}",
        "value": f"{got[beyond][0]:.6g}",
        "points": ", ".join(f"{v:g}" for v in x[beyond][:3])
        + (", ..." if beyond.sum() > 3 else ""),
        "lower": "" if low is None else LOWER.replace("{low}", f"{low:.4g}"),
    }


TINY = (
    "the {what} is {value} at x = {points}, where it is about e^x, tiny but not zero: NumPy "
    "keeps such numbers, even below the smallest normal {dtype}. A formula that forms e^-x, "
    "as 1/(1 + np.exp(-x)) does, overflows below x = -{overflow} and gives 0.0; a clip or a "
    "cut-off loses them too. For x < 0 write the sigmoid as np.exp(x - np.logaddexp(0, x))"
)
FAR_BELOW = Story(
    "log1pexp far below 0",
    tuple(
        Symptom(
            "tiny_tail_lost",
            TINY.replace("{what}", part),
            lambda got, p, part=part: (
                ~close_points(got, story.reference(p)[part], 1e-3, tolerance(p, part).atol)
            ),
            _hidden,
            part,
            "e^x lost far below 0 (0.0, or a clipped value), where NumPy keeps tiny numbers",
            at=lambda p: p.x,
        )
        for part in ("value", "gradient")
    ),
    quiet=lambda p: ~_hidden(p),
)
EXERCISE = Exercise(
    number="6.4",
    title="The stable log1pexp rule",
    stars=3,
    minutes=15,
    harness=NumpyRule("`log1pexp_rule`", grad_fn=True, elementwise=True, local="sigmoid(x)"),
    probes=PROBES,
    tolerance=tolerance,
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
        Pattern(
            "clipped_x",
            CLIPPED,
            _clipped,
            part="value",
            means="x clipped to a range of the answer's choosing before softplus",
        ),
    ),
    stories=(story.story(library="np", flushes=False), *story.tails(), FAR_BELOW),
    describe=story.DESCRIBE,
    claim="Softplus forward and upstream * sigmoid(x) backward, accurate on both sides of "
    "every landmark of the log1pexp story (the cancellation for negative x, the band where "
    "1/(1 + e^x) is below the smallest normal number, the overflow of exp)",
)
log1pexp_rule = EXERCISE.check
