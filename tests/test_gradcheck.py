"""Gradient checks: central differences and the tf.test.compute_gradient wrapper."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from autodiff_course.gradcheck import central_difference
from autodiff_course.gradcheck import central_jacobian
from autodiff_course.gradcheck import compare_with_tensorflow
from autodiff_course.gradcheck import tolerance_for


def test_central_difference_of_a_cubic_is_exact_up_to_h_squared():
    gradient = central_difference(lambda v: np.sum(v**3), np.array([2.0, -1.0]), h=1e-3)
    np.testing.assert_allclose(gradient, [12.0 + 1e-6, 3.0 + 1e-6], rtol=1e-9)


def test_central_difference_keeps_the_input_shape_and_leaves_it_alone():
    x = np.arange(6.0).reshape(2, 3)
    gradient = central_difference(lambda v: np.sum(np.sin(v)), x)
    assert gradient.shape == (2, 3)
    np.testing.assert_allclose(gradient, np.cos(x), atol=1e-9)
    np.testing.assert_array_equal(x, np.arange(6.0).reshape(2, 3))


def test_central_jacobian_shape_is_output_then_input():
    jacobian = central_jacobian(
        lambda v: np.stack([v[0] * v[1], v[0] ** 2, v[1]]), np.array([1.5, -2.0])
    )
    np.testing.assert_allclose(jacobian, [[-2.0, 1.5], [3.0, 0.0], [0.0, 1.0]], atol=1e-8)


def test_compare_with_tensorflow_agrees_for_a_right_gradient():
    check = compare_with_tensorflow(
        lambda x: tf.math.log(1.0 + tf.exp(x)), tf.constant([1.0, -2.0])
    )
    assert check.passed and check.max_abs_error < 1e-3
    assert "agree" in repr(check)


def test_compare_with_tensorflow_catches_a_wrong_custom_gradient():
    @tf.custom_gradient
    def wrong_square(x):
        return x * x, lambda upstream: upstream * x  # should be 2x

    check = compare_with_tensorflow(wrong_square, tf.constant([1.0, 3.0], tf.float64))
    assert not check.passed
    assert "DISAGREE" in repr(check)


def test_tolerances_follow_the_dtype():
    assert tolerance_for(tf.float64)["rtol"] < tolerance_for(tf.float32)["rtol"]
    assert tolerance_for(np.float32) == tolerance_for(tf.float32)


def test_central_difference_refuses_a_vector_output_in_plain_words():
    import pytest

    with pytest.raises(ValueError, match="use central_jacobian"):
        central_difference(lambda v: v**2, np.array([1.0, 2.0]))
