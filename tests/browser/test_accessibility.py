"""The course's widgets are accessible: axe-core finds no WCAG 2.1 A or AA violation
in the widget outputs of lessons 01, 03 and 05, and every control works from the
keyboard alone (Tab reaches it, a key changes it, the picture or table follows).

axe-core comes from the npm registry at the version that ``axe/package-lock.json``
pins (see the ``axe_script`` fixture in conftest.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course_tools.browser import open_notebook
from course_tools.browser import problems_on_page
from course_tools.browser import run_all_cells

WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

LESSON_WIDGETS = {
    "01-chain-rule-and-upstream-dy.ipynb": ".chain-rule-explorer",
    "03-custom-gradients.ipynb": ".log1pexp-explorer",
    "05-jacobians.ipynb": ".jacobian-heatmap",
}


@pytest.fixture(scope="module")
def lesson_pages(browser, lab):
    """Each lesson of LESSON_WIDGETS opened once and run top to bottom (live widgets)."""
    opened, contexts = {}, []

    def page_for(lesson: str):
        if lesson not in opened:
            context = browser.new_context(viewport={"width": 1280, "height": 1000})
            contexts.append(context)
            page = context.new_page()
            base_url, token = lab
            open_notebook(page, base_url, token, f"lessons/{lesson}")
            run_all_cells(page)
            page.wait_for_selector(
                f"{LESSON_WIDGETS[lesson]} [data-dtype], {LESSON_WIDGETS[lesson]} [data-layer], "
                f"{LESSON_WIDGETS[lesson]} [data-x]",
                timeout=60_000,
            )
            page.wait_for_timeout(1000)
            opened[lesson] = page
        return opened[lesson]

    yield page_for
    for context in contexts:
        context.close()


def axe_report(page, script: str) -> dict:
    """axe-core's WCAG 2.1 A and AA results over every widget output on the page."""
    page.add_script_tag(content=script)
    return page.evaluate(
        """async (tags) => {
        const outputs = [...document.querySelectorAll(
            '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
            .filter(output => output.querySelector('.course-widget'));
        const result = await axe.run({include: outputs},
                                     {runOnly: {type: 'tag', values: tags}});
        const describe = rule => ({rule: rule.id, help: rule.help, nodes: rule.nodes.map(
            node => node.html.slice(0, 160) + ' -- ' + node.failureSummary)});
        return {outputs: outputs.length, violations: result.violations.map(describe),
                unsure: result.incomplete.map(describe),
                passed: result.passes.map(rule => rule.id)};
    }""",
        WCAG_21_AA,
    )


@pytest.mark.parametrize("lesson", list(LESSON_WIDGETS))
def test_widget_outputs_have_no_wcag_21_aa_violation(lesson_pages, axe_script, artifacts, lesson):
    page = lesson_pages(lesson)
    assert problems_on_page(page) == []
    report = axe_report(page, axe_script)
    (artifacts / f"axe-{Path(lesson).stem}.json").write_text(json.dumps(report, indent=1))
    assert report["outputs"] >= 1, "no widget output was checked"
    assert report["violations"] == []
    assert [rule for rule in report["unsure"] if rule["rule"] == "color-contrast"] == []
    # the rules that matter here did run and pass (the plots are canvases with role img)
    pictured = lesson != "01-chain-rule-and-upstream-dy.ipynb"  # the others show a plot
    assert {"label", "color-contrast", *(["role-img-alt"] if pictured else [])} <= set(
        report["passed"]
    )


# -- the keyboard -------------------------------------------------------------------

READ_STATE = """(container) => {
    const root = document.querySelector(container);
    const table = root.querySelector('[data-dtype], [data-layer], [data-x]');
    const canvas = root.querySelector('canvas');
    return {data: Object.assign({}, table ? table.dataset : {}),
            text: table ? table.innerText : '', image: canvas ? canvas.toDataURL() : '',
            alt: canvas ? canvas.getAttribute('aria-label') : ''};
}"""

FOCUSED = """(container) => {
    const active = document.activeElement;
    const root = document.querySelector(container);
    if (!active || !root.contains(active)) return null;
    const owner = active.closest('[class*="log1pexp-"], [class*="jacobian-heatmap-"], '
                                 + '[class*="chain-rule-"]');
    return {option: active.dataset.value || null,
            owner: owner ? [...owner.classList].filter(c => c.includes('-')).join(' ') : ''};
}"""

