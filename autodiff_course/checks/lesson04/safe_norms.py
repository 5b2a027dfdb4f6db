"""Exercise 4.5: a norm with a finite gradient at zero rows."""

from __future__ import annotations

import numpy as np

from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import explain_difference
from ...checking import fresh_rng
from ...checking import learner_code
from ...checking import matches
from ...checking import none_hint
from ...checking import record_answer
from ...checking import shape_of
from ...checking import tensor
from ...checking import trace
from ...checking import upstream
from .judging import _judge
from .shared import DTYPES


def _norm_rows(rng):
    """(batch, width) rows: one or two zero rows, one of norm exactly 0.05, the rest 0.05-5."""
    width = int(rng.integers(2, 6))
    batch = int(rng.choice([b for b in range(4, 8) if b != width]))
    directions = rng.normal(size=(batch, width))
    sizes = np.round(rng.uniform(0.05, 5.0, size=batch), 3)
    order = rng.permutation(batch)
    sizes[order[0]] = 0.0
    sizes[order[1]] = 0.05
    if batch > 5:
        sizes[order[2]] = 0.0
    # Two long rows mix signs, one with its largest entry negative and one positive, so
    # that |sum(g)|, the max norm and a norm of g clipped at 0 all differ from each
    # other and from the true norm on every draw.
    free = order[3:] if batch > 5 else order[2:]
    directions[free[0], :2] = [0.6, -1.0]
    directions[free[1], :2] = [1.0, -0.6]
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    return directions * sizes[:, None]


def _risky_ops(answer, dtype: str, shape) -> set:
    """What in the answer can turn a zero row into nan: traced once, nothing runs.

    Labels: "where", "sqrt", "fractional_pow" (x**0.5, tf.pow(x, 0.5)), "rsqrt",
    "euclidean_norm", "log", "reciprocal".
    """
    import tensorflow as tf

    try:
        with learner_code("Your function"):
            graph = (
                tf.function(answer, autograph=False)
                .get_concrete_function(tf.TensorSpec(shape, getattr(tf, dtype)))
                .graph
            )
    except BaseException:  # noqa: BLE001 - only a hint depends on it
        return set()
    found = set()
    simple = {
        "Select": "where",
        "SelectV2": "where",
        "Sqrt": "sqrt",
        "Rsqrt": "rsqrt",
        "EuclideanNorm": "euclidean_norm",
        "Log": "log",
        "Reciprocal": "reciprocal",
    }
    for operation in graph.get_operations():
        if operation.type in simple:
            found.add(simple[operation.type])
        elif operation.type == "Pow":
            exponent = operation.inputs[1]
            if exponent.op.type == "Const":
                value = tf.make_ndarray(exponent.op.get_attr("value"))
                if np.any(value != np.round(value)) or np.any(value < 1):
                    found.add("fractional_pow")
    return found


_NAN_AT_ZERO_HINTS = {
    "fractional_pow": (
        "You wrapped a power (x**0.5 or tf.pow) in tf.where. A single tf.where does not "
        "protect it: the branch not taken still runs backwards, with a zero upstream, and "
        "0 times the infinite slope of x**0.5 at 0 is nan. Use tf.sqrt (its gradient is 0 "
        "where the upstream is 0, so one tf.where around it is enough), or the double "
        "where: feed the power a harmless 1 where the norm is zero."
    ),
    "euclidean_norm": (
        "You wrapped tf.math.reduce_euclidean_norm in tf.where. Its gradient at a zero "
        "row is nan even with a zero upstream, so a single tf.where does not protect it. "
        "Use tf.sqrt(tf.reduce_sum(g**2, -1)) inside the where (tf.sqrt gives 0 where the "
        "upstream is 0), the double where, or an epsilon inside the square root."
    ),
    "rsqrt": (
        "You used tf.math.rsqrt inside tf.where. rsqrt itself passes a zero upstream on "
        "as 0, but its value at 0 is inf, and whatever multiplies it (s * rsqrt(s)) "
        "sends 0 * inf = nan backwards. Use tf.sqrt inside the where, or feed rsqrt a "
        "harmless 1 where the norm is zero (the double where)."
    ),
    "log": (
        "A single tf.where does not protect tf.math.log: at 0 its slope is infinite, and "
        "0 times infinity is nan. Use tf.sqrt on the sum of squares instead."
    ),
    "reciprocal": (
        "A single tf.where does not protect a division by the norm or the sum of squares: "
        "at 0 its slope is infinite, and 0 times infinity is nan. Use tf.sqrt on the sum "
        "of squares inside the where, or feed the division a harmless 1 (the double "
        "where)."
    ),
}


