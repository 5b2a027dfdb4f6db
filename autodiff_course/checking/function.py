"""The harness for a function the check calls directly, run under the learner's own tapes
(lessons 00, 01, 02, 04 and 05).

The check builds the arguments from the probe: ``arguments(probe)``, or ``arguments``
names the probe's fields to pass (by default ``("x",)``), arrays as tensors of the probe's
dtype, anything else (a function to differentiate) as it is, and a None is then named
after the field it came from. It calls the answer while noting every tape,
accumulator and operation it uses (:mod:`.observing`, and with ``provenance`` the whole
run, :mod:`.provenance`), and reads what came back with ``read`` (by default one tensor
of the reference's shape and the probe's dtype), then the variables ``state(arguments)``
names, ``{part: [variables]}``, which the answer must update in place. Method flags say
what the exercise demands (:class:`~.differentiating.Demands` lists them); ``forbid`` may
map each name to the reason the hint ends with. With ``upstream``, the index of the
argument that is the probe's upstream (an answer linear in it, such as a vector-Jacobian
product), the harness reads the matrix the answer uses, one unit upstream at a time, to
name what its numbers alone cannot (:func:`~.harness.linear_in_upstream`).

A method verdict waits for the exercise's own mistakes (the judge's order), and so does
``nested`` for a wrong result: an answer that nests no tapes has usually computed
something simpler, which those mistakes name exactly. A ``None`` gradient that breaks
the answer (it returns None or raises) is explained from what the tapes saw, in the
lesson's words (``cause_names``); a ``None`` where the reference is zero is a true zero,
and the hint asks for zeros. What else the record shows is evidence only when the result
is wrong (:mod:`.function_diagnosis`; ``steps``, ``probe -> {name: values}``, are what
the tapes compute on the way). The answer runs once without the check's own recording (a
third of the cost), and again with it only where a None or a wrong result needs
explaining. ``raised(wrong, probe)`` may put a structural verdict (an error, a shape) in
the exercise's words, from what the probe is (lesson 05: an x of rank 3).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import as_values
from .answers import shape_of
from .differentiating import Demands
from .differentiating import why_it_raised
from .function_diagnosis import STRUCTURAL_NONE
from .function_diagnosis import Diagnosis
from .function_diagnosis import _which_call
from .harness import Harness
from .harness import Observation
from .harness import _drawn_like
from .harness import _logged
from .harness import keeps_state
from .harness import named_shape
from .harness import own_state
from .harness import same_again
from .jacobian_rows import jacobians_row_by_row
from .judge import judge_probe
from .judge import repeats_an_earlier_call
from .judge import wrong_shape
from .provenance import missing
from .provenance import needs_provenance
from .provenance import run_answer
from .provenance import unconnected_zeros
from .verdicts import Wrong

FORBIDDEN = {  # how the docstring says what ``forbid`` names
    "jacobian": "no tape.jacobian",
    "accumulator": "no ForwardAccumulator",
    "gradcheck": "none of the course's own gradcheck helpers",
}


def _fields(probe, names) -> tuple:
    """The probe's fields ``names``: arrays as tensors of the probe's dtype."""
    import tensorflow as tf

    values = [getattr(probe, name) for name in names]
    return tuple(
        tf.constant(np.asarray(v, dtype=probe.dtype)) if isinstance(v, (np.ndarray, float)) else v
        for v in values
    )


def one_tensor(value, probe, exercise, name: str) -> dict:
    """What came back as one tensor of the probe's dtype (a shape the exercise names as a
    mistake, :class:`~.spec.Shape`, first; any other shape is judged after; for a
    ``numpy`` harness, an array)."""
    named_shape(value, probe, exercise)
    numpy = getattr(exercise.harness, "numpy", False)
    dtype = None if numpy else probe.dtype
    found = as_values(value, name=name, dtype=dtype, require_tensor=not numpy)
    return {exercise.harness.main: found}


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
    _swapped_entries(value, expected)
    return {
        key: as_values(value[key], name=f"The entry {key!r}", shape=want.shape, dtype=probe.dtype)
        for key, want in expected.items()
    }


def _swapped_entries(value, expected) -> None:
    """Two entries that hold each other's shapes (and not their own): keys swapped."""
    shapes = {str(k): tuple(getattr(v, "shape", np.shape(v))) for k, v in value.items()}
    for a, b in itertools.combinations(sorted(expected), 2):
        want = (expected[b].shape, expected[a].shape)
        if want[0] != want[1] and (shapes[a], shapes[b]) == want:
            raise Wrong(
                f"The entries {a!r} and {b!r} hold each other's shapes: the gradients are "
                f"stored under swapped keys. Pass the dict itself as the sources, and the "
                "gradients come back under the right keys.",
                "wrong_keys",
            )


