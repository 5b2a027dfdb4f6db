"""Exercise 5.5: one Hessian per example, with nested tapes."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from ...checking.probes import tensor
from ...log1pexp import reference_sigmoid as sigmoid
from .functions import dense


def sizes(rng):
    """f(x)[b] = sum_k softplus(x[b] A^T + c)[k], fresh: float32 with a batch of 3 to 5,
    float64 with a batch of one (a squeeze shows); two n from 2 to 4."""
    n, b = (int(k) for k in rng.choice(np.arange(2, 5), size=2, replace=False)), rng.integers(3, 6)
    return [("float32", {"batch": int(b), "n": next(n)}), ("float64", {"batch": 1, "n": next(n)})]


def _f(p):
    import tensorflow as tf

    a_t, c = tensor(p.A.T, p.dtype), tensor(p.c, p.dtype)
    f = lambda x: tf.reduce_sum(tf.nn.softplus(x @ a_t + c), axis=1)  # noqa: E731
    return f, tensor(p.x, p.dtype)


def _gradients(p):
    return sigmoid(p.x @ p.A.T + p.c) @ p.A


def _hessians(p):
    s = sigmoid(p.x @ p.A.T + p.c)
    return np.einsum("ki,bk,kj->bij", p.A, s * (1.0 - s), p.A)


EXERCISE = spec.Exercise(
    number="5.5",
    title="One Hessian per example",
    stars=2,
    minutes=10,
    harness=Function(
        "`per_example_hessians`",
        arguments=_f,
        nested=True,
        forbid={"accumulator": ""},  # forward over reverse is named as such (as in 4.4)
        vary=negated,
    ),
    probes=spec.Shaped(
        lambda rng, d, s: dense(rng, d, s, (s["n"],), (s["n"],), s["batch"]), sizes, size_one=False
    ),
    reference=_hessians,
    mistakes=(
        spec.Mistake(
            "returned_gradient",
            "You returned the gradients g: differentiate them again, outer.batch_jacobian(g, x).",
            _gradients,
        ),
        spec.Mistake(
            "gradient_of_gradient",
            "That is outer.gradient(g, x), a sum of Hessian rows: use outer.batch_jacobian.",
            lambda p: _hessians(p).sum(axis=1),
            means="outer.gradient of a gradient (summed rows) where a Jacobian belongs",
        ),
        spec.Mistake(
            "gradient_of_gradient",
            "That is outer.gradient(g, x), a sum of Hessian rows, put on a diagonal: the "
            "Hessian's mixed derivatives are not in it. Use outer.batch_jacobian(g, x).",
            lambda p: np.stack([np.diag(row) for row in _hessians(p).sum(axis=1)]),
        ),
        spec.Mistake(
            "diagonal_only",
            "Only the diagonals: the mixed derivatives d2f/dx_i dx_j are missing.",
            lambda p: np.stack([np.diag(np.diag(h)) for h in _hessians(p)]),
            means="only the diagonal of a Hessian",
        ),
        spec.Mistake(
            "gradient_outer_product",
            "That is g g^T; the Hessian differentiates g again, with the outer tape.",
            lambda p: np.einsum("bi,bj->bij", _gradients(p), _gradients(p)),
            means="the outer product g g^T where the Hessian belongs",
        ),
    ),
    describe={"value": "the (batch, n, n) Hessians, one per example"},
    claim="The Jacobian of each example's gradient is its Hessian",
    tolerance=relative_to_largest(_hessians),
)
per_example_hessians = EXERCISE.check
