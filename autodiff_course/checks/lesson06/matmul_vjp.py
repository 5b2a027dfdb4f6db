"""Exercise 6.3: the vector-Jacobian rule of matmul."""

from __future__ import annotations

import re

import numpy as np

from ...checking.numpy_rule import NumpyRule
from ...checking.numpy_rule import pair_probes
from ...checking.numpy_rule import sum_of_terms
from ...checking.probes import sizes
from ...checking.spec import Exercise
from ...checking.spec import Mistake

RIGHT = {"grad_a": "upstream @ b.T", "grad_b": "a.T @ upstream"}
MEANING = {
    "grad_a": "entry (i, k) sums upstream[i, j] * b[k, j] over j",
    "grad_b": "entry (k, j) sums a[i, k] * upstream[i, j] over i",
}


def draw(rng) -> list:
    """Square matrices first (n fresh, 3 to 5), where a misplaced transpose still runs and
    its values name it; then fresh distinct sizes, where the shapes must fit: rectangular
    matrices, an outer product (k = 1), a row times a matrix, a column in float32."""
    (n,) = sizes(rng, 1, 3, 5)
    m, k, p = sizes(rng, 3)
    q, r = sizes(rng, 2)
    plan = [
        ("square matrices", (n, n), (n, n), "float64"),
        ("rectangular matrices", (m, k), (k, p), "float64"),
        ("an outer product (k = 1)", (q, 1), (1, r), "float64"),
        ("a row times a matrix", (1, k), (k, m), "float64"),
        ("a matrix times a column, in float32", (p, r), (r, 1), "float32"),
    ]
    return pair_probes(rng, plan, lambda shape_a, shape_b: (shape_a[0], shape_b[1]))


def _terms(p, part):
    """The terms each entry sums, by the definition (not the recipe): (rows, cols, terms)."""
    if part == "grad_a":
        return p.upstream[:, None, :] * p.b[None, :, :]
    return np.moveaxis(p.a[:, :, None] * p.upstream[:, None, :], 0, 2)


def _reference(p):
    return {part: _terms(p, part).sum(axis=2) for part in RIGHT}


def _product(expression):
    def gives(p):
        factors = {"upstream": p.upstream, "a": p.a, "b": p.b}
        operator = " @ " if " @ " in expression else " * "
        left, right = (
            factors[name.removesuffix(".T")].T if name.endswith(".T") else factors[name]
            for name in expression.split(operator)
        )
        if operator == " * ":
            return left * right if left.shape == right.shape else None
        return left @ right if left.shape[1] == right.shape[0] else None

    return gives


def _transposes(part, other):
    """Every product of upstream and the other input, transposed or not, in either order."""
    pairs = [(u, o) for u in ("upstream", "upstream.T") for o in (other, f"{other}.T")]
    products = sorted({f"{x} @ {y}" for u, o in pairs for x, y in ((u, o), (o, u))})
    return tuple(
        Mistake(
            "transposes_wrong",
            f"Your {part} is {expression}: the right two matrices, with a transpose missing, "
            f"misplaced or extra. By the definition, {MEANING[part]}: {RIGHT[part]}.",
            _product(expression),
            part=part,
            means="a matmul gradient with a transpose missing or misplaced",
        )
        for expression in products
        if expression != RIGHT[part]
    )


def _elementwise(part, other):
    """Element-wise products of upstream and the other input, transposed or not."""
    return tuple(
        Mistake(
            "elementwise_rule",
            f"Your {part} is the element-wise product {u} * {o}, as in the multiply rule. For "
            f"a @ b each output entry is a sum, so the gradient is a matrix product: "
            f"{RIGHT[part]}.",
            _product(f"{u} * {o}"),
            part=part,
            means="the element-wise multiply rule used for matmul",
        )
        for u in ("upstream", "upstream.T")
        for o in (other, f"{other}.T")
    )


FACTORISED = {  # part: the two sums whose outer product it is, and what gives it
    "grad_a": (
        "the row sums of upstream times the row sums of b",
        lambda p: np.outer(p.upstream.sum(axis=1), p.b.sum(axis=1)),
    ),
    "grad_b": (
        "the column sums of a times the column sums of upstream",
        lambda p: np.outer(p.a.sum(axis=0), p.upstream.sum(axis=0)),
    ),
}


def _factorised(part):
    what, gives = FACTORISED[part]
    return Mistake(
        "product_of_sums",
        f"Your {part} is {what} (an outer product of two sums): the sum was split into a "
        f"product of sums, and a sum of products is not that. By the definition, "
        f"{MEANING[part]}, one product per term: {RIGHT[part]}.",
        gives,
        part=part,
        means="a sum of products computed as a product of sums",
    )


def _raised(wrong, p):
    """A shape error on rectangular matrices: a transpose in the wrong place."""
    shape_error = re.search(r"^ValueError.*(mismatch|shape|align)", wrong.error)
    if wrong.mistake != "raised" or not shape_error or p.a.shape == p.b.shape:
        return None
    return wrong.explained(
        "A transpose is probably in the wrong place. Let the shapes guide you: "
        f"grad_a must be {p.a.shape}, and the only product of upstream {p.upstream.shape} and "
        f"b {p.b.shape} with that shape is upstream @ b.T.",
        "transposes_wrong",
    )


EXERCISE = Exercise(
    number="6.3",
    title="The matmul rule",
    stars=2,
    minutes=10,
    harness=NumpyRule(
        "`matmul_vjp`",
        inputs=("a", "b"),
        gradients=("grad_a", "grad_b"),
        local={"grad_a": "b, through upstream @ b.T", "grad_b": "a, through a.T @ upstream"},
        fix="build new arrays instead: g = upstream @ b.T",
        raised=_raised,
    ),
    probes=draw,
    reference=_reference,
    mistakes=(
        Mistake(
            "reversed_order",
            "Your two gradients are swapped: return (grad_a, grad_b) with grad_a = upstream @ "
            "b.T, shaped like a, and grad_b = a.T @ upstream, shaped like b.",
            _product("a.T @ upstream"),
            part="grad_a",
        ),
        *_elementwise("grad_a", "b"),
        *_elementwise("grad_b", "a"),
        _factorised("grad_a"),
        _factorised("grad_b"),
    )
    + _transposes("grad_a", "b")
    + _transposes("grad_b", "a"),
    describe={part: f"{formula} ({MEANING[part]})" for part, formula in RIGHT.items()},
    claim="grad_a = upstream @ b.T and grad_b = a.T @ upstream, each shaped like its input, "
    "for square and rectangular matrices, an outer product, a row and a column",
    tolerance=sum_of_terms(_reference),
)
matmul_vjp = EXERCISE.check
