"""The exercise checker (introduced in lesson 00, used from lesson 01 on).

A lesson's checks (``autodiff_course/checks/lessonNN``) keep only what is
particular to its exercises: the probes and the catalogue of mistakes. The
plumbing lives here, in one place:

* :mod:`.verdicts`: the three verdicts, strict mode, the ``@exercise`` decorator;
* :mod:`.mistakes`: the one registry of mistake codes;
* :mod:`.answers`: calling learner code (errors shown as theirs, a time limit)
  and converting whatever it returned;
* :mod:`.judging`: per-point relative tolerances, the generic mistakes (sign,
  scale, sum vs mean, transpose, ...) and the example point of a fallback hint;
  :mod:`.patterns` (answers right in part) and :mod:`.judge`, the one call that
  accepts a value or raises the most specific hint, in a fixed order;
* :mod:`.observing` and :mod:`.differentiating`: how the answer differentiated
  (tapes, ``output_gradients``, nesting, forward mode, custom gradients), the
  methods an exercise demands, and the cause of a ``None`` gradient from the
  tapes' own record;
* :mod:`.provenance`: for the lessons about missing gradients, the whole run
  (every operation and NumPy conversion) and the check's own tape, which settle
  whether a path exists and, if it is cut, what cut it;
* :mod:`.probes`: boundary points plus points drawn fresh on every call, fresh
  axis sizes, and probes as tensors of a named dtype.

Checks compare with independent references (closed forms in float64, finite
differences of a float64 reference), never with the code path the exercise asks for.
"""

from . import mistakes
from .answers import FORGOT_DECORATOR_HINT
from .answers import TIME_LIMIT_SECONDS
from .answers import as_sequence
from .answers import as_values
from .answers import call_answer
from .answers import forgot_custom_gradient_decorator
from .answers import function_label
from .answers import learner_code
from .answers import require_callable
from .answers import shape_hint
from .answers import shape_of
from .answers import time_limit
from .differentiating import Recorded
from .differentiating import forbid_jacobian
from .differentiating import gradient_values
from .differentiating import none_hint
from .differentiating import observed_call
from .differentiating import observed_call_keeping_errors
from .differentiating import raise_if_none
from .differentiating import record_answer
from .differentiating import require_by_hand
from .differentiating import require_custom_backward_ran
from .differentiating import require_custom_gradient
from .differentiating import require_forward_mode
from .differentiating import require_nested
from .differentiating import require_output_gradients
from .differentiating import trace
from .differentiating import why_none
from .judging import FLOAT32
from .judging import FLOAT64
from .judging import Tolerance
from .judging import close_points
from .judging import describe_difference
from .judging import diagnose_mistake
from .judging import explain_difference
from .judging import generic_mistake
from .judging import matches
from .judging import matches_where_finite
from .judging import tolerance_for
from .judging import worst_point
from .observing import MethodLog
from .observing import observe
from .patterns import close_on_the_whole
from .patterns import floor_of
from .patterns import only_float32_digits
from .patterns import partly_right
from .probes import fresh_rng
from .probes import points
from .probes import signed
from .probes import sizes
from .probes import tensor
from .probes import upstream
from .provenance import Run
from .provenance import explain_missing
from .provenance import first_missing
from .provenance import raise_if_missing
from .provenance import raise_if_partly_cut
from .provenance import raise_if_zeros_hide
from .provenance import run_answer
from .verdicts import NOT_ATTEMPTED_MESSAGE
from .verdicts import REPORT_ENVIRONMENT_VARIABLE
from .verdicts import STRICT_ENVIRONMENT_VARIABLE
from .verdicts import CheckResult
from .verdicts import ExerciseNotSolved
from .verdicts import NotAttempted
from .verdicts import Status
from .verdicts import Wrong
from .verdicts import evaluate
from .verdicts import exercise
from .verdicts import first_line
from .verdicts import strict_checks
from .verdicts import strict_mode

__all__ = [
    "CheckResult",
    "ExerciseNotSolved",
    "FLOAT32",
    "FLOAT64",
    "FORGOT_DECORATOR_HINT",
    "MethodLog",
    "NOT_ATTEMPTED_MESSAGE",
    "NotAttempted",
    "REPORT_ENVIRONMENT_VARIABLE",
    "Recorded",
    "STRICT_ENVIRONMENT_VARIABLE",
    "Status",
    "TIME_LIMIT_SECONDS",
    "Tolerance",
    "Wrong",
    "as_sequence",
    "as_values",
    "call_answer",
    "close_points",
    "describe_difference",
    "diagnose_mistake",
    "evaluate",
    "exercise",
    "explain_difference",
    "first_line",
    "forbid_jacobian",
    "forgot_custom_gradient_decorator",
    "fresh_rng",
    "function_label",
    "generic_mistake",
    "gradient_values",
    "learner_code",
    "matches",
    "matches_where_finite",
    "mistakes",
    "none_hint",
    "observe",
    "observed_call",
    "observed_call_keeping_errors",
    "points",
    "raise_if_none",
    "record_answer",
    "require_by_hand",
    "require_callable",
    "require_custom_backward_ran",
    "require_custom_gradient",
    "require_forward_mode",
    "require_nested",
    "require_output_gradients",
    "Run",
    "explain_missing",
    "first_missing",
    "raise_if_missing",
    "raise_if_partly_cut",
    "raise_if_zeros_hide",
    "run_answer",
    "close_on_the_whole",
    "floor_of",
    "only_float32_digits",
    "partly_right",
    "shape_hint",
    "shape_of",
    "signed",
    "sizes",
    "strict_checks",
    "strict_mode",
    "tensor",
    "time_limit",
    "tolerance_for",
    "trace",
    "upstream",
    "why_none",
    "worst_point",
]
