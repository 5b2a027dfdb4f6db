"""Exercise 3.4: a custom gradient that reads a variable."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import call_answer
from ...checking import describe_difference
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import upstream as draw_upstream
from ...log1pexp import reference_sigmoid as _sigmoid
from ...log1pexp import reference_softplus as _softplus
from .shared import _as_dtype
from .shared import _explain_none
from .shared import _gradients
from .shared import _judge_value
from .shared import _record
from .shared import _regrad
from .shared import _require_rule_ran
from .shared import _tf
from .shared import _wrong_gradient
from .stable_log1pexp import _failure_modes
from .stable_log1pexp import _quiet_ok
from .stable_log1pexp import _raise_failure_modes

SCALE_FIXED_WX = [-100.0, -40.0, -17.0, -3.0, -0.5, 0.5, 3.0, 17.0, 40.0, 88.5, 95.0, 100.0]


def _scale_probe(rng, shape):
    """A fresh w of random sign, and x such that w*x spans -100 ... 100 (and x = 0)."""
    w = float(np.round(rng.uniform(0.5, 2.5), 3) * rng.choice([-1.0, 1.0]))
    size = int(np.prod(shape))
    wx = np.concatenate([SCALE_FIXED_WX, [0.0], np.round(rng.uniform(-100, 100, 8), 3)])
    wx = rng.choice(wx, size=size, replace=size > wx.size) if size != wx.size else wx
    return w, rng.permutation(wx / w).reshape(shape)


def _layer_from(make, w):
    """The layer the learner's factory makes for ``w``; anything else named plainly."""
    layer = call_answer(make, w, name="`make_scaled_softplus`")
    if callable(layer):
        return layer
    if layer is None:
        raise Wrong(
            "make_scaled_softplus returned None: it should return the decorated "
            "layer function (`return layer`).",
            "returned_none",
        )
    raise Wrong(
        f"make_scaled_softplus returned a {type(layer).__name__}; it should "
        f"return the layer function itself, not its result (`return layer`, "
        f"not `return layer(x)`).",
        "not_a_function",
    )


def _variable_error(wrong: Wrong) -> Wrong:
    text = wrong.hint
    if "must accept keyword argument 'variables'" in text:
        return Wrong(
            "TensorFlow refused your gradient function: a custom gradient whose "
            "forward reads a variable must accept it: def grad_fn(upstream, "
            "variables=None), returning (gradient for x, [gradient for w]).",
            "no_variables_keyword",
        )
    if "len()" in text or "gradient for each variable" in text:
        return Wrong(
            "The variables' gradients must come as a list with one entry per "
            "variable read: return grad_x, [grad_w].",
            "variable_grads_not_list",
        )
    if "values to unpack" in text and wrong.mistake == "grad_fn_raised":
        return Wrong(
            "Your layer reads a variable, so TensorFlow unpacks what grad_fn "
            "returns into two parts: return grad_x, [grad_w] (the gradient for "
            "the input, then a list with the gradient for w).",
            "variable_grads_not_list",
        )
    return wrong


