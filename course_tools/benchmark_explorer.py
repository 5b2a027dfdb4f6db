"""Time the log1pexp explorer (lesson 03) in Chromium: from a key press to the new plot
being painted, in JupyterLab and on the course's web site, against floors measured in
the same page.

    python -m course_tools.benchmark_explorer              # 40 key presses per series
    python -m course_tools.benchmark_explorer --changes 100

The explorer draws on a canvas in the browser from tables TensorFlow computed when
its cell ran, so a key press never waits for the kernel. Each series presses arrow
keys in a number input and times each press from the key event's own timestamp to
the second animation frame after the drawing changed (the frame that shows it):

* **explorer**: the range's lower end of the log1pexp explorer (its canvas, flags,
  limits and readout redrawn); in JupyterLab (:func:`lab_latency`) and on lesson 03's
  page of the built site (:func:`site_latency`);
* **canvas floor**: a number input whose key press redraws one line on a canvas of
  the same size, in the same page: what any drawing in the browser costs;
* **old floor** (JupyterLab only): a slider that makes the kernel swap two ready-made
  PNGs in an ``Image`` widget, with no computation: the least a kernel round trip
  costs, which the explorer paid on every change before it drew in the browser.

:func:`site_latency` also weighs lesson 03's page (every byte the browser fetched)
and times ``./course.sh site``. Timings are noisy on a shared machine: run it on an
idle one; ``./course.sh bench`` prints the load average beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from .benchmark_memory import jupyter_server_pid
from .benchmark_memory import peak_resident_mb
from .browser import chromium_browser
from .browser import confine
from .browser import find_chromium
from .browser import jupyterlab
from .browser import open_notebook
from .browser import run_all_cells
from .browser import scratch_copy
from .browser import static_server

SETUP_CELL = "from autodiff_course import setup_notebook\nsetup_notebook()"

# The old floor: a kernel round trip that swaps a ready-made PNG.
PNG_FLOOR_CELL = """\
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
floor"""

EXPLORER_CELL = """\
from autodiff_course.widgets.log1pexp import Log1pexpExplorer
Log1pexpExplorer()"""

# (the element that takes the key presses, the element whose drawing changes, the keys)
PNG_FLOOR = (".benchmark-floor .noUi-handle", ".benchmark-floor img", ("ArrowRight", "ArrowLeft"))
# The explorer's own root (JupyterLab's widget host carries its class too).
EXPLORER_ROOT = "div.course-widget.log1pexp-explorer"
EXPLORER = (f"{EXPLORER_ROOT} .log1pexp-x-from input", EXPLORER_ROOT, ("ArrowUp", "ArrowDown"))
CANVAS_FLOOR = (
    ".benchmark-canvas-floor input",
    ".benchmark-canvas-floor",
    ("ArrowUp", "ArrowDown"),
)

# The canvas floor, added to the page under test: a number input whose key press redraws
# one line on a 640 x 420 canvas (the explorer's size) and marks the redraw as the
# explorer does (data-render-count).
CANVAS_FLOOR_JS = """() => {
    const box = document.createElement('div');
    box.className = 'benchmark-canvas-floor';
    box.innerHTML = '<label for="floor-x">floor</label><input id="floor-x" type="number" value="0">'
                  + '<canvas width="640" height="420"></canvas>';
    document.body.prepend(box);
    const input = box.querySelector('input'), canvas = box.querySelector('canvas');
    const c = canvas.getContext('2d');
    let n = 0;
    input.addEventListener('keydown', event => {
        event.preventDefault();
        event.stopPropagation();
        n += event.key === 'ArrowUp' ? 1 : -1;
        c.clearRect(0, 0, 640, 420); c.beginPath();
        c.moveTo(0, 210 + n % 50); c.lineTo(640, 210 - n % 50);
        c.stroke(); box.dataset.renderCount = String(n);
    });
}"""

# Runs in the page before a real key press; resolves with the time from that key press
# (the event's own timestamp) to the second frame after the drawing changed: a new
# data-render-count on a canvas widget, or a new, decoded picture in an <img>.
ARM_JS = """(drawn) => {
    const target = document.querySelector(drawn);
    let pressed = null;
    window.__latency = new Promise(resolve => {
        const observer = new MutationObserver(() => {
            observer.disconnect();
            const decoded = target.tagName === 'IMG' && target.decode
                ? target.decode().catch(() => null) : Promise.resolve();
            decoded.then(() => requestAnimationFrame(() => requestAnimationFrame(
                () => resolve(pressed === null ? null : performance.now() - pressed))));
        });
        observer.observe(target, {attributes: true,
                                  attributeFilter: ['src', 'data-render-count']});
        setTimeout(() => { observer.disconnect(); resolve(null); }, 5000);
    });
    document.addEventListener('keydown', event => { pressed = event.timeStamp; },
                              {capture: true, once: true});
}"""


def measure_latency(page, target: tuple, changes: int, pause_ms: int = 150) -> list[float]:
    """Press arrow keys on ``target`` (:data:`EXPLORER`, :data:`CANVAS_FLOOR` or
    :data:`PNG_FLOOR`) in a Playwright page; return the key-press-to-paint latencies
    in ms (five presses one way, five back, and so on)."""
    control, drawn, (forward, back) = target
    handle = page.locator(control).first
    samples = []
    for index in range(changes):
        key = forward if (index // 5) % 2 == 0 else back
        page.evaluate(ARM_JS, drawn)
        handle.focus()
        page.keyboard.press(key)
        elapsed = page.evaluate("() => window.__latency")
        if elapsed is not None:
            samples.append(elapsed)
        page.wait_for_timeout(pause_ms)
    return samples


def lab_latency(changes: int) -> dict:
    """The three series in one JupyterLab page; then the Jupyter server's peak memory
    after lesson 03's solutions have run there too."""
    chromium = find_chromium()
    if chromium is None:
        return {"error": "Chromium not found"}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        root = scratch_copy(scratch / "course")
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell(SETUP_CELL),
            nbformat.v4.new_code_cell(PNG_FLOOR_CELL),
            nbformat.v4.new_code_cell(EXPLORER_CELL),
        ]
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, root / "benchmark.ipynb")
        with (
            jupyterlab(root, scratch / "lab.log") as (base_url, token),
            chromium_browser(chromium) as browser,
        ):
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            open_notebook(page, base_url, token, "benchmark.ipynb")
            run_all_cells(page)
            page.wait_for_selector(PNG_FLOOR[1])
            page.wait_for_selector(f"{EXPLORER_ROOT} canvas")
            page.evaluate(CANVAS_FLOOR_JS)
            page.wait_for_timeout(1500)
            series = {"old_floor": PNG_FLOOR, "canvas_floor": CANVAS_FLOOR, "explorer": EXPLORER}
            for target in series.values():  # warm up each
                measure_latency(page, target, 5)
            results = {
                name: measure_latency(page, target, changes) for name, target in series.items()
            }
            # A learner's session goes on: open the heaviest lesson and run it, then
            # read the server's peak, reached while serving notebooks and widgets.
            open_notebook(page, base_url, token, "solutions/03-custom-gradients.ipynb")
            run_all_cells(page)
            server = jupyter_server_pid()
            results["server_peak_mb"] = peak_resident_mb(server) if server else None
    return results


