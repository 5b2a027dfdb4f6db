"""The log1pexp explorer of lesson 03, driven in Chromium with keyboard and mouse.

Every figure the readout shows after a change is compared with an independent
float64 NumPy reference, and the plot image must have been replaced.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from jupyterlab import ROOT, open_notebook, problems_on_page, run_all_cells

FIGURES = ROOT / "figures"

EXPLORER = ".log1pexp-explorer"
READOUT = ".log1pexp-readout [data-dtype]"


def sigmoid64(x: float) -> float:
    return float(np.exp(-np.logaddexp(0.0, -x)))


def softplus64(x: float) -> float:
    return float(np.logaddexp(0.0, x))


def readout(page) -> dict:
    return page.evaluate(f"""() => {{
        const node = document.querySelector('{READOUT}');
        return Object.assign({{}}, node.dataset);
    }}""")


def image_source(page) -> str:
    return page.evaluate(f"() => document.querySelector('{EXPLORER} .log1pexp-plot img, "
                         f"{EXPLORER} img.log1pexp-plot').src")


def wait_for_new_image(page, before: str) -> None:
    page.wait_for_function(
        f"""(before) => {{
            const image = document.querySelector('{EXPLORER} .log1pexp-plot img, '
                                                 + '{EXPLORER} img.log1pexp-plot');
            return image && image.src !== before && image.complete;
        }}""", arg=before, timeout=20_000)


def drag_handle(page, slider: str, index: int, to_fraction: float) -> None:
    """Drag handle ``index`` of ``slider`` with the mouse to a fraction of its track."""
    track = page.locator(f"{EXPLORER} {slider} .noUi-target").first.bounding_box()
    handle = page.locator(f"{EXPLORER} {slider} .noUi-handle").nth(index).bounding_box()
    page.mouse.move(handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2)
    page.mouse.down()
    target = track["x"] + to_fraction * track["width"]
    page.mouse.move(target, handle["y"] + handle["height"] / 2, steps=8)
    page.mouse.up()


def choose(page, control: str, option: str, key: str) -> None:
    """Click a toggle button and wait until the readout and the plot both follow."""
    before = image_source(page)
    page.locator(f"{EXPLORER} {control} button", has_text=option).first.click()
    wait_for_readout(page, key, option)
    wait_for_new_image(page, before)


def wait_for_readout(page, key: str, value: str) -> None:
    page.wait_for_function(
        f"""([key, value]) => {{
            const node = document.querySelector('{READOUT}');
            return node && node.dataset[key] === value;
        }}""", arg=[key, value], timeout=20_000)


@pytest.fixture(scope="module")
def explorer_page(browser, lab):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    base_url, token = lab
    open_notebook(page, base_url, token, "lessons/03-custom-gradients.ipynb")
    run_all_cells(page)
    page.locator(EXPLORER).first.scroll_into_view_if_needed()
    page.wait_for_selector(READOUT)
    yield page
    context.close()


def test_default_view_shows_the_silent_zero(explorer_page, artifacts):
    page = explorer_page
    assert problems_on_page(page) == []
    data = readout(page)
    assert (data["dtype"], data["quantity"]) == ("float32", "gradient")
    x = float(data["x"])
    assert 87.4 <= x <= 88.7
    assert float(data["naiveGradient"]) == 0.0          # the silent 0.0 band
    assert float(data["stableGradient"]) == pytest.approx(sigmoid64(x), rel=1e-6)
    page.locator(EXPLORER).first.screenshot(path=str(artifacts / "explorer-default.png"))
    if os.environ.get("COURSE_UPDATE_SCREENSHOT"):  # refresh the README's curated picture
        page.locator(EXPLORER).first.screenshot(path=str(FIGURES / "explorer-in-jupyterlab.png"))


def test_keyboard_moves_the_readout_and_the_values_follow(explorer_page):
    page = explorer_page
    before = readout(page)["x"]
    handle = page.locator(f"{EXPLORER} .log1pexp-readout-x .noUi-handle").first
    handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        f"(before) => document.querySelector('{READOUT}').dataset.x !== before", arg=before)
    page.wait_for_timeout(300)
    data = readout(page)
    x = float(data["x"])
    assert x < float(before)
    assert float(data["stableValue"]) == pytest.approx(softplus64(x), rel=1e-6)
    assert float(data["stableGradient"]) == pytest.approx(sigmoid64(x), rel=1e-6)


def test_switching_the_quantity_replots(explorer_page):
    page = explorer_page
    choose(page, ".log1pexp-quantity", "value", "quantity")
    data = readout(page)
    x = float(data["x"])
    assert float(data["documentedValue"]) == pytest.approx(softplus64(x), rel=1e-6)


def test_mouse_on_the_range_slider_replots(explorer_page):
    page = explorer_page
    before_image, before = image_source(page), readout(page)
    drag_handle(page, ".log1pexp-range", 0, 0.0)  # lower end to the far left
    page.wait_for_function(
        f"(before) => document.querySelector('{READOUT}').dataset.xMin !== before",
        arg=before["xMin"], timeout=20_000)
    wait_for_new_image(page, before_image)
    assert float(readout(page)["xMin"]) < float(before["xMin"])
    assert problems_on_page(page) == []


def test_switching_to_float64_reaches_past_its_overflow(explorer_page, artifacts):
    page = explorer_page
    choose(page, ".log1pexp-dtype", "float64", "dtype")
    data = readout(page)
    x = float(data["x"])
    assert float(data["stableValue"]) == pytest.approx(softplus64(x), rel=1e-12)
    # The range slider now reaches past float64's overflow: drag its top to the end.
    before_image = image_source(page)
    drag_handle(page, ".log1pexp-range", 1, 1.0)
    page.wait_for_function(
        f"() => parseFloat(document.querySelector('{READOUT}').dataset.xMax) > 709.79",
        timeout=20_000)
    wait_for_new_image(page, before_image)
    page.locator(EXPLORER).first.screenshot(path=str(artifacts / "explorer-float64.png"))
