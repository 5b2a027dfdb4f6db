"""The course's three widgets on Colab's ipywidgets 7.7.1 and anywidget 0.9.21.

Runs in the simulated Colab runtime of ``test_colab_simulation.py`` (Colab's
TensorFlow, NumPy, matplotlib, ipywidgets and anywidget, built once into
``.cache/``), with the helper package taken from this checkout. Each widget is
driven as its front end drives it, through the synced state a browser writes
(the chain-rule explorer's ``index``, the heatmap's ``layer`` and ``batch``, the
log1pexp explorer's ``view``), and from Python; its Python side must follow
without an exception or a warning raised from the course's code, every table the
front end draws must be in the synced state, and each widget's display bundle must
be the live widget view, a still picture and plain text.
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
import anywidget, autodiff_course, ipywidgets, matplotlib
from IPython.core.formatters import DisplayFormatter
from autodiff_course.widgets.chain_rule import ChainRuleExplorer, grid
from autodiff_course.widgets.jacobian_heatmap import BATCH_MAX, BATCH_MIN, LAYERS, JacobianHeatmap
from autodiff_course.widgets.log1pexp import DTYPES, METHODS, QUANTITIES, X_BOUNDS, Log1pexpExplorer
from autodiff_course.widgets.log1pexp.widget import view_of

report = {"ipywidgets": ipywidgets.__version__, "anywidget": anywidget.__version__,
          "package": autodiff_course.__file__, "bundles": {}, "views": {}}
caught = warnings.catch_warnings(record=True)
seen = caught.__enter__()
warnings.simplefilter("always")

chain = ChainRuleExplorer()
assert len(chain.widget.readouts) == len(chain.widget.points) == len(grid())
for index in range(len(grid())):  # what the arrow keys send
    chain.widget.index = index
    assert chain.values.x == grid()[index] and chain.values.agree, index
for x in (-9.0, -0.3, 6.0):
    chain.set_x(x)
report["views"]["chain_rule"] = len(grid())

heatmap = JacobianHeatmap()
batches = range(BATCH_MIN, BATCH_MAX + 1)
assert set(heatmap.widget.views) == {f"{layer}/{batch}" for layer in LAYERS for batch in batches}
for layer in LAYERS:
    for batch in range(BATCH_MIN, BATCH_MAX + 1):
        heatmap.widget.layer, heatmap.widget.batch = layer, batch  # as the front end sends
        assert (heatmap.structure.layer, heatmap.structure.batch) == (layer, batch)
        heatmap.show(layer=layer, batch=batch)
report["views"]["heatmap"] = len(heatmap.widget.views)

explorer = Log1pexpExplorer()
assert set(explorer.widget.tables) == set(DTYPES)
views = 0
for dtype in DTYPES:
    low, high = X_BOUNDS[dtype]
    for quantity in QUANTITIES:
        for x_range in ((low, high), (high, low), (low, low)):
            explorer.set_state(dtype=dtype, quantity=quantity, x_range=x_range,
                               readout_x=(low + high) / 2)
            assert explorer.state.dtype == dtype and explorer.state.quantity == quantity
            assert explorer.state.x_range[0] < explorer.state.x_range[1]
            explorer.widget.view = view_of(explorer.state)  # the front end writes it back
            assert explorer.state.dtype == dtype
            explorer.text_summary(), explorer.alt_text()
            views += 1
explorer.set_state(methods=())
assert explorer.state.methods == () and "No method" in explorer.alt_text()
explorer.set_state(methods=METHODS)
report["views"]["log1pexp"] = views
caught.__exit__(None, None, None)
report["warnings"] = [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}"
                      for w in seen]
for name, widget in (("chain_rule", chain), ("heatmap", heatmap), ("log1pexp", explorer)):
    data, _ = DisplayFormatter().format(widget)
    view = data["application/vnd.jupyter.widget-view+json"]
    assert view["model_id"] == widget.widget.model_id
    assert widget.widget._esm.rstrip().endswith("export default { render };")
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
    assert (report["ipywidgets"], report["anywidget"]) == ("7.7.1", "0.9.21")
    assert report["package"].startswith(str(ROOT))
    expected = ["application/vnd.jupyter.widget-view+json", "text/html", "text/plain"]
    assert report["bundles"] == {"chain_rule": expected, "heatmap": expected, "log1pexp": expected}
    assert report["views"] == {"chain_rule": 49, "heatmap": 15, "log1pexp": 36}
    package = str(ROOT / "autodiff_course")
    assert [line for line in report["warnings"] if line.startswith(package)] == []
