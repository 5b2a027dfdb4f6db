"""The log1pexp explorer (lesson 03) in words: summary, alt text and readout table.

Everything a view shows in pixels is also said here in text: the plain-text
summary that nbval compares and a front end without widgets shows, the plot's
text alternative, and the readout table with machine-readable ``data-*``
attributes. Every number goes through :func:`format_number`.
"""

from __future__ import annotations

import numpy as np

from ... import log1pexp as numerics
from ...log1pexp import METHOD_LABELS
from ...log1pexp import METHODS
from ...log1pexp import QUANTITY_LABELS
from ...plotting import WARNING_TEXT
from ...plotting import text_colour
from .data import PlottedSeries
from .data import ReadoutValues
from .state import ExplorerState

TITLES = {
    "value": "log(1 + eˣ)",
    "gradient": "gradient d/dx log(1 + eˣ)",
    "second_derivative": "second derivative d²/dx² log(1 + eˣ)",
    "relative_error": "relative error of the gradient vs float64",
}


def format_number(
    value: float, style: str = "short", *, dtype: str = "float64", typographic: bool = False
) -> str:
    """The one way the explorer writes a number.

    ``style``:

    * ``"short"``: six significant digits, always with a decimal point or an
      exponent (``88.5``, ``1.0``, ``2.06115e-09``), ``nan``, ``inf``, ``-inf``;
    * ``"fixed"``: two decimals (``88.72``), for places on the x axis;
    * ``"tick"``: six significant digits, ``0`` for zero (axis tick labels);
    * ``"decade"``: ``1``, ``1e-3``, ... for ticks on a logarithmic axis;
    * ``"exact"``: the shortest text that reads back as the same ``dtype`` number
      (``data-*`` attributes).

    ``typographic`` writes the minus sign as "−" (for the figure).
    """
    value = float(value)
    if style == "exact":
        text = str(np.dtype(dtype).type(value))
    elif np.isnan(value):
        text = "nan"
    elif np.isinf(value):
        text = "inf" if value > 0 else "-inf"
    elif style == "short":
        text = f"{value:.6g}"
        if not any(ch in text for ch in ".e"):
            text += ".0"
    elif style == "fixed":
        text = f"{value:.2f}"
    elif style in ("tick", "decade") and value == 0:
        text = "0"
    elif style == "tick":
        text = f"{value:.6g}"
    elif style == "decade":
        exponent = int(np.round(np.log10(abs(value))))
        text = "1" if exponent == 0 else f"1e{exponent}"
    else:
        raise ValueError(f"unknown number style {style!r}")
    return text.replace("-", "−") if typographic else text


def describe_series(series: PlottedSeries, *, typographic: bool = False) -> str:
    """Where the series is nan, inf, -inf or a silent 0.0, in one sentence whose
    numbers are the float format's thresholds (see :func:`.tables.flag_runs`)."""
    text = "; ".join(series.phrases) if series.phrases else "no nan, no inf, no silent 0.0"
    return text.replace("-", "−") if typographic else text


def _points(state: ExplorerState) -> int:
    from .data import in_range

    return int(in_range(state).size)


def _quantity_phrase(state: ExplorerState) -> str:
    if state.quantity == "relative_error":
        return "relative error of the gradient of log(1 + e^x) against float64"
    return f"{QUANTITY_LABELS[state.quantity]} of log(1 + e^x)"


def _limits_sentence(dtype: str) -> str:
    limits = numerics.thresholds(dtype)
    return (
        f"{dtype} limits: 1 + e^x rounds to 1 for x < "
        f"{format_number(limits.cancellation, 'fixed')}; 1/(1 + e^x) is below the "
        f"smallest normal float for x > {format_number(limits.flush_start, 'fixed')}; "
        f"exp(x) overflows for x > {format_number(limits.overflow, 'fixed')}."
    )


def summary_text(
    state: ExplorerState, series: dict[str, PlottedSeries], readout: ReadoutValues
) -> str:
    """The plain-text form: the view, the float limits, each curve's flags, the readout."""
    x_lo, x_hi = (format_number(end, "fixed") for end in state.x_range)
    lines = [
        f"log1pexp explorer ({state.dtype}): {_quantity_phrase(state)}, "
        f"x from {x_lo} to {x_hi} ({_points(state)} tabulated points).",
        _limits_sentence(state.dtype),
    ]
    if not series:
        lines.append("No method selected.")
    for method, one in series.items():
        lines.append(f"{METHOD_LABELS[method]}: {describe_series(one)}.")
    readings = [
        f"{METHOD_LABELS[m]} value {format_number(v['value'])}, gradient "
        f"{format_number(v['gradient'])}"
        for m, v in readout.methods.items()
    ]
    readings.append(
        f"float64 reference value {format_number(readout.reference['value'])}, "
        f"gradient {format_number(readout.reference['gradient'])}"
    )
    lines.append(f"Readout at x = {format_number(readout.x)}: " + "; ".join(readings) + ".")
    return "\n".join(lines)


