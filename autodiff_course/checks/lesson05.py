"""Checks for lesson 05, *Jacobians*.

Every reference is independent of the tape: closed forms in float64 NumPy (the
Jacobian of ``tanh(A x + c)`` is ``diag(1 - y**2) A``; the per-example Hessian of
``sum(softplus(x C))`` is ``C diag(s (1 - s)) C^T``; the blocks of a layer that
subtracts the batch mean are written out). The functions handed to the learner's
code are built here from TensorFlow ops in the probe's dtype, so the learner's
tape can differentiate them, and every probe is drawn fresh on each call: new
sizes, new matrices, new points. Each exercise is probed in float32 *and* in
float64; a float64 probe is judged with float64 tolerance, so float32 shortcuts
and finite differences fail, and the result must keep the input's dtype.
"""

from __future__ import annotations

import numpy as np

from ..checking import (
    Wrong, as_values, exercise, explain_difference, forbid_jacobian, fresh_rng, matches,
    mistakes, none_hint, observed_call_keeping_errors, require_forward_mode,
    require_nested, shape_hint, signed, why_none,
)
from ..log1pexp import reference_sigmoid as _sigmoid

mistakes.register({
    "returned_diagonal": "the diagonal of a Jacobian as a vector where the matrix belongs",
    "missed_product_rule": "one factor of a product treated as a constant",
    "half_product_rule": "one term of the product rule only",
    "product_rule_sign": "the product rule's two terms subtracted instead of added",
    "off_diagonal_nonzero": "derivatives copied into entries that are zero",
    "stacked_columns": "Jacobian rows stacked as columns (source shape before target shape)",
    "ones_upstream": "one vector-Jacobian product with dy of ones where one per row belongs",
    "wrong_row_count": "a Jacobian with another number of rows than the target has entries",
    "not_persistent": "a second gradient asked of a tape that is not persistent",
    "one_hot_dtype": "a float32 one-hot vector used with float64 values",
    "returned_full_jacobian":
        "the full (batch, ..., batch, ...) Jacobian where per-example blocks belong",
    "swapped_arguments": "the source and the target swapped in a Jacobian call",
    "single_example": "one example's Jacobian where one per example belongs",
    "repeated_slice": "one row, block or column repeated where each should differ",
    "summed_outputs": "a layer's outputs summed before differentiating",
    "batch_jacobian_sums": "batch_jacobian's column sums of blocks where examples interact",
    "summed_rows": "each row of blocks summed over the source's batch axis",
    "first_column": "the blocks of the first example's inputs for every example",
    "hard_coded_batch": "a batch size typed in instead of read from the input",
    "rank_two_only": "code that works for one axis per example only",
    "returned_gradient": "a gradient where a Jacobian or Hessian belongs",
    "gradient_of_gradient": "outer.gradient of a gradient (summed rows) where a Jacobian belongs",
    "diagonal_only": "only the diagonal of a Hessian",
    "gradient_outer_product": "the outer product g g^T where the Hessian belongs",
    "source_shape_first": "a Jacobian laid out as source shape + target shape",
    "columns_misplaced": "Jacobian columns stacked along the wrong axis before reshaping",
    "tangent_of_ones": "one forward pass with a tangent of ones where one per entry belongs",
    "tangent_shape": "a tangent whose shape is not the primal's",
    "computed_outside": "the output computed outside the ForwardAccumulator block",
    "no_row_gradients": "a Jacobian built without one tape.gradient per row",
})


# -- shared helpers -----------------------------------------------------------------

def _tf():
    import tensorflow as tf

    return tf


def _dtypes():
    tf = _tf()
    return tf.float32, tf.float64


def _tolerance(dtype, expected) -> dict:
    """Per-point relative tolerance, plus an absolute one scaled to the values.

    float32 results are judged to 2e-5 of themselves, float64 results to 1e-12:
    a finite difference or a float32 detour cannot get that close in float64.
    Entries that are exactly zero in the reference get a tiny absolute slack.
    """
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 1.0
    scale = scale if np.isfinite(scale) and scale > 0 else 1.0
    if dtype == _tf().float64:
        return {"rtol": 1e-12, "atol": 1e-14 * scale}
    return {"rtol": 2e-5, "atol": 2e-6 * scale}


def _numbers(value, dtype, name: str = "Your function") -> np.ndarray:
    """The returned tensor as float64 NumPy, once its kind and dtype are right.

    The shape is judged by each check, so that a wrong shape gets a hint that
    names the layout it came from.
    """
    return as_values(value, name=name, dtype=dtype)


def _require_shape(numbers: np.ndarray, want: tuple, name: str = "Your function") -> None:
    if tuple(numbers.shape) != tuple(want):
        shape = tuple(numbers.shape)
        squeezed = tuple(d for d in shape if d != 1) == tuple(d for d in want if d != 1)
        raise Wrong(shape_hint(name, shape, tuple(want)),
                    "broadcast_shape" if squeezed else "wrong_shape")


def _close(numbers: np.ndarray, expected, dtype) -> bool:
    """Loosely equal: for recognising a layout or a mistake, never for accepting."""
    expected = np.asarray(expected, dtype=np.float64)
    if numbers.shape != expected.shape:
        return False
    tol = _tolerance(dtype, expected)
    return matches(numbers, expected, rtol=max(tol["rtol"], 1e-4), atol=tol["atol"] * 10)


def _tensor(values, dtype):
    return _tf().constant(np.asarray(values), dtype=dtype)


def _used_autodiff(log) -> bool:
    return log.used_any_autodiff


def _call(answer, *args):
    """Call the answer while observing it; a raised error comes back after the log."""
    return observed_call_keeping_errors(answer, *args)


