"""Exercise 2.2: a derivative for any kind of x."""

import numpy as np

from ...checking.function import negated
from ...checking.function import one_tensor
from ...checking.judging import of_terms
from ...checking.probes import signed
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Probe
from ...checking.verdicts import Wrong
from .causes import taped

KINDS = (  # every kind of x the exercise names, its dtype and its shape
    ("a float32 tensor", "float32", 4),
    ("an int32 tensor", "int32", 4),
    ("an int64 tensor", "int64", 3),
    ("a float64 tensor", "float64", 4),
    ("a trainable tf.Variable", "float32", ()),
    ("a tf.Variable with trainable=False", "float32", 3),
    ("a float32 tensor of shape (1,)", "float32", 1),
)


def draw(rng) -> list:
    """A fresh f(x) = a x**3 + b x**2 + c sin(x) (coefficients of both signs, so that the
    lesson's x**3 - 2x, f itself or f'' cannot pass) at float32, int32, int64 and float64
    tensors and at trainable and frozen variables: vectors with a 0 and a negative entry,
    a scalar and a size-1 vector. An integer x gives float32."""
    a, b, c = signed(rng, 3, 0.5, 2.0, decimals=2)
    found = []
    for kind, given, shape in KINDS:
        x = rng.integers(-3, 4, shape) if "int" in given else signed(rng, shape, 0.1, 2.0)
        if np.size(x) > 2:
            x[:2] = 0, -abs(x[1]) - 1
        x = np.asarray(x, dtype=given).astype(float)
        shown = ", ".join(f"{v:g}" for v in np.ravel(x))
        label = f"{kind} x = {f'[{shown}]' if np.ndim(x) else shown}"
        data = dict(a=a, b=b, c=c, terms=6 * abs(a) + 2 * abs(b) + abs(c), given=given, kind=kind)
        found.append(Probe("float32" if "int" in given else given, x, data=data, label=label))
    return found


def arguments(p) -> tuple:
    import tensorflow as tf

    def f(x):  # like the lesson's x**3 - 2x, it takes an integer x too
        x = tf.cast(x, tf.float32) if x.dtype.is_integer else x
        return p.a * x**3 + p.b * x**2 + p.c * tf.sin(x)

    x = np.asarray(p.x, dtype=p.given)
    if "Variable" not in p.kind:
        return f, tf.constant(x)
    return f, tf.Variable(x, trainable="False" not in p.kind, name="x")


def read(value, p, exercise, name) -> dict:
    """One tensor shaped like x: float32 for an integer x, else in x's dtype."""
    dtype = getattr(getattr(value, "dtype", None), "name", "float32")
    if "int" in p.given and dtype != "float32":
        raise Wrong(
            f"{name} returned {dtype} for an integer x; the exercise asks for float32.",
            "wrong_dtype",
        )
    return one_tensor(value, p, exercise, name)


def first_only(p):
    """The gradient of y[0] alone: f'(x[0]) at entry 0, zeros elsewhere (vectors only)."""
    if np.size(p.x) < 2:
        return None
    slope = 3 * p.a * p.x**2 + 2 * p.b * p.x + p.c * np.cos(p.x)
    return np.where(np.arange(np.size(p.x)) == 0, slope, 0.0)


FIRST = (
    "Only entry 0 of your gradient is right and the others are 0: you differentiated "
    "y[0], the first element of f(x), alone. Differentiate the whole y = f(x): "
    "tape.gradient(y, x) gives each entry of x its own slope."
)
EXERCISE = Exercise(
    number="2.2",
    title="A derivative for any kind of x",
    stars=2,
    minutes=8,
    harness=taped("`derivative`", arguments=arguments, read=read, vary=negated),
    probes=draw,
    reference=lambda p: 3 * p.a * p.x**2 + 2 * p.b * p.x + p.c * np.cos(p.x),
    mistakes=(
        Mistake(
            "value_not_derivative",
            "You returned f(x) itself, not its derivative: return tape.gradient(y, x).",
            lambda p: p.a * p.x**3 + p.b * p.x**2 + p.c * np.sin(p.x),
        ),
        Mistake(
            "ignored_function",
            "You returned 3x**2 - 2, the slope of the lesson's x**3 - 2x. The check passes "
            "a different f each time: call f(x) on the tape.",
            lambda p: 3 * p.x**2 - 2,
            means="the lesson's example formula instead of the function passed in",
        ),
        Mistake(
            "differentiated_twice",
            "You returned the second derivative f''(x): differentiate once.",
            lambda p: 6 * p.a * p.x + 2 * p.b - p.c * np.sin(p.x),
        ),
        Mistake("wrong_target", FIRST, first_only),
    ),
    describe={"value": "df/dx of the f the check passed in, at every element of x"},
    claim="df/dx for a fresh f at every kind of x, float32 for an integer x",
    # Widened where the terms of f' (or of f'', among the mistakes) cancel.
    tolerance=of_terms(lambda p: p.terms * (1 + np.max(np.abs(p.x))) ** 2),
)
derivative = EXERCISE.check
