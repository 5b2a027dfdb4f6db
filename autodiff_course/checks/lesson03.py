"""Checks for lesson 03, *Custom gradients and the log1pexp story*.

Every reference is a closed form evaluated in float64 NumPy (softplus, sigmoid,
sign, clipping) at the very numbers TensorFlow saw, independent of the code the
exercises ask for. The answers run on the check's own ``tf.GradientTape`` exactly
as a model would use them, with upstream gradients of both signs and other than 1,
so a forgotten ``upstream *`` shows. Every exercise asks for a
``@tf.custom_gradient`` rule, and every check verifies that the learner's
``grad_fn`` really ran (for 3.1, that it produced the gradient the tape returned).
Probes are drawn fresh on every call, so numbers copied from the lesson fail.
"""

from __future__ import annotations

import re

import numpy as np

from ..checking import (
    FLOAT32, FLOAT64, Tolerance, Wrong, as_values, call_answer, describe_difference,
    exercise, explain_difference, fresh_rng, matches, mistakes, none_hint, points,
    record_answer, signed, upstream as draw_upstream,
)
from ..log1pexp import reference_sigmoid as _sigmoid, reference_softplus as _softplus
from ..log1pexp import thresholds as _thresholds

mistakes.register({
    # 3.1
    "forward_overflow": "the forward value overflows to inf (exp of a large x)",
    "forward_rounds_to_zero": "the forward value is 0.0 where 1 + e^x rounds to 1",
    "flush_to_zero": "the gradient is 0.0 where 1/(1 + e^x) is below the smallest normal float",
    "backward_overflow_nan": "the backward forms e^x, which overflows (inf/inf or 0*inf = nan)",
    "documented_rule_cancellation": "the backward subtracts numbers close to 1 and cancels to 0.0",
    "sigmoid_of_minus_x": "sigmoid(-x) where sigmoid(x) belongs",
    "value_is_sigmoid": "the forward returns sigmoid(x), the derivative, not log(1 + e^x)",
    "forgot_grad_fn": "a @tf.custom_gradient function that returns only its output",
    "float32_threshold": "a switch-over threshold that is exact in float32 but not in float64",
    # 3.2
    "forward_identity": "the forward returns x unchanged where it should quantise",
    "forward_round": "tf.round where the exercise binarises with tf.sign",
    "forward_hardtanh": "the forward clips x to [-1, 1] instead of binarising it",
    "sign_at_zero": "a binarisation that gives +-1 at x = 0, where tf.sign gives 0",
    "not_clipped": "a gradient that passes everywhere where it should be clipped",
    "inverted_clip": "the gradient mask inverted (kept outside, zeroed inside)",
    "boundary_excluded": "the boundary |x| = 1 excluded from the pass-through region",
    "wrong_mask": "the upstream passes on a region of x other than |x| <= 1",
    # 3.3
    "clipped_after_local": "the clip applied after multiplying by the local derivative",
    "clipped_norm": "tf.clip_by_norm (the whole tensor) where each entry is clipped",
    "clipped_forward": "the forward value clipped, where only the backward clips",
    "wrong_clip_range": "the upstream clipped to another range than [-1, 1]",
    # 3.4
    "not_a_function": "a factory that returns something other than a function",
    "no_variables_keyword": "a grad_fn without the variables= keyword for a variable read",
    "variable_grads_not_list": "the variables' gradients not returned as a list",
    "no_variable_gradient": "None as the gradient of a variable the layer reads",
    "variable_grad_not_reduced": "a variable gradient shaped like x instead of like w",
    "variable_outside_rule": "the variable's gradient comes from ops outside the custom rule",
    "forgot_w": "d/dx of softplus(w x) without the factor w",
    "forgot_x": "d/dw of softplus(w x) without the factor x",
    "swapped_gradients": "x and w swapped between the two gradients",
    "value_not_scaled_inside": "w * softplus(x) where softplus(w * x) belongs",
})
# Shared codes used here as well: forgot_upstream, forgot_local_derivative,
# wrong_local_derivative, upstream_not_linear, reduced_gradient, clipped_input,
# differentiated_twice, value_not_derivative, custom_gradient_not_used, ...


def _tf():
    import tensorflow as tf

    return tf


# -- shared plumbing of the four checks ------------------------------------------

_DTYPE_CLASH = re.compile(r"(double tensor but is a float tensor|float tensor but is a "
                          r"double tensor|float64 != tf\.float32|float32 != tf\.float64|"
                          r"dtype float32.*float64|dtype float64.*float32|"
                          r"DT_FLOAT.*DT_DOUBLE|DT_DOUBLE.*DT_FLOAT)", re.IGNORECASE)


def _dtype_clash(wrong: Wrong, where: str) -> Wrong:
    """A "raised" verdict caused by mixing float32 into float64, said plainly."""
    if wrong.mistake == "raised" and _DTYPE_CLASH.search(wrong.hint):
        return Wrong(f"{wrong.hint}. The check also runs {where} on float64 tensors, "
                     f"and a float32 value met them: write constants as plain Python "
                     f"numbers (1.0) and cast with upstream.dtype or x.dtype, never "
                     f"tf.float32.", "float32_not_float64")
    return wrong


def _record(answer, x, name):
    """``answer(x)`` on the check's tape; errors of the decorator named plainly."""
    try:
        return record_answer(answer, x, name=name)
    except Wrong as wrong:
        if wrong.mistake == "raised" and "values to unpack" in wrong.hint \
                and "expected 2" in wrong.hint:
            raise Wrong("Your function is decorated with @tf.custom_gradient, but it "
                        "returned only the output. A custom-gradient function returns a "
                        "pair: `return output, grad_fn`, where grad_fn(upstream) is your "
                        "backward rule.", "forgot_grad_fn") from None
        raise _dtype_clash(wrong, "your function") from None


def _gradients(recorded, upstream, sources, *, what: str = "x"):
    """The check's tape differentiates the answer's output; grad_fn errors are theirs."""
    tf = _tf()
    up = tf.constant(upstream, dtype=recorded.value.dtype)
    try:
        return recorded.gradient(up, list(sources))
    except Wrong as wrong:
        wrong = _dtype_clash(wrong, "your gradient function")
        if wrong.mistake != "raised":
            raise wrong from None
        expected = re.search(r"expected to return (\d+) gradients, but returned (\d+)",
                             wrong.hint)
        if expected:
            raise Wrong(f"Your grad_fn returned {expected.group(2)} gradients, but the "
                        f"function has {expected.group(1)} input(s): return one gradient "
                        f"per input, each shaped like it (here: the gradient for {what}).",
                        "grad_fn_raised") from None
        raise Wrong(wrong.hint, "grad_fn_raised") from None


