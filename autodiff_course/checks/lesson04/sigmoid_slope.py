"""Exercise 4.3: a sigmoid whose gradient keeps its relative accuracy on both tails."""

from __future__ import annotations

import numpy as np

from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import close_points
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import points
from ...checking import record_answer
from ...checking import require_custom_backward_ran
from ...checking import tensor
from ...checking import tolerance_for
from ...checking import upstream
from ...checking.observing import MethodLog
from ...log1pexp import reference_sigmoid as _sigmoid
from .judging import _judge

SIGMOID_BOUNDARIES = (
    -100.0,
    -50.0,
    -20.0,
    -15.0,
    -10.0,
    -2.0,
    0.0,
    2.0,
    10.0,
    15.0,
    20.0,
    50.0,
    100.0,
)


def _sigmoid_slope(x):
    """sigmoid(x) * sigmoid(-x) in float64, without cancellation or overflow."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, x) - np.logaddexp(0.0, -x))


def _formula_in_dtype(kind: str, x, dy):
    """What a common wrong backward formula gives in the probe's own dtype."""
    import tensorflow as tf

    if kind in ("cancellation", "cancellation_mirrored"):
        s = tf.sigmoid(x if kind == "cancellation" else -x)
        return (dy * s * (1 - s)).numpy().astype(np.float64)
    e = tf.exp(-x if kind == "exp" else x)
    return (dy * e / (1 + e) ** 2).numpy().astype(np.float64)


_EXP_HINT = (
    "Right near 0, wrong on a tail: your slope gives what e^-x / (1 + e^-x)**2 gives in "
    "this dtype, and a slope built from exp loses the small value on a tail (in float32, "
    "(1 + e^50)**2 passes the largest number, 3.4e38, and the square of a number below about "
    "1e-19 is flushed to 0). Express the slope with sigmoids only: "
    "sigmoid(x) * sigmoid(-x)."
)


def _raise_if_lost_on_the_far_tails(got, expected, x_values, dtype) -> None:
    """Right for |x| <= 20, but nan, inf or a flushed 0 out at |x| >= 40: an exp-built
    slope (whatever its exact formula) overflowing or underflowing there."""
    near, far = np.abs(x_values) <= 20.0, np.abs(x_values) >= 40.0
    with np.errstate(invalid="ignore"):
        lost = far & (~np.isfinite(got) | ((got == 0.0) & (np.abs(expected) > 1e-30)))
    if lost.any() and near.any() and matches(got[near], expected[near], 1e-3, 1e-30):
        where = ", ".join(f"{v:g}" for v in np.asarray(x_values)[lost][:3])
        raise Wrong(_EXP_HINT + f" (In {dtype}, at x = {where}.)", "exp_overflow")


