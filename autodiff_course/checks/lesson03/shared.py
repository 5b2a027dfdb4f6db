"""What the four checks of lesson 03 share: the answer recorded on the check's own
tape and differentiated with an upstream of its choosing (errors of the decorator
and of grad_fn named plainly), the demand that the learner's rule ran, and the
verdicts on a wrong value or gradient."""

from __future__ import annotations

import re

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import close_points
from ...checking import describe_difference
from ...checking import explain_difference
from ...checking import matches
from ...checking import none_hint
from ...checking import points
from ...checking import record_answer


def _tf():
    import tensorflow as tf

    return tf


# -- shared plumbing of the four checks ------------------------------------------


def _record(answer, x, name):
    """``answer(x)`` on the check's tape; errors of the decorator named plainly."""
    try:
        return record_answer(answer, x, name=name)
    except Wrong as wrong:
        if (
            wrong.mistake == "raised"
            and "values to unpack" in wrong.hint
            and "expected 2" in wrong.hint
        ):
            raise Wrong(
                "Your function is decorated with @tf.custom_gradient, but it "
                "returned only the output. A custom-gradient function returns a "
                "pair: `return output, grad_fn`, where grad_fn(upstream) is your "
                "backward rule.",
                "forgot_grad_fn",
            ) from None
        raise


def _gradients(recorded, upstream, sources, *, what: str = "x"):
    """The check's tape differentiates the answer's output; grad_fn errors are theirs."""
    tf = _tf()
    up = tf.constant(upstream, dtype=recorded.value.dtype)
    try:
        return recorded.gradient(up, list(sources))
    except Wrong as wrong:
        if wrong.mistake != "raised":
            raise wrong from None
        expected = re.search(r"expected to return (\d+) gradients, but returned (\d+)", wrong.hint)
        if expected:
            raise Wrong(
                f"Your grad_fn returned {expected.group(2)} gradients, but the "
                f"function has {expected.group(1)} input(s): return one gradient "
                f"per input, each shaped like it (here: the gradient for {what}).",
                "grad_fn_raised",
            ) from None
        raise Wrong(wrong.hint, "grad_fn_raised") from None


def _explain_none(log, what: str = "x") -> Wrong:
    """Why the check's tape found no gradient for the input."""
    for call in log.custom_calls:
        for _, returned in call.backward:
            if returned and returned[0] is None:
                return Wrong(
                    f"The gradient for {what} is None: your grad_fn returned None "
                    f"for it. It must return upstream times the local derivative, "
                    f"a tensor shaped like {what}.",
                    "no_gradient",
                )
    return Wrong(none_hint("no_gradient", what), "no_gradient")


def _require_rule_ran(log, plain: str) -> None:
    """The learner's @tf.custom_gradient function ran, and so did its grad_fn."""
    if not log.used_custom_gradient:
        raise Wrong(
            f"{plain + ' ' if plain else ''}No @tf.custom_gradient function ran, "
            f"so the gradient came from TensorFlow's own rules for the operations "
            f"you used. The exercise asks for your own backward rule: decorate the "
            f"function with @tf.custom_gradient and return (output, grad_fn). "
            f"(Inside tf.function the check cannot see it: take that off.)",
            "custom_gradient_not_used",
        )
    if not log.custom_backward_ran:
        raise Wrong(
            "Your @tf.custom_gradient function ran, but its grad_fn never did: "
            "the output you return is not the custom function's output, so the "
            "gradient came from other operations. Return the custom function's "
            "output itself.",
            "custom_gradient_not_used",
        )


def _as_dtype(values, dtype):
    """``values`` rounded to ``dtype`` (what TensorFlow sees), and the same in float64."""
    rounded = np.asarray(values, dtype=np.float64).astype(dtype)
    return rounded, rounded.astype(np.float64)


