"""The demonstration check of lesson 00: how a self-check answers."""

from __future__ import annotations

from ..checking import FLOAT32
from ..checking import as_values
from ..checking import call_answer
from ..checking import exercise
from ..checking import fresh_rng
from ..checking import judge
from ..checking import mistakes
from ..checking import signed
from ..checking import tensor

mistakes.register(
    {
        "squared": "x**2 where 2 * x belongs",
        "unchanged": "the input returned unchanged",
    }
)


@exercise("0.1", "double every element")
def double(answer):
    """2 * x, element-wise.

    Probes (fresh on every call): a float32 vector of 3 to 6 values of both signs,
    with a 0 among them (so that a hard-coded vector or x**2 cannot pass).
    """
    rng = fresh_rng("0.1")
    values = signed(rng, int(rng.integers(3, 7)), 0.5, 3.0)
    values[0] = 0.0
    x = tensor(values, "float32")
    got = as_values(call_answer(answer, x), shape=x.shape, dtype=x.dtype)
    judge(
        got,
        2.0 * values,
        FLOAT32,
        summary="Expected 2 * x for every element.",
        dtype="float32",
        known=[
            ("squared", "You squared the input (x**2 or x * x); doubling is 2 * x.", values**2),
            ("unchanged", "You returned the input unchanged; multiply it by 2.", values),
        ],
    )
    return "Each element was multiplied by 2."
