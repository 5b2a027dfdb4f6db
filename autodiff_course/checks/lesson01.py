"""Checks for lesson 01, *The chain rule and the upstream gradient dy*.

Every reference is a closed form evaluated in float64 NumPy (the sigmoid, the
softplus, the exact value of a central difference), independent of the
TensorFlow code the exercises ask for. Probes are drawn fresh on every call, so
numbers copied from the lesson fail; float64 probes are judged with float64
tolerances, so float32 shortcuts and finite differences fail where the exercise
asks for the exact derivative.
"""

from __future__ import annotations

import re

import numpy as np

from ..checking import (
    FLOAT32, FLOAT64, Tolerance, Wrong, as_values, call_answer, exercise,
    explain_difference, floor_of, fresh_rng, judge, matches, mistakes, observe,
    observed_call, observed_call_keeping_errors, partly_right, points, require_by_hand,
    require_output_gradients, signed, upstream, why_none,
)
from ..log1pexp import reference_sigmoid as _sigmoid, reference_softplus as _softplus

mistakes.register({
    "forgot_outer_derivative": "the inner function's derivative without the outer one's",
    "inverted_fraction": "1/u (the outer derivative) where e^x/u belongs",
    "quotient_rule_slip": "divided by u**2 where the derivative of log(u) is 1/u",
    "derivative_of_softplus": "the derivative of log(1 + e^x) where e^-x is asked for",
    "forward_difference": "a forward difference (f(x + h) - f(x)) / h where the central one is asked for",
    "backward_difference": "a backward difference (f(x) - f(x - h)) / h where the central one is asked for",
    "missing_half": "a central difference divided by h instead of 2h",
    "perturbed_all": "every coordinate moved at once instead of one at a time",
    "mutated_input": "the function changed the array it received",
    "step_not_h": "a coordinate moved by another step than the h the difference is divided by",
    "steps_accumulate": "finite-difference steps left in place, so later coordinates move together",
    "wrong_order": "a local derivative applied after the step it belongs before",
    "mean_over_one_axis": "divided by one dimension instead of the number of elements",
    "missed_coordinates": "some coordinates never estimated (left at 0)",
    "wrong_dy": "an upstream gradient dy other than d(loss)/d(output)",
    "not_linear_in_dy": "a vector-Jacobian product that is not linear in dy",
    "wrong_jacobian": "a product with another matrix than the Jacobian",
    "wrong_inner_factor": "the inner function's derivative dropped or altered",
    "wrong_outer_factor": "the outer function's derivative dropped or altered",
    "local_derivative_twice": "the local derivative multiplied in again after the tape applied it",
    "added_not_multiplied": "the chain rule's factors added where they multiply",
    "ignored_target": "the upstream gradient of a loss computed without its target",
    "lost_sign": "an absolute value where the sign of the residual belongs",
    "dy_of_ones": "dy = 1 where the loss's upstream gradient belongs",
    "dy_from_x": "the upstream gradient computed from x instead of from the output",
    "returned_dy": "the upstream gradient returned without the local derivative",
    "dy_applied_twice": "the upstream gradient applied to a target that already contains it",
    "output_gradients_shape": "output_gradients whose shape is not the target's",
    "returned_jacobian": "the whole Jacobian where the vector-Jacobian product belongs",
    "no_transpose": "multiplied by W where W transposed belongs",
    "local_at_input": "a local derivative evaluated at the wrong point",
})

def _call(answer, *args, keep_errors: bool = False):
    """Call the answer while observing it: ``(value, log)``, or with ``keep_errors``
    ``(value, log, wrong)`` where ``wrong`` is the learner's own exception or None."""
    if keep_errors:
        return observed_call_keeping_errors(answer, *args)
    return observed_call(answer, *args)


def _judge(got, expected, tol: Tolerance, *, summary: str, dtype: str, **details) -> None:
    judge(got, expected, tol, summary=summary, dtype=dtype, **details)


def _shape_of(value):
    """The shape of whatever came back, or None when it has none we can read."""
    if isinstance(value, (bool, int, float, np.generic)):
        return ()
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(shape)
    except Exception:  # noqa: BLE001 - an exotic object: let as_values name it
        return None


def _tolerance(dtype, float32: Tolerance, float64: Tolerance) -> Tolerance:
    return float64 if dtype == "float64" else float32


def _as_tensor(values, dtype: str):
    import tensorflow as tf

    return tf.constant(values, dtype=getattr(tf, dtype))


# Exercise 1.1 ---------------------------------------------------------------