def _sample(xs, limit=3) -> str:
    shown = ", ".join(f"{value:g}" for value in np.asarray(xs)[:limit])
    return shown + (", ..." if len(xs) > limit else "")


def _fallback(wrong: Wrong, code: str) -> Wrong:
    """Name an unexplained difference by what differs (value or gradient)."""
    return Wrong(wrong.hint, code) if wrong.mistake == "other" else wrong


def _described(values, expected, x, tolerance) -> str:
    """:func:`describe_difference` at the points ``x``, under the check's ``tolerance``."""
    return describe_difference(values, expected, at=x, rtol=tolerance.rtol, atol=tolerance.atol)


def _explained(values, expected, *, summary, x, tolerance, what, known=()) -> Wrong:
    """:func:`explain_difference` at the points ``x``, under the check's ``tolerance``:
    the last word on a wrong value or a wrong gradient."""
    return explain_difference(
        values,
        expected,
        summary=summary,
        at=x,
        rtol=tolerance.rtol,
        atol=tolerance.atol,
        what=what,
        known=known,
    )


def _value_fallback(values, expected, *, summary, x, tolerance, what, known=()) -> Wrong:
    """The verdict on a wrong forward value: known slips, a constant offset, the rest.

    The offset is judged against its own size, so a shifted value that crosses
    zero (softplus(x) - log 2 at x = 0) is still recognised.
    """
    values = np.asarray(values, dtype=np.float64)
    if np.all(np.isfinite(values)) and values.size > 1:
        offset = float(np.median(values - expected))
        scale = max(abs(offset), 1e-30)
        if abs(offset) > tolerance.rtol * float(np.max(np.abs(expected))) and np.allclose(
            values, expected + offset, rtol=1e-4, atol=1e-4 * scale
        ):
            if not any(matches(values, v, tolerance.rtol, tolerance.atol) for *_, v in known):
                return Wrong(
                    f"{what.capitalize()} is the right one plus {offset:.6g} at "
                    f"every point: a constant term was added or dropped. "
                    + _described(values, expected, x, tolerance),
                    "constant_offset",
                )
    wrong = _explained(
        values, expected, summary=summary, x=x, tolerance=tolerance, what=what, known=known
    )
    return _fallback(wrong, "wrong_value")


def _judge_value(values, expected, *, summary, x, tolerance, what, known=()) -> None:
    """Return quietly when the forward value matches ``expected`` under ``tolerance``,
    else raise :func:`_value_fallback`'s verdict on it."""
    if not matches(values, expected, tolerance.rtol, tolerance.atol):
        raise _value_fallback(
            values, expected, summary=summary, x=x, tolerance=tolerance, what=what, known=known
        )


def _reduced(got, expected, what: str) -> None:
    """A gradient that is one number everywhere: the right one, summed or averaged."""
    got = np.asarray(got, dtype=np.float64)
    if got.size < 2 or not np.all(np.isfinite(got)) or np.ptp(got) != 0.0:
        return
    for name, total in (("summed", np.sum(expected)), ("averaged", np.mean(expected))):
        if np.isclose(got.flat[0], total, rtol=1e-4, atol=1e-12 + 1e-4 * np.sum(np.abs(expected))):
            raise Wrong(
                f"{what.capitalize()} is {got.flat[0]:.6g} at every element: the "
                f"right per-element values {name} over the whole input and spread "
                f"back. Each element of x gets its own derivative: leave out the "
                f"tf.reduce_sum / tf.reduce_mean (only a scalar variable's "
                f"gradient is summed).",
                "reduced_gradient",
            )


SCALE = -1.75  # the second upstream of the linearity probe: other sign, other size


