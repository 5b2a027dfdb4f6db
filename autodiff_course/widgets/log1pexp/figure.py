"""The log1pexp explorer's picture (lesson 03), and the static figures drawn from it.

:class:`ExplorerFigure` is one matplotlib figure, created once and moved to show
each view; :func:`render_png` draws any :class:`~.state.ExplorerState` through the
same code, which is how ``course_tools.make_figures`` writes ``figures/``.
"""

from __future__ import annotations

import numpy as np

from ... import log1pexp as numerics
from ...log1pexp import METHOD_LABELS
from ...log1pexp import METHODS
from ...log1pexp import QUANTITY_LABELS
from ...plotting import MUTED_TEXT
from ...plotting import OKABE_ITO
from ...plotting import encode_png
from ...plotting import series_style
from ...plotting import text_colour
from .data import PlottedSeries
from .data import ReadoutValues
from .data import plotted_series
from .data import readout_values
from .layout import FIGURE_SIZE
from .layout import FLAG_MARKERS
from .layout import GREY
from .layout import LABEL_BACKGROUND
from .layout import LEFT
from .layout import LEGEND_SLOTS
from .layout import LIMIT_ROWS
from .layout import MAIN
from .layout import RIGHT
from .layout import STRIP
from .layout import STRIP_ROWS
from .layout import WIDGET_DPI
from .layout import decade_text
from .layout import figure_style
from .layout import place
from .layout import symlog_ticks
from .layout import tick_text
from .state import ExplorerState
from .tables import FLAG_KINDS
from .text_stamps import stamp_text_class
from .wording import TITLES
from .wording import describe_series
from .wording import format_number


