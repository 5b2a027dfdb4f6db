"""Checks for lesson 01, *The chain rule and the upstream gradient dy*: the mistake codes
only it names, then one spec per exercise (1.3 and 1.4 share :mod:`.dy_of_mse`), each
judged against closed forms in float64 NumPy, independent of the code the exercise asks for."""

from ...checking import mistakes

mistakes.register(
    {
        "forgot_outer_derivative": "the inner function's derivative without the outer one's",
        "inverted_fraction": "1/u (the outer derivative) where e^-x/u belongs",
        "derivative_of_softplus": "the derivative of log(1 + e^x) for that of log(1 + e^-x)",
        "quotient_rule_slip": "divided by u**2 where the derivative of log(u) is 1/u",
        "wrong_outer_factor": "the outer function's derivative dropped or altered",
        "forward_difference": "a forward difference (f(x + h) - f(x)) / h for the central one",
        "backward_difference": "a backward difference (f(x) - f(x - h)) / h for the central one",
        "missing_half": "a central difference divided by h instead of 2h",
        "step_not_h": "a coordinate moved by another step than the h divided by",
        "perturbed_all": "every coordinate moved at once instead of one at a time",
        "steps_accumulate": "steps left in place, so later coordinates move together",
        "missed_coordinates": "some coordinates never estimated (left at 0)",
        "mean_over_one_axis": "divided by one dimension instead of the number of elements",
        "ignored_target": "the upstream gradient of a loss computed without its target",
        "lost_sign": "an absolute value where the sign of the residual belongs",
        "dy_of_ones": "dy = 1 where the loss's upstream gradient belongs",
        "wrong_dy": "an upstream gradient dy other than d(loss)/d(output)",
        "dy_from_x": "the upstream gradient computed from x instead of from the output",
        "returned_dy": "the upstream gradient returned without the local derivative",
        "local_derivative_twice": "the local derivative multiplied in again after the tape",
        "dy_applied_twice": "the upstream gradient applied to a target that already contains it",
        "local_at_input": "a local derivative evaluated at the wrong point",
        "wrong_order": "a local derivative applied after the step it belongs before",
        "forgot_matrix": "the backward walk stopped before going back through W x",
        "added_not_multiplied": "the chain rule's factors added where they multiply",
    }
)

from .central_differences import central_gradient as central_gradient  # noqa: E402
from .chain_rule_by_hand import logistic_derivative as logistic_derivative  # noqa: E402
from .mse_upstream import upstream_dy as upstream_dy  # noqa: E402
from .output_gradients import loss_gradient as loss_gradient  # noqa: E402
from .vjp_by_hand import vector_jacobian_product as vector_jacobian_product  # noqa: E402
