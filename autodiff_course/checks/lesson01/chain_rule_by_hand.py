"""Exercise 1.1: d/dx log(1 + e^-x), worked out by hand."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import observed_call
from ...checking import points
from ...checking import require_by_hand
from ...checking import tensor
from ...log1pexp import reference_sigmoid as _sigmoid
from ...log1pexp import reference_softplus as _softplus
from .shared import _judge


def _chain_slips(x):
    """Every way to get one or more of the three chain-rule factors wrong.

    d/dx log(1 + e^-x) = (1/u) * (e^-x) * (-1) with u = 1 + e^-x. Each factor has
    its typical slips; every combination except the right one becomes a known
    mistake whose hint names exactly the factors that differ.
    """
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        e, u = np.exp(-x), 1.0 + np.exp(-x)
        outer = [
            (1.0 / u, None, None),
            (
                np.ones_like(x),
                "the derivative of log(u), 1/u, is missing",
                "forgot_outer_derivative",
            ),
            (
                u,
                "you multiplied by u = 1 + e^-x, but the derivative of log(u) divides by it: 1/u",
                "wrong_outer_factor",
            ),
            (
                np.log(u),
                "you multiplied by log(u) itself where its derivative, 1/u, belongs",
                "value_not_derivative",
            ),
            (
                1.0 / np.log(u),
                "you divided by log(u), the function's value; "
                "the derivative of log(u) divides by u itself",
                "wrong_outer_factor",
            ),
            (
                1.0 / u**2,
                "you divided by u**2; the derivative of log(u) is 1/u "
                "(u**2 belongs to the quotient rule)",
                "quotient_rule_slip",
            ),
            (
                1.0 / (1.0 + np.exp(x)),
                "the u in 1/u must be 1 + e^-x, with the function's own exponent",
                "wrong_outer_factor",
            ),
        ]
        middle = [
            (e, None, None),
            (
                np.ones_like(x),
                "the middle factor, the derivative of e^v (e^v itself, at v = -x), is missing",
                "wrong_inner_factor",
            ),
            (
                np.exp(x),
                "the middle factor must be e^-x: the exponent keeps its minus sign",
                "wrong_inner_factor",
            ),
        ]
        sign = [
            (-1.0, None, None),
            (1.0, "the last factor, -1 (the derivative of -x), is missing", "sign_flipped"),
        ]
        slips = []
        for o_values, o_text, o_code in outer:
            for m_values, m_text, m_code in middle:
                for sign_value, s_text, s_code in sign:
                    texts = [t for t in (o_text, m_text, s_text) if t]
                    if not texts:
                        continue
                    code = o_code or m_code or s_code
                    hint = (
                        "The chain rule gives (1/u) * e^-x * (-1) with u = 1 + e^-x. "
                        "In yours, " + "; ".join(texts) + "."
                    )
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
        x = tensor(x_values, dtype)
        value, log = observed_call(answer, x)
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
            return Wrong(
                f"Your derivative is -e^-x times {np.exp(c):.4g} * u**{p:.4g}, "
                f"with u = 1 + e^-x, where the chain rule gives -e^-x times "
                f"1/u = u**-1. The derivative of log(u) is 1/u: no other power "
                f"of u.",
                "wrong_outer_factor",
            )

        _judge(
            got,
            expected,
            dtype,
            LOGISTIC_TOL32,
            LOGISTIC_TOL64,
            at=x_values,
            what="your derivative",
            fallback=outer_power,
            summary="The derivative of log(1 + e^-x) is -e^-x / (1 + e^-x) = sigmoid(x) - 1.",
            known=[
                (
                    "sign_flipped",
                    "You returned e^-x / (1 + e^-x), which has the "
                    "wrong sign: the chain rule's innermost factor is the derivative "
                    "of -x, which is -1. Walk the ops: negate, exp, add 1, log.",
                    _sigmoid(-x_values),
                ),
                (
                    "forgot_outer_derivative",
                    "You returned the derivative of the "
                    "inside, 1 + e^-x, alone. The chain rule also multiplies by the "
                    "derivative of log(u), which is 1/u.",
                    -e,
                ),
                (
                    "forgot_outer_derivative",
                    "You returned e^-x: the derivative of "
                    "log(u) (1/u) and of -x (-1) are both missing.",
                    e,
                ),
                (
                    "inverted_fraction",
                    "You returned -sigmoid(x) = -e^x/(1 + e^x) "
                    "= -1/(1 + e^-x). Either the exponent stayed +x (the function is "
                    "log(1 + e^-x)), or the middle factor, the derivative of e^-x, is "
                    "missing from 1/u times -1.",
                    -s,
                ),
                (
                    "derivative_of_softplus",
                    "You returned sigmoid(x), the "
                    "derivative of log(1 + e^x) from the lesson. Here the exponent is "
                    "-x: e^x becomes e^-x, and the chain rule gains a factor -1, the "
                    "derivative of -x.",
                    s,
                ),
                (
                    "value_not_derivative",
                    "You returned log(1 + e^-x) itself: the exercise asks for its derivative.",
                    _softplus(-x_values),
                ),
                (
                    "value_not_derivative",
                    "You returned -log(1 + e^-x), which is "
                    "log(sigmoid(x)) (tf.math.log_sigmoid): minus the function itself. "
                    "The exercise asks for its derivative.",
                    -_softplus(-x_values),
                ),
                (
                    "value_not_derivative",
                    "You multiplied by log(u), the outer "
                    "function itself, where its derivative 1/u belongs: the chain rule "
                    "multiplies derivatives, evaluated at the inner value.",
                    -_softplus(-x_values) * e,
                ),
                (
                    "value_not_derivative",
                    "You multiplied by log(u), the outer "
                    "function itself, where its derivative 1/u belongs (and the -1 "
                    "from -x is missing too).",
                    _softplus(-x_values) * e,
                ),
                (
                    "differentiated_twice",
                    "You returned sigmoid(x)(1 - sigmoid(x)) "
                    "= e^-x / (1 + e^-x)**2, which is the second derivative: one "
                    "differentiation too many (or a 1/u**2 where the derivative of "
                    "log(u) is 1/u, with the -1 from -x lost as well).",
                    s * _sigmoid(-x_values),
                ),
                (
                    "quotient_rule_slip",
                    "You divided by (1 + e^-x)**2. The "
                    "derivative of log(u) is 1/u, not 1/u**2 (that denominator belongs "
                    "to the quotient rule, which is not needed here).",
                    -s * _sigmoid(-x_values),
                ),
            ]
            + _chain_slips(x_values),
            terms=[("x", x_values)],
        )
    return (
        "By hand, without a tape: -e^-x / (1 + e^-x) = sigmoid(x) - 1, right at "
        "both tails (x = -15 and 15), for a scalar, a vector and a matrix, in "
        "float32 and to float64 precision in float64."
    )
