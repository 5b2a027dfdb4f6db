"""Exercise 3.2: a clipped straight-through estimator for ``sign``, as a rule."""

from __future__ import annotations

import numpy as np

from ...checking.judging import close_points
from ...checking.judging import matches
from ...checking.on_tape import OnTape
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Points
from ...checking.spec import Probes
from ...checking.spec import Symptom

# The boundaries |x| = 1 exactly, both sides of them, 0 (where tf.sign is 0), and fresh
# points in [-3, 3] and within 0.05 of +-1.
EDGES = (-3.0, -1.5, -1.001, -1.0, -0.999, -0.5, 0.0, 0.5, 0.999, 1.0, 1.001, 1.5, 3.0)
POINTS = Points(EDGES, ((-3.0, 3.0, 8), (0.95, 1.05, 2), (-1.05, -0.95, 2)), decimals=4)


def _inside(p):
    return (np.abs(p.x) <= 1.0) * 1.0


def _mask(passes: bool):
    """Where a rule that only passes the upstream or blocks it (0) passes it outside
    |x| <= 1 (``passes``), or blocks it inside."""

    def shows(got, p):
        passed, blocked = close_points(got, p.upstream, 1e-5, 1e-30), got == 0.0
        only = np.all(passed | blocked) and passed.any()
        wrong = passed & ~blocked if passes else blocked & ~passed
        return wrong & (_inside(p) == (0 if passes else 1)) & only

    return shows


def _wrong_at_zero(got, p):
    nonzero = p.x != 0
    right_elsewhere = matches(got[nonzero], np.sign(p.x[nonzero]))
    return (p.x == 0) & (np.abs(got) == 1.0) & right_elsewhere


