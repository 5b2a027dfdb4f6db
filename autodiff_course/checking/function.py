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
  also demands that ``dy`` was worked out by hand (not the result of a tape, of a
  differentiation with respect to the output, or of ``tf.test.compute_gradient``), that
  it is not all ones, and that the answer returns what that call gave (no factor
  multiplied in afterwards);
* ``nested``: an inner tape's gradient computed while an outer tape records;
* ``forward_mode``: ``tf.autodiff.ForwardAccumulator`` and no reverse mode;
* ``forbid``: ``"jacobian"`` (no ``tape.jacobian``/``batch_jacobian``) or
  ``"gradcheck"`` (not the course's own finite differences);
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

A ``None`` gradient, or an error it caused, is explained from what the tapes saw,
in the lesson's words (``cause_names``), with the tape.gradient call it came from when
there were several; zeros that ``unconnected_gradients=ZERO`` put in place of a None,
and float32 arithmetic inside a float64 answer that is close, explain any wrong part.
Statefulness: the first probe is called again after all the others and must give the
same parts, and a fresh probe of its shape and dtype must not give back an earlier
call's numbers.
"""

from __future__ import annotations

import zlib
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
from .harness import same_parts
from .judging import matches
from .provenance import missing
from .provenance import run_answer
from .verdicts import Wrong


def _tensor_of(probe):
    import tensorflow as tf

    return (tf.constant(np.asarray(probe.x, dtype=probe.dtype)),)


def one_tensor(value, probe, exercise, name: str) -> dict:
    """What came back as one tensor of the reference's shape and the probe's dtype (for a
    ``numpy`` harness, an array of that shape)."""
    shape = exercise.expected(probe)[exercise.harness.main].shape
    numpy = getattr(exercise.harness, "numpy", False)
    dtype = None if numpy else probe.dtype
    found = as_values(value, name=name, shape=shape, dtype=dtype, require_tensor=not numpy)
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
    names: tuple = ()
    wrt: tuple = ()
    numpy: bool = False
    upstream: int | None = None
    scalars: tuple = ()
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
        found += [named.get(item, f"no {item}") for item in self.forbid]
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
            "names": (
                self.sources(probe, arguments)
                if self.sources is not None
                else list(zip(arguments, self.names))
            ),
            "state": self.state(arguments) if self.state is not None else {},
        }
        return self.run(answer, arguments), arguments, handed

    def run(self, answer, arguments):
        """The answer called on ``arguments``; a NumPy array among them it changed is a
        verdict (once it has not raised)."""
        kept = [np.array(a) if isinstance(a, np.ndarray) else None for a in arguments]
        run = run_answer(answer, *arguments, name=self.name)
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

    def observe(self, answer, probe, exercise) -> Observation:
        run, arguments, handed = self.call(answer, probe)
        return self.observation(run, arguments, handed, answer, probe, exercise)

    def observation(self, run, arguments, handed, answer, probe, exercise) -> Observation:
        """What the call ``run`` on ``arguments`` gave, once every demand is met."""
        log, names = run.log, handed["names"]
        self.differentiated_by(log, arguments)
        kept = [v for variables in handed["state"].values() for v in variables]
        explain = dict(cause_names=self.cause_names, originals=kept)
        explained = missing(run, names, **explain)
        if explained is not None:
            raise Wrong(explained[1], explained[0], point=_which_call(log))
        if run.raised is not None:
            raise _output_gradients_shape(log) or run.raised
        self.demand(log)
        self.shaped_like_the_product(run.value, probe, exercise)
        self.one_number(run.value, probe, exercise)
        parts = self.parts(run.value, handed, probe, exercise)
        hidden = missing(run, names, hidden=True, **explain) if log.used_zero_option else None
        if hidden is None and probe.dtype == "float64" and run.provenance.narrowed_to_float32():
            expected = exercise.expected(probe)
            if all(_close_on_the_whole(parts[p], e, 1e-4) for p, e in expected.items()):
                hidden = ("float32_not_float64", FLOAT32_INSIDE)
        pending = (
            self.kind_of_value(run.value)
            or self.dy_applied_by_the_tape(log, run.value)
            or self._without_tape(log, parts, probe, exercise)
        )
        return Observation(
            parts,
            log,
            details={"run": run, "arguments": arguments, "answer": answer},
            pending=pending,
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

    @property
    def generates(self) -> tuple:
        found = ("forgot_upstream",) if self.upstream is not None else ()
        return found + tuple(mistake.code for mistake in self.scalars)

    def generated(self, case) -> list:
        return forgot_upstream(case) if self.upstream is not None else []

    def diagnose(self, case):
        if self.upstream is None or case.observation is None or case.probe.upstream is None:
            return None
        answer = case.observation.details["answer"]

        def row(unit):
            probe = case.probe.but(upstream=unit)
            run = self.run(answer, self.arguments(probe))
            if run.raised is not None:
                raise run.raised
            return self.read(run.value, probe, case.exercise, self.name)[case.part]

        return linear_in_upstream(case, row)

    def demand(self, log) -> None:
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
        self.fresh_values(answer, seen, exercise)

    def fresh_values(self, answer, seen, exercise) -> None:
        """A fresh probe of the first one's shape and dtype, called last and judged like
        any other: an answer that remembers its results per shape gives itself away."""
        from .judge import judge_probe
        from .judge import repeats_an_earlier_call

        first = seen[0][0]
        seed = 0 if first.x is None else zlib.crc32(np.asarray(first.x, np.float64).tobytes())
        rng = np.random.default_rng([seed, 7])
        for _ in range(32):  # draws until one has a probe of that shape (sizes are drawn too)
            fresh = [
                p for p in exercise.draw(rng) if (p.dtype, p.shape) == (first.dtype, first.shape)
            ]
            if fresh:
                run, arguments, handed = self.call(answer, fresh[0])
                if run.raised is None:  # its numbers first: a cache calls no tape
                    try:
                        parts = self.parts(run.value, handed, fresh[0], exercise)
                    except Wrong:
                        parts = {}
                    repeats_an_earlier_call(exercise, seen, fresh[0], Observation(parts))
                observation = self.observation(run, arguments, handed, answer, fresh[0], exercise)
                judge_probe(exercise, fresh[0], observation, labelled=True)
                return

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
        "output_gradients_shape",
    )


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
