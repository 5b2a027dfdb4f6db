"""The harness for a Keras layer *class* whose ``call`` holds a custom gradient that reads
one weight of the layer's own (lesson 07), run on the check's tape as :mod:`.on_tape` runs
a function.

The check makes the layer itself, ``answer(dtype=probe.policy)`` (``"float32"`` or
``"mixed_float16"``), builds it for the probe's input shape, assigns ``probe.w`` to the
weight named ``weight`` and records ``layer(x)`` with ``x`` in the layer's compute dtype
(``probe.dtype``). The parts are ``value`` and ``gradient`` (for x, in x's dtype) and
``grad_w``: the weight's gradient, in the weight's own shape and dtype (float32 under
``mixed_float16`` too). Everything else is :class:`~.on_tape.OnTape`'s: the custom rule
must have run and produced the gradient, ``variables=``, a forgotten upstream, the
upstream-linearity diagnostic. Statefulness: one layer called twice before the first call
is differentiated, then with another weight and input; each call's gradients are its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .answers import as_values
from .answers import call_answer
from .answers import learner_code
from .harness import keeps_state
from .harness import same_parts
from .observing import observe
from .on_tape import OnTape
from .on_tape import _decorator_error
from .verdicts import Wrong


@dataclass(frozen=True)
class KerasLayer(OnTape):
    weight: str = "w"
    factory: bool = True
    produced: bool = True

    def noun(self, part: str) -> str:
        if part == "grad_w":
            return f"the gradient for self.{self.weight}"
        return super().noun(part)

    def describe(self) -> str:
        return (
            "the check makes and builds the layer itself, records it on its own tape and "
            "differentiates it; the learner's @tf.custom_gradient rule ran and its grad_fn "
            f"produced the gradient; self.{self.weight}'s gradient in its own shape and dtype."
        )

    def _layer(self, answer, probe):
        """``(layer, weight)``: the answer's layer, made, built and given ``probe.w``."""
        import keras

        layer = call_answer(answer, dtype=probe.policy, name=self.name)
        if not isinstance(layer, keras.layers.Layer):
            raise Wrong(
                f"{self.name}(dtype=...) gave a {type(layer).__name__}, not a Keras layer: "
                "pass the class itself, a subclass of keras.layers.Layer.",
                "not_a_function",
            )
        with learner_code(f"{self.name}'s build"):
            layer.build(probe.shape)
        weight = getattr(layer, self.weight, None)
        if weight is None or tuple(weight.shape) != np.shape(probe.w):
            raise Wrong(
                f"After build, the layer has no weight self.{self.weight} of shape "
                f"{np.shape(probe.w)}: keep the build method the exercise gives.",
                "wrong_structure",
            )
        weight.assign(np.asarray(probe.w, dtype=weight.dtype))
        return layer, weight.value

    def record(self, answer, probe, made=None):
        """``(tape, x, output, log, weight)``: a fresh layer (or the one ``made``) called
        on the check's tape."""
        import tensorflow as tf

        layer, weight = made or self._layer(answer, probe)
        x = tf.constant(np.asarray(probe.x, dtype=probe.dtype))
        tape = tf.GradientTape(persistent=True)
        with tape, observe() as log:
            tape.watch(x)
            try:
                with learner_code("Your layer"):
                    value = layer(x)
            except Wrong as wrong:
                raise _decorator_error(wrong) from None
        return tape, x, value, log, weight

    def _read(self, grads, log, shape, dtype) -> dict:
        """As for any rule on the tape, but a gradient for x of another float dtype than x's
        is named as x's (the weight's has a dtype of its own)."""
        got = getattr(getattr(grads[0], "dtype", None), "name", dtype)
        if got != dtype and got.startswith(("float", "bfloat")):
            raise Wrong(
                f"The gradient for x is {got}, but x is {dtype}: each gradient has its own "
                f"input's dtype, so return x's gradient in x's dtype ({dtype}; tf.cast(..., "
                f"x.dtype)) and self.{self.weight}'s in the weight's, float32.",
                "wrong_dtype",
            )
        return super()._read(grads, log, shape, dtype)

    def _grad_w(self, grad_w, log, shape, dtype):
        """The weight's gradient, in the weight's own shape and dtype."""
        name = f"The gradient for self.{self.weight}"
        if grad_w is None:
            outside = all(call.input_count < 2 for call in log.custom_calls)
            raise Wrong(
                f"{name} is None: "
                + (
                    f"self.{self.weight} is read outside the decorated function, so the "
                    "custom node does not own it. Read it inside, take "
                    "grad_fn(upstream, variables=None) and return (gradient for x, "
                    f"[gradient for self.{self.weight}])."
                    if outside
                    else "your grad_fn returned None for it; return its gradient in the list."
                ),
                "variable_outside_rule" if outside else "no_variable_gradient",
            )
        features, got = shape[-1], tuple(grad_w.shape)
        if got != (features,):
            if got == tuple(shape) and len(shape) > 1:
                code, why = "variable_grad_not_reduced", "it is shaped like x: sum the terms"
            elif got == () and features == 1:
                code, why = "squeezed_size_one_axis", "the axis of size 1 was squeezed away"
            else:
                code, why = "wrong_axis", "sum over every axis but the last, no other"
            raise Wrong(
                f"{name} has shape {got}, but the weight has shape ({features},): {why}.", code
            )
        if grad_w.dtype.name != "float32":
            raise Wrong(
                f"{name} is {grad_w.dtype.name}, but the weight is float32: under "
                "mixed_float16 the rule sees float16 tensors, so cast the terms to "
                "variables[0].dtype before you sum them.",
                "weight_gradient_float16",
            )
        return as_values(grad_w, name=name, dtype="float32")

    def statefulness(self, answer, seen, exercise) -> None:
        """One layer called twice before the first call is differentiated (as a model
        that uses it twice does), then again with another weight and input."""
        probe, _ = seen[0]
        other = probe.but(x=-np.roll(probe.x, 1), upstream=np.roll(probe.upstream, 1))
        made = self._layer(answer, probe)
        first = self.record(answer, probe, made)
        self.record(answer, other.but(w=probe.w), made)
        self._own(
            exercise,
            probe,
            first,
            "one layer called twice before the tape "
            "differentiates gives its first call gradients from the second call",
        )
        other = other.but(w=-0.75 * np.asarray(probe.w))
        made[1].assign(np.asarray(other.w, dtype=made[1].dtype.name))
        self._own(
            exercise,
            other,
            self.record(answer, other, made),
            "one layer called a "
            "second time, with another weight and input, gives gradients kept from its "
            "first call",
        )

    def _own(self, exercise, p, run, how) -> None:
        tape, x, value, log, weight = run
        grads = self.gradients(tape, x, value, weight, p.upstream, p.dtype)
        try:
            got = self._read(grads, log, p.shape, p.dtype)
        except Wrong:
            got = {}
        expected = {k: v for k, v in exercise.expected(p).items() if k != "value"}
        tol = 1e-2 if p.dtype == "float16" else 1e-4
        if not same_parts(expected, got, tol, 1e-3 * float(np.max(np.abs(expected["grad_w"])))):
            raise keeps_state(self.name, how)

    def verified(self, exercise, probes) -> list:
        found = super().verified(exercise, probes)[:-1]
        return found + ["one layer called twice kept nothing from its first call"]
