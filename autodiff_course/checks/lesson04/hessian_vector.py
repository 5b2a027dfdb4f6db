"""Exercise 4.4: a Hessian-vector product, reverse over reverse."""

from __future__ import annotations

import numpy as np

from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import forbid_jacobian
from ...checking import fresh_rng
from ...checking import matches
from ...checking import require_nested
from ...checking import shape_of
from ...checking import signed
from ...checking import tensor
from ...checking import tolerance_for
from .judging import _judge
from .judging import _results
from .shared import _call
from .shared import _explain_none_or_error


def _rosenbrock(x):
    import tensorflow as tf

    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosenbrock_parts(x):
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n - 1):
        hessian[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        hessian[i + 1, i + 1] += 200.0
        hessian[i, i + 1] = hessian[i + 1, i] = -400.0 * x[i]
    gradient = np.zeros(n)
    gradient[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    gradient[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return gradient, hessian


def _logsumexp(x):
    import tensorflow as tf

    return tf.reduce_logsumexp(x)


def _logsumexp_parts(x):
    e = np.exp(x - x.max())
    p = e / e.sum()
    return p, np.diag(p) - np.outer(p, p)


def _quartic(x):
    import tensorflow as tf

    return 0.25 * tf.reduce_sum(x**2) ** 2


def _quartic_parts(x):
    return (x @ x) * x, (x @ x) * np.eye(x.size) + 2.0 * np.outer(x, x)


def _explain_outer_target(log, got, hessian, v_values, tol: Tolerance, atol) -> None:
    """The outer tape's result is H @ w for some w != v: say which w."""
    expected = hessian @ v_values
    results = [
        result
        for result in _results(log, outer_only=True)
        if result.shape == expected.shape and np.all(np.isfinite(result))
    ]
    loose = max(tol.rtol, 1e-9) * 10
    if not results or any(matches(result, expected, loose, atol) for result in results):
        return  # no outer result, or the outer result was right and changed afterwards
    if np.linalg.cond(hessian) > 1e6:
        return
    w = np.linalg.solve(hessian, results[-1])
    shown = {"precision": 4, "suppress_small": True}
    raise Wrong(
        "Your outer tape differentiated another target than sum(g * v): its "
        f"gradient is H @ w with w = {np.array2string(w, **shown)}, where H @ v "
        f"needs w = v = {np.array2string(v_values, **shown)}. (When the target "
        "depends on x only through the gradient g, w is its derivative with respect "
        "to g; for sum(g * v) that is v.)",
        "wrong_target",
    )


_HVP_BETWEEN = " (here the product with v), or pass v as output_gradients instead"

_JACOBIAN_HINT_44 = (
    "H @ v comes from one more backward pass through the gradient, the gradient of "
    "sum(g * v), never from H itself."
)

_FORWARD_OVER_REVERSE_HINT = (
    "Your function computed H @ v forward over reverse (a ForwardAccumulator around the "
    "gradient), the route the lesson showed above. This exercise asks for the other "
    "route, reverse over reverse: nested GradientTapes, with the outer one "
    "differentiating sum(g * v)."
)


@exercise("4.4", "a Hessian-vector product, reverse over reverse")
def hvp(answer):
    """``hvp(f, x, v)`` = H(x) @ v without forming H: reverse over reverse.

    Method (observed): nested GradientTapes; no ``tape.jacobian``/``batch_jacobian``
    (that forms H) and no ForwardAccumulator (forward over reverse, shown in the
    lesson). ``sum(g * v)`` and ``output_gradients=v`` are both accepted.
    Probes, fresh on every call: the Rosenbrock function (float32, 3 to 6 inputs),
    logsumexp (float64, 3 to 6 inputs) and (x.x)**2 / 4 (float32 and float64), at
    fresh x and v with entries of both signs. dtype in = dtype out. A point is judged
    against the size of its terms, sum_j |H_ij v_j| (float64 to 1e-11), since the
    entries of H @ v can cancel.
    """
    rng = fresh_rng("4.4")
    cases = [
        ("the Rosenbrock function", _rosenbrock, _rosenbrock_parts, "float32", 0.4, 1.2),
        ("logsumexp", _logsumexp, _logsumexp_parts, "float64", 0.3, 2.0),
        ("(x.x)**2 / 4", _quartic, _quartic_parts, "float32", 0.3, 1.5),
        ("(x.x)**2 / 4", _quartic, _quartic_parts, "float64", 0.3, 1.5),
    ]
    for label, function, parts_of, dtype, low, high in cases:
        n = int(rng.integers(3, 7))
        x_values, v_values = signed(rng, (n,), low, high), signed(rng, (n,), 0.5, 2.0)
        gradient, hessian = parts_of(x_values)
        x, v = tensor(x_values, dtype), tensor(v_values, dtype)
        value, run, wrong = _call(answer, function, x, v, name="`hvp`")
        log = run.log
        forbid_jacobian(log, _JACOBIAN_HINT_44)
        if log.accumulators:
            raise Wrong(_FORWARD_OVER_REVERSE_HINT, "forward_over_reverse")
        if value is None or wrong is not None:
            _explain_none_or_error(
                run, value, wrong, names=((x, "x"), (v, "v")), name="`hvp`", between=_HVP_BETWEEN
            )
        shape = shape_of(value)
        if shape == ():
            raise Wrong(
                "You returned one number, probably v . grad f or v . H v. The "
                "Hessian-vector product is a vector shaped like x: differentiate "
                "v . grad f with respect to x.",
                "directional_derivative",
            )
        if shape == (n, n):
            raise Wrong(
                f"You returned a {n}x{n} matrix: the Hessian itself, or H * v "
                f"broadcast. A Hessian-vector product is H @ v, shaped like x, "
                f"computed without forming H.",
                "returned_hessian",
            )
        got = as_values(value, name="`hvp`", shape=(n,), dtype=x.dtype)
        tol = tolerance_for(dtype)
        expected = hessian @ v_values
        atol = tol.rtol * float(np.max(np.abs(hessian) @ np.abs(v_values)))
        if matches(got, expected, tol.rtol, atol):
            require_nested(log)
            continue
        row_sums = hessian @ np.ones(n)
        _judge(
            got,
            expected,
            tol,
            run=run,
            names=((x, "x"), (v, "v")),
            atol=atol,
            batch=n,
            between=_HVP_BETWEEN,
            what="your product",
            computed=(
                "Your outer tape computed H @ v correctly, but your function "
                "changed it before returning it (multiplied or scaled it?).",
                [("(H @ v)", expected)],
                expected,
            ),
            summary=f"Not H @ v for {label} in {dtype}.",
            known=[
                (
                    "first_not_second",
                    "You returned grad f, the first derivative. "
                    "Differentiate v . grad f once more with respect to x, on an outer "
                    "tape that recorded the inner gradient.",
                    gradient,
                ),
                (
                    "first_not_second",
                    "You returned grad f * v, element by element: "
                    "that product must itself be differentiated, the outer gradient of "
                    "sum(grad f * v).",
                    gradient * v_values,
                ),
                (
                    "hessian_row_sums",
                    "You multiplied by v after the outer gradient. "
                    "outer.gradient(g, x) is H @ ones, the row sums of H; multiply g by v "
                    "inside the outer block and differentiate the sum, or pass "
                    "output_gradients=v.",
                    row_sums * v_values,
                ),
                (
                    "scale_factor",
                    "You normalised v (or scaled it): the exercise asks "
                    "for H @ v for the v it passes, whatever its length.",
                    expected / np.linalg.norm(v_values),
                ),
                (
                    "hessian_row_sums",
                    "Your result does not depend on v: it is H @ ones, "
                    "the outer gradient of g itself. Differentiate sum(g * v) instead, or "
                    "pass output_gradients=v.",
                    row_sums,
                ),
                (
                    "wrong_target",
                    "Your outer target adds f(x) (or a term like it) "
                    "to sum(g * v), so its gradient adds grad f to H @ v. Differentiate "
                    "sum(g * v) alone.",
                    expected + gradient,
                ),
            ],
            before_generic=lambda: _explain_outer_target(log, got, hessian, v_values, tol, atol),
        )
    return (
        "Nested tapes, no Hessian formed: H @ v is right for three functions you had "
        "not seen, in float32 and to float64 precision. Its cost is about two "
        "gradients, whatever the size of x."
    )
