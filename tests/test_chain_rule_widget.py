"""Lesson 01's chain-rule explorer, driven from Python like a learner's slider."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_course.widgets.chain_rule import X_MAX, X_MIN, ChainRuleExplorer, chain_rule_values


def reference(x: float) -> dict:
    output = np.logaddexp(0.0, x)
    local = 1.0 / (1.0 + np.exp(-x))
    return {"output": output, "local_derivative": local, "dy": 2 * output,
            "chain_rule": 2 * output * local}


@pytest.mark.parametrize("x", [X_MIN, -2.5, 0.0, 1.0, 3.25, X_MAX])
def test_values_match_float64_closed_forms(x):
    values = chain_rule_values(x)
    expected = reference(x)
    for name, value in expected.items():
        assert getattr(values, name) == pytest.approx(value, rel=2e-6, abs=1e-7), name
    assert values.tape_loss_gradient == pytest.approx(expected["chain_rule"], rel=2e-6, abs=1e-7)
    assert values.tape_output_gradients == pytest.approx(expected["chain_rule"], rel=2e-6,
                                                         abs=1e-7)
    assert values.agree


def test_moving_the_slider_updates_readout_and_text():
    explorer = ChainRuleExplorer(x=1.0)
    before_html = explorer.readout.value
    before_text = explorer._repr_mimebundle_()["text/plain"]
    explorer.slider.value = -3.0
    assert explorer.values.x == -3.0
    assert explorer.readout.value != before_html
    assert "data-x='-3.00'" in explorer.readout.value
    text = explorer._repr_mimebundle_()["text/plain"]
    assert text != before_text and text.startswith("Chain-rule explorer at x = -3.00:")
    assert f"{reference(-3.0)['chain_rule']:.6f}" in text


def test_slider_clamps_out_of_range_start_and_every_allowed_value_renders():
    explorer = ChainRuleExplorer(x=1e6)
    assert explorer.slider.value == X_MAX
    for x in np.arange(X_MIN, X_MAX + 1e-9, explorer.slider.step):
        explorer.slider.value = float(x)
        assert explorer.values.agree, x
        assert "DISAGREE" not in explorer.readout.value


def test_display_bundle_has_a_widget_view_and_a_plain_text_summary():
    bundle = ChainRuleExplorer()._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    assert "(agree)" in bundle["text/plain"]
