"""Checks for lesson 01, *The chain rule and the upstream gradient dy*.

References are closed forms evaluated in float64 NumPy, independent of the
TensorFlow code the exercises ask for.
"""

from __future__ import annotations

import math

import numpy as np

from ..checking import Wrong, as_values, call_answer, describe_difference, diagnose_mistake, exercise, matches
from ..log1pexp import reference_sigmoid as _sigmoid, reference_softplus as _softplus

PROBE_X = np.array([-4.0, -1.0, 0.0, 0.5, 3.0])


def _probe_tensor(values=PROBE_X):
    import tensorflow as tf

    return tf.constant(values, dtype=tf.float32)


@exercise("1.1", "local derivative of log(1 + e^x)")
def local_derivative(answer):
    x = _probe_tensor()
    got = as_values(call_answer(answer, x), shape=x.shape, dtype=x.dtype)
    expected = _sigmoid(PROBE_X)
    if matches(got, expected):
        return "d/dx log(1 + e^x) = e^x / (1 + e^x), the logistic sigmoid."
    e = np.exp(PROBE_X)
    diagnose_mistake(got, [
        ("forgot_outer_derivative",
         "You returned e^x: that is the derivative of the inside, 1 + e^x. The chain "
         "rule also multiplies by the derivative of log(u), which is 1/u.", e),
        ("value_not_derivative",
         "You returned log(1 + e^x) itself: the exercise asks for its derivative.",
         _softplus(PROBE_X)),
        ("inverted_fraction",
         "You returned 1/(1 + e^x): that is d/du log(u) alone. Multiply it by the "
         "derivative of the inside, e^x.", 1.0 / (1.0 + e)),
        ("differentiated_twice",
         "You returned e^x/(1 + e^x)^2, which is the derivative of e^x/(1 + e^x): "
         "one differentiation too many.", e / (1.0 + e) ** 2),
    ])
    raise Wrong("Not the derivative of log(1 + e^x). "
                + describe_difference(got, expected, PROBE_X), "other")


OUTPUTS = np.array([0.5, 1.0, 2.0, 3.5])


@exercise("1.3", "the upstream gradient dy of loss = output**2")
def upstream_dy(answer):
    import tensorflow as tf

    output = tf.constant(OUTPUTS, dtype=tf.float32)
    got = as_values(call_answer(answer, output), shape=output.shape, dtype=output.dtype)
    expected = 2.0 * OUTPUTS
    if matches(got, expected):
        return "dy = d(loss)/d(output) = 2 * output."
    diagnose_mistake(got, [
        ("dy_of_ones",
         "You returned ones: that is dy when the output itself is the target. Here "
         "the target is loss = output**2, so dy = d(loss)/d(output).",
         np.ones_like(OUTPUTS)),
        ("returned_loss",
         "You returned output**2, which is the loss itself, not its derivative with "
         "respect to output.", OUTPUTS**2),
        ("missing_factor_two",
         "Almost: the derivative of output**2 is 2 * output; the factor 2 is missing.",
         OUTPUTS),
        ("constant_two",
         "You returned 2 everywhere: d(output**2)/d(output) = 2 * output depends on "
         "the output.", np.full_like(OUTPUTS, 2.0)),
    ])
    raise Wrong("dy should be d(loss)/d(output) for loss = output**2. "
                + describe_difference(got, expected), "other")


@exercise("1.4", "d(loss)/dx through output_gradients")
def loss_gradient(answer):
    x = _probe_tensor()
    got = as_values(call_answer(answer, x), shape=x.shape, dtype=x.dtype)
    output = _softplus(PROBE_X)
    local = _sigmoid(PROBE_X)
    expected = 2.0 * output * local
    if matches(got, expected):
        return ("tape.gradient(output, x, output_gradients=2 * output) equals "
                "d(loss)/dx = 2 * log(1 + e^x) * sigmoid(x).")
    diagnose_mistake(got, [
        ("forgot_upstream",
         "You returned sigmoid(x), d(output)/dx alone: without output_gradients the "
         "tape uses dy = 1. Pass output_gradients=dy with dy = 2 * output.", local),
        ("returned_dy",
         "You returned dy = 2 * output itself. The tape multiplies dy by the local "
         "derivative: return tape.gradient(output, x, output_gradients=dy).",
         2.0 * output),
        ("missing_factor_two",
         "You used dy = output; d(output**2)/d(output) is 2 * output.", output * local),
        ("dy_from_x",
         "You used dy = 2 * x. The upstream gradient is computed from the output: "
         "dy = 2 * output.", 2.0 * PROBE_X * local),
        ("squared_dy",
         "You used dy = output**2 (the loss) as the upstream gradient; use its "
         "derivative, 2 * output.", output**2 * local),
    ])
    raise Wrong("Not d(loss)/dx. " + describe_difference(got, expected, PROBE_X), "other")


