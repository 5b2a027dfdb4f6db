"""Checks for lesson 03, *Custom gradients and the log1pexp story*.

Every reference is a closed form evaluated in float64 NumPy (softplus, sigmoid,
sign, clipping), independent of the TensorFlow code the exercises ask for. The
answers are run under ``tf.GradientTape`` exactly as a model would use them,
with upstream gradients other than 1 so that a forgotten ``upstream *`` shows.
"""

from __future__ import annotations

import numpy as np

from ..checking import (
    FORGOT_DECORATOR_HINT, forgot_custom_gradient_decorator,
    NotAttempted, Wrong, as_values, call_answer, describe_difference, diagnose_mistake, exercise,
    matches, _first_line,
)
from ..log1pexp import reference_sigmoid as _sigmoid, reference_softplus as _softplus

def _tensor(values, dtype=None):
    import tensorflow as tf

    return tf.constant(values, dtype=dtype or tf.float32)




class _Recorded:
    """``answer(x)`` recorded on a tape: its value now, its gradient on demand."""

    def __init__(self, answer, x, shape, name="Your function"):
        import tensorflow as tf

        self.x, self.shape = x, shape
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = call_answer(answer, x)
        if forgot_custom_gradient_decorator(value):
            raise Wrong(FORGOT_DECORATOR_HINT, "forgot_decorator")
        self.values = as_values(value, name=name, shape=shape, dtype=x.dtype)
        self._tape, self._value = tape, value

    def gradient(self, upstream):
        """d(value)/dx with ``upstream`` as ``output_gradients`` (one call only)."""
        try:
            gradient = self._tape.gradient(self._value, self.x, output_gradients=upstream)
        except Exception as error:
            raise Wrong(f"Computing the gradient failed: your gradient function raised "
                        f"{type(error).__name__}: {_first_line(error)} It must return "
                        f"one tensor shaped like the input.", "grad_fn_raised") from None
        if gradient is None:
            raise Wrong("tape.gradient returned None: the tape found no path from your "
                        "output back to x. Did the gradient function return None, or "
                        "does the forward use a non-differentiable op such as "
                        "tf.round without a custom gradient?",
                        "no_gradient")
        return as_values(gradient, name="The gradient", shape=self.shape,
                         dtype=self.x.dtype)


def _run(answer, x, upstream, shape):
    """Value and gradient of ``answer`` at ``x`` as float64 NumPy, in that order."""
    recorded = _Recorded(answer, x, shape)
    return recorded.values, recorded.gradient(upstream)


def _same_where_finite(got, values, rtol=1e-4, atol=1e-6) -> bool:
    """True when ``got`` equals ``values`` wherever ``got`` is finite (and somewhere)."""
    finite = np.isfinite(got)
    if not finite.any():
        return False
    return bool(np.allclose(got[finite], np.asarray(values)[finite], rtol=rtol, atol=atol))


# Exercise 3.1 ---------------------------------------------------------------

LOG1PEXP_X = np.array([-30.0, -17.0, 0.0, 87.5, 88.5, 100.0])
LOG1PEXP_UPSTREAM = np.array([2.0, -3.0, 0.5, 4.0, -1.5, 2.5])
_NEGATIVE = LOG1PEXP_X <= -17.0
_BAND = (LOG1PEXP_X > 87.0) & (LOG1PEXP_X < 88.72)
_OVERFLOW = LOG1PEXP_X > 88.72  # exp(x) is inf in float32
_RTOL = 1e-5  # relative: tiny values like sigmoid(-30) = 9.4e-14 must be right too


def _close(got, expected):
    with np.errstate(invalid="ignore"):
        return np.isfinite(got) & np.isclose(got, expected, rtol=_RTOL, atol=1e-30)