def negated(probe):
    """The probe with ``x`` negated and rolled by one place: new values, same shape."""
    return probe.but(x=-np.roll(probe.x, 1)) if probe.x is not None else None


@dataclass(frozen=True)
class Function(Demands, Diagnosis, Harness):
    name: str = "Your function"
    arguments: Callable | tuple = ("x",)
    read: Callable = one_tensor
    by_hand: bool = False
    output_gradients: bool | str = False
    nested: bool = False
    forward_mode: bool = False
    forbid: tuple | Mapping = ()
    tape: bool = False
    record_once: str = ""
    whole_batch: str = ""
    cause_names: Mapping = field(default_factory=dict)
    sources: Callable | None = None
    state: Callable | None = None
    names: tuple = ()
    wrt: tuple = ()
    numpy: bool = False
    upstream: int | None = None
    scalars: tuple = ()
    steps: Callable | None = None
    vary: Callable | None = None
    main: str = "value"
    nouns: Mapping = field(default_factory=lambda: {"value": "your result"})
    raised: Callable | None = None

    def describe(self) -> str:
        forbidden = [FORBIDDEN.get(item, f"no {item.replace('_', ' ')}") for item in self.forbid]
        flags = (
            (self.by_hand, "by hand: no tape, accumulator or tf.test.compute_gradient"),
            (self.output_gradients, "tape.gradient with output_gradients"),
            (
                self.output_gradients == "by_hand",
                "a dy worked out by hand (not by a tape), the tape's result returned",
            ),
            (self.nested, "nested tapes"),
            (self.forward_mode, "forward mode (ForwardAccumulator) only"),
            (self.numpy, "a NumPy array back, the arrays passed in left unchanged"),
            *((True, text) for text in forbidden),
            (self.tape, "a tf.GradientTape computed it"),
            (self.record_once, "each function it is given recorded once"),
            (self.whole_batch, "the functions it is given called on the whole batch"),
        )
        found = [text for flag, text in flags if flag]
        return "; ".join(found) + "." if found else "any method."

    def arguments_of(self, probe) -> tuple:
        """What the answer is called with: ``arguments(probe)``, or the probe's fields."""
        if callable(self.arguments):
            return self.arguments(probe)
        return _fields(probe, self.arguments)

    def call(self, answer, probe, record: bool = True, like: tuple | None = None):
        """``(run, arguments, handed)``: the answer called on the probe's arguments
        (``record``: with the check's own tape and every operation, to explain a None),
        and what they held before the call: ``names`` (the tensors handed over, each with
        the name the exercise gives it), ``state`` (the variables to update in place, so
        that an answer that rebinds a dict entry cannot change them) and ``calls`` (its
        calls of the functions among them). The run notes which of the answer's own state
        the call changed (``run.changed``). ``like``: an earlier call's arguments, whose
        functions and layers are handed over again (the same objects, with new values)."""
        arguments = self.arguments_of(probe)
        if like is not None:
            arguments = tuple(
                old if callable(old) and callable(new) else new for old, new in zip(like, arguments)
            )
        handed = {
            "names": self._names(probe, arguments),
            "state": self.state(arguments) if self.state is not None else {},
            "calls": [],
        }
        given = tuple(_logged(a, handed["calls"]) if callable(a) else a for a in arguments)
        before = own_state(answer)
        run = self.run(answer, arguments, record, given=given)
        after = own_state(answer)
        run.changed = [name for name in after if after[name] != before.get(name)]
        return run, arguments, handed

    def _names(self, probe, arguments) -> tuple:
        if self.sources is not None:
            return self.sources(probe, arguments)
        if self.names:
            return tuple(zip(arguments, self.names))
        if callable(self.arguments):
            return ()
        return tuple((a, n) for a, n in zip(arguments, self.arguments) if hasattr(a, "dtype"))

    def light_call(self, answer, probe, like: tuple | None = None):
        """The call without recording, and again recorded where something is missing."""
        found = self.call(answer, probe, record=False, like=like)
        return self.call(answer, probe, like=like) if needs_provenance(found[0].log) else found

    def run(self, answer, arguments, record: bool = True, given=None):
        """The answer called on ``arguments`` (or ``given``, the same with its functions
        logged); a NumPy array among them it changed is a verdict (once it has not
        raised)."""
        kept = [np.array(a) if isinstance(a, np.ndarray) else None for a in arguments]
        with jacobians_row_by_row():
            run = run_answer(answer, *(given or arguments), name=self.name, record=record)
        for index, (argument, before) in enumerate(zip(arguments, kept)):
            if run.raised is not None or before is None:
                continue
            if not np.array_equal(argument, before, equal_nan=True):
                raise Wrong(
                    f"{self.name} changed the array {self._called(index)} it received: "
                    "after the call its values are not what they were (a coordinate moved "
                    "in place and not put back also shifts every later step). Leave it "
                    "alone: build new arrays (x + step, x.copy()) and change those.",
                    "mutated_input",
                )
        return run

    def _called(self, index: int) -> str:
        return self.names[index] if index < len(self.names) else f"number {index + 1}"

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
        run, arguments, handed = self.light_call(answer, probe)
        try:
            return self.observation(run, arguments, handed, answer, probe, exercise)
        except Wrong as wrong:
            raise (self.raised and self.raised(wrong, probe)) or wrong from None

    def _explain(self, run, handed, **flags):
        kept = [v for variables in handed["state"].values() for v in variables]
        return missing(run, handed["names"], cause_names=self.cause_names, originals=kept, **flags)

    def _led(self, code, text):
        """``(code, text)`` with the lesson's name for the cause first (``cause_names``)."""
        lead = self.cause_names.get(code)
        return code, f"{lead}. {text}" if lead and not text.startswith(lead) else text

    def observation(self, run, arguments, handed, answer, probe, exercise) -> Observation:
        """What the call ``run`` on ``arguments`` gave, once every demand but the method
        is met (a method verdict waits for the exercise's own mistakes)."""
        log = run.log
        self.differentiated_by(log, arguments)
        explained = self._explain(run, handed) if run.provenance is not None else None
        if explained is not None and (run.raised is not None or _holds_none(run.value)):
            code, text = explained
            if code in ("no_gradient", "source_not_used") and not np.any(
                exercise.expected(probe)[self.main]
            ):
                raise Wrong(STRUCTURAL_NONE.format(label=probe.label), "structural_none")
            raise Wrong(text, code, point=_which_call(log))
        zeros = unconnected_zeros(run, handed["names"]) if run.provenance is not None else None
        if zeros is not None:
            raise Wrong(*reversed(self._led(*zeros)))
        if run.raised is not None or run.value is None:
            found = why_it_raised(log)
            if found is not None or run.raised is not None:
                raise found or run.raised
        try:
            self.demand(log, handed["calls"])
            method = None
        except Wrong as wrong:
            method = wrong  # waits for the exercise's own mistakes (see the judge)
        self.shaped_like_the_product(run.value, probe, exercise)
        self.one_number(run.value, probe, exercise)
        try:
            parts = self.parts(run.value, handed, probe, exercise)
        except Wrong as wrong:  # zeros in place of a None explain what was read wrong
            if not log.used_zero_option:
                raise
            recorded, _, kept = (
                self.call(answer, probe) if run.provenance is None else (run, 0, handed)
            )
            raise self._hidden_none(recorded, kept) or wrong from None
        for part, want in exercise.expected(probe).items():
            if part in parts and np.shape(parts[part]) != want.shape:
                raise wrong_shape(exercise, probe, parts[part], self.name, part=part, method=method)
        pending = (
            self.kind_of_value(run.value)
            or self.dy_applied_by_the_tape(log, run.value)
            or self._without_tape(log, parts, probe, exercise)
            or self._not_nested(log)
        )
        details = {"run": run, "handed": handed, "missing": explained, "answer": answer}
        details.update(arguments=arguments, recorded=lambda: self.call(answer, probe))
        return Observation(parts, log, details=details, pending=pending, method=method)

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

    def shaped_like_the_product(self, value, probe, exercise) -> None:
        """With ``upstream``: a result of the shape of the whole Jacobian, or of the
        upstream, where the product has another shape."""
        if self.upstream is None or probe.upstream is None:
            return
        shape, up = shape_of(value), np.shape(probe.upstream)
        want = exercise.expected(probe)[self.main].shape
        jacobian = (*up, *want)
        if shape in (jacobian, jacobian[::-1]) and 1 not in jacobian and shape != want:
            raise Wrong(
                f"{self.name} returned shape {shape}: a whole Jacobian (or a matrix scaled row "
                f"by row). The vector-Jacobian product contracts it with the upstream: shape "
                f"{want}, one number per input.",
                "returned_jacobian",
            )
        if shape == up and up != want:
            raise Wrong(
                f"{self.name} returned shape {shape}, the upstream's, where the product has "
                f"the input's shape {want}: the upstream goes back through the transpose of "
                "the Jacobian (for a matrix W, tf.linalg.matvec(W, u, transpose_a=True)).",
                "no_transpose",
            )

    def one_number(self, value, probe, exercise) -> None:
        """With ``scalars``: one number came back where the answer has several, and it is
        what one of ``scalars`` (mistakes that give one number) gives."""
        if not self.scalars or exercise.expected(probe)[self.main].size < 2:
            return
        if not isinstance(value, (float, int, np.generic)) and shape_of(value) != ():
            return
        try:
            got = float(np.asarray(value, dtype=np.float64))
        except Exception:  # noqa: BLE001 - not a number: as_values names it
            return
        for mistake in self.scalars:
            if np.isclose(got, float(mistake.gives(probe)), rtol=1e-6, atol=1e-12):
                raise Wrong(mistake.hint, mistake.code)

    def _again(self, answer, probe, exercise) -> dict:
        run, _, handed = self.call(answer, probe, record=False)
        try:
            if run.raised is not None:
                raise run.raised
            return self.parts(run.value, handed, probe, exercise)
        except Wrong:
            return {}

    def statefulness(self, answer, seen, exercise) -> None:
        """A first call that changed the answer's own state (its defaults, attributes,
        closure, globals) while later calls did not is named; after the others, the first
        probe again must give the same parts, and new values of its shape (a fresh draw, or
        ``vary(probe)``, such as :func:`negated`) must give their own answer."""
        first_changed, *later = [o.details["run"].changed for _, o in seen] or [[]]
        if first_changed and not any(later):
            raise Wrong(
                f"{self.name} gives the right numbers here, but its first call changed "
                f"{', '.join(first_changed)} and later calls did not: a value set once and "
                "kept (a cache, a size of the first input) goes wrong as soon as later "
                "arguments differ enough. Compute everything from the call's own arguments.",
                "keeps_state",
            )
        if not seen:
            return
        probe, first = seen[0]
        if len(seen) > 1:
            same_again(self.name, first.parts, self._again(answer, probe, exercise))
        other = self.vary(probe) if self.vary is not None else None
        # A varied probe keeps the first one's functions: the same objects, new values (an
        # answer that caches its result per function or layer shows).
        like = first.details.get("arguments") if other is not None else None
        other = other if other is not None else _drawn_like(probe, exercise)
        if other is None:
            return
        first_verdict = self._judged_once(answer, other, like, exercise, seen)
        if first_verdict is None:
            return
        if first_verdict.mistake == "keeps_state":  # a result repeated from an earlier call
            raise first_verdict
        # Wrong on these values whenever it meets them, with a verdict that names a
        # mistake: the values show it, not state kept from earlier calls.
        again = self._judged_once(answer, other, like, exercise, seen)
        named = first_verdict.mistake != self.fallback_code(self.main)
        if named and again is not None and again.message == first_verdict.message:
            raise first_verdict
        raise keeps_state(
            self.name,
            "called after the others with new values of the first probe's shape, it "
            "returned numbers that are not their answer",
        )

    def _judged_once(self, answer, other, like, exercise, seen) -> Wrong | None:
        """The verdict on ``other`` called now (a repeat of an earlier result is
        ``keeps_state``), None if right."""
        run, arguments, handed = self.light_call(answer, other, like=like)
        try:
            if run.raised is None:  # its numbers first: a cache calls no tape
                try:
                    parts = self.parts(run.value, handed, other, exercise)
                except Wrong:
                    parts = {}
                repeats_an_earlier_call(exercise, seen, other, Observation(parts))
            observation = self.observation(run, arguments, handed, answer, other, exercise)
            judge_probe(exercise, other, observation, labelled=True)
        except Wrong as wrong:
            return wrong
        return None

    def verified(self, exercise, probes) -> list:
        found = [self.describe().rstrip(".")] if self.describe() != "any method." else []
        if self.state is not None:
            found.append("the variables handed over were updated in place")
        return [
            *found,
            "called again after the others, it gave the same result; other numbers of the "
            "first probe's shape got their own answer",
        ]


def _holds_none(value) -> bool:
    """None, or a dict, list or tuple with a None in it: an answer broken by a None."""
    if isinstance(value, Mapping):
        value = list(value.values())
    return any(v is None for v in value) if isinstance(value, (list, tuple)) else value is None
