"""The framework's answers to nested tapes, singular gradients and kept state, proved on
small exercises of their own (not through a lesson):

* :class:`~autodiff_course.checking.function.Function`: a None that breaks the answer is
  explained, a None the answer went on without is judged only when the result is wrong,
  a None where the answer is zero asks for zeros, zeros that unconnected_gradients=ZERO
  put in place of a None are named, nesting is judged after the exercise's own mistakes,
  an outer tape that differentiated the function again and steps combined wrong are read
  from the tapes' record, ``forbid`` gives its reason, ``arguments`` by field names, and
  new values of the first probe's shape must give their own answer;
* :class:`~autodiff_course.checking.on_tape.OnTape`: a value shaped like the reference,
  a nan gradient explained by the operation whose slope is infinite, a None explained by
  what cut the path;
* the judge: per-point tolerances, :class:`~autodiff_course.checking.spec.Shape`, and a
  result equal to an earlier probe's for other inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking import Status
from autodiff_course.checking.answers import shape_hint
from autodiff_course.checking.function import Function
from autodiff_course.checking.function import negated
from autodiff_course.checking.judging import Tolerance
from autodiff_course.checking.judging import generic_mistake
from autodiff_course.checking.judging import of_terms
from autodiff_course.checking.on_tape import OnTape
from autodiff_course.checking.provenance import run_answer
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Probe
from autodiff_course.checking.spec import Shape

ZERO = tf.UnconnectedGradients.ZERO


def second(f, x, y, *, zero=True, inside=True, watch=True, target=None):
    """d/dy of d f/dx: nested tapes laid out as the tests ask."""
    with tf.GradientTape() as outer:
        if watch:
            outer.watch(y)
        with tf.GradientTape() as inner:
            inner.watch(x)
            z = f(x, y)
        if inside:
            first = inner.gradient(z, x)
    if not inside:
        first = inner.gradient(z, x)
    options = {"unconnected_gradients": ZERO} if zero else {}
    return outer.gradient(first if target is None else target(z, first), y, **options)


def mixed_exercise(**harness):
    """d2(x**2 y**3)/dx dy = 6 x y**2 on two probes, then x**2 + y (zero: no path)."""

    def draw(rng):
        found = []
        for name, f in (("x**2 * y**3", lambda x, y: x**2 * y**3), ("x**2 + y", None)):
            for shape in ((3,), (2, 2)):
                x = np.round(rng.uniform(0.5, 1.5, shape), 3)
                y = np.round(rng.uniform(0.5, 1.5, shape), 3)
                f = f or (lambda x, y: x**2 + y)
                found.append(Probe("float64", x, data={"name": name, "f": f, "y": y}, label=name))
        return found

    return Exercise(
        number="9.1",
        title="A test of nested tapes",
        stars=1,
        minutes=1,
        harness=Function("`second`", arguments=("f", "x", "y"), nested=True, **harness),
        probes=draw,
        reference=lambda p: 6 * p.x * p.y**2 if p.name == "x**2 * y**3" else 0 * p.x,
        mistakes=(Mistake("first_not_second", "A first derivative.", lambda p: 2 * p.x * p.y**3),),
        describe={"value": "the mixed partial"},
    )


def verdict(exercise, answer):
    result = exercise.evaluate(answer)
    return result.mistake, result.message


def test_the_right_answer_passes_and_a_none_it_turned_into_zeros_is_fine_where_zero():
    exercise = mixed_exercise()
    assert verdict(exercise, second)[0] is None

    def zeros_for_none(f, x, y):
        result = second(f, x, y, zero=False)
        return tf.zeros_like(x) if result is None else result

    assert verdict(exercise, zeros_for_none)[0] is None


def test_a_none_where_the_answer_is_zero_asks_for_zeros():
    code, message = verdict(mixed_exercise(), lambda f, x, y: second(f, x, y, zero=False))
    assert code == "structural_none" and "unconnected_gradients" in message


def test_a_none_that_breaks_the_answer_is_explained_from_the_tapes():
    code, message = verdict(mixed_exercise(), lambda f, x, y: second(f, x, y, inside=False) + 0.0)
    assert code == "zeros_hide_none" and "after the outer tape's" in message
    assert verdict(mixed_exercise(), lambda f, x, y: second(f, x, y, zero=False, watch=False))[
        0
    ] == ("outer_not_watching")


def test_zeros_in_place_of_a_none_are_evidence_only_when_the_result_is_wrong():
    def zeros_for_none(f, x, y):
        result = second(f, x, y, zero=False, watch=False)
        return tf.zeros_like(x) if result is None else result

    code, message = verdict(mixed_exercise(), zeros_for_none)
    assert code == "outer_not_watching" and "returned zeros where a tape returned None" in message


def test_nesting_is_judged_after_the_exercises_own_mistakes():
    def first_only(f, x, y):
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = f(x, y)
        return tape.gradient(z, x)

    assert verdict(mixed_exercise(), first_only)[0] == "first_not_second"
    by_hand = lambda f, x, y: 6 * x * y**2 if f(x, y).shape else None  # noqa: E731
    code, message = verdict(mixed_exercise(), lambda f, x, y: by_hand(f, x, y) * (1 + 1e-3))
    assert code == "not_nested" and "called no tape" in message


def test_an_outer_tape_that_differentiates_the_function_again_is_named():
    code, _ = verdict(mixed_exercise(), lambda f, x, y: second(f, x, y, target=lambda z, g: z) * x)
    assert code == "wrong_target"


def test_steps_computed_right_and_combined_wrong_are_named():
    exercise = mixed_exercise(steps=lambda p: {"d2z/(dx dy)": 6 * p.x * p.y**2})
    code, message = verdict(exercise, lambda f, x, y: tf.sin(second(f, x, y)))
    assert code == "wrong_combination" and "computed d2z/(dx dy) correctly" in message


def test_forbid_gives_its_reason_and_forbids_the_accumulator():
    exercise = mixed_exercise(forbid={"jacobian": "keep the diagonal only.", "accumulator": ""})

    def jacobian(f, x, y):
        with tf.GradientTape() as outer:
            outer.watch(y)
            with tf.GradientTape() as inner:
                inner.watch(x)
                z = f(x, y)
            first = inner.gradient(z, x)
        return tf.linalg.diag_part(outer.jacobian(first, y))

    code, message = verdict(exercise, jacobian)
    assert code == "used_jacobian" and "keep the diagonal only." in message

    def forward(f, x, y):
        with tf.autodiff.ForwardAccumulator(y, tf.ones_like(y)) as accumulator:
            with tf.GradientTape() as tape:
                tape.watch(x)
                z = f(x, y)
            first = tape.gradient(z, x)
        return accumulator.jvp(first)

    assert verdict(exercise, forward)[0] == "forward_over_reverse"
    assert "no tape.jacobian; no ForwardAccumulator" in exercise.docstring()


def test_new_values_of_the_first_probes_shape_must_give_their_own_answer():
    remembered = {}

    def by_shape(f, x, y):
        key = (tuple(x.shape), id(f))
        remembered.setdefault(key, second(f, x, y))
        return remembered[key]

    code, message = verdict(mixed_exercise(vary=negated), by_shape)
    assert code == "keeps_state" and "new arguments" in message


def test_a_result_equal_to_an_earlier_probes_is_state_kept():
    remembered = []

    def first_result(f, x, y):
        result = second(f, x, y)
        if x.shape == (3,) and remembered:
            return remembered[0]
        remembered.append(result)
        return result

    code, message = verdict(mixed_exercise(), first_result)
    assert code == "keeps_state" and "exactly the numbers of an earlier call" in message


def test_a_light_run_records_no_operations():
    x = tf.constant([1.0, 2.0])
    assert run_answer(tf.square, x, record=False).provenance is None
    assert run_answer(tf.square, x).provenance.operations


# -- OnTape: a function the check differentiates itself ----------------------------------


def norm_exercise():
    def draw(rng):
        g = np.array([[0.0, 0.0], [3.0, 4.0], [1.0, -2.0]])
        return [Probe("float32", g, upstream=np.array([1.5, -2.0, 0.5]), label="rows")]

    def reference(p):
        n = np.linalg.norm(p.x, axis=-1)
        unit = p.x / np.maximum(n, 1e-300)[:, None]
        return {"value": n, "gradient": p.upstream[:, None] * unit}

    def tolerance(p, part):
        zero = np.linalg.norm(p.x, axis=-1) == 0
        if part == "value":
            return Tolerance(1e-5, np.where(zero, 1e-3, 0.0))
        return Tolerance(1e-4, np.where(zero, np.abs(p.upstream), 1e-7)[:, None])

    return Exercise(
        number="9.2",
        title="A test of a norm",
        stars=1,
        minutes=1,
        harness=OnTape("`norm`", custom_gradient=False),
        probes=draw,
        reference=reference,
        tolerance=tolerance,
        mistakes=(Shape("wrong_axis", "One per column.", lambda p: p.x.shape[1:]),),
    )


def squares(g):
    return tf.reduce_sum(g * g, axis=-1)


@pytest.mark.parametrize(
    "answer, code, words",
    [
        (lambda g: tf.sqrt(squares(g) + 1e-12), None, ""),
        (lambda g: tf.norm(g + 1e-8, axis=-1), None, ""),  # a unit slope at zero: allowed
        (lambda g: tf.norm(g, axis=-1), "nan_gradient_at_zero", "tf.sqrt"),
        (lambda g: tf.sqrt(squares(g)) + 1e-9, "eps_outside_sqrt", "after the square root"),
        (
            lambda g: tf.where(squares(g) > 0, tf.pow(squares(g), 0.5), 0.0 * squares(g)),
            "where_without_safe_branch",
            "x**0.5",
        ),
        (lambda g: tf.stop_gradient(tf.norm(g, axis=-1)), "non_differentiable_op", "stop_gradient"),
        (
            lambda g: tf.constant(np.linalg.norm(g.numpy(), axis=-1)),
            "numpy_detour",
            "leaves TensorFlow",
        ),
        (lambda g: tf.norm(g, axis=0), "wrong_axis", "One per column."),
        (lambda g: tf.sqrt(squares(g) + 1e-4), "approximation", ""),  # 1e-2 at a zero row
    ],
    ids=["eps", "eps on g", "tf.norm", "eps after", "where pow", "stop", "numpy", "axis", "big"],
)
def test_on_tape_judges_a_norm_per_row(answer, code, words):
    result = norm_exercise().evaluate(answer)
    assert result.mistake == code, result.message
    assert words in result.message


# -- the judge and the generic words -------------------------------------------------------


def test_a_per_point_tolerance_accepts_and_the_example_point_really_differs():
    exercise = norm_exercise()
    result = exercise.evaluate(lambda g: tf.sqrt(squares(g) + 1e-4))
    assert result.status is Status.WRONG and "at index 0" not in result.message


def test_of_terms_judges_against_the_size_of_the_terms():
    tolerance = of_terms(lambda p: 10.0)(Probe("float64", np.zeros(2)), "value")
    assert (tolerance.rtol, tolerance.atol) == (1e-11, pytest.approx(8 * 2.220446e-16 * 10))


def test_zeros_alone_no_longer_claim_a_cut_path():
    code, hint = generic_mistake(np.zeros(3), np.ones(3))
    assert code == "zeros" and "path" not in hint


def test_a_dropped_axis_of_size_one_is_named_as_dropped():
    assert "dropped" in shape_hint("Your function", (3,), (1, 3))
    assert "added or kept" in shape_hint("Your function", (1, 3), (3,))
