"""The harness for a function the check calls with Keras objects it builds afresh for
every call (lesson 07): a model and its optimizer, a layer; and what a training step on
such a model must do.

``build(probe)`` returns a :class:`Built`: the arguments, the ``sources`` a
``tape.gradient`` call must differentiate, and ``details`` for reading (the model, its
weights before the call). The check calls the answer while noting every tape
(:mod:`.observing`), names a raised error by ``errors`` (a piece of its text, a code, a
hint), and ``read(value, probe, built, log)`` reads what came back into parts or raises a
structural verdict (the method too: ``log`` says what the tapes did). With ``untaped`` (a
code and a hint), right numbers that no ``tape.gradient`` call with every one of
``sources`` produced are *not yet*. Statefulness: the first probe is called again after
the others and must give the same parts, on objects built anew, or on its own put back as
they were built by ``reset(built)`` (a model costs more to build than to restore). The
``demand_*`` functions and :func:`read_gradients` are what a training step must do;
:func:`dense_from_lookup` reads a lookup's gradient.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import as_values
from .answers import call_answer
from .answers import shape_of
from .harness import Harness
from .harness import Observation
from .harness import keeps_state
from .harness import same_again
from .judge import judge_probe
from .judge import repeats_an_earlier_call
from .judging import matches
from .observing import observe
from .verdicts import Wrong


@dataclass
class Built:
    """What the check built for one call: the ``arguments``, the ``sources`` to be
    differentiated, and ``details`` for reading the result."""

    arguments: tuple
    sources: list = field(default_factory=list)
    details: dict = field(default_factory=dict)


def _held(variable):
    """The ``tf.Variable`` a Keras variable holds (its ``value``); a ``tf.Variable`` is
    its own (its ``value`` is a method)."""
    value = getattr(variable, "value", None)
    return variable if value is None or callable(value) else value


def _ids(variables) -> set:
    return {id(_held(v)) for v in variables}


# What a step may read from the optimizer it is handed, but never set (lesson 07).
OPTIMIZER_SETTINGS = ("clipnorm", "global_clipnorm", "clipvalue", "use_ema", "loss_scale_factor")


def optimizer_settings(objects) -> dict:
    """``{(argument, setting): value}`` for the Keras optimizers among ``objects``."""
    import keras

    return {
        (index, name): getattr(given, name, None)
        for index, given in enumerate(objects)
        if isinstance(given, keras.optimizers.Optimizer)
        for name in OPTIMIZER_SETTINGS
    }


def optimizer_changed(name: str, before: dict, after: dict) -> Wrong | None:
    """The verdict on an answer that set one of :data:`OPTIMIZER_SETTINGS`, or None."""
    for (index, setting), value in after.items():
        if value != before[(index, setting)]:
            return Wrong(
                f"{name} set the optimizer's {setting} to {value!r}: every later step of "
                "the caller's optimizer would do that too, and the gradients it applied are "
                "not the ones you returned. Do the work on the gradients yourself and leave "
                "the optimizer you were handed as it was.",
                "changed_in_place",
            )
    return None


def differentiated(log, sources) -> bool:
    """Some ``tape.gradient`` call had every one of ``sources`` among its sources."""
    wanted = _ids(sources)
    return any(c.kind == "gradient" and wanted <= _ids(c.sources) for c in log.calls)


@dataclass(frozen=True)
class KerasCall(Harness):
    name: str = "Your function"
    build: Callable = None
    read: Callable = None
    untaped: tuple = ()
    errors: tuple = ()
    method: str = ""
    main: str = "value"
    nouns: Mapping = field(default_factory=lambda: {"value": "your result"})
    reset: Callable | None = None
    # (probe, built) -> (probe, built): the first call's own objects with new values, so
    # that an answer caching its result per object shows.
    vary: Callable | None = None

    def describe(self) -> str:
        every = "probe" if self.reset else "call"  # with reset, the call again is on old ones
        found = [f"the check builds fresh Keras objects for every {every}"]
        if self.untaped:
            found.append("a tape.gradient call differentiated the objects handed over")
        return "; ".join(found + ([self.method] if self.method else [])) + "."

    def parts(self, answer, probe, built=None) -> tuple:
        """``(parts, built, log)``: the answer called on freshly built objects (or those
        ``built`` before), read."""
        built = built or self.build(probe)
        settings = optimizer_settings(built.arguments)
        with observe() as log:
            try:
                value = call_answer(answer, *built.arguments, name=self.name)
            except Wrong as wrong:
                raise self.named(wrong) from None
        log.optimizer_changed = optimizer_changed(
            self.name, settings, optimizer_settings(built.arguments)
        )
        return self.read(value, probe, built, log), built, log

    def named(self, wrong: Wrong) -> Wrong:
        """A raised error the exercise knows, in its own words."""
        for text, code, hint in self.errors:
            if wrong.mistake == "raised" and text in wrong.error:
                return Wrong(f"{hint} ({wrong.hint})", code, error=wrong.error)
        return wrong

    def observe(self, answer, probe, exercise) -> Observation:
        parts, built, log = self.parts(answer, probe)
        pending = None
        if self.untaped and not differentiated(log, built.sources):
            pending = Wrong(self.untaped[1], self.untaped[0])
        return Observation(parts, log, pending=pending, details={"built": built})

    def statefulness(self, answer, seen, exercise) -> None:
        """Right at every probe: the optimizer left as it was handed over, the first call
        again, and (with ``vary``) its own objects with new values."""
        for _, observation in seen:
            if observation.log.optimizer_changed is not None:
                raise observation.log.optimizer_changed
        if len(seen) < 2:
            return
        probe, first = seen[0]
        built = self.reset(first.details["built"]) if self.reset else None
        try:
            again = self.parts(answer, probe, built)[0]
        except Wrong:
            again = {}
        same_again(self.name, first.parts, again)
        if self.vary is not None:
            self._varied(answer, probe, first.details["built"], seen, exercise)

    def _varied(self, answer, probe, built, seen, exercise) -> None:
        other, built = self.vary(probe, built)
        try:
            parts = self.parts(answer, other, built)[0]
        except Wrong:
            parts = {}
        repeats_an_earlier_call(exercise, seen, other, Observation(parts))
        try:
            judge_probe(exercise, other, Observation(parts), labelled=True)
        except Wrong:
            raise keeps_state(
                self.name,
                "handed the first call's objects again with new values, it returned "
                "numbers that are not their answer",
            ) from None

    def verified(self, exercise, probes) -> list:
        return [
            self.describe().rstrip("."),
            "the first probe called again after the others"
            + (" (its objects put back as built)" if self.reset else "")
            + " gave the same result",
        ] + (
            ["its objects handed over again with new values got their own answer"]
            if self.vary
            else []
        )


# -- a lookup's gradient -----------------------------------------------------------------

# The gradient of a lookup (tf.gather, an Embedding) is IndexedSlices: an answer that is
# asked for a dense tensor can return them, their rows only, or fail on their .numpy().
NUMPY_ON_SLICES = (
    "'IndexedSlices' object has no attribute 'numpy'",
    "numpy_on_indexed_slices",
    "The tape's gradient for a lookup is IndexedSlices, which has no .numpy(): convert it "
    "with tf.convert_to_tensor (and keep it a tensor)",
)


def dense_from_lookup(value, name: str, shape: tuple, dtype, lookups: int) -> np.ndarray:
    """A lookup's gradient returned as a dense tensor of the table's ``shape`` and
    ``dtype``, not as the tape's IndexedSlices nor as their ``lookups`` rows alone."""
    import tensorflow as tf

    if isinstance(value, tf.IndexedSlices):
        raise Wrong(
            f"{name} returned the tape's IndexedSlices (indices and rows), not a dense "
            "tensor: convert it with tf.convert_to_tensor.",
            "indexed_slices_returned",
        )
    rows = (lookups, *shape[1:])
    if shape_of(value) == rows and rows != tuple(shape):
        raise Wrong(
            f"{name} returned shape {rows}, one row per lookup: the .values of the "
            f"IndexedSlices. The gradient is shaped like the table, {tuple(shape)}: "
            "tf.convert_to_tensor adds the rows of repeated ids.",
            "slices_values_only",
        )
    return as_values(value, name=name, shape=tuple(shape), dtype=dtype)


