"""One call that accepts a value or raises the most specific :class:`Wrong` (lessons 01-06).

:func:`judge` is the order in which every check looks at a value that is not
the answer:

1. float32 digits in a float64 result;
2. the exercise's own mistakes (``known``), then the same with the sign flipped,
   recognised with an absolute floor on the answer's scale (rounding noise at a
   zero must not hide a mistake), then by majority on five or more points when
   the learner's formula loses digits somewhere;
3. an extra factor or term the exercise names (``terms``);
4. the generic whole-array patterns (sign, scale, sum vs mean, transpose, ...);
5. answers right in part (:mod:`.patterns`), an approximation on the array's scale;
6. the exercise's own last word (``fallback``);
7. the point where the values really differ, under the check's own tolerance.
"""

from __future__ import annotations

import numpy as np

from .judging import Tolerance
from .judging import _head
from .judging import _is
from .judging import close_points
from .judging import explain_difference
from .judging import matches
from .patterns import close_on_the_whole
from .patterns import float32_digits_wrong
from .patterns import floor_of
from .patterns import only_float32_digits
from .patterns import partly_right
from .verdicts import Wrong


def judge(
    got,
    expected,
    tolerance: Tolerance,
    *,
    summary: str,
    dtype=None,
    at=None,
    known=(),
    batch=None,
    what: str = "your result",
    fallback=None,
    terms=(),
) -> None:
    """Return quietly when ``got`` matches ``expected``; else raise the best Wrong.

    ``known`` lists the exercise's mistakes as ``(code, hint, values)``; ``terms``
    lists ``(name, values)`` of factors or terms a learner might add by mistake;
    ``fallback(got)`` may return a Wrong of the exercise's own before the generic
    quote of a differing point. ``dtype`` is the probe's dtype (name or DType).
    """
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    rtol, atol = tolerance.rtol, tolerance.atol
    if matches(got, expected, rtol, atol):
        return
    if "float64" in str(getattr(dtype, "name", dtype)) and only_float32_digits(got, expected):
        raise float32_digits_wrong(what)
    known = list(known)
    flipped = [
        (code, hint + " (The sign is flipped as well.)", -np.asarray(values))
        for code, hint, values in known
        if code != "sign_flipped"
    ]
    candidates = [
        (code, hint, np.asarray(values, dtype=np.float64))
        for code, hint, values in known + flipped
        if np.shape(values) == got.shape
    ]
    floor = max(atol, floor_of(expected))
    for code, hint, values in candidates:
        if matches(got, values, rtol, floor):
            raise Wrong(hint, code)
    if got.size >= 5:
        # The learner's formula may lose digits where it is ill-conditioned: most
        # points suffice, provided the mistake explains clearly more points than the
        # right answer does.
        near_answer = close_points(got, expected, 1e-3, floor).mean()
        for code, hint, values in candidates:
            near = close_points(got, values, 1e-3, floor).mean()
            if near >= 0.8 and near >= near_answer + 0.3:
                raise Wrong(hint, code)
    for name, term in terms:
        term = np.broadcast_to(np.asarray(term, dtype=np.float64), got.shape)
        if np.any(np.abs(term - 1.0) > 1e-6) and matches(got, expected * term, rtol, floor):
            raise Wrong(
                f"{_head(what)} {_is(what)} the answer times {name}: a factor too many. "
                f"Look for a stray `* {name}`.",
                "extra_factor",
            )
        for sign, word in ((1.0, "plus"), (-1.0, "minus")):
            if np.any(term != 0.0) and matches(got, expected + sign * term, rtol, floor):
                raise Wrong(
                    f"{_head(what)} {_is(what)} the answer {word} {name}: a term too "
                    f"many. Look for a stray `+ {name}` or `- {name}`.",
                    "added_term",
                )
    wrong = explain_difference(
        got, expected, summary=summary, at=at, rtol=rtol, atol=atol, batch=batch, what=what
    )
    if wrong.mistake == "other":
        wrong = (
            partly_right(got, expected, rtol, atol, what, at=at)
            or close_on_the_whole(got, expected, what)
            or wrong
        )
    if wrong.mistake == "other" and fallback is not None:
        wrong = fallback(got) or wrong
    raise wrong
