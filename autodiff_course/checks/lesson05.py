"""Checks for lesson 05, *Jacobians*.

Every reference is computed independently of the tape: closed forms in float64
NumPy (the Jacobian of ``tanh(A x)`` is ``diag(1 - y**2) A``, the Hessian of a
polynomial plus softplus is written out entry by entry) and plain NumPy
indexing for the block exercise. The functions handed to the learner's code are
built from TensorFlow ops here, so the learner's tape can differentiate them.
"""

from __future__ import annotations

import numpy as np

from ..checking import Wrong, as_values, call_answer, describe_difference, diagnose_mistake, exercise, matches
from ..log1pexp import reference_sigmoid as _sigmoid


def _tensor(values):
    import tensorflow as tf

    return tf.constant(np.asarray(values, dtype=np.float32))


def _tensor_shape(value):
    """The shape of a returned tensor, or None when it is not a tensor."""
    import tensorflow as tf

    if isinstance(value, (tf.Tensor, tf.Variable)):
        return tuple(value.shape)
    return None


def _tensor_values(value) -> np.ndarray:
    return np.asarray(value.numpy(), dtype=np.float64)


def _tanh_of_matvec(matrix):
    """``f(x) = tanh(A x)`` in TensorFlow float32, for the learner's tape."""
    import tensorflow as tf

    a = tf.constant(np.asarray(matrix, dtype=np.float32))

    def f(x):
        return tf.tanh(tf.linalg.matvec(a, x))

    return f


def _tanh_of_matvec_jacobian(matrix, x):
    """float64 closed form: d tanh(A x)/dx = diag(1 - y**2) A."""
    y = np.tanh(matrix @ x)
    return (1.0 - y**2)[:, None] * matrix


# 5.1 ---------------------------------------------------------------------------

SWISH_X = np.array([-2.0, -0.5, 0.0, 1.0, 3.0])


@exercise("5.1", "the Jacobian of an element-wise function")
def swish_jacobian(answer):
    import tensorflow as tf

    x = _tensor(SWISH_X)
    n = SWISH_X.size
    s = _sigmoid(SWISH_X)
    derivative = s + SWISH_X * s * (1.0 - s)
    expected = np.diag(derivative)
    value = call_answer(answer, x)
    if _tensor_shape(value) == (n,):
        if matches(_tensor_values(value), derivative):
            raise Wrong(
                f"You returned the {n} derivatives dy_i/dx_i as a vector of shape ({n},): "
                f"that is what tape.gradient gives for an element-wise function. The "
                f"Jacobian is the ({n}, {n}) matrix with these numbers on its diagonal "
                f"(target shape + source shape): use tape.jacobian, or tf.linalg.diag.",
                "returned_diagonal")
        raise Wrong(f"Your function returned shape ({n},), the shape of x. A Jacobian "
                    f"of y ({n},) with respect to x ({n},) has shape ({n}, {n}).",
                    "wrong_shape")
    got = as_values(value, shape=(n, n), dtype=tf.float32)
    if matches(got, expected):
        return ("The Jacobian of an element-wise function is diagonal: y_i depends on "
                "x_i only.")
    diagnose_mistake(got, [
        ("missed_product_rule",
         "You returned diag(sigmoid(x)): the factor x in x * sigmoid(x) was treated as a "
         "constant. The product rule gives sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x)).",
         np.diag(s)),
        ("half_product_rule",
         "You returned diag(x * sigmoid'(x)) only: the product rule adds a second term, "
         "sigmoid(x) itself.", np.diag(SWISH_X * s * (1.0 - s))),
        ("value_not_derivative",
         "You put the function's values x * sigmoid(x) on the diagonal, not its "
         "derivatives.", np.diag(SWISH_X * s)),
        ("off_diagonal_nonzero",
         "Every row holds all the derivatives. But y_i depends on x_i alone, so "
         "dy_i/dx_j = 0 for i != j: only the diagonal is non-zero.",
         np.tile(derivative, (n, 1))),
        ("off_diagonal_nonzero",
         "Every column holds all the derivatives. But y_i depends on x_i alone, so "
         "dy_i/dx_j = 0 for i != j: only the diagonal is non-zero.",
         np.tile(derivative[:, None], (1, n))),
    ])
    raise Wrong("Not the Jacobian of x * sigmoid(x). "
                + describe_difference(got, expected), "other")


