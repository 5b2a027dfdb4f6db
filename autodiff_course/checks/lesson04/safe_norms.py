"""Exercise 4.5: a norm with a finite gradient at zero rows."""

import numpy as np

from ...checking import spec
from ...checking.judging import Tolerance
from ...checking.judging import matches
from ...checking.on_tape import OnTape
from ...checking.probes import upstream


def _rows(rng, batch, width, zeros):
    """Rows of norm 0.05 to 5 (one exactly 0.05), ``zeros`` rows of zeros, never side by side;
    two mix signs, so |sum(g)|, the max norm and a clip at 0 all differ from the norm."""
    directions, sizes = rng.normal(size=(batch, width)), rng.uniform(0.05, 5.0, batch).round(3)
    sizes[rng.permutation(np.arange(1, batch - 1, 2))[:zeros]] = 0.0
    free = rng.permutation(np.flatnonzero(sizes))
    sizes[free[0]] = 0.05
    if width >= 2 and free.size >= 3:
        directions[free[1], :2], directions[free[2], :2] = [0.6, -1.0], [1.0, -0.6]
    return directions / np.linalg.norm(directions, axis=-1, keepdims=True) * sizes[:, None]


def draw(rng) -> list:
    """Per dtype a (batch, width) g, batch 4..7 and width 2..5 (never equal, so a reduction
    over the wrong axis shows), with one or two rows of zeros; then one row (1, 3) and a
    column (4, 1) with a zero row. Upstreams of both signs."""
    found = [("float32", _rows(rng, 1, 3, 0)), ("float64", _rows(rng, 4, 1, 1))]
    for dtype in ("float64", "float32"):
        width = int(rng.integers(2, 6))
        batch = int(rng.choice([b for b in range(4, 8) if b != width]))
        found.insert(0, (dtype, _rows(rng, batch, width, 1 + int(batch > 5))))
    up = [upstream(rng, g.shape[:1]) for _, g in found]
    return [spec.Probe(d, spec.as_dtype(g, d), spec.as_dtype(u, d), label=f"a {d} g of shape "
                       f"{g.shape}") for (d, g), u in zip(found, up)]  # fmt: skip


def norms(p):
    return np.linalg.norm(p.x, axis=-1)


def _tolerance(p, part):  # gradients to 1e-4 of their row's length |upstream|, any at zero
    zero = norms(p) == 0.0
    if part == "value":
        return Tolerance(1e-5, np.where(zero, 1e-3, 0.0))
    return Tolerance(1e-4, np.where(zero, 1 + 1e-6, 1e-4)[:, None] * np.abs(p.upstream)[:, None])


def _too_large(got, p):
    n = norms(p)
    short = np.argmin(np.where(n == 0, np.inf, n))
    if np.all(got >= n * (1 - 1e-6)) and matches(got[n > 0.5], n[n > 0.5], 1e-2):
        return {"norm": f"{n[short]:.3g}", "got": f"{got[short]:.6g}"}


def _outside(got, p):  # n + eps: the same offset at rows of zeros and at short rows
    n = norms(p)
    zero, short = n == 0.0, (n > 0) & (n < 0.5)
    d = got - n
    if zero.any() and short.any() and np.all(d[zero] > 0):
        return {} if np.allclose(d[short], d[zero].mean(), rtol=0.2) else None
    return None


def _threshold(got, p):
    n = norms(p)
    small, right = (n > 0) & (n < 0.5) & (got == 0.0), matches(got[n >= 0.5], n[n >= 0.5], 1e-5)
    return {"norm": f"{n[small][0]:.3g}"} if small.any() and right else None


EUCLIDEAN = " The penalty uses the Euclidean norm, sqrt(sum(g**2, axis=-1))."
AXIS = ": reduce over the last axis only (axis=-1), one norm per row."
# fmt: off
MISTAKES = (
    spec.Shape("whole_tensor_norm", "You returned one number, the norm of the whole batch" + AXIS,
               lambda p: () if p.x.shape[0] > 1 else None, "one norm where one per row belongs"),
    spec.Shape("wrong_axis", "You returned one value per column, a reduction over the batch" + AXIS,
               lambda p: p.x.shape[1:] if p.x.shape[0] != p.x.shape[1] else None),
    spec.Pattern("eps_outside_sqrt", "Your norm is sqrt(...) + epsilon: the same offset at every "
                 "row. Added after the square root, epsilon protects nothing: the gradient of "
                 "sqrt at 0 is still inf times 0. Put it inside: sqrt(sum(g**2) + 1e-12).",
                 _outside, part="value", means="an epsilon added after the square root"),
    spec.Pattern("eps_too_large", "Right for long rows, too large for short ones: the row of norm "
                 "{norm} gives {got}. Your epsilon is too large: 1e-12 inside the square root is "
                 "enough.", _too_large, part="value", means="an epsilon that changes small norms"),
    spec.Pattern("threshold_too_large", "Right for long rows, but a row of norm {norm} gives 0: "
                 "your tf.where condition treats small rows as zero. Compare with 0.", _threshold,
                 part="value", means="a tf.where threshold that zeroes small nonzero rows"),
    *(spec.Mistake(code, hint, lambda p, f=f: f(p.x), part="value", means=means)
      for code, hint, f, means in (
        ("squared_norm", "You returned the squared norm, sum(g**2): take the square root.",
         lambda g: np.sum(g**2, axis=-1), "the squared norm where the norm belongs"),
        ("l1_norm", "You returned the sum of absolute values (the L1 norm)." + EUCLIDEAN,
         lambda g: np.abs(g).sum(axis=-1), "the L1 norm where the Euclidean norm belongs"),
        ("mean_not_sum", "You took the mean of the squares (tf.reduce_mean): the norm sums them.",
         lambda g: np.linalg.norm(g, axis=-1) / np.sqrt(g.shape[-1]), ""),
        ("max_norm", "You returned each row's largest absolute entry (tf.reduce_max(tf.abs(g)), "
         "the max norm)." + EUCLIDEAN, lambda g: np.abs(g).max(axis=-1),
         "the largest absolute entry (the max norm) where the Euclidean norm belongs"),
        ("square_of_sum", "You squared the sum of each row, not the entries." + EUCLIDEAN,
         lambda g: np.abs(g.sum(axis=-1)), "the square of a sum where the sum of squares belongs"),
        ("clipped_input", "You clipped g itself (tf.maximum or tf.clip_by_value), which changes "
         "the norm: protect only the square root at zero.",
         lambda g: np.linalg.norm(np.maximum(g, 0.0), axis=-1), ""),
    )),
)
# fmt: on

EXERCISE = spec.Exercise(
    number="4.5",
    title="A safe norm for the penalty",
    stars=2,
    minutes=10,
    harness=OnTape("`safe_norm`", custom_gradient=False),
    probes=draw,
    reference=lambda p: {
        "value": norms(p),
        "gradient": p.upstream[:, None] * p.x / np.maximum(norms(p), 1e-300)[:, None],
    },
    tolerance=_tolerance,
    mistakes=MISTAKES,
    describe={"value": "the norm of each row", "gradient": "upstream * g / |g|"},
    claim="Row norms to 5 digits (at most 1e-3 at rows of zeros) and their gradient, "
    "upstream * g/|g|, finite at the rows of zeros",
)
safe_norm = EXERCISE.check
