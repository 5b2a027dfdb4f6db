"""Direct tests of the Keras harnesses: :mod:`autodiff_course.checking.keras_call` (an
answer called with Keras objects the check builds, and what a training step must do) and
:mod:`~autodiff_course.checking.keras_layer` (a layer class on the check's tape), on tiny
exercises of their own."""

from __future__ import annotations

from types import SimpleNamespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checking import keras_call
from autodiff_course.checking.keras_call import NUMPY_ON_SLICES
from autodiff_course.checking.keras_call import Built
from autodiff_course.checking.keras_call import KerasCall
from autodiff_course.checking.keras_call import dense_from_lookup
from autodiff_course.checking.keras_layer import KerasLayer
from autodiff_course.checking.observing import observe
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Probe
from autodiff_course.checking.verdicts import Wrong


def _build(p):
    variable = tf.Variable(np.asarray(p.x, np.float32))
    return Built((variable,), sources=[variable], details={"variable": variable})


def _read(value, p, built, log):
    return {"value": np.asarray(value, np.float64)}


DOUBLE = Exercise(
    number="99.1",
    title="Twice a variable's gradient",
    stars=1,
    minutes=1,
    harness=KerasCall(
        "`double`",
        build=_build,
        read=_read,
        untaped=("finite_differences", "No tape differentiated the variable."),
        errors=(("no attribute 'numpy'", "returned_numpy", "Keep it a tensor"),),
    ),
    probes=lambda rng: [Probe("float32", np.array([1.0, -2.0, 3.0]), label="three")] * 2,
    reference=lambda p: 2 * np.ones(3),
)


def _taped(variable):
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(2.0 * variable)
    return tape.gradient(total, variable)


def test_keras_call_accepts_a_taped_answer_and_names_right_numbers_without_a_tape():
    assert DOUBLE.evaluate(_taped).status is Status.CORRECT
    found = DOUBLE.evaluate(lambda v: tf.fill([3], 2.0))
    assert (found.status, found.mistake) == (Status.WRONG, "finite_differences")
    assert DOUBLE.evaluate(lambda v: tf.zeros([3])).mistake == "zeros"  # the numbers first


def test_keras_call_names_a_known_error_and_finds_state_kept_between_calls():
    def numpy_of_slices(variable):
        raise AttributeError("'IndexedSlices' object has no attribute 'numpy'")

    assert DOUBLE.evaluate(numpy_of_slices).mistake == "returned_numpy"
    calls = []

    def kept(variable):
        calls.append(1)
        return _taped(variable) * (1.0 if len(calls) < 3 else 3.0)

    assert DOUBLE.evaluate(kept).mistake == "keeps_state"


def test_keras_call_calls_the_first_probe_again_on_its_objects_put_back_by_reset():
    resets = []

    def reset(built):
        resets.append(built)
        built.details["variable"].assign([1.0, -2.0, 3.0])
        return built

    harness = KerasCall("`double`", build=_build, read=_read, reset=reset)
    exercise = Exercise(
        "99.3", "Twice a variable, again", 1, 1, harness, DOUBLE.probes, DOUBLE.reference
    )
    found = exercise.evaluate(_taped)
    assert found.status is Status.CORRECT and len(resets) == 1
    assert "its objects put back as built" in found.message
    calls = []

    def kept(variable):
        calls.append(1)
        return _taped(variable) * (1.0 if len(calls) < 3 else 3.0)

    assert exercise.evaluate(kept).mistake == "keeps_state"


def test_dense_from_lookup_names_slices_their_rows_and_accepts_a_dense_tensor():
    table = tf.Variable(tf.ones((4, 2)))
    with tf.GradientTape() as tape:
        rows = tf.gather(table, [1, 1, 3])
    slices = tape.gradient(rows, table)
    with pytest.raises(Wrong) as raised:
        dense_from_lookup(slices, "f", (4, 2), "float32", 3)
    assert raised.value.mistake == "indexed_slices_returned"
    with pytest.raises(Wrong) as raised:
        dense_from_lookup(slices.values, "f", (4, 2), "float32", 3)
    assert raised.value.mistake == "slices_values_only"
    dense = dense_from_lookup(tf.convert_to_tensor(slices), "f", (4, 2), "float32", 3)
    assert dense[1].tolist() == [2.0, 2.0] and NUMPY_ON_SLICES[1] == "numpy_on_indexed_slices"


def _model(frozen=False):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    model.layers[0].trainable = not frozen
    return model


def _step(model, scale, sources=None, by=None):
    x, y = tf.ones((2, 2)), tf.zeros((2, 1))
    with observe() as log:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
            target = loss * (scale if by is None else by)
        tape.gradient(target, sources or model.trainable_variables)
    return log, float(loss)


