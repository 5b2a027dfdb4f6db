"""Exercise 3.3: clip the upstream gradient where it enters a layer."""

from __future__ import annotations

import numpy as np

from ...checking.judging import matches
from ...checking.on_tape import OnTape
from ...checking.probes import signed
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern
from ...checking.spec import Points
from ...checking.spec import Probes
from ...checking.spec import as_dtype


def clip(u):
    return np.clip(u, -1.0, 1.0)


def _upstream(rng, probe) -> dict:
    """Upstreams of both signs: beyond [-1, 1] (3, -4, -2.5) where |x| is largest, exactly
    +-1 and +-0.5 next, one 0 (so u / |u| is nan), and fresh ones up to 4 in size."""
    order = np.argsort(-np.abs(probe.x), axis=None)
    up = signed(rng, probe.x.size, 0.2, 4.0, 2)
    fixed = [3.0, -4.0, -2.5, 1.0, -1.0, 0.5, -0.5]
    up[order[: len(fixed)]] = fixed[: up.size]
    if up.size >= 3:
        up[order[-1]] = 0.0
    return {"upstream": as_dtype(up.reshape(probe.x.shape), probe.dtype)}


def _other_range(got, p):
    """The gradient is clip(upstream, low, high) * 3x^2 for another range than [-1, 1]."""
    local = 3.0 * p.x**2
    usable = np.abs(local) > 1e-3
    if usable.sum() < 3:
        return None
    ratio = got[usable] / local[usable]
    low, high = float(np.min(ratio)), float(np.max(ratio))
    if high - low < 1e-6 or not matches(got, np.clip(p.upstream, low, high) * local, 1e-5, 1e-9):
        return None
    lo = "no lower limit" if low <= p.upstream.min() + 1e-9 else f"a lower limit of {low:g}"
    hi = "no upper limit" if high >= p.upstream.max() - 1e-9 else f"an upper limit of {high:g}"
    return {"low": lo, "high": hi}


def _sign_lost(got, p):
    """Right inside [-1, 1], but every upstream beyond it, of either sign, replaced by one
    constant c: tf.where(tf.abs(upstream) <= 1, upstream, 1.0) times 3x^2."""
    local = 3.0 * p.x**2
    inside, outside = np.abs(p.upstream) <= 1.0, (np.abs(p.upstream) > 1.0) & (local > 1e-3)
    signs = np.sign(p.upstream[outside])
    if not (signs > 0).any() or not (signs < 0).any():
        return None
    c = got[outside] / local[outside]
    if not matches(got[inside], (p.upstream * local)[inside], 1e-5, 1e-9):
        return None
    if abs(c[0]) < 1e-6 or not matches(c, np.full_like(c, c[0]), 1e-5, 1e-9):
        return None
    return {"c": f"{c[0]:g}"}


def _nan_where_negative(got, p):
    """nan at every x < 0 and right elsewhere: a fractional power of a negative number,
    (x**3) ** (2/3) for x**2."""
    negative = p.x < 0
    if not negative.any() or not np.array_equal(~np.isfinite(got), negative):
        return None
    want = clip(p.upstream) * 3.0 * p.x**2
    if not matches(got[~negative], want[~negative], 1e-4, 1e-9):
        return None
    return {"points": ", ".join(f"{v:g}" for v in p.x[negative][:3]) + ", ..."}


def _other_power(got, p):
    """The clipped upstream times c x^k with another power k of x than 2 (3x, 2x, 3x^3):
    the power rule applied wrong, d/dx x^3 = 3x^2."""
    up = clip(p.upstream)
    usable = (np.abs(up) > 1e-6) & (np.abs(p.x) > 1e-3)
    if usable.sum() < 3:
        return None
    for k in (1, 3, 0, 4):
        local = p.x[usable] ** k
        c = float(np.median(got[usable] / (up[usable] * local)))
        if abs(c) > 1e-6 and matches(got, c * up * p.x**k, 1e-5, 1e-9):
            c_text = f"{c:.4g}" if abs(c - round(c)) > 1e-4 else f"{round(c)}"
            local_text = {0: c_text, 1: f"{c_text}x"}.get(k, f"{c_text}x^{k}")
            return {"local": local_text, "k": k}
    return None


