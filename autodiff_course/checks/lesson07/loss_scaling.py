"""Exercise 7.2: a loss-scaled training step by hand, on the models of :mod:`.scaled_step`."""

from __future__ import annotations

import numpy as np

from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern
from ...checking.spec import Symptom
from . import scaled_step as bench

NAME = "`train_step`"
LOSS_IN_FLOAT16 = (
    "Your loss was computed in float16: a residual below float16's spacing rounds away, and "
    "with it the gradient (0.0, or nan from the square's gradient at 0). Cast the model's "
    "output to float32 first: tf.cast(model(x), tf.float32) - y."
)


def draw(rng) -> list:
    """A rough fit (residuals 0.5 to 1.5, batch 8, a frozen tanh layer, loss_scale 2**2,
    2**4 or 2**5, never the batch size; weights read back), then near-perfect fits whose
    float16 gradients underflow unless scaled by loss_scale 2**13 to 2**15: a batch of
    one, two outputs, one input.
    Fresh weights, inputs, learning rates; each call's scale differs from those before."""
    scales = [2.0 ** int(rng.choice([2, 4, 5])), *2.0 ** rng.choice(np.arange(13, 16), 3, False)]
    n, h, k, batch = (int(i) for i in rng.integers([2, 2, 1, 3], [4, 5, 3, 9]))
    models = zip([[n, h, 1], [n, 1], [n, k, 2], [1, 1]], [8, 1, batch, batch], scales)
    return [
        bench.model_probe(rng, w, size, s, i > 0, frozen=i == 0, earlier=tuple(scales[:i]))
        for i, (w, size, s) in enumerate(models)
    ]


def _reference(p, dy=None):
    return bench.flat(bench.gradients(p, dy))


def _squeezed(p):
    """The gradients of mean((squeeze(prediction) - y)**2): a (batch, batch) broadcast
    (None where that squeeze changes nothing)."""
    if bench.prediction(p).shape[1] != 1 or bench.prediction(p).shape[0] == 1:
        return None
    residuals = bench.prediction(p)[:, 0][None, :] - p.y  # [i, j]: prediction j minus target i
    return _reference(p, (2.0 * residuals.sum(axis=0) / residuals.size)[:, None])


def _floored(p):
    """The answer rounded down, where that is not zeros (which underflow also gives)."""
    floored = np.floor(_reference(p))
    return floored if np.any(floored) else None


def _unscaled_by_earlier(got, p, plain: bool = True):
    """The gradients of this call's scaled loss divided by an earlier call's loss_scale (a
    scale kept between calls): the answer times this scale over that one. ``plain``: a
    ratio other than 2 or 1/2, else only those, which a factor 2 off gives as well."""
    tol, right = bench.tolerance(p, None), _reference(p)
    for kept in dict.fromkeys(p.data.get("earlier", ())):
        if (p.loss_scale / kept in (2.0, 0.5)) == plain:
            continue
        if kept != p.loss_scale and np.allclose(
            got, p.loss_scale / kept * right, rtol=tol.rtol, atol=tol.atol * p.loss_scale / kept
        ):
            return {
                "factor": f"{p.loss_scale / kept:g}",
                "kept": f"{kept:g}",
                "this": f"{p.loss_scale:g}",
            }
    return None


