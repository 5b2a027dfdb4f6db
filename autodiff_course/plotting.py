"""One look for every plot of the course (set by the setup cell of lesson 00 on).

Okabe-Ito colours, which stay distinct for the common kinds of colour blindness,
each paired with its own line style and marker so that a plot also reads in grey
or on a washed-out projector. Fonts are sized for a projector.
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


def use_course_style() -> None:
    """Apply the course's matplotlib settings, with the colour cycle above."""
    import matplotlib as mpl
    from cycler import cycler

    mpl.rcParams.update(COURSE_RC)
    mpl.rcParams["axes.prop_cycle"] = cycler(
        color=[style[0] for style in SERIES_STYLES],
        linestyle=[style[1] for style in SERIES_STYLES],
    )


def png_bytes(figure, dpi: int | None = None) -> bytes:
    """Render a figure to PNG bytes that are the same on every run (no timestamp)."""
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi or figure.dpi,
                   metadata={"Software": None},
                   pil_kwargs={"compress_level": 1})
    return buffer.getvalue()
