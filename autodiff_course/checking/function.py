"""The harness for a function the check calls directly, run under the learner's own tapes
(lessons 00, 01, 02, 04 and 05).

The check builds the arguments from the probe: ``arguments(probe)``, or ``arguments``
names the probe's fields to pass (by default ``("x",)``), arrays as tensors of the probe's
dtype, anything else (a function to differentiate) as it is, and a None is then named
after the field it came from. It calls the answer while noting every tape,
accumulator and operation it uses (:mod:`.observing`, and with ``provenance`` the whole
run, :mod:`.provenance`), and reads what came back with ``read`` (by default one tensor
of the reference's shape and the probe's dtype). Method flags say what the exercise
demands:

* ``by_hand``: no tape, accumulator or ``tf.test.compute_gradient``;
* ``output_gradients``: ``tape.gradient(..., output_gradients=dy)``; ``"by_hand"``
  also demands that ``dy`` was worked out by hand (not the result of a tape, of a
  differentiation with respect to the output, or of ``tf.test.compute_gradient``), that
  it is not all ones, and that the answer returns what that call gave (no factor
  multiplied in afterwards);
* ``nested``: an inner tape's gradient computed while an outer tape records;
* ``forward_mode``: ``tf.autodiff.ForwardAccumulator`` and no reverse mode;
* ``forbid``: ``"jacobian"`` (no ``tape.jacobian``/``batch_jacobian``),
  ``"gradcheck"`` (not the course's own finite differences),
  ``"finite_differences"`` (a wrong result near the answer from code that used no
  automatic differentiation is named an estimate, before anything else) or
  ``"accumulator"`` (no ``ForwardAccumulator``);
* ``record_once``: each function the check hands over (``f``, ``layer``) is recorded at
  most once by the answer's tapes; the text says what to do instead;
* ``whole_batch``: those functions mix the examples of their batch, so a wrong result
  from calling one on part of the batch is named (the text says why);
* ``tape``: a ``tf.GradientTape`` computed it (the right numbers without one are
  *not yet*, and close ones are named finite differences);
* ``wrt``: the names (in ``names``, the answer's parameters, which also name a missing
  gradient's source unless ``sources`` does) of the arguments the exercise differentiates
  with respect to; a tape asked about another argument is ``wrong_source``;
* ``numpy``: the answer works in NumPy and returns an array (a list, a tuple or a tensor
  of the right numbers is named once the numbers are right);
* ``scalars``: :class:`~.spec.Mistake` that give one number (the loss for its gradient,
  a slope along the diagonal), named when one number comes back where the answer has
  several.

Whatever the flags, a NumPy array handed to the answer must come back unchanged, and an
error raised by ``tape.gradient`` over an ``output_gradients`` of another shape than its
target is named as that. With ``upstream``, the index of the argument that is the
probe's upstream (an answer linear in it, such as a vector-Jacobian product), the harness
generates ``forgot_upstream`` and reads the matrix the answer uses, one unit upstream at a
time, to name what its numbers alone cannot (:func:`~.harness.linear_in_upstream`).

``state(arguments)`` names the variables the answer must update in place,
``{part: [variables]}``: they are read back after the call as those parts (the very
objects handed over, so a dict entry rebound to a new variable shows), and a gradient
lost by rebinding one is named ``variable_replaced``.

``forbid`` may map each name to the reason the hint ends with. A method verdict waits
for the exercise's own mistakes (the judge's order); every call of a function the check
hands over is noted (:class:`FunctionCall`). A result of another shape is judged by
:func:`~.judge.wrong_shape`. An error raised by a tape or accumulator given a wrong
upstream or tangent, or a second gradient of a tape that is not persistent, is named.
``nested`` is
judged after the exercise's own mistakes when the result is wrong (an answer that nests
no tapes has usually computed something simpler, which those mistakes name exactly).

A ``None`` gradient that breaks the answer (it returns None or raises) is explained from
what the tapes saw, in the lesson's words (``cause_names``), with the tape.gradient call
it came from when there were several; a ``None`` where the reference is zero is a true
zero, and the hint asks for zeros. A ``None`` the answer went on without, zeros that
``unconnected_gradients=ZERO`` put in its place, a variable rebound instead of updated,
and float32 arithmetic inside a float64 answer are evidence only when the result is
wrong: a result of zeros is evidence of a cut path only when the tapes' record shows the
cut. When the result is wrong, the re-run diagnostics read the tapes' record: an outer
tape that differentiated a result made before the inner gradient (the function again),
or ``steps`` (``probe -> {name: values}``, what the tapes compute on the way) all
computed right and combined into the wrong result.

The answer runs once without the check's own recording (a third of the cost), and again
with it only where a None or a wrong result needs explaining. Statefulness: a first call
that changed the answer's own state (its defaults, attributes, closure, globals) while
later calls did not is named; after all the others, the first probe again must give the
same parts, and new values of its shape (a fresh draw of that shape and dtype, or
``vary(probe)``, such as :func:`negated`) must give their own answer.
"""