def _chain_slips(x):
    """Every way to get one or more of the three chain-rule factors wrong.

    d/dx log(1 + e^-x) = (1/u) * (e^-x) * (-1) with u = 1 + e^-x. Each factor has
    its typical slips; every combination except the right one becomes a known
    mistake whose hint names exactly the factors that differ.
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        e, u = np.exp(-x), 1.0 + np.exp(-x)
        outer = [(1.0 / u, None, None),
                 (np.ones_like(x), "the derivative of log(u), 1/u, is missing",
                  "forgot_outer_derivative"),
                 (u, "you multiplied by u = 1 + e^-x, but the derivative of log(u) "
                  "divides by it: 1/u", "wrong_outer_factor"),
                 (np.log(u), "you multiplied by log(u) itself where its derivative, "
                  "1/u, belongs", "value_not_derivative"),
                 (1.0 / np.log(u), "you divided by log(u), the function's value; "
                  "the derivative of log(u) divides by u itself", "wrong_outer_factor"),
                 (1.0 / u**2, "you divided by u**2; the derivative of log(u) is 1/u "
                  "(u**2 belongs to the quotient rule)", "quotient_rule_slip"),
                 (1.0 / (1.0 + np.exp(x)), "the u in 1/u must be 1 + e^-x, with the "
                  "function's own exponent", "wrong_outer_factor")]
        middle = [(e, None, None),
                  (np.ones_like(x), "the middle factor, the derivative of e^v "
                   "(e^v itself, at v = -x), is missing", "wrong_inner_factor"),
                  (np.exp(x), "the middle factor must be e^-x: the exponent keeps its "
                   "minus sign", "wrong_inner_factor")]
        sign = [(-1.0, None, None),
                (1.0, "the last factor, -1 (the derivative of -x), is missing",
                 "sign_flipped")]
        slips = []
        for o_values, o_text, o_code in outer:
            for m_values, m_text, m_code in middle:
                for sign_value, s_text, s_code in sign:
                    texts = [t for t in (o_text, m_text, s_text) if t]
                    if not texts:
                        continue
                    code = o_code or m_code or s_code
                    hint = ("The chain rule gives (1/u) * e^-x * (-1) with u = 1 + e^-x. "
                            "In yours, " + "; ".join(texts) + ".")
                    slips.append((code, hint, sign_value * m_values * o_values))
    return slips


# sigmoid(x) - 1 cancels for large x: an absolute floor far below float32's
# resolution keeps that correct form correct without letting float32 into float64.
LOGISTIC_TOL32 = Tolerance(rtol=FLOAT32.rtol, atol=1e-7)
LOGISTIC_TOL64 = Tolerance(rtol=FLOAT64.rtol, atol=1e-15)


@exercise("1.1", "d/dx log(1 + e^-x) by hand")
def logistic_derivative(answer):
    """The derivative of the logistic loss log(1 + e^-x), worked out by hand.

    Method: no tape, no ForwardAccumulator, no tf.test.compute_gradient (observed).
    Probes, fresh on every call: a float32 vector over [-12, 12] plus 0, -1, 1 and
    both tails -15 and 15 (where the answer tends to -1 and to 0); a float64 (2, 4)
    matrix over [-15, 15]; a float64 scalar in [-3, 3]. dtype in = dtype out; float64
    is judged to 1e-11 relative (1e-15 absolute), so float32 arithmetic and finite
    differences fail.
    """
    rng = fresh_rng("1.1")
    probes = [
        ("float32", points(rng, -12.0, 12.0, 8, include=(-15.0, -1.0, 0.0, 1.0, 15.0))),
        ("float64", np.round(rng.uniform(-15.0, 15.0, size=(2, 4)), 4)),
        ("float64", np.array(np.round(rng.uniform(-3.0, 3.0), 4))),
    ]
    for dtype, x_values in probes:
        x = _as_tensor(x_values, dtype)
        value, log = _call(answer, x)
        require_by_hand(log, "exercise 1.1")
        got = as_values(value, shape=x.shape, dtype=x.dtype)
        s = _sigmoid(x_values)
        e = np.exp(-x_values)
        expected = -_sigmoid(-x_values)  # sigmoid(x) - 1 without the cancellation

        def outer_power(got, x_values=x_values, e=e):
            """If the answer is -e^-x * c * u**p, name the power of u it used."""
            u = 1.0 + e
            with np.errstate(divide="ignore", invalid="ignore"):
                implied = got / (-e)
            usable = np.isfinite(implied) & (implied > 0) & (np.abs(np.log(u)) > 1e-3)
            if usable.sum() < 3:
                return None
            p, c = np.polyfit(np.log(u[usable]), np.log(implied[usable]), 1)
            fitted = np.exp(c) * u[usable] ** p
            if not np.allclose(implied[usable], fitted, rtol=1e-3) or abs(p + 1) < 1e-3:
                return None
            return Wrong(f"Your derivative is -e^-x times {np.exp(c):.4g} * u**{p:.4g}, "
                         f"with u = 1 + e^-x, where the chain rule gives -e^-x times "
                         f"1/u = u**-1. The derivative of log(u) is 1/u: no other power "
                         f"of u.", "wrong_outer_factor")

        _judge(got, expected, _tolerance(dtype, LOGISTIC_TOL32, LOGISTIC_TOL64),
               dtype=dtype, at=x_values, what="your derivative", fallback=outer_power,
               summary="The derivative of log(1 + e^-x) is -e^-x / (1 + e^-x) "
                       "= sigmoid(x) - 1.",
               known=[
                   ("sign_flipped", "You returned e^-x / (1 + e^-x), which has the "
                    "wrong sign: the chain rule's innermost factor is the derivative "
                    "of -x, which is -1. Walk the ops: negate, exp, add 1, log.",
                    _sigmoid(-x_values)),
                   ("forgot_outer_derivative", "You returned the derivative of the "
                    "inside, 1 + e^-x, alone. The chain rule also multiplies by the "
                    "derivative of log(u), which is 1/u.", -e),
                   ("forgot_outer_derivative", "You returned e^-x: the derivative of "
                    "log(u) (1/u) and of -x (-1) are both missing.", e),
                   ("inverted_fraction", "You returned -sigmoid(x) = -e^x/(1 + e^x) "
                    "= -1/(1 + e^-x). Either the exponent stayed +x (the function is "
                    "log(1 + e^-x)), or the middle factor, the derivative of e^-x, is "
                    "missing from 1/u times -1.", -s),
                   ("derivative_of_softplus", "You returned sigmoid(x), the "
                    "derivative of log(1 + e^x) from the lesson. Here the exponent is "
                    "-x: e^x becomes e^-x, and the chain rule gains a factor -1, the "
                    "derivative of -x.", s),
                   ("value_not_derivative", "You returned log(1 + e^-x) itself: the "
                    "exercise asks for its derivative.", _softplus(-x_values)),
                   ("value_not_derivative", "You returned -log(1 + e^-x), which is "
                    "log(sigmoid(x)) (tf.math.log_sigmoid): minus the function itself. "
                    "The exercise asks for its derivative.", -_softplus(-x_values)),
                   ("value_not_derivative", "You multiplied by log(u), the outer "
                    "function itself, where its derivative 1/u belongs: the chain rule "
                    "multiplies derivatives, evaluated at the inner value.",
                    -_softplus(-x_values) * e),
                   ("value_not_derivative", "You multiplied by log(u), the outer "
                    "function itself, where its derivative 1/u belongs (and the -1 "
                    "from -x is missing too).", _softplus(-x_values) * e),
                   ("differentiated_twice", "You returned sigmoid(x)(1 - sigmoid(x)) "
                    "= e^-x / (1 + e^-x)**2, which is the second derivative: one "
                    "differentiation too many (or a 1/u**2 where the derivative of "
                    "log(u) is 1/u, with the -1 from -x lost as well).",
                    s * _sigmoid(-x_values)),
                   ("quotient_rule_slip", "You divided by (1 + e^-x)**2. The "
                    "derivative of log(u) is 1/u, not 1/u**2 (that denominator belongs "
                    "to the quotient rule, which is not needed here).",
                    -s * _sigmoid(-x_values)),
               ] + _chain_slips(x_values), terms=[("x", x_values)])
    return ("By hand, without a tape: -e^-x / (1 + e^-x) = sigmoid(x) - 1, right at "
            "both tails (x = -15 and 15), for a scalar, a vector and a matrix, in "
            "float32 and to float64 precision in float64.")


# Exercise 1.2 ---------------------------------------------------------------

def _test_functions(rng, n: int):
    """Three functions of a vector whose central differences have closed forms.

    Each is ``(name, f, exact(x, h))`` where ``exact`` is the exact value of
    (f(x + h e_i) - f(x - h e_i)) / (2h) for every i. The coordinates are coupled
    (through a . x), so moving them all at once or not putting one back shows.
    """
    a = signed(rng, n, 0.5, 2.0, decimals=2)
    c = signed(rng, n, 0.5, 2.0, decimals=2)

    def wave(x):
        return float(np.sin(np.dot(a, x)))

    def growth(x):
        return float(np.exp(0.5 * np.dot(a, x)))

    def cubic(x):
        x = np.asarray(x, dtype=np.float64)
        return float(np.sum(c * x**3) + np.dot(a, x) ** 2)

    return [
        ("sin(a . x)", wave, lambda x, h: np.cos(a @ x) * np.sin(a * h) / h),
        ("exp(a . x / 2)", growth,
         lambda x, h: np.exp(0.5 * (a @ x)) * np.sinh(0.5 * a * h) / h),
        ("sum(c x**3) + (a . x)**2", cubic,
         lambda x, h: c * (3 * x**2 + h**2) + 2.0 * (a @ x) * a),
    ]


def _one_at_a_time(f, x, h, rule):
    rows = np.eye(x.size)
    return np.array([rule(f, x, h * row, h) for row in rows])


def _not_restored(f, x, h):
    """What moving x[i] up and down in place, without putting it back, gives."""
    x = x.copy()
    result = np.zeros_like(x)
    for i in range(x.size):
        x[i] += h
        up = f(x)
        x[i] -= 2 * h
        result[i] = (up - f(x)) / (2 * h)
    return result


def _accumulated(f, x, h):
    """What two copies made once, before the loop, and never reset give."""
    above, below = x.copy(), x.copy()
    result = np.zeros_like(x)
    for i in range(x.size):
        above[i] += h
        below[i] -= h
        result[i] = (f(above) - f(below)) / (2 * h)
    return result


CENTRAL_TOL = Tolerance(rtol=1e-9, atol=1e-9)


@exercise("1.2", "a central-difference gradient")
def central_gradient(answer):
    """The gradient of f: R^n -> R by central differences, one coordinate at a time.

    Probes, fresh on every call: vectors of length 1, 2-3 and 4-6 with values in
    [-2, 2] of both signs; three functions with coupled coordinates (sin(a . x),
    exp(a . x / 2), a cubic plus (a . x)**2) whose exact central differences are
    closed forms; h of 1e-1, 1e-2 and 1e-3, large enough that forward differences,
    moving every coordinate at once, or a coordinate not put back all show. The
    check also verifies that x is left unchanged.
    """
    rng = fresh_rng("1.2")
    sizes = [int(rng.integers(2, 4)), 1, int(rng.integers(4, 7))]
    steps = rng.permutation([1e-1, 1e-2, 1e-3])
    for n, h in zip(sizes, steps):
        x_values = np.round(rng.uniform(-2.0, 2.0, size=n), 3)
        for name, f, exact in _test_functions(rng, n):
            x = x_values.copy()
            value, _ = _call(answer, f, x, float(h))
            moved = not np.allclose(x, x_values, rtol=0.0, atol=1e-12)
            if _shape_of(value) == ():
                whole = (f(x_values + h) - f(x_values - h)) / (2 * h)
                got = as_values(value, shape=(), require_tensor=False)
                if n > 1 and matches(got, whole, 1e-9, 1e-12):
                    raise Wrong("One number came back: you moved every coordinate "
                                "at once, x + h, which is the slope along the "
                                "diagonal. Move one coordinate at a time and return "
                                "one estimate per coordinate.", "perturbed_all")
                raise Wrong(f"One number came back, but the gradient has one entry "
                            f"per coordinate of x: return an array of shape ({n},), "
                            f"entry i moving coordinate i only.", "wrong_shape")
            got = as_values(value, shape=(n,), require_tensor=False)
            expected = exact(x_values, h)
            right = matches(got, expected, CENTRAL_TOL.rtol, CENTRAL_TOL.atol)
            if moved:
                raise Wrong("Your function changed the array x it received"
                            + (" (your estimates are right, but the caller's x is not "
                               "what it was)" if right else
                               ": a coordinate was moved by h and not put back, so the "
                               "later coordinates were estimated at a shifted point")
                            + ". Build the two points as new arrays, e.g. x + h * e "
                            "with e = np.eye(len(x))[i], or work on x.copy().",
                            "mutated_input")
            if right:
                continue
            forward = _one_at_a_time(f, x_values, h, lambda f, x, s, h: (f(x + s) - f(x)) / h)
            backward = _one_at_a_time(f, x_values, h, lambda f, x, s, h: (f(x) - f(x - s)) / h)
            if n > 1 and np.ptp(got) == 0.0 and np.ptp(expected) > 0.0 and np.any(got):
                raise Wrong("Every entry of your estimate is the same number, so every "
                            "entry moved the same coordinates (all of them at once, "
                            "x + h, or always the same one). Entry i must move "
                            "coordinate i only: x + h e_i.", "perturbed_all")
            unset = (got == 0.0) & (expected != 0.0)
            if n > 1 and unset.any() and not unset.all() and matches(
                    got[~unset], expected[~unset], CENTRAL_TOL.rtol, CENTRAL_TOL.atol):
                missing = [str(i) for i in np.flatnonzero(unset)]
                which = (f"Entry {missing[0]} of your estimate is" if len(missing) == 1
                         else f"Entries {', '.join(missing)} of your estimate are")
                raise Wrong(f"{which} 0 and the others are right: the loop never "
                            f"reached {'that coordinate' if len(missing) == 1 else 'those coordinates'}. "
                            f"Loop over every coordinate, range(len(x)).",
                            "missed_coordinates")
            halfless = 2.0 * expected
            whole = np.full(n, (f(x_values + h) - f(x_values - h)) / (2 * h))
            known = [
                ("forward_difference", "That is the forward difference "
                 "(f(x + h e_i) - f(x)) / h, whose error shrinks only like h. The "
                 "central difference uses f(x + h e_i) and f(x - h e_i).", forward),
                ("backward_difference", "That is the backward difference "
                 "(f(x) - f(x - h e_i)) / h. The central difference uses "
                 "f(x + h e_i) and f(x - h e_i).", backward),
                ("perturbed_all", "One of your two points moves every coordinate: "
                 "you used f(x + h e_i) - f(x - h), with all of x moved on the minus side. "
                 "Move only coordinate i on both sides: x + h e_i and x - h e_i.",
                 _one_at_a_time(f, x_values, h, lambda f, x, s, h: (
                     f(x + s) - f(x - h)) / (2 * h))),
                ("perturbed_all", "One of your two points moves every coordinate: "
                 "you used f(x + h) - f(x - h e_i), with all of x moved on the plus side. "
                 "Move only coordinate i on both sides: x + h e_i and x - h e_i.",
                 _one_at_a_time(f, x_values, h, lambda f, x, s, h: (
                     f(x + h) - f(x - s)) / (2 * h))),
                ("missing_half", "You divided by h instead of 2h: x + h e_i and "
                 "x - h e_i are 2h apart.", halfless),
                ("forward_difference", "You divided the one-sided difference "
                 "f(x + h e_i) - f(x) by 2h. The central difference takes both "
                 "neighbours: f(x + h e_i) - f(x - h e_i), over 2h.", forward / 2.0),
                ("backward_difference", "You divided the one-sided difference "
                 "f(x) - f(x - h e_i) by 2h. The central difference takes both "
                 "neighbours: f(x + h e_i) - f(x - h e_i), over 2h.", backward / 2.0),
                ("scale_factor", f"Your estimate is h**2 = {h * h:g} times the "
                 f"answer: `/ 2 * h` divides by 2 and then multiplies by h. Write "
                 f"`/ (2 * h)`.", expected * h * h),
                ("step_not_h", "Coordinate i was moved by h * x[i] (a relative "
                 "step) but the difference was divided by 2h: the step you divide by "
                 "must be the one you moved by. Move coordinate i by exactly h.",
                 _one_at_a_time(f, x_values, h, lambda f, x, s, h: (
                     f(x + s * x) - f(x - s * x)) / (2 * h))),
                ("step_not_h", "Coordinate i was moved by h * |x[i]| but the "
                 "difference was divided by 2h: the step you divide by must be the one "
                 "you moved by. Move coordinate i by exactly h.",
                 _one_at_a_time(f, x_values, h, lambda f, x, s, h: (
                     f(x + s * np.abs(x)) - f(x - s * np.abs(x))) / (2 * h))),
                *[("step_not_h", f"Coordinate i was moved by {c:g} h but the "
                   f"difference was divided by 2h: the step you divide by must be the "
                   f"one you moved by. Move coordinate i by exactly h.",
                   _one_at_a_time(f, x_values, h, lambda f, x, s, h, c=c: (
                       f(x + c * s) - f(x - c * s)) / (2 * h)))
                  for c in (2.0, 0.5, 10.0, 0.1)],
                ("step_not_h", "Coordinate i was moved by 1 (a unit vector e_i) but "
                 "the difference was divided by 2h: scale the unit vector by h, "
                 "x + h e_i and x - h e_i.",
                 _one_at_a_time(f, x_values, h, lambda f, x, s, h: (
                     f(x + s / h) - f(x - s / h)) / (2 * h))),
                ("zeros", "Every estimate is 0: f was evaluated twice at the same "
                 "point, so the step never reached x (two names for one array, "
                 "or a step stored in an integer array, which rounds h to 0).",
                 np.zeros(n)),
            ]
            if n > 1:
                known.append(("perturbed_all", "Every entry is the same number: you "
                              "moved every coordinate at once (x + h). Move only "
                              "coordinate i for entry i.", whole))
                known.append(("mutated_input", "Coordinate i was moved in place and "
                              "not put back, so the later coordinates were estimated "
                              "at a shifted point. Work on copies of x.",
                              _not_restored(f, x_values, h)))
                known.append(("steps_accumulate", "The steps pile up: entry i was "
                              "estimated with coordinates 0 to i all moved, because the "
                              "moved copies of x were made once, before the loop, and "
                              "never reset. Make fresh copies (or a fresh step vector) "
                              "for every i.", _accumulated(f, x_values, h)))
            wrong = explain_difference(
                got, expected, rtol=CENTRAL_TOL.rtol, atol=CENTRAL_TOL.atol,
                known=known, what="your estimate",
                summary=f"For f(x) = {name}, n = {n} and h = {h:g}, the central "
                        f"difference (f(x + h e_i) - f(x - h e_i)) / (2h) differs.")
            if wrong.mistake == "other":
                wrong = partly_right(got, expected, CENTRAL_TOL.rtol, CENTRAL_TOL.atol,
                                     "your estimate") or wrong
            ratio = float(np.sum(got * expected) / np.sum(expected * expected)) \
                if np.any(expected) else 0.0
            if wrong.mistake == "other" and abs(ratio - 1.0) > 0.05 and matches(
                    got, ratio * expected, 2e-2, 1e-6 * max(1.0, float(np.max(np.abs(got))))):
                wrong = Wrong(f"Your estimate is close to {ratio:.4g} times the central "
                              f"difference: something multiplies the whole difference "
                              f"(f squared or applied twice, an extra factor). Use f's "
                              f"values as they are: (f(x + h e_i) - f(x - h e_i)) / (2h).",
                              "scale_factor")
            scale = max(1.0, float(np.max(np.abs(expected))))
            if wrong.mistake in ("other", "approximation") and matches(
                    got, expected, 1e-2, 1e-6 * scale):
                wrong = Wrong(f"Your estimate is close to the central difference with "
                              f"h = {h:g}, but not equal to it: the exercise asks for "
                              f"exactly (f(x + h e_i) - f(x - h e_i)) / (2h) with the h "
                              f"it passes. Did you move the coordinate by another step "
                              f"(a relative step such as h * x[i], a fixed 1e-5), or "
                              f"compute in float32?", "approximation")
            raise wrong
    return ("(f(x + h e_i) - f(x - h e_i)) / (2h), one coordinate at a time: exact to "
            "rounding for three functions with coupled coordinates, vectors of length "
            "1 to 6 and h from 1e-3 to 1e-1; x was left unchanged.")


# Exercise 1.3 ---------------------------------------------------------------

def _residuals(rng, shape):
    """Residuals in [0.2, 2] of both signs (always both) and, beyond one entry, one 0."""
    residual = signed(rng, shape, 0.2, 2.0)
    flat = residual.reshape(-1)
    if flat.size >= 3:
        order = rng.permutation(flat.size)
        flat[order[0]] = abs(flat[order[0]])
        flat[order[1]] = -abs(flat[order[1]])
        flat[order[2]] = 0.0
    return residual


def _vector_size(rng) -> int:
    """3, 5, 6 or 7 elements: never 4, where 2/N = (2/N)**2 * N/2 makes mistakes coincide."""
    return int(rng.choice([3, 5, 6, 7]))


def _regression_probes(rng, shapes_and_dtypes):
    """(dtype, output, target): outputs and residuals of both signs, one residual 0."""
    probes = []
    for shape, dtype in shapes_and_dtypes:
        output = signed(rng, shape, 0.1, 3.0)
        residual = _residuals(rng, shape)
        target = output - residual
        if dtype == "float32":
            output = output.astype(np.float32).astype(np.float64)
            target = target.astype(np.float32).astype(np.float64)
        probes.append((dtype, output, target))
    return probes


def _kept_the_square(got, residual, what: str) -> None:
    """Raise when ``got`` is a multiple of the squared residual (the loss's terms)."""
    squared = np.asarray(residual, dtype=np.float64) ** 2
    denominator = float(np.sum(squared * squared))
    if squared.size < 2 or denominator == 0.0 or np.ptp(squared) == 0.0:
        return
    factor = float(np.sum(np.asarray(got) * squared)) / denominator
    if factor != 0.0 and matches(got, factor * squared, 1e-6, 1e-12):
        raise Wrong(f"{what} is a multiple of the squared residual (output - target)**2: "
                    "the square is still there. Differentiating (output - target)**2 "
                    "with respect to output gives 2 (output - target): the square "
                    "becomes a factor 2.", "value_not_derivative")


def _dy_mistakes(output, target, what="dy"):
    """The upstream gradients learners compute instead of 2 (output - target) / N."""
    size = max(output.size, 1)
    residual = output - target
    found = [
        ("sign_flipped", f"{what} has the wrong sign: d/d(output) of "
         "(output - target)**2 is 2 (output - target), residual in that order.",
         -2.0 * residual / size),
        ("sum_not_mean", f"{what} is {size} times too large, and {size} is the number "
         "of elements: you differentiated the sum of the squares. The loss is their "
         "mean, so divide by N = tf.size(output).", 2.0 * residual),
        ("scale_factor", f"{what} is half the answer: the 2 from differentiating the "
         "square is missing.", residual / size),
        ("ignored_target", f"{what} does not use the target: the square is of "
         "(output - target), so its derivative is 2 (output - target) / N.",
         2.0 * output / size),
        ("lost_sign", f"{what} is always positive: an absolute value (or a square "
         "root of a square) dropped the sign of output - target, which tells the "
         "output which way to move.", 2.0 * np.abs(residual) / size),
        ("value_not_derivative", f"{what} is the squared residual: that is the "
         "loss's terms, not the loss's derivative.", residual**2 / size),
        ("value_not_derivative", f"{what} is the squared residual: that is the "
         "loss's terms, not the loss's derivative.", residual**2),
        ("wrong_dy", f"{what} is 2/N times the sign of output - target: that is the "
         "derivative of the mean *absolute* error, mean(|output - target|). For the "
         "mean squared error the size of the residual counts too: 2 (output - target) / N.",
         2.0 * np.sign(residual) / size),
        ("dy_of_ones", f"{what} is all ones: that is the upstream gradient when the "
         "output itself is the target. Here the target of the differentiation is the "
         "loss, so dy = d(loss)/d(output).", np.ones_like(output)),
        ("reduced_dy", f"{what} is the same number everywhere: the mean was taken "
         "before differentiating. dy has one entry per element of the output.",
         np.full(output.shape, 2.0 * residual.mean())),
    ]
    for axis, length in enumerate(output.shape if output.ndim >= 2 else ()):
        if length != size:
            found.insert(3, ("mean_over_one_axis", f"{what} is {size // length} times "
                             f"too large: you divided by {length}, one dimension of the "
                             f"shape (axis {axis}{', len()' if axis == 0 else ''}), but "
                             f"the mean runs over all N = {size} elements: use "
                             f"tf.size(output).", 2.0 * residual / length))
    found += [
        ("wrong_dy", f"{what} is the right dy times output: an extra factor. The "
         "derivative of (output - target)**2 is 2 (output - target), nothing more.",
         2.0 * residual / size * output),
        ("wrong_dy", f"{what} is the right dy times target: an extra factor. The "
         "derivative of (output - target)**2 is 2 (output - target), nothing more.",
         2.0 * residual / size * target),
    ]
    if size > 1:
        found += [
            ("scale_factor", f"{what} is {size} times too small: you divided by N = "
             f"{size} twice. The mean divides once.", 2.0 * residual / size**2),
            ("scale_factor", f"{what} divides by N - 1 = {size - 1}: that is the "
             f"correction of a sample variance. The mean divides by N = {size}.",
             2.0 * residual / (size - 1)),
        ]
    return found


@exercise("1.3", "the upstream gradient of a mean squared error, by hand")
def upstream_dy(answer):
    """dy = d(loss)/d(output) for loss = mean((output - target)**2), by hand.

    Method: no tape (observed). Probes, fresh on every call: a float32 vector of
    3, 5, 6 or 7 elements (never 4, where two mistakes give the same numbers), a
    float64 (b, k) matrix with b != k (so dividing by len() shows), a float64
    scalar. Outputs of both signs; residuals output - target always of both signs,
    in [0.2, 2], and one exactly 0 per array (so abs(), relu and squares show).
    dtype in = dtype out.
    """
    rng = fresh_rng("1.3")
    rows = int(rng.integers(2, 4))
    matrix = (rows, rows + int(rng.integers(1, 3)))
    probes = _regression_probes(
        rng, [((_vector_size(rng),), "float32"), (matrix, "float64"),
              ((), "float64")])
    for dtype, output_values, target_values in probes:
        output = _as_tensor(output_values, dtype)
        target = _as_tensor(target_values, dtype)
        value, log = _call(answer, output, target)
        require_by_hand(log, "exercise 1.3")
        size = max(output_values.size, 1)
        expected = 2.0 * (output_values - target_values) / size
        known = _dy_mistakes(output_values, target_values)
        if _shape_of(value) == () and output_values.shape != ():
            got = as_values(value, shape=(), dtype=output.dtype)
            loss = np.mean((output_values - target_values) ** 2)
            if matches(got, loss, 1e-5, 1e-12):
                raise Wrong("You returned one number, the loss itself. dy is its "
                            "derivative with respect to each element of the output: "
                            "same shape as output.", "value_not_derivative")
            raise Wrong("You returned one number: dy has one entry per element of "
                        "output (the same shape), because the loss depends on each "
                        "of them.", "reduced_dy")
        got = as_values(value, shape=output.shape, dtype=output.dtype)
        _kept_the_square(got, output_values - target_values, "Your dy")
        def linear_fit(got, output_values=output_values, target_values=target_values,
                       size=size):
            if output_values.size < 3:
                return None
            basis = np.stack([output_values.ravel(), target_values.ravel()], axis=1)
            (a, b), *_ = np.linalg.lstsq(basis, got.ravel(), rcond=None)
            if not matches(got.ravel(), basis @ [a, b], 1e-5,
                           1e-6 * float(np.max(np.abs(got)))):
                return None
            return Wrong(f"Your dy is {a:.6g} * output + {b:.6g} * target, but "
                         f"2 (output - target) / N is {2 / size:.6g} * output - "
                         f"{2 / size:.6g} * target here (N = {size}). Compare the two "
                         f"coefficients: a sign, a factor or N is off.", "wrong_dy")

        _judge(got, expected, _tolerance(dtype, FLOAT32, FLOAT64), dtype=dtype,
               fallback=linear_fit, what="your dy",
               known=known, batch=size,
               summary="dy = d(loss)/d(output) = 2 (output - target) / N, with N the "
                       "number of elements.")
    return ("By hand: dy = 2 (output - target) / N, right for residuals of both signs "
            "and zero, for a scalar, a vector and a (b, k) matrix, in float32 and "
            "float64.")


# Exercise 1.4 ---------------------------------------------------------------

def _require_dy_at_the_output(log, x) -> None:
    """output_gradients must carry a real dy to a target shaped like the output."""
    import tensorflow as tf

    passed = [(call.target, call.upstream) for call in log.calls
              if call.kind == "gradient" and call.upstream is not None]
    useful = []
    for target, dy in passed:
        try:
            target_shape = tuple(tf.convert_to_tensor(target).shape)
            ones = bool(np.all(np.asarray(tf.convert_to_tensor(dy)) == 1.0))
        except Exception:  # noqa: BLE001 - a nested structure: let the values judge
            useful.append(True)
            continue
        useful.append(target_shape == tuple(x.shape) and not ones)
    if passed and not any(useful):
        raise Wrong("Your function passes output_gradients, but not the upstream "
                    "gradient of the loss: it differentiates the loss itself (or passes "
                    "dy = ones, which is what the tape uses anyway). Record only "
                    "output = log1pexp(x) on the tape, compute dy = 2 (output - target) "
                    "/ N after the block, and call tape.gradient(output, x, "
                    "output_gradients=dy).", "no_output_gradients")


GRADIENT_TOL32 = Tolerance(rtol=FLOAT32.rtol, atol=1e-7)
GRADIENT_TOL64 = Tolerance(rtol=FLOAT64.rtol, atol=1e-14)


@exercise("1.4", "d(loss)/dx through output_gradients")
def loss_gradient(answer):
    """d(loss)/dx for output = log(1 + e^x), loss = mean((output - target)**2).

    Method (observed): tape.gradient(..., output_gradients=dy) is called, and for a
    right result, with a dy that is not all ones on a target shaped like x (the
    output), so a recorded loss with output_gradients=ones does not pass.
    Probes, fresh on every call: a float32 vector of 3, 5, 6 or 7 elements and a
    float64 (b, k) matrix with b != k, x in [-6, 6] of both signs; targets put
    residuals output - target of both signs (always both) in [0.2, 2] and one at
    (almost exactly) 0. dtype in = dtype out; float64 judged to float64 precision.
    """
    rng = fresh_rng("1.4")
    rows = int(rng.integers(2, 4))
    for shape, dtype in [((_vector_size(rng),), "float32"),
                         ((rows, rows + int(rng.integers(1, 3))), "float64")]:
        x_values = signed(rng, shape, 0.05, 6.0)
        residual = _residuals(rng, shape)
        if dtype == "float32":
            x_values = x_values.astype(np.float32).astype(np.float64)
        output_values = _softplus(x_values)
        target_values = output_values - residual
        if dtype == "float32":
            target_values = target_values.astype(np.float32).astype(np.float64)
        x = _as_tensor(x_values, dtype)
        target = _as_tensor(target_values, dtype)
        with observe() as log:
            try:
                value, wrong = call_answer(answer, x, target), None
            except Wrong as error:
                if error.mistake != "raised":
                    raise
                value, wrong = None, error
        if wrong is not None:
            failed = [call for call in log.calls if call.error is not None]
            if failed and failed[-1].output_gradients and re.search(
                    r"shape|reshape|Incompatible", wrong.hint):
                raise Wrong(wrong.hint + ". output_gradients must have the shape of "
                            "the target you differentiate: pass dy with "
                            "tape.gradient(output, x, output_gradients=dy), where "
                            "output (not the scalar loss) is the target.",
                            "output_gradients_shape")
            raise wrong
        if any(source is target for call in log.calls for source in call.sources):
            raise Wrong("Your function differentiated with respect to target. The "
                        "exercise asks for d(loss)/dx: pass x as the source, "
                        "tape.gradient(output, x, output_gradients=dy); the target only "
                        "enters through dy.", "wrong_source")
        if value is None:
            explained = why_none(log, probe="x")
            if explained is not None:
                raise Wrong(explained[1], explained[0])
            as_values(value)  # None without a tape call: a missing return
        require_output_gradients(log)
        got = as_values(value, shape=x.shape, dtype=x.dtype)
        size = x_values.size
        s = _sigmoid(x_values)
        dy = 2.0 * (output_values - target_values) / size
        expected = dy * s
        known = [("forgot_upstream", "You returned d(output)/dx alone, sigmoid(x): "
                  "with dy = 1 (or no output_gradients) the tape starts the walk as if "
                  "the output were the target. Pass output_gradients=dy with dy = "
                  "2 (output - target) / N.", s)]
        known += [(code, hint + " Fix dy and pass it again.", values * s)
                  for code, hint, values in _dy_mistakes(output_values, target_values,
                                                         what="The dy you passed")
                  if code != "dy_of_ones"]
        known += [
            ("dy_from_x", "You computed dy from x. The upstream gradient is the loss's "
             "derivative with respect to the output: dy = 2 (output - target) / N.",
             2.0 * (x_values - target_values) / size * s),
            ("returned_dy", "You returned dy itself. The tape multiplies dy by the "
             "local derivative: return tape.gradient(output, x, output_gradients=dy).",
             dy),
            ("local_derivative_twice", "You multiplied by sigmoid(x) after "
             "tape.gradient, but the tape's result already contains the local "
             "derivative: tape.gradient(output, x, output_gradients=dy) is dy * "
             "sigmoid(x). Return it as it is.", expected * s),
            ("added_not_multiplied", "You added dy to what tape.gradient returned. "
             "The tape's result, tape.gradient(output, x, output_gradients=dy), already "
             "is dy times the local derivative: return it as it is.", expected + dy),
            ("added_not_multiplied", "You added dy and the local derivative "
             "sigmoid(x). The chain rule multiplies them: dy * sigmoid(x), which is "
             "what tape.gradient(output, x, output_gradients=dy) returns.", dy + s),
            ("dy_applied_twice", "dy was applied twice: you passed output_gradients=dy "
             "while differentiating something that already contains the loss. Record "
             "only the output and call tape.gradient(output, x, output_gradients=dy).",
             dy * dy * s),
        ]
        def implied_dy(got, dy=dy, s=s, x_values=x_values, x=x, dtype=dtype,
                       target_values=target_values, output_values=output_values,
                       expected=expected, size=size):
            shifted = target_values + 0.5
            again, _ = _call(answer, x, _as_tensor(shifted, dtype))
            again = as_values(again, shape=x.shape, dtype=x.dtype)
            expected_again = 2.0 * (output_values - shifted) / size * s
            usable = (np.abs(expected) > 1e-6) & (np.abs(expected_again) > 1e-6)
            if usable.sum() >= 2:
                ratio, ratio_again = got[usable] / expected[usable], \
                    again[usable] / expected_again[usable]
                if np.allclose(ratio, ratio_again, rtol=1e-3) and \
                        not np.allclose(ratio, 1.0, rtol=1e-3):
                    i = int(np.argmax(np.abs(ratio - 1.0)))
                    return Wrong(f"Your result is the right gradient times a factor that "
                                 f"depends on x only, not on the target (it is "
                                 f"{ratio[i]:.6g} at x = {x_values[usable][i]:.6g}): an "
                                 f"extra factor multiplies dy or the tape's result. dy is "
                                 f"exactly 2 (output - target) / N, and "
                                 f"tape.gradient(output, x, output_gradients=dy) is "
                                 f"returned as it is.", "extra_factor")
            used = got / s
            floor = 1e-3 * float(np.max(np.abs(dy)))
            i = int(np.argmax(np.abs(used - dy) / np.maximum(np.abs(dy), floor)))
            return Wrong(f"The tape multiplies dy by sigmoid(x), so dividing your "
                         f"gradient by sigmoid(x) gives the dy you used: at x = "
                         f"{x_values.flat[i]:.6g} it is {used.flat[i]:.6g}, but "
                         f"2 (output - target) / N = {dy.flat[i]:.6g} there. Check dy "
                         f"(if your output is log1pexp(x)).", "wrong_dy")

        # The learner's output is rounded to the dtype; at a residual near 0 that
        # rounding is all there is, so allow a few of its ulps, passed through dy.
        rounding = 4.0 * np.finfo(dtype).eps * float(np.max(np.abs(output_values))) * 2.0 / size
        tolerance = _tolerance(dtype, GRADIENT_TOL32, GRADIENT_TOL64)
        tolerance = Tolerance(tolerance.rtol, max(tolerance.atol, rounding))
        _judge(got, expected, tolerance,
               dtype=dtype, at=x_values, what="your gradient", known=known, batch=size,
               fallback=implied_dy,
               terms=[("x", x_values), ("target", target_values),
                      ("output", output_values), ("sigmoid(x)", s)],
               summary="d(loss)/dx = dy * sigmoid(x) with dy = 2 (output - target) / N.")
        # Right numbers: now make sure they came from dy at the output, not from a
        # recorded loss with output_gradients=ones.
        _require_dy_at_the_output(log, x)
    return ("tape.gradient(output, x, output_gradients=dy) with a dy of the output's "
            "shape: d(loss)/dx = dy * sigmoid(x) with dy = 2 (output - target) / N is "
            "right for residuals of both signs and zero, for a vector and a (b, k) "
            "matrix, in float32 and float64.")


# Exercise 1.5 ---------------------------------------------------------------

@exercise("1.5", "a vector-Jacobian product by hand")
def vector_jacobian_product(answer):
    """dy^T J for y = log(1 + e^(W x)), i.e. W^T (dy * sigmoid(W x)), by hand.

    Method: no tape (so no tape.jacobian either), no forward mode (observed).
    Probes, fresh on every call: a square W (3, 3) in float64 first (where a
    missing transpose or a step in the wrong order keeps the shape, so the values
    name the mistake), then a tall W (3, 2) in float32 and a wide W (2, 4) in
    float64, W in [-1.5, 1.5] and x in [-2, 2] of both signs, so W x reaches
    both tails of the sigmoid; dy always of both signs, so never all ones. dtype in
    = dtype out.
    """
    rng = fresh_rng("1.5")
    shapes = [((3, 3), "float64"), ((3, 2), "float32"), ((2, 4), "float64")]
    for (m, n), dtype in shapes:
        W_values = signed(rng, (m, n), 0.2, 1.5, decimals=2)
        x_values = signed(rng, n, 0.2, 2.0, decimals=2)
        dy_values = upstream(rng, m)
        dy_values[:2] = np.abs(dy_values[:2]) * [1.0, -1.0]  # both signs, always
        if dtype == "float32":
            W_values, x_values, dy_values = (
                v.astype(np.float32).astype(np.float64)
                for v in (W_values, x_values, dy_values))
        W, x, dy = (_as_tensor(v, dtype) for v in (W_values, x_values, dy_values))
        value, log, wrong = _call(answer, W, x, dy, keep_errors=True)
        require_by_hand(log, "exercise 1.5")
        if wrong is not None:
            if "size-incompatible" in wrong.hint:
                raise Wrong(wrong.hint + f". To go back from y (shape ({m},)) to x "
                            f"(shape ({n},)), multiply by W transposed: "
                            f"tf.linalg.matvec(W, u, transpose_a=True).", "no_transpose")
            raise Wrong(wrong.hint + f". Shapes here: W is ({m}, {n}), x ({n},), dy and "
                        f"W x ({m},); the result has x's shape.", "raised")
        z = W_values @ x_values
        s = _sigmoid(z)
        expected = W_values.T @ (dy_values * s)
        shape = _shape_of(value)
        if shape in ((m, n), (n, m)) and m != 1 and n != 1:
            raise Wrong(f"You returned a {shape[0]}x{shape[1]} matrix: a Jacobian (or "
                        f"W scaled row by row). The vector-Jacobian product contracts "
                        f"it with dy: dy^T J has one number per input, shape ({n},).",
                        "returned_jacobian")
        if shape == (m,) and m != n:
            raise Wrong(f"Your result has shape ({m},), the shape of y. A "
                        f"vector-Jacobian product has the shape of x, ({n},): the "
                        f"upstream goes back through W transposed, "
                        f"tf.linalg.matvec(W, u, transpose_a=True).", "no_transpose")
        got = as_values(value, shape=(n,), dtype=x.dtype)
        scale = float(np.abs(W_values).T @ np.abs(dy_values) @ np.ones(n)) or 1.0
        tol = (Tolerance(FLOAT64.rtol, 1e-13 * scale) if dtype == "float64"
               else Tolerance(FLOAT32.rtol, 1e-6 * scale))
        known = [
            ("forgot_upstream", "You left out dy: W^T sigmoid(W x) is the product "
             "with dy = ones. Multiply sigmoid(W x) by dy before going back through W.",
             W_values.T @ s),
            ("forgot_local_derivative", "You passed dy straight back through W: the "
             "local derivative of log(1 + e^z), sigmoid(z) at z = W x, is missing.",
             W_values.T @ dy_values),
            ("value_not_derivative", "You multiplied dy by log(1 + e^z), the "
             "function's value; its local derivative is sigmoid(z).",
             W_values.T @ (dy_values * _softplus(z))),
            ("differentiated_twice", "You multiplied dy by sigmoid(z)(1 - sigmoid(z)), "
             "a second derivative; the local derivative of log(1 + e^z) is sigmoid(z).",
             W_values.T @ (dy_values * s * _sigmoid(-z))),
            ("mean_not_sum", f"Your product is 1/{m} of the answer, and {m} is the "
             f"number of outputs: a vector-Jacobian product sums the rows of J "
             f"weighted by u = dy * sigmoid(W x); it does not average them.",
             expected / m),
            ("added_not_multiplied", "You added two products with W^T. The chain rule "
             "multiplies: first u = dy * sigmoid(W x), element by element, then W^T u.",
             W_values.T @ dy_values + W_values.T @ s),
            ("inverted_fraction", "You multiplied dy by 1 - sigmoid(z) = 1/(1 + e^z): "
             "that is the derivative of log(u) alone, 1/u. The local derivative of "
             "log(1 + e^z) is e^z/(1 + e^z) = sigmoid(z).",
             W_values.T @ (dy_values * _sigmoid(-z))),
            ("local_at_input", "You multiplied by sigmoid(x) after going back through "
             "W. The sigmoid belongs to the outer op, log(1 + e^z): multiply dy by "
             "sigmoid(W x) first, then go back through W.",
             (W_values.T @ dy_values) * _sigmoid(x_values)),
        ]
        if m == n:
            known += [
                ("no_transpose", "You went back through W, not W transposed: "
                 "dy^T J = W^T u with u = dy * sigmoid(W x), "
                 "tf.linalg.matvec(W, u, transpose_a=True).",
                 W_values @ (dy_values * s)),
                ("wrong_axis", "You weighted the rows of W by u = dy * sigmoid(W x) "
                 "and then summed over the wrong axis, which gives u times the row sums "
                 "of W. dy^T J sums over the outputs (the rows of W): one number per "
                 "column, i.e. per input.", (dy_values * s) * W_values.sum(axis=1)),
                ("wrong_order", "You went back through W first and multiplied by "
                 "sigmoid(W x) afterwards. Walk backwards in order: y = log1pexp(z) is "
                 "the last operation, so dy meets its local derivative first, "
                 "u = dy * sigmoid(z), and only then goes back through z = W x.",
                 (W_values.T @ dy_values) * s),
                ("local_at_input", "You evaluated the sigmoid at x. The local "
                 "derivative belongs to log(1 + e^z), so it is sigmoid(z) at z = W x.",
                 W_values.T @ (dy_values * _sigmoid(x_values))),
            ]
        def implied_jacobian(got, W_values=W_values, dy_values=dy_values, s=s, z=z,
                             m=m, n=n, W=W, x=x, dtype=dtype, tol=tol):
            """Read off the Jacobian the answer uses by calling it with unit dy vectors.

            A vector-Jacobian product is linear in dy, so answer(W, x, e_i) is row i
            of the Jacobian the answer believes in; comparing it with
            sigmoid(z_i) * W[i] says which factor is wrong.
            """
            rows = []
            for i in range(m):
                unit = np.zeros(m)
                unit[i] = 1.0
                row, _ = _call(answer, W, x, _as_tensor(unit, dtype))
                rows.append(as_values(row, shape=(n,), dtype=x.dtype))
            used = np.stack(rows)
            scale = max(floor_of(got), floor_of(W_values.T @ dy_values))
            if not matches(got, used.T @ dy_values, 1e-4, scale):
                return Wrong("Your result is not linear in dy: with dy = e_i (a 1 at i, "
                             "0 elsewhere) and adding up, your function gives another "
                             "result than with dy itself. dy^T J is linear in dy: dy "
                             "should enter once, as a factor, with no square, constant "
                             "or reduction of its own.", "not_linear_in_dy")
            norms = (W_values * W_values).sum(axis=1)
            factor = (used * W_values).sum(axis=1) / np.where(norms == 0.0, 1.0, norms)
            if matches(used, factor[:, None] * W_values, 1e-4, floor_of(used)):
                i = int(np.argmax(np.abs(factor - s) / s))
                return Wrong(f"Your function goes back through W correctly, but the "
                             f"factor multiplying dy is wrong: at output {i} it is "
                             f"{factor[i]:.6g}, where the local derivative of "
                             f"log(1 + e^z) is sigmoid(z) = {s[i]:.6g}, with z = W x "
                             f"= {z[i]:.6g}.", "wrong_local_derivative")
            right = s[:, None] * W_values
            i, j = np.unravel_index(int(np.argmax(np.abs(used - right))), used.shape)
            return Wrong(f"Calling your function with dy = e_{i} (a 1 at output {i}) "
                         f"gives the Jacobian row it uses: entry {j} is {used[i, j]:.6g}, "
                         f"but J[{i}, {j}] = sigmoid(z_{i}) * W[{i}, {j}] = "
                         f"{right[i, j]:.6g}. Check the matrix you go back through: W "
                         f"itself, transposed, each row weighted by sigmoid(z).",
                         "wrong_jacobian")

        _judge(got, expected, tol, dtype=dtype, what="your product", known=known,
               fallback=implied_jacobian, terms=[("x", x_values)],
               summary="dy^T J = W^T (dy * sigmoid(W x)): dy times the local "
                       "derivative of log(1 + e^z), then back through W.")
    return ("By hand, without a tape: dy^T J = W^T (dy * sigmoid(W x)), right for a "
            "tall, a wide and a square W in float32 and float64.")
