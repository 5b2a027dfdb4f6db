"""Interactive widgets of the course; each module names the lesson that uses it.

Widgets here are built from ipywidgets controls, ``HTML`` and ``Image`` only, never
an ``Output`` widget, so that a saved notebook and a re-run one carry the same
cell output, and each widget's plain-text form states its current numbers.
"""
