"""Checks for lesson 06, *Build your own tape*.

In this lesson the answers are plain functions on NumPy arrays, called exactly as
the notebook's tape calls them, so no check imports the notebook's code. The
references are independent of the code path under test: finite differences
(:func:`autodiff_course.gradcheck.central_difference`) for the vector-Jacobian
rules, closed forms in float64 NumPy for log1pexp, and the checker's own small
reverse pass for accumulation.
"""

from __future__ import annotations

import numpy as np

from ..checking import (Wrong, as_values, call_answer, describe_difference,
                        diagnose_mistake, exercise, matches)
from ..log1pexp import reference_sigmoid as _sigmoid, reference_softplus as _softplus
from ..gradcheck import central_difference


def _fixed_arrays(seed: int, *shapes):
    """Reproducible float64 test arrays, one per shape, with no zeros."""
    rng = np.random.default_rng(seed)
    return [np.round(rng.uniform(0.5, 2.5, size=shape) * rng.choice([-1.0, 1.0], size=shape), 3)
            for shape in shapes]


def _numbers(value, name, shape=None):
    """``as_values`` for NumPy answers, saying 'a string' plainly when it is one."""
    if isinstance(value, (str, bytes)):
        raise Wrong(f"{name} is a string ({value!r}), not numbers.", "wrong_type")
    return as_values(value, name=name, shape=shape, require_tensor=False)


def _sum_to_shape(g, shape):
    """The checker's own 'sum back over broadcast axes' (used for wrong answers only)."""
    g = np.asarray(g, dtype=np.float64)
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def _vjp_by_finite_differences(f, upstream, inputs):
    """dy^T J for each input of ``f``, via central differences of sum(upstream * f)."""
    gradients = []
    for i in range(len(inputs)):
        def scalar(value, i=i):
            args = list(inputs)
            args[i] = value
            return np.sum(upstream * f(*args))

        gradients.append(central_difference(scalar, inputs[i], h=1e-3))
    return gradients


def _two_gradients(value):
    """Unpack the (grad_a, grad_b) pair a vector-Jacobian rule returns."""
    if value is None:
        raise Wrong("Your function returned None. Did you forget `return`? A rule for an "
                    "operation with two inputs returns two gradients: "
                    "`return grad_a, grad_b`.", "returned_none")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        kind = (f"a {type(value).__name__} of length {len(value)}"
                if isinstance(value, (tuple, list)) else f"a {type(value).__name__}")
        raise Wrong(f"Your function returned {kind}. A rule for an operation with two "
                    f"inputs returns one gradient per input, as a pair: "
                    f"`return grad_a, grad_b`.", "not_a_pair")
    return value


def _gradient_array(value, name, input_shape, output_shape):
    """One returned gradient as float64, with hints for the shape mistakes of broadcasting."""
    got = _numbers(value, name)
    input_shape, output_shape = tuple(input_shape), tuple(output_shape)
    if got.shape == input_shape:
        return got
    if got.shape == output_shape:
        raise Wrong(f"{name} has shape {got.shape}, the output's shape, but the input has "
                    f"shape {input_shape}. Broadcasting stretched that input, so its "
                    f"gradient must be summed back over the stretched axes: "
                    f"unbroadcast(g, {input_shape}).", "not_summed_back")
    if got.shape == () and input_shape != ():
        raise Wrong(f"{name} is a single number, but the input has shape {input_shape}: "
                    f"sum only over the axes broadcasting added or stretched, not over "
                    f"all of them.", "summed_everything")
    if got.size == int(np.prod(input_shape)):
        raise Wrong(f"{name} has shape {got.shape}, but the input has shape "
                    f"{input_shape}: the numbers may be right, but an axis of size 1 was "
                    f"dropped or added. Sum with keepdims=True where the input has size 1, "
                    f"and drop only the leading axes broadcasting added.", "kept_dims_wrong")
    raise Wrong(f"{name} has shape {got.shape}, but a gradient always has the shape of "
                f"its input, {input_shape}.", "wrong_shape")


