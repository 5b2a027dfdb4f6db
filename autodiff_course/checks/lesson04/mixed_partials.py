"""Exercise 4.2: a mixed partial derivative, zeros where it is structurally zero."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import of_terms
from ...checking.probes import signed

# fmt: off
# z, dz/dx, dz/dy, d2z/dx2, d2z/dy2, d2z/(dx dy) in float64 (c, s, e: cos, sin, exp of xy)
PARTIALS = {
    "x**2 * y**3 + sin(x*y)": lambda x, y, c, s, e: (
        x**2 * y**3 + s, 2 * x * y**3 + y * c, 3 * x**2 * y**2 + x * c,
        2 * y**3 - y**2 * s, 6 * x**2 * y - x**2 * s, 6 * x * y**2 + c - x * y * s),
    "x * exp(x*y)": lambda x, y, c, s, e: (
        x * e, (1 + x * y) * e, x**2 * e, y * e * (2 + x * y), x**3 * e, x * e * (2 + x * y)),
    "x**2 + cos(y)": lambda x, y, c, s, e: (
        x**2 + np.cos(y), 2 * x, -np.sin(y), 2 + 0 * x, -np.cos(y), 0 * x),
}
# fmt: on


def draw(rng) -> list:
    """x**2 y**3 + sin(xy) on a float32 vector and a float64 (2, m) matrix, x e^(xy) the
    other way round, x**2 + cos(y) (mixed partial zero everywhere: zeros of the input's
    dtype, not None) like the first, then x**2 y**3 + sin(xy) on shapes (1,) and (1, 3);
    |x| and |y| from 0.3 to 1.5, both signs."""
    import tensorflow as tf

    functions = dict(zip(PARTIALS, (
        lambda x, y: x**2 * y**3 + tf.sin(x * y), lambda x, y: x * tf.exp(x * y),
        lambda x, y: x**2 + tf.cos(y))))  # fmt: skip
    n, m = (int(k) for k in rng.integers((3, 2), (7, 5)))
    surface, growth, separable = PARTIALS
    plan = [(surface, "float32", (n,)), (surface, "float64", (2, m)), (growth, "float32", (2, m)),
            (growth, "float64", (n,)), (separable, "float32", (n,)), (separable, "float64", (2, m)),
            (surface, "float32", (1,)), (surface, "float32", (1, 3))]  # fmt: skip
    found = []
    for f, d, shape in plan:
        x, y = (spec.as_dtype(signed(rng, shape, 0.3, 1.5), d) for _ in "xy")
        label = f"f(x, y) = {f} on {d} x and y of shape {shape}"
        found.append(spec.Probe(d, x, data={"name": f, "f": functions[f], "y": y}, label=label))
    return found


def partials(p) -> dict:
    found = PARTIALS[p.name](p.x, p.y, *(f(p.x * p.y) for f in (np.cos, np.sin, np.exp)))
    return dict(zip(("f", "fx", "fy", "fxx", "fyy", "fxy"), found))


# fmt: off
MISTAKES = tuple(spec.Mistake(code, hint, lambda p, k=k: partials(p)[k]) for code, hint, k in (
    ("wrong_source", "You returned d2z/dx2: both tapes differentiated with respect to x. The outer "
     "one must differentiate dz/dx with respect to y.", "fxx"),
    ("wrong_source", "You returned d2z/dy2: both tapes differentiated with respect to y. "
     "Differentiate with respect to x on one tape and y on the other.", "fyy"),
    ("first_not_second", "You returned dz/dx, a first derivative: the outer tape must still "
     "differentiate it with respect to y.", "fx"),
    ("first_not_second", "You returned dz/dy, a first derivative: differentiate dz/dx with "
     "respect to y instead.", "fy"),
)) + (spec.Mistake("product_of_partials", "You multiplied the two first derivatives, dz/dx * "
      "dz/dy. The mixed partial is the derivative of dz/dx with respect to y: an outer tape that "
      "records the inner gradient.", lambda p: partials(p)["fx"] * partials(p)["fy"],
      means="dz/dx * dz/dy where the derivative of dz/dx with respect to y belongs"),
    spec.Mistake("added_term", "You returned d2z/dx2 + d2z/(dx dy): your outer tape "
                 "differentiated dz/dx with respect to both x and y and you added the two (or it "
                 "differentiated dz/dx + dz/dy with respect to x). The mixed partial is the outer "
                 "gradient of dz/dx alone, with respect to y alone.",
                 lambda p: partials(p)["fxx"] + partials(p)["fxy"]),
    spec.Mistake("added_term", "You returned d2z/(dx dy) + d2z/dy2: your outer tape "
                 "differentiated dz/dx + dz/dy with respect to y (or dz/dy with respect to both x "
                 "and y, the two added). The mixed partial is the outer gradient of dz/dx alone, "
                 "with respect to y alone.", lambda p: partials(p)["fxy"] + partials(p)["fyy"]),
)
# fmt: on

EXERCISE = spec.Exercise(
    number="4.2",
    title="A mixed partial derivative",
    stars=2,
    minutes=10,
    harness=Function(
        "`mixed_partial`",
        vary=negated,
        arguments=("f", "x", "y"),
        nested=True,
        forbid={"jacobian": "the outer gradient of dz/dx already is the mixed partial."},
        steps=lambda p: {"d2z/(dx dy)": partials(p)["fxy"]},
        nouns={"value": "your mixed partial"},
    ),
    probes=draw,
    reference=lambda p: partials(p)["fxy"],
    tolerance=of_terms(lambda p: 1.0 + np.max(np.abs(partials(p)["fxy"]))),  # it can cancel
    mistakes=MISTAKES,
    describe={"value": "d2z/(dx dy), element by element"},
    claim="d2z/(dx dy) for functions you had not seen, and zeros (not None) where the x-slope "
    "does not depend on y",
)
mixed_partial = EXERCISE.check
