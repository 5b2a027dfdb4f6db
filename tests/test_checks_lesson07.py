"""Lesson 07's checks: the catalogue of mistakes they must name, and right answers
written otherwise than the solutions that they must accept.

Every row was written from the lesson's text (its exercises say what a check can
verify), not from any check's code: ``(answer, mistake)`` for a wrong answer and the
code of the mistake the check must name, or a right answer alone. The codes are
those of ``autodiff_course.checks.lesson07.MISTAKES`` and the shared ones of
``autodiff_course.checking.mistakes``. Answers are built from short pieces:

* 7.1: a layer class from ``forward(a, x)`` and ``backward(upstream, a, x,
  variables)``, by :func:`sloped`; a few whole classes where the mistake is in the
  structure (no ``variables=``, the slope read outside the rule, no custom gradient);
* 7.2 and 7.4: training steps from the parts a learner varies (how the loss is
  scaled, what is differentiated, how the gradients are unscaled, clipped and
  applied), by :func:`step` and :func:`clipped_step`;
* 7.3: plain functions.

One row's code changed when the checks were built: an answer that differentiates
``model.weights`` keeping its ``None`` s is named ``trained_frozen_layer``, like one that
differentiates ``model.variables``: the same mistake (sources beyond
``model.trainable_variables``) gets one code, whatever the answer does with a ``None``.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checks import lesson07 as check


def rows(table):
    """pytest.param rows named by their mistake, numbered where a mistake repeats."""
    return [pytest.param(*row, id=f"{i}-{row[-1]}") for i, row in enumerate(table)]


def test_every_expected_code_is_catalogued_and_every_catalogued_code_has_a_row():
    from autodiff_course.checking import mistakes

    expected = {
        param.values[-1]
        for table in (SLOPED_MISTAKES, STEP_MISTAKES, EMBEDDING_MISTAKES, CLIPPED_MISTAKES)
        for param in table
    }
    unknown = {code for code in expected if code not in check.MISTAKES}
    assert {code for code in unknown if not mistakes.is_known(code)} == set()
    assert set(check.MISTAKES) - expected == set(), "a catalogued code with no row"
    assert {code for code in check.MISTAKES if code in mistakes.SHARED} == set()


# 7.1 a softplus layer with a learnable slope -------------------------------------


def sigmoid_backward(upstream, a, x, variables):
    """The solution's rule, written otherwise: float32 terms, a sum over tf.range axes."""
    s = tf.sigmoid(a * x)
    dtype = variables[0].dtype
    terms = tf.cast(upstream * 1, dtype) * tf.cast(x, dtype) * tf.cast(s, dtype)
    axes = tf.range(tf.rank(terms) - 1)
    return upstream * a * s, [tf.reduce_sum(terms, axis=axes)]


def sloped(forward, backward):
    """A SlopedSoftplus-shaped layer whose @tf.custom_gradient rule reads the slope inside."""

    class Layer(keras.layers.Layer):
        def build(self, input_shape):
            self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

        def call(self, x):
            @tf.custom_gradient
            def rule(x):
                a = tf.convert_to_tensor(self.slope)

                def grad_fn(upstream, variables=None):
                    return backward(upstream, a, x, variables)

                return forward(a, x), grad_fn

            return rule(x)

    return Layer


def softplus(a, x):
    return tf.nn.softplus(a * x)


def float32_everywhere(upstream, a, x, variables):
    """Everything in float32, then the input's gradient cast back to x's dtype."""
    up32, a32, x32 = (tf.cast(t, tf.float32) for t in (upstream, a, x))
    s = tf.sigmoid(a32 * x32)
    grad_slope = tf.reduce_sum(up32 * x32 * s, axis=list(range(len(x.shape) - 1)))
    return tf.cast(up32 * a32 * s, x.dtype), [grad_slope]


def exp_form_backward(upstream, a, x, variables):
    """sigmoid written as exp(z - softplus(z)), the sum with einsum over a flattened batch."""
    z = a * x
    s = tf.exp(z - tf.nn.softplus(z))
    terms = tf.reshape(
        tf.cast(upstream * 1, tf.float32) * tf.cast(x * s, tf.float32), (-1, x.shape[-1])
    )
    return upstream * a * s, [tf.einsum("bf->f", terms)]


class SlopedSoftplusStableByParts(keras.layers.Layer):
    """Right: softplus by parts, max(z, 0) + log1p(exp(-|z|)), the sigmoid from tf.math."""

    def build(self, input_shape):
        self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

    def call(self, x):
        @tf.custom_gradient
        def rule(x):
            a = tf.convert_to_tensor(self.slope)
            z = a * x
            value = tf.maximum(z, 0) + tf.math.log1p(tf.exp(-tf.abs(z)))

            def grad_fn(upstream, variables=None):
                s = tf.math.sigmoid(z)
                grad = (
                    tf.cast(upstream, tf.float32) * tf.cast(x, tf.float32) * tf.cast(s, tf.float32)
                )
                flat = tf.reshape(grad, (-1, tf.shape(grad)[-1]))
                return upstream * a * s, [tf.reduce_sum(flat, axis=0)]

            return value, grad_fn

        return rule(x)


@pytest.mark.parametrize(
    "answer",
    [
        sloped(softplus, sigmoid_backward),
        sloped(softplus, float32_everywhere),
        sloped(softplus, exp_form_backward),
        SlopedSoftplusStableByParts,
    ],
    ids=["tf.range axes", "float32 everywhere", "exp form and einsum", "softplus by parts"],
)
def test_sloped_softplus_accepts_right_layers(judge, answer):
    judge(check.sloped_softplus, answer)


