"""Direct tests of the harness for NumPy rules (``autodiff_course.checking.numpy_rule``)
and of the upstream-linearity probe it shares (``harness.upstream_linearity``), on small
exercises made here, independent of any lesson's checks."""

from __future__ import annotations

import numpy as np
import pytest

from autodiff_course.checking import Status
from autodiff_course.checking.harness import UPSTREAM_FACTOR
from autodiff_course.checking.harness import Observation
from autodiff_course.checking.harness import upstream_linearity
from autodiff_course.checking.judge import Case
from autodiff_course.checking.judging import FLOAT64
from autodiff_course.checking.numpy_rule import NumpyRule
from autodiff_course.checking.numpy_rule import pair_probes
from autodiff_course.checking.numpy_rule import read_array
from autodiff_course.checking.numpy_rule import sum_of_terms
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Points
from autodiff_course.checking.spec import Probes
from autodiff_course.checking.verdicts import Wrong

# An element-wise rule of one input: y = x**3, so grad = upstream * 3x^2.
CUBE = Exercise(
    number="99.1",
    title="The rule of x**3",
    stars=1,
    minutes=1,
    harness=NumpyRule("`cube_vjp`", local="3x^2", elementwise=True),
    probes=Probes(
        {"float64": Points((-2.0, -0.5, 0.5, 1.5, 3.0)), "float32": Points((1.0, 2.0))},
        upstream=True,
    ),
    reference=lambda p: 3.0 * p.upstream * p.x**2,
)


def run(exercise, answer):
    return exercise.evaluate(answer)


def test_a_right_rule_is_praised_for_what_was_verified():
    result = run(CUBE, lambda up, x: up * 3 * x * x)
    assert result.status is Status.CORRECT, result.message
    assert "every argument left unchanged" in result.message
    assert "upstreams of both signs, never +-1" in result.message


@pytest.mark.parametrize(
    "answer, code",
    [
        (lambda up, x: 3 * x * x, "forgot_upstream"),
        (lambda up, x: up * up * 3 * x * x, "upstream_not_linear"),
        (lambda up, x: up * (3 * x * x + 1), "wrong_local_derivative"),
        (lambda up, x: up[::-1] * 3 * x * x, "upstream_used_wrongly"),
        (lambda up, x: np.random.default_rng().normal(size=x.shape), "not_repeatable"),
        (lambda up, x: up.__imul__(3 * x * x), "changed_in_place"),
        (lambda up, x: (up * 3 * x * x).astype(np.float32), "float32_not_float64"),
        (lambda up, x: (up * 3 * x * x).astype(np.float64), "wrong_dtype"),
        (lambda up, x: (up * 3 * x * x)[None], "broadcast_shape"),
        (lambda up, x: list(up * 3 * x * x), "wrong_structure"),  # one gradient per entry?
        (lambda up, x: None, "returned_none"),
        (lambda up, x: (up, up), "wrong_structure"),
    ],
)
def test_the_mistakes_every_rule_can_make(answer, code):
    result = run(CUBE, answer)
    assert (result.status, result.mistake) == (Status.WRONG, code), result.message


def test_a_one_gradient_rule_may_return_a_one_tuple():
    assert run(CUBE, lambda up, x: (up * 3 * x * x,)).status is Status.CORRECT


def test_a_cache_by_shape_is_state_kept_between_calls():
    cache = {}

    def cached(up, x):
        return cache.setdefault(x.shape, up * 3 * x * x)

    result = run(CUBE, cached)
    assert result.mistake == "keeps_state", result.message


def test_read_array_names_what_is_not_a_numpy_array():
    class TapeTensor:
        value = np.ones(2)

    with pytest.raises(Wrong) as tape:
        read_array(TapeTensor(), "x", (2,), "float64")
    with pytest.raises(Wrong) as numbers:
        read_array("1, 2", "x", (2,), "float64")
    assert (tape.value.mistake, numbers.value.mistake) == ("used_tape", "wrong_type")
    assert read_array(np.float64(2.0), "x", (), "float64").shape == ()


