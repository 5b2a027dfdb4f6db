"""Checks for lesson 04, *Nested tapes and higher-order gradients*.

Every reference is a closed form evaluated in float64 NumPy (Newton steps, mixed
partials, the sigmoid's slope, Hessian-vector products, row norms), independent
of the nested tapes, custom gradients and norms the exercises ask for. The method
an exercise demands is observed while the answer runs (nested tapes, no
``tape.jacobian``, no forward mode where reverse over reverse is asked, a
``@tf.custom_gradient`` rule that really produced the gradient). Probes are drawn
fresh on every call, in float32 and float64; float64 probes are judged to float64
precision, so float32 shortcuts and finite differences fail. A ``None`` is
explained from what the tapes and the answer's operations did (inner gradient
after the outer block, outer tape not watching, an unwatched tensor, a result
computed outside the block, a cut path), also when ``unconnected_gradients=ZERO``
or the answer itself turned it into zeros. Where the tapes computed the right
derivatives and only the final formula is wrong, the hint says so.

One module per exercise: :mod:`.newton` (4.1), :mod:`.mixed_partials` (4.2),
:mod:`.sigmoid_slope` (4.3), :mod:`.hessian_vector` (4.4) and :mod:`.safe_norms`
(4.5); :mod:`.shared` runs an answer and explains a None in this lesson's words,
:mod:`.judging` names what is wrong with a result the tapes computed.
"""

from __future__ import annotations

from ...checking import mistakes
from .hessian_vector import hvp
from .mixed_partials import mixed_partial
from .newton import newton_step
from .safe_norms import safe_norm
from .sigmoid_slope import smooth_sigmoid

mistakes.register(
    {
        "newton_uphill": "x + f'/f'': a Newton step with the wrong sign",
        "newton_ratio_inverted": "x - f''/f' where x - f'/f'' belongs",
        "newton_step_only": "the step f'/f'' returned instead of the new point x - f'/f''",
        "newton_root_finding": "x - f/f' (Newton's root-finding step) where x - f'/f'' belongs",
        "gradient_descent_step": "x - f'(x): the second derivative left out",
        "first_not_second": "a first derivative where a second derivative belongs",
        "second_not_newton": "the second derivative returned instead of the Newton step",
        "product_of_partials": "dz/dx * dz/dy where the derivative of dz/dx with respect to "
        "y belongs",
        "structural_none": "None where the derivative is structurally zero (zeros were asked for)",
        "slope_as_value": "sigmoid's slope returned as the forward value",
        "sigmoid_cancellation": "s * (1 - s): 1 - sigmoid(x) cancels on the positive tail",
        "exp_overflow": "a slope written with exp, which overflows on a tail",
        "softplus_slope": "upstream * sigmoid(x), the slope of softplus, where sigmoid's "
        "slope belongs",
        "tail_inaccurate": "right near zero, inaccurate on one tail",
        "wrong_combination": "the right derivatives, combined into the wrong formula",
        "square_of_sum": "the square of a sum where the sum of squares belongs",
        "threshold_too_large": "a tf.where threshold that zeroes small nonzero rows",
        "other_norm": "another norm (the largest entry, ...) where the Euclidean norm belongs",
        "custom_rule_bypassed": "part of the gradient came from ops outside the custom rule",
        "forward_over_reverse": "forward over reverse where reverse over reverse is asked for",
        "returned_hessian": "the Hessian matrix where the Hessian-vector product belongs",
        "directional_derivative": "the number v . grad f where the vector H @ v belongs",
        "hessian_row_sums": "H @ ones (times v) where H @ v belongs",
        "squared_norm": "the squared norm where the norm belongs",
        "l1_norm": "the sum of absolute values where the Euclidean norm belongs",
        "whole_tensor_norm": "one norm of the whole batch where one norm per row belongs",
        "eps_too_large": "an epsilon big enough to change the norm of small rows",
        "eps_outside_sqrt": "the epsilon added after the square root, where it protects nothing",
        "nan_gradient_at_zero": "a norm whose gradient is nan at a zero row",
        "where_without_safe_branch": "one tf.where around an op whose gradient is nan at 0",
        "gradient_too_large": "a finite gradient at zero longer than any slope of a norm",
    }
)

__all__ = ["hvp", "mixed_partial", "newton_step", "safe_norm", "smooth_sigmoid"]
