"""What exercises 7.2 and 7.4 share: the small ``mixed_float16`` Dense models the check
builds, their float64 gradients (each layer's output rounded to float16 as the model
stores it, the backward pass in float64, never Keras or a tape), and the method checks of
a loss-scaled step (:mod:`autodiff_course.checking.keras_call`) at their numbers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...checking import keras_call
from ...checking.judging import Tolerance
from ...checking.keras_call import Built
from ...checking.keras_call import KerasCall
from ...checking.observing import observe
from ...checking.spec import Probe
from ...checking.verdicts import Wrong
from . import MIXED
from . import WATCHED


def _f16(values):
    return np.asarray(values, np.float64).astype(np.float16).astype(np.float64)


def _forward(layers, x):
    activations, pre = [_f16(x)], []
    for kernel, bias, activation in layers:
        z = _f16(activations[-1] @ _f16(kernel) + _f16(bias))
        pre.append(z)
        activations.append(_f16(np.tanh(z)) if activation == "tanh" else z)
    return pre, activations


def gradients(p, dy=None, absolute=False) -> list:
    """float64 gradients of the trainable variables for the upstream ``dy`` at the output
    (the mean squared error's by default); ``absolute``: the magnitudes of their terms."""
    pre, acts = _forward(p.layers, p.x)
    dy = 2.0 * (acts[-1] - p.y) / p.y.size if dy is None else dy
    dy, found = (np.abs(dy) if absolute else dy), []
    for index in reversed(range(len(p.layers))):
        kernel, _, activation = p.layers[index]
        if activation == "tanh":
            dy = dy * (1.0 - np.tanh(pre[index]) ** 2)
        a = np.abs(acts[index]) if absolute else acts[index]
        found[:0] = [a.T @ dy, dy.sum(axis=0)]
        dy = dy @ (np.abs(_f16(kernel)) if absolute else _f16(kernel)).T
    return found[2:] if p.frozen else found


def flat(arrays) -> np.ndarray:
    return np.concatenate([np.ravel(a) for a in arrays])


def norm(arrays) -> float:
    """The global norm of ``arrays``."""
    return float(np.sqrt(sum(np.sum(np.square(a)) for a in arrays)))


def prediction(p) -> np.ndarray:
    return _forward(p.layers, p.x)[1][-1]


def tolerance(p, part) -> Tolerance:
    """Of the largest sum of magnitudes of a gradient's terms (float16 products): 5e-3 for a
    near-perfect fit, 1e-3 for a rough one (whose float16 error measured at most 4.9e-4)."""
    share = 5e-3 if p.tiny else 1e-3
    return Tolerance(1e-2, share * float(np.max(flat(gradients(p, absolute=True)))))


def model_probe(rng, widths, batch, scale, tiny, frozen=False, spread=(0.5, 1.5), **data) -> Probe:
    """A Dense stack (a tanh layer first in a rough fit) with short binary fractions as
    weights and inputs, a learning rate, and targets set from its own float16 prediction:
    residuals of 2 to 4 float32 spacings at 1/4 or more (``tiny``: their float16 gradients
    underflow unscaled, and the weights barely move), or of ``spread`` (weights read back)."""
    learning_rate = float(np.round(rng.uniform(0.05, 0.5), 3))
    layers, activations = [], ["linear" if tiny else "tanh", "linear"]
    for fan_in, fan_out, activation in zip(widths, widths[1:], activations):
        shape = (fan_in, fan_out)
        kernel = rng.integers(1, 4, shape) * rng.choice([-0.25, 0.25], shape)
        layers.append((kernel, rng.integers(-4, 5, fan_out) / 8, activation))
    x = rng.integers(-4, 5, (batch, widths[0])) / 4
    predicted = _forward(layers, x)[1][-1]
    size = predicted.shape
    if tiny:
        spacing = np.spacing(np.maximum(np.abs(predicted), 0.25).astype(np.float32))
        residual = rng.integers(2, 5, size) * rng.choice([-1, 1], size) * spacing.astype(float)
    else:
        residual = rng.uniform(*spread, size) * rng.choice([-1, 1])  # one sign: no cancelling
    y = (predicted - residual).astype(np.float32).astype(np.float64)
    label = f"a {'near-perfect' if tiny else 'rough'} fit, batch of {batch}, loss_scale {scale:g}"
    fields = dict(layers=layers, y=y, loss_scale=scale, frozen=frozen, tiny=tiny, **data)
    fields["learning_rate"] = learning_rate
    return Probe("mixed_float16", x, data=fields, label=label)


def build(p) -> Built:
    """A fresh model initialised with the probe's weights (no random draw to overwrite),
    its SGD optimizer, and the arguments of a step."""
    import keras
    import tensorflow as tf

    held, policy = keras.initializers.Constant, "mixed_float16"  # weights exact in float32
    dense = [
        keras.layers.Dense(
            k.shape[1], a, kernel_initializer=held(k), bias_initializer=held(b), dtype=policy
        )
        for k, b, a in p.layers
    ]
    model = keras.Sequential([keras.Input((p.x.shape[1],)), *dense])
    if p.frozen:
        model.layers[0].trainable = False
    optimizer = keras.optimizers.SGD(learning_rate=p.learning_rate)
    arguments = (model, optimizer, tf.constant(p.x, tf.float32), tf.constant(p.y, tf.float32))
    arguments += (float(p.loss_scale),) + ((float(p.clip_norm),) if "clip_norm" in p.data else ())
    before = [w for k, b, _ in p.layers for w in (k, b)]  # in the order of model.weights
    return Built(arguments, list(model.trainable_variables), {"model": model, "before": before})


def reset(built) -> Built:
    """The objects :func:`build` made, as it made them: the weights it gave the model put
    back, the optimizer's step count at 0 (plain SGD keeps nothing else)."""
    model, optimizer = built.arguments[:2]
    model.set_weights([w.astype(np.float32) for w in built.details["before"]])
    optimizer.iterations.assign(0)
    return built


def read(value, p, built, log, name) -> np.ndarray:
    """The returned gradients, flattened, once the method is verified: only the trainable
    variables differentiated, from the loss times loss_scale; in a rough fit, applied."""
    model, right = built.details["model"], flat(gradients(p))
    keras_call.demand_trainable_sources(log, model)
    got = keras_call.read_gradients(value, model, name)
    loss, earlier = float(np.mean((prediction(p) - p.y) ** 2)), p.data.get("earlier", ())
    sums = [p.loss_scale * d for d in range(2, p.y.size + 1) if p.y.size % d == 0]  # a sum
    keras_call.demand_scaled_loss(log, model, loss, p.loss_scale, earlier, sums, got, right)
    if log.optimizer_changed is not None:  # named before what the optimizer then applied
        raise log.optimizer_changed
    if not p.tiny:
        keras_call.demand_applied(built, got, p.learning_rate, right, tolerance(p, None))
    return got


def outside_tape(wrong: Wrong, log) -> Wrong | None:
    """The verdict on an answer that raised after a tape.gradient call returned None for a
    target made before the tape's block opened or after it closed, else None."""
    found = log.first_none()
    call = found and found[0]
    made, tape = getattr(call and call.target, "_id", None), call and call.tape
    if wrong.mistake != "raised" or made is None or tape.entered is None:
        return None
    if tape.exited is not None and made > tape.exited:
        when = "after the tape's `with` block had closed"
    elif made < tape.entered:
        when = "before the tape's `with` block opened"
    else:
        return Wrong(
            "tape.gradient returned None, and your code went on with it: the tape recorded "
            "no path from the variable to the result you differentiated. Every step between "
            "them, the lookup or the model's call first, runs inside the `with "
            f"tf.GradientTape() as tape:` block, in TensorFlow operations. ({wrong.hint})",
            "no_recorded_path",
        )
    return Wrong(
        "tape.gradient returned None, and your code went on with it: the result you "
        f"differentiated was computed {when}, where the tape records nothing. Compute it "
        "(the loss, its product with loss_scale, a sum) inside the `with tf.GradientTape() "
        f"as tape:` block. ({wrong.hint})",
        "computed_outside_tape",
    )


@dataclass(frozen=True)
class Step(KerasCall):
    """:class:`KerasCall` whose answer, when it raises on a Keras Variable it watched or on
    the None of a result computed outside its tape, is told so (7.2 to 7.4)."""

    errors: tuple = (WATCHED, MIXED)

    def parts(self, answer, probe, built=None) -> tuple:
        with observe() as log:
            try:
                return super().parts(answer, probe, built)
            except Wrong as wrong:
                raise outside_tape(wrong, log) or wrong from None
