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
from autodiff_course.widgets.log1pexp import X_STEPS
from autodiff_course.widgets.log1pexp import ExplorerFigure
from autodiff_course.widgets.log1pexp import ExplorerState
from autodiff_course.widgets.log1pexp import Log1pexpExplorer
from autodiff_course.widgets.log1pexp import explorer_table
from autodiff_course.widgets.log1pexp import render_png
from autodiff_course.widgets.log1pexp.widget import view_of

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
    """The front end is handed ``state`` (its controls are written from it)."""
    return explorer.widget.view == view_of(state) and explorer.state == state


def learner_sets(explorer, **changes) -> None:
    """What the front end sends back when the learner changes the view."""
    explorer.widget.view = view_of(explorer.state.changed(**changes))


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
    assert fresh.widget.config["bounds"]["float32"][1] > limits.overflow
    readout = fresh.readout_values()
    assert readout.methods["naive"]["gradient"] == 0.0  # silently wrong
    assert readout.methods["documented"]["gradient"] == 1.0
    assert readout.methods["stable"]["gradient"] == 1.0
    assert readout.reference["gradient"] == pytest.approx(1.0)
    assert fresh.png.startswith(b"\x89PNG\r\n\x1a\n")


def test_plotted_points_are_the_tabulated_points_in_range_in_the_chosen_dtype(explorer):
    plotted = show(explorer)
    x = explorer_table("float32").x
    expected = x[(x >= -20.0) & (x <= 100.0)]
    assert np.array_equal(expected.astype(np.float32).astype(np.float64), expected)
    for series in plotted.values():
        np.testing.assert_array_equal(series.x, expected)
        # nothing is dropped: every point is finite or flagged as nan / inf
        covered = series.finite | series.nan | series.posinf | series.neginf
        assert covered.all()


# -- the float32 story --------------------------------------------------------


def test_naive_gradient_is_silently_zero_in_the_band_and_nan_beyond(explorer):
    naive = show(explorer)["naive"]
    limits = numerics.thresholds("float32")
    # the table is dense at both ends of the band, down to neighbouring floats
    band = (naive.x >= limits.flush_start + 1e-3) & (naive.x <= limits.overflow - 1e-4)
    assert band.sum() >= 100
    assert (naive.y[band] == 0.0).all()
    assert naive.zero[band].all()
    assert (
        naive.y[(naive.x > limits.flush_start - 0.05) & (naive.x < limits.flush_start - 1e-3)].min()
        > 0.99
    )
    beyond = naive.x >= limits.overflow + 1e-4
    assert beyond.sum() >= 30
    assert np.isnan(naive.y[beyond]).all() and naive.nan[beyond].all()
    assert not naive.nan[naive.x <= limits.overflow - 1e-4].any()
    # Below the band the naive gradient of a point on its own is right to float32
    # precision, up to the band's edge.
    below = naive.x < limits.flush_start - 1e-3
    np.testing.assert_allclose(
        naive.y[below], reference64("gradient", naive.x[below]), rtol=1e-6, atol=1e-12
    )


def test_float32_tables_hold_what_each_point_gets_on_its_own():
    """In a float32 vector, x86 kernels take groups of 8 through a reciprocal estimate
    whose last digits vary between CPU models (lesson 03's aside); the tables hold the
    numbers each point gets alone, the same on every CPU."""
    x = np.array([87.3] * 8 + [80.0, -3.5, 0.0, 12.25] * 4, dtype=np.float32)
    tabled = numerics.tape_derivatives(x, "float32")
    for index in (0, 7, 8, 9, 10, 11, 20):
        alone = numerics.tape_derivatives(x[index : index + 1], "float32")
        for method, quantities in alone.items():
            for quantity, value in quantities.items():
                assert tabled[method][quantity][index] == value[0], (method, quantity, x[index])
    assert (tabled["naive"]["gradient"][:8] == 1.0).all()  # alone: correctly rounded


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
    assert explorer.widget.config["bounds"]["float64"][1] > 709.8
    band = (naive.x >= 708.5) & (naive.x <= 709.7)
    assert band.sum() >= 3 and (naive.y[band] == 0.0).all()
    assert np.isnan(naive.y[naive.x >= 709.8]).all()
    assert explorer.readout_values().x == 709.7
    assert explorer.readout_values().methods["naive"]["gradient"] == 0.0
    learner_sets(explorer, readout_x=709.8)
    assert np.isnan(explorer.readout_values().methods["naive"]["gradient"])
    assert explorer.readout_values().methods["stable"]["gradient"] == 1.0


# -- controls and state -------------------------------------------------------