EXERCISE = Exercise(
    number="7.2",
    title="A loss-scaled training step by hand",
    stars=2,
    minutes=15,
    harness=bench.Step(
        NAME,
        build=bench.build,
        reset=bench.reset,
        read=lambda value, p, built, log: {"gradients": bench.read(value, p, built, log, NAME)},
        untaped=(
            "float32_copy",
            "The numbers are right, but no tape.gradient call differentiated the model's "
            "own model.trainable_variables: scale, differentiate and unscale that model.",
        ),
        method="the tape walked from the loss times loss_scale; what it returned, applied once",
        main="gradients",
        nouns={"gradients": "your gradients"},
    ),
    probes=draw,
    reference=lambda p: {"gradients": _reference(p)},
    tolerance=bench.tolerance,
    mistakes=(
        Mistake(
            "forgot_unscale",
            "Your gradients are loss_scale ({loss_scale}) times too large: divide the "
            "scaled gradients by loss_scale before you apply and return them.",
            lambda p: p.loss_scale * _reference(p),
        ),
        Mistake(
            "floor_division",
            "Your gradients are whole numbers, the answer rounded down: `//` is floor division. "
            "Unscale with a true division, g / loss_scale.",
            lambda p: _floored(p),
            means="the scaled gradients unscaled with // (floor division)",
        ),
        Pattern(
            "keeps_state",
            "Your gradients are {factor} times the answer: this call's loss_scale ({this}) "
            "over {kept}, the loss_scale of an earlier call. The loss was scaled by this call's "
            "loss_scale, but the gradients were divided by a scale kept from an earlier call (a "
            "global, a default argument, an attribute): state kept between calls. Divide by "
            "the loss_scale each call is given.",
            _unscaled_by_earlier,
        ),
        Pattern(
            "scale_factor",
            "Your gradients are {factor} times the answer. This call's loss_scale ({this}) is "
            "{factor} times that of an earlier call ({kept}): if your step keeps a loss_scale "
            "from an earlier call (a global, a default argument, an attribute), that is state "
            "kept between calls, and each call must divide by the loss_scale it is given; "
            "otherwise a factor {factor} is off (a 2 or a 1/2 in the loss or the update?).",
            lambda got, p: _unscaled_by_earlier(got, p, plain=False),
        ),
        Mistake(
            "loss_in_float16",
            LOSS_IN_FLOAT16,
            lambda p: _reference(p, 2.0 * (bench.prediction(p) - bench._f16(p.y)) / p.y.size),
            means="the loss computed in float16, where the residuals round away",
        ),
        Symptom(
            "loss_in_float16",
            LOSS_IN_FLOAT16,
            lambda got, p: ~np.isfinite(got),
            region=lambda p: np.asarray(p.tiny),
        ),
        Mistake(
            "unscaled_in_float16",
            "Your gradients were unscaled in float16: cast to float16 and divided by "
            "loss_scale ({loss_scale}) there, small ones underflow to 0 and the rest keep 3 "
            "digits. Divide the float32 gradients tape.gradient returns, and keep them float32.",
            lambda p: bench._f16(bench._f16(p.loss_scale * _reference(p)) / p.loss_scale),
            means="the scaled gradients cast to float16 before they are unscaled",
        ),
        Mistake(
            "unscaled_twice",
            "Your gradients are loss_scale ({loss_scale}) times too small: you divided by "
            "the scale twice. Divide once.",
            lambda p: _reference(p) / p.loss_scale,
        ),
        Mistake(
            "multiplied_by_scale",
            "Your gradients are loss_scale squared ({loss_scale} x {loss_scale}) times too "
            "large: the scaled gradients were multiplied by loss_scale again; divide them by it.",
            lambda p: p.loss_scale**2 * _reference(p),
            means="the scaled gradients multiplied by loss_scale instead of divided",
        ),
        Mistake(
            "sum_not_mean",
            "Your gradients are y.size times too large: your loss is a sum of the squared "
            "residuals; take their mean, tf.reduce_mean.",
            lambda p: p.y.size * _reference(p),
        ),
        Mistake(
            "squeezed_size_one_axis",
            "Your loss broadcast a (batch,) prediction against (batch, 1) targets into a "
            "(batch, batch) table: a squeeze removed the output's axis of size 1.",
            _squeezed,
        ),
    ),
    describe={"gradients": "the float32 gradients of the mean squared error (float64 says)"},
    claim="Your step's gradients match float64 and were applied once",
)
train_step = EXERCISE.check
