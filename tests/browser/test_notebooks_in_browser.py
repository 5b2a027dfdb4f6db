"""Every notebook, run in JupyterLab in a real Chromium, as a learner would run it; each
widget saved, reopened, and shown live in the slides of the saved lesson."""

from __future__ import annotations

import nbformat
import numpy as np
import pytest
from notebooks import every_notebook
from widget_pages import WIDGETS

from course_tools.browser import ROOT
from course_tools.browser import WIDGET_VIEW
from course_tools.browser import open_notebook
from course_tools.browser import open_slides
from course_tools.browser import present_slide
from course_tools.browser import problems_on_page
from course_tools.browser import run_all_cells
from course_tools.browser import save_notebook
from course_tools.browser import wait_for_kernel_idle
from course_tools.browser import wait_for_widgets


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_run_all_cells_without_errors_or_broken_widgets(page, lab, artifacts, folder, lesson):
    base_url, token = lab
    open_notebook(page, base_url, token, f"{folder}/{lesson.filename}")
    wait_for_widgets(page)
    assert problems_on_page(page) == [], "the saved notebook does not render cleanly"
    run_all_cells(page)
    wait_for_widgets(page)
    problems = problems_on_page(page)
    page.screenshot(path=str(artifacts / f"{folder}-{lesson.slug}.png"), full_page=True)
    assert problems == []
    wait_for_kernel_idle(page)


def chain_rule_reference(x: float) -> str:
    output = np.logaddexp(0.0, x)
    return f"{2 * output / (1.0 + np.exp(-x)):.6f}"


def readout(page) -> tuple[str, str]:
    node = page.locator(".chain-rule-readout").first
    return node.get_attribute("data-x"), node.inner_text()


def test_chain_rule_explorer_follows_keyboard_and_mouse(page, lab, artifacts):
    base_url, token = lab
    open_notebook(page, base_url, token, "lessons/01-chain-rule-and-upstream-dy.ipynb")
    run_all_cells(page)
    explorer = page.locator(".chain-rule-explorer").first
    explorer.scroll_into_view_if_needed()
    assert readout(page)[0] == "1.00"

    x_input = explorer.locator(".chain-rule-x input").first
    x_input.focus()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    page.wait_for_function(
        "() => document.querySelector('.chain-rule-readout').dataset.x === '1.50'"
    )
    x, text = readout(page)
    assert chain_rule_reference(1.5) in text
    assert "agree" in text and "DISAGREE" not in text

    x_input.click()  # the mouse, then a typed number
    x_input.press("Control+a")
    x_input.type("-6")
    x_input.press("Enter")
    page.wait_for_function(
        "() => parseFloat(document.querySelector('.chain-rule-readout').dataset.x) < -5"
    )
    x, text = readout(page)
    assert chain_rule_reference(float(x)) in text
    explorer.screenshot(path=str(artifacts / "chain-rule-explorer.png"))


@pytest.mark.parametrize("widget", WIDGETS, ids=lambda widget: widget.root.strip("."))
def test_a_saved_and_reopened_notebook_shows_its_widget_as_left_and_live_also_in_slides(
    page, lab, saved_copy, artifacts, widget
):
    """Run a lesson, change its widget with a key, save, and open the notebook again: the
    widget is drawn from the state saved with it, showing the learner's last view, with
    no model missing; and it still answers the keyboard (it draws from its saved tables).
    Then the same saved lesson as slides (jupyterlab-rise; the run and save made JupyterLab
    trust it): the still picture's script mounts the live widget from the saved state in
    its place, and the widget answers the keyboard while the slide stays put."""
    base_url, token = lab
    path = saved_copy(f"lessons/{widget.lesson}")
    open_notebook(page, base_url, token, path)
    run_all_cells(page)
    page.locator(widget.root).first.scroll_into_view_if_needed()
    left = widget.step(page, "ArrowUp")
    save_notebook(page)
    page.goto("about:blank")
    open_notebook(page, base_url, token, path)
    page.wait_for_selector(f"{widget.root} {widget.readout}", timeout=60_000)
    page.wait_for_timeout(1000)
    page.locator(widget.root).first.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / f"reopened-{widget.lesson}.png"))
    assert problems_on_page(page) == []
    assert widget.read(page)[widget.shown] == left
    assert widget.step(page, "ArrowDown") != left
    assert problems_on_page(page) == []

    page.goto("about:blank")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    open_slides(page, base_url, token, path, cell=widget_cell(widget))
    page.wait_for_selector(f".reveal section.present {LIVE} {widget.root}", timeout=60_000)
    still = page.locator(f".reveal section.present {LIVE}").first.evaluate(
        "host => host.previousElementSibling.hidden"
    )
    assert still, "the still picture is still shown beside the live widget"
    where = present_slide(page)
    before = widget.read(page, LIVE)[widget.shown]
    assert widget.step(page, "ArrowUp", LIVE) != before
    widget.step(page, "ArrowDown", LIVE)
    assert present_slide(page) == where, "the arrow keys moved the slides, not the widget"
    page.screenshot(path=str(artifacts / f"slides-live-{widget.lesson}.png"))
    assert errors == []


LIVE = ".widget-live-in-slides"  # where the slides mount a live widget


def widget_cell(widget) -> int:
    """The index of the lesson's cell whose saved output is ``widget``."""
    notebook = nbformat.read(ROOT / "lessons" / widget.lesson, as_version=4)
    return next(
        index
        for index, one in enumerate(notebook.cells)
        if any(WIDGET_VIEW in output.get("data", {}) for output in one.get("outputs", []))
        and widget.root.strip(".") in str(one.outputs)
    )
