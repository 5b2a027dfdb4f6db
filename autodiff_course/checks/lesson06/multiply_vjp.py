"""Exercise 6.2: the vector-Jacobian rule of broadcasting multiply."""

from __future__ import annotations

from itertools import product

import numpy as np

from ...checking.numpy_rule import NumpyRule
from ...checking.numpy_rule import pair_probes
from ...checking.numpy_rule import sum_of_terms
from ...checking.probes import sizes
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern

OTHER = {"grad_a": ("a", "b"), "grad_b": ("b", "a")}  # each gradient: its input, the other


def draw(rng) -> list:
    """Axis sizes fresh and distinct (2 to 6), so a sum over the wrong axis changes the
    shape: a table times a row first (an added axis; a pair in the wrong order shows on
    its shapes), a column times a row, a scalar, equal shapes, a stack of tables times a
    column, size-1 axes on both sides, two (1, n) rows, and a row times a column in
    float32. Values of both signs; an upstream of both signs, never 1."""
    p, m, n = sizes(rng, 3)
    plan = [
        ("a table times a row", (m, n), (n,), "float64"),
        ("a column times a row", (m, 1), (1, n), "float64"),
        ("a scalar times a table", (), (m, n), "float64"),
        ("two arrays of equal shape", (m, n), (m, n), "float64"),
        ("a stack of tables times a column", (p, m, n), (m, 1), "float64"),
        ("size-1 axes on both sides", (1, m, 1), (p, 1, n), "float64"),
        ("two rows of one example", (1, n), (1, n), "float64"),
        ("a row times a column, in float32", (n,), (m, 1), "float32"),
    ]
    return pair_probes(rng, plan, np.broadcast_shapes)


def collect(up, factor, shape):
    """What each entry of an input of ``shape`` collects: ``up * factor`` summed over every
    output entry it took part in (the definition, as a scatter-add, not the recipe)."""
    index = np.broadcast_to(np.arange(int(np.prod(shape))).reshape(shape), np.shape(up))
    terms = np.broadcast_to(np.asarray(up, dtype=np.float64) * factor, np.shape(up))
    return np.bincount(index.ravel(), terms.ravel(), int(np.prod(shape))).reshape(shape)


def _gradient(part, factor=lambda p, own, other: other, reduce=None):
    def gives(p):
        own, other = (getattr(p, name) for name in OTHER[part])
        total = collect(p.upstream, factor(p, own, other), np.shape(own))
        uses = collect(np.ones_like(p.upstream), 1.0, np.shape(own))
        if reduce is None:
            return total
        return total / uses if np.any(uses > 1) else None  # a mean over no axis is the sum

    return gives


def _reference(p):
    return {part: _gradient(part)(p) for part in OTHER}


def _trailing_summed(part):
    """``upstream * other`` with the axes broadcasting added summed from the end (axis=-1)
    instead of the front, then the size-1 axes summed: another shape (None where no axis
    was added)."""
    own, other = OTHER[part]

    def gives(p):
        shape = np.shape(getattr(p, own))
        terms = np.asarray(p.upstream, dtype=np.float64) * getattr(p, other)
        if terms.ndim == len(shape):
            return None
        while terms.ndim > len(shape):
            terms = terms.sum(axis=-1)
        for axis, size in enumerate(shape):
            if size == 1 and terms.shape[axis] != 1:
                terms = terms.sum(axis=axis, keepdims=True)
        return None if terms.shape == shape else terms

    return gives


def _summed_first(part):
    """The upstream summed back to the input's shape first, then multiplied by the other
    input and summed back again: sum(upstream) * other, not sum(upstream * other)."""
    own, other = OTHER[part]

    def gives(p):
        shape = np.shape(getattr(p, own))
        first = collect(p.upstream, 1.0, shape)
        return collect(np.broadcast_to(first, np.shape(p.upstream)), getattr(p, other), shape)

    return gives


def _summed_then_multiplied(part):
    """The upstream summed back to the input's shape first, then multiplied by the other
    input, which broadcasts the product back to the output's shape (None where it has the
    input's shape: there the rule is right)."""
    own, other = OTHER[part]

    def gives(p):
        shape = np.shape(getattr(p, own))
        product = collect(p.upstream, 1.0, shape) * getattr(p, other)
        return None if product.shape == shape else product

    return gives