def _blame_the_rule(regrad, up, got, expected_local, x, tolerance, local_name, clip=None) -> None:
    """After the catalogue: say whether the upstream or the local derivative is wrong.

    ``regrad(upstream)`` differentiates the answer's output again with another
    upstream. A rule ``g(upstream) = clip(upstream) * local(x)`` (``clip`` the
    identity unless the exercise clips) must give ``clip(SCALE * up) * local``:
    if it does not, the rule mishandles the upstream; if it does, its local
    derivative is what differs, and the hint quotes a point where it does.
    """
    clip = clip or (lambda u: u)
    up2 = SCALE * up
    got2 = regrad(up2)
    if got2 is None or got2.shape != got.shape:
        return
    with np.errstate(all="ignore"):
        first, second = got / clip(up), got2 / clip(up2)
    usable = (clip(up) != 0) & (clip(up2) != 0) & np.isfinite(first) & np.isfinite(second)
    if not usable.any():
        return
    consistent = close_points(second[usable], first[usable], 1e-4, 1e-12)
    if not np.all(consistent):
        bad = np.flatnonzero(~consistent)[0]
        where = x[usable].ravel()[bad]
        raise Wrong(
            f"Your gradient does not scale with the upstream: the check ran your "
            f"rule again with the upstream multiplied by {SCALE:g}, and at x = "
            f"{where:.6g} the result changed by a factor of "
            f"{got2[usable].ravel()[bad] / got[usable].ravel()[bad]:.6g}. grad_fn "
            f"must return the upstream times a local derivative that depends on x "
            f"only: do not square, clip or otherwise transform the upstream itself"
            + (" beyond the clip the exercise asks for." if clip(np.array(9.0)) != 9.0 else "."),
            "upstream_not_linear",
        )
    local = np.where(usable, first, np.nan)
    raise Wrong(
        f"Your grad_fn handles the upstream right (its result scales with it), but "
        f"the local derivative it multiplies by is not {local_name}. "
        + _described(local, expected_local, x, tolerance),
        "wrong_local_derivative",
    )


def _wrong_gradient(
    gradient,
    expected,
    *,
    summary,
    x,
    up,
    tolerance,
    regrad,
    local,
    local_name,
    what="your gradient",
    known=(),
    clip=None,
) -> Wrong:
    """The verdict on a wrong gradient that the exercise's own catalogue left unnamed:
    one number everywhere (:func:`_reduced`), the ``known`` slips and the generic
    patterns, then whether the rule mishandles the upstream or its local derivative
    (:func:`_blame_the_rule`, when ``regrad`` is given), then a point that differs."""
    _reduced(gradient, expected, what)
    wrong = _explained(
        gradient, expected, summary=summary, x=x, tolerance=tolerance, what=what, known=known
    )
    if wrong.mistake == "other" and regrad is not None:
        _blame_the_rule(regrad, up, gradient, local, x, tolerance, local_name, clip=clip)
    return _fallback(wrong, "wrong_gradient")


def _input_gradient(recorded, upstream, shape, dtype, *, rule_first: bool = True):
    """The gradient for the answer's input, as float64; a None explained (first by the
    demand that the learner's rule ran, unless ``rule_first`` is off)."""
    (gradient,) = _gradients(recorded, upstream, [recorded.inputs[0]])
    if gradient is None:
        if rule_first:
            _require_rule_ran(recorded.log, "The gradient is None.")
        raise _explain_none(recorded.log)
    return as_values(gradient, name="The gradient", shape=shape, dtype=dtype)


def _fresh(rng, fixed, ranges):
    drawn = [points(rng, low, high, count) for low, high, count in ranges]
    return np.unique(np.concatenate([np.asarray(fixed, dtype=np.float64), *drawn]))


def _regrad(recorded, name, shape, dtype, index=0):
    """``upstream -> gradient`` for the input ``index``, run again on the same tape."""

    def regrad(upstream):
        try:
            gradients = _gradients(recorded, upstream, list(recorded.inputs))
        except Wrong:
            return None
        gradient = gradients[index]
        if gradient is None:
            return None
        try:
            return as_values(gradient, name="The gradient", shape=shape, dtype=dtype)
        except Wrong:
            return None

    return regrad
