"""Exercise 5.4: a batch_jacobian that stays right when examples interact."""

import functools
import re

import numpy as np

from ...checking import mistakes
from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import relative_to_largest
from .functions import batch_layer
from .functions import blocks
from .functions import dense


def sizes(rng):
    """x minus its batch mean, then tanh(. W + c): float32 with x (6 or 7, ins), y (., outs),
    float64 with x (2 or 3, 2, 1), y (., 1, 3) (a squeeze shows; a batch of one gives 0),
    then float32 with x (3 to 5, 2, 1), y (., outs): y's rank differs from x's, and the
    batch is larger than 2, so an axis counted from x's rank runs past x's axis of 2."""
    ins, outs = (int(k) for k in rng.choice(np.arange(2, 6), size=2, replace=False))
    return [
        ("float32", {"batch": int(rng.integers(6, 8)), "x_shape": (ins,), "y_shape": (outs,)}),
        ("float64", {"batch": int(rng.integers(2, 4)), "x_shape": (2, 1), "y_shape": (1, 3)}),
        ("float32", {"batch": int(rng.integers(3, 6)), "x_shape": (2, 1), "y_shape": (outs,)}),
    ]


def make(rng, dtype, s):
    shapes = (s["x_shape"], s["y_shape"])
    return dense(rng, dtype, {**s, "axis": 1 + len(s["y_shape"])}, *shapes, s["batch"])


def _taken(take):
    return lambda p: take(blocks(p, centred=True)).reshape(p.batch, *p.y_shape, *p.x_shape)


def _rank_two_only(p):
    full = blocks(p, centred=True).reshape(p.batch, *p.y_shape, p.batch, *p.x_shape)
    return np.stack([full[b, :, b] for b in range(p.batch)]) if len(p.y_shape) > 1 else None


OUT_OF_RANGE = re.compile(r"not in \[0, \d+\)|out of bounds|out of range", re.IGNORECASE)
mistakes.register(
    {
        "axis_from_wrong_rank": "an axis of the full Jacobian counted from the wrong tensor's rank",
        "first_axis_not_batch": "index b taken on y's first axis of full[b], not x's batch axis",
    }
)


FIRST_AXIS = (
    "tf.gather(full[b], b) without axis= (or full[b][b]) takes index b on the first axis "
    "of full[b], which is y's (size {outs}), not x's batch axis. In full[b], x's batch axis "
    "comes after all of y's example axes: tf.gather(full[b], b, axis=len(y.shape) - 1)."
)


def _from_the_wrong_rank(wrong, p):
    """An index past an axis's end: where y's and x's ranks differ, x's batch axis in the
    full Jacobian counted from x's rank (right only where the ranks agree); where the
    batch is larger than y's first axis, index b taken on that axis; else None."""
    if wrong.mistake != "raised" or not OUT_OF_RANGE.search(wrong.error):
        return None
    if len(p.y_shape) == len(p.x_shape):
        if p.batch <= p.y_shape[0]:
            return None
        why = "An index ran past the end of an axis: " + FIRST_AXIS.format(outs=p.y_shape[0])
        return wrong.explained(why, "first_axis_not_batch")
    y, x = (p.batch, *p.y_shape), tuple(p.x.shape)
    return wrong.explained(
        f"Here y {y} and x {x} have different ranks, and an index "
        "ran past the end of an axis: the position of x's batch axis was probably counted "
        "from x's rank (len(x.shape) - 1), which is right only when y and x have the same "
        "rank. The full Jacobian has shape y.shape + x.shape, so x's batch axis comes right "
        "after all of y's: axis len(y.shape) of tape.jacobian(y, x), and axis "
        "len(y.shape) - 1 of its slice full[b].",
        "axis_from_wrong_rank",
    )


_own = _taken(lambda k: np.stack([k[b, :, b] for b in range(len(k))]))
EXERCISE = spec.Exercise(
    number="5.4",
    title="A `batch_jacobian` that stays right",
    stars=2,
    minutes=10,
    harness=Function(
        "`true_batch_jacobian`",
        raised=_from_the_wrong_rank,
        arguments=functools.partial(batch_layer, centred=True),
        whole_batch="This layer mixes its batch's examples (it subtracts the batch mean): call "
        "it once on the whole x, and keep each example's own block of tape.jacobian(y, x).",
        vary=negated,
    ),
    probes=spec.Shaped(make, sizes, size_one=False),
    reference=_own,
    mistakes=(
        spec.Mistake(
            "batch_jacobian_sums",
            "These are batch_jacobian's column sums: this layer mixes examples; keep block b.",
            _taken(lambda k: k.sum(axis=0).transpose(1, 0, 2)),
            means="batch_jacobian's column sums of blocks where examples interact",
        ),
        spec.Mistake(
            "summed_rows",
            "Each row of blocks summed over x's batch axis (0 here): keep block b, b alone.",
            _taken(lambda k: k.sum(axis=2)),
            means="each row of blocks summed over the source's batch axis",
        ),
        spec.Mistake(
            "first_column",
            "You took example 0's inputs for every example: block b is d y[b] / d x[b].",
            _taken(lambda k: k[:, :, 0]),
            means="the blocks of the first example's inputs for every example",
        ),
        spec.Mistake(
            "first_row",
            "You took example 0's outputs for every example: block b is d y[b] / d x[b], "
            "so the row of blocks must follow b too.",
            _taken(lambda k: np.stack([k[0, :, b] for b in range(len(k))])),
            means="the blocks of the first example's outputs for every example",
        ),
        spec.Mistake(
            "other_block",
            "You kept block (b, b+1) of the full Jacobian: x's example b+1 against y's "
            "example b. Keep each example's own block, d y[b] / d x[b].",
            _taken(lambda k: np.stack([k[b, :, (b + 1) % len(k)] for b in range(len(k))])),
            means="another example's block for each example",
        ),
        spec.Mistake(
            "rank_two_only",
            "full[b, :, b] takes axis 2 for x's batch axis; with two axes per example it comes "
            "after all of y's (axis {axis}): tf.gather(full[b], b, axis=...) fits any rank.",
            _rank_two_only,
            means="code that works for one axis per example only",
        ),
        spec.Mistake(
            "diagonal_entries",
            "You took the diagonal of the full Jacobian as one matrix: single entries "
            "d y_i / d x_i, not blocks. Keep each example's whole block, d y[b] / d x[b], of "
            "shape (*y's example shape, *x's example shape).",
            lambda p: np.diag(blocks(p, centred=True).reshape(p.batch * np.prod(p.y_shape), -1)),
            means="the diagonal entries of the full Jacobian where its diagonal blocks belong",
        ),
    ),
    describe={"value": "each example's own Jacobian d y[b] / d x[b], in batch_jacobian's layout"},
    claim="Block b of the full Jacobian, d y[b] / d x[b], is example b's own Jacobian, which "
    "batch_jacobian gets wrong when examples interact",
    tolerance=relative_to_largest(_own),
)
true_batch_jacobian = EXERCISE.check
