"""Exercise 4.4: a Hessian-vector product, reverse over reverse."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import of_terms
from ...checking.probes import signed


def _rosenbrock(x):
    a, b = x[:-1], x[1:]
    gradient = np.append(-400.0 * a * (b - a**2) - 2.0 * (1.0 - a), 0.0)
    gradient[1:] += 200.0 * (b - a**2)
    diagonal = np.append(1200.0 * a**2 - 400.0 * b + 2.0, 0.0) + np.append(0.0, 200.0 + 0 * a)
    return gradient, np.diag(diagonal) + np.diag(-400.0 * a, 1) + np.diag(-400.0 * a, -1)


def _logsumexp(x):
    p = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    return p, np.diag(p) - np.outer(p, p)


# fmt: off
# The float64 gradient and Hessian, and the range of |x|, by the function's name.
FUNCTIONS = {
    "the Rosenbrock function": (_rosenbrock, (0.4, 1.2)),
    "logsumexp": (_logsumexp, (0.3, 2.0)),
    "(x.x)**2 / 4": (lambda x: ((x @ x) * x, (x @ x) * np.eye(x.size) + 2 * np.outer(x, x)),
                     (0.3, 1.5)),
}
# fmt: on


def draw(rng) -> list:
    """The Rosenbrock function (float32), logsumexp and (x.x)**2 / 4 (float64), with 3 to 6
    inputs, then (x.x)**2 / 4 with one float32 input: x and v afresh, of both signs."""
    import tensorflow as tf

    functions = dict(zip(FUNCTIONS, (
        lambda x: tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2),
        tf.reduce_logsumexp, lambda x: 0.25 * tf.reduce_sum(x**2) ** 2)))  # fmt: skip
    (rosenbrock, logsumexp, quartic), (n1, n2, n3) = FUNCTIONS, rng.integers(3, 7, 3)
    found = []
    for f, d, n in [(rosenbrock, "float32", n1), (logsumexp, "float64", n2),
                    (quartic, "float64", n3), (quartic, "float32", 1)]:  # fmt: skip
        x, v = signed(rng, (n,), *FUNCTIONS[f][1]), signed(rng, (n,), 0.5, 2.0)
        found.append(spec.Probe(d, spec.as_dtype(x, d), label=f"{f}, {n} {d}s", data={
            "name": f, "f": functions[f], "v": spec.as_dtype(v, d)}))  # fmt: skip
    return found


def parts(p):
    return FUNCTIONS[p.name][0](p.x)


def _mistake(code, hint, gives, means=""):
    return spec.Mistake(code, hint, lambda p: gives(*parts(p), p.v), means=means)


# fmt: off
SUMS = " Multiply g by v in the outer block and differentiate the sum (or output_gradients=v)."
MISTAKES = (
    spec.Shape("directional_derivative", "You returned one number, probably v . grad f or v . H v: "
               "H @ v is a vector shaped like x.", lambda p: () if p.x.size > 1 else None,
               "the number v . grad f where the vector H @ v belongs"),
    spec.Shape("returned_hessian", "You returned a {n}x{n} matrix: the Hessian itself, or H * v "
               "broadcast. H @ v is shaped like x.", lambda p: (p.x.size,) * 2 if p.x.size > 1
               else None, "the Hessian matrix where the Hessian-vector product belongs"),
    _mistake("first_not_second", "You returned grad f, a first derivative: an outer tape must "
             "differentiate v . grad f once more.", lambda g, h, v: g),
    _mistake("hessian_row_sums", "You multiplied by v after the outer gradient: outer.gradient(g, "
             "x) is H @ ones, the row sums of H." + SUMS, lambda g, h, v: h.sum(1) * v,
             "H @ ones (times v) where H @ v belongs"),
    _mistake("wrong_target", "Your product is (v . grad f) times H @ v: your outer tape "
             "differentiated the square of v . grad f (halved), whose gradient carries that "
             "factor. Differentiate v . grad f itself, tf.reduce_sum(g * v).",
             lambda g, h, v: (g @ v) * (h @ v)),
    _mistake("scale_factor", "You normalised v: the exercise asks for H @ v for the v it passes.",
             lambda g, h, v: h @ v / np.linalg.norm(v)),
    _mistake("hessian_row_sums", "Your result does not depend on v: it is H @ ones, the outer "
             "gradient of g itself." + SUMS, lambda g, h, v: h.sum(1)),
    _mistake("hessian_row_sums", "Your product is sum(v) times H @ ones (the row sums of H): "
             "your outer tape differentiated sum(v) * sum(g), either because you multiplied v "
             "by tf.reduce_sum(g) (the sum taken before the product) or because v went into the "
             "inner target, f(x) * sum(v), where it only scales g. Multiply g by v element by "
             "element in the outer block, then sum: tf.reduce_sum(g * v).",
             lambda g, h, v: h.sum(1) * v.sum()),
    spec.Mistake("swapped_point_direction", "Your product is the Hessian at v times x: the "
                 "point and the direction are swapped. hvp(f, x, v) is the Hessian at x times "
                 "v.", lambda p: FUNCTIONS[p.name][0](p.v)[1] @ p.x,
                 means="the Hessian at v times x: the point and the direction swapped"),
)
# fmt: on

EXERCISE = spec.Exercise(
    number="4.4",
    title="A Hessian-vector product, reverse over reverse",
    stars=2,
    minutes=10,
    harness=Function(
        "`hvp`",
        vary=negated,
        arguments=("f", "x", "v"),
        nested=True,
        forbid={"jacobian": "H @ v is the gradient of sum(g * v), not H.", "accumulator": ""},
        steps=lambda p: {"H @ v": parts(p)[1] @ p.v},
        nouns={"value": "your product"},
    ),
    probes=draw,
    reference=lambda p: parts(p)[1] @ p.v,
    tolerance=of_terms(lambda p: np.max(np.abs(parts(p)[1]) @ np.abs(p.v))),  # it can cancel
    mistakes=MISTAKES,
    describe={"value": "H @ v"},
    claim="H @ v for three functions you had not seen, without forming H",
)
hvp = EXERCISE.check
