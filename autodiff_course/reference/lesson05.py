"""Reference answers that lesson 05's later sections reuse.

Section 6 compares reverse and forward mode with plain loops; its reverse-mode
loop is the answer to exercise 5.2, so the lesson imports it from here instead of
showing it before the learner has tried.
"""

from __future__ import annotations


def jacobian_by_rows(f, x):
    """Exercise 5.2: the (m, n) Jacobian of f at x, one vector-Jacobian product per row.

    ``y = f(x)`` is recorded once on a persistent tape; row ``i`` is
    ``tape.gradient(y, x, output_gradients=e_i)``, a backward pass with the
    one-hot upstream ``e_i``.
    """
    import tensorflow as tf

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    m = y.shape[0]
    rows = [tape.gradient(y, x, output_gradients=tf.one_hot(i, m, dtype=y.dtype)) for i in range(m)]
    del tape
    return tf.stack(rows)


__all__ = ["jacobian_by_rows"]