@exercise("4.5", "a safe norm for the gradient penalty")
def safe_norm(answer):
    """``safe_norm(g)``: the Euclidean norm of each row, with a finite gradient at 0.

    Probes, fresh on every call, in float32 and in float64 (dtype in = dtype out):
    a (batch, width) tensor with batch in 4..7 and width in 2..5 (never equal, so a
    reduction over the wrong axis shows), one or two rows of zeros at random
    positions, a row of norm exactly 0.05, the others of norm 0.05 to 5 with entries
    of both signs. Values: within 1e-5 relative of the norm for the nonzero rows,
    at most 1e-3 at the zero rows. Gradient (with an upstream of both signs, never
    1): finite everywhere, upstream * g/|g| on the nonzero rows, at most |upstream|
    long at the zero rows. Any construction is accepted: an epsilon inside the
    square root, tf.maximum, one tf.where around tf.sqrt or tf.norm (their
    gradients are 0 where the upstream is 0), or the double where.
    """
    rng = fresh_rng("4.5")
    values_tol = Tolerance(rtol=1e-5, atol=0.0)  # nonzero rows; zero rows: <= 1e-3
    for dtype in DTYPES:
        rows = _norm_rows(rng)
        batch, width = rows.shape
        norms = np.linalg.norm(rows, axis=-1)
        zero = norms == 0.0
        g = tensor(rows, dtype)
        try:
            recorded = record_answer(answer, g, name="`safe_norm`")
        except Wrong as wrong:
            raise wrong from None
        shape = shape_of(recorded.value)
        if shape == ():
            raise Wrong(
                "You returned one number, the norm of the whole batch. The penalty "
                "needs one norm per example: reduce over the last axis only "
                "(axis=-1).",
                "whole_tensor_norm",
            )
        if shape == (width,):
            raise Wrong(
                f"You returned shape {shape}: one value per column, a reduction "
                f"over the batch (axis 0). Reduce over the last axis (axis=-1): "
                f"one norm per row, shape ({batch},).",
                "wrong_axis",
            )
        value = as_values(recorded.value, name="`safe_norm`", shape=(batch,), dtype=g.dtype)
        if not (
            matches(value[~zero], norms[~zero], values_tol.rtol, 0.0)
            and np.all(np.abs(value[zero]) <= 1e-3)
        ):
            _explain_norm_values(value, rows, norms)
        upstream_values = upstream(rng, (batch,))
        gradient = recorded.gradient(
            tensor(upstream_values, dtype), label="The gradient of your norm"
        )[0]
        if gradient is None:
            _explain_missing_norm_gradient(answer, dtype, rows.shape)
        got = as_values(
            gradient, name="The gradient of your norm", shape=(batch, width), dtype=g.dtype
        )
        if not np.all(np.isfinite(got[zero])):
            _explain_nan_at_zero(answer, dtype, rows.shape, value[zero])
        unit = rows[~zero] / norms[~zero, None] * upstream_values[~zero, None]
        if not matches(got[~zero], unit, 1e-4, 1e-7):
            raise explain_difference(
                got[~zero],
                unit,
                rtol=1e-4,
                atol=1e-7,
                what="your norm's gradient",
                summary="Away from zero the gradient of a norm is upstream * g / |g|, and "
                "yours is not.",
            )
        lengths = np.linalg.norm(got[zero], axis=-1)
        if np.any(lengths > np.abs(upstream_values[zero]) * (1 + 1e-3)):
            raise Wrong(
                "The gradient at a zero row is finite but longer than the upstream "
                "gradient, which no slope of a norm can be: a norm never grows "
                "faster than its input. Keep the epsilon inside the square root.",
                "gradient_too_large",
            )
    return (
        "Row norms to 5 digits in float32 and float64, a finite gradient at the zero "
        "rows, and upstream * g/|g| everywhere else."
    )


