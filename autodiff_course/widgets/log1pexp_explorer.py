"""The log1pexp explorer's former address; it lives in :mod:`autodiff_course.widgets.log1pexp`."""

from .log1pexp import *  # noqa: F401,F403
from .log1pexp import __all__  # noqa: F401
