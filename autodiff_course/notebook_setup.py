"""The setup cell of every notebook (introduced in lesson 00).

``setup_notebook()`` makes a notebook quiet, repeatable and honest about its
environment:

* TensorFlow's C++ log lines are silenced *before* TensorFlow is imported (they
  are printed at import time, so silencing them later is too late);
* Python-side TensorFlow warnings are silenced;
* Python, NumPy and TensorFlow are seeded and TensorFlow's ops made deterministic;
* NumPy (and so TensorFlow's) print precision is fixed;
* one line reports the environment, naming in plain words anything that is wrong
  and how to fix it;
* where the runtime differs from the one the saved outputs come from (TensorFlow as
  pinned, on an x86-64 CPU, no GPU), a second line says how, and which lessons'
  numbers may differ (:func:`~.runtime.runtime_line`). On the reference runtime it is absent,
  so the setup cell's output is the same as the saved one.

On Google Colab (detected by :func:`running_on_colab`) the notebooks run with
Colab's own TensorFlow, NumPy, matplotlib and ipywidgets, which the setup cell
never replaces: versions that differ from the pinned ones are reported as a note
(outputs may differ in the last digits), not as a problem.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import random
import sys
import warnings
from dataclasses import dataclass
from dataclasses import field

from ._pins import PINS
from .runtime import FIX_COMMAND
from .runtime import _and
from .runtime import _as_tuple
from .runtime import current_runtime
from .runtime import runtime_line

LABELS = {
    "tensorflow": "TensorFlow",
    "numpy": "NumPy",
    "matplotlib": "matplotlib",
    "ipywidgets": "ipywidgets",
}
# The versions the course's outputs were produced with, as requirements.txt pins them
# (copied into _pins.py by the lesson build, so that they are installed with the package).
PINNED = {name: PINS[name] for name in LABELS}
# The Python versions TensorFlow 2.21 publishes wheels for (its "Programming Language ::
# Python :: 3.x" classifiers); tests/test_python_range.py keeps this, course.sh and
# pyproject.toml equal to the installed wheel's range.
SUPPORTED_PYTHON = ((3, 10), (3, 13))

# Google Colab. The setup cell takes its Colab path where ``google.colab`` can be
# imported, or where this variable is "1" (the simulated-Colab test sets it).
COLAB_ENVIRONMENT_VARIABLE = "AUTODIFF_COURSE_FORCE_COLAB"
# The oldest TensorFlow that every lesson has been run with on the simulated Colab
# (tests/colab/requirements-colab.txt pins the same version).
COLAB_OLDEST_TENSORFLOW = "2.20.0"
COLAB_RESTART = "then choose Runtime → Restart session"

# Environment variables TensorFlow reads once, when it is imported.
QUIET_TENSORFLOW_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "3",  # C++ log lines: errors only... and not even those
    "TF_ENABLE_ONEDNN_OPTS": "0",  # no oneDNN graph rewrites, no banner (matmuls: still oneDNN)
    "GRPC_VERBOSITY": "ERROR",
}


class EnvironmentProblem(RuntimeError):
    """Raised by the setup cell when the course cannot run at all here."""


@dataclass
class EnvironmentReport:
    """What the setup cell found: versions, and the problems in plain words."""

    python: tuple[int, int]
    versions: dict[str, str | None]
    widgets_front_end: bool
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    colab: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary_line(self) -> str:
        found = [f"Python {self.python[0]}.{self.python[1]}"]
        for name, label in LABELS.items():
            version = self.versions.get(name)
            found.append(f"{label} {version}" if version else f"{label} missing")
        where = " (Google Colab)" if self.colab else ""
        if self.ok:
            line = f"Environment OK{where}: " + ", ".join(found) + "."
        else:
            line = f"Environment problem{where}: " + " ".join(self.problems)
        if self.notes:
            line += " " + " ".join(self.notes)
        return line


def _installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_versions() -> dict[str, str | None]:
    """Versions of the packages the course imports, ``None`` where one is missing."""
    tensorflow = _installed_version("tensorflow-cpu") or _installed_version("tensorflow")
    return {
        "tensorflow": tensorflow,
        "numpy": _installed_version("numpy"),
        "matplotlib": _installed_version("matplotlib"),
        "ipywidgets": _installed_version("ipywidgets"),
        "jupyterlab_widgets": _installed_version("jupyterlab_widgets"),
        "anywidget": _installed_version("anywidget"),
    }


# The package that carries the course's explorers to the browser (lessons 01, 03, 05).
WIDGET_PACKAGE_MISSING = (
    "anywidget is not installed, so the explorers of lessons 01, 03 and 05 cannot be drawn"
)


def running_on_colab() -> bool:
    """True in a Google Colab kernel (``google.colab`` is importable), or when forced.

    ``AUTODIFF_COURSE_FORCE_COLAB=1`` forces it, so that a test can send the setup
    cell down its Colab path on an ordinary machine.
    """
    if os.environ.get(COLAB_ENVIRONMENT_VARIABLE) == "1":
        return True
    if "google.colab" in sys.modules:
        return True
    try:
        return (
            importlib.util.find_spec("google") is not None
            and importlib.util.find_spec("google.colab") is not None
        )
    except (ImportError, ValueError):
        return False


def diagnose(
    python: tuple[int, int],
    versions: dict[str, str | None],
    widgets_front_end: bool | None = None,
    colab: bool = False,
) -> EnvironmentReport:
    """Compare what is installed with what the course is checked against.

    A pure function of its arguments, so every message can be unit-tested.
    With ``colab=True`` the packages are Colab's own: a version other than the
    pinned one is a note, not a problem, unless it is too old to run the lessons.
    """
    if colab:
        return _diagnose_colab(python, versions)
    if widgets_front_end is None:
        widgets_front_end = versions.get("jupyterlab_widgets") is not None
    report = EnvironmentReport(
        python=python, versions=dict(versions), widgets_front_end=widgets_front_end
    )
    _check_python(
        report,
        python,
        "create the virtual environment with Python "
        f"{SUPPORTED_PYTHON[1][0]}.{SUPPORTED_PYTHON[1][1]} (see the README)",
    )
    for name, pinned in PINNED.items():
        version = versions.get(name)
        label = {"tensorflow": "TensorFlow", "numpy": "NumPy"}.get(name, name)
        if version is None:
            report.problems.append(
                f"{label} is not installed in this kernel's environment "
                f"({sys.executable}): run `{FIX_COMMAND}` in the course folder, "
                f"or pick the kernel of the environment where you installed it."
            )
        elif name == "tensorflow" and _as_tuple(version) < _as_tuple(pinned):
            report.problems.append(
                f"TensorFlow {version} is older than the {pinned} this course is "
                f"checked against, so some cells will fail or print other numbers: "
                f"run `{FIX_COMMAND}`."
            )
        elif name == "ipywidgets" and _as_tuple(version) < (8,):
            report.problems.append(
                f"ipywidgets {version} is too old for the course's widgets (8 or newer "
                f"is needed): run `{FIX_COMMAND}`."
            )
    if not widgets_front_end:
        report.problems.append(
            "The widgets front end (the jupyterlab_widgets package) is not installed, "
            "so the widgets will show as still pictures and plain text: run "
            f"`{FIX_COMMAND}` and restart JupyterLab."
        )
    if versions.get("anywidget") is None:
        report.problems.append(f"{WIDGET_PACKAGE_MISSING}: run `{FIX_COMMAND}`.")
    return report


def _check_python(report: EnvironmentReport, python: tuple[int, int], fix: str) -> None:
    low, high = SUPPORTED_PYTHON
    if not low <= python <= high:
        report.problems.append(
            f"Python {python[0]}.{python[1]} is outside the {low[0]}.{low[1]} to "
            f"{high[0]}.{high[1]} range that TensorFlow {PINNED['tensorflow']} supports: "
            f"{fix}."
        )


def _diagnose_colab(python: tuple[int, int], versions: dict[str, str | None]) -> EnvironmentReport:
    """Colab: its own packages are used as they are; only what cannot work is a problem.

    Colab's front end draws the course's widgets with its own widget manager, whatever
    ipywidgets version is installed; they need the anywidget package, which Colab's
    runtime ships (0.9 since July 2025).
    """
    report = EnvironmentReport(
        python=python, versions=dict(versions), widgets_front_end=True, colab=True
    )
    _check_python(
        report,
        python,
        "Colab's Python cannot be changed from a notebook, so "
        "run the course on Binder instead (see the README)",
    )
    if versions.get("anywidget") is None:
        report.problems.append(
            f"{WIDGET_PACKAGE_MISSING}: run `%pip install anywidget` in a new cell, "
            f"{COLAB_RESTART}."
        )
    differ = []
    for name, pinned in PINNED.items():
        version, label = versions.get(name), LABELS[name]
        if version is None:
            report.problems.append(
                f"{label} is missing from this Colab runtime: run `%pip install "
                f"{name}=={pinned}` in a new cell, {COLAB_RESTART}."
            )
        elif name == "tensorflow" and _as_tuple(version) < _as_tuple(COLAB_OLDEST_TENSORFLOW):
            report.problems.append(
                f"TensorFlow {version} is older than {COLAB_OLDEST_TENSORFLOW}, the oldest "
                f"version the lessons have been run with, so some cells will fail: run "
                f"`%pip install tensorflow=={pinned}` in a new cell, {COLAB_RESTART}."
            )
        elif version != pinned and name != "tensorflow":  # the runtime line reports it
            differ.append((label, version, pinned))
    if differ:
        report.notes.append(
            "Note: these are Colab's own versions, kept as they are; the saved outputs "
            "come from "
            + _and([f"{label} {pinned}" for label, _, pinned in differ])
            + ", so outputs may differ in the last digits."
        )
    return report


def silence_tensorflow_logs() -> bool:
    """Set TensorFlow's log environment; return False if it was imported already."""
    for name, value in QUIET_TENSORFLOW_ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    return "tensorflow" not in sys.modules


