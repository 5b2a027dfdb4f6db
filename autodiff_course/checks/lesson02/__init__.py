"""Checks for lesson 02, *Recording with tf.GradientTape*: one spec per exercise, each
answer called directly and held to a tf.GradientTape, a None named as the lesson does."""

from .any_kind_of_x import derivative
from .causes import CAUSES
from .dict_of_variables import parameter_gradients
from .moving_average import update_and_differentiate
from .training_loop import train

__all__ = ["CAUSES", "derivative", "parameter_gradients", "train", "update_and_differentiate"]
