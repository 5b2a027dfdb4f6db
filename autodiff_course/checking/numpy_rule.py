"""The harness for a backward rule written in NumPy (lesson 06): arrays in, arrays out.

The check calls the answer as the notebook's tape would, in one of three ways:

* ``rule(upstream, *inputs)`` returns one gradient per input (``gradients`` names them);
* with ``grad_fn``, ``rule(*inputs)`` returns ``(output, grad_fn)``, then the check calls
  ``grad_fn(upstream)``, as the notebook's ``custom_gradient`` does (parts ``value`` and
  the gradients);
* with ``drive(call, probe) -> parts``, the exercise's own loop calls the answer through
  ``call(*arguments)`` (a reverse pass handing it one contribution at a time).

Every call runs as learner code on fresh arrays of the probe's dtype, NumPy's warnings
silenced, and no array handed over may change: a tape still holds it, often twice. Each
part must be a NumPy array (not TensorFlow, not a Tensor of the notebook's tape) of the
reference's shape and the input's dtype, and a gradient that kept the upstream's shape
is named. Generated mistake: a forgotten upstream. Re-run diagnostics: the same
arguments give the same numbers, the result scales with the upstream
(:func:`~.harness.upstream_linearity`), and an ``elementwise`` rule uses each point's
own upstream. Statefulness: other arguments of the same shapes, called before the first
call's gradients are read (two rules before either grad_fn), change nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from . import mistakes
from .answers import call_answer
from .answers import shape_of
from .harness import Harness
from .harness import Observation
from .harness import forgot_upstream
from .harness import keeps_state
from .harness import same_parts
from .harness import upstream_linearity
from .harness import upstreams_seen
from .judging import FLOAT64
from .judging import Tolerance
from .judging import _head
from .judging import tolerance_for
from .probes import signed
from .probes import upstream
from .recording import Provenance
from .recording import record_operations
from .spec import Probe
from .spec import as_dtype
from .verdicts import Wrong

mistakes.register({"summed_to_other_shape": "each gradient summed back to the other input's shape"})


def read_array(value, name: str, shape: tuple, dtype: str) -> np.ndarray:
    """``value`` as float64 once it is a NumPy array (or number) of ``shape`` and ``dtype``."""
    if value is None:
        raise Wrong(f"{name} is None. Did you forget `return`?", "returned_none")
    tensorflow = (type(value).__module__ or "").startswith("tensorflow")
    if tensorflow or (hasattr(value, "value") and not isinstance(value, np.generic)):
        raise Wrong(
            f"{name} is {'a TensorFlow tensor' if tensorflow else 'a Tensor of our tape'}, not "
            "a NumPy array. A rule works on the NumPy arrays it receives, with np. functions.",
            "wrong_type" if tensorflow else "used_tape",
        )
    if not isinstance(value, (np.ndarray, np.generic, int, float)):
        code = "returned_list" if isinstance(value, (list, tuple)) else "wrong_type"
        raise Wrong(f"{name} is a {type(value).__name__}; it should be a NumPy array.", code)
    array = np.asarray(value)
    if array.dtype != np.dtype(dtype):
        narrowed = (array.dtype, dtype) == (np.float32, "float64")
        raise Wrong(
            f"{name} has dtype {array.dtype}, but the input is {dtype}: dtype in, same dtype "
            "out. np.zeros(shape), np.float64(...) and np.float32(...) fix a dtype; "
            "np.zeros_like(x) and plain Python numbers keep x's.",
            "float32_not_float64" if narrowed else "wrong_dtype",
        )
    if array.shape != tuple(shape):
        squeezed = [n for n in array.shape if n != 1] == [n for n in shape if n != 1]
        why = (
            " The numbers may be right, but an axis of size 1 was added or dropped (keepdims, "
            f"np.squeeze, x[:, None]): reshape to {tuple(shape)}."
            if squeezed
            else " A single number came back: was everything summed?"
            if array.shape == ()
            else ""
        )
        raise Wrong(
            f"{name} has shape {array.shape}, but it should have shape {tuple(shape)}.{why}",
            "broadcast_shape" if squeezed else "wrong_shape",
        )
    return array.astype(np.float64)


def pair_probes(rng, plan, output) -> list:
    """Probes for a rule of inputs ``a`` and ``b``: for each ``(words, shape of a, shape of
    b, dtype)`` of ``plan``, values of both signs and an upstream of shape
    ``output(shape_a, shape_b)``, of both signs and never 1."""
    found = []
    for words, shape_a, shape_b, dtype in plan:
        a, b = (as_dtype(signed(rng, shape, 0.6), dtype) for shape in (shape_a, shape_b))
        up = as_dtype(upstream(rng, output(shape_a, shape_b)), dtype)
        label = f"{words}: a {shape_a}, b {shape_b}"
        found.append(Probe(dtype, upstream=up, data={"a": a, "b": b}, label=label))
    return found


def sum_of_terms(reference):
    """The tolerance of gradients whose entries are sums of products (a broadcast multiply,
    a matmul): the dtype's rtol of the sum of the terms' sizes, which is the reference at
    the absolute values of the probe's arrays, so no cancellation fails a right answer."""

    def tolerance(probe, part):
        sizes = probe.but(
            upstream=np.abs(probe.upstream), **{k: np.abs(v) for k, v in probe.data.items()}
        )
        rtol = tolerance_for(probe.dtype).rtol
        return Tolerance(rtol, rtol * float(np.max(reference(sizes)[part])) + FLOAT64.atol)

    return tolerance


