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
from .answers import (
    FORGOT_DECORATOR_HINT, TIME_LIMIT_SECONDS, as_sequence, as_values, call_answer,
    forgot_custom_gradient_decorator, function_label, learner_code, require_callable,
    shape_hint, shape_of, time_limit,
)
from .differentiating import (
    Recorded, forbid_jacobian, gradient_values, none_hint, observed_call,
    observed_call_keeping_errors, raise_if_none, record_answer, require_by_hand,
    require_custom_backward_ran, require_custom_gradient, require_forward_mode,
    require_nested, require_output_gradients, trace, why_none,
)
from .judging import (
    FLOAT32, FLOAT64, Tolerance, close_points, describe_difference, diagnose_mistake,
    explain_difference, generic_mistake, matches, matches_where_finite, tolerance_for,
    worst_point,
)
from .judge import judge
from .observing import MethodLog, observe
from .patterns import close_on_the_whole, floor_of, only_float32_digits, partly_right
from .provenance import (
    Run, explain_missing, first_missing, raise_if_missing, raise_if_partly_cut,
    raise_if_zeros_hide, run_answer,
)
from .probes import fresh_rng, points, signed, sizes, tensor, upstream
from .verdicts import (
    NOT_ATTEMPTED_MESSAGE, REPORT_ENVIRONMENT_VARIABLE, STRICT_ENVIRONMENT_VARIABLE,
    CheckResult, ExerciseNotSolved, NotAttempted, Status, Wrong, evaluate, exercise,
    first_line, strict_checks, strict_mode,
)

__all__ = [
    "CheckResult", "ExerciseNotSolved", "FLOAT32", "FLOAT64", "FORGOT_DECORATOR_HINT",
    "MethodLog", "NOT_ATTEMPTED_MESSAGE", "NotAttempted", "REPORT_ENVIRONMENT_VARIABLE",
    "Recorded", "STRICT_ENVIRONMENT_VARIABLE", "Status", "TIME_LIMIT_SECONDS",
    "Tolerance", "Wrong", "as_sequence", "as_values", "call_answer", "close_points",
    "describe_difference", "diagnose_mistake", "evaluate", "exercise",
    "explain_difference", "first_line", "forbid_jacobian", "forgot_custom_gradient_decorator",
    "fresh_rng", "function_label", "generic_mistake", "gradient_values", "learner_code",
    "matches", "matches_where_finite", "mistakes", "none_hint", "observe", "observed_call",
    "observed_call_keeping_errors", "points", "raise_if_none", "record_answer",
    "require_by_hand", "require_callable", "require_custom_backward_ran",
    "require_custom_gradient", "require_forward_mode", "require_nested",
    "require_output_gradients", "Run", "explain_missing", "first_missing",
    "raise_if_missing", "raise_if_partly_cut", "raise_if_zeros_hide", "run_answer",
    "close_on_the_whole", "floor_of", "judge", "only_float32_digits", "partly_right",
    "shape_hint", "shape_of", "signed", "sizes", "strict_checks", "strict_mode", "tensor",
    "time_limit", "tolerance_for", "trace", "upstream", "why_none", "worst_point",
]

# Transitional alias for check modules written before the package existed.
_first_line = first_line