def _log1pexp_failures(values, gradients):
    """The known failure modes still present, in the order a learner meets them."""
    expected_value = _softplus(LOG1PEXP_X)
    expected_gradient = _sigmoid(LOG1PEXP_X)
    value_ok = _close(values, expected_value)
    gradient_ok = _close(gradients, expected_gradient)
    failures = []
    if not np.all(np.isfinite(values[_OVERFLOW])):
        failures.append((
            "forward_overflow",
            "the value is inf at x = 100: exp(100) overflows float32 (the largest "
            "float32 is 3.4e38, reached near x = 88.72), so log(1 + exp(x)) is "
            "log(inf). Compute the forward value with tf.nn.softplus(x)"))
    if np.any(values[_NEGATIVE] == 0.0):
        failures.append((
            "forward_rounds_to_zero",
            "the value is 0.0 at x = -17 and -30: 1 + e^x rounds to exactly 1 in "
            "float32 there, and log(1) = 0. tf.nn.softplus (or tf.math.log1p) keeps "
            "those tiny values"))
    if np.any(gradients[_BAND] == 0.0):
        failures.append((
            "flush_to_zero",
            "the gradient is 0.0 at x = 87.5 or 88.5, where it should be 1: "
            "1/(1 + e^x) is below the smallest normal float32 (1.18e-38) there and the "
            "CPU flushes it to 0, so e^x * 1/(1 + e^x) = 0. That is what the tape "
            "gives when it differentiates log(1 + exp(x)) itself (is your custom "
            "gradient really in effect?) or when the backward multiplies by "
            "1/(1 + e^x). Use tf.sigmoid(x)"))
    if not np.all(np.isfinite(gradients)):
        failures.append((
            "backward_overflow_nan",
            "the gradient is nan where exp(x) overflows (x = 100): the backward "
            "computes e^x = inf and then inf/inf or 0 * inf, which is nan. "
            "e^x/(1 + e^x) equals tf.sigmoid(x), which never overflows"))
    if np.any(gradients[_NEGATIVE] == 0.0):
        failures.append((
            "documented_rule_cancellation",
            "the gradient is exactly 0.0 at x = -17 and -30: that is the rule "
            "1 - 1/(1 + e^x), where 1/(1 + e^x) rounds to 1 in float32 and the "
            "subtraction cancels everything. tf.sigmoid(x) is accurate there"))
    return failures, bool(value_ok.all()), bool(gradient_ok.all())


@exercise("3.1", "a stable log1pexp with a custom gradient")
def log1pexp_stable(answer):
    import tensorflow as tf

    x = _tensor(LOG1PEXP_X)
    values, gradients = _run(answer, x, tf.ones_like(x), x.shape)
    failures, value_ok, gradient_ok = _log1pexp_failures(values, gradients)
    s = _sigmoid(LOG1PEXP_X)
    for code, hint, wrong in [
        ("differentiated_twice",
         "Your gradient is e^x/(1 + e^x)^2, the derivative of e^x/(1 + e^x): one "
         "differentiation too many. d/dx log(1 + e^x) = sigmoid(x).", s * (1 - s)),
        ("value_as_gradient",
         "Your gradient function returns the value log(1 + e^x) again; it must "
         "return upstream times the derivative, sigmoid(x).", _softplus(LOG1PEXP_X)),
        ("sign_error",
         "Your gradient is sigmoid(-x) = 1/(1 + e^x): check the sign of the "
         "exponent.", _sigmoid(-LOG1PEXP_X)),
    ]:
        # Whole-pattern mistakes first: they also look like flushed zeros or nan
        # at the far end, but those are not what needs fixing.
        if _same_where_finite(gradients, wrong, rtol=1e-4, atol=1e-12):
            raise Wrong(hint, code)
    if failures:
        code = failures[0][0]
        listed = "; ".join(f"({i}) {text}" for i, (_, text) in enumerate(failures, 1))
        modes = "failure mode" if len(failures) == 1 else "failure modes"
        raise Wrong(f"Still {len(failures)} {modes} of the log1pexp story: {listed}.",
                    code)
    if not value_ok:
        expected = _softplus(LOG1PEXP_X)
        diagnose_mistake(values, [
            ("value_is_sigmoid",
             "The first thing your function returns is sigmoid(x), the derivative. "
             "Return the value log(1 + e^x) first and the gradient function second.",
             _sigmoid(LOG1PEXP_X)),
        ], rtol=_RTOL, atol=1e-30)
        raise Wrong("The forward value is not log(1 + e^x). "
                    + describe_difference(values, expected, LOG1PEXP_X), "wrong_value")
    if not gradient_ok:
        raise Wrong("The gradient is not sigmoid(x). "
                    + describe_difference(gradients, s, LOG1PEXP_X), "wrong_gradient")
    # Correct with upstream = 1. Now inside a chain, with other upstream values.
    upstream = _tensor(LOG1PEXP_UPSTREAM)
    _, chained = _run(answer, x, upstream, x.shape)
    expected = LOG1PEXP_UPSTREAM * _sigmoid(LOG1PEXP_X)
    if matches(chained, expected, rtol=_RTOL, atol=1e-30):
        return ("Accurate value and gradient at every probe, in a chain too: "
                "softplus forward, upstream * sigmoid backward.")
    if matches(chained, gradients, rtol=_RTOL, atol=1e-30):
        raise Wrong("Correct when the output is the target (upstream = 1), wrong inside "
                    "a chain: the gradient function ignores `upstream`. Return "
                    "upstream * sigmoid(x).", "forgot_upstream")
    raise Wrong("With upstream gradients other than 1 the result is not "
                "upstream * sigmoid(x). " + describe_difference(chained, expected,
                                                                  LOG1PEXP_X), "other")