class NoVariablesKeyword(keras.layers.Layer):
    def build(self, input_shape):
        self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

    def call(self, x):
        @tf.custom_gradient
        def rule(x):
            a = tf.convert_to_tensor(self.slope)

            def grad_fn(upstream):
                return upstream * a * tf.sigmoid(a * x)

            return tf.nn.softplus(a * x), grad_fn

        return rule(x)


def slope_read_outside_rule(with_its_gradient=False):
    """The slope read before the decorated function. Its gradient then comes from the
    recorded forward operations, not from grad_fn (the right numbers, the wrong way); or,
    ``with_its_gradient``, grad_fn returns it too, which TensorFlow refuses for a variable
    the rule never read."""

    class Layer(keras.layers.Layer):
        def build(self, input_shape):
            self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

        def call(self, x):
            a = tf.convert_to_tensor(self.slope)

            @tf.custom_gradient
            def rule(x):
                def grad_fn(upstream, variables=None):
                    s = tf.sigmoid(a * x)
                    if not with_its_gradient:
                        return upstream * a * s
                    terms = tf.cast(upstream, tf.float32) * tf.cast(x * s, tf.float32)
                    return upstream * a * s, [tf.reduce_sum(terms, axis=tf.range(tf.rank(x) - 1))]

                return tf.nn.softplus(a * x), grad_fn

            return rule(x)

    return Layer


class NoCustomGradient(keras.layers.Layer):
    """The right numbers without any rule of one's own."""

    def build(self, input_shape):
        self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

    def call(self, x):
        return tf.nn.softplus(self.slope * x)


class StaleSigmoid(keras.layers.Layer):
    """State kept between calls: the sigmoid of the first call is reused ever after."""

    def build(self, input_shape):
        self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")
        self.kept = None

    def call(self, x):
        @tf.custom_gradient
        def rule(x):
            a = tf.convert_to_tensor(self.slope)
            if self.kept is None:
                self.kept = tf.sigmoid(a * x)
            s = self.kept

            def grad_fn(upstream, variables=None):
                terms = tf.cast(upstream, tf.float32) * tf.cast(x * s, tf.float32)
                return upstream * a * s, [
                    tf.reduce_sum(tf.reshape(terms, (-1, x.shape[-1])), axis=0)
                ]

            return tf.nn.softplus(a * x), grad_fn

        return rule(x)


class LatestInput(keras.layers.Layer):
    """The input kept on self: grad_fn reads the latest call's."""

    def build(self, input_shape):
        self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

    def call(self, x):
        self.last_x = x

        @tf.custom_gradient
        def rule(x):
            a = tf.convert_to_tensor(self.slope)

            def grad_fn(upstream, variables=None):
                return sigmoid_backward(upstream, a, self.last_x, variables)

            return tf.nn.softplus(a * x), grad_fn

        return rule(x)


def in_float32(terms):
    return tf.cast(terms, tf.float32)


def flat_sum(terms):
    return tf.reduce_sum(tf.reshape(terms, (-1, tf.shape(terms)[-1])), axis=0)


def backward_with(grad_x, grad_slope):
    """A backward rule from two formulas of (upstream, a, x, s)."""

    def backward(upstream, a, x, variables):
        s = tf.sigmoid(a * x)
        return grad_x(upstream, a, x, s), grad_slope(upstream, a, x, s)

    return backward


def documented_sigmoid_backward(upstream, a, x, variables):
    """sigmoid as 1 - 1/(1 + exp(a x)), lesson 03's documented rule: 0.0 far below 0."""
    s = 1.0 - 1.0 / (1.0 + tf.exp(a * x))
    terms = tf.cast(upstream * x * s, tf.float32)
    return upstream * a * s, [tf.reduce_sum(terms, axis=tf.range(tf.rank(terms) - 1))]


def x_gradient_in_float32(upstream, a, x, variables):
    """Everything in float32, the input's gradient too: x's gradient is not in x's dtype."""
    up32, a32, x32 = (tf.cast(t, tf.float32) for t in (upstream, a, x))
    s = tf.sigmoid(a32 * x32)
    return up32 * a32 * s, [flat_sum(up32 * x32 * s)]


def right_x(upstream, a, x, s):
    return upstream * a * s


def right_slope(upstream, a, x, s):
    return [flat_sum(in_float32(upstream) * in_float32(x) * in_float32(s))]


