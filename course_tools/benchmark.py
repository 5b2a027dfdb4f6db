"""Measure what a learner feels, and print one table.

    ./course.sh bench            (or: python -m course_tools.benchmark [--changes 40]
                                  [--learners 20] [--save] [--explorer-only]
                                  [--checks-only])

``--explorer-only`` measures 1 alone again, ``--checks-only`` 4 alone, and each keeps
every other figure of ``benchmark/latest.json`` (the README then says when each part
was measured).

1. **Explorer latency** in real Chromium: from a key press in a number input of
   the log1pexp explorer to the new plot being painted (median and p95), in
   JupyterLab and on lesson 03's page of the built site, each next to a *canvas
   floor* measured in the same page (a canvas that redraws one line) and, in
   JupyterLab, the *old floor* of a kernel round trip (a slider that swaps two
   ready-made PNGs in an ``Image`` widget) (:mod:`course_tools.benchmark_explorer`).
   Targets: median <= 20 ms in both; lesson 03's page <= 3 MB, tables included;
   ``./course.sh site`` <= 3 minutes.
2. **Peak memory** (:mod:`course_tools.benchmark_memory`): each notebook's kernel runs
   top to bottom, then every control of the widgets it displayed is driven through
   ipywidgets' Python API; the figure is the kernel's own high-water mark of resident
   memory. The Jupyter server's is read at the end of the browser session of 1.
   Target: <= 800 MB per kernel, so a 2 GB Binder session holds two lessons.
3. **Validation time**: nbval over every notebook, against the floor of starting
   one kernel and importing TensorFlow per notebook. Target: <= 1.5 x the floor.
4. **Exercise checks** (:mod:`course_tools.benchmark_checks`): each check's median
   time to judge its reference answer. Target: <= 300 ms.
5. **Progress**: ``progress`` over one learner's lessons (``lessons/``) against running
   those notebooks once, one after the other (:func:`course_tools.progress.benchmark`).
   Target: <= 1.5 x. And over a class of five, with the sandbox and without: the
   sandbox's cost. Target: <= 10%.
6. **A class on a hub** (:mod:`course_tools.benchmark_hub`): 20 learners run lesson 03
   at once on a real JupyterHub, against one learner alone; each learner's peak memory.
   Goal: no failure, p95 <= 3 x one learner alone. From the peaks come the memory
   guarantee and limit per learner that the instructor guide quotes.

Timing is noisy on shared machines: medians are quoted, and nothing here is a
pass/fail test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import date

import nbformat

from . import benchmark_hub
from . import progress
from .benchmark_checks import REPEAT
from .benchmark_checks import TARGET_MS
from .benchmark_checks import check_times
from .benchmark_explorer import SETUP_CELL
from .benchmark_explorer import lab_latency
from .benchmark_explorer import percentile
from .benchmark_explorer import site_latency
from .benchmark_memory import kernel_peak_memory
from .config import README
from .config import ROOT
from .config import load_course
from .derived import between_markers

RESULTS = ROOT / "benchmark" / "latest.json"
COMMAND = "python -m course_tools.benchmark --save"
README_START = f"<!-- benchmark:start (written by {COMMAND}) -->"
README_END = "<!-- benchmark:end -->"
LATENCY_TARGET_MS = 20
PAGE_TARGET_MB = 3
SITE_BUILD_TARGET_S = 180
PROGRESS_RATIO_TARGET = 1.5
SANDBOX_OVERHEAD_TARGET = 0.10


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
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "lessons", "solutions"],
        cwd=ROOT,
        check=False,
        capture_output=True,
    )
    return time.perf_counter() - started


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


SERIES = {
    "explorer": ("explorer: key press to painted plot", True),
    "canvas_floor": ("canvas floor: one line redrawn", False),
    "old_floor": ("old floor: PNG swapped by the kernel", False),
}


def latency_rows(where: str, latency: dict) -> list[tuple]:
    """Median and p95 of each series measured ``where`` (JupyterLab or the site)."""
    if "error" in latency:
        return [(f"{where}: explorer latency", latency["error"], "", "")]
    rows = []
    for name, (label, targeted) in SERIES.items():
        if name not in latency:
            continue
        samples = latency[name]
        rows.append(
            (
                f"{where}, {label}, median",
                f"{statistics.median(samples):.1f} ms",
                f"<= {LATENCY_TARGET_MS} ms" if targeted else "",
                f"n={len(samples)}",
            )
        )
        rows.append((f"{where}, {label}, p95", f"{percentile(samples, 0.95):.1f} ms", "", ""))
    return rows


def site_rows(site: dict) -> list[tuple]:
    rows = latency_rows("site", site)
    if "error" in site:
        return rows
    blocked = f"{len(site['blocked'])} requests elsewhere" if site["blocked"] else ""
    return rows + [
        (
            "site: lesson 03 page, every byte fetched",
            f"{site['page_bytes'] / 1e6:.2f} MB",
            f"<= {PAGE_TARGET_MB} MB",
            blocked,
        ),
        (
            "site: ./course.sh site build",
            f"{site['build_s']:.1f} s",
            f"<= {SITE_BUILD_TARGET_S} s",
            "",
        ),
    ]


def memory_rows(course, latency: dict) -> tuple[list[tuple], dict]:
    rows, peaks = [], {}
    for lesson in course.lessons:
        for folder in ("lessons", "solutions"):
            peak, seconds, driven = kernel_peak_memory(ROOT / folder / lesson.filename)
            peaks[f"{folder}/{lesson.slug}"] = peak
            rows.append(
                (
                    f"kernel peak memory (VmHWM), {folder}/{lesson.slug}",
                    f"{peak:.0f} MB",
                    "<= 800 MB",
                    f"ran in {seconds:.1f} s; {driven}",
                )
            )
    server_mb = latency.get("server_peak_mb")
    if server_mb is None:
        note = latency.get("error", "server not found")
        rows.append(("Jupyter server peak memory (VmHWM)", "not measured", "", note))
    else:
        rows.append(
            (
                "Jupyter server peak memory (VmHWM)",
                f"{server_mb:.0f} MB",
                "",
                "end of the browser session",
            )
        )
    return rows, peaks


def validation_rows(course) -> list[tuple]:
    notebooks = 2 * len(course.lessons)
    floor = import_floor_seconds(notebooks)
    validation = validation_seconds()
    return [
        (f"floor: {notebooks} x (start kernel + import TensorFlow)", f"{floor:.1f} s", "", ""),
        ("nbval over lessons/ and solutions/", f"{validation:.1f} s", "", ""),
        ("validation / floor", f"{validation / floor:.2f}x", "<= 1.5x", ""),
    ]


def check_rows(checks: list[dict]) -> list[tuple]:
    return [
        (
            f"check {check['exercise']} ({check['title']}), median of {REPEAT}",
            f"{check['median_ms']:.0f} ms",
            f"<= {TARGET_MS:.0f} ms",
            "" if check["status"] == "correct" else f"verdict: {check['status']}",
        )
        for check in checks
    ]


def progress_rows(figures: dict, notebooks: int) -> list[tuple]:
    rows = [
        (
            f"run lessons/ once ({notebooks} notebooks, one after the other)",
            f"{figures['plain']:.1f} s",
            "",
            "",
        )
    ]
    for key in sorted(k for k in figures if k.startswith("progress_jobs_")):
        jobs = key.rsplit("_", 1)[1]
        rows.append((f"progress --jobs {jobs} over lessons/", f"{figures[key]:.1f} s", "", ""))
        rows.append(
            (
                f"progress --jobs {jobs} / running once",
                f"{figures[f'ratio_jobs_{jobs}']:.2f}x",
                f"<= {PROGRESS_RATIO_TARGET}x",
                "",
            )
        )
    if "sandbox_overhead" in figures:
        learners = figures["class_learners"]
        rows += [
            (
                f"progress over a class of {learners}, in the sandbox",
                f"{figures['class_sandbox']:.1f} s",
                "",
                "",
            ),
            (
                f"progress over a class of {learners}, no sandbox (limits only)",
                f"{figures['class_no_sandbox']:.1f} s",
                "",
                "",
            ),
            (
                "sandbox's cost to progress",
                f"{100 * figures['sandbox_overhead']:+.1f}%",
                f"<= {100 * SANDBOX_OVERHEAD_TARGET:.0f}%",
                "",
            ),
        ]
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Print the course's performance figures.")
    parser.add_argument(
        "--changes", type=int, default=40, help="control changes per latency series (at least 30)"
    )
    parser.add_argument(
        "--save", action="store_true", help="write benchmark/latest.json and the README's figures"
    )
    parser.add_argument(
        "--learners", type=int, default=20, help="learners of the class on the hub (default 20)"
    )
    parser.add_argument(
        "--explorer-only",
        action="store_true",
        help="measure only the explorer's latency and the site again; keep the other figures",
    )
    parser.add_argument(
        "--checks-only",
        action="store_true",
        help="measure only the exercise checks again; keep the other figures",
    )
    args = parser.parse_args(argv)
    changes = max(30, args.changes)
    if args.explorer_only:
        return explorer_again(changes, args.save)
    if args.checks_only:
        return checks_again(args.save)
    course = load_course()

    load = os.getloadavg()
    latency = lab_latency(changes)
    site = site_latency(changes)
    rows = latency_rows("JupyterLab", latency) + site_rows(site)
    memory, peaks = memory_rows(course, latency)
    rows += memory + validation_rows(course)
    checks = check_times()
    rows += check_rows(checks)
    figures = progress.benchmark()
    rows += progress_rows(figures, len(course.lessons))
    hub = benchmark_hub.measure(args.learners)
    rows += benchmark_hub.rows(hub)

    today = date.today().isoformat()
    print_table(f"Benchmark, {today}, {machine()}, load average {load[0]:.2f} at the start", rows)
    if args.save:
        results = {
            "date": today,
            "machine": machine(),
            "load_average": load[0],
            "rows": rows,
            "latency_ms": latency,
            "site": site,
            "peak_memory_mb": peaks,
            "hub_memory": hub["hub_memory"],
            "hub": benchmark_hub.saved(hub),
            "check_ms": checks,
            "progress_s": figures,
        }
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        update_readme(results)
        print(f"saved {RESULTS.relative_to(ROOT)} and the README's figures")
    return 0


def print_table(title: str, rows: list[tuple]) -> None:
    width = max(len(row[0]) for row in rows)
    print(title)
    print(f"{'measure'.ljust(width)}  {'value':>10}  {'target':>10}  note")
    for name, value, target, note in rows:
        print(f"{name.ljust(width)}  {value:>10}  {target:>10}  {note}")


def explorer_again(changes: int, save: bool) -> int:
    """Part 1 measured again; the other rows as ``benchmark/latest.json`` has them."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    load = os.getloadavg()
    latency, site = lab_latency(changes), site_latency(changes)
    fresh = latency_rows("JupyterLab", latency) + site_rows(site)
    kept = [row for row in results["rows"] if not row[0].startswith(("JupyterLab, ", "site"))]
    print_table(
        f"Explorer and site, {date.today().isoformat()}, load average {load[0]:.2f} at the start",
        fresh,
    )
    if save:
        save_again(
            results, "explorer_measured", load, rows=[*fresh, *kept], latency_ms=latency, site=site
        )
    return 0


