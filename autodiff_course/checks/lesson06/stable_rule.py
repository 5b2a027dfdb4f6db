"""Exercise 6.4: the stable log1pexp rule for our custom_gradient."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import call_answer
from ...checking import close_points
from ...checking import describe_difference
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import matches_where_finite
from ...checking import require_callable
from ...checking import tolerance_for
from ...checking import upstream as fresh_upstream
from .shared import _changed
from .shared import _close
from .shared import _explain
from .shared import _fallback
from .shared import _is_tape_tensor
from .shared import _numbers
from .shared import _plain_indices


def _softplus(x) -> np.ndarray:
    """log(1 + e^x) in extended precision, piecewise: x + log1p(e^-x) for x > 0."""
    x = np.asarray(x, dtype=np.longdouble)
    with np.errstate(over="ignore"):
        value = np.where(
            x > 0, x + np.log1p(np.exp(-np.abs(x))), np.log1p(np.exp(np.minimum(x, 0)))
        )
    return value.astype(np.float64)


def _sigmoid(x) -> np.ndarray:
    """1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, in extended precision."""
    x = np.asarray(x, dtype=np.longdouble)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(np.float64)


# Lesson 03's points: float32 overflows past 88.7 (exp), the naive tape gradient is
# silently 0 on 87.4-88.7, the documented rule cancels to 0 from -17 down; float64
# overflows at 709.8 and flushes from 708.4. The lesson probes 100, -30 and 0 (float32)
# and 1000 and -40 (float64).
LOG1PEXP_PROBES = {
    np.float32: dict(
        include=[-30.0, -17.0, -10.0, -1.0, 0.0, 1.0, 87.4, 88.0, 88.7, 88.8, 100.0],
        fresh=[(-85.0, -20.0, 3), (-8.0, 8.0, 3), (10.0, 87.0, 2), (89.0, 100.0, 2)],
    ),
    np.float64: dict(
        include=[-40.0, -17.0, -1.0, 0.0, 1.0, 708.4, 709.8, 1000.0],
        fresh=[
            (-700.0, -50.0, 3),
            (-8.0, 8.0, 3),
            (10.0, 40.0, 2),
            (40.0, 700.0, 2),
            (710.0, 1000.0, 2),
        ],
    ),
}


def _log1pexp_points(rng, dtype):
    plan = LOG1PEXP_PROBES[dtype]
    drawn = [np.round(rng.uniform(low, high, size=count), 3) for low, high, count in plan["fresh"]]
    x = np.unique(np.concatenate([np.asarray(plan["include"])] + drawn)).astype(dtype)
    return np.unique(x)


def _positive_finite(got, expected, x64):
    """The points x >= 0 where ``got`` is finite: is the rule right there, overflow aside?"""
    keep = np.isfinite(got) & (x64 >= 0)
    return got[keep], expected[keep]


def _first(x, mask) -> float:
    return float(np.asarray(x, dtype=np.float64)[np.argmax(mask)])


def _cancelled(got, expected, wrong, eps) -> bool:
    """True when the wrong points carry only the rounding error of numbers near 1.

    Cancellation (1 - 1/(1 + e^x), log(1 + e^x), 1 + tanh(x/2), ...) leaves 0, or a
    multiple of the spacing of floats near 1, where the true value is tiny: absolute
    errors of the order of eps, no value strictly between 0 and eps/4, and at least one
    such value that is not 0 (zeros alone may as well be a tail cut off at some x).
    """
    if not wrong.any():
        return False
    g, e = np.abs(got[wrong]), np.abs(expected[wrong])
    noise = np.all(((g == 0) | (g >= eps / 4)) & (np.abs(g - e) <= 4 * eps))
    return bool(noise and np.any(g != 0))  # zeros alone could be a cut-off tail


def _raise_if_overflow(got, expected, x64, dtype, code: str, text: str) -> None:
    """``text`` (naming ``{name}``, ``{x}`` and ``{value}``) at the first inf or nan of
    ``got``, when all of them lie at x > 0 and ``got`` is right at every other x >= 0:
    an overflow, not a wrong formula."""
    bad = ~np.isfinite(got)
    if bad.any() and np.all(x64[bad] > 0) and _close(*_positive_finite(got, expected, x64), dtype):
        raise Wrong(
            text.format(name=np.dtype(dtype).name, x=_first(x64, bad), value=got[np.argmax(bad)]),
            code,
        )


def _raise_known(got, known) -> None:
    """The first whole-formula mistake that ``got`` matches wherever it is finite."""
    for code, hint, values in known:
        if matches_where_finite(got, values, atol=1e-30):
            raise Wrong(hint, code)


def _cancelled_at(got, expected, x64, tolerance, dtype, seen=None, truth=None):
    """The index of the first wrong point of ``got``, when every wrong point lies at x < 0
    and carries only the rounding error of numbers near 1 (:func:`_cancelled`, of ``seen``
    against ``truth``: by default ``got`` against ``expected``); else None."""
    wrong = ~close_points(got, expected, tolerance.rtol, tolerance.atol)
    seen, truth = (got, expected) if seen is None else (seen, truth)
    if np.all(x64[wrong] < 0) and _cancelled(seen, truth, wrong, float(np.finfo(dtype).eps)):
        return int(np.argmax(wrong))
    return None


def _wrong_in_one_tail(got, expected, x64, tolerance, name, what, formula):
    """A Wrong when ``got`` is right on one side of 0 and far off on the other, else None.

    Small relative errors everywhere are left to the generic 'approximation' hint.
    """
    right = close_points(got, expected, tolerance.rtol, tolerance.atol)
    with np.errstate(all="ignore"):
        relative = np.abs(got - expected) / np.abs(expected)
    if right.all() or (np.all(np.isfinite(relative)) and np.max(relative) < 1e-2):
        return None
    example = _plain_indices(
        describe_difference(got, expected, x64, tolerance.rtol, tolerance.atol)
    )
    if right[x64 >= 0].all():
        return Wrong(
            f"{what.capitalize()} is right for x >= 0 but not in the negative tail "
            f"(checked in {name}). {example} For x far below 0, {formula} is about "
            f"e^x: tiny, but not zero, and the check wants its digits. Look at what "
            f"your formula does for negative x.",
            "wrong_for_negative_x",
        )
    if right[x64 <= 0].all():
        return Wrong(
            f"{what.capitalize()} is right for x <= 0 but not for positive x "
            f"(checked in {name}). {example} Look at what your formula does for "
            f"x > 0, out to the largest x (100 in float32, 1000 in float64).",
            "wrong_for_positive_x",
        )
    return None


def _wrong_value(value, expected, x64, dtype, tolerance):
    _raise_if_overflow(
        value,
        expected,
        x64,
        dtype,
        "inf_value",
        "In {name} your output at x = {x:g} is {value}: log(1 + e^x) "
        "overflows in the forward pass (e^x is inf there). Compute softplus "
        "without forming e^x for large x, e.g. np.logaddexp(0, x).",
    )
    name = np.dtype(dtype).name
    _raise_known(
        value,
        [
            (
                "output_is_derivative",
                "Your output is the sigmoid, the derivative: the output is "
                "log(1 + e^x) itself, and the sigmoid belongs in grad_fn.",
                _sigmoid(x64),
            ),
            (
                "negated_input",
                "Your output is log(1 + e^-x), the function at -x: check the "
                "sign inside. The output is log(1 + e^x).",
                _softplus(-x64),
            ),
            (
                "relu_not_softplus",
                "Your output is max(x, 0), the function softplus approaches "
                "far from 0, but not softplus: log(1 + e^x) is log 2 at 0 and e^x, not 0, in the "
                "negative tail. np.logaddexp(0, x) computes it without overflow.",
                np.maximum(x64, 0.0),
            ),
        ],
    )
    index = _cancelled_at(value, expected, x64, tolerance, dtype)
    if index is not None:
        raise Wrong(
            f"For negative x your output loses its digits: in {name} at "
            f"x = {x64[index]:g} it is {value[index]:.6g}, but log(1 + e^x) is "
            f"{expected[index]:.6g} there. 1 + e^x rounds to a number near 1 before "
            f"the log, which keeps only rounding errors: np.log1p(np.exp(x)) or "
            f"np.logaddexp(0, x) keep the digits.",
            "value_cancels",
        )
    tail = _wrong_in_one_tail(value, expected, x64, tolerance, name, "your output", "log(1 + e^x)")
    if tail is not None:
        return tail
    return _explain(
        value,
        expected,
        at=x64,
        rtol=tolerance.rtol,
        atol=tolerance.atol,
        what="your output",
        summary=f"The output should be log(1 + e^x) (checked in {name}).",
    )


UPSTREAM_FACTORS = [  # (what the factor is, how it is computed from the upstream)
    ("upstream squared (upstream * upstream)", np.square),
    ("abs(upstream)", np.abs),
    ("1 / upstream", np.reciprocal),
    ("upstream / 2", lambda u: u / 2.0),
    ("2 * upstream", lambda u: 2.0 * u),
]


def _pointwise_upstream(got, upstream64, again):
    """False when the gradient divided by the upstream changes as the upstream values are
    reordered (the rule mixes points); True when it does not; None when it cannot tell."""
    if again is None or not np.all(np.isfinite(got)):
        return None
    try:
        reordered = again(lambda u: u[::-1])
        second = np.asarray(reordered, dtype=np.float64)
    except Exception:  # noqa: BLE001 - a Wrong or an odd result: no verdict from it
        return None
    if second.shape != got.shape or not np.all(np.isfinite(second)):
        return None
    with np.errstate(all="ignore"):
        return matches(second / upstream64[::-1], got / upstream64, rtol=1e-6, atol=1e-300)


def _wrong_gradient(got, expected, x64, upstream64, dtype, tolerance, again=None):
    _raise_if_overflow(
        got,
        expected,
        x64,
        dtype,
        "nan_gradient",
        "In {name} your grad_fn gives {value} at x = {x:g}: e^x (or upstream "
        "* e^x) overflows to inf there, and what the formula does with it "
        "(inf / inf, 0 * inf) is nan. Compute the sigmoid in a form that "
        "never overflows, for example exp(-softplus(-x)).",
    )
    name = np.dtype(dtype).name
    sigmoid = _sigmoid(x64)
    with np.errstate(all="ignore"):
        known = [
            (
                "forgot_upstream",
                "grad_fn returns sigmoid(x) but forgets the upstream gradient: return "
                "upstream * sigmoid(x). (Invisible when upstream = 1, wrong inside a chain.)",
                sigmoid,
            ),
            (
                "forgot_local_derivative",
                "grad_fn returns the upstream gradient unchanged: multiply it by the local "
                "derivative, sigmoid(x).",
                upstream64,
            ),
            (
                "negated_input",
                "grad_fn returns upstream * sigmoid(-x): check the sign inside. The derivative "
                "of log(1 + e^x) is e^x / (1 + e^x) = sigmoid(x).",
                upstream64 * _sigmoid(-x64),
            ),
            (
                "value_not_derivative",
                "grad_fn returns upstream times log(1 + e^x), the function's value: it should "
                "multiply by the derivative, sigmoid(x).",
                upstream64 * _softplus(x64),
            ),
            (
                "differentiated_twice",
                "grad_fn returns upstream * sigmoid(x) * (1 - sigmoid(x)): that is the "
                "derivative of the sigmoid, one differentiation too many. The derivative of "
                "log(1 + e^x) is sigmoid(x) itself.",
                upstream64 * sigmoid * _sigmoid(-x64),
            ),
            (
                "relu_not_softplus",
                "grad_fn returns upstream times a step (1 for x > 0, 0 below): the derivative "
                "of max(x, 0), not of log(1 + e^x). The sigmoid is the smooth version of that "
                "step: return upstream * sigmoid(x).",
                upstream64 * (x64 > 0),
            ),
        ] + [
            (
                "upstream_used_wrongly",
                f"The local derivative in your grad_fn is right, but it multiplies sigmoid(x) "
                f"by {factor}. The upstream gradient enters once, as a plain factor: return "
                f"upstream * sigmoid(x).",
                compute(upstream64) * sigmoid,
            )
            for factor, compute in UPSTREAM_FACTORS
        ]
    _raise_known(got, known)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = got / upstream64
    index = _cancelled_at(got, expected, x64, tolerance, dtype, seen=ratio, truth=sigmoid)
    if index is not None:
        raise Wrong(
            f"For negative x your gradient loses its digits: in {name} at "
            f"x = {x64[index]:g} it is {got[index]:.6g}, but upstream * sigmoid(x) "
            f"is {expected[index]:.6g} there. sigmoid(x) is tiny for negative x, "
            f"and your formula gets it from numbers close to 1, so only their "
            f"rounding error is left. Compute it from e^x directly: "
            f"exp(-softplus(-x)), or e^x / (1 + e^x) for x < 0.",
            "cancels_for_negative_x",
        )
    tail = _wrong_in_one_tail(
        got, expected, x64, tolerance, name, "your gradient", "upstream * sigmoid(x)"
    )
    if tail is not None:
        return tail
    mixed = Wrong(
        f"Your grad_fn mixes the upstream gradients of different points: called "
        f"again with the same upstream values in another order, its gradient "
        f"divided by the upstream changed (checked in {name}). The gradient at each "
        f"x uses the upstream at that same x, times sigmoid(x): no sum, mean or "
        f"reordering of the upstream.",
        "upstream_used_wrongly",
    )
    return _fallback(
        got,
        expected,
        again=lambda: again(lambda u: 2 * u),
        at=x64,
        mixed=lambda: mixed if _pointwise_upstream(got, upstream64, again) is False else None,
        rtol=tolerance.rtol,
        atol=tolerance.atol,
        what="your gradient",
        local="sigmoid(x)",
        summary=f"grad_fn should return upstream * sigmoid(x) (checked in {name}).",
    )


@exercise("6.4", "the stable log1pexp rule for our custom_gradient")
def log1pexp_rule(answer):
    """Runs the rule as our ``custom_gradient`` does: ``answer(x)``, then ``grad_fn(dy)``.

    The exercise asks for the rule itself (the function our decorator takes), so the
    check runs it exactly as the decorator's record would: it calls ``answer`` on a
    NumPy array, takes ``(output, grad_fn)``, and calls ``grad_fn`` with an upstream
    gradient, so the gradient judged is the one the learner's ``grad_fn`` returns.

    Probes, in float32: -30, 0 and 100 (the lesson's points), -1 and 1 (both sides of
    0, always), -17 and -10 (where the documented rule cancels), 87.4, 88.0, 88.7 and
    88.8 (the flush-to-zero band and the overflow), plus fresh points in [-85, -20],
    [-8, 8], [10, 87] and [89, 100]; in
    float64: -40 and 1000 (the lesson's points), -17, -1, 0, 1, 708.4 and 709.8 (float64's
    flush and overflow), plus fresh points from -700 to 1000. Upstream gradients are
    fresh, of both signs and never 1. Judged per point with float32 and float64
    tolerances against extended-precision references; output and gradient must keep
    the input's dtype (float64 in, float64 out); the input and the upstream must come
    back unchanged.
    """
    require_callable(answer)
    if hasattr(answer, "__wrapped__"):
        raise Wrong(
            "Your function is decorated (with @custom_gradient above its `def`). "
            "The exercise asks for the rule itself, the plain function that returns "
            "(output, grad_fn): take the decorator off; the cell after the check "
            "registers the rule with custom_gradient.",
            "rule_decorated",
        )
    rng = fresh_rng("6.4")
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        tolerance = tolerance_for(dtype)
        x = _log1pexp_points(rng, dtype)
        x64 = x.astype(np.float64)
        upstream = np.asarray(fresh_upstream(rng, x.shape), dtype=dtype)
        upstream64 = upstream.astype(np.float64)
        x_given, upstream_given = x.copy(), upstream.copy()
        with np.errstate(all="ignore"):
            result = call_answer(answer, x_given, name="`log1pexp_rule`")
        if _is_tape_tensor(result) or hasattr(result, "vjp"):
            raise Wrong(
                "Your rule returned a Tensor of our tape: it was built from the "
                "tape's own operations (or decorated). The rule works on NumPy "
                "arrays and returns the pair (output, grad_fn), both computed with "
                "np. functions.",
                "used_tape",
            )
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise Wrong(
                "Like tf.custom_gradient, the rule must return two things: the "
                "output and the function grad_fn, as `return output, grad_fn`.",
                "not_a_pair",
            )
        output, grad_fn = result
        value = _numbers(output, f"Your output (for {name} input)", shape=x.shape, dtype=dtype)
        expected_value = _softplus(x64)
        if not _close(value, expected_value, dtype):
            raise _wrong_value(value, expected_value, x64, dtype, tolerance)
        if not callable(grad_fn):
            raise Wrong(
                f"The second thing your rule returns should be grad_fn, a function "
                f"of the upstream gradient; it is a {type(grad_fn).__name__}.",
                "grad_fn_not_callable",
            )
        with np.errstate(all="ignore"):
            gradient = call_answer(grad_fn, upstream_given, name="Your grad_fn")
        if isinstance(gradient, (tuple, list)) and len(gradient) == 1:
            gradient = gradient[0]  # one gradient per input: a 1-tuple is fine
        elif isinstance(gradient, (tuple, list)):
            raise Wrong(
                f"Your grad_fn returned {len(gradient)} values. The rule has one "
                f"input, x, so grad_fn returns one gradient: upstream * sigmoid(x).",
                "wrong_structure",
            )
        changed = _changed([(x_given, x), (upstream_given, upstream)])
        if changed:
            which = "x" if changed[0] is x_given else "the upstream gradient"
            raise Wrong(
                f"Your rule changed {which} in place (`*=`, `+=`, out=...). The tape "
                f"still holds it, and the same upstream array may go to other "
                f"inputs: build new arrays instead.",
                "changed_in_place",
            )
        got = _numbers(
            gradient, f"What your grad_fn returned (for {name} input)", shape=x.shape, dtype=dtype
        )
        expected = upstream64 * _sigmoid(x64)
        if not _close(got, expected, dtype):

            def again(transform):
                with np.errstate(all="ignore"):
                    second = call_answer(
                        grad_fn, transform(upstream).astype(dtype), name="Your grad_fn"
                    )
                if isinstance(second, (tuple, list)) and len(second) == 1:
                    second = second[0]
                return second

            raise _wrong_gradient(got, expected, x64, upstream64, dtype, tolerance, again)
    return (
        "Softplus forward, upstream * sigmoid backward, in the input's dtype: your "
        "grad_fn was called with upstream gradients that are not 1, and value and "
        "gradient are finite and accurate from x = -85 to 100 in float32 (across the "
        "overflow at 88.7) and from -700 to 1000 in float64."
    )
