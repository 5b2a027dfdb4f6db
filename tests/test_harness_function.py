"""The harness for functions the check calls directly (``checking.function.Function``),
proved on small exercises of its own: the method flags, what the harness names by itself
(a changed input array, an ``output_gradients`` of the wrong shape, a vector-Jacobian
product's matrix) and the statefulness probes; and the judge's rule that numbers repeated
from an earlier call are state, and :func:`~autodiff_course.checking.patterns.stray`."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autodiff_course.checking.function import Function
from autodiff_course.checking.patterns import linear_mix
from autodiff_course.checking.patterns import stray
from autodiff_course.checking.probes import tensor
from autodiff_course.checking.spec import Exercise
from autodiff_course.checking.spec import Mistake
from autodiff_course.checking.spec import Points
from autodiff_course.checking.spec import Probe
from autodiff_course.checking.spec import Probes

POINTS = Probes(
    points={"float64": Points((-1.5, 0.5, 2.0), ((-2.0, 2.0, 4),))},
    shapes={"float64": ("points", (2, 3))},
    size_one=False,
)


def exercise(number, harness, reference, probes=POINTS, mistakes=()):
    return Exercise(number, "A harness test", 1, 1, harness, probes, reference, mistakes)


def verdict(spec, answer):
    result = spec.evaluate(answer)
    return result.mistake, result.message


# d(1.5 y)/dx for y = log(1 + e^x) through output_gradients, with dy = 1.5 by hand
CHAIN = exercise(
    "90.1",
    Function("`chain`", output_gradients="by_hand", names=("x",), wrt=("x",)),
    lambda p: 1.5 / (1.0 + np.exp(-p.x)),
)


def softplus(x):
    return tf.math.log(1.0 + tf.exp(x))


def chain(dy=lambda y, x: 1.5 + 0.0 * y, after=lambda g, y, x: g, target=lambda y: y):
    def answer(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = softplus(x)
            differentiated = target(y)
        return after(tape.gradient(differentiated, x, output_gradients=dy(y, x)), y, x)

    return answer


def dy_from_a_second_tape(scale=1.0):
    def answer(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = softplus(x)
        with tf.GradientTape() as second:
            second.watch(y)
            loss = tf.reduce_sum(1.5 * y) * scale
        return tape.gradient(y, x, output_gradients=second.gradient(loss, y) / scale)

    return answer


@pytest.mark.parametrize(
    "answer, code",
    [
        (chain(), None),
        (chain(after=lambda g, y, x: tf.identity(tf.reshape(g, tf.shape(x)))), None),
        (dy_from_a_second_tape(), "used_tape"),
        (dy_from_a_second_tape(scale=4.0), "used_tape"),  # not the tape's number, its source
        (
            chain(dy=lambda y, x: tf.ones_like(y), after=lambda g, y, x: 1.5 * g),
            "no_output_gradients",
        ),
        (chain(after=lambda g, y, x: 1.5 * tf.sigmoid(x)), "no_output_gradients"),  # unused
        (chain(target=tf.reduce_mean), "upstream_shape"),
        (lambda x: 1.5 * tf.sigmoid(x), "no_output_gradients"),
    ],
    ids=[
        "right",
        "reshaped",
        "second tape",
        "second tape, scaled",
        "ones",
        "unused",
        "shape",
        "none",
    ],
)
def test_output_gradients_by_hand(answer, code):
    assert verdict(CHAIN, answer)[0] == code


TWO = exercise(
    "90.2",
    Function(
        "`two`",
        arguments=lambda p: (tensor(p.x, p.dtype), tensor(p.x + 1.0, p.dtype)),
        names=("x", "t"),
        wrt=("x",),
    ),
    lambda p: 2.0 * p.x,
)


def test_a_tape_asked_about_another_argument_is_named():
    def answer(x, t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = x**2 + t
        return tape.gradient(y, t)

    code, message = verdict(TWO, answer)
    assert code == "wrong_source" and "with respect to t" in message


DOUBLE = exercise(
    "90.3",
    Function("`double`", arguments=lambda p: (p.x.copy(),), numpy=True, names=("x",)),
    lambda p: 2.0 * p.x,
    probes=lambda rng: [Probe("float64", rng.uniform(-1, 1, n), label=f"n = {n}") for n in (3, 4)],
)


def moves_its_input(x):
    x *= 2.0
    return x.copy()


@pytest.mark.parametrize(
    "answer, code",
    [
        (lambda x: 2.0 * x, None),
        (lambda x: list(2.0 * x), "returned_list"),
        (lambda x: tf.constant(2.0 * x), "wrong_type"),
        (lambda x: list(3.0 * x), "scale_factor"),  # the numbers first, then the kind
        (moves_its_input, "mutated_input"),
    ],
    ids=["array", "list", "tensor", "list of wrong numbers", "moved"],
)
def test_numpy_answers_return_arrays_and_leave_their_inputs_alone(answer, code):
    assert verdict(DOUBLE, answer)[0] == code


def product_probes(rng):
    found = []
    for m, n in ((3, 3), (3, 2), (2, 4)):
        W, x, up = rng.uniform(-1, 1, (m, n)), rng.uniform(-1, 1, n), rng.uniform(0.5, 2, m)
        up[0] *= -1.0
        found.append(Probe("float64", x, up, {"W": W}, f"W of shape ({m}, {n})", np.empty(0)))
    return found


# dy^T J for y = tanh(W x): W^T (dy * (1 - tanh(W x)**2))
def local(W, x):
    return 1.0 - tf.tanh(tf.linalg.matvec(W, x)) ** 2


PRODUCT = exercise(
    "90.4",
    Function(
        "`product`",
        arguments=lambda p: tuple(tensor(v, "float64") for v in (p.W, p.x, p.upstream)),
        upstream=2,
    ),
    lambda p: p.W.T @ (p.upstream * (1.0 - np.tanh(p.W @ p.x) ** 2)),
    probes=product_probes,
)


def back(W, u):
    return tf.linalg.matvec(W, u, transpose_a=True)


def upstream_shaped(W, x, dy):
    """Right for a square W; for the others, the upstream's shape: W itself left out."""
    return back(W, dy * local(W, x)) if W.shape[0] == W.shape[1] else dy * local(W, x)


