"""The README's lab command: JupyterLab on localhost, token kept, lesson 00 open."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request

from jupyterlab import ROOT, free_port


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
    environment = dict(os.environ, COURSE_VENV=sys.prefix)
    log = open(tmp_path / "lab.log", "w")
    process = subprocess.Popen(
        ["./course.sh", "lab", "--no-browser", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--LabApp.workspaces_dir={tmp_path}"],
        cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
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
        assert "0.0.0.0" not in output            # is printed masked, as "...")
        page.goto(printed + token)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function("() => document.title.startsWith('00-welcome')",
                               timeout=30_000)
        title = page.locator(".jp-NotebookPanel h1").first.inner_text()
        assert "Welcome" in title
    finally:
        page.close()
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=30)
        log.close()
