"""Exercise 2.2: a derivative for any kind of x."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import raise_if_missing
from ...checking import raise_if_partly_cut
from ...checking import raise_if_zeros_hide
from ...checking import signed
from .shared import _float32_for_float64
from .shared import _raise_difference
from .shared import _raise_if_float32_inside
from .shared import _run
from .shared import _show
from .shared import _tolerance


def _test_function(rng):
    """f(x) = a x**3 + b x**2 + c sin(x) with fresh coefficients, and its references."""
    a, b, c = (float(v) for v in signed(rng, 3, 0.5, 2.0, decimals=2))

    def f(x):
        import tensorflow as tf

        return a * x**3 + b * x**2 + c * tf.sin(x)

    def value(x):
        return a * x**3 + b * x**2 + c * np.sin(x)

    def slope(x):
        return 3 * a * x**2 + 2 * b * x + c * np.cos(x)

    def curvature(x):
        return 6 * a * x + 2 * b - c * np.sin(x)

    f.__name__ = "f"
    return f, value, slope, curvature, (a, b, c)


def _kinds_of_x(rng):
    """(description, x, result dtype) for each kind of x the exercise names."""
    import tensorflow as tf

    vector = signed(rng, int(rng.integers(3, 6)), 0.1, 2.0)
    vector[rng.integers(len(vector))] = 0.0
    integers = rng.integers(-3, 4, size=int(rng.integers(3, 6)))
    integers[0] = -abs(integers[0]) - 1
    scalar = float(signed(rng, (), 0.2, 2.0))
    float64 = signed(rng, int(rng.integers(2, 5)), 0.1, 2.5, decimals=None)
    frozen = signed(rng, int(rng.integers(2, 4)), 0.1, 2.0)
    return [
        (f"a float32 tensor x = {_show(vector)}", tf.constant(vector, tf.float32), tf.float32),
        (f"an int32 tensor x = {_show(integers)}", tf.constant(integers, tf.int32), tf.float32),
        ("a float64 tensor x", tf.constant(float64, tf.float64), tf.float64),
        (
            f"a trainable tf.Variable x = {scalar:g}",
            tf.Variable(scalar, dtype=tf.float32),
            tf.float32,
        ),
        (
            f"a tf.Variable with trainable=False, x = {_show(frozen)}",
            tf.Variable(frozen, dtype=tf.float32, trainable=False),
            tf.float32,
        ),
    ]


def _cancellation_tolerance(dtype, points, coefficients) -> dict:
    """The dtype's tolerance, widened where the terms of f' (or of f'', judged among the
    mistakes) cancel at a probed point."""
    a, b, c = coefficients
    slope_terms = np.abs(3 * a * points**2) + np.abs(2 * b * points) + abs(c)
    curvature_terms = np.abs(6 * a * points) + 2 * abs(b) + abs(c)
    return _tolerance(dtype, terms=np.max(np.maximum(slope_terms, curvature_terms)))


@exercise("2.2", "a derivative for any kind of x")
def derivative(answer):
    """derivative(f, x): df/dx element-wise, with a tape, for every kind of x.

    Probes (fresh each call): a new f(x) = a x**3 + b x**2 + c sin(x) with
    coefficients of both signs (so the lesson's x**3 - 2x, a value, a second
    derivative or hard-coded numbers fail), and five kinds of x: a float32
    vector (one element 0), an int32 vector with negative entries (float32
    result), a float64 vector (float64 result, float64 tolerance), a trainable
    float32 Variable, and a non-trainable float32 Variable. A tf.GradientTape
    must produce the result (finite differences are *not yet*).

    Catalogue: every None named from what happened (unwatched constant,
    non-trainable variable, integer source, watched after use, computed outside
    the block, NumPy detour, operation without a gradient, zeros from
    unconnected_gradients=ZERO hiding one of these); float32 for a float64 x;
    f(x) itself; the lesson's example formula; the second derivative; a
    partly cut path; finite differences; then the generic patterns.
    """
    rng = fresh_rng("2.2")
    f, value_of, slope_of, curvature_of, coefficients = _test_function(rng)
    for description, x, dtype in _kinds_of_x(rng):
        label = f"`{getattr(answer, '__name__', 'your function')}` called with {description}"
        run = _run(answer, f, x, name=label)
        where = f"For {description}: "
        raise_if_missing(run, prefix=where)
        if run.raised is not None:
            extra = (
                " Convert an integer x to float32 with tf.cast before f sees it."
                if x.dtype.is_integer
                else ""
            )
            ending = "" if run.raised.hint.endswith((".", "!", "?")) else "."
            raise Wrong(run.raised.hint + ending + extra, "raised")
        result = run.value
        raise_if_zeros_hide(run, result, prefix=where)
        _float32_for_float64(
            f"{where}your result",
            result,
            dtype,
            "convert only integer inputs (`if x.dtype.is_integer:`), "
            "so that a float x keeps its dtype.",
        )
        got = as_values(result, name=label, shape=tuple(x.shape), dtype=dtype)
        points = np.asarray(x.numpy(), dtype=np.float64)
        expected = slope_of(points)
        tolerance = _cancellation_tolerance(dtype, points, coefficients)
        if not run.log.calls:
            if matches(got, expected, **tolerance):
                raise Wrong(
                    f"{where}the numbers are right, but no tf.GradientTape "
                    "produced them. This exercise is about the tape: record "
                    "f(x) on a tf.GradientTape and ask it for tape.gradient.",
                    "no_tape",
                )
            if matches(got, expected, rtol=1e-2, atol=1e-6):
                raise Wrong(
                    f"{where}your numbers come close, but no tf.GradientTape "
                    "computed them: that is an approximation such as a finite "
                    "difference. Record f(x) on a tape and ask it for "
                    "tape.gradient.",
                    "finite_differences",
                )
        elif matches(got, expected, **tolerance):
            continue
        known = [
            (
                "value_not_derivative",
                f"{where}you returned f(x) itself, not its derivative: return tape.gradient(y, x).",
                value_of(points),
            ),
            (
                "ignored_function",
                f"{where}you returned 3x**2 - 2, the slope of the lesson's x**3 - 2x. "
                "The check passes a different f each time: call f(x) on the tape.",
                3 * points**2 - 2,
            ),
            (
                "differentiated_twice",
                f"{where}you returned the second derivative f''(x): differentiate once.",
                curvature_of(points),
            ),
            (
                "extra_factor",
                f"{where}you returned the derivative times x: tape.gradient(y, x) is "
                "already df/dx, with nothing to multiply.",
                slope_of(points) * points,
            ),
            (
                "lost_fraction",
                f"{where}you returned the derivative at x without its fractional part: a "
                "cast of a float x to an integer dtype dropped it. Cast only integer "
                "inputs, and to a float dtype.",
                slope_of(np.trunc(points)),
            ),
            (
                "lost_fraction",
                f"{where}you returned the derivative at x rounded to whole numbers: "
                "rounding (or a cast to an integer) changed the point. Leave float "
                "inputs as they are.",
                slope_of(np.round(points)),
            ),
        ]
        _raise_if_float32_inside(run, got, expected, dtype, where[:-2])
        raise_if_missing(run, prefix=where, hidden=True)
        diagnose_mistake(got, known, **tolerance)
        raise_if_partly_cut(run, prefix=where)
        _raise_difference(
            run,
            got,
            expected,
            label=where[:-2],
            probe="x",
            batch=points.size,
            at=points,
            what="your derivative",
            tolerance=tolerance,
            summary=f"{where}not the derivative of the f the check passed in.",
        )
    return (
        "For a fresh f and every kind of x (float32 and float64 tensors, an int32 "
        "tensor, trainable and non-trainable variables) your tape returns df/dx in "
        "the right dtype."
    )
