"""``./course.sh test`` runs in two processes: what must stay in one (``conftest.py``).

An environment built once under ``.cache/`` is deleted and rebuilt whenever its inputs
change, and the hub image's copy of the course is replaced each time it is asked for; so
two processes building or using one at once would pull it from under each other. Every
test file that uses one must go to the same worker as the others that use it.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(root_conftest)
SHARED_ENVIRONMENTS, work_unit = root_conftest.SHARED_ENVIRONMENTS, root_conftest.work_unit
LONGEST_FIRST = root_conftest.LONGEST_FIRST
# What in a test file's text shows that it uses each shared environment.
USES = {
    "hub image": re.compile(r"\bhub_image\.build\("),
    "colab": re.compile(r"\bcolab_python\b"),
    "axe-core": re.compile(r"\baxe_script\b"),
}


def users(pattern: re.Pattern) -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    )


def test_every_user_of_a_shared_environment_runs_in_one_worker():
    for group, pattern in USES.items():
        found = users(pattern)
        assert len(found) >= 2, (group, found)  # (the pattern still finds its users)
        assert {work_unit(f"{path}::test") for path in found} == {group}, (group, found)


def test_other_tests_go_one_file_at_a_time_and_a_notebook_whole():
    assert work_unit("tests/test_layout.py::test_x[a]") == "tests/test_layout.py"
    assert work_unit("lessons/00-welcome.ipynb::Cell 3") == "lessons/00-welcome.ipynb"
    assert work_unit("solutions/00-welcome.ipynb::Cell 0") != work_unit(
        "lessons/00-welcome.ipynb::Cell 0"
    )


def test_each_listed_path_exists():
    for path in SHARED_ENVIRONMENTS:
        assert (ROOT / path).exists(), path


def test_each_long_unit_named_first_is_a_unit_of_the_suite():
    units = {
        work_unit(f"{path.relative_to(ROOT).as_posix()}::test")
        for path in (ROOT / "tests").rglob("test_*.py")
    }
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    assert set(LONGEST_FIRST) <= units, set(LONGEST_FIRST) - units


def test_the_long_units_are_collected_first_each_in_its_own_order():
    class Item:
        def __init__(self, nodeid):
            self.nodeid = nodeid

    names = [
        "tests/test_layout.py::test_a",
        "lessons/05-jacobians.ipynb::Cell 0",
        "tests/test_python_range.py::test_b",
        "tests/colab/test_colab_simulation.py::test_c",
        "tests/test_python_range.py::test_d",
        "tests/binder/test_binder.py::test_e",
        "tests/hub/test_class_on_a_hub.py::test_f",
    ]
    items = [Item(name) for name in names]
    root_conftest.pytest_collection_modifyitems(None, items)
    assert [item.nodeid for item in items] == [
        "tests/binder/test_binder.py::test_e",
        "tests/hub/test_class_on_a_hub.py::test_f",
        "tests/colab/test_colab_simulation.py::test_c",
        "tests/test_python_range.py::test_b",
        "tests/test_python_range.py::test_d",
        "tests/test_layout.py::test_a",
        "lessons/05-jacobians.ipynb::Cell 0",
    ]
