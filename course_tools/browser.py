"""Drive JupyterLab in a real Chromium: for the browser tests and the benchmark.

JupyterLab serves a scratch copy of the course (so that running or autosaving a
notebook never touches the committed files) on a free loopback port with a random
token. Chromium is Debian's, driven by Playwright through ``executable_path``;
no browser is ever downloaded.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from .config import ROOT

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
HOW_TO_ENABLE = (
    "Chromium not found: install it (Debian/Ubuntu: `sudo apt-get install "
    "chromium`; `./course.sh test` does this where it can) or set "
    "COURSE_CHROMIUM=/path/to/chromium to run the browser tests."
)


def find_chromium() -> str | None:
    configured = os.environ.get("COURSE_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    for candidate in CHROMIUM_CANDIDATES:
        if Path(candidate).exists():
            return candidate
    return shutil.which("chromium")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


LAB_SETTINGS = {
    # Render every cell, not only those on screen, so a test sees every output.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # No pop-up asking to fetch news over a network this machine may not have.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def scratch_copy(target: Path) -> Path:
    for folder in ("lessons", "solutions", "figures"):
        shutil.copytree(ROOT / folder, target / folder)
    for name in ("README.md", "course.toml"):
        shutil.copy(ROOT / name, target / name)
    return target


def write_lab_settings(settings_dir: Path) -> Path:
    import json

    for name, values in LAB_SETTINGS.items():
        path = settings_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return settings_dir


@contextmanager
def jupyterlab(root_dir: Path, log_path: Path):
    """Yield ``(base_url, token)`` of a JupyterLab serving ``root_dir``."""
    port, token = free_port(), secrets.token_hex(16)
    settings = write_lab_settings(log_path.parent / "lab-user-settings")
    workspaces = log_path.parent / "lab-workspaces"
    workspaces.mkdir(exist_ok=True)
    environment = dict(os.environ, JUPYTER_TOKEN=token)
    environment.pop("AUTODIFF_COURSE_STRICT", None)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={workspaces}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI machines run as root
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=root_dir
        )
        base_url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    with urllib.request.urlopen(f"{base_url}/api/status?token={token}", timeout=2):
                        break
                except OSError:
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"JupyterLab did not start; see {log_path}") from None
                    time.sleep(0.3)
            yield base_url, token
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()


@contextmanager
def chromium_browser(executable: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


# --- driving a notebook ----------------------------------------------------------

NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def open_notebook(page, base_url: str, token: str, path: str) -> None:
    page.goto(f"{base_url}/lab/tree/{path}?token={token}&reset", wait_until="domcontentloaded")
    page.wait_for_selector(f"{NOTEBOOK} .jp-Notebook .jp-Cell", timeout=90_000)
    wait_for_kernel_idle(page)


def kernel_status(page) -> str | None:
    return page.evaluate("""() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const indicator = document.querySelector('.jp-Notebook-ExecutionIndicator');
        return indicator ? indicator.getAttribute('data-status') : null;
    }""")


def wait_for_kernel_idle(page, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if kernel_status(page) == "idle":
            return
        page.wait_for_timeout(200)
    raise TimeoutError(f"kernel not idle after {timeout} s (status {kernel_status(page)})")


def run_all_cells(page, timeout: float = 180) -> None:
    """Clear every output, Run > Run All Cells, and wait until each code cell has run.

    Clearing first makes a fresh run observable: the new prompts could otherwise
    carry the same numbers as the saved ones. Menu commands act on the notebook
    that has focus, so the notebook is activated first, and each command is
    retried if a still-starting JupyterLab ignored it.
    """
    no_digits = """() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')]
        .every(p => !/[0-9]/.test(p.textContent))"""
    for attempt in range(5):
        activate_notebook(page)
        click_menu(page, "Edit", "Clear Outputs of All Cells")
        try:
            page.wait_for_function(no_digits, timeout=6_000)
            break
        except Exception:
            if attempt == 4:
                raise
    deadline = time.monotonic() + timeout
    started = False
    while time.monotonic() < deadline:
        if not started:
            activate_notebook(page)
            click_menu(page, "Run", "Run All Cells")
        counts = execution_counts(page)
        started = any(counts)
        if counts and all(count.isdigit() for count in counts) and kernel_status(page) == "idle":
            return
        if not started:
            page.wait_for_timeout(1_000)
            continue
        page.wait_for_timeout(300)
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    page.screenshot(path=str(ROOT / "test-artifacts" / "run-all-timeout.png"))
    raise TimeoutError(
        f"Run All Cells did not finish: prompts {execution_counts(page)}; "
        f"screenshot in test-artifacts/run-all-timeout.png"
    )


def save_notebook(page) -> None:
    """Save the open notebook (File > Save Notebook) and wait until it is saved."""
    activate_notebook(page)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty') === null"
        " && document.querySelector('.lm-TabBar-tab.jp-mod-current') !== null",
        timeout=30_000,
    )
    page.wait_for_timeout(500)


def activate_notebook(page) -> None:
    """Give the open notebook focus (command mode), as a click in its margin would."""
    page.locator(f"{NOTEBOOK} .jp-Cell .jp-InputPrompt").first.click()


def click_menu(page, menu: str, item: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=menu).first.click(timeout=10_000)
    page.locator(".lm-Menu-item:visible", has_text=item).first.click(timeout=10_000)


def execution_counts(page) -> list[str]:
    """The text inside each code cell's [ ] prompt: '' unrun, '*' running, '12' done."""
    return page.evaluate("""() => [...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputArea-prompt')]
        .map(p => p.textContent.replace(/[\\[\\]:\\s]/g, ''))""")