def _explain_none(log, what: str = "x") -> Wrong:
    """Why the check's tape found no gradient for the input."""
    for call in log.custom_calls:
        for _, returned in call.backward:
            if returned and returned[0] is None:
                return Wrong(f"The gradient for {what} is None: your grad_fn returned None "
                             f"for it. It must return upstream times the local derivative, "
                             f"a tensor shaped like {what}.", "no_gradient")
    return Wrong(none_hint("no_gradient", what), "no_gradient")


def _require_rule_ran(log, plain: str) -> None:
    """The learner's @tf.custom_gradient function ran, and so did its grad_fn."""
    if not log.used_custom_gradient:
        raise Wrong(f"{plain + ' ' if plain else ''}No @tf.custom_gradient function ran, so the gradient came "
                    f"from TensorFlow's own rules for the operations you used. The exercise "
                    f"asks for your own backward rule: decorate the function with "
                    f"@tf.custom_gradient and return (output, grad_fn). (Inside "
                    f"tf.function the check cannot see it: take that off.)",
                    "custom_gradient_not_used")
    if not log.custom_backward_ran:
        raise Wrong("Your @tf.custom_gradient function ran, but its grad_fn never did: "
                    "the output you return is not the custom function's output, so the "
                    "gradient came from other operations. Return the custom function's "
                    "output itself.", "custom_gradient_not_used")


def _same_where_finite(got, values, rtol=1e-4, atol=1e-12) -> bool:
    """``got`` equals ``values`` wherever it is finite, and it is finite at most points."""
    got = np.asarray(got, dtype=np.float64)
    finite = np.isfinite(got)
    if finite.sum() * 2 < got.size:
        return False
    return matches(got[finite], np.asarray(values, dtype=np.float64)[finite], rtol, atol)


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
                values, expected + offset, rtol=1e-4, atol=1e-4 * scale):
            if not any(matches(values, v, tolerance.rtol, tolerance.atol) for *_, v in known):
                return Wrong(f"{what.capitalize()} is the right one plus {offset:.6g} at "
                             f"every point: a constant term was added or dropped. "
                             + describe_difference(values, expected, at=x,
                                                   rtol=tolerance.rtol,
                                                   atol=tolerance.atol), "constant_offset")
    return _fallback(explain_difference(values, expected, summary=summary, at=x,
                                        rtol=tolerance.rtol, atol=tolerance.atol,
                                        what=what, known=known), "wrong_value")