def _count(n: int, noun: str, plural: str) -> str:
    return f"{n} {noun if n == 1 else plural}"


def _axes_left(part):
    """A result of neither the input's shape nor the output's, but of one on the way from
    the output's to the input's: some of the axes broadcasting added (at the front) or
    stretched (from size 1) summed back, others left. The fields say which."""
    own = OTHER[part][0]

    def find(got, p):
        shape, out = np.shape(getattr(p, own)), np.shape(p.upstream)
        lead = len(out) - len(shape)
        stretched = [i for i, size in enumerate(shape) if size == 1 and out[lead + i] != 1]
        if got.shape in (shape, out):
            return None
        for kept, wide in product(
            product((0, 1), repeat=lead), product((0, 1), repeat=len(stretched))
        ):
            widened = [i for i, w in zip(stretched, wide) if w]
            on_the_way = tuple(out[k] for k in range(lead) if kept[k]) + tuple(
                out[lead + i] if i in widened else size for i, size in enumerate(shape)
            )
            if on_the_way == got.shape:
                break
        else:
            kept, widened = (), []
            if not (lead or stretched) or not _summed_from(got.shape, out):
                return None
        did = [f"adding {_count(lead, 'leading axis', 'leading axes')}"] if lead else []
        did += [f"stretching its axis {i} from size 1 to {out[lead + i]}" for i in stretched]
        left, advice = [], []
        if not kept and not widened:  # summed over axes broadcasting did not add or stretch
            needed = [f"the first {_count(lead, 'axis', 'axes')}"] if lead else []
            needed += [f"axis {lead + i} with keepdims=True" for i in stretched]
            left.append("the axes you summed are not those")
            advice.append(f"sum over {' and '.join(needed)} of the output, and no other")
        if sum(kept):
            summed, kept_count = lead - sum(kept), sum(kept)
            was, kept_is = "was" if summed < 2 else "were", "is" if kept_count == 1 else "are"
            left.append(
                "the added axis was not summed"
                if lead == 1
                else f"{summed or 'none'} of the {lead} added axes {was} summed, {kept_count} "
                f"{kept_is} left"
            )
            advice.append(
                f"sum over axis 0 as long as the rank is above that of {own} (a `while` loop: "
                "an `if`, or one sum, removes one axis only)"
            )
        left += [f"axis {i} of {own} (size 1) is still {out[lead + i]} long" for i in widened]
        if widened:
            advice.append(f"sum over each axis where {own} has size 1, with keepdims=True")
        return {
            "got_shape": got.shape,
            "own_shape": shape,
            "out_shape": out,
            "did": " and ".join(did),
            "left": "; ".join(left),
            "advice": ", then ".join(advice),
        }

    return find


def _summed_from(shape, out) -> bool:
    """``shape`` is ``out`` with some axes summed away (or kept at size 1)."""
    rest = list(out)
    for size in shape:
        while rest and rest[0] != size and size != 1:
            rest.pop(0)
        if not rest:
            return False
        rest.pop(0)
    return True


def _picked(part):
    """Every entry is one term ``upstream * other`` of the output, where an entry of the
    input took part in several: terms picked (np.resize, a slice, ``[0]``), not summed."""
    own, other = OTHER[part]

    def find(got, p):
        terms = (np.asarray(p.upstream, dtype=np.float64) * getattr(p, other)).ravel()
        if got.shape != np.shape(getattr(p, own)):
            return None  # its hint says the shape is right
        if terms.size == np.size(getattr(p, own)) or got.size == 0:
            return None  # nothing was broadcast: no terms to add
        close = np.isclose(got.ravel()[:, None], terms[None, :], rtol=1e-5, atol=1e-12)
        return {} if close.any(axis=1).all() else None

    return find


