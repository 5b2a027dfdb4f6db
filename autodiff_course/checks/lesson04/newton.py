"""Exercise 4.1: one Newton step, both derivatives from one pair of nested tapes."""

import numpy as np

from ...checking import spec
from ...checking.function import Function
from ...checking.function import negated
from ...checking.judging import matches
from ...checking.probes import signed
from ...log1pexp import reference_sigmoid as s

# f, f' and f'' in float64, by the name of the function handed to the answer.
DERIVATIVES = {
    "x**4 + x**2": lambda x: (x**4 + x**2, 4 * x**3 + 2 * x, 12 * x**2 + 2.0),
    "softplus(x)": lambda x: (np.logaddexp(0.0, x), s(x), s(x) * s(-x)),
    "cosh(x)": lambda x: (np.cosh(x), np.sinh(x), np.cosh(x)),
    "sin(x)": lambda x: (np.sin(x), np.cos(x), -np.sin(x)),
}


def draw(rng) -> list:
    """x**4 + x**2 on a vector (0.5 <= |x| <= 2), softplus on a (2, m) matrix in [-3, 3],
    cosh on a vector (0.5 <= |x| <= 2.5), each in float32 and float64; then shapes (1,),
    (1, 3) and (); last sin on a vector of both signs (0.3 <= |x| <= 2.8), where f'' < 0 for
    x > 0. (cosh comes late: there f'' = f, so x - f''/f' is x - f/f'.)"""
    import tensorflow as tf

    functions = dict(zip(DERIVATIVES, (lambda x: x**4 + x**2, tf.nn.softplus, tf.cosh, tf.sin)))
    n, m, k = (int(size) for size in rng.integers((3, 2, 3), (7, 5, 7)))
    drawn = [("x**4 + x**2", signed(rng, (n,), 0.5, 2.0)), ("cosh(x)", signed(rng, (k,), 0.5, 2.5))]
    drawn.insert(1, ("softplus(x)", np.round(rng.uniform(-3.0, 3.0, (2, m)), 3)))
    plan = [(f, x, dtype) for f, x in drawn for dtype in ("float32", "float64")] + [
        ("x**4 + x**2", signed(rng, (1,), 0.5, 2.0), "float32"),
        ("cosh(x)", signed(rng, (1, 3), 0.5, 2.5), "float32"),
        ("softplus(x)", signed(rng, (), 0.5, 3.0), "float64")]  # fmt: skip
    concave = signed(rng, (int(rng.integers(3, 7)),), 0.3, 2.8)
    concave[:2] = np.abs(concave[:2]) * (1.0, -1.0)  # f'' < 0 at one x, > 0 at another
    plan += [("sin(x)", concave, "float64"), ("sin(x)", -concave, "float32")]
    return [spec.Probe(d, spec.as_dtype(x, d), data={"name": f, "f": functions[f]}, label=f"f(x) "
                       f"= {f} on a {d} x of shape {x.shape}") for f, x, d in plan]  # fmt: skip


def derivatives(p):
    return DERIVATIVES[p.name](p.x)


def _mistake(code, hint, gives, means=""):
    hint += " Newton's step is x - f'(x)/f''(x), once."
    return spec.Mistake(code, hint, lambda p: gives(p.x, *derivatives(p)), means=means)


