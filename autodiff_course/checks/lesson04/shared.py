"""What the checks of lesson 04 share: the probes' dtypes, running an answer while
keeping everything it did, and explaining a None gradient (or the error it caused) in
this lesson's words, the two causes only nested tapes have included."""

from __future__ import annotations

import dataclasses

from ...checking import Wrong
from ...checking import as_values
from ...checking import explain_missing
from ...checking import first_missing
from ...checking import require_nested
from ...checking import run_answer
from ...checking import why_none

DTYPES = ("float32", "float64")


def _call(answer, *args, name: str):
    """``(value, run, wrong)``: the answer's result, everything it did, its error.

    :func:`run_answer` keeps what the answer did (its tapes, and on TensorFlow's op
    ids every operation and conversion), so that a None can be explained from it.
    """
    run = run_answer(answer, *args, name=name)
    return run.value, run, run.raised


def _source_name(source, names) -> str:
    """The name ("x", "y", "v") the exercise gives the source of a missing gradient."""
    for tensor, name in names:
        if source is tensor:
            return name
    return "x"


NESTED_CAUSES = ("gradient_outside_tape", "outer_not_watching")


def _cause(run, call, source, probe):
    """``(code, hint)``: why ``call`` found no path to ``source``.

    The two causes that only nested tapes have (the inner gradient computed after
    the outer block; an outer tape that does not watch the source) are read from the
    whole method log by :func:`why_none`; everything else comes from
    :func:`explain_missing`, which settles it from what the answer's operations did.
    """
    calls = []
    for other in run.log.calls:
        if other is call:
            other = dataclasses.replace(
                other,
                results=[
                    None if item is source else result
                    for item, result in zip(other.sources, other.results or [])
                ],
            )
        calls.append(other)
    explained = why_none(dataclasses.replace(run.log, calls=calls), probe=probe)
    if explained is not None and explained[0] in NESTED_CAUSES:
        return explained
    return explain_missing(run, call, source, probe=probe)


def _missing(run, names=(), between: str = "", hidden: bool = False):
    """``(code, hint)`` for a None the tapes saw (with ``hidden``, also for zeros that
    unconnected_gradients=ZERO put in its place), or None when there was none.

    The cause comes from :func:`explain_missing`; this lesson adds its own words:
    a target computed after the outer block names what lies between the two
    gradients (``between``); when the outer tape does not watch a source that the
    inner tape never watched either (the mixed partial's y), the hint says only
    what is true of that source; and a None from an answer that nests no tapes at
    all is the missing nesting (``not_nested``).
    """
    found = first_missing(run.log, hidden=hidden)
    if found is None:
        return None
    call, source, was_hidden = found
    probe = _source_name(source, names)
    code, hint = _cause(run, call, source, probe)
    if code == "computed_outside_tape" and between:
        hint = hint.rstrip(".") + between + "."
    if code in ("watched_after_use", "no_gradient") and not run.log.nested:
        try:
            require_nested(run.log)
        except Wrong as wrong:
            code, hint = wrong.mistake, wrong.hint
    if was_hidden:
        return "zeros_hide_none", (
            "unconnected_gradients=ZERO turned a None into zeros, so your result is wrong "
            "without any warning. Without that option the gradient is None, and here is "
            "why: " + hint
        )
    return code, hint


def _explain_none_or_error(run, value, wrong, *, names=(), name="Your function", between=""):
    """Explain a None result or an error caused by one; otherwise report what came back."""
    explained = _missing(run, names, between)
    if explained is not None:
        raise Wrong(explained[1], explained[0])
    if wrong is not None:
        raise wrong
    as_values(value, name=name)  # None: "did you forget return?"
