"""The harness for a function the check runs on its own tape, as a model would use it
(lessons 03 and 04: custom gradients, and functions whose gradients must stay finite).

The check watches the input, records ``answer(x)`` on a persistent tape of its own and
differentiates the output with the probe's upstream (both signs, never 1), so a rule
that forgets ``upstream *`` shows. It reads the parts ``value`` and ``gradient`` (and
``grad_w`` for the variable a layer reads). With ``custom_gradient`` it demands that a
``@tf.custom_gradient`` rule of the learner's ran, its ``grad_fn`` too, and
(``produced``) that the grad_fn returned the very gradient the tape gave. With
``factory`` the answer makes the layer from a ``tf.Variable`` ``w``.

The value may have another shape than the input (a norm per row): the reference's.
Without ``custom_gradient``, the gradient comes from TensorFlow's rules for the
operations the answer ran, which the check records: a gradient that is ``nan`` where it
should be finite is explained by the operation whose slope is infinite there (a square
root at 0, ``x**0.5``, a log), with or without a ``tf.where`` around it.

Generated mistakes: a forgotten upstream, a per-element gradient reduced to one
number; the re-run diagnostic asks whether the rule scales with the upstream.
Statefulness: two calls recorded before either is differentiated (two instances, for a
factory, and one called again after its w was assigned), as a model trained does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .answers import as_values
from .answers import call_answer
from .answers import learner_code
from .harness import Harness
from .harness import Observation
from .harness import forgot_upstream
from .harness import keeps_state
from .harness import named_shape
from .harness import reduced_gradient
from .harness import upstream_linearity
from .harness import upstreams_seen
from .infinite_slopes import infinite_slope
from .judge import tolerance_of
from .judging import matches
from .provenance import hint
from .provenance import run_answer
from .verdicts import Wrong

NO_RULE = (
    "No @tf.custom_gradient function ran, so the gradient came from TensorFlow's own rules "
    "for the operations you used. The exercise asks for your own backward rule: decorate "
    "the function with @tf.custom_gradient and return (output, grad_fn). (Inside "
    "tf.function the check cannot see it: take that off.)"
)
KEYWORD_TRAP = (  # a call with keyword arguments only (or none): a custom node with no inputs
    "Your @tf.custom_gradient function ran, but its grad_fn never did: TensorFlow recorded it "
    "with no inputs, so nothing connects it to x, the tape drops it, and the gradient came from "
    "the operations inside it. That is the keyword-argument trap: keyword arguments do not "
    "become inputs of the custom node, so a call such as f(x=x) skips your rule silently (and "
    "so does a function that takes no argument and reads x from outside). Pass x "
    "positionally: f(x)."
)
NOT_READ = (  # a copy of w's value made with the layer: read before it runs, stale after assign
    "The gradient with respect to w is None, and your layer read no variable as it ran, so "
    "TensorFlow passed grad_fn none: read w itself inside the decorated function (w * x), "
    "not a copy of its value made with the layer (w.numpy(), w.read_value(), tf.constant(w)).",
    "Your layer's gradients use the value w had when the layer was made: after w.assign(...), "
    "as in every training step, they are still the old w's. Read w inside the layer when it "
    "is called, not a copy of its value made with it (w.numpy(), w.read_value(), tf.constant(w)).",
    "The gradient with respect to w is None, though your grad_fn returned a gradient for the "
    "variable your layer read: that variable is not w but another one (a tf.Variable made from "
    "w's value?), so w gets no gradient, and w.assign(...) never reaches your layer. Read w "
    "itself, the variable the factory is given, inside the decorated function.",
)


@dataclass(frozen=True)
class OnTape(Harness):
    """``name`` is how hints name the answer; ``local`` names the right local derivative."""

    name: str = "Your function"
    custom_gradient: bool = True
    produced: bool = False
    factory: bool = False
    upstream_transform: object = None
    without_rule: str = ""
    local: str = ""

    def noun(self, part: str) -> str:
        return {
            "value": "your value",
            "gradient": "your gradient" if not self.factory else "the gradient for x",
            "grad_w": "the gradient for w",
        }.get(part, f"your {part}")

    def fallback_code(self, part: str) -> str:
        return "wrong_value" if part == "value" else "wrong_gradient"

    def describe(self) -> str:
        demands = ["the check records the answer on its own tape and differentiates it"]
        if self.custom_gradient:
            demands.append("the learner's @tf.custom_gradient rule ran, grad_fn included")
        if self.produced:
            demands.append("its grad_fn returned the very gradient the tape gave")
        if self.factory:
            demands.append("the layer made from a tf.Variable w returns its gradient too")
        return "; ".join(demands) + "."

    # -- one probe --------------------------------------------------------------------

    def _layer(self, answer, probe):
        import tensorflow as tf

        if not self.factory:
            return answer, None
        w = tf.Variable(np.asarray(probe.w, dtype=probe.dtype), name="w")
        layer = call_answer(answer, w, name=self.name)
        if layer is None:
            raise Wrong(
                f"{self.name} returned None: it should return the decorated layer function "
                "(`return layer`).",
                "returned_none",
            )
        if not callable(layer):
            raise Wrong(
                f"{self.name} returned a {type(layer).__name__}; it should return the layer "
                "function itself, not its result (`return layer`, not `return layer(x)`).",
                "not_a_function",
            )
        return layer, w

    def record(self, answer, probe, made=None):
        """``(tape, x, output, log, w)``: the answer (or the ``made`` layer and its w)
        called on the check's own tape."""
        import tensorflow as tf

        layer, w = made or self._layer(answer, probe)
        x = tf.constant(np.asarray(probe.x, dtype=probe.dtype))
        try:
            run = run_answer(layer, x, name=self.name if not w else "Your layer")
        except Wrong as wrong:
            raise _decorator_error(wrong) from None
        if run.raised is not None:
            raise _decorator_error(run.raised) from None
        run.log.provenance = run.provenance
        return run.provenance.tape, x, run.value, run.log, w

    def gradients(self, tape, x, value, w, upstream, dtype):
        import tensorflow as tf

        sources = [x] if w is None else [x, w]
        up = tf.constant(np.asarray(upstream, dtype=dtype))
        try:
            with learner_code("Your gradient function"):
                return tape.gradient(value, sources, output_gradients=up)
        except Wrong as wrong:
            raise _grad_fn_error(wrong, w is not None) from None

    def observe(self, answer, probe, exercise) -> Observation:
        tape, x, value, log, w = self.record(answer, probe)
        shape, dtype = probe.shape, probe.dtype
        name = self.name if w is None else "The layer"
        named_shape(value, probe, exercise)
        wanted = exercise.expected(probe)["value"].shape
        values = as_values(value, name=name, shape=wanted, dtype=dtype)
        try:
            grads = self.gradients(tape, x, value, w, probe.upstream, dtype)
        except Wrong as wrong:  # judged once the value is known to be right
            return Observation({"value": values}, log, pending=wrong)
        self._require_rule(log, grads[0] is None)
        if grads[0] is None:
            raise _explain_none(log, value, x)
        parts = {"value": values, **self._read(grads, log, shape, dtype)}
        if self.produced and not _rule_produced(log, parts["gradient"]):
            raise Wrong(
                "Your @tf.custom_gradient rule ran, but the gradient the tape returned is not "
                "what your grad_fn returned: TensorFlow's own rules for the operations between "
                "x and your output produced it. Put the decorator on the function itself, so "
                "that its grad_fn maps the upstream of the output to the gradient for x.",
                "custom_gradient_not_used",
            )

        def again(factor):
            regrads = self.gradients(tape, x, value, w, factor * probe.upstream, dtype)
            return self._read(regrads, log, shape, dtype)

        return Observation(parts, log, again)

    def _require_rule(self, log, gradient_missing: bool) -> None:
        if not self.custom_gradient:
            return
        lead = (self.without_rule + " ") if self.without_rule else ""
        if not log.used_custom_gradient:
            lead = lead or ("The gradient is None. " if gradient_missing else "")
            raise Wrong(lead + NO_RULE, "custom_gradient_not_used")
        if not log.custom_backward_ran and all(c.input_count == 0 for c in log.custom_calls):
            raise Wrong(KEYWORD_TRAP, "custom_gradient_not_used")
        if not log.custom_backward_ran:
            raise Wrong(
                "Your @tf.custom_gradient function ran, but its grad_fn never did: the output "
                "you return is not the custom function's output, so the gradient came from "
                "other operations. Return the custom function's output itself.",
                "custom_gradient_not_used",
            )

    def _read(self, grads, log, shape, dtype) -> dict:
        if grads[0] is None:
            raise _explain_none(log)
        parts = {"gradient": as_values(grads[0], name="The gradient", shape=shape, dtype=dtype)}
        if self.factory:
            parts["grad_w"] = self._grad_w(grads[1], log, shape, dtype)
        return parts

    def _grad_w(self, grad_w, log, shape, dtype):
        """The gradient for the variable ``w`` the layer reads, a scalar."""
        import tensorflow as tf

        if grad_w is None and all(call.input_count < 2 for call in log.custom_calls):
            raise Wrong(NOT_READ[0], "variable_not_read")
        if grad_w is None and any(
            len(returned) >= 2 and returned[1] not in (None, [], ())
            for call in log.custom_calls
            for _, returned in call.backward
        ):
            raise Wrong(NOT_READ[2], "variable_not_read")
        if grad_w is None:
            raise Wrong(
                "The gradient with respect to w is None: return it in the second part of "
                "the pair, grad_x, [grad_w].",
                "no_variable_gradient",
            )
        if self.custom_gradient and not any(
            len(returned) >= 2 for call in log.custom_calls for _, returned in call.backward
        ):
            raise Wrong(
                "Your custom rule returns a gradient for x only; the gradient for w came "
                "from TensorFlow's own operations outside it. Read w inside the decorated "
                "function and let grad_fn(upstream, variables=None) return (gradient for "
                "x, [gradient for w]).",
                "variable_outside_rule",
            )
        if not isinstance(grad_w, (tf.Tensor, tf.Variable)):
            raise Wrong(
                f"The gradient for w came back as a {type(grad_w).__name__}, not a tensor: "
                "your grad_fn returned a Python or NumPy number for it (float(...) or "
                ".numpy()). Keep it a tensor: [tf.reduce_sum(...)].",
                "returned_numpy",
            )
        if int(np.prod(grad_w.shape)) > 1:
            raise Wrong(
                f"The gradient for w has shape {tuple(grad_w.shape)}; w is a scalar, so add "
                "up the contributions of every element of x: one tf.reduce_sum with no axis.",
                "variable_grad_not_reduced",
            )
        if grad_w.shape.rank:
            raise Wrong(
                f"The gradient for w has shape {tuple(grad_w.shape)}, but w is a scalar, of "
                "shape (): TensorFlow hands that gradient on as it is, and w.assign_sub(lr * "
                "gradient) then fails. Sum with no axis and without keepdims=True.",
                "broadcast_shape",
            )
        return as_values(grad_w, name="The gradient for w", dtype=dtype)

    # -- what every answer of this kind can get wrong ------------------------------------------

    def evidence(self, case):
        if self.custom_gradient or case.part not in ("gradient", "grad_w"):
            return None  # a custom rule's backward ran no operation the check recorded
        return infinite_slope(case)

    def generated(self, case) -> list:
        if case.part not in ("gradient", "grad_w"):
            return []
        found = forgot_upstream(case)
        return found + (reduced_gradient(case) if case.part == "gradient" else [])

    def diagnose(self, case):
        if case.part != "gradient":
            return None
        return upstream_linearity(case, self.upstream_transform, self.local)

    def statefulness(self, answer, seen, exercise) -> None:
        """Two probes recorded before either is differentiated: each must get its own
        gradient (a grad_fn that reads a global x fails). A factory's two layers, with
        different w, are made before either runs, the first runs again after the second (a
        module-level w, a closure caching the last call's tensors fail) and after w.assign."""
        probe, _ = seen[0]
        other = probe.but(
            x=np.roll(probe.x, 1) * -1.0 if probe.x.ndim else -probe.x,
            upstream=np.roll(probe.upstream, 1),
        )
        calls = [(probe, None), (other, None)]
        if self.factory:
            other = other.but(w=-0.75 * probe.w)
            first, second = self._layer(answer, probe), self._layer(answer, other)
            third = probe.but(x=0.5 * probe.x, upstream=-probe.upstream)
            calls = [(probe, first), (other, second), (third, first)]
        runs = [(p, self.record(answer, p, made)) for p, made in calls]
        if not all(self._right(exercise, p, *run) for p, run in runs):
            how = (
                "two layers made side by side, with different w, and called in turn "
                "(the first twice) before the tape differentiates, give wrong gradients"
                if self.factory
                else "called twice before the tape differentiates (as a model that uses "
                "it twice does), the first call's gradient comes out wrong"
            )
            raise keeps_state(f"{self.name}", how)
        if self.factory:  # w assigned after the layer was made, as every training step does
            moved = probe.but(w=-0.5 * probe.w)
            first[1].assign(np.asarray(moved.w, dtype=probe.dtype))
            if not self._right(exercise, moved, *self.record(answer, moved, first)):
                raise Wrong(NOT_READ[1], "stale_variable")

    def _right(self, exercise, p, tape, x, value, log, w) -> bool:
        try:
            grads = self.gradients(tape, x, value, w, p.upstream, p.dtype)
            got = self._read(grads, log, p.shape, p.dtype)
        except Wrong:
            return False
        return all(_close(exercise, p, k, v, exercise.expected(p)[k]) for k, v in got.items())

    def verified(self, exercise, probes) -> list:
        found = [upstreams_seen(probes)]
        if self.custom_gradient:
            found.append(
                "your grad_fn produced the gradient" if self.produced else "your custom rule ran"
            )
        found.append(
            "two layers made side by side kept their own w and inputs, and followed w.assign"
            if self.factory
            else "two calls recorded before differentiating kept their own gradients"
        )
        return found


