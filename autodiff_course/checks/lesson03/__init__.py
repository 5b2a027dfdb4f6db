"""Checks for lesson 03, *Custom gradients and the log1pexp story*.

One spec per exercise: :mod:`.stable_log1pexp` (3.1), :mod:`.straight_through` (3.2),
:mod:`.clip_upstream` (3.3) and :mod:`.variable_layer` (3.4). Each answer runs on the
check's own tape (:class:`~autodiff_course.checking.on_tape.OnTape`) as a model would use
it, with upstreams of both signs and other than 1, and every check demands that the
learner's own ``@tf.custom_gradient`` rule ran. 3.1 and 3.4 share the log1pexp story
(:mod:`autodiff_course.checks.log1pexp_story`) with lesson 06's 6.4.
"""

from __future__ import annotations

from .clip_upstream import clipped_upstream
from .stable_log1pexp import LOG1PEXP_FIXED_32
from .stable_log1pexp import LOG1PEXP_FIXED_64
from .stable_log1pexp import log1pexp_stable
from .straight_through import binarize_ste
from .variable_layer import scaled_softplus

__all__ = [
    "LOG1PEXP_FIXED_32",
    "LOG1PEXP_FIXED_64",
    "binarize_ste",
    "clipped_upstream",
    "log1pexp_stable",
    "scaled_softplus",
]
