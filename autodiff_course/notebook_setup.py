"""The setup cell of every notebook (introduced in lesson 00).

``setup_notebook()`` makes a notebook quiet, repeatable and honest about its
environment:

* TensorFlow's C++ log lines are silenced *before* TensorFlow is imported (they
  are printed at import time, so silencing them later is too late);
* Python-side TensorFlow warnings are silenced;
* Python, NumPy and TensorFlow are seeded and TensorFlow's ops made deterministic;
* NumPy (and so TensorFlow's) print precision is fixed;
* one line reports the environment, naming in plain words anything that is wrong
  and how to fix it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import random
import sys
import warnings
from dataclasses import dataclass, field

from .widgets import PlainTextDisplay

PINNED = {
    "tensorflow": "2.21.0",
    "numpy": "2.4.6",
    "matplotlib": "3.11.2",
    "ipywidgets": "8.1.9",
}
SUPPORTED_PYTHON = ((3, 10), (3, 12))
FIX_COMMAND = "pip install -r requirements.txt"

# Environment variables TensorFlow reads once, when it is imported.
QUIET_TENSORFLOW_ENVIRONMENT = {
    "TF_CPP_MIN_LOG_LEVEL": "3",  # C++ log lines: errors only... and not even those
    "TF_ENABLE_ONEDNN_OPTS": "0",  # no oneDNN banner, and no reordered float sums
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

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary_line(self) -> str:
        found = [f"Python {self.python[0]}.{self.python[1]}"]
        for name, label in (("tensorflow", "TensorFlow"), ("numpy", "NumPy"),
                            ("matplotlib", "matplotlib"), ("ipywidgets", "ipywidgets")):
            version = self.versions.get(name)
            found.append(f"{label} {version}" if version else f"{label} missing")
        if self.ok:
            line = "Environment OK: " + ", ".join(found) + "."
        else:
            line = "Environment problem: " + " ".join(self.problems)
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
    }


def _as_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def diagnose(python: tuple[int, int], versions: dict[str, str | None],
             widgets_front_end: bool | None = None) -> EnvironmentReport:
    """Compare what is installed with what the course is checked against.

    A pure function of its arguments, so every message can be unit-tested.
    """
    if widgets_front_end is None:
        widgets_front_end = versions.get("jupyterlab_widgets") is not None
    report = EnvironmentReport(python=python, versions=dict(versions),
                               widgets_front_end=widgets_front_end)
    low, high = SUPPORTED_PYTHON
    if not low <= python <= high:
        report.problems.append(
            f"Python {python[0]}.{python[1]} is outside the {low[0]}.{low[1]} to "
            f"{high[0]}.{high[1]} range that TensorFlow {PINNED['tensorflow']} supports: "
            f"create the virtual environment with Python {high[0]}.{high[1]} "
            f"(see the README)."
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
        elif name == "tensorflow" and _as_tuple(version)[:2] != _as_tuple(pinned)[:2]:
            report.notes.append(
                f"Note: TensorFlow {version} is newer than the {pinned} the course is "
                f"checked against; it should work, but a few printed numbers may "
                f"differ. `{FIX_COMMAND}` gives the checked version."
            )
        elif name == "ipywidgets" and _as_tuple(version) < (8,):
            report.problems.append(
                f"ipywidgets {version} is too old for the course's widgets (8 or newer "
                f"is needed): run `{FIX_COMMAND}`."
            )
    if not widgets_front_end:
        report.problems.append(
            "The widgets front end (the jupyterlab_widgets package) is not installed, "
            "so sliders and plots will show as plain text: run "
            f"`{FIX_COMMAND}` and restart JupyterLab."
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
    It prints the summary line of :func:`diagnose` and returns nothing, so the
    cell shows that one line and no second echo as its value.
    Raises :class:`EnvironmentProblem` only when TensorFlow or NumPy is missing,
    since then no later cell can run.
    """
    imported_late = not silence_tensorflow_logs()
    versions = installed_versions()
    report = diagnose(sys.version_info[:2], versions)
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


def _use_course_plot_style() -> None:
    try:
        from .plotting import use_course_style
    except ImportError:  # matplotlib missing: the report has said so
        return
    use_course_style()


WIDGETS_MISSING_TEXT = (
    "Widgets front end: NOT working. You are reading the plain-text stand-in of a "
    "widget, so sliders and live plots will not appear. Fix: run "
    f"`{FIX_COMMAND}` in the environment that runs JupyterLab, restart JupyterLab, "
    "and reload this page."
)
WIDGETS_WORKING_HTML = (
    "<div class='widgets-front-end-ok' style='padding:4px 8px;border-left:4px solid "
    "#009E73'><b>Widgets front end: working.</b> Sliders and live plots in this "
    "course will appear like this box.</div>"
)


class WidgetsFrontEndProbe(PlainTextDisplay):
    """Lesson 00: a widget that can only say 'working' if the front end draws it.

    Without a widgets front end, JupyterLab falls back to the plain-text form,
    which says what is wrong and how to fix it.
    """

    def __init__(self):
        import ipywidgets as widgets

        self.widget = widgets.HTML(WIDGETS_WORKING_HTML)

    def text_summary(self) -> str:
        return WIDGETS_MISSING_TEXT


def check_widgets_front_end() -> WidgetsFrontEndProbe:
    """Display the result to see whether this browser can draw the course's widgets."""
    return WidgetsFrontEndProbe()
