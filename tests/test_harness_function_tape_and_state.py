"""The Function harness and the judge, on small exercises of their own: a tape demanded,
state handed over and read back, zeros that hide a None, a mistake over several parts,
a verdict that changes when the same call is repeated, and the rules they rest on."""

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking.answers import as_values
from autodiff_course.checking.function import Function
from autodiff_course.checking.function import negated
from autodiff_course.checking.function import one_tensor_per_key
from autodiff_course.checking.judging import FLOAT32
from autodiff_course.checking.judging import of_terms
from autodiff_course.checking.observing import observe
from autodiff_course.checking.provenance import why_none
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Probe
from autodiff_course.checking.verdicts import Status
from autodiff_course.checking.verdicts import Wrong


def _probes(rng):
    return [
        Probe("float32", np.array([0.5, -1.0, 2.0]), label="a first vector"),
        Probe("float32", np.array([1.5, -0.25, 3.0, 0.75]), label="a second vector"),
    ]


def _cube(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x**3
    return tape.gradient(y, x)


SLOPE = Exercise(
    number="9.1",
    title="The slope of x**3 by a tape",
    stars=1,
    minutes=1,
    harness=Function("`slope`", tape=True),
    probes=_probes,
    reference=lambda p: 3 * p.x**2,
    mistakes=(Mistake("value_not_derivative", "You returned x**3 itself.", lambda p: p.x**3),),
)


def verdict(exercise, answer):
    result = exercise.evaluate(answer)
    return result.mistake if result.status is Status.WRONG else result.status.value


def test_a_tape_is_demanded_and_praised():
    assert verdict(SLOPE, _cube) == "correct"
    assert "a tf.GradientTape computed it" in SLOPE.evaluate(_cube).message
    assert verdict(SLOPE, lambda x: 3 * x**2) == "no_tape"  # the numbers right, no tape
    assert verdict(SLOPE, lambda x: ((x + 1e-3) ** 3 - (x - 1e-3) ** 3) / 2e-3) == (
        "finite_differences"
    )
    assert verdict(SLOPE, lambda x: x**3) == "value_not_derivative"  # the mistake first


def _scalar_probes(rng):
    return [Probe("float32", np.array(v), data={"start": 1.0}, label=f"x = {v}") for v in (2, 3)]


def _variable_arguments(probe):
    return ({"v": tf.Variable(probe.start, name="v")}, tf.constant(float(probe.x)))


STEP = Exercise(
    number="9.2",
    title="A step on a variable handed over",
    stars=1,
    minutes=1,
    harness=Function(
        "`step`",
        arguments=_variable_arguments,
        read=lambda value, probe, exercise, name: {"value": as_values(value, shape=())},
        tape=True,
        sources=lambda probe, args: [(args[0]["v"], "v")],
        state=lambda args: {"v": [args[0]["v"]]},
    ),
    probes=_scalar_probes,
    reference=lambda p: {"value": 2 * p.x * p.start, "v": p.start - 2 * p.x * p.start},
)


def _step(update):
    def answer(params, x):
        with tf.GradientTape() as tape:
            y = (x * params["v"]) ** 2 / x
        gradient = tape.gradient(y, params["v"])
        update(params, gradient)
        return gradient

    return answer


def test_state_is_read_from_the_variables_handed_over():
    assert verdict(STEP, _step(lambda p, g: p["v"].assign_sub(g))) == "correct"
    assert "updated in place" in STEP.evaluate(_step(lambda p, g: p["v"].assign_sub(g))).message

    def replaced(params, gradient):  # a new variable in the dict: the one handed over stays
        params["v"] = tf.Variable(params["v"] - gradient)

    result = STEP.evaluate(_step(replaced))
    assert result.status is Status.WRONG and result.message.startswith("Your v "), result.message


def test_a_none_from_rebinding_a_variable_handed_over_is_named():
    def twice(params, x):
        for _ in range(2):
            gradient = _step(lambda p, g: None)(params, x)
            params["v"] = params["v"] - gradient  # a plain tensor from now on
        return gradient

    result = STEP.evaluate(twice)
    assert result.mistake == "variable_replaced", result.message
    assert "2nd tape.gradient call" in result.message


def test_zeros_that_hide_a_none_are_named_before_the_mistakes():
    def hidden(x):
        with tf.GradientTape() as tape:
            y = x**3
        return tape.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)

    result = SLOPE.evaluate(hidden)
    assert result.mistake == "zeros_hide_none" and "tape.watch" in result.message


def test_a_dict_is_read_key_by_key():
    exercise = type("E", (), {"expected": lambda self, p: {"w": np.zeros(2), "b": np.zeros(())}})()
    probe = Probe("float32", None)
    read = one_tensor_per_key({"w": tf.zeros(2), "b": tf.constant(0.0)}, probe, exercise, "f")
    assert set(read) == {"w", "b"} and read["w"].shape == (2,)
    for value, code in (([tf.zeros(2)], "wrong_structure"), ({"weights": 1.0}, "wrong_keys")):
        with pytest.raises(Wrong) as raised:
            one_tensor_per_key(value, probe, exercise, "f")
        assert raised.value.mistake == code
    with pytest.raises(Wrong) as raised:
        one_tensor_per_key({"w": tf.zeros((2, 1)), "b": tf.constant(0.0)}, probe, exercise, "f")
    assert raised.value.mistake == "broadcast_shape"


