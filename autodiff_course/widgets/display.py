"""How the course's widgets display themselves (lessons 01, 03 and 05).

Each widget's cell output carries three views of the same state:

* the live widget (``application/vnd.jupyter.widget-view+json``), which
  JupyterLab, Colab and VS Code draw when their widget manager runs;
* a still picture of the current view (``text/html``: the plot as an ``<img>``
  with its text alternative, and the numbers), which a front end without the
  widget manager shows instead: GitHub, nbviewer, the course's web site with
  JavaScript off, and JupyterLab's slide mode (jupyterlab-rise), where a script in
  the picture (``static/slides.js``) swaps it for the live widget, drawn from the
  state saved in the notebook, once the notebook is trusted (run and saved);
* the view in plain text (``text/plain``), which nbval compares and a terminal
  shows.

The bundle is built from public pieces only (the widget's ``model_id`` and the
widget-view format that ipywidgets 7 and 8 both write), so it works with the
ipywidgets of Colab (7.7) and of JupyterLab 4 (8.1).
"""

from __future__ import annotations

import html

from .frontend import SLIDES_SCRIPT_CLASS
from .frontend import slides_script

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class WidgetDisplay:
    """Mixin for a widget class that provides ``widget`` (its ipywidgets container),
    ``static_html()`` (the still picture) and ``text_summary()`` (the plain text)."""

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        return {
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id},
            "text/html": self.static_html(),
            "text/plain": self.text_summary(),
        }


def still_html(css_class: str, name: str, settings: str, body: str) -> str:
    """A still picture of widget ``name``: a line saying so and how it was set, then
    ``body``, then the script that makes it live in slide mode (:func:`slides_script`)."""
    return (
        f"<div class='{css_class}-still widget-still'>"
        f"<p style='margin:0 0 4px 0'><i>{html.escape(name)}, still picture "
        f"({html.escape(settings)}). Run the notebook in JupyterLab to use its "
        f"controls.</i></p>{body}</div>"
        f"<script type='module' class='{SLIDES_SCRIPT_CLASS}'>{slides_script()}</script>"
    )


def image_html(png: bytes, alt: str, size: tuple[int, int] | None = None) -> str:
    """An ``<img>`` of PNG bytes with ``alt`` as its text alternative (and, if given,
    its (width, height) in pixels, so the page keeps its place while it loads)."""
    import base64

    source = base64.b64encode(png).decode("ascii")
    extent = f" width='{size[0]}' height='{size[1]}'" if size else ""
    return (
        f"<img src='data:image/png;base64,{source}' alt='{html.escape(alt, quote=True)}'"
        f"{extent} style='display:block'>"
    )
