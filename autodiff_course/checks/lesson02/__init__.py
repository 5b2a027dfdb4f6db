"""Checks for lesson 02, *Recording with tf.GradientTape*: one spec per exercise (2.1 to
2.4), each an answer called directly that must use a tf.GradientTape, with a None
explained in the lesson's own words (:mod:`.causes`)."""

from .any_kind_of_x import derivative
from .causes import CAUSES
from .dict_of_variables import parameter_gradients
from .moving_average import update_and_differentiate
from .training_loop import train

__all__ = ["CAUSES", "derivative", "parameter_gradients", "train", "update_and_differentiate"]
