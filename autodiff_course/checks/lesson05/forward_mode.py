"""Exercise 5.6: a forward-mode Jacobian for tensors of any shape."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import require_forward_mode
from ...checking import signed
from .judging import _judge
from .judging import _known
from .judging import _shape_mistakes
from .shared import _call
from .shared import _close
from .shared import _dense_tanh_jacobian
from .shared import _dtype_clash
from .shared import _dtypes
from .shared import _numbers
from .shared import _require_shape
from .shared import _tensor
from .shared import _tf


def _reshaping_layer(matrix, offset, out_shape, dtype):
    """``y = tanh(A vec(x) + c)``, reshaped to ``out_shape``."""
    tf = _tf()
    a, c = _tensor(matrix, dtype), _tensor(offset, dtype)

    def f(x):
        y = tf.tanh(tf.linalg.matvec(a, tf.reshape(x, [-1])) + c)
        return tf.reshape(y, out_shape)

    return f


def _raised_forward_hint(wrong: Wrong, log, in_shape) -> Wrong:
    if wrong.mistake not in ("raised", "float32_not_float64"):
        return wrong
    text = wrong.hint
    if any(result is None for acc in log.accumulators for result in acc.jvp_results):
        return Wrong(
            "acc.jvp(y) returned None: y was computed outside `with "
            "tf.autodiff.ForwardAccumulator(x, tangent) as acc:`, so the "
            "accumulator never saw it. Compute y = f(x) inside that block.",
            "computed_outside",
        )
    if _dtype_clash(text):
        return Wrong(
            "float32 met float64: tf.one_hot makes float32 by default, and the "
            "tangent must have x's dtype. Use tf.one_hot(j, size, dtype=x.dtype). " + text,
            "one_hot_dtype",
        )
    lowered = text.lower()
    if "shape" in lowered or "incompatible" in lowered:
        return Wrong(
            f"The tangent must have the primal's shape, {tuple(in_shape)} here: "
            f"make a one-hot vector of length x's size (tf.size(x)) and reshape "
            f"it to x.shape. " + text,
            "tangent_shape",
        )
    return wrong


TANGENT_OF_ONES_HINT = (
    "Every column is the same: J times a tangent of ones, the sum of all columns. Column j "
    "needs its own pass with the one-hot tangent e_j (reshaped to x's shape)."
)


@exercise("5.6", "a forward-mode Jacobian for tensors of any shape")
def forward_jacobian_any_shape(answer):
    """tape.jacobian's layout, y.shape + x.shape, built column by column in forward mode.

    Method: tf.autodiff.ForwardAccumulator only (no tape, no finite differences).
    Probes (fresh each call): y = tanh(A vec(x) + c) reshaped; in float64 with a
    matrix x (2, k) and a vector y, and in float32 with a vector x and a matrix y
    (p, 2); y.shape + x.shape never equals x.shape + y.shape; A, c, x and the
    sizes fresh.
    """
    rng = fresh_rng("5.6")
    float32, float64 = _dtypes()
    probes = [
        (float64, (2, int(rng.integers(2, 4))), (int(rng.choice([3, 5])),)),
        (float32, (int(rng.choice([3, 5])),), (int(rng.integers(2, 4)), 2)),
    ]
    for dtype, in_shape, out_shape in probes:
        size_in, size_out = int(np.prod(in_shape)), int(np.prod(out_shape))
        matrix = signed(rng, (size_out, size_in), 0.2, 1.2)
        offset = signed(rng, size_out, 0.05, 0.5)
        xs = signed(rng, in_shape, 0.1, 1.2)
        flat = _dense_tanh_jacobian(matrix, offset, xs.reshape(-1))  # (size_out, size_in)
        expected = flat.reshape(out_shape + in_shape)
        f = _reshaping_layer(matrix, offset, out_shape, dtype)
        value, log, wrong = _call(answer, f, _tensor(xs, dtype))
        if wrong is not None:
            raise _raised_forward_hint(wrong, log, in_shape)
        if value is None:
            raise Wrong(
                "Your function returned None. (acc.jvp(y) is None when y was "
                "computed outside the ForwardAccumulator's block; or a `return` "
                "is missing.)",
                "returned_none",
            )
        require_forward_mode(log)
        numbers = _numbers(value, dtype)
        if numbers.shape == in_shape + out_shape:
            transposed = np.moveaxis(flat, 0, -1).reshape(in_shape + out_shape)
            if _close(numbers, transposed, dtype):
                raise Wrong(
                    f"Shape {numbers.shape} is x.shape + y.shape. tape.jacobian's "
                    f"layout puts the target's shape first: y.shape + x.shape = "
                    f"{expected.shape}. Stack the columns on the last axis, then "
                    f"reshape.",
                    "source_shape_first",
                )
        _require_shape(numbers, expected.shape)
        tangent_of_ones = np.broadcast_to(flat.sum(axis=1)[:, None], flat.shape)
        _known(
            numbers.reshape(flat.shape),
            flat,
            dtype,
            [("tangent_of_ones", TANGENT_OF_ONES_HINT, tangent_of_ones)],
        )
        _shape_mistakes(
            numbers.reshape(flat.shape),
            flat,
            axis=1,
            slice_name="column",
            varies="column j is J e_j, one forward pass with the one-hot "
            "tangent e_j (reshaped to x's shape) per entry of x",
        )
        _shape_mistakes(
            numbers, expected, axis=0, slice_name="row", varies="the layout is y.shape + x.shape"
        )
        _judge(
            numbers,
            expected,
            dtype,
            log=log,
            known=[
                (
                    "columns_misplaced",
                    "The right numbers in the wrong places: the columns J e_j were stacked "
                    "along the first axis, so the reshape mixed them up. Stack them along "
                    "the last axis (tf.stack(columns, axis=-1)), giving y.shape + (size,), "
                    "then reshape to y.shape + x.shape.",
                    np.moveaxis(flat, -1, 0).reshape(expected.shape),
                ),
                ("tangent_of_ones", TANGENT_OF_ONES_HINT, tangent_of_ones.reshape(expected.shape)),
            ],
        )
    return (
        "Checked in float64 (matrix x) and float32 (matrix y) with "
        "tf.autodiff.ForwardAccumulator and no tape: the columns J e_j, laid out as "
        "y.shape + x.shape like tape.jacobian."
    )
