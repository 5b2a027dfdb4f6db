"""Exercise 7.4: clip by global norm, after unscaling, on :mod:`.scaled_step`'s models.
The reference clip is ``g * clip_norm / max(norm, clip_norm)`` in float64."""

from __future__ import annotations

import numpy as np

from ...checking.answers import as_values
from ...checking.judging import Tolerance
from ...checking.judging import matches
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern
from ...checking.verdicts import Wrong
from . import scaled_step as bench
from .scaled_step import flat
from .scaled_step import gradients
from .scaled_step import norm

NAME = "`clipped_train_step`"


def draw(rng) -> list:
    """Rough fits of a tanh layer and a linear one (four variables), with a clip_norm 1.2
    to 2 times their global norm (below that of the scaled gradients), then 1/50 to 1/4
    of it; loss_scale 2**2 to 2**4, weights read back. Then a near-perfect fit, loss_scale
    2**13 to 2**15. Fresh weights, learning rates and limits."""
    found = []
    for tiny, ratio in ((False, (1.2, 2.0)), (False, (1 / 50, 1 / 4)), (True, (2, 4))):
        n, h, batch = (int(k) for k in rng.integers([2, 2, 3], [4, 4, 9]))
        scale = 2.0 ** int(rng.integers(13, 16) if tiny else rng.integers(2, 5))
        spread = (3.0, 6.0) if ratio[0] < 1 else (0.5, 1.5)  # above the limit: a norm over 1
        probe = bench.model_probe(rng, [n, h, 1], batch, scale, tiny, spread=spread)
        while ratio[0] < 1 and norm(gradients(probe)) < 1.5:  # a clip to 1.0 must show
            probe = probe.but(y=2 * probe.y - bench.prediction(probe))  # residuals doubled
        limit = float(f"{norm(gradients(probe)) * rng.uniform(*ratio):.4g}")
        limit *= 1.1 if limit in (1.0, 5.0, 10.0) else 1
        found.append(probe.but(clip_norm=limit, earlier=tuple(p.clip_norm for p in found)))
    return found


def clip(arrays, limit, total=None) -> np.ndarray:
    """``arrays`` clipped to the global norm ``limit`` (their norm: ``total``), flattened."""
    return flat(arrays) * limit / max(norm(arrays) if total is None else total, limit)


def summed_norm(p) -> float:
    return sum(norm([g]) for g in gradients(p))


def reference(p) -> dict:
    return {"clipped": clip(gradients(p), p.clip_norm), "norm": np.asarray(norm(gradients(p)))}


def tolerance(p, part) -> Tolerance:
    """:mod:`.scaled_step`'s, shrunk by the clip for the clipped gradients."""
    found, shrunk = bench.tolerance(p, part), p.clip_norm / max(norm(gradients(p)), p.clip_norm)
    return Tolerance(found.rtol, found.atol * shrunk)


def close(got, expected, p, scale=1.0) -> bool:
    """Within the clipped gradients' tolerance, its atol times ``scale``."""
    tol = tolerance(p, "clipped")
    return matches(got, expected, tol.rtol, tol.atol * scale)


def read(value, p, built, log) -> dict:
    """The pair; gradients a power of two too large (the norm's factor), then clipped, were
    never unscaled."""
    pair = isinstance(value, (tuple, list)) and len(value) == 2
    if not pair or type(value[0]) not in (list, tuple):
        raise Wrong(f"{NAME} should return a pair: (clipped gradients, norm).", "wrong_structure")
    clipped = bench.read(value[0], p, built, log, NAME)
    if isinstance(value[1], (int, float, np.ndarray, np.generic)):
        raise Wrong(
            f"The norm is a {type(value[1]).__name__}, not a tf.Tensor: return the norm "
            "tf.clip_by_global_norm (or tf.linalg.global_norm) gives, as it is, without "
            "float() or .numpy(). Those take the number out of TensorFlow: inside a "
            "tf.function, where training steps run, there is no number yet and they fail.",
            "returned_numpy",
        )
    found = as_values(value[1], name="The norm", shape=(), dtype="float32")
    factor = float(found) / norm(gradients(p))
    power = np.isfinite(factor) and factor > 1.5  # a power of two: never unscaled
    if power and abs(np.log2(factor) - round(np.log2(factor))) < 1e-2:
        large = clip([factor * g for g in gradients(p)], p.clip_norm)
        if close(clipped, large, p) and not close(clipped, reference(p)["clipped"], p):
            raise Wrong(
                f"Your norm is {2 ** round(np.log2(factor)):g} times the true one, and you "
                "clipped gradients that large: they were not divided by loss_scale before "
                "clipping. Unscale first, then clip.",
                "forgot_unscale",
            )
    return {"clipped": clipped, "norm": found}


def _divided_again(got, p):
    """The unclipped gradients divided by a power of two of 1/4 or less: unscaled twice."""
    right = flat(gradients(p))
    telling = np.abs(right) > 1e-2 * np.max(np.abs(right))
    with np.errstate(divide="ignore", invalid="ignore"):
        power = np.round(np.log2(np.median(got[telling] / right[telling])))
    if not np.isfinite(power) or power > -2:
        return None
    return {} if close(got, right * 2.0**power, p, 2.0**power) else None


