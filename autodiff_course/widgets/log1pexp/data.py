"""What the log1pexp explorer (lesson 03) plots and reads out, taken from its tables.

:func:`plotted_series` and :func:`readout_values` turn an
:class:`~.state.ExplorerState` into the numbers a view shows. They only select:
every number comes from :func:`.tables.explorer_table`, which TensorFlow computed
with ``tf.GradientTape`` in the state's dtype, next to float64 references. The
browser draws the same selections from the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np

from ...log1pexp import METHOD_LABELS
from .state import ExplorerState
from .tables import explorer_table
from .tables import flag_phrases


@dataclass(frozen=True, eq=False)
class PlottedSeries:
    """One method's curve as plotted: ``y`` at the tabulated ``x`` inside the range
    (float64 copies of dtype numbers).

    ``nan``, ``posinf``, ``neginf`` and ``zero`` are boolean masks over the points,
    the marks in the strip above the plot. They describe the method's own output
    (for the relative error: its gradient); ``zero`` marks a silent 0.0: an exact
    zero where the float64 reference is at least the dtype's smallest normal
    number, so the dtype could have held a good nonzero answer. ``finite`` marks
    the points drawn as a line. ``phrases`` say where the flags are, in the
    thresholds' own numbers.
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
    phrases: tuple[str, ...] = ()

    @property
    def finite(self) -> np.ndarray:
        return np.isfinite(self.y)

    def mask(self, kind: str) -> np.ndarray:
        """The mask of ``kind``: "nan", "posinf", "neginf" or "zero"."""
        return getattr(self, kind)


@dataclass(frozen=True)
class ReadoutValues:
    """The readout: each shown method's numbers at ``x`` (in ``dtype``), and float64's.

    ``x`` is the tabulated point nearest the state's ``readout_x``. ``methods[m]``
    maps ``"value"``, ``"gradient"``, ``"second_derivative"`` and
    ``"relative_error"`` (of the gradient) to Python floats; ``reference`` maps the
    first three to float64's.
    """

    x: float
    dtype: str
    quantity: str
    methods: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)


def in_range(state: ExplorerState) -> np.ndarray:
    """The indices of the tabulated points inside the state's x range."""
    x = explorer_table(state.dtype).x
    low, high = state.x_range
    return np.flatnonzero((x >= low) & (x <= high))


def plotted_series(state: ExplorerState) -> dict[str, PlottedSeries]:
    """The series a view of ``state`` draws, one per shown method, in method order."""
    table = explorer_table(state.dtype)
    inside = in_range(state)
    series = {}
    for method in state.methods:
        flags = table.flags[method][state.quantity]
        series[method] = PlottedSeries(
            method=method,
            label=METHOD_LABELS[method],
            quantity=state.quantity,
            x=table.x[inside],
            y=table.series(method, state.quantity)[inside].astype(np.float64),
            phrases=tuple(flag_phrases(table, method, state.quantity, state.x_range)),
            **{kind: mask[inside] for kind, mask in flags.items()},
        )
    return series


def readout_values(state: ExplorerState) -> ReadoutValues:
    """The numbers of each shown method, and float64's, at the tabulated point nearest
    ``state.readout_x``."""
    table = explorer_table(state.dtype)
    index = table.index_of(state.readout_x)
    keys = ("value", "gradient", "second_derivative", "relative_error")
    methods = {
        method: {key: float(table.series(method, key)[index]) for key in keys}
        for method in state.methods
    }
    reference = {key: float(table.reference[key][index]) for key in keys[:3]}
    return ReadoutValues(
        x=float(table.x[index]),
        dtype=state.dtype,
        quantity=state.quantity,
        methods=methods,
        reference=reference,
    )
