"""Exercise 1.2: a central-difference gradient, one coordinate at a time."""

import numpy as np

from ...checking import mistakes as codes
from ...checking import spec
from ...checking.function import Function
from ...checking.function import one_tensor
from ...checking.judging import Tolerance
from ...checking.judging import matches
from ...checking.probes import signed
from ...checking.verdicts import Wrong

codes.register({"integer_result": "the estimates stored in an integer array, which truncates them"})


def draw(rng) -> list:
    """Vectors of 2-3, 1 and 4-6 in [-2, 2] (the first entry beyond 1.2 in size, so that a
    step scaled by |x_i| shows) with h = 0.1, 1e-2 and 1e-3, and two functions whose
    coordinates interact (through a . x), each with the closed form of its central
    difference; one whose slope along the diagonal vanishes at x is passed over, as moving
    all coordinates at once and not moving any would give the same zeros there."""
    probes = []
    for n, h in zip([int(rng.integers(2, 4)), 1, int(rng.integers(4, 7))], [0.1, 1e-2, 1e-3]):
        x, a, c = (np.round(rng.uniform(-2.0, 2.0, size=n), 3), *signed(rng, (2, n), 0.5, 2, 2))
        x[0] = np.copysign(max(abs(x[0]), 1.2), x[0])
        functions = {
            "sin(a . x)": lambda v, a=a: np.sin(a @ v),
            "sum(c x**3) + (a . x)**2": lambda v, a=a, c=c: c @ v**3 + (a @ v) ** 2,
        }
        exact = [np.cos(a @ x) * np.sin(a * h) / h, c * (3 * x**2 + h**2) + 2 * (a @ x) * a]
        slopes = [np.cos(a @ x) * a, 3 * c * x**2 + 2 * (a @ x) * a]
        for (name, f), right, slope in zip(functions.items(), exact, slopes):
            whole = (f(x + h) - f(x - h)) / (2 * h)
            data = {"f": lambda v, f=f: float(f(np.asarray(v))), "h": h, "exact": right}
            data["slope"] = slope
            if n == 1 or abs(whole) > 1e-9:
                label = f"f(x) = {name}, h = {h:g}"
                probes.append(spec.Probe("float64", x, None, {**data, "whole": whole}, label))
    return probes


def difference(up, down, over: float = 2.0):
    """(f(x + up(x, s)) - f(x - down(x, s))) / (over * h) for every coordinate, s = h e_i."""
    return lambda p: np.array(
        [
            (p.f(p.x + up(p.x, s)) - p.f(p.x - down(p.x, s))) / (over * p.h)
            for s in p.h * np.eye(p.x.size)
        ]
    )


def own_step(move):
    """The central difference with coordinate i moved by ``move(x, h)[i]`` both ways and
    divided by twice that: right in form, with a step of its own."""

    def gives(p):
        steps = np.broadcast_to(move(p.x, p.h), p.x.shape)
        return np.array(
            [
                (p.f(p.x + k * e) - p.f(p.x - k * e)) / (2 * k)
                for k, e in zip(steps, np.eye(p.x.size))
            ]
        )

    return gives


def _fixed_step(got, p):
    """The central difference of one step of its own, 1e-8 to 1 (the closest of them), or
    the derivative itself (a step far below h, or the formula worked out)."""
    if matches(got, p.exact, 1e-9, 1e-9):
        return None
    steps = [k for k in 10.0 ** -np.arange(0, 9) if not np.isclose(k, p.h)]
    misses = [np.max(np.abs(got - own_step(lambda x, h, k=k: k)(p))) for k in steps]
    k = steps[int(np.argmin(misses))]
    if matches(got, own_step(lambda x, h: k)(p), 1e-8, 1e-10):
        return {"step": f"a step of {k:g}", "h": f"{p.h:g}"}
    if matches(got, p.slope, 1e-6, 1e-9):
        return {"step": "a much smaller step than h (it is the derivative itself)", "h": f"{p.h:g}"}
    return None