@pytest.mark.parametrize(
    "answer, code",
    [
        (lambda W, x, dy: back(W, dy * local(W, x)), None),
        (lambda W, x, dy: back(W, local(W, x)), "forgot_upstream"),
        (lambda W, x, dy: back(W, dy**2 * local(W, x)), "upstream_not_linear"),
        (lambda W, x, dy: back(W, dy * tf.exp(tf.linalg.matvec(W, x))), "wrong_local_derivative"),
        (lambda W, x, dy: back(tf.abs(W), dy * local(W, x)), "wrong_jacobian"),
        (lambda W, x, dy: W * local(W, x)[:, None], "returned_jacobian"),
        (upstream_shaped, "no_transpose"),
    ],
    ids=["right", "no upstream", "squared", "local", "matrix", "jacobian", "upstream shape"],
)
def test_an_answer_linear_in_its_upstream_is_read_row_by_row(answer, code):
    assert verdict(PRODUCT, answer)[0] == code


def cached_per_shape(answer):
    seen = {}

    def cached(x):
        return seen.setdefault(tuple(x.shape), answer(x))

    return cached


SQUARE = exercise("90.5", Function("`square`"), lambda p: p.x**2)


def test_results_remembered_per_shape_are_state():
    code, message = verdict(SQUARE, cached_per_shape(lambda x: x**2))
    assert code == "keeps_state" and "new arguments" in message


