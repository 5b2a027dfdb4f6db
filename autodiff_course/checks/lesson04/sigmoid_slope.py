"""Exercise 4.3: a sigmoid whose gradient keeps its relative accuracy on both tails."""

from functools import partial

import numpy as np

from ...checking import spec
from ...checking.judging import close_points
from ...checking.judging import matches
from ...checking.on_tape import OnTape
from ...log1pexp import reference_sigmoid as sigmoid

# 1 - sigmoid(x) cancels in float32 from about 10 (exactly 0 by 17), exp(50) squared
# overflows float32, exp(100) itself overflows, and the true slope at 100 is subnormal.
EDGES = (-50.0, -20.0, -15.0, -10.0, -2.0, 0.0, 2.0, 10.0, 15.0, 20.0, 50.0)


def slope(x):  # sigmoid(x) * sigmoid(-x) in float64, without cancellation or overflow
    return np.exp(-np.logaddexp(0.0, x) - np.logaddexp(0.0, -x))


def _wrong(got, p, truth=None):
    truth = p.upstream * slope(p.x) if truth is None else truth
    return ~close_points(got, truth, 1e-11 if p.dtype == "float64" else 2e-5, 1e-30)


def _cancels(got, p, sign):
    """Wrong where upstream * s * (1 - s), s = sigmoid(sign * x) in the probe's dtype, is."""
    import tensorflow as tf

    s = tf.sigmoid(sign * tf.constant(p.x, p.dtype))
    made = (p.upstream * (s * (1 - s)).numpy()).astype(np.float64)
    return _wrong(got, p) & _wrong(made, p) & matches(got, made, 1e-3)


def _flipped_cancels(got, p):
    """Wrong where upstream * s * (s - 1) in the probe's dtype is: minus the slope, and 0
    where s - 1 cancels."""
    import tensorflow as tf

    s = tf.sigmoid(tf.constant(p.x, p.dtype))
    made = (tf.constant(p.upstream, p.dtype) * s * (s - 1)).numpy().astype(np.float64)
    return _wrong(got, p) & matches(got, made, 1e-3, 1e-30)


def _lost_far_out(got, p):
    """nan, inf or a flushed 0 at |x| >= 40, though right to 1e-3 for |x| <= 20."""
    near, truth = np.abs(p.x) <= 20.0, p.upstream * slope(p.x)
    lost = ~np.isfinite(got) | ((got == 0.0) & (np.abs(truth) >= np.finfo(p.dtype).tiny))
    return lost & (np.abs(p.x) >= 40.0) & matches(got[near], truth[near], 1e-3)


def _tail(got, p, value=False):  # right for |x| <= 5, wrong on a tail (|x| >= 10)
    wrong = _wrong(got, p, sigmoid(p.x) if value else None)
    return wrong & (np.abs(p.x) >= 10.0) & ~wrong[np.abs(p.x) <= 5.0].any()


def _clipped_x(got, p):
    """Right for |x| <= 5, and the slope at a clipped x, clip(x, low, high), beyond: each
    bound read from the slope kept on its side (s(1 - s) = v gives x = log(s / (1 - s)))."""
    wrong = _wrong(got, p) & (p.upstream != 0)
    if not wrong.any() or wrong[np.abs(p.x) <= 5.0].any():
        return None
    bounds = []
    for side in (p.x < 0, p.x > 0):
        kept = (got / np.where(p.upstream == 0, 1.0, p.upstream))[wrong & side]
        if kept.size and not (0.0 < kept[0] < 0.25):
            return None
        r = np.sqrt(1.0 - 4.0 * kept[0]) if kept.size else 0.0
        bounds.append(np.log((1.0 + r) ** 2 / (4.0 * kept[0])) if kept.size else np.inf)
    low, high = -bounds[0], bounds[1]
    if not matches(got, p.upstream * slope(np.clip(p.x, low, high)), 1e-3, 1e-30):
        return None
    return {"range": f"[{low:.4g}, {high:.4g}]".replace("inf", "infinity")}


_mistake = partial(spec.Mistake, part="gradient")
# fmt: off
CANCELS = ("Right near 0, wrong at x = {points}: s * (1 - s) cancels once s rounds to nearly 1 (in "
           "float32 from x = 10), as TensorFlow's sigmoid gradient does: write 1 - s as s(-x).")
