"""Exercise 1.2: a central-difference gradient, one coordinate at a time."""

from __future__ import annotations

import numpy as np

from ...checking import Tolerance
from ...checking import Wrong
from ...checking import as_values
from ...checking import exercise
from ...checking import explain_difference
from ...checking import fresh_rng
from ...checking import matches
from ...checking import observed_call
from ...checking import partly_right
from ...checking import signed
from .shared import _shape_of

CENTRAL_TOL = Tolerance(rtol=1e-9, atol=1e-9)


def _test_functions(rng, n: int):
    """Three functions of a vector whose central differences have closed forms.

    Each is ``(name, f, exact(x, h))`` where ``exact`` is the exact value of
    (f(x + h e_i) - f(x - h e_i)) / (2h) for every i. The coordinates are coupled
    (through a . x), so moving them all at once or not putting one back shows.
    """
    a = signed(rng, n, 0.5, 2.0, decimals=2)
    c = signed(rng, n, 0.5, 2.0, decimals=2)

    def wave(x):
        return float(np.sin(np.dot(a, x)))

    def growth(x):
        return float(np.exp(0.5 * np.dot(a, x)))

    def cubic(x):
        x = np.asarray(x, dtype=np.float64)
        return float(np.sum(c * x**3) + np.dot(a, x) ** 2)

    return [
        ("sin(a . x)", wave, lambda x, h: np.cos(a @ x) * np.sin(a * h) / h),
        ("exp(a . x / 2)", growth, lambda x, h: np.exp(0.5 * (a @ x)) * np.sinh(0.5 * a * h) / h),
        ("sum(c x**3) + (a . x)**2", cubic, lambda x, h: c * (3 * x**2 + h**2) + 2.0 * (a @ x) * a),
    ]


def _one_at_a_time(f, x, h, rule):
    rows = np.eye(x.size)
    return np.array([rule(f, x, h * row, h) for row in rows])


def _not_restored(f, x, h):
    """What moving x[i] up and down in place, without putting it back, gives."""
    x = x.copy()
    result = np.zeros_like(x)
    for i in range(x.size):
        x[i] += h
        up = f(x)
        x[i] -= 2 * h
        result[i] = (up - f(x)) / (2 * h)
    return result


def _accumulated(f, x, h):
    """What two copies made once, before the loop, and never reset give."""
    above, below = x.copy(), x.copy()
    result = np.zeros_like(x)
    for i in range(x.size):
        above[i] += h
        below[i] -= h
        result[i] = (f(above) - f(below)) / (2 * h)
    return result


