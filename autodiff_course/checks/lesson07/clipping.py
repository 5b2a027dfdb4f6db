"""Exercise 7.4: clip by global norm, after unscaling.

The answer is ``clipped_train_step(model, optimizer, x, y, loss_scale, clip_norm)``:
exercise 7.2's step, with the unscaled gradients clipped together by
``tf.clip_by_global_norm(gradients, clip_norm)`` before ``optimizer.apply``. It
returns ``(clipped, global_norm)``: the clipped gradients it applied, and the
global norm of the unscaled gradients before clipping.

Probes the check must draw (fresh on every call), besides those of exercise 7.2
(:mod:`.loss_scaling`: ``mixed_float16`` Dense stacks, a frozen layer, outputs of
size 1, batches of one, fresh power-of-two ``loss_scale`` and learning rate):

* models with at least two trainable variables of different sizes, so that a
  clip of each tensor on its own (``tf.clip_by_norm``) differs from the global one,
  and gradients with entries of very different magnitudes, so that a clip of each
  entry (``tf.clip_by_value``) differs too;
* in every call, one batch whose unscaled global norm is below ``clip_norm``
  (nothing is clipped: an answer that always rescales to the limit is caught) and
  one whose norm is 2 to 50 times above it; residuals of order 2**-8 to 1, so that
  the scaled norm is ``loss_scale`` times larger than the limit (clipping before
  unscaling then gives gradients of norm ``clip_norm / loss_scale``);
* a fresh ``clip_norm`` (0.01 to 5, never 1.0, 5.0 or 10.0 exactly), so a
  hard-coded limit is caught.

What it must verify:

* the structure: a pair, a list of one float32 tensor per trainable variable, and
  a float32 scalar;
* ``global_norm`` against the float64 norm of :func:`.loss_scaling.reference_gradients`
  (not the scaled norm, not the clipped one);
* ``clipped`` against :func:`reference_clip` of those gradients;
* the weights after the step equal ``weights - learning_rate * clipped``: what was
  returned was applied (applying the unclipped or the scaled gradients is caught);
* the method, from the numbers: clipping before unscaling (norm ``clip_norm /
  loss_scale``), not unscaling (the limit's norm whatever the batch, or S times the
  true norm), unscaling twice, per-tensor and per-entry clipping, and the norm after
  clipping are each told apart by the probes above.

The reference is float64 NumPy: the gradients of :mod:`.loss_scaling`'s reference
and the clip ``g * clip_norm / max(norm, clip_norm)``, the definition of
``tf.clip_by_global_norm``, written out.
"""

from __future__ import annotations

import numpy as np

from .loss_scaling import reference_gradients
from .temporary import announce

NUMBER, TITLE = "7.4", "clip by global norm, after unscaling"


def reference_clip(gradients, clip_norm):
    """float64 ``(clipped, global_norm)``: every gradient times clip_norm / max(norm, clip_norm)."""
    gradients = [np.asarray(g, dtype=np.float64) for g in gradients]
    global_norm = float(np.sqrt(sum(np.sum(g**2) for g in gradients)))
    factor = clip_norm / max(global_norm, clip_norm)
    return [g * factor for g in gradients], global_norm


def clipped_train_step(answer):
    """TEMPORARY (see :mod:`.temporary`): runs the reference and the answer once; no verdict."""
    layers = [(np.array([[0.5], [0.25]]), np.array([0.0]), "linear")]
    x = np.array([[1.0, 0.0], [0.0, 2.0], [0.5, 1.0]])
    residual = np.full((3, 1), -0.25)
    reference_clip(reference_gradients(layers, x, residual), 0.1)

    def run_answer():
        import keras
        import tensorflow as tf

        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, dtype="mixed_float16")])
        model.set_weights([layers[0][0].astype(np.float32), layers[0][1].astype(np.float32)])
        y = tf.constant(0.5 - residual, tf.float32)
        optimizer = keras.optimizers.SGD(learning_rate=0.5)
        answer(model, optimizer, tf.constant(x, tf.float32), y, 2.0**15, 0.1)

    announce(NUMBER, TITLE, run_answer)
