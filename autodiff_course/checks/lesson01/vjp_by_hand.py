"""Exercise 1.5: a vector-Jacobian product dy^T J for y = log(1 + e^(W x)), by hand."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.judging import Tolerance
from ...checking.judging import matches
from ...checking.patterns import stray
from ...checking.probes import signed
from ...checking.probes import tensor
from ...checking.probes import upstream
from ...log1pexp import reference_sigmoid as sig
from ...log1pexp import reference_softplus


def draw(rng) -> list:
    """A square W first (a missing transpose or a step out of order keeps its shape), a tall,
    a wide, one output, one input; W, x and dy of both signs, W x in both sigmoid tails."""
    probes = []
    for m, n, d in [(3, 3, "64"), (3, 2, "32"), (2, 4, "64"), (1, 3, "32"), (3, 1, "64")]:
        W, x, dy = signed(rng, (m, n), 0.2, 1.5, 2), signed(rng, n, 0.2, 2.0, 2), upstream(rng, m)
        W, x, dy = (spec.as_dtype(v, f"float{d}") for v in (W, x, dy))
        label, data = f"a float{d} W of shape ({m}, {n})", {"W": W, "batch": m}
        probes.append(spec.Probe(f"float{d}", x, dy, data, label, np.empty(0)))
    return probes


def vjp(p, local=sig, at=None):
    """W^T (dy * local(z)) with z = W x (or ``at``)."""
    return p.W.T @ (p.upstream * local(p.W @ p.x if at is None else at))


def square(values):
    return lambda p: values(p) if p.W.shape[0] == p.W.shape[1] else None


def one_number_back(got, p):
    """``got`` is one number c (not 0 or 1) times W^T 1 (W's column sums) or W^T sigmoid(W x),
    for m, n >= 2: dy * sigmoid(W x), or dy alone, reduced to one number."""
    tried = (("W's column sums", "dy * sigmoid(W x)", np.ones_like(p.upstream)),)
    for which, what, v in (*tried, ("W^T sigmoid(W x)", "dy", sig(p.W @ p.x))):
        back = p.W.T @ v
        c = got @ back / (back @ back) if got.shape == back.shape else 0.0
        some = min(p.W.shape) > 1 and c and not np.isclose(c, 1.0)
        if some and matches(got, c * back, 1e-4, 1e-9 * abs(c)):
            return {"c": f"{c:.4g}", "which": which, "what": what}
    return None


def tolerance(p, part) -> Tolerance:
    scale = float(np.abs(p.W).T @ np.abs(p.upstream) @ np.ones(p.W.shape[1])) or 1.0
    return Tolerance(*((1e-11, 1e-13 * scale) if p.dtype == "float64" else (2e-5, 1e-6 * scale)))


LOCAL = "the local derivative of log(1 + e^z) is sigmoid(z), at z = W x."
NO_LOCAL = "You passed dy straight back through W: " + LOCAL
VALUE = "You multiplied dy by log(1 + e^z), the function itself: " + LOCAL
TWICE = "You multiplied dy by sigmoid(z)(1 - sigmoid(z)), a second derivative: " + LOCAL
LOG_U = "You multiplied dy by 1/(1 + e^z) = sigmoid(-z): either the derivative of log(u) alone "
LOG_U += "(its factor e^z left out) or sigmoid with the sign of z flipped: " + LOCAL
AT_X = "You multiplied by sigmoid(x) after going back through W: " + LOCAL
AT_X_FIRST = "You evaluated the sigmoid at x: " + LOCAL
AT_Y = "You evaluated the sigmoid at the output y = log(1 + e^z): " + LOCAL
X_FOR_W = "Your product is sum(dy * sigmoid(W x)) times x: x is the Jacobian of W x with "
X_FOR_W += "respect to W. With respect to x it is W: return W^T (dy * sigmoid(W x))."
J_DY = "You computed J dy, the Jacobian times dy (sigmoid(W x) * (W dy)): the vector-Jacobian "
J_DY += "product multiplies from the left, dy^T J = J^T dy = W^T (dy * sigmoid(W x))."
DY_AFTER = "You multiplied by dy after going back through W: dy is the upstream at y, so it "
DY_AFTER += "meets sigmoid(W x) first, at the output, and W^T comes last: W^T (dy * sigmoid(W x))."
ADDED = "You added two products with W^T; the chain rule multiplies: W^T (dy * sigmoid(W x))."
NO_W = "You stopped at u = dy * sigmoid(W x), the upstream at z = W x: go back through W too."
NO_T = "You went back through W, not W transposed: tf.linalg.matvec(W, u, transpose_a=True)."
AXIS = "You summed the rows of W weighted by dy * sigmoid(W x) over the wrong axis."
ONE = "Your product is one number ({c}) times {which}: {what} was reduced to one number (a sum "
ONE += "or a mean) before going back through W. Keep u = dy * sigmoid(W x) a vector, one entry "
ONE += "per output, and return W^T u."
ORDER = "You went back through W before multiplying by sigmoid(W x): dy meets log(1 + e^z) first."
EXERCISE = spec.Exercise(
    number="1.5",
    title="A vector-Jacobian product by hand",
    stars=3,
    minutes=15,
    harness=Function(
        "`vector_jacobian_product`",
        arguments=lambda p: tuple(tensor(v, p.dtype) for v in (p.W, p.x, p.upstream)),
        by_hand=True,
        upstream=2,
        nouns={"value": "your product"},
    ),
    probes=draw,
    reference=vjp,
    tolerance=tolerance,
    mistakes=(
        spec.Mistake("forgot_local_derivative", NO_LOCAL, lambda p: vjp(p, np.ones_like)),
        spec.Mistake("value_not_derivative", VALUE, lambda p: vjp(p, reference_softplus)),
        spec.Mistake("differentiated_twice", TWICE, lambda p: vjp(p, lambda z: sig(z) * sig(-z))),
        spec.Mistake("inverted_fraction", LOG_U, lambda p: vjp(p, lambda z: sig(-z))),
        spec.Mistake("local_at_input", AT_X, lambda p: vjp(p, np.ones_like) * sig(p.x)),
        spec.Mistake(
            "local_at_input", AT_Y, lambda p: vjp(p, lambda z: sig(reference_softplus(z)))
        ),
        spec.Mistake("wrong_jacobian", X_FOR_W, lambda p: (p.upstream @ sig(p.W @ p.x)) * p.x),
        spec.Mistake(
            "added_not_multiplied", ADDED, lambda p: p.W.T @ (p.upstream + sig(p.W @ p.x))
        ),
        spec.Mistake("forgot_matrix", NO_W, square(lambda p: p.upstream * sig(p.W @ p.x))),
        spec.Mistake("no_transpose", NO_T, square(lambda p: p.W @ (p.upstream * sig(p.W @ p.x)))),
        spec.Mistake(
            "wrong_order", DY_AFTER, square(lambda p: (p.W.T @ sig(p.W @ p.x)) * p.upstream)
        ),
        spec.Mistake("no_transpose", J_DY, square(lambda p: sig(p.W @ p.x) * (p.W @ p.upstream))),
        spec.Mistake(
            "wrong_axis", AXIS, square(lambda p: p.upstream * sig(p.W @ p.x) * p.W.sum(1))
        ),
        spec.Mistake("wrong_order", ORDER, square(lambda p: vjp(p, np.ones_like) * sig(p.W @ p.x))),
        spec.Mistake("local_at_input", AT_X_FIRST, square(lambda p: vjp(p, at=p.x))),
        *stray(vjp, x=lambda p: p.x),
        spec.Pattern("reduced_dy", ONE, one_number_back),
    ),
    describe={"value": "dy^T J = W^T (dy * sigmoid(W x))"},
    claim="By hand, dy^T J = W^T (dy * sigmoid(W x)), for square, tall and wide W, one "
    "output and one input",
)
vector_jacobian_product = EXERCISE.check
