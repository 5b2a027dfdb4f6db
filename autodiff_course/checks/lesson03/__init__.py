"""Checks for lesson 03, *Custom gradients and the log1pexp story*.

Every reference is a closed form evaluated in float64 NumPy (softplus, sigmoid,
sign, clipping) at the very numbers TensorFlow saw, independent of the code the
exercises ask for. The answers run on the check's own ``tf.GradientTape`` exactly
as a model would use them, with upstream gradients of both signs and other than 1,
so a forgotten ``upstream *`` shows. Every exercise asks for a
``@tf.custom_gradient`` rule, and every check verifies that the learner's
``grad_fn`` really ran (for 3.1, that it produced the gradient the tape returned).
Probes are drawn fresh on every call, so numbers copied from the lesson fail.

One module per exercise: :mod:`.stable_log1pexp` (3.1, with the failure modes
of the log1pexp story, which 3.4 judges too), :mod:`.straight_through` (3.2),
:mod:`.clip_upstream` (3.3) and :mod:`.variable_layer` (3.4); :mod:`.shared`
runs an answer on the check's tape and names what its rule does wrong.
"""

from __future__ import annotations

from ...checking import mistakes
from .clip_upstream import clipped_upstream
from .stable_log1pexp import LOG1PEXP_FIXED_32
from .stable_log1pexp import LOG1PEXP_FIXED_64
from .stable_log1pexp import log1pexp_stable
from .straight_through import binarize_ste
from .variable_layer import scaled_softplus

mistakes.register(
    {
        # 3.1
        "forward_overflow": "the forward value overflows to inf (exp of a large x)",
        "forward_rounds_to_zero": "the forward value is 0.0 where 1 + e^x rounds to 1",
        "flush_to_zero": "the gradient is 0.0 where 1/(1 + e^x) is below the smallest normal float",
        "backward_overflow_nan": "the backward forms e^x, which overflows (inf/inf or 0*inf = nan)",
        "documented_rule_cancellation": (
            "the backward subtracts numbers close to 1 and cancels to 0.0"
        ),
        "sigmoid_of_minus_x": "sigmoid(-x) where sigmoid(x) belongs",
        "value_is_sigmoid": "the forward returns sigmoid(x), the derivative, not log(1 + e^x)",
        "forgot_grad_fn": "a @tf.custom_gradient function that returns only its output",
        "float32_threshold": "a switch-over threshold that is exact in float32 but not in float64",
        # 3.2
        "forward_identity": "the forward returns x unchanged where it should quantise",
        "forward_round": "tf.round where the exercise binarises with tf.sign",
        "forward_hardtanh": "the forward clips x to [-1, 1] instead of binarising it",
        "sign_at_zero": "a binarisation that gives +-1 at x = 0, where tf.sign gives 0",
        "not_clipped": "a gradient that passes everywhere where it should be clipped",
        "inverted_clip": "the gradient mask inverted (kept outside, zeroed inside)",
        "boundary_excluded": "the boundary |x| = 1 excluded from the pass-through region",
        "wrong_mask": "the upstream passes on a region of x other than |x| <= 1",
        # 3.3
        "clipped_after_local": "the clip applied after multiplying by the local derivative",
        "clipped_norm": "tf.clip_by_norm (the whole tensor) where each entry is clipped",
        "clipped_forward": "the forward value clipped, where only the backward clips",
        "wrong_clip_range": "the upstream clipped to another range than [-1, 1]",
        # 3.4
        "not_a_function": "a factory that returns something other than a function",
        "no_variables_keyword": "a grad_fn without the variables= keyword for a variable read",
        "variable_grads_not_list": "the variables' gradients not returned as a list",
        "no_variable_gradient": "None as the gradient of a variable the layer reads",
        "variable_grad_not_reduced": "a variable gradient shaped like x instead of like w",
        "variable_outside_rule": "the variable's gradient comes from ops outside the custom rule",
        "forgot_w": "d/dx of softplus(w x) without the factor w",
        "forgot_x": "d/dw of softplus(w x) without the factor x",
        "swapped_gradients": "x and w swapped between the two gradients",
        "value_not_scaled_inside": "w * softplus(x) where softplus(w * x) belongs",
    }
)
# Shared codes used here as well: forgot_upstream, forgot_local_derivative,
# wrong_local_derivative, upstream_not_linear, reduced_gradient, clipped_input,
# differentiated_twice, value_not_derivative, custom_gradient_not_used, ...

__all__ = [
    "LOG1PEXP_FIXED_32",
    "LOG1PEXP_FIXED_64",
    "binarize_ste",
    "clipped_upstream",
    "log1pexp_stable",
    "scaled_softplus",
]