def _close(exercise, probe, part, got, want) -> bool:
    """As close as the exercise's tolerance allows, and never stricter than 1e-4."""
    tol = tolerance_of(exercise, probe, part)
    return got is not None and matches(got, want, max(tol.rtol, 1e-4), np.maximum(tol.atol, 1e-12))


def _decorator_error(wrong: Wrong) -> Wrong:
    if (
        wrong.mistake == "raised"
        and "values to unpack" in wrong.error
        and "expected 2" in wrong.error
    ):
        return Wrong(
            "Your function is decorated with @tf.custom_gradient, but it returned only the "
            "output. A custom-gradient function returns a pair: `return output, grad_fn`, "
            "where grad_fn(upstream) is your backward rule.",
            "forgot_grad_fn",
        )
    if wrong.mistake == "raised" and "unsupported callable" in wrong.error:
        return Wrong(
            "Your @tf.custom_gradient function returned grad_fn first, so TensorFlow took the "
            "function for the output: return the output, then the rule: `return output, "
            "grad_fn`.",
            "reversed_order",
        )
    return _variables_error(wrong) or wrong


def _variables_error(wrong: Wrong) -> Wrong | None:
    text = wrong.error
    if "must accept keyword argument 'variables'" in text:
        return Wrong(
            "TensorFlow refused your gradient function: a custom gradient whose forward reads "
            "a trainable variable must accept it: def grad_fn(upstream, variables=None), "
            "returning (gradient for x, [gradient for w]).",
            "no_variables_keyword",
        )
    if "len()" in text or "gradient for each variable" in text:
        return Wrong(
            "The variables' gradients must come as a list with one entry per variable read: "
            "return grad_x, [grad_w].",
            "variable_grads_not_list",
        )
    return None


