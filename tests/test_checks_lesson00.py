"""Lesson 00's demonstration check names the two slips its lesson shows."""

from __future__ import annotations

import tensorflow as tf

from autodiff_course.checks import lesson00 as check


def test_the_warm_up_names_its_mistakes(judge):
    judge(check.double, lambda x: 2.0 * x, None)
    judge(check.double, lambda x: x * x, "squared")
    judge(check.double, lambda x: tf.identity(x), "unchanged")
    judge(check.double, lambda x: x + 2.0, "added_two")
    judge(check.double, lambda x: -2.0 * x, "sign_flipped")
