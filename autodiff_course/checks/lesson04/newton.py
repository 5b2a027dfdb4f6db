"""Exercise 4.1: one Newton step, from one pair of nested tapes."""

from __future__ import annotations

import dataclasses

import numpy as np

from ...checking import as_values
from ...checking import exercise
from ...checking import forbid_jacobian
from ...checking import fresh_rng
from ...checking import matches
from ...checking import require_nested
from ...checking import signed
from ...checking import tensor
from ...checking import tolerance_for
from ...log1pexp import reference_sigmoid as _sigmoid
from .judging import _judge
from .judging import _outer_repeated
from .shared import DTYPES
from .shared import _call
from .shared import _explain_none_or_error


@dataclasses.dataclass
class _NewtonCase:
    label: str
    function: object
    x: np.ndarray
    f: np.ndarray
    d1: np.ndarray
    d2: np.ndarray


def _newton_cases(rng):
    """x**4 + x**2, softplus and cosh at fresh points, float64 closed forms."""
    import tensorflow as tf

    n = int(rng.integers(3, 7))
    cosh_x = signed(rng, (n,), 0.5, 2.5)
    softplus_x = np.round(rng.uniform(-3.0, 3.0, size=(2, int(rng.integers(2, 5)))), 3)
    quartic_x = signed(rng, (int(rng.integers(3, 7)),), 0.5, 2.0)
    return [  # cosh last: there f'' = f, so x - f''/f' and x - f/f' coincide
        _NewtonCase(
            "x**4 + x**2",
            lambda x: x**4 + x**2,
            quartic_x,
            quartic_x**4 + quartic_x**2,
            4 * quartic_x**3 + 2 * quartic_x,
            12 * quartic_x**2 + 2.0,
        ),
        _NewtonCase(
            "softplus(x)",
            tf.nn.softplus,
            softplus_x,
            np.logaddexp(0.0, softplus_x),
            _sigmoid(softplus_x),
            _sigmoid(softplus_x) * _sigmoid(-softplus_x),
        ),
        _NewtonCase("cosh(x)", tf.cosh, cosh_x, np.cosh(cosh_x), np.sinh(cosh_x), np.cosh(cosh_x)),
    ]


def _newton_mistakes(case):
    x, f, d1, d2 = case.x, case.f, case.d1, case.d2
    return [
        (
            "newton_uphill",
            "You computed x + f'(x)/f''(x): the step goes the wrong way. "
            "Newton's method subtracts it: x - f'(x)/f''(x).",
            x + d1 / d2,
        ),
        (
            "newton_ratio_inverted",
            "You divided the wrong way round: x - f''(x)/f'(x). The "
            "step is the slope divided by the curvature, f'(x)/f''(x).",
            x - d2 / d1,
        ),
        (
            "newton_step_only",
            "You returned the step f'(x)/f''(x) itself; the exercise asks "
            "for the new point, x minus that step.",
            d1 / d2,
        ),
        (
            "newton_root_finding",
            "You returned x - f(x)/f'(x): that is Newton's method for "
            "a root of f. To minimise f, apply it to f': x - f'(x)/f''(x).",
            x - f / d1,
        ),
        (
            "gradient_descent_step",
            "You returned x - f'(x), a gradient-descent step. Newton "
            "divides the slope by the second derivative: x - f'(x)/f''(x).",
            x - d1,
        ),
        (
            "second_not_newton",
            "You returned f''(x), the second derivative itself: use it "
            "to take the step x - f'(x)/f''(x).",
            d2,
        ),
        (
            "first_not_second",
            "You returned f'(x), the first derivative: the step also "
            "needs the second derivative, from the outer tape.",
            d1,
        ),
    ]


@exercise("4.1", "one Newton step with nested tapes")
def newton_step(answer):
    """``newton_step(f, x)`` = x - f'(x)/f''(x) element-wise, from nested tapes.

    Method (observed): nested tapes (an inner gradient computed while an outer tape
    records, then differentiated by the outer tape); no ``tape.jacobian``.
    Probes, fresh on every call, each in float32 and in float64 (dtype in = dtype
    out; float64 judged to 1e-11 relative, so finite differences and float32
    arithmetic fail): ``cosh`` on a vector of 3 to 6 points with 0.5 <= |x| <= 2.5
    (both signs), ``tf.nn.softplus`` on a (2, m) matrix in [-3, 3], and
    x**4 + x**2 on a vector with 0.5 <= |x| <= 2. References: float64 closed forms.
    A None (or the error it causes) is explained from what the tapes saw.
    """
    rng = fresh_rng("4.1")
    for case in _newton_cases(rng):
        for dtype in DTYPES:
            x = tensor(case.x, dtype)
            value, run, wrong = _call(answer, case.function, x, name="`newton_step`")
            log = run.log
            if wrong is not None:
                forbid_jacobian(log, _JACOBIAN_HINT_41)
            if value is None or wrong is not None:
                _explain_none_or_error(run, value, wrong, name="`newton_step`")
            forbid_jacobian(log, _JACOBIAN_HINT_41)
            got = as_values(value, name="`newton_step`", shape=tuple(x.shape), dtype=x.dtype)
            expected = case.x - case.d1 / case.d2
            tol = tolerance_for(dtype)
            if matches(got, expected, tol.rtol, tol.atol):
                require_nested(log)
                continue
            _judge(
                got,
                expected,
                tol,
                run=run,
                at=case.x,
                known=_newton_mistakes(case),
                before_generic=lambda: _outer_repeated(
                    log,
                    case.d1,
                    case.x,
                    "f(x)",
                    "f'(x)",
                    "the inner tape's result, f'(x), to give f''(x)",
                ),
                computed=(
                    "Your tapes computed f'(x) and f''(x) correctly, but the "
                    "formula that combines them is not Newton's step, "
                    "x - f'(x)/f''(x).",
                    [("f'", case.d1), ("f''", case.d2)],
                    expected,
                ),
                summary=f"Not x - f'(x)/f''(x) for f(x) = {case.label} in {dtype}.",
                what="your step",
            )
    return (
        "Nested tapes gave f' and f'' of functions you had not seen, in float32 and "
        "to float64 precision, on vectors and matrices: x - f'/f'' is right."
    )


_JACOBIAN_HINT_41 = (
    "for an element-wise f, the outer gradient of the vector f'(x) already is the "
    "vector of second derivatives (section 1). tape.jacobian builds the whole matrix, "
    "one backward pass per element, only to keep its diagonal, and its shape is "
    "x.shape + x.shape, not x.shape."
)
