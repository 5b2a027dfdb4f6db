"""Exercise 6.3: the vector-Jacobian rule of matmul."""

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
from .shared import _numbers
from .shared import _shape_of
from .shared import _snapshot
from .shared import _terms_tolerance
from .shared import _two_gradients
from .shared import _values


def _matmul_reference(upstream, a, b):
    """Entry by entry: grad_a[i, k] = sum_j dy[i, j] b[k, j] and
    grad_b[k, j] = sum_i a[i, k] dy[i, j]; also the sums of the terms' sizes."""
    upstream, a, b = (np.asarray(v, dtype=np.float64) for v in (upstream, a, b))
    terms_a = upstream[:, None, :] * b[None, :, :]
    terms_b = a[:, :, None] * upstream[:, None, :]
    return (
        terms_a.sum(axis=2),
        np.abs(terms_a).sum(axis=2),
        terms_b.sum(axis=0),
        np.abs(terms_b).sum(axis=0),
    )


def _matmul_plan(rng):
    (n,) = draw_sizes(rng, 1, 3, 5)
    m, k, p = draw_sizes(rng, 3)
    r, s = draw_sizes(rng, 2)
    q, t, u = draw_sizes(rng, 3)
    return [  # (description, shape of a, shape of b, dtype)
        ("square matrices", (n, n), (n, n), np.float64),
        ("rectangular matrices", (m, k), (k, p), np.float64),
        ("a column times a row (k = 1)", (r, 1), (1, s), np.float64),
        ("rectangular matrices in float32", (q, t), (t, u), np.float32),
    ]


def _transpose_of(expression: str) -> str:
    """'x @ y.T' -> 'y @ x.T': the expression of the transposed product."""

    def toggle(factor):
        return factor[:-2] if factor.endswith(".T") else factor + ".T"

    left, right = expression.split(" @ ")
    return f"{toggle(right)} @ {toggle(left)}"


def _transpose_mistakes(case_text, name, first, second, right, meaning):
    """Every product of the two right factors, with or without transposes, in either
    order, except the right one: ``(code, hint, value)`` for :func:`_explain`."""
    found = []
    (p, P), (q, Q) = first, second
    factors = {p: P, f"{p}.T": P.T, q: Q, f"{q}.T": Q.T}
    for left_name, right_name in [(x, y) for x in (p, f"{p}.T") for y in (q, f"{q}.T")] + [
        (y, x) for x in (p, f"{p}.T") for y in (q, f"{q}.T")
    ]:
        expression = f"{left_name} @ {right_name}"
        left, right_factor = factors[left_name], factors[right_name]
        if expression == right or left.shape[1] != right_factor.shape[0]:
            continue
        transposed = " (the answer transposed)" if expression == _transpose_of(right) else ""
        found.append(
            (
                "transposes_wrong",
                f"For {case_text}, {name} is {expression}{transposed}: the right two "
                f"matrices, with a transpose missing, misplaced or extra. The "
                f"definition settles it: {meaning}, which is {right}.",
                left @ right_factor,
            )
        )
    return found


def _alone(case_text, name, formula, forgot, elementwise, times, first, second, meaning):
    """The mistakes of grad_a or grad_b alone: ``forgot`` is its value with ones for the
    upstream, ``elementwise`` the element-wise rule's (None unless a and b have one
    shape), ``times`` the input that rule multiplies and the axes a @ b sums over, then
    every misplaced transpose of its two factors ``first`` and ``second``."""
    factor, over = times
    return [
        (
            "forgot_upstream",
            f"For {case_text}, {name} leaves out the upstream "
            f"gradient (ones instead): {name} = {formula}.",
            forgot,
        ),
        (
            "elementwise_rule",
            f"For {case_text}, {name} is the element-wise rule, "
            f"upstream * {factor}. For a @ b the gradient sums over the output's {over}: "
            f"{formula}.",
            elementwise,
        ),
    ] + _transpose_mistakes(case_text, name, first, second, formula, meaning)


