"""Lesson 02's names for the causes of a None (its sections 5 and 6), and the harness of
its exercises, whose answers record their own tape: a None is named by those causes."""

from ...checking.function import Function

CAUSES = {
    "unwatched_constant": "Cause 1, an unwatched constant",
    "integer_dtype": "Cause 2, an integer dtype",
    "watched_before_cast": "Cause 2, an integer dtype",
    "watched_after_use": "Cause 3, watching after use",
    "numpy_detour": "Cause 4, a detour through NumPy",
    "variable_replaced": "Cause 5, a variable replaced by a tensor",
    "stateful_assign": "Cause 6, a stateful assign in the chain",
    "non_differentiable_op": "Cause 7, an operation without a gradient",
    "unwatched_variable": "A variable the tape does not watch (section 1)",
    "computed_outside_tape": "Outside the recording (sections 1 and 2)",
}


def taped(name: str, **options) -> Function:
    """The harness of an answer that records its own tape, a None named by :data:`CAUSES`."""
    return Function(name, tape=True, cause_names=CAUSES, **options)
