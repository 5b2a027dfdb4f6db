"""The benchmark's memory figures are true peaks, and the hub figures follow from them."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from notebooks import LESSONS
from notebooks import load

from course_tools import benchmark
from course_tools import benchmark_hub
from course_tools import benchmark_memory

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="VmHWM is read from Linux's /proc"
)

# Allocates and touches 300 MB, frees it, then waits to be measured.
SPIKE = """
import sys
block = bytearray(300 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
del block
print("freed", flush=True)
sys.stdin.readline()
"""


def test_peak_is_the_high_water_mark_not_a_sample():
    import psutil

    process = subprocess.Popen(
        [sys.executable, "-c", SPIKE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "freed"
        time.sleep(0.2)
        now = psutil.Process(process.pid).memory_info().rss / 2**20
        peak = benchmark_memory.peak_resident_mb(process.pid)
    finally:
        process.communicate("\n", timeout=30)
    assert peak >= 300, f"the 300 MB spike is missing from the peak ({peak:.0f} MB)"
    assert now < peak - 250, "after the spike a sample reads far less than the peak"


def test_peak_of_a_process_that_is_gone_says_why():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    with pytest.raises(RuntimeError, match="cannot read the memory peak"):
        benchmark_memory.peak_resident_mb(process.pid)


def test_hub_memory_is_the_measured_peaks_plus_5_percent_rounded_up():
    hub = benchmark_memory.hub_memory(one_lesson_mb=743.0, three_notebooks_mb=2099.0)
    assert hub["guarantee"] == "1G"  # 743 MiB x 1.05 = 0.818 GB
    assert hub["limit"] == "2.5G"  # 2099 MiB x 1.05 = 2.311 GB
    assert benchmark_memory.hub_memory(900.0, 1500.0)["guarantee"] == "1G"  # 0.991 GB
    assert benchmark_memory.hub_memory(910.0, 1500.0)["guarantee"] == "1.25G"  # 1.002 GB
    assert benchmark_memory.hub_memory(700.0, 1500.0)["limit"] == "1.75G"  # 1.652 GB


class EveryControl:
    """A course-style widget (its tree in ``.widget``) with one control of each kind."""

    def __init__(self):
        import ipywidgets as widgets

        self.controls = {
            "slider": widgets.FloatSlider(min=-2.0, max=3.0),
            "count": widgets.IntSlider(min=1, max=4),
            "range": widgets.FloatRangeSlider(min=0.0, max=10.0, value=(0.0, 1.0)),
            "box": widgets.BoundedIntText(min=2, max=6, value=3),
            "switch": widgets.Checkbox(value=True),
            "mode": widgets.ToggleButtons(options=["a", "b", "c"]),
            "pick": widgets.Dropdown(options=["x", "y"]),
        }
        self.seen = {name: [] for name in self.controls}
        for name, control in self.controls.items():
            control.observe(
                lambda change, name=name: self.seen[name].append(change["new"]), names="value"
            )
        self.widget = widgets.VBox(
            [
                widgets.HTML("text"),
                widgets.Image(value=b""),
                widgets.HBox(list(self.controls.values())),
            ]
        )


def drive(*shown) -> str:
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(benchmark_memory.DRIVE_WIDGETS, {"Out": dict(enumerate(shown, 1))})
    return printed.getvalue().strip()


def test_the_driver_moves_every_control_through_its_whole_range():
    shown = EveryControl()
    # 3 x 2 choice combinations; under each: 2 choices set, 5 slider values, 4 counts,
    # 5 ranges, 5 boxes and 2 switches.
    assert drive(shown, "not a widget") == f"drove 1 widgets through {6 * (2 + 21)} changes"
    seen = shown.seen
    assert min(seen["slider"]) == -2.0 and max(seen["slider"]) == 3.0
    assert set(seen["count"]) == {1, 2, 3, 4}
    assert max(high for _, high in seen["range"]) == 10.0
    assert set(seen["box"]) == {2, 3, 4, 5, 6}
    assert seen["switch"][:2] == [False, True]
    assert set(seen["mode"]) == {"b", "c"}  # and "a", where it started
    assert set(seen["pick"]) == {"x", "y"}


def test_the_driver_finds_nothing_where_no_widget_was_shown():
    assert drive() == "drove 0 widgets through 0 changes"


@pytest.mark.parametrize("number", [1, 3, 5])
def test_the_lessons_with_widgets_display_them(number):
    """The driver finds the widgets in Out: lessons 01, 03 and 05 display theirs."""
    lesson = next(lesson for lesson in LESSONS if lesson.number == number)
    views = [
        output
        for cell in load("lessons", lesson).cells
        for output in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in output.get("data", {})
        and output.output_type == "execute_result"
    ]
    assert views, f"lesson {number:02d} displays no widget as a cell's result"


def test_the_driver_runs_through_the_course_widgets():
    from autodiff_course.widgets.chain_rule import ChainRuleExplorer
    from autodiff_course.widgets.jacobian_heatmap import JacobianHeatmap

    report = drive(ChainRuleExplorer(), JacobianHeatmap())
    assert report.startswith("drove 2 widgets through ")
    assert int(report.split()[-2]) > 10


def test_benchmark_table_names_the_measure():
    import inspect

    text = inspect.getsource(benchmark)
    assert "kernel peak memory (VmHWM)" in text
    assert "rows += benchmark_hub.rows(hub)" in text  # the class on a hub, in the same table
    hub = inspect.getsource(benchmark_hub.rows)
    assert "hub memory guarantee per learner" in hub and "hub memory limit per learner" in hub
    driver = inspect.getsource(benchmark_memory.kernel_peak_memory)
    assert "nb.cells.append(nbformat.v4.new_code_cell(DRIVE_WIDGETS))" in driver


def saved_benchmark(saved: dict, folder, monkeypatch) -> tuple:
    """``saved`` as ``benchmark/latest.json`` and a README with the table's markers, both
    in ``folder``, where the benchmark reads and writes them."""
    import json

    results, readme = folder / "latest.json", folder / "README.md"
    results.write_text(json.dumps(saved))
    readme.write_text(f"before\n{benchmark.README_START}\nold\n{benchmark.README_END}\nafter\n")
    monkeypatch.setattr(benchmark, "RESULTS", results)
    monkeypatch.setattr(benchmark, "README", readme)
    monkeypatch.setattr(benchmark, "ROOT", folder)
    return results, readme


def test_the_explorer_measured_again_replaces_its_rows_only(tmp_path, monkeypatch):
    """--explorer-only: the latency and site rows are new, every other row is kept, and
    the README's table says when each part was measured."""
    import json

    saved = {
        "date": "2026-01-01",
        "machine": "x86_64, 2 cores",
        "load_average": 0.5,
        "rows": [
            ["JupyterLab, explorer: key press to painted plot, median", "30.0 ms", "<= 20 ms", ""],
            ["site: lesson 03 page, every byte fetched", "1.00 MB", "<= 3 MB", ""],
            ["check 1.1 (one), median of 9", "9 ms", "<= 300 ms", ""],
        ],
        "latency_ms": {},
        "site": {},
    }
    results, readme = saved_benchmark(saved, tmp_path, monkeypatch)
    monkeypatch.setattr(benchmark, "lab_latency", lambda changes: {"explorer": [12.0] * 30})
    site = {"explorer": [11.0] * 30, "page_bytes": 2e6, "build_s": 10.0, "blocked": []}
    monkeypatch.setattr(benchmark, "site_latency", lambda changes: site)
    assert benchmark.main(["--explorer-only", "--save"]) == 0
    rows = {row[0]: row[1] for row in json.loads(results.read_text())["rows"]}
    assert rows["JupyterLab, explorer: key press to painted plot, median"] == "12.0 ms"
    assert rows["site, explorer: key press to painted plot, median"] == "11.0 ms"
    assert rows["site: lesson 03 page, every byte fetched"] == "2.00 MB"
    assert rows["check 1.1 (one), median of 9"] == "9 ms"
    text = readme.read_text()
    assert "Measured on 2026-01-01" in text and "the explorer and the site again on" in text
    assert "| check 1.1 (one), median of 9 | 9 ms | <= 300 ms |" in text


def test_the_checks_measured_again_replace_their_rows_only(tmp_path, monkeypatch):
    """--checks-only: the check rows are new and where they were, every other row is
    kept, and the README's table says when the checks were measured."""
    import json

    saved = {
        "date": "2026-01-01",
        "machine": "x86_64, 2 cores",
        "load_average": 0.5,
        "rows": [
            ["site: lesson 03 page, every byte fetched", "1.00 MB", "<= 3 MB", ""],
            ["check 1.1 (one), median of 9", "420 ms", "<= 300 ms", ""],
            ["progress, one learner", "1.2 x", "<= 1.5 x", ""],
        ],
        "check_ms": [],
    }
    results, readme = saved_benchmark(saved, tmp_path, monkeypatch)
    measured = [{"exercise": "1.1", "title": "one", "status": "correct", "median_ms": 12.0}]
    monkeypatch.setattr(benchmark, "check_times", lambda: measured)
    assert benchmark.main(["--checks-only", "--save"]) == 0
    kept = json.loads(results.read_text())
    names = [row[0] for row in kept["rows"]]
    assert names[0].startswith("site") and names[-1].startswith("progress"), names
    assert kept["check_ms"] == measured and "420 ms" not in json.dumps(kept["rows"])
    text = readme.read_text()
    assert "Measured on 2026-01-01" in text and "; the checks again on" in text
