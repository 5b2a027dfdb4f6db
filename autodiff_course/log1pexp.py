"""The numerics of log(1 + e^x) that lessons 01, 03, 04 and 05 lean on.

Three ways to differentiate ``log(1 + e^x)`` with ``tf.GradientTape``, each built
for a chosen dtype (lesson 03 teaches them; its explorer plots them):

* ``naive``: plain ``tf.math.log(1 + tf.exp(x))``, differentiated by the tape;
* ``documented``: the custom gradient of TensorFlow's documentation: forward
  ``log(1 + e)``, backward ``upstream * (1 - 1 / (1 + e))`` with ``e = exp(x)``;
* ``stable``: forward ``tf.nn.softplus(x)``, backward ``upstream * tf.sigmoid(x)``.

:func:`tape_derivatives` evaluates value, gradient and second derivative (nested
tapes) of each at given points; :func:`reference_derivatives` gives float64 NumPy
references (``np.logaddexp``, the sigmoid and its derivative), which the exercise
checks use too. :func:`thresholds` derives where the float format gives way
(``exp`` overflows; ``1/(1+e^x)`` drops below the smallest normal float, which CPUs
flush to 0.0; ``1 + e^x`` rounds to 1) from ``np.finfo``, so nothing here is
hard-coded.

TensorFlow is imported inside the functions, so importing this module is free.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

METHODS = ("naive", "documented", "stable")
METHOD_LABELS = {
    "naive": "naive autodiff",
    "documented": "documented rule",
    "stable": "stable rule",
}
QUANTITIES = ("value", "gradient", "second_derivative", "relative_error")
QUANTITY_LABELS = {
    "value": "value",
    "gradient": "gradient",
    "second_derivative": "second derivative",
    "relative_error": "relative error",
}
DTYPES = ("float32", "float64", "float16")


def dtype_name(dtype) -> str:
    """``"float32"`` for ``tf.float32``, ``np.float32``, ``"float32"``..."""
    name = getattr(dtype, "name", None)
    if isinstance(name, str):
        return name
    return np.dtype(dtype).name


# --------------------------------------------------------------------------
# Where the float format gives way
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """Landmarks on the x axis for one dtype, all derived from ``np.finfo``.

    * ``overflow``: ``log(largest float)``; ``exp(x)`` is ``inf`` beyond it.
    * ``flush_start``: ``log(1/smallest_normal - 1)``; from here to ``overflow``,
      ``1/(1 + e^x)`` is below the smallest normal float (a subnormal number, which
      CPUs running TensorFlow's float32/float64 kernels flush to 0.0).
    * ``cancellation``: ``log(eps/2)``; below it ``1 + e^x`` rounds to exactly 1, so
      ``1 - 1/(1 + e^x)`` cancels to 0.0 and ``log(1 + e^x)`` to 0.0.
    """

    dtype: str
    largest: float
    smallest_normal: float
    eps: float
    overflow: float
    flush_start: float
    cancellation: float


@functools.cache
def thresholds(dtype) -> Thresholds:
    """The :class:`Thresholds` of ``dtype`` (float16, float32 or float64)."""
    name = dtype_name(dtype)
    info = np.finfo(np.dtype(name))
    largest = float(info.max)
    smallest_normal = float(info.smallest_normal)
    eps = float(info.eps)
    return Thresholds(
        dtype=name,
        largest=largest,
        smallest_normal=smallest_normal,
        eps=eps,
        overflow=float(np.log(largest)),
        flush_start=float(np.log(1.0 / smallest_normal - 1.0)),
        cancellation=float(np.log(eps / 2.0)),
    )


def silent_zeros(got, reference, dtype):
    """Where ``got`` is exactly 0.0 although the true value is not: at least the
    smallest normal number of ``dtype``, so no flush to zero excuses it.
    Works on arrays and on single numbers."""
    smallest_normal = thresholds(dtype).smallest_normal
    return (np.asarray(got) == 0) & (np.abs(reference) >= smallest_normal)


# --------------------------------------------------------------------------
# The three methods, each a function of the dtype
# --------------------------------------------------------------------------


def _tf():
    import tensorflow as tf

    return tf


@functools.cache
def naive_log1pexp(dtype):
    """``log(1 + e^x)`` in ``dtype``, left for the tape to differentiate op by op."""
    tf = _tf()
    name = dtype_name(dtype)

    def log1pexp(x):
        x = tf.convert_to_tensor(x, dtype=name)
        return tf.math.log(1.0 + tf.exp(x))

    return log1pexp


@functools.cache
def documented_log1pexp(dtype):
    """The documented custom gradient: ``upstream * (1 - 1 / (1 + e))``, in ``dtype``.

    The forward value is still ``log(1 + e)``, so it is ``inf`` once ``exp`` overflows.
    """
    tf = _tf()
    name = dtype_name(dtype)

    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(upstream):
            return upstream * (1.0 - 1.0 / (1.0 + e))

        return tf.math.log(1.0 + e), grad

    def call(x):
        return log1pexp(tf.convert_to_tensor(x, dtype=name))

    return call


@functools.cache
def stable_log1pexp(dtype):
    """The stable rule in ``dtype``: ``softplus`` forward, ``upstream * sigmoid`` backward."""
    tf = _tf()
    name = dtype_name(dtype)

    @tf.custom_gradient
    def log1pexp(x):
        def grad(upstream):
            return upstream * tf.sigmoid(x)

        return tf.nn.softplus(x), grad

    def call(x):
        return log1pexp(tf.convert_to_tensor(x, dtype=name))

    return call


_FACTORIES = {
    "naive": naive_log1pexp,
    "documented": documented_log1pexp,
    "stable": stable_log1pexp,
}


def method_function(method: str, dtype):
    """The function ``x -> log(1 + e^x)`` of ``method`` (see :data:`METHODS`) in ``dtype``."""
    return _FACTORIES[method](dtype_name(dtype))


# TensorFlow's x86 CPU kernels compute a float32 tensor 8 numbers at a time, a
# reciprocal there from a hardware estimate whose last digits differ from one CPU model
# to the next, and finish a tail of fewer than 8 one number at a time, correctly rounded
# (lesson 03's aside shows both). Float32 points taken at most this many at a time get
# the tail's numbers: what the tape gives for each point on its own, on every CPU.
# (float64 has no such estimate, and float16 is computed one number at a time.)
POINTS_AT_A_TIME = 7
GROUPED_DTYPES = ("float32",)


def tape_derivatives(x, dtype, methods=METHODS) -> dict[str, dict[str, np.ndarray]]:
    """Value, gradient and second derivative of each method at every ``x``, in ``dtype``.

    The gradient comes from ``tf.GradientTape``; the second derivative from a second
    tape around the first (nested tapes). Returns ``{method: {"value": ...,
    "gradient": ..., "second_derivative": ...}}`` as NumPy arrays in ``dtype``.
    A ``None`` gradient (not expected here) becomes an array of ``nan``. Float32
    points go through the tapes :data:`POINTS_AT_A_TIME` at a time, so that each
    number is the one a point gets on its own, whatever the CPU.
    """
    name = dtype_name(dtype)
    points = np.asarray(x, dtype=name).reshape(-1)
    functions = [method_function(method, name) for method in methods]
    size = POINTS_AT_A_TIME if name in GROUPED_DTYPES else max(points.size, 1)
    groups = [
        _derivatives_of_group(points[start : start + size], functions)
        for start in range(0, points.size, size)
    ]
    quantities = ("value", "gradient", "second_derivative")
    return {
        method: {
            quantity: np.concatenate([group[index][number] for group in groups] or [points[:0]])
            for number, quantity in enumerate(quantities)
        }
        for index, method in enumerate(methods)
    }


def _derivatives_of_group(points: np.ndarray, functions) -> list[tuple[np.ndarray, ...]]:
    """(value, gradient, second derivative) of each function at a few ``points``."""
    tf = _tf()
    x = tf.constant(points)
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(x)
            values = [f(x) for f in functions]
        gradients = [inner.gradient(value, x) for value in values]
    seconds = [
        outer.gradient(gradient, x) if gradient is not None else None for gradient in gradients
    ]
    del inner, outer

    def as_array(tensor):
        if tensor is None:
            return np.full(points.shape, np.nan, dtype=points.dtype)
        return tensor.numpy()

    return [
        (as_array(value), as_array(gradient), as_array(second))
        for value, gradient, second in zip(values, gradients, seconds)
    ]


# --------------------------------------------------------------------------
# Float64 references and relative error
# --------------------------------------------------------------------------


def reference_softplus(x) -> np.ndarray:
    """log(1 + e^x) in float64, without overflow: the reference every check uses, written
    as max(x, 0) + log1p(e^-|x|), not with np.logaddexp, which lesson 06's answer uses."""
    x = np.asarray(x, dtype=np.float64)
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def reference_sigmoid(x) -> np.ndarray:
    """The logistic sigmoid in float64, without overflow for either sign of x."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def reference_derivatives(x) -> dict[str, np.ndarray]:
    """float64 closed forms: ``logaddexp(0, x)``, ``sigmoid(x)``, ``sigmoid*(1 - sigmoid)``.

    ``1 - sigmoid(x)`` is evaluated as ``sigmoid(-x)``, which is the same number
    without the cancellation (that cancellation is what the explorer is about).
    """
    x = np.asarray(x, dtype=np.float64)
    sigmoid = reference_sigmoid(x)
    return {
        "value": np.logaddexp(0.0, x),
        "gradient": sigmoid,
        "second_derivative": sigmoid * reference_sigmoid(-x),
    }


def relative_error(got, reference) -> np.ndarray:
    """``|got - reference| / |reference|`` in float64, never a warning.

    ``nan`` where ``got`` is ``nan``, ``inf`` where ``got`` is infinite. Where the
    reference is 0 the error is 0 if ``got`` is 0 too, else ``inf``.
    """
    got = np.asarray(got, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    with np.errstate(all="ignore"):
        error = np.abs(got - reference) / np.abs(reference)
    at_zero = reference == 0
    error = np.where(at_zero, np.where(got == 0, 0.0, np.inf), error)
    error = np.where(np.isinf(got), np.inf, error)
    return np.where(np.isnan(got), np.nan, error)
