"""The log1pexp explorer's state and wording (lesson 03), without TensorFlow.

The state is the explorer's single source of truth: these tests pin how it
checks, clamps and changes, and how the explorer writes numbers and places.
"""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_course.widgets.log1pexp import DEFAULT_READOUT_X
from autodiff_course.widgets.log1pexp import DEFAULT_X_RANGE
from autodiff_course.widgets.log1pexp import METHODS
from autodiff_course.widgets.log1pexp import X_BOUNDS
from autodiff_course.widgets.log1pexp import ExplorerState
from autodiff_course.widgets.log1pexp.wording import format_number

OPENING = ExplorerState(
    dtype="float32",
    x_range=(-20.0, 100.0),
    methods=METHODS,
    quantity="gradient",
    readout_x=88.5,
)


def test_the_default_state_is_the_float32_opening_view():
    assert ExplorerState() == OPENING == ExplorerState.default("float32")
    assert ExplorerState(x_range=None, readout_x=None) == OPENING
    assert OPENING.bounds == X_BOUNDS["float32"] and OPENING.step == 0.1


@pytest.mark.parametrize(
    "given, stored",
    [
        (
            {"dtype": np.float64},
            {
                "dtype": "float64",
                "x_range": DEFAULT_X_RANGE["float64"],
                "readout_x": DEFAULT_READOUT_X["float64"],
            },
        ),
        ({"x_range": (100, -20)}, {"x_range": (-20.0, 100.0)}),
        ({"x_range": (-1e9, np.inf)}, {"x_range": X_BOUNDS["float32"]}),
        ({"x_range": [5, 5]}, {"x_range": (4.5, 5.5)}),  # widened to 10 steps
        ({"x_range": [120, 120]}, {"x_range": (119.0, 120.0)}),  # inside the bounds
        ({"readout_x": 1e9}, {"readout_x": 120.0}),
        ({"readout_x": -np.inf}, {"readout_x": -120.0}),
        ({"methods": "stable"}, {"methods": ("stable",)}),
        ({"methods": ["stable", "naive", "naive"]}, {"methods": ("naive", "stable")}),
        ({"methods": ()}, {"methods": ()}),
        (
            {"dtype": "float16", "x_range": (-100, 100), "readout_x": 20},
            {"dtype": "float16", "x_range": (-16.0, 16.0), "readout_x": 16.0},
        ),
    ],
)
def test_a_state_is_checked_and_clamped_when_built(given, stored):
    state = ExplorerState(**given)
    for name, value in stored.items():
        assert getattr(state, name) == value, name
    assert isinstance(state.x_range[0], float) and isinstance(state.readout_x, float)


@pytest.mark.parametrize(
    "given, message",
    [
        ({"dtype": "int32"}, "dtype must be 'float32', 'float64' or 'float16', not 'int32'."),
        ({"dtype": "no such type"}, "dtype must be"),
        (
            {"quantity": "third_derivative"},
            "quantity must be 'value', 'gradient', 'second_derivative' or 'relative_error'",
        ),
        ({"methods": ("naive", "magic")}, "'magic' is not one of them"),
        ({"methods": 3}, "methods must be method names, not 3."),
        ({"x_range": 5}, "x_range must be two numbers (low, high), not 5."),
        ({"x_range": "ab"}, "x_range must be two numbers"),
        ({"x_range": (1, 2, 3)}, "x_range must be two numbers"),
        ({"x_range": (1, "far")}, "each end of x_range must be a number, not 'far'."),
        ({"x_range": (np.nan, 1)}, "each end of x_range must be a number, not nan."),
        ({"readout_x": "here"}, "readout_x must be a number, not 'here'."),
    ],
)
def test_a_bad_state_says_what_was_expected(given, message):
    with pytest.raises(ValueError) as error:
        ExplorerState(**given)
    assert message in str(error.value)


def test_an_unknown_setting_is_named():
    with pytest.raises(ValueError, match="no setting 'colour'; its settings are 'dtype'"):
        OPENING.changed(colour="red")