class ExplorerFigure:
    """A matplotlib figure for the explorer, created once and updated in place.

    The top strip has one row per method for its flagged points (× nan, ▲ inf,
    ▼ -inf, ○ silent 0.0) with a sentence saying where they are, and two rows
    labelling the float format's limits. The main axes hold the finite points.

    Speed: every text sits at a fixed place (no layout engine, no auto-positioned
    titles or legend) and is a cached bitmap; the readout marks are "animated"
    artists drawn over a saved background, so moving only the readout x redraws
    just them. The result is the same pixels either way.
    """

    def __init__(self, dpi: int = WIDGET_DPI, size=FIGURE_SIZE):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self._style = figure_style()
        self._text_class = stamp_text_class()
        self._scale = None
        self._background = None  # pixels without the readout marks
        self._x_limits = (0.0, 1.0)
        with self._styled():
            self.figure = Figure(figsize=size, dpi=dpi)
            FigureCanvasAgg(self.figure)
            self.ax = self.figure.add_axes(MAIN)
            self.strip = self.figure.add_axes(STRIP, sharex=self.ax)
            self._build_frame()
            self._build_axes_marks()
            self._build_series()

    @property
    def pixel_size(self) -> tuple[int, int]:
        """(width, height) of the picture in pixels."""
        width, height = self.figure.get_size_inches() * self.figure.dpi
        return round(width), round(height)

    # -- building (once) -------------------------------------------------

    def _build_frame(self) -> None:
        from matplotlib.transforms import blended_transform_factory

        fig, strip = self.figure, self.strip
        strip.grid(False)
        strip.xaxis.set_visible(False)
        strip.yaxis.set_visible(False)
        strip.set_ylim(-0.6, 4.6)
        row_labels = blended_transform_factory(strip.transAxes, strip.transData)
        row_label = dict(transform=row_labels, ha="right", va="center", fontsize=10)
        for index, method in enumerate(METHODS):
            self._text(-0.012, STRIP_ROWS[method], method, color=text_colour(index), **row_label)
        self._text(-0.012, 0.5, "limits", color=GREY, **row_label)
        for y in (1.5, 2.5, 3.5):
            strip.axhline(y, color="#dddddd", linewidth=0.8, zorder=0)
        on_figure = fig.transFigure
        top = dict(va="bottom", transform=on_figure)
        centred = dict(ha="center", va="center", transform=on_figure)
        self.title = self._text(LEFT, 0.945, "", fontsize=12, ha="left", **top)
        key = "× nan   ▲ inf   ▼ −inf   ○ silent 0.0"
        self._text(RIGHT, 0.945, key, fontsize=10, color=GREY, ha="right", **top)
        self.ylabel = self._text(0.04, MAIN[1] + MAIN[3] / 2, "", rotation=90, **centred)
        self._text(LEFT + MAIN[2] / 2, 0.125, "x", **centred)

    def _build_axes_marks(self) -> None:
        """Ticks, grid and tick labels as three artists per axis (matplotlib's own
        axis draws a few per tick), and the float format's limits on both axes."""
        from matplotlib.collections import LineCollection
        from matplotlib.markers import TICKDOWN
        from matplotlib.markers import TICKLEFT
        from matplotlib.ticker import FuncFormatter
        from matplotlib.transforms import ScaledTranslation
        from matplotlib.transforms import blended_transform_factory

        ax, strip = self.ax, self.strip
        ax.xaxis.set_major_formatter(FuncFormatter(tick_text))
        ax.yaxis.set_major_formatter(FuncFormatter(tick_text))
        ax.grid(False)
        ax.xaxis.set_visible(False)
        ax.yaxis.set_visible(False)
        on_x = blended_transform_factory(ax.transData, ax.transAxes)
        on_y = blended_transform_factory(ax.transAxes, ax.transData)
        grid_style = dict(
            color=self._style["grid.color"],
            linewidth=0.8,
            alpha=self._style["grid.alpha"],
            zorder=0.5,
        )
        self.x_grid = LineCollection([], transform=on_x, **grid_style)
        self.y_grid = LineCollection([], transform=on_y, **grid_style)
        tick_style = dict(
            linestyle="none", color="black", markersize=3.5, markeredgewidth=0.8, clip_on=False
        )
        (self.x_ticks,) = ax.plot([], [], marker=TICKDOWN, transform=on_x, **tick_style)
        (self.y_ticks,) = ax.plot([], [], marker=TICKLEFT, transform=on_y, **tick_style)
        ax.add_collection(self.x_grid, autolim=False)
        ax.add_collection(self.y_grid, autolim=False)
        points = self.figure.dpi_scale_trans
        below = on_x + ScaledTranslation(0, -6 / 72, points)
        beside = on_y + ScaledTranslation(-6 / 72, 0, points)
        self.x_tick_labels = [
            self._text(0, 0, "", transform=below, ha="center", va="top", fontsize=11)
            for _ in range(16)
        ]
        self.y_tick_labels = [
            self._text(0, 0, "", transform=beside, ha="right", va="center", fontsize=11)
            for _ in range(16)
        ]

        band_style = dict(color=OKABE_ITO["orange"], alpha=0.3, linewidth=0, zorder=0)
        self.band = [a.axvspan(0, 1, **band_style) for a in (ax, strip)]
        self.overflow_lines = [
            a.axvline(0, color="black", linestyle="--", linewidth=1.2, zorder=1)
            for a in (ax, strip)
        ]
        self.cancellation_lines = [
            a.axvline(0, color="black", linestyle=":", linewidth=1.4, zorder=1) for a in (ax, strip)
        ]
        label_style = dict(
            fontsize=10, va="center", color="black", axes=strip, background=LABEL_BACKGROUND
        )
        self.overflow_label = self._text(0, LIMIT_ROWS["overflow"], "", **label_style)
        self.cancellation_label = self._text(0, LIMIT_ROWS["cancellation"], "", **label_style)

    def _build_series(self) -> None:
        """One line, flag marks, a sentence and a legend entry per method, and the
        readout marks, drawn last over a saved background."""
        from matplotlib.lines import Line2D

        ax, strip, fig = self.ax, self.strip, self.figure
        self.lines, self.flags, self.flag_labels, self.legend, self.dots = {}, {}, {}, {}, {}
        for index, method in enumerate(METHODS):
            style = series_style(index)
            (self.lines[method],) = ax.plot([], [], zorder=3, **style)
            self.flags[method] = {}
            flag = dict(linestyle="none", markersize=6, color=style["color"], zorder=3)
            for kind in FLAG_KINDS:
                face = "none" if kind == "zero" else style["color"]
                (self.flags[method][kind],) = strip.plot(
                    [], [], marker=FLAG_MARKERS[kind], markerfacecolor=face, **flag
                )
            self.flag_labels[method] = self._text(
                0,
                STRIP_ROWS[method],
                "",
                fontsize=10,
                va="center",
                color=text_colour(index),
                axes=strip,
                background=LABEL_BACKGROUND,
            )
            x0 = LEGEND_SLOTS[index]
            sample = Line2D(
                [x0, x0 + 0.025, x0 + 0.05],
                [0.035] * 3,
                transform=fig.transFigure,
                color=style["color"],
                linestyle=style["linestyle"],
                marker=style["marker"],
                markevery=[1],
            )
            fig.add_artist(sample)
            label = self._text(
                x0 + 0.06,
                0.035,
                METHOD_LABELS[method],
                fontsize=10,
                va="center",
                ha="left",
                transform=fig.transFigure,
            )
            self.legend[method] = (sample, label)
        self.readout_lines = [
            a.axvline(
                0, color=GREY, linestyle="-", linewidth=1.0, alpha=0.6, zorder=1, animated=True
            )
            for a in (ax, strip)
        ]
        for index, method in enumerate(METHODS):
            style = series_style(index)
            dot = dict(linestyle="none", markersize=9, zorder=4, animated=True)
            (self.dots[method],) = ax.plot(
                [],
                [],
                marker=style["marker"],
                markerfacecolor=style["color"],
                markeredgecolor="black",
                **dot,
            )
        self._animated = [*self.readout_lines, *self.dots.values()]

    def _styled(self):
        """matplotlib settings as :func:`figure_style` says, whatever the notebook set.

        Only the settings that differ are changed (validating all of them on
        every draw would cost milliseconds).
        """
        import matplotlib as mpl

        current = mpl.rcParams
        changed = {
            key: value
            for key, value in self._style.items()
            if dict.__getitem__(current, key) != value
        }
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

    def update(
        self, state: ExplorerState, series: dict[str, PlottedSeries], readout: ReadoutValues
    ) -> None:
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
            self.title.set_text(f"{state.dtype}: {TITLES[state.quantity]}")
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
        if x_hi - x_lo < 1e-9 * max(1.0, abs(x_lo)):  # a zero-width range
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

        def at(x: float) -> str:
            return format_number(x, "fixed", typographic=True)

        label = self.overflow_label
        label.set_visible(band_visible)
        label.set_text(f"1/(1+eˣ) subnormal from {at(flush)}, eˣ = inf from {at(overflow)}")
        if (flush - x_lo) > 0.55 * span:
            place(label, min(flush, x_hi) - 0.01 * span, "right")
        else:
            place(label, max(overflow, x_lo) + 0.01 * span, "left")

        label = self.cancellation_label
        label.set_visible(x_lo <= cancel <= x_hi)
        label.set_text(f"1 + eˣ rounds to 1 below {at(cancel)}")
        if (cancel - x_lo) < 0.45 * span:
            place(label, cancel + 0.01 * span, "left")
        else:
            place(label, cancel - 0.01 * span, "right")

    def _update_scale(self, state: ExplorerState) -> None:
        from matplotlib.ticker import AutoLocator
        from matplotlib.ticker import FixedLocator
        from matplotlib.ticker import FuncFormatter
        from matplotlib.ticker import NullLocator

        scale = "symlog" if state.quantity == "relative_error" else "linear"
        key = (scale, state.dtype if scale == "symlog" else None)
        if key == self._scale:
            return
        if scale == "symlog":
            linthresh = numerics.thresholds(state.dtype).eps / 16
            self.ax.set_yscale("symlog", linthresh=linthresh, linscale=0.5)
            self.ax.yaxis.set_major_locator(FixedLocator(symlog_ticks(linthresh)))
            self.ax.yaxis.set_major_formatter(FuncFormatter(decade_text))
        else:
            self.ax.set_yscale("linear")
            self.ax.yaxis.set_major_locator(AutoLocator())
            self.ax.yaxis.set_major_formatter(FuncFormatter(tick_text))
        self.ax.yaxis.set_minor_locator(NullLocator())
        self._scale = key

    def _update_tick_labels(self) -> None:
        for axis, labels, limits in (
            (self.ax.xaxis, self.x_tick_labels, self.ax.get_xlim()),
            (self.ax.yaxis, self.y_tick_labels, self.ax.get_ylim()),
        ):
            lo, hi = sorted(limits)
            slack = 1e-9 * (hi - lo)
            ticks = [t for t in axis.get_majorticklocs() if lo - slack <= t <= hi + slack]
            on_x = axis is self.ax.xaxis
            if on_x:
                self.x_grid.set_segments([[(t, 0.0), (t, 1.0)] for t in ticks])
                self.x_ticks.set_data(ticks, [0.0] * len(ticks))
            else:
                self.y_grid.set_segments([[(0.0, t), (1.0, t)] for t in ticks])
                self.y_ticks.set_data([0.0] * len(ticks), ticks)
            formatter = axis.get_major_formatter()
            for index, label in enumerate(labels):
                label.set_visible(index < len(ticks))
                if index < len(ticks):
                    label.set_text(formatter(ticks[index], index))
                    (label.set_x if on_x else label.set_y)(ticks[index])

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
            label.set_color(MUTED_TEXT)
            place(label, x_lo + 0.01 * span, "left")
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
        label.set_color(text_colour(METHODS.index(method)))
        label.set_text(describe_series(series, typographic=True))
        if not flagged.any():
            place(label, x_lo + 0.01 * span, "left")
            return
        where = series.x[flagged]
        first, last = (float(where.min()) - x_lo) / span, (float(where.max()) - x_lo) / span
        if first > 0.5:
            place(label, x_lo + (first - 0.015) * span, "right")
        elif last < 0.5:
            place(label, x_lo + (last + 0.015) * span, "left")
        else:
            place(label, x_lo + 0.5 * span, "center")

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
                canvas.draw()  # skips the animated readout marks
                self._background = canvas.copy_from_bbox(self.figure.bbox)
            else:
                canvas.restore_region(self._background)
            for artist in self._animated:
                self.figure.draw_artist(artist)
        return np.asarray(canvas.buffer_rgba())

    def png(self) -> bytes:
        """Draw and encode as PNG (deterministic bytes, see ``plotting.encode_png``)."""
        return encode_png(self.rgba())


def render_png(
    state: ExplorerState | None = None, figure: ExplorerFigure | None = None, dpi: int = WIDGET_DPI
) -> bytes:
    """The explorer's plot for ``state`` (default: the opening view) as PNG bytes,
    by the widget's own code path."""
    state = state or ExplorerState()
    figure = figure or ExplorerFigure(dpi=dpi)
    figure.update(state, plotted_series(state), readout_values(state))
    return figure.png()
