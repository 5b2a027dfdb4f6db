"""What the log1pexp explorer (lesson 03) plots and reads out, computed with the tape.

:func:`plotted_series` and :func:`readout_values` turn an
:class:`~.state.ExplorerState` into the numbers a view shows. Underneath, every
method's value, gradient and second derivative come from ``tf.GradientTape`` in
the state's dtype (:func:`autodiff_course.log1pexp.tape_derivatives`), next to
float64 references, and are cached per grid and per readout point with
``functools.lru_cache``; the cached arrays are read-only, so sharing them is safe.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from ... import log1pexp as numerics
from ...log1pexp import METHOD_LABELS
from .state import ExplorerState


@dataclass(frozen=True, eq=False)
class Curves:
    """Everything the explorer can plot, on one set of points x in one dtype.

    ``x`` holds the points in ``dtype`` (what TensorFlow saw), ``x64`` the same
    numbers in float64. ``methods[m][q]`` is quantity ``q`` of method ``m``: value,
    gradient and second derivative in ``dtype``; ``relative_error`` of the
    gradient against ``reference["gradient"]``, in float64.
    """

    dtype: str
    x: np.ndarray
    x64: np.ndarray
    reference: dict
    methods: dict

    def series(self, method: str, quantity: str) -> np.ndarray:
        return self.methods[method][quantity]


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def curves_at(x, dtype: str) -> Curves:
    """:class:`Curves` of all three methods at the points ``x`` (cast to ``dtype``)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1).astype(dtype)
    x64 = x.astype(np.float64)
    reference = {
        key: _read_only(value) for key, value in numerics.reference_derivatives(x64).items()
    }
    methods = {}
    for method, quantities in numerics.tape_derivatives(x, dtype).items():
        quantities["relative_error"] = numerics.relative_error(
            quantities["gradient"], reference["gradient"]
        )
        methods[method] = {key: _read_only(value) for key, value in quantities.items()}
    return Curves(
        dtype=dtype, x=_read_only(x), x64=_read_only(x64), reference=reference, methods=methods
    )


@functools.lru_cache(maxsize=64)
def grid_curves(dtype: str, low: float, high: float, num_points: int) -> Curves:
    """:class:`Curves` on ``num_points`` evenly spaced x from ``low`` to ``high``."""
    return curves_at(np.linspace(low, high, num_points), dtype)


@functools.lru_cache(maxsize=512)
def point_curves(dtype: str, x: float) -> Curves:
    """:class:`Curves` at the single point ``x``."""
    return curves_at([x], dtype)


def clear_caches() -> None:
    """Forget every cached curve (the benchmark times TensorFlow's share with it)."""
    grid_curves.cache_clear()
    point_curves.cache_clear()


@dataclass(frozen=True, eq=False)
class PlottedSeries:
    """One method's curve as plotted: ``y`` at ``x`` (float64 copies of dtype numbers).

    ``nan``, ``posinf``, ``neginf`` and ``zero`` are boolean masks over the points,
    the marks in the strip above the plot. They describe the method's own output
    (for the relative error: its gradient); ``zero`` marks a silent 0.0: an exact
    zero where the float64 reference is at least the dtype's smallest normal
    number, so the dtype could have held a good nonzero answer. ``finite`` marks
    the points drawn as a line.
    """

    method: str
    label: str
    quantity: str
    x: np.ndarray
    y: np.ndarray
    nan: np.ndarray
    posinf: np.ndarray
    neginf: np.ndarray
    zero: np.ndarray

    @property
    def finite(self) -> np.ndarray:
        return np.isfinite(self.y)

    def mask(self, kind: str) -> np.ndarray:
        """The mask of ``kind``: "nan", "posinf", "neginf" or "zero"."""
        return getattr(self, kind)


@dataclass(frozen=True)
class ReadoutValues:
    """The readout: each shown method's numbers at ``x`` (in ``dtype``), and float64's.

    ``methods[m]`` maps ``"value"``, ``"gradient"``, ``"second_derivative"`` and
    ``"relative_error"`` (of the gradient) to Python floats; ``reference`` maps the
    first three to float64's.
    """

    x: float
    dtype: str
    quantity: str
    methods: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)


def plotted_series(state: ExplorerState) -> dict[str, PlottedSeries]:
    """The series a view of ``state`` draws, one per shown method, in method order."""
    curves = grid_curves(state.dtype, *state.x_range, state.num_points)
    base = "gradient" if state.quantity == "relative_error" else state.quantity
    reference = curves.reference[base]
    series = {}
    for method in state.methods:
        own = curves.series(method, base).astype(np.float64)
        series[method] = PlottedSeries(
            method=method,
            label=METHOD_LABELS[method],
            quantity=state.quantity,
            x=curves.x64,
            y=curves.series(method, state.quantity).astype(np.float64),
            nan=np.isnan(own),
            posinf=np.isposinf(own),
            neginf=np.isneginf(own),
            zero=numerics.silent_zeros(own, reference, state.dtype),
        )
    return series


def readout_values(state: ExplorerState) -> ReadoutValues:
    """The numbers of each shown method, and float64's, at ``state.readout_x``."""
    point = point_curves(state.dtype, state.readout_x)
    keys = ("value", "gradient", "second_derivative", "relative_error")
    methods = {
        method: {key: float(point.series(method, key)[0]) for key in keys}
        for method in state.methods
    }
    reference = {key: float(point.reference[key][0]) for key in keys[:3]}
    return ReadoutValues(
        x=float(point.x[0]),
        dtype=state.dtype,
        quantity=state.quantity,
        methods=methods,
        reference=reference,
    )
