"""Time the log1pexp explorer (lesson 03): key-press-to-paint latency in a browser,
kernel-side work per change, and the PNG encoders.

    python -m course_tools.benchmark_explorer                 # 60 changes of each kind
    python -m course_tools.benchmark_explorer --changes 100
    python -m course_tools.benchmark_explorer --cold          # forget cached curves first

Drives the widget from Python, as a browser would through the widget's comm:
each change sets one control's ``value`` and waits for the observer to finish
(new state, compute with ``tf.GradientTape``, update the figure in place, draw
with Agg, encode the PNG, fill the plot and readout HTML). Prints the median and
95th percentile of that time in ms per kind of change, split into compute
(TensorFlow and NumPy) and render (everything after), and times the two PNG
encoders on the explorer's own picture: ``autodiff_course.plotting.encode_png``,
which the course keeps, and Pillow at zlib level 1, which matplotlib's
``savefig`` uses.

Sending the picture to the browser and painting it are not included there:
:func:`explorer_latency` (run by ``./course.sh bench``) measures those end to end in
Chromium with :func:`measure_latency` and the two cells below, against the floor
of an ``Image`` widget that swaps two ready-made PNGs. Timings are noisy on a
shared machine; run it on an idle one.
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
from .browser import find_chromium
from .browser import jupyterlab
from .browser import open_notebook
from .browser import run_all_cells
from .browser import scratch_copy

SETUP_CELL = "from autodiff_course import setup_notebook\nsetup_notebook()"

# Notebook cells for the browser measurement: the floor, then the explorer.
FLOOR_CELL = """\
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
explorer = Log1pexpExplorer()
explorer"""

# (container, control that takes the key presses, element whose picture changes, keys)
FLOOR = (".benchmark-floor", ".noUi-handle", "img", ("ArrowRight", "ArrowLeft"))
EXPLORER = (
    ".log1pexp-explorer",
    ".log1pexp-x-from input",
    ".log1pexp-plot",
    ("ArrowUp", "ArrowDown"),
)

# Runs in the page before a real key press; resolves with the time from that key
# press (the event's own timestamp) to the second frame after the new picture is
# decoded, whether the picture's ``src`` changed (an Image widget) or a new <img>
# replaced it (an HTML widget).
ARM_JS = """([container, picture]) => {
    const root = document.querySelector(container);
    const target = root.querySelector(picture);
    let pressed = null;
    window.__latency = new Promise(resolve => {
        const observer = new MutationObserver(() => {
            observer.disconnect();
            const image = target.tagName === 'IMG' ? target : target.querySelector('img');
            const decoded = image && image.decode ? image.decode().catch(() => null)
                                                  : Promise.resolve();
            decoded.then(() => requestAnimationFrame(() => requestAnimationFrame(
                () => resolve(pressed === null ? null : performance.now() - pressed))));
        });
        observer.observe(target, {attributes: true, attributeFilter: ['src'],
                                  childList: true, subtree: true});
        setTimeout(() => { observer.disconnect(); resolve(null); }, 5000);
    });
    root.addEventListener('keydown', event => { pressed = event.timeStamp; },
                          {capture: true, once: true});
}"""


def measure_latency(page, target: tuple, changes: int) -> list[float]:
    """Press arrow keys on ``target`` (:data:`FLOOR` or :data:`EXPLORER`) in a Playwright
    page where its cell has run; return the key-press-to-paint latencies in ms."""
    container, control, picture, (forward, back) = target
    handle = page.locator(f"{container} {control}").first
    samples = []
    for index in range(changes):
        key = forward if (index // 5) % 2 == 0 else back
        page.evaluate(ARM_JS, [container, picture])
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
        nb.cells = [
            nbformat.v4.new_code_cell(SETUP_CELL),
            nbformat.v4.new_code_cell(FLOOR_CELL),
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


def percentile(values, fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def change_plan(explorer, changes: int) -> dict:
    """Kind of change -> (reset, list of functions each making one change)."""
    import numpy as np

    from autodiff_course.widgets import log1pexp as settings

    rng = np.random.default_rng(0)

    def set_value(control, value):
        return lambda: setattr(control, "value", value)

    def toggle(box):
        return lambda: setattr(box, "value", not box.value)

    low, high = settings.DEFAULT_X_RANGE["float32"]
    bound_low, bound_high = settings.X_BOUNDS["float32"]
    default = dict(
        dtype="float32",
        x_range=(low, high),
        methods=settings.METHODS,
        quantity=settings.DEFAULT_QUANTITY,
        readout_x=settings.DEFAULT_READOUT_X["float32"],
    )

    def reset():
        explorer.set_state(**default)

    # Arrow-key steps of the range's low end (each one a new range: never cached).
    steps = [
        set_value(explorer.x_from_input, round(low + 0.1 * (i + 1), 1)) for i in range(changes)
    ]
    jumps = []
    for _ in range(changes):
        a, b = sorted(rng.uniform(bound_low, bound_high, size=2))
        jumps.append(lambda a=a, b=b: explorer.set_state(x_range=(round(a, 1), round(b, 1))))
    readout = [
        set_value(explorer.readout_x_input, round(80.0 + 0.1 * (i + 1), 1)) for i in range(changes)
    ]
    quantities = [
        set_value(explorer.quantity_choice, settings.QUANTITIES[(i + 2) % len(settings.QUANTITIES)])
        for i in range(changes)
    ]
    boxes = list(explorer.method_checkboxes.values())
    toggles = [toggle(boxes[i % len(boxes)]) for i in range(changes)]
    dtypes = [
        set_value(explorer.dtype_choice, settings.DTYPES[(i + 1) % len(settings.DTYPES)])
        for i in range(changes)
    ]
    return {
        "x range (arrow-key steps)": (reset, steps),
        "x range (jumps)": (reset, jumps),
        "readout x": (reset, readout),
        "quantity": (reset, quantities),
        "methods": (reset, toggles),
        "dtype": (reset, dtypes),
    }


def png_encoders(repeats: int = 30) -> dict:
    """Median ms and bytes of both PNG encoders on the explorer's opening picture."""
    import io

    from PIL import Image

    from autodiff_course.plotting import encode_png
    from autodiff_course.widgets.log1pexp import ExplorerFigure
    from autodiff_course.widgets.log1pexp import render_png

    figure = ExplorerFigure()
    render_png(figure=figure)
    rgba = figure.rgba().copy()

    def pillow(pixels) -> bytes:  # what matplotlib's savefig(format="png") runs
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="png", compress_level=1)
        return buffer.getvalue()

    results = {}
    for name, encode in (("encode_png (kept)", encode_png), ("Pillow, zlib level 1", pillow)):
        times = []
        for _ in range(repeats):
            begin = time.perf_counter()
            data = encode(rgba)
            times.append((time.perf_counter() - begin) * 1e3)
        results[name] = {"ms": statistics.median(times), "bytes": len(data)}
    return results


