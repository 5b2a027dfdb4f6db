"""Reference code that lesson 07 reuses after its spoiler points.

Section 5 of lesson 07 needs the scaled gradients of a loss-scaled step, the first
half of exercise 7.2's answer; the lesson imports them from here so that a learner
scrolling down does not read that answer before trying. The checks never use this:
they compare with float64 NumPy references.
"""

from __future__ import annotations

import tensorflow as tf


def scaled_gradients(model, x, y, loss_scale):
    """Gradients of loss_scale * mean squared error, not unscaled: half of 7.2's answer.

    The loss ``mean((model(x) - y)**2)`` is computed in float32 whatever dtype the
    model computes in; the gradients are taken with respect to
    ``model.trainable_variables``.
    """
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.cast(model(x), tf.float32) - y) ** 2)
        scaled_loss = loss * loss_scale
    return tape.gradient(scaled_loss, model.trainable_variables)


__all__ = ["scaled_gradients"]