# -- what a training step must do ----------------------------------------------------------


def read_gradients(value, model, name: str) -> np.ndarray:
    """One float32 tensor per trainable variable, in order, flattened into one array."""
    trainable = model.trainable_variables
    if not isinstance(value, (list, tuple)) or len(value) != len(trainable):
        size = f" of {len(value)}" if isinstance(value, (list, tuple)) else ""
        raise Wrong(
            f"{name} should return a list of {len(trainable)} gradients, one per trainable "
            f"variable in order; it returned a {type(value).__name__}{size}.",
            "wrong_structure",
        )
    return np.concatenate(
        [
            np.ravel(as_values(g, name=f"Gradient {i + 1}", shape=tuple(v.shape), dtype="float32"))
            for i, (g, v) in enumerate(zip(value, trainable))
        ]
    )


def demand_trainable_sources(log, model) -> None:
    """No tape differentiated a weight outside ``model.trainable_variables``."""
    others = _ids(model.weights) - _ids(model.trainable_variables)
    if any(_ids(call.sources) & others for call in log.calls):
        raise Wrong(
            "Your tape differentiated variables that are not in model.trainable_variables "
            "(model.variables or model.weights): a frozen layer's weights are still "
            "trainable tf.Variables, so they get gradients and train, and a non-trainable "
            "one gets None. Differentiate and apply model.trainable_variables only.",
            "trained_frozen_layer",
        )


