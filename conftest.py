"""pytest settings for the whole repository.

* Notebooks under ``solutions/`` run with ``AUTODIFF_COURSE_STRICT=1``: an exercise
  check that is not *correct* raises, so a broken solution fails its cell. Notebooks
  under ``lessons/`` run with it off: their checks print *not attempted yet*.
* The summary reports how many cells carry ``nbval-ignore-output`` (their outputs
  are run but not compared: only wall-clock timings may have the tag).
* Run with ``--cov`` (``./course.sh test`` does), the last lines give the line coverage
  of each package, ``autodiff_course`` and ``course_tools``.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE as STRICT

_notebooks_seen: set[Path] = set()


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    path = Path(str(item.fspath))
    if path.suffix == ".ipynb":
        # The kernel is started while the notebook's first cell is set up, and
        # inherits this process's environment.
        os.environ[STRICT] = "1" if path.parent.name == "solutions" else "0"
        _notebooks_seen.add(path)
    yield


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
    if _notebooks_seen:
        ignored = ignored_output_cells(_notebooks_seen)
        terminalreporter.write_sep("-", "nbval")
        terminalreporter.write_line(
            f"nbval strict: {len(_notebooks_seen)} notebooks validated; "
            f"{len(ignored)} cells tagged nbval-ignore-output (wall-clock timings only)"
        )
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
