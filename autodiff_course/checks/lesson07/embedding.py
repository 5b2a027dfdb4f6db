"""Exercise 7.3: dense gradients from an embedding lookup. The reference is ``np.add.at``
in float64: row ``i`` sums the upstream rows of every lookup of ``i``."""

from __future__ import annotations

import numpy as np

from ...checking import mistakes
from ...checking.answers import shape_of
from ...checking.keras_call import NUMPY_ON_SLICES
from ...checking.keras_call import Built
from ...checking.keras_call import dense_from_lookup
from ...checking.probes import upstream as draw_upstream
from ...checking.spec import Exercise
from ...checking.spec import Mistake
from ...checking.spec import Pattern
from ...checking.spec import Probe
from ...checking.spec import as_dtype
from ...checking.verdicts import Wrong
from . import WATCHED
from .scaled_step import Step

mistakes.register({"wrt_lookup_output": "differentiated with respect to the lookup's output"})


def _probe(rng, policy, vocabulary, dimension, shape, label, top=None) -> Probe:
    """Ids below ``top`` (the vocabulary by default): 0, top - 1 and a repeat among them."""
    top = vocabulary if top is None else top
    ids = rng.integers(0, top, size=shape).reshape(-1)
    if top > 2:  # a row never looked up
        ids[ids == int(rng.integers(1, top - 1))] = 0
    ids[:3] = [0, top - 1, ids[-1]][: ids.size]  # both ends, and a repeat
    out = "float16" if policy == "mixed_float16" else policy
    up = as_dtype(draw_upstream(rng, (*shape, dimension)), out)
    table = np.round(rng.uniform(-1, 1, (vocabulary, dimension)), 3)
    data = {"policy": policy, "ids": ids.reshape(shape), "table": table, "out": out}
    return Probe("float32" if out == "float16" else out, upstream=up, data=data, label=label)


def draw(rng) -> list:
    """float32, float64 and mixed_float16 Embedding layers with fresh tables; ids of shapes
    (batch, n), (n,), (1, n, 2) and (n, 1) with repeats, both ends of the vocabulary and a
    row never looked up; a dimension of 1, a vocabulary of 1; then a float32 table whose
    last two rows no id looks up; upstreams of both signs in the layer's output dtype."""
    d, n, extra = (int(k) for k in rng.integers([2, 3, 1], [5, 6, 4]))
    v = 2 * n + extra  # never as many rows as lookups: the slices' rows alone show
    return [
        _probe(rng, "float32", v, d, (2, n), "a float32 table"),
        _probe(rng, "float64", n + 4, 1, (n + 2,), "a float64 table of dimension 1"),
        _probe(rng, "mixed_float16", v + 1, d, (1, n, 2), "a mixed_float16 table, batch of 1"),
        _probe(rng, "float32", 1, d, (n, 1), "a float32 table of 1 row"),
        _probe(rng, "float32", n + 3, d, (n,), UNUSED_LAST_ROWS, top=n + 1),
    ]


UNUSED_LAST_ROWS = "a float32 table whose last 2 rows are never looked up"


def reference(p, upstream=None):
    gradient = np.zeros(np.shape(p.table))
    rows = np.reshape(p.upstream if upstream is None else upstream, (-1, gradient.shape[1]))
    np.add.at(gradient, p.ids.reshape(-1), rows)
    return gradient


def handed_over(layer, p) -> Built:
    """The arguments of a call: ``layer``, then the probe's ids and upstream."""
    import tensorflow as tf

    ids, up = tf.constant(p.ids, tf.int32), tf.constant(p.upstream, p.out)
    return Built((layer, ids, up), sources=[layer.embeddings])


def build(p) -> Built:
    import keras

    table = keras.initializers.Constant(p.table)  # cast to the table's dtype, as it stores it
    layer = keras.layers.Embedding(*np.shape(p.table), table, dtype=p.policy)
    layer.build((None,))
    return handed_over(layer, p)


def vary(p, built) -> tuple:
    """The first call's own layer again, looked up at its ids in reverse order with the
    upstream reversed and negated: an answer that cached its gradient per layer shows."""
    other = p.but(ids=p.ids.reshape(-1)[::-1].reshape(p.ids.shape), upstream=-p.upstream[::-1])
    return other, handed_over(built.arguments[0], other)


