"""Exercise 5.2: a Jacobian row by row."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import exercise
from ...checking import forbid_jacobian
from ...checking import fresh_rng
from ...checking import signed
from ...checking import sizes as draw_sizes
from .judging import _judge
from .shared import _call
from .shared import _close
from .shared import _dense_tanh
from .shared import _dense_tanh_jacobian
from .shared import _dtype_clash
from .shared import _dtypes
from .shared import _explain_none_or_error
from .shared import _numbers
from .shared import _require_shape
from .shared import _tensor
from .shared import _tf


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


def _raised_hint(wrong: Wrong, m: int) -> Wrong:
    """Turn 'your function raised' into a tape-specific hint where the message says why."""
    if wrong.mistake not in ("raised", "float32_not_float64"):
        return wrong
    text = wrong.hint
    if "non-persistent" in text:
        return Wrong(
            "The tape was asked for a second gradient: a tape is released after "
            "its first gradient call unless you create it with "
            "tf.GradientTape(persistent=True). (Then `del tape` when done.)",
            "not_persistent",
        )
    if _dtype_clash(text):
        return Wrong(
            "float32 met float64: tf.one_hot makes float32 by default, and the "
            "check also passes a float64 x. Build the upstream in y's dtype: "
            "tf.one_hot(i, m, dtype=y.dtype). " + text,
            "one_hot_dtype",
        )
    lowered = text.lower()
    if any(
        words in lowered
        for words in (
            "out of range",
            "out of bounds",
            "incompatible",
            "same number of elements",
            "shape",
        )
    ):
        return Wrong(
            f"This probe's y has {m} entries, and your code used another number "
            f"(of rows, or of entries in the one-hot upstream, which must have y's "
            f"shape). Take m from y.shape[0] instead of typing it in. " + text,
            "wrong_row_count",
        )
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
    ms = draw_sizes(rng, 2, 2, 6)
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
        forbid_jacobian(
            log,
            "record y = f(x) once on a persistent tape, then call "
            "tape.gradient(y, x, output_gradients=tf.one_hot(i, m)) "
            "for each row i.",
        )
        if wrong is not None or value is None:
            _explain_none_or_error(log, None if wrong is None else _raised_hint(wrong, m))
        numbers = _numbers(value, dtype)
        shape = numbers.shape
        if shape == (n, m) and _close(numbers, expected.T, dtype):
            raise Wrong(
                f"Your result has shape ({n}, {m}), source then target: the rows "
                f"came out as columns (tf.stack(..., axis=1), or a transpose). Row "
                f"i of the Jacobian is the gradient of y[i]: stack the rows along "
                f"axis 0 for shape ({m}, {n}).",
                "stacked_columns",
            )
        if shape == (n,):
            raise Wrong(
                f"You returned one vector shaped like x ({n},): that is one "
                f"gradient, the VJP with dy = ones (the sum of the rows). The "
                f"Jacobian needs one backward pass per output, with dy = "
                f"tf.one_hot(i, m), stacked into shape ({m}, {n}).",
                "returned_gradient",
            )
        if len(shape) == 2 and shape[1] == n and shape[0] != m:
            per_input = " (one per input of x; rows belong to the outputs)" if shape[0] == n else ""
            raise Wrong(
                f"Your Jacobian has {shape[0]} rows{per_input}, but this probe's "
                f"y has {m} entries, so it needs {m} rows. Take m from "
                f"y.shape[0] instead of typing a number.",
                "wrong_row_count",
            )
        _require_shape(numbers, (m, n))
        _judge(
            numbers,
            expected,
            dtype,
            log=log,
            repeated=(0, "row", "row i is the gradient of y[i] alone"),
            known=[
                (
                    "ones_upstream",
                    "Every row is the same: the sum of the Jacobian's rows. That is the "
                    "gradient with dy = ones; row i needs output_gradients=tf.one_hot(i, "
                    "m), which selects y[i].",
                    np.tile(expected.sum(axis=0), (m, 1)),
                ),
            ],
        )
        if not any(call.kind == "gradient" for call in log.calls):
            raise Wrong(
                "The numbers are right, but your function called no tape.gradient: "
                "the exercise asks for one backward pass per row, "
                "tape.gradient(y, x, output_gradients=tf.one_hot(i, m)).",
                "no_row_gradients",
            )
    return (
        f"Checked without tape.jacobian on two functions ({ms[0]} and {ms[1]} "
        f"outputs, float32 and float64): row i of the Jacobian is tape.gradient(y, x, "
        f"output_gradients=e_i), one backward pass per output."
    )