def close_to(got, expected, tolerance) -> np.ndarray:
    """Element-wise: finite and within the tolerance of ``expected``."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(got) & (np.abs(got - expected)
                                   <= tolerance.rtol * np.abs(expected) + tolerance.atol)


def _reduced(got, expected, what: str) -> None:
    """A gradient that is one number everywhere: the right one, summed or averaged."""
    got = np.asarray(got, dtype=np.float64)
    if got.size < 2 or not np.all(np.isfinite(got)) or np.ptp(got) != 0.0:
        return
    for name, total in (("summed", np.sum(expected)), ("averaged", np.mean(expected))):
        if np.isclose(got.flat[0], total, rtol=1e-4, atol=1e-12 + 1e-4 * np.sum(np.abs(expected))):
            raise Wrong(f"{what.capitalize()} is {got.flat[0]:.6g} at every element: the "
                        f"right per-element values {name} over the whole input and spread "
                        f"back. Each element of x gets its own derivative: leave out the "
                        f"tf.reduce_sum / tf.reduce_mean (only a scalar variable's "
                        f"gradient is summed).", "reduced_gradient")


SCALE = -1.75  # the second upstream of the linearity probe: other sign, other size


def _blame_the_rule(regrad, up, got, expected_local, x, tolerance, local_name,
                    clip=None) -> None:
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
    consistent = close_to(second[usable], first[usable], Tolerance(1e-4, 1e-12))
    if not np.all(consistent):
        bad = np.flatnonzero(~consistent)[0]
        where = x[usable].ravel()[bad]
        raise Wrong(f"Your gradient does not scale with the upstream: the check ran your "
                    f"rule again with the upstream multiplied by {SCALE:g}, and at x = "
                    f"{where:.6g} the result changed by a factor of "
                    f"{got2[usable].ravel()[bad] / got[usable].ravel()[bad]:.6g}. grad_fn "
                    f"must return the upstream times a local derivative that depends on x "
                    f"only: do not square, clip or otherwise transform the upstream itself"
                    + (" beyond the clip the exercise asks for." if clip(np.array(9.0)) != 9.0
                       else "."), "upstream_not_linear")
    local = np.where(usable, first, np.nan)
    raise Wrong(f"Your grad_fn handles the upstream right (its result scales with it), but "
                f"the local derivative it multiplies by is not {local_name}. "
                + describe_difference(local, expected_local, at=x, rtol=tolerance.rtol,
                                      atol=tolerance.atol), "wrong_local_derivative")


# Exercise 3.1 ---------------------------------------------------------------

# The float32 story: 1 + e^x rounds to 1 below about -16.6; 1/(1 + e^x) is below
# the smallest normal float from about 87.34 (flushed to 0 by the CPU); exp
# overflows above 88.72. The probes cover every region densely, both tails.
LOG1PEXP_FIXED_32 = np.concatenate([
    [-100.0, -40.0, -30.0, -20.0, -17.5, -17.0, -16.7, -16.0, -15.0, -10.0, -3.0, -1.0,
     0.0, 1.0, 3.0, 10.0, 15.0, 20.0, 50.0, 80.0, 87.3],
    np.round(np.arange(874, 888) / 10.0, 1),                   # 87.4 ... 88.7
    [88.72, 88.75, 88.8, 88.9, 89.0, 89.5, 90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 100.0,
     120.0],
])
LOG1PEXP_FRESH_32 = [(-100.0, -16.7, 4), (-16.7, 20.0, 4), (20.0, 87.3, 3),
                     (87.35, 88.7, 4), (88.73, 95.0, 4), (95.0, 120.0, 2)]
LOG1PEXP_FIXED_64 = [-745.0, -50.0, -40.0, -37.0, -25.0, -21.0, -18.0, -17.0, 0.0, 16.0,
                     18.0, 20.0, 21.0, 22.5, 25.0, 28.0, 36.0, 40.0, 700.0,
                     708.0, 708.3, 708.4, 709.0, 709.7, 709.78, 709.8, 710.0, 720.0, 800.0]
LOG1PEXP_FRESH_64 = [(-60.0, 60.0, 6), (700.0, 709.7, 3), (709.8, 800.0, 3)]


def _fresh(rng, fixed, ranges):
    drawn = [points(rng, low, high, count) for low, high, count in ranges]
    return np.unique(np.concatenate([np.asarray(fixed, dtype=np.float64), *drawn]))


QUIET = (-5.0, 70.0)  # where every formula of the lesson is accurate in float32


def _quiet_ok(x, got, expected, tolerance) -> bool:
    """``got`` is right where no failure mode of the story can act (or nothing is there)."""
    quiet = (x >= QUIET[0]) & (x <= QUIET[1])
    return bool(matches(got[quiet], expected[quiet], tolerance.rtol, tolerance.atol))


def _failure_modes(x, values, local, dtype, *, forward=True, backward=True, scale=1.0):
    """The log1pexp failure modes present in ``values``/``local``, as (code, text).

    A mode is reported only for the part (``forward`` value, ``backward`` local
    derivative) that is right elsewhere: a formula wrong everywhere has another
    mistake, whatever it gives at the far ends. ``scale`` is what multiplies the
    local derivative in the gradient (the upstream, times w in 3.4): where the true
    gradient is below the smallest normal number, a 0.0 is the CPU's flush.
    """
    limits = _thresholds(dtype)
    name = limits.dtype
    # Below the smallest normal number a 0.0 is the CPU's flush, not the formula's fault.
    negative = (x <= limits.cancellation) & (_sigmoid(x) >= limits.smallest_normal)
    negative_gradient = negative & (np.abs(scale * _sigmoid(x)) >= limits.smallest_normal)
    band = (x > limits.flush_start) & (x < limits.overflow)
    over = x > limits.overflow
    found = []
    if forward and over.any() and not np.all(np.isfinite(values[over])):
        found.append(("forward_overflow",
                      f"the value is {values[over][~np.isfinite(values[over])][0]} at x = "
                      f"{_sample(x[over][~np.isfinite(values[over])])}: exp(x) overflows "
                      f"{name} above x = {limits.overflow:.2f}, so log(1 + exp(x)) is "
                      f"log(inf). Compute the forward value with tf.nn.softplus(x)"))
    if forward and negative.any() and np.any(values[negative] == 0.0):
        found.append(("forward_rounds_to_zero",
                      f"the value is 0.0 at x = "
                      f"{_sample(np.sort(x[negative][values[negative] == 0])[::-1])}"
                      f": 1 + e^x rounds to exactly 1 in {name} below x = "
                      f"{limits.cancellation:.1f}, and log(1) = 0. tf.nn.softplus (or "
                      f"tf.math.log1p) keeps those tiny values"))
    if backward and band.any() and np.any(local[band] == 0.0):
        found.append(("flush_to_zero",
                      f"the gradient is 0.0 at x = {_sample(x[band][local[band] == 0])}, "
                      f"where it should be about 1: 1/(1 + e^x) is below the smallest "
                      f"normal {name} there and the CPU flushes it to 0, so e^x times it "
                      f"is 0. The backward must not multiply by 1/(1 + e^x): use "
                      f"tf.sigmoid(x)"))
    if backward and over.any() and not np.all(np.isfinite(local[over])):
        found.append(("backward_overflow_nan",
                      f"the gradient is nan at x = "
                      f"{_sample(x[over][~np.isfinite(local[over])])}: the backward "
                      f"computes e^x, which is inf there, and then inf/inf or 0 * inf. "
                      f"e^x/(1 + e^x) equals tf.sigmoid(x), which never overflows"))
    if backward and negative_gradient.any() and np.any(local[negative_gradient] == 0.0):
        zeros = x[negative_gradient][local[negative_gradient] == 0]
        found.append(("documented_rule_cancellation",
                      f"the gradient is exactly 0.0 at x = "
                      f"{_sample(np.sort(zeros)[::-1])}: "
                      f"1/(1 + e^x) rounds "
                      f"to 1 there and a subtraction such as 1 - 1/(1 + e^x) cancels "
                      f"everything. tf.sigmoid(x) keeps the tiny value"))
    return found


def _raise_failure_modes(found) -> None:
    if found:
        listed = "; ".join(f"({i}) {text}" for i, (_, text) in enumerate(found, 1))
        modes = "failure mode" if len(found) == 1 else "failure modes"
        raise Wrong(f"Still {len(found)} {modes} of the log1pexp story: {listed}.",
                    found[0][0])


def _judge_log1pexp(x, values, gradient, up, dtype, tolerance, where: str,
                    regrad=None) -> None:
    """Value and gradient of one probe set; raises :class:`Wrong` with the hint."""
    s = _sigmoid(x)
    with np.errstate(all="ignore"):
        local = gradient / up
    for code, hint, wrong in [
        ("differentiated_twice",
         "Your gradient is e^x/(1 + e^x)^2 = sigmoid(x) * (1 - sigmoid(x)), the derivative "
         "of sigmoid: one differentiation too many. d/dx log(1 + e^x) = sigmoid(x).",
         s * _sigmoid(-x)),
        ("value_not_derivative",
         "Your gradient function returns the value log(1 + e^x) again; it must return "
         "upstream times the derivative, sigmoid(x).", _softplus(x)),
        ("sigmoid_of_minus_x",
         "Your gradient is sigmoid(-x) = 1/(1 + e^x): check the sign of the exponent. The "
         "derivative of log(1 + e^x) is e^x/(1 + e^x) = sigmoid(x).", _sigmoid(-x)),
    ]:
        # Whole-pattern mistakes first: they too underflow or overflow at the far ends,
        # but that is not what needs fixing.
        if _same_where_finite(local, wrong) and not _same_where_finite(local, s):
            raise Wrong(hint, code)
    if _same_where_finite(gradient, s) and not _same_where_finite(local, s):
        raise Wrong("Your gradient is sigmoid(x) whatever arrives from above: the grad_fn "
                    "ignores `upstream`. Correct when the output itself is the target "
                    "(upstream = 1), wrong inside any chain. Return upstream * "
                    "tf.sigmoid(x).", "forgot_upstream")
    expected_value = _softplus(x)
    _raise_failure_modes(_failure_modes(
        x, values, local, dtype, forward=_quiet_ok(x, values, expected_value, tolerance),
        backward=_quiet_ok(x, local, s, tolerance), scale=up))
    if not matches(values, expected_value, tolerance.rtol, tolerance.atol):
        known = [("value_is_sigmoid",
                  "The first thing your function returns is sigmoid(x), the derivative. "
                  "Return the value log(1 + e^x) first and the gradient function second.",
                  s)]
        _threshold_slip(x, values, x, "value", "x itself", tolerance)
        raise _value_fallback(values, expected_value, summary=f"{where}, the forward "
                              f"value is not log(1 + e^x).", x=x, tolerance=tolerance,
                              what="your value", known=known)
    expected = up * s
    if not matches(gradient, expected, tolerance.rtol, tolerance.atol):
        _threshold_slip(x, local, np.ones_like(x), "gradient", "exactly 1", tolerance)
        _reduced(gradient, expected, "your gradient")
        wrong = explain_difference(
            gradient, expected, summary=f"{where}, the gradient is not upstream * "
            f"sigmoid(x).", at=x, rtol=tolerance.rtol, atol=tolerance.atol,
            what="your gradient")
        if wrong.mistake == "other" and regrad is not None:
            _blame_the_rule(regrad, up, gradient, s, x, tolerance, "sigmoid(x)")
        raise _fallback(wrong, "wrong_gradient")


def _threshold_slip(x, got, shortcut, what, words, tolerance) -> None:
    """A ``tf.where(x > t, shortcut, formula)`` that only float32 forgives."""
    with np.errstate(all="ignore"):
        expected = _softplus(x) if what == "value" else _sigmoid(x)
        off = ~((np.abs(got - expected) <= tolerance.rtol * np.abs(expected)
                 + tolerance.atol) & np.isfinite(got))
    if tolerance is FLOAT64 and off.any() and np.all(got[off] == shortcut[off]):
        raise Wrong(f"In float64 your {what} is {words} at x = {_sample(x[off])}, where the "
                    f"true {what} differs from it by more than float64 rounding: a switch "
                    f"such as tf.where(x > 20, ...) is exact in float32, but float64 keeps "
                    f"about 16 digits. tf.nn.softplus and tf.sigmoid need no threshold.",
                    "float32_threshold")


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


def _rule_produced_the_gradient(log, gradient) -> bool:
    """Some run of the learner's grad_fn returned exactly the gradient the tape gave."""
    for call in log.custom_calls:
        for _, returned in call.backward:
            first = returned[0] if returned else None
            try:
                got = np.asarray(first.numpy(), dtype=np.float64)
            except Exception:  # noqa: BLE001 - None, a Python number, a wrong shape
                continue
            if got.shape == np.shape(gradient) and np.allclose(
                    got, gradient, rtol=1e-6, atol=0.0, equal_nan=True):
                return True
    return False