def _kind(value) -> str:
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of length {len(value)}"
    return "one NumPy array" if isinstance(value, np.ndarray) else f"a {type(value).__name__}"


def _flipped(value):
    """Other values of the same shape and dtype: negated, and moved by one entry."""
    if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        return value
    return -np.roll(value, 1) if value.ndim else -value


@dataclass(frozen=True)
class NumpyRule(Harness):
    """``name`` names the answer in hints; ``inputs`` the probe fields handed to it (``x``
    is the probe's own), or with ``drive`` the names of its arguments; ``local`` (one text,
    or one per part) the right local derivative, which a rule linear in the upstream but
    wrong is told about: without it no hint blames a local derivative (6.1 is no rule).
    ``raised(wrong, probe)`` may put an error in the exercise's words; ``fix`` says how to
    build a new array."""

    name: str = "Your rule"
    inputs: tuple = ("x",)
    gradients: tuple = ("gradient",)
    grad_fn: bool = False
    drive: Callable | None = None
    elementwise: bool = False
    local: str | Mapping = ""
    fix: str = "build new arrays instead (g = upstream * ..., not upstream *= ...)"
    raised: Callable | None = None
    nouns: Mapping = field(default_factory=dict)
    main: str = ""

    def __post_init__(self):
        if not self.main:
            object.__setattr__(self, "main", "value" if self.grad_fn else self.gradients[0])

    def noun(self, part: str) -> str:
        return self.nouns.get(part, "your output" if part == "value" else f"your {part}")

    def describe(self) -> str:
        how = "rule(x) -> (output, grad_fn); grad_fn(upstream)" if self.grad_fn else "a loop"
        how = how if self.grad_fn or self.drive else f"rule(upstream, {', '.join(self.inputs)})"
        return f"NumPy arrays in and out, in the input's dtype, arguments unchanged; {how}."

    # -- calling and reading --------------------------------------------------------------

    def _call(self, function, names, arguments, probe, handed, label=None):
        """``function(*arguments)`` as learner code; no array handed over may change."""
        handed += [(n, a, a.copy()) for n, a in zip(names, arguments) if isinstance(a, np.ndarray)]
        ran = Provenance(tape=None)
        try:
            with np.errstate(all="ignore"), record_operations(ran):
                result = call_answer(function, *arguments, name=label or self.name)
        except Wrong as wrong:
            raise (self.raised and self.raised(wrong, probe)) or wrong from None
        returned = result if isinstance(result, (tuple, list)) else (result,)
        tensors = any((type(v).__module__ or "").startswith("tensorflow") for v in returned)
        if ran.operations and not tensors:  # (a tensor returned is named as such)
            names = ", ".join(sorted({operation.name for operation in ran.operations})[:3])
            raise Wrong(
                f"{label or self.name} ran TensorFlow operations ({names}), converted back to "
                "NumPy: a rule here works on the NumPy arrays it receives with np. functions "
                "only (np.exp, np.logaddexp, ...), as the rest of this lesson's tape does.",
                "used_tensorflow",
            )
        for name, array, copy in handed:
            if not np.array_equal(array, copy, equal_nan=True):
                raise Wrong(
                    f"{label or self.name} changed `{name}` in place (`+=`, `*=`, out=...). A "
                    "tape still holds every array it hands over, often in two places: the same "
                    "upstream array may be handed to several inputs, so changing it changes "
                    f"them all. {_head(self.fix)}.",
                    "changed_in_place",
                )
        return result

    def _gradients(self, returned, probe, expected, label) -> dict:
        """One NumPy array per input, in order, each of its input's shape and dtype."""
        names, output = self.gradients, np.shape(probe.upstream)
        if returned is None:
            raise Wrong(f"{label} returned None. Did you forget `return`?", "returned_none")
        returned = returned if isinstance(returned, (tuple, list)) or len(names) > 1 else [returned]
        if not isinstance(returned, (tuple, list)) or len(returned) != len(names):
            raise Wrong(
                f"{label} returned {_kind(returned)}. A rule returns one gradient per input, "
                f"each shaped like it: `return {', '.join(names)}`.",
                "not_a_pair" if len(names) == 2 else "wrong_structure",
            )
        shapes = [expected[n].shape for n in names]
        got = [shape_of(g) for g in returned]
        if len(set(shapes)) > 1 and got == shapes[::-1]:
            swapped = all(  # else each was summed to the other input's shape
                np.allclose(np.asarray(g, dtype=float), expected[n], rtol=1e-4)
                for g, n in zip(returned, names[::-1])
            )
            raise Wrong(
                f"{label} returns its gradients in the wrong order: {names[0]} has the shape "
                f"of the second input. Return ({', '.join(names)}), each shaped like its input."
                if swapped
                else f"{label} sums {names[0]} back to the shape of the second input and "
                f"{names[1]} to the first's: each gradient is summed back to its own input's "
                "shape, the shape of the input it is returned for.",
                "reversed_order" if swapped else "summed_to_other_shape",
            )
        for name, shape in ((n, s) for n, s, g in zip(names, shapes, got) if g == output != s):
            raise Wrong(
                f"{name} from {label} has the upstream's shape {output}, not its input's "
                f"{shape}: a gradient always has its input's shape. Broadcasting used each "
                "entry of that input several times: sum the upstream back over the axes "
                "broadcasting added or stretched.",
                "not_summed_back",
            )
        return {
            n: read_array(g, f"{n} from {label}", s, probe.dtype)
            for n, g, s in zip(names, returned, shapes)
        }

    def _declared_shape(self, returned, probe, exercise) -> Wrong | None:
        """A gradient of another shape than its input's that one of the exercise's declared
        mistakes gives, with those numbers (a sum over the wrong axes), named by it."""
        from .judge import wrong_shape

        declared = {item.code for item in exercise.mistakes}
        expected = exercise.expected(probe)
        for name, value in zip(self.gradients, returned):
            if not isinstance(value, np.ndarray) or not np.issubdtype(value.dtype, np.number):
                continue
            if value.shape != expected[name].shape:
                found = wrong_shape(exercise, probe, value, self.name, part=name)
                if found.mistake in declared:
                    return found
        return None

    def _forward(self, answer, probe, handed):
        """``(output, grad_fn)`` from ``rule(*inputs)``, both checked for their kind."""
        if hasattr(answer, "__wrapped__"):
            raise Wrong(
                f"{self.name} is decorated (@custom_gradient above its def). The exercise asks "
                "for the rule itself, the plain function that returns (output, grad_fn): take "
                "the decorator off; the notebook registers the rule afterwards.",
                "rule_decorated",
            )
        arrays = [np.array(getattr(probe, n), dtype=probe.dtype) for n in self.inputs]
        result = self._call(answer, self.inputs, arrays, probe, handed)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            if hasattr(result, "value") and not isinstance(result, (np.ndarray, np.generic)):
                read_array(result, f"What {self.name} returned", (), probe.dtype)  # raises
            raise Wrong(
                f"{self.name} returned {_kind(result)}. Like tf.custom_gradient, a rule returns "
                "two things, the output and the function grad_fn: `return output, grad_fn`.",
                "not_a_pair",
            )
        if not callable(result[1]):
            raise Wrong(
                f"The second thing {self.name} returns should be grad_fn, a function of the "
                f"upstream gradient; it is a {type(result[1]).__name__}.",
                "grad_fn_not_callable",
            )
        return result

    def _backward(self, grad_fn, probe, expected, handed) -> dict:
        up = np.array(probe.upstream, dtype=probe.dtype)
        returned = self._call(grad_fn, ("upstream",), [up], probe, handed, "Your grad_fn")
        return self._gradients(returned, probe, expected, "Your grad_fn")

    def _parts(self, answer, probe, exercise) -> Observation:
        handed, expected, dtype = [], exercise.expected(probe), probe.dtype
        if self.drive is not None:

            def call(*arguments):
                return self._call(answer, self.inputs, arguments, probe, handed)

            parts = self.drive(call, probe).items()
            return Observation(
                {p: read_array(v, self.noun(p), expected[p].shape, dtype) for p, v in parts}
            )
        if not self.grad_fn:
            arrays = [np.array(getattr(probe, n), dtype=dtype) for n in ("upstream", *self.inputs)]
            returned = self._call(answer, ("upstream", *self.inputs), arrays, probe, handed)
            try:
                return Observation(self._gradients(returned, probe, expected, self.name))
            except Wrong as wrong:
                if wrong.mistake not in ("wrong_shape", "not_summed_back"):
                    raise  # a declared mistake of that shape names it first
                raise self._declared_shape(returned, probe, exercise) or wrong from None
        output, grad_fn = self._forward(answer, probe, handed)
        value = read_array(output, f"The output of {self.name}", expected["value"].shape, dtype)
        try:
            return Observation({"value": value, **self._backward(grad_fn, probe, expected, handed)})
        except Wrong as wrong:  # judged once the value is known to be right
            return Observation({"value": value}, pending=wrong.about(probe.label))

    def observe(self, answer, probe, exercise) -> Observation:
        try:
            observation = self._parts(answer, probe, exercise)
        except Wrong as wrong:  # which probe showed it, as for the judge's own verdicts
            raise wrong.about(probe.label) from None

        def again(factor):
            scaled = probe.but(upstream=factor * np.asarray(probe.upstream, dtype=np.float64))
            return self._parts(answer, scaled, exercise).parts

        observation.again = again if probe.upstream is not None else None
        return observation

    # -- what every rule can get wrong -------------------------------------------------------

    def generated(self, case) -> list:
        return forgot_upstream(case) if self.drive is None and case.part in self.gradients else []

    def diagnose(self, case):
        """The same arguments again, then the upstream scaled, then (element-wise) moved."""
        again, up = case.observation.again, case.probe.upstream
        if again is None or case.part == "value":
            return None
        try:
            repeated = again(1.0).get(case.part)
        except Wrong:
            repeated = None
        if repeated is not None and not np.array_equal(repeated, case.got, equal_nan=True):
            return Wrong(
                f"Called a second time with the very same arguments, {self.name} returned "
                f"other numbers for {case.part}: they do not come from its arguments alone "
                "(numbers drawn at random, copied from an earlier run, or kept from an "
                "earlier call). Compute them from the arguments of this call.",
                "not_repeatable",
            )
        local = self.local.get(case.part, "") if isinstance(self.local, Mapping) else self.local
        found = upstream_linearity(case, local_name=local, elementwise=self.elementwise)
        if found is None or found.mistake != "wrong_local_derivative":
            return found
        if not local:
            return None  # not a rule: no local derivative to blame
        factor = np.roll(up, 1) / np.asarray(up, dtype=np.float64)  # each point gets another's
        try:
            moved = again(factor) if self.elementwise and case.got.size > 1 else None
        except Wrong:
            moved = None
        if moved is not None and not same_parts({case.part: factor * case.got}, moved, 1e-4, 1e-12):
            return Wrong(
                f"{_head(case.noun)} uses the upstream of other points: "
                "with the upstream values moved to other points, it did not follow them. The "
                f"gradient at each point is the upstream at that point times {local}: no sum, "
                "mean or reordering of the upstream.",
                "upstream_used_wrongly",
            )
        return found

    def statefulness(self, answer, seen, exercise) -> None:
        """A call of the same shapes but other values (another graph, with ``drive``) made
        before the first call's gradients are read: both must still be right."""
        probe = seen[0][0]
        flipped = {k: _flipped(v) for k, v in probe.data.items()}
        other = (
            seen[-1][0]
            if self.drive
            else probe.but(x=_flipped(probe.x), upstream=_flipped(probe.upstream), **flipped)
        )
        order = (probe, other) if self.grad_fn else (other, probe)
        try:
            if self.grad_fn:  # both rules run before either grad_fn, as on a tape
                grad_fns = [self._forward(answer, p, [])[1] for p in order]
                got = [
                    self._backward(g, p, exercise.expected(p), []) for g, p in zip(grad_fns, order)
                ]
            else:
                got = [self._parts(answer, p, exercise).parts for p in order]
        except Wrong:
            got = [{}, {}]
        for p, parts in zip(order, got):
            expected = {
                k: v
                for k, v in exercise.expected(p).items()
                if k in self.gradients or not self.grad_fn
            }
            if not same_parts(expected, parts, 1e-4, 1e-12):
                raise keeps_state(
                    self.name,
                    "called twice before either grad_fn ran (as a tape does when the function "
                    "appears twice in one expression), a grad_fn gave the other call's gradient"
                    if self.grad_fn
                    else "called on other arguments in between, it gave other numbers for the "
                    "same arguments",
                )

    def verified(self, exercise, probes) -> list:
        return [
            "NumPy arrays in and out, dtype kept, every argument left unchanged",
            upstreams_seen(probes),
            "two calls before either grad_fn ran kept their own gradients"
            if self.grad_fn
            else "a call with other arguments in between did not change the result",
        ]
