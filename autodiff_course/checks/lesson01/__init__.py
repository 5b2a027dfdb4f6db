"""Checks for lesson 01, *The chain rule and the upstream gradient dy*.

Every reference is a closed form evaluated in float64 NumPy (the sigmoid, the
softplus, the exact value of a central difference), independent of the
TensorFlow code the exercises ask for. Probes are drawn fresh on every call, so
numbers copied from the lesson fail; float64 probes are judged with float64
tolerances, so float32 shortcuts and finite differences fail where the exercise
asks for the exact derivative.

One module per exercise: :mod:`.chain_rule_by_hand` (1.1),
:mod:`.central_differences` (1.2), :mod:`.mse_upstream` (1.3),
:mod:`.output_gradients` (1.4) and :mod:`.vjp_by_hand` (1.5); :mod:`.shared` calls
an answer while watching how it differentiates, and holds the regression probes and
the mistakes in an upstream gradient that 1.3 and 1.4 both judge.
"""

from __future__ import annotations

from ...checking import mistakes
from .central_differences import central_gradient
from .chain_rule_by_hand import logistic_derivative
from .mse_upstream import upstream_dy
from .output_gradients import loss_gradient
from .vjp_by_hand import vector_jacobian_product

mistakes.register(
    {
        "forgot_outer_derivative": "the inner function's derivative without the outer one's",
        "inverted_fraction": "1/u (the outer derivative) where e^x/u belongs",
        "quotient_rule_slip": "divided by u**2 where the derivative of log(u) is 1/u",
        "derivative_of_softplus": "the derivative of log(1 + e^x) where e^-x is asked for",
        "forward_difference": "a forward difference (f(x + h) - f(x)) / h where the central "
        "one is asked for",
        "backward_difference": "a backward difference (f(x) - f(x - h)) / h where the central "
        "one is asked for",
        "missing_half": "a central difference divided by h instead of 2h",
        "perturbed_all": "every coordinate moved at once instead of one at a time",
        "mutated_input": "the function changed the array it received",
        "step_not_h": "a coordinate moved by another step than the h the difference is divided by",
        "steps_accumulate": "finite-difference steps left in place, so later coordinates "
        "move together",
        "wrong_order": "a local derivative applied after the step it belongs before",
        "mean_over_one_axis": "divided by one dimension instead of the number of elements",
        "missed_coordinates": "some coordinates never estimated (left at 0)",
        "wrong_dy": "an upstream gradient dy other than d(loss)/d(output)",
        "not_linear_in_dy": "a vector-Jacobian product that is not linear in dy",
        "wrong_jacobian": "a product with another matrix than the Jacobian",
        "wrong_inner_factor": "the inner function's derivative dropped or altered",
        "wrong_outer_factor": "the outer function's derivative dropped or altered",
        "local_derivative_twice": "the local derivative multiplied in again after the tape "
        "applied it",
        "added_not_multiplied": "the chain rule's factors added where they multiply",
        "ignored_target": "the upstream gradient of a loss computed without its target",
        "lost_sign": "an absolute value where the sign of the residual belongs",
        "dy_of_ones": "dy = 1 where the loss's upstream gradient belongs",
        "dy_from_x": "the upstream gradient computed from x instead of from the output",
        "returned_dy": "the upstream gradient returned without the local derivative",
        "dy_applied_twice": "the upstream gradient applied to a target that already contains it",
        "output_gradients_shape": "output_gradients whose shape is not the target's",
        "returned_jacobian": "the whole Jacobian where the vector-Jacobian product belongs",
        "no_transpose": "multiplied by W where W transposed belongs",
        "local_at_input": "a local derivative evaluated at the wrong point",
    }
)

__all__ = [
    "central_gradient",
    "logistic_derivative",
    "loss_gradient",
    "upstream_dy",
    "vector_jacobian_product",
]