from __future__ import annotations

import functools
import zlib
from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import astuple
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .answers import as_values
from .answers import shape_of
from .differentiating import forbid_jacobian
from .differentiating import require_by_hand
from .differentiating import require_forward_mode
from .differentiating import require_nested
from .differentiating import require_output_gradients
from .harness import Harness
from .harness import Observation
from .harness import forgot_upstream
from .harness import keeps_state
from .harness import linear_in_upstream
from .harness import named_shape
from .harness import same_parts
from .judge import wrong_shape
from .judging import matches
from .judging import worst_point
from .observing import recording
from .patterns import only_float32_digits
from .provenance import missing
from .provenance import needs_provenance
from .provenance import run_answer
from .provenance import unconnected_zeros
from .verdicts import Wrong

FORBIDDEN = {
    "jacobian": "tape.jacobian",
    "accumulator": "ForwardAccumulator",
    "gradcheck": "course finite-difference helper",
}
STRUCTURAL_NONE = (
    "Your function returned None (or failed on it) for {label}, where the answer is zero "
    "everywhere. That None is no mistake of the tapes: the target does not depend on the "
    "source at all, so no path leads back to it. The exercise asks for zeros there: pass "
    "unconnected_gradients=tf.UnconnectedGradients.ZERO to that gradient call."
)
ZEROS_FOR_NONE = (
    "Your function returned zeros where a tape returned None, so the zeros hide a mistake. "
)
WENT_ON = "A tape returned None, and your function went on without it. "
OUTER_AGAIN = (
    "Your outer tape differentiated a result computed before the inner gradient (the "
    "function itself?), so it returned a first derivative again. It must differentiate "
    "the inner tape's gradient, or what you compute from it inside the outer block."
)
FORWARD_OVER_REVERSE = (
    "Your function used a ForwardAccumulator around the gradient (forward over reverse). "
    "This exercise asks for reverse over reverse: nested GradientTapes, the outer one "
    "differentiating what you compute from the inner gradient."
)


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
    for a in expected:
        for b in expected:
            own = shapes[a] == expected[a].shape or shapes[b] == expected[b].shape
            if (
                a < b
                and not own
                and (shapes[a], shapes[b]) == (expected[b].shape, expected[a].shape)
            ):
                raise Wrong(
                    f"The entries {a!r} and {b!r} hold each other's shapes: the gradients are "
                    f"stored under swapped keys. Pass the dict itself as the sources, and the "
                    "gradients come back under the right keys.",
                    "wrong_keys",
                )


FLOAT32_INSIDE = (
    "Your result is float64, but only about as precise as float32: part of the computation "
    "ran in float32 (a tf.cast(..., tf.float32), or a constant made with dtype=tf.float32, "
    "converted back afterwards; a Keras optimizer keeps its learning rate in float32). Keep "
    "every step in the input's dtype."
)