def at_point(move):
    """The central difference of step h, taken at ``move(x)`` instead of at x."""
    return lambda p: np.array(
        [(p.f(move(p.x) + s) - p.f(move(p.x) - s)) / (2 * p.h) for s in p.h * np.eye(p.x.size)]
    )


def _float32_copies(got, p):
    """Each moved copy of x made in float32 (x.astype(np.float32), then += h; or the
    moved copy cast), to rounding, where the float64 formula differs."""
    if matches(got, p.exact, 1e-9, 1e-9):
        return None
    for cast_first in (True, False):
        values = []
        for s in p.h * np.eye(p.x.size):
            if cast_first:
                up, down = p.x.astype(np.float32), p.x.astype(np.float32)
                up, down = up + s.astype(np.float32), down - s.astype(np.float32)
            else:
                up, down = (p.x + s).astype(np.float32), (p.x - s).astype(np.float32)
            values.append((p.f(up) - p.f(down)) / (2 * p.h))
        if matches(got, np.array(values), 1e-10, 1e-12):
            return {}
    return None


def _missed(got, p):
    unset = (got == 0.0) & (p.exact != 0.0)
    if unset.any() and not unset.all() and matches(got[~unset], p.exact[~unset], 1e-9, 1e-9):
        found = [str(i) for i in np.flatnonzero(unset)]
        return {
            "entries": f"Entries {', '.join(found)} are"
            if len(found) > 1
            else f"Entry {found[0]} is"
        }
    return None


BOTH = "The central difference takes both neighbours, f(x + h e_i) - f(x - h e_i), over 2h."
FORWARD = "That is the one-sided f(x + h e_i) - f(x), divided by {}. " + BOTH
BACKWARD = "That is the one-sided f(x) - f(x - h e_i), divided by {}. " + BOTH
MOVED = "Coordinate i moved by {} but the difference was divided by 2h: move it by exactly h."
STEP, NONE = (lambda x, s: s), (lambda x, s: 0.0)
PILED = lambda x, s: np.cumsum(s[::-1])[::-1]  # noqa: E731 - coordinates 0 to i all moved
MOVES = {"h * x[i]": lambda x, s: s * x, "h * |x[i]|": lambda x, s: s * abs(x)}
MOVES["1 (e_i)"] = lambda x, s: s / s.max()
MOVES["2h"] = lambda x, s: 2 * s
OWN_MOVES = {
    "h * max(1, |x[i]|)": lambda x, h: h * np.maximum(1.0, np.abs(x)),
    "h * |x[i]|": lambda x, h: h * np.abs(x),
    "h * (1 + |x[i]|)": lambda x, h: h * (1.0 + np.abs(x)),
}
HALVED = lambda x, s: s / 2  # noqa: E731 - coordinate i moved by h/2 each way
HALF_STEP = "Coordinate i moved by h/2 each way, over h: the central difference of step h/2. "
HALF_STEP += "The step is h: f(x + h e_i) - f(x - h e_i), divided by 2h."
HALF = "You divided by h instead of 2h: x + h e_i and x - h e_i are 2h apart."
ZEROS = "Every estimate is 0: the step never reached x (two names for one array, or int steps)."
INT_RESULT = "Your array of estimates has an integer dtype (np.zeros(n, dtype=int)), so each "
INT_RESULT += "estimate stored in it is truncated to a whole number (0 below 1 in size). "
INT_RESULT += "Make it a float array: np.zeros(len(x)) or np.zeros_like(x)."
ALL = "Every entry is the same number: you moved every coordinate at once (x + h)."
ONE = "One number came back: you moved every coordinate at once, x + h. Move coordinate i only."
PILE = "Entry i moved coordinates 0 to i: the moved copies of x were never reset in the loop."
OWN = "Coordinate i moved by {} and the difference divided by twice that: a central "
OWN += "difference, but with a step of your own that depends on x. Use the h you are given, "
OWN += "the same for every coordinate: f(x + h e_i) - f(x - h e_i), over 2h."
FIXED = "Your estimate is the central difference of {step}, not of the h given (h = {h}): "
FIXED += "a step typed in or overwritten. Use the argument h itself for every coordinate."
AT_INT = "Your estimate is the central difference at x {how}, not at x: the moved copies "
AT_INT += "were built from integers ({code}). Keep x's float values: start each copy from "
AT_INT += "x.copy() and add h to coordinate i."
TRUNCATED = AT_INT.format(how="truncated to whole numbers", code="x.astype(int), int(x[i])")
ROUNDED = AT_INT.format(how="rounded to whole numbers", code="np.round(x), round(x[i])")
F32 = "Your moved copies of x are float32 (x.astype(np.float32), np.float32(...)): they keep "
F32 += "about 7 digits, so the differences lose most of theirs. Keep x's float64: x.copy()."
MISSED = "{entries} 0 and the others right: the loop never reached those coordinates."