@exercise("3.1", "a stable log1pexp with a custom gradient")
def log1pexp_stable(answer):
    """Probes (fresh on every call, on top of fixed points):

    * float32, one vector: both tails (-100 ... -15, with -17 and -16.7 where
      1 + e^x rounds to 1), 0, the whole flush band 87.4-88.7 in steps of 0.1
      plus fresh points in it, past exp's overflow at 88.72 (88.72, 88.75, 88.8,
      ... 95, 100, 120, fresh points in (88.73, 95]), 87.3 and 80;
    * float32, a fresh (2, 3) batch and a scalar (any shape, shape kept);
    * float64 (dtype in = dtype out), judged to 1e-11: -745 ... 60 (with
      -25 ... -17 and 16 ... 28, where float32-only thresholds fail), and 700-800
      (708.4 where float64 flushes, 709.78 where it overflows);
    * upstreams of both signs, never 1, so a forgotten ``upstream *`` shows.

    Method: a ``@tf.custom_gradient`` rule ran and its grad_fn returned the very
    gradient the tape gave (plain ``tf.nn.softplus`` is not the exercise).
    """
    rng = fresh_rng("3.1")
    name = "`log1pexp_stable`"
    tf = _tf()
    x32, x = _as_dtype(_fresh(rng, LOG1PEXP_FIXED_32, LOG1PEXP_FRESH_32), np.float32)
    up32, up = _as_dtype(draw_upstream(rng, x.shape), np.float32)
    recorded = _record(answer, tf.constant(x32), name)
    values = as_values(recorded.value, name=name, shape=x.shape, dtype=tf.float32)
    (gradient,) = _gradients(recorded, up32, [recorded.inputs[0]])
    if gradient is None:
        _require_rule_ran(recorded.log, "The gradient is None.")
        raise _explain_none(recorded.log)
    gradient = as_values(gradient, name="The gradient", shape=x.shape, dtype=tf.float32)
    _require_rule_ran(recorded.log, "The numbers come from TensorFlow, not from you.")
    if not _rule_produced_the_gradient(recorded.log, gradient):
        raise Wrong("Your @tf.custom_gradient rule ran, but the gradient the tape returned "
                    "is not what your grad_fn returned: TensorFlow's own rules for the "
                    "operations between x and your output produced it. Put the decorator "
                    "on log1pexp_stable itself, so that its grad_fn maps the upstream of "
                    "the output to the gradient for x.", "custom_gradient_not_used")
    _judge_log1pexp(x, values, gradient, up, "float32", FLOAT32, "In float32",
                    _regrad(recorded, name, x.shape, tf.float32))

    # Other shapes: a fresh (2, 3) batch across the regions, and a scalar.
    batch = np.stack([rng.uniform(-30.0, 30.0, 3), rng.uniform(87.4, 95.0, 3)])
    for probe in (batch, np.array(rng.uniform(-20.0, 100.0))):
        p32, p = _as_dtype(np.round(probe, 3), np.float32)
        u32, u = _as_dtype(draw_upstream(rng, p.shape), np.float32)
        shaped = _record(answer, tf.constant(p32), name)
        v = as_values(shaped.value, name=name, shape=p.shape, dtype=tf.float32)
        (g,) = _gradients(shaped, u32, [shaped.inputs[0]])
        if g is None:
            raise _explain_none(shaped.log)
        g = as_values(g, name="The gradient", shape=p.shape, dtype=tf.float32)
        _judge_log1pexp(p, v, g, u, "float32", FLOAT32,
                        f"For an input of shape {p.shape}",
                        _regrad(shaped, name, p.shape, tf.float32))

    # float64: the same story much further out.
    x64 = _fresh(rng, LOG1PEXP_FIXED_64, LOG1PEXP_FRESH_64)
    up64 = draw_upstream(rng, x64.shape)
    recorded64 = _record(answer, tf.constant(x64, tf.float64), name)
    values64 = as_values(recorded64.value, name=name, shape=x64.shape, dtype=tf.float64)
    (g64,) = _gradients(recorded64, up64, [recorded64.inputs[0]])
    if g64 is None:
        raise _explain_none(recorded64.log)
    g64 = as_values(g64, name="The gradient", shape=x64.shape, dtype=tf.float64)
    _judge_log1pexp(x64, values64, g64, up64, "float64", FLOAT64, "In float64",
                    _regrad(recorded64, name, x64.shape, tf.float64))
    return (f"Value and gradient accurate at {x.size} float32 points from {x.min():g} to "
            f"{x.max():g} (the flush band 87.4-88.7, past the overflow at 88.72, below "
            f"-17), in a (2, 3) batch and a scalar, and at {x64.size} float64 points "
            f"from {x64.min():g} to {x64.max():g}; with upstreams other than 1; your "
            f"grad_fn produced the gradient.")


