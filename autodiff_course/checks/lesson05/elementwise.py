"""Exercise 5.1: the Jacobian of the element-wise swish, y = x * sigmoid(x)."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from ...checking.probes import signed
from ...log1pexp import reference_sigmoid as sigmoid


def sizes(rng):
    """float64 (an estimate shows there), then float32: lengths 3 to 7, x holding 0, -1.2785
    (near the derivative's zero), from length 4 on a large x (800 in float64, 100 in float32,
    where e^x overflows) and fresh values of both signs from 0.2 to 7."""
    n = rng.choice(np.arange(3, 8), size=2, replace=False)
    return [("float64", {"n": int(n[0])}), ("float32", {"n": int(n[1])})]


def make(rng, dtype, s):
    fixed = [0.0, -1.2785, 800.0 if dtype == "float64" else 100.0][: s["n"] - 1]
    x = rng.permutation(np.concatenate([fixed, signed(rng, s["n"] - len(fixed), 0.2, 7.0)]))
    return spec.Probe(dtype, spec.as_dtype(x, dtype), label=f"a {dtype} x of shape {x.shape}")


def _diagonal(values):
    return lambda p: np.diag(values(p.x, sigmoid(p.x)))


def _off_diagonal(got, p):
    """The first entry off the diagonal that is not 0, as hint fields."""
    if got.ndim != 2 or got.shape[0] != got.shape[1]:
        return None
    off = np.abs(got) * (1 - np.eye(len(got))) > 1e-6 * np.abs(_jacobian(p)).max()
    i, j = np.argwhere(off)[0] if off.any() else (None, None)
    return None if i is None else {"i": i, "j": j, "value": f"{got[i, j]:.6g}"}


_jacobian = _diagonal(lambda x, s: s + x * s * (1.0 - s))
EXERCISE = spec.Exercise(
    number="5.1",
    title="The Jacobian of an element-wise function",
    stars=1,
    minutes=5,
    harness=Function("`swish_jacobian`", forbid=("finite_differences",), vary=negated),
    probes=spec.Shaped(make, sizes),
    reference=_jacobian,
    mistakes=(
        spec.Mistake(
            "missed_product_rule",
            "diag(sigmoid(x)) treats the factor x as a constant: add x sigmoid'(x).",
            _diagonal(lambda x, s: s),
            means="one factor of a product treated as a constant",
        ),
        spec.Mistake(
            "half_product_rule",
            "You returned diag(x sigmoid'(x)) only: the product rule adds sigmoid(x) itself.",
            _diagonal(lambda x, s: x * s * (1.0 - s)),
            means="one term of the product rule only",
        ),
        spec.Mistake(
            "half_product_rule",
            "diag(sigmoid'(x)) differentiates the sigmoid alone: x * sigmoid(x) is a product.",
            _diagonal(lambda x, s: s * (1.0 - s)),
        ),
        spec.Mistake(
            "product_rule_sign",
            "The product rule's two terms are subtracted: it is sigmoid(x) PLUS x sigmoid'(x).",
            _diagonal(lambda x, s: s - x * s * (1.0 - s)),
            means="the product rule's two terms subtracted instead of added",
        ),
        spec.Mistake(
            "product_rule_lost_x",
            "Your diagonal is sigmoid(x) + sigmoid'(x): the second term of the product rule "
            "lost its factor x. (x sigmoid(x))' = sigmoid(x) + x sigmoid'(x).",
            _diagonal(lambda x, s: s + s * (1.0 - s)),
            means="the product rule's second term without its factor x",
        ),
        spec.Mistake(
            "sigmoid_squared",
            "Your diagonal is sigmoid(x) + x sigmoid(x)**2: sigmoid's slope is sigmoid(x) "
            "(1 - sigmoid(x)), best written sigmoid(x) * sigmoid(-x), not a square.",
            _diagonal(lambda x, s: s + x * s * s),
            means="a square of a sigmoid where sigmoid(x) * sigmoid(-x) belongs",
        ),
        spec.Mistake(
            "sigmoid_slope_one_factor",
            "Your diagonal is sigmoid(x) + x sigmoid(-x): sigmoid's slope has two factors, "
            "sigmoid(x) * sigmoid(-x), and the factor sigmoid(x) is missing. The diagonal is "
            "sigmoid(x) + x sigmoid(x) sigmoid(-x).",
            _diagonal(lambda x, s: s + x * (1.0 - s)),
            means="sigmoid's slope written as one of its two factors, sigmoid(x) or sigmoid(-x)",
        ),
        spec.Mistake(
            "sigmoid_slope_one_factor",
            "Your diagonal is sigmoid(x) + x sigmoid(x): sigmoid's slope has two factors, "
            "sigmoid(x) * sigmoid(-x), and the factor sigmoid(-x) is missing. The diagonal is "
            "sigmoid(x) + x sigmoid(x) sigmoid(-x).",
            _diagonal(lambda x, s: s + x * s),
        ),
        spec.Mistake(
            "value_not_derivative",
            "You put the values x * sigmoid(x) on the diagonal, not their derivatives.",
            _diagonal(lambda x, s: x * s),
        ),
        spec.Mistake(
            "off_diagonal_nonzero",
            "Every row holds all the derivatives, but y_i depends on x_i alone: zero off the "
            "diagonal.",
            lambda p: np.tile(np.diag(_jacobian(p)), (p.x.size, 1)),
            means="nonzero entries off the diagonal, where the Jacobian is zero",
        ),
        spec.Pattern(
            "off_diagonal_nonzero",
            "Your Jacobian is {value} at index [{i}, {j}], off the diagonal: y_i depends on x_i "
            "alone, so every dy_i/dx_j with i != j is 0 (a derivative broadcast into a full "
            "matrix fills them). Put the derivatives on the diagonal only (tf.linalg.diag), or "
            "take tape.jacobian of y = x * sigmoid(x) itself.",
            _off_diagonal,
        ),
    ),
    describe={"value": "diag(sigmoid(x) + x sigmoid(x) (1 - sigmoid(x))), (n, n)"},
    claim="The Jacobian of x * sigmoid(x) is diagonal, since y_i depends on x_i only",
    tolerance=relative_to_largest(_jacobian),
)
swish_jacobian = EXERCISE.check