@exercise("4.3", "a sigmoid whose gradient stays accurate")
def smooth_sigmoid(answer):
    """``smooth_sigmoid(x)``: sigmoid forward; ``upstream * s(x) * s(-x)`` backward.

    Method (observed): a ``@tf.custom_gradient`` function whose ``grad_fn`` ran and
    produced the gradient the tape returned. Probes, fresh on every call: the
    boundaries ±10, ±15, ±20 (where 1 - sigmoid(x) cancels in float32), ±50 (where
    exp(50) squared overflows float32), ±100 in float32 only (past the overflow of exp,
    where the true slope is below float32's smallest normal: 0 is accepted, nan is not),
    ±2 and 0, plus 8 points in [-50, 50]; in float32
    as a vector and in float64 as a (2, m) matrix (dtype in = dtype out), with an
    upstream gradient of both signs that is never 1. Value and gradient are judged
    point by point in relative terms (float64 to 1e-11) against float64 closed forms.
    """
    rng = fresh_rng("4.3")
    for dtype, reshape in (("float32", None), ("float64", 2)):
        boundaries = SIGMOID_BOUNDARIES if dtype == "float32" else SIGMOID_BOUNDARIES[1:-1]
        x_values = points(rng, -50.0, 50.0, 8, include=boundaries)
        if reshape and x_values.size % reshape:  # drop a drawn point, keep the boundaries
            drawn = np.flatnonzero(~np.isin(x_values, boundaries))
            x_values = np.delete(x_values, drawn[-1])
        if reshape:
            x_values = x_values.reshape(reshape, -1)
        dy_values = upstream(rng, x_values.shape)
        x, dy = tensor(x_values, dtype), tensor(dy_values, dtype)
        tol = tolerance_for(dtype)
        try:
            recorded = record_answer(answer, x, name="`smooth_sigmoid`")
        except Wrong as wrong:
            raise wrong from None
        value = as_values(
            recorded.value, name="`smooth_sigmoid`", shape=x_values.shape, dtype=x.dtype
        )
        _judge(
            value,
            _sigmoid(x_values),
            tol,
            at=x_values,
            what="your forward value",
            summary="The forward value should be sigmoid(x) = 1/(1 + e^-x).",
            known=[
                (
                    "slope_as_value",
                    "Your function returns sigmoid's slope "
                    "s(x) * s(-x) as its value. The forward value is sigmoid(x) "
                    "itself; the slope belongs in grad_fn.",
                    _sigmoid_slope(x_values),
                ),
                (
                    "wrong_value",
                    "Your forward value is sigmoid(-x) (or 1 - sigmoid(x)): "
                    "the sign of x is flipped. The forward value is sigmoid(x).",
                    _sigmoid(-x_values),
                ),
                (
                    "wrong_value",
                    "Your forward value is softplus(x) = log(1 + e^x), "
                    "the function whose slope is the sigmoid. This exercise's function "
                    "is the sigmoid itself: return tf.sigmoid(x).",
                    np.logaddexp(0.0, x_values),
                ),
                (
                    "wrong_value",
                    "Your forward value is the input itself: return "
                    "sigmoid(x) as the value, and put the slope in grad_fn.",
                    x_values,
                ),
            ],
            before_generic=lambda: _wrong_on_one_tail(
                value, _sigmoid(x_values), x_values, tol, what="value"
            ),
        )
        try:
            gradient = recorded.gradient(dy, label="Your grad_fn")[0]
        except Wrong as wrong:
            raise wrong from None
        require_custom_backward_ran(recorded.log)
        if gradient is None:
            raise Wrong(
                "Your grad_fn returned None: it must return a tensor shaped like x, "
                "upstream times the local derivative.",
                "returned_none",
            )
        got = as_values(gradient, name="Your grad_fn", shape=x_values.shape, dtype=x.dtype)
        _require_rule_produced(recorded.log, got)
        slope = _sigmoid_slope(x_values)
        expected = dy_values * slope
        if matches(got, expected, tol.rtol, tol.atol):
            continue
        loose = 1e-3
        for kind, code, hint in (
            (
                "cancellation",
                "sigmoid_cancellation",
                "Right near 0, wrong on the positive tail: s * (1 - s) cancels once "
                "s = sigmoid(x) rounds to nearly 1 (in float32 from about x = 10; it is "
                "exactly 0 by x = 17). That is also what TensorFlow's own sigmoid "
                "gradient computes. Write 1 - sigmoid(x) as sigmoid(-x).",
            ),
            (
                "cancellation_mirrored",
                "sigmoid_cancellation",
                "Right near 0, wrong on the negative tail: s * (1 - s) with s = "
                "sigmoid(-x) cancels once s rounds to nearly 1, that is for large "
                "negative x. A subtraction 1 - sigmoid(...) loses the small number on "
                "one tail or the other; the product sigmoid(x) * sigmoid(-x) has none.",
            ),
            ("exp", "exp_overflow", _EXP_HINT),
            ("exp_positive", "exp_overflow", _EXP_HINT),
        ):
            simulated = _formula_in_dtype(kind, x, dy)
            same_nan = np.array_equal(np.isnan(got), np.isnan(simulated))
            finite = ~np.isnan(simulated)
            if (
                same_nan
                and matches(got[finite], simulated[finite], loose, 1e-30)
                and not matches(simulated, expected, loose, 1e-30)
            ):
                raise Wrong(hint + f" (Checked in {dtype}.)", code)
        _raise_if_lost_on_the_far_tails(got, expected, x_values, dtype)
        _judge(
            got,
            expected,
            tol,
            at=x_values,
            what="your gradient",
            summary=f"Not upstream * sigmoid(x) * sigmoid(-x) in {dtype}.",
            known=[
                (
                    "forgot_upstream",
                    "Your gradient ignores the upstream gradient: "
                    "grad_fn must return upstream * (local derivative), and the check "
                    "passes an upstream that is not 1.",
                    slope,
                ),
                (
                    "softplus_slope",
                    "Your grad_fn returns upstream * sigmoid(x), the "
                    "slope of softplus. The slope of sigmoid itself is "
                    "sigmoid(x) * sigmoid(-x).",
                    dy_values * _sigmoid(x_values),
                ),
                (
                    "forgot_local_derivative",
                    "Your grad_fn returns the upstream gradient "
                    "unchanged: multiply it by the local derivative, "
                    "sigmoid(x) * sigmoid(-x).",
                    dy_values,
                ),
                (
                    "reduced_dy",
                    "Your grad_fn reduces the upstream gradient to one number "
                    "(tf.reduce_sum or tf.reduce_mean): each element's gradient is its own "
                    "upstream times its own slope, element by element.",
                    np.sum(dy_values) * slope,
                ),
                (
                    "reduced_dy",
                    "Your grad_fn reduces the upstream gradient to one number "
                    "(tf.reduce_mean or tf.reduce_sum): each element's gradient is its own "
                    "upstream times its own slope, element by element.",
                    np.mean(dy_values) * slope,
                ),
                (
                    "wrong_local_derivative",
                    "Your grad_fn multiplies by sigmoid(x) twice: the "
                    "second factor of the slope is sigmoid(-x), not sigmoid(x).",
                    dy_values * _sigmoid(x_values) ** 2,
                ),
            ],
            before_generic=lambda: _explain_slope(
                recorded, got, expected, x, x_values, dy_values, slope, tol, rng
            ),
        )
    return (
        "Your @tf.custom_gradient rule produced the gradient, with the upstream "
        "applied, accurate in relative terms on both tails (|x| up to 50, and finite "
        "at ±100) in float32 and to float64 precision."
    )