# Exercise 3.2 ---------------------------------------------------------------

STE_FIXED = [-3.0, -1.5, -1.001, -1.0, -0.999, -0.5, 0.0, 0.5, 0.999, 1.0, 1.001, 1.5, 3.0]


def _ste_probe(rng, shape=None):
    """Fresh points in [-3, 3], fresh points within 0.05 of +-1, and the fixed ones."""
    near = 1.0 + np.round(rng.uniform(-0.05, 0.05, 4), 4)
    near *= rng.choice([-1.0, 1.0], 4)
    x = _fresh(rng, np.concatenate([STE_FIXED, near]), [(-3.0, 3.0, 8)])
    if shape is not None:
        picked = rng.choice(x, size=int(np.prod(shape)) - 3, replace=False)
        x = rng.permutation(np.concatenate([[-1.0, 0.0, 1.0], picked])).reshape(shape)
    return x


def _describe_mask(x, passed, expected) -> str:
    letting = x[passed & ~expected]
    blocking = x[~passed & expected]
    parts = []
    if letting.size:
        parts.append(f"lets the upstream through at x = {_sample(np.sort(letting))}, "
                     f"where |x| > 1")
    if blocking.size:
        parts.append(f"blocks it at x = {_sample(np.sort(blocking))}, where |x| <= 1")
    return " and ".join(parts)


@exercise("3.2", "a clipped straight-through estimator for sign")
def binarize_ste(answer):
    """Probes (fresh on every call): float32 points in [-3, 3] with the boundaries
    x = -1, 1 exactly, 0, points within 0.05 of +-1 on both sides, and fresh ones;
    then a float64 (3, 4) batch with -1, 0 and 1 in it (dtype in = dtype out), judged
    exactly. Upstreams of both signs, never 1.

    Method: a ``@tf.custom_gradient`` rule ran (the ``stop_gradient`` trick gives the
    same numbers but is not what the exercise asks for).
    """
    rng = fresh_rng("3.2")
    name = "`binarize_ste`"
    tf = _tf()
    for dtype, shape in ((np.float32, None), (np.float64, (3, 4))):
        x_in, x = _as_dtype(_ste_probe(rng, shape), dtype)
        up = draw_upstream(rng, x.shape).astype(dtype).astype(np.float64)
        tolerance = FLOAT32 if dtype is np.float32 else FLOAT64
        recorded = _record(answer, tf.constant(x_in), name)
        values = as_values(recorded.value, name=name, shape=x.shape, dtype=x_in.dtype)
        expected_value = np.sign(x)
        if not matches(values, expected_value, tolerance.rtol, tolerance.atol):
            nonzero = x != 0
            if matches(values[nonzero], expected_value[nonzero]) and \
                    np.all(np.abs(values[~nonzero]) == 1.0):
                raise Wrong("At x = 0 your forward gives "
                            f"{values[~nonzero][0]:g}; tf.sign(0) is 0. The exercise's "
                            "forward is tf.sign(x) itself (a where(x >= 0, 1, -1) "
                            "binarisation differs at 0).", "sign_at_zero")
            raise _fallback(explain_difference(
                values, expected_value, summary="The forward value should be tf.sign(x).",
                at=x, rtol=tolerance.rtol, atol=tolerance.atol, what="your forward value",
                known=[
                    ("forward_identity", "The forward returns x unchanged; it should "
                     "binarise: tf.sign(x).", x),
                    ("forward_round", "The forward rounds to the nearest integer; this "
                     "exercise binarises with tf.sign(x), giving -1, 0 or +1.", np.round(x)),
                    ("forward_hardtanh", "The forward clips x to [-1, 1]; the clipping "
                     "belongs in the backward rule. The forward is tf.sign(x).",
                     np.clip(x, -1.0, 1.0)),
                ]), "wrong_value")
        (gradient,) = _gradients(recorded, up, [recorded.inputs[0]])
        if gradient is None:
            _require_rule_ran(recorded.log, "The gradient is None.")
            raise _explain_none(recorded.log)
        gradient = as_values(gradient, name="The gradient", shape=x.shape,
                             dtype=x_in.dtype)
        if not recorded.log.used_custom_gradient and np.all(gradient == 0.0):
            raise Wrong("The gradient is 0 everywhere: that is tf.sign's own gradient, "
                        "and no @tf.custom_gradient rule ran. A straight-through estimator "
                        "replaces it: decorate binarize_ste with @tf.custom_gradient and "
                        "return (tf.sign(x), grad_fn).", "custom_gradient_not_used")
        _require_rule_ran(recorded.log, "The numbers may be right (the stop_gradient "
                          "trick gives them too), but this exercise asks for a rule of "
                          "your own.")
        inside = np.abs(x) <= 1.0
        expected = up * inside
        if matches(gradient, expected, tolerance.rtol, tolerance.atol):
            continue
        passed = close_to(gradient, up, tolerance)
        blocked = gradient == 0.0
        known = [
            ("not_clipped", "Your gradient passes upstream through everywhere. The clipped "
             "variant zeroes it where |x| > 1: multiply by a mask of |x| <= 1, cast to "
             "upstream.dtype.", up),
            ("forgot_upstream", "Your gradient is 1 inside [-1, 1] and 0 outside, whatever "
             "arrives from above: multiply the mask by `upstream`.", inside * 1.0),
            ("inverted_clip", "The mask is inverted: keep upstream where |x| <= 1 and zero "
             "it outside.", up * ~inside),
            ("boundary_excluded", "At x = -1 and x = 1 exactly your gradient is 0. The "
             "clipped estimator is the derivative of clip(x, -1, 1), which passes the "
             "upstream on the boundary too: use |x| <= 1, not < 1.",
             up * (np.abs(x) < 1.0)),
        ]
        for code, hint, values_of_mistake in known:
            if matches(gradient, values_of_mistake, tolerance.rtol, tolerance.atol):
                raise Wrong(hint, code)
        if np.all(passed | blocked) and passed.any():
            raise Wrong(f"Your rule {_describe_mask(x, passed & ~blocked, inside)}. The "
                        f"clipped estimator passes the upstream exactly where |x| <= 1 "
                        f"(x = -1 and 1 included) and gives 0 elsewhere.", "wrong_mask")
        _reduced(gradient, expected, "your gradient")
        wrong = explain_difference(
            gradient, expected, summary="The gradient should be upstream where |x| <= 1 "
            "and 0 elsewhere.", at=x, rtol=tolerance.rtol, atol=tolerance.atol,
            what="your gradient")
        if wrong.mistake == "other":
            _blame_the_rule(_regrad(recorded, name, x.shape, x_in.dtype), up, gradient,
                            inside * 1.0, x, tolerance,
                            "1 where |x| <= 1 and 0 elsewhere")
        raise _fallback(wrong, "wrong_gradient")
    return ("Forward tf.sign(x); backward upstream where |x| <= 1 (x = -1 and 1 "
            "included) and 0 elsewhere, in float32 and in a float64 (3, 4) batch, with "
            "upstreams of both signs; your @tf.custom_gradient rule produced it.")


