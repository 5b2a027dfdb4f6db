"""The house rules of the code: the learners' package stays free of tooling, the tools
stand on their own, nothing edits ``sys.path``, and no module grows past 500 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from course_tools.config import ROOT

PACKAGES = ("autodiff_course", "course_tools")
MAX_LINES = 500


def python_files(*folders: str) -> list[Path]:
    return sorted(path for folder in folders for path in (ROOT / folder).rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def test_the_helper_package_never_imports_the_tools():
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files("autodiff_course")
        for module in imported_modules(path)
        if module.split(".")[0] == "course_tools"
    ]
    assert offenders == []


def test_the_tools_never_import_the_tests():
    test_modules = {path.stem for path in python_files("tests")} | {"tests", "conftest"}
    offenders = [
        f"{path.relative_to(ROOT)} imports {module}"
        for path in python_files("course_tools")
        for module in imported_modules(path)
        if module.split(".")[0] in test_modules
    ]
    assert offenders == []


def test_nothing_edits_sys_path():
    sources = python_files(*PACKAGES, "tests") + [ROOT / "conftest.py"]
    offenders = [
        str(path.relative_to(ROOT))
        for path in sources
        if any(
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    assert offenders == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_longer_than_500_lines(package):
    long = {
        str(path.relative_to(ROOT)): lines
        for path in python_files(package)
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
