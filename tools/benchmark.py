"""Measure what a learner feels, and print one table.

    ./course.sh bench            (or: python tools/benchmark.py [--changes 40])

1. **Explorer latency** in real Chromium: from a key press on a control of the
   log1pexp explorer to the new plot being painted (median and p95 over many
   changes), next to the *floor* measured in the same page: a slider that swaps
   two ready-made PNGs in an ``Image`` widget with no computation at all.
   Targets: median <= 70 ms, p95 <= 150 ms. The kernel-side share of it (compute
   and render, from ``tools/benchmark_explorer.py``) is reported too: budget ~30 ms.
2. **Peak memory**: each notebook's kernel runs top to bottom, then every control
   of the widgets it displayed is driven through ipywidgets' Python API (lesson 01's
   chain-rule explorer, lesson 03's log1pexp explorer, lesson 05's Jacobian heatmap:
   see ``DRIVE_WIDGETS``); the
   figure is the kernel's own high-water mark of resident memory, ``VmHWM`` in
   ``/proc/PID/status``, which the kernel cannot exceed between two samples as a
   sampled RSS can. The Jupyter server's high-water mark is read the same way at the
   end of the browser session of 1. From both come the memory guarantee (the server
   and one lesson at its peak) and limit (the server and two lessons at their peaks)
   per learner on a hub, which the instructor guide quotes.
   Target: <= 800 MB per kernel, so a 2 GB Binder session holds two lessons.
3. **Validation time**: nbval over every notebook, against the floor of starting
   one kernel and importing TensorFlow per notebook. Target: <= 1.5 x the floor.

Timing is noisy on shared machines: medians are quoted, and nothing here is a
pass/fail test.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "tools"))

import nbformat  # noqa: E402

from jupyterlab import (  # noqa: E402
    chromium_browser, find_chromium, jupyterlab, open_notebook, run_all_cells, scratch_copy,
)
from benchmark_explorer import (  # noqa: E402
    EXPLORER, EXPLORER_CELL, FLOOR, FLOOR_CELL, measure_latency, percentile,
    run as kernel_side_updates,
)
from notebook_format import load_course  # noqa: E402

RESULTS = ROOT / "benchmark" / "latest.json"

SETUP_CELL = "from autodiff_course import setup_notebook\nsetup_notebook()"

def peak_resident_mb(pid: int) -> float:
    """The high-water mark of a process's resident memory (Linux ``VmHWM``), in MiB."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as error:
        raise RuntimeError(f"cannot read the memory peak of process {pid} (this needs "
                           f"Linux's /proc): {error}") from None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmHWM line")


def jupyter_server_pid() -> int | None:
    """The JupyterLab server that tests/browser/jupyterlab.py started for this process."""
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            command = " ".join(child.cmdline())
        except psutil.Error:
            continue
        if "-m jupyterlab" in command:
            return child.pid
    return None


def explorer_latency(changes: int) -> dict:
    chromium = find_chromium()
    if chromium is None:
        return {"error": "Chromium not found"}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        root = scratch_copy(scratch / "course")
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(SETUP_CELL),
                    nbformat.v4.new_code_cell(FLOOR_CELL),
                    nbformat.v4.new_code_cell(EXPLORER_CELL)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        nbformat.write(nb, root / "benchmark.ipynb")
        with jupyterlab(root, scratch / "lab.log") as (base_url, token), \
                chromium_browser(chromium) as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            open_notebook(page, base_url, token, "benchmark.ipynb")
            run_all_cells(page)
            page.wait_for_selector(".benchmark-floor img")
            page.wait_for_selector(".log1pexp-explorer img")
            page.wait_for_timeout(1500)
            measure_latency(page, FLOOR, 5)  # warm up both
            measure_latency(page, EXPLORER, 5)
            floor = measure_latency(page, FLOOR, changes)
            explorer = measure_latency(page, EXPLORER, changes)
            # A learner's session goes on: open the heaviest lesson and run it, then
            # read the server's peak, reached while serving notebooks and widgets.
            open_notebook(page, base_url, token, "solutions/03-custom-gradients.ipynb")
            run_all_cells(page)
            server = jupyter_server_pid()
            server_mb = peak_resident_mb(server) if server else None
    return {"floor": floor, "explorer": explorer, "server_peak_mb": server_mb}


# Run in a notebook's kernel after its last cell: find every course widget the
# notebook displayed (IPython keeps each displayed result in Out; a course widget has
# its ipywidgets tree in .widget) and drive every control of it through ipywidgets'
# public API: each combination of the choice controls (dtype, quantity, layer, ...),
# and under each one every number control swept from its minimum to its maximum and
# every checkbox toggled. Prints how many widgets and changes it drove.
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


_course_widgets = {id(v): v for v in list(Out.values())
                   if isinstance(getattr(v, "widget", None), _widgets.Widget)}
_changes = 0
for _shown in _course_widgets.values():
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
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    with client.setup_kernel():
        kernel = client.km.provisioner.process.pid
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        peak = peak_resident_mb(kernel)
    driven = "".join(output.get("text", "") for output in nb.cells[-1].outputs).strip()
    return peak, time.perf_counter() - started, driven


HUB_STEP_GB = 0.25