# Exercise 3.2 ---------------------------------------------------------------

STE_X = np.array([-2.5, -1.2, -0.7, -0.1, 0.3, 0.9, 1.5, 3.0])
STE_UPSTREAM = np.array([1.5, -2.0, 0.5, 3.0, -1.0, 2.0, 0.7, -0.4])
_INSIDE = np.abs(STE_X) <= 1.0


@exercise("3.2", "a clipped straight-through estimator for sign")
def binarize_ste(answer):
    x = _tensor(STE_X)
    recorded = _Recorded(answer, x, x.shape)
    values = recorded.values
    expected_value = np.sign(STE_X)
    if not matches(values, expected_value):
        diagnose_mistake(values, [
            ("forward_identity",
             "The forward returns x unchanged; it should binarise: tf.sign(x).", STE_X),
            ("forward_round",
             "The forward rounds to the nearest integer; this exercise binarises "
             "with tf.sign(x), giving -1 or +1.", np.round(STE_X)),
            ("forward_hardtanh",
             "The forward clips x to [-1, 1]; the clipping belongs in the backward "
             "rule. The forward is tf.sign(x).", np.clip(STE_X, -1.0, 1.0)),
        ])
        raise Wrong("The forward value is not tf.sign(x). "
                    + describe_difference(values, expected_value, STE_X), "wrong_value")
    gradients = recorded.gradient(_tensor(STE_UPSTREAM))
    expected = STE_UPSTREAM * _INSIDE
    if matches(gradients, expected):
        return ("Forward sign(x), backward upstream where |x| <= 1 and 0 outside: the "
                "clipped straight-through estimator.")
    diagnose_mistake(gradients, [
        ("not_clipped",
         "Your gradient passes upstream through everywhere. The clipped variant "
         "zeroes it where |x| > 1: multiply by tf.cast(tf.abs(x) <= 1, x.dtype).",
         STE_UPSTREAM),
        ("forgot_upstream",
         "Your gradient is 1 inside [-1, 1] and 0 outside, whatever arrives from "
         "above: multiply the mask by `upstream`.", _INSIDE.astype(float)),
        ("no_straight_through",
         "The gradient is 0 everywhere: that is tf.sign's own gradient. A "
         "straight-through estimator replaces it in a custom gradient.",
         np.zeros_like(STE_X)),
        ("inverted_clip",
         "The mask is inverted: keep upstream where |x| <= 1 and zero it outside.",
         STE_UPSTREAM * ~_INSIDE),
    ])
    raise Wrong("The gradient should be upstream where |x| <= 1 and 0 elsewhere. "
                + describe_difference(gradients, expected, STE_X), "other")


# Exercise 3.3 ---------------------------------------------------------------

CLIP_X = np.array([-2.0, -0.5, 0.5, 1.5, 3.0])
CLIP_UPSTREAM = np.array([0.5, -4.0, 2.0, -0.3, 3.0])


