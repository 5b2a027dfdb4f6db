"""The tanh layers lesson 05's checks hand to the answers, fresh for each probe, in
TensorFlow, and their Jacobians in float64 from d tanh(A v + c) / dv = diag(1 - y**2) A."""

import numpy as np

from ...checking.probes import signed
from ...checking.probes import tensor
from ...checking.spec import Probe
from ...checking.spec import as_dtype


def dense(rng, dtype, sizes: dict, x_shape: tuple, y_shape: tuple, batch=None) -> Probe:
    """A probe for y = tanh(A vec(x) + c) of ``y_shape`` (per example, with a ``batch``)."""
    outs, ins = int(np.prod(y_shape)), int(np.prod(x_shape))
    a = as_dtype(signed(rng, (outs, ins), 0.2, 1.5), dtype)
    c = as_dtype(signed(rng, outs, 0.05, 0.5), dtype)
    x = as_dtype(signed(rng, ((batch,) if batch else ()) + tuple(x_shape), 0.1, 1.2), dtype)
    data = {"A": a, "c": c, "x_shape": tuple(x_shape), "y_shape": tuple(y_shape), **sizes}
    y = f"each example's y of {tuple(y_shape)}" if batch else f"y of {tuple(y_shape)}"
    return Probe(dtype, x, data=data, label=f"a {dtype} x of shape {x.shape}, {y}")


def tanh_jacobian(a, c, v):
    y = np.tanh(a @ v + c)
    return (1.0 - y**2)[:, None] * a


def function(p):
    """``(f, x)`` for an unbatched probe of :func:`dense`: one einsum takes A, laid out as
    y.shape + x.shape, straight to y's shape (fewer operations for every forward or
    backward pass; an x of another shape but the same size is reshaped first)."""
    import tensorflow as tf

    a = tensor(p.A.reshape(p.y_shape + p.x_shape), p.dtype)
    c = tensor(p.c.reshape(p.y_shape), p.dtype)
    letters = "abcdefgh"
    ys, xs = letters[: len(p.y_shape)], letters[len(p.y_shape) :][: len(p.x_shape)]
    product = f"{ys}{xs},{xs}->{ys}"

    def f(x):
        x = x if tuple(x.shape) == p.x_shape else tf.reshape(x, p.x_shape)
        return tf.tanh(tf.einsum(product, a, x) + c)

    return f, tensor(p.x, p.dtype)


def jacobian(p):
    return tanh_jacobian(p.A, p.c, p.x.reshape(-1)).reshape(p.y_shape + p.x_shape)


def blocks(p, centred: bool = False):
    """The full Jacobian of a batched probe as (batch, outs, batch, ins) blocks, examples
    flattened; ``centred``: x's batch mean subtracted first (examples interact)."""
    flat = p.x.reshape(p.x.shape[0], -1)
    mixing = np.eye(len(flat)) - (1.0 / len(flat) if centred else 0.0)  # d x_used / d x
    local = np.stack([tanh_jacobian(p.A, p.c, v) for v in flat - centred * flat.mean(axis=0)])
    return local[:, :, None, :] * mixing[:, None, :, None]


def batch_layer(p, centred: bool = False):
    """``(layer, x)`` for a batched probe of :func:`dense`, in TensorFlow."""
    import tensorflow as tf

    a_t, c = tensor(p.A.T, p.dtype), tensor(p.c, p.dtype)

    def layer(x):
        flat = x if x.shape.rank == 2 else tf.reshape(x, [x.shape[0], -1])
        if centred:  # minus the batch mean, as one product to differentiate
            flat = tensor(np.eye(len(flat)) - 1.0 / len(flat), p.dtype) @ flat
        y = tf.tanh(flat @ a_t + c)
        return y if len(p.y_shape) == 1 else tf.reshape(y, [x.shape[0], *p.y_shape])

    return layer, tensor(p.x, p.dtype)
