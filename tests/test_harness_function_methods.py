"""The Function harness's method log and its verdicts, on toy exercises (not a lesson's):
the calls of the functions it hands over (recorded once, called on the whole batch), an
estimate made without autodiff, a method verdict that waits for the declared mistakes,
errors explained by the tape call behind them, zeros from batch_jacobian for want of a
path, the other-numbers statefulness probe, Shaped probes and relative tolerances."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checking.function import Function
from autodiff_course.checking.function import negated
from autodiff_course.checking.judging import relative_to_largest
from autodiff_course.checking.probes import tensor
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Probe
from autodiff_course.checking.spec import Shaped


def batch_probes(rng):
    x = np.round(rng.uniform(-1.5, 1.5, size=(4, 3)), 3)
    return [Probe("float64", x, label="a (4, 3) batch"), Probe("float32", x[:2] * 0.5, label="b")]


def centred(x):
    return tf.tanh(x - tf.reduce_mean(x, axis=0, keepdims=True) + 0.25)


def slopes(p):
    """d/dx of sum(tanh(x - mean + 1/4)) for each entry: (1 - y**2) minus its batch mean."""
    y = np.tanh(p.x - p.x.mean(axis=0) + 0.25)
    return (1 - y**2) - (1 - y**2).mean(axis=0)


def toy(**flags):
    """The gradient of sum(f(x)), f handed over: it subtracts the batch mean."""
    return Exercise(
        number="99.2",
        title="A toy gradient",
        stars=1,
        minutes=1,
        harness=Function("`toy`", arguments=lambda p: (centred, tensor(p.x, p.dtype)), **flags),
        probes=batch_probes,
        reference=slopes,
        mistakes=(Mistake("sign_flipped", "The sign is flipped.", lambda p: -slopes(p)),),
        tolerance=relative_to_largest(slopes),
    )


def gradient(f, x, persistent=False):
    with tf.GradientTape(persistent=persistent) as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def code(exercise, answer):
    result = exercise.evaluate(answer)
    return result.mistake if result.status is Status.WRONG else result.status.value


def test_a_function_recorded_twice_is_named_and_once_is_fine():
    exercise = toy(record_once="record f(x) once.")

    def twice(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            f(x)
            y = f(x)
        return tape.gradient(y, x)

    def outside_then_once(f, x):
        f(x)  # a forward pass outside any tape is no recording
        return gradient(f, x)

    assert code(exercise, twice) == "re_recorded"
    assert "recorded `centred` 2 times" in exercise.evaluate(twice).message
    assert code(exercise, outside_then_once) == "correct"


def test_a_mixing_function_called_on_part_of_the_batch_is_named():
    exercise = toy(whole_batch="It mixes the batch.")

    def one_at_a_time(f, x):
        return tf.concat([gradient(f, x[b : b + 1]) for b in range(x.shape[0])], axis=0)

    assert code(exercise, one_at_a_time) == "called_on_slices"
    assert code(toy(), one_at_a_time) != "called_on_slices"


def by_differences(f, x):
    h = tf.constant(1e-5, x.dtype)
    columns = []
    for e in tf.unstack(tf.eye(int(tf.size(x)), dtype=x.dtype)):
        e = tf.reshape(e, x.shape)
        columns.append(tf.reduce_sum(f(x + h * e) - f(x - h * e)) / (2 * h))
    return tf.reshape(tf.stack(columns), x.shape)


def test_an_estimate_without_autodiff_is_a_method_verdict_where_forbidden():
    assert code(toy(forbid=("finite_differences",)), by_differences) == "finite_differences"
    assert code(toy(), by_differences) != "finite_differences"


def test_a_method_verdict_waits_for_the_declared_mistakes():
    exercise = toy(forward_mode=True)
    assert code(exercise, lambda f, x: -gradient(f, x)) == "sign_flipped"
    assert code(exercise, gradient) == "not_forward_mode"
    assert code(exercise, lambda f, x: 2.0 * gradient(f, x)) == "not_forward_mode"


def test_errors_are_explained_by_the_call_behind_them():
    exercise = toy()

    def twice_on_one_tape(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        tape.gradient(y, x)
        return tape.gradient(y, x)

    def float32_upstream(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x, output_gradients=tf.ones(y.shape))

    def short_upstream(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tape.gradient(y, x, output_gradients=tf.ones(y.shape[1:], y.dtype))

    assert code(exercise, twice_on_one_tape) == "not_persistent"
    assert code(exercise, float32_upstream) == "float32_not_float64"
    assert "its target is float64" in exercise.evaluate(float32_upstream).message
    assert code(exercise, short_upstream) == "upstream_shape"


@pytest.mark.parametrize(
    "tangent, mistake",
    [
        (lambda x: tf.ones(x.shape), "float32_not_float64"),
        (lambda x: tf.ones(x.shape[1:], x.dtype), "tangent_shape"),
    ],
)
def test_a_tangent_of_another_dtype_or_shape_is_named(tangent, mistake):
    def answer(f, x):
        with tf.autodiff.ForwardAccumulator(x, tangent(x)) as acc:
            y = f(x)
        return acc.jvp(y)

    assert code(toy(), answer) == mistake


def test_a_jvp_of_a_value_computed_outside_the_accumulator_is_named():
    def outside(f, x):
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)):
            pass
        return tf.stack([tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)).jvp(f(x))])

    assert code(toy(), outside) == "computed_outside"


def per_example_exercise():
    """batch_jacobian of tanh(x) for a (4, 3) batch: diag(1 - y**2) per example."""
    return Exercise(
        number="99.3",
        title="A toy batch Jacobian",
        stars=1,
        minutes=1,
        harness=Function("`toy`", arguments=lambda p: (tf.tanh, tensor(p.x, p.dtype))),
        probes=lambda rng: batch_probes(rng)[:1],
        reference=lambda p: np.stack([np.diag(1 - np.tanh(v) ** 2) for v in p.x]),
    )


def test_zeros_from_batch_jacobian_are_explained_as_zeros():
    exercise = per_example_exercise()

    def unwatched(f, x):
        with tf.GradientTape() as tape:
            y = f(x)
        return tape.batch_jacobian(y, x)

    def swapped(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return tf.transpose(tape.batch_jacobian(x, y), [0, 2, 1])

    result = exercise.evaluate(unwatched)
    assert result.mistake == "unwatched_constant" and "zeros, not None" in result.message
    assert "is None" not in result.message
    assert code(exercise, swapped) == "swapped_arguments"


def test_zeros_on_a_watched_path_need_no_provenance():
    from autodiff_course.checking.provenance import needs_provenance
    from autodiff_course.checking.provenance import run_answer

    def constant(f, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = 0.0 * f(x)
        return tape.batch_jacobian(y, x)

    def unwatched(f, x):
        with tf.GradientTape() as tape:
            y = f(x)
        return tape.batch_jacobian(y, x)

    x = tf.ones((2, 3))
    assert not needs_provenance(run_answer(constant, tf.tanh, x, record=False).log)
    assert needs_provenance(run_answer(unwatched, tf.tanh, x, record=False).log)


def test_a_result_kept_from_an_earlier_call_is_state():
    exercise = toy(vary=negated)
    seen = {}

    def memorised(f, x):
        return seen.setdefault(tuple(x.shape), gradient(f, x))

    assert code(exercise, memorised) == "keeps_state"
    assert code(exercise, gradient) == "correct"
    assert "other numbers" in exercise.evaluate(gradient).message


def test_shaped_probes_add_every_axis_of_size_one():
    def sizes(rng):
        """Two sizes."""
        return [("float32", {"m": 3, "n": 2}), ("float64", {"m": 4, "n": 5})]

    def make(rng, dtype, s):
        return Probe(dtype, np.ones((s["m"], s["n"])), data=s)

    probes = Shaped(make, sizes).draw(np.random.default_rng(0))
    assert [(p.dtype, p.shape) for p in probes][-1] == ("float32", (1, 1))
    assert len(Shaped(make, sizes, size_one=False).draw(np.random.default_rng(0))) == 2
    assert "size 1" in Shaped(make, sizes).describe()


def test_a_tolerance_relative_to_the_largest_entry():
    tolerance = relative_to_largest(lambda p: np.array([[100.0, 0.0], [0.0, 1.0]]))
    assert tolerance(Probe("float32", None), "value").atol == pytest.approx(2e-4)
    assert tolerance(Probe("float64", None), "value").rtol == 1e-12


def test_state_changed_by_an_earlier_call_names_a_later_failure():
    def sized_once(f, x, _rows=[]):  # noqa: B006 - the state under test
        if not _rows:
            _rows.append(x.shape[0])
        return gradient(f, x)[: _rows[0]]

    result = toy().evaluate(sized_once)
    assert result.mistake == "keeps_state" and "its default `_rows`" in result.message


def test_state_set_once_is_named_even_while_the_numbers_are_right():
    def padded_once(f, x, _eye={}):  # noqa: B006 - the state under test
        if not _eye:
            _eye["eye"] = tf.eye(16, dtype=tf.float64)
        return gradient(f, x) * tf.cast(_eye["eye"][0, 0], x.dtype)

    assert code(toy(), padded_once) == "keeps_state"


def test_a_cache_filled_by_every_new_input_is_not_state_set_once():
    def memo_per_input_kind(f, x, _ones={}):  # noqa: B006 - the state under test
        ones = _ones.setdefault((x.dtype.name, tuple(x.shape)), tf.ones_like(x))
        return gradient(f, x) * ones

    assert code(toy(), memo_per_input_kind) == "correct"


def test_own_state_covers_defaults_attributes_closures_and_globals():
    from autodiff_course.checking.harness import own_state

    kept = {}

    def answer(x, cache=[]):  # noqa: B006 - the state under test
        return kept, np, cache

    answer.note = 1
    found = set(own_state(answer))
    assert {"its default `cache`", "its attribute `note`"} <= found
    assert {"the variable `kept` of its closure", "the global `np`"} <= found
