"""The chain-rule explorer of lesson 01.

Change x and watch four numbers agree: the local derivative d(output)/dx, the
upstream gradient dy = d(loss)/d(output), their product (the chain rule), and what
``tf.GradientTape`` returns for d(loss)/dx, for ``output = log(1 + e^x)`` and
``loss = output**2``.

Shape: :func:`chain_rule_values` computes a :class:`ChainRuleValues`;
:func:`render_html` and :func:`render_text` show it; :class:`ChainRuleExplorer`
is the thin widget around them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .display import WidgetDisplay
from .display import still_html

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
            f"<td style='padding:2px 8px'><div style='background:#0072B2;height:10px;"
            f"width:{width}px'></div></td>"
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


class ChainRuleExplorer(WidgetDisplay):
    """A number input for x (arrow keys step by 0.25) and a live table of the chain
    rule's factors (lesson 01). ``x`` outside -6..6 is clamped."""

    def __init__(self, x: float = 1.0):
        import ipywidgets as widgets

        self.values = chain_rule_values(clamp_x(x))
        self.x_input = widgets.BoundedFloatText(
            value=self.values.x,
            min=X_MIN,
            max=X_MAX,
            step=X_STEP,
            description="x",
            continuous_update=False,
            layout=widgets.Layout(width="220px"),
        )
        self.readout = widgets.HTML(render_html(self.values))
        self.widget = widgets.VBox([self.x_input, self.readout])
        self.widget.add_class("chain-rule-explorer")
        self.x_input.add_class("chain-rule-x")
        self.x_input.observe(self._on_x, names="value")

    def _on_x(self, change) -> None:
        self.values = chain_rule_values(clamp_x(change["new"]))
        self.readout.value = render_html(self.values)

    def text_summary(self) -> str:
        return render_text(self.values)

    def static_html(self) -> str:
        return still_html(
            "chain-rule-explorer",
            "Chain-rule explorer",
            f"x = {self.values.x:.2f}",
            render_html(self.values),
        )
