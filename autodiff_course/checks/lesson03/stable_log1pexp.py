"""Exercise 3.1: a stable log1pexp with a custom gradient, and the failure modes of
the log1pexp story (exercise 3.4 judges its layer with them too)."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import matches_where_finite
from ...checking import upstream as draw_upstream
from ...log1pexp import reference_sigmoid as _sigmoid
from ...log1pexp import reference_softplus as _softplus
from ...log1pexp import thresholds as _thresholds
from .shared import _as_dtype
from .shared import _fresh
from .shared import _input_gradient
from .shared import _record
from .shared import _regrad
from .shared import _require_rule_ran
from .shared import _sample
from .shared import _tf
from .shared import _value_fallback
from .shared import _wrong_gradient

# The float32 story: 1 + e^x rounds to 1 below about -16.6; 1/(1 + e^x) is below
# the smallest normal float from about 87.34 (flushed to 0 by the CPU); exp
# overflows above 88.72. The probes cover every region densely, both tails.
LOG1PEXP_FIXED_32 = np.concatenate(
    [
        [
            -100.0,
            -40.0,
            -30.0,
            -20.0,
            -17.5,
            -17.0,
            -16.7,
            -16.0,
            -15.0,
            -10.0,
            -3.0,
            -1.0,
            0.0,
            1.0,
            3.0,
            10.0,
            15.0,
            20.0,
            50.0,
            80.0,
            87.3,
        ],
        np.round(np.arange(874, 888) / 10.0, 1),  # 87.4 ... 88.7
        [88.72, 88.75, 88.8, 88.9, 89.0, 89.5, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 100.0, 120.0],
    ]
)
LOG1PEXP_FRESH_32 = [
    (-100.0, -16.7, 4),
    (-16.7, 20.0, 4),
    (20.0, 87.3, 3),
    (87.35, 88.7, 4),
    (88.73, 95.0, 4),
    (95.0, 120.0, 2),
]
LOG1PEXP_FIXED_64 = [
    -745.0,
    -50.0,
    -40.0,
    -37.0,
    -25.0,
    -21.0,
    -18.0,
    -17.0,
    0.0,
    16.0,
    18.0,
    20.0,
    21.0,
    22.5,
    25.0,
    28.0,
    36.0,
    40.0,
    700.0,
    708.0,
    708.3,
    708.4,
    709.0,
    709.7,
    709.78,
    709.8,
    710.0,
    720.0,
    800.0,
]
LOG1PEXP_FRESH_64 = [(-60.0, 60.0, 6), (700.0, 709.7, 3), (709.8, 800.0, 3)]


QUIET = (-5.0, 70.0)  # where every formula of the lesson is accurate in float32


def _quiet_ok(x, got, expected, tolerance) -> bool:
    """``got`` is right where no failure mode of the story can act (or nothing is there)."""
    quiet = (x >= QUIET[0]) & (x <= QUIET[1])
    return bool(matches(got[quiet], expected[quiet], tolerance.rtol, tolerance.atol))


def _failure_modes(x, values, local, dtype, *, forward=True, backward=True, scale=1.0):
    """The log1pexp failure modes present in ``values``/``local``, as (code, text).

    A mode is reported only for the part (``forward`` value, ``backward`` local
    derivative) that is right elsewhere: a formula wrong everywhere has another
    mistake, whatever it gives at the far ends. ``scale`` is what multiplies the
    local derivative in the gradient (the upstream, times w in 3.4): where the true
    gradient is below the smallest normal number, a 0.0 is the CPU's flush.
    """
    limits = _thresholds(dtype)
    name = limits.dtype
    # Below the smallest normal number a 0.0 is the CPU's flush, not the formula's fault.
    negative = (x <= limits.cancellation) & (_sigmoid(x) >= limits.smallest_normal)
    negative_gradient = negative & (np.abs(scale * _sigmoid(x)) >= limits.smallest_normal)
    band = (x > limits.flush_start) & (x < limits.overflow)
    over = x > limits.overflow
    found = []
    if forward and over.any() and not np.all(np.isfinite(values[over])):
        found.append(
            (
                "forward_overflow",
                f"the value is {values[over][~np.isfinite(values[over])][0]} at x = "
                f"{_sample(x[over][~np.isfinite(values[over])])}: exp(x) overflows "
                f"{name} above x = {limits.overflow:.2f}, so log(1 + exp(x)) is "
                f"log(inf). Compute the forward value with tf.nn.softplus(x)",
            )
        )
    if forward and negative.any() and np.any(values[negative] == 0.0):
        found.append(
            (
                "forward_rounds_to_zero",
                f"the value is 0.0 at x = "
                f"{_sample(np.sort(x[negative][values[negative] == 0])[::-1])}"
                f": 1 + e^x rounds to exactly 1 in {name} below x = "
                f"{limits.cancellation:.1f}, and log(1) = 0. tf.nn.softplus (or "
                f"tf.math.log1p) keeps those tiny values",
            )
        )
    if backward and band.any() and np.any(local[band] == 0.0):
        found.append(
            (
                "flush_to_zero",
                f"the gradient is 0.0 at x = {_sample(x[band][local[band] == 0])}, "
                f"where it should be about 1: 1/(1 + e^x) is below the smallest "
                f"normal {name} there and the CPU flushes it to 0, so e^x times it "
                f"is 0. The backward must not multiply by 1/(1 + e^x): use "
                f"tf.sigmoid(x)",
            )
        )
    if backward and over.any() and not np.all(np.isfinite(local[over])):
        found.append(
            (
                "backward_overflow_nan",
                f"the gradient is nan at x = "
                f"{_sample(x[over][~np.isfinite(local[over])])}: the backward "
                f"computes e^x, which is inf there, and then inf/inf or 0 * inf. "
                f"e^x/(1 + e^x) equals tf.sigmoid(x), which never overflows",
            )
        )
    if backward and negative_gradient.any() and np.any(local[negative_gradient] == 0.0):
        zeros = x[negative_gradient][local[negative_gradient] == 0]
        found.append(
            (
                "documented_rule_cancellation",
                f"the gradient is exactly 0.0 at x = "
                f"{_sample(np.sort(zeros)[::-1])}: "
                f"1/(1 + e^x) rounds "
                f"to 1 there and a subtraction such as 1 - 1/(1 + e^x) cancels "
                f"everything. tf.sigmoid(x) keeps the tiny value",
            )
        )
    return found


def _raise_failure_modes(found) -> None:
    if found:
        listed = "; ".join(f"({i}) {text}" for i, (_, text) in enumerate(found, 1))
        modes = "failure mode" if len(found) == 1 else "failure modes"
        raise Wrong(f"Still {len(found)} {modes} of the log1pexp story: {listed}.", found[0][0])


def _judge_log1pexp(x, values, gradient, up, dtype, tolerance, where: str, regrad=None) -> None:
    """Value and gradient of one probe set; raises :class:`Wrong` with the hint."""
    s = _sigmoid(x)
    with np.errstate(all="ignore"):
        local = gradient / up
    for code, hint, wrong in [
        (
            "differentiated_twice",
            "Your gradient is e^x/(1 + e^x)^2 = sigmoid(x) * (1 - sigmoid(x)), the derivative "
            "of sigmoid: one differentiation too many. d/dx log(1 + e^x) = sigmoid(x).",
            s * _sigmoid(-x),
        ),
        (
            "value_not_derivative",
            "Your gradient function returns the value log(1 + e^x) again; it must return "
            "upstream times the derivative, sigmoid(x).",
            _softplus(x),
        ),
        (
            "sigmoid_of_minus_x",
            "Your gradient is sigmoid(-x) = 1/(1 + e^x): check the sign of the exponent. The "
            "derivative of log(1 + e^x) is e^x/(1 + e^x) = sigmoid(x).",
            _sigmoid(-x),
        ),
    ]:
        # Whole-pattern mistakes first: they too underflow or overflow at the far ends,
        # but that is not what needs fixing.
        if matches_where_finite(local, wrong) and not matches_where_finite(local, s):
            raise Wrong(hint, code)
    if matches_where_finite(gradient, s) and not matches_where_finite(local, s):
        raise Wrong(
            "Your gradient is sigmoid(x) whatever arrives from above: the grad_fn "
            "ignores `upstream`. Correct when the output itself is the target "
            "(upstream = 1), wrong inside any chain. Return upstream * "
            "tf.sigmoid(x).",
            "forgot_upstream",
        )
    expected_value = _softplus(x)
    _raise_failure_modes(
        _failure_modes(
            x,
            values,
            local,
            dtype,
            forward=_quiet_ok(x, values, expected_value, tolerance),
            backward=_quiet_ok(x, local, s, tolerance),
            scale=up,
        )
    )
    if not matches(values, expected_value, tolerance.rtol, tolerance.atol):
        known = [
            (
                "value_is_sigmoid",
                "The first thing your function returns is sigmoid(x), the derivative. "
                "Return the value log(1 + e^x) first and the gradient function second.",
                s,
            )
        ]
        _threshold_slip(x, values, x, "value", "x itself", tolerance)
        raise _value_fallback(
            values,
            expected_value,
            summary=f"{where}, the forward value is not log(1 + e^x).",
            x=x,
            tolerance=tolerance,
            what="your value",
            known=known,
        )
    expected = up * s
    if not matches(gradient, expected, tolerance.rtol, tolerance.atol):
        _threshold_slip(x, local, np.ones_like(x), "gradient", "exactly 1", tolerance)
        raise _wrong_gradient(
            gradient,
            expected,
            summary=f"{where}, the gradient is not upstream * sigmoid(x).",
            x=x,
            up=up,
            tolerance=tolerance,
            regrad=regrad,
            local=s,
            local_name="sigmoid(x)",
        )


def _threshold_slip(x, got, shortcut, what, words, tolerance) -> None:
    """A ``tf.where(x > t, shortcut, formula)`` that only float32 forgives."""
    with np.errstate(all="ignore"):
        expected = _softplus(x) if what == "value" else _sigmoid(x)
        off = ~(
            (np.abs(got - expected) <= tolerance.rtol * np.abs(expected) + tolerance.atol)
            & np.isfinite(got)
        )
    if tolerance is FLOAT64 and off.any() and np.all(got[off] == shortcut[off]):
        raise Wrong(
            f"In float64 your {what} is {words} at x = {_sample(x[off])}, where the "
            f"true {what} differs from it by more than float64 rounding: a switch "
            f"such as tf.where(x > 20, ...) is exact in float32, but float64 keeps "
            f"about 16 digits. tf.nn.softplus and tf.sigmoid need no threshold.",
            "float32_threshold",
        )


def _probe(answer, name, x_in, upstream, dtype, *, rule_first=False):
    """The answer recorded at ``x_in``: (recording, its value, the gradient for x)."""
    recorded = _record(answer, _tf().constant(x_in), name)
    values = as_values(recorded.value, name=name, shape=x_in.shape, dtype=dtype)
    gradient = _input_gradient(recorded, upstream, x_in.shape, dtype, rule_first=rule_first)
    return recorded, values, gradient


def _rule_produced_the_gradient(log, gradient) -> bool:
    """Some run of the learner's grad_fn returned exactly the gradient the tape gave."""
    for call in log.custom_calls:
        for _, returned in call.backward:
            first = returned[0] if returned else None
            try:
                got = np.asarray(first.numpy(), dtype=np.float64)
            except Exception:  # noqa: BLE001 - None, a Python number, a wrong shape
                continue
            if got.shape == np.shape(gradient) and np.allclose(
                got, gradient, rtol=1e-6, atol=0.0, equal_nan=True
            ):
                return True
    return False


