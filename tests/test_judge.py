"""The judge and the spec types, tested directly on small exercises made for the test.

Each test builds an :class:`Exercise` of its own (a toy harness that hands back the probe's
answer as it is, or the OnTape harness on a custom gradient) and shows one promise of the
judge: the order of its stages, the structure of its verdicts, the praise, the registry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checking import mistakes
from autodiff_course.checking.harness import Harness
from autodiff_course.checking.harness import Observation
from autodiff_course.checking.harness import upstreams_seen
from autodiff_course.checking.judge import fill
from autodiff_course.checking.judge import sample
from autodiff_course.checking.on_tape import OnTape
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Pattern
from autodiff_course.checking.spec import Points
from autodiff_course.checking.spec import Probe
from autodiff_course.checking.spec import Probes
from autodiff_course.checking.spec import Story
from autodiff_course.checking.spec import Symptom
from autodiff_course.checking.verdicts import Wrong


@dataclass(frozen=True)
class Plain(Harness):
    """The answer is a function of the probe's x, returning a NumPy array."""

    def observe(self, answer, probe, exercise):
        return Observation({"value": np.asarray(answer(probe.x), dtype=np.float64)})

    def noun(self, part):
        return "your result"


POINTS = Points((-2.0, -1.0, 0.5, 1.0, 3.0), ((-3.0, 3.0, 4),))
TWICE = Mistake("test_twice", "You doubled it.", lambda p: 4.0 * p.x, means="4x, for the test")


def exercise(number="99.1", **changes):
    settings = dict(
        number=number,
        title="Twice x",
        stars=1,
        minutes=5,
        harness=Plain(),
        probes=Probes({"float64": POINTS}, size_one=False),
        reference=lambda p: 2.0 * p.x,
        mistakes=(TWICE,),
        describe={"value": "2 * x"},
        claim="Twice x",
    )
    settings.update(changes)
    return Exercise(**settings)


def test_the_right_answer_is_praised_with_what_was_verified():
    result = exercise().evaluate(lambda x: 2.0 * x)
    assert result.status is Status.CORRECT
    assert result.message.startswith("Twice x: in float64 from -")


def test_a_declared_mistake_wins_over_the_shared_patterns():
    # 4x is also "the answer times 2", a shared pattern: the declared mistake comes first.
    result = exercise().evaluate(lambda x: 4.0 * x)
    assert (result.mistake, result.message) == ("test_twice", "You doubled it.")


def test_a_declared_mistake_is_named_with_its_sign_flipped():
    result = exercise().evaluate(lambda x: -4.0 * x)
    assert result.mistake == "test_twice" and "sign is flipped" in result.message


def test_the_shared_patterns_come_next_and_quote_a_point():
    result = exercise().evaluate(lambda x: -2.0 * x)
    assert result.mistake == "sign_flipped"
    assert "For example at x = " in result.message


def test_the_fallback_says_what_the_part_should_be():
    result = exercise().evaluate(lambda x: 2.0 * x + np.sin(x))
    assert result.mistake == "other"
    assert result.message.startswith("Your result should be 2 * x. For example at x = ")


def test_several_probes_name_the_one_that_showed_the_mistake():
    spec = exercise(probes=Probes({"float64": POINTS}, shapes={"float64": ("points", (2, 2))}))
    result = spec.evaluate(lambda x: 2.0 * x if x.ndim == 1 else 4.0 * x)
    assert result.mistake == "test_twice"
    assert result.message.endswith("(Seen with a float64 input of shape (2, 2).)")


def test_a_mistake_hint_names_probe_fields():
    spec = exercise(
        mistakes=(Mistake("test_twice", "{n} points, {dtype}.", lambda p: 4.0 * p.x),),
        probes=Probes({"float64": Points((1.0, 2.0, 3.0))}, size_one=False),
    )
    assert spec.evaluate(lambda x: 4.0 * x).message == "3 points, float64."


