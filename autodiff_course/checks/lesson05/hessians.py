"""Exercise 5.5: per-example Hessians with nested tapes."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import require_nested
from ...checking import signed
from ...checking import sizes as draw_sizes
from ...log1pexp import reference_sigmoid as _sigmoid
from .judging import _judge
from .judging import _known
from .shared import _answer
from .shared import _close
from .shared import _dtypes
from .shared import _raise_if_zeros
from .shared import _require_shape
from .shared import _tensor
from .shared import _tf


def _per_example_function(mixing, dtype):
    """``f(x)[b] = sum_k softplus((x C)[b, k])``: one number per example."""
    tf = _tf()
    c = _tensor(mixing, dtype)

    def f(x):
        return tf.reduce_sum(tf.math.softplus(x @ c), axis=1)

    return f


def _per_example_reference(mixing, xs):
    """float64 per-example gradients (batch, n) and Hessians (batch, n, n)."""
    s = _sigmoid(xs @ mixing)  # (batch, k)
    gradients = s @ mixing.T
    curvature = s * (1.0 - s)
    hessians = np.einsum("ik,bk,jk->bij", mixing, curvature, mixing)
    return gradients, hessians


@exercise("5.5", "per-example Hessians with nested tapes")
def per_example_hessians(answer):
    """The Hessian of f(x)[b] with respect to x[b], for every example b.

    Method: nested tapes (an inner gradient computed while an outer tape records,
    then differentiated by the outer tape).
    Probes (fresh each call): f(x)[b] = sum_k softplus((x C)[b, k]) with a fresh
    (n, n) matrix C of both signs, so every Hessian is full; in float32 and in
    float64 (judged to 1e-12, so finite differences fail), with two different
    batch sizes between 3 and 5 and two different n between 2 and 4.
    """
    rng = fresh_rng("5.5")
    batches = draw_sizes(rng, 2, 3, 5)  # never 2: a sum over 2 would look like a factor 2
    widths = draw_sizes(rng, 2, 2, 4)
    for dtype, batch, n in zip(_dtypes(), batches, widths):
        mixing = signed(rng, (n, n), 0.3, 1.5)
        xs = signed(rng, (batch, n), 0.1, 1.5)
        gradients, expected = _per_example_reference(mixing, xs)
        numbers, log = _answer(
            answer, dtype, _per_example_function(mixing, dtype), _tensor(xs, dtype)
        )
        shape = numbers.shape
        if shape == (batch, n, batch, n):
            raise Wrong(
                f"Shape {shape} is (batch, n, batch, n): the full outer.jacobian, "
                f"every example's gradient against every example's input. Each "
                f"example's Hessian is a diagonal block: outer.batch_jacobian(g, x) "
                f"gives ({batch}, {n}, {n}) directly.",
                "returned_full_jacobian",
            )
        if shape == (batch, n):
            if _close(numbers, gradients, dtype):
                raise Wrong(
                    f"You returned the per-example gradients, shape ({batch}, "
                    f"{n}). The Hessians are their Jacobians: differentiate g once "
                    f"more with an outer tape, outer.batch_jacobian(g, x).",
                    "returned_gradient",
                )
            if _close(numbers, expected.sum(axis=1), dtype):
                raise Wrong(
                    f"You returned outer.gradient(g, x), shape ({batch}, {n}): the "
                    f"gradient of a non-scalar target sums over it, so each row "
                    f"is a sum of Hessian rows. Use outer.batch_jacobian(g, x) for "
                    f"({batch}, {n}, {n}).",
                    "gradient_of_gradient",
                )
        _require_shape(numbers, (batch, n, n))
        _raise_if_zeros(numbers, log)
        known = [
            (
                "diagonal_only",
                "Only the diagonals are right: the mixed second derivatives "
                "d2f/dx_i dx_j are missing. The Jacobian of the gradient gives every "
                "entry.",
                np.stack([np.diag(np.diag(h)) for h in expected]),
            ),
            (
                "gradient_outer_product",
                "You returned g g^T, the outer product of each example's gradient with "
                "itself. The Hessian holds second derivatives: differentiate g with an "
                "outer tape.",
                gradients[:, :, None] * gradients[:, None, :],
            ),
            (
                "mean_not_sum",
                f"Your Hessians are {batch} times too small, and {batch} is the batch "
                f"size: the values were averaged over the batch (tf.reduce_mean) "
                f"before the inner gradient. Each example's Hessian belongs to its own "
                f"f(x)[b]: differentiate f(x) itself (tape.gradient sums a vector "
                f"target, which keeps each example's gradient intact).",
                expected / batch,
            ),
        ]
        _known(numbers, expected, dtype, known)
        if log.used_any_autodiff:
            require_nested(log)
        _judge(
            numbers,
            expected,
            dtype,
            log=log,
            batch=batch,
            summary="Not the per-example Hessians.",
            repeated=(0, "example's Hessian", "each example has its own Hessian, at its own input"),
        )
        require_nested(log)
    return (
        f"Checked with nested tapes on fresh functions (batches of {batches[0]} and "
        f"{batches[1]}, n = {widths[0]} and {widths[1]}, float32 and float64): "
        f"the Jacobian of each example's gradient is its Hessian, symmetric as it "
        f"should be."
    )
