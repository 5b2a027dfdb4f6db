"""Fixtures for the browser tests: one JupyterLab per session, one Chromium per module.

Chromium is driven through Playwright's synchronous API, which keeps an event loop
running in the main thread for as long as it is open; closing it after each module
leaves no loop behind for the tests that follow (nbval and progress start their own)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from course_tools.browser import HOW_TO_ENABLE
from course_tools.browser import ROOT
from course_tools.browser import chromium_browser
from course_tools.browser import find_chromium
from course_tools.browser import jupyterlab
from course_tools.browser import scratch_copy
from course_tools.widget_state import save_widget_state

ARTIFACTS = ROOT / "test-artifacts" / "browser"
PIN = Path(__file__).resolve().parent / "axe"
CACHE = ROOT / ".cache" / "axe-core"


@pytest.fixture(scope="session")
def chromium_path():
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests, but " + HOW_TO_ENABLE)
        pytest.skip(HOW_TO_ENABLE)
    return path


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory) -> Path:
    """The scratch copy of the course that :func:`lab` serves. A test that saves a
    notebook saves a copy of it under another name here, so that every other test
    still opens the notebooks as committed."""
    return scratch_copy(tmp_path_factory.mktemp("jupyterlab") / "course")


@pytest.fixture(scope="session")
def lab(lab_root, chromium_path):
    save_widget_state()  # as ./course.sh lab, Binder and the hub image do
    with jupyterlab(lab_root, lab_root.parent / "jupyterlab.log") as server:
        yield server


@pytest.fixture
def saved_copy(lab_root):
    """``saved_copy("lessons/01-x.ipynb")``: the path of a fresh copy of that notebook
    in the served folder, for a test that runs and saves it."""
    made = []

    def copy(path: str) -> str:
        source = lab_root / path
        target = source.with_name(f"saved-{len(made)}-{source.name}")
        shutil.copy(source, target)
        made.append(target)
        return str(target.relative_to(lab_root))

    yield copy
    for target in made:
        target.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def browser(chromium_path, lab):
    with chromium_browser(chromium_path) as browser:
        yield browser


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def axe_script() -> str:
    """axe.min.js at the version ``axe/package-lock.json`` pins (with its checksum),
    installed by ``npm ci`` into the git-ignored ``.cache/axe-core/`` once."""
    lock = json.loads((PIN / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/axe-core"]["version"]
    folder = CACHE / version
    script = folder / "node_modules" / "axe-core" / "axe.min.js"
    if not script.exists():
        npm = shutil.which("npm")
        if npm is None:
            message = (
                "npm not found: install Node.js and npm (Debian/Ubuntu: `sudo apt-get "
                "install npm`) to run the accessibility tests."
            )
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(PIN / name, folder / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"npm ci of axe-core {version} failed:\n{done.stderr[-2000:]}")
    return script.read_text(encoding="utf-8")