def _known_slips(f, x_values, h, expected):
    """The estimates of the usual slips, each computed the way the slip computes it."""
    n = x_values.size
    forward = _one_at_a_time(f, x_values, h, lambda f, x, s, h: (f(x + s) - f(x)) / h)
    backward = _one_at_a_time(f, x_values, h, lambda f, x, s, h: (f(x) - f(x - s)) / h)
    halfless = 2.0 * expected
    whole = np.full(n, (f(x_values + h) - f(x_values - h)) / (2 * h))
    known = [
        (
            "forward_difference",
            "That is the forward difference "
            "(f(x + h e_i) - f(x)) / h, whose error shrinks only like h. The "
            "central difference uses f(x + h e_i) and f(x - h e_i).",
            forward,
        ),
        (
            "backward_difference",
            "That is the backward difference "
            "(f(x) - f(x - h e_i)) / h. The central difference uses "
            "f(x + h e_i) and f(x - h e_i).",
            backward,
        ),
        (
            "perturbed_all",
            "One of your two points moves every coordinate: "
            "you used f(x + h e_i) - f(x - h), with all of x moved on the minus side. "
            "Move only coordinate i on both sides: x + h e_i and x - h e_i.",
            _one_at_a_time(f, x_values, h, lambda f, x, s, h: (f(x + s) - f(x - h)) / (2 * h)),
        ),
        (
            "perturbed_all",
            "One of your two points moves every coordinate: "
            "you used f(x + h) - f(x - h e_i), with all of x moved on the plus side. "
            "Move only coordinate i on both sides: x + h e_i and x - h e_i.",
            _one_at_a_time(f, x_values, h, lambda f, x, s, h: (f(x + h) - f(x - s)) / (2 * h)),
        ),
        (
            "missing_half",
            "You divided by h instead of 2h: x + h e_i and x - h e_i are 2h apart.",
            halfless,
        ),
        (
            "forward_difference",
            "You divided the one-sided difference "
            "f(x + h e_i) - f(x) by 2h. The central difference takes both "
            "neighbours: f(x + h e_i) - f(x - h e_i), over 2h.",
            forward / 2.0,
        ),
        (
            "backward_difference",
            "You divided the one-sided difference "
            "f(x) - f(x - h e_i) by 2h. The central difference takes both "
            "neighbours: f(x + h e_i) - f(x - h e_i), over 2h.",
            backward / 2.0,
        ),
        (
            "scale_factor",
            f"Your estimate is h**2 = {h * h:g} times the "
            f"answer: `/ 2 * h` divides by 2 and then multiplies by h. Write "
            f"`/ (2 * h)`.",
            expected * h * h,
        ),
        (
            "step_not_h",
            "Coordinate i was moved by h * x[i] (a relative "
            "step) but the difference was divided by 2h: the step you divide by "
            "must be the one you moved by. Move coordinate i by exactly h.",
            _one_at_a_time(
                f, x_values, h, lambda f, x, s, h: (f(x + s * x) - f(x - s * x)) / (2 * h)
            ),
        ),
        (
            "step_not_h",
            "Coordinate i was moved by h * |x[i]| but the "
            "difference was divided by 2h: the step you divide by must be the one "
            "you moved by. Move coordinate i by exactly h.",
            _one_at_a_time(
                f,
                x_values,
                h,
                lambda f, x, s, h: (f(x + s * np.abs(x)) - f(x - s * np.abs(x))) / (2 * h),
            ),
        ),
        *[
            (
                "step_not_h",
                f"Coordinate i was moved by {c:g} h but the "
                f"difference was divided by 2h: the step you divide by must be the "
                f"one you moved by. Move coordinate i by exactly h.",
                _one_at_a_time(
                    f, x_values, h, lambda f, x, s, h, c=c: (f(x + c * s) - f(x - c * s)) / (2 * h)
                ),
            )
            for c in (2.0, 0.5, 10.0, 0.1)
        ],
        (
            "step_not_h",
            "Coordinate i was moved by 1 (a unit vector e_i) but "
            "the difference was divided by 2h: scale the unit vector by h, "
            "x + h e_i and x - h e_i.",
            _one_at_a_time(
                f, x_values, h, lambda f, x, s, h: (f(x + s / h) - f(x - s / h)) / (2 * h)
            ),
        ),
        (
            "zeros",
            "Every estimate is 0: f was evaluated twice at the same "
            "point, so the step never reached x (two names for one array, "
            "or a step stored in an integer array, which rounds h to 0).",
            np.zeros(n),
        ),
    ]
    if n > 1:
        known.append(
            (
                "perturbed_all",
                "Every entry is the same number: you "
                "moved every coordinate at once (x + h). Move only "
                "coordinate i for entry i.",
                whole,
            )
        )
        known.append(
            (
                "mutated_input",
                "Coordinate i was moved in place and "
                "not put back, so the later coordinates were estimated "
                "at a shifted point. Work on copies of x.",
                _not_restored(f, x_values, h),
            )
        )
        known.append(
            (
                "steps_accumulate",
                "The steps pile up: entry i was "
                "estimated with coordinates 0 to i all moved, because the "
                "moved copies of x were made once, before the loop, and "
                "never reset. Make fresh copies (or a fresh step vector) "
                "for every i.",
                _accumulated(f, x_values, h),
            )
        )
    return known


def _closer_look(wrong: Wrong, got, expected, h) -> Wrong:
    """A verdict with no name yet (``other``, ``approximation``), named more closely: right
    in part, a constant factor, or close to the central difference without being it."""
    if wrong.mistake == "other":
        wrong = (
            partly_right(got, expected, CENTRAL_TOL.rtol, CENTRAL_TOL.atol, "your estimate")
            or wrong
        )
    ratio = float(np.sum(got * expected) / np.sum(expected * expected)) if np.any(expected) else 0.0
    if (
        wrong.mistake == "other"
        and abs(ratio - 1.0) > 0.05
        and matches(got, ratio * expected, 2e-2, 1e-6 * max(1.0, float(np.max(np.abs(got)))))
    ):
        wrong = Wrong(
            f"Your estimate is close to {ratio:.4g} times the central "
            f"difference: something multiplies the whole difference "
            f"(f squared or applied twice, an extra factor). Use f's "
            f"values as they are: (f(x + h e_i) - f(x - h e_i)) / (2h).",
            "scale_factor",
        )
    scale = max(1.0, float(np.max(np.abs(expected))))
    if wrong.mistake in ("other", "approximation") and matches(got, expected, 1e-2, 1e-6 * scale):
        wrong = Wrong(
            f"Your estimate is close to the central difference with "
            f"h = {h:g}, but not equal to it: the exercise asks for "
            f"exactly (f(x + h e_i) - f(x - h e_i)) / (2h) with the h "
            f"it passes. Did you move the coordinate by another step "
            f"(a relative step such as h * x[i], a fixed 1e-5), or "
            f"compute in float32?",
            "approximation",
        )
    return wrong


def _slope_along_diagonal_vanishes(f, x_values, h) -> bool:
    """Whether (f(x + h) - f(x - h)) / 2h, every coordinate moved at once, is 0 within
    the check's tolerance: at such a probe an answer that moves every coordinate and one
    whose step never reached x return the same zeros, so the other probes judge them."""
    whole = np.atleast_1d((f(x_values + h) - f(x_values - h)) / (2 * h))
    return matches(whole, np.zeros_like(whole), CENTRAL_TOL.rtol, CENTRAL_TOL.atol)