@exercise("1.2", "central finite differences")
def central_difference(answer):
    cases = [
        (lambda x: x**3, 2.0, 1e-2, lambda x, h: 3 * x**2 + h**2),
        (math.sin, 1.0, 1e-3, lambda x, h: math.cos(x) * math.sin(h) / h),
        (math.exp, 0.5, 1e-2, lambda x, h: math.exp(x) * math.sinh(h) / h),
    ]
    for f, x, h, exact_central in cases:
        got = call_answer(answer, f, x, h)
        got = as_values(got, name="Your function", shape=(), require_tensor=False)
        expected = exact_central(x, h)
        if matches(got, expected, rtol=1e-9, atol=1e-12):
            continue
        forward = (f(x + h) - f(x)) / h
        backward = (f(x) - f(x - h)) / h
        diagnose_mistake(got, [
            ("forward_difference",
             "That is the forward difference (f(x + h) - f(x)) / h, whose error shrinks "
             "like h. The central difference uses f(x + h) and f(x - h).", forward),
            ("backward_difference",
             "That is the backward difference (f(x) - f(x - h)) / h. The central "
             "difference uses f(x + h) and f(x - h).", backward),
            ("missing_half",
             "You divided by h instead of 2h: f(x + h) and f(x - h) are 2h apart.",
             (f(x + h) - f(x - h)) / h),
            ("sign_flipped",
             "The sign is flipped: compute f(x + h) - f(x - h), not the reverse.",
             -expected),
        ], rtol=1e-9, atol=1e-12)
        raise Wrong(f"For f at x = {x} with h = {h} the central difference is "
                    f"{expected:.9g}; your function gave {float(got):.9g}.", "other")
    return "(f(x + h) - f(x - h)) / (2h): its error shrinks like h**2."


VJP_X = np.array([1.5, -2.0])
VJP_DY = np.array([1.0, 0.5, -2.0])


def _jacobian(x):
    x0, x1 = x
    return np.array([[x1, x0], [1.0, 1.0], [2.0 * x0, 0.0]])


@exercise("1.5", "a vector-Jacobian product by hand")
def vector_jacobian_product(answer):
    import tensorflow as tf

    x = tf.constant(VJP_X, dtype=tf.float32)
    dy = tf.constant(VJP_DY, dtype=tf.float32)
    jacobian = _jacobian(VJP_X)
    value = call_answer(answer, x, dy)
    if value is not None and hasattr(value, "shape") and tuple(value.shape) == jacobian.shape:
        raise Wrong("You returned the whole 3x2 Jacobian. The vector-Jacobian product "
                    "contracts it with dy: dy @ J, one number per input.",
                    "returned_jacobian")
    if value is not None and hasattr(value, "shape") and tuple(value.shape) == (3,):
        raise Wrong("Your result has shape (3,), the shape of y. A vector-Jacobian "
                    "product has the shape of x, (2,): it is dy @ J, not J @ something.",
                    "wrong_shape")
    got = as_values(value, shape=(2,), dtype=tf.float32)
    expected = VJP_DY @ jacobian
    if matches(got, expected):
        return "dy @ J = J^T dy, which is what tape.gradient(y, x, output_gradients=dy) returns."
    diagnose_mistake(got, [
        ("ignored_dy",
         "You summed the Jacobian's rows, which is the product with dy = ones. Weight "
         "each row by its entry of dy.", np.ones(3) @ jacobian),
        ("wrong_row",
         "Check the Jacobian's entries: row i holds the derivatives of y[i] with "
         "respect to x0 and x1.", VJP_DY @ _jacobian(VJP_X[::-1])),
    ])
    raise Wrong("Not dy @ J. " + describe_difference(got, expected), "other")
