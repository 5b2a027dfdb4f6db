"""Checks for lesson 02, *Recording with tf.GradientTape*.

References are closed forms evaluated in float64 NumPy, independent of the
TensorFlow code the exercises ask for. Every call of a check draws fresh probes
(:func:`~autodiff_course.checking.fresh_rng`), so numbers copied from an earlier
run, or typed in, fail.

**Explaining a None from what happened.** Exercises 2.2 to 2.4 fix the lesson's
catalogue of ``None`` gradients, and their checks name the cause still present,
using :mod:`autodiff_course.checking.provenance`. The answer runs on a persistent
tape of the check's own that watches every input from the start, while the
framework notes the learner's tapes (under any alias, ``tf.autodiff.GradientTape``
included) and, in the same run, on TensorFlow's single id counter:

* every eager operation that ran (name, input and output tensors), so it knows
  when the source was first used, which ``assign`` wrote which value into which
  variable and which variable reads followed, and which operation without a
  gradient (``tf.round``, ``tf.argmax``, a cast to an integer...) saw it;
* every conversion of a tensor to NumPy or to a Python number;
* when each learner tape was entered, left and told to watch what, and the
  target of each ``tape.gradient`` call.

The check's own tape then settles the question *is there a path at all?* If it
can differentiate the learner's target with respect to the source, the path
exists and the learner's tape did not record it (the source was never watched,
watched after its first use, or the target was computed outside the ``with``
block). If it cannot, the path is cut, and the cut is the assign, the operation
without a gradient or the NumPy conversion that actually took a value connected
to the source. :func:`~autodiff_course.checking.why_none` settles the causes it
sees itself (a NumPy target, an integer source, an unwatched constant or
variable). The verdict *correct* never depends on this diagnosis: it compares
values and the variables' final state.

The checks live one module per exercise: :mod:`.dict_of_variables` (2.1),
:mod:`.any_kind_of_x` (2.2), :mod:`.training_loop` (2.3) and
:mod:`.moving_average` (2.4); :mod:`.shared` holds the lesson's names for the
causes of a None and the verdicts the four share.
"""

from __future__ import annotations

from ...checking import mistakes
from .any_kind_of_x import derivative
from .dict_of_variables import parameter_gradients
from .moving_average import update_and_differentiate
from .shared import CATALOGUE
from .training_loop import train

mistakes.register(
    {
        "no_tape": "no tf.GradientTape where the exercise asks for one",
        "ignored_function": "the lesson's example formula instead of the function passed in",
        "wrong_keys": "a dict whose keys are not those of params",
        "differentiated_predictions": "the gradient of the predictions instead of the loss",
        "returned_parameters": "the parameters' values instead of their gradients",
        "absolute_error": "the gradient of the mean absolute error instead of the squared one",
        "ascent_not_descent": "the parameters moved up the gradient instead of down",
        "no_update": "the parameters were never updated",
        "missed_parameter": "only some of the parameters were updated",
        "loss_after_update": "each step's loss was computed after that step's update",
        "returned_gradients": "gradients returned where losses were asked for",
        "state_not_updated": "the variable still holds its old value",
        "wrong_update": "the variable was updated to a wrong value",
        "differentiated_average": "the gradient with respect to the average, not x",
        "gradient_of_intermediate": "the gradient with respect to the new average, not x",
        "swapped_decay": "decay and 1 - decay swapped in the moving average",
        "lost_fraction": "a float input cast to an integer or rounded before differentiating",
        "wrong_power": "the errors raised to another power than 2",
        "other_loss": "a different loss than the one the exercise names",
        "other_source": "the gradient taken with respect to something other than the "
        "exercise's source",
        "moving_average_formula": "the moving average inside the loss computed with a "
        "wrong formula",
    }
)

__all__ = ["CATALOGUE", "derivative", "parameter_gradients", "train", "update_and_differentiate"]
