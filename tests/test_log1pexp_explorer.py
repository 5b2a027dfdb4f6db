"""The log1pexp explorer (lesson 03), driven from Python like a learner's controls.

Every number the explorer plots is compared with an independent reference:
float64 NumPy closed forms (``np.logaddexp``, the sigmoid), the float format's
limits from ``np.finfo``, and for the documented rule's cancellation a NumPy
float32 replay of ``1 - 1/(1 + e)``.
"""

from __future__ import annotations

import html.parser
import io
import itertools
import warnings

import numpy as np
import pytest

from autodiff_course import log1pexp as numerics
from autodiff_course.widgets.log1pexp import CSS_CLASSES
from autodiff_course.widgets.log1pexp import DEFAULT_READOUT_X
from autodiff_course.widgets.log1pexp import DEFAULT_X_RANGE
from autodiff_course.widgets.log1pexp import DTYPES
from autodiff_course.widgets.log1pexp import METHODS
from autodiff_course.widgets.log1pexp import QUANTITIES
from autodiff_course.widgets.log1pexp import X_BOUNDS
from autodiff_course.widgets.log1pexp import ExplorerFigure
from autodiff_course.widgets.log1pexp import ExplorerState
from autodiff_course.widgets.log1pexp import Log1pexpExplorer
from autodiff_course.widgets.log1pexp import data
from autodiff_course.widgets.log1pexp import render_png

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def sigmoid64(x):
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def reference64(quantity, x):
    x = np.asarray(x, dtype=np.float64)
    if quantity == "value":
        return np.logaddexp(0.0, x)
    if quantity == "gradient":
        return sigmoid64(x)
    return sigmoid64(x) * sigmoid64(-x)


@pytest.fixture(scope="module")
def explorer():
    return Log1pexpExplorer()


def show(
    explorer, dtype="float32", x_range=None, methods=METHODS, quantity="gradient", readout_x=None
):
    """Put ``explorer`` in a fully specified state (tests share one explorer)."""
    explorer.set_state(
        dtype=dtype,
        x_range=x_range or DEFAULT_X_RANGE[dtype],
        methods=methods,
        quantity=quantity,
        readout_x=DEFAULT_READOUT_X[dtype] if readout_x is None else readout_x,
    )
    return explorer.plotted_data()


def controls_show(explorer, state: ExplorerState) -> bool:
    """Every control displays ``state`` (they are written from it)."""
    return (
        explorer.dtype_choice.value == state.dtype
        and explorer.quantity_choice.value == state.quantity
        and tuple(m for m, box in explorer.method_checkboxes.items() if box.value) == state.methods
        and (explorer.x_from_input.value, explorer.x_to_input.value) == state.x_range
        and explorer.readout_x_input.value == state.readout_x
        and all(
            (box.min, box.max) == state.bounds and box.step == state.step
            for box in (explorer.x_from_input, explorer.x_to_input, explorer.readout_x_input)
        )
    )


# -- the float format's limits ------------------------------------------------


@pytest.mark.parametrize(
    "dtype, overflow, flush_start",
    [
        ("float32", 88.7228, 87.3365),
        ("float64", 709.7827, 708.3964),
        ("float16", 11.0899, 9.7040),
    ],
)
def test_thresholds_come_from_finfo(dtype, overflow, flush_start):
    limits = numerics.thresholds(dtype)
    info = np.finfo(dtype)
    assert limits.overflow == pytest.approx(np.log(float(info.max)))
    assert limits.overflow == pytest.approx(overflow, abs=1e-4)
    assert limits.flush_start == pytest.approx(flush_start, abs=1e-4)
    assert limits.cancellation == pytest.approx(np.log(float(info.eps) / 2))
    # Just inside the band 1/(1+e^x) is below the smallest normal number.
    inside = limits.flush_start + 0.01
    assert 1.0 / (1.0 + np.exp(inside)) < float(info.smallest_normal)
    assert 1.0 / (1.0 + np.exp(limits.flush_start - 0.01)) > float(info.smallest_normal)


# -- the default view ---------------------------------------------------------


