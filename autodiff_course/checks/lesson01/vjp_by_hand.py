"""Exercise 1.5: a vector-Jacobian product dy^T J, worked out by hand."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import floor_of
from ...checking import fresh_rng
from ...checking import matches
from ...checking import observed_call
from ...checking import observed_call_keeping_errors
from ...checking import require_by_hand
from ...checking import signed
from ...checking import tensor
from ...checking import upstream
from ...checking.legacy_judge import judge
from ...log1pexp import reference_sigmoid as _sigmoid
from ...log1pexp import reference_softplus as _softplus
from .shared import _shape_of


@exercise("1.5", "a vector-Jacobian product by hand")
def vector_jacobian_product(answer):
    """dy^T J for y = log(1 + e^(W x)), i.e. W^T (dy * sigmoid(W x)), by hand.

    Method: no tape (so no tape.jacobian either), no forward mode (observed).
    Probes, fresh on every call: a square W (3, 3) in float64 first (where a
    missing transpose or a step in the wrong order keeps the shape, so the values
    name the mistake), then a tall W (3, 2) in float32 and a wide W (2, 4) in
    float64, W in [-1.5, 1.5] and x in [-2, 2] of both signs, so W x reaches
    both tails of the sigmoid; dy always of both signs, so never all ones. dtype in
    = dtype out.
    """
    rng = fresh_rng("1.5")
    shapes = [((3, 3), "float64"), ((3, 2), "float32"), ((2, 4), "float64")]
    for (m, n), dtype in shapes:
        W_values = signed(rng, (m, n), 0.2, 1.5, decimals=2)
        x_values = signed(rng, n, 0.2, 2.0, decimals=2)
        dy_values = upstream(rng, m)
        dy_values[:2] = np.abs(dy_values[:2]) * [1.0, -1.0]  # both signs, always
        if dtype == "float32":
            W_values, x_values, dy_values = (
                v.astype(np.float32).astype(np.float64) for v in (W_values, x_values, dy_values)
            )
        W, x, dy = (tensor(v, dtype) for v in (W_values, x_values, dy_values))
        value, log, wrong = observed_call_keeping_errors(answer, W, x, dy)
        require_by_hand(log, "exercise 1.5")
        if wrong is not None:
            if "size-incompatible" in wrong.hint:
                raise Wrong(
                    wrong.hint + f". To go back from y (shape ({m},)) to x "
                    f"(shape ({n},)), multiply by W transposed: "
                    f"tf.linalg.matvec(W, u, transpose_a=True).",
                    "no_transpose",
                )
            raise Wrong(
                wrong.hint + f". Shapes here: W is ({m}, {n}), x ({n},), dy and "
                f"W x ({m},); the result has x's shape.",
                "raised",
            )
        z = W_values @ x_values
        s = _sigmoid(z)
        expected = W_values.T @ (dy_values * s)
        shape = _shape_of(value)
        if shape in ((m, n), (n, m)) and m != 1 and n != 1:
            raise Wrong(
                f"You returned a {shape[0]}x{shape[1]} matrix: a Jacobian (or "
                f"W scaled row by row). The vector-Jacobian product contracts "
                f"it with dy: dy^T J has one number per input, shape ({n},).",
                "returned_jacobian",
            )
        if shape == (m,) and m != n:
            raise Wrong(
                f"Your result has shape ({m},), the shape of y. A "
                f"vector-Jacobian product has the shape of x, ({n},): the "
                f"upstream goes back through W transposed, "
                f"tf.linalg.matvec(W, u, transpose_a=True).",
                "no_transpose",
            )
        got = as_values(value, shape=(n,), dtype=x.dtype)
        scale = float(np.abs(W_values).T @ np.abs(dy_values) @ np.ones(n)) or 1.0
        tol = (
            Tolerance(FLOAT64.rtol, 1e-13 * scale)
            if dtype == "float64"
            else Tolerance(FLOAT32.rtol, 1e-6 * scale)
        )
        known = [
            (
                "forgot_upstream",
                "You left out dy: W^T sigmoid(W x) is the product "
                "with dy = ones. Multiply sigmoid(W x) by dy before going back through W.",
                W_values.T @ s,
            ),
            (
                "forgot_local_derivative",
                "You passed dy straight back through W: the "
                "local derivative of log(1 + e^z), sigmoid(z) at z = W x, is missing.",
                W_values.T @ dy_values,
            ),
            (
                "value_not_derivative",
                "You multiplied dy by log(1 + e^z), the "
                "function's value; its local derivative is sigmoid(z).",
                W_values.T @ (dy_values * _softplus(z)),
            ),
            (
                "differentiated_twice",
                "You multiplied dy by sigmoid(z)(1 - sigmoid(z)), "
                "a second derivative; the local derivative of log(1 + e^z) is sigmoid(z).",
                W_values.T @ (dy_values * s * _sigmoid(-z)),
            ),
            (
                "mean_not_sum",
                f"Your product is 1/{m} of the answer, and {m} is the "
                f"number of outputs: a vector-Jacobian product sums the rows of J "
                f"weighted by u = dy * sigmoid(W x); it does not average them.",
                expected / m,
            ),
            (
                "added_not_multiplied",
                "You added two products with W^T. The chain rule "
                "multiplies: first u = dy * sigmoid(W x), element by element, then W^T u.",
                W_values.T @ dy_values + W_values.T @ s,
            ),
            (
                "inverted_fraction",
                "You multiplied dy by 1 - sigmoid(z) = 1/(1 + e^z): "
                "that is the derivative of log(u) alone, 1/u. The local derivative of "
                "log(1 + e^z) is e^z/(1 + e^z) = sigmoid(z).",
                W_values.T @ (dy_values * _sigmoid(-z)),
            ),
            (
                "local_at_input",
                "You multiplied by sigmoid(x) after going back through "
                "W. The sigmoid belongs to the outer op, log(1 + e^z): multiply dy by "
                "sigmoid(W x) first, then go back through W.",
                (W_values.T @ dy_values) * _sigmoid(x_values),
            ),
        ]
        if m == n:
            known += [
                (
                    "no_transpose",
                    "You went back through W, not W transposed: "
                    "dy^T J = W^T u with u = dy * sigmoid(W x), "
                    "tf.linalg.matvec(W, u, transpose_a=True).",
                    W_values @ (dy_values * s),
                ),
                (
                    "wrong_axis",
                    "You weighted the rows of W by u = dy * sigmoid(W x) "
                    "and then summed over the wrong axis, which gives u times the row sums "
                    "of W. dy^T J sums over the outputs (the rows of W): one number per "
                    "column, i.e. per input.",
                    (dy_values * s) * W_values.sum(axis=1),
                ),
                (
                    "wrong_order",
                    "You went back through W first and multiplied by "
                    "sigmoid(W x) afterwards. Walk backwards in order: y = log1pexp(z) is "
                    "the last operation, so dy meets its local derivative first, "
                    "u = dy * sigmoid(z), and only then goes back through z = W x.",
                    (W_values.T @ dy_values) * s,
                ),
                (
                    "local_at_input",
                    "You evaluated the sigmoid at x. The local "
                    "derivative belongs to log(1 + e^z), so it is sigmoid(z) at z = W x.",
                    W_values.T @ (dy_values * _sigmoid(x_values)),
                ),
            ]

        def implied_jacobian(
            got,
            W_values=W_values,
            dy_values=dy_values,
            s=s,
            z=z,
            m=m,
            n=n,
            W=W,
            x=x,
            dtype=dtype,
            tol=tol,
        ):
            """Read off the Jacobian the answer uses by calling it with unit dy vectors.

            A vector-Jacobian product is linear in dy, so answer(W, x, e_i) is row i
            of the Jacobian the answer believes in; comparing it with
            sigmoid(z_i) * W[i] says which factor is wrong.
            """
            rows = []
            for i in range(m):
                unit = np.zeros(m)
                unit[i] = 1.0
                row, _ = observed_call(answer, W, x, tensor(unit, dtype))
                rows.append(as_values(row, shape=(n,), dtype=x.dtype))
            used = np.stack(rows)
            scale = max(floor_of(got), floor_of(W_values.T @ dy_values))
            if not matches(got, used.T @ dy_values, 1e-4, scale):
                return Wrong(
                    "Your result is not linear in dy: with dy = e_i (a 1 at i, "
                    "0 elsewhere) and adding up, your function gives another "
                    "result than with dy itself. dy^T J is linear in dy: dy "
                    "should enter once, as a factor, with no square, constant "
                    "or reduction of its own.",
                    "not_linear_in_dy",
                )
            norms = (W_values * W_values).sum(axis=1)
            factor = (used * W_values).sum(axis=1) / np.where(norms == 0.0, 1.0, norms)
            if matches(used, factor[:, None] * W_values, 1e-4, floor_of(used)):
                i = int(np.argmax(np.abs(factor - s) / s))
                return Wrong(
                    f"Your function goes back through W correctly, but the "
                    f"factor multiplying dy is wrong: at output {i} it is "
                    f"{factor[i]:.6g}, where the local derivative of "
                    f"log(1 + e^z) is sigmoid(z) = {s[i]:.6g}, with z = W x "
                    f"= {z[i]:.6g}.",
                    "wrong_local_derivative",
                )
            right = s[:, None] * W_values
            i, j = np.unravel_index(int(np.argmax(np.abs(used - right))), used.shape)
            return Wrong(
                f"Calling your function with dy = e_{i} (a 1 at output {i}) "
                f"gives the Jacobian row it uses: entry {j} is {used[i, j]:.6g}, "
                f"but J[{i}, {j}] = sigmoid(z_{i}) * W[{i}, {j}] = "
                f"{right[i, j]:.6g}. Check the matrix you go back through: W "
                f"itself, transposed, each row weighted by sigmoid(z).",
                "wrong_jacobian",
            )

        judge(
            got,
            expected,
            tol,
            dtype=dtype,
            what="your product",
            known=known,
            fallback=implied_jacobian,
            terms=[("x", x_values)],
            summary="dy^T J = W^T (dy * sigmoid(W x)): dy times the local "
            "derivative of log(1 + e^z), then back through W.",
        )
    return (
        "By hand, without a tape: dy^T J = W^T (dy * sigmoid(W x)), right for a "
        "tall, a wide and a square W in float32 and float64."
    )