# 5.2 ---------------------------------------------------------------------------

ROWS_A = np.array([[1.0, -0.5, 0.25, 2.0],
                   [0.5, 1.5, -1.0, 0.0],
                   [-0.75, 0.2, 0.6, -1.2]])
ROWS_X = np.array([0.4, -0.3, 0.8, 0.1])


def _raised_hint(wrong: Wrong) -> Wrong:
    """Turn a generic 'your function raised' into a tape-specific hint where possible."""
    if wrong.mistake != "raised":
        return wrong
    if "non-persistent" in wrong.hint:
        return Wrong("The tape was asked for a second gradient: a tape is released after "
                     "its first gradient call unless you create it with "
                     "tf.GradientTape(persistent=True). (Then `del tape` when done.)",
                     "not_persistent")
    if "(None)" in wrong.hint:
        return Wrong("tape.gradient returned None, which tf.stack cannot stack. The check "
                     "passes x as a tf.constant: call tape.watch(x) before computing "
                     "y = f(x). " + wrong.hint, "not_watched")
    return wrong


@exercise("5.2", "a Jacobian row by row")
def jacobian_by_rows(answer):
    import tensorflow as tf

    f = _tanh_of_matvec(ROWS_A)
    x = _tensor(ROWS_X)
    expected = _tanh_of_matvec_jacobian(ROWS_A, ROWS_X)
    m, n = expected.shape
    try:
        value = call_answer(answer, f, x)
    except Wrong as wrong:
        raise _raised_hint(wrong) from None
    shape = _tensor_shape(value)
    if shape == (n, m) and matches(_tensor_values(value), expected.T):
        raise Wrong(f"Your result has shape ({n}, {m}), source then target: the rows came "
                    f"out as columns (tf.stack(..., axis=1), or a transpose). Row i of the "
                    f"Jacobian is the gradient of y[i]: stack the rows along axis 0 for "
                    f"shape ({m}, {n}).", "stacked_columns")
    if shape == (n,):
        raise Wrong(f"You returned one vector shaped like x ({n},): that is one gradient, "
                    f"the VJP with dy = ones (the sum of the rows). The Jacobian needs one "
                    f"backward pass per output, with dy = tf.one_hot(i, {m}), stacked into "
                    f"shape ({m}, {n}).", "returned_gradient")
    got = as_values(value, shape=(m, n), dtype=tf.float32)
    if matches(got, expected):
        return ("Row i of the Jacobian is tape.gradient(y, x, output_gradients=e_i): one "
                "backward pass per output.")
    column_sums = np.ones(m) @ expected
    diagnose_mistake(got, [
        ("ones_upstream",
         "Every row is the same: the sum of the Jacobian's rows. That is the gradient with "
         "dy = ones; row i needs output_gradients=tf.one_hot(i, m), which selects y[i].",
         np.tile(column_sums, (m, 1))),
        ("rows_reversed",
         "The rows are in reverse order: row i must be the gradient of y[i].",
         expected[::-1]),
    ])
    raise Wrong("Not the Jacobian of f at x. " + describe_difference(got, expected), "other")


# 5.3 ---------------------------------------------------------------------------

LAYER_W = np.array([[0.8, -0.4], [0.3, 1.1], [-0.6, 0.5]])  # (ins=3, outs=2)
LAYER_B = np.array([0.1, -0.2])
LAYER_X = np.array([[0.5, -1.0, 0.25],
                    [1.5, 0.0, -0.5],
                    [-0.3, 0.7, 0.9],
                    [0.0, -0.2, 1.2]])  # (batch=4, ins=3)


