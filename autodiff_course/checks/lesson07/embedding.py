"""Exercise 7.3: dense gradients from an embedding lookup.

The answer is ``embedding_gradient(embedding, ids, upstream)``: the gradient of
``sum(upstream * embedding(ids))`` with respect to ``embedding.embeddings``, taken
with a tape through the lookup and converted from ``IndexedSlices`` into an
ordinary tensor shaped like the table.

Probes the check must draw (fresh on every call):

* ``keras.layers.Embedding(vocabulary, dimension)`` built by the check, with fresh
  table values, in three dtypes: float32, float64 (``dtype="float64"``) and
  ``mixed_float16`` (float32 table, float16 output and upstream);
* vocabularies of 1 to 12 rows and dimensions of 1 to 4 (a dimension of 1 in one
  probe, a vocabulary of 1 in another);
* ``ids`` (int32) of shapes ``(n,)``, ``(batch, n)`` and ``(batch, n, m)`` with
  ``batch = 1`` in one probe and ``n = 1`` in another, always with repeated ids
  (each row's gradient is the sum of its lookups), the first and the last id of the
  vocabulary, and at least one row never looked up (its gradient is 0);
* ``upstream`` of the shape ``ids.shape + (dimension,)`` in the layer's output
  dtype, values of both signs and never all equal (so the gradient of
  ``sum(embedding(ids))``, a forgotten upstream, is caught).

What it must verify:

* the result is a ``tf.Tensor``, not ``IndexedSlices`` (the dense conversion
  forgotten) and not a NumPy array; an ``AttributeError`` about ``IndexedSlices``
  and ``numpy`` raised by the answer is named (``.numpy()`` on the tape's result);
* its shape is the table's ``(vocabulary, dimension)`` (not the ``values`` of the
  slices, shaped like the lookups) and its dtype the table's (float32 under
  ``mixed_float16``, float64 for a float64 layer);
* its values against :func:`reference` (float64 sums of the upstream rows that
  each id picked), to the precision of the dtype; repeated ids summed, not
  overwritten (``tf.tensor_scatter_nd_update`` keeps one of them);
* the method: a tape produced it, from a gradient with respect to the table (the
  check observes a ``tape.gradient`` call whose source is the table variable), and
  it was not built by hand (``tf.math.unsorted_segment_sum`` or NumPy's
  ``np.add.at`` give the right numbers by another method).

The reference is NumPy's unbuffered ``np.add.at`` in float64; it never calls
TensorFlow.
"""

from __future__ import annotations

import numpy as np

from .temporary import announce

NUMBER, TITLE = "7.3", "dense gradients from an embedding lookup"


def reference(vocabulary, dimension, ids, upstream):
    """float64 gradient of ``sum(upstream * table[ids])`` w.r.t. ``table``, dense.

    ``ids`` is an integer array of any shape, ``upstream`` has shape
    ``ids.shape + (dimension,)``. Row ``i`` of the result is the sum of the upstream
    rows of every lookup of ``i`` (zero for a row never looked up).
    """
    ids = np.asarray(ids).reshape(-1)
    upstream = np.asarray(upstream, dtype=np.float64).reshape(-1, dimension)
    gradient = np.zeros((vocabulary, dimension))
    np.add.at(gradient, ids, upstream)
    return gradient


def embedding_gradient(answer):
    """TEMPORARY (see :mod:`.temporary`): runs the reference and the answer once; no verdict."""
    ids = np.array([[0, 3, 3], [1, 0, 3]])
    upstream = np.arange(12.0).reshape(2, 3, 2) - 5.5
    reference(5, 2, ids, upstream)

    def run_answer():
        import keras
        import tensorflow as tf

        embedding = keras.layers.Embedding(5, 2)
        embedding.build((None,))
        answer(embedding, tf.constant(ids, tf.int32), tf.constant(upstream, tf.float32))

    announce(NUMBER, TITLE, run_answer)
