"""The log1pexp story as a check knows it: one probe table, one reference, one set of
mistake codes, for every exercise that asks for a stable log(1 + e^x) (3.1, 3.4, 6.4).

Every landmark comes from :func:`autodiff_course.log1pexp.thresholds` (lesson 03): below
``cancellation`` 1 + e^x rounds to 1; from ``flush_start`` to ``overflow`` 1/(1 + e^x)
is below the smallest normal number (TensorFlow's CPU kernels flush it to 0.0); above
``overflow`` e^x is inf. The probes sit on both sides of each landmark and densely in the
band between the last two. ``z`` is the argument of the softplus (``x``, or ``w x`` in a
layer), named ``z_name`` in the hints.
"""

from __future__ import annotations

import numpy as np

from ..checking import FLOAT32
from ..checking import FLOAT64
from ..checking import close_points
from ..checking.spec import Mistake
from ..checking.spec import Points
from ..checking.spec import Story
from ..checking.spec import Symptom
from ..log1pexp import reference_sigmoid as sigmoid
from ..log1pexp import reference_softplus as softplus
from ..log1pexp import thresholds

QUIET = (-5.0, 70.0)  # where every formula of the lesson is accurate in float32


def points(dtype: str) -> Points:
    """Fixed points on both sides of every landmark of ``dtype``, densely in the band
    from ``flush_start`` to ``overflow``, and fresh points in every region."""
    t = thresholds(dtype)
    c, f, o = t.cancellation, t.flush_start, t.overflow
    band = np.round(np.linspace(f + 0.01, o - 0.01, 12), 3)
    common = [-1.0, 0.0, 1.0, 3.0, 10.0]
    if dtype == "float64":  # where float32's thresholds (20, -17) would cut float64 short
        common += [-25.0, -21.0, -18.0, -17.0, 16.0, 18.0, 20.0, 21.0, 22.5, 25.0, 28.0, 40.0]
        tails = [-745.0, -50.0, c - 0.5, c + 0.5, 700.0, 800.0]
    else:
        common += [-20.0, -15.0, -3.0, 15.0, 20.0, 50.0, 80.0]
        tails = [-100.0, -40.0, -30.0, c - 0.5, c - 0.05, c + 0.05, 95.0, 100.0, 120.0]
    edges = [f - 0.05, f + 0.001, o - 0.001, o + 0.001, o + 0.05, o + 1.0]
    low = -100.0 if dtype != "float64" else -60.0
    fresh = ((low, c - 0.1, 3), (c + 0.1, 20.0, 4), (20.0, f - 0.05, 2))
    fresh += ((f + 0.01, o - 0.01, 4), (o + 0.01, o + 6.0, 3))
    return Points(tuple(np.round(common + tails + edges, 4)) + tuple(band), fresh)


def landmarks(dtype: str) -> dict:
    """The hint fields of ``dtype``'s landmarks, to enough digits."""
    t = thresholds(dtype)
    return {
        "overflow": f"{t.overflow:.4f}",
        "flush_start": f"{t.flush_start:.4f}",
        "cancellation": f"{t.cancellation:.2f}",
    }


def _lost(got, truth, dtype: str, z, scale=1.0):
    """Where ``got`` carries only the rounding error of numbers near 1: 0.0, or a multiple
    of the spacing of floats near 1 (no smaller than a quarter of ``dtype``'s epsilon, no
    further than a few of them from the truth, times ``scale``), though the true value
    needs more digits than that. Below ``cancellation`` such a formula is never right, so
    an answer right at any point there (of normal size) lost nothing: a tail cut off is
    another mistake."""
    t = thresholds(dtype)
    tol = 2e-5 if dtype != "float64" else 1e-11
    with np.errstate(all="ignore"):
        off = np.abs(got - truth)
        right = off <= tol * np.abs(truth)
        spacing = t.eps * np.abs(scale)
        rounding = (got == 0) | ((off <= 4 * spacing) & (np.abs(got) >= spacing / 4))
        normal = np.abs(truth) >= t.smallest_normal
        kept = np.any(right & (np.asarray(z) < t.cancellation) & normal)
        return ~right & np.isfinite(got) & rounding & ~kept