def seed_everything(seed: int) -> None:
    import numpy as np
    import tensorflow as tf

    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    tf.config.experimental.enable_op_determinism()


def setup_notebook(seed: int = 0, precision: int = 6) -> None:
    """Prepare a notebook: quiet logs, seeds, print precision, environment check.

    Call it in the first code cell, before importing TensorFlow yourself.
    It prints the summary line of :func:`diagnose`, then :func:`runtime_line` where
    the runtime differs from the reference one, and returns nothing, so the cell
    shows that one line (two off the reference runtime) and no echo as its value.
    Raises :class:`EnvironmentProblem` only when TensorFlow or NumPy is missing,
    since then no later cell can run.
    """
    imported_late = not silence_tensorflow_logs()
    versions = installed_versions()
    colab = running_on_colab()
    report = diagnose(sys.version_info[:2], versions, colab=colab)
    if imported_late:
        report.notes.append(
            "Note: TensorFlow was imported before setup_notebook(), so its start-up "
            "log lines could not be silenced; restart the kernel and run this cell first."
        )
    if versions["tensorflow"] is None or versions["numpy"] is None:
        print(report.summary_line())
        raise EnvironmentProblem(report.summary_line()) from None

    warnings.filterwarnings("ignore", module=r"(tensorflow|keras|absl)(\..*)?")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    import numpy as np
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:  # pragma: no cover - absl ships with TensorFlow
        pass
    seed_everything(seed)
    np.set_printoptions(precision=precision, suppress=False, linewidth=88)
    _use_course_plot_style()
    print(report.summary_line())
    note = runtime_line(current_runtime(versions, colab))
    if note:
        print(note)