@pytest.mark.parametrize(
    "start, changes, expected",
    [
        # a range and readout still at the opening view follow the dtype
        ({}, {"dtype": "float64"}, {"x_range": (640.0, 720.0), "readout_x": 709.7}),
        ({}, {"dtype": "float16"}, {"x_range": (-12.0, 14.0), "readout_x": 10.5}),
        # a learner's own range is kept, clamped to the new bounds
        ({"x_range": (-3.0, 5.0)}, {"dtype": "float16"}, {"x_range": (-3.0, 5.0)}),
        ({"x_range": (-100.0, 110.0)}, {"dtype": "float16"}, {"x_range": (-16.0, 16.0)}),
        ({"readout_x": 1.0}, {"dtype": "float64"}, {"readout_x": 1.0, "x_range": (640.0, 720.0)}),
        # a range given with the dtype wins
        ({}, {"dtype": "float64", "x_range": (0, 1)}, {"x_range": (0.0, 1.0)}),
        # None leaves a setting as it is; the same dtype changes nothing
        (
            {"quantity": "value"},
            {"quantity": None, "dtype": "float32"},
            {"quantity": "value", "x_range": (-20.0, 100.0)},
        ),
    ],
)
def test_changed_applies_a_new_dtype_to_the_opening_view_only(start, changes, expected):
    state = OPENING.changed(**start).changed(**changes)
    for name, value in expected.items():
        assert getattr(state, name) == value, name


def test_same_curves_ignores_only_the_readout():
    assert OPENING.same_curves(OPENING) and OPENING.same_curves(OPENING.changed(readout_x=0))
    assert not OPENING.same_curves(None)
    assert not OPENING.same_curves(OPENING.changed(quantity="value"))


def test_states_are_values():
    assert OPENING.changed(readout_x=88.5) == OPENING
    assert len({OPENING, ExplorerState(), OPENING.changed(quantity="value")}) == 2
    with pytest.raises(AttributeError):
        OPENING.dtype = "float64"


@pytest.mark.parametrize(
    "value, style, kwargs, text",
    [
        (88.5, "short", {}, "88.5"),
        (1.0, "short", {}, "1.0"),
        (100, "short", {}, "100.0"),
        (2.0611536e-9, "short", {}, "2.06115e-09"),
        (-0.25, "short", {}, "-0.25"),
        (np.nan, "short", {}, "nan"),
        (np.inf, "short", {}, "inf"),
        (-np.inf, "fixed", {}, "-inf"),
        (88.72283, "fixed", {}, "88.72"),
        (-16.635532, "fixed", {"typographic": True}, "−16.64"),
        (0.0, "tick", {}, "0"),
        (-20.0, "tick", {"typographic": True}, "−20"),
        (0.25, "tick", {}, "0.25"),
        (0.0, "decade", {}, "0"),
        (1.0, "decade", {}, "1"),
        (1e-3, "decade", {"typographic": True}, "1e−3"),
        (88.5, "exact", {"dtype": "float32"}, "88.5"),
        (0.1, "exact", {"dtype": "float32"}, "0.1"),
        (np.nan, "exact", {"dtype": "float32"}, "nan"),
    ],
)
def test_one_formatter_writes_every_number(value, style, kwargs, text):
    assert format_number(value, style, **kwargs) == text


def test_an_unknown_number_style_is_refused():
    with pytest.raises(ValueError, match="unknown number style"):
        format_number(1.0, "roman")


def test_a_range_too_narrow_to_plot_is_widened_with_a_message():
    state = OPENING.changed(x_range=(88.5, 88.5))
    assert state.x_range == (88.0, 89.0)
    assert state.message == "The x range 88.5 to 88.5 is too narrow to plot; widened to 88 to 89."
    assert OPENING.changed(x_range=(0, 1)).message == ""
    assert ExplorerState(dtype="float16", x_range=(1, 1)).x_range == (0.95, 1.05)


def test_a_dtype_round_trip_restores_the_learners_range_for_each_dtype():
    own = OPENING.changed(x_range=(80.0, 90.0), readout_x=88.0)
    there = own.changed(dtype="float16")
    assert there.x_range == (15.9, 16.0)  # a range of its own, clamped and widened
    back = there.changed(x_range=(-3.0, 5.0)).changed(dtype="float32")
    assert (back.x_range, back.readout_x) == ((80.0, 90.0), 88.0)
    again = back.changed(dtype="float16")
    assert again.x_range == (-3.0, 5.0)