def _earlier_limit(got, p):
    """Clipped to the clip_norm of an earlier call (kept in a global or a default)."""
    for limit in getattr(p, "earlier", ()):
        if close(got, clip(gradients(p), limit), p):
            return {"earlier": f"{limit:.4g}"}
    return None


KEPT = (
    "Your gradients are clipped to {earlier}, the clip_norm of an earlier call, not to this "
    "call's {clip_norm}: a value kept between calls (a global, a default argument). Clip "
    "with each call's own clip_norm."
)
SUMMED = (
    "Your global norm is the sum of each gradient's own norm; the global norm is the square "
    "root of the sum of all their squares (tf.linalg.global_norm)."
)
_CLIPPED = {  # code: (hint, what the answer gives, the code's meaning)
    "clipped_before_unscaling": (
        "You clipped the scaled gradients, then unscaled them: unscale first, then clip.",
        lambda p: clip([p.loss_scale * g for g in gradients(p)], p.clip_norm) / p.loss_scale,
        "the scaled gradients clipped, then unscaled: norm clip / S",
    ),
    "clipped_per_tensor": (
        "Each gradient was clipped by its own norm (tf.clip_by_norm), not by the global one.",
        lambda p: flat(clip([g], p.clip_norm) for g in gradients(p)),
        "each gradient clipped by its own norm (tf.clip_by_norm)",
    ),
    "summed_norms": (
        SUMMED,
        lambda p: clip(gradients(p), p.clip_norm, summed_norm(p)),
        "the gradients' own norms added instead of their squares",
    ),
    "clipped_by_value": (
        "Each entry was clipped (tf.clip_by_value); clip the global norm instead.",
        lambda p: np.clip(flat(gradients(p)), -p.clip_norm, p.clip_norm),
        "each entry clipped (tf.clip_by_value) instead of the global norm",
    ),
    "always_rescaled": (
        "Your gradients were rescaled to clip_norm although their norm was below it.",
        lambda p: flat(gradients(p)) * p.clip_norm / norm(gradients(p)),
        "gradients rescaled to the limit even when their norm is below it",
    ),
    "not_clipped": (
        "Your gradients were not clipped, and their global norm is above clip_norm here.",
        lambda p: flat(gradients(p)),
        "a gradient that passes everywhere where it should be clipped",
    ),
    "wrong_clip_norm": (
        "Your gradients were clipped to a norm of 1.0, not to clip_norm ({clip_norm}).",
        lambda p: clip(gradients(p), 1.0),
        "a clip norm of its own instead of the one given",
    ),
}
PER_VARIABLE = (
    "Your norm is the {which} variable's own norm, not the global norm of all of them: the "
    "norm (and the clip) was taken one variable at a time, as tf.clip_by_global_norm([g], "
    "clip_norm) in a loop or tf.clip_by_norm do. Call tf.clip_by_global_norm once, on the "
    "whole list of unscaled gradients: it clips them together and returns their global norm."
)
_NORM = {
    "norm_after_clipping": (
        "Your norm is the clipped gradients'; return the norm before clipping.",
        lambda p: min(norm(gradients(p)), p.clip_norm),
        "the global norm of the clipped gradients returned",
    ),
    "summed_norms": (
        SUMMED,
        summed_norm,
        "the gradients' own norms added instead of their squares",
    ),
    "norm_per_variable": (
        PER_VARIABLE.replace("{which}", "first"),
        lambda p: norm(gradients(p)[:1]),
        "the norm of one variable's gradient where the global norm of all belongs",
    ),
    "norm_of_scaled_gradients": (
        "Your norm is the scaled gradients' (loss_scale times too large).",
        lambda p: p.loss_scale * norm(gradients(p)),
        "the global norm of the scaled gradients returned",
    ),
}
TWICE = "Your clipped gradients are the right ones divided by a power of two: unscaled twice."
EXERCISE = Exercise(
    number="7.4",
    title="Clip by global norm, after unscaling",
    stars=2,
    minutes=15,
    harness=bench.Step(
        NAME,
        build=bench.build,
        reset=bench.reset,
        read=read,
        untaped=("float32_copy", "No tape.gradient call differentiated model.trainable_variables."),
        method="the tape walked from the loss times loss_scale; the clipped gradients applied once",
        main="clipped",
        nouns={"clipped": "your clipped gradients", "norm": "your global norm"},
    ),
    probes=draw,
    reference=reference,
    tolerance=tolerance,
    mistakes=(
        *(Mistake(c, h, g, part="clipped", means=m) for c, (h, g, m) in _CLIPPED.items()),
        Pattern("unscaled_twice", TWICE, _divided_again, part="clipped"),
        Pattern("keeps_state", KEPT, _earlier_limit, part="clipped"),
        *(Mistake(c, h, g, part="norm", means=m) for c, (h, g, m) in _NORM.items()),
        Mistake(
            "norm_per_variable",
            PER_VARIABLE.replace("{which}", "last"),
            lambda p: norm(gradients(p)[-1:]),
            part="norm",
        ),
    ),
    describe={
        "clipped": "the unscaled gradients times clip_norm / max(norm, clip_norm)",
        "norm": "the global norm of the unscaled gradients",
    },
    claim="Your clipped gradients and norm match float64, and were applied once",
)
clipped_train_step = EXERCISE.check
