"""The log1pexp story as a check knows it: one probe table, one reference, one set of
mistake codes, for every exercise that asks for a stable log(1 + e^x) (3.1, 3.4, 6.4).

Every landmark comes from :func:`autodiff_course.log1pexp.thresholds` (lesson 03): below
``cancellation`` 1 + e^x rounds to 1; from ``flush_start`` to ``overflow`` 1/(1 + e^x)
is below the smallest normal number (TensorFlow's CPU kernels flush it to 0.0); above
``overflow`` e^x is inf. The probes sit on both sides of each landmark and densely in the
band between the last two. A rule of x (3.1, 6.4) takes :data:`PROBES`, :func:`reference`,
:data:`DESCRIBE`, :func:`mistakes`, :func:`threshold_slips` (and 6.4 :func:`tails`); every
exercise takes :func:`story`, whose ``z`` is the argument of the softplus (``x``, or ``w x``
in a layer), named ``z_name`` in the hints. Hints name a ``library``'s functions ("tf", "np").
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from ..checking import close_points
from ..checking.judging import Tolerance
from ..checking.judging import tolerance_for
from ..checking.spec import Mistake
from ..checking.spec import Points
from ..checking.spec import Probes
from ..checking.spec import Story
from ..checking.spec import Symptom
from ..log1pexp import reference_sigmoid as sigmoid
from ..log1pexp import reference_softplus as softplus
from ..log1pexp import thresholds

QUIET = (-5.0, 70.0)  # where every formula of the lesson is accurate in float32
# float64: every right formula (tf.sigmoid, 1/(1 + e^-x), exp(x - softplus(x)), ...) is within
# 7e-15 of the truth, a switch to x (or 1) at x > 30 is 9e-14 off
FLOAT64_STORY = Tolerance(rtol=2e-14, atol=1e-300)


def tolerance(p, part=None) -> Tolerance:
    """The story's tolerance: float32's, and in float64 some 90 units in the last place."""
    return FLOAT64_STORY if p.dtype == "float64" else tolerance_for(p.dtype)


_x, _upstream = attrgetter("x"), attrgetter("upstream")


def points(dtype: str) -> Points:
    """Fixed points on both sides of every landmark of ``dtype``, densely in the band
    from ``flush_start`` to ``overflow``, and fresh points in every region."""
    t = thresholds(dtype)
    c, f, o = t.cancellation, t.flush_start, t.overflow
    band = np.round(np.linspace(f + 0.01, o - 0.01, 12), 3)
    common = [-1.0, 0.0, 1.0, 3.0, 10.0]
    if dtype == "float64":  # where float32's thresholds (20, -17) would cut float64 short
        common += [-25.0, -21.0, -18.0, -17.0, 16.0, 18.0, 20.0, 21.0, 22.5, 25.0, 28.0, 31.0, 40.0]
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


# The probes of a rule of x: every landmark of both dtypes, shapes and upstreams.
PROBES = Probes(
    points={"float32": points("float32"), "float64": points("float64")},
    shapes={"float32": ("points", (2, 3), ())},
    upstream=True,
    data=lambda rng, probe: landmarks(probe.dtype),
)
DESCRIBE = {"value": "log(1 + e^x)", "gradient": "upstream * sigmoid(x)"}


def reference(p) -> dict:
    """The value and gradient of a rule of x, in float64 by closed forms."""
    return {"value": softplus(p.x), "gradient": p.upstream * sigmoid(p.x)}


def _lost(got, truth, dtype: str, z, scale=1.0):
    """Where ``got`` carries only the rounding error of numbers near 1: 0.0, or a multiple
    of the spacing of floats near 1 (no smaller than a quarter of ``dtype``'s epsilon, no
    further than a few of them from the truth, times ``scale``), though the true value
    needs more digits than that. Below ``cancellation`` such a formula is never right, so
    an answer right at any point there (of normal size) lost nothing: a tail cut off is
    another mistake."""
    t = thresholds(dtype)
    with np.errstate(all="ignore"):
        off = np.abs(got - truth)
        right = off <= (FLOAT64_STORY if "64" in dtype else tolerance_for(dtype)).rtol * np.abs(
            truth
        )
        spacing = t.eps * np.abs(scale)
        rounding = (got == 0) | ((off <= 4 * spacing) & (np.abs(got) >= spacing / 4))
        normal = np.abs(truth) >= t.smallest_normal
        kept = np.any(right & (np.asarray(z) < t.cancellation) & normal)
        return ~right & np.isfinite(got) & rounding & ~kept


# Each failure mode: its hint ({z} the softplus's argument, {softplus}, {log1p}, ... the
# library's functions) and its one-line meaning.
MODES = {
    "forward_overflow": (
        "the value is {value} at {z} = {points}: exp overflows {dtype} above {z} = {overflow}, "
        "so log(1 + exp({z})) is log(inf). Compute the forward value with {softplus}",
        "the forward value overflows to inf (exp of a large x)",
    ),
    "forward_rounds_to_zero": (
        "the value is {value} at {z} = {points}, where log(1 + e^{z}) is tiny but not zero: "
        "for negative {z}, 1 + e^{z} rounds to a number near 1 (to exactly 1 below {z} = "
        "{cancellation} in {dtype}), and the log keeps only its rounding error: 0.0 or wrong "
        "digits. {softplus} (or {log1p}) keeps those tiny values",
        "the forward value loses its digits (0.0) where 1 + e^x rounds to 1",
    ),
    "flush_to_zero": (
        "the gradient is 0.0 at {z} = {points}, where it should be about 1: from {z} = "
        "{flush_start}, 1/(1 + e^{z}) is below the smallest normal {dtype}, and TensorFlow's "
        "CPU kernels flush it to 0, so e^{z} times it is 0. The backward must not multiply by "
        "1/(1 + e^{z}): use tf.sigmoid",
        "the gradient is 0.0 where 1/(1 + e^x) is below the smallest normal float",
    ),
    "backward_overflow_nan": (
        "the gradient is {value} at {z} = {points}: the backward computes e^{z}, which is inf "
        "there, and then inf/inf or 0 * inf. e^{z}/(1 + e^{z}) equals the sigmoid, which "
        "never overflows",
        "the backward forms e^x, which overflows (inf/inf or 0*inf = nan)",
    ),
    "documented_rule_cancellation": (
        "the gradient is {value} at {z} = {points}, where it is tiny but not zero: for "
        "negative {z}, a form of the sigmoid that adds or subtracts numbers close to 1 "
        "(1 - 1/(1 + e^{z}), 0.5 * (1 + tanh({z}/2))) keeps only their rounding error: 0.0 "
        "(below {z} = {cancellation}) or wrong digits, though it equals the sigmoid on "
        "paper. The sigmoid itself, or e^{z}/(1 + e^{z}) for negative {z}, keeps the tiny value",
        "the backward subtracts numbers near 1 and loses its digits",
    ),
}
# The functions a hint names, in TensorFlow (lesson 03) and in NumPy (lesson 06).
NAMES = ("softplus", "log1p", "where", "exact")
WORDS = {
    "tf": ("tf.nn.softplus", "tf.math.log1p", "tf.where", "tf.nn.softplus and tf.sigmoid need"),
    "np": ("np.logaddexp(0, {z})", "np.log1p", "np.where", "np.logaddexp needs"),
}


def _words(text: str, library: str, z_name: str = "x") -> str:
    for name, words in zip(NAMES, WORDS[library]):
        text = text.replace("{" + name + "}", words)
    return text.replace("{z}", z_name)


def story(z=_x, scale=_upstream, z_name="x", library="tf", flushes=True) -> Story:
    """The failure modes of the log1pexp story, for the softplus of ``z(probe)`` whose
    part ``gradient`` is ``scale(probe) * sigmoid(z)``. Without ``flushes`` (NumPy keeps
    subnormal numbers, where TensorFlow's CPU kernels flush them) a 0.0 in the band is no
    flush. Below the smallest normal number a 0.0 is the CPU's flush, not the formula's
    fault, so the regions of lost digits leave it out."""

    def symptom(code, part, shows, where):
        def region(p):
            return where(z(p), thresholds(p.dtype), p)

        hint, means = MODES[code]
        return Symptom(code, _words(hint, library, z_name), shows, region, part, means, at=z)

    def value(p):
        return softplus(z(p))

    def gradient(p):
        return scale(p) * sigmoid(z(p))

    def lost(truth, spacing=lambda p: 1.0):
        return lambda got, p: _lost(got, truth(p), p.dtype, z(p), spacing(p))

    def normal(values, t):
        return np.abs(values) >= t.smallest_normal

    def negative(x, t, p):
        return (x < 0) & normal(sigmoid(x), t)

    def not_finite(got, p):
        return ~np.isfinite(got)

    def above(x, t, p):
        return x > t.overflow

    symptoms = (
        symptom("forward_overflow", "value", not_finite, above),
        symptom("forward_rounds_to_zero", "value", lost(value), negative),
        symptom(
            "flush_to_zero",
            "gradient",
            lambda got, p: got == 0.0,
            lambda x, t, p: (x > t.flush_start) & (x < t.overflow),
        ),
        symptom("backward_overflow_nan", "gradient", not_finite, above),
        symptom(
            "documented_rule_cancellation",
            "gradient",
            lost(gradient, scale),
            lambda x, t, p: negative(x, t, p) & normal(gradient(p), t),
        ),
    )
    return Story(
        "the log1pexp story",
        tuple(s for s in symptoms if flushes or s.code != "flush_to_zero"),
        quiet=lambda p: (z(p) >= QUIET[0]) & (z(p) <= QUIET[1]),
    )


SIGMOID_FIRST = (
    "The first thing your function returns is sigmoid(x), the derivative. Return the value "
    "log(1 + e^x) first and the gradient function second."
)
TWICE = (
    "Your gradient is sigmoid(x) * (1 - sigmoid(x)), the derivative of the sigmoid: one "
    "differentiation too many. d/dx log(1 + e^x) = sigmoid(x)."
)
VALUE = (
    "Your gradient function returns the value log(1 + e^x) again; it must return upstream "
    "times the derivative, sigmoid(x)."
)
MINUS_X = (
    "Your gradient is sigmoid(-x) = 1/(1 + e^x): check the sign of the exponent. The "
    "derivative of log(1 + e^x) is e^x/(1 + e^x) = sigmoid(x)."
)
MIRRORED = (
    "The value is {value} at x = {points}: x + log(1 + e^-x) holds for every x, but for "
    "negative x e^-x overflows {dtype} (below x = -{overflow}), and before that the two terms "
    "cancel. {softplus} computes both sides."
)


def mistakes(library="tf") -> tuple:
    """The whole-formula mistakes of a rule of x, recognised where the answer is finite
    (its far ends are the story's), and the mirrored formula x + log(1 + e^-x), whose
    value is inf far below 0, where every form of log(1 + e^x) is finite."""

    def finite(code, hint, local, means=""):
        def gives(p):  # the gradient of a rule whose local derivative is local(x)
            return p.upstream * local(p.x)

        return Mistake(code, hint, gives, "gradient", means, where_finite=True)

    return (
        Mistake(
            "value_is_sigmoid",
            SIGMOID_FIRST,
            lambda p: sigmoid(p.x),
            part="value",
            means="the forward returns sigmoid(x), the derivative, not log(1 + e^x)",
        ),
        finite("differentiated_twice", TWICE, lambda x: sigmoid(x) * sigmoid(-x)),
        finite("value_not_derivative", VALUE, softplus),
        finite(
            "sigmoid_of_minus_x",
            MINUS_X,
            lambda x: sigmoid(-x),
            "sigmoid(-x) where sigmoid(x) belongs",
        ),
        Symptom(
            "forward_overflow",
            _words(MIRRORED, library),
            lambda got, p: ~np.isfinite(got),
            lambda p: p.x < -thresholds(p.dtype).overflow,
            "value",
            at=_x,
        ),
    )


SWITCH = (
    "In float64 your {what} is {words} at x = {points}, where the true {what} differs from it "
    "by more than float64 rounding: a switch such as {where}(x > 20, ...) is exact in float32, "
    "but float64 keeps about 16 digits. {exact} no threshold."
)


def threshold_slips(library="tf") -> tuple:
    """Symptoms of a switch such as tf.where(x > 20, x, softplus(x)) in float64: a value
    that is x itself, or a gradient that is exactly the upstream, wherever it is wrong."""

    def equal_where_wrong(shortcut, truth, per_upstream=False):
        def shows(got, p):
            got = got / p.upstream if per_upstream else got
            off = ~close_points(got, truth(p.x), FLOAT64_STORY.rtol, FLOAT64_STORY.atol)
            return off & (
                p.dtype == "float64" and off.any() and np.all(got[off] == shortcut(p.x)[off])
            )

        return shows

    def slip(part, words, shows, means=""):
        hint = _words(SWITCH, library).replace("{what}", part).replace("{words}", words)
        return Symptom("float32_threshold", hint, shows, part=part, means=means, at=_x)

    return (
        slip(
            "value",
            "x itself",
            equal_where_wrong(lambda x: x, softplus),
            "a switch-over threshold that is exact in float32 but not in float64",
        ),
        slip("gradient", "exactly the upstream", equal_where_wrong(np.ones_like, sigmoid, True)),
    )


def tails() -> tuple:
    """Two stories for a rule of x right for every x on one side of 0 and off by more than
    1% at points of the other: a tail cut off, clipped or switched to a shortcut
    (``one_tail``). Tried after :func:`story`, whose failure modes explain their own tails."""

    def off(part):
        def shows(got, p):
            return ~close_points(got, reference(p)[part], 1e-2, tolerance_for(p.dtype).atol)

        return shows

    def side(sign, right, advice):
        def region(p):
            return sign * p.x > 0

        hint = (
            f"the {{what}} is {{value}} at x = {{points}}, though your formula is right for "
            f"every x {right}: {advice}. Look at what it does for x {'<>'[sign > 0]} 0 (a "
            "clip, a cut-off, a switch to a shortcut)"
        )
        symptoms = tuple(
            Symptom("one_tail", hint.replace("{what}", part), off(part), region, part, at=_x)
            for part in ("value", "gradient")
        )
        name = f"log1pexp for {'negative' if sign < 0 else 'positive'} x"
        return Story(name, symptoms, quiet=lambda p: ~region(p))

    return (
        side(
            -1.0,
            ">= 0",
            "far below 0, log(1 + e^x) and sigmoid(x) are about e^x, tiny but not zero, and "
            "the check wants their digits",
        ),
        side(
            1.0,
            "<= 0",
            "for x > 0, log(1 + e^x) is x + log(1 + e^-x) and sigmoid(x) = 1/(1 + e^-x)",
        ),
    )


ASYMPTOTE = {
    "value": (
        "Your value is {value} at x = {points}, which is e^x, where it should be log(1 + e^x): "
        "for negative x, e^x is only the asymptote of log(1 + e^x), close to it only far below "
        "0. Keep the whole formula for every x: {softplus} (or {log1p} of e^x)."
    ),
    "gradient": (
        "Your gradient is upstream * e^x at x = {points}, where it should be upstream * "
        "sigmoid(x) = upstream * e^x/(1 + e^x): for negative x, e^x is only the asymptote of "
        "the sigmoid, off by the factor 1 + e^x (37% at x = -1) and close only far below 0. "
        "The sigmoid itself is accurate on both sides of 0 and never overflows: use it for "
        "every x."
    ),
}


def asymptotes(library="tf") -> tuple:
    """A rule of x that takes e^x, the asymptote of log(1 + e^x) and of sigmoid(x) far
    below 0, for the value or the gradient at negative x: wherever the part is wrong, x < 0
    and the part is e^x (times the upstream)."""

    def shortcut(part):
        def shows(got, p):
            want = reference(p)[part]
            tol = tolerance(p)
            wrong = ~close_points(got, want, tol.rtol, tol.atol)
            with np.errstate(over="ignore"):
                asymptote = np.exp(p.x) * (p.upstream if part == "gradient" else 1.0)
            rtol = 1e-4 if p.dtype != "float64" else 1e-12
            fits = close_points(got, asymptote, rtol, tol.atol) & (p.x < 0)
            return wrong & bool(wrong.any() and np.all(fits[wrong]))

        return shows

    return tuple(
        Symptom(
            "asymptote_for_negative",
            _words(ASYMPTOTE[part], library),
            shortcut(part),
            part=part,
            means="e^x, the asymptote far below 0, taken for every negative x" if i == 0 else "",
            at=_x,
        )
        for i, part in enumerate(("value", "gradient"))
    )
