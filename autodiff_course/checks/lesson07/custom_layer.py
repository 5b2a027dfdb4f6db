"""Exercise 7.1: a softplus layer with a learnable slope, under mixed precision.

The answer is a Keras layer *class*, ``SlopedSoftplus``, whose ``build`` (given in
the notebook) creates ``self.slope`` of shape ``(features,)`` and whose ``call``
computes ``softplus(slope * x)`` through the learner's own ``@tf.custom_gradient``
rule, with ``grad_fn(upstream, variables=None)``.

Probes the check must draw (fresh values on every call, from the check's seeded
generator; never the lesson's numbers):

* the class instantiated by the check, as ``SlopedSoftplus()`` (float32) and as
  ``SlopedSoftplus(dtype="mixed_float16")`` (float16 compute, float32 slope); a
  fresh instance for every probe, and, to catch state kept between calls, one
  instance called twice with different inputs and slopes (the second call judged);
* inputs of shape ``(batch, features)`` and ``(batch, time, features)``, with
  ``batch``, ``time`` and ``features`` each 1 in some probe and 2 to 5 in another,
  so that summing over the wrong axes, over every axis, or squeezing a size-1 axis
  gives the wrong shape or the wrong numbers;
* slopes of both signs set with ``layer.slope.assign``, magnitudes 0.25 to 2, and x
  such that ``slope * x`` covers -30 ... 30 in float32 and -15 ... 15 in float16,
  always including the boundaries the lesson names: float16's ``exp`` overflow at
  ln(65504) = 11.09 (a probe at 11.5 and at 14.5), float32's at 88.72 is outside the
  range asked for, and 0;
* upstreams of both signs and never 1 (a forgotten ``upstream *`` shows), drawn per
  element; under ``mixed_float16`` one probe with the upstream multiplied by a loss
  scale of 2**15, small enough that ``upstream * slope * sigmoid`` stays below 65504
  for the input's gradient but large enough that the slope's terms summed in float16
  overflow (at least 4 terms per feature whose float16 sum exceeds 65504), which is
  what tells a float32 sum from a float16 one that was cast afterwards.

What it must verify:

* the value against :func:`reference` (float32 tolerance in float32, float16's in
  float16, relative per element with an absolute floor near 0); the output dtype is
  the layer's compute dtype (float32, or float16 under ``mixed_float16``);
* the gradient for ``x`` (dtype of ``x``) and the gradient for ``self.slope``
  (shape ``(features,)``, dtype **float32 in both policies**) against
  :func:`reference`, the slope's with a tolerance scaled by the sum of the
  magnitudes of its terms;
* the method: the learner's ``grad_fn`` ran and produced both gradients (a layer
  with no custom gradient, such as ``tf.nn.softplus(self.slope * x)``, gives the right
  numbers by the wrong method and must be named), it was called with ``variables``
  holding the slope's variable, and the slope's gradient came from it (not from the
  recorded forward operations, which is what happens when ``self.slope`` is read
  outside the decorated function);
* training: a ``keras.Sequential([keras.Input(...), layer])`` under
  ``mixed_float16``, trained for 3 steps with
  ``keras.optimizers.LossScaleOptimizer(SGD(lr), initial_scale=2**15)`` through
  ``scale_loss`` and ``apply`` on mean squared error against fresh targets: no step
  is skipped (the loss scale is still 2**15 afterwards) and the slope follows
  :func:`reference_sgd` within float16 tolerances. A failure here is named by the
  probes above (a float16 sum overflows and the step is skipped:
  ``summed_in_float16`` or ``weight_gradient_float16``); training adds no code of its
  own, it confirms that what the single calls showed holds over several steps.

The reference below never uses TensorFlow or the layer: it is float64 NumPy at the
numbers the layer saw (inputs and slopes rounded to the layer's compute dtype first,
as Keras reads them).
"""

from __future__ import annotations

import numpy as np

from .temporary import announce

NUMBER, TITLE = "7.1", "a softplus layer with a learnable slope, under mixed precision"


def _softplus(z):
    return np.logaddexp(0.0, z)


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


def reference(x, slope, upstream):
    """float64 value and gradients of ``softplus(slope * x)`` for an upstream ``upstream``.

    ``x`` has shape ``(..., features)``, ``slope`` shape ``(features,)`` and ``upstream``
    the shape of ``x``. Returns ``(value, grad_x, grad_slope)``: ``grad_x`` shaped like
    ``x``, ``grad_slope`` like ``slope`` (summed over every axis but the last).
    """
    x = np.asarray(x, dtype=np.float64)
    slope = np.asarray(slope, dtype=np.float64)
    upstream = np.asarray(upstream, dtype=np.float64)
    z = slope * x
    s = _sigmoid(z)
    grad_x = upstream * slope * s
    grad_slope = (upstream * x * s).reshape(-1, x.shape[-1]).sum(axis=0)
    return _softplus(z), grad_x, grad_slope


def reference_sgd(x, y, slope, learning_rate, steps):
    """The slope after ``steps`` steps of plain SGD on mean((softplus(slope x) - y)**2).

    A ``LossScaleOptimizer`` around SGD must reproduce this whenever no step
    overflows: the scale multiplies the loss and divides the gradients, exactly for
    a power of two. Returns the slopes after each step, shape ``(steps, features)``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    slope = np.array(slope, dtype=np.float64)
    history = []
    for _ in range(steps):
        value, _, _ = reference(x, slope, np.zeros_like(x))
        upstream = 2.0 * (value - y) / value.size
        _, _, grad_slope = reference(x, slope, upstream)
        slope = slope - learning_rate * grad_slope
        history.append(slope.copy())
    return np.array(history)


def _fixed_probe():
    x = np.array([[-3.0, 0.5], [2.0, -1.5], [12.0, 0.0]])
    slope = np.array([1.5, -0.75])
    upstream = np.array([[0.5, -2.0], [1.25, 3.0], [-0.75, 1.5]])
    return x, slope, upstream


def sloped_softplus(answer):
    """TEMPORARY (see :mod:`.temporary`): runs the reference and the answer once; no verdict."""
    x, slope, upstream = _fixed_probe()
    reference(x, slope, upstream)

    def run_answer():
        import tensorflow as tf

        layer = answer(dtype="mixed_float16")
        layer.build(x.shape)
        layer.slope.assign(slope)
        with tf.GradientTape() as tape:
            value = layer(tf.constant(x, tf.float32))
        tape.gradient(
            value, layer.trainable_variables, output_gradients=tf.constant(upstream, value.dtype)
        )

    announce(NUMBER, TITLE, run_answer)
