"""The setup cell: silence, determinism, and an environment report in plain words,
on an ordinary installation and on Google Colab (its detector forced on)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from notebooks import COURSE

from autodiff_course.notebook_setup import COLAB_ENVIRONMENT_VARIABLE
from autodiff_course.notebook_setup import COLAB_OLDEST_TENSORFLOW
from autodiff_course.notebook_setup import PINNED
from autodiff_course.notebook_setup import WIDGET_VIEW_MIMETYPE
from autodiff_course.notebook_setup import WIDGETS_STAND_IN_TEXT
from autodiff_course.notebook_setup import check_widgets_front_end
from autodiff_course.notebook_setup import diagnose
from autodiff_course.notebook_setup import running_on_colab
from autodiff_course.runtime import LESSONS_ON_FLUSH_TO_ZERO
from autodiff_course.runtime import LESSONS_ON_X86_KERNELS
from autodiff_course.runtime import LESSONS_WITH_FLOAT32_MATMULS
from autodiff_course.runtime import LESSONS_WITH_FLOAT_RESULTS
from autodiff_course.runtime import Runtime
from autodiff_course.runtime import current_runtime
from autodiff_course.runtime import runtime_line
from course_tools import notebook_format

GOOD = dict(PINNED, jupyterlab_widgets="3.0.17", anywidget="0.11.0")
# Colab's own versions, as the simulated Colab installs them (tests/colab/).
COLAB = {
    "tensorflow": COLAB_OLDEST_TENSORFLOW,
    "numpy": "2.1.3",
    "matplotlib": "3.10.0",
    "ipywidgets": "7.7.1",
    "jupyterlab_widgets": None,
    "anywidget": "0.9.21",
}


def environment_with(**variables) -> dict[str, str]:
    """This process's environment, the Colab detector off unless ``variables`` set it."""
    env = {k: v for k, v in os.environ.items() if k != COLAB_ENVIRONMENT_VARIABLE}
    return dict(env, **variables)


def run_python(code: str, **environment) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment_with(**environment),
    )


def test_setup_prints_one_line_and_tensorflow_prints_nothing():
    done = run_python(
        "from autodiff_course import setup_notebook\n"
        "setup_notebook()\n"
        "import tensorflow as tf\n"
        "tf.constant([1.0]) * 2.0\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Environment OK: Python ")
    assert done.stdout.count("\n") == 1
    assert done.stderr == "", "TensorFlow's log lines reached stderr"


def test_importing_the_package_does_not_import_tensorflow():
    done = run_python("import sys, autodiff_course\nprint('tensorflow' in sys.modules)")
    assert done.stdout.strip() == "False"


def test_setup_after_tensorflow_import_says_what_to_do():
    done = run_python(
        "import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
        "import tensorflow\n"
        "from autodiff_course import setup_notebook\nsetup_notebook()"
    )
    assert "imported before setup_notebook()" in done.stdout
    assert "restart the kernel" in done.stdout


def test_setup_makes_random_numbers_repeatable():
    code = (
        "from autodiff_course import setup_notebook\nsetup_notebook()\n"
        "import tensorflow as tf, numpy as np\n"
        "print(float(tf.random.normal([])), float(np.random.rand()))"
    )
    first, second = run_python(code), run_python(code)
    assert first.stdout.splitlines()[-1] == second.stdout.splitlines()[-1]


def test_all_good():
    report = diagnose((3, 11), GOOD)
    assert report.ok
    assert report.summary_line() == (
        "Environment OK: Python 3.11, TensorFlow 2.21.0, NumPy 2.4.6, "
        "matplotlib 3.11.2, ipywidgets 8.1.9."
    )


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"tensorflow": "2.15.0"}, "TensorFlow 2.15.0 is older than the 2.21.0"),
        ({"tensorflow": None}, "TensorFlow is not installed in this kernel's environment"),
        ({"numpy": None}, "NumPy is not installed"),
        ({"ipywidgets": "7.8.1"}, "ipywidgets 7.8.1 is too old"),
        (
            {"jupyterlab_widgets": None},
            "The widgets front end (the jupyterlab_widgets package) is not installed",
        ),
        ({"anywidget": None}, "anywidget is not installed, so the explorers of lessons 01"),
    ],
)
def test_problems_are_named_with_their_fix(change, expected):
    report = diagnose((3, 11), dict(GOOD, **change))
    line = report.summary_line()
    assert not report.ok
    assert line.startswith("Environment problem: ")
    assert expected in line
    assert "pip install -r requirements.txt" in line