@pytest.mark.parametrize(
    "by, earlier, code",
    [
        (8.0, (), None),
        (1.0, (), "loss_not_scaled"),
        (4.0, (4.0,), "keeps_state"),
        (2.0**15, (), "hard_coded_scale"),
    ],
)
def test_demand_scaled_loss_reads_the_factor_of_the_tape_target(by, earlier, code):
    model = _model()
    log, loss = _step(model, 8.0, by=by)
    got = right = np.ones(3)
    if code is None:
        keras_call.demand_scaled_loss(log, model, loss, 8.0, earlier, (), got, right)
        return
    with pytest.raises(Wrong) as raised:
        keras_call.demand_scaled_loss(log, model, loss, 8.0, earlier, (), got, right)
    assert raised.value.mistake == code


def test_demand_trainable_sources_and_read_gradients():
    model = _model(frozen=True)
    log, _ = _step(model, 1.0, sources=model.weights)
    with pytest.raises(Wrong) as raised:
        keras_call.demand_trainable_sources(log, model)
    assert raised.value.mistake == "trained_frozen_layer"
    with pytest.raises(Wrong) as raised:
        keras_call.read_gradients([tf.zeros((2, 1))], model, "f")
    assert raised.value.mistake == "wrong_structure"
    found = keras_call.read_gradients([tf.ones((2, 1)), tf.ones((1,))], model, "f")
    assert found.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("times, code", [(1, None), (0, "not_applied"), (2, "applied_twice")])
def test_demand_applied_compares_the_step_with_what_was_returned(times, code):
    model = _model()
    before = [v.numpy().astype(np.float64) for v in model.weights]
    built = Built((), details={"model": model, "before": before})
    gradients = [tf.ones_like(v) for v in model.trainable_variables]
    for _ in range(times):
        keras.optimizers.SGD(0.5).apply(gradients, model.trainable_variables)
    got = np.concatenate([np.ravel(g) for g in gradients])
    tolerance = SimpleNamespace(rtol=1e-3, atol=1e-6)
    if code is None:
        keras_call.demand_applied(built, got, 0.5, got, tolerance)
        return
    with pytest.raises(Wrong) as raised:
        keras_call.demand_applied(built, got, 0.5, got, tolerance)
    assert raised.value.mistake == code


def _scale_layer(backward):
    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            @tf.custom_gradient
            def rule(x):
                w = tf.convert_to_tensor(self.w)

                def grad_fn(upstream, variables=None):
                    return upstream * w, [backward(upstream, x, variables)]

                return w * x, grad_fn

            return rule(x)

    return Scale


SCALE = Exercise(
    number="99.2",
    title="A scaling layer",
    stars=1,
    minutes=1,
    harness=KerasLayer("`Scale`"),
    probes=lambda rng: [
        Probe(
            "float16",
            np.array([[1.0, 2.0], [3.0, -1.0]]),
            upstream=np.array([[0.5, -1.5], [2.0, 1.25]]),
            data={"policy": "mixed_float16", "w": np.array([0.5, -2.0])},
        )
    ],
    reference=lambda p: {
        "value": p.w * p.x,
        "gradient": p.upstream * p.w,
        "grad_w": (p.upstream * p.x).sum(axis=0),
    },
)


def _in(dtype):
    def sum_in(upstream, x, variables):
        return tf.cast(tf.reduce_sum(tf.cast(upstream * x, dtype), axis=0), variables[0].dtype)

    return sum_in


@pytest.mark.parametrize(
    "backward, code",
    [
        (
            lambda u, x, v: tf.reduce_sum(tf.cast(u, v[0].dtype) * tf.cast(x, v[0].dtype), axis=0),
            None,
        ),
        (lambda u, x, v: tf.reduce_sum(u * x, axis=0), "weight_gradient_float16"),
        (lambda u, x, v: tf.cast(u * x, v[0].dtype), "variable_grad_not_reduced"),
        (lambda u, x, v: tf.reduce_sum(tf.cast(u * x, v[0].dtype)), "wrong_axis"),
        (lambda u, x, v: tf.reduce_sum(tf.cast(-u * x, v[0].dtype), axis=0), "sign_flipped"),
    ],
    ids=["right", "float16", "not reduced", "every axis", "sign"],
)
def test_keras_layer_reads_the_weight_gradient_in_its_own_shape_and_dtype(backward, code):
    result = SCALE.evaluate(_scale_layer(backward))
    if code is None:
        assert result.status is Status.CORRECT, result.message
    else:
        assert (result.status, result.mistake) == (Status.WRONG, code), result.message


def test_keras_layer_wants_a_layer_class():
    assert SCALE.evaluate(lambda dtype=None: 3.0).mistake == "not_a_function"