def negated(probe):
    """The probe with ``x`` negated and rolled by one place: new values, same shape."""
    return probe.but(x=-np.roll(probe.x, 1)) if probe.x is not None else None


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

    def noun(self, part: str) -> str:
        return self.nouns.get(part, f"your {part}")

    def describe(self) -> str:
        found = []
        if self.by_hand:
            found.append("by hand: no tape, accumulator or tf.test.compute_gradient")
        if self.output_gradients:
            found.append("tape.gradient with output_gradients")
        if self.output_gradients == "by_hand":
            found.append("a dy worked out by hand (not by a tape), the tape's result returned")
        if self.nested:
            found.append("nested tapes")
        if self.forward_mode:
            found.append("forward mode (ForwardAccumulator) only")
        if self.numpy:
            found.append("a NumPy array back, the arrays passed in left unchanged")
        named = {"gradcheck": "none of the course's own gradcheck helpers"}
        found += [
            named.get(item, f"no {FORBIDDEN.get(item, item.replace('_', ' '))}")
            for item in self.forbid
        ]
        if self.tape:
            found.append("a tf.GradientTape computed it")
        if self.record_once:
            found.append("each function it is given recorded once")
        if self.whole_batch:
            found.append("the functions it is given called on the whole batch")
        return "; ".join(found) + "." if found else "any method."

    def arguments_of(self, probe) -> tuple:
        """What the answer is called with: ``arguments(probe)``, or the probe's fields."""
        if callable(self.arguments):
            return self.arguments(probe)
        return _fields(probe, self.arguments)

    def call(self, answer, probe, record: bool = True):
        """``(run, arguments, handed)``: the answer called on the probe's arguments
        (``record``: with the check's own tape and every operation, to explain a None),
        and what they held before the call: ``names`` (the tensors handed over, each with
        the name the exercise gives it), ``state`` (the variables to update in place, so
        that an answer that rebinds a dict entry cannot change them) and ``calls`` (its
        calls of the functions among them). The run notes which of the answer's own state
        the call changed (``run.changed``)."""
        arguments = self.arguments_of(probe)
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

    def light_call(self, answer, probe):
        """The call without recording, and again recorded where something is missing."""
        found = self.call(answer, probe, record=False)
        return self.call(answer, probe) if needs_provenance(found[0].log) else found

    def run(self, answer, arguments, record: bool = True, given=None):
        """The answer called on ``arguments`` (or ``given``, the same with its functions
        logged); a NumPy array among them it changed is a verdict (once it has not
        raised)."""
        kept = [np.array(a) if isinstance(a, np.ndarray) else None for a in arguments]
        run = run_answer(answer, *(given or arguments), name=self.name, record=record)
        for index, (argument, before) in enumerate(zip(arguments, kept)):
            if run.raised is None and before is not None and not _same_array(argument, before):
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
        return self.observation(run, arguments, handed, answer, probe, exercise)

    def _explain(self, run, handed, **flags):
        kept = [v for variables in handed["state"].values() for v in variables]
        found = missing(run, handed["names"], cause_names=self.cause_names, originals=kept, **flags)
        if found is None:
            return None
        return self._led(*found)

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
            if code in ("no_gradient", "source_not_used") and _all_zero(exercise, probe):
                raise Wrong(STRUCTURAL_NONE.format(label=probe.label), "structural_none")
            raise Wrong(text, code, point=_which_call(log))
        zeros = unconnected_zeros(run, handed["names"]) if run.provenance is not None else None
        if zeros is not None:
            raise Wrong(*reversed(self._led(*zeros)))
        if run.raised is not None or run.value is None:
            found = _output_gradients_shape(log) or why_it_raised(log)
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
        details["arguments"], details["calls"] = arguments, handed["calls"]
        details["recorded"] = lambda: self.call(answer, probe)
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

    def differentiated_by(self, log, arguments) -> None:
        """With ``wrt``: no tape was asked about another of the named arguments."""
        others = {id(a): n for n, a in zip(self.names, arguments) if self.wrt and n not in self.wrt}
        for call in log.calls:
            asked = [others[id(s)] for s in call.sources if id(s) in others]
            if asked:
                raise Wrong(
                    f"{self.name} differentiated with respect to {asked[0]}. The exercise "
                    f"asks for the gradient with respect to {' and '.join(self.wrt)}: pass "
                    f"{self.wrt[0]} as the source of tape.gradient.",
                    "wrong_source",
                )

    def kind_of_value(self, value) -> Wrong | None:
        """With ``numpy``: the right numbers, but not as a NumPy array."""
        if not self.numpy or isinstance(value, np.ndarray):
            return None
        if isinstance(value, (list, tuple)):
            return Wrong(
                f"The numbers are right, but {self.name} returned a Python "
                f"{type(value).__name__}; the exercise asks for a NumPy array: np.array(...) "
                "makes one (or fill an array made with np.zeros_like(x)).",
                "returned_list",
            )
        return Wrong(
            f"The numbers are right, but {self.name} returned a {type(value).__name__}; the "
            "exercise works in NumPy and asks for a NumPy array (np.asarray(...) makes one).",
            "wrong_type",
        )

    def dy_applied_by_the_tape(self, log, value) -> Wrong | None:
        """With ``output_gradients="by_hand"``: the right numbers came from the tape's
        ``output_gradients`` call, with a dy other than ones."""
        if self.output_gradients != "by_hand":
            return None
        calls = [c for c in log.calls if c.output_gradients]
        if calls and all(_all_ones(c.upstream) for c in calls):
            return Wrong(
                "The numbers are right, but the output_gradients you passed is all ones, "
                "which is where the tape starts anyway. Pass the upstream gradient itself: "
                "tape.gradient(output, x, output_gradients=dy), with dy = d(loss)/d(output) "
                "worked out by hand.",
                "no_output_gradients",
            )
        if not any(_identical(value, r) for c in calls for r in c.results or ()):
            return Wrong(
                "The numbers are right, but your result is not what "
                "tape.gradient(output, x, output_gradients=dy) returned: something was "
                "computed or multiplied in after it. The exercise lets the tape apply dy: "
                "return the tape's result as it is.",
                "no_output_gradients",
            )
        return None

    def _not_nested(self, log) -> Wrong | None:
        if self.nested:
            try:
                require_nested(log)
            except Wrong as wrong:
                return wrong
        return None

    def recorded(self, case):
        """``(run, handed, explained)`` of the case's probe, recorded (run again if the
        first look was light)."""
        details = case.observation.details
        run, handed, explained = details["run"], details["handed"], details["missing"]
        if run.provenance is None:
            run, _, handed = details["recorded"]()
            explained = self._explain(run, handed)
        return run, handed, explained

    def explained(self, case):
        """For a wrong result: zeros that the recorded run shows in place of a None (from
        ``unconnected_gradients=ZERO``, or from a ``batch_jacobian`` without a path); a
        function that mixes its batch called on part of it; an estimate made without
        automatic differentiation where the exercise forbids finite differences."""
        observation = case.observation
        if observation is not None and needs_provenance(observation.log):
            run, handed, explained = self.recorded(case)
            found = self._hidden_none(run, handed) or self._went_on(case, run, explained)
            if found is not None:
                return found  # a None behind a wrong result explains it before any mistake
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

    def evidence(self, case) -> Wrong | None:
        """For a wrong result, from the recorded run: a None the answer went on without
        (or a variable rebound), float32 arithmetic inside a float64 answer, then the
        nesting the exercise demands."""
        run, handed, explained = self.recorded(case)
        found = self._went_on(case, run, explained)
        return found or self._float32_inside(case, run) or self._not_nested(run.log)

    def _went_on(self, case, run, explained) -> Wrong | None:
        """The recorded run's explanation of a None (or a variable rebound) behind a wrong
        result."""
        if explained is None:
            return None
        code, text = explained
        if code in ("no_gradient", "source_not_used") and not np.any(case.expected):
            return Wrong(STRUCTURAL_NONE.format(label=case.probe.label), "structural_none")
        if code == "variable_replaced":
            return Wrong(text, code)
        lead = ZEROS_FOR_NONE if not np.any(case.got) and np.any(case.expected) else WENT_ON
        return Wrong(lead + text, code, point=_which_call(run.log))

    def _hidden_none(self, run, handed) -> Wrong | None:
        """Zeros that ``unconnected_gradients=ZERO`` put where the record shows a None."""
        if run.log.used_zero_option:
            found = self._explain(run, handed, hidden=True)
            if found is not None and found[0] == "zeros_hide_none":
                return Wrong(found[1], found[0])
        return None

    def _float32_inside(self, case, run) -> Wrong | None:
        """A float64 result close to the answer, from a run that narrowed to float32, where
        the numbers alone do not show float32's digits (the shared pattern names those)."""
        from .judge import float32_digits

        if case.probe.dtype != "float64" or float32_digits(case):
            return None
        if not _close_on_the_whole(case.got, case.expected, 1e-4):
            return None
        if not run.provenance.narrowed_to_float32():
            return None
        return Wrong(FLOAT32_INSIDE, "float32_not_float64")

    @property
    def generates(self) -> tuple:
        found = ("forgot_upstream",) if self.upstream is not None else ()
        return found + tuple(mistake.code for mistake in self.scalars)

    def generated(self, case) -> list:
        return forgot_upstream(case) if self.upstream is not None else []

    def diagnose(self, case) -> Wrong | None:
        """With ``upstream``, the matrix the answer uses, one unit upstream at a time; from
        the tapes' record: the outer tape differentiated the function again, or every step
        was computed right and only combined wrong."""
        if self.upstream is not None and case.probe.upstream is not None:
            answer = case.observation.details["answer"]

            def row(unit):
                probe = case.probe.but(upstream=unit)
                run = self.run(answer, self.arguments_of(probe))
                if run.raised is not None:
                    raise run.raised
                return self.read(run.value, probe, case.exercise, self.name)[case.part]

            found = linear_in_upstream(case, row)
            if found is not None:
                return found
        log = case.observation.log
        for call in log.calls:
            inner = [c.time for c in log.calls if call.tape in c.recording_tapes]
            inner = [time for time in inner if time < call.time]
            made = getattr(call.target, "_id", None)
            if inner and made is not None and made < min(inner):
                return Wrong(OUTER_AGAIN, "wrong_target")
        if self.steps is None:
            return None
        steps = self.steps(case.probe)
        results = _results(log)
        tol = case.tolerance
        for values in steps.values():
            if not any(
                r.shape == np.shape(values)
                and matches(r, values, max(tol.rtol, 1e-9) * 10, tol.atol)
                for r in results
            ):
                return None
        index = worst_point(case.got, case.expected, tol.rtol, tol.atol)
        at = case.at
        where = f"at x = {at[index]:.6g}" if at is not None else f"at index {list(index)}"
        names = " and ".join(steps)
        values = ", ".join(f"{k} = {np.asarray(v)[index]:.6g}" for k, v in steps.items())
        should = case.exercise.describe.get(case.part, "the answer")
        return Wrong(
            f"Your tapes computed {names} correctly, but what your function returns from "
            f"{'them' if len(steps) > 1 else 'it'} is not {should}. For example {where}: "
            f"{values}, so the answer is {case.expected[index]:.6g}, but your function "
            f"returned {case.got[index]:.6g}.",
            "wrong_combination",
        )

    def demand(self, log, calls=()) -> None:
        if "jacobian" in self.forbid:
            forbid_jacobian(log, self._why("jacobian", "build it from tape.gradient calls."))
        if "accumulator" in self.forbid and log.accumulators:
            raise Wrong(FORWARD_OVER_REVERSE, "forward_over_reverse")
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
                "output_gradients came from automatic differentiation (another tape, or "
                "tf.test.compute_gradient): the exercise asks you to work dy out by hand (a "
                "formula of the output and the target), and to let one tape do the rest.",
                "used_tape",
            )
        if self.forward_mode:
            require_forward_mode(log)

    def _why(self, name: str, default: str) -> str:
        return self.forbid.get(name, default) if isinstance(self.forbid, Mapping) else default

    def _again(self, answer, probe, exercise) -> dict:
        run, _, handed = self.call(answer, probe, record=False)
        try:
            if run.raised is not None:
                raise run.raised
            return self.parts(run.value, handed, probe, exercise)
        except Wrong:
            return {}

    def statefulness(self, answer, seen, exercise) -> None:
        """After the others, the first probe again must give the same parts, and new
        values of its shape must give their own answer."""
        from .judge import judge_probe
        from .judge import repeats_an_earlier_call

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
        if len(seen) > 1 and not same_parts(
            first.parts, self._again(answer, probe, exercise), 1e-6, 1e-12
        ):
            raise keeps_state(
                self.name,
                "called again with the first probe's arguments after the others, it "
                "returned other numbers",
            )
        other = self.vary(probe) if self.vary is not None else None
        other = other if other is not None else _drawn_like(probe, exercise)
        if other is None:
            return
        run, arguments, handed = self.light_call(answer, other)
        if run.raised is None:  # its numbers first: a cache calls no tape
            try:
                parts = self.parts(run.value, handed, other, exercise)
            except Wrong:
                parts = {}
            repeats_an_earlier_call(exercise, seen, other, Observation(parts))
        observation = self.observation(run, arguments, handed, answer, other, exercise)
        try:
            judge_probe(exercise, other, observation, labelled=True)
        except Wrong:
            raise keeps_state(
                self.name,
                "called after the others with new values of the first probe's shape, it "
                "returned numbers that are not their answer",
            ) from None

    def verified(self, exercise, probes) -> list:
        found = [self.describe().rstrip(".")] if self.describe() != "any method." else []
        if self.state is not None:
            found.append("the variables handed over were updated in place")
        return [
            *found,
            "called again after the others, it gave the same result; other numbers of the "
            "first probe's shape got their own answer",
        ]