def _use_course_plot_style() -> None:
    try:
        from .plotting import use_course_style
    except ImportError:  # matplotlib missing: the report has said so
        return
    use_course_style()


# What a front end without widgets shows in place of the probe, and what any viewer
# shows before the cell has run (JupyterLab, GitHub, Colab: saved widgets are not
# redrawn). It has to be true in both cases, so it says what reading it means and
# what to do, instead of declaring the front end broken.
WIDGETS_STAND_IN_TEXT = (
    "Widgets front end: not confirmed. You are reading the plain-text stand-in of a "
    "widget. If this cell has not run yet, run it. If you still read this sentence "
    "after running it, instead of a green box, this page cannot draw widgets, so "
    "the widgets' controls and live plots will not appear. Fix: run "
    f"`{FIX_COMMAND}` in the environment that runs JupyterLab, restart JupyterLab, "
    "and reload this page."
)
WIDGETS_WORKING_HTML = (
    "<div class='widgets-front-end-ok' style='padding:4px 8px;border-left:4px solid "
    "#009E73'><b>Widgets front end: working.</b> The widgets' controls and live plots "
    "in this course will appear like this box.</div>"
)
# The widget-view mimetype and the version of its message format, which ipywidgets
# 7 and 8 share.
WIDGET_VIEW_MIMETYPE = "application/vnd.jupyter.widget-view+json"


class WidgetsFrontEndProbe:
    """Lesson 00: a widget whose drawn form is the verdict "working".

    Only a front end that can draw widgets shows the green box, so the verdict is
    given by the front end itself. Everywhere else, and before the cell has run
    (a notebook opened in JupyterLab shows saved outputs, not saved widgets), the
    plain-text stand-in shows: it says to run the cell, and what to fix if the
    stand-in stays. The saved output is that stand-in, which is also what every run
    produces as text, so nbval compares like with like.
    The display bundle is built from public attributes only (``model_id``), so it
    works with ipywidgets 7 (Colab's) and 8 alike.
    """

    def __init__(self):
        import ipywidgets as widgets

        self.widget = widgets.HTML(WIDGETS_WORKING_HTML)

    def text_summary(self) -> str:
        return WIDGETS_STAND_IN_TEXT

    def _repr_mimebundle_(self, **kwargs):
        return {
            "text/plain": self.text_summary(),
            WIDGET_VIEW_MIMETYPE: {
                "version_major": 2,
                "version_minor": 0,
                "model_id": self.widget.model_id,
            },
        }


def check_widgets_front_end() -> WidgetsFrontEndProbe:
    """Display the result to see whether this browser can draw the course's widgets."""
    return WidgetsFrontEndProbe()
