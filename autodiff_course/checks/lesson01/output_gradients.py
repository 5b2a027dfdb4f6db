"""Exercise 1.4: d(loss)/dx through ``output_gradients``, with dy at the output."""

from __future__ import annotations

import re

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import call_answer
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import observe
from ...checking import observed_call
from ...checking import require_output_gradients
from ...checking import signed
from ...checking import tensor
from ...checking import why_none
from ...checking.legacy_judge import judge
from ...log1pexp import reference_sigmoid as _sigmoid
from ...log1pexp import reference_softplus as _softplus
from .shared import _dy_mistakes
from .shared import _residuals
from .shared import _tolerance
from .shared import _vector_size


def _require_dy_at_the_output(log, x) -> None:
    """output_gradients must carry a real dy to a target shaped like the output."""
    import tensorflow as tf

    passed = [
        (call.target, call.upstream)
        for call in log.calls
        if call.kind == "gradient" and call.upstream is not None
    ]
    useful = []
    for target, dy in passed:
        try:
            target_shape = tuple(tf.convert_to_tensor(target).shape)
            ones = bool(np.all(np.asarray(tf.convert_to_tensor(dy)) == 1.0))
        except Exception:  # noqa: BLE001 - a nested structure: let the values judge
            useful.append(True)
            continue
        useful.append(target_shape == tuple(x.shape) and not ones)
    if passed and not any(useful):
        raise Wrong(
            "Your function passes output_gradients, but not the upstream "
            "gradient of the loss: it differentiates the loss itself (or passes "
            "dy = ones, which is what the tape uses anyway). Record only "
            "output = log1pexp(x) on the tape, compute dy = 2 (output - target) "
            "/ N after the block, and call tape.gradient(output, x, "
            "output_gradients=dy).",
            "no_output_gradients",
        )


GRADIENT_TOL32 = Tolerance(rtol=FLOAT32.rtol, atol=1e-7)
GRADIENT_TOL64 = Tolerance(rtol=FLOAT64.rtol, atol=1e-14)


