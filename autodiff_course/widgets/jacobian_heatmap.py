"""The Jacobian-structure heatmap of lesson 05.

Pick a small layer and a batch size and see two matrices side by side:

* the full ``tape.jacobian`` of the layer's output ``y`` (batch, outs) with
  respect to its input ``x`` (batch, ins), of shape (batch, outs, batch, ins),
  drawn as a (batch·outs) × (batch·ins) matrix with one block per pair of
  examples;
* what ``tape.batch_jacobian`` returns, (batch, outs, ins), drawn on the
  diagonal of a matrix of the same size.

For a layer that treats examples independently the full Jacobian is
block-diagonal and the two pictures agree. For a layer that mixes examples
(centring the batch, batch normalisation) the off-diagonal blocks light up, and
``batch_jacobian`` returns something else: for each example b, the blocks of
column b summed over the target's batch axis. The readout states the numbers.

Every value is computed with ``tf.GradientTape`` in float32. The Jacobians are
computed with ``experimental_use_pfor=False`` on a persistent tape: for these
tiny sizes the loop is quicker than building a vectorised function on every
update.

Shape: :func:`jacobian_structure` computes a :class:`JacobianStructure`;
:func:`render_png` (the still picture), :func:`render_html`, :func:`render_text`
and :func:`alt_text` show it; :class:`JacobianHeatmap` hands every view to its
front end (``static/jacobian_heatmap.js``), which draws them without a kernel.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .display import WidgetDisplay
from .display import image_html
from .display import still_html
from .frontend import module_source
from .frontend import style_sheet

INS, OUTS = 3, 2
BATCH_MIN, BATCH_MAX = 2, 6
BATCH_NORM_EPSILON = 1e-3

# label shown on the toggle -> (key, formula)
LAYERS = {
    "independent": "tanh(x W): each example on its own",
    "centred": "tanh((x - batch mean of x) W): mixes examples",
    "batch norm": "(h - batch mean) / batch std, h = x W: mixes examples",
}

WEIGHTS = np.array([[0.9, -0.5], [0.4, 1.2], [-0.7, 0.3]])  # (ins, outs)
INPUTS = np.array(
    [
        [0.5, -1.0, 0.3],
        [1.2, 0.4, -0.6],
        [-0.8, 0.9, 0.1],
        [0.2, -0.3, 1.1],
        [-1.1, -0.2, -0.4],
        [0.7, 1.0, 0.6],
    ]
)  # (BATCH_MAX, ins)


def check_layer(layer: str) -> str:
    """``layer`` if it is one of :data:`LAYERS`, else a ``ValueError`` naming them."""
    if layer not in LAYERS:
        names = ", ".join(f"'{name}'" for name in LAYERS)
        raise ValueError(f"layer must be one of {names}, not {layer!r}.")
    return layer


def clamp_batch(batch) -> int:
    """``batch`` as a whole number from BATCH_MIN to BATCH_MAX; an error if it is none."""
    try:
        value = float(batch)
    except (TypeError, ValueError):
        raise ValueError(f"batch must be a whole number, not {batch!r}.") from None
    if not value.is_integer():
        raise ValueError(f"batch must be a whole number, not {batch!r}.")
    return int(min(max(value, BATCH_MIN), BATCH_MAX))


def layer_output(layer: str, x):
    """The output of ``layer`` for a batch ``x`` (batch, ins), in TensorFlow."""
    import tensorflow as tf

    w = tf.constant(WEIGHTS, dtype=x.dtype)
    if check_layer(layer) == "independent":
        return tf.tanh(x @ w)
    if layer == "centred":
        return tf.tanh((x - tf.reduce_mean(x, axis=0, keepdims=True)) @ w)
    h = x @ w  # batch norm
    mean = tf.reduce_mean(h, axis=0, keepdims=True)
    variance = tf.reduce_mean((h - mean) ** 2, axis=0, keepdims=True)
    return (h - mean) / tf.sqrt(variance + BATCH_NORM_EPSILON)


@dataclass(frozen=True)
class JacobianStructure:
    layer: str
    batch: int
    full: np.ndarray  # (batch, outs, batch, ins), from tape.jacobian
    batch_jacobian: np.ndarray  # (batch, outs, ins), from tape.batch_jacobian

    @property
    def diagonal_blocks(self) -> np.ndarray:
        """full[b, :, b, :] for each b: each example's own Jacobian."""
        return np.stack([self.full[b, :, b, :] for b in range(self.batch)])

    @property
    def column_sums(self) -> np.ndarray:
        """sum over b' of full[b', :, b, :]: what batch_jacobian actually computes."""
        return self.full.sum(axis=0).transpose(1, 0, 2)

    @property
    def cross_example_max(self) -> float:
        """The largest |full[b', :, b, :]| over pairs of different examples b' != b."""
        mask = ~np.eye(self.batch, dtype=bool)
        blocks = np.abs(self.full).max(axis=(1, 3))  # (batch, batch)
        return float(blocks[mask].max()) if mask.any() else 0.0

    @property
    def difference_from_diagonal(self) -> float:
        return float(np.abs(self.batch_jacobian - self.diagonal_blocks).max())

    @property
    def difference_from_column_sums(self) -> float:
        return float(np.abs(self.batch_jacobian - self.column_sums).max())

    @property
    def blocks_in_words(self) -> str:
        """In words: is the full Jacobian block-diagonal (examples independent)?"""
        if self.cross_example_max < 1e-6:
            return "block-diagonal: no example depends on another"
        return "NOT block-diagonal: examples depend on each other"

    @property
    def verdict(self) -> str:
        """In words: does batch_jacobian equal the diagonal blocks?"""
        if self.difference_from_diagonal < 1e-5:
            return "batch_jacobian equals the diagonal blocks"
        return "batch_jacobian does NOT equal the diagonal blocks: it sums each column of blocks"

    @property
    def colour_limit(self) -> float:
        """The largest |entry| of either Jacobian: the ends of the colour scale."""
        return max(float(np.abs(self.full).max()), float(np.abs(self.batch_jacobian).max()), 1e-6)

    def as_matrix(self) -> np.ndarray:
        """The full Jacobian as a (batch·outs) × (batch·ins) matrix."""
        return self.full.reshape(self.batch * OUTS, self.batch * INS)

    def batch_jacobian_matrix(self) -> np.ndarray:
        """batch_jacobian's blocks on the diagonal, NaN (blank) elsewhere."""
        matrix = np.full((self.batch * OUTS, self.batch * INS), np.nan)
        for b in range(self.batch):
            matrix[b * OUTS : (b + 1) * OUTS, b * INS : (b + 1) * INS] = self.batch_jacobian[b]
        return matrix


