"""Exercise 5.1: the Jacobian of an element-wise function."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import signed
from ...checking import sizes as draw_sizes
from ...log1pexp import reference_sigmoid as _sigmoid
from .judging import _judge
from .shared import _answer
from .shared import _close
from .shared import _dtypes
from .shared import _require_shape
from .shared import _tensor
from .shared import _tolerance


def _product_rule_mistakes(xs, s, derivative):
    """The catalogue of 5.1: the product rule's slips, and derivatives off the diagonal."""
    n = len(xs)
    return [
        (
            "missed_product_rule",
            "You returned diag(sigmoid(x)): the factor x in x * sigmoid(x) was "
            "treated as a constant. The product rule gives sigmoid(x) + x * "
            "sigmoid(x) * (1 - sigmoid(x)).",
            np.diag(s),
        ),
        (
            "half_product_rule",
            "You returned diag(x * sigmoid'(x)) only: the product rule adds a "
            "second term, sigmoid(x) itself.",
            np.diag(xs * s * (1.0 - s)),
        ),
        (
            "half_product_rule",
            "You returned diag(sigmoid(x) * (1 - sigmoid(x))), the derivative of "
            "the sigmoid alone. y = x * sigmoid(x) is a product: its derivative is "
            "sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x)).",
            np.diag(s * (1.0 - s)),
        ),
        (
            "product_rule_sign",
            "The two terms of the product rule are subtracted: the derivative of "
            "x * sigmoid(x) is sigmoid(x) PLUS x * sigmoid(x) * (1 - sigmoid(x)).",
            np.diag(s - xs * s * (1.0 - s)),
        ),
        (
            "value_not_derivative",
            "You put the function's values x * sigmoid(x) on the diagonal, not its derivatives.",
            np.diag(xs * s),
        ),
        (
            "off_diagonal_nonzero",
            "Every row holds all the derivatives. But y_i depends on x_i alone, so "
            "dy_i/dx_j = 0 for i != j: only the diagonal is non-zero.",
            np.tile(derivative, (n, 1)),
        ),
        (
            "off_diagonal_nonzero",
            "Every column holds all the derivatives. But y_i depends on x_i alone, "
            "so dy_i/dx_j = 0 for i != j: only the diagonal is non-zero.",
            np.tile(derivative[:, None], (1, n)),
        ),
    ]


@exercise("5.1", "the Jacobian of an element-wise function")
def swish_jacobian(answer):
    """The Jacobian of y = x * sigmoid(x), element-wise.

    Probes (fresh each call): a float64 x, then a float32 x, of two different
    lengths between 3 and 7, each holding 0, the point -1.2785 near which the
    derivative crosses zero, and values of both signs between 0.2 and 7 (both
    tails of the sigmoid). Float64 is judged to 1e-12, so the result must keep the
    input's dtype and be exact (the tape, or the formula). Either method is
    allowed, as the exercise says.
    """
    rng = fresh_rng("5.1")
    sizes = draw_sizes(rng, 2, 3, 7)
    # float64 first: there a finite-difference estimate is recognised whatever its step.
    for dtype, n in zip(reversed(_dtypes()), sizes):
        xs = np.concatenate([[0.0, -1.2785], signed(rng, n - 2, 0.2, 7.0)])
        rng.shuffle(xs)
        numbers, log = _answer(answer, dtype, _tensor(xs, dtype))
        s = _sigmoid(xs)
        derivative = s + xs * s * (1.0 - s)
        expected = np.diag(derivative)
        if numbers.shape == (n,):
            if _close(numbers, derivative, dtype):
                raise Wrong(
                    f"You returned the {n} derivatives dy_i/dx_i as a vector of shape "
                    f"({n},): that is what tape.gradient gives for an element-wise "
                    f"function. The Jacobian is the ({n}, {n}) matrix with these numbers "
                    f"on its diagonal (target shape + source shape): use tape.jacobian, "
                    f"or tf.linalg.diag.",
                    "returned_diagonal",
                )
            raise Wrong(
                f"Your function returned shape ({n},), the shape of x. A Jacobian "
                f"of y ({n},) with respect to x ({n},) has shape ({n}, {n}).",
                "wrong_shape",
            )
        _require_shape(numbers, (n, n))
        diagonal = np.diag(numbers)
        if (
            np.all(numbers == np.diag(diagonal))
            and np.ptp(diagonal) == 0.0
            and not matches(numbers, expected, **_tolerance(dtype, expected))
        ):
            raise Wrong(
                f"Every diagonal entry is {diagonal[0]:.6g}, whatever x is: the "
                f"derivative changes from point to point. Compute it from x "
                f"instead of typing numbers in.",
                "hard_coded",
            )
        _judge(
            numbers,
            expected,
            dtype,
            log=log,
            summary="Not the Jacobian of x * sigmoid(x).",
            known=_product_rule_mistakes(xs, s, derivative),
        )
    return (
        f"Checked in float32 and float64 at fresh points of both signs (lengths "
        f"{sizes[0]} and {sizes[1]}): the Jacobian of an element-wise function is "
        f"diagonal, since y_i depends on x_i only."
    )
