"""Lesson 01's chain-rule explorer, driven from Python like a learner's x input."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_course.widgets.chain_rule import X_MAX
from autodiff_course.widgets.chain_rule import X_MIN
from autodiff_course.widgets.chain_rule import ChainRuleExplorer
from autodiff_course.widgets.chain_rule import chain_rule_values

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def reference(x: float) -> dict:
    output = np.logaddexp(0.0, x)
    local = 1.0 / (1.0 + np.exp(-x))
    return {
        "output": output,
        "local_derivative": local,
        "dy": 2 * output,
        "chain_rule": 2 * output * local,
    }


@pytest.mark.parametrize("x", [X_MIN, -2.5, 0.0, 1.0, 3.25, X_MAX])
def test_values_match_float64_closed_forms(x):
    values = chain_rule_values(x)
    expected = reference(x)
    for name, value in expected.items():
        assert getattr(values, name) == pytest.approx(value, rel=2e-6, abs=1e-7), name
    assert values.tape_loss_gradient == pytest.approx(expected["chain_rule"], rel=2e-6, abs=1e-7)
    assert values.tape_output_gradients == pytest.approx(expected["chain_rule"], rel=2e-6, abs=1e-7)
    assert values.agree


def test_changing_x_updates_readout_and_text():
    explorer = ChainRuleExplorer(x=1.0)
    before_html = explorer.readout_html()
    before_text = explorer._repr_mimebundle_()["text/plain"]
    explorer.set_x(-3.0)
    assert explorer.values.x == -3.0
    assert explorer.readout_html() != before_html
    assert "data-x='-3.00'" in explorer.readout_html()
    assert explorer.widget.readouts[explorer.widget.index] == explorer.readout_html()
    text = explorer._repr_mimebundle_()["text/plain"]
    assert text != before_text and text.startswith("Chain-rule explorer at x = -3.00:")
    assert f"{reference(-3.0)['chain_rule']:.6f}" in text


@pytest.mark.parametrize("x, shown", [(1e6, X_MAX), (-np.inf, X_MIN), ("2.5", 2.5)])
def test_the_opening_x_is_clamped(x, shown):
    explorer = ChainRuleExplorer(x=x)
    assert explorer.widget.points[explorer.widget.index] == shown == explorer.values.x


@pytest.mark.parametrize("x", ["one", np.nan, None])
def test_an_x_that_is_no_number_is_refused_in_plain_words(x):
    with pytest.raises(ValueError, match="x must be a number"):
        ChainRuleExplorer(x=x)


def test_every_value_the_input_allows_renders_and_agrees():
    explorer = ChainRuleExplorer()
    points = explorer.widget.points
    assert (points[0], points[-1]) == (X_MIN, X_MAX)
    np.testing.assert_allclose(np.diff(points), 0.25)
    for index, x in enumerate(points):
        explorer.set_x(x)
        assert explorer.widget.index == index
        assert explorer.values.agree, x
        assert "DISAGREE" not in explorer.widget.readouts[index]


def test_display_bundle_has_the_widget_a_still_picture_and_plain_text(display_bundle):
    explorer = ChainRuleExplorer()
    bundle = display_bundle(explorer)
    assert "(agree)" in bundle["text/plain"]
    assert "Chain-rule explorer, still picture (x = 1.00)" in bundle["text/html"]
    assert explorer.readout_html() in bundle["text/html"]
