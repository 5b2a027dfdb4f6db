"""Time the log1pexp explorer's kernel-side work per control change.

    python tools/benchmark_explorer.py                 # 60 changes of each kind
    python tools/benchmark_explorer.py --changes 100
    python tools/benchmark_explorer.py --cold          # forget cached curves first

Drives the widget from Python, as a browser would through the widget's comm:
each change sets one control's ``value`` and waits for the observer to finish
(compute with ``tf.GradientTape``, update the figure in place, draw with Agg,
encode the PNG, update the readout HTML). Prints the median and 95th percentile
of that time in ms per kind of change, split into compute (TensorFlow and NumPy)
and render (everything after). Sending the PNG to the browser and painting it
are not included: ``tools/benchmark.py`` measures those end to end in Chromium.

The budget is about 30 ms per change (median), so that a change reaches the
screen within the course's 70 ms target. Timings are noisy on a shared machine;
run it on an idle one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def percentile(values, fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def change_plan(explorer, changes: int) -> dict:
    """Kind of change -> list of functions, each making one change."""
    import numpy as np

    from autodiff_course.log1pexp import DTYPES, METHODS, QUANTITIES
    from autodiff_course.widgets.log1pexp_explorer import (
        DEFAULT_QUANTITY, DEFAULT_READOUT_X, DEFAULT_X_RANGE, X_BOUNDS)

    rng = np.random.default_rng(0)

    def set_value(control, value):
        return lambda: setattr(control, "value", value)

    def reset(**state):
        return lambda: explorer.set_state(**state)

    low, high = DEFAULT_X_RANGE["float32"]
    bound_low, bound_high = X_BOUNDS["float32"]
    default = dict(dtype="float32", x_range=(low, high), methods=METHODS,
                   quantity=DEFAULT_QUANTITY, readout_x=DEFAULT_READOUT_X["float32"])
    # Arrow-key steps of the low handle (each one a new range: never cached).
    steps = [set_value(explorer.x_range_slider, (round(low + 0.1 * (i + 1), 1), high))
             for i in range(changes)]
    jumps = []
    for _ in range(changes):
        a, b = sorted(rng.uniform(bound_low, bound_high, size=2))
        jumps.append(set_value(explorer.x_range_slider, (round(a, 1), round(b, 1))))
    readout = [set_value(explorer.readout_x_slider, round(80.0 + 0.1 * (i + 1), 1))
               for i in range(changes)]
    quantities = [set_value(explorer.quantity_buttons, QUANTITIES[(i + 2) % len(QUANTITIES)])
                  for i in range(changes)]
    boxes = list(explorer.method_checkboxes.values())
    toggles = []
    for i in range(changes):
        box = boxes[i % len(boxes)]
        toggles.append(lambda box=box: setattr(box, "value", not box.value))
    dtypes = [set_value(explorer.dtype_buttons, DTYPES[(i + 1) % len(DTYPES)])
              for i in range(changes)]
    return {
        "x range (arrow-key steps)": (reset(**default), steps),
        "x range (jumps)": (reset(**default), jumps),
        "readout x": (reset(**default), readout),
        "quantity": (reset(**default), quantities),
        "methods": (reset(**default), toggles),
        "dtype": (reset(**default), dtypes),
    }


def run(changes: int, cold: bool) -> dict:
    from autodiff_course.notebook_setup import silence_tensorflow_logs

    silence_tensorflow_logs()  # as a notebook's setup cell would, before TensorFlow loads
    from autodiff_course import log1pexp as numerics
    from autodiff_course.widgets.log1pexp_explorer import Log1pexpExplorer

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
                numerics.clear_caches()
            begin = time.perf_counter()
            change()
            totals.append((time.perf_counter() - begin) * 1e3)
            computes.append(explorer.last_timing["compute_ms"])
            renders.append(explorer.last_timing["render_ms"])
        results[kind] = {"total": totals, "compute": computes, "render": renders}

    # TensorFlow alone: three methods, value + gradient + second derivative, 400 points.
    tf_ms = []
    for i in range(changes):
        numerics.clear_caches()
        begin = time.perf_counter()
        numerics.compute_curves(-20.0 + 0.1 * i, 100.0, "float32")
        tf_ms.append((time.perf_counter() - begin) * 1e3)
    return {"import_ms": import_ms, "first_render_ms": first, "kinds": results,
            "tensorflow": tf_ms, "renders": explorer.render_count}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=60,
                        help="changes of each kind (default 60, at least 50 recommended)")
    parser.add_argument("--cold", action="store_true",
                        help="clear the cached curves before every change")
    args = parser.parse_args(argv)
    result = run(max(1, args.changes), args.cold)

    print(f"log1pexp explorer, kernel side, {args.changes} changes of each kind"
          f"{' (caches cleared before each change)' if args.cold else ''}; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"import TensorFlow: {result['import_ms']:.0f} ms (once per kernel); "
          f"Log1pexpExplorer() with its first render: {result['first_render_ms']:.0f} ms")
    print(f"{'change':28s} {'median':>8s} {'p95':>8s}   {'compute':>17s}   "
          f"{'render':>17s}")
    print(f"{'':28s} {'ms':>8s} {'ms':>8s}   {'median / p95 ms':>17s}   {'median / p95 ms':>17s}")
    everything = []
    for kind, times in result["kinds"].items():
        total, compute, render = times["total"], times["compute"], times["render"]
        everything += total
        print(f"{kind:28s} {statistics.median(total):8.1f} {percentile(total, 0.95):8.1f}   "
              f"{statistics.median(compute):7.1f} / {percentile(compute, 0.95):7.1f}   "
              f"{statistics.median(render):7.1f} / {percentile(render, 0.95):7.1f}")
    print(f"{'all changes':28s} {statistics.median(everything):8.1f} "
          f"{percentile(everything, 0.95):8.1f}")
    tensorflow = result["tensorflow"]
    print(f"TensorFlow alone (3 methods x value, gradient, 2nd derivative, 400 points, "
          f"float32, uncached): median {statistics.median(tensorflow):.1f} ms, "
          f"p95 {percentile(tensorflow, 0.95):.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
