"""Interactive widgets of the course; each module names the lesson that uses it.

Widgets here are built from ipywidgets controls, ``HTML`` and ``Image`` only, never
an ``Output`` widget, so that a saved notebook and a re-run one carry the same
cell output, and each widget's plain-text form states its current numbers.
"""


class PlainTextDisplay:
    """Display ``self.widget`` live, with ``self.text_summary()`` as its plain text.

    nbval compares the plain text and skips the widget view, so what a saved
    notebook shows under a widget is its current numbers, checked on every run;
    and a front end without widgets shows that text instead of nothing.
    """

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = self.text_summary()
        return bundle