# fmt: off
MISTAKES = (
    _mistake("newton_uphill", "You computed x + f'(x)/f''(x): the step goes the wrong way.",
             lambda x, f, d1, d2: x + d1 / d2, "x + f'/f'': a Newton step with the wrong sign"),
    _mistake("newton_ratio_inverted", "You divided the wrong way round: x - f''(x)/f'(x).",
             lambda x, f, d1, d2: x - d2 / d1, "x - f''/f' where x - f'/f'' belongs"),
    _mistake("newton_step_only", "You returned the step f'(x)/f''(x), not the new point.",
             lambda x, f, d1, d2: d1 / d2, "the step f'/f'' where the new point belongs"),
    _mistake("newton_root_finding", "You returned x - f(x)/f'(x), Newton's step to a root of f.",
             lambda x, f, d1, d2: x - f / d1, "x - f/f' (a root of f) where x - f'/f'' belongs"),
    _mistake("gradient_descent_step", "You returned x - f'(x), a gradient-descent step.",
             lambda x, f, d1, d2: x - d1, "x - f'(x): the second derivative left out"),
    _mistake("second_not_newton", "You returned f''(x), the second derivative itself.",
             lambda x, f, d1, d2: d2, "the second derivative where the Newton step belongs"),
    _mistake("first_not_second", "You returned f'(x), the first derivative.",
             lambda x, f, d1, d2: d1),
    _mistake("newton_abs_curvature", "You divided by |f''(x)|: where f''(x) < 0 (sin(x) for "
             "x > 0) your step goes the other way.", lambda x, f, d1, d2: x - d1 / np.abs(d2),
             "x - f'/|f''|, wrong where f'' < 0"),
    spec.Mistake("newton_iterated", "You returned the minimum of {name}, x = 0: you repeated the "
                 "step until it converged. Newton's step is x - f'(x)/f''(x), once.",
                 lambda p: 0 * p.x if p.name in ("x**4 + x**2", "cosh(x)") else None,
                 means="Newton's method run to convergence where one step is asked for"),
    spec.Pattern("newton_iterated", "You returned the point after {k} Newton steps: you repeated "
                 "the step in a loop. The exercise asks for one step, x - f'(x)/f''(x), computed "
                 "once and returned.", lambda got, p: _iterated(got, p)),
    spec.Pattern("newton_damped", "Your new point is x - {c} * f'(x)/f''(x): Newton's step "
                 "scaled by {c} (a damping factor, or a learning rate). The exercise asks for "
                 "the full step, x - f'(x)/f''(x), with no factor.", lambda got, p: _scaled(got, p),
                 means="Newton's step scaled by a factor (damped, or times a learning rate)"),
    spec.Pattern("eps_in_denominator", "Your step divides by f''(x) + {eps}: an epsilon added to "
                 "f''(x) (to avoid dividing by zero?) shifts every step a little, which shows in "
                 "float64. Newton's step divides by f''(x) itself: x - f'(x)/f''(x).",
                 lambda got, p: _epsilon(got, p),
                 means="an epsilon added to a denominator that needs none"),
)
# fmt: on


def _iterated(got, p):
    """got is x after k = 2 to 30 Newton steps, each from the exact derivatives."""
    x, rtol = np.asarray(p.x, np.float64), 1e-4 if p.dtype == "float32" else 1e-9
    with np.errstate(all="ignore"):
        for k in range(1, 31):
            _, d1, d2 = DERIVATIVES[p.name](x)
            x = x - d1 / d2
            if not np.all(np.isfinite(x)):
                return None
            if k > 1 and matches(got, x, rtol, 1e-6 if p.dtype == "float32" else 1e-12):
                return {"k": k}
    return None


def _known(got, p):
    """x, f'(x)/f''(x) and got in float64, where the step is not tiny, or None."""
    x, (_, d1, d2) = np.asarray(p.x, np.float64), derivatives(p)
    got = np.asarray(got, np.float64)
    with np.errstate(all="ignore"):
        step = d1 / d2
    keep = np.isfinite(got) & np.isfinite(step) & (np.abs(step) > 1e-3 * (1.0 + np.abs(x)))
    if np.count_nonzero(keep) < 2:
        return None
    return x[keep], d1[keep], d2[keep], got[keep]


def _scaled(got, p):
    """got is x - c f'/f'' for one c other than 1 (right), -1 (uphill) and 0 (x itself)."""
    known = _known(got, p)
    if known is None:
        return None
    x, d1, d2, got = known
    c = (x - got) / (d1 / d2)
    c0 = float(np.median(c))
    if min(abs(c0 - 1.0), abs(c0 + 1.0), abs(c0)) < 1e-2:
        return None
    if not matches(c, np.full_like(c, c0), 1e-3 if p.dtype == "float32" else 1e-7, 0.0):
        return None
    return {"c": f"{c0:.4g}"}


def _epsilon(got, p):
    """got is x - f'/(f'' + eps) for one small eps != 0 (a tenth of |f''| at most)."""
    known = _known(got, p)
    if known is None:
        return None
    x, d1, d2, got = known
    with np.errstate(all="ignore"):
        eps = d1 / (x - got) - d2
    e0 = float(np.median(eps))
    if not (np.all(np.isfinite(eps)) and 0.0 < abs(e0) <= 0.1 * np.min(np.abs(d2))):
        return None
    return {"eps": f"{e0:.3g}"} if np.allclose(eps, e0, rtol=0.05, atol=0.0) else None


EXERCISE = spec.Exercise(
    number="4.1",
    title="One Newton step",
    stars=1,
    minutes=5,
    harness=Function(
        "`newton_step`",
        vary=negated,
        arguments=("f", "x"),
        nested=True,
        forbid={"jacobian": "the outer gradient of f'(x) already is f''(x), no diagonal to take."},
        steps=lambda p: dict(zip(("f'(x)", "f''(x)"), derivatives(p)[1:])),
        nouns={"value": "your step"},
    ),
    probes=draw,
    reference=lambda p: p.x - derivatives(p)[1] / derivatives(p)[2],
    mistakes=MISTAKES,
    describe={"value": "x - f'(x)/f''(x), element by element"},
    claim="x - f'(x)/f''(x) for functions you had not seen",
)
newton_step = EXERCISE.check
