"""The log1pexp explorer's former address; it lives in :mod:`autodiff_course.widgets.log1pexp`.

Kept because copies of lesson 03 saved before the move import it from here, and
``./course.sh progress`` re-runs learners' saved copies as they are.
"""

from .log1pexp import *  # noqa: F401,F403
from .log1pexp import __all__  # noqa: F401