# Exercise 3.3 ---------------------------------------------------------------

CLIP_FIXED_X = [-2.0, -1.0, -0.3, 0.0, 0.3, 1.0, 2.0]
CLIP_FIXED_UPSTREAM = [1.0, -1.0, 0.5, -0.5, 3.0, -4.0, 1.0]


def _clip_probe(rng, shape=None):
    """x of both signs (0 and |x| on both sides of 1/sqrt(3)); upstream with +-1 exactly."""
    if shape is None:
        x = np.concatenate([CLIP_FIXED_X, signed(rng, 7, 0.05, 2.5)])
        up = np.concatenate([CLIP_FIXED_UPSTREAM, signed(rng, 7, 0.2, 4.0, decimals=2)])
        shape = x.shape
    else:
        size = int(np.prod(shape))
        x = np.concatenate([[0.0, -1.5, 1.5], signed(rng, size - 3, 0.05, 2.5)])
        up = np.concatenate([[-3.0, 1.0, -1.0], signed(rng, size - 3, 0.2, 4.0, 2)])
    order = rng.permutation(x.size)
    return x[order].reshape(shape), up[order].reshape(shape)


def _clip_range(gradient, up, local, tolerance):
    """(low, high) if ``gradient`` is ``clip(up, low, high) * local`` for some range."""
    usable = np.abs(local) > 1e-3
    if usable.sum() < 3:
        return None
    ratio = gradient[usable] / local[usable]
    low, high = float(np.min(ratio)), float(np.max(ratio))
    candidate = np.clip(up, low, high) * local
    if matches(gradient, candidate, max(tolerance.rtol, 1e-6), 1e-9):
        return low, high
    return None


@exercise("3.3", "clip the upstream gradient where it enters a layer")
def clipped_upstream(answer):
    """Probes (fresh on every call): x of both signs (0, +-0.3, +-1, +-2 and fresh
    points, so 3x^2 is below and above 1), upstreams of both signs including exactly
    +-1, +-0.5 and values up to 4 in size; float32 first, then a float64 (3, 4) batch
    (dtype in = dtype out) judged to 1e-11.

    Method: a ``@tf.custom_gradient`` rule ran.
    """
    rng = fresh_rng("3.3")
    name = "`cube_with_clipped_upstream`"
    tf = _tf()
    for dtype, shape in ((np.float32, None), (np.float64, (3, 4))):
        x_raw, up_raw = _clip_probe(rng, shape)
        x_in, x = _as_dtype(x_raw, dtype)
        _, up = _as_dtype(up_raw, dtype)
        tolerance = FLOAT32 if dtype is np.float32 else FLOAT64
        recorded = _record(answer, tf.constant(x_in), name)
        values = as_values(recorded.value, name=name, shape=x.shape, dtype=x_in.dtype)
        if not matches(values, x**3, tolerance.rtol, tolerance.atol):
            raise _value_fallback(
                values, x**3, summary="The forward value should be x**3.", x=x,
                tolerance=tolerance, what="your forward value",
                known=[
                    ("clipped_forward", "Your forward clips the value; the layer's output "
                     "is x**3 unchanged. Only the backward rule clips.",
                     np.clip(x**3, -1.0, 1.0)),
                    ("clipped_forward", "Your forward clips x before cubing; the layer's "
                     "output is x**3 unchanged. Only the backward rule clips.",
                     np.clip(x, -1.0, 1.0) ** 3),
                ])
        (gradient,) = _gradients(recorded, up, [recorded.inputs[0]])
        if gradient is None:
            _require_rule_ran(recorded.log, "The gradient is None.")
            raise _explain_none(recorded.log)
        gradient = as_values(gradient, name="The gradient", shape=x.shape,
                             dtype=x_in.dtype)
        local = 3.0 * x**2
        if not recorded.log.used_custom_gradient and matches(gradient, up * local, 1e-4):
            raise Wrong("Nothing was clipped: the gradient is upstream * 3x^2, TensorFlow's "
                        "own, and no @tf.custom_gradient rule ran. Write the layer with "
                        "@tf.custom_gradient and clip the upstream in its grad_fn.",
                        "custom_gradient_not_used")
        _require_rule_ran(recorded.log, "")
        clipped = np.clip(up, -1.0, 1.0)
        expected = clipped * local
        if matches(gradient, expected, tolerance.rtol, tolerance.atol):
            continue
        norm = np.sqrt(np.sum(up**2))
        known = [
            ("clipped_after_local", "You clipped the product upstream * 3x^2, so the "
             "result never leaves [-1, 1]. Clip the upstream first, then multiply by the "
             "local derivative 3x^2.", np.clip(up * local, -1.0, 1.0)),
            ("not_clipped", "Nothing was clipped: the gradient is upstream * 3x^2. Clip "
             "the upstream to [-1, 1] with tf.clip_by_value before multiplying.",
             up * local),
            ("forgot_local_derivative", "You returned the clipped upstream alone; "
             "multiply it by the layer's local derivative 3x^2.", clipped),
            ("forgot_upstream", "Your gradient ignores the upstream: it must be "
             "clip(upstream, -1, 1) * 3x^2.", local),
            ("forgot_upstream", "Your gradient ignores the upstream (you clipped the "
             "local derivative): it must be clip(upstream, -1, 1) * 3x^2.",
             np.clip(local, -1.0, 1.0)),
            ("clipped_norm", "You clipped the norm of the whole upstream tensor "
             "(tf.clip_by_norm), which rescales every entry. This exercise clips each "
             "entry to [-1, 1] with tf.clip_by_value.", up * min(1.0, 1.0 / norm) * local),
            ("clipped_input", "You clipped x inside the local derivative; the clip acts "
             "on the upstream: clip(upstream, -1, 1) * 3x^2.",
             up * 3.0 * np.clip(x, -1.0, 1.0) ** 2),
        ]
        for code, hint, values_of_mistake in known:
            if matches(gradient, values_of_mistake, tolerance.rtol, tolerance.atol):
                raise Wrong(hint, code)
        found = _clip_range(gradient, up, local, tolerance)
        if found is not None:
            low, high = found
            lows = "no lower limit" if low <= up.min() + 1e-9 else f"a lower limit of {low:g}"
            highs = "no upper limit" if high >= up.max() - 1e-9 else f"an upper limit of {high:g}"
            raise Wrong(f"Your rule clips the upstream with {lows} and {highs}; the "
                        f"exercise clips each entry to [-1, 1]: tf.clip_by_value(upstream, "
                        f"-1.0, 1.0), then times 3x^2.", "wrong_clip_range")
        _reduced(gradient, expected, "your gradient")
        wrong = explain_difference(
            gradient, expected, summary="The gradient should be clip(upstream, -1, 1) * "
            "3x^2.", at=x, rtol=tolerance.rtol, atol=tolerance.atol,
            what="your gradient")
        if wrong.mistake == "other":
            _blame_the_rule(_regrad(recorded, name, x.shape, x_in.dtype), up, gradient,
                            local, x, tolerance, "3x^2",
                            clip=lambda u: np.clip(u, -1.0, 1.0))
        raise _fallback(wrong, "wrong_gradient")
    return ("Forward x**3; backward clip(upstream, -1, 1) * 3x^2 (clip first, then the "
            "local derivative), with upstreams inside, on and outside [-1, 1], in float32 "
            "and in a float64 (3, 4) batch; your @tf.custom_gradient rule ran.")