def test_default_view_is_float32_gradient_with_readout_in_the_silent_band():
    fresh = Log1pexpExplorer()
    state = fresh.state
    assert state == ExplorerState()
    assert controls_show(fresh, state)
    limits = numerics.thresholds("float32")
    assert limits.flush_start < state.readout_x < limits.overflow
    assert fresh.x_to_input.max > limits.overflow
    readout = fresh.readout_values()
    assert readout.methods["naive"]["gradient"] == 0.0  # silently wrong
    assert readout.methods["documented"]["gradient"] == 1.0
    assert readout.methods["stable"]["gradient"] == 1.0
    assert readout.reference["gradient"] == pytest.approx(1.0)
    assert fresh.render_count == 1
    assert fresh.png.startswith(b"\x89PNG\r\n\x1a\n")


def test_plotted_points_are_the_grid_in_the_chosen_dtype(explorer):
    plotted = show(explorer)
    expected = np.linspace(-20.0, 100.0, 400).astype(np.float32).astype(np.float64)
    for series in plotted.values():
        np.testing.assert_array_equal(series.x, expected)
        # nothing is dropped: every point is finite or flagged as nan / inf
        covered = series.finite | series.nan | series.posinf | series.neginf
        assert covered.all()


# -- the float32 story --------------------------------------------------------


def test_naive_gradient_is_silently_zero_in_the_band_and_nan_beyond(explorer):
    naive = show(explorer)["naive"]
    band = (naive.x >= 87.4) & (naive.x <= 88.7)
    assert band.sum() >= 3
    assert (naive.y[band] == 0.0).all()
    assert naive.zero[band].all()
    beyond = naive.x >= 88.8
    assert beyond.sum() >= 30
    assert np.isnan(naive.y[beyond]).all() and naive.nan[beyond].all()
    assert not naive.nan[~beyond].any()
    # Below the band the naive gradient is right, to float32 precision for moderate
    # x and to about 1e-4 as 1/(1+e^x) approaches the smallest normal number.
    moderate, near = naive.x < 60.0, (naive.x >= 60.0) & (naive.x < 87.3)
    np.testing.assert_allclose(
        naive.y[moderate], reference64("gradient", naive.x[moderate]), rtol=1e-6, atol=1e-12
    )
    np.testing.assert_allclose(naive.y[near], 1.0, rtol=1e-3)


def test_naive_gradient_is_accurate_far_left(explorer):
    show(explorer, readout_x=-20.0)
    naive = explorer.readout_values().methods["naive"]["gradient"]
    assert naive == pytest.approx(2.0611536e-9, rel=1e-6)
    assert naive == pytest.approx(sigmoid64(np.float32(-20.0)), rel=1e-6)


def test_documented_rule_at_100_has_gradient_one_but_value_inf(explorer):
    show(explorer, readout_x=100.0)
    documented = explorer.readout_values().methods["documented"]
    assert documented["gradient"] == pytest.approx(1.0)
    assert documented["value"] == np.inf
    assert np.isnan(documented["second_derivative"])
    values = show(explorer, quantity="value", readout_x=100.0)["documented"]
    overflowed = values.x > numerics.thresholds("float32").overflow
    assert values.posinf[overflowed].all() and not values.finite[overflowed].any()


def test_second_derivative_of_documented_rule_is_nan_at_100(explorer):
    plotted = show(explorer, quantity="second_derivative", x_range=(95.0, 105.0), readout_x=100.0)
    assert plotted["documented"].nan.all()
    assert np.isnan(explorer.readout_values().methods["documented"]["second_derivative"])
    # and where nothing overflows, nested tapes agree with the closed form
    plotted = show(explorer, quantity="second_derivative", x_range=(-8.0, 8.0))
    for series in plotted.values():
        np.testing.assert_allclose(
            series.y, reference64("second_derivative", series.x), rtol=1e-4, atol=1e-7
        )


def float32_documented_error(x):
    """An independent replay of the documented rule in NumPy float32."""
    x32 = np.float32(x)
    one = np.float32(1)
    gradient = one - one / (one + np.exp(x32))
    return abs(float(gradient) - sigmoid64(x32)) / sigmoid64(x32)


@pytest.mark.parametrize("x, low, high", [(-10.0, 4.0e-4, 5.2e-4), (-15.0, 0.15, 0.19)])
def test_documented_rule_cancels_for_negative_x(explorer, x, low, high):
    show(explorer, quantity="relative_error", x_range=(-25.0, 5.0), readout_x=x)
    error = explorer.readout_values().methods["documented"]["relative_error"]
    assert low < error < high
    assert error == pytest.approx(float32_documented_error(x), rel=0.05)


