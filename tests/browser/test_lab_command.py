"""The README's lab command: JupyterLab on localhost, token kept, lesson 00 open, and
the first minute a learner spends there: no news pop-up, lesson 00 reading sensibly
before it has run, the widgets probe turning green once it has, and the Contents
link landing on the README's contents table."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request

from course_tools.browser import ROOT
from course_tools.browser import free_port
from course_tools.browser import run_all_cells

NEWS_QUESTION = "official Jupyter news"


def wait_for_status(url: str, process: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("./course.sh lab exited early")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("JupyterLab did not answer")


def test_lab_command_serves_lesson_00_on_localhost_with_a_token(page, tmp_path):
    port, token = free_port(), secrets.token_hex(16)
    # A first launch: no JupyterLab user settings (they could hide the news pop-up),
    # but for one: no autosave, since this server serves the course folder itself and
    # the test runs lesson 00 in it.
    settings = tmp_path / "user-settings"
    autosave = settings / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
    autosave.parent.mkdir(parents=True)
    autosave.write_text('{"autosave": false}')
    environment = dict(os.environ, COURSE_VENV=sys.prefix, JUPYTERLAB_SETTINGS_DIR=str(settings))
    log = open(tmp_path / "lab.log", "w")
    process = subprocess.Popen(
        [
            "./course.sh",
            "lab",
            "--no-browser",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--LabApp.workspaces_dir={tmp_path}",
        ],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_status(f"{base}/api/status?token={token}", process)
        # Token authentication is kept: without it the API refuses.
        try:
            urllib.request.urlopen(f"{base}/api/contents", timeout=5)
            raise AssertionError("the server answered without a token")
        except urllib.error.HTTPError as refused:
            assert refused.code == 403
        # It listens on the loopback interface only, and the address it prints (the
        # one a browser is opened at) leads to lesson 00.
        output = (tmp_path / "lab.log").read_text()
        printed = f"http://127.0.0.1:{port}/lab/tree/lessons/00-welcome.ipynb?token="
        assert printed in output, output[-3000:]  # (a token given on the command line
        assert "0.0.0.0" not in output  # is printed masked, as "...")
        page.goto(printed + token)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function("() => document.title.startsWith('00-welcome')", timeout=30_000)
        title = page.locator(".jp-NotebookPanel h1").first.inner_text()
        assert "Welcome" in title
        first_minute(page)
    finally:
        page.close()
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=30)
        log.close()


def assert_no_news_pop_up(page) -> None:
    assert page.get_by_text(NEWS_QUESTION).count() == 0, "JupyterLab asked about news"
    status = page.locator(".jp-Notification-Status")
    if status.count():
        assert status.first.inner_text().strip() in ("", "0"), "a notification is waiting"


def first_minute(page) -> None:
    """What a learner meets in lesson 00, before and after running it."""
    # JupyterLab shows its news question a few seconds after it has started.
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    page.wait_for_timeout(5_000)
    assert_no_news_pop_up(page)

    # Before running: the saved output of the widgets probe is its plain-text
    # stand-in, which asks to run the cell instead of declaring widgets broken.
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    assert panel.get_by_text("Widgets front end: not confirmed.").count() == 1
    assert panel.get_by_text("NOT working").count() == 0
    assert panel.locator(".widgets-front-end-ok").count() == 0

    # After running: the front end itself draws the verdict.
    run_all_cells(page)
    page.wait_for_selector(".jp-NotebookPanel .widgets-front-end-ok", timeout=30_000)
    green = panel.locator(".widgets-front-end-ok").first
    assert "Widgets front end: working." in green.text_content()
    assert panel.get_by_text("Widgets front end: not confirmed.").count() == 0

    # The navigation's Contents link opens the README, rendered, at its contents table.
    panel.locator(".jp-RenderedMarkdown a", has_text="Contents").first.click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lm-TabBar-tab.jp-mod-current')]"
        ".some(tab => tab.textContent.trim() === 'README.md')",
        timeout=30_000,
    )
    heading = page.locator(".jp-MarkdownViewer:visible h2", has_text="Contents").first
    heading.wait_for(timeout=30_000)
    page.wait_for_timeout(1_000)  # JupyterLab scrolls once the document is rendered
    viewer = page.locator(".jp-MarkdownViewer:visible").first.bounding_box()
    top = heading.bounding_box()["y"]
    assert viewer["y"] <= top <= viewer["y"] + 150, (
        f"the Contents heading is at y={top}, not at the top of the README view (y={viewer['y']})"
    )
    table = page.locator(".jp-MarkdownViewer table").first
    assert "Welcome" in table.inner_text()
    assert_no_news_pop_up(page)
