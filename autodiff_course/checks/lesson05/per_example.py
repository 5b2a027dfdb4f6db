"""Exercise 5.3: per-example Jacobians."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import signed
from ...checking import sizes as draw_sizes
from ...log1pexp import reference_sigmoid as _sigmoid
from .judging import _judge
from .shared import _answer
from .shared import _dtypes
from .shared import _raise_if_zeros
from .shared import _require_shape
from .shared import _tensor
from .shared import _tf


def _layer(weights, offset, dtype, activation):
    tf = _tf()
    w, c = _tensor(weights, dtype), _tensor(offset, dtype)
    act = tf.tanh if activation == "tanh" else tf.math.softplus

    def layer(x):
        return act(x @ w + c)

    return layer


def _layer_jacobians(weights, offset, xs, activation):
    """float64 per-example Jacobians (batch, outs, ins) of act(x W + c)."""
    z = xs @ weights + offset
    slope = 1.0 - np.tanh(z) ** 2 if activation == "tanh" else _sigmoid(z)
    return slope[:, :, None] * weights.T[None, :, :]


@exercise("5.3", "per-example Jacobians")
def per_example_jacobian(answer):
    """Per-example Jacobians of a layer that treats each example on its own.

    Probes (fresh each call): tanh(x W + c) in float32 and softplus(x W + c) in
    float64, with two different batch sizes between 2 and 5, and ins, outs and
    the batch size all different (so every layout has its own shape); W, c and
    the batch fresh, of both signs. Any method that gives the
    (batch, outs, ins) blocks is right (batch_jacobian, or the diagonal blocks of
    tape.jacobian).
    """
    rng = fresh_rng("5.3")
    batches = draw_sizes(rng, 2, 2, 5)
    for dtype, batch, activation in zip(_dtypes(), batches, ("tanh", "softplus")):
        ins, outs = (
            int(v)
            for v in rng.choice([k for k in range(2, 6) if k != batch], size=2, replace=False)
        )
        weights = signed(rng, (ins, outs), 0.2, 1.2)
        offset = signed(rng, outs, 0.05, 0.5)
        xs = signed(rng, (batch, ins), 0.1, 1.5)
        expected = _layer_jacobians(weights, offset, xs, activation)
        numbers, log = _answer(
            answer, dtype, _layer(weights, offset, dtype, activation), _tensor(xs, dtype)
        )
        shape = numbers.shape
        if shape == (batch, ins, outs) and np.all(numbers == 0.0):
            raise Wrong(
                f"Shape {shape} and all zeros: the arguments are swapped. "
                f"batch_jacobian(target, source) takes y first; x does not "
                f"depend on y, and batch_jacobian returns zeros (not None) for "
                f"an unconnected pair.",
                "swapped_arguments",
            )
        layouts = {  # batch, ins and outs all differ, so each layout has its own shape
            (batch, outs, batch, ins): (
                f"Shape {shape} is (batch, outs, batch, ins): the full tape.jacobian, "
                f"every output of every example against every example's input. "
                f"Per-example Jacobians have shape ({batch}, {outs}, {ins}): use "
                f"tape.batch_jacobian(y, x), or take the diagonal blocks.",
                "returned_full_jacobian",
            ),
            (batch, ins, outs): (
                f"Shape {shape} is (batch, ins, outs): each Jacobian is transposed. Rows "
                f"belong to outputs: the shape is ({batch}, {outs}, {ins}), target shape "
                f"then source shape.",
                "transposed",
            ),
            (batch, ins): (
                f"Shape {shape} is the shape of x: that is tape.gradient(y, x), the sum "
                f"over each example's outputs. A per-example Jacobian keeps one row per "
                f"output: ({batch}, {outs}, {ins}).",
                "returned_gradient",
            ),
            (outs, ins): (
                f"Shape {shape} is a single Jacobian. The exercise asks for one per "
                f"example, stacked along the batch axis: ({batch}, {outs}, {ins}).",
                "single_example",
            ),
            (batch, 1, ins): (
                f"Shape {shape}: one output per example, where the layer has {outs}. Were "
                f"the outputs summed (tf.reduce_sum(..., axis=1)) before differentiating? "
                f"Differentiate y itself.",
                "summed_outputs",
            ),
        }
        if shape in layouts:
            raise Wrong(*layouts[shape])
        _require_shape(numbers, (batch, outs, ins))
        _raise_if_zeros(numbers, log)
        _judge(
            numbers,
            expected,
            dtype,
            log=log,
            summary="Not the per-example Jacobians of the layer.",
            repeated=(0, "example's block", "each example has its own Jacobian, at its own input"),
        )
    return (
        f"Checked on two layers (batches of {batches[0]} and {batches[1]}, float32 and "
        f"float64): the per-example Jacobians have shape (batch, outs, ins), the "
        f"diagonal blocks of the block-diagonal full Jacobian."
    )