PAIR = Exercise(
    number="9.3",
    title="Two parts",
    stars=1,
    minutes=1,
    harness=Function(
        "`pair`", read=lambda value, p, e, name: {k: as_values(v) for k, v in value.items()}
    ),
    probes=_probes,
    reference=lambda p: {"value": 2 * p.x, "sum": np.sum(p.x)},
    mistakes=(
        Mistake(
            "scale_factor", "Both parts halved.", lambda p: {"value": p.x, "sum": 0.5 * p.x.sum()}
        ),
        Mistake("added_term", "Squared.", lambda p: {"value": p.x**2, "sum": np.sum(p.x)}),
    ),
)


def test_a_mistake_over_several_parts_is_named_in_each():
    def half_sum(x):
        return {"value": 2 * x, "sum": 0.5 * tf.reduce_sum(x)}

    assert verdict(PAIR, half_sum) == "scale_factor"  # named in the part "sum" alone


def test_a_mistake_right_in_a_part_cannot_explain_that_part():
    def flipped_sum(x):  # the second mistake has the right sum: its flip is no match
        return {"value": 2 * x, "sum": -tf.reduce_sum(x)}

    assert verdict(PAIR, flipped_sum) != "added_term"


def test_structural_verdicts_say_which_probe():
    def breaks_later(x):
        return _cube(x) if x.shape[0] == 3 else None

    result = SLOPE.evaluate(breaks_later)
    assert result.mistake == "returned_none" and "a second vector" in result.message


HISTORY = []


def test_a_verdict_that_changes_when_repeated_is_state():
    def remembers(x):
        HISTORY.append(_cube(x))
        return tf.concat(HISTORY, axis=0)

    result = SLOPE.evaluate(remembers)
    assert result.mistake == "keeps_state", result.message


def test_a_tape_closed_before_this_one_opened_is_no_inner_tape():
    x = tf.constant(2.0)
    with observe() as log:
        with tf.GradientTape() as first:
            first.watch(x)
            y = x**2
        first.gradient(y, x)
        with tf.GradientTape() as second:
            z = x**3
        second.gradient(z, x)
    assert why_none(log)[0] == "unwatched_constant"


def test_a_python_number_has_no_dtype_to_check():
    assert as_values(1.5, shape=(), dtype=tf.float32, require_tensor=False) == 1.5
    with pytest.raises(Wrong):
        as_values(np.float64(1.5), shape=(), dtype=tf.float32, require_tensor=False)


def test_cancelling_terms_widen_only_the_absolute_tolerance():
    float32 = Probe("float32", np.zeros(2))
    widened = of_terms(lambda p: 10.0)(float32, "value")
    assert widened.rtol == FLOAT32.rtol and widened.atol == pytest.approx(8 * 1.1920929e-07 * 10)
    assert of_terms(lambda p: 0.0)(float32, "value").atol == FLOAT32.atol


def _probes64(rng):
    return [Probe("float64", np.array([0.5, -1.25, 2.0]), label="a float64 vector")]


SLOPE64 = Exercise(
    number="9.4",
    title="The slope of x**3 in float64",
    stars=1,
    minutes=1,
    harness=Function("`slope`", tape=True),
    probes=_probes64,
    reference=lambda p: 3 * p.x**2,
)


def test_float32_inside_a_close_float64_answer_is_named():
    def widened(x):  # a float32 constant, widened back to float64
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.cast(tf.constant(1.0000001, tf.float32), x.dtype) * x**3
        return tape.gradient(y, x)

    assert verdict(SLOPE64, widened) == "float32_not_float64"
    assert verdict(SLOPE64, _cube) == "correct"


def test_a_result_that_does_not_depend_on_the_source_is_named_so():
    def unused(x):  # ones_like reads only the shape of x
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.ones_like(x) ** 3
        return tape.gradient(y, x)

    result = SLOPE.evaluate(unused)
    assert result.mistake == "source_not_used", result.message


def _positive_probes(rng):
    return [Probe("float32", np.array([0.5, 1.0, 2.0]), label="a positive vector")]


POSITIVE_SLOPE = Exercise(
    number="9.2",
    title="The slope of x**3, probed at positive points only",
    stars=1,
    minutes=1,
    harness=Function("`slope`", tape=True, vary=negated),
    probes=_positive_probes,
    reference=lambda p: 3 * p.x**2,
)


def test_new_values_that_show_a_named_mistake_every_time_get_that_verdict_not_state():
    def through_abs(x):  # right for x > 0 only: 3 x |x|
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x**2 * tf.abs(x)
        return tape.gradient(y, x)

    result = POSITIVE_SLOPE.evaluate(through_abs)
    assert result.mistake == "sign_flipped", result.message  # at the negated points
    assert "at x = -2: expected 12, got -12" in result.message


def test_new_values_answered_otherwise_on_each_call_are_state():
    calls = []

    def drifts(x):  # right on its first call only
        calls.append(1)
        return _cube(x) * (1.0 if len(calls) == 1 else 1.0 + len(calls))

    result = POSITIVE_SLOPE.evaluate(drifts)
    assert result.mistake == "keeps_state", result.message