def _grad_fn_error(wrong: Wrong, reads_variable: bool) -> Wrong:
    if wrong.mistake != "raised":
        return wrong
    found = _variables_error(wrong)
    if found is not None:
        return found
    if reads_variable and "values to unpack" in wrong.error:
        return Wrong(
            "Your layer reads a variable, so TensorFlow unpacks what grad_fn returns into two "
            "parts: return grad_x, [grad_w] (the gradient for the input, then a list with the "
            "gradient for w).",
            "variable_grads_not_list",
        )
    counted = re.search(r"expected to return (\d+) gradients, but returned (\d+)", wrong.error)
    if counted:
        more = int(counted.group(2)) > int(counted.group(1)) and reads_variable
        return Wrong(
            f"Your grad_fn returned {counted.group(2)} gradients, but the function has "
            f"{counted.group(1)} input(s): return one gradient per input, each shaped like it."
            + (
                " TensorFlow expects a gradient for w only when the decorated function itself "
                "reads the variable (w * x inside it). A value read before it runs (float(), "
                ".numpy(), or tf.convert_to_tensor(w) outside it) is a constant to the tape."
                if more
                else ""
            ),
            "grad_fn_raised",
        )
    rows = re.search(r"Incompatible shapes: \[(\d+)\] vs\. \[\1,(\d+)\]", wrong.error)
    if rows:
        a, b = rows.groups()
        return wrong.explained(
            f"A tensor of shape ({a},) met one of shape ({a}, {b}): broadcasting lines up the "
            "last axes, so one number per row cannot stretch across the rows. Give it an axis "
            f"of size 1 first, upstream[:, None] (shape ({a}, 1)), so it stretches across each "
            "row.",
            "grad_fn_raised",
        )
    return Wrong(wrong.hint, "grad_fn_raised", error=wrong.error)


