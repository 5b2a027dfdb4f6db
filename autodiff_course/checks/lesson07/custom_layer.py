"""Exercise 7.1: a softplus layer with a learnable slope, under mixed precision. The check
makes the layer class in float32 and under ``mixed_float16``; the float64 reference is at
the numbers the layer sees (inputs, slopes and ``slope * x`` rounded to its compute dtype)."""

from __future__ import annotations

import numpy as np

from ...checking.judging import Tolerance
from ...checking.keras_layer import KerasLayer
from ...checking.probes import upstream as draw_upstream
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Probe
from ...checking.spec import Symptom
from ...checking.spec import as_dtype


def _probe(rng, policy, shape, limit, label, fixed=(), scaled=False, xs=(1, 1.9)) -> Probe:
    dtype = "float32" if policy == "float32" else "float16"
    magnitudes = rng.choice(np.r_[np.arange(4, 16), np.arange(17, 33 - 8 * scaled)] / 16, shape[-1])
    signs = rng.choice([-1.0, 1.0], size=shape[-1])
    signs[:2] = (1.0, -1.0)[: shape[-1]]  # both signs: sigmoid(-a x) is never sigmoid(|a| x)
    slope = magnitudes * (1.0 if scaled else signs)
    z = slope * rng.uniform(*xs, size=shape) if scaled else rng.uniform(-limit, limit, shape)
    z.reshape(-1)[: len(fixed)] = fixed
    up = 2.0**15 * rng.uniform(0.6, 1.0, size=shape) if scaled else draw_upstream(rng, shape)
    up.reshape(-1)[:1] = 2.0**15 if scaled else up.reshape(-1)[:1]
    x = as_dtype(z / slope, dtype)
    big = bool(np.max(np.abs(up * x * np.exp(-np.logaddexp(0.0, -z)))) > 65504)
    data = {"policy": policy, "w": as_dtype(slope, "float32"), "scaled": scaled, "big": big}
    return Probe(dtype, x, upstream=as_dtype(up, dtype), data=data, label=label)


LARGE_TERMS = "a loss-scaled mixed_float16 batch with x from 3 to 4"


def draw(rng) -> list:
    """float32 inputs of shape (batch, features), (batch, time, features) and (1, 1) with
    a * x from -30 to 30 (0 and -25 among them); mixed_float16 ones with a * x from -15
    to 15 (past float16's exp overflow at 11.09: 11.5 and 14.5 among them), and one with
    an upstream scaled by 2**15 (x from 1 to 1.9, slopes 0.25 to 1.5) whose every
    term is below float16's 65504 and whose float16 sum over the batch is not, then one (x
    from 3 to 4) where a single term upstream * x * sigmoid(a x) passes 65504. Fresh slopes
    of both signs (0.25 to 2, never 1), upstreams of both signs."""
    b, t, f = (int(n) for n in rng.integers(2, 5, size=3))
    return [
        _probe(rng, "float32", (b + 1, f), 30.0, "a float32 batch", fixed=(0.0, -25.0, 25.0)),
        _probe(rng, "float32", (b, t, f), 30.0, "a float32 (batch, time, features) input"),
        _probe(rng, "float32", (1, 1), 30.0, "a float32 batch of 1 with 1 feature"),
        _probe(rng, "mixed_float16", (b + 2, f), 15.0, "a mixed_float16 batch", (11.5, 14.5, 0)),
        _probe(rng, "mixed_float16", (b + 4, 2), 0, "a loss-scaled mixed_float16 batch", (), True),
        _probe(rng, "mixed_float16", (3, 2), 0, LARGE_TERMS, (), True, xs=(3, 4)),
    ]


def _z(p):
    return as_dtype(as_dtype(p.w, p.dtype) * p.x, p.dtype)


def _s(p, sign=1.0):
    """sigmoid(sign * a x) at the numbers the layer sees."""
    return np.exp(-np.logaddexp(0.0, -sign * _z(p)))


def _sum(terms):
    return terms.reshape(-1, terms.shape[-1]).sum(axis=0)


def reference(p) -> dict:
    value, gradient = np.logaddexp(0.0, _z(p)), p.upstream * as_dtype(p.w, p.dtype) * _s(p)
    return {"value": value, "gradient": gradient, "grad_w": _sum(p.upstream * p.x * _s(p))}


def tolerance(p, part) -> Tolerance:
    loose = p.dtype == "float16"
    if part == "grad_w":
        scale = float(np.max(_sum(np.abs(p.upstream * p.x * _s(p)))))
        return Tolerance(1e-2 if loose else 2e-5, (1e-2 if loose else 1e-5) * scale)
    return Tolerance(1e-2, 1e-7 * float(np.max(np.abs(p.upstream)))) if loose else None