def _diagnose_pair(got_a, got_b, known_mistakes, rtol=1e-6, atol=1e-9):
    """Raise the hint of the first ``(code, hint, (a_values, b_values))`` both gradients match."""
    for code, hint, (values_a, values_b) in known_mistakes:
        if matches(got_a, values_a, rtol, atol) and matches(got_b, values_b, rtol, atol):
            raise Wrong(hint, code)


# --- 6.1: accumulating the gradient of a value used twice ---------------------------

ACCUMULATE_X = np.array([1.0, 2.0, 3.0])


def _reverse_pass_with(answer):
    """The checker's own reverse pass for u = x * x; v = u + x, using ``answer`` to accumulate.

    Returns the gradients of v with respect to x and to u. The add rule hands the
    same upstream array to both of its inputs, as a real tape does.
    """
    x = ACCUMULATE_X.copy()
    records = [  # (output, inputs, vector-Jacobian rule), in recording order
        ("u", ("x", "x"), lambda dy: (dy * x, dy * x)),
        ("v", ("u", "x"), lambda dy: (dy, dy)),
    ]
    grads = {"v": np.ones(3)}
    for output, inputs, vjp in reversed(records):
        upstream = grads[output]
        for key, contribution in zip(inputs, vjp(upstream)):
            returned = call_answer(answer, grads, key, contribution)
            if key not in grads:
                if isinstance(returned, dict):
                    raise Wrong("Your function returned a dictionary but left `grads` "
                                "unchanged. Update the dictionary it receives: "
                                "grads[key] = ...", "returned_new_dict")
                raise Wrong("After your function ran, `grads` had no entry for the key it "
                            "was given. The first contribution must be stored: "
                            "grads[key] = contribution.", "not_stored")
            if grads[key] is None:
                raise Wrong("Your function stored None in `grads`. Store the contribution "
                            "itself the first time, and the sum of old and new after "
                            "that.", "stored_none")
            _numbers(grads[key], "The gradient your function stored", shape=(3,))
    return (_numbers(grads["x"], "The gradient of x"),
            _numbers(grads["u"], "The gradient of u"))


@exercise("6.1", "accumulate the gradient of a value used twice")
def accumulate_gradient(answer):
    got_x, got_u = _reverse_pass_with(answer)
    x = ACCUMULATE_X
    expected_x = 1.0 + 2.0 * x  # d(x*x + x)/dx
    expected_u = np.ones(3)
    if matches(got_x, expected_x) and matches(got_u, expected_u):
        return ("For v = x*x + x the gradient of x is the sum of its three contributions, "
                "1 + 2x, and no other gradient was changed on the way.")
    if matches(got_x, expected_x):
        raise Wrong("The gradient of x is right, but the gradient of u changed while x's "
                    "contributions were added: `grads[key] += contribution` adds in place "
                    "to an array that another entry (here u's upstream, handed to x by the "
                    "add rule) also is. Build a new array: grads[key] = grads[key] + "
                    "contribution.", "in_place")
    diagnose_mistake(got_x, [
        ("overwrote",
         "The gradient of x is only its last contribution: the value x is used three "
         "times in v = x*x + x (x*x alone gave x instead of 2x). Add each contribution "
         "to what is already stored instead of overwriting it.", x),
        ("kept_first",
         "The gradient of x is only its first contribution: later ones were dropped. "
         "When the key is already in grads, add the contribution to it.", np.ones(3)),
        ("multiplied",
         "You multiplied the contributions. Gradients of a value used several times "
         "add up (the multivariable chain rule sums over the uses).", x * x),
        ("counted_twice",
         "Each contribution was added twice: store the first one, then add each later "
         "one once.", 2.0 * expected_x),
    ])
    raise Wrong("For v = x*x + x the gradient of x should be 1 + 2x. "
                + describe_difference(got_x, expected_x, x), "other")


# --- 6.2: the multiply rule with broadcasting ---------------------------------------

def _multiply_cases():
    cases = []
    for seed, shape_a, shape_b in [(61, (2, 3), (2, 3)), (62, (3, 4), (4,)),
                                   (63, (3, 1), (1, 4)), (64, (), (2, 3))]:
        a, b = _fixed_arrays(seed, shape_a, shape_b)
        output_shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        (upstream,) = _fixed_arrays(seed + 100, output_shape)
        cases.append((np.asarray(a), np.asarray(b), upstream))
    return cases


