"""Interactive widgets of the course; each module names the lesson that uses it.

* :mod:`.chain_rule`: the chain-rule explorer of lesson 01;
* :mod:`.log1pexp`: the log1pexp explorer of lesson 03;
* :mod:`.jacobian_heatmap`: the Jacobian-structure heatmap of lesson 05.

Each has the same shape: Python computes, with ``tf.GradientTape``, every table the
widget can show, and hands them to a front-end widget (an anywidget whose JavaScript
lives in ``static/``, see :mod:`.frontend`) that draws them in the browser with no
kernel round trip, in JupyterLab, Colab, slide mode, a reopened notebook and the
course's web site. The cell output also carries a still picture and plain text
(see :mod:`.display`), so a saved notebook and a re-run one read the same.
"""