def _quiet(z):
    return (z >= QUIET[0]) & (z <= QUIET[1])


HINTS = {
    "forward_overflow": (
        "the value is {value} at {z} = {points}: exp overflows {dtype} above {z} = {overflow}, "
        "so log(1 + exp({z})) is log(inf). Compute the forward value with {softplus}"
    ),
    "forward_rounds_to_zero": (
        "the value is {value} at {z} = {points}, where log(1 + e^{z}) is tiny but not zero: "
        "for negative {z}, 1 + e^{z} rounds to a number near 1 (to exactly 1 below {z} = "
        "{cancellation} in {dtype}), and the log keeps only its rounding error: 0.0 or wrong "
        "digits. {softplus} (or {log1p}) keeps those tiny values"
    ),
    "flush_to_zero": (
        "the gradient is 0.0 at {z} = {points}, where it should be about 1: from {z} = "
        "{flush_start}, 1/(1 + e^{z}) is below the smallest normal {dtype}, and TensorFlow's "
        "CPU kernels flush it to 0, so e^{z} times it is 0. The backward must not multiply by "
        "1/(1 + e^{z}): use tf.sigmoid"
    ),
    "backward_overflow_nan": (
        "the gradient is {value} at {z} = {points}: the backward computes e^{z}, which is inf "
        "there, and then inf/inf or 0 * inf. e^{z}/(1 + e^{z}) equals the sigmoid, which "
        "never overflows"
    ),
    "documented_rule_cancellation": (
        "the gradient is {value} at {z} = {points}, where it is tiny but not zero: for "
        "negative {z}, 1/(1 + e^{z}) is close to 1, and a subtraction such as 1 - 1/(1 + "
        "e^{z}) keeps only its rounding error: 0.0 (below {z} = {cancellation}) or wrong "
        "digits. The sigmoid keeps the tiny value"
    ),
}
# The functions a hint names, for answers in TensorFlow (lesson 03) and in NumPy (lesson 06).
WORDS = {
    "tf": {
        "softplus": "tf.nn.softplus",
        "log1p": "tf.math.log1p",
        "where": "tf.where",
        "exact": "tf.nn.softplus and tf.sigmoid need",
    },
    "np": {
        "softplus": "np.logaddexp(0, {z})",
        "log1p": "np.log1p",
        "where": "np.where",
        "exact": "np.logaddexp needs",
    },
}


def _words(text: str, library: str, z_name: str) -> str:
    for name, words in WORDS[library].items():
        text = text.replace("{" + name + "}", words)
    return text.replace("{z}", z_name)


MEANS = {
    "forward_overflow": "the forward value overflows to inf (exp of a large x)",
    "forward_rounds_to_zero": "the forward value loses its digits (0.0) where 1 + e^x rounds to 1",
    "flush_to_zero": "the gradient is 0.0 where 1/(1 + e^x) is below the smallest normal float",
    "backward_overflow_nan": "the backward forms e^x, which overflows (inf/inf or 0*inf = nan)",
    "documented_rule_cancellation": "the backward subtracts numbers near 1 and loses its digits",
}


