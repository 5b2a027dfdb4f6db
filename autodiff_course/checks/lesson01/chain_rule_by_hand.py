"""Exercise 1.1: the derivative of the logistic loss log(1 + e^-x), worked out by hand."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.judging import Tolerance
from ...checking.patterns import stray
from ...log1pexp import reference_sigmoid as sig
from ...log1pexp import reference_softplus as softplus


def derivative(p):
    return -sig(-p.x)  # sigmoid(x) - 1 without the cancellation


def _power_of_u(got, p):
    """-e^-x * c * u**power for a power other than -1, with u = 1 + e^-x."""
    e = np.exp(-p.x)
    with np.errstate(divide="ignore", invalid="ignore"):
        implied, log_u = np.log(got / -e), np.log1p(e)
    usable = np.isfinite(implied) & (log_u > 1e-3)
    if usable.sum() >= 3:
        power, c = np.polyfit(log_u[usable], implied[usable], 1)
        fitted = c + power * log_u[usable]
        if abs(power + 1) > 1e-3 and np.allclose(implied[usable], fitted, 0, 1e-4):
            return {"c": f"{np.exp(c):.4g}", "p": f"{power:.4g}"}
    return None


def _cancels(got, p):
    """Right where x is small, but at large x only as close as the rounding of numbers near
    1 allows (a few ulps of 1, whatever the value's own size): sigmoid(x) - 1 or 1 - ...
    Where it is off, a difference of numbers in [0.5, 1] is a whole number of eps/2."""
    want, eps = derivative(p), float(np.finfo(p.dtype).eps)
    if np.shape(got) != np.shape(want):
        return None
    with np.errstate(invalid="ignore"):
        off = np.abs(got - want) > 2e-5 * np.abs(want)
        near_one = np.abs(got - want) <= 4 * eps
        ulps = got[off] / (eps / 2)
    whole = np.all(ulps == np.round(ulps))
    if off.any() and whole and np.all(near_one) and np.all(p.x[off] > 1.0):
        i = np.flatnonzero(off.ravel())[np.argmax(p.x[off])]
        return {
            "x": f"{p.x.ravel()[i]:g}",
            "want": f"{want.ravel()[i]:.4g}",
            "got": f"{got.ravel()[i]:.4g}",
        }
    return None


RULE = "The chain rule gives (1/u) * e^-x * (-1) with u = 1 + e^-x; yours "
NO_OUTER = RULE + "lacks the derivative of log(u), 1/u."
LOG_U = RULE + "multiplies by log(u) where its derivative 1/u belongs."
SQUARED = RULE + "divides by u**2 (the quotient rule's): d log(u)/du is 1/u."
OTHER_U = RULE + "has u = 1 + e^x: the function's own exponent is -x."
OTHER_E = RULE + "has e^x in the numerator: the derivative of e^-x is -e^-x, exponent -x."
NO_MIDDLE = "You returned -sigmoid(x) = -1/(1 + e^-x) = -e^x/(1 + e^x): either the middle "
NO_MIDDLE += "factor, e^-x, is missing, or e^x stands where e^-x belongs (the exponent is -x)."
SOFTPLUS = "You returned sigmoid(x), the derivative of log(1 + e^x); here the exponent is -x."
VALUE = "You returned log(1 + e^-x) itself; the exercise asks for its derivative."
TWICE = "You returned sigmoid(x)(1 - sigmoid(x)), the second derivative: one too many."
POWER = "Your derivative is -e^-x times {c} * u**{p}, with u = 1 + e^-x; the chain rule "
POWER += "gives -e^-x * u**-1: the derivative of log(u) is 1/u, no other power of u."
CANCELS = "Your derivative loses its digits at the positive tail: at x = {x} it is {got} "
CANCELS += (
    "where the answer is {want} (and 0 once sigmoid(x) rounds to 1). sigmoid(x) - 1 subtracts "
)
CANCELS += "two numbers close to 1, which cancels; write it without the subtraction, as "
CANCELS += "-e^-x / (1 + e^-x) or -sigmoid(-x)."
EXERCISE = spec.Exercise(
    number="1.1",
    title="The derivative of the logistic loss by hand",
    stars=1,
    minutes=5,
    harness=Function("`logistic_derivative`", by_hand=True, nouns={"value": "your derivative"}),
    probes=spec.Probes(
        points={
            "float32": spec.Points(
                (-85.0, -30.0, -1.0, 0.0, 1.0, 15.0, 25.0, 30.0, 85.0, 87.0), ((-12.0, 12.0, 8),)
            ),
            "float64": spec.Points(
                (-700.0, -40.0, 15.0, 30.0, 40.0, 100.0), ((-15.0, 15.0, 8),), decimals=4
            ),
        },
        shapes={"float64": ("points", (2, 4), ())},
    ),
    reference=derivative,
    # relative at every point: the positive tail, near 0, must be right to its own size
    tolerance=lambda p, _: Tolerance(*((1e-11, 1e-300) if p.dtype == "float64" else (2e-5, 1e-40))),
    mistakes=(
        spec.Mistake("forgot_outer_derivative", NO_OUTER, lambda p: -np.exp(-p.x)),
        spec.Mistake("inverted_fraction", NO_MIDDLE, lambda p: -sig(p.x)),
        spec.Mistake("derivative_of_softplus", SOFTPLUS, lambda p: sig(p.x)),
        spec.Mistake("value_not_derivative", VALUE, lambda p: softplus(-p.x)),
        spec.Mistake(  # it overflows for x below about -80 in float32
            "value_not_derivative",
            LOG_U,
            lambda p: -softplus(-p.x) * np.exp(-p.x),
            where_finite=True,
        ),
        spec.Mistake("differentiated_twice", TWICE, lambda p: sig(p.x) * sig(-p.x)),
        spec.Mistake("quotient_rule_slip", SQUARED, lambda p: -sig(p.x) * sig(-p.x)),
        spec.Mistake("wrong_outer_factor", OTHER_U, lambda p: -np.exp(-p.x) / (1 + np.exp(p.x))),
        spec.Mistake("wrong_outer_factor", OTHER_E, lambda p: -np.exp(p.x) / (1 + np.exp(-p.x))),
        spec.Pattern("wrong_outer_factor", POWER, _power_of_u),
        *stray(derivative, x=lambda p: p.x),
        spec.Pattern(
            "cancellation",
            CANCELS,
            _cancels,
        ),
    ),
    describe={"value": "-e^-x / (1 + e^-x) = -sigmoid(-x)"},
    claim="By hand, -e^-x / (1 + e^-x) = -sigmoid(-x), each value right to its own size at "
    "both tails (x = -85 to 87 in float32, -700 to 100 in float64)",
)
logistic_derivative = EXERCISE.check
