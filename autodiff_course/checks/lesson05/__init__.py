"""Checks for lesson 05, *Jacobians*: a spec per exercise, imported in order (a code's meaning
is declared where it first appears); :mod:`.functions`: the layers handed to the answers."""

# isort: off
from .elementwise import swish_jacobian as swish_jacobian
from .rows import jacobian_by_rows as jacobian_by_rows
from .per_example import per_example_jacobian as per_example_jacobian
from .interacting_examples import true_batch_jacobian as true_batch_jacobian
from .hessians import per_example_hessians as per_example_hessians
from .forward_mode import forward_jacobian_any_shape as forward_jacobian_any_shape
# isort: on
