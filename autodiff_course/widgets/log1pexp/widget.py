"""The log1pexp explorer of lesson 03: controls ↔ state ↔ picture.

The widget holds one :class:`~.state.ExplorerState`. A learner's change to a
control becomes a new state (:meth:`Log1pexpExplorer.set_state`); the controls are
then written from that state, never read back, and the view is rendered from it:
numbers (:mod:`.data`), picture (:mod:`.figure`), words (:mod:`.wording`).
"""

from __future__ import annotations

import time

from ...log1pexp import DTYPES
from ...log1pexp import METHOD_LABELS
from ...log1pexp import METHODS
from ...log1pexp import QUANTITIES
from ...log1pexp import QUANTITY_LABELS
from ..display import WidgetDisplay
from ..display import image_html
from ..display import still_html
from .data import PlottedSeries
from .data import ReadoutValues
from .data import plotted_series
from .data import readout_values
from .figure import WIDGET_DPI
from .figure import ExplorerFigure
from .state import DEFAULT_POINTS
from .state import DEFAULT_QUANTITY
from .state import ExplorerState
from .wording import alt_text
from .wording import readout_html
from .wording import summary_text
from .wording import view_sentence

CSS_CLASSES = {
    "explorer": "log1pexp-explorer",
    "dtype": "log1pexp-dtype",
    "quantity": "log1pexp-quantity",
    "methods": "log1pexp-methods",
    "range": "log1pexp-range",
    "x_from": "log1pexp-x-from",
    "x_to": "log1pexp-x-to",
    "readout_x": "log1pexp-readout-x",
    "plot": "log1pexp-plot",
    "readout": "log1pexp-readout",
}
_LABEL_WIDTH = "70px"  # the controls' descriptions, aligned


