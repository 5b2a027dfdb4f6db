"""Exercise 3.2: a clipped straight-through estimator for sign."""

from __future__ import annotations

import numpy as np

from ...checking import FLOAT32
from ...checking import FLOAT64
from ...checking import Wrong
from ...checking import as_values
from ...checking import close_points
from ...checking import diagnose_mistake
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import upstream as draw_upstream
from .shared import _as_dtype
from .shared import _explained
from .shared import _fallback
from .shared import _fresh
from .shared import _input_gradient
from .shared import _record
from .shared import _regrad
from .shared import _require_rule_ran
from .shared import _sample
from .shared import _tf
from .shared import _wrong_gradient

STE_FIXED = [-3.0, -1.5, -1.001, -1.0, -0.999, -0.5, 0.0, 0.5, 0.999, 1.0, 1.001, 1.5, 3.0]


def _ste_probe(rng, shape=None):
    """Fresh points in [-3, 3], fresh points within 0.05 of +-1, and the fixed ones."""
    near = 1.0 + np.round(rng.uniform(-0.05, 0.05, 4), 4)
    near *= rng.choice([-1.0, 1.0], 4)
    x = _fresh(rng, np.concatenate([STE_FIXED, near]), [(-3.0, 3.0, 8)])
    if shape is not None:
        picked = rng.choice(x, size=int(np.prod(shape)) - 3, replace=False)
        x = rng.permutation(np.concatenate([[-1.0, 0.0, 1.0], picked])).reshape(shape)
    return x


def _describe_mask(x, passed, expected) -> str:
    letting = x[passed & ~expected]
    blocking = x[~passed & expected]
    parts = []
    if letting.size:
        parts.append(f"lets the upstream through at x = {_sample(np.sort(letting))}, where |x| > 1")
    if blocking.size:
        parts.append(f"blocks it at x = {_sample(np.sort(blocking))}, where |x| <= 1")
    return " and ".join(parts)


@exercise("3.2", "a clipped straight-through estimator for sign")
def binarize_ste(answer):
    """Probes (fresh on every call): float32 points in [-3, 3] with the boundaries
    x = -1, 1 exactly, 0, points within 0.05 of +-1 on both sides, and fresh ones;
    then a float64 (3, 4) batch with -1, 0 and 1 in it (dtype in = dtype out), judged
    exactly. Upstreams of both signs, never 1.

    Method: a ``@tf.custom_gradient`` rule ran (the ``stop_gradient`` trick gives the
    same numbers but is not what the exercise asks for).
    """
    rng = fresh_rng("3.2")
    name = "`binarize_ste`"
    tf = _tf()
    for dtype, shape in ((np.float32, None), (np.float64, (3, 4))):
        x_in, x = _as_dtype(_ste_probe(rng, shape), dtype)
        up = draw_upstream(rng, x.shape).astype(dtype).astype(np.float64)
        tolerance = FLOAT32 if dtype is np.float32 else FLOAT64
        recorded = _record(answer, tf.constant(x_in), name)
        values = as_values(recorded.value, name=name, shape=x.shape, dtype=x_in.dtype)
        expected_value = np.sign(x)
        if not matches(values, expected_value, tolerance.rtol, tolerance.atol):
            nonzero = x != 0
            if matches(values[nonzero], expected_value[nonzero]) and np.all(
                np.abs(values[~nonzero]) == 1.0
            ):
                raise Wrong(
                    "At x = 0 your forward gives "
                    f"{values[~nonzero][0]:g}; tf.sign(0) is 0. The exercise's "
                    "forward is tf.sign(x) itself (a where(x >= 0, 1, -1) "
                    "binarisation differs at 0).",
                    "sign_at_zero",
                )
            raise _fallback(
                _explained(
                    values,
                    expected_value,
                    summary="The forward value should be tf.sign(x).",
                    x=x,
                    tolerance=tolerance,
                    what="your forward value",
                    known=[
                        (
                            "forward_identity",
                            "The forward returns x unchanged; it should binarise: tf.sign(x).",
                            x,
                        ),
                        (
                            "forward_round",
                            "The forward rounds to the nearest integer; this "
                            "exercise binarises with tf.sign(x), giving -1, 0 or +1.",
                            np.round(x),
                        ),
                        (
                            "forward_hardtanh",
                            "The forward clips x to [-1, 1]; the clipping "
                            "belongs in the backward rule. The forward is tf.sign(x).",
                            np.clip(x, -1.0, 1.0),
                        ),
                    ],
                ),
                "wrong_value",
            )
        gradient = _input_gradient(recorded, up, x.shape, x_in.dtype)
        if not recorded.log.used_custom_gradient and np.all(gradient == 0.0):
            raise Wrong(
                "The gradient is 0 everywhere: that is tf.sign's own gradient, "
                "and no @tf.custom_gradient rule ran. A straight-through estimator "
                "replaces it: decorate binarize_ste with @tf.custom_gradient and "
                "return (tf.sign(x), grad_fn).",
                "custom_gradient_not_used",
            )
        _require_rule_ran(
            recorded.log,
            "The numbers may be right (the stop_gradient "
            "trick gives them too), but this exercise asks for a rule of "
            "your own.",
        )
        inside = np.abs(x) <= 1.0
        expected = up * inside
        if matches(gradient, expected, tolerance.rtol, tolerance.atol):
            continue
        passed = close_points(gradient, up, tolerance.rtol, tolerance.atol)
        blocked = gradient == 0.0
        known = [
            (
                "not_clipped",
                "Your gradient passes upstream through everywhere. The clipped "
                "variant zeroes it where |x| > 1: multiply by a mask of |x| <= 1, cast to "
                "upstream.dtype.",
                up,
            ),
            (
                "forgot_upstream",
                "Your gradient is 1 inside [-1, 1] and 0 outside, whatever "
                "arrives from above: multiply the mask by `upstream`.",
                inside * 1.0,
            ),
            (
                "inverted_clip",
                "The mask is inverted: keep upstream where |x| <= 1 and zero it outside.",
                up * ~inside,
            ),
            (
                "boundary_excluded",
                "At x = -1 and x = 1 exactly your gradient is 0. The "
                "clipped estimator is the derivative of clip(x, -1, 1), which passes the "
                "upstream on the boundary too: use |x| <= 1, not < 1.",
                up * (np.abs(x) < 1.0),
            ),
        ]
        diagnose_mistake(gradient, known, tolerance.rtol, tolerance.atol)
        if np.all(passed | blocked) and passed.any():
            raise Wrong(
                f"Your rule {_describe_mask(x, passed & ~blocked, inside)}. The "
                f"clipped estimator passes the upstream exactly where |x| <= 1 "
                f"(x = -1 and 1 included) and gives 0 elsewhere.",
                "wrong_mask",
            )
        raise _wrong_gradient(
            gradient,
            expected,
            summary="The gradient should be upstream where |x| <= 1 and 0 elsewhere.",
            x=x,
            up=up,
            tolerance=tolerance,
            regrad=_regrad(recorded, name, x.shape, x_in.dtype),
            local=inside * 1.0,
            local_name="1 where |x| <= 1 and 0 elsewhere",
        )
    return (
        "Forward tf.sign(x); backward upstream where |x| <= 1 (x = -1 and 1 "
        "included) and 0 elsewhere, in float32 and in a float64 (3, 4) batch, with "
        "upstreams of both signs; your @tf.custom_gradient rule produced it."
    )
