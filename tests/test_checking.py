"""The checker framework: verdicts, conversion, judging, observing how answers differentiate."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import ExerciseNotSolved
from autodiff_course.checking import Status
from autodiff_course.checking import Wrong
from autodiff_course.checking import answers
from autodiff_course.checking import evaluate
from autodiff_course.checking import exercise
from autodiff_course.checking import mistakes
from autodiff_course.checking.answers import as_values
from autodiff_course.checking.answers import call_answer
from autodiff_course.checking.answers import shape_of
from autodiff_course.checking.differentiating import forbid_jacobian
from autodiff_course.checking.differentiating import require_by_hand
from autodiff_course.checking.differentiating import require_forward_mode
from autodiff_course.checking.differentiating import require_nested
from autodiff_course.checking.differentiating import require_output_gradients
from autodiff_course.checking.judging import describe_difference
from autodiff_course.checking.judging import generic_mistake
from autodiff_course.checking.judging import matches
from autodiff_course.checking.judging import one_number_mistake
from autodiff_course.checking.observing import observe
from autodiff_course.checking.on_tape import OnTape
from autodiff_course.checking.probes import fresh_rng
from autodiff_course.checking.provenance import missing
from autodiff_course.checking.provenance import run_answer
from autodiff_course.checking.provenance import why_none
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Probe


@exercise("9.1", "double")
def double_check(answer):
    x = tf.constant([1.0, 2.0])
    got = as_values(call_answer(answer, x), shape=(2,), dtype=tf.float32)
    if matches(got, [2.0, 4.0]):
        return "well done"
    raise Wrong("not doubled", "other")


def stub(x):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "answer, status, mistake",
    [
        (lambda x: 2.0 * x, Status.CORRECT, None),
        (stub, Status.NOT_ATTEMPTED, "not_attempted"),
        (lambda x: x, Status.WRONG, "other"),
        (lambda x: None, Status.WRONG, "returned_none"),
        (lambda x: (2.0 * x).numpy(), Status.WRONG, "returned_numpy"),
        (lambda x: [2.0, 4.0], Status.WRONG, "returned_list"),
        (lambda x: tf.constant([2.0, 4.0, 6.0]), Status.WRONG, "wrong_shape"),
        (lambda x: tf.constant([[2.0, 4.0]]), Status.WRONG, "broadcast_shape"),
        (lambda x: tf.constant([2.0, 4.0], tf.float64), Status.WRONG, "wrong_dtype"),
        (lambda x: tf.complex(x, x), Status.WRONG, "complex_values"),
        (lambda x: "two", Status.WRONG, "wrong_type"),
        (lambda x: tf.ragged.constant([[1.0], [2.0, 3.0]]), Status.WRONG, "wrong_type"),
        (lambda x: 1 / 0, Status.WRONG, "raised"),
        (lambda x: tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0]), Status.WRONG, "raised"),
        (None, Status.WRONG, "not_callable"),
        (tf.constant(2.0), Status.WRONG, "not_callable"),
    ],
)
def test_verdicts_and_mistake_codes(answer, status, mistake):
    result = double_check.evaluate(answer)
    assert result.status is status
    assert result.mistake == mistake
    assert "Traceback" not in result.message


def test_tensorflow_errors_are_shortened_to_their_gist():
    result = double_check.evaluate(lambda x: tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0]))
    assert result.message.startswith("`<lambda>` raised InvalidArgumentError")
    assert "{{function_node" not in result.message


def test_an_error_is_shown_at_the_learners_own_line():
    def learner(x):
        doubled = 2.0 * x
        return doubled @ tf.ones((3, 3))  # a rank error inside TensorFlow

    result = double_check.evaluate(learner)
    assert result.mistake == "raised"
    assert "of your code: `return doubled @ tf.ones((3, 3))" in result.message


def test_a_raised_verdict_carries_the_whole_error_for_hooks_to_read():
    def learner(x):
        raise ValueError("first line\nsecond line names the cause")

    with pytest.raises(Wrong) as caught:
        call_answer(learner, 1.0)
    assert caught.value.mistake == "raised"
    assert caught.value.error == "ValueError: first line\nsecond line names the cause"
    assert "raised ValueError: first line (" in caught.value.hint  # the hint keeps the gist
    assert caught.value.about("probe").error == caught.value.error
    assert caught.value.explained("Why.", "other").error == caught.value.error


def test_a_slow_answer_is_stopped_in_plain_words(monkeypatch):
    monkeypatch.setattr(answers, "TIME_LIMIT_SECONDS", 0.3)

    def forever(x):
        while True:
            time.sleep(0.01)

    started = time.perf_counter()
    result = double_check.evaluate(forever)
    assert time.perf_counter() - started < 5
    assert result.mistake == "too_slow" and "still running after 0.3 s" in result.message


def test_except_exception_cannot_swallow_the_time_limit(monkeypatch):
    monkeypatch.setattr(answers, "TIME_LIMIT_SECONDS", 0.3)

    def stubborn(x):
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # noqa: BLE001 - what a learner might write
                pass

    assert double_check.evaluate(stubborn).mistake == "too_slow"


def test_check_prints_one_line_and_returns_none(capsys, monkeypatch):
    monkeypatch.delenv("AUTODIFF_COURSE_STRICT", raising=False)
    assert double_check(stub) is None
    printed = capsys.readouterr().out
    assert printed.startswith("⏳ Exercise 9.1 (double): not attempted yet.")
    assert printed.count("\n") == 1


@pytest.mark.parametrize("answer", [stub, lambda x: x])
def test_strict_mode_raises_unless_correct(answer, monkeypatch, capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_STRICT", "1")
    with pytest.raises(ExerciseNotSolved):
        double_check(answer)
    double_check(lambda x: 2.0 * x)  # correct: no exception
    assert "✅ Exercise 9.1 (double): correct. well done" in capsys.readouterr().out


def test_every_verdict_is_appended_to_the_report_file(tmp_path, monkeypatch, capsys):
    report = tmp_path / "verdicts.jsonl"
    monkeypatch.setenv("AUTODIFF_COURSE_REPORT", str(report))
    monkeypatch.delenv("AUTODIFF_COURSE_STRICT", raising=False)
    double_check(lambda x: 2.0 * x)
    double_check(lambda x: x)
    records = [json.loads(line) for line in report.read_text().splitlines()]
    assert all(len(r["seconds"]) == 1 for r in records)
    assert [(r["exercise"], r["status"], r["mistake"]) for r in records] == [
        ("9.1", "correct", None),
        ("9.1", "not yet", "other"),
    ]


def test_a_bug_in_an_evaluator_becomes_a_plain_message():
    def broken(answer):
        raise KeyError("oops")

    result = evaluate("9.2", "broken", broken, lambda: None)
    assert result.status is Status.WRONG and result.mistake == "unjudgeable"
    assert "could not judge" in result.message


def test_unregistered_mistake_codes_are_refused():
    with pytest.raises(ValueError, match="unregistered"):
        Wrong("hint", "no_such_mistake_code")
    mistakes.register({"demo_only_code": "used by this test"})
    assert Wrong("hint", "demo_only_code").mistake == "demo_only_code"
    with pytest.raises(ValueError, match="already registered"):
        mistakes.register({"demo_only_code": "something else"})


def test_float32_result_for_float64_input_is_named():
    with pytest.raises(Wrong) as caught:
        as_values(tf.constant([1.0]), dtype=tf.float64)
    assert caught.value.mistake == "float32_not_float64"


def test_an_answer_checked_outside_the_main_thread_runs_without_a_time_limit():
    import threading

    found = []
    thread = threading.Thread(target=lambda: found.append(double_check.evaluate(lambda x: 2 * x)))
    thread.start()
    thread.join()
    assert found[0].status is Status.CORRECT


def test_a_shape_that_cannot_be_read_is_left_to_as_values():
    assert shape_of(type("Odd", (), {"shape": 3})()) is None
    assert shape_of(tf.zeros((2, 1))) == (2, 1)


def test_one_number_names_only_a_simple_factor_of_a_nonzero_answer():
    assert one_number_mistake(-2.0, 2.0, "your slope")[0] == "sign_flipped"
    assert one_number_mistake(1.5, 2.0, "your slope")[1].startswith(
        "Your slope is the answer times 3/4"
    )
    assert one_number_mistake(2.0, 0.0, "your slope") is None
    assert one_number_mistake(2.0 * 1.2345, 2.0, "your slope") is None


def test_indexed_slices_are_read_as_the_dense_tensor_they_stand_for():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([1]), tf.constant([2, 2]))
    assert as_values(slices, shape=(2, 2)).tolist() == [[0.0, 0.0], [1.0, 2.0]]


def test_every_global_setting_an_answer_changes_is_put_back_and_named():
    import keras

    def settings():
        return (
            keras.config.floatx(),
            keras.mixed_precision.global_policy().name,
            tf.config.functions_run_eagerly(),
            np.get_printoptions(),
        )

    before = settings()

    def meddles(x):
        np.set_printoptions(precision=2)
        keras.config.set_floatx("float16")
        keras.mixed_precision.set_global_policy("mixed_float16")  # lesson 07's policy
        tf.config.run_functions_eagerly(not before[2])
        tf.random.set_seed(1)
        return 2.0 * x

    result = double_check.evaluate(meddles)
    assert result.mistake == "changed_global_state"
    for words in (
        "print options",
        "set_floatx",
        "set_global_policy",
        "run_functions_eagerly",
        "tf.random.set_seed",
    ):
        assert words in result.message
    assert settings() == before


def test_a_report_that_cannot_be_written_never_breaks_a_lesson(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AUTODIFF_COURSE_REPORT", str(tmp_path))  # a folder: it cannot be opened
    monkeypatch.setenv("AUTODIFF_COURSE_REPEAT", "twice")  # not a number: judged once
    monkeypatch.delenv("AUTODIFF_COURSE_STRICT", raising=False)
    double_check(lambda x: 2.0 * x)
    assert capsys.readouterr().out.startswith("✅ Exercise 9.1 (double): correct.")


# -- judging -----------------------------------------------------------------


def test_tolerances_are_relative_per_point():
    expected = np.array([1.0, 9.4e-14])
    assert matches(np.array([1.0, 9.4e-14 * (1 + 1e-6)]), expected)
    assert not matches(np.array([1.0, 0.0]), expected)  # 0 for a tiny value fails
    assert not matches(np.array([np.nan, 9.4e-14]), expected)
    assert not matches(np.array([1.0]), expected)


def test_the_example_point_really_differs_under_the_tolerance():
    expected = np.array([100.0, 0.880797077977882, 5.0])
    got = np.array([100.0 + 1e-9, 0.880796909332275, 5.0])  # the middle one is off
    text = describe_difference(got, expected, at=[1.0, 2.0, 3.0], rtol=1e-10)
    assert "at x = 2" in text
    assert "expected 0.8807971, got 0.8807969" in text


@pytest.mark.parametrize(
    "got, batch, code",
    [
        ([-1.0, -2.0, 3.0], None, "sign_flipped"),
        ([2.0, 4.0, -6.0], None, "scale_factor"),
        ([3.0, 6.0, -9.0], 3, "sum_not_mean"),
        ([1 / 3, 2 / 3, -1.0], 3, "mean_not_sum"),
        ([-3.0, 2.0, 1.0], None, "reversed_order"),
        ([1.5, 2.5, -2.5], None, "constant_offset"),
        ([7.0, 7.0, 7.0], None, "hard_coded"),
        ([0.0, 0.0, 0.0], None, "zeros"),
        ([1.0, np.nan, -3.0], None, "nan_or_inf"),
        ([1.0001, 2.0, -3.0], None, "approximation"),
        ([1.0, 5.0, 2.0], None, None),
    ],
)
def test_generic_mistakes(got, batch, code):
    found = generic_mistake(np.array(got), np.array([1.0, 2.0, -3.0]), batch=batch)
    assert (found[0] if found else None) == code


def test_transposed_matrices_are_named():
    expected = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert generic_mistake(expected.T, expected)[0] == "transposed"


def test_the_exercises_own_mistakes_come_before_the_generic_ones():
    from autodiff_course.checking.function import Function

    spec = Exercise(
        number="9.3",
        title="demo",
        stars=1,
        minutes=1,
        harness=Function(),
        probes=lambda rng: [Probe("float32", np.array([1.0, 2.0, 3.0]))],
        reference=lambda p: p.x,
        mistakes=(Mistake("forgot_upstream", "own hint", lambda p: 2.0 * p.x),),
        describe={"value": "x itself"},
    )
    own = spec.evaluate(lambda x: 2.0 * x)  # also the answer times 2: the own mistake wins
    assert (own.mistake, own.message) == ("forgot_upstream", "own hint")
    other = spec.evaluate(lambda x: tf.constant([1.0, 5.0, 2.0]))
    assert other.mistake == "other" and other.message.startswith("Your result should be x")
    assert "For example" in other.message


def test_fresh_probes_differ_per_call_but_not_per_process(monkeypatch):
    monkeypatch.setenv("AUTODIFF_COURSE_PROBE_SEED", "0")  # the default draws, under any seed
    first, second = fresh_rng("demo.1").uniform(size=3), fresh_rng("demo.1").uniform(size=3)
    assert not np.allclose(first, second)
    assert np.allclose(
        fresh_rng("demo.2").uniform(size=3),
        np.random.default_rng([__import__("zlib").crc32(b"demo.2"), 0]).uniform(size=3),
    )


def test_a_probe_seed_moves_every_check_to_other_draws(monkeypatch):
    monkeypatch.setenv("AUTODIFF_COURSE_PROBE_SEED", "17")
    moved = fresh_rng("demo.3").uniform(size=3)
    monkeypatch.setenv("AUTODIFF_COURSE_PROBE_SEED", "0")
    assert not np.allclose(moved, fresh_rng("demo.3").uniform(size=3))


# -- observing how an answer differentiates ----------------------------------

X = tf.constant([0.5, -1.5])


def observed_call(answer, *args):
    """``(value, log)``: the answer's result and how it differentiated."""
    with observe() as log:
        value = call_answer(answer, *args)
    return value, log