@exercise("6.3", "the vector-Jacobian rule of matmul")
def matmul_vjp(answer):
    """Calls ``answer(upstream, a, b)`` for square and rectangular matrices drawn fresh.

    Probes: square n x n matrices first (n fresh, 3 to 5), where a misplaced transpose
    still runs and its values name it; then rectangular (m, k) @ (k, n) with three
    distinct fresh sizes, where the shapes must fit; an outer product (k = 1); and a
    rectangular float32 case (dtype in = dtype out). Values of both signs, upstream not
    1 anywhere. Reference: the defining sums written entry by entry, judged per entry
    relative to the size of its terms. The arguments must come back unchanged.
    """
    require_callable(answer)
    rng = fresh_rng("6.3")
    for case, shape_a, shape_b, dtype in _matmul_plan(rng):
        a, b = _values(rng, shape_a, dtype), _values(rng, shape_b, dtype)
        output_shape = (shape_a[0], shape_b[1])
        upstream = np.asarray(fresh_upstream(rng, output_shape), dtype=dtype)
        case_text = f"{case}: a {shape_a}, b {shape_b}, upstream {output_shape}"
        arguments = [("upstream", upstream.copy()), ("a", a.copy()), ("b", b.copy())]
        snapshots = _snapshot(*(array for _, array in arguments))
        try:
            value = call_answer(answer, *(array for _, array in arguments), name="`matmul_vjp`")
        except Wrong as wrong:
            shape_error = "ValueError" in wrong.hint and any(
                word in wrong.hint for word in ("mismatch", "shape", "align")
            )
            if wrong.mistake != "raised" or shape_a == shape_b or not shape_error:
                raise
            raise Wrong(
                f"{wrong.hint.rstrip('.')}. That happened for {case_text}: a "
                f"transpose is probably in the wrong place. Let the shapes guide "
                f"you: grad_a must be {shape_a}, and the only product of upstream "
                f"{output_shape} and b {shape_b} with that shape is upstream @ b.T.",
                "transposes_wrong",
            ) from None
        changed = _changed(snapshots)
        if changed:
            raise _in_place_hint(case_text, changed, arguments, "g = upstream @ b.T")
        pair = _two_gradients(value)
        got_shapes = [_shape_of(item) for item in pair]
        if shape_a != shape_b and got_shapes == [shape_b, shape_a]:
            raise Wrong(
                f"For {case_text}, your two gradients come back in the wrong order "
                f"(or each is built from the other's factors): grad_a has the shape "
                f"of b. Return (grad_a, grad_b) with grad_a = upstream @ b.T, shaped "
                f"like a, and grad_b = a.T @ upstream, shaped like b.",
                "transposes_wrong",
            )
        for got_shape, shape, name in zip(got_shapes, (shape_a, shape_b), ("grad_a", "grad_b")):
            if got_shape == tuple(shape[::-1]) and shape[0] != shape[1]:
                raise Wrong(
                    f"For {case_text}, {name} has shape {got_shape}, the transpose "
                    f"of its input's shape {shape}: transpose the result, or swap "
                    f"and transpose the factors.",
                    "transposes_wrong",
                )
        got_a = _numbers(pair[0], f"grad_a (for {case_text})", shape=shape_a, dtype=dtype)
        got_b = _numbers(pair[1], f"grad_b (for {case_text})", shape=shape_b, dtype=dtype)
        expected_a, size_a, expected_b, size_b = _matmul_reference(upstream, a, b)
        right_a = _close(got_a, expected_a, dtype, size_a)
        right_b = _close(got_b, expected_b, dtype, size_b)
        if right_a and right_b:
            continue
        u, a64, b64 = (np.asarray(v, dtype=np.float64) for v in (upstream, a, b))
        ones = np.ones_like(u)
        known_pairs = [
            (
                "reversed_order",
                f"For {case_text}, your two gradients are swapped: return (grad_a, grad_b) "
                f"with grad_a = upstream @ b.T (shaped like a) and grad_b = a.T @ upstream "
                f"(shaped like b).",
                (expected_b, expected_a),
            ),
            (
                "forgot_upstream",
                f"For {case_text}, you left out the upstream gradient (you used ones): "
                f"grad_a = upstream @ b.T and grad_b = a.T @ upstream.",
                (ones @ b64.T, a64.T @ ones),
            ),
        ]
        if shape_a == shape_b:
            known_pairs.append(
                (
                    "elementwise_rule",
                    f"For {case_text}, that is the rule of element-wise multiply. For a @ b "
                    f"each entry of the output sums over k, so the gradients are matrix "
                    f"products: upstream @ b.T and a.T @ upstream.",
                    (u * b64, u * a64),
                )
            )
        _diagnose_pair((got_a, got_b), known_pairs)
        square = shape_a == shape_b
        per_gradient = [
            (
                right_a,
                got_a,
                expected_a,
                size_a,
                "grad_a",
                "upstream @ b.T",
                _alone(
                    case_text,
                    "grad_a",
                    "upstream @ b.T",
                    ones @ b64.T,
                    u * b64 if square else None,
                    ("b", "columns"),
                    ("upstream", u),
                    ("b", b64),
                    "entry (i, k) sums upstream[i, j] * b[k, j] over j",
                ),
            ),
            (
                right_b,
                got_b,
                expected_b,
                size_b,
                "grad_b",
                "a.T @ upstream",
                _alone(
                    case_text,
                    "grad_b",
                    "a.T @ upstream",
                    a64.T @ ones,
                    u * a64 if square else None,
                    ("a", "rows"),
                    ("a", a64),
                    ("upstream", u),
                    "entry (k, j) sums a[i, k] * upstream[i, j] over i",
                ),
            ),
        ]
        for right, got, expected, size, name, formula, known in per_gradient:
            if right:
                continue
            known = [
                (code, hint, values)
                for code, hint, values in known
                if values is not None and values.shape == got.shape
            ]
            raise _fallback(
                got,
                expected,
                **_terms_tolerance(dtype, size),
                known=known,
                again=_called_again(answer, "`matmul_vjp`", (upstream, a, b), name),
                repeat=_called_again(answer, "`matmul_vjp`", (upstream, a, b), name, factor=1),
                local=(
                    "b, through the sum over j" if name == "grad_a" else "a, through the sum over i"
                )
                + f": {formula}",
                summary=f"For {case_text}, {name} should be {formula}.",
                what=f"your {name} (for {case_text})",
            )
    return (
        "grad_a = upstream @ b.T and grad_b = a.T @ upstream, each with its input's "
        "shape and dtype: checked for square and rectangular matrices, an outer "
        "product, float64 and float32, with the arguments left unchanged."
    )
