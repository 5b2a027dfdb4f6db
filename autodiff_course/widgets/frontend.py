"""The browser side of the course's widgets (lessons 01, 03 and 05), shipped in the package.

Each widget is an `anywidget <https://anywidget.dev>`_ whose JavaScript module and
style sheet live in ``static/`` beside this file: nothing is fetched from a CDN,
in JupyterLab, Colab, VS Code, a saved notebook or the course's web site. The
module only draws: every number it shows arrives in the widget's state, computed
in Python with TensorFlow, as base64 text of the arrays' bytes (:func:`encoded`),
which survives the widget's saved state in a notebook as it is.

:func:`module_source` is the module of one widget: ``static/common.js`` (number
formatting, decoding, the canvas helpers the widgets share) followed by the
widget's own file, which ends with the ``export default`` that anywidget runs.
"""

from __future__ import annotations

import base64
import functools
from pathlib import Path

import numpy as np

STATIC = Path(__file__).resolve().parent / "static"
WIDGET_NAMES = ("chain_rule", "log1pexp", "jacobian_heatmap")
# How each dtype travels: float16 as float32 (exact: every float16 is a float32),
# since not every browser has a Float16Array.
STORAGE = {
    "float16": "float32",
    "float32": "float32",
    "float64": "float64",
    "bool": "uint8",
    "uint8": "uint8",
}


@functools.cache
def module_source(name: str) -> str:
    """The JavaScript module of widget ``name`` (one of :data:`WIDGET_NAMES`)."""
    if name not in WIDGET_NAMES:
        raise ValueError(f"no widget module {name!r}; there are {', '.join(WIDGET_NAMES)}.")
    return (STATIC / "common.js").read_text(encoding="utf-8") + (STATIC / f"{name}.js").read_text(
        encoding="utf-8"
    )


SLIDES_SCRIPT_CLASS = "course-widget-slides"


@functools.cache
def saved_model_source() -> str:
    """``static/saved_model.js``: the model a widget draws from where no widget manager
    runs (the course's web site, slide mode)."""
    return (STATIC / "saved_model.js").read_text(encoding="utf-8")


@functools.cache
def slides_script() -> str:
    """The script each still picture carries (``static/slides.js``, after
    ``static/saved_model.js``): in slide mode it swaps the pictures for live widgets."""
    return saved_model_source() + (STATIC / "slides.js").read_text(encoding="utf-8")


@functools.cache
def style_sheet() -> str:
    """The style sheet every widget of the course shares."""
    return (STATIC / "widgets.css").read_text(encoding="utf-8")


def encoded(array) -> dict:
    """``{"dtype": storage dtype, "data": base64 of the little-endian bytes}`` of ``array``."""
    array = np.asarray(array)
    storage = STORAGE[array.dtype.name]
    raw = np.ascontiguousarray(array.astype(np.dtype(storage).newbyteorder("<")))
    return {"dtype": storage, "data": base64.b64encode(raw.tobytes()).decode("ascii")}


def decoded(payload: dict) -> np.ndarray:
    """The array that :func:`encoded` wrote (for tests and tools)."""
    storage = np.dtype(payload["dtype"]).newbyteorder("<")
    return np.frombuffer(base64.b64decode(payload["data"]), dtype=storage)
