"""The chain-rule explorer of lesson 01.

Change x and watch four numbers agree: the local derivative d(output)/dx, the
upstream gradient dy = d(loss)/d(output), their product (the chain rule), and what
``tf.GradientTape`` returns for d(loss)/dx, for ``output = log(1 + e^x)`` and
``loss = output**2``.

Shape: :func:`chain_rule_values` computes a :class:`ChainRuleValues`;
:func:`render_html` and :func:`render_text` show it; :class:`ChainRuleExplorer`
hands the rows of every tabulated x to its front end (``static/chain_rule.js``),
which shows them as x changes, without a kernel.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .display import WidgetDisplay
from .display import still_html
from .frontend import module_source
from .frontend import style_sheet

X_MIN, X_MAX, X_STEP = -6.0, 6.0, 0.25


@dataclass(frozen=True)
class ChainRuleValues:
    x: float
    output: float
    local_derivative: float
    dy: float
    chain_rule: float
    tape_loss_gradient: float
    tape_output_gradients: float

    @property
    def agree(self) -> bool:
        scale = max(1.0, abs(self.chain_rule))
        return (
            abs(self.chain_rule - self.tape_loss_gradient) <= 1e-5 * scale
            and abs(self.chain_rule - self.tape_output_gradients) <= 1e-5 * scale
        )


def clamp_x(x) -> float:
    """``x`` as a float within the explorer's range; a clear error if it is no number."""
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"x must be a number, not {x!r}.") from None
    if math.isnan(value):
        raise ValueError("x must be a number, not nan.")
    return min(max(value, X_MIN), X_MAX)


def chain_rule_values(x: float) -> ChainRuleValues:
    """Every number the explorer shows at ``x``, computed with TensorFlow in float32."""
    import tensorflow as tf

    x = tf.constant(float(x), dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        output = tf.math.log(1.0 + tf.exp(x))
        loss = output**2
    local = tape.gradient(output, x)  # dy = 1: d(output)/dx
    dy = 2.0 * output  # d(loss)/d(output)
    through_loss = tape.gradient(loss, x)  # the tape runs the whole chain
    through_dy = tape.gradient(output, x, output_gradients=dy)
    del tape
    return ChainRuleValues(
        x=float(x),
        output=float(output),
        local_derivative=float(local),
        dy=float(dy),
        chain_rule=float(dy * local),
        tape_loss_gradient=float(through_loss),
        tape_output_gradients=float(through_dy),
    )


_ROWS = [
    ("output = log(1 + e<sup>x</sup>)", "output", ""),
    ("local derivative d(output)/dx", "local_derivative", "tape.gradient(output, x)"),
    ("upstream dy = d(loss)/d(output)", "dy", "2 · output"),
    ("chain rule: dy × local derivative", "chain_rule", ""),
    ("tape: d(loss)/dx", "tape_loss_gradient", "tape.gradient(loss, x)"),
    (
        "tape: output_gradients=dy",
        "tape_output_gradients",
        "tape.gradient(output, x, output_gradients=dy)",
    ),
]


def render_html(values: ChainRuleValues) -> str:
    """The readout table: each factor, a bar of its size, and the code that computes it."""
    largest = max(abs(getattr(values, field)) for _, field, _ in _ROWS) or 1.0
    rows = []
    for label, field, code in _ROWS:
        number = getattr(values, field)
        width = int(round(160 * abs(number) / largest))
        rows.append(
            f"<tr><th scope='row' style='padding:2px 8px;text-align:left;"
            f"font-weight:normal'>{label}</th>"
            f"<td style='padding:2px 8px;text-align:right;font-family:monospace'>"
            f"{number:.6f}</td>"
            f"<td style='padding:2px 8px'><div aria-hidden='true' style='background:#0072B2;"
            f"height:10px;width:{width}px'></div></td>"
            f"<td style='padding:2px 8px;font-family:monospace;color:#555'>{code}</td></tr>"
        )
    verdict = (
        "the chain rule and both tape results agree"
        if values.agree
        else "the chain rule and the tape DISAGREE"
    )
    return (
        f"<div class='chain-rule-readout' data-x='{values.x:.2f}'>"
        f"<b>At x = {values.x:.2f}</b> (float32), {verdict}."
        f"<table style='border-collapse:collapse'>{''.join(rows)}</table></div>"
    )


def render_text(values: ChainRuleValues) -> str:
    verdict = "agree" if values.agree else "DISAGREE"
    return (
        f"Chain-rule explorer at x = {values.x:.2f}: output = {values.output:.6f}, "
        f"local derivative = {values.local_derivative:.6f}, dy = {values.dy:.6f}, "
        f"dy * local = {values.chain_rule:.6f}, tape d(loss)/dx = "
        f"{values.tape_loss_gradient:.6f}, tape with output_gradients = "
        f"{values.tape_output_gradients:.6f} ({verdict})."
    )


def grid() -> list[float]:
    """The x the explorer is tabulated at: X_MIN to X_MAX in steps of X_STEP."""
    count = int(round((X_MAX - X_MIN) / X_STEP))
    return [X_MIN + index * X_STEP for index in range(count + 1)]


def nearest_on_grid(x: float) -> float:
    """The tabulated x nearest ``x`` (clamped first)."""
    return min(grid(), key=lambda point: abs(point - clamp_x(x)))


@functools.cache
def chain_rule_table() -> tuple[ChainRuleValues, ...]:
    """:func:`chain_rule_values` at every tabulated x (computed once per kernel)."""
    return tuple(chain_rule_values(x) for x in grid())


@functools.cache
def _widget_class():
    import anywidget
    import traitlets

    class ChainRuleWidget(anywidget.AnyWidget):
        """The front end of :class:`ChainRuleExplorer` (``static/chain_rule.js``)."""

        _esm = module_source("chain_rule")
        _css = style_sheet()
        points = traitlets.List().tag(sync=True)
        readouts = traitlets.List().tag(sync=True)
        index = traitlets.Int().tag(sync=True)

    return ChainRuleWidget


class ChainRuleExplorer(WidgetDisplay):
    """A number input for x and a live table of the chain rule's factors (lesson 01).

    Every row of the table is computed with the tape for each tabulated x (-6 to 6
    in steps of 0.25) before the widget is shown; in the browser the arrow keys move
    x by one step and a typed x goes to the nearest tabulated one, with no kernel
    behind it. ``x`` outside -6..6 is clamped; :meth:`set_x` moves it from Python.
    """

    def __init__(self, x: float = 1.0):
        table = chain_rule_table()
        self.widget = _widget_class()(
            points=grid(),
            readouts=[render_html(values) for values in table],
            index=grid().index(nearest_on_grid(x)),
        )
        self.widget.add_class("chain-rule-explorer")

    @property
    def values(self) -> ChainRuleValues:
        """The numbers now shown."""
        return chain_rule_table()[self.widget.index]

    def set_x(self, x) -> None:
        """Show the tabulated x nearest ``x`` (clamped to -6..6)."""
        self.widget.index = grid().index(nearest_on_grid(x))

    def readout_html(self) -> str:
        return render_html(self.values)

    def text_summary(self) -> str:
        return render_text(self.values)

    def static_html(self) -> str:
        return still_html(
            "chain-rule-explorer",
            "Chain-rule explorer",
            f"x = {self.values.x:.2f}",
            render_html(self.values),
        )
