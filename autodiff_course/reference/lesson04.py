"""Reference answers that lesson 04 reuses after its spoiler points.

Lesson 04's later cells compare the stable softplus rule with one whose backward
pass uses an accurate sigmoid (exercise 4.3): they import it instead of defining it
in a visible cell, so that the answer stays hidden until the learner has tried.
``safe_norm`` (exercise 4.5) is the reference the check tests hold the check to.
The checks never use these: they compare with float64 closed forms.
"""

from __future__ import annotations

import tensorflow as tf


@tf.custom_gradient
def smooth_sigmoid(x):
    """The answer to exercise 4.3: sigmoid(x), with gradient upstream * s(x) * s(-x)."""
    s = tf.sigmoid(x)

    def grad_fn(upstream):
        return upstream * s * tf.sigmoid(-x)

    return s, grad_fn


@tf.custom_gradient
def softplus_smooth(x):
    """log(1 + e^x): softplus forward, ``upstream * smooth_sigmoid(x)`` backward.

    Its second derivative goes through :func:`smooth_sigmoid`'s rule, so it keeps
    float32's relative accuracy where the stable rule's ``s * (1 - s)`` cancels.
    """

    def grad_fn(upstream):
        return upstream * smooth_sigmoid(x)

    return tf.nn.softplus(x), grad_fn


def safe_norm(g):
    """An answer to exercise 4.5: row norms of ``g`` with a finite gradient at zero rows."""
    return tf.sqrt(tf.reduce_sum(g**2, axis=-1) + 1e-12)


__all__ = ["safe_norm", "smooth_sigmoid", "softplus_smooth"]
