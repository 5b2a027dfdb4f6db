"""One source for the pinned versions: requirements.txt.

The setup cell reads them from ``autodiff_course/_pins.py``, which the lesson build
writes from requirements.txt; Binder's requirements include requirements.txt. These
tests fail when a copy drifts from it.
"""

from __future__ import annotations

import pytest

from autodiff_course import _pins
from autodiff_course.notebook_setup import LABELS
from autodiff_course.notebook_setup import PINNED
from course_tools import pins
from course_tools.config import README
from course_tools.config import ROOT


def test_the_installed_package_carries_the_pins_of_requirements_txt():
    assert pins.stale() == [], "run ./course.sh build (or python -m course_tools.pins)"
    assert _pins.PINS == pins.read_pins()


def test_the_setup_cell_checks_the_pinned_versions():
    assert PINNED == {name: pins.read_pins()[name] for name in LABELS}


def test_a_changed_pin_makes_the_copy_stale(tmp_path):
    requirements = tmp_path / "requirements.txt"
    text = pins.REQUIREMENTS.read_text(encoding="utf-8")
    version = pins.read_pins()["tensorflow"]
    requirements.write_text(text.replace(f"=={version}", "==9.9.9"), encoding="utf-8")
    assert pins.read_pins(requirements)["tensorflow"] == "9.9.9"
    assert pins.stale(requirements) == ["autodiff_course/_pins.py differs from requirements.txt"]
    assert pins.stale(requirements, tmp_path / "_pins.py") == [
        "autodiff_course/_pins.py is missing"
    ]


@pytest.mark.parametrize(
    "line, problem",
    [
        ("numpy>=2", "is not pinned exactly"),
        ("numpy", "is not pinned exactly"),
        ('tensorflow-cpu==2.21.0; sys_platform != "darwin"\ntensorflow==2.20.0', "at both"),
    ],
)
def test_loose_or_contradictory_pins_are_refused(tmp_path, line, problem):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=problem):
        pins.read_pins(requirements)


def test_no_other_file_names_the_tensorflow_version():
    version = pins.read_pins()["tensorflow"]
    sources = [ROOT / "course.toml", ROOT / "pyproject.toml", ROOT / "binder" / "requirements.txt"]
    sources += [
        path
        for package in ("autodiff_course", "course_tools")
        for path in (ROOT / package).rglob("*.py")
        if path.name != "_pins.py"
    ]
    for path in sources:
        assert version not in path.read_text(encoding="utf-8"), f"{path} repeats the pin"
    # The README states it in words; it must state the pinned one.
    assert f"TensorFlow {version}" in README.read_text(encoding="utf-8")