@exercise("6.2", "the vector-Jacobian rule of broadcasting multiply")
def multiply_vjp(answer):
    for a, b, upstream in _multiply_cases():
        output_shape = upstream.shape
        pair = _two_gradients(call_answer(answer, upstream.copy(), a.copy(), b.copy()))
        shapes = f"a of shape {a.shape} times b of shape {b.shape}"
        got_a = _gradient_array(pair[0], f"grad_a (for {shapes})", a.shape, output_shape)
        got_b = _gradient_array(pair[1], f"grad_b (for {shapes})", b.shape, output_shape)
        expected_a, expected_b = _vjp_by_finite_differences(lambda p, q: p * q, upstream,
                                                            [a, b])
        if matches(got_a, expected_a) and matches(got_b, expected_b):
            continue
        ones = np.ones(output_shape)
        _diagnose_pair(got_a, got_b, [
            ("swapped_operands",
             "Each gradient uses the wrong input: the gradient of a is upstream times b, "
             "and the gradient of b is upstream times a (return them in the order "
             "grad_a, grad_b).",
             (_sum_to_shape(upstream * a, a.shape), _sum_to_shape(upstream * b, b.shape))),
            ("forgot_upstream",
             "You left out the upstream gradient: the rule returns upstream * b and "
             "upstream * a, not b and a. (With upstream = 1 the mistake is invisible, "
             "inside a chain it is not.)",
             (_sum_to_shape(ones * b, a.shape), _sum_to_shape(ones * a, b.shape))),
            ("forgot_local",
             "You returned the upstream gradient unchanged: multiply it by the local "
             "derivative, d(a*b)/da = b and d(a*b)/db = a.",
             (_sum_to_shape(upstream, a.shape), _sum_to_shape(upstream, b.shape))),
        ])
        wrong_a = not matches(got_a, expected_a)
        name, got, expected = (("grad_a", got_a, expected_a) if wrong_a
                               else ("grad_b", got_b, expected_b))
        raise Wrong(f"For {shapes}, {name} is not upstream times the other input, summed "
                    f"back to its shape. " + describe_difference(got, expected), "other")
    return ("grad_a = unbroadcast(upstream * b, a.shape) and grad_b = "
            "unbroadcast(upstream * a, b.shape), for equal shapes, a row, a column and a "
            "scalar.")


# --- 6.3: the matmul rule -------------------------------------------------------------