@pytest.mark.parametrize("python", [(3, 10), (3, 11), (3, 12), (3, 13)])
def test_every_python_with_tensorflow_wheels_is_accepted(python):
    assert diagnose(python, GOOD).ok


@pytest.mark.parametrize("python", [(3, 9), (3, 14)])
def test_python_outside_the_supported_range(python):
    line = diagnose(python, GOOD).summary_line()
    assert f"Python {python[0]}.{python[1]} is outside the 3.10 to 3.13 range" in line
    assert "create the virtual environment with Python 3.13" in line


def test_newer_tensorflow_is_a_note_not_a_problem():
    report = diagnose((3, 12), dict(GOOD, tensorflow="2.22.1"))
    assert report.ok
    line = runtime_line(Runtime("x86_64", "2.22.1"))
    assert line.startswith("Runtime note: the saved outputs come from TensorFlow 2.21.0")
    assert "TensorFlow is 2.22.1" in line and "`pip install -r requirements.txt`" in line


def test_widgets_probe_falls_back_to_a_plain_words_fix():
    probe = check_widgets_front_end()
    bundle = probe._repr_mimebundle_()
    assert bundle["text/plain"] == WIDGETS_STAND_IN_TEXT
    assert bundle[WIDGET_VIEW_MIMETYPE]["model_id"] == probe.widget.model_id
    assert "pip install -r requirements.txt" in WIDGETS_STAND_IN_TEXT


def test_widgets_probe_reads_sensibly_before_it_has_run():
    """The saved output is the stand-in: it must not call the front end broken."""
    assert "NOT working" not in WIDGETS_STAND_IN_TEXT
    assert WIDGETS_STAND_IN_TEXT.startswith("Widgets front end: not confirmed.")
    assert "If this cell has not run yet, run it." in WIDGETS_STAND_IN_TEXT


def test_widgets_probe_does_not_need_ipywidgets_8s_display_methods(monkeypatch):
    """ipywidgets 7 (Colab's) has no Widget._repr_mimebundle_: the probe must not call it."""
    import ipywidgets

    def missing(self, **kwargs):
        raise AttributeError("_repr_mimebundle_ (absent in ipywidgets 7)")

    monkeypatch.setattr(ipywidgets.Widget, "_repr_mimebundle_", missing, raising=False)
    bundle = check_widgets_front_end()._repr_mimebundle_()
    assert bundle[WIDGET_VIEW_MIMETYPE]["version_major"] == 2


# -- Google Colab --------------------------------------------------------------------


def test_colab_versions_are_a_note_not_a_problem():
    report = diagnose((3, 13), COLAB, colab=True)
    assert report.ok
    assert report.summary_line() == (
        "Environment OK (Google Colab): Python 3.13, TensorFlow 2.20.0, NumPy 2.1.3, "
        "matplotlib 3.10.0, ipywidgets 7.7.1. Note: these are Colab's own versions, kept "
        "as they are; the saved outputs come from NumPy 2.4.6, matplotlib 3.11.2 and "
        "ipywidgets 8.1.9, so outputs may differ in the last digits."
    )
    colab_tensorflow = runtime_line(Runtime("x86_64", COLAB_OLDEST_TENSORFLOW, colab=True))
    assert f"TensorFlow is {COLAB_OLDEST_TENSORFLOW}" in colab_tensorflow
    assert "(Colab's own version, kept as it is)" in colab_tensorflow


def test_the_same_versions_off_colab_are_problems():
    """What Colab may keep is a problem elsewhere: there requirements.txt fixes it."""
    report = diagnose((3, 13), COLAB)
    assert not report.ok
    assert "TensorFlow 2.20.0 is older than the 2.21.0" in report.summary_line()
    assert "ipywidgets 7.7.1 is too old" in report.summary_line()


def test_colab_with_the_pinned_versions_adds_no_note():
    line = diagnose((3, 13), GOOD, colab=True).summary_line()
    assert line.startswith("Environment OK (Google Colab): Python 3.13, TensorFlow 2.21.0")
    assert "Note" not in line


def test_colab_only_notes_the_versions_that_differ():
    line = diagnose((3, 13), dict(GOOD, numpy="2.0.2"), colab=True).summary_line()
    assert line.endswith(
        "the saved outputs come from NumPy 2.4.6, so outputs may differ in the last digits."
    )


