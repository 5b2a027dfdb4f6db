"""The demonstration check of lesson 00: how a self-check answers."""

from __future__ import annotations

from ..checking.function import Function
from ..checking.probes import signed
from ..checking.spec import Exercise
from ..checking.spec import Mistake
from ..checking.spec import Probe
from ..checking.spec import as_dtype


def draw(rng) -> list:
    """A float32 vector of 3 to 6 values of both signs with a 0 among them (so that a
    hard-coded vector or x**2 cannot pass), and a (1, 3) row."""
    values = signed(rng, int(rng.integers(3, 7)), 0.5, 3.0)
    values[0] = 0.0
    row = signed(rng, (1, 3), 0.5, 3.0)
    return [
        Probe("float32", as_dtype(values, "float32"), label="a vector"),
        Probe("float32", as_dtype(row, "float32"), label="a (1, 3) row"),
    ]


EXERCISE = Exercise(
    number="0.1",
    title="Double every element",
    stars=1,
    minutes=2,
    harness=Function("`double`"),
    probes=draw,
    reference=lambda p: 2.0 * p.x,
    mistakes=(
        Mistake(
            "squared",
            "You squared the input (x**2 or x * x); doubling is 2 * x.",
            lambda p: p.x**2,
            means="x**2 where 2 * x belongs",
        ),
        Mistake(
            "added_two",
            "You added 2 to each element (x + 2); doubling multiplies: 2 * x.",
            lambda p: p.x + 2.0,
            means="2 added where each element should be multiplied by 2",
        ),
        Mistake(
            "unchanged",
            "You returned the input unchanged; multiply it by 2.",
            lambda p: p.x,
            means="the input returned unchanged",
        ),
    ),
    describe={"value": "2 * x for every element"},
    claim="Each element was multiplied by 2",
)
double = EXERCISE.check
