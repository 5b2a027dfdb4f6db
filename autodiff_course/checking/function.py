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
  ``"gradcheck"`` (not the course's own finite differences);
* ``tape``: a ``tf.GradientTape`` computed it (the right numbers without one are
  *not yet*, and close ones are named finite differences).

``state(arguments)`` names the variables the answer must update in place,
``{part: [variables]}``: they are read back after the call as those parts (the very
objects handed over, so a dict entry rebound to a new variable shows), and a gradient
lost by rebinding one is named ``variable_replaced``.

A ``None`` gradient, or an error it caused, is explained from what the tapes saw,
in the lesson's words (``cause_names``), with the tape.gradient call it came from when
there were several; zeros that ``unconnected_gradients=ZERO`` put in place of a None,
and float32 arithmetic inside a float64 answer that is close, explain any wrong part.
Statefulness: the first probe is called again after all the others and must give the
same parts.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import astuple
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
from .judging import matches
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


def one_tensor_per_key(value, probe, exercise, name: str) -> dict:
    """What came back as a dict with the keys of the reference's parts (the structure of
    the sources a tape.gradient call was given), each one tensor of that part's shape and
    the probe's dtype (lesson 02: the gradients of a dict of variables)."""
    expected = exercise.expected(probe)
    if not isinstance(value, Mapping):
        raise Wrong(
            f"{name} returned a {type(value).__name__}; return a dict with the keys "
            f"{sorted(expected)}: tape.gradient(loss, sources) returns the gradients in the "
            "structure of its sources, so pass the dict itself.",
            "wrong_structure",
        )
    if set(map(str, value)) != set(expected):
        raise Wrong(
            f"Your dict has keys {sorted(map(str, value))}; it should have the keys "
            f"{sorted(expected)}. Pass the dict itself as the sources.",
            "wrong_keys",
        )
    return {
        key: as_values(value[key], name=f"The entry {key!r}", shape=want.shape, dtype=probe.dtype)
        for key, want in expected.items()
    }


FLOAT32_INSIDE = (
    "Your result is float64, but only about as precise as float32: part of the computation "
    "ran in float32 (a tf.cast(..., tf.float32), or a constant made with dtype=tf.float32, "
    "converted back afterwards). Keep every step in the input's dtype."
)


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
    tape: bool = False
    cause_names: Mapping = field(default_factory=dict)
    sources: Callable | None = None
    state: Callable | None = None
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
        if self.tape:
            found.append("a tf.GradientTape computed it")
        return "; ".join(found) + "." if found else "any method."

    def call(self, answer, probe):
        """``(run, arguments, handed)``: the answer called on the probe's arguments, and
        what they held before the call: ``names`` (the sources and what the exercise
        calls them) and ``state`` (the variables to update in place), so that an answer
        that rebinds a dict entry cannot change them."""
        arguments = self.arguments(probe)
        handed = {
            "names": self.sources(probe, arguments) if self.sources is not None else (),
            "state": self.state(arguments) if self.state is not None else {},
        }
        return run_answer(answer, *arguments, name=self.name), arguments, handed

    def observe(self, answer, probe, exercise) -> Observation:
        run, arguments, handed = self.call(answer, probe)
        log, names = run.log, handed["names"]
        kept = [v for variables in handed["state"].values() for v in variables]
        explain = dict(cause_names=self.cause_names, originals=kept)
        explained = missing(run, names, **explain)
        if explained is not None:
            raise Wrong(explained[1], explained[0], point=_which_call(log))
        if run.raised is not None:
            raise run.raised
        self.demand(log)
        parts = self.parts(run.value, handed, probe, exercise)
        hidden = missing(run, names, hidden=True, **explain) if log.used_zero_option else None
        if hidden is None and probe.dtype == "float64" and run.provenance.narrowed_to_float32():
            expected = exercise.expected(probe)
            if all(_close_on_the_whole(parts[p], e, 1e-4) for p, e in expected.items()):
                hidden = ("float32_not_float64", FLOAT32_INSIDE)
        return Observation(
            parts,
            log,
            details={"run": run, "arguments": arguments},
            pending=self._without_tape(log, parts, probe, exercise),
            behind_wrong=None if hidden is None else Wrong(hidden[1], hidden[0]),
        )

    def parts(self, value, handed, probe, exercise) -> dict:
        """What came back (``read``), and the state handed over, read after the call (one
        variable in its own shape, several one after the other, flattened)."""
        parts = dict(self.read(value, probe, exercise, self.name))
        for part, variables in handed["state"].items():
            values = [np.asarray(v.numpy(), dtype=np.float64) for v in variables]
            parts[part] = (
                values[0] if len(values) == 1 else np.concatenate(list(map(np.ravel, values)))
            )
        return parts

    def _without_tape(self, log, parts, probe, exercise) -> Wrong | None:
        """With ``tape``: the right numbers without one stand as *not yet* once the parts
        are known to be right; ones close on the whole are finite differences (raised at
        once)."""
        if not self.tape or log.calls:
            return None
        from .judge import tolerance_of

        expected = exercise.expected(probe)
        if all(
            matches(parts[part], want, *astuple(tolerance_of(exercise, probe, part)))
            for part, want in expected.items()
        ):
            return Wrong(
                "The numbers are right, but no tf.GradientTape computed them. This "
                "exercise is about the tape: record the computation on a tf.GradientTape "
                "and ask it for tape.gradient.",
                "no_tape",
            )
        if all(_close_on_the_whole(parts[part], want) for part, want in expected.items()):
            raise Wrong(
                "Your numbers come close, but no tf.GradientTape computed them: that is "
                "an approximation such as a finite difference. Record the computation on "
                "a tf.GradientTape and ask it for tape.gradient.",
                "finite_differences",
            )
        return None

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
        run, _, handed = self.call(answer, probe)
        try:
            if run.raised is not None:
                raise run.raised
            again = self.parts(run.value, handed, probe, exercise)
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
        if self.state is not None:
            found.append("the variables handed over were updated in place")
        return found + ["the first probe called again after the others gave the same result"]


def _close_on_the_whole(got, want, fraction: float = 1e-2) -> bool:
    """Within ``fraction`` of the largest value everywhere (1%: a finite difference)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = float(np.max(np.abs(want), initial=0.0))
    with np.errstate(invalid="ignore"):
        return got.shape == want.shape and bool(np.all(np.abs(got - want) <= fraction * scale))


def _which_call(log) -> str:
    """Which tape.gradient call a None came from, when it was not the first of several."""
    found = log.first_none()
    calls = [call for call in log.calls if call.kind == "gradient"]
    if found is None or found[0] not in calls or calls.index(found[0]) == 0:
        return ""
    number = calls.index(found[0]) + 1
    nth = {2: "2nd", 3: "3rd"}.get(number, f"{number}th")
    return f"It first shows at the {nth} tape.gradient call; the ones before it had every gradient."


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
