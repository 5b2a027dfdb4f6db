"""Every lesson can be presented as a slideshow (jupyterlab-rise) from JupyterLab."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from notebooks import LESSONS, load  # noqa: E402


def h2_count(lesson) -> int:
    return sum(1 for cell in load("lessons", lesson).cells
               if cell.cell_type == "markdown" and cell.source.startswith("## "))


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda lesson: lesson.slug)
def test_lesson_renders_as_a_slideshow(page, lab, artifacts, lesson):
    base_url, token = lab
    page.goto(f"{base_url}/rise/lessons/{lesson.filename}?token={token}")
    page.wait_for_selector(".reveal .slides section", state="attached", timeout=90_000)
    page.wait_for_function("() => document.querySelector('.reveal .slides h1') !== null",
                           timeout=60_000)
    slides = page.evaluate("() => document.querySelectorAll('.reveal .slides > section').length")
    assert slides >= h2_count(lesson), "every H2 section starts a slide"
    title = page.locator(".reveal .slides h1").first.inner_text()
    assert title.strip() == load("lessons", lesson).cells[0].source.splitlines()[0][2:] \
        .replace("`", "").replace("*", "").strip()
    page.screenshot(path=str(artifacts / f"slides-{lesson.slug}.png"))
    assert present_slide(page) == 0
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => document.querySelectorAll("
                           "'.reveal .slides > section')[1].classList.contains('present')")
    assert present_slide(page) == 1


def present_slide(page) -> int:
    return page.evaluate("""() => [...document.querySelectorAll('.reveal .slides > section')]
        .findIndex(section => section.classList.contains('present'))""")