# widget -> its controls in Tab order, each as (kind, class, readout attribute, details).
# Tab reaches each control once; a group of radio buttons is one stop (its checked
# option), and the arrow keys move to the next option and pick it (the widget keeps them
# from JupyterLab, which would move between cells); a checkbox toggles with Space; a
# number input steps with the arrow keys.
EXPLORER_QUANTITIES = ["value", "gradient", "second_derivative", "relative_error"]
KEYBOARD = {
    ".log1pexp-explorer": [
        ("choice", "log1pexp-dtype", "dtype", ["float32", "float64", "float16"]),
        ("choice", "log1pexp-quantity", "quantity", EXPLORER_QUANTITIES),
        ("tick", "log1pexp-method-naive", "methods", "naive"),
        ("tick", "log1pexp-method-documented", "methods", "documented"),
        ("tick", "log1pexp-method-stable", "methods", "stable"),
        ("number", "log1pexp-x-from", "xMin", "ArrowUp"),
        ("number", "log1pexp-x-to", "xMax", "ArrowDown"),
        ("number", "log1pexp-readout-x", "x", "ArrowUp"),
    ],
    ".chain-rule-explorer": [("number", "chain-rule-x", "x", "ArrowUp")],
    ".jacobian-heatmap": [
        ("choice", "jacobian-heatmap-layer", "layer", ["independent", "centred", "batch norm"]),
        ("number", "jacobian-heatmap-batch", "batch", "ArrowUp"),
    ],
}

CHANGED = """([container, before]) => {
    const root = document.querySelector(container);
    const table = root.querySelector('[data-dtype], [data-layer], [data-x]');
    const canvas = root.querySelector('canvas');
    return (canvas ? canvas.toDataURL() : '') + (table ? table.innerText : '') !== before;
}"""


def press_and_wait(page, container: str, key: str) -> tuple[dict, dict]:
    """Press ``key`` and wait until the widget's picture or table changes."""
    before = page.evaluate(READ_STATE, container)
    page.keyboard.press(key)
    page.wait_for_function(
        CHANGED, arg=[container, before["image"] + before["text"]], timeout=20_000
    )
    return before, page.evaluate(READ_STATE, container)


def assert_redrawn(control: str, before: dict, after: dict) -> None:
    """The plot follows the control: redrawn, with a new text alternative. (The readout
    x steps to the next tabulated point, often less than a pixel away near the
    thresholds, so for it the text alternative must place the readout line there.)"""
    if not before["image"]:
        return
    assert after["alt"] and after["alt"] != before["alt"], control
    if control == "log1pexp-readout-x":
        assert f"the readout line at x = {float(after['data']['x']):.6g}" in after["alt"]
    else:
        assert after["image"] != before["image"], f"{control}: the plot did not change"


@pytest.mark.parametrize("lesson", list(LESSON_WIDGETS))
def test_every_control_is_reached_by_tab_and_changed_by_a_key(lesson_pages, artifacts, lesson):
    page = lesson_pages(lesson)
    container = LESSON_WIDGETS[lesson]
    page.locator(container).first.scroll_into_view_if_needed()
    # Start on the widget's first control (a choice's checked option); every later one
    # is reached with Tab.
    kind, control = KEYBOARD[container][0][:2]
    page.locator(
        f"{container} .{control} input{':checked' if kind == 'choice' else ''}"
    ).first.focus()
    for position, (kind, control, attribute, details) in enumerate(KEYBOARD[container]):
        if position:
            page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED, container)
        assert focused and control in focused["owner"].split(), (control, focused)
        if kind == "choice":
            shown = page.evaluate(READ_STATE, container)["data"][attribute]
            assert focused["option"] == shown, (control, focused, shown)
            start = details.index(shown)
            for step in range(1, len(details) + 1):  # every option, back to the first
                before, after = press_and_wait(page, container, "ArrowDown")
                expected = details[(start + step) % len(details)]
                assert after["data"][attribute] == expected, (control, after["data"])
                assert page.evaluate(FOCUSED, container)["option"] == expected
                assert_redrawn(control, before, after)
        else:
            key = details if kind == "number" else " "
            before, after = press_and_wait(page, container, key)
            old, new = before["data"][attribute], after["data"][attribute]
            if kind == "tick":
                assert (details in old.split()) != (details in new.split()), (control, new)
            else:
                step = float(new) - float(old)
                assert step > 0 if key == "ArrowUp" else step < 0, (control, old, new)
            assert_redrawn(control, before, after)
    page.locator(container).first.screenshot(
        path=str(artifacts / f"keyboard-{Path(lesson).stem}.png")
    )
