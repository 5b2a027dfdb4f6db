"""Exercise 5.6: a forward-mode Jacobian for tensors of any shape."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from .functions import dense
from .functions import function
from .functions import jacobian


def sizes(rng):
    """y = tanh(A vec(x) + c), fresh: float64 with x (2, k) and y (m,), float32 with x (n,)
    and y (p, 2), so that y.shape + x.shape is never x.shape + y.shape."""
    k, p, m, n = (int(v) for v in (*rng.integers(2, 4, size=2), *rng.choice([3, 5], size=2)))
    return [("float64", {"x0": 2, "x1": k, "y0": m}), ("float32", {"x0": n, "y0": p, "y1": 2})]


def make(rng, dtype, s):
    shape = {axis: tuple(v for key, v in s.items() if key[0] == axis) for axis in "xy"}
    return dense(rng, dtype, {}, shape["x"], shape["y"])


def _columns(p):
    return jacobian(p).reshape(-1, p.x.size)  # (size of y, size of x)


EXERCISE = spec.Exercise(
    number="5.6",
    title="Forward mode for tensors of any shape",
    stars=2,
    minutes=10,
    harness=Function(
        "`forward_jacobian_any_shape`", arguments=function, forward_mode=True, vary=negated
    ),
    probes=spec.Shaped(make, sizes),
    reference=jacobian,
    mistakes=(
        spec.Mistake(
            "tangent_of_ones",
            "Every column is the sum of all columns (a tangent of ones): one pass per e_j.",
            lambda p: np.repeat(_columns(p).sum(1, keepdims=True), p.x.size, 1).reshape(
                jacobian(p).shape
            ),
            means="one forward pass with a tangent of ones where one per entry belongs",
        ),
        spec.Mistake(
            "tangent_of_ones",
            "Your result has y's shape: it is J·1, one forward pass with a tangent of ones, "
            "which gives the sum of the Jacobian's columns. The Jacobian needs one pass per "
            "entry of x, each with a one-hot tangent e_j, the columns J e_j laid out as "
            "y.shape + x.shape.",
            lambda p: jacobian(p).reshape(*jacobian(p).shape[: -p.x.ndim], -1).sum(-1),
        ),
        spec.Mistake(
            "columns_misplaced",
            "The columns were stacked on the first axis, so the reshape mixed them: stack on "
            "the last axis, then reshape.",
            lambda p: _columns(p).T.reshape(jacobian(p).shape),
            means="Jacobian columns stacked along the wrong axis before reshaping",
        ),
    ),
    describe={"value": "the Jacobian in tape.jacobian's layout, y.shape + x.shape"},
    claim="The columns J e_j, one forward pass each, laid out as y.shape + x.shape like "
    "tape.jacobian",
    tolerance=relative_to_largest(jacobian),
)
forward_jacobian_any_shape = EXERCISE.check
