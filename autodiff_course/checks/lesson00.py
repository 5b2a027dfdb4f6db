"""The demonstration check of lesson 00: how a self-check answers."""

from __future__ import annotations

import numpy as np

from ..checking import Wrong, as_values, call_answer, diagnose_mistake, exercise, matches

PROBE = np.array([-1.5, 0.0, 2.0, 3.0])


@exercise("0.1", "double every element")
def double(answer):
    import tensorflow as tf

    x = tf.constant(PROBE, dtype=tf.float32)
    got = as_values(call_answer(answer, x), shape=x.shape, dtype=x.dtype)
    if matches(got, 2.0 * PROBE):
        return "Each element was multiplied by 2."
    diagnose_mistake(got, [
        ("squared", "You squared the input (x**2 or x * x); doubling is 2 * x.", PROBE**2),
        ("unchanged", "You returned the input unchanged; multiply it by 2.", PROBE),
    ])
    raise Wrong("Expected 2 * x for every element.", "other")
