"""Exercise 4.2: a mixed partial derivative, zeros where it is structurally zero."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import forbid_jacobian
from ...checking import fresh_rng
from ...checking import matches
from ...checking import require_nested
from ...checking import signed
from ...checking import tensor
from ...checking import tolerance_for
from .judging import _judge
from .judging import _outer_repeated
from .shared import _call
from .shared import _explain_none_or_error


def _surface(x, y):
    import tensorflow as tf

    return x**2 * y**3 + tf.sin(x * y)


def _surface_parts(x, y):
    xy = x * y
    return {
        "f": x**2 * y**3 + np.sin(xy),
        "fx": 2 * x * y**3 + y * np.cos(xy),
        "fy": 3 * x**2 * y**2 + x * np.cos(xy),
        "fxx": 2 * y**3 - y**2 * np.sin(xy),
        "fyy": 6 * x**2 * y - x**2 * np.sin(xy),
        "fxy": 6 * x * y**2 + np.cos(xy) - xy * np.sin(xy),
        "scale": np.abs(6 * x * y**2) + 1.0 + np.abs(xy),
    }


def _growth(x, y):
    import tensorflow as tf

    return x * tf.exp(x * y)


def _growth_parts(x, y):
    e = np.exp(x * y)
    return {
        "f": x * e,
        "fx": (1 + x * y) * e,
        "fy": x**2 * e,
        "fxx": y * e * (2 + x * y),
        "fyy": x**3 * e,
        "fxy": x * e * (2 + x * y),
        "scale": np.abs(x) * e * (2 + np.abs(x * y)),
    }


def _separable(x, y):
    import tensorflow as tf

    return x**2 + tf.cos(y)


def _separable_parts(x, y):
    return {
        "f": x**2 + np.cos(y),
        "fx": 2 * x,
        "fy": -np.sin(y),
        "fxx": 2 + 0 * x,
        "fyy": -np.cos(y),
        "fxy": 0 * x,
        "scale": 1 + 0 * x,
    }


def _mixed_mistakes(parts):
    return [
        (
            "wrong_source",
            "You returned d2z/dx2: both tapes differentiated with respect "
            "to x. The outer one must differentiate dz/dx with respect to y.",
            parts["fxx"],
        ),
        (
            "wrong_source",
            "You returned d2z/dy2: both tapes differentiated with respect "
            "to y. Differentiate with respect to x on one tape and y on the other.",
            parts["fyy"],
        ),
        (
            "first_not_second",
            "You returned dz/dx, a first derivative: the outer tape "
            "must still differentiate it with respect to y.",
            parts["fx"],
        ),
        (
            "first_not_second",
            "You returned dz/dy, a first derivative: differentiate "
            "dz/dx with respect to y instead.",
            parts["fy"],
        ),
        ("value_not_derivative", "You returned f(x, y) itself.", parts["f"]),
        (
            "product_of_partials",
            "You multiplied the two first derivatives, dz/dx * dz/dy. "
            "The mixed partial is the derivative of dz/dx with respect to y: an outer tape "
            "that records the inner gradient.",
            parts["fx"] * parts["fy"],
        ),
    ]


_JACOBIAN_HINT_42 = (
    "for element-wise functions the outer gradient of dz/dx already is the "
    "element-by-element mixed partial; a Jacobian forms a whole matrix only to keep its "
    "diagonal, and its shape is x.shape + y.shape."
)

_STRUCTURAL_NONE_HINT = (
    "Right for the functions whose x-slope depends on y, but for f = x**2 + cos(y) "
    "your function returned None (or failed on it). That None is no mistake of the "
    "tapes: dz/dx = 2x does not involve y at all, so the outer tape has no path to y. "
    "The exercise asks for zeros there: pass "
    "unconnected_gradients=tf.UnconnectedGradients.ZERO to the outer gradient."
)


@exercise("4.2", "a mixed partial derivative with nested tapes")
def mixed_partial(answer):
    """``mixed_partial(f, x, y)`` = d2f/(dx dy) element-wise, zeros where it is zero.

    Method (observed): nested tapes. Probes, fresh on every call: x**2 y**3 + sin(xy)
    in float32 on a vector and in float64 on a (2, m) matrix; x e^(xy) in float32 on
    a (2, m) matrix and in float64 on a vector (|x|, |y| between 0.3 and 1.5, both
    signs); then x**2 + cos(y), whose mixed partial is structurally zero, in float32
    on a vector and in float64 on a matrix (zeros of the input's dtype, not None).
    dtype in = dtype out; float64 judged to 1e-11 of the size of the terms. A None
    (also one hidden by ``unconnected_gradients=ZERO``) is explained from what the
    tapes saw.
    """
    rng = fresh_rng("4.2")
    n, m = int(rng.integers(3, 7)), int(rng.integers(2, 5))
    cases = [
        ("x**2 * y**3 + sin(x*y)", _surface, _surface_parts, "float32", (n,)),
        ("x**2 * y**3 + sin(x*y)", _surface, _surface_parts, "float64", (2, m)),
        ("x * exp(x*y)", _growth, _growth_parts, "float32", (2, m)),
        ("x * exp(x*y)", _growth, _growth_parts, "float64", (n,)),
        ("x**2 + cos(y)", _separable, _separable_parts, "float32", (n,)),
        ("x**2 + cos(y)", _separable, _separable_parts, "float64", (2, m)),
    ]
    for label, function, parts_of, dtype, shape in cases:
        x_values, y_values = signed(rng, shape, 0.3, 1.5), signed(rng, shape, 0.3, 1.5)
        parts = parts_of(x_values, y_values)
        structural = label == "x**2 + cos(y)"
        x, y = tensor(x_values, dtype), tensor(y_values, dtype)
        value, run, wrong = _call(answer, function, x, y, name="`mixed_partial`")
        log = run.log
        forbid_jacobian(log, _JACOBIAN_HINT_42)
        if structural and (value is None or wrong is not None):
            raise Wrong(_STRUCTURAL_NONE_HINT, "structural_none")
        if value is None or wrong is not None:
            _explain_none_or_error(
                run, value, wrong, names=((x, "x"), (y, "y")), name="`mixed_partial`"
            )
        got = as_values(value, name="`mixed_partial`", shape=shape, dtype=x.dtype)
        tol = tolerance_for(dtype)
        atol = tol.rtol * float(np.max(parts["scale"]))
        if matches(got, parts["fxy"], tol.rtol, atol):
            require_nested(log)
            continue
        _judge(
            got,
            parts["fxy"],
            tol,
            run=run,
            names=((x, "x"), (y, "y")),
            atol=atol,
            at=x_values,
            known=_mixed_mistakes(parts),
            batch=int(np.prod(shape)),
            terms=float(np.max(parts["scale"])),
            before_generic=lambda: _outer_repeated(
                log,
                parts["fy"],
                x_values,
                "z",
                "dz/dy",
                "the inner tape's result, dz/dx, with respect to y",
            ),
            computed=(
                "Your outer tape computed the mixed partial correctly, but your "
                "function changed it before returning it.",
                [("d2z/(dx dy)", parts["fxy"])],
                parts["fxy"],
            ),
            summary=f"Not d2z/(dx dy) for z = {label} in {dtype}.",
            what="your mixed partial",
        )
    return (
        "Nested tapes gave d2z/(dx dy) for functions you had not seen, in float32 and "
        "to float64 precision, and zeros (not None) where the x-slope does not "
        "depend on y."
    )
