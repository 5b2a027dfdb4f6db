"""Interactive widgets of the course; each module names the lesson that uses it.

* :mod:`.chain_rule`: the chain-rule explorer of lesson 01;
* :mod:`.log1pexp`: the log1pexp explorer of lesson 03;
* :mod:`.jacobian_heatmap`: the Jacobian-structure heatmap of lesson 05.

Each has the same shape: a function computes a small immutable state or data
object with ``tf.GradientTape``; render functions turn it into a picture, HTML and
text; a thin ipywidgets class writes its controls from the state and shows the
renders. The widgets use only ipywidgets' built-in controls (no ``Output``
widget, no custom front-end code), each labelled and operable by keyboard, so
they work with ipywidgets 7 (Colab) and 8 (JupyterLab 4), and a saved notebook
and a re-run one carry the same cell output (see :mod:`.display`).
"""