EXERCISE = Exercise(
    number="3.3",
    title="Clip where the gradient enters a layer",
    stars=2,
    minutes=10,
    harness=OnTape(
        "`cube_with_clipped_upstream`",
        upstream_transform=clip,
        local="3x^2",
        without_rule="Nothing was clipped by a rule of yours:",
    ),
    probes=Probes(
        points={
            "float32": Points((-2.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.0), ((-2.5, 2.5, 7),)),
            "float64": Points((-1.5, 0.0, 1.5), ((-2.5, 2.5, 9),)),
        },
        shapes={"float64": ((3, 4),)},
        data=_upstream,
    ),
    reference=lambda p: {"value": p.x**3, "gradient": clip(p.upstream) * 3.0 * p.x**2},
    mistakes=(
        Mistake(
            "clipped_forward",
            "Your forward clips the value; the layer's output is x**3 unchanged. Only the "
            "backward rule clips.",
            lambda p: clip(p.x**3),
            part="value",
            means="the forward value clipped, where only the backward clips",
        ),
        Mistake(
            "clipped_forward",
            "Your forward clips x before cubing; the layer's output is x**3 unchanged. Only "
            "the backward rule clips.",
            lambda p: clip(p.x) ** 3,
            part="value",
        ),
        Mistake(
            "clipped_after_local",
            "You clipped the product upstream * 3x^2, so the result never leaves [-1, 1]. "
            "Clip the upstream first, then multiply by the local derivative 3x^2.",
            lambda p: clip(p.upstream * 3.0 * p.x**2),
            part="gradient",
            means="the clip applied after multiplying by the local derivative",
        ),
        Mistake(
            "not_clipped",
            "Nothing was clipped: the gradient is upstream * 3x^2. Clip the upstream to "
            "[-1, 1] with tf.clip_by_value before multiplying.",
            lambda p: p.upstream * 3.0 * p.x**2,
            part="gradient",
            means="a gradient that passes everywhere where it should be clipped",
        ),
        Mistake(
            "forgot_local_derivative",
            "You returned the clipped upstream alone; multiply it by the layer's local "
            "derivative 3x^2.",
            lambda p: clip(p.upstream),
            part="gradient",
        ),
        Mistake(
            "forgot_upstream",
            "Your gradient ignores the upstream (you clipped the local derivative): it must "
            "be clip(upstream, -1, 1) * 3x^2.",
            lambda p: clip(3.0 * p.x**2),
            part="gradient",
        ),
        Mistake(
            "forgot_upstream",
            "Your gradient is 3x^2 whatever the upstream, what the right rule gives for an "
            "upstream of 1: the rule ignores `upstream`, or its clip turns every upstream into "
            "1 (tf.clip_by_value(upstream, 1.0, -1.0), with the bounds swapped, does). The "
            "gradient is tf.clip_by_value(upstream, -1.0, 1.0) * 3x^2, lower bound first.",
            lambda p: 3.0 * p.x**2,
            part="gradient",
        ),
        Mistake(
            "clipped_norm",
            "You clipped the norm of the whole upstream tensor (tf.clip_by_norm), which "
            "rescales every entry. This exercise clips each entry to [-1, 1] with "
            "tf.clip_by_value.",
            lambda p: p.upstream * min(1.0, 1.0 / np.sqrt(np.sum(p.upstream**2))) * 3 * p.x**2,
            part="gradient",
            means="tf.clip_by_norm (the whole tensor) where each entry is clipped",
        ),
        Mistake(
            "clipped_local_derivative",
            "You clipped the local derivative 3x^2, not the upstream: upstream * clip(3x^2) "
            "scales with the upstream, but the clip acts on the upstream: clip(upstream, -1, "
            "1) * 3x^2.",
            lambda p: p.upstream * clip(3.0 * p.x**2),
            part="gradient",
            means="the local derivative clipped where the upstream should be",
        ),
        Mistake(
            "clipped_input",
            "You clipped x inside the local derivative; the clip acts on the upstream: "
            "clip(upstream, -1, 1) * 3x^2.",
            lambda p: p.upstream * 3.0 * clip(p.x) ** 2,
            part="gradient",
        ),
        Pattern(
            "wrong_clip_range",
            "Your rule clips the upstream with {low} and {high}; the exercise clips each "
            "entry to [-1, 1]: tf.clip_by_value(upstream, -1.0, 1.0), then times 3x^2.",
            _other_range,
            part="gradient",
            means="the upstream clipped to another range than [-1, 1]",
        ),
        Pattern(
            "wrong_power",
            "Your rule multiplies the clipped upstream by {local}, not by the local derivative "
            "3x^2: the power of x is off. By the power rule, d/dx x^3 = 3 * x**2: the exponent "
            "3 comes down as the factor and the power drops by one, to 2 (not to {k}).",
            _other_power,
            part="gradient",
        ),
        Pattern(
            "clip_sign_lost",
            "Your rule is right for upstreams inside [-1, 1], but turns every upstream beyond "
            "it into {c}, whatever its sign: a large negative upstream must become -1 and a "
            "large positive one +1. tf.clip_by_value(upstream, -1.0, 1.0) keeps the sign "
            "(by hand: tf.sign(upstream) where |upstream| > 1), then times 3x^2.",
            _sign_lost,
            part="gradient",
            means="upstreams beyond the clip replaced by one constant whatever their sign",
        ),
        Pattern(
            "fractional_power_of_negative",
            "Your gradient is nan at every negative x (x = {points}) and right elsewhere: "
            "a fractional power of a negative number is nan, as in (x**3) ** (2/3) or tf.pow "
            "of the output y = x**3 < 0. Take the local derivative from x itself: 3 * x**2.",
            _nan_where_negative,
            part="gradient",
            means="nan from a fractional power of a negative number",
        ),
    ),
    describe={"value": "x**3", "gradient": "clip(upstream, -1, 1) * 3x^2"},
    claim="Forward x**3; backward clip(upstream, -1, 1) * 3x^2 (clip first, then the local "
    "derivative), with upstreams inside, on and outside [-1, 1] and 0",
)
clipped_upstream = EXERCISE.check
