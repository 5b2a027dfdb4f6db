"""What every harness shares: the observation it hands the judge, the upstream-linearity
probe, and the statefulness probes (used by the harnesses of :mod:`.on_tape`,
:mod:`.function` and :mod:`.numpy_rule`).

A harness is written once per *kind* of answer. It owns calling the answer (errors
shown as the learner's, the time limit, global state left alone), reading what came
back into named parts, the method the exercise demands, and the mistakes any answer
of its kind can make, which it hands the judge as generated :class:`~.spec.Mistake`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from .judging import close_points
from .judging import describe_difference
from .judging import matches
from .spec import Mistake
from .verdicts import Wrong

# The one factor the upstream-linearity probe multiplies the upstream by: another sign,
# another size, and not a power of two (so that float rounding cannot fake linearity).
UPSTREAM_FACTOR = -1.75


@dataclass
class Observation:
    """What the answer gave at one probe: float64 ``parts`` by name, the ``log`` of how
    it differentiated (when observed), and ``again(factor)``, the gradient parts
    recomputed with the upstream times ``factor`` (when the answer has an upstream). A
    ``pending`` verdict (the gradient could not be computed) stands only if the parts
    read before it, such as the value, are right. A ``method`` verdict (the exercise asks
    for another way to compute it) waits for the exercise's own mistakes: the numbers of
    a declared mistake say more; it stands before any generic pattern."""

    parts: dict
    log: object = None
    again: Callable | None = None
    details: dict = field(default_factory=dict)
    pending: Wrong | None = None  # a verdict that stands once the parts read so far are right
    method: Wrong | None = None  # a method verdict: it waits for the exercise's own mistakes


class Harness:
    """The defaults of every harness; each kind overrides what it knows."""

    main = "value"
    nouns: dict = {}
    codes: dict = {}

    def noun(self, part: str) -> str:
        return self.nouns.get(part, f"your {part}")

    def fallback_code(self, part: str) -> str:
        return "other"

    def explained(self, case):
        """A verdict read from how the answer ran, for a result found wrong (stage 0)."""
        return None

    def generated(self, case) -> list:
        return []

    def diagnose(self, case):
        return None

    def statefulness(self, answer, seen, exercise) -> None:
        return None

    def after_earlier_calls(self, wrong, seen):
        """A better verdict than ``wrong`` from what the calls before it did, or None."""
        return None

    def verified(self, exercise, probes) -> list:
        return []

    def describe(self) -> str:
        return "any"


def forgot_upstream(case, transform=None) -> list:
    """The generated mistake of every rule with an upstream: it gives what the right rule
    gives for an upstream of 1, whatever the upstream is."""
    probe = case.probe
    if probe.upstream is None:
        return []
    ones = np.ones_like(np.asarray(probe.upstream, dtype=np.float64))
    hint = (
        f"{case.noun[:1].upper()}{case.noun[1:]} is what the right rule gives for an "
        "upstream of 1, whatever arrives from above: the rule ignores `upstream`. That is "
        "right only when the output itself is the target (upstream = 1); inside a chain "
        "the gradient must be the upstream times the local derivative."
    )
    return [
        Mistake(
            "forgot_upstream",
            hint,
            lambda p: case.exercise.expected(p.but(upstream=ones))[case.part],
            part=case.part,
        )
    ]


def reduced_gradient(case) -> list:
    """The right per-element values summed (or averaged) over the input and spread back."""
    if case.got.size < 2 or np.ptp(case.expected) == 0:
        return []
    found = []
    for word, total in (("summed", np.sum), ("averaged", np.mean)):
        found.append(
            Mistake(
                "reduced_gradient",
                f"{case.noun[:1].upper()}{case.noun[1:]} is one number at every element: the "
                f"right per-element values {word} over the whole input and spread back. Each "
                "element gets its own derivative: leave out the tf.reduce_sum / "
                "tf.reduce_mean.",
                lambda p, total=total: np.full(case.got.shape, total(case.expected)),
                part=case.part,
            )
        )
    return found


def upstream_linearity(case, transform=None, local_name: str = "") -> Wrong | None:
    """Does the rule scale with the upstream? With the upstream times
    :data:`UPSTREAM_FACTOR`, a rule ``g = T(upstream) * local`` must give
    ``T(factor * upstream) * local`` (``T`` the identity unless the exercise transforms
    the upstream, as a clip does). If it does not, the rule mishandles the upstream; if
    it does, the local derivative is what differs."""
    again = case.observation.again
    up = case.probe.upstream
    if again is None or up is None or np.shape(up) != case.got.shape:
        return None
    try:
        second = again(UPSTREAM_FACTOR)
    except Wrong:
        return None
    if second is None or case.part not in second:
        return None
    got2 = np.asarray(second[case.part], dtype=np.float64)
    if got2.shape != case.got.shape:
        return None
    transform = transform or (lambda u: u)
    up = np.asarray(up, dtype=np.float64)
    t1, t2 = transform(up), transform(UPSTREAM_FACTOR * up)
    with np.errstate(all="ignore"):
        local1, local2 = case.got / t1, got2 / t2
    usable = (t1 != 0) & (t2 != 0) & np.isfinite(local1) & np.isfinite(local2)
    if not usable.any():
        return None
    consistent = close_points(local2[usable], local1[usable], 1e-4, 1e-12)
    where = case.at
    if not np.all(consistent):
        bad = np.flatnonzero(~consistent)[0]
        point = (
            f"at x = {np.asarray(where)[usable].ravel()[bad]:.6g}"
            if where is not None
            else f"at index {int(np.flatnonzero(usable)[bad])}"
        )
        ratio = got2[usable].ravel()[bad] / case.got[usable].ravel()[bad]
        should = (t2 / t1)[usable].ravel()[bad]
        return Wrong(
            f"{case.noun[:1].upper()}{case.noun[1:]} does not scale with the upstream: run "
            f"again with the upstream times {UPSTREAM_FACTOR:g}, {point} it changed by a "
            f"factor of {ratio:.6g} where it should change by {should:.6g}. The rule must "
            "return the upstream times a local derivative that depends on the input only: "
            "do not square, clip or otherwise transform the upstream"
            + (" beyond what the exercise asks." if transform(np.array(9.0)) != 9.0 else "."),
            "upstream_not_linear",
        )
    expected_local = case.expected / t1
    local = np.where(usable, local1, np.nan)
    name = f" is not {local_name}" if local_name else " is wrong"
    return Wrong(
        f"Your rule handles the upstream right (its result scales with it), but the local "
        f"derivative it multiplies by{name}.",
        "wrong_local_derivative",
        point=describe_difference(
            local, expected_local, where, case.tolerance.rtol, case.tolerance.atol
        ),
    )


def upstreams_seen(probes) -> str:
    """The praise's words for the upstreams the probes carried."""
    ups = np.concatenate([np.ravel(p.upstream) for p in probes if p.upstream is not None])
    if ups.size == 0:
        return "with no upstream"
    signs = "both signs" if (ups > 0).any() and (ups < 0).any() else "one sign"
    ones = "+-1 among them" if np.any(np.abs(ups) == 1) else "never +-1"
    return f"with upstreams of {signs}, {ones}" + (", and 0" if np.any(ups == 0) else "")


def keeps_state(what: str, how: str) -> Wrong:
    return Wrong(
        f"{what} is right when called alone, but {how}: it keeps state between calls (a "
        "global variable, a value cached from an earlier call, an object shared by every "
        "instance). Compute everything from the call's own arguments (a closure over its "
        "own inputs).",
        "keeps_state",
    )


def same_parts(first: dict, second: dict, rtol: float, atol: float) -> bool:
    return all(
        part in second
        and np.shape(second[part]) == np.shape(values)
        and matches(second[part], values, rtol, atol)
        for part, values in first.items()
    )
