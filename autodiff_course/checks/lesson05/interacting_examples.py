"""Exercise 5.4: a batch_jacobian that stays right when examples interact."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import signed
from ...checking import sizes as draw_sizes
from ...checking import why_none
from .judging import _judge
from .judging import _known
from .judging import _shape_mistakes
from .shared import _call
from .shared import _close
from .shared import _dtypes
from .shared import _raise_if_zeros
from .shared import _require_shape
from .shared import _returned
from .shared import _tensor
from .shared import _tf


def _centred_layer(weights, offset, out_shape, dtype):
    """Subtract the batch mean of the flattened examples, then tanh(. W + c), reshaped."""
    tf = _tf()
    w, c = _tensor(weights, dtype), _tensor(offset, dtype)

    def layer(x):
        batch = x.shape[0]
        flat = tf.reshape(x, [batch, -1])
        centred = flat - tf.reduce_mean(flat, axis=0, keepdims=True)
        return tf.reshape(tf.tanh(centred @ w + c), [batch, *out_shape])

    return layer


def _centred_blocks(weights, offset, xs):
    """float64 full Jacobian of the centred layer as (batch, O, batch, I) blocks."""
    batch = xs.shape[0]
    flat = xs.reshape(batch, -1)
    y = np.tanh((flat - flat.mean(axis=0, keepdims=True)) @ weights + offset)
    local = (1.0 - y**2)[:, :, None] * weights.T[None, :, :]  # (batch, O, I)
    mixing = np.eye(batch) - 1.0 / batch  # d centred[b'] / d x[b]
    return local[:, :, None, :] * mixing[:, None, :, None]


BATCH_JACOBIAN_SUMS_HINT = (
    "These are batch_jacobian's numbers: for each example, the sum over the batch of the "
    "blocks in its column. This layer subtracts the batch mean, so examples interact and "
    "those sums are not the diagonal blocks. Compute the full tape.jacobian and keep the "
    "block of example b's outputs against example b's inputs."
)


@exercise("5.4", "a batch_jacobian that stays right when examples interact")
def true_batch_jacobian(answer):
    """Each example's own Jacobian d y[b] / d x[b], for a layer that mixes examples.

    Probes (fresh each call): a layer that subtracts the batch mean, so that
    batch_jacobian's column sums differ from the diagonal blocks; in float32 with
    one axis per example (x (batch, ins), y (batch, outs), ins != outs) and in
    float64 with two (x (batch, 2, c), y (batch, p, 2)); two different batch
    sizes between 2 and 5 (a typed-in range fails), sizes and weights fresh.
    """
    rng = fresh_rng("5.4")
    batches = draw_sizes(rng, 2, 2, 5)
    ins, outs = (
        int(v)
        for v in rng.choice([k for k in range(2, 6) if k != batches[0]], size=2, replace=False)
    )
    probes = [
        (_dtypes()[0], batches[0], (ins,), (outs,)),
        (_dtypes()[1], batches[1], (2, int(rng.integers(2, 4))), (int(rng.integers(2, 4)), 2)),
    ]
    for index, (dtype, batch, in_shape, out_shape) in enumerate(probes):
        size_in, size_out = int(np.prod(in_shape)), int(np.prod(out_shape))
        weights = signed(rng, (size_in, size_out), 0.2, 1.2)
        offset = signed(rng, size_out, 0.05, 0.5)
        xs = signed(rng, (batch,) + in_shape, 0.1, 1.5)
        blocks = _centred_blocks(weights, offset, xs)  # (B, O, B, I)
        own = np.stack([blocks[b, :, b, :] for b in range(batch)])
        want = (batch,) + out_shape + in_shape
        layer = _centred_layer(weights, offset, out_shape, dtype)
        value, log, wrong = _call(answer, layer, _tensor(xs, dtype))
        if wrong is not None and wrong.mistake == "raised" and why_none(log) is None:
            text = wrong.hint.lower()
            past_batch = "of dimension 0 out of bounds" in text or "is not in [0," in text
            if index == 1 and not past_batch and "out of bounds" in text:
                raise Wrong(
                    f"This probe has two axes per example (x "
                    f"{(batch,) + in_shape}, y {(batch,) + out_shape}), and your "
                    f"indexing assumed one: in the full Jacobian the source's batch "
                    f"axis comes after all of y's axes (axis {len(out_shape) + 1}). "
                    f"tf.gather(full[b], b, axis=...) or a reshape to (batch, outs, "
                    f"batch, ins) works for any rank. " + wrong.hint,
                    "rank_two_only",
                )
            if past_batch or "out of bounds" in text or "out of range" in text:
                raise Wrong(
                    f"An index ran past the batch: this probe's batch has "
                    f"{batch} examples. Read the batch size from x.shape[0] "
                    f"instead of typing it in. " + wrong.hint,
                    "hard_coded_batch",
                )
        numbers = _returned(value, log, wrong, dtype)
        shape = numbers.shape
        if shape == (batch,) + out_shape + (batch,) + in_shape:
            raise Wrong(
                f"Shape {shape} is the full tape.jacobian, y.shape + x.shape. Keep "
                f"only each example's own block, d y[b] / d x[b]: the result has "
                f"shape {want}.",
                "returned_full_jacobian",
            )
        if len(shape) >= 1 and shape[0] != batch and shape[1:] == want[1:]:
            raise Wrong(
                f"Your result holds {shape[0]} examples, but this probe's batch "
                f"has {batch}. Read the batch size from x.shape[0] instead of "
                f"typing it in.",
                "hard_coded_batch",
            )
        if shape == (batch,) + in_shape + out_shape and in_shape != out_shape:
            raise Wrong(
                f"Shape {shape} is (batch, x's axes, y's axes): each block is "
                f"transposed. Rows belong to outputs: (batch,) + y.shape[1:] + "
                f"x.shape[1:] = {want}.",
                "transposed",
            )
        full = blocks.reshape((batch,) + out_shape + (batch,) + in_shape)
        position_two = (
            np.stack([full[b, :, b] for b in range(batch)])
            if batch <= full.shape[2]
            else np.zeros(0)
        )
        if index == 1 and shape == position_two.shape and _close(numbers, position_two, dtype):
            raise Wrong(
                f"This probe has two axes per example (x {(batch,) + in_shape}, y "
                f"{(batch,) + out_shape}), and your indexing full[b, :, b, ...] "
                f"took the source's batch axis to be axis 2. In the full Jacobian "
                f"it comes after all of y's axes (axis {len(out_shape) + 1}): "
                f"tf.gather(full[b], b, axis=...) or a reshape to (batch, outs, "
                f"batch, ins) works for any rank.",
                "rank_two_only",
            )
        if shape != want and index == 1:
            raise Wrong(
                f"This probe has two axes per example (x {(batch,) + in_shape}, y "
                f"{(batch,) + out_shape}), and your result has shape {shape} "
                f"instead of {want}. In the full Jacobian the source's batch axis "
                f"comes after all of y's axes (axis {len(out_shape) + 1}), not "
                f"always at axis 2: tf.gather(full[b], b, axis=...) or a reshape to "
                f"(batch, outs, batch, ins) works for any rank.",
                "rank_two_only",
            )
        _require_shape(numbers, want)
        _raise_if_zeros(numbers, log)
        scale = float(np.max(np.abs(own)))
        used_full = any(call.kind == "jacobian" for call in log.calls)
        if np.max(np.abs(numbers)) <= 1e-3 * scale and (np.any(numbers != 0.0) or used_full):
            raise Wrong(
                "Every block is (close to) zero. That is what summing each row of "
                "blocks over the source's batch axis gives here: this layer "
                "subtracts the batch mean, so d y[b] / d x[b'] summed over b' "
                "cancels. Keep the block of example b against example b alone.",
                "summed_rows",
            )
        _known(
            numbers.reshape(batch, size_out, size_in),
            own,
            dtype,
            [
                (
                    "batch_jacobian_sums",
                    BATCH_JACOBIAN_SUMS_HINT,
                    blocks.sum(axis=0).transpose(1, 0, 2),
                )
            ],
        )
        _shape_mistakes(
            numbers,
            own.reshape(want),
            axis=0,
            slice_name="example's block",
            varies="block b is example b's own Jacobian, at its own input",
        )
        _judge(
            numbers.reshape(batch, size_out, size_in),
            own,
            dtype,
            log=log,
            summary="Not each example's own Jacobian d y[b] / d x[b].",
            known=[
                (
                    "batch_jacobian_sums",
                    BATCH_JACOBIAN_SUMS_HINT,
                    blocks.sum(axis=0).transpose(1, 0, 2),
                ),
                (
                    "summed_rows",
                    "You summed each row of blocks (over the source's batch axis): that "
                    "adds the cross-example terms to each example's own block. Keep the "
                    "block of example b against example b alone.",
                    blocks.sum(axis=2),
                ),
                (
                    "first_column",
                    "You took the blocks of example 0's inputs for every example. Block b "
                    "is d y[b] / d x[b]: the same b twice.",
                    blocks[:, :, 0, :],
                ),
            ],
            repeated=(
                0,
                "example's block",
                "block b is example b's own Jacobian, at its own input",
            ),
        )
    return (
        f"Checked on a layer that subtracts the batch mean (batches of {batches[0]} "
        f"and {batches[1]}, one and two axes per example, float32 and float64): block "
        f"b of the full Jacobian, d y[b] / d x[b], is example b's own Jacobian, which "
        f"batch_jacobian gets wrong here."
    )