def test_a_new_dtype_moves_to_its_opening_view_and_a_round_trip_comes_back():
    fresh = Log1pexpExplorer()
    fresh.set_state(dtype="float64")
    assert fresh.state == ExplorerState(dtype="float64") and controls_show(fresh, fresh.state)
    fresh.set_state(dtype="float16")
    assert fresh.state == ExplorerState(dtype="float16")
    fresh.set_state(x_range=(-3.0, 5.0))  # a range of the learner's own
    fresh.set_state(dtype="float32")
    assert fresh.state.x_range == (-20.0, 100.0)  # float32's own, remembered
    fresh.set_state(x_range=(-100.0, 110.0))
    fresh.set_state(dtype="float16")
    assert fresh.state.x_range == (-3.0, 5.0)  # float16's, as the learner left it
    fresh.set_state(dtype="float32")
    assert fresh.state.x_range == (-100.0, 110.0)  # the round trip restores it
    assert controls_show(fresh, fresh.state)


def test_the_front_ends_view_becomes_the_state():
    fresh = Log1pexpExplorer()
    learner_sets(fresh, quantity="relative_error", x_range=(-25.0, 5.0), readout_x=-15.0)
    assert fresh.state.quantity == "relative_error" and fresh.state.x_range == (-25.0, 5.0)
    assert fresh.readout_values().x == -15.0


def test_ticking_a_method_changes_only_that_method():
    fresh = Log1pexpExplorer(methods=("naive", "stable"))
    learner_sets(fresh, methods=("naive", "documented", "stable"))
    assert fresh.state.methods == METHODS
    learner_sets(fresh, methods=("documented", "stable"))
    assert set(fresh.plotted_data()) == {"documented", "stable"}


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
    assert custom.readout_values().x == explorer_table("float64").x[-1]


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
    return [(low, high), (low, low), (high, high), (0.0, 0.0), (low, low + 0.1), (-1e-3, 1e-3)]


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
            low, high = X_BOUNDS[dtype]
            for quantity, methods in itertools.product(QUANTITIES, subsets):
                corner.set_state(
                    dtype=dtype, quantity=quantity, methods=methods, x_range=(low, high)
                )
                assert set(corner.plotted_data()) == set(methods)
                assert corner.text_summary() and corner.alt_text()
            for x_range in every_extreme(dtype):
                for readout_x in (low, high, 0.0):
                    corner.set_state(methods=METHODS, x_range=x_range, readout_x=readout_x)
                    shown_low, shown_high = corner.state.x_range
                    assert shown_high - shown_low >= 10 * X_STEPS[dtype] - 1e-9
                    assert low <= shown_low and shown_high <= high
                    assert corner.png.startswith(b"\x89PNG")


def test_a_zero_width_range_is_widened_and_says_so(explorer):
    plotted = show(explorer, x_range=(88.5, 88.5))
    assert explorer.state.x_range == (88.0, 89.0)
    assert "too narrow to plot; widened to 88 to 89" in explorer.state.message
    for series in plotted.values():
        assert series.x.size > 10 and (series.x >= 88.0).all() and (series.x <= 89.0).all()
    assert (plotted["naive"].y[plotted["naive"].x < 88.72] == 0.0).all()


def test_no_method_selected_renders_an_empty_plot_and_says_so(explorer):
    assert show(explorer, methods=()) == {}
    assert "No method selected." in explorer.text_summary()
    assert "No method is shown." in explorer.alt_text()
    assert "No method is selected" in readout_html(explorer)
    assert explorer.readout_values().methods == {}


def test_the_tables_are_computed_once_and_read_only():
    table = explorer_table("float32")
    assert explorer_table("float32") is table
    assert not table.x.flags.writeable
    assert not table.series("naive", "gradient").flags.writeable


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


def readout_html(explorer) -> str:
    from autodiff_course.widgets.log1pexp.wording import readout_html as html

    return html(explorer.readout_values(), explorer.state)


def readout_attributes(explorer):
    found = parse(readout_html(explorer)).found
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
    learner_sets(explorer, readout_x=100.0)
    outer, rows = readout_attributes(explorer)
    assert outer["data-x"] == "100.0"
    assert outer["data-naive-value"] == "inf" and outer["data-naive-gradient"] == "nan"
    assert rows["documented"]["data-value"] == "inf"
    assert rows["documented"]["data-gradient"] == "1.0"
    assert ">nan<" in readout_html(explorer) and ">inf<" in readout_html(explorer)


