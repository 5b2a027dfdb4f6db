"""Reference answers that lesson 06's tape runs on after each exercise.

The tape the lesson builds needs three of its exercises to work at all: the reverse
pass adds up the contributions to a value used twice (exercise 6.1), and ``multiply``
and ``matmul`` need their vector-Jacobian rules (exercises 6.2 and 6.3). Right after
each exercise's check the lesson imports the missing piece from here, so that the rest
of the lesson runs whatever state the learner's answer is in, and so that no cell of
the learner's copy, folded or not, holds the answer. The checks never use these: they
compare with explicit sums over the entries each input touched.
"""

from __future__ import annotations

import numpy as np


def accumulate_gradient(grads, key, contribution):
    """The answer to exercise 6.1: add ``contribution`` to ``grads[key]``, never in place.

    The first contribution is stored as it is; a later one replaces the entry by a new
    array, the sum, so that no array the tape handed out elsewhere changes.
    """
    if key in grads:
        grads[key] = grads[key] + contribution
    else:
        grads[key] = contribution


def _sum_back(gradient, shape):
    """``gradient`` summed over the axes that broadcasting added or stretched to ``shape``.

    The same recipe as lesson 06's ``unbroadcast`` (section 3).
    """
    while gradient.ndim > len(shape):
        gradient = gradient.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and gradient.shape[axis] != 1:
            gradient = gradient.sum(axis=axis, keepdims=True)
    return gradient


def multiply_vjp(upstream, a, b):
    """The answer to exercise 6.2: the gradients of ``y = a * b``, broadcasting allowed.

    Each input's gradient is the upstream times the other factor, summed back to the
    input's shape.
    """
    upstream, a, b = np.asarray(upstream), np.asarray(a), np.asarray(b)
    return _sum_back(upstream * b, a.shape), _sum_back(upstream * a, b.shape)


def matmul_vjp(upstream, a, b):
    """The answer to exercise 6.3: the gradients of ``y = a @ b`` for 2-D ``a`` and ``b``.

    ``upstream @ b.T`` has the shape of ``a``, ``a.T @ upstream`` the shape of ``b``.
    """
    return upstream @ b.T, a.T @ upstream


__all__ = ["accumulate_gradient", "matmul_vjp", "multiply_vjp"]