SLOPED_MISTAKES = rows(
    [
        # the variables= protocol and where the slope is read
        (NoVariablesKeyword, "no_variables_keyword"),
        (slope_read_outside_rule(), "variable_outside_rule"),
        (slope_read_outside_rule(with_its_gradient=True), "grad_fn_raised"),
        (NoCustomGradient, "custom_gradient_not_used"),
        (
            sloped(softplus, backward_with(right_x, lambda u, a, x, s: right_slope(u, a, x, s)[0])),
            "variable_grads_not_list",
        ),
        (
            sloped(softplus, backward_with(right_x, lambda u, a, x, s: [None])),
            "no_variable_gradient",
        ),
        # the slope's gradient under mixed_float16
        (
            sloped(softplus, backward_with(right_x, lambda u, a, x, s: [flat_sum(u * x * s)])),
            "weight_gradient_float16",
        ),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: [in_float32(flat_sum(u * x * s))]),
            ),
            "summed_in_float16",
        ),
        # its shape: the sum over every axis but the last
        (
            sloped(
                softplus,
                backward_with(
                    right_x, lambda u, a, x, s: [in_float32(u) * in_float32(x) * in_float32(s)]
                ),
            ),
            "variable_grad_not_reduced",
        ),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: [tf.reduce_sum(in_float32(u * x * s))]),
            ),
            "wrong_axis",
        ),
        (
            sloped(
                softplus,
                backward_with(
                    right_x,
                    lambda u, a, x, s: [
                        tf.reduce_sum(in_float32(u) * in_float32(x) * in_float32(s), axis=0)
                    ],
                ),
            ),
            "wrong_axis",
        ),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: [tf.squeeze(right_slope(u, a, x, s)[0])]),
            ),
            "squeezed_size_one_axis",
        ),
        # the formulas
        (sloped(softplus, backward_with(lambda u, a, x, s: a * s, right_slope)), "forgot_upstream"),
        (sloped(softplus, backward_with(lambda u, a, x, s: u * s, right_slope)), "forgot_slope"),
        (
            sloped(softplus, backward_with(lambda u, a, x, s: u * a * tf.sigmoid(x), right_slope)),
            "sigmoid_of_x",
        ),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: right_slope(u, a, x, tf.sigmoid(x))),
            ),
            "sigmoid_of_x",
        ),
        (
            sloped(
                softplus,
                backward_with(
                    right_x, lambda u, a, x, s: [flat_sum(in_float32(u) * in_float32(s))]
                ),
            ),
            "forgot_x",
        ),
        (
            sloped(softplus, backward_with(lambda u, a, x, s: -u * a * s, right_slope)),
            "sign_flipped",
        ),
        (
            sloped(
                softplus, backward_with(right_x, lambda u, a, x, s: [-right_slope(u, a, x, s)[0]])
            ),
            "sign_flipped",
        ),
        (
            sloped(softplus, backward_with(lambda u, a, x, s: 2.0 * u * a * s, right_slope)),
            "scale_factor",
        ),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: [tf.ones_like(flat_sum(in_float32(x)))]),
            ),
            "hard_coded",
        ),
        (sloped(lambda a, x: tf.math.log(1.0 + tf.exp(a * x)), sigmoid_backward), "naive_softplus"),
        (
            sloped(
                softplus,
                backward_with(
                    right_x,
                    lambda u, a, x, s: [
                        tf.reduce_mean(
                            tf.reshape(in_float32(u * x * s), (-1, tf.shape(x)[-1])), axis=0
                        )
                    ],
                ),
            ),
            "mean_not_sum",
        ),
        (
            sloped(
                softplus,
                backward_with(
                    lambda u, a, x, s: u * x * s,
                    lambda u, a, x, s: [flat_sum(in_float32(u) * in_float32(a) * in_float32(s))],
                ),
            ),
            "swapped_gradients",
        ),
        (
            sloped(
                softplus,
                backward_with(
                    lambda u, a, x, s: u * a * (1 - s),
                    lambda u, a, x, s: [
                        flat_sum(in_float32(u) * in_float32(x) * (1 - in_float32(s)))
                    ],
                ),
            ),
            "sigmoid_of_minus_x",
        ),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: right_slope(u, a, x, 1 - s)),
            ),
            "sigmoid_of_minus_x",
        ),  # in the slope's gradient only
        (sloped(softplus, documented_sigmoid_backward), "cancellation"),
        (
            sloped(
                softplus,
                backward_with(right_x, lambda u, a, x, s: [flat_sum(in_float32(u * x * s))]),
            ),
            "multiplied_in_float16",
        ),  # each term formed in float16, only the product cast: 2**15 * x * s overflows
        (sloped(softplus, x_gradient_in_float32), "wrong_dtype"),
        # state kept between calls: right on a layer's first call only
        (StaleSigmoid, "keeps_state"),
        (LatestInput, "keeps_state"),  # one layer called twice before differentiating
    ]
)


@pytest.mark.parametrize("answer, mistake", SLOPED_MISTAKES)
def test_sloped_softplus_names_the_mistake(judge, answer, mistake):
    judge(check.sloped_softplus, answer, mistake)


def test_sloped_softplus_names_which_gradient_has_the_wrong_dtype():
    message = check.sloped_softplus.evaluate(sloped(softplus, x_gradient_in_float32)).message
    assert "The gradient for x is float32, but x is float16" in message, message


def test_sloped_softplus_stub_is_not_attempted(judge):
    class Stub(keras.layers.Layer):
        def build(self, input_shape):
            self.slope = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="slope")

        def call(self, x):
            raise NotImplementedError()

    judge(check.sloped_softplus, Stub, "not_attempted")


# 7.2 a loss-scaled training step by hand -------------------------------------------


def mean_squared(model, x, y):
    return tf.reduce_mean((tf.cast(model(x), tf.float32) - y) ** 2)


def scaled_by_loss(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y) * loss_scale
    return tape.gradient(loss, sources)


def scaled_by_dy(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y)
    return tape.gradient(loss, sources, output_gradients=tf.constant(loss_scale, tf.float32))


def not_scaled(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y)
    return tape.gradient(loss, sources)


