"""Exercise checks, one module or package per lesson.

A notebook imports its lesson's checks as ``from autodiff_course.checks import lesson03 as
check``; a lesson package (``lesson03/``) holds one module per exercise, each the spec of
that exercise (:class:`~autodiff_course.checking.spec.Exercise`), and re-exports every
check under its own name.
"""

from __future__ import annotations

import importlib
import pkgutil


def all_exercises() -> dict:
    """Every exercise of the course by number ("3.1"): its :class:`~autodiff_course.
    checking.spec.Exercise`, read from the lesson packages' checks."""
    from ..checking.spec import Exercise

    found = {}
    for module_info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not module_info.name.startswith("lesson"):
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            spec = getattr(value, "spec", None)
            if isinstance(spec, Exercise):
                found[spec.number] = spec
    return dict(sorted(found.items(), key=lambda item: tuple(map(int, item[0].split(".")))))