def _explain_none_or_error(log, wrong, *, probe: str = "x"):
    """A raised error or a None, explained from what the tapes saw where possible."""
    explained = why_none(log, probe=probe)
    if explained is not None:
        code, hint = explained
        if code == "watched_after_use":
            # The log cannot tell a late watch from a target computed after the block.
            code, hint = "no_gradient", (
                f"The tape returned None for {probe} although it watches it: it recorded "
                f"no path from {probe} to the target. Either an operation on that path ran "
                f"outside the tape's `with` block (a tf.reduce_mean or a slice written "
                f"inside the gradient call, after the block closed), or tape.watch({probe}) "
                f"came after {probe} was used. Compute the whole target inside the block, "
                f"after the watch.")
        raise Wrong(hint, code)
    if wrong is not None:
        raise wrong


def _known(got, expected, dtype, known) -> None:
    """Raise the hint of the first known mistake that ``got`` matches.

    A known mistake that is also off by a constant factor is named too, with the
    factor.
    """
    tol = _tolerance(dtype, expected)
    if matches(got, expected, **tol):
        return
    for code, hint, values in known:
        values = np.asarray(values, dtype=np.float64)
        if values.shape != np.shape(got):
            continue
        if matches(got, values, **_tolerance(dtype, values)):
            raise Wrong(hint, code)
        denominator = float(np.sum(values * values))
        if denominator > 0.0 and np.all(np.isfinite(got)) and \
                not _proportional(values, expected):
            factor = float(np.sum(got * values)) / denominator
            if abs(factor) > 1e-6 and not np.isclose(factor, 1.0) and \
                    matches(got, factor * values, **_tolerance(dtype, factor * values)):
                raise Wrong(f"{hint} (Your numbers are also scaled by {factor:.6g}.)", code)


def _proportional(a, b) -> bool:
    """``a`` is a constant times ``b`` (such a mistake is a scale factor, not a pattern)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    denominator = float(np.sum(b * b))
    if a.shape != b.shape or denominator == 0.0:
        return False
    return bool(np.allclose(a, float(np.sum(a * b)) / denominator * b, rtol=1e-9, atol=0.0))


def _permuted_axes(got, expected):
    """The axis order that turns ``expected`` into ``got``, when one does (not the identity)."""
    import itertools

    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.ndim != expected.ndim or got.ndim < 2 or got.ndim > 6:
        return None
    identity = tuple(range(got.ndim))
    for order in itertools.permutations(identity):
        if order == identity or expected.transpose(order).shape != got.shape:
            continue
        moved = expected.transpose(order)
        if np.allclose(moved, expected) if moved.shape == expected.shape else False:
            continue
        if _close(got, moved, _tf().float32):
            return order
    return None


def _repeated_along(got, expected, axis: int) -> bool:
    """Every slice along ``axis`` is the same, where the answer's slices differ."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or got.shape[axis] < 2 or not np.any(got):
        return False
    first = np.take(got, [0], axis=axis)
    if not np.allclose(got, first, rtol=1e-6, atol=0.0):
        return False
    return not np.allclose(expected, np.take(expected, [0], axis=axis), rtol=1e-6, atol=0.0)


def _shape_mistakes(got, expected, *, axis: int, slice_name: str, varies: str):
    """Raise for the right numbers in another axis order, or one slice repeated."""
    order = _permuted_axes(got, expected)
    if order is not None:
        raise Wrong(f"The right numbers with the axes in another order: your axes are the "
                    f"answer's axes {list(order)}. Check the layout: target axes first, "
                    f"then source axes, with {varies}.", "transposed")
    if _repeated_along(got, expected, axis):
        raise Wrong(f"Every {slice_name} of your result is the same, but each should "
                    f"differ: {varies}.", "repeated_slice")


