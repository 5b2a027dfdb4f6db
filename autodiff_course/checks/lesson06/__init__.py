"""Checks for lesson 06, *Build your own tape*.

The answers of this lesson are plain NumPy functions, called exactly as the
notebook's tape calls them, so no check needs the notebook's code. The references
never run the code path under test:

* 6.1 compares with closed-form gradients of each graph (2x + 1, 3x^2, ...);
* 6.2 and 6.3 with explicit sums over the entries that each input entry touched
  (d/da_i of sum(dy * f) collects dy times the local derivative over every
  output entry that a_i took part in), a loop, not ``unbroadcast`` or ``@``;
* 6.4 with softplus and the sigmoid in extended precision, each written piecewise
  (never ``np.logaddexp``, the reference answer's own function).

Every check draws fresh values, shapes and upstream gradients on each call
(:func:`autodiff_course.checking.fresh_rng`), so numbers typed in from the lesson
fail. The probe design of each check is written in its docstring.

One module per exercise: :mod:`.accumulate` (6.1), :mod:`.multiply` (6.2),
:mod:`.matmul` (6.3) and :mod:`.stable_rule` (6.4); :mod:`.shared` reads the
NumPy results, notices arguments changed in place and names the last hint.
"""

from __future__ import annotations

from ...checking import mistakes
from .accumulate import accumulate_gradient
from .matmul import matmul_vjp
from .multiply import multiply_vjp
from .stable_rule import log1pexp_rule

mistakes.register(
    {
        # 6.1
        "changed_in_place": "an array the tape still holds was changed in place (+=, out=)",
        "overwrote_gradient": "a later contribution replaced the stored gradient",
        "kept_first_gradient": "only the first contribution was kept",
        "multiplied_gradients": "contributions multiplied instead of added",
        "added_twice": "a contribution added twice",
        "subtracted_gradient": "later contributions subtracted instead of added",
        "averaged_gradients": "contributions averaged instead of added",
        "not_stored": "the first contribution was not stored in grads",
        "returned_new_dict": "a new dictionary returned instead of updating grads",
        "stored_none": "None stored as a gradient",
        "contribution_ignored": "the new contribution does not change the stored gradient",
        # 6.2 and 6.3
        "not_a_pair": "a rule for a two-input operation that does not return two gradients",
        "not_summed_back": "a broadcast input's gradient not summed back to the input's shape",
        "summed_everything": "a broadcast input's gradient summed to a single number",
        "swapped_operands": "each input's gradient computed with its own value, not the other's",
        "transposes_wrong": "a matmul gradient with a transpose missing or misplaced",
        "elementwise_rule": "the element-wise multiply rule used for matmul",
        # 6.4
        "rule_decorated": "the decorated function passed where the rule itself is asked for",
        "grad_fn_not_callable": "the second thing returned is not a gradient function",
        "inf_value": "the forward value overflows to inf",
        "value_cancels": "the forward value loses its digits for negative x",
        "output_is_derivative": "the derivative returned as the function's value",
        "nan_gradient": "the backward rule overflows to nan or inf for large x",
        "cancels_for_negative_x": "the backward rule loses its digits for negative x",
        "negated_input": "the function of -x where the function of x belongs",
        "upstream_used_wrongly": "the local derivative is right, the upstream factor is not",
        "wrong_for_negative_x": "right for x >= 0, wrong in the negative tail",
        "wrong_for_positive_x": "right for x <= 0, wrong for positive x",
        "relu_not_softplus": "max(x, 0) or its step derivative where softplus belongs",
    }
)

__all__ = ["accumulate_gradient", "log1pexp_rule", "matmul_vjp", "multiply_vjp"]
