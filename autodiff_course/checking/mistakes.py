"""The mistake codes every check reports (introduced with the checks, lesson 00).

A verdict of *not yet* carries a short code naming the mistake it detected, so
that tests, the progress report and an instructor's grading sheet can count
mistakes across learners. One registry holds them all:

* the codes below are shared by every lesson (the same mistake has the same code
  wherever it is made: forgetting ``upstream`` is ``forgot_upstream`` in lesson 03
  and in lesson 06);
* a lesson's check module registers the codes only it can detect with
  :func:`register`, at import time, each with a one-line description.

:class:`~autodiff_course.checking.verdicts.Wrong` refuses a code that is not
registered, so a misspelt code fails the check's tests instead of reaching a
learner.
"""

from __future__ import annotations

SHARED: dict[str, str] = {
    # The plumbing: what came back was not something to judge.
    "not_attempted": "the stub still raises NotImplementedError",
    "not_callable": "the check received something other than a function",
    "raised": "the learner's code raised an exception",
    "too_slow": "the learner's code ran past the time limit",
    "returned_none": "a function returned None (often a missing return)",
    "returned_numpy": "a NumPy array or Python number where a tf.Tensor belongs",
    "returned_list": "a Python list or tuple where one tensor belongs",
    "wrong_type": "a value of a type that is not a number or a tensor",
    "wrong_structure": "a container of the wrong kind, length or keys",
    "wrong_keys": "a dict whose keys are not the ones asked for",
    "complex_values": "complex numbers where real ones belong",
    "wrong_shape": "a result of the wrong shape",
    "broadcast_shape": "an axis of size 1 added, kept or dropped (broadcasting, keepdims, a "
    "squeeze)",
    "wrong_dtype": "a result of another dtype than the input's",
    "float32_not_float64": "float32 arithmetic where the input is float64",
    "convert_not_cast": "tf.convert_to_tensor with a dtype, which checks a tensor's dtype, "
    "where tf.cast changes it",
    "unjudgeable": "the check itself failed (a bug in the check)",
    "exited": "sys.exit() (or exit(), quit()) inside the answer",
    "interrupted": "a KeyboardInterrupt inside the answer",
    "changed_global_state": "a global setting changed (np.seterr, a random seed, set_floatx)",
    "keeps_state": "a result that depends on an earlier call (state kept between calls)",
    "used_course_helper": "the course's own helper called where the exercise asks for code",
    "mutated_input": "the function changed an array it received",
    # Generic numerical patterns, recognised for every exercise.
    "sign_flipped": "the negative of the right answer",
    "scale_factor": "the right answer times a constant factor",
    "sum_not_mean": "a sum where the exercise asks for a mean",
    "mean_not_sum": "a mean where the exercise asks for a sum",
    "n_minus_one": "a division by N - 1 where the mean divides by N",
    "python_scalar": "float() or math.* on a tensor of several numbers",
    "transposed": "the transpose of the right answer (its axes in another order)",
    "repeated_slice": "one row, block or column repeated where each should differ",
    "returned_full_jacobian": "the full (batch, ..., batch, ...) Jacobian where per-example "
    "blocks belong",
    "single_example": "one example's slice where one per example belongs",
    "returned_diagonal": "the diagonal of a matrix as a vector where the matrix belongs",
    "reversed_order": "the right values in reverse order",
    "constant_offset": "the right answer plus a constant",
    "hard_coded": "the same numbers whatever the input (hard-coded values)",
    "hard_coded_size": "a size typed in (or kept from an earlier call) instead of read from "
    "the arguments",
    "not_repeatable": "other numbers for the same input when called again (copied or random)",
    "zeros": "zeros where the answer is not zero",
    "nan_or_inf": "nan or inf where the answer is finite",
    "approximation": "close, but only as close as an approximation gets",
    "clipped": "right where the answer is small, capped where it is larger",
    "one_tail": "right on one side of zero only",
    "masked_entries": "right at some entries, zero at others",
    "scale_and_offset": "the right answer times a factor plus a constant",
    "extra_factor": "the right answer times a factor too many",
    "added_term": "the right answer plus a term too many",
    "integer_mixed_in": "an integer tensor (tf.size, tf.shape) mixed into float arithmetic",
    "wrong_value": "the forward value is wrong",
    "wrong_gradient": "the gradient is wrong",
    "other": "a wrong answer the check has no name for",
    # Methods the exercise text demands.
    "used_tape": "a tape (or another autodiff tool) where the exercise says by hand",
    "used_tensorflow": "TensorFlow operations inside a rule written in NumPy",
    "custom_gradient_not_used": "no @tf.custom_gradient rule produced the gradient",
    "forgot_decorator": "the (output, grad_fn) pair returned without @tf.custom_gradient",
    "not_nested": "no nested tapes where the exercise asks for them",
    "not_forward_mode": "no tf.autodiff.ForwardAccumulator where forward mode is asked for",
    "no_output_gradients": "output_gradients not used where the exercise asks for it",
    "used_jacobian": "tape.jacobian or batch_jacobian where the exercise forbids it",
    "wrong_power": "another power than the formula's (the errors cubed, 3x for 3x^2)",
    "cancellation": "a difference of two numbers close to 1 where the value is small (its "
    "digits lost to cancellation: sigmoid(x) - 1, s * (1 - s), 1 - 1/(1 + e^z))",
    "finite_differences": "finite differences where the exercise asks for autodiff or a formula",
    "keras_optimizer": "a Keras optimizer where the exercise asks for each update by hand",
    "no_tape": "no tf.GradientTape where the exercise asks for one",
    "forward_over_reverse": "forward over reverse where reverse over reverse is asked for",
    "re_recorded": "the function recorded anew for each differentiation where one record serves",
    "called_on_slices": "a function that mixes its batch's examples called on part of the batch",
    # What the harnesses of custom gradients and rules know (lessons 03, 04 and 06).
    "forgot_grad_fn": "a @tf.custom_gradient function that returns only its output",
    "not_a_function": "a factory that returns something other than a function",
    "no_variables_keyword": "a grad_fn without the variables= keyword for a variable read",
    "variable_grads_not_list": "the variables' gradients not returned as a list",
    "no_variable_gradient": "None as the gradient of a variable the layer reads",
    "variable_grad_not_reduced": "a variable gradient shaped like x instead of like w",
    "variable_outside_rule": "the variable's gradient comes from ops outside the custom rule",
    "variable_not_read": "a layer that reads a copy of its variable's value, not the variable",
    "stale_variable": "a layer that uses its variable's value from when it was made, not now",
    # What the harness of NumPy rules knows (lesson 06).
    "changed_in_place": "an array handed to the answer was changed in place (+=, *=, out=)",
    "not_a_pair": "a rule that does not return the pair it should (two gradients, or "
    "output and grad_fn)",
    "grad_fn_not_callable": "the second thing a rule returns is not a gradient function",
    "rule_decorated": "the decorated function passed where the rule itself is asked for",
    "upstream_used_wrongly": "the gradient at one point uses the upstream of other points",
    "not_summed_back": "a gradient with the output's shape, not summed back to its input's",
    # Gradients that went missing, diagnosed from what the tape saw.
    "no_gradient": "the tape found no path back to the input (None)",
    "unwatched_constant": "a plain tensor the tape never watched",
    "unwatched_variable": "a variable the tape does not watch",
    "integer_dtype": "a gradient with respect to an integer tensor",
    "watched_after_use": "tape.watch called after the tensor was used",
    "watched_before_cast": "an integer tensor watched, then cast: the float copy unwatched",
    "gradient_outside_tape": "an inner gradient computed after the outer tape's block",
    "outer_not_watching": "the outer tape of a nested pair does not watch the source",
    "numpy_detour": "the computation left TensorFlow through NumPy",
    "non_differentiable_op": "the path goes through an operation without a gradient",
    "zeros_hide_none": "unconnected_gradients=ZERO turned a None into zeros",
    "variable_replaced": "a tf.Variable rebound to a new tensor or variable instead of "
    "updated in place",
    "stateful_assign": "an assign inside the recorded computation cut the path",
    "computed_outside_tape": "the target, or part of it, was computed outside the "
    "tape's with block",
    "source_not_used": "the source never took part in computing the target",
    "structural_none": "None where the derivative is structurally zero (zeros were asked for)",
    "wrong_combination": "the right derivatives, combined into the wrong formula",
    "first_not_second": "a first derivative where a second derivative belongs",
    # Gradients that are nan where an operation's slope is infinite (lessons 03 and 04).
    "nan_gradient_at_zero": "a gradient that is nan where an operation's slope is infinite",
    "eps_subnormal": "an epsilon below float32's smallest normal number, flushed to 0",
    "where_without_safe_branch": "one tf.where around an op whose gradient is nan at 0",
    "eps_outside_sqrt": "the epsilon added after the square root, where it protects nothing",
    "swapped_arguments": "the source and the target swapped in a gradient or Jacobian call",
    "not_persistent": "a second gradient asked of a tape that is not persistent",
    "upstream_shape": "an upstream (output_gradients) of another shape than its target",
    "tangent_shape": "a tangent whose shape is not the primal's",
    "computed_outside": "the output computed outside the ForwardAccumulator block",
    # Upstream gradients and custom gradients, shared by lessons 01, 03, 04 and 06.
    "forgot_upstream": "the backward rule ignores the upstream gradient",
    "upstream_reduced": "an element-wise rule that sums or averages the upstream",
    "grad_fn_raised": "the gradient function raised",
    "differentiated_twice": "one differentiation too many",
    "value_not_derivative": "the function's value where its derivative belongs",
    "wrong_local_derivative": "the upstream multiplied by another factor than the local derivative",
    "forgot_local_derivative": "the upstream passed on without the local derivative",
    "upstream_not_linear": "a backward rule that does not scale with the upstream gradient",
    "wrong_jacobian": "a product with another matrix than the Jacobian",
    "returned_jacobian": "the whole Jacobian where the vector-Jacobian product belongs",
    "no_transpose": "multiplied by a matrix where its transpose belongs",
    "reduced_gradient": "a per-element gradient summed or averaged over the whole input",
    "clipped_input": "the input clipped where the exercise does not clip it",
    "wrong_axis": "a sum over the wrong axis",
    "reduced_dy": "the upstream gradient reduced to one number",
    "wrong_source": "differentiated with respect to another tensor than asked",
    "wrong_target": "differentiated another result than asked",
    # Keras layers and training steps (lesson 07)
    "squeezed_size_one_axis": "a size-1 axis (batch, feature or output) squeezed or broadcast away",
    "weight_gradient_float16": "a float32 weight's gradient returned in float16",
    "indexed_slices_returned": "IndexedSlices returned where a dense tensor is asked for",
    "numpy_on_indexed_slices": ".numpy() called on IndexedSlices (AttributeError)",
    "slices_values_only": "the values of the IndexedSlices, shaped like the lookups",
    "trained_frozen_layer": "model.variables or model.weights differentiated: frozen layers train",
    "loss_not_scaled": "the gradients of the unscaled loss (float16 zeros and coarse values)",
    "scaled_gradients_not_loss": "the scale applied to the gradients after the tape, not the loss",
    "hard_coded_scale": "a loss scale of its own instead of the one given",
    "scaled_twice": "the loss scaled twice (times loss_scale and output_gradients=loss_scale)",
    "not_applied": "the gradients returned but not applied",
    "applied_twice": "the gradients applied more than once",
    "applied_other_than_returned": "the optimizer applied other gradients than those returned",
}

_registry: dict[str, str] = dict(SHARED)


def register(codes: dict[str, str]) -> None:
    """Add a lesson's own mistake codes; a code may not change its meaning.

    Registering a shared code again is allowed (the shared description stands);
    two lessons registering one code with different descriptions is an error.
    """
    for code, description in codes.items():
        if code in SHARED:
            continue
        known = _registry.get(code)
        if known is not None and known != description:
            raise ValueError(f"mistake code {code!r} is already registered as {known!r}")
        _registry[code] = description


def is_known(code: str) -> bool:
    return code in _registry


def describe(code: str) -> str:
    return _registry[code]