def wait_for_widgets(page, timeout: float = 60) -> None:
    """Wait until no widget view of the open notebook still says it is loading (a
    busy machine can take seconds to draw one)."""
    page.wait_for_function(
        """() => !document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)')
                     .innerText.includes('Loading widget...')""",
        timeout=timeout * 1000,
    )
    page.wait_for_timeout(500)


def problems_on_page(page) -> list[str]:
    """Error outputs and widgets that failed to render, as readable strings."""
    return page.evaluate("""() => {
        const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
        const found = [];
        for (const node of panel.querySelectorAll(
                '[data-mime-type="application/vnd.jupyter.stderr"]')) {
            found.push('stderr/error output: ' + node.textContent.slice(0, 300));
        }
        const text = panel.innerText;
        for (const phrase of ['Error displaying widget', 'Loading widget...',
                              'Traceback (most recent call last)', 'model not found']) {
            if (text.includes(phrase)) found.push('page shows: ' + phrase);
        }
        return found;
    }""")


# --- slides (jupyterlab-rise) ------------------------------------------------------

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def open_slides(page, base_url: str, token: str, path: str, cell: int | None = None) -> None:
    """Open ``path`` as a slideshow (jupyterlab-rise's /rise/ page), on the first slide
    or, given ``cell`` (an index), on the slide that shows that cell."""
    at = "" if cell is None else f"&activeCellIndex={cell}"
    page.goto(f"{base_url}/rise/{path}?token={token}{at}")
    page.wait_for_selector(".reveal .slides section", state="attached", timeout=90_000)
    page.wait_for_function(
        "() => document.querySelector('.reveal .slides h1') !== null", timeout=60_000
    )
    page.wait_for_function(
        "() => document.querySelector('.reveal .slides > section.present') !== null", timeout=30_000
    )
    # Slides jump to their place instead of sliding there, so that a test sees each
    # slide where it comes to rest (headless Chromium runs transitions unevenly).
    page.add_style_tag(content=".reveal .slides section { transition: none !important; }")


def present_slide(page) -> tuple[int, int]:
    """(horizontal, vertical) index of the slide on screen."""
    return tuple(
        page.evaluate("""() => {
        const outer = [...document.querySelectorAll('.reveal .slides > section')];
        const h = outer.findIndex(section => section.classList.contains('present'));
        const inner = h < 0 ? [] : [...outer[h].querySelectorAll(':scope > section')];
        return [h, Math.max(0, inner.findIndex(s => s.classList.contains('present')))];
    }""")
    )


def wait_for_slide_to_settle(page) -> None:
    """Wait until the slide on screen has finished moving in (reveal.js transitions)."""
    page.wait_for_function(
        """() => new Promise(resolve => {
        const slide = () => {
            const outer = document.querySelector('.reveal .slides > section.present');
            return outer && (outer.querySelector(':scope > section.present') || outer);
        };
        const where = () => { const s = slide(); return s ? s.getBoundingClientRect().top : null; };
        const first = where();
        setTimeout(() => resolve(first !== null && where() === first), 150);
    })""",
        timeout=10_000,
    )


def slide_overflow(page) -> dict | None:
    """How the slide on screen fails to fit, or None: content above or below the
    visible slide area that cannot be scrolled into view."""
    wait_for_slide_to_settle(page)
    return page.evaluate("""() => {
        const reveal = document.querySelector('.reveal').getBoundingClientRect();
        const outer = document.querySelector('.reveal .slides > section.present');
        const slide = outer.querySelector(':scope > section.present') || outer;
        const box = slide.getBoundingClientRect();
        const style = getComputedStyle(slide);
        const scrolls = ['auto', 'scroll'].includes(style.overflowY);
        const fits = box.top >= reveal.top - 1 && box.bottom <= reveal.bottom + 1;
        const hidden = scrolls ? 0 : Math.max(0, slide.scrollHeight - slide.clientHeight);
        if (fits && hidden <= 1) return null;
        return {top: Math.round(box.top - reveal.top), bottom: Math.round(box.bottom),
                visible: Math.round(reveal.bottom - reveal.top), scrolls: scrolls,
                height: Math.round(slide.scrollHeight),
                heading: (slide.querySelector('h1, h2, h3') || {}).textContent || ''};
    }""")


def empty_outputs(page) -> list[str]:
    """Outputs in the slides that show nothing, or a widget that failed to load."""
    return page.evaluate("""() => {
        const found = [];
        for (const output of document.querySelectorAll('.reveal .jp-OutputArea-output')) {
            const text = output.innerText.trim();
            const picture = output.querySelector('img, svg, canvas');
            if (!text && !picture) found.push('an empty output: ' + output.outerHTML.slice(0, 200));
            for (const phrase of ['Loading widget', 'Error displaying widget',
                                  'model not found']) {
                if (text.includes(phrase)) found.push('an output says ' + phrase);
            }
            for (const image of output.querySelectorAll('img')) {
                if (!image.complete || image.naturalWidth === 0)
                    found.push('a picture that did not load: ' + image.src.slice(0, 60));
            }
        }
        return found;
    }""")


# --- the course's web site, served from a folder -------------------------------------


@contextmanager
def static_server(root: Path):
    """Yield the base URL of a loopback HTTP server for the files under ``root`` (the
    built site), with a request log kept quiet."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler
    from http.server import ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def confine(context, base_url: str) -> list[str]:
    """Block every request of a Playwright browser context that leaves ``base_url``;
    return the (growing) list of the URLs blocked."""
    blocked: list[str] = []

    def route(request_route) -> None:
        url = request_route.request.url
        if url.startswith(base_url + "/") or url == base_url or url.startswith("data:"):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    context.route("**/*", route)
    return blocked
