"""The log1pexp explorer of lesson 03: tables from TensorFlow, drawn in the browser.

:class:`Log1pexpExplorer` computes every table the explorer can show
(:mod:`.tables`) and hands them to a front-end widget (``static/log1pexp.js``,
an anywidget) that draws the plot, the flags and the readout on its own, with no
kernel round trip: in JupyterLab, Colab, slide mode, a reopened notebook and the
course's web site alike. The view the learner picks comes back to Python as
:attr:`Log1pexpExplorer.state`; :meth:`Log1pexpExplorer.set_state` changes it
from Python. The cell's output also carries a still picture (the plot drawn by
matplotlib from the same tables, and the readout table) and the view in plain
text (see :mod:`..display`).
"""

from __future__ import annotations

import functools

from ... import log1pexp as numerics
from ...log1pexp import DTYPES
from ...log1pexp import METHOD_LABELS
from ...log1pexp import METHODS
from ...log1pexp import QUANTITIES
from ...log1pexp import QUANTITY_LABELS
from ...plotting import OKABE_ITO
from ...plotting import SERIES_STYLES
from ...plotting import TEXT_COLOURS
from ...plotting import WARNING_TEXT
from ..display import WidgetDisplay
from ..display import image_html
from ..display import still_html
from ..frontend import encoded
from ..frontend import module_source
from ..frontend import style_sheet
from .data import PlottedSeries
from .data import ReadoutValues
from .data import plotted_series
from .data import readout_values
from .figure import WIDGET_DPI
from .figure import ExplorerFigure
from .state import DEFAULT_QUANTITY
from .state import DEFAULT_READOUT_X
from .state import DEFAULT_X_RANGE
from .state import NARROWEST_STEPS
from .state import X_BOUNDS
from .state import X_STEPS
from .state import ExplorerState
from .tables import FLAG_KINDS
from .tables import all_tables
from .tables import flag_runs
from .wording import TITLES
from .wording import alt_text
from .wording import format_number
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
FLAG_BITS = {kind: 1 << index for index, kind in enumerate(FLAG_KINDS)}


def front_end_config() -> dict:
    """Everything the front end needs besides the numbers: names, bounds, styles, words."""
    limits = {}
    for dtype in DTYPES:
        found = numerics.thresholds(dtype)
        limits[dtype] = {
            "overflow": found.overflow,
            "flush_start": found.flush_start,
            "cancellation": found.cancellation,
            "smallest_normal": found.smallest_normal,
            "eps": found.eps,
            "text": {
                key: format_number(getattr(found, key), "fixed")
                for key in ("overflow", "flush_start", "cancellation")
            },
        }
    return {
        "dtypes": list(DTYPES),
        "methods": list(METHODS),
        "method_labels": METHOD_LABELS,
        "quantities": list(QUANTITIES),
        "quantity_labels": QUANTITY_LABELS,
        "titles": TITLES,
        "bounds": X_BOUNDS,
        "steps": X_STEPS,
        "narrowest_steps": NARROWEST_STEPS,
        "default_range": DEFAULT_X_RANGE,
        "default_readout": DEFAULT_READOUT_X,
        "limits": limits,
        "flag_bits": FLAG_BITS,
        "styles": [
            {"colour": colour, "dash": dash, "marker": marker, "text": TEXT_COLOURS[index]}
            for index, (colour, dash, marker) in enumerate(SERIES_STYLES[: len(METHODS)])
        ],
        "band_colour": OKABE_ITO["orange"],
        "warning_colour": WARNING_TEXT,
        "css": CSS_CLASSES,
    }


@functools.cache
def front_end_tables() -> dict:
    """Every table of every dtype, encoded for the front end (computed once per kernel)."""
    payload = {}
    for dtype, table in all_tables().items():
        flags = {}
        runs = {}
        for method in METHODS:
            flags[method], runs[method] = {}, {}
            for quantity in QUANTITIES:
                bits = sum(
                    table.flags[method][quantity][kind].astype("uint8") * bit
                    for kind, bit in FLAG_BITS.items()
                )
                flags[method][quantity] = encoded(bits.astype("uint8"))
                runs[method][quantity] = [
                    [run.first, run.last, run.phrase] for run in flag_runs(table, method, quantity)
                ]
        payload[dtype] = {
            "x": encoded(table.x.astype(dtype)),
            "methods": {
                method: {q: encoded(table.series(method, q)) for q in QUANTITIES}
                for method in METHODS
            },
            "reference": {q: encoded(values) for q, values in table.reference.items()},
            "flags": flags,
            "runs": runs,
        }
    return payload


@functools.cache
def _widget_class():
    import anywidget
    import traitlets

    class Log1pexpWidget(anywidget.AnyWidget):
        """The front end of :class:`Log1pexpExplorer` (``static/log1pexp.js``)."""

        _esm = module_source("log1pexp")
        _css = style_sheet()
        config = traitlets.Dict().tag(sync=True)
        tables = traitlets.Dict().tag(sync=True)
        view = traitlets.Dict().tag(sync=True)

    return Log1pexpWidget