def test_documented_gradient_is_exactly_zero_below_minus_17(explorer):
    plotted = show(explorer, quantity="relative_error", x_range=(-25.0, 5.0), readout_x=-15.0)
    documented = plotted["documented"]
    far = documented.x <= -17.0
    assert far.sum() > 50
    assert (documented.y[far] == 1.0).all()  # 100 % relative error
    assert documented.zero[far].all()  # because the gradient is 0.0
    gradient = show(explorer, x_range=(-25.0, 5.0))["documented"]
    assert (gradient.y[gradient.x <= -17.0] == 0.0).all()


@pytest.mark.parametrize(
    "dtype, quantity", list(itertools.product(["float32", "float64"], ["value", "gradient"]))
)
def test_stable_rule_agrees_with_float64_everywhere(explorer, dtype, quantity):
    # within a few dozen units in the last place (float64's softplus is off by up
    # to about 15 near x = -33), and exact zeros only below the smallest normal
    eps, tiny = float(np.finfo(dtype).eps), float(np.finfo(dtype).smallest_normal)
    stable = show(explorer, dtype=dtype, x_range=X_BOUNDS[dtype], quantity=quantity)["stable"]
    assert stable.finite.all()
    np.testing.assert_allclose(stable.y, reference64(quantity, stable.x), rtol=32 * eps, atol=tiny)


# -- the float64 story --------------------------------------------------------


def test_float64_naive_gradient_is_zero_at_709_7_and_nan_from_709_8(explorer):
    naive = show(explorer, dtype="float64")["naive"]
    assert explorer.x_to_input.max > 709.8
    band = (naive.x >= 708.5) & (naive.x <= 709.7)
    assert band.sum() >= 3 and (naive.y[band] == 0.0).all()
    assert np.isnan(naive.y[naive.x >= 709.8]).all()
    assert explorer.readout_values().x == 709.7
    assert explorer.readout_values().methods["naive"]["gradient"] == 0.0
    explorer.readout_x_input.value = 709.8
    assert np.isnan(explorer.readout_values().methods["naive"]["gradient"])
    assert explorer.readout_values().methods["stable"]["gradient"] == 1.0


# -- controls and state -------------------------------------------------------


def test_a_new_dtype_moves_the_bounds_and_the_opening_views():
    fresh = Log1pexpExplorer()
    fresh.dtype_choice.value = "float64"
    assert fresh.state == ExplorerState(dtype="float64") and controls_show(fresh, fresh.state)
    assert fresh.render_count == 2  # one render per change
    fresh.dtype_choice.value = "float16"
    assert fresh.state == ExplorerState(dtype="float16") and controls_show(fresh, fresh.state)
    fresh.x_from_input.value = -3.0  # a range of the learner's own
    fresh.x_to_input.value = 5.0
    fresh.dtype_choice.value = "float32"
    assert fresh.state.x_range == (-3.0, 5.0)  # kept: it fits
    fresh.set_state(x_range=(-100.0, 110.0))
    fresh.dtype_choice.value = "float16"
    assert fresh.state.x_range == (-16.0, 16.0)  # clamped to the new bounds
    assert controls_show(fresh, fresh.state)
    assert fresh.render_count == 8  # one render per change, always


@pytest.mark.parametrize(
    "control, value, expected",
    [
        ("x_from_input", 50.0, {"x_range": (50.0, 100.0)}),
        ("x_from_input", 110.0, {"x_range": (100.0, 110.0)}),  # a reversed range is sorted
        ("x_to_input", -30.0, {"x_range": (-30.0, -20.0)}),
        ("x_to_input", 1e9, {"x_range": (-20.0, 120.0)}),  # the input clamps it
        ("readout_x_input", -1e9, {"readout_x": -120.0}),
        ("quantity_choice", "relative_error", {"quantity": "relative_error"}),
        ("dtype_choice", "float64", {"dtype": "float64", "x_range": (640.0, 720.0)}),
    ],
)
def test_a_control_change_becomes_a_new_state_and_the_controls_follow_it(control, value, expected):
    fresh = Log1pexpExplorer(num_points=40)
    getattr(fresh, control).value = value
    for name, number in expected.items():
        assert getattr(fresh.state, name) == number, name
    assert controls_show(fresh, fresh.state)
    assert fresh.render_count == 2


def test_ticking_a_method_changes_only_that_method():
    fresh = Log1pexpExplorer(methods=("naive", "stable"), num_points=40)
    fresh.method_checkboxes["documented"].value = True
    assert fresh.state.methods == METHODS
    fresh.method_checkboxes["naive"].value = False
    assert fresh.state.methods == ("documented", "stable")
    assert set(fresh.plotted_data()) == {"documented", "stable"}


