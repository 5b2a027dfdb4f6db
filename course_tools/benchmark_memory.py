"""Peak memory: of each notebook's kernel with its widgets exercised, and of the
Jupyter server; and the memory a hub gives each learner, derived from the peaks that
a class on a real hub reached (:mod:`course_tools.benchmark_hub`).

The figure is a process's own high-water mark of resident memory, ``VmHWM`` in
``/proc/PID/status``, which the process cannot exceed between two samples as a
sampled RSS can.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import nbformat


def peak_resident_mb(pid: int) -> float:
    """The high-water mark of a process's resident memory (Linux ``VmHWM``), in MiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as error:
        raise RuntimeError(
            f"cannot read the memory peak of process {pid} (this needs Linux's /proc): {error}"
        ) from None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmHWM line")


def jupyter_server_pid() -> int | None:
    """The JupyterLab server that :func:`course_tools.browser.jupyterlab` started here."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            command = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "-m jupyterlab" in command:
            return child.pid
    return None


# Run in a notebook's kernel after its last cell: find every course widget the
# notebook displayed (IPython keeps each displayed result in Out; a course widget has
# its ipywidgets tree in .widget) and drive every control of it through ipywidgets'
# public API: each combination of the choice controls (dtype, quantity, layer, ...),
# and under each one every number control swept from its minimum to its maximum and
# every checkbox toggled; a front-end widget (which computed its tables when its cell
# ran) is set through every view its controls offer. Prints how many widgets and
# changes it drove.
DRIVE_WIDGETS = """
import itertools as _itertools
import ipywidgets as _widgets
import numpy as _np


def _controls(root):
    found, todo = [], [root]
    while todo:
        node = todo.pop(0)
        if isinstance(node, _widgets.Box):
            todo.extend(node.children)
        elif isinstance(node, _widgets.ValueWidget) and not getattr(node, "disabled", False):
            if hasattr(node, "options") and not isinstance(node.value, tuple):
                found.append(("choice", node))
            elif isinstance(node.value, bool):
                found.append(("switch", node))
            elif hasattr(node, "min") and hasattr(node, "max"):
                found.append(("number", node))
    return found


def _sweep(kind, control, steps=5):
    if kind == "switch":
        control.value = not control.value
        control.value = not control.value
        return 2
    low, high = control.min, control.max
    integer = isinstance(low, int)
    if isinstance(control.value, tuple):  # a range: widen it step by step
        tops = _np.linspace(low, high, steps + 1)[1:]
        values = [(low, int(top) if integer else float(top)) for top in tops]
    elif integer:
        values = list(range(low, high + 1))
    else:
        values = [float(v) for v in _np.linspace(low, high, steps)]
    for value in values:
        control.value = value
    return len(values)


def _front_end_views(shown):
    # A front-end widget's views, set as its browser would set them (its Python API).
    if hasattr(shown, "set_x"):  # the chain-rule explorer: every tabulated x
        return [lambda x=x: shown.set_x(x) for x in shown.widget.points]
    if hasattr(shown, "show"):  # the Jacobian heatmap: every layer and batch size
        return [lambda l=l, b=b: shown.show(layer=l, batch=b)
                for l in shown.widget.layers for b in shown.widget.batches]
    if hasattr(shown, "set_state"):  # the log1pexp explorer: every dtype and quantity
        config = shown.widget.config
        return [lambda d=d, q=q: shown.set_state(dtype=d, quantity=q)
                for d in config["dtypes"] for q in config["quantities"]]
    return []


_course_widgets = {id(v): v for v in list(Out.values())
                   if isinstance(getattr(v, "widget", None), _widgets.Widget)}
_changes = 0
for _shown in _course_widgets.values():
    for _view in _front_end_views(_shown):
        _view()
        _changes += 1
    _found = _controls(_shown.widget)
    _choices = [c for kind, c in _found if kind == "choice"]
    _others = [(kind, c) for kind, c in _found if kind != "choice"]
    for _combination in _itertools.product(*[range(len(c.options)) for c in _choices]):
        for _control, _index in zip(_choices, _combination):
            _control.index = _index
            _changes += 1
        for _kind, _control in _others:
            _changes += _sweep(_kind, _control)
print(f"drove {len(_course_widgets)} widgets through {_changes} changes")
"""


def kernel_peak_memory(path: Path) -> tuple[float, float, str]:
    """(the kernel's peak resident MiB, seconds, what was driven): all cells, then
    every control of the widgets the notebook displayed."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(DRIVE_WIDGETS))
    client = NotebookClient(
        nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    started = time.perf_counter()
    with client.setup_kernel():
        kernel = client.km.provisioner.process.pid
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        peak = peak_resident_mb(kernel)
    driven = "".join(output.get("text", "") for output in nb.cells[-1].outputs).strip()
    return peak, time.perf_counter() - started, driven


HUB_STEP_GB = 0.25
HUB_MARGIN = 1.05


def hub_memory(one_lesson_mb: float, three_notebooks_mb: float) -> dict:
    """A hub's per-learner memory guarantee and limit from peaks measured on a hub
    (:mod:`course_tools.benchmark_hub`).

    Guarantee: a learner's single-user server and one lesson's kernel at their peaks,
    what a learner needs to work at all. Limit: a learner with three notebooks open (a
    lesson, its solutions and the lesson before, the heaviest such three), for the
    learner who never shuts a kernel down. Both are the peak plus 5% (a peak differs by
    a few megabytes from run to run), rounded up to a quarter of a gigabyte
    (Kubernetes' G, 10^9 bytes).
    """

    def gigabytes(mib: float) -> str:
        steps = math.ceil(mib * HUB_MARGIN * 2**20 / 1e9 / HUB_STEP_GB - 1e-9)
        return f"{steps * HUB_STEP_GB:g}G"

    return {
        "one_lesson_mb": one_lesson_mb,
        "three_notebooks_mb": three_notebooks_mb,
        "guarantee": gigabytes(one_lesson_mb),
        "limit": gigabytes(three_notebooks_mb),
    }