def _mistakes(part):
    own, other = OTHER[part]
    return (
        Pattern(
            "picked_not_summed",
            f"Your {part} has the shape of {own}, but each entry is one term upstream * "
            f"{other} of the output, picked (as np.resize, a slice or [0] pick them): an entry "
            f"of {own} that broadcasting used several times collects the sum of all its terms. "
            "Sum over the axes broadcasting added or stretched.",
            _picked(part),
            part=part,
            means="entries of the broadcast product picked (np.resize, a slice), not summed",
        ),
        Mistake(
            "swapped_operands",
            f"Your {part} uses its own input: the gradient of {own} is upstream times {other} "
            f"(d(a*b)/d{own} = {other}), summed back to the shape of {own}.",
            _gradient(part, lambda p, own, other: own),
            part=part,
            means="each input's gradient computed with its own value, not the other's",
        ),
        Mistake(
            "forgot_local_derivative",
            f"Your {part} is the upstream summed back without the local derivative: multiply "
            f"it by {other} first.",
            _gradient(part, lambda p, own, other: 1.0),
            part=part,
        ),
        Mistake(
            "summed_trailing_axes",
            f"Your {part} summed the wrong axes away: broadcasting lines shapes up from the "
            f"right and adds the missing axes at the front, so sum upstream * {other} over the "
            "leading axes (axis=0, until the rank is that of "
            f"{own}), not the trailing ones (axis=-1); then over the axes where {own} has size "
            "1, with keepdims=True.",
            _trailing_summed(part),
            part=part,
            means="the axes broadcasting added summed from the end instead of the front",
        ),
        Mistake(
            "summed_before_multiplying",
            f"Your {part} sums the upstream back to the shape of {own} first and multiplies by "
            f"{other} afterwards: sum(upstream) * {other} is not sum(upstream * {other}). "
            f"Multiply the upstream by {other} first, at the output's shape, then sum back "
            f"to the shape of {own}.",
            _summed_first(part),
            part=part,
            means="the upstream summed back before it is multiplied by the local derivative",
        ),
        Mistake(
            "summed_before_multiplying",
            f"Your {part} has the output's shape: you summed the upstream back to the shape "
            f"of {own} first and multiplied by {other} afterwards, which broadcast the product "
            f"out to the output's shape again. The order is the other way round: multiply the "
            f"upstream by {other} first, at the output's shape, then sum the product back to "
            f"the shape of {own} (sum(upstream * {other}); summed back in your order, it would "
            f"be sum(upstream) * {other}, other numbers).",
            _summed_then_multiplied(part),
            part=part,
        ),
        Pattern(
            "partly_summed_back",
            f"Your {part} has shape {{got_shape}}, not the shape of {own}, {{own_shape}}: "
            f"broadcasting took {own} to the output's shape {{out_shape}}, {{did}}, and every "
            "axis it added or stretched must be summed back. In yours, {left}: {advice}.",
            _axes_left(part),
            part=part,
            means="some of the axes broadcasting added or stretched summed back, others left",
        ),
        Mistake(
            "mean_not_sum",
            f"Your {part} averages over the broadcast axes: each entry of {own} was used "
            "several times, and its gradient is the sum over those uses, not their mean.",
            _gradient(part, reduce="mean"),
            part=part,
        ),
    )


EXERCISE = Exercise(
    number="6.2",
    title="The multiply rule, with broadcasting",
    stars=2,
    minutes=10,
    harness=NumpyRule(
        "`multiply_vjp`",
        inputs=("a", "b"),
        gradients=("grad_a", "grad_b"),
        local={g: f"{o}, summed back to {i}'s shape" for g, (i, o) in OTHER.items()},
        fix="build new arrays instead: g = upstream * b, not upstream *= b",
    ),
    probes=draw,
    reference=_reference,
    mistakes=_mistakes("grad_a") + _mistakes("grad_b"),
    describe={g: f"upstream * {o}, summed back to the shape of {i}" for g, (i, o) in OTHER.items()},
    claim="grad_a = upstream * b and grad_b = upstream * a, each summed back to its input's "
    "shape, for a table times a row, a column times a row, a scalar, equal shapes, added "
    "leading axes and size-1 axes on both sides",
    tolerance=sum_of_terms(_reference),
)
multiply_vjp = EXERCISE.check