def test_set_state_renders_once_and_only_when_something_changed(explorer):
    show(explorer)
    count = explorer.render_count
    explorer.set_state(dtype="float32", quantity="gradient", readout_x=88.5)
    assert explorer.render_count == count
    explorer.set_state(quantity="value", x_range=(0.0, 10.0), methods=("naive",))
    assert explorer.render_count == count + 1
    assert controls_show(explorer, explorer.state)


def test_keyword_arguments_set_and_clamp_the_opening_state():
    custom = Log1pexpExplorer(
        dtype="float64",
        x_range=(800.0, -800.0),
        methods=("stable",),
        quantity="value",
        readout_x=1e9,
    )
    assert custom.state == ExplorerState(
        dtype="float64",
        x_range=X_BOUNDS["float64"],
        methods=("stable",),
        quantity="value",
        readout_x=X_BOUNDS["float64"][1],
    )
    assert controls_show(custom, custom.state)
    assert set(custom.plotted_data()) == {"stable"}


@pytest.mark.parametrize(
    "bad",
    [
        {"dtype": "int32"},
        {"quantity": "third_derivative"},
        {"methods": ("naive", "magic")},
        {"x_range": (0, "far")},
    ],
)
def test_bad_settings_are_refused_in_plain_words(explorer, bad):
    with pytest.raises(ValueError, match="must be|not one of them"):
        Log1pexpExplorer(**bad)
    before = explorer.state
    with pytest.raises(ValueError):
        explorer.set_state(**bad)
    assert explorer.state == before and controls_show(explorer, before)


def every_extreme(dtype):
    low, high = X_BOUNDS[dtype]
    ranges = [
        (low, high),
        (low, low),
        (high, high),
        (0.0, 0.0),
        (low, low + 0.1),
        (high - 0.1, high),
        (-1e-3, 1e-3),
    ]
    return ranges, [low, high, 0.0]


