"""The log1pexp explorer of lesson 03: gradients of log(1 + e^x) as x grows.

Pick a dtype, an x range, the methods and the quantity; the plot and the readout
show what ``tf.GradientTape`` computes, point by point, for three ways of writing
``log(1 + e^x)`` (see :mod:`autodiff_course.log1pexp`):

* **naive autodiff**: ``tf.math.log(1 + tf.exp(x))`` left to the tape;
* **documented rule**: ``@tf.custom_gradient`` with ``upstream * (1 - 1/(1 + e))``;
* **stable rule**: ``tf.nn.softplus`` forward, ``upstream * tf.sigmoid(x)`` backward.

Nothing is hidden: ``nan`` and ``inf`` points, and "silent" 0.0 results where the
float64 reference is not 0, are marked in a strip above the plot and described in
words; the float format's limits (``1 + e^x`` rounding to 1, ``1/(1+e^x)`` below the
smallest normal float, ``exp`` overflowing) are drawn as lines and a shaded band.

Driving it from Python (tests, benchmark, ``tools/make_figures.py``)::

    explorer = Log1pexpExplorer()                 # float32, x in [-20, 100], gradient
    explorer.dtype_buttons.value = "float64"      # moves the slider bounds too
    explorer.set_state(x_range=(700, 720), quantity="value")   # several at once
    explorer.plotted_data()["naive"].nan          # what the plot shows, per method
    explorer.readout_values().methods["naive"]["gradient"]

The figure is created once per explorer and updated in place; :func:`render_png`
renders any :class:`ExplorerState` through the same code, for static figures.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field, replace

import numpy as np

from .. import log1pexp as numerics
from ..log1pexp import DTYPES, METHOD_LABELS, METHODS, QUANTITIES, QUANTITY_LABELS
from ..plotting import COURSE_RC, OKABE_ITO, series_style
from . import PlainTextDisplay

# Slider bounds, steps and the view each dtype opens with. The bounds reach past
# the dtype's exp overflow (float16 11.09, float32 88.72, float64 709.78) and stay
# where float64's reference sigmoid is still a nonzero number.
X_BOUNDS = {"float32": (-120.0, 120.0), "float64": (-740.0, 760.0), "float16": (-16.0, 16.0)}
X_STEPS = {"float32": 0.1, "float64": 0.1, "float16": 0.01}
DEFAULT_X_RANGE = {"float32": (-20.0, 100.0), "float64": (640.0, 720.0),
                   "float16": (-12.0, 14.0)}
DEFAULT_READOUT_X = {"float32": 88.5, "float64": 709.7, "float16": 10.5}
DEFAULT_QUANTITY = "gradient"
DEFAULT_POINTS = numerics.DEFAULT_POINTS

CSS_CLASSES = {
    "explorer": "log1pexp-explorer",
    "dtype": "log1pexp-dtype",
    "range": "log1pexp-range",
    "methods": "log1pexp-methods",
    "quantity": "log1pexp-quantity",
    "readout_x": "log1pexp-readout-x",
    "plot": "log1pexp-plot",
    "readout": "log1pexp-readout",
}

_LABEL_WIDTH = "90px"    # the controls' descriptions, aligned
FIGURE_SIZE = (8.0, 5.25)   # inches: 640 x 420 pixels at the widget's 80 dpi
WIDGET_DPI = 80
FLAG_KINDS = ("nan", "posinf", "neginf", "zero")
FLAG_MARKERS = {"nan": "x", "posinf": "^", "neginf": "v", "zero": "o"}
FLAG_WORDS = {"nan": "nan", "posinf": "inf", "neginf": "-inf", "zero": "silent 0.0"}


# --------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class ExplorerState:
    """Everything a view depends on. :meth:`normalised` makes any input valid."""

    dtype: str = "float32"
    x_range: tuple = DEFAULT_X_RANGE["float32"]
    methods: tuple = METHODS
    quantity: str = DEFAULT_QUANTITY
    readout_x: float = DEFAULT_READOUT_X["float32"]
    num_points: int = DEFAULT_POINTS

    @classmethod
    def default(cls, dtype: str = "float32", **changes) -> "ExplorerState":
        """The opening view of ``dtype``, with ``changes`` applied (then normalised)."""
        dtype = numerics.dtype_name(dtype)
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
        state = cls(dtype=dtype, x_range=DEFAULT_X_RANGE[dtype],
                    readout_x=DEFAULT_READOUT_X[dtype])
        changes = {key: value for key, value in changes.items() if value is not None}
        return replace(state, **changes).normalised()

    def normalised(self) -> "ExplorerState":
        """Known dtype and quantity; range sorted and clamped; methods in canonical order.

        Raises ``ValueError`` for an unknown dtype, method or quantity.
        """
        dtype = numerics.dtype_name(self.dtype)
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
        if self.quantity not in QUANTITIES:
            raise ValueError(f"quantity must be one of {QUANTITIES}, not {self.quantity!r}")
        methods = (self.methods,) if isinstance(self.methods, str) else tuple(self.methods)
        unknown = [method for method in methods if method not in METHODS]
        if unknown:
            raise ValueError(f"methods must be among {METHODS}, not {unknown!r}")
        low, high = X_BOUNDS[dtype]
        x_lo, x_hi = sorted(_clamp(float(v), low, high) for v in self.x_range)
        return ExplorerState(
            dtype=dtype,
            x_range=(x_lo, x_hi),
            methods=tuple(method for method in METHODS if method in methods),
            quantity=self.quantity,
            readout_x=_clamp(float(self.readout_x), low, high),
            num_points=max(2, int(self.num_points)),
        )


def _clamp(value: float, low: float, high: float) -> float:
    if np.isnan(value):
        return low
    return min(max(value, low), high)


# --------------------------------------------------------------------------
# What is plotted
# --------------------------------------------------------------------------

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
        return getattr(self, kind)


@dataclass(frozen=True)
class ReadoutValues:
    """The readout: each shown method's numbers at ``x`` (in ``dtype``), and float64's.

    ``methods[m]`` and ``reference`` map ``"value"``, ``"gradient"``,
    ``"second_derivative"`` (and for methods ``"relative_error"``, of the gradient)
    to Python floats.
    """

    x: float
    dtype: str
    quantity: str
    methods: dict = field(default_factory=dict)
    reference: dict = field(default_factory=dict)


def plotted_series(curves, state: ExplorerState) -> dict[str, PlottedSeries]:
    """The series a view of ``state`` draws, from cached ``curves``, per shown method."""
    base = "gradient" if state.quantity == "relative_error" else state.quantity
    reference = curves.reference_series(base)
    x = curves.x64
    series = {}
    for method in state.methods:
        own = curves.series(method, base).astype(np.float64)
        y = curves.series(method, state.quantity).astype(np.float64)
        series[method] = PlottedSeries(
            method=method, label=METHOD_LABELS[method], quantity=state.quantity,
            x=x, y=y, nan=np.isnan(own), posinf=np.isposinf(own), neginf=np.isneginf(own),
            zero=numerics.silent_zeros(own, reference, state.dtype),
        )
    return series


def readout_values(point, state: ExplorerState) -> ReadoutValues:
    """A :class:`ReadoutValues` from the one-point curves ``point``."""
    keys = ("value", "gradient", "second_derivative", "relative_error")
    methods = {method: {key: float(point.series(method, key)[0]) for key in keys}
               for method in state.methods}
    reference = {key: float(point.reference[key][0]) for key in keys[:3]}
    return ReadoutValues(x=float(point.x[0]), dtype=state.dtype, quantity=state.quantity,
                         methods=methods, reference=reference)


# --------------------------------------------------------------------------
# Words: describing masks and numbers
# --------------------------------------------------------------------------

def format_number(value: float) -> str:
    """Six significant digits, always with a decimal point or exponent; nan/inf as such."""
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = f"{value:.6g}"
    if not any(ch in text for ch in ".en"):
        text += ".0"
    return text


def exact_text(value: float, dtype: str) -> str:
    """The shortest text that reads back as the same ``dtype`` number (for data attributes)."""
    return str(np.dtype(dtype).type(value))


def _fmt_x(x: float) -> str:
    return f"{x:.2f}".replace("-", "−")


def describe_mask(mask: np.ndarray, x: np.ndarray, word: str, ascii_only: bool = False,
                  short: bool = False) -> str:
    """Say where ``mask`` is true, e.g. ``"nan from x = 88.80 (4 points)"``; ``""`` if nowhere."""
    count = int(mask.sum())
    if count == 0:
        return ""
    fmt = (lambda v: f"{v:.2f}") if ascii_only else _fmt_x
    where = np.flatnonzero(mask)
    first, last = int(where[0]), int(where[-1])
    contiguous = last - first + 1 == count
    counted = "" if short else f" ({count} points)"
    if count == mask.size:
        return f"{word} everywhere"
    if count == 1:
        return f"{word} at x = {fmt(x[first])}"
    if contiguous and last == mask.size - 1:
        return f"{word} from x = {fmt(x[first])}{counted}"
    if contiguous and first == 0:
        return f"{word} up to x = {fmt(x[last])}{counted}"
    if contiguous:
        return f"{word} for x in [{fmt(x[first])}, {fmt(x[last])}]{counted}"
    return f"{word} at {count} points in [{fmt(x[first])}, {fmt(x[last])}]"


def describe_series(series: PlottedSeries, ascii_only: bool = False,
                    short: bool = False) -> str:
    """Where the series is nan, inf, -inf or a silent 0.0, in one sentence.

    ``short`` leaves out the point counts (for the label in the figure);
    ``ascii_only`` writes "-" rather than the typographic minus (for plain text).
    """
    parts = [describe_mask(series.mask(kind), series.x, FLAG_WORDS[kind], ascii_only, short)
             for kind in FLAG_KINDS]
    parts = [part for part in parts if part]
    return "; ".join(parts) if parts else "no nan, no inf, no silent 0.0"


# --------------------------------------------------------------------------
# The figure
# --------------------------------------------------------------------------

def _figure_style() -> dict:
    """matplotlib's defaults plus the course's settings: the same look in every process."""
    import matplotlib as mpl

    style = {key: value for key, value in mpl.rcParamsDefault.items()
             if key not in ("backend", "backend_fallback", "interactive")}
    style.update(COURSE_RC)
    style.update({"axes.unicode_minus": True, "path.simplify": True})
    return style


def _tick_text(value: float, _position=None) -> str:
    if value == 0:
        return "0"
    return f"{value:.6g}".replace("-", "−")


def _log_tick_text(value: float, _position=None) -> str:
    if value == 0:
        return "0"
    exponent = int(np.round(np.log10(abs(value))))
    if exponent == 0:
        return "1"
    return f"1e{exponent}".replace("-", "−")


class _StampCache:
    """Rendered texts, keyed by everything that changes their pixels."""

    def __init__(self, size: int = 4096):
        self.size = size
        self.items: dict = {}

    def get(self, key, make):
        stamp = self.items.get(key)
        if stamp is None:
            if len(self.items) >= self.size:
                self.items.pop(next(iter(self.items)))
            stamp = self.items[key] = make()
        return stamp


_STAMPS = _StampCache(1024)


def _rasterise(text: str, path: str, size: float, dpi: float):
    """Coverage bitmap (rows top to bottom) and descent in pixels of one line of text.

    FreeType lays out and renders the whole string in C (``draw_glyphs_to_bitmap``),
    hinted as matplotlib's Agg backend hints.
    """
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.font_manager import get_font

    font = get_font(path)
    font.clear()
    font.set_size(size, dpi)
    font.set_text(text, 0.0, flags=get_hinting_flag())
    font.draw_glyphs_to_bitmap(antialiased=True)
    return np.asarray(font.get_image()), font.get_descent() / 64.0


_LINE_METRICS: dict = {}


def _line_metrics(path: str, size: float, dpi: float) -> tuple[float, float]:
    """Height and descent of a line ("lp"), as matplotlib aligns text vertically."""
    key = (path, size, dpi)
    if key not in _LINE_METRICS:
        coverage, descent = _rasterise("lp", path, size, dpi)
        _LINE_METRICS[key] = (float(coverage.shape[0]), descent)
    return _LINE_METRICS[key]


@functools.lru_cache(maxsize=None)
def _stamp_text_class():
    """``StampText``: a matplotlib ``Text`` drawn from a cached bitmap.

    Matplotlib 3.11 lays out and rasterises text glyph by glyph in Python, about
    50 µs a glyph, and the explorer shows several hundred glyphs. A ``StampText``
    rasterises its string once with FreeType (the same font, size and hinting) and
    then pastes the bitmap at its anchor, rounded to whole pixels, aligned as
    matplotlib aligns text. It supports one line of text, rotated by 0 or 90
    degrees, and an optional opaque ``background`` (RGBA 0-255) behind it.
    """
    from matplotlib.colors import to_rgba
    from matplotlib.font_manager import findfont
    from matplotlib.text import Text

    class StampText(Text):
        def __init__(self, *args, background=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.background = background

        def _stamp_key(self, dpi):
            props = self.get_fontproperties()
            return (self.get_text(), to_rgba(self.get_color(), self.get_alpha()),
                    self.background, findfont(props), props.get_size_in_points(),
                    round(self.get_rotation()) % 360, self.get_horizontalalignment(),
                    self.get_verticalalignment(), dpi)

        def _make_stamp(self, dpi):
            text, colour, background, path, size, rotation, ha, va, _ = self._stamp_key(dpi)
            coverage, descent = _rasterise(text, path, size, dpi)
            height, width = coverage.shape
            image = np.zeros((height, width, 4), dtype=np.uint8)
            image[..., :3] = np.round(np.array(colour[:3]) * 255)
            image[..., 3] = np.round(coverage * colour[3]).astype(np.uint8)
            if background is not None:
                image = _over(np.pad(image, ((1, 1), (2, 2), (0, 0))), background)
                height, width = image.shape[:2]
                descent += 1
            if rotation == 90:
                image = np.ascontiguousarray(np.rot90(image))
                height, width = image.shape[:2]
                bottom = {"bottom": 0, "baseline": 0, "top": -height}.get(va, -height // 2)
            else:
                line_height, line_descent = _line_metrics(path, size, dpi)
                baseline = {"baseline": 0.0, "bottom": line_descent,
                            "top": line_descent - line_height}.get(
                                va, line_descent - line_height / 2)
                bottom = int(round(baseline - descent))
            left = {"left": 0, "right": -width}.get(ha, -(width // 2))
            # draw_image takes rows from the bottom up
            return np.ascontiguousarray(image[::-1]), left, bottom

        def draw(self, renderer):
            if renderer is None or not self.get_visible() or not self.get_text():
                return
            image, left, bottom = _STAMPS.get(self._stamp_key(renderer.dpi),
                                              lambda: self._make_stamp(renderer.dpi))
            x, y = self.get_transform().transform(self.get_unitless_position())
            if not (np.isfinite(x) and np.isfinite(y)):
                return
            gc = renderer.new_gc()
            self._set_gc_clip(gc)
            renderer.draw_image(gc, int(round(x)) + left, int(round(y)) + bottom, image)
            gc.restore()
            self.stale = False

    return StampText


def _over(image: np.ndarray, background) -> np.ndarray:
    """``image`` (RGBA uint8) composited over a uniform ``background`` colour."""
    top = image.astype(np.float64) / 255.0
    under = np.asarray(background, dtype=np.float64) / 255.0
    alpha = top[..., 3:] + under[3] * (1.0 - top[..., 3:])
    safe = np.where(alpha > 0, alpha, 1.0)
    rgb = (top[..., :3] * top[..., 3:] + under[:3] * under[3] * (1.0 - top[..., 3:])) / safe
    return np.round(np.concatenate([rgb, alpha], axis=-1) * 255.0).astype(np.uint8)


STRIP_ROWS = {"naive": 4.0, "documented": 3.0, "stable": 2.0}
LIMIT_ROWS = {"cancellation": 1.0, "overflow": 0.0}
GREY = "#555555"
_LABEL_BACKGROUND = (255, 255, 255, 220)   # behind labels that may cross marks

# Layout in figure fractions (fixed, so nothing is measured at draw time).
_LEFT, _RIGHT = 0.155, 0.975
_MAIN = (_LEFT, 0.20, _RIGHT - _LEFT, 0.465)
_STRIP = (_LEFT, 0.695, _RIGHT - _LEFT, 0.235)
_LEGEND_SLOTS = (0.17, 0.44, 0.71)


class ExplorerFigure:
    """A matplotlib figure for the explorer, created once and updated in place.

    The top strip has one row per method for its flagged points (× nan, ▲ inf,
    ▼ -inf, ○ silent 0.0) with a sentence saying where they are, and two rows
    labelling the float format's limits. The main axes hold the finite points.

    Speed: every text sits at a fixed place (no layout engine, no auto-positioned
    titles or legend); the readout marks are "animated" artists drawn over a saved
    background, so moving only the readout x redraws just them. The result is the
    same pixels either way.
    """

    def __init__(self, dpi: int = WIDGET_DPI, size=FIGURE_SIZE):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import LineCollection
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.markers import TICKDOWN, TICKLEFT
        from matplotlib.ticker import FuncFormatter
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        self._style = _figure_style()
        self._text_class = _stamp_text_class()
        self._scale = None
        self._background = None      # pixels without the readout marks
        self._x_limits = (0.0, 1.0)
        with self._styled():
            fig = Figure(figsize=size, dpi=dpi)
            FigureCanvasAgg(fig)
            self.figure = fig
            self.ax = ax = fig.add_axes(_MAIN)
            self.strip = strip = fig.add_axes(_STRIP, sharex=ax)
            ax.xaxis.set_major_formatter(FuncFormatter(_tick_text))
            ax.yaxis.set_major_formatter(FuncFormatter(_tick_text))
            strip.grid(False)
            strip.xaxis.set_visible(False)
            strip.yaxis.set_visible(False)
            strip.set_ylim(-0.6, 4.6)
            row_labels = blended_transform_factory(strip.transAxes, strip.transData)
            for text, y, colour in (("naive", 4.0, series_style(0)["color"]),
                                    ("documented", 3.0, series_style(1)["color"]),
                                    ("stable", 2.0, series_style(2)["color"]),
                                    ("limits", 0.5, GREY)):
                self._text(-0.012, y, text, transform=row_labels, ha="right", va="center",
                           fontsize=10, color=colour)
            for y in (1.5, 2.5, 3.5):
                strip.axhline(y, color="#dddddd", linewidth=0.8, zorder=0)
            figure_fraction = fig.transFigure
            self.title = self._text(_LEFT, 0.945, "", fontsize=12, ha="left", va="bottom",
                                    transform=figure_fraction)
            self._text(_RIGHT, 0.945, "× nan   ▲ inf   ▼ −inf   ○ silent 0.0", fontsize=10,
                       color=GREY, ha="right", va="bottom", transform=figure_fraction)
            self.ylabel = self._text(0.04, _MAIN[1] + _MAIN[3] / 2, "", rotation=90,
                                     ha="center", va="center", transform=figure_fraction)
            self._text(_LEFT + _MAIN[2] / 2, 0.125, "x", ha="center", va="center",
                       transform=figure_fraction)

            # Ticks, grid and tick labels, drawn as three artists per axis rather than
            # matplotlib's few artists per tick; labels are stamps from a pool.
            ax.grid(False)
            ax.xaxis.set_visible(False)
            ax.yaxis.set_visible(False)
            on_x = blended_transform_factory(ax.transData, ax.transAxes)
            on_y = blended_transform_factory(ax.transAxes, ax.transData)
            grid_style = dict(color=self._style["grid.color"], linewidth=0.8,
                              alpha=self._style["grid.alpha"], zorder=0.5)
            self.x_grid = LineCollection([], transform=on_x, **grid_style)
            self.y_grid = LineCollection([], transform=on_y, **grid_style)
            tick_style = dict(linestyle="none", color="black", markersize=3.5,
                              markeredgewidth=0.8, clip_on=False)
            (self.x_ticks,) = ax.plot([], [], marker=TICKDOWN, transform=on_x, **tick_style)
            (self.y_ticks,) = ax.plot([], [], marker=TICKLEFT, transform=on_y, **tick_style)
            ax.add_collection(self.x_grid, autolim=False)
            ax.add_collection(self.y_grid, autolim=False)
            points = fig.dpi_scale_trans
            below = (blended_transform_factory(ax.transData, ax.transAxes)
                     + ScaledTranslation(0, -6 / 72, points))
            beside = (blended_transform_factory(ax.transAxes, ax.transData)
                      + ScaledTranslation(-6 / 72, 0, points))
            self.x_tick_labels = [self._text(0, 0, "", transform=below, ha="center",
                                             va="top", fontsize=11) for _ in range(16)]
            self.y_tick_labels = [self._text(0, 0, "", transform=beside, ha="right",
                                             va="center", fontsize=11) for _ in range(16)]

            # The float format's limits, on both axes.
            band_style = dict(color=OKABE_ITO["orange"], alpha=0.3, linewidth=0, zorder=0)
            self.band = [a.axvspan(0, 1, **band_style) for a in (ax, strip)]
            self.overflow_lines = [a.axvline(0, color="black", linestyle="--", linewidth=1.2,
                                             zorder=1) for a in (ax, strip)]
            self.cancellation_lines = [a.axvline(0, color="black", linestyle=":",
                                                 linewidth=1.4, zorder=1) for a in (ax, strip)]
            self.overflow_label = self._text(0, LIMIT_ROWS["overflow"], "", fontsize=10,
                                             va="center", color="black", axes=strip,
                                             background=_LABEL_BACKGROUND)
            self.cancellation_label = self._text(0, LIMIT_ROWS["cancellation"], "",
                                                 fontsize=10, va="center", color="black",
                                                 axes=strip, background=_LABEL_BACKGROUND)

            # One line, flag marks, a sentence and a legend entry per method.
            self.lines, self.flags, self.flag_labels, self.legend = {}, {}, {}, {}
            for index, method in enumerate(METHODS):
                style = series_style(index)
                (self.lines[method],) = ax.plot([], [], zorder=3, **style)
                self.flags[method] = {}
                for kind in FLAG_KINDS:
                    (self.flags[method][kind],) = strip.plot(
                        [], [], linestyle="none", marker=FLAG_MARKERS[kind], markersize=6,
                        color=style["color"],
                        markerfacecolor="none" if kind == "zero" else style["color"],
                        zorder=3)
                self.flag_labels[method] = self._text(
                    0, STRIP_ROWS[method], "", fontsize=10, va="center",
                    color=style["color"], axes=strip, background=_LABEL_BACKGROUND)
                x0 = _LEGEND_SLOTS[index]
                sample = Line2D([x0, x0 + 0.025, x0 + 0.05], [0.035] * 3,
                                transform=fig.transFigure, color=style["color"],
                                linestyle=style["linestyle"], marker=style["marker"],
                                markevery=[1])
                fig.add_artist(sample)
                label = self._text(x0 + 0.06, 0.035, METHOD_LABELS[method], fontsize=10,
                                   va="center", ha="left", transform=figure_fraction)
                self.legend[method] = (sample, label)

            # The readout marks, drawn last over a saved background.
            self.readout_lines = [a.axvline(0, color=GREY, linestyle="-", linewidth=1.0,
                                            alpha=0.6, zorder=1, animated=True)
                                  for a in (ax, strip)]
            self.dots = {}
            for index, method in enumerate(METHODS):
                style = series_style(index)
                (self.dots[method],) = ax.plot(
                    [], [], linestyle="none", marker=style["marker"], markersize=9,
                    markerfacecolor=style["color"], markeredgecolor="black", zorder=4,
                    animated=True)
            self._animated = [*self.readout_lines, *self.dots.values()]

    def _styled(self):
        """matplotlib settings as :func:`_figure_style` says, whatever the notebook set.

        Only the settings that differ are changed (validating all of them on
        every draw would cost milliseconds).
        """
        import matplotlib as mpl

        current = mpl.rcParams
        changed = {key: value for key, value in self._style.items()
                   if dict.__getitem__(current, key) != value}
        return mpl.rc_context(changed)

    def _text(self, x, y, text, axes=None, **kwargs):
        """A cached-bitmap text: in data coordinates of ``axes`` (clipped to it), or
        on the figure with the given ``transform``."""
        artist = self._text_class(x, y, text, **kwargs)
        if axes is not None:
            artist.set_transform(axes.transData)
            axes.add_artist(artist)
            artist.set_clip_on(True)
            artist.set_clip_box(axes.bbox)
        else:
            self.figure.add_artist(artist)
        return artist

    # -- updating --------------------------------------------------------

    def update(self, state: ExplorerState, series: dict[str, PlottedSeries],
               readout: ReadoutValues) -> None:
        """Move every artist to show ``state``; drawing happens in :meth:`rgba`."""
        with self._styled():
            self._background = None
            x_lo, x_hi = self._set_x_limits(state)
            self._update_limits(numerics.thresholds(state.dtype), x_lo, x_hi)
            self._update_scale(state)
            for method in METHODS:
                self._update_method(method, series.get(method), x_lo, x_hi)
            self._update_y_limits(state, series)
            self._update_tick_labels()
            self.title.set_text(f"{state.dtype}: {_TITLES[state.quantity]}")
            self.ylabel.set_text(QUANTITY_LABELS[state.quantity])
            self._x_limits = (x_lo, x_hi)
            self.update_readout(state, readout)

    def update_readout(self, state: ExplorerState, readout: ReadoutValues) -> None:
        """Move only the readout marks (the rest of the picture is kept)."""
        x_lo, x_hi = self._x_limits
        inside = bool(x_lo <= readout.x <= x_hi)
        for line in self.readout_lines:
            line.set_xdata([readout.x, readout.x])
            line.set_visible(inside)
        for method, dot in self.dots.items():
            values = readout.methods.get(method)
            value = values[state.quantity] if values else np.nan
            dot.set_data([readout.x], [value])
            dot.set_visible(inside and bool(np.isfinite(value)))

    def _set_x_limits(self, state: ExplorerState) -> tuple[float, float]:
        x_lo, x_hi = state.x_range
        if x_hi - x_lo < 1e-9 * max(1.0, abs(x_lo)):   # a zero-width range
            x_lo, x_hi = x_lo - 0.5, x_hi + 0.5
        self.ax.set_xlim(x_lo, x_hi)
        return x_lo, x_hi

    def _update_limits(self, limits, x_lo: float, x_hi: float) -> None:
        span = x_hi - x_lo
        flush, overflow, cancel = limits.flush_start, limits.overflow, limits.cancellation
        band_visible = flush < x_hi and overflow > x_lo
        for patch in self.band:
            patch.set_x(flush)
            patch.set_width(overflow - flush)
            patch.set_visible(band_visible)
        for line in self.overflow_lines:
            line.set_xdata([overflow, overflow])
            line.set_visible(x_lo <= overflow <= x_hi)
        for line in self.cancellation_lines:
            line.set_xdata([cancel, cancel])
            line.set_visible(x_lo <= cancel <= x_hi)

        label = self.overflow_label
        label.set_visible(band_visible)
        label.set_text(f"1/(1+eˣ) subnormal from {_fmt_x(flush)}, "
                       f"eˣ = inf from {_fmt_x(overflow)}")
        if (flush - x_lo) > 0.55 * span:
            _place(label, min(flush, x_hi) - 0.01 * span, "right")
        else:
            _place(label, max(overflow, x_lo) + 0.01 * span, "left")

        label = self.cancellation_label
        label.set_visible(x_lo <= cancel <= x_hi)
        label.set_text(f"1 + eˣ rounds to 1 below {_fmt_x(cancel)}")
        if (cancel - x_lo) < 0.45 * span:
            _place(label, cancel + 0.01 * span, "left")
        else:
            _place(label, cancel - 0.01 * span, "right")

    def _update_scale(self, state: ExplorerState) -> None:
        from matplotlib.ticker import AutoLocator, FixedLocator, FuncFormatter, NullLocator

        scale = "symlog" if state.quantity == "relative_error" else "linear"
        key = (scale, state.dtype if scale == "symlog" else None)
        if key == self._scale:
            return
        if scale == "symlog":
            linthresh = numerics.thresholds(state.dtype).eps / 16
            self.ax.set_yscale("symlog", linthresh=linthresh, linscale=0.5)
            self.ax.yaxis.set_major_locator(FixedLocator(_symlog_ticks(linthresh)))
            self.ax.yaxis.set_minor_locator(NullLocator())
            self.ax.yaxis.set_major_formatter(FuncFormatter(_log_tick_text))
        else:
            self.ax.set_yscale("linear")
            self.ax.yaxis.set_major_locator(AutoLocator())
            self.ax.yaxis.set_minor_locator(NullLocator())
            self.ax.yaxis.set_major_formatter(FuncFormatter(_tick_text))
        self._scale = key

    def _update_tick_labels(self) -> None:
        for axis, labels, limits in ((self.ax.xaxis, self.x_tick_labels, self.ax.get_xlim()),
                                     (self.ax.yaxis, self.y_tick_labels, self.ax.get_ylim())):
            lo, hi = sorted(limits)
            slack = 1e-9 * (hi - lo)
            ticks = [t for t in axis.get_majorticklocs() if lo - slack <= t <= hi + slack]
            if axis is self.ax.xaxis:
                self.x_grid.set_segments([[(t, 0.0), (t, 1.0)] for t in ticks])
                self.x_ticks.set_data(ticks, [0.0] * len(ticks))
            else:
                self.y_grid.set_segments([[(0.0, t), (1.0, t)] for t in ticks])
                self.y_ticks.set_data([0.0] * len(ticks), ticks)
            formatter = axis.get_major_formatter()
            for index, label in enumerate(labels):
                if index < len(ticks):
                    label.set_text(formatter(ticks[index], index))
                    if axis is self.ax.xaxis:
                        label.set_x(ticks[index])
                    else:
                        label.set_y(ticks[index])
                    label.set_visible(True)
                else:
                    label.set_visible(False)

    def _update_method(self, method, series, x_lo, x_hi) -> None:
        line, label = self.lines[method], self.flag_labels[method]
        shown = series is not None
        line.set_visible(shown)
        for artist in self.legend[method]:
            artist.set_visible(shown)
        span = x_hi - x_lo
        if not shown:
            for mark in self.flags[method].values():
                mark.set_visible(False)
            label.set_text("not shown")
            label.set_color("#999999")
            _place(label, x_lo + 0.01 * span, "left")
            return
        line.set_data(series.x, np.where(series.finite, series.y, np.nan))
        # (a line without a single finite point has nothing to draw, and
        # matplotlib's markevery cannot place markers on it)
        line.set_visible(bool(series.finite.any()))
        flagged = np.zeros(series.x.shape, dtype=bool)
        for kind, mark in self.flags[method].items():
            mask = series.mask(kind)
            flagged |= mask
            xs = series.x[mask]
            mark.set_data(xs, np.full(xs.shape, STRIP_ROWS[method]))
            mark.set_visible(xs.size > 0)
        label.set_color(line.get_color())
        label.set_text(describe_series(series, short=True))
        if not flagged.any():
            _place(label, x_lo + 0.01 * span, "left")
            return
        where = series.x[flagged]
        first, last = (float(where.min()) - x_lo) / span, (float(where.max()) - x_lo) / span
        if first > 0.5:
            _place(label, x_lo + (first - 0.015) * span, "right")
        elif last < 0.5:
            _place(label, x_lo + (last + 0.015) * span, "left")
        else:
            _place(label, x_lo + 0.5 * span, "center")

    def _update_y_limits(self, state, series) -> None:
        finite = [s.y[s.finite] for s in series.values()]
        values = np.concatenate(finite) if finite else np.empty(0)
        if state.quantity == "relative_error":
            top = float(values.max()) if values.size else 1.0
            self.ax.set_ylim(0.0, max(1.0, top) * 4.0)
            return
        if values.size == 0:
            self.ax.set_ylim(0.0, 1.0)
            return
        lo, hi = float(values.min()), float(values.max())
        span = hi - lo
        if span <= 1e-12 * max(1.0, abs(hi)):
            span = max(abs(hi), 1.0) * 0.1
            lo, hi = lo - span / 2, hi + span / 2
        self.ax.set_ylim(lo - 0.06 * span, hi + 0.06 * span)

    # -- drawing ---------------------------------------------------------

    def rgba(self) -> np.ndarray:
        """Draw with Agg and return the pixels (height, width, 4), a view of the canvas.

        After :meth:`update` everything is drawn; after :meth:`update_readout` alone,
        the saved background is restored and only the readout marks are drawn.
        """
        canvas = self.figure.canvas
        with self._styled():
            if self._background is None:
                canvas.draw()    # skips the animated readout marks
                self._background = canvas.copy_from_bbox(self.figure.bbox)
            else:
                canvas.restore_region(self._background)
            for artist in self._animated:
                self.figure.draw_artist(artist)
        return np.asarray(canvas.buffer_rgba())

    def png(self) -> bytes:
        """Draw and encode as PNG: no metadata, no timestamp, fast zlib level 1."""
        return encode_png(self.rgba())


def _place(text, x: float, align: str) -> None:
    text.set_x(x)
    text.set_horizontalalignment(align)


_TITLES = {
    "value": "log(1 + eˣ)",
    "gradient": "gradient d/dx log(1 + eˣ)",
    "second_derivative": "second derivative d²/dx² log(1 + eˣ)",
    "relative_error": "relative error of the gradient vs float64",
}


def _symlog_ticks(linthresh: float) -> list[float]:
    """0, then 1 (a 100 % error) and every few decades down to about ``linthresh``."""
    lowest = int(np.ceil(np.log10(linthresh)))
    stride = max(1, int(np.ceil((1 - lowest) / 5)))
    return [0.0] + sorted(10.0 ** e for e in range(0, lowest - 1, -stride))


def encode_png(rgba: np.ndarray) -> bytes:
    """PNG bytes of an RGBA image, stored as RGB: deterministic and fast.

    Written directly (no filter, zlib level 1): a few milliseconds where Pillow's
    adaptive filtering takes several times longer, and no text chunk or timestamp,
    so the same pixels always give the same bytes.
    """
    import struct
    import zlib

    height, width = rgba.shape[:2]
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0                                   # filter type "None" per row
    rows[:, 1:].reshape(height, width, 3)[...] = rgba[..., :3]
    compressor = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY)
    data = compressor.compress(rows.tobytes()) + compressor.flush()

    def chunk(tag: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + tag + body
                + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)   # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data)
            + chunk(b"IEND", b""))


def render_png(state: ExplorerState | None = None, figure: ExplorerFigure | None = None,
               dpi: int = WIDGET_DPI) -> bytes:
    """The explorer's plot for ``state`` as PNG bytes, by the widget's own code path."""
    state = (state or ExplorerState()).normalised()
    figure = figure or ExplorerFigure(dpi=dpi)
    figure.update(state, view_series(state), view_readout(state))
    return figure.png()


def view_series(state: ExplorerState) -> dict[str, PlottedSeries]:
    """The curves a view of ``state`` plots (computed once per dtype and range)."""
    curves = numerics.compute_curves(*state.x_range, state.dtype, state.num_points)
    return plotted_series(curves, state)


def view_readout(state: ExplorerState) -> ReadoutValues:
    """The readout of a view of ``state`` at its readout x."""
    return readout_values(numerics.compute_point(state.readout_x, state.dtype), state)


# --------------------------------------------------------------------------
# Readout and plain-text summary
# --------------------------------------------------------------------------

def _cell(value: float, flagged: bool = False, title: str = "") -> str:
    text = format_number(value)
    style = "padding:2px 8px;text-align:right;font-family:monospace"
    if flagged:
        style += ";color:#D55E00;font-weight:bold"
    attribute = f" title='{title}'" if title else ""
    return f"<td style='{style}'{attribute}>{text}</td>"


def render_readout_html(readout: ReadoutValues, state: ExplorerState,
                        render_count: int = 0) -> str:
    """The readout table, with machine-readable ``data-*`` attributes.

    The outer ``div`` carries ``data-x`` (the readout x as a ``dtype`` number),
    ``data-dtype``, ``data-quantity``, ``data-x-min``, ``data-x-max``,
    ``data-methods`` (space separated), ``data-render-count`` and, per shown method
    ``m``, ``data-m-value``, ``data-m-gradient``, ``data-m-second-derivative`` and
    ``data-m-relative-error``; each table row repeats them as ``data-method``,
    ``data-value``, ... Numbers are written as NumPy prints them (``nan``, ``inf``,
    ``-inf``, ``0.0``, ``88.5``), exactly, in the dtype.
    """
    dtype = state.dtype
    attributes = {
        "x": exact_text(readout.x, dtype), "dtype": dtype, "quantity": state.quantity,
        "x-min": exact_text(state.x_range[0], "float64"),
        "x-max": exact_text(state.x_range[1], "float64"),
        "methods": " ".join(state.methods), "render-count": str(render_count),
    }
    keys = (("value", "value"), ("gradient", "gradient"),
            ("second_derivative", "second-derivative"), ("relative_error", "relative-error"))
    rows = []
    reference = readout.reference
    for method, values in readout.methods.items():
        row_attributes = {"method": method}
        for key, name in keys:
            kind = "float64" if key == "relative_error" else dtype
            attributes[f"{method}-{name}"] = exact_text(values[key], kind)
            row_attributes[name] = exact_text(values[key], kind)
        cells = []
        for key, _ in keys[:3]:
            value, true = values[key], reference[key]
            silent = bool(numerics.silent_zeros(value, true, dtype))
            bad = not np.isfinite(value) or silent
            title = "0.0 where the true value is not 0" if silent else (
                "not a finite number" if bad else "")
            cells.append(_cell(value, bad, title))
        error = values["relative_error"]
        cells.append(_cell(error, not np.isfinite(error) or error >= 1e-3))
        style = series_style(METHODS.index(method))
        rows.append(
            "<tr " + _attrs(row_attributes) + ">"
            f"<td style='padding:2px 8px;color:{style['color']};font-weight:bold'>"
            f"{METHOD_LABELS[method]}</td>{''.join(cells)}</tr>")
    rows.append(
        "<tr data-method='reference'><td style='padding:2px 8px'>float64 reference</td>"
        + "".join(_cell(reference[key]) for key, _ in keys[:3])
        + "<td style='padding:2px 8px;text-align:right'>—</td></tr>")
    header = ("<tr><th style='text-align:left;padding:2px 8px'>method</th>"
              + "".join(f"<th style='text-align:right;padding:2px 8px'>{h}</th>"
                        for h in ("value", "gradient", "second derivative",
                                  "relative error of gradient"))
              + "</tr>")
    x_lo, x_hi = state.x_range
    where = "" if x_lo <= readout.x <= x_hi else " (outside the plotted range)"
    note = "" if state.methods else " No method is selected: tick one above."
    return (f"<div class='log1pexp-readout-values' {_attrs(attributes)}>"
            f"<b>At x = {format_number(readout.x)}</b> ({dtype}){where}.{note}"
            f"<table style='border-collapse:collapse'>{header}{''.join(rows)}</table></div>")


def _attrs(attributes: dict) -> str:
    return " ".join(f"data-{key}='{value}'" for key, value in attributes.items())


def render_text(state: ExplorerState, series: dict[str, PlottedSeries],
                readout: ReadoutValues) -> str:
    """The plain-text form: the view, the float limits, each curve's flags, the readout."""
    limits = numerics.thresholds(state.dtype)
    x_lo, x_hi = state.x_range
    quantity = f"{QUANTITY_LABELS[state.quantity]} of log(1 + e^x)"
    if state.quantity == "relative_error":
        quantity = "relative error of the gradient of log(1 + e^x) against float64"
    lines = [
        f"log1pexp explorer ({state.dtype}): {quantity}, "
        f"x from {x_lo:.2f} to {x_hi:.2f} ({state.num_points} points).",
        f"{state.dtype} limits: 1 + e^x rounds to 1 for x < {limits.cancellation:.2f}; "
        f"1/(1 + e^x) is below the smallest normal float for x > {limits.flush_start:.2f}; "
        f"exp(x) overflows for x > {limits.overflow:.2f}.",
    ]
    if not series:
        lines.append("No method selected.")
    for method, one in series.items():
        lines.append(f"{METHOD_LABELS[method]}: {describe_series(one, ascii_only=True)}.")
    readings = [f"{METHOD_LABELS[m]} value {format_number(v['value'])}, gradient "
                f"{format_number(v['gradient'])}" for m, v in readout.methods.items()]
    readings.append(f"float64 reference value {format_number(readout.reference['value'])}, "
                    f"gradient {format_number(readout.reference['gradient'])}")
    lines.append(f"Readout at x = {format_number(readout.x)}: " + "; ".join(readings) + ".")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# The widget