@exercise("3.3", "clip the upstream gradient where it enters a layer")
def clipped_upstream(answer):
    x = _tensor(CLIP_X)
    recorded = _Recorded(answer, x, x.shape)
    values = recorded.values
    if not matches(values, CLIP_X**3):
        diagnose_mistake(values, [
            ("clipped_forward",
             "Your forward clips the value; the layer's output is x**3 unchanged. "
             "Only the backward rule clips.", np.clip(CLIP_X**3, -1.0, 1.0)),
            ("clipped_forward",
             "Your forward clips x before cubing; the layer's output is x**3 "
             "unchanged. Only the backward rule clips.", np.clip(CLIP_X, -1.0, 1.0)**3),
        ])
        raise Wrong("The forward value should be x**3. "
                    + describe_difference(values, CLIP_X**3, CLIP_X), "wrong_value")
    gradients = recorded.gradient(_tensor(CLIP_UPSTREAM))
    local = 3.0 * CLIP_X**2
    clipped = np.clip(CLIP_UPSTREAM, -1.0, 1.0)
    expected = clipped * local
    if matches(gradients, expected):
        return ("The clip acts on the upstream where it enters the layer; the local "
                "derivative 3x^2 still multiplies it, so the result can exceed 1.")
    norm = np.linalg.norm(CLIP_UPSTREAM)
    diagnose_mistake(gradients, [
        ("clipped_after_local",
         "You clipped the product upstream * 3x^2, so the result never leaves "
         "[-1, 1]. Clip the upstream first, then multiply by the local derivative.",
         np.clip(CLIP_UPSTREAM * local, -1.0, 1.0)),
        ("not_clipped",
         "Nothing was clipped: the gradient is upstream * 3x^2. Clip the upstream "
         "to [-1, 1] with tf.clip_by_value before multiplying.", CLIP_UPSTREAM * local),
        ("forgot_local_derivative",
         "You returned the clipped upstream alone; multiply it by the layer's local "
         "derivative 3x^2.", clipped),
        ("forgot_upstream",
         "Your gradient ignores the upstream: it must be clip(upstream) * 3x^2.", local),
        ("forgot_upstream",
         "Your gradient ignores the upstream: it must be clip(upstream) * 3x^2.",
         np.clip(local, -1.0, 1.0)),
        ("clipped_norm",
         "You clipped the norm of the whole upstream tensor (tf.clip_by_norm), which "
         "rescales every entry. This exercise clips each entry to [-1, 1] with "
         "tf.clip_by_value.", CLIP_UPSTREAM * min(1.0, 1.0 / norm) * local),
    ])
    raise Wrong("The gradient should be clip(upstream, -1, 1) * 3x^2. "
                + describe_difference(gradients, expected, CLIP_X), "other")


# Exercise 3.4 ---------------------------------------------------------------

SCALE_W = 1.5
SCALE_X = np.array([-2.0, -0.5, 0.3, 1.0, 2.5])
SCALE_UPSTREAM = np.array([1.0, -2.0, 0.5, 3.0, -1.5])