def _factor(call, loss: float) -> float | None:
    try:
        factor = float(np.asarray(call.target, np.float64)) / loss
        if call.upstream is not None:
            factor *= float(np.asarray(call.upstream, np.float64))
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return factor if np.isfinite(factor) and factor != 0 else None


def demand_scaled_loss(log, model, loss, scale, earlier=(), sums=(), got=None, right=None):
    """The first ``tape.gradient`` call on the model's variables walked from ``scale``
    times ``loss`` (the target times its ``output_gradients``). Named otherwise: the loss
    itself (and ``got``, ``scale`` times ``right``: the gradients scaled afterwards); a
    scale of an ``earlier`` call (state kept); another power of two (not ``sums``, the
    factors of a loss that is a sum: its numbers name it)."""
    mine = _ids(model.trainable_variables)
    call = next((c for c in log.calls if _ids(c.sources) & mine), None)
    factor = None if call is None else _factor(call, loss)
    if factor is None or abs(factor / scale - 1) < 1e-2:
        return

    def near(value):
        return abs(factor / value - 1) < 1e-2

    if near(1.0 / scale) and scale != 1:
        raise Wrong(
            "Your tape walked from the loss divided by loss_scale: that makes dy smaller, and "
            "float16 rounds more of it to 0.0. Multiply the loss by loss_scale, then divide "
            "the gradients by it.",
            "loss_not_scaled",
        )
    if near(1.0):
        ratio = np.median(np.abs(got) / np.maximum(np.abs(right), 1e-300))
        after = got is not None and abs(ratio / scale - 1) < 0.1
        raise Wrong(
            "Your tape differentiated the loss itself, not the loss times loss_scale"
            + (
                ", and you multiplied the gradients afterwards: by then float16 had rounded "
                "the small ones to 0.0."
                if after
                else ": the float16 gradients of a close fit underflow to 0.0 or lose digits."
            )
            + " Scale the loss (or pass output_gradients=loss_scale), then divide.",
            "scaled_gradients_not_loss" if after else "loss_not_scaled",
        )
    if near(scale**2) and scale != 1 and not (sums and near(max(sums))):  # not a whole sum
        raise Wrong(
            f"Your tape walked from the loss times loss_scale twice over ({scale:g} x {scale:g}"
            "): the loss multiplied by loss_scale and output_gradients=loss_scale "
            "too, or the scale applied twice otherwise, while the gradients are divided once. "
            "Scale once, either way but not both, then divide by loss_scale.",
            "scaled_twice",
        )
    if abs(np.log2(abs(factor)) - round(np.log2(abs(factor)))) > 1e-3 or any(map(near, sums)):
        return
    if any(map(near, earlier)):
        raise Wrong(
            f"Your step scaled the loss by {factor:g}, the loss_scale of an earlier call, not "
            f"this call's {scale:g}: it keeps state between calls. Use each call's loss_scale.",
            "keeps_state",
        )
    raise Wrong(
        f"Your step scaled the loss by {factor:g}, not by the loss_scale it was given "
        f"({scale:g}): use the argument (a LossScaleOptimizer has a scale of its own; the "
        "optimizer given has none).",
        "hard_coded_scale",
    )


def demand_applied(built, got, learning_rate, right, tolerance) -> None:
    """The trainable weights moved by ``-learning_rate * got`` (``built.details`` holds
    the ``model`` and its weights ``before`` the call, in the order of ``model.weights``):
    not at all, twice, or by other gradients are named; so are right gradients applied
    and their negatives returned."""
    model, before = built.details["model"], built.details["before"]
    index = {id(v): i for i, v in enumerate(model.weights)}
    rows = [index[id(v)] for v in model.trainable_variables]
    delta = np.concatenate([np.ravel(model.weights[i].numpy() - before[i]) for i in rows])
    step = -learning_rate * got
    floor = 1e-6 * max(float(np.max(np.abs(b))) for b in before) + 1e-3 * np.abs(step)
    if not np.all(np.isfinite(got)) or np.all(np.abs(delta - step) <= floor):
        return
    applied = -delta / learning_rate
    if np.all(np.abs(delta) <= floor):
        code, what = "not_applied", "not at all"
    elif np.all(np.abs(delta - 2 * step) <= floor):
        code, what = "applied_twice", "twice"
    elif not matches(got, right, tolerance.rtol, tolerance.atol) and matches(
        -got, applied, 1e-3, tolerance.atol
    ):
        raise Wrong(
            "Your step applied the right gradients but returned their negatives: return the "
            "very list you apply.",
            "sign_flipped",
        )
    else:
        code, what = "applied_other_than_returned", "with other gradients than those returned"
    raise Wrong(
        f"The weights after your step moved {what}: they should move by -learning_rate times "
        "the gradients you return, applied once with optimizer.apply(gradients, "
        "model.trainable_variables).",
        code,
    )