@pytest.mark.parametrize(
    "change",
    [
        {"readout_x": -10.0},
        {"quantity": "value"},
        {"x_range": (-30.0, 100.0)},
        {"x_range": (-20.0, 30.0)},
        {"dtype": "float64"},
    ],
)
def test_every_control_changes_the_summary_the_alt_text_and_the_readout(explorer, change):
    show(explorer)
    before = (explorer.text_summary(), explorer.alt_text(), readout_html(explorer))
    learner_sets(explorer, **change)
    after = (explorer.text_summary(), explorer.alt_text(), readout_html(explorer))
    assert all(a != b for a, b in zip(before, after))


def test_unticking_a_method_changes_the_summary_and_the_alt_text(explorer):
    show(explorer)
    before = (explorer.text_summary(), explorer.alt_text())
    learner_sets(explorer, methods=("documented", "stable"))
    assert "naive autodiff:" not in explorer.text_summary()
    assert "naive autodiff:" not in explorer.alt_text()
    assert (explorer.text_summary(), explorer.alt_text()) != before


def test_text_summary_states_the_story(explorer):
    show(explorer)
    text = explorer._repr_mimebundle_()["text/plain"]
    points = int(
        ((explorer_table("float32").x >= -20) & (explorer_table("float32").x <= 100)).sum()
    )
    assert text.startswith(
        "log1pexp explorer (float32): gradient of log(1 + e^x), "
        f"x from -20.00 to 100.00 ({points} tabulated points)."
    )
    assert "exp(x) overflows for x > 88.72" in text
    assert "below the smallest normal float for x > 87.34" in text
    # the thresholds themselves, never points of a grid
    assert "naive autodiff: silent 0.0 from x = 87.34 to 88.72; nan from x = 88.72." in text
    assert "documented rule: silent 0.0 from x = -87.34 to -16.64." in text
    assert "stable rule: no nan, no inf, no silent 0.0." in text
    assert "Readout at x = 88.5: naive autodiff value 88.5, gradient 0.0;" in text
    assert "0x" not in text


def test_the_plot_says_in_words_what_it_shows(explorer, display_bundle):
    show(explorer)
    (image,) = parse(display_bundle(explorer)["text/html"]).images
    assert image["alt"] == explorer.alt_text()
    assert (image["width"], image["height"]) == ("640", "420")
    assert image["src"].startswith("data:image/png;base64,")
    alt = explorer.alt_text()
    assert alt.startswith(
        "Plot of the float32 gradient of log(1 + e^x) for x from -20.00 to 100.00."
    )
    assert "naive autodiff: silent 0.0 from x = 87.34 to 88.72; nan from x = 88.72." in alt
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
    assert Log1pexpExplorer()._repr_mimebundle_()["text/html"] == bundle["text/html"]


def test_the_front_end_gets_every_table_and_its_module_from_the_package(explorer):
    from autodiff_course.widgets.frontend import decoded

    tables = explorer.widget.tables
    assert set(tables) == set(DTYPES)
    for dtype in DTYPES:
        table = explorer_table(dtype)
        np.testing.assert_array_equal(decoded(tables[dtype]["x"]), table.x)
        for method in METHODS:
            for quantity in QUANTITIES:
                sent = decoded(tables[dtype]["methods"][method][quantity])
                np.testing.assert_array_equal(sent, table.series(method, quantity))
    assert "export default" in explorer.widget._esm and "http" not in explorer.widget._esm
    assert explorer.widget.config["css"] == CSS_CLASSES
    assert CSS_CLASSES["explorer"] in explorer.widget._dom_classes


def test_nan_and_inf_points_are_marked_in_the_strip(explorer):
    plotted = show(explorer, quantity="value")
    explorer.png  # noqa: B018  (draws the still picture)
    figure = explorer._figure
    for method, series in plotted.items():
        for kind in ("nan", "posinf", "neginf", "zero"):
            marks = figure.flags[method][kind]
            np.testing.assert_array_equal(marks.get_xdata(), series.x[series.mask(kind)])
            assert marks.get_visible() == bool(series.mask(kind).any())
        line_y = np.asarray(figure.lines[method].get_ydata())
        assert np.isnan(line_y[~series.finite]).all()
    assert "inf from x = 88.72" in figure.flag_labels["naive"].get_text()
    assert figure.overflow_lines[0].get_visible() and figure.band[0].get_visible()
    assert "88.72" in figure.overflow_label.get_text()


def test_the_picture_is_a_640_by_420_png():
    from PIL import Image

    image = Image.open(io.BytesIO(Log1pexpExplorer().png))
    assert image.format == "PNG" and image.size == (640, 420)


def test_the_still_picture_is_the_same_pixels_as_a_fresh_render(explorer):
    show(explorer)
    learner_sets(explorer, readout_x=50.0)
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