def story(z, scale, z_name="x", gradient="gradient", library="tf", flushes=True) -> Story:
    """The failure modes of the log1pexp story, for the softplus of ``z(probe)`` whose
    gradient part ``gradient`` is ``scale(probe) * sigmoid(z)``, with hints that name the
    functions of ``library`` ("tf" or "np"). Without ``flushes`` (NumPy keeps subnormal
    numbers, where TensorFlow's CPU kernels flush them) a 0.0 in the band is no flush."""

    def zs(p):
        return np.asarray(z(p))

    def region(test):
        return lambda p: test(zs(p), thresholds(p.dtype), p)

    def symptom(code, shows, where, part):
        hint = _words(HINTS[code], library, z_name)
        return Symptom(code, hint, shows, region(where), part, MEANS[code], at=zs)

    def normal(values, t):
        return np.abs(values) >= t.smallest_normal

    # Below the smallest normal number a 0.0 is the CPU's flush, not the formula's fault.
    def negative(x, t, p):
        return (x < 0) & normal(sigmoid(x), t)

    def negative_gradient(x, t, p):
        return negative(x, t, p) & normal(scale(p) * sigmoid(x), t)

    def lost_value(got, p):
        return _lost(got, softplus(zs(p)), p.dtype, zs(p))

    def lost_gradient(got, p):
        return _lost(got, scale(p) * sigmoid(zs(p)), p.dtype, zs(p), scale(p))

    def not_finite(got, p):
        return ~np.isfinite(got)

    def zero(got, p):
        return got == 0.0

    def band(x, t, p):
        return (x > t.flush_start) & (x < t.overflow)

    symptoms = (
        symptom("forward_overflow", not_finite, lambda x, t, p: x > t.overflow, "value"),
        symptom("forward_rounds_to_zero", lost_value, negative, "value"),
        symptom("flush_to_zero", zero, band, gradient),
        symptom("backward_overflow_nan", not_finite, lambda x, t, p: x > t.overflow, gradient),
        symptom("documented_rule_cancellation", lost_gradient, negative_gradient, gradient),
    )
    return Story(
        "the log1pexp story",
        tuple(s for s in symptoms if flushes or s.code != "flush_to_zero"),
        quiet=lambda p: _quiet(zs(p)),
    )


def _threshold_slip(shortcut):
    """float64 values equal to ``shortcut`` wherever they are wrong: a tf.where(x > 20,
    ...) switch that is exact in float32 but not in float64."""

    def shows(got, p, truth):
        if p.dtype != "float64":
            return np.zeros(got.shape, bool)
        off = ~close_points(got, truth, FLOAT64.rtol, FLOAT64.atol)
        return off if off.any() and np.all(got[off] == shortcut(p)[off]) else off & False

    return shows


def mistakes(z, scale, z_name="x", gradient="gradient", library="tf") -> tuple:
    """The whole-formula mistakes of a log1pexp rule, recognised where the answer is finite
    (its far ends are the story's), and the mirrored formula z + log(1 + e^-z), whose
    value is inf far below 0, where every form of log(1 + e^z) is finite."""

    def grad(local):
        return lambda p: scale(p) * local(np.asarray(z(p)))

    s = f"sigmoid({z_name})"
    return (
        Mistake(
            "value_is_sigmoid",
            f"The first thing your function returns is {s}, the derivative. Return the value "
            f"log(1 + e^{z_name}) first and the gradient function second.",
            lambda p: sigmoid(np.asarray(z(p))),
            part="value",
            means="the forward returns sigmoid(x), the derivative, not log(1 + e^x)",
        ),
        Mistake(
            "differentiated_twice",
            f"Your gradient is {s} * (1 - {s}), the derivative of the sigmoid: one "
            f"differentiation too many. d/d{z_name} log(1 + e^{z_name}) = {s}.",
            grad(lambda zs: sigmoid(zs) * sigmoid(-zs)),
            part=gradient,
            where_finite=True,
        ),
        Mistake(
            "value_not_derivative",
            f"Your gradient function returns the value log(1 + e^{z_name}) again; it must "
            f"return upstream times the derivative, {s}.",
            grad(softplus),
            part=gradient,
            where_finite=True,
        ),
        Mistake(
            "sigmoid_of_minus_x",
            f"Your gradient is sigmoid(-{z_name}) = 1/(1 + e^{z_name}): check the sign of the "
            f"exponent. The derivative of log(1 + e^{z_name}) is e^{z_name}/(1 + e^{z_name}) "
            f"= {s}.",
            grad(lambda zs: sigmoid(-zs)),
            part=gradient,
            where_finite=True,
            means="sigmoid(-x) where sigmoid(x) belongs",
        ),
        Symptom(
            "forward_overflow",
            _words(
                "The value is {value} at {z} = {points}: {z} + log(1 + e^-{z}) holds for every "
                "{z}, but for negative {z} e^-{z} overflows {dtype} (below {z} = -{overflow}), "
                "and before that the two terms cancel. {softplus} computes both sides.",
                library,
                z_name,
            ),
            lambda got, p: ~np.isfinite(got),
            lambda p: np.asarray(z(p)) < -thresholds(p.dtype).overflow,
            "value",
            at=lambda p: np.asarray(z(p)),
        ),
    )


