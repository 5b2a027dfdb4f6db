"""Google Colab, simulated: every notebook runs top to bottom on Colab's packages.

What is simulated:

* Colab's runtime: a virtual environment on Colab's Python with Colab's own
  TensorFlow, Keras, NumPy, matplotlib, ipywidgets, IPython, ipykernel, kernel
  messaging and anywidget (``requirements-colab.txt``, the one place these versions live, says where
  they come from), and nothing of the course. It is built from nothing on the first
  run and cached in ``.cache/colab-simulation/`` (git-ignored, keyed by the
  requirements and the Python), so later runs start at once.
* A fresh runtime per notebook: the helper package is uninstalled before each one
  and the kernel's working folder is empty, as Colab's ``/content`` is.
* The setup cell's Colab path, taken for real: ``AUTODIFF_COURSE_FORCE_COLAB=1``
  turns the detector on, the cell finds no ``autodiff_course`` and installs it with
  its own ``%pip install --quiet --no-deps ...`` line. The one difference from Colab
  is the source: GitHub is replaced by a copy of this checkout (the files git tracks
  or would track), since only the package registries are reachable here, built once
  into the wheel pip would build from it (the build itself is the same on every run;
  each fresh runtime then installs that wheel).

Each notebook must run with no cell raising and no error output; solutions run
with ``AUTODIFF_COURSE_STRICT=1`` as in the main suite, lessons without. The setup
cell must report Colab, keep Colab's versions and say that outputs may differ.

What is not simulated: Colab's own front end and widget manager, its exact Python
release (the same minor version, from this machine), its preinstalled packages
beyond these, and GitHub itself. Outputs are not compared with the saved ones: they
may differ in the last digits.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE
from autodiff_course.notebook_setup import COLAB_ENVIRONMENT_VARIABLE
from autodiff_course.notebook_setup import COLAB_OLDEST_TENSORFLOW
from course_tools.config import ROOT
from course_tools.config import load_course
from course_tools.interpreters import cached_environment
from course_tools.interpreters import pip
from course_tools.interpreters import run_notebook

COURSE = load_course()
NOTEBOOKS = [
    pytest.param(folder, lesson, id=f"{folder}/{lesson.slug}")
    for folder in ("lessons", "solutions")
    for lesson in COURSE.lessons
]
HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements-colab.txt"
CACHE = ROOT / ".cache" / "colab-simulation"

pytestmark = pytest.mark.colab


def colab_pins() -> dict[str, str]:
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name] = version
    return pins


def colab_python_version() -> str:
    """Colab's Python, as requirements-colab.txt states it ("# python==3.13")."""
    return re.search(r"^# python==(\d+\.\d+)$", REQUIREMENTS.read_text(), re.M).group(1)


@pytest.fixture(scope="module")
def colab_python(installed_python) -> Path:
    """The simulated runtime's Python, built once and then reused from the cache."""
    base = installed_python(colab_python_version(), "(Colab's) to simulate Colab")
    return cached_environment(base, CACHE, [["-r", str(REQUIREMENTS)]])


@pytest.fixture(scope="module")
def repository_copy(tmp_path_factory, tracked_files_copy) -> Path:
    """What ``pip install git+https://github.com/...`` would fetch: the repository's files."""
    return tracked_files_copy(tmp_path_factory.mktemp("colab-source") / "repository")


@pytest.fixture(scope="module")
def helper_wheel(colab_python, repository_copy, tmp_path_factory) -> Path:
    """The wheel ``pip install git+https://github.com/...`` builds from those files, built
    by the simulated runtime's pip."""
    folder = tmp_path_factory.mktemp("colab-wheel")
    pip(
        colab_python,
        "wheel",
        "--quiet",
        "--no-deps",
        "--wheel-dir",
        str(folder),
        str(repository_copy),
    )
    (wheel,) = folder.glob("autodiff_course-*.whl")
    return wheel


def test_the_simulated_runtime_has_colabs_versions(colab_python, tmp_path):
    pins = colab_pins()
    code = (
        "import importlib.metadata as m, json, sys\n"
        f"names = {list(pins)!r}\n"
        "found = {name: m.version(name) for name in names}\n"
        "found['python'] = '%d.%d' % sys.version_info[:2]\n"
        "try:\n    m.version('autodiff-course')\nexcept m.PackageNotFoundError:\n"
        "    found['helper package'] = None\n"
        "else:\n    found['helper package'] = 'installed'\n"
        "print(json.dumps(found))\n"
    )
    pip(colab_python, "uninstall", "--yes", "autodiff-course", check=False)
    done = subprocess.run(
        [str(colab_python), "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )  # not the checkout, with its egg-info
    found = json.loads(done.stdout)
    assert found.pop("python") == colab_python_version()
    assert found.pop("helper package") is None
    assert found == pins
    assert pins["tensorflow-cpu"] == COLAB_OLDEST_TENSORFLOW


def test_the_readme_quotes_the_simulated_versions():
    """README.md names each version of requirements-colab.txt, and Colab's Python."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    labels = {
        "tensorflow-cpu": "TensorFlow",
        "keras": "Keras",
        "numpy": "NumPy",
        "matplotlib": "matplotlib",
        "ipywidgets": "ipywidgets",
        "ipython": "IPython",
        "ipykernel": "ipykernel",
    }
    pins = colab_pins()
    for name, label in labels.items():
        assert f"{label} {pins[name]}" in readme, f"{label} {pins[name]}"
    assert f"on Python {colab_python_version()}" in readme


def problems_in(nb) -> list[str]:
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and "Traceback" in output.text:
                found.append(f"cell {index} printed a traceback: {output.text[-1500:]}")
    return found


@pytest.mark.parametrize("folder, lesson", NOTEBOOKS)
def test_notebook_runs_top_to_bottom_on_colab(folder, lesson, colab_python, helper_wheel, tmp_path):
    nb = nbformat.read(ROOT / folder / lesson.filename, as_version=4)
    setup = next(cell for cell in nb.cells if cell.cell_type == "code")
    install = f"%pip install --quiet --no-deps {COURSE.helper_package_source}\n"
    assert setup.source.count(install) == 1
    setup.source = setup.source.replace(install, f"%pip install --quiet --no-deps {helper_wheel}\n")

    pip(colab_python, "uninstall", "--yes", "autodiff-course", check=False)  # fresh runtime
    content = tmp_path / "content"  # Colab's empty working folder
    content.mkdir()
    variables = {
        COLAB_ENVIRONMENT_VARIABLE: "1",
        STRICT_ENVIRONMENT_VARIABLE: "1" if folder == "solutions" else "0",
        "PATH": f"{colab_python.parent}{os.pathsep}{os.environ['PATH']}",
    }
    run_notebook(nb, colab_python, content, tmp_path / "kernels", variables)

    assert problems_in(nb) == []
    report = "".join(
        output.get("text", "")
        for output in setup.outputs
        if output.output_type == "stream" and output.name == "stdout"
    )
    assert "Environment OK (Google Colab): " in report, report
    assert f"TensorFlow {COLAB_OLDEST_TENSORFLOW}" in report
    assert "outputs may differ in the last digits" in report
    installed = subprocess.run(
        [str(colab_python), "-c", "import autodiff_course; print(autodiff_course.__file__)"],
        capture_output=True,
        text=True,
        cwd=content,
        check=True,
    ).stdout
    assert "site-packages" in installed, "the setup cell did not install the helper package"
