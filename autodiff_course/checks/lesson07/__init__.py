"""Checks for lesson 07, *Gradients in real training*.

TEMPORARY STATE: these checks do not judge yet. Each exercise module holds the
float64 reference its check compares with and, in its docstring, the probes the
check must draw and the method it must verify; the judging comes with the course's
declarative exercise specs. Until then every check call runs the reference, tells a
stub from an attempt and prints that it gave no verdict (:mod:`.temporary`, which
goes away with this paragraph).

The references are independent of the code paths the exercises ask for: float64
NumPy forward and backward passes of the probe models (softplus and sigmoid written
with ``np.logaddexp``, Dense stacks by matrix products), ``np.add.at`` for the
embedding's sums, and the global-norm clip written out. None of them calls Keras,
a tape or an optimizer.

One module per exercise: :mod:`.custom_layer` (7.1), :mod:`.loss_scaling` (7.2),
:mod:`.embedding` (7.3) and :mod:`.clipping` (7.4, which reuses 7.2's reference
gradients).

:data:`MISTAKES` is the lesson's catalogue of its own mistake codes, each with its
one-line description: with the shared codes of
:mod:`autodiff_course.checking.mistakes` (``no_variables_keyword``,
``variable_outside_rule``, ``forgot_upstream``, ``keeps_state``, ``hard_coded``, ...),
the codes that ``tests/test_checks_lesson07.py`` expects the checks to name.
"""

from __future__ import annotations

from .clipping import clipped_train_step
from .custom_layer import sloped_softplus
from .embedding import embedding_gradient
from .loss_scaling import train_step

MISTAKES = {
    # 7.1 (with the shared codes of custom gradients that read variables)
    "weight_gradient_float16": "a float32 weight's gradient returned in float16",
    "summed_in_float16": "a weight's gradient summed in float16 and cast afterwards (overflows)",
    "forgot_slope": "d/dx of softplus(a x) without the factor a",
    "forgot_x": "d/da of softplus(a x) without the factor x",
    "naive_softplus": "log(1 + exp(z)) for the value, which overflows (float16 from 11.09)",
    # 7.2 and 7.4
    "loss_not_scaled": "the gradients of the unscaled loss (float16 zeros and coarse values)",
    "scaled_gradients_not_loss": "the scale applied to the gradients after the tape, not the loss",
    "forgot_unscale": "gradients returned or applied without dividing by the loss scale",
    "unscaled_twice": "gradients divided by the loss scale twice",
    "hard_coded_scale": "a loss scale of its own instead of the one given",
    "loss_in_float16": "the loss computed in float16, where the residuals round away",
    "trained_frozen_layer": "gradients of model.variables applied: a frozen layer moved",
    "none_in_gradients": "a None among the returned gradients (model.variables differentiated)",
    "not_applied": "the gradients returned but not applied",
    "applied_other_than_returned": "the optimizer applied other gradients than those returned",
    "applied_twice": "the gradients applied more than once",
    "float32_copy": "the gradients of a float32 copy of the model, not of the model given",
    "squeezed_size_one_axis": "a size-1 axis (batch or output) squeezed or broadcast away",
    # 7.3
    "indexed_slices_returned": "IndexedSlices returned where a dense tensor is asked for",
    "numpy_on_indexed_slices": ".numpy() called on IndexedSlices (AttributeError)",
    "slices_values_only": "the values of the IndexedSlices, shaped like the lookups",
    "duplicates_not_summed": "repeated ids overwrite each other instead of adding up",
    "summed_by_hand": "the sums built by hand (segment sums, np.add.at) instead of by the tape",
    # 7.4
    "clipped_before_unscaling": "the scaled gradients clipped, then unscaled: norm clip / S",
    "clipped_per_tensor": "each gradient clipped by its own norm (tf.clip_by_norm)",
    "clipped_by_value": "each entry clipped (tf.clip_by_value) instead of the global norm",
    "wrong_clip_norm": "a clip norm of its own instead of the one given",
    "always_rescaled": "gradients rescaled to the limit even when their norm is below it",
    "norm_after_clipping": "the global norm of the clipped gradients returned",
    "norm_of_scaled_gradients": "the global norm of the scaled gradients returned",
    "not_clipped": "the unscaled gradients applied without clipping",
}

__all__ = ["MISTAKES", "clipped_train_step", "embedding_gradient", "sloped_softplus", "train_step"]