def by_tape(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softplus(x)
    return tape.gradient(y, x)


def by_alias(x):
    with tf.autodiff.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.softplus(x)
    return tape.gradient(y, x)


def by_hand(x):
    return tf.sigmoid(x)


def by_compute_gradient(x):
    theoretical, _ = tf.test.compute_gradient(tf.nn.softplus, [x])
    return tf.linalg.diag_part(tf.constant(theoretical[0]))


@pytest.mark.parametrize(
    "answer, used",
    [(by_tape, True), (by_alias, True), (by_compute_gradient, True), (by_hand, False)],
)
def test_by_hand_means_no_autodiff_at_all(answer, used):
    _, log = observed_call(answer, X)
    if used:
        with pytest.raises(Wrong) as caught:
            require_by_hand(log)
        assert caught.value.mistake == "used_tape"
    else:
        require_by_hand(log)


def test_output_gradients_are_seen():
    def with_dy(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.nn.softplus(x)
        return tape.gradient(y, x, output_gradients=2.0 * y)

    _, log = observed_call(with_dy, X)
    require_output_gradients(log)
    _, log = observed_call(by_tape, X)
    with pytest.raises(Wrong, match="without output_gradients"):
        require_output_gradients(log)


def nested_tapes(outer_watches=True, inner_gradient_in_outer_block=True):
    """The second derivative of x**3 with nested tapes, or one of its two classic slips."""

    def second_derivative(x):
        with tf.GradientTape() as outer:
            if outer_watches:
                outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = x**3
            if inner_gradient_in_outer_block:
                dy_dx = inner.gradient(y, x)
        if not inner_gradient_in_outer_block:
            dy_dx = inner.gradient(y, x)
        return outer.gradient(dy_dx, x)

    return second_derivative


def test_nested_tapes_are_recognised():
    value, log = observed_call(nested_tapes(), X)
    assert np.allclose(value.numpy(), 6.0 * X.numpy())
    require_nested(log)
    _, log = observed_call(by_tape, X)
    with pytest.raises(Wrong, match="one tape only"):
        require_nested(log)


@pytest.mark.parametrize(
    "answer, cause",
    [
        (nested_tapes(inner_gradient_in_outer_block=False), "gradient_outside_tape"),
        (nested_tapes(outer_watches=False), "outer_not_watching"),
    ],
)
def test_a_none_from_nested_tapes_is_diagnosed_from_what_happened(answer, cause):
    value, log = observed_call(answer, X)
    assert value is None
    assert why_none(log)[0] == cause


@pytest.mark.parametrize("make_tape", [tf.GradientTape, tf.autodiff.GradientTape])
def test_unwatched_and_integer_sources(make_tape):
    def unwatched(x):
        with make_tape() as tape:
            y = x * x
        return tape.gradient(y, x)

    def integer(x):
        x = tf.constant([1, 2])
        with make_tape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x)

    assert why_none(observed_call(unwatched, X)[1])[0] == "unwatched_constant"
    assert missing(run_answer(integer, X))[0] == "integer_dtype"


def test_forward_mode_is_told_from_reverse_mode():
    def forward(x):
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
            y = tf.nn.softplus(x)
        return acc.jvp(y)

    _, log = observed_call(forward, X)
    require_forward_mode(log)
    _, log = observed_call(by_tape, X)
    with pytest.raises(Wrong, match="reverse mode"):
        require_forward_mode(log)
    _, log = observed_call(by_hand, X)
    with pytest.raises(Wrong, match="finite differences or a formula"):
        require_forward_mode(log)


def test_jacobian_calls_are_seen():
    def with_jacobian(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x**2
        return tape.jacobian(y, x)

    _, log = observed_call(with_jacobian, X)
    with pytest.raises(Wrong) as caught:
        forbid_jacobian(log, "one backward pass per row.")
    assert caught.value.mistake == "used_jacobian"
    forbid_jacobian(observed_call(by_tape, X)[1], "")


@tf.custom_gradient
def stable_softplus(x):
    def grad_fn(upstream):
        return upstream * tf.sigmoid(x)

    return tf.nn.softplus(x), grad_fn


def recorded_on_tape(answer):
    """The answer recorded on the check's own tape, as the custom-gradient harness does."""
    harness = OnTape()
    tape, x, value, log, w = harness.record(answer, Probe("float32", X.numpy()))

    def gradient_for(upstream):
        return harness.gradients(tape, x, value, w, upstream, "float32")

    return harness, gradient_for, log


def test_the_custom_rule_is_seen_to_produce_the_gradient():
    harness, gradient_for, log = recorded_on_tape(stable_softplus)
    upstream = tf.constant([2.0, -3.0])
    gradient = gradient_for(upstream)[0]
    harness._require_rule(log, gradient_missing=False)
    ((upstreams, returned),) = log.custom_calls[0].backward
    assert np.allclose(upstreams[0].numpy(), upstream.numpy())
    assert np.allclose(returned[0].numpy(), gradient.numpy())


def test_no_custom_rule_is_named():
    harness, gradient_for, log = recorded_on_tape(tf.nn.softplus)
    gradient_for(tf.ones_like(X))
    with pytest.raises(Wrong) as caught:
        harness._require_rule(log, gradient_missing=False)
    assert caught.value.mistake == "custom_gradient_not_used"


def test_an_error_in_grad_fn_is_the_learners():
    @tf.custom_gradient
    def broken(x):
        def grad_fn(upstream):
            return upstream * undefined_name  # noqa: F821 - the learner's typo

        return tf.nn.softplus(x), grad_fn

    _, gradient_for, _ = recorded_on_tape(broken)
    with pytest.raises(Wrong) as caught:
        gradient_for(tf.ones_like(X))
    assert caught.value.mistake == "grad_fn_raised"
    assert "NameError" in caught.value.hint and "of your code" in caught.value.hint


def test_instruments_are_removed_after_observing():
    from tensorflow.python.eager import backprop

    before = backprop.GradientTape.gradient
    with pytest.raises(ZeroDivisionError):
        with observe():
            assert backprop.GradientTape.gradient is not before
            raise ZeroDivisionError
    assert backprop.GradientTape.gradient is before


def test_strict_checks_forces_strict_mode_in_a_block(monkeypatch, capsys):
    from autodiff_course.checking import strict_checks

    for previous in ("0", None):  # a setting of its own, or none at all, comes back after
        if previous is None:
            monkeypatch.delenv("AUTODIFF_COURSE_STRICT")
        else:
            monkeypatch.setenv("AUTODIFF_COURSE_STRICT", previous)
        with strict_checks():
            with pytest.raises(ExerciseNotSolved):
                double_check(stub)
        double_check(stub)  # strict mode is off again: only prints
        assert capsys.readouterr().out.count("not attempted yet") == 2
        assert os.environ.get("AUTODIFF_COURSE_STRICT") == previous


def test_shared_codes_may_be_registered_again_but_lessons_may_not_clash():
    mistakes.register({"forgot_upstream": "a lesson's own wording"})  # shared: kept as is
    assert mistakes.describe("forgot_upstream") == mistakes.SHARED["forgot_upstream"]
    mistakes.register({"demo_clash": "one meaning"})
    with pytest.raises(ValueError):
        mistakes.register({"demo_clash": "another meaning"})


def test_fresh_upstreams_are_never_one():
    from autodiff_course.checking.probes import upstream

    for call in range(50):
        values = upstream(fresh_rng(f"demo.upstream.{call}"), (40,))
        assert not np.any(np.abs(values) == 1.0)


def test_tiny_values_far_apart_are_not_called_close():
    found = generic_mistake(np.array([1.9e-22, 1.0]), np.array([3.5e-35, 1.0]))
    assert found is None or found[0] != "approximation"


def test_indices_print_as_plain_numbers():
    text = describe_difference(
        np.array([[1.0, 2.0], [3.0, 5.0]]), np.array([[1.0, 2.0], [3.0, 4.0]])
    )
    assert "at index [1, 1]" in text


@pytest.mark.parametrize("factor, words", [(0.4999999, "1/2"), (2 / 3, "2/3"), (1.37, "1.37")])
def test_factors_read_as_a_person_would_say_them(factor, words):
    found = generic_mistake(factor * np.array([1.0, 2.0, -3.0]), np.array([1.0, 2.0, -3.0]))
    assert found[0] == "scale_factor" and f"times {words}:" in found[1]


def test_hints_agree_with_a_plural_subject():
    found = generic_mistake(
        np.array([-1.0, -2.0]), np.array([1.0, 2.0]), what="your gradients for W"
    )
    assert found[1].startswith("Your gradients for W have the right size")


@pytest.mark.parametrize("where", ["after", "paused"])
def test_a_target_made_outside_the_block_is_named(where):
    def answer(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            if where == "paused":
                with tape.stop_recording():
                    y = x * x
        if where == "after":
            y = x * x
        return tape.gradient(y, x)

    run = run_answer(answer, X)
    assert run.value is None
    code, hint = missing(run)
    assert code == "computed_outside_tape"
    assert ("stop_recording" in hint) == (where == "paused")


def test_an_explained_verdict_keeps_its_structure_and_takes_the_new_code():
    wrong = Wrong("It raised ValueError.", "raised", point="At x = 1.", probe="a float32 x")
    read = wrong.explained("The axis came from x's rank.", "wrong_axis")
    assert (read.mistake, read.point, read.probe) == (
        "wrong_axis",
        "At x = 1.",
        "a float32 x",
    )
    assert read.hint == "It raised ValueError. The axis came from x's rank."
