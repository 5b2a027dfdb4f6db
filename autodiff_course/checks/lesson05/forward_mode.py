"""Exercise 5.6: a forward-mode Jacobian for tensors of any shape."""

import numpy as np

from ...checking import mistakes
from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from .functions import dense
from .functions import function
from .functions import jacobian


def sizes(rng):
    """y = tanh(A vec(x) + c), fresh: float64 with x (2, k) and y (m,), float32 with x (n,)
    and y (p, 2), so that y.shape + x.shape is never x.shape + y.shape, then float64 with x
    (2, 3, 2) and y (p,): an x of rank 3 (two axes of size 2 set apart)."""
    k, p, m, n = (int(v) for v in (*rng.integers(2, 4, size=2), *rng.choice([3, 5], size=2)))
    return [
        ("float64", {"x0": 2, "x1": k, "y0": m}),
        ("float32", {"x0": n, "y0": p, "y1": 2}),
        ("float64", {"x0": 2, "x1": 3, "x2": 2, "y0": p}),
    ]


def make(rng, dtype, s):
    shape = {axis: tuple(v for key, v in s.items() if key[0] == axis) for axis in "xy"}
    return dense(rng, dtype, {}, shape["x"], shape["y"])


PASSED = "x of rank 1 and 2 passed (the probes before this one)"
RANK_TWO_ONLY = (
    "your code handles vectors and matrices only, perhaps with each entry indexed by a row i "
    "and a column j. Loop over every entry of x instead, j in range(tf.size(x)), each tangent "
    "tf.reshape(tf.one_hot(j, tf.size(x), dtype=x.dtype), x.shape): that fits an x of any rank."
)
mistakes.register({"up_to_rank_two": "code that handles an x of rank 1 or 2 only"})


def _beyond_rank_two(wrong, p):
    """A raise, a tangent or a result of the wrong shape at an x of rank 3 (once those of
    rank 1 and 2 passed): code for vectors and matrices only, else None."""
    if p.x.ndim < 3 or wrong.mistake not in ("raised", "tangent_shape", "wrong_shape"):
        return None
    return wrong.explained(
        f"{PASSED.capitalize()}, but this x has rank 3: {RANK_TWO_ONLY}", "up_to_rank_two"
    )


def _columns_reordered(got, p):
    """Each column of ``got`` is a column of the Jacobian, every one used once, but not in
    its place: the tangents walked x in another order than the layout."""
    want = _columns(p)
    if got.size != want.size or p.x.size < 2:
        return None
    have = got.reshape(want.shape)
    order = [int(np.argmin(np.abs(want - have[:, [j]]).sum(axis=0))) for j in range(p.x.size)]
    if sorted(order) != list(range(p.x.size)) or order == sorted(order):
        return None
    if not np.allclose(have, want[:, order], rtol=1e-5, atol=1e-6 * np.abs(want).max()):
        return None
    j = next(j for j, k in enumerate(order) if j != k)
    where = lambda k: tuple(int(i) for i in np.unravel_index(k, p.x.shape))  # noqa: E731
    return {"source": where(order[j]), "placed": where(j)}


def _columns(p):
    return jacobian(p).reshape(-1, p.x.size)  # (size of y, size of x)


EXERCISE = spec.Exercise(
    number="5.6",
    title="Forward mode for tensors of any shape",
    stars=2,
    minutes=10,
    harness=Function(
        "`forward_jacobian_any_shape`",
        arguments=function,
        forward_mode=True,
        vary=negated,
        raised=_beyond_rank_two,
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
        spec.Pattern(
            "columns_misplaced",
            "Your Jacobian has the right columns J e_j, but at other entries of x than their "
            "tangents': e.g. the column of the tangent at x's entry {source} sits at entry "
            "{placed}. Walk x's entries in the order you lay the columns out (row-major, as "
            "tf.reshape and np.unravel_index by default: no order='F', no transpose).",
            _columns_reordered,
        ),
        spec.Pattern(  # judged only once x of rank 1 and 2 passed: the probes come in order
            "up_to_rank_two",
            f"Your Jacobian is wrong for this x of rank 3, though {PASSED}: {RANK_TWO_ONLY}",
            lambda got, p: {} if p.x.ndim >= 3 else None,
        ),
    ),
    describe={"value": "the Jacobian in tape.jacobian's layout, y.shape + x.shape"},
    claim="The columns J e_j, one forward pass each, laid out as y.shape + x.shape like "
    "tape.jacobian",
    tolerance=relative_to_largest(jacobian),
)
forward_jacobian_any_shape = EXERCISE.check
