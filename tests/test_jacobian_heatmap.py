"""Lesson 05's Jacobian heatmap, driven from Python like a learner's controls.

The reference Jacobians are float64 closed forms (for the independent layer) and
central differences in float64 NumPy (for the layers that mix examples), never
the tape the widget uses.
"""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_course.gradcheck import central_jacobian
from autodiff_course.widgets.jacobian_heatmap import BATCH_MAX
from autodiff_course.widgets.jacobian_heatmap import BATCH_MIN
from autodiff_course.widgets.jacobian_heatmap import BATCH_NORM_EPSILON
from autodiff_course.widgets.jacobian_heatmap import INPUTS
from autodiff_course.widgets.jacobian_heatmap import INS
from autodiff_course.widgets.jacobian_heatmap import LAYERS
from autodiff_course.widgets.jacobian_heatmap import OUTS
from autodiff_course.widgets.jacobian_heatmap import WEIGHTS
from autodiff_course.widgets.jacobian_heatmap import JacobianHeatmap
from autodiff_course.widgets.jacobian_heatmap import alt_text
from autodiff_course.widgets.jacobian_heatmap import jacobian_structure
from autodiff_course.widgets.jacobian_heatmap import layer_output
from autodiff_course.widgets.jacobian_heatmap import render_figure
from autodiff_course.widgets.jacobian_heatmap import render_png
from autodiff_course.widgets.jacobian_heatmap import render_text

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def numpy_layer(layer: str, x: np.ndarray) -> np.ndarray:
    if layer == "independent":
        return np.tanh(x @ WEIGHTS)
    if layer == "centred":
        return np.tanh((x - x.mean(axis=0, keepdims=True)) @ WEIGHTS)
    h = x @ WEIGHTS
    centred = h - h.mean(axis=0, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=0, keepdims=True) + BATCH_NORM_EPSILON)


def test_independent_layer_matches_the_closed_form_and_is_block_diagonal():
    structure = jacobian_structure("independent", 4)
    x = INPUTS[:4]
    y = np.tanh(x @ WEIGHTS)
    expected = (1.0 - y**2)[:, :, None] * WEIGHTS.T[None]
    assert structure.full.shape == (4, OUTS, 4, INS)
    assert structure.batch_jacobian.shape == (4, OUTS, INS)
    np.testing.assert_allclose(structure.diagonal_blocks, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(structure.batch_jacobian, expected, rtol=1e-5, atol=1e-6)
    assert structure.cross_example_max == 0.0
    assert structure.difference_from_diagonal < 1e-6


@pytest.mark.parametrize("layer", ["centred", "batch norm"])
def test_mixing_layers_have_cross_terms_and_batch_jacobian_sums_columns(layer):
    structure = jacobian_structure(layer, 3)
    x = INPUTS[:3]
    expected = central_jacobian(lambda v: numpy_layer(layer, v), x, h=1e-6)
    np.testing.assert_allclose(structure.full, expected, rtol=1e-3, atol=1e-4)
    assert structure.cross_example_max > 0.1
    assert structure.difference_from_diagonal > 0.1
    column_sums = expected.sum(axis=0).transpose(1, 0, 2)
    np.testing.assert_allclose(structure.batch_jacobian, column_sums, atol=1e-4)


def test_batch_norm_batch_jacobian_is_zero_because_each_column_of_outputs_sums_to_zero():
    structure = jacobian_structure("batch norm", 5)
    assert np.abs(structure.batch_jacobian).max() < 1e-5
    assert np.abs(structure.diagonal_blocks).max() > 0.1


def test_text_summary_states_the_numbers_and_the_verdict():
    independent = render_text(jacobian_structure("independent", 3))
    assert independent.startswith("Jacobian heatmap: layer = independent, batch = 3.")
    assert "jacobian shape (3, 2, 3, 3), batch_jacobian shape (3, 2, 3)" in independent
    assert "block-diagonal" in independent and "NOT" not in independent
    mixing = render_text(jacobian_structure("centred", 3))
    assert "NOT block-diagonal" in mixing and "does NOT equal the diagonal blocks" in mixing


def test_alt_text_states_what_the_heatmaps_show():
    independent = alt_text(jacobian_structure("independent", 3))
    assert independent.startswith("Two heatmaps of dy/dx for the independent layer, batch 3")
    assert "tape.jacobian, shape (3, 2, 3, 3), drawn as a 6 by 9 matrix" in independent
    assert "it is block-diagonal" in independent
    mixing = alt_text(jacobian_structure("centred", 4))
    assert "NOT block-diagonal" in mixing and "sums each column of blocks" in mixing


def test_changing_the_controls_updates_image_readout_and_text():
    heatmap = JacobianHeatmap()
    before = heatmap._repr_mimebundle_()
    heatmap.show(layer="centred")
    assert heatmap.structure.layer == "centred"
    heatmap.show(batch=5)
    assert heatmap.structure.batch == 5 and heatmap.structure.full.shape == (5, 2, 5, 3)
    after = heatmap._repr_mimebundle_()
    assert before["text/plain"] != after["text/plain"] and before["text/html"] != after["text/html"]
    view = heatmap.widget.views["centred/5"]
    assert "data-layer='centred'" in view["readout"]
    assert view["alt"].startswith("Two heatmaps of dy/dx for the centred layer, batch 5")
    assert "<img src='data:image/png;base64," in after["text/html"]


def test_every_control_value_renders_without_an_exception():
    heatmap = JacobianHeatmap(batch=100)
    assert heatmap.widget.layer == "independent" and heatmap.widget.batch == BATCH_MAX
    assert heatmap.widget.batches == list(range(BATCH_MIN, BATCH_MAX + 1))
    assert set(heatmap.widget.views) == {
        f"{layer}/{b}" for layer in LAYERS for b in heatmap.widget.batches
    }
    for layer in LAYERS:
        for batch in range(BATCH_MIN, BATCH_MAX + 1):
            heatmap.show(layer, batch)
            assert np.all(np.isfinite(heatmap.structure.full)), (layer, batch)
            assert heatmap.structure.difference_from_column_sums < 1e-4, (layer, batch)


def test_rendering_is_repeatable_and_leaves_pyplot_alone():
    import matplotlib.pyplot as plt

    structure = jacobian_structure("centred", 3)
    figures_before = plt.get_fignums()
    png = render_png(structure)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png == render_png(structure)
    render_figure(structure)
    assert plt.get_fignums() == figures_before


def test_display_bundle_has_the_widget_a_still_picture_and_plain_text(display_bundle):
    heatmap = JacobianHeatmap(layer="centred")
    bundle = display_bundle(heatmap)
    assert "layer = centred" in bundle["text/plain"]
    assert "Jacobian heatmap, still picture (layer centred, batch 3)" in bundle["text/html"]
    assert heatmap.widget.views["centred/3"]["readout"] in bundle["text/html"]


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: jacobian_structure("dropout", 3),
            "layer must be one of 'independent', 'centred', 'batch norm', not 'dropout'.",
        ),
        (lambda: JacobianHeatmap(layer="not a layer"), "layer must be one of"),
        (lambda: JacobianHeatmap(batch=2.5), "batch must be a whole number, not 2.5."),
        (lambda: jacobian_structure("centred", "many"), "batch must be a whole number"),
        (lambda: layer_output("dropout", np.zeros((2, INS), np.float32)), "layer must be one of"),
    ],
)
def test_bad_settings_are_refused_in_plain_words(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert message in str(error.value)