def _dense_tanh_layer():
    import tensorflow as tf

    w = tf.constant(LAYER_W.astype(np.float32))
    b = tf.constant(LAYER_B.astype(np.float32))

    def layer(x):
        return tf.tanh(x @ w + b)

    return layer


@exercise("5.3", "per-example Jacobians")
def per_example_jacobian(answer):
    import tensorflow as tf

    batch, ins = LAYER_X.shape
    outs = LAYER_W.shape[1]
    y = np.tanh(LAYER_X @ LAYER_W + LAYER_B)
    expected = (1.0 - y**2)[:, :, None] * LAYER_W.T[None, :, :]  # (batch, outs, ins)
    value = call_answer(answer, _dense_tanh_layer(), _tensor(LAYER_X))
    shape = _tensor_shape(value)
    if shape == (batch, outs, batch, ins):
        raise Wrong(f"Shape {shape} is (batch, outs, batch, ins): the full tape.jacobian, "
                    f"every output of every example against every example's input. "
                    f"Per-example Jacobians have shape ({batch}, {outs}, {ins}): use "
                    f"tape.batch_jacobian(y, x).", "used_jacobian")
    if shape == (batch, ins, outs):
        values = _tensor_values(value)
        if np.allclose(values, 0.0):
            raise Wrong(f"Shape {shape} and all zeros: the arguments are swapped. "
                        f"batch_jacobian(target, source) takes y first; x does not depend "
                        f"on y, and batch_jacobian returns zeros (not None) for an "
                        f"unconnected pair.", "swapped_arguments")
        raise Wrong(f"Shape {shape} is (batch, ins, outs): each Jacobian is transposed. "
                    f"Rows belong to outputs: the shape is ({batch}, {outs}, {ins}), "
                    f"target shape then source shape.", "transposed")
    if shape == (batch, ins):
        raise Wrong(f"Shape {shape} is the shape of x: that is tape.gradient(y, x), the "
                    f"sum over each example's outputs. A per-example Jacobian keeps one "
                    f"row per output: ({batch}, {outs}, {ins}).", "returned_gradient")
    if shape == (outs, ins):
        raise Wrong(f"Shape {shape} is a single Jacobian. The exercise asks for one per "
                    f"example, stacked along the batch axis: ({batch}, {outs}, {ins}).",
                    "single_example")
    got = as_values(value, shape=(batch, outs, ins), dtype=tf.float32)
    if matches(got, expected):
        return ("batch_jacobian gives (batch, outs, ins): the diagonal blocks of the "
                "block-diagonal full Jacobian, without computing the zeros.")
    diagnose_mistake(got, [
        ("not_watched",
         "All zeros: batch_jacobian returns zeros, not None, when the target is not "
         "connected to the source. The check passes x as a tf.constant: call "
         "tape.watch(x) before y = layer(x).", np.zeros_like(expected)),
        ("forgot_activation",
         "You returned W transposed for every example: that is the Jacobian of x @ W + b. "
         "The tanh multiplies row j by 1 - y_j**2, which differs per example.",
         np.broadcast_to(LAYER_W.T, expected.shape)),
    ])
    raise Wrong("Not the per-example Jacobians of the layer. "
                + describe_difference(got, expected), "other")


# 5.4 ---------------------------------------------------------------------------

FULL_SHAPE = (3, 2, 3, 4)  # (batch, outs, batch, ins)
FULL = np.round(np.random.default_rng(505).normal(size=FULL_SHAPE), 3)