def threshold_slips(z, z_name="x", gradient="gradient", library="tf") -> tuple:
    """Symptoms of a switch such as tf.where(x > 20, x, softplus(x)) in float64."""
    text = _words(
        "In float64 your {what} is {words} at {z} = {points}, where the true {what} differs "
        "from it by more than float64 rounding: a switch such as {where}({z} > 20, ...) is "
        "exact in float32, but float64 keeps about 16 digits. {exact} no threshold.",
        library,
        z_name,
    )
    value = _threshold_slip(lambda p: np.asarray(z(p)))
    ones = _threshold_slip(lambda p: np.ones(np.shape(z(p))))
    return (
        Symptom(
            "float32_threshold",
            text.replace("{what}", "value").replace("{words}", z_name + " itself"),
            lambda got, p: value(got, p, softplus(np.asarray(z(p)))),
            part="value",
            at=lambda p: np.asarray(z(p)),
            means="a switch-over threshold that is exact in float32 but not in float64",
        ),
        Symptom(
            "float32_threshold",
            text.replace("{what}", "gradient").replace("{words}", "exactly the upstream"),
            lambda got, p: ones(
                got / p.upstream if p.upstream is not None else got, p, sigmoid(np.asarray(z(p)))
            ),
            part=gradient,
            at=lambda p: np.asarray(z(p)),
        ),
    )


def tails(z, scale, z_name: str = "x", gradient: str = "gradient") -> tuple:
    """Two stories for a formula right for every ``z`` on one side of 0 and off by more
    than 1% at points of the other: a tail cut off, clipped or switched to a shortcut
    (``one_tail``). Tried after :func:`story`, whose failure modes explain their own tails."""

    def off(truth):
        def shows(got, p):
            return ~close_points(
                got, truth(p), 1e-2, FLOAT64.atol if p.dtype == "float64" else FLOAT32.atol
            )

        return shows

    def value(p):
        return softplus(np.asarray(z(p)))

    def grad(p):
        return scale(p) * sigmoid(np.asarray(z(p)))

    def side(name, right, wrong, advice):
        hint = (
            f"the {{what}} is {{value}} at {z_name} = {{points}}, though your formula is right "
            f"for every {z_name} {right}: {advice}. Look at what it does for {z_name} {wrong} "
            "(a clip, a cut-off, a switch to a shortcut)"
        )
        sign = -1.0 if wrong == "< 0" else 1.0

        def region(p):
            return sign * np.asarray(z(p)) > 0

        def quiet(p):
            return sign * np.asarray(z(p)) <= 0

        return Story(
            name,
            (
                Symptom(
                    "one_tail", hint.replace("{what}", "value"), off(value), region, "value", at=z
                ),
                Symptom(
                    "one_tail",
                    hint.replace("{what}", "gradient"),
                    off(grad),
                    region,
                    gradient,
                    at=z,
                ),
            ),
            quiet=quiet,
        )

    return (
        side(
            f"log1pexp for negative {z_name}",
            ">= 0",
            "< 0",
            f"far below 0, log(1 + e^{z_name}) and sigmoid({z_name}) are about e^{z_name}, tiny "
            "but not zero, and the check wants their digits",
        ),
        side(
            f"log1pexp for positive {z_name}",
            "<= 0",
            "> 0",
            f"for {z_name} > 0, log(1 + e^{z_name}) is {z_name} + log(1 + e^-{z_name}) and "
            f"sigmoid({z_name}) = 1/(1 + e^-{z_name})",
        ),
    )