def run(changes: int, cold: bool) -> dict:
    from autodiff_course.notebook_setup import silence_tensorflow_logs

    silence_tensorflow_logs()  # as a notebook's setup cell would, before TensorFlow loads
    from autodiff_course.widgets.log1pexp import Log1pexpExplorer
    from autodiff_course.widgets.log1pexp import data

    started = time.perf_counter()
    import tensorflow  # noqa: F401  (a notebook has imported it in its setup cell)

    imported = time.perf_counter()
    explorer = Log1pexpExplorer()
    first = (time.perf_counter() - imported) * 1e3
    import_ms = (imported - started) * 1e3
    results = {}
    for kind, (reset, plan) in change_plan(explorer, changes).items():
        reset()
        totals, computes, renders = [], [], []
        for change in plan:
            if cold:
                data.clear_caches()
            begin = time.perf_counter()
            change()
            totals.append((time.perf_counter() - begin) * 1e3)
            computes.append(explorer.last_timing["compute_ms"])
            renders.append(explorer.last_timing["render_ms"])
        results[kind] = {"total": totals, "compute": computes, "render": renders}

    # TensorFlow alone: three methods, value + gradient + second derivative, 400 points.
    tf_ms = []
    for i in range(changes):
        data.clear_caches()
        begin = time.perf_counter()
        data.grid_curves("float32", -20.0 + 0.1 * i, 100.0, 400)
        tf_ms.append((time.perf_counter() - begin) * 1e3)
    return {
        "import_ms": import_ms,
        "first_render_ms": first,
        "kinds": results,
        "tensorflow": tf_ms,
        "renders": explorer.render_count,
        "png_encoders": png_encoders(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--changes",
        type=int,
        default=60,
        help="changes of each kind (default 60, at least 50 recommended)",
    )
    parser.add_argument(
        "--cold", action="store_true", help="clear the cached curves before every change"
    )
    args = parser.parse_args(argv)
    result = run(max(1, args.changes), args.cold)

    print(
        f"log1pexp explorer, kernel side, {args.changes} changes of each kind"
        f"{' (caches cleared before each change)' if args.cold else ''}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    print(
        f"import TensorFlow: {result['import_ms']:.0f} ms (once per kernel); "
        f"Log1pexpExplorer() with its first render: {result['first_render_ms']:.0f} ms"
    )
    print(f"{'change':28s} {'median':>8s} {'p95':>8s}   {'compute':>17s}   {'render':>17s}")
    print(f"{'':28s} {'ms':>8s} {'ms':>8s}   {'median / p95 ms':>17s}   {'median / p95 ms':>17s}")
    everything = []
    for kind, times in result["kinds"].items():
        total, compute, render = times["total"], times["compute"], times["render"]
        everything += total
        print(
            f"{kind:28s} {statistics.median(total):8.1f} {percentile(total, 0.95):8.1f}   "
            f"{statistics.median(compute):7.1f} / {percentile(compute, 0.95):7.1f}   "
            f"{statistics.median(render):7.1f} / {percentile(render, 0.95):7.1f}"
        )
    print(
        f"{'all changes':28s} {statistics.median(everything):8.1f} "
        f"{percentile(everything, 0.95):8.1f}"
    )
    tensorflow = result["tensorflow"]
    print(
        f"TensorFlow alone (3 methods x value, gradient, 2nd derivative, 400 points, "
        f"float32, uncached): median {statistics.median(tensorflow):.1f} ms, "
        f"p95 {percentile(tensorflow, 0.95):.1f} ms"
    )
    print("PNG encoders on the explorer's 640 x 420 picture (median of 30):")
    for name, figures in result["png_encoders"].items():
        print(f"  {name:24s} {figures['ms']:6.1f} ms  {figures['bytes']:7d} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# --- the front-end explorer on the web site: key press to painted canvas -------------

# A floor for the canvas: a number input whose key press redraws one line on a canvas.
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
        n += event.key === 'ArrowUp' ? 1 : -1;
        c.clearRect(0, 0, 640, 420); c.beginPath();
        c.moveTo(0, 210 + n % 50); c.lineTo(640, 210 - n % 50);
        c.stroke(); box.dataset.renderCount = String(n);
    });
}"""

# Resolves with the time from a key press (its own timestamp) to the second frame after
# the widget marks a finished redraw (data-render-count on its root).
ARM_CANVAS_JS = """(container) => {
    const root = document.querySelector(container);
    let pressed = null;
    window.__latency = new Promise(resolve => {
        const observer = new MutationObserver(() => {
            observer.disconnect();
            requestAnimationFrame(() => requestAnimationFrame(
                () => resolve(pressed === null ? null : performance.now() - pressed)));
        });
        observer.observe(root, {attributes: true, attributeFilter: ['data-render-count']});
        setTimeout(() => { observer.disconnect(); resolve(null); }, 5000);
    });
    root.addEventListener('keydown', event => { pressed = event.timeStamp; },
                          {capture: true, once: true});
}"""

SITE_EXPLORER = (".course-widget-host .log1pexp-explorer", ".log1pexp-x-from input")
SITE_FLOOR = (".benchmark-canvas-floor", "input")


def canvas_latency(page, target: tuple, changes: int) -> list[float]:
    container, control = target
    handle = page.locator(f"{container} {control}").first
    samples = []
    for index in range(changes):
        key = "ArrowUp" if (index // 5) % 2 == 0 else "ArrowDown"
        page.evaluate(ARM_CANVAS_JS, container)
        handle.focus()
        page.keyboard.press(key)
        elapsed = page.evaluate("() => window.__latency")
        if elapsed is not None:
            samples.append(elapsed)
        page.wait_for_timeout(60)
    return samples


def site_latency(changes: int) -> dict:
    """Key-press-to-paint of the explorer on lesson 03's page of the built site, against
    a canvas redrawing one line in the same page; and the page's weight."""
    from .browser import confine
    from .browser import static_server
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
            page.wait_for_selector(SITE_EXPLORER[0])
            page.wait_for_timeout(500)
            weight = sum(sizes)
            page.evaluate(CANVAS_FLOOR_JS)
            page.locator(SITE_EXPLORER[0]).scroll_into_view_if_needed()
            canvas_latency(page, SITE_FLOOR, 5)
            canvas_latency(page, SITE_EXPLORER, 5)
            floor = canvas_latency(page, SITE_FLOOR, changes)
            explorer = canvas_latency(page, SITE_EXPLORER, changes)
            context.close()
    return {
        "floor": floor,
        "explorer": explorer,
        "page_bytes": weight,
        "build_s": build_s,
        "blocked": blocked,
    }