def alt_text(state: ExplorerState, series: dict[str, PlottedSeries], readout: ReadoutValues) -> str:
    """The plot's text alternative: what it shows, in a few sentences."""
    x_lo, x_hi = state.x_range
    sentences = [
        f"Plot of the {state.dtype} {_quantity_phrase(state)} for x from "
        f"{format_number(x_lo, 'fixed')} to {format_number(x_hi, 'fixed')}."
    ]
    if not series:
        sentences.append("No method is shown.")
    for method, one in series.items():
        sentences.append(f"{METHOD_LABELS[method]}: {describe_series(one)}.")
    finite = [one.y[one.finite] for one in series.values()]
    values = np.concatenate(finite) if finite else np.empty(0)
    if values.size:
        scale = " (symmetric log scale)" if state.quantity == "relative_error" else ""
        sentences.append(
            f"Finite values run from {format_number(values.min())} to "
            f"{format_number(values.max())}{scale}."
        )
    limits = numerics.thresholds(state.dtype)
    marks = []
    if limits.flush_start < x_hi and limits.overflow > x_lo:
        marks.append(
            f"a shaded band from x = {format_number(limits.flush_start, 'fixed')}, "
            f"where 1/(1 + e^x) falls below the smallest normal float"
        )
    if x_lo <= limits.overflow <= x_hi:
        marks.append(
            f"a dashed line at x = {format_number(limits.overflow, 'fixed')}, "
            f"where exp(x) overflows"
        )
    if x_lo <= limits.cancellation <= x_hi:
        marks.append(
            f"a dotted line at x = {format_number(limits.cancellation, 'fixed')}, "
            f"below which 1 + e^x rounds to 1"
        )
    if x_lo <= readout.x <= x_hi:
        marks.append(f"the readout line at x = {format_number(readout.x)}")
    if marks:
        sentences.append("Marked: " + "; ".join(marks) + ".")
    return " ".join(sentences)


def _cell(value: float, flagged: bool = False, title: str = "") -> str:
    style = "padding:2px 8px;text-align:right;font-family:monospace"
    if flagged:
        style += f";color:{WARNING_TEXT};font-weight:bold"
    attribute = f" title='{title}'" if title else ""
    return f"<td style='{style}'{attribute}>{format_number(value)}</td>"


def _attributes(attributes: dict) -> str:
    return " ".join(f"data-{key}='{value}'" for key, value in attributes.items())


_COLUMNS = (
    ("value", "value"),
    ("gradient", "gradient"),
    ("second_derivative", "second-derivative"),
    ("relative_error", "relative-error"),
)


def readout_html(readout: ReadoutValues, state: ExplorerState) -> str:
    """The readout table, with machine-readable ``data-*`` attributes.

    The outer ``div`` carries ``data-x`` (the readout x as a ``dtype`` number),
    ``data-dtype``, ``data-quantity``, ``data-x-min``, ``data-x-max``,
    ``data-methods`` (space separated) and, per shown method
    ``m``, ``data-m-value``, ``data-m-gradient``, ``data-m-second-derivative`` and
    ``data-m-relative-error``; each table row repeats them as ``data-method``,
    ``data-value``, ... Numbers are written as NumPy prints them (``nan``, ``inf``,
    ``-inf``, ``0.0``, ``88.5``), exactly, in the dtype.
    """
    dtype = state.dtype
    attributes = {
        "x": format_number(readout.x, "exact", dtype=dtype),
        "dtype": dtype,
        "quantity": state.quantity,
        "x-min": format_number(state.x_range[0], "exact"),
        "x-max": format_number(state.x_range[1], "exact"),
        "methods": " ".join(state.methods),
    }
    rows = []
    for method, values in readout.methods.items():
        row_attributes = {"method": method}
        for key, name in _COLUMNS:
            text = format_number(
                values[key], "exact", dtype="float64" if key == "relative_error" else dtype
            )
            attributes[f"{method}-{name}"] = row_attributes[name] = text
        cells = []
        for key, _ in _COLUMNS[:3]:
            value = values[key]
            silent = bool(numerics.silent_zeros(value, readout.reference[key], dtype))
            bad = silent or not np.isfinite(value)
            title = (
                "0.0 where the true value is not 0"
                if silent
                else "not a finite number"
                if bad
                else ""
            )
            cells.append(_cell(value, bad, title))
        error = values["relative_error"]
        cells.append(_cell(error, not np.isfinite(error) or error >= 1e-3))
        colour = text_colour(METHODS.index(method))
        rows.append(
            f"<tr {_attributes(row_attributes)}><th scope='row' style='padding:2px "
            f"8px;text-align:left;color:{colour}'>{METHOD_LABELS[method]}</th>"
            f"{''.join(cells)}</tr>"
        )
    rows.append(
        "<tr data-method='reference'><th scope='row' style='padding:2px 8px;"
        "text-align:left;font-weight:normal'>float64 reference</th>"
        + "".join(_cell(readout.reference[key]) for key, _ in _COLUMNS[:3])
        + "<td style='padding:2px 8px;text-align:right'>—</td></tr>"
    )
    header = (
        "<tr><th scope='col' style='text-align:left;padding:2px 8px'>method</th>"
        + "".join(
            f"<th scope='col' style='text-align:right;padding:2px 8px'>{name}</th>"
            for name in ("value", "gradient", "second derivative", "relative error of gradient")
        )
        + "</tr>"
    )
    x_lo, x_hi = state.x_range
    where = "" if x_lo <= readout.x <= x_hi else " (outside the plotted range)"
    note = "" if state.methods else " No method is selected: tick one above."
    return (
        f"<div class='log1pexp-readout-values' {_attributes(attributes)}>"
        f"<b>At x = {format_number(readout.x)}</b> ({dtype}){where}.{note}"
        f"<table style='border-collapse:collapse'>{header}{''.join(rows)}</table></div>"
    )


def view_sentence(state: ExplorerState) -> str:
    """The controls' settings in one sentence (for the still picture in slides)."""
    methods = ", ".join(METHOD_LABELS[m] for m in state.methods) or "no method"
    x_lo, x_hi = (format_number(end, "fixed") for end in state.x_range)
    return (
        f"dtype {state.dtype}; plot {QUANTITY_LABELS[state.quantity]}; methods: "
        f"{methods}; x from {x_lo} to {x_hi}; readout x = "
        f"{format_number(state.readout_x)}"
    )
