"""One look for every plot of the course (set by the setup cell of lesson 00 on).

Okabe-Ito colours, which stay distinct for the common kinds of colour blindness,
each paired with its own line style and marker so that a plot also reads in grey
or on a washed-out projector. Fonts are sized for a projector. Text drawn in a
series' colour uses its darker companion in :data:`TEXT_COLOURS`, which keeps a
contrast of at least 4.5:1 (WCAG 2.1 AA for normal text) on white and on the grey of
JupyterLab's striped table rows.

:func:`encode_png` is the course's one PNG writer: the widgets of lessons 01, 03
and 05 turn every picture into PNG bytes with it.
"""

from __future__ import annotations

OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}

# (colour, line style, marker) for the 1st, 2nd, ... series of a plot.
SERIES_STYLES = [
    (OKABE_ITO["blue"], "-", "o"),
    (OKABE_ITO["vermillion"], "--", "s"),
    (OKABE_ITO["green"], ":", "^"),
    (OKABE_ITO["purple"], "-.", "D"),
    (OKABE_ITO["orange"], (0, (5, 1, 1, 1)), "v"),
    (OKABE_ITO["sky"], (0, (1, 1)), "P"),
]

# The same hues, darkened until text in them reaches 4.5:1 against white and against
# the light grey of JupyterLab's striped table rows (#F5F5F5).
TEXT_COLOURS = ["#0072B2", "#B65000", "#007E5C", "#9A5B7E", "#936600", "#387597"]
MUTED_TEXT = "#6F6F6F"  # grey text
WARNING_TEXT = TEXT_COLOURS[1]
TEXT_BACKGROUNDS = ("#FFFFFF", "#F5F5F5")

COURSE_RC = {
    "font.size": 12,
    "axes.titlesize": 13,
    "axes.labelsize": 12,
    "legend.fontsize": 10,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "lines.linewidth": 2.0,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 80,
    "savefig.dpi": 100,
    "figure.figsize": (7.5, 4.0),
    "svg.hashsalt": "gradients-on-tape",
}


def series_style(index: int) -> dict:
    """Keyword arguments for ``plot`` giving series ``index`` its colour and dashes."""
    colour, linestyle, marker = SERIES_STYLES[index % len(SERIES_STYLES)]
    return {"color": colour, "linestyle": linestyle, "marker": marker, "markevery": 0.1}


def text_colour(index: int) -> str:
    """The colour for text about series ``index``: its hue, readable on white."""
    return TEXT_COLOURS[index % len(TEXT_COLOURS)]


def contrast_ratio(colour: str, background: str = "#FFFFFF") -> float:
    """WCAG 2.1 contrast ratio of two ``#RRGGBB`` colours (1 to 21)."""

    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    darker, lighter = sorted((luminance(colour), luminance(background)))
    return (lighter + 0.05) / (darker + 0.05)


def use_course_style() -> None:
    """Apply the course's matplotlib settings, with the colour cycle above."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(COURSE_RC)
    mpl.rcParams["axes.prop_cycle"] = cycler(
        color=[style[0] for style in SERIES_STYLES],
        linestyle=[style[1] for style in SERIES_STYLES],
    )


def encode_png(rgba) -> bytes:
    """PNG bytes of an RGBA image array (height, width, 4), stored as 8-bit RGB.

    Written directly: no row filter and zlib level 1, which took about half the
    time of matplotlib's ``savefig`` through Pillow when measured, and no text chunk
    or timestamp, so the same pixels always give the same bytes.
    """
    import struct
    import zlib

    import numpy as np

    height, width = rgba.shape[:2]
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type "None" for every row
    pixels = rows[:, 1:].reshape(height, width, 3)
    for channel in range(3):  # a channel at a time: several times faster than all three
        pixels[..., channel] = rgba[..., channel]
    compressor = zlib.compressobj(1, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY)
    data = compressor.compress(rows) + compressor.flush()

    def chunk(tag: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + tag
            + body
            + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )


def figure_png(figure) -> bytes:
    """Draw a matplotlib ``Figure`` with Agg and return it as :func:`encode_png` bytes."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = (
        figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    )
    canvas.draw()
    return encode_png(np.asarray(canvas.buffer_rgba()))
