"""The exercise checker (introduced in lesson 00, used from lesson 01 on).

An exercise is a spec (:mod:`.spec`) that one judge (:mod:`.judge`) interprets, with
one harness per kind of answer: :mod:`.function` (a function the check calls),
:mod:`.on_tape` (run on the check's own tape: custom gradients) and :mod:`.numpy_rule`
(a backward rule in NumPy). What they share:

* :mod:`.verdicts`: the three verdicts, strict mode, the ``@exercise`` decorator;
* :mod:`.mistakes`: the one registry of mistake codes;
* :mod:`.answers` and :mod:`.settings`: calling learner code (errors shown as theirs, a
  time limit, global settings left alone) and converting whatever it returned;
* :mod:`.judging` and :mod:`.patterns`: per-point tolerances, the generic mistakes
  (sign, scale, sum vs mean, transpose, ...) and answers right in part;
* :mod:`.observing`, :mod:`.differentiating`, :mod:`.recording` and :mod:`.provenance`:
  how the answer differentiated (tapes, ``output_gradients``, nesting, forward mode,
  custom gradients), the methods an exercise demands, and the cause of a ``None``
  gradient from the whole run;
* :mod:`.probes`: points drawn fresh on every call, axis sizes, upstreams.

Checks compare with independent references (closed forms in float64, finite
differences of a float64 reference), never with the code path the exercise asks for.
"""

from . import mistakes
from .judging import FLOAT32
from .judging import FLOAT64
from .judging import close_points
from .verdicts import REPORT_ENVIRONMENT_VARIABLE
from .verdicts import STRICT_ENVIRONMENT_VARIABLE
from .verdicts import CheckResult
from .verdicts import ExerciseNotSolved
from .verdicts import NotAttempted
from .verdicts import Status
from .verdicts import Wrong
from .verdicts import evaluate
from .verdicts import exercise
from .verdicts import strict_checks
from .verdicts import strict_mode

__all__ = [
    "CheckResult",
    "ExerciseNotSolved",
    "FLOAT32",
    "FLOAT64",
    "NotAttempted",
    "REPORT_ENVIRONMENT_VARIABLE",
    "STRICT_ENVIRONMENT_VARIABLE",
    "Status",
    "Wrong",
    "close_points",
    "evaluate",
    "exercise",
    "mistakes",
    "strict_checks",
    "strict_mode",
]