def test_a_pattern_fills_its_hint_from_what_it_found():
    pattern = Pattern(
        "test_offset",
        "Off by {offset}.",
        lambda got, p: {"offset": f"{np.mean(got - 2.0 * p.x):g}"},
        means="an offset, for the test",
    )
    spec = exercise(mistakes=(pattern,))
    assert spec.evaluate(lambda x: 2.0 * x + 0.25).message == "Off by 0.25."


def test_a_story_reports_its_symptoms_together_where_the_rest_is_right():
    story = Story(
        "the test story",
        (
            Symptom("test_big", "big at x = {points}", lambda got, p: got > 100, means="big"),
            Symptom("test_nan", "nan at x = {points}", lambda got, p: np.isnan(got), means="nan"),
        ),
        quiet=lambda p: np.abs(p.x) <= 1.0,
    )
    spec = exercise(mistakes=(), stories=(story,))
    answer = lambda x: np.where(x > 2, np.nan, np.where(x < -1.5, 1e3, 2.0 * x))  # noqa: E731
    result = spec.evaluate(answer)
    assert result.mistake == "test_big"
    assert result.message.startswith("Still 2 failure modes of the test story: (1) big at x = -")
    # Wrong everywhere: the story says nothing, and the shared patterns speak instead.
    assert spec.evaluate(lambda x: np.where(x > 2, np.nan, 3.0 * x)).mistake != "test_big"


def test_the_majority_rule_forgives_digits_lost_at_a_few_points_only():
    noisy = lambda x: 4.0 * x * (1.0 + 1e-3 * (x > 2.5))  # noqa: E731
    spec = exercise(probes=Probes({"float64": Points(tuple(np.linspace(-3, 3, 12)))}))
    assert spec.evaluate(noisy).mistake == "test_twice"
    # ... but not a different formula that agrees at most points.
    other = lambda x: np.where(x > 2.0, 0.0, 4.0 * x)  # noqa: E731
    assert spec.evaluate(other).mistake != "test_twice"


def test_one_number_gets_no_factor_guess():
    spec = exercise(reference=lambda p: np.sum(p.x), mistakes=())
    factor = spec.evaluate(lambda x: 3.7 * np.sum(x))
    assert factor.mistake == "other"
    assert spec.evaluate(lambda x: 2.0 * np.sum(x)).mistake == "scale_factor"


def test_verdicts_carry_their_structure():
    wrong = Wrong("A hint.", "sign_flipped", point="For example: 1.").about("a probe")
    assert (wrong.hint, wrong.point, wrong.probe) == ("A hint.", "For example: 1.", "a probe")
    assert wrong.message == "A hint. For example: 1. (Seen with a probe.)"
    assert wrong.about("another") is wrong  # the first probe named stands


def test_fill_and_sample():
    probe = Probe("float32", np.zeros(4), data={"w": 2.5})
    assert fill("{w} and {n} in {dtype}, {unknown}", probe) == "2.5 and 4 in float32, {unknown}"
    assert sample(np.array([1.5, 2.0, 3.25, 4.0])) == "1.5, 2, 3.25, ..."
    assert sample([[0, 1], [1, 0]]) == "[0, 1], [1, 0]"


def test_probes_draw_fresh_points_and_size_one_axes():
    probes = Probes({"float32": POINTS, "float64": POINTS}, upstream=True)
    first = probes.draw(np.random.default_rng(1))
    second = probes.draw(np.random.default_rng(2))
    assert [p.shape for p in first][1:3] == [(1,), (1, 3)]
    assert all(set(POINTS.fixed) <= set(p.x) for p in first if p.label.endswith("points"))
    assert not np.array_equal(first[0].x, second[0].x)
    for probe in first:
        assert np.all(probe.upstream != 0) and np.all(np.abs(probe.upstream) != 1)
        assert probe.x.astype(probe.dtype).astype(np.float64).tolist() == probe.x.tolist()


def test_an_exercise_registers_its_codes_and_refuses_a_code_without_meaning():
    exercise(number="99.2")
    assert mistakes.describe("test_twice") == "4x, for the test"
    with pytest.raises(ValueError, match="codes without a meaning"):
        exercise(number="99.3", mistakes=(Mistake("test_never_defined", "?", lambda p: p.x),))


