"""Checks for lesson 04, *Nested tapes and higher-order gradients*, against float64 closed
forms: 4.1, 4.2 and 4.4 under the learner's nested tapes, 4.3 and 4.5 on the check's tape."""

from .hessian_vector import hvp as hvp
from .mixed_partials import mixed_partial as mixed_partial
from .newton import newton_step as newton_step
from .safe_norms import safe_norm as safe_norm
from .sigmoid_slope import smooth_sigmoid as smooth_sigmoid