@exercise("1.4", "d(loss)/dx through output_gradients")
def loss_gradient(answer):
    """d(loss)/dx for output = log(1 + e^x), loss = mean((output - target)**2).

    Method (observed): tape.gradient(..., output_gradients=dy) is called, and for a
    right result, with a dy that is not all ones on a target shaped like x (the
    output), so a recorded loss with output_gradients=ones does not pass.
    Probes, fresh on every call: a float32 vector of 3, 5, 6 or 7 elements and a
    float64 (b, k) matrix with b != k, x in [-6, 6] of both signs; targets put
    residuals output - target of both signs (always both) in [0.2, 2] and one at
    (almost exactly) 0. dtype in = dtype out; float64 judged to float64 precision.
    """
    rng = fresh_rng("1.4")
    rows = int(rng.integers(2, 4))
    for shape, dtype in [
        ((_vector_size(rng),), "float32"),
        ((rows, rows + int(rng.integers(1, 3))), "float64"),
    ]:
        x_values = signed(rng, shape, 0.05, 6.0)
        residual = _residuals(rng, shape)
        if dtype == "float32":
            x_values = x_values.astype(np.float32).astype(np.float64)
        output_values = _softplus(x_values)
        target_values = output_values - residual
        if dtype == "float32":
            target_values = target_values.astype(np.float32).astype(np.float64)
        x = tensor(x_values, dtype)
        target = tensor(target_values, dtype)
        with observe() as log:
            try:
                value, wrong = call_answer(answer, x, target), None
            except Wrong as error:
                if error.mistake != "raised":
                    raise
                value, wrong = None, error
        if wrong is not None:
            failed = [call for call in log.calls if call.error is not None]
            if (
                failed
                and failed[-1].output_gradients
                and re.search(r"shape|reshape|Incompatible", wrong.hint)
            ):
                raise Wrong(
                    wrong.hint + ". output_gradients must have the shape of "
                    "the target you differentiate: pass dy with "
                    "tape.gradient(output, x, output_gradients=dy), where "
                    "output (not the scalar loss) is the target.",
                    "output_gradients_shape",
                )
            raise wrong
        if any(source is target for call in log.calls for source in call.sources):
            raise Wrong(
                "Your function differentiated with respect to target. The "
                "exercise asks for d(loss)/dx: pass x as the source, "
                "tape.gradient(output, x, output_gradients=dy); the target only "
                "enters through dy.",
                "wrong_source",
            )
        if value is None:
            explained = why_none(log, probe="x")
            if explained is not None:
                raise Wrong(explained[1], explained[0])
            as_values(value)  # None without a tape call: a missing return
        require_output_gradients(log)
        got = as_values(value, shape=x.shape, dtype=x.dtype)
        size = x_values.size
        s = _sigmoid(x_values)
        dy = 2.0 * (output_values - target_values) / size
        expected = dy * s
        known = [
            (
                "forgot_upstream",
                "You returned d(output)/dx alone, sigmoid(x): "
                "with dy = 1 (or no output_gradients) the tape starts the walk as if "
                "the output were the target. Pass output_gradients=dy with dy = "
                "2 (output - target) / N.",
                s,
            )
        ]
        known += [
            (code, hint + " Fix dy and pass it again.", values * s)
            for code, hint, values in _dy_mistakes(
                output_values, target_values, what="The dy you passed"
            )
            if code != "dy_of_ones"
        ]
        known += [
            (
                "dy_from_x",
                "You computed dy from x. The upstream gradient is the loss's "
                "derivative with respect to the output: dy = 2 (output - target) / N.",
                2.0 * (x_values - target_values) / size * s,
            ),
            (
                "returned_dy",
                "You returned dy itself. The tape multiplies dy by the "
                "local derivative: return tape.gradient(output, x, output_gradients=dy).",
                dy,
            ),
            (
                "local_derivative_twice",
                "You multiplied by sigmoid(x) after "
                "tape.gradient, but the tape's result already contains the local "
                "derivative: tape.gradient(output, x, output_gradients=dy) is dy * "
                "sigmoid(x). Return it as it is.",
                expected * s,
            ),
            (
                "added_not_multiplied",
                "You added dy to what tape.gradient returned. "
                "The tape's result, tape.gradient(output, x, output_gradients=dy), already "
                "is dy times the local derivative: return it as it is.",
                expected + dy,
            ),
            (
                "added_not_multiplied",
                "You added dy and the local derivative "
                "sigmoid(x). The chain rule multiplies them: dy * sigmoid(x), which is "
                "what tape.gradient(output, x, output_gradients=dy) returns.",
                dy + s,
            ),
            (
                "dy_applied_twice",
                "dy was applied twice: you passed output_gradients=dy "
                "while differentiating something that already contains the loss. Record "
                "only the output and call tape.gradient(output, x, output_gradients=dy).",
                dy * dy * s,
            ),
        ]

        def implied_dy(
            got,
            dy=dy,
            s=s,
            x_values=x_values,
            x=x,
            dtype=dtype,
            target_values=target_values,
            output_values=output_values,
            expected=expected,
            size=size,
        ):
            shifted = target_values + 0.5
            again, _ = observed_call(answer, x, tensor(shifted, dtype))
            again = as_values(again, shape=x.shape, dtype=x.dtype)
            expected_again = 2.0 * (output_values - shifted) / size * s
            usable = (np.abs(expected) > 1e-6) & (np.abs(expected_again) > 1e-6)
            if usable.sum() >= 2:
                ratio, ratio_again = (
                    got[usable] / expected[usable],
                    again[usable] / expected_again[usable],
                )
                if np.allclose(ratio, ratio_again, rtol=1e-3) and not np.allclose(
                    ratio, 1.0, rtol=1e-3
                ):
                    i = int(np.argmax(np.abs(ratio - 1.0)))
                    return Wrong(
                        f"Your result is the right gradient times a factor that "
                        f"depends on x only, not on the target (it is "
                        f"{ratio[i]:.6g} at x = {x_values[usable][i]:.6g}): an "
                        f"extra factor multiplies dy or the tape's result. dy is "
                        f"exactly 2 (output - target) / N, and "
                        f"tape.gradient(output, x, output_gradients=dy) is "
                        f"returned as it is.",
                        "extra_factor",
                    )
            used = got / s
            floor = 1e-3 * float(np.max(np.abs(dy)))
            i = int(np.argmax(np.abs(used - dy) / np.maximum(np.abs(dy), floor)))
            return Wrong(
                f"The tape multiplies dy by sigmoid(x), so dividing your "
                f"gradient by sigmoid(x) gives the dy you used: at x = "
                f"{x_values.flat[i]:.6g} it is {used.flat[i]:.6g}, but "
                f"2 (output - target) / N = {dy.flat[i]:.6g} there. Check dy "
                f"(if your output is log1pexp(x)).",
                "wrong_dy",
            )

        # The learner's output is rounded to the dtype; at a residual near 0 that
        # rounding is all there is, so allow a few of its ulps, passed through dy.
        rounding = 4.0 * np.finfo(dtype).eps * float(np.max(np.abs(output_values))) * 2.0 / size
        tolerance = _tolerance(dtype, GRADIENT_TOL32, GRADIENT_TOL64)
        tolerance = Tolerance(tolerance.rtol, max(tolerance.atol, rounding))
        judge(
            got,
            expected,
            tolerance,
            dtype=dtype,
            at=x_values,
            what="your gradient",
            known=known,
            batch=size,
            fallback=implied_dy,
            terms=[
                ("x", x_values),
                ("target", target_values),
                ("output", output_values),
                ("sigmoid(x)", s),
            ],
            summary="d(loss)/dx = dy * sigmoid(x) with dy = 2 (output - target) / N.",
        )
        # Right numbers: now make sure they came from dy at the output, not from a
        # recorded loss with output_gradients=ones.
        _require_dy_at_the_output(log, x)
    return (
        "tape.gradient(output, x, output_gradients=dy) with a dy of the output's "
        "shape: d(loss)/dx = dy * sigmoid(x) with dy = 2 (output - target) / N is "
        "right for residuals of both signs and zero, for a vector and a (b, k) "
        "matrix, in float32 and float64."
    )
