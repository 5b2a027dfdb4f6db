"""Exercise 1.3: the upstream gradient dy of a mean squared error, by hand."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.patterns import linear_mix
from ...checking.probes import tensor
from . import dy_of_mse as mse

LOSS = "You returned one number, the loss itself; dy is its derivative, one per element."
REDUCED = "You returned one number, dy averaged: dy has one entry per element of the output."
EXERCISE = spec.Exercise(
    number="1.3",
    title="The upstream gradient of a mean squared error",
    stars=1,
    minutes=5,
    harness=Function(
        "`upstream_dy`",
        arguments=lambda p: (tensor(p.output, p.dtype), tensor(p.target, p.dtype)),
        by_hand=True,
        scalars=(
            spec.Mistake(
                "value_not_derivative", LOSS, lambda p: np.mean((p.output - p.target) ** 2)
            ),
            spec.Mistake("reduced_dy", REDUCED, lambda p: np.mean(mse.dy(p)) * p.output.size),
        ),
        nouns={"value": "your dy"},
    ),
    probes=mse.probes_for(lambda o: o, 3.0, scalar=True, at=np.empty(0)),
    reference=mse.dy,
    mistakes=(
        *mse.dy_mistakes(),
        linear_mix(
            "value_not_derivative",
            "Your dy is {mix}: the square is still there. Differentiated, (output - target)**2 "
            "gives 2 (output - target).",
            mse.dy,
            **{"(output - target)**2": lambda p: (p.output - p.target) ** 2},
        ),
        mse.constant_dy(),
        mse.linear_dy(),
    ),
    describe={"value": "dy = 2 (output - target) / N, with N the number of elements"},
    claim="By hand, dy = 2 (output - target) / N, right for residuals of both signs and zero",
)
upstream_dy = EXERCISE.check
