"""Every lesson as a slideshow (jupyterlab-rise), as an instructor presents it.

Slide mode has no widget manager, so each widget's cell output carries a still
picture of its view (``text/html``) beside the live widget; slides taller than
the screen scroll, as the notebooks' ``"rise": {"scroll": true}`` metadata asks.
For every lesson as committed, on a 1280x720 screen (a projector's): every H2
section starts a slide, the title is the notebook's; every widget output shows its
still picture (a loaded image with its text alternative, or its table) and no output
is empty; and stepping through every slide finds none whose content is cut off and
none taller than two screens, so that a room can follow it (course_tools.slides sets
where slides start). Every slide's height is written to
``test-artifacts/browser/slide-heights.json``. That each widget is live in the slides
of a lesson run and saved is tested on the copy that test_notebooks_in_browser.py
runs, saves and reopens (one run of the lesson for both).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from course_tools.browser import ROOT
from course_tools.browser import WIDGET_VIEW
from course_tools.browser import empty_outputs
from course_tools.browser import open_slides
from course_tools.browser import present_slide
from course_tools.browser import slide_overflow

LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]-*.ipynb"))
SCREEN = {"width": 1280, "height": 720}
MOST_SCREENS_PER_SLIDE = 2
HEIGHTS: dict[str, list[dict]] = {}
# The plain text of the widgets that carry a still picture (autodiff_course.widgets).
STILL_PICTURED = ("Chain-rule explorer", "log1pexp explorer", "Jacobian heatmap")


def widget_problems(page, notebook) -> list[str]:
    """Each widget output of the saved notebook, as the slides show it: its still
    picture (loaded images, each with its text alternative) or, for a widget that
    carries none, its plain text; never an empty area."""
    shown = page.evaluate("""() => [...document.querySelectorAll('.reveal .jp-Cell')].map(
        cell => [...cell.querySelectorAll('.jp-OutputArea-output')].map(output => ({
            text: output.innerText.trim().length,
            still: output.querySelector('.widget-still') !== null,
            images: [...output.querySelectorAll('img')].map(
                image => ({alt: image.alt.length, width: image.naturalWidth}))})))""")
    if len(shown) != len(notebook.cells):
        return [f"the slides show {len(shown)} cells, the notebook has {len(notebook.cells)}"]
    problems = []
    for index, (cell, outputs) in enumerate(zip(notebook.cells, shown)):
        for output, seen in zip(cell.get("outputs", []), outputs):
            data = output.get("data", {})
            if WIDGET_VIEW not in data:
                continue
            if (
                str(data.get("text/plain", "")).startswith(STILL_PICTURED)
                and "text/html" not in data
            ):
                problems.append(
                    f"cell {index}: the saved output has no still picture (rebuild the lessons)"
                )
            if "text/html" in data and not seen["still"]:
                problems.append(f"cell {index}: the widget's still picture is not shown")
            if not seen["text"] and not seen["images"]:
                problems.append(f"cell {index}: the widget's area is empty")
            problems += [
                f"cell {index}: a picture without alt text or pixels: {image}"
                for image in seen["images"]
                if not image["alt"] or not image["width"]
            ]
    return problems


def slide_height(page) -> dict:
    """The height of the slide on screen, its first heading, and the screen's height."""
    return page.evaluate("""() => {
        const outer = document.querySelector('.reveal .slides > section.present');
        const slide = outer.querySelector(':scope > section.present') || outer;
        return {height: Math.round(slide.scrollHeight),
                screen: Math.round(document.querySelector('.reveal').clientHeight),
                heading: ((slide.querySelector('h1, h2, h3') || {}).textContent || '')
                    .replace('¶', '').trim().slice(0, 70)};
    }""")


def check_slides(page, base_url: str, token: str, path: Path) -> list[str]:
    """Everything wrong with lesson ``path`` (served under lessons/) shown as slides."""
    notebook = nbformat.read(path, as_version=4)
    problems = []
    if notebook.metadata.get("rise", {}).get("scroll") is not True:
        problems.append('the notebook metadata lacks "rise": {"scroll": true}')
    open_slides(page, base_url, token, f"lessons/{path.name}")
    h2 = sum(
        cell.cell_type == "markdown" and cell.source.startswith("## ") for cell in notebook.cells
    )
    slides = page.evaluate("() => document.querySelectorAll('.reveal .slides > section').length")
    if slides < h2:
        problems.append(f"{slides} slides for {h2} H2 sections")
    title = page.locator(".reveal .slides h1").first.inner_text().strip()
    expected = notebook.cells[0].source.splitlines()[0][2:].replace("`", "").replace("*", "")
    if title != expected.strip():
        problems.append(f"title {title!r}, expected {expected.strip()!r}")
    problems += widget_problems(page, notebook)
    problems += empty_outputs(page)
    seen, heights = set(), HEIGHTS.setdefault(path.stem, [])
    while present_slide(page) not in seen:
        where = present_slide(page)
        seen.add(where)
        overflow = slide_overflow(page)
        if overflow:
            problems.append(f"slide {where} is cut off: {overflow}")
        height = slide_height(page)
        heights.append({"slide": list(where), **height})
        if height["height"] > MOST_SCREENS_PER_SLIDE * height["screen"]:
            problems.append(
                f"slide {where} ({height['heading']!r}) is {height['height']} px tall, more "
                f"than {MOST_SCREENS_PER_SLIDE} screens of {height['screen']} px"
            )
        page.keyboard.press("Space")  # next slide, vertical ones included
        page.wait_for_timeout(250)
    if len(seen) < slides:
        problems.append(f"stepped through {len(seen)} of at least {slides} slides")
    return problems


@pytest.fixture
def screen(browser):
    context = browser.new_context(viewport=SCREEN)
    yield context.new_page()
    context.close()


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_lesson_presents_as_slides_with_every_widget_shown_and_nothing_cut_off(
    screen, lab, artifacts, path
):
    base_url, token = lab
    problems = check_slides(screen, base_url, token, path)
    screen.screenshot(path=str(artifacts / f"slides-{path.stem}.png"))
    (artifacts / "slide-heights.json").write_text(json.dumps(HEIGHTS, indent=1))
    assert problems == [], "\n".join(problems)
