"""Exercise 5.2: a Jacobian row by row, one vector-Jacobian product per row."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from .functions import dense
from .functions import function
from .functions import jacobian


def sizes(rng):
    """f(x) = tanh(A x + c), fresh: float32, then float64, m outputs from 4 to 7 (two m: a
    typed-in number of rows fails), n inputs from 2 to 6, n != m."""
    ms = rng.choice(np.arange(4, 8), size=2, replace=False)
    ns = [int(rng.choice([k for k in range(2, 7) if k != m])) for m in ms]
    return [(dtype, {"m": int(m), "n": n}) for dtype, m, n in zip(("float32", "float64"), ms, ns)]


def _rows_per_input(p):
    """The rows of a loop over the n inputs: one_hot(i, m) is all zeros for i >= m."""
    found = np.zeros((p.n, p.n))
    rows = min(p.m, p.n)
    found[:rows] = jacobian(p)[:rows]
    return found


EXERCISE = spec.Exercise(
    number="5.2",
    title="A Jacobian row by row",
    stars=2,
    minutes=10,
    harness=Function(
        "`jacobian_by_rows`",
        arguments=function,
        output_gradients=True,
        forbid=("jacobian", "finite_differences"),
        record_once="record y = f(x) once on a persistent tape, then call tape.gradient(y, x, "
        "output_gradients=tf.one_hot(i, m)) for each row i.",
        vary=negated,
    ),
    probes=spec.Shaped(lambda rng, dtype, s: dense(rng, dtype, s, (s["n"],), (s["m"],)), sizes),
    reference=jacobian,
    mistakes=(
        spec.Mistake(
            "ones_upstream",
            "Every row is the sum of all rows (dy = ones): row i needs tf.one_hot(i, m).",
            lambda p: np.tile(jacobian(p).sum(axis=0), (p.m, 1)),
            means="one vector-Jacobian product with dy of ones where one per row belongs",
        ),
        spec.Mistake(
            "returned_gradient",
            "You returned the gradient, the sum of the rows: stack one row per output.",
            lambda p: jacobian(p).sum(axis=0),
            means="a gradient where a Jacobian or Hessian belongs",
        ),
        spec.Mistake(
            "rows_per_input",
            "Your Jacobian has one row per input (x has {n} entries), but it needs one row per "
            "output (y has {m}): row i is the gradient of y[i]. Loop over range(m), with m read "
            "from y (y.shape[0]), and use tf.one_hot(i, m); x's size is the number of columns.",
            _rows_per_input,
            means="one row per input, where the Jacobian has one row per output",
        ),
    ),
    describe={"value": "the (m, n) Jacobian, row i the gradient of y[i]"},
    claim="Row i of the Jacobian is tape.gradient(y, x, output_gradients=e_i), one backward "
    "pass per output, from one recording of f",
    tolerance=relative_to_largest(jacobian),
)
jacobian_by_rows = EXERCISE.check
