"""Exercise 5.3: per-example Jacobians of a layer that treats each example on its own."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from .functions import batch_layer
from .functions import blocks
from .functions import dense


def sizes(rng):
    """tanh(x W + c), fresh: float32 with ins, outs and a batch of 3 to 5 all different (each
    layout has its own shape); float64 with a batch of one and one output (a squeeze shows)."""
    batch = int(rng.integers(3, 6))
    ins, outs = (int(k) for k in rng.choice([k for k in range(2, 6) if k != batch], 2, False))
    return [
        ("float32", {"batch": batch, "ins": ins, "outs": outs}),
        ("float64", {"batch": 1, "ins": int(rng.integers(2, 6)), "outs": 1}),
    ]


def make(rng, dtype, s):
    return dense(rng, dtype, s, (s["ins"],), (s["outs"],), s["batch"])


def _own(p):
    return np.stack([block[:, b] for b, block in enumerate(blocks(p))])


EXERCISE = spec.Exercise(
    number="5.3",
    title="Per-example Jacobians",
    stars=2,
    minutes=10,
    harness=Function("`per_example_jacobian`", arguments=batch_layer, vary=negated),
    probes=spec.Shaped(make, sizes, size_one=False),
    reference=_own,
    mistakes=(
        spec.Mistake(
            "returned_gradient",
            "Shape ({batch}, {ins}) is x's: tape.gradient sums each example's outputs; a "
            "Jacobian keeps one row per output.",
            lambda p: _own(p).sum(axis=1),
        ),
        spec.Mistake(
            "summed_outputs",
            "One output per example where the layer has {outs}: differentiate y, not its sum.",
            lambda p: _own(p).sum(axis=1, keepdims=True),
            means="a layer's outputs summed before differentiating",
        ),
        spec.Mistake(
            "first_column",
            "Example b's Jacobian is block (b, b) of the full Jacobian; you took block (b, 0), "
            "against x's example 0, for every b: index both batch axes with b.",
            lambda p: np.stack([block[:, 0] for block in blocks(p)]),
            means="the blocks of the first example's inputs for every example",
        ),
    ),
    describe={"value": "the (batch, outs, ins) per-example Jacobians"},
    claim="The per-example Jacobians, shape (batch, outs, ins), are the diagonal blocks of the "
    "block-diagonal full Jacobian",
    tolerance=relative_to_largest(_own),
)
per_example_jacobian = EXERCISE.check