def test_the_heading_and_the_docstring_come_from_the_spec():
    spec = exercise(stars=2, minutes=8)
    assert spec.heading == "Exercise 99.1: Twice x (★★☆ medium, 8 min)"
    doc = spec.check.__doc__
    assert doc.startswith("Exercise 99.1: Twice x.") and "test_twice" in doc and "float64" in doc


# -- the harness of answers run on the check's tape ----------------------------------------


def cube_exercise(**harness):
    return Exercise(
        number="99.4",
        title="A cube with its own rule",
        stars=1,
        minutes=5,
        harness=OnTape("`cube`", local="3x^2", **harness),
        probes=Probes({"float32": Points((-1.5, -0.5, 0.0, 0.5, 2.0))}, upstream=True),
        reference=lambda p: {"value": p.x**3, "gradient": p.upstream * 3.0 * p.x**2},
        describe={"value": "x**3", "gradient": "upstream * 3x^2"},
    )


def rule(backward):
    @tf.custom_gradient
    def cube(x):
        return x**3, lambda upstream: backward(upstream, x)

    return cube


@pytest.mark.parametrize(
    "backward, mistake",
    [
        (lambda up, x: up * 3.0 * x**2, None),
        (lambda up, x: 3.0 * x**2, "forgot_upstream"),
        (lambda up, x: up * 3.0 * x**2 + up**2, "upstream_not_linear"),
        (lambda up, x: up * 2.0 * x, "wrong_local_derivative"),
        (lambda up, x: tf.fill(tf.shape(x), tf.reduce_sum(up * 3.0 * x**2)), "reduced_gradient"),
        (lambda up, x: (up, up), "grad_fn_raised"),
        (lambda up, x: None, "no_gradient"),
    ],
    ids=["right", "upstream", "not linear", "local", "reduced", "two gradients", "None"],
)
def test_on_tape_generates_the_mistakes_of_every_rule(backward, mistake):
    result = cube_exercise().evaluate(rule(backward))
    assert result.mistake == mistake, result.message


def test_on_tape_demands_the_learners_own_rule():
    result = cube_exercise().evaluate(lambda x: x**3)
    assert result.mistake == "custom_gradient_not_used"
    assert cube_exercise(custom_gradient=False).evaluate(lambda x: x**3).status is Status.CORRECT


def test_on_tape_judges_the_value_before_a_gradient_that_cannot_be_computed():
    @tf.custom_gradient
    def square_with_two_gradients(x):
        return x**2, lambda upstream: (upstream, upstream)

    assert cube_exercise().evaluate(square_with_two_gradients).mistake == "wrong_value"


def test_on_tape_catches_a_rule_that_reads_the_latest_call():
    latest = {}

    @tf.custom_gradient
    def cube(x):
        latest["x"] = x
        return x**3, lambda upstream: upstream * 3.0 * latest["x"] ** 2

    assert cube_exercise().evaluate(cube).mistake == "keeps_state"


def test_on_tape_praise_names_the_upstreams_it_used():
    probes = [Probe("float32", np.ones(2), np.array([1.0, -0.5])), Probe("float32", np.ones(1))]
    assert upstreams_seen(probes) == "with upstreams of both signs, +-1 among them"
    result = cube_exercise().evaluate(rule(lambda up, x: up * 3.0 * x**2))
    assert "with upstreams of both signs, never +-1" in result.message


@pytest.mark.parametrize(
    "factor, batch, code",
    [(4 / 3, None, "n_minus_one"), (6 / 5, 6, "n_minus_one"), (1 / 4, None, "mean_not_sum")],
)
def test_generic_factors_of_a_count_are_named(factor, batch, code):
    from autodiff_course.checking.judging import generic_mistake

    expected = np.array([1.0, 2.0, -3.0, 0.5])
    assert generic_mistake(factor * expected, expected, batch=batch)[0] == code
