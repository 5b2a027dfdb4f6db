"""Exercise 7.2: a loss-scaled training step by hand.

The answer is ``train_step(model, optimizer, x, y, loss_scale)``: one step of
mean-squared-error training of a ``mixed_float16`` Keras model, with the loss
computed in float32, multiplied by ``loss_scale`` (or, equivalently, the walk
started with ``output_gradients=loss_scale``), the gradients taken with respect to
``model.trainable_variables``, divided by ``loss_scale``, applied with
``optimizer.apply`` and returned as a list.

Probes the check must draw (fresh on every call; a new model and a new optimizer
for every probe, since a Keras optimizer is bound to the variables it first saw):

* models: ``keras.Sequential`` stacks of ``Dense`` layers built with
  ``dtype="mixed_float16"`` (linear or ``tanh``), 1 to 3 inputs, a hidden width of
  1 to 4 in some probes, and an **output of size 1** in every probe but one (which
  has 2 outputs); fresh weights that are short binary fractions, so that the
  float16 forward pass is close to exact;
* one probe whose first ``Dense`` layer is frozen (``trainable = False``): its
  weights must not move and must not appear in the returned list (the tape still
  watches them in Keras 3, so ``model.variables`` trains them);
* one probe with a layer that holds a non-trainable weight used in the forward pass
  (``add_weight(trainable=False)``, for example a fixed offset): differentiating
  ``model.variables`` gives ``None`` for it;
* batches of 1 and of 3 to 8 examples, ``x`` float32;
* targets ``y`` (float32) set from the model's own float16 prediction minus tiny
  residuals of both signs, 2**-25 to 2**-22 in magnitude (the last bias shifted so
  that every prediction is below 1/8 in magnitude, where float32 can hold such a
  residual): the upstream at the output, ``2 * residual / y.size``, is then mostly
  below half float16's smallest subnormal number, so without a scale the gradients
  are exactly 0.0 or coarse;
* ``loss_scale`` a fresh power of two from 2**16 to 2**20 for those probes (large
  enough that every scaled upstream, also after the hidden layers' kernels, is a
  normal float16 number) and, in one probe with residuals near 1, batches of 8 and
  inputs near 2, a small one (2**2 to 2**4) for which 2**15 would overflow float16:
  a hard-coded scale is caught;
* a fresh SGD learning rate (0.05 to 0.5), and one probe with
  ``SGD(momentum=0.5)`` called twice, so that applying twice or not at all shows;
* two calls in a row with different ``loss_scale``, data and models, the second
  judged: an answer that keeps the first call's scale, model or gradients is caught.

Measured with the reference answer over 60 such draws (TensorFlow 2.21, Keras
3.15, x86 CPU): its error, relative to :func:`reference_magnitudes`, is at most
1.1e-2, while an unscaled step's is at least 8.3e-2; a tolerance of 3e-2 of the
magnitude separates them.

What it must verify:

* the returned value is a list (or tuple) with one float32 tensor per trainable
  variable, in the order of ``model.trainable_variables``; no ``None``;
* each gradient against :func:`reference_gradients`, computed from the residual
  the model really had (the model's float16 prediction, cast to float64, minus
  ``y``), element by element to 3e-2 of :func:`reference_magnitudes`;
* the weights after the step equal ``weights - learning_rate * returned``
  (:func:`reference_update`) for trainable variables, and are unchanged for frozen
  and non-trainable ones: the answer applied what it returned, once. This is judged
  on the probes with residuals near 1 (and on a probe with residuals of 2**-8 and
  a scale of 2**10), where ``learning_rate * gradient`` is far above float32's
  spacing at the weights: on the tiny-residual probes an update of 1e-7 to a weight
  of 0.5 is partly lost to rounding and tells nothing;
* the method: the tape target (or its ``output_gradients``) was scaled: the
  returned gradients are not those of an unscaled float16 walk, times 1 or times
  the scale, which the check computes on its own copy of the model; and they are not
  exactly ``loss_scale`` times, or ``1 / loss_scale`` times, the reference (not
  unscaled, unscaled twice). The model given was called (a float32 copy of it gives
  the right numbers by the wrong method).

The reference is float64 NumPy and never calls Keras, a tape or the optimizer.
"""

