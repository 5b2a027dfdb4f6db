"""The course's three widgets on Colab's ipywidgets 7.7.1, driven control by control.

Runs in the simulated Colab runtime of ``test_colab_simulation.py`` (Colab's
TensorFlow, NumPy, matplotlib and ipywidgets, built once into ``.cache/``), with
the helper package taken from this checkout. Every control of the chain-rule
explorer (lesson 01), the log1pexp explorer (lesson 03) and the Jacobian heatmap
(lesson 05) is set through its ``value``, as the front end would; each change must
re-render without an exception or a warning raised from the course's code (a
deprecated ipywidgets or matplotlib call), and each widget's display bundle
must be the live widget view, a still picture and plain text.
"""

from __future__ import annotations

import json
import os
import subprocess

from test_colab_simulation import colab_python  # noqa: F401  (the simulated runtime)

from course_tools.config import ROOT

DRIVE = r"""
import json, warnings
from autodiff_course.notebook_setup import silence_tensorflow_logs
silence_tensorflow_logs()
import autodiff_course, ipywidgets, matplotlib
from IPython.core.formatters import DisplayFormatter
from autodiff_course.widgets.chain_rule import ChainRuleExplorer
from autodiff_course.widgets.jacobian_heatmap import BATCH_MAX, BATCH_MIN, LAYERS, JacobianHeatmap
from autodiff_course.widgets.log1pexp import DTYPES, METHODS, QUANTITIES, X_BOUNDS, Log1pexpExplorer

report = {"ipywidgets": ipywidgets.__version__, "matplotlib": matplotlib.__version__,
          "package": autodiff_course.__file__, "bundles": {}, "renders": {}}
caught = warnings.catch_warnings(record=True)
seen = caught.__enter__()
warnings.simplefilter("always")
chain = ChainRuleExplorer()
for x in (-6.0, -0.25, 0.0, 2.5, 6.0):
    chain.x_input.value = x
    assert chain.values.x == x and chain.values.agree, x

heatmap = JacobianHeatmap()
for layer in LAYERS:
    heatmap.layer.value = layer
    for batch in range(BATCH_MIN, BATCH_MAX + 1):
        heatmap.batch.value = batch
        assert (heatmap.structure.layer, heatmap.structure.batch) == (layer, batch)

explorer = Log1pexpExplorer(num_points=60)
for dtype in DTYPES:
    explorer.dtype_choice.value = dtype
    low, high = X_BOUNDS[dtype]
    assert (explorer.x_from_input.min, explorer.x_to_input.max) == (low, high)
    for quantity in QUANTITIES:
        explorer.quantity_choice.value = quantity
        for end, value in ((explorer.x_to_input, high), (explorer.x_from_input, low),
                           (explorer.x_from_input, high), (explorer.x_to_input, low)):
            end.value = value
        explorer.readout_x_input.value = (low + high) / 2
        assert explorer.state.dtype == dtype and explorer.state.quantity == quantity
    for method in METHODS:
        explorer.method_checkboxes[method].value = False
    assert explorer.state.methods == () and "No method" in explorer.alt_text()
    for method in METHODS:
        explorer.method_checkboxes[method].value = True
report["renders"]["log1pexp"] = explorer.render_count
caught.__exit__(None, None, None)
report["warnings"] = [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
                      for w in seen]
for name, widget in (("chain_rule", chain), ("heatmap", heatmap), ("log1pexp", explorer)):
    data, _ = DisplayFormatter().format(widget)
    view = data["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == widget.widget.model_id
    report["bundles"][name] = sorted(data)
print(json.dumps(report))
"""


def test_every_widget_is_driven_on_ipywidgets_7(colab_python, tmp_path):  # noqa: F811
    environment = {
        key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")
    }
    environment["PYTHONPATH"] = str(ROOT)  # this checkout's helper package
    done = subprocess.run(
        [str(colab_python), "-c", DRIVE],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=environment,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["ipywidgets"] == "7.7.1"
    assert report["package"].startswith(str(ROOT))
    expected = ["application/vnd.jupyter.widget-view+json", "text/html", "text/plain"]
    assert report["bundles"] == {"chain_rule": expected, "heatmap": expected, "log1pexp": expected}
    assert report["renders"]["log1pexp"] > 50
    package = str(ROOT / "autodiff_course")
    assert [line for line in report["warnings"] if line.startswith(package)] == []