def _read(value, probe, exercise, name):
    """The array returned, named as an integer one before its numbers are judged."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iub":
        raise Wrong(INT_RESULT, "integer_result")
    return one_tensor(value, probe, exercise, name)


EXERCISE = spec.Exercise(
    number="1.2",
    title="A central-difference gradient",
    stars=2,
    minutes=10,
    harness=Function(
        "`central_gradient`",
        arguments=lambda p: (p.f, p.x.copy(), p.h),
        numpy=True,
        read=_read,
        scalars=(spec.Mistake("perturbed_all", ONE, lambda p: p.whole),),
        forbid=("gradcheck",),
        names=("f", "x", "h"),
        nouns={"value": "your estimate"},
    ),
    probes=draw,
    reference=lambda p: p.exact,
    tolerance=lambda p, part: Tolerance(1e-9, 1e-9),
    mistakes=(
        spec.Mistake("forward_difference", FORWARD.format("h"), difference(STEP, NONE, over=1)),
        spec.Mistake("backward_difference", BACKWARD.format("h"), difference(NONE, STEP, over=1)),
        spec.Mistake("missing_half", HALF, lambda p: 2.0 * p.exact),
        spec.Mistake("forward_difference", FORWARD.format("2h"), difference(STEP, NONE)),
        spec.Mistake("backward_difference", BACKWARD.format("2h"), difference(NONE, STEP)),
        *[
            spec.Mistake("step_not_h", MOVED.format(by), difference(k, k))
            for by, k in MOVES.items()
        ],
        spec.Mistake("step_not_h", HALF_STEP, difference(HALVED, HALVED, over=1)),
        *[
            spec.Mistake(
                "own_step",
                OWN.format(by),
                own_step(k),
                means="a step of its own (fixed, or depending on x) instead of the h given",
            )
            for by, k in OWN_MOVES.items()
        ],
        spec.Pattern("own_step", FIXED, _fixed_step),
        spec.Mistake(
            "wrong_point",
            TRUNCATED,
            at_point(np.trunc),
            means="the estimate taken at another point than x (x truncated or rounded)",
        ),
        spec.Mistake("wrong_point", ROUNDED, at_point(np.round)),
        spec.Pattern("float32_not_float64", F32, _float32_copies),
        spec.Mistake("zeros", ZEROS, lambda p: np.zeros(p.x.size)),
        spec.Mistake("perturbed_all", ALL, lambda p: np.full(p.x.size, p.whole)),
        spec.Mistake("steps_accumulate", PILE, difference(PILED, PILED)),
        spec.Pattern("missed_coordinates", MISSED, _missed),
    ),
    describe={"value": "(f(x + h e_i) - f(x - h e_i)) / (2h) for every i"},
    claim="(f(x + h e_i) - f(x - h e_i)) / (2h), one coordinate at a time, computed as that "
    "formula to rounding for functions whose coordinates interact, h from 1e-3 to 1e-1",
)
central_gradient = EXERCISE.check
