"""The course's three widgets as the browser tests find them on a page: where each
lives, the number input that takes arrow keys, and the element whose data attributes
say what it shows (written by the widget's front end from TensorFlow's tables)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WidgetOnPage:
    lesson: str  # the notebook's file name
    root: str  # the widget's root element
    number: str  # a number input that steps with the arrow keys
    readout: str  # the element whose dataset says what is shown
    shown: str  # the dataset key that the number input changes

    def read(self, page, within: str = "") -> dict:
        """The readout's dataset, in the first widget inside ``within``."""
        return page.evaluate(
            """(selector) => { const node = document.querySelector(selector);
                               return node ? Object.assign({}, node.dataset) : null; }""",
            f"{within} {self.root} {self.readout}".strip(),
        )

    def step(self, page, key: str, within: str = "") -> str:
        """Press ``key`` in the number input; wait until the readout changes; the new value."""
        before = (self.read(page, within) or {}).get(self.shown)
        page.locator(f"{within} {self.root} {self.number}".strip()).first.focus()
        page.keyboard.press(key)
        page.wait_for_function(
            """([selector, key, before]) => { const node = document.querySelector(selector);
                return node && node.dataset[key] !== before; }""",
            arg=[f"{within} {self.root} {self.readout}".strip(), self.shown, before],
            timeout=20_000,
        )
        return self.read(page, within)[self.shown]


CHAIN_RULE = WidgetOnPage(
    "01-chain-rule-and-upstream-dy.ipynb",
    ".chain-rule-explorer",
    ".chain-rule-x input",
    ".chain-rule-readout",
    "x",
)
LOG1PEXP = WidgetOnPage(
    "03-custom-gradients.ipynb",
    ".log1pexp-explorer",
    ".log1pexp-readout-x input",
    ".log1pexp-readout [data-dtype]",
    "x",
)
JACOBIAN = WidgetOnPage(
    "05-jacobians.ipynb",
    ".jacobian-heatmap",
    ".jacobian-heatmap-batch input",
    ".jacobian-heatmap-readout",
    "batch",
)
WIDGETS = (CHAIN_RULE, LOG1PEXP, JACOBIAN)