# Exercise 3.4 ---------------------------------------------------------------

SCALE_FIXED_WX = [-100.0, -40.0, -17.0, -3.0, -0.5, 0.5, 3.0, 17.0, 40.0, 88.5, 95.0, 100.0]


def _scale_probe(rng, shape):
    """A fresh w of random sign, and x such that w*x spans -100 ... 100 (and x = 0)."""
    w = float(np.round(rng.uniform(0.5, 2.5), 3) * rng.choice([-1.0, 1.0]))
    size = int(np.prod(shape))
    wx = np.concatenate([SCALE_FIXED_WX, [0.0], np.round(rng.uniform(-100, 100, 8), 3)])
    wx = rng.choice(wx, size=size, replace=size > wx.size) if size != wx.size else wx
    return w, rng.permutation(wx / w).reshape(shape)


def _layer_from(make, w):
    layer = call_answer(make, w, name="`make_scaled_softplus`")
    if layer is None:
        raise Wrong("make_scaled_softplus returned None: it should return the decorated "
                    "layer function (`return layer`).", "returned_none")
    if not callable(layer):
        raise Wrong(f"make_scaled_softplus returned a {type(layer).__name__}; it should "
                    f"return the layer function itself, not its result (`return layer`, "
                    f"not `return layer(x)`).", "not_a_function")
    return layer


def _variable_error(wrong: Wrong) -> Wrong:
    text = wrong.hint
    if "must accept keyword argument 'variables'" in text:
        return Wrong("TensorFlow refused your gradient function: a custom gradient whose "
                     "forward reads a variable must accept it: def grad_fn(upstream, "
                     "variables=None), returning (gradient for x, [gradient for w]).",
                     "no_variables_keyword")
    if "len()" in text or "gradient for each variable" in text:
        return Wrong("The variables' gradients must come as a list with one entry per "
                     "variable read: return grad_x, [grad_w].", "variable_grads_not_list")
    if "values to unpack" in text and wrong.mistake == "grad_fn_raised":
        return Wrong("Your layer reads a variable, so TensorFlow unpacks what grad_fn "
                     "returns into two parts: return grad_x, [grad_w] (the gradient for "
                     "the input, then a list with the gradient for w).",
                     "variable_grads_not_list")
    return wrong


