"""Jacobians without a vectorized trace per call, while the check runs an answer
(lesson 05 on; used by :mod:`.function`).

TensorFlow's eager ``tape.jacobian`` and ``batch_jacobian`` trace and vectorize a new
tf.function on every call (pfor), a quarter of a second or more each, and a check calls
the answer several times. Inside :func:`jacobians_row_by_row` they compute the same
gradients of the same recording, one ``tape.gradient`` call per row.
"""

from __future__ import annotations

import contextlib

_JACOBIAN_OPTIONS = ("unconnected_gradients", "parallel_iterations", "experimental_use_pfor")


@contextlib.contextmanager
def jacobians_row_by_row():
    """While the block runs, an eager ``tape.jacobian`` or ``batch_jacobian`` computes its
    rows one ``tape.gradient`` call at a time (:func:`_rows`) instead of tracing a new
    vectorized tf.function on every call: the same gradients of the same recording, to
    the last bit, without the quarter of a second each trace costs. So that a tape made without
    ``persistent=True`` can serve every row, its record is kept like a persistent one's
    while it behaves as the learner made it (released after its first gradient or
    Jacobian, as before). A call TensorFlow would refuse, or one made inside a
    non-persistent tape's own block, runs as written."""
    from tensorflow.python.eager import backprop
    from tensorflow.python.eager import context

    tape_class = backprop.GradientTape
    names = ("jacobian", "batch_jacobian", "_push_tape")
    saved = {name: getattr(tape_class, name) for name in names}

    def push(self):
        if self._tape is not None or self._persistent:
            return saved["_push_tape"](self)
        self._persistent = True  # the record kept for every row
        try:
            saved["_push_tape"](self)
        finally:
            self._persistent = False
        self._rows_replayable = True
        return None

    def row_by_row(method, batch):
        def run(self, target, sources, *args, **kwargs):
            options = dict(zip(_JACOBIAN_OPTIONS, args), **kwargs)
            shape = getattr(target, "shape", None)
            replayable = self._persistent or (
                getattr(self, "_rows_replayable", False) and not self._recording
            )
            usable = (
                options.get("experimental_use_pfor", True)
                and context.executing_eagerly()
                and self._tape is not None
                and replayable
                and getattr(target, "dtype", None) is not None
                and target.dtype.is_floating
                and shape.is_fully_defined()
                and shape.num_elements() > 0
                and (not batch or _batched(shape, sources))
            )
            if not usable:
                return method(self, target, sources, *args, **kwargs)
            persistent, self._persistent = self._persistent, True
            unconnected = options.get("unconnected_gradients", "none")
            try:
                return _rows(self, target, sources, unconnected, batch)
            finally:
                self._persistent = persistent
                if not persistent and self._tape is not None:
                    self._watched_variables = self._tape.watched_variables()
                    self._tape = None

        return run

    tape_class._push_tape = push
    for kind in names[:2]:
        setattr(tape_class, kind, row_by_row(saved[kind], kind == "batch_jacobian"))
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(tape_class, name, method)


def _batched(shape, source) -> bool:
    """What ``batch_jacobian`` accepts: a target and a source of rank 2 or more, with
    the same batch size."""
    source_shape = getattr(source, "shape", None)
    return (
        shape.rank >= 2
        and source_shape is not None
        and source_shape.rank is not None
        and source_shape.rank >= 2
        and source_shape[0] == shape[0]
    )


def _rows(tape, target, sources, unconnected, batch: bool):
    """``tape.jacobian(target, sources)`` (``batch``: ``batch_jacobian``), in its layout,
    from one ``tape.gradient`` call per entry of the target (per entry of one example's,
    for ``batch``), its upstream the unit vector of that entry (in every example)."""
    import tensorflow as tf

    shape = target.shape
    examples = int(shape[0]) if batch else 1
    count = shape.num_elements() // examples
    flat = [sources] if batch else tf.nest.flatten(sources)
    rows = []
    for i in range(count):
        unit = tf.one_hot(i, count, dtype=target.dtype)
        unit = tf.reshape(tf.tile(unit[None], [examples, 1]) if batch else unit, shape)
        found = tape.gradient(
            target, flat, output_gradients=unit, unconnected_gradients=unconnected
        )
        rows.append([None if g is None else tf.convert_to_tensor(g) for g in found])
    if batch:
        source = flat[0]
        layout = [*shape, *source.shape[1:]]
        if rows[0][0] is None:
            return tf.zeros(layout, target.dtype)
        stacked = tf.reshape(tf.stack([row[0] for row in rows]), [count, examples, -1])
        return tf.reshape(tf.transpose(stacked, [1, 0, 2]), layout)
    found = [
        None
        if rows[0][j] is None
        else tf.reshape(tf.stack([row[j] for row in rows]), [*shape, *source.shape])
        for j, source in enumerate(flat)
    ]
    return tf.nest.pack_sequence_as(sources, found)