IDENTITY = "The forward returns x unchanged; it should binarise: tf.sign(x)."
ROUND = "The forward rounds to the nearest integer; this exercise binarises with tf.sign(x), "
ROUND += "giving -1, 0 or +1."
HARDTANH = "The forward clips x to [-1, 1]; the clipping belongs in the backward rule. The "
HARDTANH += "forward is tf.sign(x)."
AT_ZERO = "At x = 0 your forward gives {value}; tf.sign(0) is 0. The exercise's forward is "
AT_ZERO += "tf.sign(x) itself (a where(x >= 0, 1, -1) binarisation differs at 0)."
EVERYWHERE = "Your gradient passes the upstream through everywhere. The clipped variant "
EVERYWHERE += "zeroes it where |x| > 1: multiply by a mask of |x| <= 1, cast to upstream.dtype."
INVERTED = "The mask is inverted: keep the upstream where |x| <= 1 and zero it outside."
BOUNDARY = "At x = -1 and x = 1 exactly your gradient is 0. The clipped estimator is the "
BOUNDARY += "derivative of clip(x, -1, 1), which passes the upstream on the boundary too: use "
BOUNDARY += "|x| <= 1, not < 1."
FROM_UP = "Your mask reads the upstream: it keeps the upstream where |upstream| <= 1. The mask is "
FROM_UP += "of the input: upstream * tf.cast(tf.abs(x) <= 1, upstream.dtype)."
BLOCKED = "Your rule gives 0 at every point, |x| <= 1 too: that is tf.sign's own gradient, or a "
BLOCKED += "mask reduced to one boolean (tf.reduce_all(tf.abs(x) <= 1) is False as soon as one |x| "
BLOCKED += "> 1). Keep the mask element-wise: upstream * tf.cast(tf.abs(x) <= 1, upstream.dtype)."
TANH = "Your rule multiplies the upstream by 1 - tanh(x)**2, the slope of a tanh surrogate. The "
TANH += "clipped straight-through estimator is the slope of clip(x, -1, 1): 1 where |x| <= 1, "
TANH += "0 elsewhere."
MASK = ". The clipped estimator passes the upstream exactly where |x| <= 1 (x = -1 and 1 "
MASK += "included) and gives 0 elsewhere."
EXERCISE = Exercise(
    number="3.2",
    title="A clipped straight-through estimator for `sign`, as a rule",
    stars=1,
    minutes=5,
    harness=OnTape(
        "`binarize_ste`",
        local="1 where |x| <= 1 and 0 elsewhere",
        without_rule="The numbers may be right (the stop_gradient trick gives them too), but "
        "this exercise asks for a rule of your own.",
    ),
    probes=Probes(
        points={"float32": POINTS, "float64": POINTS},
        shapes={"float64": ((3, 8),)},
        upstream=True,
    ),
    reference=lambda p: {"value": np.sign(p.x), "gradient": p.upstream * _inside(p)},
    mistakes=(
        Mistake(
            "forward_identity",
            IDENTITY,
            lambda p: p.x,
            part="value",
            means="the forward returns x unchanged where it should quantise",
        ),
        Mistake(
            "forward_round",
            ROUND,
            lambda p: np.round(p.x),
            part="value",
            means="tf.round where the exercise binarises with tf.sign",
        ),
        Mistake(
            "forward_round",
            "The forward rounds x clipped to [-1, 1]: that gives 0 for 0 < |x| < 0.5, where "
            "tf.sign(x) gives -1 or +1. The forward is tf.sign(x) itself.",
            lambda p: np.round(np.clip(p.x, -1.0, 1.0)),
            part="value",
        ),
        Mistake(
            "forward_hardtanh",
            HARDTANH,
            lambda p: np.clip(p.x, -1.0, 1.0),
            part="value",
            means="the forward clips x to [-1, 1] instead of binarising it",
        ),
        Symptom(
            "sign_at_zero",
            AT_ZERO,
            _wrong_at_zero,
            part="value",
            means="a binarisation that gives +-1 at x = 0, where tf.sign gives 0",
        ),
        Mistake("not_clipped", EVERYWHERE, lambda p: p.upstream, part="gradient"),
        Mistake(
            "inverted_clip",
            INVERTED,
            lambda p: p.upstream * (1.0 - _inside(p)),
            part="gradient",
            means="the gradient mask inverted (kept outside, zeroed inside)",
        ),
        Mistake(
            "boundary_excluded",
            BOUNDARY,
            lambda p: p.upstream * (np.abs(p.x) < 1.0),
            part="gradient",
            means="the boundary |x| = 1 excluded from the pass-through region",
        ),
        Mistake(
            "mask_from_upstream",
            FROM_UP,
            lambda p: p.upstream * (np.abs(p.upstream) <= 1.0),
            part="gradient",
            means="the mask computed from the upstream instead of from x",
        ),
        Mistake(
            "blocked_everywhere",
            BLOCKED,
            lambda p: 0.0 * p.x,
            part="gradient",
            means="the upstream blocked at every point, |x| <= 1 included",
        ),
        *(
            Mistake(
                "tanh_surrogate", TANH, gives, part="gradient", means="1 - tanh(x)**2 as the slope"
            )
            for gives in (
                lambda p: p.upstream * (1.0 - np.tanh(p.x) ** 2),
                lambda p: p.upstream * (1.0 - np.tanh(p.x) ** 2) * _inside(p),
            )
        ),
        Symptom(
            "wrong_mask",
            "Your rule lets the upstream through at x = {points}, where |x| > 1" + MASK,
            _mask(passes=True),
            part="gradient",
            means="the upstream passes on a region of x other than |x| <= 1",
        ),
        Symptom(
            "wrong_mask",
            "Your rule blocks the upstream at x = {points}, where |x| <= 1" + MASK,
            _mask(passes=False),
            part="gradient",
        ),
    ),
    describe={"value": "tf.sign(x)", "gradient": "the upstream where |x| <= 1 and 0 elsewhere"},
    claim="Forward tf.sign(x); backward the upstream where |x| <= 1 (x = -1 and 1 included) "
    "and 0 elsewhere",
)
binarize_ste = EXERCISE.check
