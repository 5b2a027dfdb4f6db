"""The Python versions the course accepts are exactly those TensorFlow has wheels for.

The range is read from the installed TensorFlow distribution itself (its
``Requires-Python`` and its ``Programming Language :: Python :: 3.x``
classifiers), so that moving the TensorFlow pin moves this test's expectation;
then ``course.sh``, the setup cell and ``pyproject.toml`` must all agree with it.
The oldest of them is not only accepted but used: requirements.txt is installed
with it (``.cache/oldest-python/``), and every notebook runs there top to bottom.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys

import pytest
from packaging.specifiers import SpecifierSet

from autodiff_course.notebook_setup import PINNED
from autodiff_course.notebook_setup import SUPPORTED_PYTHON
from autodiff_course.notebook_setup import diagnose
from course_tools.config import ROOT
from course_tools.config import load_course
from course_tools.interpreters import cached_environment
from course_tools.interpreters import run_notebook

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def tensorflow_distribution() -> importlib.metadata.Distribution:
    for name in ("tensorflow-cpu", "tensorflow"):
        try:
            return importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    pytest.fail("TensorFlow is not installed: run ./course.sh test")


def wheel_range() -> tuple[tuple[int, int], tuple[int, int]]:
    """(lowest, highest) Python minor version the installed TensorFlow declares."""
    metadata = tensorflow_distribution().metadata
    minors = sorted(
        (3, int(match.group(1)))
        for classifier in metadata.get_all("Classifier")
        if (match := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", classifier))
    )
    assert minors, "TensorFlow's metadata lists no Python 3.x classifiers"
    requires = SpecifierSet(metadata["Requires-Python"])
    assert f"{minors[0][0]}.{minors[0][1]}" in requires
    assert f"{minors[0][0]}.{minors[0][1] - 1}" not in requires, (
        "Requires-Python admits a Python older than the oldest classifier"
    )
    assert minors == [(3, minor) for minor in range(minors[0][1], minors[-1][1] + 1)]
    return minors[0], minors[-1]


def test_the_installed_tensorflow_is_the_pinned_one():
    assert tensorflow_distribution().version == PINNED["tensorflow"]


def test_setup_cell_accepts_exactly_the_wheels_range():
    low, high = wheel_range()
    assert SUPPORTED_PYTHON == (low, high)
    good = dict(PINNED, jupyterlab_widgets="3.0.17", anywidget="0.11.0")
    assert diagnose(low, good).ok and diagnose(high, good).ok
    assert not diagnose((low[0], low[1] - 1), good).ok
    assert not diagnose((high[0], high[1] + 1), good).ok


def test_pyproject_requires_exactly_the_wheels_range():
    low, high = wheel_range()
    with open(ROOT / "pyproject.toml", "rb") as handle:
        requires = SpecifierSet(tomllib.load(handle)["project"]["requires-python"])
    for minor in range(low[1], high[1] + 1):
        assert f"3.{minor}.0" in requires
    assert f"3.{low[1] - 1}.99" not in requires
    assert f"3.{high[1] + 1}.0" not in requires


# Answers course.sh's questions as another Python would (sys.version_info replaced
# before the question's code runs), and stops when asked to create the venv.
FAKE_PYTHON = """#!/bin/bash
case "$1" in
  --version) echo "Python MAJOR.MINOR.0" ;;
  -c) exec REAL -c "import sys; sys.version_info = (MAJOR, MINOR, 0, 'final', 0); \\
exec(sys.argv.pop(1))" "$2" ;;
  *) echo "fake Python MAJOR.MINOR: stopping at: $*" >&2; exit 3 ;;
esac
"""


def fake_python(tmp_path, major: int, minor: int):
    path = tmp_path / f"python{major}.{minor}"
    path.write_text(
        FAKE_PYTHON.replace("REAL", sys.executable)
        .replace("MAJOR", str(major))
        .replace("MINOR", str(minor))
    )
    path.chmod(0o755)
    return path


def course_sh_lab(tmp_path, python) -> subprocess.CompletedProcess:
    environment = dict(os.environ, PYTHON=str(python), COURSE_VENV=str(tmp_path / "never-created"))
    return subprocess.run(
        [str(ROOT / "course.sh"), "lab"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def test_course_sh_accepts_exactly_the_wheels_range(tmp_path):
    low, high = wheel_range()
    text = (ROOT / "course.sh").read_text()
    assert f"\nMIN_PYTHON={low[0]}.{low[1]}\n" in text
    assert f"\nMAX_PYTHON={high[0]}.{high[1]}\n" in text
    for version in (low, high):
        done = course_sh_lab(tmp_path, fake_python(tmp_path, *version))
        assert (
            f"Creating the virtual environment {tmp_path / 'never-created'} with "
            f"Python {version[0]}.{version[1]}.0."
        ) in done.stdout, done.stderr
        assert "stopping at: -m venv" in done.stderr
    for version in ((low[0], low[1] - 1), (high[0], high[1] + 1)):
        done = course_sh_lab(tmp_path, fake_python(tmp_path, *version))
        assert done.returncode != 0
        assert (
            f"is not Python {low[0]}.{low[1]} to {high[0]}.{high[1]} "
            f"(TensorFlow 2.21 supports no other)"
        ) in done.stderr
        assert "Creating the virtual environment" not in done.stdout


def test_readme_states_the_range():
    low, high = wheel_range()
    assert f"Python {low[0]}.{low[1]} to {high[0]}.{high[1]}" in (ROOT / "README.md").read_text()


# ------------------------------------------------------- the oldest Python, for real

OLDEST = ROOT / ".cache" / "oldest-python"


@pytest.fixture(scope="module")
def oldest_python(installed_python):
    """requirements.txt and the helper package installed with the oldest Python the
    course accepts, as ./course.sh would install them there (built once, then cached)."""
    low, _ = SUPPORTED_PYTHON
    base = installed_python(f"{low[0]}.{low[1]}", "to test the oldest Python")
    return cached_environment(
        base, OLDEST, [["-r", "requirements.txt"], ["--no-deps", "-e", "."]], cwd=ROOT
    )


OLDEST_NOTEBOOKS = [
    pytest.param(folder, lesson, id=f"{folder}/{lesson.slug}")
    for folder in ("lessons", "solutions")
    for lesson in load_course().lessons
]


@pytest.mark.parametrize("folder, lesson", OLDEST_NOTEBOOKS)
def test_every_notebook_runs_on_the_oldest_python(folder, lesson, oldest_python, tmp_path):
    """Top to bottom, no cell raising, solutions strict, the setup cell content. The
    outputs are not compared: NumPy and matplotlib are older releases there."""
    import nbformat

    from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE

    low, _ = SUPPORTED_PYTHON
    nb = nbformat.read(ROOT / folder / lesson.filename, as_version=4)
    strict = {STRICT_ENVIRONMENT_VARIABLE: "1" if folder == "solutions" else "0"}
    run_notebook(nb, oldest_python, ROOT / folder, tmp_path / "kernels", strict)
    setup = next(cell for cell in nb.cells if cell.cell_type == "code")
    report = "".join(output.get("text", "") for output in setup.outputs)
    assert report.startswith(f"Environment OK: Python {low[0]}.{low[1]}, TensorFlow "), report
