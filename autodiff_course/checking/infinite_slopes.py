"""Why a gradient is nan where the answer is finite (lessons 03 and 04): an operation whose
slope is infinite at 0 (a square root, a log, a division), read from the operations the
answer ran, inside a tf.where or not, an epsilon added after the square root, or one too
small for float32 to hold; or a nan the learner's own custom grad_fn returned (0/0 at a
zero norm), which no TensorFlow op is to blame for."""

from __future__ import annotations

import numpy as np

from .judging import _head
from .recording import constants_added
from .verdicts import Wrong

WHERE = (
    "A single tf.where does not protect {op}: the branch not taken still runs backwards, "
    "with a zero upstream, and 0 times its infinite slope at 0 is nan. "
)
WHERE_FIXES = (
    "Use tf.sqrt in that branch (its gradient is 0 where the upstream is 0, so one "
    "tf.where around it is enough), or the double where: feed the op a harmless 1 where "
    "the input is zero, then pick the value with a second tf.where."
)
RISKY = {
    "Pow": "a fractional power (x**0.5 or tf.pow)",
    "EuclideanNorm": "tf.math.reduce_euclidean_norm",
    "Rsqrt": "tf.math.rsqrt (its value at 0 is inf, and whatever multiplies it sends 0 * inf "
    "= nan backwards)",
    "Log": "tf.math.log",
    "Reciprocal": "a division by a value that is zero there",
    "RealDiv": "a division by a value that is zero there",
    "Sqrt": "tf.sqrt",
}


def _risky(op) -> str | None:
    if op.name == "Pow":
        try:
            exponent = np.asarray(op.inputs[1].numpy() if len(op.inputs) > 1 else op.numbers[0])
        except Exception:  # noqa: BLE001 - a variable or an exotic input: not a power to blame
            return None
        return "Pow" if np.any(exponent != np.round(exponent)) or np.any(exponent < 1) else None
    return op.name if op.name in RISKY else None


def infinite_slope(case) -> Wrong | None:
    """A gradient that is nan (or inf) where the answer is finite, explained by the
    operations the answer ran: an op whose slope is infinite there, inside a tf.where
    or not, or an epsilon added after the square root instead of under it."""
    bad = ~np.isfinite(case.got) & np.isfinite(case.expected)
    seen = getattr(case.observation.log, "provenance", None)
    ops = seen.operations if seen is not None else []
    risky = list(dict.fromkeys(name for name in map(_risky, ops) if name))
    if not bad.any():
        return None
    where = f"at index {[int(i) for i in np.argwhere(bad)[0]]}"
    lead = f"{_head(case.noun)} is {case.got[bad][0]} {where}, where it "
    lead += "should be finite. "
    if _rule_returned_nan(case.observation.log):
        return Wrong(
            lead + "It comes from your own grad_fn, not from TensorFlow's rules: at a row of "
            "zeros your rule divides by the norm (or multiplies by its reciprocal), which is 0 "
            "there, and 0/0 is nan. A custom rule needs its own guard: divide by "
            "tf.maximum(n, 1e-12), or pick the gradient 0 there with tf.where.",
            "nan_gradient_at_zero",
        )
    if not risky:
        return None
    if any(op.name in ("Select", "SelectV2") for op in ops):
        blamed = next((name for name in risky if name != "Sqrt"), None)
        if blamed is None:
            return Wrong(
                lead + "You used tf.where, but two things must hold: the points where the "
                "input is zero must take the branch without the square root, and that "
                "branch, which still runs backwards there with a zero upstream, must be "
                "tf.sqrt (its gradient is then 0) or be fed a harmless value such as 1.",
                "where_without_safe_branch",
            )
        return Wrong(
            lead + WHERE.format(op=RISKY[blamed]) + WHERE_FIXES, "where_without_safe_branch"
        )
    tiny = _subnormal_epsilon(ops)
    if tiny is not None:
        return Wrong(
            lead + f"Your epsilon, {tiny:g}, is below float32's smallest normal number "
            "(1.2e-38): TensorFlow's CPU kernels flush such a subnormal number to 0, so the "
            "square root still meets 0 in float32. Pick an epsilon float32 holds, such as 1e-12.",
            "eps_subnormal",
        )
    sqrts = [op.outputs[0] for op in ops if op.name == "Sqrt" and op.outputs]
    if any(op.name == "AddV2" and any(t is s for t in op.inputs for s in sqrts) for op in ops):
        return Wrong(
            lead + "Your epsilon is added after the square root, where it changes the value "
            "but not the slope, and the slope of the square root at 0 is still infinite. Put "
            "it inside: tf.sqrt(... + 1e-12).",
            "eps_outside_sqrt",
        )
    return Wrong(
        lead + f"The slope of {RISKY[risky[0]]} is infinite at 0, and infinity times the "
        "zero slope of what feeds it is nan (tf.norm does exactly this at a zero vector). "
        "Keep its argument away from 0 with a tiny epsilon inside it, or pick the value "
        "there with tf.where.",
        "nan_gradient_at_zero",
    )


def _rule_returned_nan(log) -> bool:
    """Some run of the learner's @tf.custom_gradient grad_fn returned nan or inf."""
    for call in getattr(log, "custom_calls", ()):
        for _, returned in call.backward:
            for gradient in returned:
                try:
                    if gradient is not None and not np.all(np.isfinite(np.asarray(gradient))):
                        return True
                except (TypeError, ValueError):  # not numbers: not this case
                    continue
    return False


def _subnormal_epsilon(ops) -> float | None:
    """A constant below float32's smallest normal number added in a float32 addition."""
    tiny = float(np.finfo(np.float32).tiny)
    for op in ops:
        if not op.outputs or op.outputs[0].dtype.name != "float32":
            continue
        for value in constants_added(op):
            if 0 < abs(value) < tiny:
                return abs(value)
    return None
