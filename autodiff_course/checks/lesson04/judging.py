"""How lesson 04 names a wrong result: a None that zeros hide, the exercise's own
mistakes, the missing nesting, the generic patterns; and, from what the tapes
themselves returned, an outer tape that differentiated the function again, or parts
computed right and combined into the wrong formula."""

from __future__ import annotations

import numpy as np

from ...checking import Tolerance
from ...checking import Wrong
from ...checking import close_points
from ...checking import describe_difference
from ...checking import explain_difference
from ...checking import generic_mistake
from ...checking import matches
from ...checking import require_nested
from ...checking.observing import MethodLog
from .shared import _missing


def _judge(
    got,
    expected,
    tol: Tolerance,
    *,
    summary,
    run=None,
    names=(),
    at=None,
    known=(),
    what="your result",
    atol=None,
    between="",
    before_generic=None,
    computed=None,
    batch=None,
    terms=None,
) -> None:
    """Accept ``got``, or name the mistake.

    In this order: a ``None`` that ``unconnected_gradients=ZERO`` hid, one of the
    exercise's own mistakes, a method the exercise demands (nested tapes, when
    ``run`` is given), then the generic patterns and a point that differs. ``terms``,
    the largest term the answer sums, lets float32 noise near a zero of the answer
    still read as an approximation.
    """
    atol = tol.atol if atol is None else atol
    if matches(got, expected, tol.rtol, atol):
        return
    log = None if run is None else run.log
    if run is not None and log.used_zero_option:
        hidden = _missing(run, names, between, hidden=True)
        if hidden is not None:
            raise Wrong(hidden[1], hidden[0])
    if run is not None:
        if np.all(got == 0.0) and np.any(expected != 0.0):
            replaced = _missing(run, names, between)
            if replaced is not None:
                raise Wrong(
                    "Your function returned zeros where a tape returned None, so "
                    "the zeros hide a mistake. " + replaced[1],
                    replaced[0],
                )
    for code, hint, values in known:
        if matches(got, values, tol.rtol, atol):
            raise Wrong(hint, code)
    # The same mistakes with a little rounding noise on top (a tail lost in float32).
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 1.0
    for code, hint, values in known:
        if matches(got, values, max(tol.rtol, 1e-3), max(atol, 1e-6 * scale)):
            raise Wrong(hint, code)
    if log is not None:
        require_nested(log)
    generic = generic_mistake(got, expected, rtol=tol.rtol, atol=atol, what=what, batch=batch)
    if generic is None and terms is not None:
        # float32 arithmetic inside a float64 answer: close everywhere but where the
        # answer nearly vanishes, where its error is about 1e-7 of the largest term.
        loose = generic_mistake(got, expected, rtol=tol.rtol, atol=1e-6 * terms, what=what)
        if loose is not None and loose[0] == "approximation":
            generic = loose
    if generic is not None:
        code, hint = generic
        raise Wrong(f"{hint} {describe_difference(got, expected, at, tol.rtol, atol)}", code)
    if before_generic is not None:
        before_generic()
    if log is not None and computed is not None:
        _right_parts_wrong_whole(log, got, computed, tol, atol, at)
    raise explain_difference(
        got, expected, summary=summary, at=at, rtol=tol.rtol, atol=atol, what=what
    )


def _results(log: MethodLog, *, outer_only: bool = False):
    """Every array a tape's gradient call returned, as float64; with ``outer_only``, only
    those of calls on a tape that had recorded another tape's gradient call."""
    found = []
    for call in log.calls:
        if outer_only and not any(
            inner.time < call.time and call.tape in inner.recording_tapes for inner in log.calls
        ):
            continue
        for result in call.results or ():
            try:
                found.append(np.asarray(result, dtype=np.float64))
            except Exception:  # noqa: BLE001 - an IndexedSlices or the like: skip it
                continue
    return found


def _right_parts_wrong_whole(log: MethodLog, got, computed, tol: Tolerance, atol, at):
    """The tapes computed every part right; only what was done with them is wrong.

    ``computed`` is ``(lead, [(name, reference values)], expected)``: when every
    reference appears among the tapes' results, the hint opens with ``lead`` and
    quotes the parts, the answer and the returned value at one point that differs.
    """
    lead, references, expected = computed
    results = _results(log)
    loose = max(tol.rtol, 1e-9) * 10
    for _, reference in references:
        if not any(
            result.shape == np.shape(reference) and matches(result, reference, loose, atol)
            for result in results
        ):
            return
    got = np.asarray(got, dtype=np.float64)
    index = (
        np.unravel_index(int(np.argmax(~close_points(got, expected, tol.rtol, atol))), got.shape)
        if got.ndim
        else ()
    )
    where = (
        f"at index {list(index)}"
        if got.ndim > 1
        else f"at index {index[0]}"
        if got.ndim
        else "here"
    )
    if at is not None and np.shape(at) == got.shape:
        where = f"at x = {np.asarray(at)[index]:.6g}"
    values = ", ".join(
        f"{name} = {np.asarray(reference)[index]:.6g}" for name, reference in references
    )
    raise Wrong(
        f"{lead} For example {where}: {values}, so the answer is "
        f"{np.asarray(expected)[index]:.6g}, but your function returned "
        f"{got[index]:.6g}.",
        "wrong_combination",
    )


def _outer_repeated(log, first, at, target, first_name, instead) -> None:
    """The outer tape differentiated the function again, giving a first derivative."""
    for result in _results(log, outer_only=True):
        if result.shape == np.shape(first) and matches(result, first, 1e-4, 1e-12):
            index = (0,) * result.ndim
            where = (
                f" (at x = {np.asarray(at)[index]:.6g} it gave {result[index]:.6g})"
                if result.ndim
                else ""
            )
            raise Wrong(
                f"Your outer tape differentiated {target} itself, so it returned "
                f"{first_name} a second time{where}. It must differentiate "
                f"{instead}.",
                "wrong_target",
            )
