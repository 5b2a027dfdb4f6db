"""Checks for lesson 05, *Jacobians*.

Every reference is independent of the tape: closed forms in float64 NumPy (the
Jacobian of ``tanh(A x + c)`` is ``diag(1 - y**2) A``; the per-example Hessian of
``sum(softplus(x C))`` is ``C diag(s (1 - s)) C^T``; the blocks of a layer that
subtracts the batch mean are written out). The functions handed to the learner's
code are built here from TensorFlow ops in the probe's dtype, so the learner's
tape can differentiate them, and every probe is drawn fresh on each call: new
sizes, new matrices, new points. Each exercise is probed in float32 *and* in
float64; a float64 probe is judged with float64 tolerance, so float32 shortcuts
and finite differences fail, and the result must keep the input's dtype.

One module per exercise: :mod:`.elementwise` (5.1), :mod:`.rows` (5.2),
:mod:`.per_example` (5.3), :mod:`.interacting_examples` (5.4), :mod:`.hessians`
(5.5) and :mod:`.forward_mode` (5.6). :mod:`.shared` calls an answer and reads
what it returned; :mod:`.judging` names what is wrong with a Jacobian.
"""

from __future__ import annotations

from ...checking import mistakes
from .elementwise import swish_jacobian
from .forward_mode import forward_jacobian_any_shape
from .hessians import per_example_hessians
from .interacting_examples import true_batch_jacobian
from .per_example import per_example_jacobian
from .rows import jacobian_by_rows

mistakes.register(
    {
        "returned_diagonal": "the diagonal of a Jacobian as a vector where the matrix belongs",
        "missed_product_rule": "one factor of a product treated as a constant",
        "half_product_rule": "one term of the product rule only",
        "product_rule_sign": "the product rule's two terms subtracted instead of added",
        "off_diagonal_nonzero": "derivatives copied into entries that are zero",
        "stacked_columns": "Jacobian rows stacked as columns (source shape before target shape)",
        "ones_upstream": "one vector-Jacobian product with dy of ones where one per row belongs",
        "wrong_row_count": "a Jacobian with another number of rows than the target has entries",
        "not_persistent": "a second gradient asked of a tape that is not persistent",
        "one_hot_dtype": "a float32 one-hot vector used with float64 values",
        "returned_full_jacobian": (
            "the full (batch, ..., batch, ...) Jacobian where per-example blocks belong"
        ),
        "swapped_arguments": "the source and the target swapped in a Jacobian call",
        "single_example": "one example's Jacobian where one per example belongs",
        "repeated_slice": "one row, block or column repeated where each should differ",
        "summed_outputs": "a layer's outputs summed before differentiating",
        "batch_jacobian_sums": "batch_jacobian's column sums of blocks where examples interact",
        "summed_rows": "each row of blocks summed over the source's batch axis",
        "first_column": "the blocks of the first example's inputs for every example",
        "hard_coded_batch": "a batch size typed in instead of read from the input",
        "rank_two_only": "code that works for one axis per example only",
        "returned_gradient": "a gradient where a Jacobian or Hessian belongs",
        "gradient_of_gradient": (
            "outer.gradient of a gradient (summed rows) where a Jacobian belongs"
        ),
        "diagonal_only": "only the diagonal of a Hessian",
        "gradient_outer_product": "the outer product g g^T where the Hessian belongs",
        "source_shape_first": "a Jacobian laid out as source shape + target shape",
        "columns_misplaced": "Jacobian columns stacked along the wrong axis before reshaping",
        "tangent_of_ones": "one forward pass with a tangent of ones where one per entry belongs",
        "tangent_shape": "a tangent whose shape is not the primal's",
        "computed_outside": "the output computed outside the ForwardAccumulator block",
        "no_row_gradients": "a Jacobian built without one tape.gradient per row",
    }
)

__all__ = [
    "forward_jacobian_any_shape",
    "jacobian_by_rows",
    "per_example_hessians",
    "per_example_jacobian",
    "swish_jacobian",
    "true_batch_jacobian",
]
