"""The harness for a function the check calls directly, run under the learner's own tapes
(lessons 00, 01, 02, 04 and 05).

The check builds the arguments from the probe (``arguments(probe)``, by default the
probe's ``x`` as a tensor of its dtype), calls the answer while noting every tape,
accumulator and operation it uses (:mod:`.observing`, and with ``provenance`` the whole
run, :mod:`.provenance`), and reads what came back with ``read`` (by default one tensor
of the reference's shape and the probe's dtype). Method flags say what the exercise
demands:

* ``by_hand``: no tape, accumulator or ``tf.test.compute_gradient``;
* ``output_gradients``: ``tape.gradient(..., output_gradients=dy)``; ``"by_hand"``
  also demands that ``dy`` did not come from another tape;
* ``nested``: an inner tape's gradient computed while an outer tape records;
* ``forward_mode``: ``tf.autodiff.ForwardAccumulator`` and no reverse mode;
* ``forbid``: ``"jacobian"`` (no ``tape.jacobian``/``batch_jacobian``) or
  ``"gradcheck"`` (not the course's own finite differences).

A ``None`` gradient, or an error it caused, is explained from what the tapes saw,
in the lesson's words (``cause_names``). Statefulness: the first probe is called again
after all the others and must give the same parts.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import as_values
from .differentiating import forbid_jacobian
from .differentiating import require_by_hand
from .differentiating import require_forward_mode
from .differentiating import require_nested
from .differentiating import require_output_gradients
from .harness import Harness
from .harness import Observation
from .harness import keeps_state
from .harness import same_parts
from .provenance import missing
from .provenance import run_answer
from .verdicts import Wrong


def _tensor_of(probe):
    import tensorflow as tf

    return (tf.constant(np.asarray(probe.x, dtype=probe.dtype)),)


def one_tensor(value, probe, exercise, name: str) -> dict:
    """What came back as one tensor of the reference's shape and the probe's dtype."""
    shape = exercise.expected(probe)[exercise.harness.main].shape
    return {exercise.harness.main: as_values(value, name=name, shape=shape, dtype=probe.dtype)}


@dataclass(frozen=True)
class Function(Harness):
    name: str = "Your function"
    arguments: Callable = _tensor_of
    read: Callable = one_tensor
    by_hand: bool = False
    output_gradients: bool | str = False
    nested: bool = False
    forward_mode: bool = False
    forbid: tuple = ()
    cause_names: Mapping = field(default_factory=dict)
    sources: Callable | None = None
    main: str = "value"
    nouns: Mapping = field(default_factory=lambda: {"value": "your result"})

    def noun(self, part: str) -> str:
        return self.nouns.get(part, f"your {part}")

    def describe(self) -> str:
        found = []
        if self.by_hand:
            found.append("by hand: no tape, accumulator or tf.test.compute_gradient")
        if self.output_gradients:
            found.append("tape.gradient with output_gradients")
        if self.output_gradients == "by_hand":
            found.append("a dy worked out by hand, not by another tape")
        if self.nested:
            found.append("nested tapes")
        if self.forward_mode:
            found.append("forward mode (ForwardAccumulator) only")
        found += [f"no {item}" for item in self.forbid]
        return "; ".join(found) + "." if found else "any method."

    def call(self, answer, probe):
        """``(run, arguments)``: the answer called on the probe's arguments."""
        arguments = self.arguments(probe)
        return run_answer(answer, *arguments, name=self.name), arguments

    def observe(self, answer, probe, exercise) -> Observation:
        run, arguments = self.call(answer, probe)
        log = run.log
        names = self.sources(probe, arguments) if self.sources is not None else ()
        explained = missing(run, names, cause_names=self.cause_names)
        if explained is not None:
            raise Wrong(explained[1], explained[0])
        if run.raised is not None:
            raise run.raised
        self.demand(log)
        parts = self.read(run.value, probe, exercise, self.name)
        return Observation(parts, log, details={"run": run, "arguments": arguments})

    def demand(self, log) -> None:
        if self.by_hand:
            require_by_hand(log)
        if self.output_gradients:
            require_output_gradients(log)
        if self.output_gradients == "by_hand" and _dy_from_a_tape(log):
            raise Wrong(
                "The numbers may be right, but the upstream gradient you passed as "
                "output_gradients came from another tape: the exercise asks you to work dy "
                "out by hand (a formula of the output and the target), and to let one tape "
                "do the rest.",
                "used_tape",
            )
        if self.nested:
            require_nested(log)
        if self.forward_mode:
            require_forward_mode(log)
        if "jacobian" in self.forbid:
            forbid_jacobian(log, "build it from tape.gradient calls, as the exercise says.")
        if "gradcheck" in self.forbid and log.course_gradchecks:
            raise Wrong(
                "Your function calls the course's own finite-difference helper "
                "(autodiff_course.gradcheck). The exercise asks you to write the central "
                "difference yourself: move each coordinate by +h and -h and divide by 2h.",
                "used_course_helper",
            )

    def statefulness(self, answer, seen, exercise) -> None:
        if len(seen) < 2:
            return
        probe, first = seen[0]
        run, _ = self.call(answer, probe)
        try:
            if run.raised is not None:
                raise run.raised
            again = self.read(run.value, probe, exercise, self.name)
        except Wrong:
            again = {}
        if not same_parts(first.parts, again, 1e-6, 1e-12):
            raise keeps_state(
                self.name,
                "called again with the first probe's arguments after the others, it "
                "returned other numbers",
            )

    def verified(self, exercise, probes) -> list:
        found = [self.describe().rstrip(".")] if self.describe() != "any method." else []
        return found + ["the first probe called again after the others gave the same result"]


def _dy_from_a_tape(log) -> bool:
    """A call's output_gradients is (numerically) the result of an earlier tape call."""
    for call in log.calls:
        if not call.output_gradients or call.upstream is None:
            continue
        try:
            upstream = np.asarray(call.upstream, dtype=np.float64)
        except Exception:  # noqa: BLE001 - a nested structure: not this mistake
            continue
        for earlier in log.calls:
            if earlier is call or earlier.time > call.time:
                continue
            for result in earlier.results or ():
                try:
                    values = np.asarray(result, dtype=np.float64)
                except Exception:  # noqa: BLE001
                    continue
                if values.shape == upstream.shape and np.allclose(values, upstream):
                    return True
    return False
