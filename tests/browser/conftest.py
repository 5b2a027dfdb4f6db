"""Fixtures for the browser tests: one JupyterLab per session, one Chromium per module.

Chromium is driven through Playwright's synchronous API, which keeps an event loop
running in the main thread for as long as it is open; closing it after each module
leaves no loop behind for the tests that follow (nbval and progress start their own)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from course_tools.browser import HOW_TO_ENABLE
from course_tools.browser import ROOT
from course_tools.browser import chromium_browser
from course_tools.browser import find_chromium
from course_tools.browser import jupyterlab
from course_tools.browser import scratch_copy

ARTIFACTS = ROOT / "test-artifacts" / "browser"


@pytest.fixture(scope="session")
def chromium_path():
    path = find_chromium()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests, but " + HOW_TO_ENABLE)
        pytest.skip(HOW_TO_ENABLE)
    return path


@pytest.fixture(scope="session")
def lab(tmp_path_factory, chromium_path):
    scratch = tmp_path_factory.mktemp("jupyterlab")
    root = scratch_copy(scratch / "course")
    with jupyterlab(root, scratch / "jupyterlab.log") as server:
        yield server


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