def _looks_estimated(got, expected) -> bool:
    """Most entries within 10% of the answer: an estimate, not a wrong formula."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    nonzero = expected != 0.0
    if not np.any(nonzero) or not np.all(np.isfinite(got)):
        return False
    relative = np.abs(got[nonzero] - expected[nonzero]) / np.abs(expected[nonzero])
    return bool(np.median(relative) < 0.1)


def _judge(got, expected, dtype, *, summary, known=(), batch=None, log=None, at=None,
           repeated=None):
    """Raise the best :class:`Wrong` for ``got`` unless it matches ``expected``.

    In order: the exercise's known mistakes; the right numbers in another axis
    order, or one slice repeated (``repeated = (axis, name, what varies)``); float64
    results that carry only
    float32 precision; estimates made without automatic differentiation (finite
    differences); the generic patterns; a point that really differs.
    """
    tol = _tolerance(dtype, expected)
    if matches(got, expected, **tol):
        return
    _known(got, expected, dtype, known)
    if repeated is not None:
        axis, slice_name, varies = repeated
        _shape_mistakes(got, expected, axis=axis, slice_name=slice_name, varies=varies)
    if dtype == _tf().float64 and _float32_values(got) and \
            matches(got, expected, rtol=1e-4, atol=tol["atol"] * 1e9):
        raise Wrong("The result is float64, but its values carry only float32 precision: "
                    "somewhere they were computed in float32 (a cast, a float32 constant) "
                    "and cast back. Keep every step in x's dtype.", "float32_not_float64")
    if log is not None and not _used_autodiff(log) and _looks_estimated(got, expected):
        raise Wrong("Your numbers are near the answer but not exact, and your function "
                    "used no automatic differentiation: that is a finite-difference "
                    "estimate. Its error cannot go below the rounding error divided by the "
                    "step (about 1e-10 in float64, far worse in float32), and the check "
                    "probes to 1e-12 in float64. Differentiate with the tape.",
                    "finite_differences")
    raise explain_difference(got, expected, summary=summary, batch=batch, at=at, **tol)


def _float32_values(got) -> bool:
    """True when every value is exactly a float32 number (and not all are integers)."""
    got = np.asarray(got, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        same = np.all(got.astype(np.float32).astype(np.float64) == got)
    return bool(same and not np.all(got == np.round(got)))


def _sizes(rng, low, high, count, distinct=True):
    """``count`` integer sizes in [low, high], all different when ``distinct``."""
    choices = np.arange(low, high + 1)
    return [int(v) for v in rng.choice(choices, size=count, replace=not distinct)]


def _dense_tanh(matrix, offset, dtype):
    """``f(x) = tanh(A x + c)`` for a vector x, in TensorFlow."""
    tf = _tf()
    a, c = _tensor(matrix, dtype), _tensor(offset, dtype)

    def f(x):
        return tf.tanh(tf.linalg.matvec(a, x) + c)

    return f


def _dense_tanh_jacobian(matrix, offset, x):
    y = np.tanh(matrix @ x + offset)
    return (1.0 - y**2)[:, None] * matrix


# 5.1 ---------------------------------------------------------------------------

@exercise("5.1", "the Jacobian of an element-wise function")
def swish_jacobian(answer):
    """The Jacobian of y = x * sigmoid(x), element-wise.

    Probes (fresh each call): a float32 x and a float64 x of two different
    lengths between 3 and 7, each holding 0, the point -1.2785 near which the
    derivative crosses zero, and values of both signs between 0.2 and 7 (both
    tails of the sigmoid). Float64 is judged to 1e-12, so the result must keep the
    input's dtype and be exact (the tape, or the formula). Either method is
    allowed, as the exercise says.
    """
    rng = fresh_rng("5.1")
    sizes = _sizes(rng, 3, 7, 2)
    for dtype, n in zip(_dtypes(), sizes):
        xs = np.concatenate([[0.0, -1.2785], signed(rng, n - 2, 0.2, 7.0)])
        rng.shuffle(xs)
        value, log, wrong = _call(answer, _tensor(xs, dtype))
        if wrong is not None or value is None:
            _explain_none_or_error(log, wrong)
        s = _sigmoid(xs)
        derivative = s + xs * s * (1.0 - s)
        expected = np.diag(derivative)
        numbers = _numbers(value, dtype)
        if numbers.shape == (n,):
            if _close(numbers, derivative, dtype):
                raise Wrong(
                    f"You returned the {n} derivatives dy_i/dx_i as a vector of shape "
                    f"({n},): that is what tape.gradient gives for an element-wise "
                    f"function. The Jacobian is the ({n}, {n}) matrix with these numbers "
                    f"on its diagonal (target shape + source shape): use tape.jacobian, "
                    f"or tf.linalg.diag.", "returned_diagonal")
            raise Wrong(f"Your function returned shape ({n},), the shape of x. A Jacobian "
                        f"of y ({n},) with respect to x ({n},) has shape ({n}, {n}).",
                        "wrong_shape")
        _require_shape(numbers, (n, n))
        diagonal = np.diag(numbers)
        if np.all(numbers == np.diag(diagonal)) and np.ptp(diagonal) == 0.0 and \
                not matches(numbers, expected, **_tolerance(dtype, expected)):
            raise Wrong(f"Every diagonal entry is {diagonal[0]:.6g}, whatever x is: the "
                        f"derivative changes from point to point. Compute it from x "
                        f"instead of typing numbers in.", "hard_coded")
        _judge(numbers, expected, dtype, log=log,
               summary="Not the Jacobian of x * sigmoid(x).",
               known=[
                   ("missed_product_rule",
                    "You returned diag(sigmoid(x)): the factor x in x * sigmoid(x) was "
                    "treated as a constant. The product rule gives sigmoid(x) + x * "
                    "sigmoid(x) * (1 - sigmoid(x)).", np.diag(s)),
                   ("half_product_rule",
                    "You returned diag(x * sigmoid'(x)) only: the product rule adds a "
                    "second term, sigmoid(x) itself.", np.diag(xs * s * (1.0 - s))),
                   ("half_product_rule",
                    "You returned diag(sigmoid(x) * (1 - sigmoid(x))), the derivative of "
                    "the sigmoid alone. y = x * sigmoid(x) is a product: its derivative is "
                    "sigmoid(x) + x * sigmoid(x) * (1 - sigmoid(x)).",
                    np.diag(s * (1.0 - s))),
                   ("product_rule_sign",
                    "The two terms of the product rule are subtracted: the derivative of "
                    "x * sigmoid(x) is sigmoid(x) PLUS x * sigmoid(x) * (1 - sigmoid(x)).",
                    np.diag(s - xs * s * (1.0 - s))),
                   ("value_not_derivative",
                    "You put the function's values x * sigmoid(x) on the diagonal, not its "
                    "derivatives.", np.diag(xs * s)),
                   ("off_diagonal_nonzero",
                    "Every row holds all the derivatives. But y_i depends on x_i alone, so "
                    "dy_i/dx_j = 0 for i != j: only the diagonal is non-zero.",
                    np.tile(derivative, (n, 1))),
                   ("off_diagonal_nonzero",
                    "Every column holds all the derivatives. But y_i depends on x_i alone, "
                    "so dy_i/dx_j = 0 for i != j: only the diagonal is non-zero.",
                    np.tile(derivative[:, None], (1, n))),
               ])
    return (f"Checked in float32 and float64 at fresh points of both signs (lengths "
            f"{sizes[0]} and {sizes[1]}): the Jacobian of an element-wise function is "
            f"diagonal, since y_i depends on x_i only.")


# 5.2 ---------------------------------------------------------------------------

def _coupled(matrix, offset, dtype):
    """``f(x) = tanh(A x + c) * sum(x**2)``: every output depends on every input."""
    tf = _tf()
    a, c = _tensor(matrix, dtype), _tensor(offset, dtype)

    def f(x):
        return tf.tanh(tf.linalg.matvec(a, x) + c) * tf.reduce_sum(x**2)

    return f


def _coupled_jacobian(matrix, offset, x):
    t = np.tanh(matrix @ x + offset)
    s = float(np.sum(x**2))
    return (1.0 - t**2)[:, None] * matrix * s + t[:, None] * (2.0 * x)[None, :]


def _dtype_clash(text: str) -> bool:
    """An error message about float32 meeting float64."""
    return ("double" in text and "float" in text) or ("float64" in text and "float32" in text)


def _raised_hint(wrong: Wrong, m: int) -> Wrong:
    """Turn 'your function raised' into a tape-specific hint where the message says why."""
    if wrong.mistake != "raised":
        return wrong
    text = wrong.hint
    if "non-persistent" in text:
        return Wrong("The tape was asked for a second gradient: a tape is released after "
                     "its first gradient call unless you create it with "
                     "tf.GradientTape(persistent=True). (Then `del tape` when done.)",
                     "not_persistent")
    if _dtype_clash(text):
        return Wrong("float32 met float64: tf.one_hot makes float32 by default, and the "
                     "check also passes a float64 x. Build the upstream in y's dtype: "
                     "tf.one_hot(i, m, dtype=y.dtype). " + text, "one_hot_dtype")
    lowered = text.lower()
    if any(words in lowered for words in ("out of range", "out of bounds", "incompatible",
                                          "same number of elements", "shape")):
        return Wrong(f"This probe's y has {m} entries, and your code used another number "
                     f"(of rows, or of entries in the one-hot upstream, which must have y's "
                     f"shape). Take m from y.shape[0] instead of typing it in. " + text,
                     "wrong_row_count")
    return wrong


@exercise("5.2", "a Jacobian row by row")
def jacobian_by_rows(answer):
    """Row i of the Jacobian is the VJP with dy = e_i, without tape.jacobian.

    Method: no tape.jacobian or batch_jacobian, and the rows must come from
    tape.gradient (reverse mode), not from finite differences or forward mode.
    Probes (fresh each call): tanh(A x + c) in float32 and tanh(A x + c) *
    sum(x**2) (every output depends on every input) in float64, with m outputs
    and n inputs drawn so that m != n in each and the two m differ (a typed-in
    number of rows fails); A, c and x fresh, of both signs.
    """
    rng = fresh_rng("5.2")
    ms = _sizes(rng, 2, 6, 2)
    probes = []
    for dtype, m, family in zip(_dtypes(), ms, ("dense", "coupled")):
        n = int(rng.choice([k for k in range(2, 6) if k != m]))
        matrix = signed(rng, (m, n), 0.2, 1.5)
        offset = signed(rng, m, 0.05, 0.5)
        xs = signed(rng, n, 0.1, 1.0)
        if family == "dense":
            f = _dense_tanh(matrix, offset, dtype)
            expected = _dense_tanh_jacobian(matrix, offset, xs)
        else:
            f = _coupled(matrix, offset, dtype)
            expected = _coupled_jacobian(matrix, offset, xs)
        probes.append((dtype, m, n, f, xs, expected))
    for dtype, m, n, f, xs, expected in probes:
        value, log, wrong = _call(answer, f, _tensor(xs, dtype))
        forbid_jacobian(log, "record y = f(x) once on a persistent tape, then call "
                             "tape.gradient(y, x, output_gradients=tf.one_hot(i, m)) "
                             "for each row i.")
        if wrong is not None or value is None:
            _explain_none_or_error(log, None if wrong is None else _raised_hint(wrong, m))
        numbers = _numbers(value, dtype)
        shape = numbers.shape
        if shape == (n, m) and _close(numbers, expected.T, dtype):
            raise Wrong(f"Your result has shape ({n}, {m}), source then target: the rows "
                        f"came out as columns (tf.stack(..., axis=1), or a transpose). Row "
                        f"i of the Jacobian is the gradient of y[i]: stack the rows along "
                        f"axis 0 for shape ({m}, {n}).", "stacked_columns")
        if shape == (n,):
            raise Wrong(f"You returned one vector shaped like x ({n},): that is one "
                        f"gradient, the VJP with dy = ones (the sum of the rows). The "
                        f"Jacobian needs one backward pass per output, with dy = "
                        f"tf.one_hot(i, m), stacked into shape ({m}, {n}).",
                        "returned_gradient")
        if len(shape) == 2 and shape[1] == n and shape[0] != m:
            per_input = (" (one per input of x; rows belong to the outputs)"
                         if shape[0] == n else "")
            raise Wrong(f"Your Jacobian has {shape[0]} rows{per_input}, but this probe's "
                        f"y has {m} entries, so it needs {m} rows. Take m from "
                        f"y.shape[0] instead of typing a number.", "wrong_row_count")
        _require_shape(numbers, (m, n))
        _judge(numbers, expected, dtype, log=log, summary="Not the Jacobian of f at x.",
               repeated=(0, "row", "row i is the gradient of y[i] alone"),
               known=[
                   ("ones_upstream",
                    "Every row is the same: the sum of the Jacobian's rows. That is the "
                    "gradient with dy = ones; row i needs output_gradients=tf.one_hot(i, "
                    "m), which selects y[i].", np.tile(expected.sum(axis=0), (m, 1))),
               ])
        if not any(call.kind == "gradient" for call in log.calls):
            raise Wrong("The numbers are right, but your function called no tape.gradient: "
                        "the exercise asks for one backward pass per row, "
                        "tape.gradient(y, x, output_gradients=tf.one_hot(i, m)).",
                        "no_row_gradients")
    return (f"Checked without tape.jacobian on two functions ({ms[0]} and {ms[1]} "
            f"outputs, float32 and float64): row i of the Jacobian is tape.gradient(y, x, "
            f"output_gradients=e_i), one backward pass per output.")


# 5.3 ---------------------------------------------------------------------------

def _layer(weights, offset, dtype, activation):
    tf = _tf()
    w, c = _tensor(weights, dtype), _tensor(offset, dtype)
    act = tf.tanh if activation == "tanh" else tf.math.softplus

    def layer(x):
        return act(x @ w + c)

    return layer


def _layer_jacobians(weights, offset, xs, activation):
    """float64 per-example Jacobians (batch, outs, ins) of act(x W + c)."""
    z = xs @ weights + offset
    slope = 1.0 - np.tanh(z) ** 2 if activation == "tanh" else _sigmoid(z)
    return slope[:, :, None] * weights.T[None, :, :]


def _zeros_hint(log, what: str, probe: str = "x"):
    """Why a Jacobian call came back as zeros: the cause, from what the tapes saw."""
    calls = [c for c in log.calls if c.kind in ("jacobian", "batch_jacobian")]
    if not calls:
        return None
    call = calls[-1]
    tape = call.tape
    earlier = [c for c in log.calls if c.tape is not tape and c.time < call.time]
    outside = [c for c in earlier if tape.exited is not None and c.time > tape.exited]
    lead = (f"All zeros: {what} returns zeros, not None, when its target is not "
            f"connected to its source, so the mistake does not stop your code. ")
    if outside:
        return "gradient_outside_tape", lead + none_hint("gradient_outside_tape", probe)
    source = call.sources[0] if call.sources else None
    if source is not None and not tape.was_watched(source):
        code = "outer_not_watching" if earlier else "unwatched_constant"
        return code, lead + none_hint(code, probe)
    return None


@exercise("5.3", "per-example Jacobians")
def per_example_jacobian(answer):
    """Per-example Jacobians of a layer that treats each example on its own.

    Probes (fresh each call): tanh(x W + c) in float32 and softplus(x W + c) in
    float64, with two different batch sizes between 2 and 5, and ins, outs and
    the batch size all different (so every layout has its own shape); W, c and
    the batch fresh, of both signs. Any method that gives the
    (batch, outs, ins) blocks is right (batch_jacobian, or the diagonal blocks of
    tape.jacobian).
    """
    rng = fresh_rng("5.3")
    batches = _sizes(rng, 2, 5, 2)
    for dtype, batch, activation in zip(_dtypes(), batches, ("tanh", "softplus")):
        ins, outs = (int(v) for v in rng.choice([k for k in range(2, 6) if k != batch],
                                                size=2, replace=False))
        weights = signed(rng, (ins, outs), 0.2, 1.2)
        offset = signed(rng, outs, 0.05, 0.5)
        xs = signed(rng, (batch, ins), 0.1, 1.5)
        expected = _layer_jacobians(weights, offset, xs, activation)
        value, log, wrong = _call(answer, _layer(weights, offset, dtype, activation),
                                  _tensor(xs, dtype))
        if wrong is not None or value is None:
            _explain_none_or_error(log, wrong)
        numbers = _numbers(value, dtype)
        shape = numbers.shape
        if shape == (batch, outs, batch, ins):
            raise Wrong(f"Shape {shape} is (batch, outs, batch, ins): the full "
                        f"tape.jacobian, every output of every example against every "
                        f"example's input. Per-example Jacobians have shape ({batch}, "
                        f"{outs}, {ins}): use tape.batch_jacobian(y, x), or take the "
                        f"diagonal blocks.", "returned_full_jacobian")
        if shape == (batch, ins, outs):
            if np.all(numbers == 0.0):
                raise Wrong(f"Shape {shape} and all zeros: the arguments are swapped. "
                            f"batch_jacobian(target, source) takes y first; x does not "
                            f"depend on y, and batch_jacobian returns zeros (not None) for "
                            f"an unconnected pair.", "swapped_arguments")
            raise Wrong(f"Shape {shape} is (batch, ins, outs): each Jacobian is "
                        f"transposed. Rows belong to outputs: the shape is ({batch}, "
                        f"{outs}, {ins}), target shape then source shape.", "transposed")
        if shape == (batch, ins):
            raise Wrong(f"Shape {shape} is the shape of x: that is tape.gradient(y, x), "
                        f"the sum over each example's outputs. A per-example Jacobian "
                        f"keeps one row per output: ({batch}, {outs}, {ins}).",
                        "returned_gradient")
        if shape == (outs, ins):
            raise Wrong(f"Shape {shape} is a single Jacobian. The exercise asks for one "
                        f"per example, stacked along the batch axis: ({batch}, {outs}, "
                        f"{ins}).", "single_example")
        if shape == (batch, 1, ins):
            raise Wrong(f"Shape {shape}: one output per example, where the layer has "
                        f"{outs}. Were the outputs summed (tf.reduce_sum(..., axis=1)) "
                        f"before differentiating? Differentiate y itself.",
                        "summed_outputs")
        _require_shape(numbers, (batch, outs, ins))
        if np.all(numbers == 0.0):
            found = _zeros_hint(log, "batch_jacobian")
            if found is not None:
                raise Wrong(found[1], found[0])
        _judge(numbers, expected, dtype, log=log,
               summary="Not the per-example Jacobians of the layer.",
               repeated=(0, "example's block",
                         "each example has its own Jacobian, at its own input"))
    return (f"Checked on two layers (batches of {batches[0]} and {batches[1]}, float32 and "
            f"float64): the per-example Jacobians have shape (batch, outs, ins), the "
            f"diagonal blocks of the block-diagonal full Jacobian.")


# 5.4 ---------------------------------------------------------------------------

def _centred_layer(weights, offset, out_shape, dtype):
    """Subtract the batch mean of the flattened examples, then tanh(. W + c), reshaped."""
    tf = _tf()
    w, c = _tensor(weights, dtype), _tensor(offset, dtype)

    def layer(x):
        batch = x.shape[0]
        flat = tf.reshape(x, [batch, -1])
        centred = flat - tf.reduce_mean(flat, axis=0, keepdims=True)
        return tf.reshape(tf.tanh(centred @ w + c), [batch, *out_shape])

    return layer


def _centred_blocks(weights, offset, xs):
    """float64 full Jacobian of the centred layer as (batch, O, batch, I) blocks."""
    batch = xs.shape[0]
    flat = xs.reshape(batch, -1)
    y = np.tanh((flat - flat.mean(axis=0, keepdims=True)) @ weights + offset)
    local = (1.0 - y**2)[:, :, None] * weights.T[None, :, :]  # (batch, O, I)
    mixing = np.eye(batch) - 1.0 / batch                       # d centred[b'] / d x[b]
    return local[:, :, None, :] * mixing[:, None, :, None]


BATCH_JACOBIAN_SUMS_HINT = (
    "These are batch_jacobian's numbers: for each example, the sum over the batch of the "
    "blocks in its column. This layer subtracts the batch mean, so examples interact and "
    "those sums are not the diagonal blocks. Compute the full tape.jacobian and keep the "
    "block of example b's outputs against example b's inputs.")


@exercise("5.4", "a batch_jacobian that stays right when examples interact")
def true_batch_jacobian(answer):
    """Each example's own Jacobian d y[b] / d x[b], for a layer that mixes examples.

    Probes (fresh each call): a layer that subtracts the batch mean, so that
    batch_jacobian's column sums differ from the diagonal blocks; in float32 with
    one axis per example (x (batch, ins), y (batch, outs), ins != outs) and in
    float64 with two (x (batch, 2, c), y (batch, p, 2)); two different batch
    sizes between 2 and 5 (a typed-in range fails), sizes and weights fresh.
    """
    rng = fresh_rng("5.4")
    batches = _sizes(rng, 2, 5, 2)
    ins, outs = (int(v) for v in rng.choice([k for k in range(2, 6) if k != batches[0]],
                                            size=2, replace=False))
    probes = [(_dtypes()[0], batches[0], (ins,), (outs,)),
              (_dtypes()[1], batches[1], (2, int(rng.integers(2, 4))),
               (int(rng.integers(2, 4)), 2))]
    for index, (dtype, batch, in_shape, out_shape) in enumerate(probes):
        size_in, size_out = int(np.prod(in_shape)), int(np.prod(out_shape))
        weights = signed(rng, (size_in, size_out), 0.2, 1.2)
        offset = signed(rng, size_out, 0.05, 0.5)
        xs = signed(rng, (batch,) + in_shape, 0.1, 1.5)
        blocks = _centred_blocks(weights, offset, xs)        # (B, O, B, I)
        own = np.stack([blocks[b, :, b, :] for b in range(batch)])
        want = (batch,) + out_shape + in_shape
        layer = _centred_layer(weights, offset, out_shape, dtype)
        value, log, wrong = _call(answer, layer, _tensor(xs, dtype))
        if wrong is not None and wrong.mistake == "raised" and why_none(log) is None:
            text = wrong.hint.lower()
            past_batch = "of dimension 0 out of bounds" in text or "is not in [0," in text
            if index == 1 and not past_batch and "out of bounds" in text:
                raise Wrong(f"This probe has two axes per example (x "
                            f"{(batch,) + in_shape}, y {(batch,) + out_shape}), and your "
                            f"indexing assumed one: in the full Jacobian the source's batch "
                            f"axis comes after all of y's axes (axis {len(out_shape) + 1}). "
                            f"tf.gather(full[b], b, axis=...) or a reshape to (batch, outs, "
                            f"batch, ins) works for any rank. " + wrong.hint, "rank_two_only")
            if past_batch or "out of bounds" in text or "out of range" in text:
                raise Wrong(f"An index ran past the batch: this probe's batch has "
                            f"{batch} examples. Read the batch size from x.shape[0] "
                            f"instead of typing it in. " + wrong.hint, "hard_coded_batch")
        if wrong is not None or value is None:
            _explain_none_or_error(log, wrong)
        numbers = _numbers(value, dtype)
        shape = numbers.shape
        if shape == (batch,) + out_shape + (batch,) + in_shape:
            raise Wrong(f"Shape {shape} is the full tape.jacobian, y.shape + x.shape. Keep "
                        f"only each example's own block, d y[b] / d x[b]: the result has "
                        f"shape {want}.", "returned_full_jacobian")
        if len(shape) >= 1 and shape[0] != batch and shape[1:] == want[1:]:
            raise Wrong(f"Your result holds {shape[0]} examples, but this probe's batch "
                        f"has {batch}. Read the batch size from x.shape[0] instead of "
                        f"typing it in.", "hard_coded_batch")
        if shape == (batch,) + in_shape + out_shape and in_shape != out_shape:
            raise Wrong(f"Shape {shape} is (batch, x's axes, y's axes): each block is "
                        f"transposed. Rows belong to outputs: (batch,) + y.shape[1:] + "
                        f"x.shape[1:] = {want}.", "transposed")
        full = blocks.reshape((batch,) + out_shape + (batch,) + in_shape)
        position_two = (np.stack([full[b, :, b] for b in range(batch)])
                        if batch <= full.shape[2] else np.zeros(0))
        if index == 1 and shape == position_two.shape and \
                _close(numbers, position_two, dtype):
            raise Wrong(f"This probe has two axes per example (x {(batch,) + in_shape}, y "
                        f"{(batch,) + out_shape}), and your indexing full[b, :, b, ...] "
                        f"took the source's batch axis to be axis 2. In the full Jacobian "
                        f"it comes after all of y's axes (axis {len(out_shape) + 1}): "
                        f"tf.gather(full[b], b, axis=...) or a reshape to (batch, outs, "
                        f"batch, ins) works for any rank.", "rank_two_only")
        if shape != want and index == 1:
            raise Wrong(f"This probe has two axes per example (x {(batch,) + in_shape}, y "
                        f"{(batch,) + out_shape}), and your result has shape {shape} "
                        f"instead of {want}. In the full Jacobian the source's batch axis "
                        f"comes after all of y's axes (axis {len(out_shape) + 1}), not "
                        f"always at axis 2: tf.gather(full[b], b, axis=...) or a reshape to "
                        f"(batch, outs, batch, ins) works for any rank.", "rank_two_only")
        _require_shape(numbers, want)
        if np.all(numbers == 0.0):
            found = _zeros_hint(log, "batch_jacobian")
            if found is not None:
                raise Wrong(found[1], found[0])
        scale = float(np.max(np.abs(own)))
        used_full = any(call.kind == "jacobian" for call in log.calls)
        if np.max(np.abs(numbers)) <= 1e-3 * scale and (np.any(numbers != 0.0) or used_full):
            raise Wrong("Every block is (close to) zero. That is what summing each row of "
                        "blocks over the source's batch axis gives here: this layer "
                        "subtracts the batch mean, so d y[b] / d x[b'] summed over b' "
                        "cancels. Keep the block of example b against example b alone.",
                        "summed_rows")
        _known(numbers.reshape(batch, size_out, size_in), own, dtype, [
            ("batch_jacobian_sums", BATCH_JACOBIAN_SUMS_HINT,
             blocks.sum(axis=0).transpose(1, 0, 2))])
        _shape_mistakes(numbers, own.reshape(want), axis=0, slice_name="example's block",
                        varies="block b is example b's own Jacobian, at its own input")
        _judge(numbers.reshape(batch, size_out, size_in), own, dtype, log=log,
               summary="Not each example's own Jacobian d y[b] / d x[b].",
               known=[
                   ("batch_jacobian_sums", BATCH_JACOBIAN_SUMS_HINT,
                    blocks.sum(axis=0).transpose(1, 0, 2)),
                   ("summed_rows",
                    "You summed each row of blocks (over the source's batch axis): that "
                    "adds the cross-example terms to each example's own block. Keep the "
                    "block of example b against example b alone.", blocks.sum(axis=2)),
                   ("first_column",
                    "You took the blocks of example 0's inputs for every example. Block b "
                    "is d y[b] / d x[b]: the same b twice.", blocks[:, :, 0, :]),
               ],
               repeated=(0, "example's block",
                         "block b is example b's own Jacobian, at its own input"))
    return (f"Checked on a layer that subtracts the batch mean (batches of {batches[0]} "
            f"and {batches[1]}, one and two axes per example, float32 and float64): block "
            f"b of the full Jacobian, d y[b] / d x[b], is example b's own Jacobian, which "
            f"batch_jacobian gets wrong here.")


# 5.5 ---------------------------------------------------------------------------

def _per_example_function(mixing, dtype):
    """``f(x)[b] = sum_k softplus((x C)[b, k])``: one number per example."""
    tf = _tf()
    c = _tensor(mixing, dtype)

    def f(x):
        return tf.reduce_sum(tf.math.softplus(x @ c), axis=1)

    return f


def _per_example_reference(mixing, xs):
    """float64 per-example gradients (batch, n) and Hessians (batch, n, n)."""
    s = _sigmoid(xs @ mixing)                                   # (batch, k)
    gradients = s @ mixing.T
    curvature = s * (1.0 - s)
    hessians = np.einsum("ik,bk,jk->bij", mixing, curvature, mixing)
    return gradients, hessians


@exercise("5.5", "per-example Hessians with nested tapes")
def per_example_hessians(answer):
    """The Hessian of f(x)[b] with respect to x[b], for every example b.

    Method: nested tapes (an inner gradient computed while an outer tape records,
    then differentiated by the outer tape).
    Probes (fresh each call): f(x)[b] = sum_k softplus((x C)[b, k]) with a fresh
    (n, n) matrix C of both signs, so every Hessian is full; in float32 and in
    float64 (judged to 1e-12, so finite differences fail), with two different
    batch sizes between 2 and 4 and two different n between 2 and 4.
    """
    rng = fresh_rng("5.5")
    batches = _sizes(rng, 2, 4, 2)
    widths = _sizes(rng, 2, 4, 2)
    for dtype, batch, n in zip(_dtypes(), batches, widths):
        mixing = signed(rng, (n, n), 0.3, 1.5)
        xs = signed(rng, (batch, n), 0.1, 1.5)
        gradients, expected = _per_example_reference(mixing, xs)
        value, log, wrong = _call(answer, _per_example_function(mixing, dtype),
                                  _tensor(xs, dtype))
        if wrong is not None or value is None:
            _explain_none_or_error(log, wrong)
        numbers = _numbers(value, dtype)
        shape = numbers.shape
        if shape == (batch, n, batch, n):
            raise Wrong(f"Shape {shape} is (batch, n, batch, n): the full outer.jacobian, "
                        f"every example's gradient against every example's input. Each "
                        f"example's Hessian is a diagonal block: outer.batch_jacobian(g, x) "
                        f"gives ({batch}, {n}, {n}) directly.", "returned_full_jacobian")
        if shape == (batch, n):
            if _close(numbers, gradients, dtype):
                raise Wrong(f"You returned the per-example gradients, shape ({batch}, "
                            f"{n}). The Hessians are their Jacobians: differentiate g once "
                            f"more with an outer tape, outer.batch_jacobian(g, x).",
                            "returned_gradient")
            if _close(numbers, expected.sum(axis=1), dtype):
                raise Wrong(f"You returned outer.gradient(g, x), shape ({batch}, {n}): the "
                            f"gradient of a non-scalar target sums over it, so each row "
                            f"is a sum of Hessian rows. Use outer.batch_jacobian(g, x) for "
                            f"({batch}, {n}, {n}).", "gradient_of_gradient")
        _require_shape(numbers, (batch, n, n))
        if np.all(numbers == 0.0):
            found = _zeros_hint(log, "batch_jacobian")
            if found is not None:
                raise Wrong(found[1], found[0])
        known = [
            ("diagonal_only",
             "Only the diagonals are right: the mixed second derivatives "
             "d2f/dx_i dx_j are missing. The Jacobian of the gradient gives every "
             "entry.", np.stack([np.diag(np.diag(h)) for h in expected])),
            ("gradient_outer_product",
             "You returned g g^T, the outer product of each example's gradient with "
             "itself. The Hessian holds second derivatives: differentiate g with an "
             "outer tape.", gradients[:, :, None] * gradients[:, None, :]),
            ("mean_not_sum",
             f"Your Hessians are {batch} times too small, and {batch} is the batch "
             f"size: the values were averaged over the batch (tf.reduce_mean) "
             f"before the inner gradient. Each example's Hessian belongs to its own "
             f"f(x)[b]: differentiate f(x) itself (tape.gradient sums a vector "
             f"target, which keeps each example's gradient intact).",
             expected / batch),
        ]
        _known(numbers, expected, dtype, known)
        if log.used_any_autodiff:
            require_nested(log)
        _judge(numbers, expected, dtype, log=log, batch=batch,
               summary="Not the per-example Hessians.",
               repeated=(0, "example's Hessian",
                         "each example has its own Hessian, at its own input"))
        require_nested(log)
    return (f"Checked with nested tapes on fresh functions (batches of {batches[0]} and "
            f"{batches[1]}, n = {widths[0]} and {widths[1]}, float32 and float64): "
            f"the Jacobian of each example's gradient is its Hessian, symmetric as it "
            f"should be.")


# 5.6 ---------------------------------------------------------------------------

def _reshaping_layer(matrix, offset, out_shape, dtype):
    """``y = tanh(A vec(x) + c)``, reshaped to ``out_shape``."""
    tf = _tf()
    a, c = _tensor(matrix, dtype), _tensor(offset, dtype)

    def f(x):
        y = tf.tanh(tf.linalg.matvec(a, tf.reshape(x, [-1])) + c)
        return tf.reshape(y, out_shape)

    return f


def _raised_forward_hint(wrong: Wrong, log, in_shape) -> Wrong:
    if wrong.mistake != "raised":
        return wrong
    text = wrong.hint
    if any(result is None for acc in log.accumulators for result in acc.jvp_results):
        return Wrong("acc.jvp(y) returned None: y was computed outside `with "
                     "tf.autodiff.ForwardAccumulator(x, tangent) as acc:`, so the "
                     "accumulator never saw it. Compute y = f(x) inside that block.",
                     "computed_outside")
    if _dtype_clash(text):
        return Wrong("float32 met float64: tf.one_hot makes float32 by default, and the "
                     "tangent must have x's dtype. Use tf.one_hot(j, size, dtype=x.dtype). "
                     + text, "one_hot_dtype")
    lowered = text.lower()
    if "shape" in lowered or "incompatible" in lowered:
        return Wrong(f"The tangent must have the primal's shape, {tuple(in_shape)} here: "
                     f"make a one-hot vector of length x's size (tf.size(x)) and reshape "
                     f"it to x.shape. " + text, "tangent_shape")
    return wrong


TANGENT_OF_ONES_HINT = (
    "Every column is the same: J times a tangent of ones, the sum of all columns. Column j "
    "needs its own pass with the one-hot tangent e_j (reshaped to x's shape).")


@exercise("5.6", "a forward-mode Jacobian for tensors of any shape")
def forward_jacobian_any_shape(answer):
    """tape.jacobian's layout, y.shape + x.shape, built column by column in forward mode.

    Method: tf.autodiff.ForwardAccumulator only (no tape, no finite differences).
    Probes (fresh each call): y = tanh(A vec(x) + c) reshaped; in float64 with a
    matrix x (2, k) and a vector y, and in float32 with a vector x and a matrix y
    (p, 2); y.shape + x.shape never equals x.shape + y.shape; A, c, x and the
    sizes fresh.
    """
    rng = fresh_rng("5.6")
    float32, float64 = _dtypes()
    probes = [(float64, (2, int(rng.integers(2, 4))), (int(rng.choice([3, 5])),)),
              (float32, (int(rng.choice([3, 5])),), (int(rng.integers(2, 4)), 2))]
    for dtype, in_shape, out_shape in probes:
        size_in, size_out = int(np.prod(in_shape)), int(np.prod(out_shape))
        matrix = signed(rng, (size_out, size_in), 0.2, 1.2)
        offset = signed(rng, size_out, 0.05, 0.5)
        xs = signed(rng, in_shape, 0.1, 1.2)
        flat = _dense_tanh_jacobian(matrix, offset, xs.reshape(-1))   # (size_out, size_in)
        expected = flat.reshape(out_shape + in_shape)
        f = _reshaping_layer(matrix, offset, out_shape, dtype)
        value, log, wrong = _call(answer, f, _tensor(xs, dtype))
        if wrong is not None:
            raise _raised_forward_hint(wrong, log, in_shape)
        if value is None:
            raise Wrong("Your function returned None. (acc.jvp(y) is None when y was "
                        "computed outside the ForwardAccumulator's block; or a `return` "
                        "is missing.)", "returned_none")
        require_forward_mode(log)
        numbers = _numbers(value, dtype)
        if numbers.shape == in_shape + out_shape:
            transposed = np.moveaxis(flat, 0, -1).reshape(in_shape + out_shape)
            if _close(numbers, transposed, dtype):
                raise Wrong(f"Shape {numbers.shape} is x.shape + y.shape. tape.jacobian's "
                            f"layout puts the target's shape first: y.shape + x.shape = "
                            f"{expected.shape}. Stack the columns on the last axis, then "
                            f"reshape.", "source_shape_first")
        _require_shape(numbers, expected.shape)
        tangent_of_ones = np.broadcast_to(flat.sum(axis=1)[:, None], flat.shape)
        _known(numbers.reshape(flat.shape), flat, dtype, [
            ("tangent_of_ones", TANGENT_OF_ONES_HINT, tangent_of_ones)])
        _shape_mistakes(numbers.reshape(flat.shape), flat, axis=1, slice_name="column",
                        varies="column j is J e_j, one forward pass with the one-hot "
                               "tangent e_j (reshaped to x's shape) per entry of x")
        _shape_mistakes(numbers, expected, axis=0, slice_name="row",
                        varies="the layout is y.shape + x.shape")
        _judge(numbers, expected, dtype, log=log,
               summary="Not the Jacobian of f at x.",
               known=[
                   ("columns_misplaced",
                    "The right numbers in the wrong places: the columns J e_j were stacked "
                    "along the first axis, so the reshape mixed them up. Stack them along "
                    "the last axis (tf.stack(columns, axis=-1)), giving y.shape + (size,), "
                    "then reshape to y.shape + x.shape.",
                    np.moveaxis(flat, -1, 0).reshape(expected.shape)),
                   ("tangent_of_ones", TANGENT_OF_ONES_HINT,
                    tangent_of_ones.reshape(expected.shape)),
               ])
    return ("Checked in float64 (matrix x) and float32 (matrix y) with "
            "tf.autodiff.ForwardAccumulator and no tape: the columns J e_j, laid out as "
            "y.shape + x.shape like tape.jacobian.")