def _explain_slope(recorded, got, expected, x, x_values, dy_values, slope, tol, rng):
    """After the known mistakes: a wrong tail, or an upstream applied right to a wrong slope."""
    _wrong_on_one_tail(got, expected, x_values, tol)
    other = upstream(rng, np.shape(dy_values))
    try:
        again = recorded.gradient(tensor(other, x.dtype.name), label="Your grad_fn")[0]
        again = as_values(again, name="Your grad_fn", shape=np.shape(got))
    except Wrong:
        return
    local = got / dy_values
    try:
        doubled = recorded.gradient(tensor(2.0 * dy_values, x.dtype.name), label="Your grad_fn")[0]
        doubled = as_values(doubled, name="Your grad_fn", shape=np.shape(got))
    except Wrong:
        return
    try:
        negated = recorded.gradient(tensor(-dy_values, x.dtype.name), label="Your grad_fn")[0]
        negated = as_values(negated, name="Your grad_fn", shape=np.shape(got))
    except Wrong:
        return
    if np.all(np.isfinite(got)) and not (
        matches(doubled, 2.0 * got, 1e-5, 1e-30) and matches(negated, -got, 1e-5, 1e-30)
    ):
        raise Wrong(
            "Your grad_fn does not scale with the upstream gradient: with an "
            "upstream twice as large, or of the opposite sign, its result is not "
            "twice as large, or of the opposite sign. It must return upstream times "
            "the local derivative, with the upstream as a plain factor (not squared, "
            "not added, not inside tf.abs).",
            "upstream_not_linear",
        )
    if not (np.all(np.isfinite(local)) and matches(again / other, local, 1e-5, 1e-30)):
        return
    index = np.unravel_index(
        int(np.argmax(~close_points(got, expected, tol.rtol, tol.atol))), np.shape(got)
    )
    raise Wrong(
        f"Your grad_fn multiplies the upstream gradient, element by element, by "
        f"one local factor per x, as it should, but that factor is not sigmoid's "
        f"slope: at x = {x_values[index]:.6g} it is {local[index]:.6g}, and "
        f"sigmoid(x) * sigmoid(-x) is {slope[index]:.6g}.",
        "wrong_local_derivative",
    )