TAIL = "Right near 0, wrong at x = {points}, where a formula right on paper loses small values"
MISTAKES = (
    _mistake("slope_as_value", "Your value is sigmoid's slope: return sigmoid(x), and the slope "
             "from grad_fn.", lambda p: slope(p.x), part="value", means="the slope as the value"),
    _mistake("wrong_value", "Your value is sigmoid(-x): return sigmoid(x).",
             lambda p: sigmoid(-p.x), part="value"),
    _mistake("wrong_value", "Your value is softplus(x), whose slope is the sigmoid: return "
             "tf.sigmoid(x).", lambda p: np.logaddexp(0.0, p.x), part="value"),
    _mistake("softplus_slope", "Your grad_fn returns upstream * sigmoid(x), the slope of "
             "softplus; sigmoid's own is sigmoid(x) * sigmoid(-x).", lambda p: p.upstream *
             sigmoid(p.x), means="upstream * sigmoid(x) where sigmoid's slope belongs"),
    _mistake("slope_factor_missing", "Your grad_fn multiplies the upstream by sigmoid(-x) only "
             "(or by e^-x / (1 + e^-x), the same number: the square of the denominator "
             "forgotten). Sigmoid's slope has two factors, sigmoid(x) * sigmoid(-x) (that is, "
             "e^-x / (1 + e^-x)**2).", lambda p: p.upstream * sigmoid(-p.x),
             means="one factor of sigmoid's slope left out, or the square of a denominator"),
    _mistake("slope_factor_missing", "Your grad_fn multiplies the upstream by e^-|x| / (1 + "
             "e^-|x|), which is sigmoid(-|x|): the square of the denominator is missing (the "
             "same number as one factor of the slope alone, the smaller of sigmoid(x) and "
             "sigmoid(-x)). Sigmoid's slope is e^-|x| / (1 + e^-|x|)**2, that is sigmoid(x) * "
             "sigmoid(-x).", lambda p: p.upstream * sigmoid(-np.abs(p.x))),
    *(_mistake("sigmoid_squared", f"Your grad_fn multiplies the upstream by {w}: sigmoid's slope "
               "is sigmoid(x) * (1 - sigmoid(x)), a product of two different factors, best "
               "written sigmoid(x) * sigmoid(-x).", lambda p, f=f: p.upstream * f(p.x),
               means="a square of a sigmoid where sigmoid(x) * sigmoid(-x) belongs")
      for w, f in (("sigmoid(x)**2", lambda x: sigmoid(x) ** 2),
                   ("sigmoid(-x)**2", lambda x: sigmoid(-x) ** 2),
                   ("1 - sigmoid(x)**2, tanh's pattern (tanh' = 1 - tanh**2)",
                    lambda x: 1 - sigmoid(x) ** 2))),
    _mistake("forgot_local_derivative", "Your grad_fn returns the upstream unchanged: multiply it "
             "by sigmoid(x) * sigmoid(-x).", lambda p: p.upstream),
    *(_mistake("reduced_dy", "Your grad_fn reduces the upstream to one number: each element has "
               "its own upstream.", lambda p, t=t: t(p.upstream) * slope(p.x))
      for t in (np.sum, np.mean)),
    spec.Symptom("slope_sign_flipped", "Your grad_fn has the opposite sign everywhere: s * (s - 1) "
                 "is minus sigmoid's slope (s - 1 where 1 - s belongs), and it also cancels to 0 "
                 "on the tail. Write the slope as sigmoid(x) * sigmoid(-x).", _flipped_cancels,
                 part="gradient", means="s * (s - 1), minus sigmoid's slope"),
    spec.Symptom("cancellation", CANCELS, partial(_cancels, sign=1.0), part="gradient"),
    spec.Symptom("cancellation", CANCELS, partial(_cancels, sign=-1.0), part="gradient"),
    spec.Pattern("clipped_input", "Your gradient is right near 0 but, for large |x|, that of a "
                 "clipped x: your rule clips x to {range} before taking the slope, which then "
                 "stops shrinking on the tails. sigmoid(x) * sigmoid(-x) needs no clip (it "
                 "neither overflows nor cancels): use x itself.", _clipped_x, part="gradient"),
    spec.Symptom("exp_overflow", TAIL + ": {value} from an exp that overflows (in float32, (1 + "
                 "e^50)**2 passes 3.4e38). Use sigmoids only: sigmoid(x) * sigmoid(-x).",
                 _lost_far_out, part="gradient", means="a slope written with exp, which overflows"),
    spec.Symptom("tail_inaccurate", TAIL + " (1 - tanh**2 cancels, exp overflows): "
                 "sigmoid(x) * sigmoid(-x) does neither.", _tail, part="gradient",
                 means="right near zero, wrong on a tail"),
    spec.Symptom("tail_inaccurate", TAIL + ": return tf.sigmoid(x).", partial(_tail, value=True),
                 part="value"),
)
PROBES = spec.Probes({"float32": spec.Points((-100.0, *EDGES, 100.0), ((-50.0, 50.0, 8),)),
                      "float64": spec.Points(EDGES, ((-50.0, 50.0, 8),))},
                     shapes={"float64": ("points", (2, 4))}, upstream=True)
# fmt: on

EXERCISE = spec.Exercise(
    number="4.3",
    title="A sigmoid whose gradient stays accurate",
    stars=2,
    minutes=10,
    harness=OnTape("`smooth_sigmoid`", produced=True, local="sigmoid(x) * sigmoid(-x)"),
    probes=PROBES,
    reference=lambda p: {"value": sigmoid(p.x), "gradient": p.upstream * slope(p.x)},
    mistakes=MISTAKES,
    describe={"value": "sigmoid(x)", "gradient": "upstream * sigmoid(x) * sigmoid(-x)"},
    claim="Value sigmoid(x) and gradient upstream * sigmoid(x) * sigmoid(-x), point by point "
    "in relative terms on both tails (0.0 accepted only at ±100, where the truth is subnormal)",
)
smooth_sigmoid = EXERCISE.check