@exercise("6.3", "the vector-Jacobian rule of matmul")
def matmul_vjp(answer):
    # A square case first, where every wrong arrangement of transposes still runs and
    # can be recognised by its values; then a rectangular one, where shapes must fit.
    a, b, upstream = _fixed_arrays(65, (3, 3), (3, 3), (3, 3))
    pair = _two_gradients(call_answer(answer, upstream.copy(), a.copy(), b.copy()))
    got_a = _numbers(pair[0], "grad_a", shape=(3, 3))
    got_b = _numbers(pair[1], "grad_b", shape=(3, 3))
    expected_a, expected_b = _vjp_by_finite_differences(lambda p, q: p @ q, upstream, [a, b])
    if not (matches(got_a, expected_a) and matches(got_b, expected_b)):
        ones = np.ones_like(upstream)
        _diagnose_pair(got_a, got_b, [
            ("swapped_operands",
             "Your two gradients are swapped: return (grad_a, grad_b) with grad_a = "
             "upstream @ b.T (shaped like a) and grad_b = a.T @ upstream (shaped like b).",
             (a.T @ upstream, upstream @ b.T)),
            ("forgot_upstream",
             "You left out the upstream gradient (you used ones): grad_a = upstream @ b.T "
             "and grad_b = a.T @ upstream.", (ones @ b.T, a.T @ ones)),
            ("elementwise_rule",
             "That is the rule of element-wise multiply. For a @ b each entry of the "
             "output sums over k, so the gradients are matrix products: "
             "upstream @ b.T and a.T @ upstream.", (upstream * b, upstream * a)),
        ])
        for got, expected, name, mistakes in [
            (got_a, expected_a, "grad_a", [
                ("transposes_wrong", "grad_a = upstream @ b is missing a transpose: use "
                 "upstream @ b.T (entry (i, k) sums upstream[i, j] * b[k, j] over j).",
                 upstream @ b),
                ("transposes_wrong", "grad_a has its factors in the wrong order: it is "
                 "upstream @ b.T, upstream first (a's rows come from upstream's rows).",
                 b.T @ upstream),
                ("transposes_wrong", "grad_a is transposed: you computed "
                 "(upstream @ b.T).T. Drop the outer transpose.", b @ upstream.T),
            ]),
            (got_b, expected_b, "grad_b", [
                ("transposes_wrong", "grad_b = a @ upstream is missing a transpose: use "
                 "a.T @ upstream (entry (k, j) sums a[i, k] * upstream[i, j] over i).",
                 a @ upstream),
                ("transposes_wrong", "grad_b has its factors in the wrong order: it is "
                 "a.T @ upstream, a.T first (b's columns come from upstream's columns).",
                 upstream @ a.T),
                ("transposes_wrong", "grad_b is transposed: you computed "
                 "(a.T @ upstream).T. Drop the outer transpose.", upstream.T @ a),
            ]),
        ]:
            if not matches(got, expected):
                diagnose_mistake(got, mistakes)
                raise Wrong(f"{name} is not right for square 3x3 matrices. "
                            + describe_difference(got, expected), "other")

    a, b, upstream = _fixed_arrays(66, (2, 3), (3, 4), (2, 4))
    shapes = "a of shape (2, 3), b of shape (3, 4) and upstream of shape (2, 4)"
    try:
        value = call_answer(answer, upstream.copy(), a.copy(), b.copy())
    except Wrong as wrong:
        if wrong.mistake != "raised":
            raise
        raise Wrong(f"{wrong.hint.rstrip('.')}. That happened for {shapes}: a transpose is probably "
                    f"in the wrong place. Let the shapes guide you: grad_a must be (2, 3), "
                    f"the only product of upstream (2, 4) and b (3, 4) with that shape is "
                    f"upstream @ b.T.", "transposes_wrong") from None
    pair = _two_gradients(value)
    expected = _vjp_by_finite_differences(lambda p, q: p @ q, upstream, [a, b])
    for got, reference, name in [(pair[0], expected[0], "grad_a"),
                                 (pair[1], expected[1], "grad_b")]:
        array = _numbers(got, name)
        shape = reference.shape
        if array.shape == shape[::-1]:
            raise Wrong(f"For {shapes}, {name} has shape {array.shape}, the transpose of "
                        f"its input's shape {shape}: transpose the result, or swap and "
                        f"transpose the factors.", "transposes_wrong")
        if array.shape != shape:
            raise Wrong(f"For {shapes}, {name} has shape {array.shape}; a gradient has its "
                        f"input's shape, {shape}.", "wrong_shape")
        if not matches(array, reference):
            raise Wrong(f"Right for square matrices, but {name} is wrong for {shapes}. "
                        + describe_difference(array, reference), "other")
    return ("grad_a = upstream @ b.T and grad_b = a.T @ upstream: each has its input's "
            "shape, for square and rectangular matrices.")


# --- 6.4: the stable log1pexp as a custom gradient -------------------------------------

LOG1PEXP_PROBES = [  # (dtype, x, upstream): float32 overflows at 88.7, float64 at 709.8
    (np.float32, np.array([100.0, -30.0, 0.0, 2.0]), np.array([2.0, -1.0, 0.5, 3.0])),
    (np.float64, np.array([1000.0, -40.0, 0.0, 2.0]), np.array([2.0, -1.0, 0.5, 3.0])),
]


def _close(got, expected):
    """Relative agreement everywhere, tiny values included (no absolute slack)."""
    return matches(got, expected, rtol=1e-5, atol=0.0)


def _unwrap(answer):
    """The rule itself: a function decorated with the notebook's custom_gradient keeps it
    as ``__wrapped__`` (functools.wraps), like any well-behaved decorator."""
    return getattr(answer, "__wrapped__", answer) if callable(answer) else answer


