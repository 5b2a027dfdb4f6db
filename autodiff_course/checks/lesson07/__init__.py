"""Checks for lesson 07, *Gradients in real training*: one spec per exercise,
:mod:`.custom_layer` (7.1, a layer class on the check's tape), :mod:`.loss_scaling`
(7.2), :mod:`.embedding` (7.3) and :mod:`.clipping` (7.4), called with Keras objects the
check builds afresh. 7.2 and 7.4 share :mod:`.scaled_step`. Every reference is float64
NumPy. :data:`MISTAKES` holds the lesson's codes that are not declared by a spec."""

from __future__ import annotations

from ...checking import mistakes

MISTAKES = {
    "forgot_unscale": "gradients returned or applied without dividing by the loss scale",
    "unscaled_twice": "gradients divided by the loss scale twice",
    "float32_copy": "the right gradients, but not from a tape on the model's own variables",
    "summed_by_hand": "the sums built by hand (segment sums, np.add.at) instead of by the tape",
    "rows_from_ids": "a dense gradient max(ids) + 1 rows tall instead of the table's size",
    "watched_keras_variable": "tape.watch() called on a Keras Variable, which TensorFlow refuses",
    "no_recorded_path": "tape.gradient's None used: no recorded path from a variable to the target",
    "float16_meets_float32": "a float16 tensor and a float32 one in one operation (a cast missing)",
}
mistakes.register(MISTAKES)
# The ValueError of tape.watch(layer.weight): in the `errors` of every check that hands over
# Keras objects (a tf.Variable's repr is <tf.Variable ...>, a Keras Variable's <Variable path=).
WATCHED = (
    "Passed in object <Variable path=",
    "watched_keras_variable",
    "tape.watch() takes TensorFlow tensors and tf.Variables, and a Keras layer's weight (such "
    "as embedding.embeddings or a model's trainable_variables) is a Keras Variable, which it "
    "refuses with this ValueError. No watch is needed: a tape watches every trainable "
    "variable read inside its block by itself. Delete the tape.watch line",
)
# The InvalidArgumentError of float16 meeting float32 (half and float in TensorFlow's words).
MIXED = (
    "half tensor",
    "float16_meets_float32",
    "A float16 tensor met a float32 one in one operation, which TensorFlow refuses: under "
    "mixed_float16 the model's output is float16, while y, loss_scale and the gradients are "
    "float32. A cast is missing: compute the loss in float32, tf.cast(model(x), tf.float32) "
    "- y, and keep the loss scale arithmetic in float32",
)

from .clipping import clipped_train_step  # noqa: E402 - the codes first
from .custom_layer import sloped_softplus  # noqa: E402
from .embedding import embedding_gradient  # noqa: E402
from .loss_scaling import train_step  # noqa: E402

__all__ = ["MISTAKES", "clipped_train_step", "embedding_gradient", "sloped_softplus", "train_step"]