# A rule of two inputs that broadcast: y = a * b.
def _sum_back(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _product(p):
    return {
        "grad_a": _sum_back(p.upstream * p.b, p.a.shape),
        "grad_b": _sum_back(p.upstream * p.a, p.b.shape),
    }


PRODUCT = Exercise(
    number="99.2",
    title="The rule of a * b",
    stars=1,
    minutes=1,
    harness=NumpyRule(
        "`product_vjp`", inputs=("a", "b"), gradients=("grad_a", "grad_b"), local="the other input"
    ),
    probes=lambda rng: pair_probes(
        rng, [("a table times a row", (3, 4), (4,), "float64")], np.broadcast_shapes
    ),
    reference=_product,
    tolerance=sum_of_terms(_product),
)


@pytest.mark.parametrize(
    "answer, code",
    [
        (lambda up, a, b: (up * b, up * a), "not_summed_back"),
        (lambda up, a, b: tuple(_product_of(up, a, b))[::-1], "reversed_order"),
        (lambda up, a, b: up * b, "not_a_pair"),
        (lambda up, a, b: [g * 2 for g in _product_of(up, a, b)], "scale_factor"),
    ],
)
def test_a_rule_of_two_inputs(answer, code):
    result = run(PRODUCT, answer)
    assert (result.status, result.mistake) == (Status.WRONG, code), result.message


def _product_of(up, a, b):
    return _sum_back(up * b, a.shape), _sum_back(up * a, b.shape)


def test_a_rule_of_two_inputs_may_return_a_list():
    assert run(PRODUCT, lambda up, a, b: list(_product_of(up, a, b))).status is Status.CORRECT


# A rule that returns (output, grad_fn), called as a custom_gradient decorator calls it.
SQUARE = Exercise(
    number="99.3",
    title="The rule of x**2 with its grad_fn",
    stars=1,
    minutes=1,
    harness=NumpyRule("`square_rule`", grad_fn=True, elementwise=True, local="2x"),
    probes=Probes({"float64": Points((-2.0, -1.0, 0.5, 3.0))}, upstream=True),
    reference=lambda p: {"value": p.x**2, "gradient": 2.0 * p.upstream * p.x},
)


def square_rule(x):
    return x * x, lambda upstream: 2 * upstream * x


_LATEST = {}


def square_latest(x):
    _LATEST["x"] = x
    return x * x, lambda upstream: 2 * upstream * _LATEST["x"]


def square_decorated(x):
    return square_rule(x)


square_decorated.__wrapped__ = square_rule


@pytest.mark.parametrize(
    "answer, code",
    [
        (square_latest, "keeps_state"),
        (square_decorated, "rule_decorated"),
        (lambda x: x * x, "not_a_pair"),
        (lambda x: (x * x, 2 * x), "grad_fn_not_callable"),
        (lambda x: (x * x, lambda up: 2 * x), "forgot_upstream"),
        (lambda x: (x * x, lambda up: 1 / 0), "raised"),
    ],
)
def test_a_rule_with_a_grad_fn(answer, code):
    result = run(SQUARE, answer)
    assert (result.status, result.mistake) == (Status.WRONG, code), result.message


def test_a_grad_fn_that_raises_waits_for_the_value():
    result = run(SQUARE, lambda x: (x * x * x, lambda up: 1 / 0))
    assert result.mistake != "raised", result.message  # the wrong value is named first


def test_interleaved_calls_run_both_rules_before_either_grad_fn():
    calls = []

    def rule(x):
        calls.append("rule")
        value, grad_fn = square_rule(x)
        return value, lambda up: calls.append("grad_fn") or grad_fn(up)

    assert run(SQUARE, rule).status is Status.CORRECT
    assert calls[-4:] == ["rule", "rule", "grad_fn", "grad_fn"]


# A driven answer: the check's own loop calls it (here: adding three contributions, each
# proportional to the upstream, as in a reverse pass).
def _drive(call, p):
    totals = {}
    for contribution in (p.upstream * p.x, 2 * p.upstream, p.upstream):
        call(totals, "k", np.array(contribution, dtype=p.dtype))
    return {"total": totals.get("k")}


DRIVEN = Exercise(
    number="99.4",
    title="Add up three contributions",
    stars=1,
    minutes=1,
    harness=NumpyRule(
        "`add_to`", inputs=("totals", "key", "contribution"), drive=_drive, main="total"
    ),
    probes=Probes({"float64": Points((-1.0, 0.5, 2.0))}, upstream=True),
    reference=lambda p: {"total": p.upstream * (p.x + 3)},
)


def add_to(totals, key, contribution):
    totals[key] = totals[key] + contribution if key in totals else contribution


def add_in_place(totals, key, contribution):
    if key in totals:
        totals[key] += contribution
    else:
        totals[key] = contribution


def test_a_driven_answer_is_called_from_the_check_loop():
    assert run(DRIVEN, add_to).status is Status.CORRECT
    result = run(DRIVEN, add_in_place)
    assert result.mistake == "changed_in_place" and "`contribution`" in result.message


def test_a_driven_answer_is_never_blamed_for_a_local_derivative():
    def doubled(totals, key, contribution):
        totals[key] = 2 * (totals[key] + contribution) if key in totals else contribution

    assert run(DRIVEN, doubled).mistake == "other"


# upstream_linearity on its own: one factor, element-wise or as a whole.
def _case(got, again, upstream, expected, elementwise_shape=True):
    observation = Observation({"g": got}, again=again)
    return Case(
        CUBE,
        CUBE.draw(np.random.default_rng(0))[0].but(upstream=upstream, x=None),
        observation,
        "g",
        got,
        expected,
        FLOAT64,
    )


@pytest.mark.parametrize("elementwise", [True, False])
def test_upstream_linearity_uses_one_factor(elementwise):
    up = np.array([[1.5, -0.5], [2.0, 0.25]])
    local = np.array([[1.0, 2.0], [3.0, 4.0]])
    square = _case((up @ local) ** 2, lambda f: {"g": (f * up @ local) ** 2}, up, up @ local)
    found = upstream_linearity(square, elementwise=elementwise)
    assert found.mistake == "upstream_not_linear"
    assert f"times {UPSTREAM_FACTOR:g}" in found.hint
    linear = _case(up @ local * 2, lambda f: {"g": f * up @ local * 2}, up, up @ local)
    assert upstream_linearity(linear, elementwise=elementwise).mistake == "wrong_local_derivative"