def _explain_norm_values(value, rows, norms) -> None:
    """Name what is wrong with the values of a norm (zero rows may be up to 1e-3)."""
    zero, width = norms == 0.0, rows.shape[1]
    long_rows = norms > 0.5
    if (
        np.all(np.isfinite(value))
        and np.all(value >= norms * (1 - 1e-6))
        and matches(value[long_rows], norms[long_rows], 1e-2, 0.0)
    ):
        short = np.argmin(np.where(zero, np.inf, norms))
        raise Wrong(
            "Right for long rows, but too large for short ones: a zero row gives "
            f"{value[zero][0]:.3g} and the row of norm {norms[short]:.3g} gives "
            f"{value[short]:.6g}. Your epsilon is too large: 1e-12 inside the "
            "square root changes nothing that float32 or the penalty can see.",
            "eps_too_large",
        )
    loose = Tolerance(rtol=1e-5, atol=1e-3)
    small = ~zero & (norms < 0.5)
    if matches(value[norms >= 0.5], norms[norms >= 0.5], 1e-5, 0.0) and np.any(value[small] == 0.0):
        raise Wrong(
            f"Right for long rows, but a row of norm {norms[small][0]:.3g} gives "
            f"{value[small][0]:.3g}: your tf.where condition treats small rows as "
            f"zero. Only rows that are exactly zero need the special case: compare "
            f"with 0, not with a threshold.",
            "threshold_too_large",
        )
    _judge(
        value,
        norms,
        loose,
        what="your norm",
        summary="Not the Euclidean norm of each row, sqrt(sum(g**2, axis=-1)).",
        known=[
            (
                "squared_norm",
                "You returned the squared norm, sum(g**2). The penalty "
                "uses the norm itself: take the square root.",
                norms**2,
            ),
            (
                "l1_norm",
                "You returned the sum of absolute values (the L1 norm). The "
                "penalty uses the Euclidean norm, sqrt(sum(g**2)).",
                np.abs(rows).sum(axis=-1),
            ),
            (
                "mean_not_sum",
                "You took the mean of the squares (tf.reduce_mean) before "
                "the square root: the norm sums them.",
                norms / np.sqrt(width),
            ),
            (
                "square_of_sum",
                "You squared the sum of each row, (sum g)**2, instead of "
                "summing the squares, sum(g**2): the norm is sqrt(sum(g**2)).",
                np.abs(rows.sum(axis=-1)),
            ),
            (
                "other_norm",
                "You returned the largest absolute entry of each row (the "
                "max norm). The penalty uses the Euclidean norm, sqrt(sum(g**2)).",
                np.abs(rows).max(axis=-1),
            ),
            (
                "clipped_input",
                "You clipped g itself (tf.clip_by_value or tf.maximum on "
                "g), which turns its negative entries into tiny positive ones and changes "
                "the norm. Leave g alone: protect only the square root at zero.",
                np.linalg.norm(np.maximum(rows, 0.0), axis=-1),
            ),
        ],
    )
    raise Wrong(
        "The norm is right to within 1e-3 but not to 5 digits. Something shifts it "
        "slightly: usually an epsilon added to g itself rather than under the "
        "square root, or float32 arithmetic for a float64 input.",
        "approximation",
    )


def _explain_missing_norm_gradient(answer, dtype, shape) -> None:
    import tensorflow as tf

    traced = trace(answer, tf.TensorSpec(shape, getattr(tf, dtype)))
    if traced.numpy_detour:
        raise Wrong(none_hint("numpy_detour", "g"), "numpy_detour")
    if traced.non_differentiable:
        raise Wrong(
            none_hint("non_differentiable_op", "g", traced.non_differentiable),
            "non_differentiable_op",
        )
    raise Wrong(
        "The gradient of your norm is None: the tape found no path from the norm "
        "back to g, although the check watched g. Is the result computed from g "
        "with TensorFlow ops only, without tf.stop_gradient, and not rebuilt with "
        "tf.constant from values?",
        "no_gradient",
    )


def _explain_nan_at_zero(answer, dtype, shape, zero_values) -> None:
    if np.all(zero_values > 0) and np.all(zero_values <= 1e-3):
        raise Wrong(
            "The values are right, but the gradient at a zero row is nan: your "
            "epsilon is added after the square root, where it changes the value "
            "but not the slope, and the slope of sqrt at 0 is still infinite. Put "
            "it inside: tf.sqrt(tf.reduce_sum(g**2, axis=-1) + 1e-12).",
            "eps_outside_sqrt",
        )
    ops = _risky_ops(answer, dtype, shape)
    if "where" in ops:
        for label, hint in _NAN_AT_ZERO_HINTS.items():
            if label in ops:
                raise Wrong(hint, "where_without_safe_branch")
        raise Wrong(
            "You used tf.where, but the gradient at a zero row is still nan. Two "
            "things must hold: the zero rows must take the branch without the "
            "square root (for example tf.where(squares > 0, ..., 0.0)), and the "
            "square-root branch, which still runs backwards there with a zero "
            "upstream, must be tf.sqrt (its gradient is then 0) or be fed a "
            "harmless value such as 1 (the double where).",
            "where_without_safe_branch",
        )
    raise Wrong(
        "The values are right, but the gradient at a zero row is nan: the slope of "
        "the square root at 0 is infinite, and infinity times the zero slope of "
        "sum(g**2) is nan (tf.norm does exactly this). Keep the square root's "
        "argument away from 0 with a tiny epsilon inside it, or pick the value at "
        "zero rows with tf.where.",
        "nan_gradient_at_zero",
    )