@exercise("1.2", "a central-difference gradient")
def central_gradient(answer):
    """The gradient of f: R^n -> R by central differences, one coordinate at a time.

    Probes, fresh on every call: vectors of length 1, 2-3 and 4-6 with values in
    [-2, 2] of both signs; three functions with coupled coordinates (sin(a . x),
    exp(a . x / 2), a cubic plus (a . x)**2) whose exact central differences are
    closed forms; h of 1e-1, 1e-2 and 1e-3, large enough that forward differences,
    moving every coordinate at once, or a coordinate not put back all show (a function
    whose slope along the diagonal vanishes at the drawn x is passed over, as it
    cannot tell those apart). The check also verifies that x is left unchanged.
    """
    rng = fresh_rng("1.2")
    sizes = [int(rng.integers(2, 4)), 1, int(rng.integers(4, 7))]
    steps = rng.permutation([1e-1, 1e-2, 1e-3])
    for n, h in zip(sizes, steps):
        x_values = np.round(rng.uniform(-2.0, 2.0, size=n), 3)
        for name, f, exact in _test_functions(rng, n):
            if n > 1 and _slope_along_diagonal_vanishes(f, x_values, h):
                continue  # moving all coordinates at once would look like a step of 0 here
            x = x_values.copy()
            value, _ = observed_call(answer, f, x, float(h))
            moved = not np.allclose(x, x_values, rtol=0.0, atol=1e-12)
            if _shape_of(value) == ():
                whole = (f(x_values + h) - f(x_values - h)) / (2 * h)
                got = as_values(value, shape=(), require_tensor=False)
                if n > 1 and matches(got, whole, 1e-9, 1e-12):
                    raise Wrong(
                        "One number came back: you moved every coordinate "
                        "at once, x + h, which is the slope along the "
                        "diagonal. Move one coordinate at a time and return "
                        "one estimate per coordinate.",
                        "perturbed_all",
                    )
                raise Wrong(
                    f"One number came back, but the gradient has one entry "
                    f"per coordinate of x: return an array of shape ({n},), "
                    f"entry i moving coordinate i only.",
                    "wrong_shape",
                )
            got = as_values(value, shape=(n,), require_tensor=False)
            expected = exact(x_values, h)
            right = matches(got, expected, CENTRAL_TOL.rtol, CENTRAL_TOL.atol)
            if moved:
                raise Wrong(
                    "Your function changed the array x it received"
                    + (
                        " (your estimates are right, but the caller's x is not what it was)"
                        if right
                        else ": a coordinate was moved by h and not put back, so the "
                        "later coordinates were estimated at a shifted point"
                    )
                    + ". Build the two points as new arrays, e.g. x + h * e "
                    "with e = np.eye(len(x))[i], or work on x.copy().",
                    "mutated_input",
                )
            if right:
                continue
            if n > 1 and np.ptp(got) == 0.0 and np.ptp(expected) > 0.0 and np.any(got):
                raise Wrong(
                    "Every entry of your estimate is the same number, so every "
                    "entry moved the same coordinates (all of them at once, "
                    "x + h, or always the same one). Entry i must move "
                    "coordinate i only: x + h e_i.",
                    "perturbed_all",
                )
            unset = (got == 0.0) & (expected != 0.0)
            if (
                n > 1
                and unset.any()
                and not unset.all()
                and matches(got[~unset], expected[~unset], CENTRAL_TOL.rtol, CENTRAL_TOL.atol)
            ):
                missing = [str(i) for i in np.flatnonzero(unset)]
                which = (
                    f"Entry {missing[0]} of your estimate is"
                    if len(missing) == 1
                    else f"Entries {', '.join(missing)} of your estimate are"
                )
                where = "that coordinate" if len(missing) == 1 else "those coordinates"
                raise Wrong(
                    f"{which} 0 and the others are right: the loop never "
                    f"reached {where}. Loop over every coordinate, range(len(x)).",
                    "missed_coordinates",
                )
            wrong = explain_difference(
                got,
                expected,
                rtol=CENTRAL_TOL.rtol,
                atol=CENTRAL_TOL.atol,
                known=_known_slips(f, x_values, h, expected),
                what="your estimate",
                summary=f"For f(x) = {name}, n = {n} and h = {h:g}, the central "
                f"difference (f(x + h e_i) - f(x - h e_i)) / (2h) differs.",
            )
            raise _closer_look(wrong, got, expected, h)
    return (
        "(f(x + h e_i) - f(x - h e_i)) / (2h), one coordinate at a time: exact to "
        "rounding for three functions with coupled coordinates, vectors of length "
        "1 to 6 and h from 1e-3 to 1e-1; x was left unchanged."
    )