@exercise("3.1", "a stable log1pexp with a custom gradient")
def log1pexp_stable(answer):
    """Probes (fresh on every call, on top of fixed points):

    * float32, one vector: both tails (-100 ... -15, with -17 and -16.7 where
      1 + e^x rounds to 1), 0, the whole flush band 87.4-88.7 in steps of 0.1
      plus fresh points in it, past exp's overflow at 88.72 (88.72, 88.75, 88.8,
      ... 95, 100, 120, fresh points in (88.73, 95]), 87.3 and 80;
    * float32, a fresh (2, 3) batch and a scalar (any shape, shape kept);
    * float64 (dtype in = dtype out), judged to 1e-11: -745 ... 60 (with
      -25 ... -17 and 16 ... 28, where float32-only thresholds fail), and 700-800
      (708.4 where float64 flushes, 709.78 where it overflows);
    * upstreams of both signs, never 1, so a forgotten ``upstream *`` shows.

    Method: a ``@tf.custom_gradient`` rule ran and its grad_fn returned the very
    gradient the tape gave (plain ``tf.nn.softplus`` is not the exercise).
    """
    rng = fresh_rng("3.1")
    name = "`log1pexp_stable`"
    tf = _tf()
    x32, x = _as_dtype(_fresh(rng, LOG1PEXP_FIXED_32, LOG1PEXP_FRESH_32), np.float32)
    up32, up = _as_dtype(draw_upstream(rng, x.shape), np.float32)
    recorded, values, gradient = _probe(answer, name, x32, up32, tf.float32, rule_first=True)
    _require_rule_ran(recorded.log, "The numbers come from TensorFlow, not from you.")
    if not _rule_produced_the_gradient(recorded.log, gradient):
        raise Wrong(
            "Your @tf.custom_gradient rule ran, but the gradient the tape returned "
            "is not what your grad_fn returned: TensorFlow's own rules for the "
            "operations between x and your output produced it. Put the decorator "
            "on log1pexp_stable itself, so that its grad_fn maps the upstream of "
            "the output to the gradient for x.",
            "custom_gradient_not_used",
        )
    _judge_log1pexp(
        x,
        values,
        gradient,
        up,
        "float32",
        FLOAT32,
        "In float32",
        _regrad(recorded, name, x.shape, tf.float32),
    )

    # Other shapes: a fresh (2, 3) batch across the regions, and a scalar.
    batch = np.stack([rng.uniform(-30.0, 30.0, 3), rng.uniform(87.4, 95.0, 3)])
    for probe in (batch, np.array(rng.uniform(-20.0, 100.0))):
        p32, p = _as_dtype(np.round(probe, 3), np.float32)
        u32, u = _as_dtype(draw_upstream(rng, p.shape), np.float32)
        shaped, v, g = _probe(answer, name, p32, u32, tf.float32)
        _judge_log1pexp(
            p,
            v,
            g,
            u,
            "float32",
            FLOAT32,
            f"For an input of shape {p.shape}",
            _regrad(shaped, name, p.shape, tf.float32),
        )

    # float64: the same story much further out.
    x64 = _fresh(rng, LOG1PEXP_FIXED_64, LOG1PEXP_FRESH_64)
    up64 = draw_upstream(rng, x64.shape)
    recorded64, values64, g64 = _probe(answer, name, x64, up64, tf.float64)
    _judge_log1pexp(
        x64,
        values64,
        g64,
        up64,
        "float64",
        FLOAT64,
        "In float64",
        _regrad(recorded64, name, x64.shape, tf.float64),
    )
    return (
        f"Value and gradient accurate at {x.size} float32 points from {x.min():g} to "
        f"{x.max():g} (the flush band 87.4-88.7, past the overflow at 88.72, below "
        f"-17), in a (2, 3) batch and a scalar, and at {x64.size} float64 points "
        f"from {x64.min():g} to {x64.max():g}; with upstreams other than 1; your "
        f"grad_fn produced the gradient."
    )