def test_every_control_extreme_renders_without_warnings():
    corner = Log1pexpExplorer()
    subsets = [
        subset
        for size in range(len(METHODS) + 1)
        for subset in itertools.combinations(METHODS, size)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in DTYPES:
            ranges, readouts = every_extreme(dtype)
            for quantity, methods in itertools.product(QUANTITIES, subsets):
                corner.set_state(
                    dtype=dtype,
                    quantity=quantity,
                    methods=methods,
                    x_range=ranges[0],
                    readout_x=readouts[0],
                )
                assert set(corner.plotted_data()) == set(methods)
                assert corner.text_summary() and corner.alt_text()
            for quantity in QUANTITIES:
                corner.set_state(methods=METHODS, quantity=quantity)
                for low, high in ranges:  # ends, zero width
                    # typed in the order a learner would: the end that moves out first
                    inputs = [(corner.x_from_input, low), (corner.x_to_input, high)]
                    if low > corner.state.x_range[1]:
                        inputs.reverse()
                    for control, value in inputs:
                        control.value = value
                    assert corner.state.x_range == (low, high)
                for value in readouts:
                    corner.readout_x_input.value = value
                    assert corner.state.readout_x == value
                assert controls_show(corner, corner.state)
            for checkbox in corner.method_checkboxes.values():
                checkbox.value = not checkbox.value
                checkbox.value = not checkbox.value
    assert corner.png.startswith(b"\x89PNG")


def test_a_zero_width_range_still_shows_its_points(explorer):
    plotted = show(explorer, x_range=(88.5, 88.5))
    for series in plotted.values():
        assert series.x.size == 400 and (series.x == 88.5).all()
    assert (plotted["naive"].y == 0.0).all()


def test_no_method_selected_renders_an_empty_plot_and_says_so(explorer):
    assert show(explorer, methods=()) == {}
    assert "No method selected." in explorer.text_summary()
    assert "No method is shown." in explorer.alt_text()
    assert "No method is selected" in explorer.readout_html.value
    assert explorer.readout_values().methods == {}


def test_curves_are_cached_per_grid_and_per_point(explorer):
    show(explorer)
    grid, point = data.grid_curves.cache_info(), data.point_curves.cache_info()
    show(explorer, quantity="value")  # same grid, same readout point
    assert data.grid_curves.cache_info().hits > grid.hits
    assert data.point_curves.cache_info().hits > point.hits
    assert not data.grid_curves(*("float32", -20.0, 100.0, 400)).x.flags.writeable
    data.clear_caches()
    assert data.grid_curves.cache_info().currsize == data.point_curves.cache_info().currsize == 0


def test_a_text_placed_nowhere_is_not_drawn():
    figure = ExplorerFigure()
    render_png(figure=figure)
    stray = figure._text(np.nan, np.nan, "nowhere", transform=figure.figure.transFigure)
    before = figure.figure.canvas.buffer_rgba().tobytes()
    stray.draw(figure.figure.canvas.get_renderer())
    assert figure.figure.canvas.buffer_rgba().tobytes() == before


# -- what is shown: text, readout, picture ------------------------------------


class DataAttributes(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.found, self.images = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs)
        if any(key.startswith("data-") for key in attrs):
            self.found.append(attrs)


def parse(markup: str) -> DataAttributes:
    parser = DataAttributes()
    parser.feed(markup)
    return parser


def readout_attributes(explorer):
    found = parse(explorer.readout_html.value).found
    return found[0], {row["data-method"]: row for row in found[1:]}


def test_readout_html_carries_machine_readable_values(explorer):
    show(explorer)
    outer, rows = readout_attributes(explorer)
    assert outer["data-x"] == "88.5" and outer["data-dtype"] == "float32"
    assert outer["data-quantity"] == "gradient"
    assert outer["data-methods"] == "naive documented stable"
    assert outer["data-naive-gradient"] == "0.0" and outer["data-stable-gradient"] == "1.0"
    assert rows["naive"]["data-gradient"] == "0.0"
    assert rows["documented"]["data-value"] == "88.5"
    explorer.readout_x_input.value = 100.0
    outer, rows = readout_attributes(explorer)
    assert outer["data-x"] == "100.0"
    assert outer["data-naive-value"] == "inf" and outer["data-naive-gradient"] == "nan"
    assert rows["documented"]["data-value"] == "inf"
    assert rows["documented"]["data-gradient"] == "1.0"
    assert ">nan<" in explorer.readout_html.value and ">inf<" in explorer.readout_html.value
    assert int(outer["data-render-count"]) == explorer.render_count


@pytest.mark.parametrize(
    "control, value",
    [
        ("readout_x_input", -10.0),
        ("quantity_choice", "value"),
        ("x_from_input", -30.0),
        ("x_to_input", 30.0),
        ("dtype_choice", "float64"),
    ],
)
def test_every_control_changes_the_summary_the_alt_text_and_the_readout(explorer, control, value):
    show(explorer)
    before = (explorer.text_summary(), explorer.alt_text(), explorer.readout_html.value)
    getattr(explorer, control).value = value
    after = (explorer.text_summary(), explorer.alt_text(), explorer.readout_html.value)
    assert all(a != b for a, b in zip(before, after))


def test_unticking_a_method_changes_the_summary_and_the_alt_text(explorer):
    show(explorer)
    before = (explorer.text_summary(), explorer.alt_text())
    explorer.method_checkboxes["naive"].value = False
    assert "naive autodiff:" not in explorer.text_summary()
    assert "naive autodiff:" not in explorer.alt_text()
    assert (explorer.text_summary(), explorer.alt_text()) != before


def test_text_summary_states_the_story(explorer):
    show(explorer)
    text = explorer._repr_mimebundle_()["text/plain"]
    assert text.startswith(
        "log1pexp explorer (float32): gradient of log(1 + e^x), "
        "x from -20.00 to 100.00 (400 points)."
    )
    assert "exp(x) overflows for x > 88.72" in text
    assert "below the smallest normal float for x > 87.34" in text
    assert (
        "naive autodiff: nan from x = 88.87 (38 points); silent 0.0 for x in "
        "[87.37, 88.57] (5 points)." in text
    )
    assert "stable rule: no nan, no inf, no silent 0.0." in text
    assert "Readout at x = 88.5: naive autodiff value 88.5, gradient 0.0;" in text
    assert "0x" not in text


def test_the_plot_says_in_words_what_it_shows(explorer):
    show(explorer)
    (image,) = parse(explorer.plot.value).images
    assert image["alt"] == explorer.alt_text()
    assert (image["width"], image["height"]) == ("640", "420")
    assert image["src"].startswith("data:image/png;base64,")
    alt = explorer.alt_text()
    assert alt.startswith(
        "Plot of the float32 gradient of log(1 + e^x) for x from -20.00 to 100.00."
    )
    assert "naive autodiff: nan from x = 88.87; silent 0.0 for x in [87.37, 88.57]." in alt
    assert "a dashed line at x = 88.72, where exp(x) overflows" in alt
    assert "a shaded band from x = 87.34" in alt
    assert "the readout line at x = 88.5" in alt
    show(explorer, quantity="relative_error", x_range=(-25.0, 5.0))
    assert "(symmetric log scale)" in explorer.alt_text()
    assert "shaded band" not in explorer.alt_text()


def test_display_bundle_has_the_widget_a_still_picture_and_plain_text(explorer, display_bundle):
    show(explorer)
    bundle = display_bundle(explorer)
    still = parse(bundle["text/html"])
    (image,) = still.images
    assert image["alt"] == explorer.alt_text()
    assert (
        "still picture (dtype float32; plot gradient; methods: naive autodiff, "
        "documented rule, stable rule; x from -20.00 to 100.00; readout x = 88.5)"
        in bundle["text/html"]
    )
    assert still.found[0]["data-naive-gradient"] == "0.0"
    # the same view gives the same bytes: nbval compares this output
    assert Log1pexpExplorer()._repr_mimebundle_()["text/html"].replace(
        "data-render-count='1'", ""
    ) == bundle["text/html"].replace(f"data-render-count='{explorer.render_count}'", "")


def test_controls_and_outputs_carry_css_classes(explorer):
    elements = {
        "explorer": explorer.widget,
        "dtype": explorer.dtype_choice,
        "quantity": explorer.quantity_choice,
        "methods": explorer.methods_box,
        "range": explorer.range_box,
        "x_from": explorer.x_from_input,
        "x_to": explorer.x_to_input,
        "readout_x": explorer.readout_x_input,
        "plot": explorer.plot,
        "readout": explorer.readout_html,
    }
    assert set(elements) == set(CSS_CLASSES)
    for key, element in elements.items():
        assert CSS_CLASSES[key] in element._dom_classes
    for method, box in explorer.method_checkboxes.items():
        assert f"log1pexp-method-{method}" in box._dom_classes


def test_every_control_is_labelled(explorer):
    labels = [
        explorer.dtype_choice.description,
        explorer.quantity_choice.description,
        explorer.x_from_input.description,
        explorer.x_to_input.description,
        explorer.readout_x_input.description,
        *(box.description for box in explorer.method_checkboxes.values()),
    ]
    assert all(labels) and len(set(labels)) == len(labels)


def test_nan_and_inf_points_are_marked_in_the_strip(explorer):
    plotted = show(explorer, quantity="value")
    figure = explorer._figure
    for method, series in plotted.items():
        for kind in ("nan", "posinf", "neginf", "zero"):
            marks = figure.flags[method][kind]
            np.testing.assert_array_equal(marks.get_xdata(), series.x[series.mask(kind)])
            assert marks.get_visible() == bool(series.mask(kind).any())
        line_y = np.asarray(figure.lines[method].get_ydata())
        assert np.isnan(line_y[~series.finite]).all()
    assert "inf from x = 88.87" in figure.flag_labels["naive"].get_text()
    assert figure.overflow_lines[0].get_visible() and figure.band[0].get_visible()
    assert "88.72" in figure.overflow_label.get_text()


def test_the_picture_is_a_640_by_420_png():
    from PIL import Image

    image = Image.open(io.BytesIO(Log1pexpExplorer().png))
    assert image.format == "PNG" and image.size == (640, 420)


def test_moving_only_the_readout_repaints_the_same_pixels_as_a_full_render(explorer):
    show(explorer)
    explorer.readout_x_input.value = 50.0  # fast path: readout marks only
    assert explorer.png == render_png(explorer.state, ExplorerFigure())


def test_the_picture_ignores_the_notebooks_matplotlib_settings():
    import matplotlib as mpl

    from autodiff_course.plotting import use_course_style

    state = ExplorerState(quantity="relative_error", x_range=(-25.0, 5.0))
    plain = render_png(state)
    with mpl.rc_context(
        {
            "font.size": 20,
            "lines.linewidth": 5,
            "axes.grid": False,
            "text.hinting": "none",
            "path.simplify": False,
        }
    ):
        use_course_style()
        assert render_png(state) == plain


def test_lesson_copies_saved_before_the_move_still_import_the_explorer():
    from autodiff_course.widgets import log1pexp
    from autodiff_course.widgets import log1pexp_explorer

    assert log1pexp_explorer.Log1pexpExplorer is log1pexp.Log1pexpExplorer