def _drawn_like(probe, exercise):
    """A fresh draw of a probe of ``probe``'s dtype and shape (sizes are drawn too)."""
    seed = 0 if probe.x is None else zlib.crc32(np.asarray(probe.x, np.float64).tobytes())
    rng = np.random.default_rng([seed, 7])
    for _ in range(32):
        for drawn in exercise.draw(rng):
            if (drawn.dtype, drawn.shape) == (probe.dtype, probe.shape):
                return drawn
    return None


def _holds_none(value) -> bool:
    """None, or a dict, list or tuple with a None in it: an answer broken by a None."""
    if isinstance(value, Mapping):
        return any(v is None for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(v is None for v in value)
    return value is None


def _all_zero(exercise, probe) -> bool:
    return not np.any(exercise.expected(probe)[exercise.harness.main])


def _results(log) -> list:
    """Every array a tape's gradient call returned, as float64."""
    found = []
    for call in log.calls:
        for result in call.results or ():
            try:
                found.append(np.asarray(result, dtype=np.float64))
            except Exception:  # noqa: BLE001 - an IndexedSlices or the like: skip it
                continue
    return found


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


def _same_array(now, before) -> bool:
    return now.shape == before.shape and bool(np.array_equal(now, before, equal_nan=True))


def _all_ones(value) -> bool:
    try:
        return bool(np.all(np.asarray(value, dtype=np.float64) == 1.0))
    except Exception:  # noqa: BLE001 - a nested structure: not a dy of ones
        return False


def _identical(a, b) -> bool:
    """The same numbers, to the last bit: the tape's own result, perhaps reshaped or cast
    to its own dtype (the same product computed by hand rounds differently somewhere)."""
    try:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except Exception:  # noqa: BLE001 - not numbers: not the tape's result
        return False
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _output_gradients_shape(log) -> Wrong | None:
    """The learner's error came from tape.gradient over an output_gradients of another
    shape than its target (a dy for the output passed with the loss as target)."""
    failed = next((c for c in reversed(log.calls) if c.error is not None), None)
    if failed is None or not failed.output_gradients:
        return None
    try:
        target, upstream = np.shape(failed.target), np.shape(failed.upstream)
    except Exception:  # noqa: BLE001 - a nested structure: the error speaks for itself
        return None
    if tuple(target) == tuple(upstream):
        return None
    return Wrong(
        f"tape.gradient raised because output_gradients has shape {tuple(upstream)} and the "
        f"target has shape {tuple(target)}: output_gradients is d(loss)/d(target), one entry "
        "per element of the target. To pass dy = d(loss)/d(output), make the output the "
        "target: tape.gradient(output, x, output_gradients=dy).",
        "upstream_shape",
    )


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
    """A call's output_gradients is (numerically) the result of an earlier tape call, or
    was made by differentiating with respect to that call's target, or
    tf.test.compute_gradient ran."""
    if log.compute_gradient_calls:
        return True
    for call in log.calls:
        if not call.output_gradients or call.upstream is None:
            continue
        if any(
            earlier is not call and any(s is call.target for s in earlier.sources)
            for earlier in log.calls
        ):
            return True
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