from __future__ import annotations

import numpy as np

from .temporary import announce

NUMBER, TITLE = "7.2", "a loss-scaled training step by hand"


def _forward(layers, x, compute_dtype):
    """Pre-activations and activations of a Dense stack, in float64.

    Each layer's output is rounded to ``compute_dtype`` (float16 for a
    ``mixed_float16`` model), as the model stores it, and the arithmetic between
    roundings is float64.
    """

    def stored(values):
        return np.asarray(values).astype(compute_dtype).astype(np.float64)

    activations, pre_activations = [stored(x)], []
    for kernel, bias, activation in layers:
        z = stored(activations[-1] @ stored(kernel) + stored(bias))
        pre_activations.append(z)
        activations.append(stored(np.tanh(z)) if activation == "tanh" else z)
    return pre_activations, activations


def _backward(layers, x, residual, compute_dtype, absolute):
    pre_activations, activations = _forward(layers, x, compute_dtype)
    size = np.asarray(residual).size
    upstream = 2.0 * np.asarray(residual, dtype=np.float64) / size  # d mean(r**2) / d prediction
    if absolute:
        upstream, activations = np.abs(upstream), [np.abs(a) for a in activations]
    gradients = []
    for index in reversed(range(len(layers))):
        kernel, _, activation = layers[index]
        if activation == "tanh":
            upstream = upstream * (1.0 - np.tanh(pre_activations[index]) ** 2)
        gradients[:0] = [activations[index].T @ upstream, upstream.sum(axis=0)]
        kernel = np.asarray(kernel).astype(compute_dtype).astype(np.float64)
        upstream = upstream @ (np.abs(kernel) if absolute else kernel).T
    return gradients


def reference_gradients(layers, x, residual, compute_dtype=np.float16):
    """float64 gradients of mean(residual**2) for a stack of Dense layers.

    ``layers`` is a list of ``(kernel, bias, activation)`` with ``activation`` in
    ``{"linear", "tanh"}``; ``x`` the inputs; ``residual`` the model's own
    prediction minus ``y``, shape ``(batch, outputs)``. Weights, inputs and each
    layer's output are rounded to ``compute_dtype`` as the model computes with them
    (float16 under ``mixed_float16``; pass ``np.float64`` for none), the backward
    pass is float64 throughout. Returns ``[d kernel, d bias]`` per layer, in the
    order of the model's variables.
    """
    return _backward(layers, x, residual, compute_dtype, absolute=False)


def reference_magnitudes(layers, x, residual, compute_dtype=np.float16):
    """The sums of the magnitudes of the terms of each reference gradient.

    The backward pass of :func:`reference_gradients` with every factor replaced by
    its absolute value: the scale against which a gradient's rounding error is
    measured, since a gradient that sums terms of both signs can be much smaller
    than its terms.
    """
    return _backward(layers, x, residual, compute_dtype, absolute=True)


def reference_update(weights, gradients, learning_rate):
    """Plain SGD, in float64: ``weight - learning_rate * gradient`` for each pair."""
    return [
        np.asarray(w, np.float64) - learning_rate * np.asarray(g, np.float64)
        for w, g in zip(weights, gradients)
    ]


def _fixed_probe():
    layers = [(np.array([[0.5], [0.25]]), np.array([0.0]), "linear")]
    x = np.array([[1.0, 0.0], [0.0, 2.0], [0.5, 1.0]])
    residual = np.full((3, 1), -(2.0**-24))
    return layers, x, residual


def train_step(answer):
    """TEMPORARY (see :mod:`.temporary`): runs the reference and the answer once; no verdict."""
    layers, x, residual = _fixed_probe()
    gradients = reference_gradients(layers, x, residual)
    reference_update([layers[0][0], layers[0][1]], gradients, 0.5)

    def run_answer():
        import keras
        import tensorflow as tf

        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, dtype="mixed_float16")])
        model.set_weights([layers[0][0].astype(np.float32), layers[0][1].astype(np.float32)])
        y = tf.constant(0.5 - residual, tf.float32)
        answer(
            model, keras.optimizers.SGD(learning_rate=0.5), tf.constant(x, tf.float32), y, 2.0**15
        )

    announce(NUMBER, TITLE, run_answer)
