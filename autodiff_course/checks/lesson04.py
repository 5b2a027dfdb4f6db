"""Checks for lesson 04, *Nested tapes and higher-order gradients*.

References are closed forms evaluated in float64 NumPy (second derivatives,
mixed partials, Hessians, norms), independent of the nested tapes, custom
gradients and forward accumulators the exercises ask for. The checks do run
the learner's functions under a tape where the exercise is about a gradient
(the custom sigmoid, the safe norm), and compare that gradient with a closed form.
"""

from __future__ import annotations

import numpy as np

from ..checking import (FORGOT_DECORATOR_HINT, Wrong, _first_line, as_values, call_answer,
                        describe_difference, diagnose_mistake, exercise,
                        forgot_custom_gradient_decorator, matches)
from ..log1pexp import reference_sigmoid as _sigmoid


def _tensor(values):
    import tensorflow as tf

    return tf.constant(values, dtype=tf.float32)


def _sigmoid_slope(x):
    """sigmoid(x) * sigmoid(-x), computed without cancellation or overflow."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, x) - np.logaddexp(0.0, -x))


# --------------------------------------------------------------------------
# Exercise 4.1: second derivative with nested tapes

OUTSIDE_CONTEXT_HINT = (
    "Your function returned None. The usual cause is the classic mistake: the inner "
    "`tape.gradient` call ran after the outer tape's `with` block had ended, so the "
    "outer tape never recorded how the first derivative was computed and answers "
    "None. Indent the inner gradient call so it runs inside the outer `with` block. "
    "(Or did you forget `return`?)"
)


def _second_derivative_cases():
    """(name, function, x, value, first derivative, second derivative) in float64."""
    import tensorflow as tf

    cube_x = np.array([-2.0, -0.5, 1.0, 3.0])
    sin_x = np.array([-1.0, 0.3, 2.0])
    bump_x = np.array([-1.2, 0.0, 0.5, 1.7])
    bump = np.exp(-bump_x**2)
    return [
        ("x**3", lambda x: x**3, cube_x, cube_x**3, 3.0 * cube_x**2, 6.0 * cube_x),
        ("sin(x)", tf.sin, sin_x, np.sin(sin_x), np.cos(sin_x), -np.sin(sin_x)),
        ("exp(-x**2)", lambda x: tf.exp(-x**2), bump_x, bump, -2.0 * bump_x * bump,
         (4.0 * bump_x**2 - 2.0) * bump),
    ]


@exercise("4.1", "a second derivative with nested tapes")
def second_derivative(answer):
    for name, function, x_values, value, first, second in _second_derivative_cases():
        x = _tensor(x_values)
        result = call_answer(answer, function, x)
        if result is None:
            raise Wrong(OUTSIDE_CONTEXT_HINT, "outside_context")
        got = as_values(result, shape=x.shape, dtype=x.dtype)
        if matches(got, second, rtol=1e-4, atol=1e-5):
            continue
        diagnose_mistake(got, [
            ("first_derivative",
             "You returned the first derivative f'(x). Differentiate it once more: the "
             "outer tape's gradient of the inner tape's result gives f''(x).", first),
            ("returned_value",
             "You returned f(x) itself, not its second derivative.", value),
            ("zeros",
             "You returned zeros. A None hidden by unconnected_gradients=ZERO looks like "
             "this: the inner gradient was probably computed outside the outer tape's "
             "`with` block, or the outer tape did not watch x.", np.zeros_like(second)),
        ], rtol=1e-4, atol=1e-5)
        raise Wrong(f"Not the second derivative of {name}. "
                    + describe_difference(got, second, x_values), "other")
    return ("The inner gradient, computed inside the outer tape's context, is itself "
            "recorded, so the outer tape can differentiate it again.")


# --------------------------------------------------------------------------
# Exercise 4.2: repair the mixed partial derivative

MIXED_X = np.array([0.5, -1.0, 1.5, 2.0])
MIXED_Y = np.array([1.0, 0.5, -0.7, 1.2])


def _surface_derivatives(x, y):
    """Partial derivatives of f(x, y) = x**2 * y**3 + sin(x * y) in float64."""
    xy = x * y
    return {
        "f": x**2 * y**3 + np.sin(xy),
        "fx": 2 * x * y**3 + y * np.cos(xy),
        "fy": 3 * x**2 * y**2 + x * np.cos(xy),
        "fxx": 2 * y**3 - y**2 * np.sin(xy),
        "fyy": 6 * x**2 * y - x**2 * np.sin(xy),
        "fxy": 6 * x * y**2 + np.cos(xy) - xy * np.sin(xy),
    }


@exercise("4.2", "repair the None from the outside-the-context mistake")
def mixed_partial(answer):
    x, y = _tensor(MIXED_X), _tensor(MIXED_Y)
    result = call_answer(answer, x, y)
    if result is None:
        raise Wrong("Still None: the inner `inner.gradient(z, x)` call must run while the "
                    "outer tape is recording, so move it inside the outer `with` block "
                    "(indent it one level). Then the outer tape sees how dz/dx depends "
                    "on y.", "still_none")
    got = as_values(result, shape=x.shape, dtype=x.dtype)
    d = _surface_derivatives(MIXED_X, MIXED_Y)
    if matches(got, d["fxy"]):
        return ("d/dy (dz/dx) = 6xy^2 + cos(xy) - xy sin(xy): with the inner gradient "
                "inside the outer context, the outer tape differentiates it.")
    diagnose_mistake(got, [
        ("zeros",
         "You returned zeros: unconnected_gradients=ZERO turns the None of the "
         "outside-the-context mistake into a silent 0. Move the inner gradient call "
         "inside the outer `with` block instead.", np.zeros_like(d["fxy"])),
        ("first_partial",
         "You returned dz/dx, the inner gradient: the outer gradient with respect to y "
         "is still missing.", d["fx"]),
        ("d2_dx2",
         "You returned d2z/dx2: the outer tape should differentiate dz/dx with respect "
         "to y, not x.", d["fxx"]),
        ("d2_dy2",
         "You returned d2z/dy2: the inner tape should differentiate with respect to x, "
         "the outer one with respect to y.", d["fyy"]),
        ("dz_dy",
         "You returned dz/dy, a first derivative: differentiate dz/dx with respect to y.",
         d["fy"]),
    ])
    raise Wrong("Not the mixed partial d2z/(dy dx). "
                + describe_difference(got, d["fxy"], MIXED_X), "other")


# --------------------------------------------------------------------------
# Exercise 4.3: a sigmoid whose gradient stays accurate

SIGMOID_X = np.array([-40.0, -15.0, -5.0, 0.0, 2.0, 10.0, 15.0, 20.0, 40.0, 50.0])
SIGMOID_DY = np.array([0.5, 2.0, -1.0, 1.0, 3.0, -0.5, 1.0, 2.0, 1.0, 1.5])


def _relative_error(got, expected):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(got - expected) / np.abs(expected)


@exercise("4.3", "a sigmoid whose gradient differentiates well")
def smooth_sigmoid(answer):
    import tensorflow as tf

    x = _tensor(SIGMOID_X)
    dy = _tensor(SIGMOID_DY)
    with tf.GradientTape() as tape:
        tape.watch(x)
        result = call_answer(answer, x)
    if forgot_custom_gradient_decorator(result):
        raise Wrong(FORGOT_DECORATOR_HINT, "forgot_decorator")
    value = as_values(result, shape=x.shape, dtype=x.dtype)
    expected_value = _sigmoid(SIGMOID_X)
    if not matches(value, expected_value, rtol=1e-5, atol=1e-30):
        diagnose_mistake(value, [
            ("returned_slope",
             "Your function returns sigmoid'(x). The forward value should be "
             "sigmoid(x) itself (tf.sigmoid(x)); the slope belongs in grad_fn.",
             _sigmoid_slope(SIGMOID_X)),
        ], rtol=1e-3, atol=1e-30)
        raise Wrong("The forward value should be sigmoid(x) = 1/(1 + e^-x). "
                    + describe_difference(value, expected_value, SIGMOID_X), "wrong_value")
    try:
        gradient = tape.gradient(result, x, output_gradients=dy)
    except Exception as error:  # the learner's grad_fn raised
        raise Wrong(f"Computing the gradient raised {type(error).__name__} "
                    f"({_first_line(error)}). Check that grad_fn(upstream) returns one "
                    f"tensor shaped like x.", "gradient_raised") from None
    if gradient is None:
        raise Wrong("The tape found no gradient from your output back to x (None). "
                    "Keep the computation in TensorFlow ops and return (value, grad_fn) "
                    "from a @tf.custom_gradient function.", "no_gradient")
    got = as_values(gradient, name="The gradient of your function", shape=x.shape,
                    dtype=x.dtype)
    slope = _sigmoid_slope(SIGMOID_X)
    expected = SIGMOID_DY * slope
    error = _relative_error(got, expected)
    if np.all(np.isfinite(got)) and np.all(error < 1e-4):
        return ("upstream * sigmoid(x) * sigmoid(-x) keeps full relative accuracy on both "
                "tails: no 1 - sigmoid(x) cancellation, no overflowing exp.")
    diagnose_mistake(got, [
        ("forgot_upstream",
         "Your gradient ignores the upstream gradient: grad_fn must return "
         "upstream * (local derivative). The check passes an upstream that is not 1.",
         slope),
        ("sign_error",
         "Your gradient has the wrong sign: sigmoid is increasing, so its slope is "
         "positive.", -expected),
        ("returned_sigmoid",
         "Your grad_fn returns upstream * sigmoid(x), which is the slope of softplus. "
         "The slope of sigmoid itself is sigmoid(x) * sigmoid(-x).",
         SIGMOID_DY * _sigmoid(SIGMOID_X)),
    ], rtol=1e-3, atol=1e-30)
    accurate = np.isfinite(got) & (error < 1e-4)
    middle = np.abs(SIGMOID_X) <= 5.0
    if np.all(accurate[middle]):
        if np.all(accurate[np.abs(SIGMOID_X) <= 40.0]):
            raise Wrong("Accurate up to |x| = 40 but wrong at x = 50: something overflows "
                        "there (e^50 is about 5e21, and its square passes float32's "
                        "largest value 3.4e38). Express the slope with sigmoids only: "
                        "sigmoid(x) * sigmoid(-x).", "exp_overflow")
        raise Wrong("Accurate near 0 but not on a tail (for example at x = 15 or 20): "
                    "1 - sigmoid(x) cancels once sigmoid(x) rounds to nearly 1. That is "
                    "also what TensorFlow's own sigmoid gradient, s * (1 - s), does. Use "
                    "sigmoid(-x) instead of 1 - sigmoid(x).", "cancellation")
    raise Wrong("Not upstream times the sigmoid's slope. "
                + describe_difference(got, expected, SIGMOID_X), "other")


# --------------------------------------------------------------------------
# Exercise 4.4: a Hessian-vector product without forming the Hessian


def _rosenbrock_hessian(x):
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n - 1):
        hessian[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        hessian[i + 1, i + 1] += 200.0
        hessian[i, i + 1] = hessian[i + 1, i] = -400.0 * x[i]
    return hessian


def _rosenbrock_gradient(x):
    gradient = np.zeros_like(x)
    gradient[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    gradient[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return gradient


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _hvp_cases():
    """(name, function, x, v, gradient, Hessian), the references in float64."""
    import tensorflow as tf

    def rosenbrock(x):
        return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    def quartic(x):
        return 0.25 * tf.reduce_sum(x**2) ** 2

    x1 = np.array([0.3, -0.7, 1.2, 0.9])
    x2 = np.array([0.2, -1.0, 0.7])
    x3 = np.array([0.4, -1.1, 0.8])
    p = _softmax(x2)
    return [
        ("the Rosenbrock function", rosenbrock, x1, np.array([1.0, -0.5, 0.25, 2.0]),
         _rosenbrock_gradient(x1), _rosenbrock_hessian(x1)),
        ("logsumexp", tf.reduce_logsumexp, x2, np.array([0.5, 1.0, -2.0]),
         p, np.diag(p) - np.outer(p, p)),
        ("(x.x)**2 / 4", quartic, x3, np.array([1.0, 2.0, -1.0]),
         (x3 @ x3) * x3, (x3 @ x3) * np.eye(3) + 2.0 * np.outer(x3, x3)),
    ]


@exercise("4.4", "a Hessian-vector product")
def hvp(answer):
    for name, function, x_values, v_values, gradient, hessian in _hvp_cases():
        x, v = _tensor(x_values), _tensor(v_values)
        n = x_values.size
        result = call_answer(answer, function, x, v)
        if result is None:
            raise Wrong("Your function returned None. If it came from the outer tape, the "
                        "inner gradient (and its product with v) was computed outside the "
                        "outer tape's `with` block, so the outer tape never saw it.",
                        "returned_none")
        shape = tuple(getattr(result, "shape", ()) or ())
        if hasattr(result, "shape"):
            if shape == ():
                raise Wrong("You returned one number, probably v . grad f (a directional "
                            "derivative). The Hessian-vector product is a vector shaped "
                            "like x: differentiate v . grad f with respect to x.",
                            "directional_derivative")
            if shape == (n, n):
                raise Wrong(f"You returned a {n}x{n} matrix: the Hessian itself (or "
                            f"H * v broadcast). The point of a Hessian-vector product is "
                            f"to get H @ v, shaped like x, without forming H: "
                            f"differentiate v . grad f with respect to x.",
                            "returned_hessian")
            if shape in ((n, 1), (1, n)):
                raise Wrong(f"You returned shape {shape}, a column or row matrix. Return a "
                            f"vector shaped like x, ({n},): tf.linalg.matvec, or "
                            f"tf.reshape.", "matrix_shape")
        got = as_values(result, shape=x.shape, dtype=x.dtype)
        expected = hessian @ v_values
        atol = 1e-5 * max(1.0, float(np.abs(expected).max()))
        if matches(got, expected, rtol=1e-4, atol=atol):
            continue
        diagnose_mistake(got, [
            ("returned_gradient",
             "You returned grad f, the first derivative. Differentiate v . grad f once "
             "more with respect to x (inside an outer tape).", gradient),
            ("gradient_times_v",
             "You returned grad f * v, element by element. The product with v must be "
             "differentiated: take the outer gradient of sum(grad f * v).",
             gradient * v_values),
            ("v_after_differentiating",
             "You multiplied by v after the outer gradient. outer.gradient(g, x) is H @ "
             "ones (the row sums of H); multiply g by v before the outer gradient, or "
             "pass output_gradients=v.", (hessian @ np.ones(n)) * v_values),
            ("ignored_v",
             "Your result does not depend on v: it is H @ ones, the outer gradient of g "
             "itself. Take the outer gradient of sum(g * v), or pass output_gradients=v.",
             hessian @ np.ones(n)),
            ("sign_error", "Your result has the wrong sign.", -expected),
        ], rtol=1e-4, atol=atol)
        raise Wrong(f"Not H @ v for {name}. " + describe_difference(got, expected), "other")
    return ("H @ v at the cost of about two gradients, whatever the size of x. (Forming H "
            "with tape.jacobian also gives H @ v, but costs one backward pass per input.)")


# --------------------------------------------------------------------------
# Exercise 4.5: a norm with a finite gradient at zero

NORM_ROWS = np.array([
    [3.0, 4.0, 0.0],
    [0.0, 0.0, 0.0],
    [0.03, -0.04, 0.0],
    [-1.0, 2.0, -2.0],
    [0.6, 0.0, -0.8],
])
ZERO_ROW = 1


@exercise("4.5", "a safe norm for the gradient penalty")
def safe_norm(answer):
    import tensorflow as tf

    g = _tensor(NORM_ROWS)
    batch, width = NORM_ROWS.shape
    with tf.GradientTape() as tape:
        tape.watch(g)
        result = call_answer(answer, g)
    if result is not None and hasattr(result, "shape"):
        shape = tuple(result.shape)
        if shape == ():
            raise Wrong("You returned one number, the norm of the whole batch. The penalty "
                        "needs one norm per example: reduce over the last axis only "
                        "(axis=-1).", "whole_tensor_norm")
        if shape == (batch, 1):
            raise Wrong(f"You returned shape {shape}: drop keepdims=True so the result has "
                        f"one norm per example, shape ({batch},).", "keepdims")
        if shape == (width,):
            raise Wrong(f"You returned shape {shape}: that reduces over the batch (axis 0). "
                        f"Reduce over the last axis, one norm per example.", "wrong_axis")
    value = as_values(result, shape=(batch,), dtype=g.dtype)
    norms = np.linalg.norm(NORM_ROWS, axis=-1)
    nonzero = norms > 0
    if not (matches(value[nonzero], norms[nonzero], rtol=1e-4, atol=1e-6)
            and abs(value[ZERO_ROW]) <= 1e-3):
        diagnose_mistake(value, [
            ("squared_norm",
             "You returned the squared norm, sum(g**2). The penalty uses the norm itself: "
             "take the square root (of sum(g**2) + a tiny eps).", norms**2),
            ("l1_norm",
             "You returned the sum of absolute values (the L1 norm). The gradient penalty "
             "uses the Euclidean norm, sqrt(sum(g**2)).", np.abs(NORM_ROWS).sum(axis=-1)),
        ], rtol=1e-4, atol=1e-6)
        if matches(value[[0, 3, 4]], norms[[0, 3, 4]], rtol=1e-2, atol=1e-6):
            raise Wrong("Right for large vectors, but the norm of small ones is off (the "
                        f"zero row gives {value[ZERO_ROW]:.3g}, the row of norm 0.05 gives "
                        f"{value[2]:.3g}): your epsilon is too large. Something like "
                        "1e-12 inside the square root is enough.", "eps_too_large")
        raise Wrong("Not the Euclidean norm of each row. "
                    + describe_difference(value, norms), "other")
    try:
        gradient = tape.gradient(result, g)
    except Exception as error:
        raise Wrong(f"Computing the gradient of your norm raised {type(error).__name__}: "
                    f"{_first_line(error)}", "gradient_raised") from None
    if gradient is None:
        raise Wrong("The tape found no gradient from your norm back to its input (None): "
                    "keep the computation in TensorFlow ops.", "no_gradient")
    got = as_values(gradient, name="The gradient of your norm", shape=g.shape,
                    dtype=g.dtype)
    if not np.all(np.isfinite(got[ZERO_ROW])):
        raise Wrong("The norm's value is right, but its gradient at the zero row is "
                    f"{got[ZERO_ROW]}: the derivative of sqrt at 0 is infinite, and "
                    "infinity times the zero from d(sum g**2)/dg is nan (tf.norm does "
                    "this). Put a tiny eps inside the square root, sqrt(sum(g**2) + eps), "
                    "or use the double-where pattern.",
                    "nan_gradient_at_zero")
    unit = NORM_ROWS[nonzero] / norms[nonzero, None]
    if not matches(got[nonzero], unit, rtol=1e-3, atol=1e-5):
        raise Wrong("The gradient of a norm away from zero should be g / |g|, and yours "
                    "is not. " + describe_difference(got[nonzero], unit), "wrong_gradient")
    if np.linalg.norm(got[ZERO_ROW]) > 1.0 + 1e-3:
        raise Wrong("The gradient at the zero row is finite but longer than 1, which no "
                    "slope of a norm can be: a norm never grows faster than its input. "
                    "Put the eps inside the square root.", "gradient_too_large")
    return ("Same values as the norm, and a finite gradient (here "
            f"{np.array2string(got[ZERO_ROW], precision=3)}) where the input is zero.")