@exercise("3.4", "a custom gradient that reads a variable")
def scaled_softplus(answer):
    """Probes (fresh on every call): a scalar ``w`` of random sign and size
    (0.5 to 2.5) and ``x`` such that ``w*x`` spans -100 ... 100 (0, +-0.5, +-3,
    +-17, +-40, 88.5 past float32's flush point, 95 and 100 past exp's overflow, and
    fresh values), as a float32 vector; then a float64 ``w`` with a (3, 4) batch
    (dtype in = dtype out), judged to 1e-11. Upstreams of both signs, never 1. The
    gradient for ``w`` is judged against the float64 sum with a tolerance scaled by
    the sum of the magnitudes of its terms.

    Method: a ``@tf.custom_gradient`` rule ran and its grad_fn returned the gradient
    for ``w`` too (read inside the rule, through ``variables=``).
    """
    rng = fresh_rng("3.4")
    tf = _tf()
    for dtype, shape in ((np.float32, (len(SCALE_FIXED_WX) + 9,)), (np.float64, (3, 4))):
        w_value, x_raw = _scale_probe(rng, shape)
        x_in, x = _as_dtype(x_raw, dtype)
        w_in, w_val = _as_dtype(w_value, dtype)
        up = draw_upstream(rng, x.shape).astype(dtype).astype(np.float64)
        tolerance = FLOAT32 if dtype is np.float32 else FLOAT64
        w = tf.Variable(w_in, name="w")
        layer = _layer_from(answer, w)
        try:
            recorded = _record(layer, tf.constant(x_in), "Your layer")
        except Wrong as wrong:
            raise _variable_error(wrong) from None
        values = as_values(recorded.value, name="The layer", shape=x.shape, dtype=x_in.dtype)
        wx = w_val * x
        expected_value = _softplus(wx)
        _raise_failure_modes(
            _failure_modes(
                wx,
                values,
                None,
                dtype,
                backward=False,
                forward=_quiet_ok(wx, values, expected_value, tolerance),
            )
        )
        _judge_value(
            values,
            expected_value,
            summary="The layer's value should be softplus(w * x).",
            x=x,
            tolerance=tolerance,
            what="the layer's value",
            known=[
                (
                    "value_not_scaled_inside",
                    "The layer returns w * softplus(x); it should be softplus(w * x).",
                    w_val * _softplus(x),
                )
            ],
        )
        try:
            grad_x, grad_w = _gradients(recorded, up, [recorded.inputs[0], w])
        except Wrong as wrong:
            raise _variable_error(wrong) from None
        _require_rule_ran(recorded.log, "")
        if grad_x is None:
            raise _explain_none(recorded.log)
        if grad_w is None:
            raise Wrong(
                "The gradient with respect to w is None: return it in the second "
                "part of the pair, grad_x, [grad_w].",
                "no_variable_gradient",
            )
        if not any(
            len(returned) >= 2
            for call in recorded.log.custom_calls
            for _, returned in call.backward
        ):
            raise Wrong(
                "Your custom rule returns a gradient for x only; the gradient for "
                "w came from TensorFlow's own operations outside it. Read w inside "
                "the decorated function and let grad_fn(upstream, variables=None) "
                "return (gradient for x, [gradient for w]).",
                "variable_outside_rule",
            )
        if not isinstance(grad_w, (tf.Tensor, tf.Variable)):
            raise Wrong(
                f"The gradient for w came back as a {type(grad_w).__name__}, not "
                f"a tensor: your grad_fn returned a Python or NumPy number for it "
                f"(float(...) or .numpy()). Keep it a tensor: "
                f"[tf.reduce_sum(...)].",
                "returned_numpy",
            )
        if tuple(grad_w.shape) != ():
            if tuple(grad_w.shape) == tuple(x.shape) or int(np.prod(grad_w.shape)) > 1:
                raise Wrong(
                    f"The gradient for w has shape {tuple(grad_w.shape)}; w is a "
                    f"scalar, so add up the contributions of every element of x: "
                    f"tf.reduce_sum(upstream * x * sigmoid(w x)) with no axis.",
                    "variable_grad_not_reduced",
                )
        got_x = as_values(grad_x, name="The gradient for x", shape=x.shape, dtype=x_in.dtype)
        got_w = as_values(tf.reshape(grad_w, []), name="The gradient for w", dtype=x_in.dtype)
        s = _sigmoid(wx)
        expected_x = up * w_val * s
        terms = up * x * s
        expected_w = float(np.sum(terms))
        w_tolerance = Tolerance(tolerance.rtol, tolerance.rtol * float(np.sum(np.abs(terms))))
        with np.errstate(all="ignore"):
            local = got_x / up
        _raise_failure_modes(
            _failure_modes(
                wx,
                values,
                local / w_val,
                dtype,
                forward=False,
                backward=_quiet_ok(wx, local / w_val, s, tolerance),
                scale=up * w_val,
            )
        )
        if not matches(got_x, expected_x, tolerance.rtol, tolerance.atol):
            raise _wrong_gradient(
                got_x,
                expected_x,
                summary="The gradient for x should be upstream * w * sigmoid(w x).",
                x=x,
                up=up,
                tolerance=tolerance,
                regrad=_regrad(recorded, "Your layer", x.shape, x_in.dtype),
                local=w_val * s,
                local_name="w * sigmoid(w x)",
                what="the gradient for x",
                known=[
                    (
                        "forgot_upstream",
                        "The gradient for x ignores upstream: inside a "
                        "chain it must be upstream * w * sigmoid(w x).",
                        w_val * s,
                    ),
                    (
                        "forgot_w",
                        "The gradient for x lacks the factor w from the inner "
                        "w * x: upstream * w * sigmoid(w x).",
                        up * s,
                    ),
                    (
                        "swapped_gradients",
                        "The gradient for x has x where w belongs: "
                        "d/dx softplus(w x) = w * sigmoid(w x); the factor x belongs to d/dw.",
                        up * x * s,
                    ),
                ],
            )
        if not matches(got_w, expected_w, w_tolerance.rtol, w_tolerance.atol):
            size = x.size
            known = [
                (
                    "forgot_upstream",
                    "The gradient for w ignores upstream: sum(upstream * x * sigmoid(w x)).",
                    np.sum(x * s),
                ),
                (
                    "forgot_x",
                    "The gradient for w lacks the factor x from the inner "
                    "w * x: sum(upstream * x * sigmoid(w x)).",
                    np.sum(up * s),
                ),
                (
                    "swapped_gradients",
                    "The gradient for w has w where x belongs: "
                    "d/dw softplus(w x) = x * sigmoid(w x).",
                    np.sum(up * w_val * s),
                ),
                (
                    "mean_not_sum",
                    f"The gradient for w is the mean of the contributions, "
                    f"{size} times too small: w is used by every element, so its gradient is "
                    f"their sum (tf.reduce_sum).",
                    expected_w / size,
                ),
                (
                    "sign_flipped",
                    "The gradient for w has the right size but the opposite "
                    "sign: look for a subtraction the wrong way round or a stray minus.",
                    -expected_w,
                ),
                (
                    "scale_factor",
                    "The gradient for w is twice the answer: a factor 2 too many.",
                    2.0 * expected_w,
                ),
                (
                    "scale_factor",
                    "The gradient for w is half the answer: a factor 1/2 too many.",
                    0.5 * expected_w,
                ),
            ]
            diagnose_mistake(got_w, known, w_tolerance.rtol, w_tolerance.atol)
            # One number: "the answer times k" would fit any wrong value, so no guess.
            raise Wrong(
                "The gradient for w should be sum(upstream * x * sigmoid(w x)), "
                "one sum over every element of x of that element's contribution. "
                + describe_difference(
                    got_w, expected_w, rtol=w_tolerance.rtol, atol=w_tolerance.atol
                ),
                "wrong_gradient",
            )
    return (
        "d/dx = upstream * w * sigmoid(w x) and d/dw = sum(upstream * x * sigmoid(w x)) "
        "for w of either sign and w*x from -100 to 100, in float32 and float64, with "
        "upstreams other than 1; both came from your grad_fn."
    )