def scaled_by_keras_loss(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        prediction = tf.cast(model(x), tf.float32)
        loss = keras.losses.MeanSquaredError()(y, prediction) * loss_scale
    return tape.gradient(loss, sources)


def step(gradients_of=scaled_by_loss, unscale=None, sources="trainable", apply=None, returned=None):
    """A train_step made of parts: how it differentiates, unscales, applies and returns."""

    def train_step(model, optimizer, x, y, loss_scale):
        variables = model.trainable_variables if sources == "trainable" else model.variables
        scaled = gradients_of(model, x, y, loss_scale, variables)
        gradients = (unscale or (lambda gs, s: [g / s for g in gs]))(scaled, loss_scale)
        (apply or (lambda opt, gs, vs: opt.apply(gs, vs)))(optimizer, gradients, variables)
        return (returned or (lambda gs, scaled: gs))(gradients, scaled)

    return train_step


def step_with_apply_gradients(model, optimizer, x, y, loss_scale):
    """Right: output_gradients, a multiplication by 1 / loss_scale, apply_gradients."""
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.cast(model(x, training=True), tf.float32) - y))
    scaled = tape.gradient(
        loss, model.trainable_variables, output_gradients=tf.constant(loss_scale)
    )
    gradients = [g * (1.0 / loss_scale) for g in scaled]
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return gradients


@pytest.mark.parametrize(
    "answer",
    [
        step(scaled_by_dy),
        step(scaled_by_keras_loss),
        step(unscale=lambda gs, s: [tf.math.divide(g, tf.constant(s, g.dtype)) for g in gs]),
        step_with_apply_gradients,
        step(returned=lambda gs, scaled: tuple(gs)),
    ],
    ids=[
        "output_gradients",
        "keras MeanSquaredError",
        "tf.math.divide",
        "apply_gradients",
        "a tuple",
    ],
)
def test_train_step_accepts_right_steps(judge, answer):
    judge(check.train_step, answer)


def loss_in_float16(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        output = model(x)
        loss = tf.reduce_mean((output - tf.cast(y, output.dtype)) ** 2) * loss_scale
    return tape.gradient(loss, sources)


def squeezed(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.squeeze(tf.cast(model(x), tf.float32)) - y) ** 2) * loss_scale
    return tape.gradient(loss, sources)


def summed(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum((tf.cast(model(x), tf.float32) - y) ** 2) * loss_scale
    return tape.gradient(loss, sources)


def hard_coded_scale(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y) * 2.0**15
    return [g / 2.0**15 for g in tape.gradient(loss, sources)]


def scaled_twice(model, x, y, loss_scale, sources):
    """The loss times loss_scale, and output_gradients=loss_scale as well."""
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y) * loss_scale
    return tape.gradient(loss, sources, output_gradients=tf.constant(loss_scale, tf.float32))


def scale_the_gradients(model, x, y, loss_scale, sources):
    """The scale multiplies the gradients after the tape: they have already underflowed."""
    return [g * loss_scale for g in not_scaled(model, x, y, loss_scale, sources)]


def float32_copy(model, x, y, loss_scale, sources):
    """The right numbers by the wrong method: a float32 twin of the model, no loss scale."""
    twin = keras.models.clone_model(
        model,
        clone_function=lambda layer: layer.__class__.from_config(
            {**layer.get_config(), "dtype": "float32"}
        ),
    )
    twin.set_weights(model.get_weights())
    with tf.GradientTape() as tape:
        loss = mean_squared(twin, x, y)
    return tape.gradient(loss, twin.trainable_variables)


def wrapped_in_loss_scale_optimizer(model, optimizer, x, y, loss_scale):
    """Keras's own loss scaling around the given optimizer: its scale, not the one given."""
    wrapped = keras.optimizers.LossScaleOptimizer(optimizer)
    with tf.GradientTape() as tape:
        scaled_loss = wrapped.scale_loss(mean_squared(model, x, y))
    scaled = tape.gradient(scaled_loss, model.trainable_variables)
    wrapped.apply(scaled, model.trainable_variables)
    return [g / wrapped.initial_scale for g in scaled]


_first_scale: dict = {}


def first_scale_kept(model, optimizer, x, y, loss_scale):
    """State kept between calls: the loss scale of the first call is used ever after."""
    scale = _first_scale.setdefault("scale", loss_scale)
    return step()(model, optimizer, x, y, scale)


def first_scale_kept_to_unscale():
    """State kept between calls: the loss scaled by each call's loss_scale, the gradients
    divided by the first call's (a fresh answer, with nothing kept yet)."""
    kept = {}

    def train_step(model, optimizer, x, y, loss_scale):
        first = kept.setdefault("scale", loss_scale)
        return step(unscale=lambda gs, s: [g / first for g in gs])(
            model, optimizer, x, y, loss_scale
        )

    return train_step


def zeros_step(model, optimizer, x, y, loss_scale):
    gradients = [tf.zeros_like(v) for v in model.trainable_variables]
    optimizer.apply(gradients, model.trainable_variables)
    return gradients


def applied_twice(optimizer, gradients, variables):
    optimizer.apply(gradients, variables)
    optimizer.apply(gradients, variables)


def none_kept(model, optimizer, x, y, loss_scale):
    """Every weight differentiated, the Nones kept: a non-trainable weight gives None."""
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y) * loss_scale
    gradients = [None if g is None else g / loss_scale for g in tape.gradient(loss, model.weights)]
    optimizer.apply(gradients, model.weights)
    return gradients


def divided_by_the_scale(model, x, y, loss_scale, sources):
    """The scale the wrong way round: the loss divided, dy made smaller."""
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y) / loss_scale
    return tape.gradient(loss, sources)