_FORMULAS = {  # code: (part, hint, what that part is, the code's meaning)
    "forgot_slope": (
        "gradient",
        "The gradient for x lacks the slope: d softplus(a x)/dx = a * sigmoid(a x), "
        "so return upstream * a * sigmoid(a x).",
        lambda p: p.upstream * _s(p),
        "d/dx of softplus(a x) without the factor a",
    ),
    "swapped_gradients": (
        "gradient",
        "x and the slope are swapped between your two gradients: d/dx is upstream * a * "
        "sigmoid(a x), d/da is upstream * x * sigmoid(a x).",
        lambda p: p.upstream * p.x * _s(p),
        "x and w swapped between the two gradients",
    ),
    "sigmoid_of_minus_x": (
        "gradient",
        "Your rule uses sigmoid(-a x): the derivative of softplus(z) is sigmoid(z), so "
        "both gradients take sigmoid(a x).",
        lambda p: p.upstream * as_dtype(p.w, p.dtype) * _s(p, -1.0),
        "sigmoid(-x) where sigmoid(x) belongs",
    ),
    "forgot_x": (
        "grad_w",
        "The slope's gradient lacks x: d softplus(a x)/da = x * sigmoid(a x), summed "
        "over every axis but the last.",
        lambda p: _sum(p.upstream * _s(p)),
        "d/dw of softplus(w x) without the factor x",
    ),
    "mean_not_sum": (
        "grad_w",
        "The slope's gradient is the mean of its terms, not their sum: every example "
        "adds its own contribution, so use tf.reduce_sum over every axis but the last.",
        lambda p: _sum(p.upstream * p.x * _s(p)) * np.shape(p.x)[-1] / np.size(p.x),
        "",
    ),
    "hard_coded": (
        "grad_w",
        "The slope's gradient is all ones whatever the input: compute it from "
        "upstream, x and sigmoid(a x).",
        lambda p: np.ones(np.shape(p.w)),
        "",
    ),
}


def _of_x(p):  # sigmoid(x), at the numbers the layer sees
    return np.exp(-np.logaddexp(0.0, -p.x))


SIGMOID_OF_X = (  # (part, what the answer has, what it gives)
    (
        "gradient",
        "upstream * a * sigmoid(x)",
        lambda p: p.upstream * as_dtype(p.w, p.dtype) * _of_x(p),
    ),
    ("gradient", "upstream * sigmoid(x), without the slope a", lambda p: p.upstream * _of_x(p)),
    ("grad_w", "upstream * x * sigmoid(x), summed", lambda p: _sum(p.upstream * p.x * _of_x(p))),
)
EXERCISE = Exercise(
    number="7.1",
    title="A softplus layer with a learnable slope, under mixed precision",
    stars=3,
    minutes=20,
    harness=KerasLayer("`SlopedSoftplus`", weight="slope", local="a * sigmoid(a x)"),
    probes=draw,
    reference=reference,
    tolerance=tolerance,
    mistakes=(
        *(Mistake(c, h, g, part=part, means=m) for c, (part, h, g, m) in _FORMULAS.items()),
        Mistake(  # in the slope's gradient only
            "sigmoid_of_minus_x",
            _FORMULAS["sigmoid_of_minus_x"][1],
            lambda p: _sum(p.upstream * p.x * _s(p, -1.0)),
            part="grad_w",
        ),
        *(
            Mistake(
                "sigmoid_of_x",
                f"Your rule computes {what}: the softplus is of a x, so the sigmoid in both "
                "gradients is sigmoid(a x), the slope of softplus at a x. Return upstream * a * "
                "sigmoid(a x) for x and upstream * x * sigmoid(a x), summed, for the slope.",
                gives,
                part=part,
                means="sigmoid(x) where sigmoid(a x) belongs",
            )
            for part, what, gives in SIGMOID_OF_X
        ),
        Symptom(
            "naive_softplus",
            "Your value is {value} at {points} (a x = ...): log(1 + exp(a x)) loses every "
            "digit far below 0 and overflows float16 above 11.09. Use tf.nn.softplus.",
            lambda got, p: (got == 0) | ~np.isfinite(got),
            region=lambda p: (_z(p) < -17) | (_z(p) > 11.09),
            at=_z,
            part="value",
            means="log(1 + exp(z)) for the value, which overflows (float16 from 11.09)",
        ),
        Symptom(
            "cancellation",
            "Your gradient for x is {value} at {points} (a x = ...), where sigmoid(a x) is "
            "small but not 0: a sigmoid written 1 - 1/(1 + exp(a x)) cancels there, as "
            "1 + exp(a x) rounds to 1 (lesson 03's documented rule). Use tf.sigmoid(a x).",
            lambda got, p: got == 0,
            region=lambda p: (_z(p) < -17) & (p.upstream != 0),
            at=_z,
            part="gradient",
        ),
        Symptom(
            "multiplied_in_float16",
            "The slope's gradient is {value} for a loss-scaled upstream, where one term "
            "upstream * x * sigmoid(a x) passes float16's largest number, 65504: the terms "
            "were multiplied in float16 and only their product cast to float32. Cast upstream, "
            "x and the sigmoid to float32 first, then multiply and sum.",
            lambda got, p: ~np.isfinite(got),
            region=lambda p: np.asarray(p.big),
            part="grad_w",
            means="a weight gradient's terms multiplied in float16, cast after (overflows)",
        ),
        Symptom(
            "summed_in_float16",
            "The slope's gradient is {value} for the loss-scaled upstream: its terms were "
            "summed in float16, whose largest number is 65504, and cast afterwards. Cast "
            "the terms to float32 first, then sum.",
            lambda got, p: ~np.isfinite(got),
            region=lambda p: np.asarray(p.scaled),
            part="grad_w",
            means="a weight's gradient summed in float16 and cast afterwards (overflows)",
        ),
    ),
    describe={
        "value": "softplus(a x) (tf.nn.softplus)",
        "gradient": "upstream * a * sigmoid(a x)",
        "grad_w": "upstream * x * sigmoid(a x) summed over every axis but the last",
    },
    claim="Your layer's value and both gradients match float64",
)
sloped_softplus = EXERCISE.check