@exercise("3.4", "a custom gradient that reads a variable")
def scaled_softplus(answer):
    """Probes (fresh on every call): a scalar ``w`` of random sign and size
    (0.5 to 2.5) and ``x`` such that ``w*x`` spans -100 ... 100 (0, +-0.5, +-3,
    +-17, +-40, 88.5 past float32's flush point, 95 and 100 past exp's overflow, and
    fresh values), as a float32 vector; then a float64 ``w`` with a (3, 4) batch
    (dtype in = dtype out), judged to 1e-11. Upstreams of both signs, never 1. The
    gradient for ``w`` is judged against the float64 sum with a tolerance scaled by
    the sum of the magnitudes of its terms.

    Method: a ``@tf.custom_gradient`` rule ran and its grad_fn returned the gradient
    for ``w`` too (read inside the rule, through ``variables=``).
    """
    rng = fresh_rng("3.4")
    tf = _tf()
    for dtype, shape in ((np.float32, (len(SCALE_FIXED_WX) + 9,)), (np.float64, (3, 4))):
        w_value, x_raw = _scale_probe(rng, shape)
        x_in, x = _as_dtype(x_raw, dtype)
        w_in, w_val = _as_dtype(w_value, dtype)
        up = draw_upstream(rng, x.shape).astype(dtype).astype(np.float64)
        tolerance = FLOAT32 if dtype is np.float32 else FLOAT64
        w = tf.Variable(w_in, name="w")
        layer = _layer_from(answer, w)
        try:
            recorded = _record(layer, tf.constant(x_in), "Your layer")
        except Wrong as wrong:
            raise _variable_error(wrong) from None
        values = as_values(recorded.value, name="The layer", shape=x.shape,
                           dtype=x_in.dtype)
        wx = w_val * x
        expected_value = _softplus(wx)
        _raise_failure_modes(_failure_modes(
            wx, values, None, dtype, backward=False,
            forward=_quiet_ok(wx, values, expected_value, tolerance)))
        if not matches(values, expected_value, tolerance.rtol, tolerance.atol):
            raise _value_fallback(
                values, expected_value, summary="The layer's value should be "
                "softplus(w * x).", x=x, tolerance=tolerance,
                what="the layer's value", known=[
                    ("value_not_scaled_inside", "The layer returns w * softplus(x); it "
                     "should be softplus(w * x).", w_val * _softplus(x))])
        try:
            grad_x, grad_w = _gradients(recorded, up, [recorded.inputs[0], w])
        except Wrong as wrong:
            raise _variable_error(wrong) from None
        _require_rule_ran(recorded.log, "")
        if grad_x is None:
            raise _explain_none(recorded.log)
        if grad_w is None:
            raise Wrong("The gradient with respect to w is None: return it in the second "
                        "part of the pair, grad_x, [grad_w].", "no_variable_gradient")
        if not any(len(returned) >= 2 for call in recorded.log.custom_calls
                   for _, returned in call.backward):
            raise Wrong("Your custom rule returns a gradient for x only; the gradient for "
                        "w came from TensorFlow's own operations outside it. Read w inside "
                        "the decorated function and let grad_fn(upstream, variables=None) "
                        "return (gradient for x, [gradient for w]).",
                        "variable_outside_rule")
        if not isinstance(grad_w, (tf.Tensor, tf.Variable)):
            raise Wrong(f"The gradient for w came back as a {type(grad_w).__name__}, not "
                        f"a tensor: your grad_fn returned a Python or NumPy number for it "
                        f"(float(...) or .numpy()). Keep it a tensor: "
                        f"[tf.reduce_sum(...)].", "returned_numpy")
        if tuple(grad_w.shape) != ():
            if tuple(grad_w.shape) == tuple(x.shape) or int(np.prod(grad_w.shape)) > 1:
                raise Wrong(f"The gradient for w has shape {tuple(grad_w.shape)}; w is a "
                            f"scalar, so add up the contributions of every element of x: "
                            f"tf.reduce_sum(upstream * x * sigmoid(w x)) with no axis.",
                            "variable_grad_not_reduced")
        got_x = as_values(grad_x, name="The gradient for x", shape=x.shape,
                          dtype=x_in.dtype)
        got_w = as_values(tf.reshape(grad_w, []), name="The gradient for w",
                          dtype=x_in.dtype)
        s = _sigmoid(wx)
        expected_x = up * w_val * s
        terms = up * x * s
        expected_w = float(np.sum(terms))
        w_tolerance = Tolerance(tolerance.rtol, tolerance.rtol * float(np.sum(np.abs(terms))))
        with np.errstate(all="ignore"):
            local = got_x / up
        _raise_failure_modes(_failure_modes(
            wx, values, local / w_val, dtype, forward=False,
            backward=_quiet_ok(wx, local / w_val, s, tolerance), scale=up * w_val))
        if not matches(got_x, expected_x, tolerance.rtol, tolerance.atol):
            _reduced(got_x, expected_x, "the gradient for x")
            wrong = explain_difference(
                got_x, expected_x, summary="The gradient for x should be upstream * w * "
                "sigmoid(w x).", at=x, rtol=tolerance.rtol, atol=tolerance.atol,
                what="the gradient for x", known=[
                    ("forgot_upstream", "The gradient for x ignores upstream: inside a "
                     "chain it must be upstream * w * sigmoid(w x).", w_val * s),
                    ("forgot_w", "The gradient for x lacks the factor w from the inner "
                     "w * x: upstream * w * sigmoid(w x).", up * s),
                    ("swapped_gradients", "The gradient for x has x where w belongs: "
                     "d/dx softplus(w x) = w * sigmoid(w x); the factor x belongs to d/dw.",
                     up * x * s),
                ])
            if wrong.mistake == "other":
                _blame_the_rule(_regrad(recorded, "Your layer", x.shape, x_in.dtype), up,
                                got_x, w_val * s, x, tolerance, "w * sigmoid(w x)")
            raise _fallback(wrong, "wrong_gradient")
        if not matches(got_w, expected_w, w_tolerance.rtol, w_tolerance.atol):
            size = x.size
            known = [
                ("forgot_upstream", "The gradient for w ignores upstream: "
                 "sum(upstream * x * sigmoid(w x)).", np.sum(x * s)),
                ("forgot_x", "The gradient for w lacks the factor x from the inner "
                 "w * x: sum(upstream * x * sigmoid(w x)).", np.sum(up * s)),
                ("swapped_gradients", "The gradient for w has w where x belongs: "
                 "d/dw softplus(w x) = x * sigmoid(w x).", np.sum(up * w_val * s)),
                ("mean_not_sum", f"The gradient for w is the mean of the contributions, "
                 f"{size} times too small: w is used by every element, so its gradient is "
                 f"their sum (tf.reduce_sum).", expected_w / size),
                ("sign_flipped", "The gradient for w has the right size but the opposite "
                 "sign: look for a subtraction the wrong way round or a stray minus.",
                 -expected_w),
                ("scale_factor", "The gradient for w is twice the answer: a factor 2 too "
                 "many.", 2.0 * expected_w),
                ("scale_factor", "The gradient for w is half the answer: a factor 1/2 too "
                 "many.", 0.5 * expected_w),
            ]
            for code, hint, value in known:
                if matches(got_w, value, w_tolerance.rtol, w_tolerance.atol):
                    raise Wrong(hint, code)
            # One number: "the answer times k" would fit any wrong value, so no guess.
            raise Wrong(f"The gradient for w should be sum(upstream * x * sigmoid(w x)), "
                        f"one sum over every element of x of that element's contribution. "
                        + describe_difference(got_w, expected_w, rtol=w_tolerance.rtol,
                                              atol=w_tolerance.atol), "wrong_gradient")
    return ("d/dx = upstream * w * sigmoid(w x) and d/dw = sum(upstream * x * sigmoid(w x)) "
            "for w of either sign and w*x from -100 to 100, in float32 and float64, with "
            "upstreams other than 1; both came from your grad_fn.")