def _wrong_on_one_tail(got, expected, x_values, tol: Tolerance, what="") -> None:
    """Right for |x| <= 5 and wrong only for x >= 10, or only for x <= -10: say which."""
    close = np.asarray(close_points(got, expected, tol.rtol, tol.atol))
    x_values = np.asarray(x_values)
    if not np.all(close[np.abs(x_values) <= 5.0]):
        return
    wrong_high = not np.all(close[x_values >= 10.0])
    wrong_low = not np.all(close[x_values <= -10.0])
    if not (wrong_high or wrong_low):
        return
    if wrong_high and wrong_low:
        where = x_values[~close][0]
        fix = (
            "Return tf.sigmoid(x)."
            if what == "value"
            else "The product sigmoid(x) * sigmoid(-x) has neither."
        )
        raise Wrong(
            f"Right near 0, wrong on both tails (for example at x = {where:.6g}): "
            f"your formula is right on paper but loses the small values in "
            f"floating point, typically through a subtraction that cancels "
            f"(1 - sigmoid, 1 - tanh**2) or an exp that overflows. {fix}",
            "tail_inaccurate",
        )
    side, sign = ("positive", "") if wrong_high else ("negative", "-")
    where = x_values[~close][0]
    if what == "value":
        raise Wrong(
            f"Your forward value is right near 0 but wrong on the {side} tail (for "
            f"example at x = {where:.6g}): your formula loses the small value "
            f"there, through a subtraction that cancels or an exp that overflows. "
            f"Return tf.sigmoid(x), which is accurate on both tails.",
            "tail_inaccurate",
        )
    raise Wrong(
        f"Right near 0, wrong on the {side} tail (for example at x = {where:.6g}): "
        f"something in your slope loses the small number there, typically a "
        f"subtraction 1 - sigmoid({sign}x) that cancels once sigmoid rounds to "
        f"1, or an exp that overflows. The product sigmoid(x) * sigmoid(-x) "
        f"has neither.",
        "tail_inaccurate",
    )


def _require_rule_produced(log: MethodLog, gradient) -> None:
    """The gradient the tape returned is what the learner's grad_fn returned."""
    produced = None
    for call in log.custom_calls:
        for _, returned in call.backward:
            if returned and returned[0] is not None:
                try:
                    part = np.asarray(returned[0], dtype=np.float64)
                except Exception:  # noqa: BLE001 - the tape already accepted it
                    return
                produced = part if produced is None else produced + part
    if produced is None or produced.shape != np.shape(gradient):
        return
    with np.errstate(invalid="ignore"):
        same = np.all(
            (produced == gradient)
            | (np.isnan(produced) & np.isnan(gradient))
            | np.isclose(produced, gradient, rtol=1e-6, atol=0.0)
        )
    if not same:
        raise Wrong(
            "Your grad_fn ran, but the gradient the tape returned is not what it "
            "returned: other operations between x and your output add their own "
            "gradient. Return the custom function's output as it is.",
            "custom_rule_bypassed",
        )
