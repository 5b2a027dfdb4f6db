"""Lesson 02's names for the causes of a None (its sections 5 and 6), for ``cause_names``."""

CAUSES = {
    "unwatched_constant": "Cause 1, an unwatched constant",
    "integer_dtype": "Cause 2, an integer dtype",
    "watched_after_use": "Cause 3, watching after use",
    "numpy_detour": "Cause 4, a detour through NumPy",
    "variable_replaced": "Cause 5, a variable replaced by a tensor",
    "stateful_assign": "Cause 6, a stateful assign in the chain",
    "non_differentiable_op": "Cause 7, an operation without a gradient",
    "unwatched_variable": "A variable the tape does not watch (section 1)",
    "computed_outside_tape": "Outside the recording (section 1)",
}