def test_numbers_repeated_from_an_earlier_probe_are_state():
    twice = exercise(
        "90.6",
        Function("`square`"),
        lambda p: p.x**2,
        probes=lambda rng: [Probe("float64", rng.uniform(-1, 1, 3), label=s) for s in "ab"],
    )
    code, message = verdict(twice, cached_per_shape(lambda x: x**2))
    assert code == "keeps_state" and "exactly the numbers of an earlier call" in message
    assert verdict(twice, lambda x: tf.constant([0.1, 0.2, 0.3], tf.float64))[0] != "keeps_state"


def test_stray_names_a_factor_or_a_term_too_many():
    spec = exercise(
        "90.7",
        Function("`square`"),
        lambda p: p.x**2,
        mistakes=stray(lambda p: p.x**2, x=lambda p: p.x),
    )
    code, message = verdict(spec, lambda x: x**2 * x)
    assert code == "extra_factor" and "times x" in message and "`* x`" in message
    code, message = verdict(spec, lambda x: x**2 - x)
    assert code == "added_term" and "minus x" in message and "`- x`" in message


def test_a_mistake_named_by_majority_fits_where_it_agrees_with_the_answer_too():
    values = np.array([-2.0, -1.5, -1.0, -0.7, -0.4, -0.2, 0.5, 1.5])
    spec = exercise(
        "90.8",
        Function("`identity`"),
        lambda p: p.x,
        probes=lambda rng: [Probe("float64", values, label="mostly negative")],
        mistakes=(Mistake("value_not_derivative", "Your result is |x|.", lambda p: np.abs(p.x)),),
    )
    assert verdict(spec, lambda x: -x)[0] == "sign_flipped"
    assert verdict(spec, lambda x: tf.abs(x))[0] == "value_not_derivative"


def test_one_number_where_several_belong_is_named_by_scalars():
    spec = exercise(
        "90.9",
        Function(
            "`double`", scalars=(Mistake("reduced_gradient", "A sum.", lambda p: 2 * p.x.sum()),)
        ),
        lambda p: 2.0 * p.x,
    )
    # a structural verdict also says which probe showed it, when there are several
    assert verdict(spec, lambda x: 2.0 * tf.reduce_sum(x)) == (
        "reduced_gradient",
        "A sum. (Seen with a float64 vector of 7 points.)",
    )
    assert verdict(spec, lambda x: tf.reduce_max(x))[0] == "wrong_shape"


def test_linear_mix_names_other_coefficients_and_leaves_multiples_to_the_generic_patterns():
    spec = exercise(
        "90.10",
        Function("`mix`", arguments=lambda p: (tensor(p.x, "float64"), tensor(p.x**2, "float64"))),
        lambda p: p.x - p.x**2,
        mistakes=(
            linear_mix(
                "other",
                "Yours is {mix}, not {right}.",
                lambda p: p.x - p.x**2,
                a=lambda p: p.x,
                b=lambda p: p.x**2,
            ),
        ),
    )
    code, message = verdict(spec, lambda a, b: a - 0.5 * b + 0.25)
    assert code == "other" and "Yours is a - 0.5 * b + 0.25, not a - b." in message
    assert verdict(spec, lambda a, b: 2.0 * (a - b))[0] == "scale_factor"
    assert verdict(spec, lambda a, b: 0.0 * a + 0.5)[0] == "hard_coded"


def test_a_missing_gradient_is_named_by_the_answers_own_parameter():
    def unwatched(x, t):
        with tf.GradientTape() as tape:
            y = x**2 + t
        return tape.gradient(y, x)

    code, message = verdict(TWO, unwatched)
    assert code == "unwatched_constant" and "for x" in message


def test_an_axis_of_size_one_dropped_is_named_as_dropped():
    one = exercise(
        "90.11",
        Function("`square`"),
        lambda p: p.x**2,
        probes=lambda rng: [Probe("float64", np.array([1.5]), label="one element")],
    )
    code, message = verdict(one, lambda x: tf.squeeze(x**2))
    assert code == "broadcast_shape" and "dropped: tf.squeeze" in message
    code, message = verdict(one, lambda x: (x**2)[:, None])
    assert code == "broadcast_shape" and "added or kept" in message
