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
* ``forbid``: ``"jacobian"`` (no ``tape.jacobian``/``batch_jacobian``),
  ``"gradcheck"`` (not the course's own finite differences) or
  ``"finite_differences"`` (a wrong result near the answer from code that used no
  automatic differentiation is named an estimate, before anything else);
* ``record_once``: each function the check hands over (``f``, ``layer``) is recorded at
  most once by the answer's tapes; the text says what to do instead;
* ``whole_batch``: those functions mix the examples of their batch, so a wrong result
  from calling one on part of the batch is named (the text says why).

A method verdict waits for the exercise's own mistakes (the judge's order). Every call of
a function the check hands over is noted (:class:`FunctionCall`). The answer runs with
the method log only, and again on the check's tape (:mod:`.provenance`) when something
is missing. A
``None`` gradient, zeros from ``batch_jacobian`` for want of a path, or an error they
caused, is explained from what the tapes saw, in the lesson's words (``cause_names``);
so is an error raised by a tape or accumulator given a wrong upstream or tangent, or a
second gradient of a tape that is not persistent. A result of another shape is judged
by :func:`~.judge.wrong_shape`. Statefulness: the first probe is called again after all
the others and must give the same parts; with ``other_values`` (a function of a probe
giving the same shapes with other numbers) that variant is called instead, and must
not give the first call's numbers.
"""

from __future__ import annotations

import functools
from collections import Counter
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
from .judge import wrong_shape
from .observing import recording
from .patterns import only_float32_digits
from .provenance import missing
from .provenance import needs_provenance
from .provenance import run_answer
from .provenance import run_observed
from .provenance import unconnected_zeros
from .verdicts import Wrong


def _tensor_of(probe):
    import tensorflow as tf

    return (tf.constant(np.asarray(probe.x, dtype=probe.dtype)),)


def one_tensor(value, probe, exercise, name: str) -> dict:
    """What came back as one tensor of the probe's dtype (its shape is judged after)."""
    return {exercise.harness.main: as_values(value, name=name, dtype=probe.dtype)}


def own_state(answer) -> dict:
    """What a call of ``answer`` could change of its own: its default arguments, its
    attributes, the variables of its closure and the module globals its code names, each
    as (identity, size of a container)."""
    code, found = getattr(answer, "__code__", None), {}
    if code is None:
        return found
    defaults = getattr(answer, "__defaults__", None) or ()
    names = code.co_varnames[code.co_argcount - len(defaults) : code.co_argcount]
    space = getattr(answer, "__globals__", {})
    cells = zip(code.co_freevars, getattr(answer, "__closure__", None) or ())
    values = [(f"its default `{n}`", v) for n, v in zip(names, defaults)]
    values += [(f"its attribute `{n}`", v) for n, v in vars(answer).items()]
    values += [(f"the variable `{n}` of its closure", _contents(c)) for n, c in cells]
    values += [(f"the global `{n}`", space.get(n)) for n in code.co_names if n in space]
    for name, value in values:
        size = len(value) if isinstance(value, (list, dict, set)) else None
        found[name] = (id(value), size)
    return found


def _contents(cell):
    try:
        return cell.cell_contents
    except ValueError:  # a cell not yet filled
        return None


def negated(probe):
    """The probe with ``x`` negated: the same shapes, other numbers (for ``other_values``)."""
    return probe.but(x=-np.asarray(probe.x))


@dataclass(frozen=True)
class FunctionCall:
    """One call the answer made of a function the check handed it: the shapes of its
    tensor arguments, and whether one of the answer's tapes was recording."""

    name: str
    shapes: tuple
    recording: bool