def hub_memory(server_mb: float, kernel_mb: float) -> dict:
    """A hub's per-learner memory guarantee and limit from measured peaks.

    Guarantee: the single-user server and one lesson's kernel at its peak, what a
    learner needs to work at all. Limit: the server and two kernels at their peaks,
    for one lesson finished but still open beside the current one. Both rounded up
    to a quarter of a gigabyte (Kubernetes' G, 10^9 bytes).
    """
    import math

    def gigabytes(mib: float) -> str:
        steps = math.ceil(mib * 2**20 / 1e9 / HUB_STEP_GB - 1e-9)
        return f"{steps * HUB_STEP_GB:g}G"

    return {"server_mb": server_mb, "kernel_mb": kernel_mb,
            "guarantee": gigabytes(server_mb + kernel_mb),
            "limit": gigabytes(server_mb + 2 * kernel_mb)}


def import_floor_seconds(notebooks: int) -> float:
    """Start a kernel, import TensorFlow through the setup cell, stop: per notebook."""
    from nbclient import NotebookClient

    started = time.perf_counter()
    for _ in range(notebooks):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(SETUP_CELL + "\nimport tensorflow")]
        NotebookClient(nb, timeout=600, kernel_name="python3").execute()
    return time.perf_counter() - started


def validation_seconds() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "lessons", "solutions"],
                   cwd=ROOT, check=False, capture_output=True)
    return time.perf_counter() - started


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Print the course's performance figures.")
    parser.add_argument("--changes", type=int, default=40,
                        help="control changes per latency series (at least 30)")
    parser.add_argument("--save", action="store_true",
                        help="write benchmark/latest.json and the README's figures")
    args = parser.parse_args(argv)
    course = load_course()
    rows = []

    latency = explorer_latency(max(30, args.changes))
    if "error" in latency:
        rows.append(("explorer latency", latency["error"], "", ""))
    else:
        for name in ("floor", "explorer"):
            samples = latency[name]
            rows.append((f"{name}: key press to painted plot, median",
                         f"{statistics.median(samples):.0f} ms",
                         "<= 70 ms" if name == "explorer" else "", f"n={len(samples)}"))
            rows.append((f"{name}: key press to painted plot, p95",
                         f"{percentile(samples, 0.95):.0f} ms",
                         "<= 150 ms" if name == "explorer" else "", ""))
        ratio = statistics.median(latency["explorer"]) / statistics.median(latency["floor"])
        rows.append(("explorer / floor, medians", f"{ratio:.2f}x", "", ""))

    kernel = kernel_side_updates(changes=max(30, args.changes), cold=False)
    updates = [ms for times in kernel["kinds"].values() for ms in times["total"]]
    rows.append(("explorer: kernel-side work per change, median",
                 f"{statistics.median(updates):.1f} ms", "~30 ms", f"n={len(updates)}"))
    rows.append(("explorer: kernel-side work per change, p95",
                 f"{percentile(updates, 0.95):.1f} ms", "", ""))

    peak_by_notebook = {}
    for lesson in course.lessons:
        for folder in ("lessons", "solutions"):
            peak, seconds, driven = kernel_peak_memory(ROOT / folder / lesson.filename)
            peak_by_notebook[f"{folder}/{lesson.slug}"] = peak
            rows.append((f"kernel peak memory (VmHWM), {folder}/{lesson.slug}",
                         f"{peak:.0f} MB", "<= 800 MB", f"ran in {seconds:.1f} s; {driven}"))
    server_mb = latency.get("server_peak_mb")
    hub = None
    if server_mb is None:
        rows.append(("Jupyter server peak memory (VmHWM)", "not measured", "",
                     latency.get("error", "server not found")))
    else:
        rows.append(("Jupyter server peak memory (VmHWM)", f"{server_mb:.0f} MB", "",
                     "end of the browser session"))
        hub = hub_memory(server_mb, max(peak_by_notebook.values()))
        rows.append(("hub memory guarantee per learner (server + 1 kernel at peak)",
                     hub["guarantee"], "", f"{server_mb + hub['kernel_mb']:.0f} MB measured"))
        rows.append(("hub memory limit per learner (server + 2 kernels at peak)",
                     hub["limit"], "", f"{server_mb + 2 * hub['kernel_mb']:.0f} MB measured"))

    notebooks = 2 * len(course.lessons)
    floor = import_floor_seconds(notebooks)
    validation = validation_seconds()
    rows.append((f"floor: {notebooks} x (start kernel + import TensorFlow)", f"{floor:.1f} s",
                 "", ""))
    rows.append(("nbval over lessons/ and solutions/", f"{validation:.1f} s", "", ""))
    rows.append(("validation / floor", f"{validation / floor:.2f}x", "<= 1.5x", ""))

    width = max(len(row[0]) for row in rows)
    today = date.today().isoformat()
    print(f"Benchmark, {today}, {machine()}")
    print(f"{'measure'.ljust(width)}  {'value':>10}  {'target':>10}  note")
    for name, value, target, note in rows:
        print(f"{name.ljust(width)}  {value:>10}  {target:>10}  {note}")
    if args.save:
        results = {"date": today, "machine": machine(), "rows": rows, "latency_ms": latency,
                   "peak_memory_mb": peak_by_notebook, "hub_memory": hub}
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        update_readme(results)
        print(f"saved {RESULTS.relative_to(ROOT)} and the README's figures")
    return 0


README_START = "<!-- benchmark:start (written by tools/benchmark.py --save) -->"
README_END = "<!-- benchmark:end -->"


def update_readme(results: dict) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if README_START not in text:
        return
    lines = [f"Measured on {results['date']}, {results['machine']}:", "",
             "| measure | value | target |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {target} |" for name, value, target, _ in results["rows"]]
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    readme.write_text(f"{head}{README_START}\n" + "\n".join(lines) + f"\n{README_END}{tail}",
                      encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