def save_again(results: dict, measured: str, load, **figures) -> None:
    """``benchmark/latest.json`` and the README with one part's new ``figures``, and the
    date and load average it was measured at under ``measured``."""
    results.update(
        figures, **{measured: {"date": date.today().isoformat(), "load_average": load[0]}}
    )
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    update_readme(results)
    print(f"saved {RESULTS.relative_to(ROOT)} and the README's figures")


def checks_again(save: bool) -> int:
    """Part 4 measured again; the other rows as ``benchmark/latest.json`` has them."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    load = os.getloadavg()
    checks = check_times()
    fresh = check_rows(checks)
    print_table(
        f"Exercise checks, {date.today().isoformat()}, load average {load[0]:.2f} at the start",
        fresh,
    )
    if save:
        rows = results["rows"]
        first = next((i for i, row in enumerate(rows) if row[0].startswith("check ")), len(rows))
        kept = [row for row in rows if not row[0].startswith("check ")]
        rows = [*kept[:first], *fresh, *kept[first:]]
        save_again(results, "checks_measured", load, rows=rows, check_ms=checks)
    return 0


def update_readme(results: dict) -> None:
    parts = {"explorer_measured": "the explorer and the site", "checks_measured": "the checks"}
    again = [
        f"{what} again on {results[key]['date']} (load average {results[key]['load_average']:.2f})"
        for key, what in parts.items()
        if results.get(key)
    ]
    lines = [
        f"Measured on {results['date']}, {results['machine']} (load average "
        f"{results['load_average']:.2f} at the start)"
        + "".join(f"; {part}" for part in again)
        + ":",
        "",
        "| measure | value | target |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {value} | {target} |" for name, value, target, _ in results["rows"]]
    text = between_markers(
        README.read_text(encoding="utf-8"), README_START, README_END, "\n".join(lines)
    )
    if text is not None:
        README.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
