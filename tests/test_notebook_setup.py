"""The setup cell: silence, determinism, and an environment report in plain words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autodiff_course.notebook_setup import (
    PINNED, WIDGETS_MISSING_TEXT, check_widgets_front_end, diagnose,
)

GOOD = dict(PINNED, jupyterlab_widgets="3.0.17")


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_setup_prints_one_line_and_tensorflow_prints_nothing():
    done = run_python(
        "from autodiff_course import setup_notebook\n"
        "setup_notebook()\n"
        "import tensorflow as tf\n"
        "tf.constant([1.0]) * 2.0\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Environment OK: Python ")
    assert done.stdout.count("\n") == 1
    assert done.stderr == "", "TensorFlow's log lines reached stderr"


def test_importing_the_package_does_not_import_tensorflow():
    done = run_python("import sys, autodiff_course\n"
                      "print('tensorflow' in sys.modules)")
    assert done.stdout.strip() == "False"


def test_setup_after_tensorflow_import_says_what_to_do():
    done = run_python("import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
                      "import tensorflow\n"
                      "from autodiff_course import setup_notebook\nsetup_notebook()")
    assert "imported before setup_notebook()" in done.stdout
    assert "restart the kernel" in done.stdout


def test_setup_makes_random_numbers_repeatable():
    code = ("from autodiff_course import setup_notebook\nsetup_notebook()\n"
            "import tensorflow as tf, numpy as np\n"
            "print(float(tf.random.normal([])), float(np.random.rand()))")
    first, second = run_python(code), run_python(code)
    assert first.stdout.splitlines()[-1] == second.stdout.splitlines()[-1]


def test_all_good():
    report = diagnose((3, 11), GOOD)
    assert report.ok
    assert report.summary_line() == (
        "Environment OK: Python 3.11, TensorFlow 2.21.0, NumPy 2.4.6, "
        "matplotlib 3.11.2, ipywidgets 8.1.9.")


@pytest.mark.parametrize("change, expected", [
    ({"tensorflow": "2.15.0"}, "TensorFlow 2.15.0 is older than the 2.21.0"),
    ({"tensorflow": None}, "TensorFlow is not installed in this kernel's environment"),
    ({"numpy": None}, "NumPy is not installed"),
    ({"ipywidgets": "7.8.1"}, "ipywidgets 7.8.1 is too old"),
    ({"jupyterlab_widgets": None}, "The widgets front end (the jupyterlab_widgets package) "
                                   "is not installed"),
])
def test_problems_are_named_with_their_fix(change, expected):
    report = diagnose((3, 11), dict(GOOD, **change))
    line = report.summary_line()
    assert not report.ok
    assert line.startswith("Environment problem: ")
    assert expected in line
    assert "pip install -r requirements.txt" in line


def test_python_outside_the_supported_range():
    line = diagnose((3, 13), GOOD).summary_line()
    assert "Python 3.13 is outside the 3.10 to 3.12 range" in line


def test_newer_tensorflow_is_a_note_not_a_problem():
    report = diagnose((3, 12), dict(GOOD, tensorflow="2.22.1"))
    assert report.ok
    assert "TensorFlow 2.22.1 is newer than the 2.21.0" in report.summary_line()


def test_widgets_probe_falls_back_to_a_plain_words_fix():
    bundle = check_widgets_front_end()._repr_mimebundle_()
    assert bundle["text/plain"] == WIDGETS_MISSING_TEXT
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "pip install -r requirements.txt" in WIDGETS_MISSING_TEXT