@functools.cache
def jacobian_structure(layer: str = "independent", batch: int = 3) -> JacobianStructure:
    """Both Jacobians of ``layer`` for the first ``batch`` rows of INPUTS (clamped)."""
    import tensorflow as tf

    layer, batch = check_layer(layer), clamp_batch(batch)
    x = tf.constant(INPUTS[:batch], dtype=tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = layer_output(layer, x)
    full = tape.jacobian(y, x, experimental_use_pfor=False)
    per_example = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    del tape
    return JacobianStructure(
        layer=layer,
        batch=batch,
        full=full.numpy().astype(np.float64),
        batch_jacobian=per_example.numpy().astype(np.float64),
    )


def _draw_blocks(ax, batch: int) -> None:
    for b in range(1, batch):
        ax.axhline(b * OUTS - 0.5, color="black", linewidth=1.0)
        ax.axvline(b * INS - 0.5, color="black", linewidth=1.0)
    ax.set_xticks([b * INS + (INS - 1) / 2 for b in range(batch)])
    ax.set_xticklabels([f"x[{b}]" for b in range(batch)])
    ax.set_yticks([b * OUTS + (OUTS - 1) / 2 for b in range(batch)])
    ax.set_yticklabels([f"y[{b}]" for b in range(batch)])
    ax.grid(False)


def render_figure(structure: JacobianStructure):
    """A matplotlib Figure (not registered with pyplot) with both heatmaps."""
    from matplotlib.figure import Figure

    full = structure.as_matrix()
    per_example = structure.batch_jacobian_matrix()
    limit = structure.colour_limit
    figure = Figure(figsize=(8.0, 3.4), dpi=80, layout="constrained")
    axes = figure.subplots(1, 2)
    image = None
    for ax, matrix, title in (
        (axes[0], full, f"tape.jacobian {structure.full.shape}"),
        (axes[1], per_example, f"tape.batch_jacobian {structure.batch_jacobian.shape}"),
    ):
        image = ax.imshow(
            np.ma.masked_invalid(matrix),
            cmap="RdBu_r",
            vmin=-limit,
            vmax=limit,
            interpolation="nearest",
        )
        ax.set_facecolor("#dddddd")
        _draw_blocks(ax, structure.batch)
        ax.set_title(title, fontsize=11)
    figure.colorbar(image, ax=list(axes), shrink=0.85, label="dy/dx")
    figure.suptitle(f"{structure.layer}: {LAYERS[structure.layer]}", fontsize=11)
    return figure


def render_png(structure: JacobianStructure) -> bytes:
    """The two heatmaps as PNG bytes (the course's encoder: same pixels, same bytes)."""
    from ..plotting import figure_png

    return figure_png(render_figure(structure))


def render_text(structure: JacobianStructure) -> str:
    return (
        f"Jacobian heatmap: layer = {structure.layer}, batch = {structure.batch}. "
        f"jacobian shape {structure.full.shape}, batch_jacobian shape "
        f"{structure.batch_jacobian.shape}. Largest cross-example entry "
        f"{structure.cross_example_max:.6f} ({structure.blocks_in_words}). Largest difference of "
        f"batch_jacobian from the diagonal blocks {structure.difference_from_diagonal:.6f}, "
        f"from the column sums of blocks {structure.difference_from_column_sums:.6f} "
        f"({structure.verdict})."
    )


def render_html(structure: JacobianStructure) -> str:
    rows = [
        ("largest cross-example entry |J[b', :, b, :]|, b' ≠ b", structure.cross_example_max),
        (
            "batch_jacobian − diagonal blocks (largest |difference|)",
            structure.difference_from_diagonal,
        ),
        ("batch_jacobian − blocks summed down each column", structure.difference_from_column_sums),
    ]
    table = "".join(
        f"<tr><th scope='row' style='padding:2px 8px;text-align:left;font-weight:normal'>"
        f"{label}</th><td style='padding:2px 8px;"
        f"text-align:right;font-family:monospace'>{value:.6f}</td></tr>"
        for label, value in rows
    )
    return (
        f"<div class='jacobian-heatmap-readout' data-layer='{structure.layer}' "
        f"data-batch='{structure.batch}'><b>{structure.layer}, batch = "
        f"{structure.batch}</b>: the full Jacobian is {structure.blocks_in_words}; "
        f"{structure.verdict}."
        f"<table style='border-collapse:collapse'>{table}</table></div>"
    )


def alt_text(structure: JacobianStructure) -> str:
    """The picture's text alternative: what the two heatmaps show."""
    rows, columns = structure.batch * OUTS, structure.batch * INS
    limit = structure.colour_limit
    return (
        f"Two heatmaps of dy/dx for the {structure.layer} layer, batch "
        f"{structure.batch}, coloured from blue (-{limit:.2f}) through white (0) to red "
        f"(+{limit:.2f}). Left: tape.jacobian, shape {structure.full.shape}, drawn as a "
        f"{rows} by {columns} matrix of {structure.batch} by {structure.batch} blocks; "
        f"it is {structure.blocks_in_words} (largest cross-example entry "
        f"{structure.cross_example_max:.6f}). Right: tape.batch_jacobian, shape "
        f"{structure.batch_jacobian.shape}, drawn on the diagonal blocks; {structure.verdict}."
    )


def colours(matrix: np.ndarray, limit: float) -> list[list[str | None]]:
    """Each entry's colour on the picture's scale (matplotlib's RdBu_r from -limit to
    +limit) as "#rrggbb"; None where the matrix is blank (NaN)."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    scale = colormaps["RdBu_r"]
    return [
        [None if np.isnan(v) else to_hex(scale((v + limit) / (2 * limit))) for v in row]
        for row in matrix
    ]


def view_payload(structure: JacobianStructure) -> dict:
    """What the front end draws for one view: colours, titles, text alternative, readout."""
    limit = structure.colour_limit
    return {
        "layer": structure.layer,
        "batch": structure.batch,
        "title": f"{structure.layer}: {LAYERS[structure.layer]}",
        "panels": [
            {
                "title": f"tape.jacobian {structure.full.shape}",
                "colours": colours(structure.as_matrix(), limit),
            },
            {
                "title": f"tape.batch_jacobian {structure.batch_jacobian.shape}",
                "colours": colours(structure.batch_jacobian_matrix(), limit),
            },
        ],
        "scale": [f"-{limit:.2f}", "0", f"+{limit:.2f}"],
        "alt": alt_text(structure),
        "readout": render_html(structure),
    }


@functools.cache
def all_views() -> dict:
    """Every view (each layer, each batch size), computed with the tape once per kernel."""
    return {
        f"{layer}/{batch}": view_payload(jacobian_structure(layer, batch))
        for layer in LAYERS
        for batch in range(BATCH_MIN, BATCH_MAX + 1)
    }


@functools.cache
def _widget_class():
    import anywidget
    import traitlets

    class JacobianHeatmapWidget(anywidget.AnyWidget):
        """The front end of :class:`JacobianHeatmap` (``static/jacobian_heatmap.js``)."""

        _esm = module_source("jacobian_heatmap")
        _css = style_sheet()
        layers = traitlets.List().tag(sync=True)
        batches = traitlets.List().tag(sync=True)
        views = traitlets.Dict().tag(sync=True)
        layer = traitlets.Unicode().tag(sync=True)
        batch = traitlets.Int().tag(sync=True)

    return JacobianHeatmapWidget


class JacobianHeatmap(WidgetDisplay):
    """Choose the layer, set the batch size, compare jacobian and batch_jacobian (lesson 05).

    ``layer`` must be one of :data:`LAYERS` (else ``ValueError``); ``batch`` is
    clamped to 2..6. Every view is computed with the tape before the widget is shown;
    the front end (``static/jacobian_heatmap.js``) draws it: radio buttons for the
    layer, a number input for the batch size (arrow keys step by 1), the two heatmaps
    on a canvas with their text alternative, and the readout. :meth:`show` changes the
    view from Python.
    """

    def __init__(self, layer: str = "independent", batch: int = 3):
        layer, batch = check_layer(layer), clamp_batch(batch)
        self.widget = _widget_class()(
            layers=list(LAYERS),
            batches=list(range(BATCH_MIN, BATCH_MAX + 1)),
            views=all_views(),
            layer=layer,
            batch=batch,
        )
        self.widget.add_class("jacobian-heatmap")

    @property
    def structure(self) -> JacobianStructure:
        """The Jacobians now shown."""
        return jacobian_structure(self.widget.layer, self.widget.batch)

    def show(self, layer: str | None = None, batch: int | None = None) -> None:
        """Show another view (``None``: keep that setting)."""
        layer = check_layer(self.widget.layer if layer is None else layer)
        batch = clamp_batch(self.widget.batch if batch is None else batch)
        with self.widget.hold_sync():
            self.widget.layer, self.widget.batch = layer, batch

    def text_summary(self) -> str:
        return render_text(self.structure)

    def static_html(self) -> str:
        structure = self.structure
        return still_html(
            "jacobian-heatmap",
            "Jacobian heatmap",
            f"layer {structure.layer}, batch {structure.batch}",
            image_html(render_png(structure), alt_text(structure)) + render_html(structure),
        )