def read(value, p, built, log) -> dict:
    if shape_of(value) == np.shape(p.upstream) != np.shape(p.table):
        raise Wrong(
            f"Your function returned shape {np.shape(p.upstream)}, the lookup's output's, "
            f"not the table's {np.shape(p.table)}: a gradient has its source's shape, so "
            "differentiate with respect to the table, embedding.embeddings, not embedding(ids).",
            "wrt_lookup_output",
        )
    if shape_of(value) == (1, *np.shape(p.table)):
        raise Wrong(
            f"Your gradient has shape {(1, *np.shape(p.table))}: the table's gradient inside "
            "a list of one, as tape.gradient returns it for a list of sources (such as "
            "embedding.trainable_variables). Differentiate with respect to the table itself, "
            "embedding.embeddings, and return that one gradient.",
            "wrong_structure",
        )
    rows = int(np.max(p.ids)) + 1
    if shape_of(value) == (rows, p.table.shape[1]) != np.shape(p.table):
        raise Wrong(
            f"Your gradient has {rows} rows, one for each id up to the largest looked up, but "
            f"the table has {p.table.shape[0]}: a gradient has its source's shape, and the rows "
            "no id looks up get zeros. Take the number of rows from the table "
            "(embedding.embeddings.shape[0]), not from ids; tf.convert_to_tensor does it.",
            "rows_from_ids",
        )
    dtype = getattr(getattr(value, "dtype", None), "name", p.dtype)
    if dtype == p.out != p.dtype:
        raise Wrong(
            f"Your gradient is {dtype}, the dtype of the layer's output and of upstream, but "
            f"the table, embedding.embeddings, is {p.dtype}: a gradient has its source's "
            "dtype. Look up through the layer, embedding(ids): it casts the float32 rows to "
            f"{p.out}, and the tape casts their gradient back; a lookup of your own "
            "(tf.gather(embedding.embeddings, ids)) has no cast, so the upstream's dtype passes "
            "through. Return what the tape gives for the table as it is, converted with "
            "tf.convert_to_tensor, without a cast to upstream's dtype.",
            "wrong_dtype",
        )
    found = dense_from_lookup(value, "Your function", p.table.shape, p.dtype, p.ids.size)
    return {"value": found}


def _one_lookup_kept(got, p):
    ids, rows = p.ids.reshape(-1), np.reshape(p.upstream, (-1, got.shape[1]))
    repeated = [i for i in np.unique(ids) if np.sum(ids == i) > 1]
    others = np.delete(got, repeated, 0), np.delete(reference(p), repeated, 0)
    if not repeated or not np.allclose(*others):
        return None
    one = [any(np.allclose(got[i], rows[k]) for k in np.flatnonzero(ids == i)) for i in repeated]
    return {} if all(one) else None


EXERCISE = Exercise(
    number="7.3",
    title="Dense gradients from an embedding lookup",
    stars=1,
    minutes=10,
    harness=Step(
        "`embedding_gradient`",
        build=build,
        read=read,
        untaped=(
            "summed_by_hand",
            "The numbers are right, but no tape.gradient call with respect to the table "
            "produced them: record the lookup on a tape and convert what it returns.",
        ),
        errors=(NUMPY_ON_SLICES, WATCHED),
        nouns={"value": "your gradient"},
        vary=vary,
    ),
    probes=draw,
    reference=reference,
    mistakes=(
        Mistake(
            "forgot_upstream",
            "Each row counts its lookups, whatever the upstream: differentiate "
            "sum(upstream * embedding(ids)), or pass output_gradients=upstream.",
            lambda p: reference(p, np.ones_like(p.upstream)),
        ),
        Mistake(
            "mean_not_sum",
            "Your gradient is the right one divided by the number of entries of upstream * "
            "embedding(ids): you differentiated their mean (tf.reduce_mean), where the "
            "exercise asks for their sum. Use tf.reduce_sum, or pass output_gradients=upstream.",
            lambda p: reference(p) / np.size(p.upstream),
        ),
        Mistake(
            "mean_not_sum",
            "Your gradient is the right one divided by the number of lookups: a mean over the "
            "ids (tf.reduce_mean) where the exercise asks for the sum of upstream * "
            "embedding(ids). Use tf.reduce_sum, or pass output_gradients=upstream.",
            lambda p: reference(p) / np.size(p.ids),
        ),
        Pattern(
            "duplicates_not_summed",
            "A row looked up more than once holds one lookup's upstream, not their sum: the "
            "repeated ids overwrote each other. tf.convert_to_tensor adds them.",
            _one_lookup_kept,
            means="repeated ids overwrite each other instead of adding up",
        ),
        Pattern(
            "float32_not_float64",
            "Your gradient matches the float64 sums to float32's 7 digits only: a step ran in "
            "float32 (a cast, a float32 constant). Keep the table's dtype throughout.",
            lambda got, p: (
                {} if p.dtype == "float64" and np.allclose(got, reference(p), 1e-6, 1e-7) else None
            ),
        ),
    ),
    describe={"value": "the sum of the upstream rows of every lookup of each row"},
    claim="Your dense gradient matches float64 sums",
)
embedding_gradient = EXERCISE.check
