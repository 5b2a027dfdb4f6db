"""Checks for lesson 04, *Nested tapes and higher-order gradients*, against float64 closed
forms: 4.1, 4.2 and 4.4 under the learner's nested tapes (:mod:`~autodiff_course.checking.
function`), 4.3 and 4.5 on the check's own tape (:mod:`~autodiff_course.checking.on_tape`)."""

from .hessian_vector import hvp
from .mixed_partials import mixed_partial
from .newton import newton_step
from .safe_norms import safe_norm
from .sigmoid_slope import smooth_sigmoid

__all__ = ["hvp", "mixed_partial", "newton_step", "safe_norm", "smooth_sigmoid"]