class Log1pexpExplorer(WidgetDisplay):
    """Gradients of log(1 + e^x) as x grows: the interactive explorer of lesson 03.

    ``Log1pexpExplorer()`` opens on float32, x from -20 to 100, all three methods,
    the gradient, and a readout at x = 88.5, inside the band where the naive
    gradient is a silent 0.0. Keyword arguments set another opening state (see
    :class:`ExplorerState`; numbers beyond the dtype's bounds are clamped, a bad
    dtype, method or quantity raises ``ValueError``).

    Controls, each labelled and operable by keyboard (set their ``value`` to drive
    the explorer from Python, or call :meth:`set_state`):

    * ``dtype_choice`` and ``quantity_choice``: ``RadioButtons`` (Tab reaches each
      option and Space picks it: JupyterLab keeps the arrow keys for moving between
      cells); a new dtype moves the bounds of the x inputs (float16 ±16, float32
      ±120, float64 -740 to 760);
    * ``method_checkboxes``: ``{"naive": Checkbox, "documented": ..., "stable": ...}``
      (Space ticks);
    * ``x_from_input``, ``x_to_input`` and ``readout_x_input``: ``BoundedFloatText``
      (type a number, or step by 0.1 with the arrow keys, 0.01 for float16).

    Outputs: ``plot`` (``HTML``: the PNG as an ``<img>`` whose ``alt`` says what
    the plot shows), ``readout_html`` (``HTML`` with ``data-*`` attributes),
    ``widget`` (the ``VBox`` displayed). Each carries a class of :data:`CSS_CLASSES`.

    Python API: :attr:`state`, :meth:`set_state`, :meth:`plotted_data`,
    :meth:`readout_values`, :meth:`text_summary`, :meth:`alt_text`, :attr:`png`;
    ``render_count`` counts renders and ``last_timing`` holds the last render's
    ``compute_ms``, ``render_ms`` and ``total_ms``.
    """

    def __init__(
        self,
        dtype: str = "float32",
        x_range=None,
        methods=METHODS,
        quantity: str = DEFAULT_QUANTITY,
        readout_x: float | None = None,
        num_points: int = DEFAULT_POINTS,
        dpi: int = WIDGET_DPI,
    ):
        self._state = ExplorerState(dtype, x_range, methods, quantity, readout_x, num_points)
        self._figure = ExplorerFigure(dpi=dpi)
        self._drawn: ExplorerState | None = None
        self._series: dict[str, PlottedSeries] = {}
        self._readout: ReadoutValues | None = None
        self._png = b""
        self._writing = False
        self.render_count = 0
        self.last_timing = {"compute_ms": 0.0, "render_ms": 0.0, "total_ms": 0.0}
        self._build_controls()
        self._write_controls()
        self._observe_controls()
        self.update()

    # -- controls ----------------------------------------------------------

    def _build_controls(self) -> None:
        import ipywidgets as widgets

        label = {"description_width": _LABEL_WIDTH}
        self.dtype_choice = widgets.RadioButtons(
            options=list(DTYPES),
            description="dtype",
            style=label,
            layout=widgets.Layout(width="180px"),
        )
        self.quantity_choice = widgets.RadioButtons(
            options=[(QUANTITY_LABELS[q], q) for q in QUANTITIES],
            description="plot",
            style=label,
            layout=widgets.Layout(width="250px"),
        )
        self.method_checkboxes = {
            method: widgets.Checkbox(
                description=METHOD_LABELS[method],
                indent=False,
                layout=widgets.Layout(width="170px"),
            )
            for method in METHODS
        }
        self.methods_box = widgets.VBox(
            [widgets.Label("methods"), *self.method_checkboxes.values()]
        )
        low, high = self._state.bounds

        def number(description: str):
            return widgets.BoundedFloatText(
                min=low,
                max=high,
                step=self._state.step,
                description=description,
                continuous_update=False,
                style=label,
                layout=widgets.Layout(width="190px"),
            )

        self.x_from_input = number("x from")
        self.x_to_input = number("x to")
        self.readout_x_input = number("readout x")
        self.range_box = widgets.HBox([self.x_from_input, self.x_to_input])
        width, height = self._figure.pixel_size
        # Shown at its natural size, pixel for pixel (a stretched PNG looks blurred).
        self.plot = widgets.HTML(layout=widgets.Layout(width=f"{width}px", height=f"{height}px"))
        self.readout_html = widgets.HTML()
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.dtype_choice, self.quantity_choice, self.methods_box]),
                widgets.HBox([self.range_box, self.readout_x_input]),
                self.plot,
                self.readout_html,
            ]
        )
        for key, element in (
            ("explorer", self.widget),
            ("dtype", self.dtype_choice),
            ("quantity", self.quantity_choice),
            ("methods", self.methods_box),
            ("range", self.range_box),
            ("x_from", self.x_from_input),
            ("x_to", self.x_to_input),
            ("readout_x", self.readout_x_input),
            ("plot", self.plot),
            ("readout", self.readout_html),
        ):
            element.add_class(CSS_CLASSES[key])
        for method, box in self.method_checkboxes.items():
            box.add_class(f"log1pexp-method-{method}")

    def _observe_controls(self) -> None:
        def on(control, make_changes):
            def handler(change):
                if not self._writing:
                    self.set_state(**make_changes(change["new"]))

            control.observe(handler, names="value")

        on(self.dtype_choice, lambda new: {"dtype": new})
        on(self.quantity_choice, lambda new: {"quantity": new})
        on(self.x_from_input, lambda new: {"x_range": (new, self._state.x_range[1])})
        on(self.x_to_input, lambda new: {"x_range": (self._state.x_range[0], new)})
        on(self.readout_x_input, lambda new: {"readout_x": new})
        for method, box in self.method_checkboxes.items():
            on(
                box,
                lambda ticked, method=method: {
                    "methods": tuple(
                        m
                        for m in METHODS
                        if (m == method and ticked) or (m != method and m in self._state.methods)
                    )
                },
            )

    def _write_controls(self) -> None:
        """Show the state in every control (their observers ignore these writes)."""
        state = self._state
        self._writing = True
        try:
            self.dtype_choice.value = state.dtype
            self.quantity_choice.value = state.quantity
            for method, box in self.method_checkboxes.items():
                box.value = method in state.methods
            for control, value in (
                (self.x_from_input, state.x_range[0]),
                (self.x_to_input, state.x_range[1]),
                (self.readout_x_input, state.readout_x),
            ):
                _show_number(control, value, *state.bounds, state.step)
        finally:
            self._writing = False

    # -- state -------------------------------------------------------------

    @property
    def state(self) -> ExplorerState:
        """The :class:`ExplorerState` now shown."""
        return self._state

    def set_state(
        self, dtype=None, x_range=None, methods=None, quantity=None, readout_x=None, num_points=None
    ) -> None:
        """Change several settings at once (``None``: leave as is) and render once.

        Raises ``ValueError`` for an unknown dtype, method or quantity; numbers
        beyond the dtype's bounds are clamped, a reversed range is sorted. Nothing
        is rendered when the state does not change.
        """
        state = self._state.changed(
            dtype=dtype,
            x_range=x_range,
            methods=methods,
            quantity=quantity,
            readout_x=readout_x,
            num_points=num_points,
        )
        changed = state != self._state
        self._state = state
        self._write_controls()  # also puts back a clamped or sorted number
        if changed:
            self.update()

    # -- rendering ---------------------------------------------------------

    def update(self) -> None:
        """Render the state: compute (cached), redraw the figure, encode, fill the outputs.

        When only the readout x moved, only the readout marks are redrawn.
        """
        start = time.perf_counter()
        state = self._state
        readout = readout_values(state)
        same_curves = state.same_curves(self._drawn)
        series = self._series if same_curves else plotted_series(state)
        computed = time.perf_counter()
        if same_curves:
            self._figure.update_readout(state, readout)
        else:
            self._figure.update(state, series, readout)
        self._png = self._figure.png()
        self._drawn, self._series, self._readout = state, series, readout
        self.render_count += 1
        self.plot.value = image_html(self._png, self.alt_text(), self._figure.pixel_size)
        self.readout_html.value = readout_html(readout, state, self.render_count)
        done = time.perf_counter()
        self.last_timing = {
            "compute_ms": 1e3 * (computed - start),
            "render_ms": 1e3 * (done - computed),
            "total_ms": 1e3 * (done - start),
        }

    def plotted_data(self) -> dict[str, PlottedSeries]:
        """The series now on the plot, per shown method (see :class:`PlottedSeries`)."""
        return dict(self._series)

    def readout_values(self) -> ReadoutValues:
        """The numbers now in the readout (see :class:`ReadoutValues`)."""
        return self._readout

    def text_summary(self) -> str:
        """The plain-text form of the current view (what nbval compares)."""
        return summary_text(self._drawn, self._series, self._readout)

    def alt_text(self) -> str:
        """The plot's text alternative, as its ``<img>`` carries it."""
        return alt_text(self._drawn, self._series, self._readout)

    def static_html(self) -> str:
        """A still picture of the current view: the plot and the readout table."""
        body = image_html(self._png, self.alt_text(), self._figure.pixel_size) + readout_html(
            self._readout, self._drawn, self.render_count
        )
        return still_html(
            "log1pexp-explorer", "log1pexp explorer", view_sentence(self._drawn), body
        )

    @property
    def png(self) -> bytes:
        """The PNG bytes of the plot now shown."""
        return self._png


def _show_number(control, value: float, low: float, high: float, step: float) -> None:
    """Give a bounded number input new bounds and value, never passing through a value
    outside its bounds (ipywidgets would clamp it), in one message to the front end."""
    with control.hold_sync():
        if (control.min, control.max) != (low, high):
            control.min, control.max = min(low, control.min), max(high, control.max)
            control.value = value
            control.min, control.max = low, high
        control.step = step
        control.value = value
