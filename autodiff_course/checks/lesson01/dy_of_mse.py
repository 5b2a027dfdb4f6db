"""dy = 2 (output - target) / N, the upstream gradient of a mean squared error: the probes
and the mistakes in dy that 1.3 (dy itself) and 1.4 (dy through the tape) both name."""

import numpy as np

from ...checking import probes
from ...checking import spec
from ...checking.patterns import linear_mix


def probes_for(output, high: float, scalar: bool = False, at=None):
    """The probes (``draw``) of an answer whose input gives ``output``; hints quote ``at``."""

    def draw(rng) -> list:
        """Inputs x of both signs: a float32 vector of 5 to 7, a float64 (b, k) with b != k
        (so dividing by one dimension shows), perhaps a float64 scalar, a float32 (1,) and a
        float64 batch of one (1, k); targets put residuals output - target of both signs
        (always both) in [0.2, 2] and, beyond two entries, one at 0."""
        rows, cols = int(rng.integers(2, 4)), int(rng.integers(1, 3))
        plan = [((int(rng.integers(5, 8)),), "32"), ((rows, rows + cols), "64"), ((), "64")]
        found, batch = [], (1, int(rng.choice([3, 5])))
        for shape, bits in [*plan[: 2 + scalar], ((1,), "32"), (batch, "64")]:
            dtype, x = f"float{bits}", probes.signed(rng, shape, 0.05, high)
            x, residual = spec.as_dtype(x, dtype), probes.signed(rng, shape, 0.2, 2.0).reshape(-1)
            if residual.size >= 3:
                order = rng.permutation(residual.size)
                residual[order[:3]] = abs(residual[order[0]]), -abs(residual[order[1]]), 0.0
            target = spec.as_dtype(output(x) - residual.reshape(shape), dtype)
            data = {"output": output(x), "target": target, "batch": x.size}
            found.append(spec.Probe(dtype, x, None, data, f"a {dtype} input of shape {shape}", at))
        return found

    return draw


def dy(p) -> np.ndarray:
    return 2.0 * (p.output - p.target) / p.output.size


def _over_axis(p, axis):
    length = p.output.shape[axis] if p.output.ndim > 1 else 1
    return dy(p) * p.output.size / length if length not in (1, p.output.size) else None


AXIS = "dy is too large: you divided by one dimension of the shape {shape}, not by N = {n}."
NO_TARGET = "dy leaves out the target: it is 2 (output - target) / N."
NO_SIGN = "dy is always positive: an abs() dropped the sign of output - target."
ONES = "dy is all ones, the upstream when the output itself is the target."
REDUCED = "dy is one number everywhere: the mean was taken before the derivative."
TWICE = "dy is {n} times too small: you divided by N = {n} twice."


def dy_mistakes(times=lambda p: 1.0, skip=(), then: str = "") -> tuple:
    """The mistakes in dy that the generic patterns (a sign, a 2 or an N) cannot name, as
    each reaches the answer (times ``times(p)``), hints ending with ``then``."""

    def m(code, hint, values):
        return spec.Mistake(
            code, hint + then, lambda p: None if values(p) is None else values(p) * times(p)
        )

    found = (
        m("mean_over_one_axis", AXIS, lambda p: _over_axis(p, 0)),
        m("mean_over_one_axis", AXIS, lambda p: _over_axis(p, -1)),
        m("ignored_target", NO_TARGET, lambda p: 2.0 * p.output / p.output.size),
        m("lost_sign", NO_SIGN, lambda p: np.abs(dy(p))),
        m("dy_of_ones", ONES, lambda p: np.ones(p.output.shape)),
        m("reduced_dy", REDUCED, lambda p: np.full(p.output.shape, np.mean(dy(p)) * p.output.size)),
        m("scale_factor", TWICE, lambda p: dy(p) / p.output.size if p.output.size > 1 else None),
    )
    return tuple(mistake for mistake in found if mistake.code not in skip)


def constant_dy(implied=None, what: str = "Your dy") -> spec.Pattern:
    """dy one number at every element (the loss, 2 * loss, ...) where the residuals vary."""

    def find(got, p):
        used = np.asarray(got if implied is None else implied(got, p), np.float64).ravel()
        if used.size < 2 or not np.all(np.isfinite(used)) or np.ptp(dy(p)) == 0:
            return None
        if np.ptp(used) > 1e-4 * np.max(np.abs(used)):
            return None
        return {"c": f"{used[0]:.4g}"}

    return spec.Pattern(
        "reduced_dy",
        what + " is one number, {c}, at every element: dy has one entry per element, "
        "2 (output - target) / N from that element's own residual, not a single number such "
        "as the loss.",
        find,
    )


def linear_dy(implied=None, what: str = "Your dy") -> spec.Pattern:
    return linear_mix(
        "wrong_dy",
        what + " is {mix}, where dy = 2 (output - target) / N is {right} here: a sign, a "
        "factor or N is off, or a constant was added.",
        dy,
        implied,
        output=lambda p: p.output,
        target=lambda p: p.target,
    )
