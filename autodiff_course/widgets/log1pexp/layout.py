"""How the log1pexp explorer's picture is laid out and lettered: its size, the fixed
places of its axes and labels (in figure fractions, so nothing is measured at draw
time), its matplotlib style, and the text of its ticks."""

from __future__ import annotations

import numpy as np

from ...plotting import COURSE_RC
from .wording import format_number

FIGURE_SIZE = (8.0, 5.25)  # inches: 640 x 420 pixels at the widget's 80 dpi
WIDGET_DPI = 80
FLAG_MARKERS = {"nan": "x", "posinf": "^", "neginf": "v", "zero": "o"}
STRIP_ROWS = {"naive": 4.0, "documented": 3.0, "stable": 2.0}
LIMIT_ROWS = {"cancellation": 1.0, "overflow": 0.0}
GREY = "#555555"
LABEL_BACKGROUND = (255, 255, 255, 220)  # behind labels that may cross marks

# Layout in figure fractions (fixed, so nothing is measured at draw time).
LEFT, RIGHT = 0.155, 0.975
MAIN = (LEFT, 0.20, RIGHT - LEFT, 0.465)
STRIP = (LEFT, 0.695, RIGHT - LEFT, 0.235)
LEGEND_SLOTS = (0.17, 0.44, 0.71)


def figure_style() -> dict:
    """matplotlib's defaults plus the course's settings: the same look in every process."""
    import matplotlib as mpl

    style = {
        key: value
        for key, value in mpl.rcParamsDefault.items()
        if key not in ("backend", "backend_fallback", "interactive")
    }
    style.update(COURSE_RC)
    style.update({"axes.unicode_minus": True, "path.simplify": True})
    return style


def tick_text(value: float, _position=None) -> str:
    return format_number(value, "tick", typographic=True)


def decade_text(value: float, _position=None) -> str:
    return format_number(value, "decade", typographic=True)


def symlog_ticks(linthresh: float) -> list[float]:
    """0, then 1 (a 100 % error) and every few decades down to about ``linthresh``."""
    lowest = int(np.ceil(np.log10(linthresh)))
    stride = max(1, int(np.ceil((1 - lowest) / 5)))
    return [0.0] + sorted(10.0**e for e in range(0, lowest - 1, -stride))


def place(text, x: float, align: str) -> None:
    text.set_x(x)
    text.set_horizontalalignment(align)