def _logged(function, calls: list):
    name = getattr(function, "__name__", "f")

    @functools.wraps(function)
    def logged(*args, **kwargs):
        shapes = tuple(tuple(a.shape) for a in args if hasattr(a, "shape"))
        calls.append(FunctionCall(name, shapes, recording()))
        return function(*args, **kwargs)

    return logged


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
    record_once: str = ""
    whole_batch: str = ""
    other_values: Callable | None = None
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
        found += [f"no {item.replace('_', ' ')}" for item in self.forbid]
        if self.record_once:
            found.append("each function it is given recorded once")
        if self.whole_batch:
            found.append("the functions it is given called on the whole batch")
        return "; ".join(found) + "." if found else "any method."

    def call(self, answer, probe, *, provenance: bool = False):
        """``(run, arguments, calls)``: the answer called on the probe's arguments, and
        its calls of the functions among them; with ``provenance``, on the check's tape
        with a record of every operation (:func:`~.provenance.run_answer`). The run notes
        which of the answer's own state the call changed (``run.changed``)."""
        arguments, calls = self.arguments(probe), []
        handed = tuple(_logged(a, calls) if callable(a) else a for a in arguments)
        before = own_state(answer)
        run = (run_answer if provenance else run_observed)(answer, *handed, name=self.name)
        after = own_state(answer)
        run.changed = [name for name in after if after[name] != before.get(name)]
        return run, arguments, calls

    def after_earlier_calls(self, wrong, seen):
        """A verdict on a later call, when an earlier call changed the answer's own state."""
        changed = list(dict.fromkeys(n for _, o in seen for n in o.details["run"].changed))
        if not changed or wrong.mistake == "keeps_state":
            return None
        return Wrong(
            f"{self.name} changed {', '.join(changed)} during an earlier call, and with this "
            "probe's arguments it goes wrong: it keeps state between calls (a cache, a size "
            "or a tensor kept from the first call). Compute everything from the call's own "
            "arguments.",
            "keeps_state",
            probe=wrong.probe,
        )

    def observe(self, answer, probe, exercise) -> Observation:
        run, arguments, calls = self.call(answer, probe)
        if needs_provenance(run.log):
            run, arguments, calls = self.call(answer, probe, provenance=True)
        log = run.log
        names = self.sources(probe, arguments) if self.sources is not None else ()
        explained = missing(run, names, cause_names=self.cause_names) or unconnected_zeros(
            run, names
        )
        if explained is not None:
            code, text = explained
            lead = self.cause_names.get(code)
            raise Wrong(f"{lead}. {text}" if lead and not text.startswith(lead) else text, code)
        if run.raised is not None or run.value is None:
            found = why_it_raised(log)
            if found is not None or run.raised is not None:
                raise found or run.raised
        try:
            self.demand(log, calls)
            method = None
        except Wrong as wrong:
            method = wrong  # waits for the exercise's own mistakes (see the judge)
        parts = self.read(run.value, probe, exercise, self.name)
        for part, want in exercise.expected(probe).items():
            if part in parts and np.shape(parts[part]) != want.shape:
                raise wrong_shape(exercise, probe, parts[part], self.name, part=part, method=method)
        details = {"run": run, "arguments": arguments, "calls": calls}
        return Observation(parts, log, details=details, method=method)

    def demand(self, log, calls=()) -> None:
        if "jacobian" in self.forbid:
            forbid_jacobian(log, "build it from tape.gradient calls, as the exercise says.")
        if "gradcheck" in self.forbid and log.course_gradchecks:
            raise Wrong(
                "Your function calls the course's own finite-difference helper "
                "(autodiff_course.gradcheck). The exercise asks you to write the central "
                "difference yourself: move each coordinate by +h and -h and divide by 2h.",
                "used_course_helper",
            )
        recorded = Counter(call.name for call in calls if call.recording)
        if self.record_once and recorded and max(recorded.values()) > 1:
            name, count = recorded.most_common(1)[0]
            raise Wrong(
                f"The numbers may be right, but your tapes recorded `{name}` {count} times, one "
                f"forward pass each. One record serves every backward pass: "
                f"{self.record_once}",
                "re_recorded",
            )
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

    def explained(self, case):
        """A function that mixes its batch called on part of it; an estimate made without
        automatic differentiation where the exercise forbids finite differences."""
        observation = case.observation
        details = observation.details if observation is not None else {}
        tensors = [a for a in details.get("arguments", ()) if hasattr(a, "shape")]
        batch = tuple(tensors[0].shape) if tensors else ()
        for call in details.get("calls", ()) if self.whole_batch and batch else ():
            if call.shapes and call.shapes[0][:1] and call.shapes[0][0] < batch[0]:
                return Wrong(
                    f"{self.name} called `{call.name}` on part of the batch (an input of "
                    f"shape {call.shapes[0]}, where x has shape {batch}). {self.whole_batch}",
                    "called_on_slices",
                )
        log = observation.log if observation is not None else None
        if "finite_differences" not in self.forbid or log is None or log.used_any_autodiff:
            return None
        got, expected = case.got, case.expected
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        if not np.all(np.isfinite(got)) or scale == 0.0 or only_float32_digits(got, expected):
            return None
        largest = float(np.max(np.abs(got - expected)))
        if largest > 1e-2 * scale:
            return None
        return Wrong(
            f"Your numbers are near the answer (off by up to {100 * largest / scale:.2g}% of its "
            "largest value) but not exact, and your function used no automatic "
            "differentiation: that is a finite-difference estimate. Its error cannot fall "
            "below the rounding error divided by the step, and the check allows a relative "
            f"{case.tolerance.rtol:.0e}. Differentiate with a tape.",
            "finite_differences",
            point=case.point(),
        )

    def statefulness(self, answer, seen, exercise) -> None:
        first, *later = [o.details["run"].changed for _, o in seen] or [[]]
        if first and not any(later):
            raise Wrong(
                f"{self.name} gives the right numbers here, but its first call changed "
                f"{', '.join(first)} and later calls did not: a value set once and kept (a "
                "cache, a size of the first input) goes wrong as soon as later arguments "
                "differ enough. Compute everything from the call's own arguments.",
                "keeps_state",
            )
        if self.other_values is not None and seen:
            self._other_values(answer, seen[0], exercise)
            return
        if len(seen) < 2:
            return
        probe, first = seen[0]
        run, _, _ = self.call(answer, probe)
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

    def _other_values(self, answer, seen, exercise) -> None:
        """The first probe's shapes with other numbers, called after all the others."""
        from .judge import judge_probe

        probe, first = seen
        other = self.other_values(probe).but(label=f"{probe.label}, with other numbers")
        observation = self.observe(answer, other, exercise)
        if same_parts(first.parts, observation.parts, 1e-6, 1e-12) and not same_parts(
            first.parts, exercise.expected(other), 1e-6, 1e-12
        ):
            raise keeps_state(
                self.name,
                "called after the others with the first probe's shapes and other numbers, it "
                "returned the first call's result",
            )
        judge_probe(exercise, other, observation, labelled=True)

    def verified(self, exercise, probes) -> list:
        found = [self.describe().rstrip(".")] if self.describe() != "any method." else []
        if self.other_values is not None:
            return found + [
                "one more call after the others, with other numbers, got its own answer"
            ]
        return found + ["the first probe called again after the others gave the same result"]