def test_colab_without_anywidget_says_how_to_install_it():
    report = diagnose((3, 12), dict(COLAB, anywidget=None), colab=True)
    assert not report.ok
    assert "anywidget is not installed" in report.summary_line()
    assert "`%pip install anywidget` in a new cell" in report.summary_line()


def test_colab_with_a_tensorflow_too_old_for_the_lessons_is_a_problem():
    report = diagnose((3, 13), dict(COLAB, tensorflow="2.18.0"), colab=True)
    assert not report.ok
    line = report.summary_line()
    assert line.startswith(
        "Environment problem (Google Colab): TensorFlow 2.18.0 is older "
        "than 2.20.0, the oldest version the lessons have been run with"
    )
    assert "`%pip install tensorflow==2.21.0`" in line and "Restart session" in line


def test_colab_python_outside_the_range_is_a_problem():
    line = diagnose((3, 14), COLAB, colab=True).summary_line()
    assert "Python 3.14 is outside the 3.10 to 3.13 range" in line
    assert "run the course on Binder instead" in line


def test_colab_detector(monkeypatch):
    monkeypatch.delenv(COLAB_ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    assert not running_on_colab()
    monkeypatch.setenv(COLAB_ENVIRONMENT_VARIABLE, "1")
    assert running_on_colab()
    monkeypatch.setenv(COLAB_ENVIRONMENT_VARIABLE, "0")
    assert not running_on_colab()
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    assert running_on_colab()


def test_setup_takes_the_colab_path_when_the_detector_says_so():
    done = run_python(
        "from autodiff_course import setup_notebook\nsetup_notebook()",
        **{COLAB_ENVIRONMENT_VARIABLE: "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Environment OK (Google Colab): Python ")


# -- the runtime line ----------------------------------------------------------------

REFERENCE = Runtime("x86_64", PINNED["tensorflow"])


@pytest.mark.parametrize(
    "runtime",
    [REFERENCE, Runtime("AMD64", PINNED["tensorflow"]), Runtime("x86_64", "2.21.0", tf32=True)],
    ids=["linux-or-macos", "windows", "tf32-without-a-gpu"],
)
def test_no_runtime_line_on_the_reference_runtime(runtime):
    """x86-64 by any name, the pinned TensorFlow, no GPU (TF32 alone changes nothing on
    a CPU): the setup cell prints what its saved output shows."""
    assert runtime_line(runtime) is None


@pytest.mark.parametrize(
    "runtime, names, lessons",
    [
        (
            Runtime("x86_64", PINNED["tensorflow"], gpus=1),
            ["sees 1 GPU", "has not been checked"],
            [LESSONS_WITH_FLOAT_RESULTS, LESSONS_ON_FLUSH_TO_ZERO],
        ),
        (
            Runtime("x86_64", PINNED["tensorflow"], gpus=2, tf32=True),
            ["sees 2 GPUs", "TF32 is on", "enable_tensor_float_32_execution(False)"],
            [LESSONS_WITH_FLOAT_RESULTS, LESSONS_WITH_FLOAT32_MATMULS],
        ),
        (
            Runtime("arm64", PINNED["tensorflow"]),
            ["the CPU is arm64, not x86-64", "8-wide AVX kernels"],
            [LESSONS_WITH_FLOAT_RESULTS, LESSONS_ON_X86_KERNELS],
        ),
        (
            Runtime("x86_64", "2.21.1"),
            ["TensorFlow is 2.21.1", "installs 2.21.0"],
            [LESSONS_WITH_FLOAT_RESULTS],
        ),
    ],
    ids=["gpu", "gpu-with-tf32", "not-x86-64", "another-tensorflow"],
)
def test_the_runtime_line_names_each_difference_and_the_lessons_it_touches(runtime, names, lessons):
    from autodiff_course.runtime import lessons as lesson_list

    line = runtime_line(runtime)
    assert line.startswith(
        "Runtime note: the saved outputs come from TensorFlow 2.21.0 on an x86-64 CPU, "
        "without a GPU. Here "
    )
    assert line.count("\n") == 0
    for name in names:
        assert name in line
    for numbers in lessons:
        assert lesson_list(numbers) in line
    if runtime.gpus:
        assert "not been checked" in line, "GPU behaviour is unverified and must say so"


def test_every_difference_at_once_still_makes_one_line():
    line = runtime_line(Runtime("aarch64", "2.22.0", gpus=1, tf32=True))
    assert line.count("; ") == 3 and "\n" not in line


def test_a_tensorflow_too_old_is_a_problem_not_a_runtime_note():
    assert not diagnose((3, 11), dict(GOOD, tensorflow="2.15.0")).ok
    assert runtime_line(Runtime("x86_64", "2.15.0")) is None


def test_the_lessons_the_runtime_line_names_exist():
    numbers = {lesson.number for lesson in COURSE.lessons}
    for named in (
        LESSONS_WITH_FLOAT_RESULTS,
        LESSONS_ON_FLUSH_TO_ZERO,
        LESSONS_WITH_FLOAT32_MATMULS,
        LESSONS_ON_X86_KERNELS,
    ):
        assert set(named) <= numbers


def test_lesson_lists_read_as_english():
    from autodiff_course.runtime import lessons

    assert lessons((3,)) == "lesson 03"
    assert lessons((3, 4)) == "lessons 03 and 04"
    assert lessons((1, 2, 3, 4, 5, 6)) == "lessons 01 to 06"
    assert lessons((2, 4, 6)) == "lessons 02, 04 and 06"


def test_current_runtime_reads_the_machine_the_gpus_and_tf32(monkeypatch):
    import autodiff_course.runtime as runtime

    monkeypatch.setattr(runtime.platform, "machine", lambda: "arm64")
    monkeypatch.setattr(runtime, "visible_gpus", lambda: 1)
    monkeypatch.setattr(runtime, "tf32_enabled", lambda: True)
    assert current_runtime({"tensorflow": "2.21.0"}, colab=False) == Runtime(
        "arm64", "2.21.0", gpus=1, tf32=True
    )
    monkeypatch.setattr(runtime, "visible_gpus", lambda: 0)
    assert current_runtime({"tensorflow": "2.21.0"}, colab=True).tf32 is False


def test_here_the_runtime_is_the_reference_one():
    """This machine's own answers (TensorFlow asked for real): x86-64, no GPU."""
    import tensorflow as tf

    from autodiff_course.runtime import tf32_enabled
    from autodiff_course.runtime import visible_gpus

    assert visible_gpus() == 0 and isinstance(tf32_enabled(), bool)
    assert callable(tf.config.experimental.enable_tensor_float_32_execution)
    assert runtime_line(current_runtime({"tensorflow": PINNED["tensorflow"]}, False)) is None


def test_setup_prints_the_runtime_line_where_a_gpu_is_visible():
    done = run_python(
        "import autodiff_course.notebook_setup as setup\n"
        "import autodiff_course.runtime as runtime\n"
        "runtime.visible_gpus = lambda: 1\n"
        "runtime.tf32_enabled = lambda: True\n"
        "setup.setup_notebook()\n"
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("Environment OK: Python ")
    assert second.startswith("Runtime note: ") and "sees 1 GPU" in second and "TF32" in second


# What the setup cell's first lines do where the helper package is missing. The
# cell runs in a real IPython shell (so %pip is transformed as in a notebook), with
# the package hidden and the pip magic replaced by a recorder that "installs" it.
PREAMBLE_HARNESS = r"""
import sys
from IPython.core.interactiveshell import InteractiveShell

sys.modules["autodiff_course"] = None  # hidden: "import autodiff_course" now fails
shell = InteractiveShell.instance()

def pip(line):
    print("pip " + line)
    del sys.modules["autodiff_course"]  # the install makes it importable

shell.register_magic_function(pip, "line", "pip")
result = shell.run_cell(sys.stdin.read())
print("error:", type(result.error_in_exec).__name__, result.error_in_exec)
"""


def run_preamble(**environment) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PREAMBLE_HARNESS],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment_with(**environment),
        input=notebook_format.setup_preamble(COURSE),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def test_setup_cell_installs_the_helper_package_on_colab_without_dependencies():
    lines = run_preamble(**{COLAB_ENVIRONMENT_VARIABLE: "1"})
    assert lines[0] == (
        f"pip install --quiet --no-deps git+https://github.com/{COURSE.repository}@{COURSE.ref}"
    )
    assert lines[1].startswith("Environment OK (Google Colab): ")
    assert lines[-1] == "error: NoneType None"


def test_setup_cell_off_colab_says_in_plain_words_that_the_package_is_missing():
    lines = run_preamble()
    assert not any(line.startswith("pip ") for line in lines), "installed off Colab"
    assert lines[-1] == (
        "error: ModuleNotFoundError The course's helper package, "
        "autodiff_course, is not installed for this kernel: see Start in "
        "the README."
    )
