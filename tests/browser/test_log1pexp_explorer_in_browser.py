"""The log1pexp explorer of lesson 03, driven in Chromium with mouse and keyboard.

The explorer draws in the browser from the tables TensorFlow computed when the cell
ran. Every figure the readout shows after a change is compared with an independent
float64 NumPy reference; the plot (a canvas) must have been redrawn, with a text
alternative that follows it; and the extremes the explorer once got wrong (a
zero-width range, a dtype round trip) are refused or restored with a message.
(tests/browser/test_accessibility.py walks every control with the keyboard alone.)
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from course_tools.browser import ROOT
from course_tools.browser import open_notebook
from course_tools.browser import problems_on_page
from course_tools.browser import run_all_cells

FIGURES = ROOT / "figures"

EXPLORER = ".log1pexp-explorer"
READOUT = ".log1pexp-readout [data-dtype]"
PLOT = f"{EXPLORER} .log1pexp-plot canvas"


def sigmoid64(x: float) -> float:
    return float(np.exp(-np.logaddexp(0.0, -x)))


def softplus64(x: float) -> float:
    return float(np.logaddexp(0.0, x))


def readout(page) -> dict:
    return page.evaluate(f"""() => Object.assign(
        {{}}, document.querySelector('{READOUT}').dataset)""")


def plot(page) -> dict:
    """The canvas as drawn: its pixels, its text alternative, its size and how many
    times the explorer has drawn it."""
    return page.evaluate(f"""() => {{
        const canvas = document.querySelector('{PLOT}');
        return {{pixels: canvas.toDataURL(), alt: canvas.getAttribute('aria-label'),
                 width: parseFloat(canvas.style.width), height: parseFloat(canvas.style.height),
                 renders: Number(canvas.closest('{EXPLORER}').dataset.renderCount)}};
    }}""")


def wait_for_new_plot(page, before: dict) -> dict:
    page.wait_for_function(
        f"""(before) => Number(document.querySelector('{PLOT}')
                .closest('{EXPLORER}').dataset.renderCount) > before""",
        arg=before["renders"],
        timeout=20_000,
    )
    after = plot(page)
    assert after["pixels"] != before["pixels"], "the canvas was not redrawn"
    return after


def wait_for_readout(page, key: str, value: str) -> None:
    page.wait_for_function(
        f"""([key, value]) => {{
            const node = document.querySelector('{READOUT}');
            return node && node.dataset[key] === value;
        }}""",
        arg=[key, value],
        timeout=20_000,
    )


def message(page) -> str:
    return page.locator(f"{EXPLORER} .log1pexp-message").first.inner_text()


def type_number(page, control: str, text: str) -> None:
    """Click into a number input, replace its text and press Enter."""
    box = page.locator(f"{EXPLORER} {control} input").first
    box.click()
    box.press("Control+a")
    box.type(text)
    box.press("Enter")


@pytest.fixture(scope="module")
def explorer_page(browser, lab):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    base_url, token = lab
    open_notebook(page, base_url, token, "lessons/03-custom-gradients.ipynb")
    run_all_cells(page)
    page.locator(EXPLORER).first.scroll_into_view_if_needed()
    page.wait_for_selector(READOUT)
    page.wait_for_selector(PLOT)
    yield page
    context.close()


def test_default_view_shows_the_silent_zero(explorer_page, artifacts):
    page = explorer_page
    assert problems_on_page(page) == []
    data = readout(page)
    assert (data["dtype"], data["quantity"]) == ("float32", "gradient")
    x = float(data["x"])
    assert 87.34 <= x <= 88.72
    assert float(data["naiveGradient"]) == 0.0  # the silent 0.0 band
    assert float(data["stableGradient"]) == pytest.approx(sigmoid64(x), rel=1e-6)
    shown = plot(page)
    assert (shown["width"], shown["height"]) == (640, 420)
    assert shown["alt"].startswith("Plot of the float32 gradient of log(1 + e^x)")
    assert "naive autodiff: silent 0.0 from x = 87.34 to 88.72; nan from x = 88.72" in shown["alt"]
    page.locator(EXPLORER).first.screenshot(path=str(artifacts / "explorer-default.png"))
    if os.environ.get("COURSE_UPDATE_SCREENSHOT"):  # refresh the README's curated picture
        page.locator(EXPLORER).first.screenshot(path=str(FIGURES / "explorer-in-jupyterlab.png"))


def test_arrow_keys_move_the_readout_and_the_values_follow(explorer_page):
    page = explorer_page
    before = readout(page)["x"]
    page.locator(f"{EXPLORER} .log1pexp-readout-x input").first.focus()
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    page.wait_for_function(
        f"(before) => document.querySelector('{READOUT}').dataset.x !== before", arg=before
    )
    data = readout(page)
    x = float(data["x"])
    assert x < float(before)
    assert float(data["stableValue"]) == pytest.approx(softplus64(x), rel=1e-6)
    assert float(data["stableGradient"]) == pytest.approx(sigmoid64(x), rel=1e-6)


def test_clicking_a_quantity_replots(explorer_page):
    page = explorer_page
    before = plot(page)
    page.locator(f"{EXPLORER} .log1pexp-quantity label", has_text="value").first.click()
    wait_for_readout(page, "quantity", "value")
    after = wait_for_new_plot(page, before)
    assert after["alt"].startswith("Plot of the float32 value of log(1 + e^x)")
    data = readout(page)
    assert float(data["documentedValue"]) == pytest.approx(softplus64(float(data["x"])), rel=1e-6)
    page.locator(f"{EXPLORER} .log1pexp-quantity label", has_text="gradient").first.click()
    wait_for_readout(page, "quantity", "gradient")


def test_typing_a_range_replots(explorer_page):
    page = explorer_page
    before = plot(page)
    type_number(page, ".log1pexp-x-from", "-120")
    wait_for_readout(page, "xMin", "-120.0")
    after = wait_for_new_plot(page, before)
    assert "for x from -120.00 to 100.00" in after["alt"]
    assert problems_on_page(page) == []


def test_a_zero_width_range_is_widened_with_a_message(explorer_page):
    page = explorer_page
    before = plot(page)
    type_number(page, ".log1pexp-x-from", "100")  # the same as x to
    page.wait_for_function(
        f"() => document.querySelector('{READOUT}').dataset.xMin !== '-120.0'", timeout=20_000
    )
    after = wait_for_new_plot(page, before)
    data = readout(page)
    low, high = float(data["xMin"]), float(data["xMax"])
    assert low < 100.0 < high  # widened around the one x asked for
    assert "too narrow to plot; widened to" in message(page)
    assert "Finite values run from" in after["alt"]  # a plot with points, not an empty one
    type_number(page, ".log1pexp-x-from", "-20")
    wait_for_readout(page, "xMin", "-20.0")
    type_number(page, ".log1pexp-x-to", "100")
    wait_for_readout(page, "xMax", "100.0")


def test_clicking_a_method_off_removes_it_from_plot_and_readout(explorer_page):
    page = explorer_page
    before = plot(page)
    page.locator(f"{EXPLORER} .log1pexp-method-naive input").first.click()
    wait_for_readout(page, "methods", "documented stable")
    after = wait_for_new_plot(page, before)
    assert "naive autodiff:" not in after["alt"]
    page.locator(f"{EXPLORER} .log1pexp-method-naive input").first.click()
    wait_for_readout(page, "methods", "naive documented stable")


def test_float64_reaches_past_its_overflow(explorer_page, artifacts):
    page = explorer_page
    before = plot(page)
    page.locator(f"{EXPLORER} .log1pexp-dtype label", has_text="float64").first.click()
    wait_for_readout(page, "dtype", "float64")
    wait_for_new_plot(page, before)
    data = readout(page)
    assert float(data["stableValue"]) == pytest.approx(softplus64(float(data["x"])), rel=1e-12)
    before = plot(page)
    type_number(page, ".log1pexp-x-to", "760")  # the top of float64's bounds
    page.wait_for_function(
        f"() => parseFloat(document.querySelector('{READOUT}').dataset.xMax) > 709.79",
        timeout=20_000,
    )
    after = wait_for_new_plot(page, before)
    assert "a dashed line at x = 709.78, where exp(x) overflows" in after["alt"]
    page.locator(EXPLORER).first.screenshot(path=str(artifacts / "explorer-float64.png"))


def test_a_dtype_round_trip_restores_the_range_the_learner_had(explorer_page):
    page = explorer_page
    for dtype in ("float32", "float16"):
        page.locator(f"{EXPLORER} .log1pexp-dtype label", has_text=dtype).first.click()
        wait_for_readout(page, "dtype", dtype)
    page.locator(f"{EXPLORER} .log1pexp-dtype label", has_text="float32").first.click()
    wait_for_readout(page, "dtype", "float32")
    data = readout(page)
    assert (data["xMin"], data["xMax"]) == ("-20.0", "100.0")  # not float16's -16...16
    page.locator(f"{EXPLORER} .log1pexp-dtype label", has_text="float64").first.click()
    wait_for_readout(page, "dtype", "float64")
    assert float(readout(page)["xMax"]) > 709.79  # float64's range as left above