def summed_over_outputs(model, x, y, loss_scale, sources):
    """Each example's squared errors summed, then averaged: a factor of the outputs."""
    with tf.GradientTape() as tape:
        squared = (tf.cast(model(x), tf.float32) - y) ** 2
        loss = tf.reduce_mean(tf.reduce_sum(squared, axis=-1)) * loss_scale
    return tape.gradient(loss, sources)


def loss_scaled_after_block(model, x, y, loss_scale, sources):
    """The scale applied after the block: tape.gradient returns None, the division fails."""
    with tf.GradientTape() as tape:
        loss = mean_squared(model, x, y)
    return tape.gradient(loss * loss_scale, sources)


def uncast_loss(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2) * loss_scale  # float16 minus float32
    return tape.gradient(loss, sources)


def watching(model, x, y, loss_scale, sources):
    with tf.GradientTape() as tape:
        tape.watch(sources)  # Keras Variables: a ValueError
        loss = mean_squared(model, x, y) * loss_scale
    return tape.gradient(loss, sources)


STEP_MISTAKES = rows(
    [
        (step(loss_scaled_after_block), "computed_outside_tape"),
        (step(watching), "watched_keras_variable"),
        (step(uncast_loss), "float16_meets_float32"),
        # scaling and unscaling
        (step(not_scaled), "loss_not_scaled"),
        (step(scale_the_gradients, unscale=lambda gs, s: [g / s for g in gs]), "loss_not_scaled"),
        (step(scale_the_gradients, unscale=lambda gs, s: gs), "scaled_gradients_not_loss"),
        (step(unscale=lambda gs, s: gs), "forgot_unscale"),
        (step(unscale=lambda gs, s: [g / s / s for g in gs]), "unscaled_twice"),
        (
            step(
                unscale=lambda gs, s: [tf.cast(tf.cast(g, tf.float16) / s, tf.float32) for g in gs]
            ),
            "unscaled_in_float16",
        ),
        (step(unscale=lambda gs, s: [g * s for g in gs]), "multiplied_by_scale"),
        (step(hard_coded_scale, unscale=lambda gs, s: gs), "hard_coded_scale"),
        (step(scaled_twice), "scaled_twice"),
        (wrapped_in_loss_scale_optimizer, "hard_coded_scale"),
        (first_scale_kept, "keeps_state"),
        (first_scale_kept_to_unscale(), "keeps_state"),  # the answer times this scale / the first
        (step(loss_in_float16), "loss_in_float16"),
        (step(divided_by_the_scale, unscale=lambda gs, s: [g * s for g in gs]), "loss_not_scaled"),
        # the loss itself
        (step(summed), "sum_not_mean"),
        (step(summed_over_outputs), "scale_factor"),
        (step(squeezed), "squeezed_size_one_axis"),
        # what is differentiated and applied
        (step(sources="all"), "trained_frozen_layer"),
        (none_kept, "trained_frozen_layer"),
        (step(apply=lambda opt, gs, vs: None), "not_applied"),
        (
            step(apply=lambda opt, gs, vs: opt.apply([-g for g in gs], vs)),
            "applied_other_than_returned",
        ),
        (step(returned=lambda gs, scaled: scaled), "applied_other_than_returned"),
        (step(apply=applied_twice), "applied_twice"),
        (step(returned=lambda gs, scaled: [-g for g in gs]), "sign_flipped"),
        # the right numbers by the wrong method, and no method at all
        (step(float32_copy, unscale=lambda gs, s: gs), "float32_copy"),
        (zeros_step, "zeros"),
        (step(unscale=lambda gs, s: [g // s for g in gs]), "floor_division"),
    ]
)


@pytest.mark.parametrize("answer, mistake", STEP_MISTAKES)
def test_train_step_names_the_mistake(judge, answer, mistake):
    judge(check.train_step, answer, mistake)


def test_train_step_names_a_scale_kept_to_unscale_by_the_two_scales():
    message = check.train_step.evaluate(first_scale_kept_to_unscale()).message
    assert "the loss_scale of an earlier call" in message, message
    assert "state kept between calls" in message and "times the answer" in message, message


# 7.3 dense gradients from an embedding lookup --------------------------------------


def lookup_gradient(embedding, ids, upstream):
    with tf.GradientTape() as tape:
        vectors = embedding(ids)
    return tape.gradient(vectors, embedding.embeddings, output_gradients=upstream)


def by_gather_and_sum(embedding, ids, upstream):
    """Right: tf.gather on the table, the sum differentiated, tf.convert_to_tensor."""
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(
            tf.cast(upstream, tf.float64)
            * tf.cast(tf.gather(embedding.embeddings, ids), tf.float64)
        )
    return tf.convert_to_tensor(tape.gradient(total, embedding.embeddings))


def by_segment_sum_of_slices(embedding, ids, upstream):
    """Right: the tape's slices converted with a segment sum of their own."""
    slices = lookup_gradient(embedding, ids, upstream)
    return tf.math.unsorted_segment_sum(
        slices.values, slices.indices, tf.shape(embedding.embeddings)[0]
    )


def by_scatter_nd_of_slices(embedding, ids, upstream):
    """Right: tf.scatter_nd adds repeated indices."""
    slices = lookup_gradient(embedding, ids, upstream)
    indices = tf.cast(slices.indices, tf.int64)[:, None]
    return tf.scatter_nd(indices, slices.values, tf.shape(embedding.embeddings, tf.int64))


@pytest.mark.parametrize(
    "answer",
    [by_gather_and_sum, by_segment_sum_of_slices, by_scatter_nd_of_slices],
    ids=["gather and sum", "segment sum of the slices", "scatter_nd of the slices"],
)
def test_embedding_gradient_accepts_right_conversions(judge, answer):
    judge(check.embedding_gradient, answer)


def duplicates_overwritten(embedding, ids, upstream):
    slices = lookup_gradient(embedding, ids, upstream)
    zeros = tf.zeros_like(embedding.embeddings)
    return tf.tensor_scatter_nd_update(
        zeros, slices.indices[:, None], tf.cast(slices.values, zeros.dtype)
    )


def by_hand_numpy(embedding, ids, upstream):
    dimension = embedding.embeddings.shape[-1]
    total = np.zeros(embedding.embeddings.shape)
    np.add.at(total, ids.numpy().reshape(-1), upstream.numpy().reshape(-1, dimension))
    return tf.constant(total, embedding.embeddings.dtype)


def by_hand_segment_sum(embedding, ids, upstream):
    dimension = embedding.embeddings.shape[-1]
    rows_ = tf.reshape(tf.cast(upstream, embedding.embeddings.dtype), (-1, dimension))
    return tf.math.unsorted_segment_sum(
        rows_, tf.reshape(ids, (-1,)), embedding.embeddings.shape[0]
    )


def cached_per_layer():
    """The gradient kept per layer object: the same layer with new ids gets the old one."""
    cache = {}

    def embedding_gradient(embedding, ids, upstream):
        if id(embedding) not in cache:
            cache[id(embedding)] = tf.convert_to_tensor(lookup_gradient(embedding, ids, upstream))
        return cache[id(embedding)]

    return embedding_gradient


def watched_table(embedding, ids, upstream):
    with tf.GradientTape() as tape:
        tape.watch(embedding.embeddings)  # a Keras Variable: a ValueError
        vectors = embedding(ids)
    return tf.convert_to_tensor(tape.gradient(vectors, embedding.embeddings, upstream))


def summed_after_block(embedding, ids, upstream):
    with tf.GradientTape() as tape:
        vectors = embedding(ids)
    total = tf.reduce_sum(tf.cast(upstream, vectors.dtype) * vectors)  # not recorded
    return tf.convert_to_tensor(tape.gradient(total, embedding.embeddings))


def looked_up_before_block(embedding, ids, upstream):
    vectors = embedding(ids)  # not recorded
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(tf.cast(upstream, vectors.dtype) * vectors)
    return tf.convert_to_tensor(tape.gradient(total, embedding.embeddings))


def wrt_vectors(embedding, ids, upstream):
    with tf.GradientTape() as tape:
        vectors = embedding(ids)
        tape.watch(vectors)
    return tf.convert_to_tensor(tape.gradient(vectors, vectors, upstream))


def looked_up_in_float32(embedding, ids, upstream):
    with tf.GradientTape() as tape:
        vectors = tf.cast(embedding(ids), tf.float32)
        total = tf.reduce_sum(tf.cast(upstream, tf.float32) * vectors)
    return tf.convert_to_tensor(tape.gradient(total, embedding.embeddings))


def rows_up_to_the_largest_id(embedding, ids, upstream):
    """A dense gradient max(ids) + 1 rows tall, not the table's size."""
    slices = lookup_gradient(embedding, ids, upstream)
    return tf.math.unsorted_segment_sum(slices.values, slices.indices, tf.reduce_max(ids) + 1)


def gathered_past_the_layer(embedding, ids, upstream):
    """The rows looked up with tf.gather on the table, not through the layer."""
    with tf.GradientTape() as tape:
        vectors = tf.gather(embedding.embeddings, ids)
    gradient = tape.gradient(vectors, embedding.embeddings, output_gradients=upstream)
    return tf.convert_to_tensor(gradient)


def gradients_of_the_variables_list(embedding, ids, upstream):
    """The gradients of the list embedding.trainable_variables, stacked: (1, rows, width)."""
    with tf.GradientTape() as tape:
        vectors = embedding(ids)
    found = tape.gradient(vectors, embedding.trainable_variables, output_gradients=upstream)
    return tf.stack([tf.convert_to_tensor(g) for g in found])


def gradients_list_converted(embedding, ids, upstream):
    """tf.convert_to_tensor of the list tape.gradient returns for a list of sources."""
    with tf.GradientTape() as tape:
        vectors = embedding(ids)
    found = tape.gradient(vectors, embedding.trainable_variables, output_gradients=upstream)
    return tf.convert_to_tensor(found)


def mean_of_the_lookups(embedding, ids, upstream):
    """The gradient of the mean of upstream * embedding(ids), not of their sum."""
    with tf.GradientTape() as tape:
        total = tf.reduce_mean(tf.cast(upstream, tf.float32) * tf.cast(embedding(ids), tf.float32))
    return tf.convert_to_tensor(tape.gradient(total, embedding.embeddings))


EMBEDDING_MISTAKES = rows(
    [
        (summed_after_block, "computed_outside_tape"),
        (looked_up_before_block, "no_recorded_path"),
        (wrt_vectors, "wrt_lookup_output"),
        (looked_up_in_float32, "float32_not_float64"),
        (watched_table, "watched_keras_variable"),
        (cached_per_layer(), "keeps_state"),
        (lookup_gradient, "indexed_slices_returned"),
        (lambda e, i, u: lookup_gradient(e, i, u).numpy(), "numpy_on_indexed_slices"),
        (lambda e, i, u: lookup_gradient(e, i, u).values, "slices_values_only"),
        (lambda e, i, u: tf.convert_to_tensor(lookup_gradient(e, i, u)).numpy(), "returned_numpy"),
        (duplicates_overwritten, "duplicates_not_summed"),
        (
            lambda e, i, u: tf.convert_to_tensor(lookup_gradient(e, i, tf.ones_like(u))),
            "forgot_upstream",
        ),
        (lambda e, i, u: -tf.convert_to_tensor(lookup_gradient(e, i, u)), "sign_flipped"),
        (
            lambda e, i, u: tf.cast(tf.convert_to_tensor(lookup_gradient(e, i, u)), tf.float32),
            "float32_not_float64",
        ),
        (
            lambda e, i, u: tf.cast(tf.convert_to_tensor(lookup_gradient(e, i, u)), u.dtype),
            "wrong_dtype",
        ),
        (rows_up_to_the_largest_id, "rows_from_ids"),
        (gathered_past_the_layer, "wrong_dtype"),  # no cast: float16 under mixed precision
        (gradients_of_the_variables_list, "wrong_structure"),
        (gradients_list_converted, "wrong_structure"),
        (mean_of_the_lookups, "mean_not_sum"),
        (by_hand_numpy, "summed_by_hand"),
        (by_hand_segment_sum, "summed_by_hand"),
        (lambda e, i, u: tf.zeros_like(e.embeddings), "zeros"),
    ]
)


@pytest.mark.parametrize("answer, mistake", EMBEDDING_MISTAKES)
def test_embedding_gradient_names_the_mistake(judge, answer, mistake):
    judge(check.embedding_gradient, answer, mistake)


def test_embedding_hints_name_the_rows_the_dtype_and_the_mean():
    message = check.embedding_gradient.evaluate(rows_up_to_the_largest_id).message
    assert "largest looked up" in message and "embedding.embeddings.shape[0]" in message
    cast = lambda e, i, u: tf.cast(tf.convert_to_tensor(lookup_gradient(e, i, u)), u.dtype)  # noqa: E731
    message = check.embedding_gradient.evaluate(cast).message
    assert "the dtype of the layer's output and of upstream" in message, message
    message = check.embedding_gradient.evaluate(gathered_past_the_layer).message
    assert "tf.gather(embedding.embeddings, ids)) has no cast" in message, message
    message = check.embedding_gradient.evaluate(mean_of_the_lookups).message
    assert "mean (tf.reduce_mean)" in message, message


# 7.4 clip by global norm, after unscaling ------------------------------------------


def clipped_step(
    gradients_of=scaled_by_loss, order="unscale first", clip=None, norm=None, apply=None
):
    """A clipped_train_step made of parts: the order of unscaling and clipping, the clip,
    the norm it returns and what it applies."""

    def clip_global(gradients, clip_norm):
        return tf.clip_by_global_norm(gradients, clip_norm)

    def clipped_train_step(model, optimizer, x, y, loss_scale, clip_norm):
        variables = model.trainable_variables
        scaled = gradients_of(model, x, y, loss_scale, variables)
        unscaled = [g / loss_scale for g in scaled]
        if order == "unscale first":
            clipped, global_norm = (clip or clip_global)(unscaled, clip_norm)
        elif order == "clip first":
            clipped_scaled, global_norm = (clip or clip_global)(scaled, clip_norm)
            clipped = [g / loss_scale for g in clipped_scaled]
        else:  # not unscaled at all
            clipped, global_norm = (clip or clip_global)(scaled, clip_norm)
        (apply or (lambda opt, cs, us, vs: opt.apply(cs, vs)))(
            optimizer, clipped, unscaled, variables
        )
        if norm is not None:
            global_norm = norm(clipped, unscaled, scaled)
        return clipped, global_norm

    return clipped_train_step


def clipping_optimizer(optimizer, clipped, unscaled, variables):
    """The unclipped gradients applied by an optimizer told to clip them (global_clipnorm
    set on the caller's optimizer, for good)."""
    optimizer.global_clipnorm = float(tf.linalg.global_norm(clipped))
    optimizer.apply(unscaled, variables)


def by_hand_global_clip(gradients, clip_norm):
    """Right: the definition of tf.clip_by_global_norm, written out."""
    norm = tf.sqrt(tf.add_n([tf.reduce_sum(g**2) for g in gradients]))
    factor = clip_norm / tf.maximum(norm, clip_norm)
    return [g * factor for g in gradients], norm


def global_clip_with_use_norm(gradients, clip_norm):
    norm = tf.linalg.global_norm(gradients)
    return tf.clip_by_global_norm(gradients, clip_norm, use_norm=norm)


@pytest.mark.parametrize(
    "answer",
    [
        clipped_step(clip=by_hand_global_clip),
        clipped_step(clip=global_clip_with_use_norm),
        clipped_step(scaled_by_dy),
    ],
    ids=["clip written out", "use_norm", "output_gradients"],
)
def test_clipped_train_step_accepts_right_steps(judge, answer):
    judge(check.clipped_train_step, answer)


def per_tensor(gradients, clip_norm):
    return [tf.clip_by_norm(g, clip_norm) for g in gradients], tf.linalg.global_norm(gradients)


def per_entry(gradients, clip_norm):
    return [tf.clip_by_value(g, -clip_norm, clip_norm) for g in gradients], tf.linalg.global_norm(
        gradients
    )


def global_clip_per_variable(gradients, clip_norm):
    """tf.clip_by_global_norm called once per variable, the first variable's norm returned."""
    pairs = [tf.clip_by_global_norm([g], clip_norm) for g in gradients]
    return [clipped for (clipped,), _ in pairs], pairs[0][1]


def summed_norms(gradients, clip_norm):
    """Each gradient's own norm added: not the global norm."""
    norm = tf.add_n([tf.norm(g) for g in gradients])
    return [g * clip_norm / tf.maximum(norm, clip_norm) for g in gradients], norm


def always_rescaled(gradients, clip_norm):
    norm = tf.linalg.global_norm(gradients)
    return [g * clip_norm / norm for g in gradients], norm


def limit_of_one(gradients, clip_norm):
    return tf.clip_by_global_norm(gradients, 1.0)


def no_clip(gradients, clip_norm):
    return gradients, tf.linalg.global_norm(gradients)


def through_the_optimizer(model, optimizer, x, y, loss_scale, clip_norm):
    """The given optimizer told to clip: it clips what it applies, not what is returned."""
    optimizer.global_clipnorm = clip_norm
    unscaled = [
        g / loss_scale for g in scaled_by_loss(model, x, y, loss_scale, model.trainable_variables)
    ]
    optimizer.apply(unscaled, model.trainable_variables)
    return unscaled, tf.linalg.global_norm(unscaled)


def first_clip_norm_kept():
    """The first call's clip_norm remembered and used by every later call."""
    kept = []

    def clip(gradients, clip_norm):
        kept.append(clip_norm)
        return tf.clip_by_global_norm(gradients, kept[0])

    return clipped_step(clip=clip)


CLIPPED_MISTAKES = rows(
    [
        (clipped_step(loss_scaled_after_block), "computed_outside_tape"),
        (first_clip_norm_kept(), "keeps_state"),
        (clipped_step(order="clip first"), "clipped_before_unscaling"),
        (clipped_step(order="never unscaled"), "forgot_unscale"),
        (
            clipped_step(clip=lambda gs, c: tf.clip_by_global_norm([g * 2.0**10 for g in gs], c)),
            "forgot_unscale",
        ),
        (
            clipped_step(clip=lambda gs, c: tf.clip_by_global_norm([g / 2.0**15 for g in gs], c)),
            "unscaled_twice",
        ),
        (clipped_step(not_scaled, order="unscale first"), "loss_not_scaled"),
        (clipped_step(clip=per_tensor), "clipped_per_tensor"),
        (clipped_step(clip=global_clip_per_variable), "norm_per_variable"),
        (
            clipped_step(clip=lambda gs, c: tf.clip_by_global_norm(gs, c)[:1] + (tf.norm(gs[-1]),)),
            "norm_per_variable",
        ),  # the last variable's own norm
        (
            clipped_step(
                norm=lambda clipped, unscaled, scaled: float(tf.linalg.global_norm(unscaled))
            ),
            "returned_numpy",
        ),
        (clipped_step(clip=summed_norms), "summed_norms"),
        (clipped_step(clip=per_entry), "clipped_by_value"),
        (clipped_step(clip=always_rescaled), "always_rescaled"),
        (clipped_step(clip=limit_of_one), "wrong_clip_norm"),
        (clipped_step(clip=no_clip), "not_clipped"),
        (
            clipped_step(norm=lambda clipped, unscaled, scaled: tf.linalg.global_norm(clipped)),
            "norm_after_clipping",
        ),
        (
            clipped_step(norm=lambda clipped, unscaled, scaled: tf.linalg.global_norm(scaled)),
            "norm_of_scaled_gradients",
        ),
        (
            clipped_step(apply=lambda opt, cs, us, vs: opt.apply(us, vs)),
            "applied_other_than_returned",
        ),
        (through_the_optimizer, "changed_in_place"),  # the setting named first
        (clipped_step(apply=clipping_optimizer), "changed_in_place"),
        (lambda m, o, x, y, s, c: clipped_step()(m, o, x, y, s, c)[0], "wrong_structure"),
    ]
)


def test_clipped_hints_name_the_variable_and_the_float():
    message = check.clipped_train_step.evaluate(clipped_step(clip=global_clip_per_variable)).message
    assert "first variable's own norm" in message and "once" in message, message
    as_float = clipped_step(norm=lambda c, u, s: float(tf.linalg.global_norm(u)))
    message = check.clipped_train_step.evaluate(as_float).message
    assert "tape can differentiate" not in message and "tf.function" in message, message


@pytest.mark.parametrize("answer, mistake", CLIPPED_MISTAKES)
def test_clipped_train_step_names_the_mistake(judge, answer, mistake):
    judge(check.clipped_train_step, answer, mistake)


# every check: fresh probes, so a mistake is named the same way on every call ----------


@pytest.mark.parametrize(
    "exercise, answer, mistake",
    [
        (check.train_step, step(unscale=lambda gs, s: gs), "forgot_unscale"),
        (check.embedding_gradient, lookup_gradient, "indexed_slices_returned"),
        (check.clipped_train_step, clipped_step(order="clip first"), "clipped_before_unscaling"),
        (check.sloped_softplus, NoVariablesKeyword, "no_variables_keyword"),
    ],
    ids=["7.2", "7.3", "7.4", "7.1"],
)
def test_a_mistake_is_named_the_same_on_every_call(judge, exercise, answer, mistake):
    judge(exercise, answer, mistake, runs=3)