# --------------------------------------------------------------------------

class Log1pexpExplorer(PlainTextDisplay):
    """Gradients of log(1 + e^x) as x grows: the interactive explorer of lesson 03.

    ``Log1pexpExplorer()`` opens on float32, x from -20 to 100, all three methods,
    the gradient, and a readout at x = 88.5, inside the band where the naive
    gradient is a silent 0.0. Keyword arguments set another opening state:
    ``dtype`` ("float32", "float64", "float16"), ``x_range`` ((low, high); default
    the dtype's opening view), ``methods`` (any subset of "naive", "documented",
    "stable"), ``quantity`` ("value", "gradient", "second_derivative",
    "relative_error" — of the gradient, against float64), ``readout_x`` and
    ``num_points`` (400). Out-of-range values are clamped to the sliders' bounds.

    Controls (ipywidgets; set their ``value`` to drive the explorer from Python):

    * ``dtype_buttons``: ``ToggleButtons``; changing it moves the slider bounds
      (float16 ±16, float32 ±120, float64 -740 to 760), and a range or readout x
      still at the old dtype's opening value moves to the new dtype's;
    * ``x_range_slider``: ``FloatRangeSlider`` (low, high);
    * ``method_checkboxes``: ``{"naive": Checkbox, "documented": ..., "stable": ...}``;
    * ``quantity_buttons``: ``ToggleButtons``;
    * ``readout_x_slider``: ``FloatSlider``.

    Outputs: ``plot_image`` (``Image``, PNG), ``readout_html`` (``HTML`` with
    ``data-*`` attributes, see :func:`render_readout_html`), ``widget`` (the ``VBox``
    displayed). Each carries a CSS class (see :data:`CSS_CLASSES`).

    Python API: :attr:`state`, :meth:`set_state`, :meth:`plotted_data`,
    :meth:`readout_values`, :meth:`text_summary`; ``render_count`` counts renders and
    ``last_timing`` holds the last update's ``compute_ms``, ``render_ms``, ``total_ms``.
    """

    def __init__(self, dtype: str = "float32", x_range=None, methods=METHODS,
                 quantity: str = DEFAULT_QUANTITY, readout_x: float | None = None,
                 num_points: int = DEFAULT_POINTS, dpi: int = WIDGET_DPI):
        import ipywidgets as widgets

        state = ExplorerState.default(dtype, x_range=x_range, methods=methods,
                                      quantity=quantity, readout_x=readout_x,
                                      num_points=num_points)
        self.render_count = 0
        self.last_timing = {"compute_ms": 0.0, "render_ms": 0.0, "total_ms": 0.0}
        self._num_points = state.num_points
        self._hold = 0
        self._figure = ExplorerFigure(dpi=dpi)
        self._series: dict[str, PlottedSeries] = {}
        self._readout: ReadoutValues | None = None
        self._state: ExplorerState | None = None

        low, high = X_BOUNDS[state.dtype]
        step = X_STEPS[state.dtype]
        self.dtype_buttons = widgets.ToggleButtons(
            options=list(DTYPES), value=state.dtype, description="dtype",
            style={"button_width": "80px", "description_width": _LABEL_WIDTH})
        self.quantity_buttons = widgets.ToggleButtons(
            options=[(QUANTITY_LABELS[q], q) for q in QUANTITIES], value=state.quantity,
            description="plot", style={"button_width": "140px", "description_width": _LABEL_WIDTH})
        self.method_checkboxes = {
            method: widgets.Checkbox(value=method in state.methods,
                                     description=METHOD_LABELS[method], indent=False,
                                     layout=widgets.Layout(width="160px"))
            for method in METHODS
        }
        self.x_range_slider = widgets.FloatRangeSlider(
            value=state.x_range, min=low, max=high, step=step, description="x range",
            readout_format=".2f", continuous_update=True,
            style={"description_width": _LABEL_WIDTH}, layout=widgets.Layout(width="640px"))
        self.readout_x_slider = widgets.FloatSlider(
            value=state.readout_x, min=low, max=high, step=step, description="readout x",
            readout_format=".2f", continuous_update=True,
            style={"description_width": _LABEL_WIDTH}, layout=widgets.Layout(width="640px"))
        # Shown at its natural size, pixel for pixel (a stretched PNG looks blurred).
        width, height = (round(side * dpi) for side in FIGURE_SIZE)
        self.plot_image = widgets.Image(
            format="png", layout=widgets.Layout(width=f"{width}px", height=f"{height}px"))
        self.readout_html = widgets.HTML()
        methods_box = widgets.HBox(
            [widgets.Label("methods", layout=widgets.Layout(width=_LABEL_WIDTH))]
            + list(self.method_checkboxes.values()))
        self.widget = widgets.VBox([
            self.dtype_buttons, self.quantity_buttons, methods_box, self.x_range_slider,
            self.readout_x_slider, self.plot_image, self.readout_html,
        ])
        for element, key in ((self.widget, "explorer"), (self.dtype_buttons, "dtype"),
                             (self.x_range_slider, "range"), (methods_box, "methods"),
                             (self.quantity_buttons, "quantity"),
                             (self.readout_x_slider, "readout_x"),
                             (self.plot_image, "plot"), (self.readout_html, "readout")):
            element.add_class(CSS_CLASSES[key])
        for method, box in self.method_checkboxes.items():
            box.add_class(f"log1pexp-method-{method}")
        self.methods_box = methods_box

        self.dtype_buttons.observe(self._on_dtype, names="value")
        for control in (self.quantity_buttons, self.x_range_slider, self.readout_x_slider,
                        *self.method_checkboxes.values()):
            control.observe(self._on_change, names="value")
        self.update()

    # -- state -------------------------------------------------------------

    @property
    def state(self) -> ExplorerState:
        """The current :class:`ExplorerState`, read from the controls."""
        return ExplorerState(
            dtype=self.dtype_buttons.value,
            x_range=tuple(self.x_range_slider.value),
            methods=tuple(m for m, box in self.method_checkboxes.items() if box.value),
            quantity=self.quantity_buttons.value,
            readout_x=self.readout_x_slider.value,
            num_points=self._num_points,
        ).normalised()

    def set_state(self, dtype=None, x_range=None, methods=None, quantity=None,
                  readout_x=None) -> None:
        """Change several controls at once (``None``: leave as is) and render once.

        Raises ``ValueError`` for an unknown dtype, method or quantity; numbers
        outside the sliders' bounds are clamped, a reversed range is sorted.
        """
        if dtype is not None and numerics.dtype_name(dtype) not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
        self._hold += 1
        try:
            if dtype is not None:
                self.dtype_buttons.value = numerics.dtype_name(dtype)
            if quantity is not None:
                if quantity not in QUANTITIES:
                    raise ValueError(f"quantity must be one of {QUANTITIES}")
                self.quantity_buttons.value = quantity
            if methods is not None:
                methods = (methods,) if isinstance(methods, str) else tuple(methods)
                unknown = [m for m in methods if m not in METHODS]
                if unknown:
                    raise ValueError(f"methods must be among {METHODS}, not {unknown!r}")
                for method, box in self.method_checkboxes.items():
                    box.value = method in methods
            if x_range is not None:
                low, high = X_BOUNDS[self.dtype_buttons.value]
                self.x_range_slider.value = tuple(
                    sorted(_clamp(float(v), low, high) for v in x_range))
            if readout_x is not None:
                self.readout_x_slider.value = float(readout_x)
        finally:
            self._hold -= 1
        self.update()

    def _on_change(self, change) -> None:
        if not self._hold:
            self.update()

    def _on_dtype(self, change) -> None:
        old, new = change["old"], change["new"]
        self._hold += 1
        try:
            x_range = tuple(self.x_range_slider.value)
            if _close(x_range, DEFAULT_X_RANGE[old]):
                x_range = DEFAULT_X_RANGE[new]
            readout_x = self.readout_x_slider.value
            if _close((readout_x,), (DEFAULT_READOUT_X[old],)):
                readout_x = DEFAULT_READOUT_X[new]
            low, high = X_BOUNDS[new]
            x_range = tuple(sorted(_clamp(v, low, high) for v in x_range))
            _set_bounds(self.x_range_slider, low, high, X_STEPS[new], x_range)
            _set_bounds(self.readout_x_slider, low, high, X_STEPS[new],
                        _clamp(readout_x, low, high))
        finally:
            self._hold -= 1
        if not self._hold:
            self.update()

    # -- rendering ---------------------------------------------------------

    def update(self) -> None:
        """Compute (cached per dtype and range) and repaint the plot and readout.

        When only the readout x moved, only the readout marks are redrawn.
        """
        start = time.perf_counter()
        state = self.state
        readout = view_readout(state)
        only_readout = (self._state is not None
                        and replace(self._state, readout_x=state.readout_x) == state)
        series = self._series if only_readout else view_series(state)
        computed = time.perf_counter()
        if only_readout:
            self._figure.update_readout(state, readout)
        else:
            self._figure.update(state, series, readout)
        png = self._figure.png()
        self.render_count += 1
        self._state, self._series, self._readout = state, series, readout
        self.plot_image.value = png
        self.readout_html.value = render_readout_html(readout, state, self.render_count)
        done = time.perf_counter()
        self.last_timing = {"compute_ms": 1e3 * (computed - start),
                            "render_ms": 1e3 * (done - computed),
                            "total_ms": 1e3 * (done - start)}

    def plotted_data(self) -> dict[str, PlottedSeries]:
        """The series now on the plot, per shown method (see :class:`PlottedSeries`)."""
        return dict(self._series)

    def readout_values(self) -> ReadoutValues:
        """The numbers now in the readout (see :class:`ReadoutValues`)."""
        return self._readout

    def text_summary(self) -> str:
        """The plain-text form of the current view (what nbval compares)."""
        return render_text(self._state, self._series, self._readout)

    @property
    def png(self) -> bytes:
        """The PNG bytes now in ``plot_image``."""
        return bytes(self.plot_image.value)


def _close(a, b) -> bool:
    return len(a) == len(b) and all(abs(float(u) - float(v)) < 1e-9 for u, v in zip(a, b))


def _set_bounds(slider, low: float, high: float, step: float, value) -> None:
    """Give ``slider`` new bounds and value without ever passing through an invalid state."""
    slider.min = min(low, slider.min)
    slider.max = max(high, slider.max)
    slider.value = value
    slider.min = low
    slider.max = high
    slider.step = step
    slider.value = value