@exercise("5.4", "the diagonal blocks of a full Jacobian")
def diagonal_blocks(answer):
    import tensorflow as tf

    batch, outs, _, ins = FULL_SHAPE
    expected = np.stack([FULL[b, :, b, :] for b in range(batch)])  # (batch, outs, ins)
    value = call_answer(answer, _tensor(FULL))
    shape = _tensor_shape(value)
    if shape == (batch, ins, outs):
        raise Wrong(f"Shape {shape} is (batch, ins, outs): each block is transposed. Block "
                    f"b is full[b, :, b, :], shape ({outs}, {ins}).", "transposed")
    if shape == (batch, outs, batch):
        raise Wrong("tf.linalg.diag_part takes the diagonal of the LAST two axes (here the "
                    "source's batch axis and ins). Move the two batch axes to the end "
                    "first, or take full[b, :, b, :] for each b and tf.stack them.",
                    "diag_part_last_two")
    if shape == (outs, batch, ins):
        values = _tensor_values(value)
        if matches(values, FULL.sum(axis=0)):
            raise Wrong("You summed over the target's batch axis: sum over b' of "
                        "full[b', :, b, :]. That is exactly what batch_jacobian computes, "
                        "and it equals the diagonal blocks only when the examples are "
                        "independent. Take full[b, :, b, :] alone.", "summed_blocks")
        if matches(values, FULL[0]):
            raise Wrong("You returned full[0]: the derivatives of example 0's outputs with "
                        "respect to every example's inputs. Block b is full[b, :, b, :].",
                        "first_block_row")
    got = as_values(value, shape=(batch, outs, ins), dtype=tf.float32)
    if matches(got, expected):
        return ("Block b of the full Jacobian, full[b, :, b, :], is example b's own "
                "Jacobian; the rest are the cross-example terms.")
    diagnose_mistake(got, [
        ("summed_blocks",
         "You summed the blocks down each column (over the target's batch axis b'). That "
         "is what batch_jacobian computes, and it equals the diagonal blocks only when "
         "the examples are independent. Take full[b, :, b, :] alone.",
         FULL.sum(axis=0).transpose(1, 0, 2)),
        ("summed_rows",
         "You summed each row of blocks (over the source's batch axis). Block b is "
         "full[b, :, b, :] alone, without the cross-example terms.", FULL.sum(axis=2)),
        ("first_column",
         "You took full[:, :, 0, :] for every example: the derivatives with respect to "
         "example 0's inputs. Block b is full[b, :, b, :], the same b twice.",
         FULL[:, :, 0, :]),
    ])
    raise Wrong("Not the diagonal blocks. " + describe_difference(got, expected), "other")


# 5.5 ---------------------------------------------------------------------------

HESSIAN_X = np.array([0.5, -1.0, 2.0])


def _hessian_test_function(x):
    """sum(softplus(x)) + x0 * x1**2 + x1 * x2, in TensorFlow."""
    import tensorflow as tf

    return (tf.reduce_sum(tf.math.log(1.0 + tf.exp(x)))
            + x[0] * x[1] ** 2 + x[1] * x[2])


def _hessian_reference(x):
    x0, x1, x2 = x
    s = _sigmoid(x)
    gradient = s + np.array([x1**2, 2 * x0 * x1 + x2, x1])
    hessian = np.diag(s * (1.0 - s)) + np.array([[0.0, 2 * x1, 0.0],
                                                 [2 * x1, 2 * x0, 1.0],
                                                 [0.0, 1.0, 0.0]])
    return gradient, hessian