def view_of(state: ExplorerState) -> dict:
    """The front end's ``view`` for ``state`` (plain JSON)."""
    return {
        "dtype": state.dtype,
        "x_range": list(state.x_range),
        "methods": list(state.methods),
        "quantity": state.quantity,
        "readout_x": state.readout_x,
        "remembered": {
            dtype: [list(x_range), readout]
            for dtype, (x_range, readout) in state.remembered.items()
        },
        "message": state.message,
    }


def state_of(view: dict) -> ExplorerState:
    """The :class:`ExplorerState` of a ``view`` the front end sent back."""
    remembered = {
        dtype: (tuple(x_range), readout) for dtype, (x_range, readout) in view["remembered"].items()
    }
    return ExplorerState(
        dtype=view["dtype"],
        x_range=tuple(view["x_range"]),
        methods=tuple(view["methods"]),
        quantity=view["quantity"],
        readout_x=view["readout_x"],
        remembered=remembered,
        message=view.get("message", ""),
    )


class Log1pexpExplorer(WidgetDisplay):
    """Gradients of log(1 + e^x) as x grows: the interactive explorer of lesson 03.

    ``Log1pexpExplorer()`` opens on float32, x from -20 to 100, all three methods,
    the gradient, and a readout at x = 88.5, inside the band where the naive
    gradient is a silent 0.0. Keyword arguments set another opening state (see
    :class:`ExplorerState`; numbers beyond the dtype's bounds are clamped, a bad
    dtype, method or quantity raises ``ValueError``).

    In the browser (each control labelled and operable by keyboard): radio buttons
    for the dtype and the plotted quantity (arrow keys move between options), a
    checkbox per method (Space), number inputs for the two ends of the x range
    (arrow keys step by 0.1, 0.01 in float16) and for the readout x (arrow keys move
    to the next tabulated point). The plot is a canvas with a text alternative;
    the flags and the readout are text.

    Python API: :attr:`state`, :meth:`set_state`, :meth:`plotted_data`,
    :meth:`readout_values`, :meth:`text_summary`, :meth:`alt_text`,
    :meth:`static_html`, :attr:`png`; ``widget`` is the front-end widget.
    """

    def __init__(
        self,
        dtype: str = "float32",
        x_range=None,
        methods=METHODS,
        quantity: str = DEFAULT_QUANTITY,
        readout_x: float | None = None,
        dpi: int = WIDGET_DPI,
    ):
        self._state = ExplorerState(dtype, x_range, methods, quantity, readout_x)
        self._dpi = dpi
        self._figure: ExplorerFigure | None = None
        self._pictured: tuple[ExplorerState, bytes] | None = None
        self.widget = _widget_class()(
            config=front_end_config(), tables=front_end_tables(), view=view_of(self._state)
        )
        self.widget.add_class(CSS_CLASSES["explorer"])
        self.widget.observe(self._on_view, names="view")

    def _on_view(self, change) -> None:
        self._state = state_of(change["new"])

    @property
    def state(self) -> ExplorerState:
        """The :class:`ExplorerState` now shown (the learner's last change included)."""
        return self._state

    def set_state(self, dtype=None, x_range=None, methods=None, quantity=None, readout_x=None):
        """Change several settings at once (``None``: leave as is); the front end follows.

        Raises ``ValueError`` for an unknown dtype, method or quantity; numbers
        beyond the dtype's bounds are clamped, a reversed range is sorted, a range
        too narrow to plot is widened (``state.message`` says so).
        """
        self._state = self._state.changed(
            dtype=dtype, x_range=x_range, methods=methods, quantity=quantity, readout_x=readout_x
        )
        self.widget.view = view_of(self._state)

    def plotted_data(self) -> dict[str, PlottedSeries]:
        """The series now on the plot, per shown method (see :class:`PlottedSeries`)."""
        return plotted_series(self._state)

    def readout_values(self) -> ReadoutValues:
        """The numbers now in the readout (see :class:`ReadoutValues`)."""
        return readout_values(self._state)

    def text_summary(self) -> str:
        """The plain-text form of the current view (what nbval compares)."""
        return summary_text(self._state, self.plotted_data(), self.readout_values())

    def alt_text(self) -> str:
        """The text alternative of the plot of the current view."""
        return alt_text(self._state, self.plotted_data(), self.readout_values())

    @property
    def png(self) -> bytes:
        """The still picture of the current view as PNG bytes (matplotlib, same tables)."""
        if self._pictured is None or self._pictured[0] != self._state:
            if self._figure is None:
                self._figure = ExplorerFigure(dpi=self._dpi)
            state = self._state
            self._figure.update(state, self.plotted_data(), self.readout_values())
            self._pictured = (state, self._figure.png())
        return self._pictured[1]

    def static_html(self) -> str:
        """A still picture of the current view: the plot and the readout table."""
        picture = self.png
        body = image_html(picture, self.alt_text(), self._figure.pixel_size)
        body += readout_html(self.readout_values(), self._state)
        return still_html(
            "log1pexp-explorer", "log1pexp explorer", view_sentence(self._state), body
        )
