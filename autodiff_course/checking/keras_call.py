"""The harness for a function the check calls with Keras objects it builds afresh for
every call: a model and its optimizer, a layer (lesson 07).

``build(probe)`` returns a :class:`Built`: the arguments to call the answer with, the
``sources`` a ``tape.gradient`` call must differentiate with respect to, and any
``details`` the reading needs (the weights before the call). The check calls the answer
while noting every tape (:mod:`.observing`), names an error it raised by ``errors``
(a piece of the error's text, a code, a hint), and hands ``read(value, probe, built,
log)`` what came back, to read into parts or to raise a structural verdict (the method
too: ``log`` says what the tapes did). With ``untaped`` (a code and a hint), right
numbers that no ``tape.gradient`` call with every one of ``sources`` produced are *not
yet*; wrong ones get the verdict their numbers earn.

Statefulness: the first probe, built anew, is called again after the others and must
give the same parts.
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
from .harness import same_parts
from .observing import observe
from .verdicts import Wrong


@dataclass
class Built:
    """What the check built for one call: the ``arguments``, the ``sources`` to be
    differentiated, and ``details`` for reading the result."""

    arguments: tuple
    sources: list = field(default_factory=list)
    details: dict = field(default_factory=dict)


def differentiated(log, sources) -> bool:
    """Some ``tape.gradient`` call had every one of ``sources`` among its sources (a
    Keras variable or the ``tf.Variable`` it holds)."""
    wanted = {id(getattr(s, "value", s)) for s in sources}
    for call in log.calls:
        if call.kind != "gradient":
            continue
        given = {id(s) for s in call.sources} | {id(getattr(s, "value", s)) for s in call.sources}
        if wanted <= given:
            return True
    return False


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

    def noun(self, part: str) -> str:
        return self.nouns.get(part, f"your {part}")

    def describe(self) -> str:
        found = ["the check builds fresh Keras objects for every call"]
        if self.untaped:
            found.append("a tape.gradient call differentiated the objects handed over")
        return "; ".join(found + ([self.method] if self.method else [])) + "."

    def run(self, answer, probe):
        """``(built, log, value)``: the answer called on freshly built objects."""
        built = self.build(probe)
        with observe() as log:
            try:
                value = call_answer(answer, *built.arguments, name=self.name)
            except Wrong as wrong:
                raise self.named(wrong) from None
        return built, log, value

    def named(self, wrong: Wrong) -> Wrong:
        """A raised error the exercise knows, in its own words."""
        for text, code, hint in self.errors:
            if wrong.mistake == "raised" and text in wrong.hint:
                return Wrong(f"{hint} ({wrong.hint})", code)
        return wrong

    def observe(self, answer, probe, exercise) -> Observation:
        built, log, value = self.run(answer, probe)
        parts = self.read(value, probe, built, log)
        pending = None
        if self.untaped and not differentiated(log, built.sources):
            pending = Wrong(self.untaped[1], self.untaped[0])
        return Observation(parts, log, pending=pending, details={"built": built})

    def statefulness(self, answer, seen, exercise) -> None:
        if len(seen) < 2:
            return
        probe, first = seen[0]
        try:
            built, log, value = self.run(answer, probe)
            again = self.read(value, probe, built, log)
        except Wrong:
            again = {}
        if not same_parts(first.parts, again, 1e-6, 1e-12):
            raise keeps_state(
                self.name,
                "called again with the first probe's arguments after the others, it "
                "returned other numbers",
            )

    def verified(self, exercise, probes) -> list:
        return [
            self.describe().rstrip("."),
            "the first probe called again after the others gave the same result",
        ]


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
