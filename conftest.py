"""pytest settings for the whole repository.

* Notebooks under ``solutions/`` run with ``AUTODIFF_COURSE_STRICT=1``: an exercise
  check that is not *correct* raises, so a broken solution fails its cell. Notebooks
  under ``lessons/`` run with it off: their checks print *not attempted yet*.
* The summary reports how many cells carry ``nbval-ignore-output`` (their outputs
  are run but not compared: only wall-clock timings may have the tag), and which
  CPUs the two nbval runs stood for: the native one (this CPU, with or without
  AVX-512) and, when the Binder test ran (``tests/binder/test_binder.py``), the one in
  Binder's environment that takes the AVX2 paths of NumPy and oneDNN.
* Run with ``--cov`` (``./course.sh test`` does), the last lines give the line coverage
  of each package, ``autodiff_course`` and ``course_tools``.
* Run with ``-n 2`` (``./course.sh test`` does, through pytest-xdist), each worker takes
  whole test files, and whole notebooks; the tests that share one environment built
  under ``.cache/`` (:data:`SHARED_ENVIRONMENTS`) go to the same worker, one after the other;
  the longest of these units are handed out first (:data:`LONGEST_FIRST`).
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE as STRICT

ROOT = Path(__file__).resolve().parent
# Tests that build and reuse one environment (which a rebuild deletes first):
# the hub image (course_tools.hub_image), the simulated Colab runtime and axe-core.
SHARED_ENVIRONMENTS = {
    "tests/binder/": "hub image",
    "tests/hub/": "hub image",
    "tests/colab/": "colab",
    "tests/browser/test_site.py": "axe-core",  # (npm installs it once, in .cache/axe-core)
    "tests/browser/test_accessibility.py": "axe-core",
}
# The work units that take longest, longest first (as ``--durations`` measures them, a
# few minutes each): a worker hands out a unit when it is free, so a long unit handed out
# last would run on alone while the other worker waits.
LONGEST_FIRST = (
    "hub image",
    "tests/browser/test_notebooks_in_browser.py",
    "colab",
    "tests/test_python_range.py",
    "tests/browser/test_slides.py",
    "axe-core",
    "tests/test_nbgrader_export.py",
    "tests/test_pedagogy.py",
    "tests/test_progress.py",
)
_notebooks_seen: set[Path] = set()
# The outcome of the second nbval run: in Binder's environment, as a CPU without AVX-512.
WITHOUT_AVX512_TEST = (
    "test_binder.py::test_environment_built_like_binder_passes_nbval_as_on_a_cpu_without_avx512"
)
_without_avx512: list[str] = []


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    path = Path(str(item.fspath))
    if path.suffix == ".ipynb":
        # The kernel is started while the notebook's first cell is set up, and
        # inherits this process's environment.
        os.environ[STRICT] = "1" if path.parent.name == "solutions" else "0"
    yield


def work_unit(nodeid: str) -> str:
    """What one xdist worker runs from start to end: a file, or a shared environment's tests."""
    path = nodeid.split("::")[0]
    return next(
        (group for folder, group in SHARED_ENVIRONMENTS.items() if path.startswith(folder)), path
    )


def pytest_collection_modifyitems(config, items):
    """The longest work units first (a stable sort: each unit keeps its own order)."""
    rank = {unit: place for place, unit in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    # Hand out the units in the order collected (LONGEST_FIRST), not by their number of tests.
    config.option.loadscopereorder = False
    return ByWorkUnit(config, log)


def pytest_runtest_logreport(report):
    # (Under xdist, the reports reach the main process, which writes the summary.)
    path = ROOT / report.nodeid.split("::")[0]
    if path.suffix == ".ipynb" and report.when == "call":
        _notebooks_seen.add(path)
    if report.nodeid.endswith(WITHOUT_AVX512_TEST) and report.when == "call":
        _without_avx512.append(report.outcome)


def cpu_has_avx512() -> bool | None:
    """Whether this CPU has AVX-512 (None where /proc/cpuinfo cannot tell)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return None
    return " avx512f" in flags


def nbval_runs(native: bool) -> list[str]:
    """One line per nbval run of this session, saying which CPU it stood for."""
    avx512 = {True: "with AVX-512", False: "without AVX-512", None: "AVX-512 unknown"}
    lines = [f"  run 1: natively, on this CPU ({avx512[cpu_has_avx512()]})"] if native else []
    if _without_avx512:
        lines.append(
            "  run 2: in Binder's environment, as on an x86-64 CPU without AVX-512 "
            f"(NumPy's AVX-512 targets off, oneDNN held to AVX2): {_without_avx512[-1]}"
        )
    return lines


def ignored_output_cells(paths) -> list[tuple[str, int]]:
    found = []
    for path in sorted(paths):
        cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(cells):
            if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
                found.append((f"{path.parent.name}/{path.name}", index))
    return found


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    if _notebooks_seen or _without_avx512:
        ignored = ignored_output_cells(_notebooks_seen)
        terminalreporter.write_sep("-", "nbval")
        terminalreporter.write_line(
            f"nbval strict: {len(_notebooks_seen)} notebooks validated; "
            f"{len(ignored)} cells tagged nbval-ignore-output (wall-clock timings only)"
        )
        for line in nbval_runs(native=bool(_notebooks_seen)):
            terminalreporter.write_line(line)
        for name, index in ignored:
            terminalreporter.write_line(f"  output not compared: {name} cell {index}")
    coverage_lines(terminalreporter, config)


def coverage_lines(terminalreporter, config) -> None:
    """One line per package with its share of lines run, when pytest-cov measured it."""
    plugin = config.pluginmanager.getplugin("_cov")
    measured = getattr(getattr(plugin, "cov_controller", None), "cov", None)
    if measured is None:
        return
    terminalreporter.write_sep("-", "line coverage")
    root = Path(__file__).resolve().parent
    for package in ("autodiff_course", "course_tools"):
        try:
            percent = measured.report(include=[f"{root / package}/*"], file=io.StringIO())
        except Exception as error:  # noqa: BLE001 (no data for it: say so, never fail)
            terminalreporter.write_line(f"{package}: not measured ({error})")
            continue
        terminalreporter.write_line(f"{package}: {percent:.1f}% of its lines run by the tests")