def _explain_none(log, value=None, x=None) -> Wrong:
    """Why the gradient for x is None: the learner's grad_fn returned None, or (given the
    recorded ``value`` and ``x``) what cut the path between them."""
    for call in log.custom_calls:
        for _, returned in call.backward:
            if returned and returned[0] is None:
                return Wrong(
                    "The gradient for x is None: your grad_fn returned None for it. It must "
                    "return upstream times the local derivative, a tensor shaped like x.",
                    "no_gradient",
                )
    seen = log.provenance
    cut = seen.cut_by(value, x) if seen is not None and value is not None else None
    if cut is not None:  # what cut the path: a NumPy detour, tf.stop_gradient, a rounding
        return Wrong(hint(cut[0], op=cut[1] or ""), cut[0])
    return Wrong(hint("no_gradient"), "no_gradient")


def _rule_produced(log, gradient) -> bool:
    """Some run of the learner's grad_fn returned exactly the gradient the tape gave."""
    for call in log.custom_calls:
        for _, returned in call.backward:
            first = returned[0] if returned else None
            try:
                got = np.asarray(first.numpy(), dtype=np.float64)
            except Exception:  # noqa: BLE001 - None, a Python number, a wrong shape
                continue
            if got.shape == np.shape(gradient) and np.allclose(
                got, gradient, rtol=1e-6, atol=0.0, equal_nan=True
            ):
                return True
    return False
