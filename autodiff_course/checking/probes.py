"""Probe points for the checks: fixed boundaries plus fresh points every call.

An answer that hard-codes the numbers it saw in the lesson, or that is right on
one tail only, must fail. So a check probes

* every boundary and cross-over the lesson names (the ``fixed`` points of a
  :class:`~.spec.Points`, listed in the check's docstring), and
* points drawn fresh on every call from a generator seeded by the exercise and
  a per-exercise counter: different each time the check runs, yet the same in
  every fresh kernel, so saved notebook outputs stay deterministic.
"""

from __future__ import annotations

import itertools
import os
import zlib

import numpy as np

_counters: dict[str, itertools.count] = {}


def restart_fresh_draws() -> None:
    """Make the next call of every check draw as the first call in a new process does
    (the test suite does it before each test module, whatever ran before it there)."""
    _counters.clear()


def fresh_rng(exercise: str) -> np.random.Generator:
    """A generator for this call of the check of ``exercise`` (new points each call).

    ``AUTODIFF_COURSE_PROBE_SEED`` (a whole number, default 0) moves every check to
    other draws: maintainers run the check tests under many seeds to make sure no
    verdict depends on a lucky draw.
    """
    counter = _counters.setdefault(exercise, itertools.count())
    seed = [zlib.crc32(exercise.encode()), next(counter)]
    extra = int(os.environ.get("AUTODIFF_COURSE_PROBE_SEED", "0") or 0)
    return np.random.default_rng(seed + [extra] if extra else seed)


def tensor(values, dtype):
    """Probe values as a TensorFlow constant of ``dtype``: a name such as ``"float64"``
    (how the checks list the dtypes they probe) or a ``tf.DType``."""
    import tensorflow as tf

    return tf.constant(values, dtype=tf.as_dtype(dtype))


def sizes(rng: np.random.Generator, count: int, low: int = 2, high: int = 6) -> list[int]:
    """``count`` different axis sizes in [low, high], so that a sum or a reshape over the
    wrong axis shows in the result's shape."""
    return [int(size) for size in rng.choice(np.arange(low, high + 1), size=count, replace=False)]


def signed(
    rng: np.random.Generator, shape, low: float = 0.5, high: float = 2.5, decimals: int | None = 3
) -> np.ndarray:
    """Values of both signs whose magnitudes lie in [low, high] (no zeros)."""
    magnitude = rng.uniform(low, high, size=shape)
    if decimals is not None:
        magnitude = np.round(magnitude, decimals)
    return magnitude * rng.choice([-1.0, 1.0], size=shape)


def upstream(rng: np.random.Generator, shape) -> np.ndarray:
    """An upstream gradient that is not 1 (or -1) anywhere and has both signs."""
    values = signed(rng, shape, low=0.3, high=3.0, decimals=2)
    values = np.where(np.abs(values) == 1.0, values * 1.25, values)
    flat = values.reshape(-1)
    if flat.size >= 2 and (np.all(flat > 0) or np.all(flat < 0)):
        flat[int(rng.integers(flat.size))] *= -1.0  # both signs, always
    return flat.reshape(np.shape(values))
