"""Exercise 6.2: the vector-Jacobian rule of broadcasting multiply."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import call_answer
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import require_callable
from ...checking import sizes as draw_sizes
from ...checking import upstream as fresh_upstream
from .shared import _called_again
from .shared import _changed
from .shared import _close
from .shared import _diagnose_pair
from .shared import _fallback
from .shared import _in_place_hint
from .shared import _is_tape_tensor
from .shared import _numbers
from .shared import _shape_of
from .shared import _snapshot
from .shared import _terms_tolerance
from .shared import _two_gradients
from .shared import _values


def _touch_sum(upstream, factor, input_shape):
    """sum of upstream * factor over the output entries each input entry took part in.

    A loop over the output's entries, mapping each to the input entry it used (index 0
    along an axis of size 1, no index for an axis broadcasting added): the definition
    of the derivative of sum(dy * a * b), not the recipe under test. Returns the sum and
    the sum of the terms' sizes (for a tolerance that survives cancellation).
    """
    upstream = np.asarray(upstream, dtype=np.float64)
    factor = np.broadcast_to(np.asarray(factor, dtype=np.float64), upstream.shape)
    total = np.zeros(input_shape)
    size = np.zeros(input_shape)
    offset = upstream.ndim - len(input_shape)
    for index in np.ndindex(upstream.shape):
        target = tuple(
            0 if input_shape[axis] == 1 else index[axis + offset]
            for axis in range(len(input_shape))
        )
        term = upstream[index] * factor[index]
        total[target] += term
        size[target] += abs(term)
    return total, size


def _sum_to_shape(g, shape, reduce=np.sum):
    """The check's own 'sum back over broadcast axes' (for simulating wrong answers)."""
    g = np.asarray(g, dtype=np.float64)
    while g.ndim > len(shape):
        g = reduce(g, axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = reduce(g, axis=axis, keepdims=True)
    return g


def _multiply_plan(rng):
    p, m, n = draw_sizes(rng, 3)
    return [  # (description, shape of a, shape of b, dtype)
        ("a table times a row", (m, n), (n,), np.float64),
        ("a column times a row", (m, 1), (1, n), np.float64),
        ("a scalar times a table", (), (m, n), np.float64),
        ("two arrays of equal shape", (m, n), (m, n), np.float64),
        ("a stack of tables times a column", (p, m, n), (m, 1), np.float64),
        ("size-1 axes on both sides", (1, m, 1), (p, 1, n), np.float64),
        ("a row times a column, in float32", (n,), (m, 1), np.float32),
    ]


def _broadcast_shape_mistake(name, got, input_shape, output_shape, case):
    """A Wrong naming what went wrong when a broadcast input's gradient has another shape."""
    head = f"For {case}, {name} has shape {got}, but its input has shape {input_shape}"
    added = len(output_shape) - len(input_shape)
    stretched = [
        axis
        for axis, size in enumerate(input_shape)
        if size == 1 and output_shape[axis + added] != 1
    ]
    if got == tuple(output_shape):
        return Wrong(
            f"{head}: it still has the output's shape. Broadcasting used each entry "
            f"of that input several times, so sum its gradient back over the axes "
            f"broadcasting added or stretched: unbroadcast(g, {input_shape}).",
            "not_summed_back",
        )
    if got == () and input_shape != ():
        return Wrong(
            f"{head}: a single number. Sum only over the axes that broadcasting "
            f"added or stretched, not over all of them.",
            "summed_everything",
        )
    if added and got == tuple(output_shape[added:]) and stretched:
        return Wrong(
            f"{head}: you summed the leading axes broadcasting added, but not "
            f"axis {stretched[0]}, which it stretched from size 1. Sum that one "
            f"too, with keepdims=True.",
            "not_summed_back",
        )
    if added and len(got) == len(output_shape) and got[added:] == tuple(input_shape):
        return Wrong(
            f"{head}: you summed the stretched axes, but not the "
            f"{'leading axis' if added == 1 else f'{added} leading axes'} that "
            f"broadcasting added in front. Sum over axis 0 until the number of "
            f"axes agrees.",
            "not_summed_back",
        )
    if [s for s in got if s != 1] == [s for s in input_shape if s != 1]:
        return Wrong(
            f"{head}: the numbers may be right, but an axis of size 1 was dropped "
            f"or added. Where the input has size 1, sum with keepdims=True; drop "
            f"only the leading axes broadcasting added.",
            "broadcast_shape",
        )
    return Wrong(
        f"{head}. A gradient always has its input's shape: sum the upstream "
        f"gradient over the axes broadcasting added (from the front) and over "
        f"those it stretched from size 1.",
        "wrong_shape",
    )


def _pair_values(pair, names, shapes, output_shape, dtype, case):
    """Both gradients as float64, after their shapes and dtypes are judged."""
    got_shapes = [_shape_of(item) for item in pair]
    if shapes[0] != shapes[1] and got_shapes == [shapes[1], shapes[0]]:
        raise Wrong(
            f"For {case}, your two gradients come back in the wrong order: "
            f"{names[0]} has the shape of the second input. Return them as "
            f"(grad_a, grad_b), each with its own input's shape.",
            "reversed_order",
        )
    values = []
    for item, name, shape, got_shape in zip(pair, names, shapes, got_shapes):
        if (
            got_shape is not None
            and got_shape != tuple(shape)
            and not _is_tape_tensor(item)
            and item is not None
            and not isinstance(item, (str, bytes))
        ):
            raise _broadcast_shape_mistake(name, got_shape, tuple(shape), output_shape, case)
        values.append(_numbers(item, f"{name} (for {case})", shape=shape, dtype=dtype))
    return values


@exercise("6.2", "the vector-Jacobian rule of broadcasting multiply")
def multiply_vjp(answer):
    """Calls ``answer(upstream, a, b)`` on seven pairs of shapes drawn fresh each call.

    Probes: axis sizes drawn fresh and distinct (2 to 6), so a sum over the wrong axis
    changes the shape; a table times a row first (an added leading axis: a rule that
    ignores broadcasting, or returns its pair in the wrong order, fails there on its
    shapes), a column times a row (both stretched), a scalar times a table, equal
    shapes, a stack of tables
    times a column (added and stretched axes), size-1 axes on both sides, and a row
    times a column in float32 (dtype in = dtype out). Values of both signs and an
    upstream that is not 1 anywhere, fresh each call. Reference: the loop of
    :func:`_touch_sum`, judged per entry relative to the size of its terms. The
    arguments must come back unchanged (no in-place updates).
    """
    require_callable(answer)
    rng = fresh_rng("6.2")
    for case, shape_a, shape_b, dtype in _multiply_plan(rng):
        a, b = _values(rng, shape_a, dtype), _values(rng, shape_b, dtype)
        output_shape = np.broadcast_shapes(shape_a, shape_b)
        upstream = np.asarray(fresh_upstream(rng, output_shape), dtype=dtype)
        arguments = [("upstream", upstream.copy()), ("a", a.copy()), ("b", b.copy())]
        snapshots = _snapshot(*(array for _, array in arguments))
        pair = _two_gradients(
            call_answer(answer, *(array for _, array in arguments), name="`multiply_vjp`")
        )
        changed = _changed(snapshots)
        if changed:
            raise _in_place_hint(case, changed, arguments, "g = upstream * b")
        case_text = f"{case}, a {shape_a} and b {shape_b}"
        got_a, got_b = _pair_values(
            pair, ("grad_a", "grad_b"), (shape_a, shape_b), output_shape, dtype, case_text
        )
        expected_a, size_a = _touch_sum(upstream, b, shape_a)
        expected_b, size_b = _touch_sum(upstream, a, shape_b)
        right_a = _close(got_a, expected_a, dtype, size_a)
        right_b = _close(got_b, expected_b, dtype, size_b)
        if right_a and right_b:
            continue
        ones = np.ones(output_shape)
        _diagnose_pair(
            (got_a, got_b),
            [
                (
                    "reversed_order",
                    f"For {case_text}, your two gradients come back in the wrong order: return "
                    f"(grad_a, grad_b).",
                    (expected_b, expected_a),
                ),
                (
                    "swapped_operands",
                    f"For {case_text}, each gradient uses its own input: the gradient of a is "
                    f"upstream times b (d(a*b)/da = b), and the gradient of b is upstream times a.",
                    (_sum_to_shape(upstream * a, shape_a), _sum_to_shape(upstream * b, shape_b)),
                ),
                (
                    "forgot_upstream",
                    f"For {case_text}, you left out the upstream gradient: the rule returns "
                    f"upstream * b and upstream * a, summed back, not b and a. (With upstream = 1 "
                    f"the mistake is invisible; inside a chain it is not.)",
                    (_sum_to_shape(ones * b, shape_a), _sum_to_shape(ones * a, shape_b)),
                ),
                (
                    "forgot_local_derivative",
                    f"For {case_text}, you passed the upstream gradient on unchanged: multiply it "
                    f"by the local derivative first, d(a*b)/da = b and d(a*b)/db = a.",
                    (_sum_to_shape(upstream, shape_a), _sum_to_shape(upstream, shape_b)),
                ),
                (
                    "mean_not_sum",
                    f"For {case_text}, you averaged over the broadcast axes: each entry of a "
                    f"broadcast input was used several times, and its gradient is the sum over "
                    f"those uses, not their mean.",
                    (
                        _sum_to_shape(upstream * b, shape_a, np.mean),
                        _sum_to_shape(upstream * a, shape_b, np.mean),
                    ),
                ),
            ],
        )
        name, got, expected, size, shape, own, other = (
            ("grad_a", got_a, expected_a, size_a, shape_a, "a", "b")
            if not right_a
            else ("grad_b", got_b, expected_b, size_b, shape_b, "b", "a")
        )
        own_value, other_value = (a, b) if name == "grad_a" else (b, a)
        single = [  # this gradient alone is wrong, the other one is right
            (
                "swapped_operands",
                f"For {case_text}, {name} uses its own input: the gradient of {own} is "
                f"upstream times {other}, since d(a*b)/d{own} = {other}.",
                _sum_to_shape(upstream * own_value, shape),
            ),
            (
                "forgot_upstream",
                f"For {case_text}, {name} leaves out the upstream gradient: it should be "
                f"upstream * {other}, summed back to {shape}, not {other} alone.",
                _sum_to_shape(ones * other_value, shape),
            ),
            (
                "forgot_local_derivative",
                f"For {case_text}, {name} is the upstream gradient without the local "
                f"derivative: multiply by {other} before summing back.",
                _sum_to_shape(upstream, shape),
            ),
            (
                "mean_not_sum",
                f"For {case_text}, {name} averages over the broadcast axes: each entry of a "
                f"broadcast input was used several times, and its gradient is the sum over "
                f"those uses, not their mean.",
                _sum_to_shape(upstream * other_value, shape, np.mean),
            ),
        ]
        raise _fallback(
            got,
            expected,
            **_terms_tolerance(dtype, size),
            known=[(code, hint, value) for code, hint, value in single if value.shape == got.shape],
            again=_called_again(answer, "`multiply_vjp`", (upstream, a, b), name),
            repeat=_called_again(answer, "`multiply_vjp`", (upstream, a, b), name, factor=1),
            local=f"{other}, summed back to {shape}",
            summary=(
                f"For {case_text}, {name} should be upstream times the other input, "
                f"summed back to the shape {shape}."
            ),
            what=f"your {name} (for {case_text})",
        )
    return (
        "grad_a = upstream * b and grad_b = upstream * a, each summed back to its "
        "input's shape and dtype, with the arguments left unchanged: checked for equal "
        "shapes, a row, a column times a row, a scalar, added leading axes and "
        "size-1 axes on both sides, in float64 and float32."
    )