def site_latency(changes: int) -> dict:
    """Build the site; on lesson 03's page, the explorer against the canvas floor; the
    page's weight (every byte fetched, nothing from elsewhere) and the build time."""
    from .site import build

    chromium = find_chromium()
    if chromium is None:
        return {"error": "Chromium not found"}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "_site"
        started = time.perf_counter()
        build(out)
        build_s = time.perf_counter() - started
        with static_server(out) as base_url, chromium_browser(chromium) as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 1000})
            blocked = confine(context, base_url)
            page = context.new_page()
            sizes = []
            page.on("response", lambda response: sizes.append(len(response.body())))
            page.goto(f"{base_url}/lessons/03-custom-gradients.html", wait_until="load")
            page.wait_for_selector(f".course-widget-host {EXPLORER_ROOT} canvas")
            page.wait_for_timeout(500)
            weight = sum(sizes)
            page.evaluate(CANVAS_FLOOR_JS)
            page.locator(EXPLORER_ROOT).first.scroll_into_view_if_needed()
            series = {"canvas_floor": CANVAS_FLOOR, "explorer": EXPLORER}
            for target in series.values():
                measure_latency(page, target, 5, pause_ms=60)
            results = {
                name: measure_latency(page, target, changes, pause_ms=60)
                for name, target in series.items()
            }
            context.close()
    return dict(results, page_bytes=weight, build_s=build_s, blocked=blocked)


def percentile(values, fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def describe(samples: list[float]) -> str:
    return (
        f"median {statistics.median(samples):5.1f} ms, p95 {percentile(samples, 0.95):5.1f} ms"
        f" (n={len(samples)})"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--changes", type=int, default=40, help="key presses per series (default 40)"
    )
    args = parser.parse_args(argv)
    changes = max(10, args.changes)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for where, measured in (("JupyterLab", lab_latency(changes)), ("site", site_latency(changes))):
        if "error" in measured:
            print(f"{where}: {measured['error']}")
            continue
        for name in ("old_floor", "canvas_floor", "explorer"):
            if name in measured:
                print(f"{where:10s} {name:12s} {describe(measured[name])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