@exercise("3.4", "a custom gradient that reads a variable")
def scaled_softplus(answer):
    import tensorflow as tf

    w = tf.Variable(SCALE_W, dtype=tf.float32, name="w")
    layer = call_answer(answer, w)
    if layer is None:
        raise Wrong("make_scaled_softplus returned None: it should return the "
                    "decorated layer function (`return layer`).", "returned_none")
    if not callable(layer):
        raise Wrong(f"make_scaled_softplus returned an object of type "
                    f"{type(layer).__name__}; it should return the layer function "
                    f"itself, not its result.",
                    "not_a_function")
    x = _tensor(SCALE_X)
    upstream = _tensor(SCALE_UPSTREAM)
    with tf.GradientTape() as tape:
        tape.watch(x)
        try:
            value = layer(x)
        except NotImplementedError:
            raise NotAttempted() from None
        except TypeError as error:
            if "variables" in str(error):
                raise Wrong("TensorFlow refused the gradient function: a custom "
                            "gradient whose forward reads a variable must accept "
                            "`variables=None` (def grad(upstream, variables=None)) and "
                            "return (input gradient, [variable gradients]).",
                            "no_variables_keyword") from None
            raise Wrong(f"The layer raised TypeError: {_first_line(error)}",
                        "raised") from None
        except Exception as error:
            raise Wrong(f"The layer raised {type(error).__name__}: "
                        f"{_first_line(error)}", "raised") from None
    if forgot_custom_gradient_decorator(value):
        raise Wrong(FORGOT_DECORATOR_HINT, "forgot_decorator")
    values = as_values(value, name="The layer", shape=x.shape, dtype=x.dtype)
    expected_value = _softplus(SCALE_W * SCALE_X)
    if not matches(values, expected_value):
        diagnose_mistake(values, [
            ("value_not_scaled_inside",
             "The layer returns w * softplus(x); it should be softplus(w * x).",
             SCALE_W * _softplus(SCALE_X)),
        ])
        raise Wrong("The layer's value should be softplus(w * x). "
                    + describe_difference(values, expected_value, SCALE_X), "wrong_value")
    try:
        grad_x, grad_w = tape.gradient(value, [x, w], output_gradients=upstream)
    except Exception as error:
        text = _first_line(error)
        if "len()" in text or "gradient for each variable" in text:
            raise Wrong("The variable gradients must come as a list with one entry "
                        "per variable: return grad_x, [grad_w].",
                        "variable_grads_not_list") from None
        raise Wrong(f"Computing the gradient failed: your gradient function raised "
                    f"{type(error).__name__}: {text}", "grad_fn_raised") from None
    s = _sigmoid(SCALE_W * SCALE_X)
    expected_x = SCALE_UPSTREAM * SCALE_W * s
    expected_w = float(np.sum(SCALE_UPSTREAM * SCALE_X * s))
    if grad_w is None:
        raise Wrong("The gradient with respect to w is None: return it in the second "
                    "part of the pair, grad_x, [grad_w].", "no_variable_gradient")
    if tuple(grad_w.shape) == tuple(x.shape):
        raise Wrong("The gradient for w has shape (5,), like x; w is a scalar, so sum "
                    "the per-element contributions: tf.reduce_sum(upstream * x * "
                    "sigmoid(w x)).", "variable_grad_not_reduced")
    got_w = as_values(grad_w, name="The gradient for w", shape=(), dtype=tf.float32)
    got_x = as_values(grad_x, name="The gradient for x", shape=x.shape,
                      dtype=tf.float32)
    x_ok = matches(got_x, expected_x)
    w_ok = matches(got_w, expected_w)
    if x_ok and w_ok:
        return ("d/dx = upstream * w * sigmoid(w x) and d/dw = sum(upstream * x * "
                "sigmoid(w x)), both as the float64 closed forms give them.")
    if not x_ok:
        diagnose_mistake(got_x, [
            ("forgot_upstream",
             "The gradient for x ignores upstream: inside a chain it must be "
             "upstream * w * sigmoid(w x).", SCALE_W * s),
            ("forgot_w",
             "The gradient for x lacks the factor w from the inner w * x: "
             "upstream * w * sigmoid(w x).", SCALE_UPSTREAM * s),
            ("swapped_gradients",
             "The gradient for x has x where w belongs: d/dx softplus(w x) = "
             "w * sigmoid(w x); the factor x belongs to d/dw.",
             SCALE_UPSTREAM * SCALE_X * s),
        ])
        raise Wrong("The gradient for x should be upstream * w * sigmoid(w x). "
                    + describe_difference(got_x, expected_x, SCALE_X), "other")
    diagnose_mistake(got_w, [
        ("forgot_upstream",
         "The gradient for w ignores upstream: sum(upstream * x * sigmoid(w x)).",
         np.sum(SCALE_X * s)),
        ("forgot_x",
         "The gradient for w lacks the factor x from the inner w * x: "
         "sum(upstream * x * sigmoid(w x)).", np.sum(SCALE_UPSTREAM * s)),
        ("swapped_gradients",
         "The gradient for w has w where x belongs: d/dw softplus(w x) = "
         "x * sigmoid(w x).", np.sum(SCALE_UPSTREAM * SCALE_W * s)),
    ])
    raise Wrong(f"The gradient for w should be sum(upstream * x * sigmoid(w x)) = "
                f"{expected_w:.6g}; got {float(got_w):.6g}.", "other")
