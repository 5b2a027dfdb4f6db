"""Measure what a learner feels, and print one table.

    ./course.sh bench            (or: python tools/benchmark.py [--changes 40])

1. **Explorer latency** in real Chromium: from a key press on a control of the
   log1pexp explorer to the new plot being painted (median and p95 over many
   changes), next to the *floor* measured in the same page: a slider that swaps
   two ready-made PNGs in an ``Image`` widget with no computation at all.
   Targets: median <= 70 ms, p95 <= 150 ms. The kernel-side share of it (compute
   and render, from ``tools/benchmark_explorer.py``) is reported too: budget ~30 ms.
2. **Peak memory** of each notebook's kernel while it runs top to bottom.
   Target: <= 800 MB, so a 2 GB Binder session holds two lessons.
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
import threading
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
from benchmark_explorer import percentile, run as kernel_side_updates  # noqa: E402
from notebook_format import load_course  # noqa: E402

RESULTS = ROOT / "benchmark" / "latest.json"

FLOOR_CELL = '''\
import io
import ipywidgets as widgets
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

def _png(colour):
    figure, axes = plt.subplots(figsize=(7.5, 4.0), dpi=80)
    axes.plot([0, 1], [0, 1], color=colour)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()

_pictures = [_png("#0072B2"), _png("#D55E00")]
floor_slider = widgets.IntSlider(value=0, min=0, max=1000, description="floor")
floor_image = widgets.Image(value=_pictures[0], format="png")
floor_slider.observe(lambda change: setattr(floor_image, "value", _pictures[change["new"] % 2]),
                     names="value")
floor = widgets.VBox([floor_slider, floor_image])
floor.add_class("benchmark-floor")
floor'''

EXPLORER_CELL = '''\
from autodiff_course.widgets.log1pexp_explorer import Log1pexpExplorer
explorer = Log1pexpExplorer()
explorer'''

SETUP_CELL = "from autodiff_course import setup_notebook\nsetup_notebook()"

# Runs in the page before a real key press: resolves with the time from that key
# press (the event's own timestamp) to the paint after the image's source changed.
ARM_JS = """(container) => {
    const root = document.querySelector(container);
    const image = root.querySelector('img');
    let pressed = null;
    window.__latency = new Promise(resolve => {
        const observer = new MutationObserver(() => {
            observer.disconnect();
            requestAnimationFrame(() => requestAnimationFrame(
                () => resolve(pressed === null ? null : performance.now() - pressed)));
        });
        observer.observe(image, {attributes: true, attributeFilter: ['src']});
        setTimeout(() => { observer.disconnect(); resolve(null); }, 5000);
    });
    root.addEventListener('keydown', event => { pressed = event.timeStamp; },
                          {capture: true, once: true});
}"""


def measure_latency(page, container: str, slider: str, changes: int) -> list[float]:
    """Press arrow keys on ``slider`` inside ``container``; collect latencies in ms."""
    handle = page.locator(f"{container} {slider} .noUi-handle").first
    samples = []
    for index in range(changes):
        key = "ArrowRight" if (index // 5) % 2 == 0 else "ArrowLeft"
        page.evaluate(ARM_JS, container)
        handle.focus()
        page.keyboard.press(key)
        elapsed = page.evaluate("() => window.__latency")
        if elapsed is not None:
            samples.append(elapsed)
        page.wait_for_timeout(150)
    return samples


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
            measure_latency(page, ".benchmark-floor", "", 5)  # warm up both
            measure_latency(page, ".log1pexp-explorer", ".log1pexp-range", 5)
            floor = measure_latency(page, ".benchmark-floor", "", changes)
            explorer = measure_latency(page, ".log1pexp-explorer", ".log1pexp-range", changes)
    return {"floor": floor, "explorer": explorer}


def kernel_peak_memory(path: Path) -> tuple[float, float]:
    """(peak resident MB of the kernel, seconds) while the notebook runs."""
    import psutil
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    peak = [0.0]
    stop = threading.Event()

    def sample(pid):
        process = psutil.Process(pid)
        while not stop.is_set():
            try:
                rss = process.memory_info().rss
                rss += sum(child.memory_info().rss for child in process.children(True))
            except psutil.Error:
                break
            peak[0] = max(peak[0], rss / 2**20)
            time.sleep(0.02)

    started = time.perf_counter()
    with client.setup_kernel():
        pid = client.km.provisioner.process.pid
        sampler = threading.Thread(target=sample, args=(pid,), daemon=True)
        sampler.start()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        time.sleep(0.1)
        stop.set()
        sampler.join()
    return peak[0], time.perf_counter() - started


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
            peak, seconds = kernel_peak_memory(ROOT / folder / lesson.filename)
            peak_by_notebook[f"{folder}/{lesson.slug}"] = peak
            rows.append((f"kernel peak memory, {folder}/{lesson.slug}",
                         f"{peak:.0f} MB", "<= 800 MB", f"ran in {seconds:.1f} s"))

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
                   "peak_memory_mb": peak_by_notebook}
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
