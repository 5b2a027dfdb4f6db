"""Checks for lesson 06, *Build your own tape*: one spec per exercise, 6.1 to 6.4.

The answers are NumPy functions, which :class:`~autodiff_course.checking.numpy_rule.NumpyRule`
calls as the notebook's tape does (6.1 from the check's own reverse pass, :mod:`.reverse_pass`).
6.4 shares the log1pexp story with lesson 03 (:mod:`autodiff_course.checks.log1pexp_story`).
"""

from __future__ import annotations

from .accumulate_gradient import accumulate_gradient
from .log1pexp_rule import log1pexp_rule
from .matmul_vjp import matmul_vjp
from .multiply_vjp import multiply_vjp

__all__ = ["accumulate_gradient", "log1pexp_rule", "matmul_vjp", "multiply_vjp"]