NOT_PERSISTENT = (
    "Your tape was asked for a second gradient, and a tape is released after its first "
    "gradient (or jacobian) call unless it is created with tf.GradientTape(persistent=True). "
    "Make it persistent (then `del tape` when done)."
)


def _mismatch(what: str, noun: str, given, other: str, reference, fix: str):
    """A Wrong when ``given`` (``noun``: an upstream or a tangent) has another dtype or
    shape than ``reference`` (its target or primal), else None."""
    import tensorflow as tf

    if not isinstance(given, tf.Tensor) or not isinstance(reference, (tf.Tensor, tf.Variable)):
        return None
    if given.dtype != reference.dtype:
        code = (
            "float32_not_float64"
            if (given.dtype.name, reference.dtype.name) == ("float32", "float64")
            else "wrong_dtype"
        )
        return Wrong(
            f"The {what} is {given.dtype.name}, but its {other} is {reference.dtype.name}: "
            f"{noun} has its {other}'s dtype. tf.one_hot, tf.ones and tf.constant make float32 "
            f"unless given dtype=...: {fix}",
            code,
        )
    if tuple(given.shape) != tuple(reference.shape):
        code = "upstream_shape" if "upstream" in noun else "tangent_shape"
        return Wrong(
            f"The {what} has shape {tuple(given.shape)}, but its {other} has shape "
            f"{tuple(reference.shape)}: it needs one entry per entry of the {other}. Build it "
            f"from the {other}'s shape, not from a number typed in (reshape a one-hot vector "
            f"of tf.size entries to that shape).",
            code,
        )
    return None


def why_it_raised(log) -> Wrong | None:
    """The learner's error (or None result) explained by the tape or accumulator call
    behind it: a second gradient of a tape that is not persistent, an upstream or tangent
    of another dtype or shape than its target or primal, a jvp of a value computed
    outside the accumulator's block."""
    for call in log.calls:
        if call.error is None:
            continue
        if isinstance(call.error, RuntimeError) and not call.tape.persistent:
            return Wrong(NOT_PERSISTENT, "not_persistent")
        found = _mismatch(
            "upstream you passed as output_gradients",
            "an upstream",
            call.upstream,
            "target",
            call.target,
            "pass dtype=y.dtype.",
        )
        if found is not None:
            return found
    for accumulator in log.accumulators:
        for primal, tangent in zip(accumulator.primals, accumulator.tangents):
            found = _mismatch(
                "tangent you gave ForwardAccumulator",
                "a tangent",
                tangent,
                "primal",
                primal,
                "pass dtype=x.dtype.",
            )
            if found is not None:
                return found
        if any(result is None for result in accumulator.jvp_results):
            return Wrong(
                "acc.jvp(y) returned None: the accumulator saw no path from its primal to y. "
                "Only what runs inside `with tf.autodiff.ForwardAccumulator(primals=x, "
                "tangents=v) as acc:` is tracked: compute y = f(x) inside that block.",
                "computed_outside",
            )
    return None


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