@exercise("5.5", "the Hessian as the Jacobian of the gradient")
def hessian(answer):
    import tensorflow as tf

    gradient, expected = _hessian_reference(HESSIAN_X)
    n = HESSIAN_X.size
    value = call_answer(answer, _hessian_test_function, _tensor(HESSIAN_X))
    if value is None:
        raise Wrong("Your function returned None. With nested tapes this usually means the "
                    "inner gradient was computed after the outer `with` block had closed, "
                    "so the outer tape never recorded it: indent "
                    "`g = inner.gradient(y, x)` inside the outer block. (Or a `return` "
                    "is missing.)", "inner_gradient_outside")
    if _tensor_shape(value) == (n,):
        values = _tensor_values(value)
        if matches(values, gradient, rtol=1e-4, atol=1e-5):
            raise Wrong(f"You returned the gradient, shape ({n},). The Hessian is the "
                        f"Jacobian of that gradient, shape ({n}, {n}): differentiate it "
                        f"once more with an outer tape.", "returned_gradient")
        if matches(values, expected.sum(axis=0), rtol=1e-4, atol=1e-5):
            raise Wrong(f"You returned outer.gradient(g, x), shape ({n},): the gradient of "
                        f"a vector target sums over it, so you got the Hessian's column "
                        f"sums. Use outer.jacobian(g, x) for the ({n}, {n}) matrix.",
                        "gradient_of_gradient")
    got = as_values(value, shape=(n, n), dtype=tf.float32)
    if matches(got, expected, rtol=1e-4, atol=1e-5):
        return "H = outer.jacobian(inner.gradient(y, x), x), symmetric as it should be."
    diagnose_mistake(got, [
        ("inner_gradient_outside",
         "All zeros: the outer tape did not see the inner gradient (it was computed "
         "after the outer `with` block closed), and unconnected_gradients=ZERO turned the "
         "None into zeros. Compute g = inner.gradient(y, x) inside the outer block.",
         np.zeros_like(expected)),
        ("diagonal_only",
         "Only the diagonal is right: the mixed second derivatives d2f/dx_i dx_j are "
         "missing. outer.jacobian(g, x) gives every entry.",
         np.diag(np.diag(expected))),
        ("gradient_outer_product",
         "You returned g g^T, the outer product of the gradient with itself. The Hessian "
         "holds second derivatives: differentiate g with an outer tape.",
         np.outer(gradient, gradient)),
    ], rtol=1e-4, atol=1e-5)
    raise Wrong("Not the Hessian. " + describe_difference(got, expected), "other")


# 5.6 ---------------------------------------------------------------------------

JVP_A = np.array([[1.0, 2.0, 0.0],
                  [-1.0, 0.5, 1.0],
                  [0.25, -2.0, 1.5]])
JVP_X = np.array([0.3, -0.2, 0.1])
JVP_V = np.array([1.0, -2.0, 0.5])


@exercise("5.6", "a Jacobian-vector product in forward mode")
def jvp(answer):
    import tensorflow as tf

    jacobian = _tanh_of_matvec_jacobian(JVP_A, JVP_X)
    expected = jacobian @ JVP_V
    n = JVP_X.size
    value = call_answer(answer, _tanh_of_matvec(JVP_A), _tensor(JVP_X), _tensor(JVP_V))
    if value is None:
        raise Wrong("Your function returned None. acc.jvp(y) is None when y was computed "
                    "outside `with tf.autodiff.ForwardAccumulator(x, v) as acc:`: compute "
                    "y = f(x) inside that block. (Or a `return` is missing.)",
                    "computed_outside")
    if _tensor_shape(value) == (n, n):
        raise Wrong(f"You returned a ({n}, {n}) matrix, the whole Jacobian. A JVP is one "
                    f"vector, J @ v, shaped like y: one forward pass with tangent v.",
                    "returned_jacobian")
    got = as_values(value, shape=(n,), dtype=tf.float32)
    if matches(got, expected):
        return "acc.jvp(y) = J v: one forward pass gives one combination of the columns of J."
    diagnose_mistake(got, [
        ("vjp_instead",
         "That is v^T J, a vector-Jacobian product (what tape.gradient with "
         "output_gradients=v computes). Forward mode gives J v: use "
         "tf.autodiff.ForwardAccumulator(primals=x, tangents=v).", JVP_V @ jacobian),
        ("returned_primal",
         "You returned y = f(x) itself, the primal value. The JVP is acc.jvp(y).",
         np.tanh(JVP_A @ JVP_X)),
        ("ignored_tangent",
         "You used a tangent of ones: that gives J @ ones, the sum of J's columns. Pass "
         "tangents=v.", jacobian @ np.ones(n)),
    ])
    raise Wrong("Not J v. " + describe_difference(got, expected), "other")