@exercise("6.4", "the stable log1pexp as a custom gradient")
def log1pexp(answer):
    rule = _unwrap(answer)
    for dtype, x64, upstream64 in LOG1PEXP_PROBES:
        name = np.dtype(dtype).name
        x = x64.astype(dtype)
        big, small = x64[0], x64[1]
        with np.errstate(all="ignore"):
            result = call_answer(rule, x.copy(), name="`log1pexp`")
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise Wrong("Like tf.custom_gradient, the function must return two things: "
                        "the output and grad_fn, as `return output, grad_fn`.",
                        "not_a_pair")
        output, grad_fn = result
        value = _numbers(output, "The output", shape=x.shape)
        expected_value = _softplus(x64)
        if not np.isfinite(value[0]):
            raise Wrong(f"In {name} the output at x = {big:g} is {value[0]}: log(1 + e^x) "
                        f"overflows in the forward pass (e^x is inf). Compute the value as "
                        f"softplus without overflow, e.g. np.logaddexp(0, x).", "inf_value")
        if not _close(value, expected_value):
            diagnose_mistake(value, [
                ("value_cancels",
                 f"In {name} the output at x = {small:g} is 0, but log(1 + e^x) is about "
                 f"{expected_value[1]:.3g} there: 1 + e^x rounds to 1 before the log. "
                 f"np.logaddexp(0, x) keeps it.",
                 np.where(np.arange(4) == 1, 0.0, expected_value)),
                ("returned_gradient_as_output",
                 "Your output is the sigmoid, the derivative: the output is log(1 + e^x) "
                 "itself; the sigmoid belongs in grad_fn.", _sigmoid(x64)),
            ], rtol=1e-5, atol=0.0)
            raise Wrong(f"The output is not log(1 + e^x) in {name}. "
                        + describe_difference(value, expected_value, x64), "wrong_value")
        if not callable(grad_fn):
            raise Wrong(f"The second thing your function returns should be grad_fn, a "
                        f"function of the upstream gradient; it is a "
                        f"{type(grad_fn).__name__}.", "grad_fn_not_callable")
        upstream = upstream64.astype(dtype)
        with np.errstate(all="ignore"):
            gradient = call_answer(grad_fn, upstream.copy(), name="Your grad_fn")
        if isinstance(gradient, (tuple, list)) and len(gradient) == 1:
            gradient = gradient[0]
        got = _numbers(gradient, "What your grad_fn returned", shape=x.shape)
        expected = upstream64 * _sigmoid(x64)
        if _close(got, expected):
            continue
        if np.isnan(got[0]) or np.isinf(got[0]):
            raise Wrong(f"In {name} grad_fn gives {got[0]} at x = {big:g}: e^x / (1 + e^x) "
                        f"is inf / inf there. Compute the sigmoid in a form that never "
                        f"overflows (for example exp(-softplus(-x)), or 1 / (1 + e^-x) "
                        f"for x >= 0).", "nan_gradient")
        diagnose_mistake(got, [
            ("forgot_upstream",
             "grad_fn returns sigmoid(x) but forgets the upstream gradient: return "
             "upstream * sigmoid(x). (Invisible when upstream = 1, wrong inside a chain.)",
             _sigmoid(x64)),
            ("documented_rule_cancels",
             f"At x = {small:g} your gradient is 0 in {name}, but upstream * sigmoid(x) "
             f"is about {expected[1]:.3g} there. The rule upstream * (1 - 1/(1 + e^x)) "
             f"subtracts two numbers that are both almost 1 and loses everything; use "
             f"the sigmoid directly.",
             np.where(np.arange(4) == 1, 0.0, expected)),
            ("sign_error",
             "grad_fn returns upstream * sigmoid(-x): check the sign; the derivative of "
             "log(1 + e^x) is e^x / (1 + e^x) = sigmoid(x).", upstream64 * _sigmoid(-x64)),
            ("forgot_local",
             "grad_fn returns the upstream gradient unchanged: multiply it by the local "
             "derivative, sigmoid(x).", upstream64),
        ], rtol=1e-4, atol=1e-30)
        raise Wrong(f"grad_fn should return upstream * sigmoid(x) (checked in {name}). "
                    + describe_difference(got, expected, x64), "other")
    return ("Softplus forward, sigmoid backward: finite and accurate at x = 100, -30 and 0 "
            "in float32 and out to x = 1000 and -40 in float64.")
