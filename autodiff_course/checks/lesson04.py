"""Checks for lesson 04, *Nested tapes and higher-order gradients*.

Every reference is a closed form evaluated in float64 NumPy (Newton steps, mixed
partials, the sigmoid's slope, Hessian-vector products, row norms), independent
of the nested tapes, custom gradients and norms the exercises ask for. The method
an exercise demands is observed while the answer runs (nested tapes, no
``tape.jacobian``, no forward mode where reverse over reverse is asked, a
``@tf.custom_gradient`` rule that really produced the gradient). Probes are drawn
fresh on every call, in float32 and float64; float64 probes are judged to float64
precision, so float32 shortcuts and finite differences fail. A ``None`` is
explained from what the tapes and the answer's operations did (inner gradient
after the outer block, outer tape not watching, an unwatched tensor, a result
computed outside the block, a cut path), also when ``unconnected_gradients=ZERO``
or the answer itself turned it into zeros. Where the tapes computed the right
derivatives and only the final formula is wrong, the hint says so.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..checking import (
    Tolerance, Wrong, as_values, close_points, describe_difference, exercise,
    explain_difference, explain_missing, first_missing, forbid_jacobian, fresh_rng,
    generic_mistake, learner_code, matches, mistakes, none_hint, points, record_answer,
    require_custom_backward_ran, require_nested, run_answer, signed, tolerance_for, trace,
    upstream, why_none,
)
from ..checking.observing import MethodLog
from ..log1pexp import reference_sigmoid as _sigmoid

mistakes.register({
    "newton_uphill": "x + f'/f'': a Newton step with the wrong sign",
    "newton_ratio_inverted": "x - f''/f' where x - f'/f'' belongs",
    "newton_step_only": "the step f'/f'' returned instead of the new point x - f'/f''",
    "newton_root_finding": "x - f/f' (Newton's root-finding step) where x - f'/f'' belongs",
    "gradient_descent_step": "x - f'(x): the second derivative left out",
    "first_not_second": "a first derivative where a second derivative belongs",
    "second_not_newton": "the second derivative returned instead of the Newton step",
    "product_of_partials": "dz/dx * dz/dy where the derivative of dz/dx with respect to y belongs",
    "structural_none": "None where the derivative is structurally zero (zeros were asked for)",
    "slope_as_value": "sigmoid's slope returned as the forward value",
    "sigmoid_cancellation": "s * (1 - s): 1 - sigmoid(x) cancels on the positive tail",
    "exp_overflow": "a slope written with exp, which overflows on a tail",
    "softplus_slope": "upstream * sigmoid(x), the slope of softplus, where sigmoid's slope belongs",
    "tail_inaccurate": "right near zero, inaccurate on one tail",
    "wrong_combination": "the right derivatives, combined into the wrong formula",
    "square_of_sum": "the square of a sum where the sum of squares belongs",
    "threshold_too_large": "a tf.where threshold that zeroes small nonzero rows",
    "other_norm": "another norm (the largest entry, ...) where the Euclidean norm belongs",
    "custom_rule_bypassed": "part of the gradient came from ops outside the custom rule",
    "forward_over_reverse": "forward over reverse where reverse over reverse is asked for",
    "returned_hessian": "the Hessian matrix where the Hessian-vector product belongs",
    "directional_derivative": "the number v . grad f where the vector H @ v belongs",
    "hessian_row_sums": "H @ ones (times v) where H @ v belongs",
    "squared_norm": "the squared norm where the norm belongs",
    "l1_norm": "the sum of absolute values where the Euclidean norm belongs",
    "whole_tensor_norm": "one norm of the whole batch where one norm per row belongs",
    "eps_too_large": "an epsilon big enough to change the norm of small rows",
    "eps_outside_sqrt": "the epsilon added after the square root, where it protects nothing",
    "nan_gradient_at_zero": "a norm whose gradient is nan at a zero row",
    "where_without_safe_branch": "one tf.where around an op whose gradient is nan at 0",
    "gradient_too_large": "a finite gradient at zero longer than any slope of a norm",
})

DTYPES = ("float32", "float64")


# -- plumbing shared by the five checks ---------------------------------------------

def _tensor(values, dtype: str):
    import tensorflow as tf

    return tf.constant(values, dtype=getattr(tf, dtype))


def _tolerance(dtype: str) -> Tolerance:
    return tolerance_for(dtype)


def _call(answer, *args, name: str):
    """``(value, run, wrong)``: the answer's result, everything it did, its error.

    :func:`run_answer` keeps what the answer did (its tapes, and on TensorFlow's op
    ids every operation and conversion), so that a None can be explained from it.
    """
    run = run_answer(answer, *args, name=name)
    return run.value, run, run.raised


def _source_name(source, names) -> str:
    """The name ("x", "y", "v") the exercise gives the source of a missing gradient."""
    for tensor, name in names:
        if source is tensor:
            return name
    return "x"


NESTED_CAUSES = ("gradient_outside_tape", "outer_not_watching")


def _cause(run, call, source, probe):
    """``(code, hint)``: why ``call`` found no path to ``source``.

    The two causes that only nested tapes have (the inner gradient computed after
    the outer block; an outer tape that does not watch the source) are read from the
    whole method log by :func:`why_none`; everything else comes from
    :func:`explain_missing`, which settles it from what the answer's operations did.
    """
    calls = []
    for other in run.log.calls:
        if other is call:
            other = dataclasses.replace(other, results=[
                None if item is source else result
                for item, result in zip(other.sources, other.results or [])])
        calls.append(other)
    explained = why_none(dataclasses.replace(run.log, calls=calls), probe=probe)
    if explained is not None and explained[0] in NESTED_CAUSES:
        return explained
    return explain_missing(run, call, source, probe=probe)


def _missing(run, names=(), between: str = "", hidden: bool = False):
    """``(code, hint)`` for a None the tapes saw (with ``hidden``, also for zeros that
    unconnected_gradients=ZERO put in its place), or None when there was none.

    The cause comes from :func:`explain_missing`; this lesson adds its own words:
    a target computed after the outer block names what lies between the two
    gradients (``between``); when the outer tape does not watch a source that the
    inner tape never watched either (the mixed partial's y), the hint says only
    what is true of that source; and a None from an answer that nests no tapes at
    all is the missing nesting (``not_nested``).
    """
    found = first_missing(run.log, hidden=hidden)
    if found is None:
        return None
    call, source, was_hidden = found
    probe = _source_name(source, names)
    code, hint = _cause(run, call, source, probe)
    if code == "outer_not_watching":  # in this lesson's words, true whatever the inner tape watched
        hint = (f"The outer tape returned None for {probe}: it does not watch {probe}, so it "
                f"recorded nothing about how the inner gradient depends on {probe}. Call "
                f"outer.watch({probe}) at the start of the outer block.")
    if code == "computed_outside_tape" and between:
        hint = hint.rstrip(".") + between + "."
    if code in ("watched_after_use", "no_gradient") and not run.log.nested:
        try:
            require_nested(run.log)
        except Wrong as wrong:
            code, hint = wrong.mistake, wrong.hint
    if was_hidden:
        return "zeros_hide_none", (
            "unconnected_gradients=ZERO turned a None into zeros, so your result is wrong "
            "without any warning. Without that option the gradient is None, and here is "
            "why: " + hint)
    return code, hint


def _explain_none_or_error(run, value, wrong, *, names=(), name="Your function",
                           between=""):
    """Explain a None result or an error caused by one; otherwise report what came back."""
    explained = _missing(run, names, between)
    if explained is not None:
        raise Wrong(explained[1], explained[0])
    if wrong is not None:
        raise wrong
    as_values(value, name=name)  # None: "did you forget return?"


def _judge(got, expected, tol: Tolerance, *, summary, run=None, names=(), at=None,
           known=(), what="your result", atol=None, between="", before_generic=None,
           computed=None, batch=None) -> None:
    """Accept ``got``, or name the mistake.

    In this order: a ``None`` that ``unconnected_gradients=ZERO`` hid, one of the
    exercise's own mistakes, a method the exercise demands (nested tapes, when
    ``run`` is given), then the generic patterns and a point that differs.
    """
    atol = tol.atol if atol is None else atol
    if matches(got, expected, tol.rtol, atol):
        return
    log = None if run is None else run.log
    if run is not None and log.used_zero_option:
        hidden = _missing(run, names, between, hidden=True)
        if hidden is not None:
            raise Wrong(hidden[1], hidden[0])
    if run is not None:
        if np.all(got == 0.0) and np.any(expected != 0.0):
            replaced = _missing(run, names, between)
            if replaced is not None:
                raise Wrong("Your function returned zeros where a tape returned None, so "
                            "the zeros hide a mistake. " + replaced[1], replaced[0])
    for code, hint, values in known:
        if matches(got, values, tol.rtol, atol):
            raise Wrong(hint, code)
    # The same mistakes with a little rounding noise on top (a tail lost in float32).
    scale = float(np.max(np.abs(expected))) if np.size(expected) else 1.0
    for code, hint, values in known:
        if matches(got, values, max(tol.rtol, 1e-3), max(atol, 1e-6 * scale)):
            raise Wrong(hint, code)
    if log is not None:
        require_nested(log)
    generic = generic_mistake(got, expected, rtol=tol.rtol, atol=atol, what=what,
                              batch=batch)
    if generic is not None:
        code, hint = generic
        raise Wrong(f"{hint} {describe_difference(got, expected, at, tol.rtol, atol)}", code)
    if before_generic is not None:
        before_generic()
    if log is not None and computed is not None:
        _right_parts_wrong_whole(log, got, computed, tol, atol, at)
    raise explain_difference(got, expected, summary=summary, at=at, rtol=tol.rtol,
                             atol=atol, what=what)


def _results(log: MethodLog):
    """Every array a tape's gradient call returned, as float64."""
    found = []
    for call in log.calls:
        for result in call.results or ():
            try:
                found.append(np.asarray(result, dtype=np.float64))
            except Exception:  # noqa: BLE001 - an IndexedSlices or the like: skip it
                continue
    return found


def _right_parts_wrong_whole(log: MethodLog, got, computed, tol: Tolerance, atol, at):
    """The tapes computed every part right; only what was done with them is wrong.

    ``computed`` is ``(lead, [(name, reference values)], expected)``: when every
    reference appears among the tapes' results, the hint opens with ``lead`` and
    quotes the parts, the answer and the returned value at one point that differs.
    """
    lead, references, expected = computed
    results = _results(log)
    loose = max(tol.rtol, 1e-9) * 10
    for _, reference in references:
        if not any(result.shape == np.shape(reference)
                   and matches(result, reference, loose, atol) for result in results):
            return
    got = np.asarray(got, dtype=np.float64)
    index = np.unravel_index(int(np.argmax(~close_points(got, expected, tol.rtol, atol))),
                             got.shape) if got.ndim else ()
    where = f"at index {list(index)}" if got.ndim > 1 else f"at index {index[0]}" \
        if got.ndim else "here"
    if at is not None and np.shape(at) == got.shape:
        where = f"at x = {np.asarray(at)[index]:.6g}"
    values = ", ".join(f"{name} = {np.asarray(reference)[index]:.6g}"
                       for name, reference in references)
    raise Wrong(f"{lead} For example {where}: {values}, so the answer is "
                f"{np.asarray(expected)[index]:.6g}, but your function returned "
                f"{got[index]:.6g}.", "wrong_combination")


def _shape_of(value):
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(shape)
    except Exception:  # noqa: BLE001 - an exotic object: as_values names it
        return None


# --------------------------------------------------------------------------
# Exercise 4.1: one Newton step, from one pair of nested tapes

@dataclasses.dataclass
class _NewtonCase:
    label: str
    function: object
    x: np.ndarray
    f: np.ndarray
    d1: np.ndarray
    d2: np.ndarray


def _newton_cases(rng):
    """x**4 + x**2, softplus and cosh at fresh points, float64 closed forms."""
    import tensorflow as tf

    n = int(rng.integers(3, 7))
    cosh_x = signed(rng, (n,), 0.5, 2.5)
    softplus_x = np.round(rng.uniform(-3.0, 3.0, size=(2, int(rng.integers(2, 5)))), 3)
    quartic_x = signed(rng, (int(rng.integers(3, 7)),), 0.5, 2.0)
    return [  # cosh last: there f'' = f, so x - f''/f' and x - f/f' coincide
        _NewtonCase("x**4 + x**2", lambda x: x**4 + x**2, quartic_x,
                    quartic_x**4 + quartic_x**2, 4 * quartic_x**3 + 2 * quartic_x,
                    12 * quartic_x**2 + 2.0),
        _NewtonCase("softplus(x)", tf.nn.softplus, softplus_x,
                    np.logaddexp(0.0, softplus_x), _sigmoid(softplus_x),
                    _sigmoid(softplus_x) * _sigmoid(-softplus_x)),
        _NewtonCase("cosh(x)", tf.cosh, cosh_x, np.cosh(cosh_x), np.sinh(cosh_x),
                    np.cosh(cosh_x)),
    ]


def _newton_mistakes(case):
    x, f, d1, d2 = case.x, case.f, case.d1, case.d2
    return [
        ("newton_uphill", "You computed x + f'(x)/f''(x): the step goes the wrong way. "
         "Newton's method subtracts it: x - f'(x)/f''(x).", x + d1 / d2),
        ("newton_ratio_inverted", "You divided the wrong way round: x - f''(x)/f'(x). The "
         "step is the slope divided by the curvature, f'(x)/f''(x).", x - d2 / d1),
        ("newton_step_only", "You returned the step f'(x)/f''(x) itself; the exercise asks "
         "for the new point, x minus that step.", d1 / d2),
        ("newton_root_finding", "You returned x - f(x)/f'(x): that is Newton's method for "
         "a root of f. To minimise f, apply it to f': x - f'(x)/f''(x).", x - f / d1),
        ("gradient_descent_step", "You returned x - f'(x), a gradient-descent step. Newton "
         "divides the slope by the second derivative: x - f'(x)/f''(x).", x - d1),
        ("second_not_newton", "You returned f''(x), the second derivative itself: use it "
         "to take the step x - f'(x)/f''(x).", d2),
        ("first_not_second", "You returned f'(x), the first derivative: the step also "
         "needs the second derivative, from the outer tape.", d1),
    ]


@exercise("4.1", "one Newton step with nested tapes")
def newton_step(answer):
    """``newton_step(f, x)`` = x - f'(x)/f''(x) element-wise, from nested tapes.

    Method (observed): nested tapes (an inner gradient computed while an outer tape
    records, then differentiated by the outer tape); no ``tape.jacobian``.
    Probes, fresh on every call, each in float32 and in float64 (dtype in = dtype
    out; float64 judged to 1e-11 relative, so finite differences and float32
    arithmetic fail): ``cosh`` on a vector of 3 to 6 points with 0.5 <= |x| <= 2.5
    (both signs), ``tf.nn.softplus`` on a (2, m) matrix in [-3, 3], and
    x**4 + x**2 on a vector with 0.5 <= |x| <= 2. References: float64 closed forms.
    A None (or the error it causes) is explained from what the tapes saw.
    """
    rng = fresh_rng("4.1")
    for case in _newton_cases(rng):
        for dtype in DTYPES:
            x = _tensor(case.x, dtype)
            value, run, wrong = _call(answer, case.function, x, name="`newton_step`")
            log = run.log
            if wrong is not None:
                forbid_jacobian(log, _JACOBIAN_HINT_41)
            if value is None or wrong is not None:
                _explain_none_or_error(run, value, wrong, name="`newton_step`")
            forbid_jacobian(log, _JACOBIAN_HINT_41)
            got = as_values(value, name="`newton_step`", shape=tuple(x.shape), dtype=x.dtype)
            expected = case.x - case.d1 / case.d2
            tol = _tolerance(dtype)
            if matches(got, expected, tol.rtol, tol.atol):
                require_nested(log)
                continue
            _judge(got, expected, tol, run=run, at=case.x, known=_newton_mistakes(case),
                   before_generic=lambda: _outer_repeated(
                       log, case.d1, case.x, "f(x)", "f'(x)", "the inner tape's result, "
                       "f'(x), to give f''(x)"),
                   computed=("Your tapes computed f'(x) and f''(x) correctly, but the "
                             "formula that combines them is not Newton's step, "
                             "x - f'(x)/f''(x).", [("f'", case.d1), ("f''", case.d2)],
                             expected),
                   summary=f"Not x - f'(x)/f''(x) for f(x) = {case.label} in {dtype}.",
                   what="your step")
    return ("Nested tapes gave f' and f'' of functions you had not seen, in float32 and "
            "to float64 precision, on vectors and matrices: x - f'/f'' is right.")


_JACOBIAN_HINT_41 = (
    "for an element-wise f, the outer gradient of the vector f'(x) already is the "
    "vector of second derivatives (section 1). tape.jacobian builds the whole matrix, "
    "one backward pass per element, only to keep its diagonal, and its shape is "
    "x.shape + x.shape, not x.shape.")


# --------------------------------------------------------------------------
# Exercise 4.2: a mixed partial derivative, zeros where it is structurally zero

def _surface(x, y):
    import tensorflow as tf

    return x**2 * y**3 + tf.sin(x * y)


def _surface_parts(x, y):
    xy = x * y
    return {
        "f": x**2 * y**3 + np.sin(xy),
        "fx": 2 * x * y**3 + y * np.cos(xy),
        "fy": 3 * x**2 * y**2 + x * np.cos(xy),
        "fxx": 2 * y**3 - y**2 * np.sin(xy),
        "fyy": 6 * x**2 * y - x**2 * np.sin(xy),
        "fxy": 6 * x * y**2 + np.cos(xy) - xy * np.sin(xy),
        "scale": np.abs(6 * x * y**2) + 1.0 + np.abs(xy),
    }


def _growth(x, y):
    import tensorflow as tf

    return x * tf.exp(x * y)


def _growth_parts(x, y):
    e = np.exp(x * y)
    return {
        "f": x * e,
        "fx": (1 + x * y) * e,
        "fy": x**2 * e,
        "fxx": y * e * (2 + x * y),
        "fyy": x**3 * e,
        "fxy": x * e * (2 + x * y),
        "scale": np.abs(x) * e * (2 + np.abs(x * y)),
    }


def _separable(x, y):
    import tensorflow as tf

    return x**2 + tf.cos(y)


def _separable_parts(x, y):
    return {
        "f": x**2 + np.cos(y), "fx": 2 * x, "fy": -np.sin(y), "fxx": 2 + 0 * x,
        "fyy": -np.cos(y), "fxy": 0 * x, "scale": 1 + 0 * x,
    }


def _mixed_mistakes(parts):
    return [
        ("wrong_source", "You returned d2z/dx2: both tapes differentiated with respect "
         "to x. The outer one must differentiate dz/dx with respect to y.", parts["fxx"]),
        ("wrong_source", "You returned d2z/dy2: both tapes differentiated with respect "
         "to y. Differentiate with respect to x on one tape and y on the other.",
         parts["fyy"]),
        ("first_not_second", "You returned dz/dx, a first derivative: the outer tape "
         "must still differentiate it with respect to y.", parts["fx"]),
        ("first_not_second", "You returned dz/dy, a first derivative: differentiate "
         "dz/dx with respect to y instead.", parts["fy"]),
        ("value_not_derivative", "You returned f(x, y) itself.", parts["f"]),
        ("product_of_partials", "You multiplied the two first derivatives, dz/dx * dz/dy. "
         "The mixed partial is the derivative of dz/dx with respect to y: an outer tape "
         "that records the inner gradient.", parts["fx"] * parts["fy"]),
    ]


_STRUCTURAL_NONE_HINT = (
    "Right for the functions whose x-slope depends on y, but for f = x**2 + cos(y) "
    "your function returned None (or failed on it). That None is no mistake of the "
    "tapes: dz/dx = 2x does not involve y at all, so the outer tape has no path to y. "
    "The exercise asks for zeros there: pass "
    "unconnected_gradients=tf.UnconnectedGradients.ZERO to the outer gradient.")


@exercise("4.2", "a mixed partial derivative with nested tapes")
def mixed_partial(answer):
    """``mixed_partial(f, x, y)`` = d2f/(dx dy) element-wise, zeros where it is zero.

    Method (observed): nested tapes. Probes, fresh on every call: x**2 y**3 + sin(xy)
    in float32 on a vector and in float64 on a (2, m) matrix; x e^(xy) in float32 on
    a (2, m) matrix and in float64 on a vector (|x|, |y| between 0.3 and 1.5, both
    signs); then x**2 + cos(y), whose mixed partial is structurally zero, in float32
    on a vector and in float64 on a matrix (zeros of the input's dtype, not None). dtype in = dtype out; float64 judged to 1e-11 of the
    size of the terms. A None (also one hidden by ``unconnected_gradients=ZERO``) is
    explained from what the tapes saw.
    """
    rng = fresh_rng("4.2")
    n, m = int(rng.integers(3, 7)), int(rng.integers(2, 5))
    cases = [
        ("x**2 * y**3 + sin(x*y)", _surface, _surface_parts, "float32", (n,)),
        ("x**2 * y**3 + sin(x*y)", _surface, _surface_parts, "float64", (2, m)),
        ("x * exp(x*y)", _growth, _growth_parts, "float32", (2, m)),
        ("x * exp(x*y)", _growth, _growth_parts, "float64", (n,)),
        ("x**2 + cos(y)", _separable, _separable_parts, "float32", (n,)),
        ("x**2 + cos(y)", _separable, _separable_parts, "float64", (2, m)),
    ]
    for label, function, parts_of, dtype, shape in cases:
        x_values, y_values = signed(rng, shape, 0.3, 1.5), signed(rng, shape, 0.3, 1.5)
        parts = parts_of(x_values, y_values)
        structural = label == "x**2 + cos(y)"
        x, y = _tensor(x_values, dtype), _tensor(y_values, dtype)
        value, run, wrong = _call(answer, function, x, y, name="`mixed_partial`")
        log = run.log
        forbid_jacobian(log, "for element-wise functions the outer gradient of dz/dx "
                        "already is the element-by-element mixed partial; a Jacobian "
                        "forms a whole matrix only to keep its diagonal, and its shape is "
                        "x.shape + y.shape.")
        if structural and (value is None or wrong is not None):
            raise Wrong(_STRUCTURAL_NONE_HINT, "structural_none")
        if value is None or wrong is not None:
            _explain_none_or_error(run, value, wrong, names=((x, "x"), (y, "y")),
                                   name="`mixed_partial`")
        got = as_values(value, name="`mixed_partial`", shape=shape, dtype=x.dtype)
        tol = _tolerance(dtype)
        atol = tol.rtol * float(np.max(parts["scale"]))
        if matches(got, parts["fxy"], tol.rtol, atol):
            require_nested(log)
            continue
        _judge(got, parts["fxy"], tol, run=run, names=((x, "x"), (y, "y")), atol=atol,
               at=x_values,
               known=_mixed_mistakes(parts), batch=int(np.prod(shape)),
               before_generic=lambda: _outer_repeated(
                   log, parts["fy"], x_values, "z", "dz/dy", "the inner tape's result, "
                   "dz/dx, with respect to y"),
               computed=("Your outer tape computed the mixed partial correctly, but your "
                         "function changed it before returning it.",
                         [("d2z/(dx dy)", parts["fxy"])], parts["fxy"]),
               summary=f"Not d2z/(dx dy) for z = {label} in {dtype}.",
               what="your mixed partial")
    return ("Nested tapes gave d2z/(dx dy) for functions you had not seen, in float32 and "
            "to float64 precision, and zeros (not None) where the x-slope does not "
            "depend on y.")


# --------------------------------------------------------------------------
# Exercise 4.3: a sigmoid whose gradient keeps its relative accuracy

SIGMOID_BOUNDARIES = (-100.0, -50.0, -20.0, -15.0, -10.0, -2.0, 0.0, 2.0, 10.0, 15.0, 20.0,
                      50.0, 100.0)


def _sigmoid_slope(x):
    """sigmoid(x) * sigmoid(-x) in float64, without cancellation or overflow."""
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, x) - np.logaddexp(0.0, -x))


def _formula_in_dtype(kind: str, x, dy):
    """What a common wrong backward formula gives in the probe's own dtype."""
    import tensorflow as tf

    if kind in ("cancellation", "cancellation_mirrored"):
        s = tf.sigmoid(x if kind == "cancellation" else -x)
        return (dy * s * (1 - s)).numpy().astype(np.float64)
    e = tf.exp(-x if kind == "exp" else x)
    return (dy * e / (1 + e) ** 2).numpy().astype(np.float64)


_EXP_HINT = (
    "Right near 0, wrong on a tail: your slope gives what e^-x / (1 + e^-x)**2 gives in "
    "this dtype, and a slope built from exp loses the small value on a tail (in float32, "
    "(1 + e^50)**2 passes the largest number, 3.4e38, and the square of a number below about "
    "1e-19 is flushed to 0). Express the slope with sigmoids only: "
    "sigmoid(x) * sigmoid(-x).")


@exercise("4.3", "a sigmoid whose gradient stays accurate")
def smooth_sigmoid(answer):
    """``smooth_sigmoid(x)``: sigmoid forward; ``upstream * s(x) * s(-x)`` backward.

    Method (observed): a ``@tf.custom_gradient`` function whose ``grad_fn`` ran and
    produced the gradient the tape returned. Probes, fresh on every call: the
    boundaries ±10, ±15, ±20 (where 1 - sigmoid(x) cancels in float32), ±50 (where
    exp(50) squared overflows float32), ±100 in float32 only (past the overflow of exp,
    where the true slope is below float32's smallest normal: 0 is accepted, nan is not),
    ±2 and 0, plus 8 points in [-50, 50]; in float32
    as a vector and in float64 as a (2, m) matrix (dtype in = dtype out), with an
    upstream gradient of both signs that is never 1. Value and gradient are judged
    point by point in relative terms (float64 to 1e-11) against float64 closed forms.
    """
    rng = fresh_rng("4.3")
    for dtype, reshape in (("float32", None), ("float64", 2)):
        boundaries = SIGMOID_BOUNDARIES if dtype == "float32" else SIGMOID_BOUNDARIES[1:-1]
        x_values = points(rng, -50.0, 50.0, 8, include=boundaries)
        if reshape and x_values.size % reshape:  # drop a drawn point, keep the boundaries
            drawn = np.flatnonzero(~np.isin(x_values, boundaries))
            x_values = np.delete(x_values, drawn[-1])
        if reshape:
            x_values = x_values.reshape(reshape, -1)
        dy_values = upstream(rng, x_values.shape)
        x, dy = _tensor(x_values, dtype), _tensor(dy_values, dtype)
        tol = _tolerance(dtype)
        try:
            recorded = record_answer(answer, x, name="`smooth_sigmoid`")
        except Wrong as wrong:
            raise wrong from None
        value = as_values(recorded.value, name="`smooth_sigmoid`", shape=x_values.shape,
                          dtype=x.dtype)
        _judge(value, _sigmoid(x_values), tol, at=x_values, what="your forward value",
               summary="The forward value should be sigmoid(x) = 1/(1 + e^-x).",
               known=[("slope_as_value", "Your function returns sigmoid's slope "
                       "s(x) * s(-x) as its value. The forward value is sigmoid(x) "
                       "itself; the slope belongs in grad_fn.", _sigmoid_slope(x_values)),
                      ("wrong_value", "Your forward value is sigmoid(-x) (or 1 - sigmoid(x)): "
                       "the sign of x is flipped. The forward value is sigmoid(x).",
                       _sigmoid(-x_values)),
                      ("wrong_value", "Your forward value is softplus(x) = log(1 + e^x), "
                       "the function whose slope is the sigmoid. This exercise's function "
                       "is the sigmoid itself: return tf.sigmoid(x).",
                       np.logaddexp(0.0, x_values)),
                      ("wrong_value", "Your forward value is the input itself: return "
                       "sigmoid(x) as the value, and put the slope in grad_fn.", x_values)],
               before_generic=lambda: _wrong_on_one_tail(
                   value, _sigmoid(x_values), x_values, tol, what="value"))
        try:
            gradient = recorded.gradient(dy, label="Your grad_fn")[0]
        except Wrong as wrong:
            raise wrong from None
        require_custom_backward_ran(recorded.log)
        if gradient is None:
            raise Wrong("Your grad_fn returned None: it must return a tensor shaped like x, "
                        "upstream times the local derivative.", "returned_none")
        got = as_values(gradient, name="Your grad_fn", shape=x_values.shape, dtype=x.dtype)
        _require_rule_produced(recorded.log, got)
        slope = _sigmoid_slope(x_values)
        expected = dy_values * slope
        if matches(got, expected, tol.rtol, tol.atol):
            continue
        loose = 1e-3
        for kind, code, hint in (
                ("cancellation", "sigmoid_cancellation",
                 "Right near 0, wrong on the positive tail: s * (1 - s) cancels once "
                 "s = sigmoid(x) rounds to nearly 1 (in float32 from about x = 10; it is "
                 "exactly 0 by x = 17). That is also what TensorFlow's own sigmoid "
                 "gradient computes. Write 1 - sigmoid(x) as sigmoid(-x)."),
                ("cancellation_mirrored", "sigmoid_cancellation",
                 "Right near 0, wrong on the negative tail: s * (1 - s) with s = "
                 "sigmoid(-x) cancels once s rounds to nearly 1, that is for large "
                 "negative x. A subtraction 1 - sigmoid(...) loses the small number on "
                 "one tail or the other; the product sigmoid(x) * sigmoid(-x) has none."),
                ("exp", "exp_overflow", _EXP_HINT),
                ("exp_positive", "exp_overflow", _EXP_HINT)):
            simulated = _formula_in_dtype(kind, x, dy)
            same_nan = np.array_equal(np.isnan(got), np.isnan(simulated))
            finite = ~np.isnan(simulated)
            if same_nan and matches(got[finite], simulated[finite], loose, 1e-30) \
                    and not matches(simulated, expected, loose, 1e-30):
                raise Wrong(hint + f" (Checked in {dtype}.)", code)
        _judge(got, expected, tol, at=x_values, what="your gradient",
               summary=f"Not upstream * sigmoid(x) * sigmoid(-x) in {dtype}.", known=[
                   ("forgot_upstream", "Your gradient ignores the upstream gradient: "
                    "grad_fn must return upstream * (local derivative), and the check "
                    "passes an upstream that is not 1.", slope),
                   ("softplus_slope", "Your grad_fn returns upstream * sigmoid(x), the "
                    "slope of softplus. The slope of sigmoid itself is "
                    "sigmoid(x) * sigmoid(-x).", dy_values * _sigmoid(x_values)),
                   ("forgot_local_derivative", "Your grad_fn returns the upstream gradient "
                    "unchanged: multiply it by the local derivative, "
                    "sigmoid(x) * sigmoid(-x).", dy_values),
                   ("reduced_dy", "Your grad_fn reduces the upstream gradient to one number "
                    "(tf.reduce_sum or tf.reduce_mean): each element's gradient is its own "
                    "upstream times its own slope, element by element.",
                    np.sum(dy_values) * slope),
                   ("reduced_dy", "Your grad_fn reduces the upstream gradient to one number "
                    "(tf.reduce_mean or tf.reduce_sum): each element's gradient is its own "
                    "upstream times its own slope, element by element.",
                    np.mean(dy_values) * slope),
                   ("wrong_local_derivative", "Your grad_fn multiplies by sigmoid(x) twice: the "
                    "second factor of the slope is sigmoid(-x), not sigmoid(x).",
                    dy_values * _sigmoid(x_values) ** 2),
               ], before_generic=lambda: _explain_slope(recorded, got, expected, x, x_values,
                                                        dy_values, slope, tol, rng))
    return ("Your @tf.custom_gradient rule produced the gradient, with the upstream "
            "applied, accurate in relative terms on both tails (|x| up to 50, and finite "
            "at ±100) in float32 and to float64 precision.")


def _explain_slope(recorded, got, expected, x, x_values, dy_values, slope, tol, rng):
    """After the known mistakes: a wrong tail, or an upstream applied right to a wrong slope."""
    _wrong_on_one_tail(got, expected, x_values, tol)
    other = upstream(rng, np.shape(dy_values))
    try:
        again = recorded.gradient(_tensor(other, x.dtype.name), label="Your grad_fn")[0]
        again = as_values(again, name="Your grad_fn", shape=np.shape(got))
    except Wrong:
        return
    local = got / dy_values
    try:
        doubled = recorded.gradient(_tensor(2.0 * dy_values, x.dtype.name),
                                    label="Your grad_fn")[0]
        doubled = as_values(doubled, name="Your grad_fn", shape=np.shape(got))
    except Wrong:
        return
    try:
        negated = recorded.gradient(_tensor(-dy_values, x.dtype.name), label="Your grad_fn")[0]
        negated = as_values(negated, name="Your grad_fn", shape=np.shape(got))
    except Wrong:
        return
    if np.all(np.isfinite(got)) and not (matches(doubled, 2.0 * got, 1e-5, 1e-30)
                                         and matches(negated, -got, 1e-5, 1e-30)):
        raise Wrong("Your grad_fn does not scale with the upstream gradient: with an "
                    "upstream twice as large, or of the opposite sign, its result is not "
                    "twice as large, or of the opposite sign. It must return upstream times "
                    "the local derivative, with the upstream as a plain factor (not squared, "
                    "not added, not inside tf.abs).", "upstream_not_linear")
    if not (np.all(np.isfinite(local)) and matches(again / other, local, 1e-5, 1e-30)):
        return
    index = np.unravel_index(int(np.argmax(~close_points(got, expected, tol.rtol, tol.atol))),
                             np.shape(got))
    raise Wrong(f"Your grad_fn multiplies the upstream gradient, element by element, by "
                f"one local factor per x, as it should, but that factor is not sigmoid's "
                f"slope: at x = {x_values[index]:.6g} it is {local[index]:.6g}, and "
                f"sigmoid(x) * sigmoid(-x) is {slope[index]:.6g}.", "wrong_local_derivative")


def _wrong_on_one_tail(got, expected, x_values, tol: Tolerance, what="") -> None:
    """Right for |x| <= 5 and wrong only for x >= 10, or only for x <= -10: say which."""
    close = np.asarray(close_points(got, expected, tol.rtol, tol.atol))
    x_values = np.asarray(x_values)
    if not np.all(close[np.abs(x_values) <= 5.0]):
        return
    wrong_high = not np.all(close[x_values >= 10.0])
    wrong_low = not np.all(close[x_values <= -10.0])
    if not (wrong_high or wrong_low):
        return
    if wrong_high and wrong_low:
        where = x_values[~close][0]
        raise Wrong(f"Right near 0, wrong on both tails (for example at x = {where:.6g}): "
                    f"your formula is right on paper but loses the small values in "
                    f"floating point, typically through a subtraction that cancels "
                    f"(1 - sigmoid, 1 - tanh**2) or an exp that overflows. "
                    f"{'Return tf.sigmoid(x).' if what == 'value' else 'The product sigmoid(x) * sigmoid(-x) has neither.'}",
                    "tail_inaccurate")
    side, sign = ("positive", "") if wrong_high else ("negative", "-")
    where = x_values[~close][0]
    if what == "value":
        raise Wrong(f"Your forward value is right near 0 but wrong on the {side} tail (for "
                    f"example at x = {where:.6g}): your formula loses the small value "
                    f"there, through a subtraction that cancels or an exp that overflows. "
                    f"Return tf.sigmoid(x), which is accurate on both tails.",
                    "tail_inaccurate")
    raise Wrong(f"Right near 0, wrong on the {side} tail (for example at x = {where:.6g}): "
                f"something in your slope loses the small number there, typically a "
                f"subtraction 1 - sigmoid({sign}x) that cancels once sigmoid rounds to "
                f"1, or an exp that overflows. The product sigmoid(x) * sigmoid(-x) "
                f"has neither.", "tail_inaccurate")


def _require_rule_produced(log: MethodLog, gradient) -> None:
    """The gradient the tape returned is what the learner's grad_fn returned."""
    produced = None
    for call in log.custom_calls:
        for _, returned in call.backward:
            if returned and returned[0] is not None:
                try:
                    part = np.asarray(returned[0], dtype=np.float64)
                except Exception:  # noqa: BLE001 - the tape already accepted it
                    return
                produced = part if produced is None else produced + part
    if produced is None or produced.shape != np.shape(gradient):
        return
    with np.errstate(invalid="ignore"):
        same = np.all((produced == gradient) | (np.isnan(produced) & np.isnan(gradient))
                      | np.isclose(produced, gradient, rtol=1e-6, atol=0.0))
    if not same:
        raise Wrong("Your grad_fn ran, but the gradient the tape returned is not what it "
                    "returned: other operations between x and your output add their own "
                    "gradient. Return the custom function's output as it is.",
                    "custom_rule_bypassed")


# --------------------------------------------------------------------------
# Exercise 4.4: a Hessian-vector product, reverse over reverse

def _rosenbrock(x):
    import tensorflow as tf

    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def _rosenbrock_parts(x):
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n - 1):
        hessian[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        hessian[i + 1, i + 1] += 200.0
        hessian[i, i + 1] = hessian[i + 1, i] = -400.0 * x[i]
    gradient = np.zeros(n)
    gradient[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2.0 * (1.0 - x[:-1])
    gradient[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return gradient, hessian


def _logsumexp(x):
    import tensorflow as tf

    return tf.reduce_logsumexp(x)


def _logsumexp_parts(x):
    e = np.exp(x - x.max())
    p = e / e.sum()
    return p, np.diag(p) - np.outer(p, p)


def _quartic(x):
    import tensorflow as tf

    return 0.25 * tf.reduce_sum(x**2) ** 2


def _quartic_parts(x):
    return (x @ x) * x, (x @ x) * np.eye(x.size) + 2.0 * np.outer(x, x)


def _outer_results(log: MethodLog):
    """Results of gradient calls on a tape that recorded another tape's gradient call."""
    found = []
    for call in log.calls:
        if any(inner.time < call.time and call.tape in inner.recording_tapes
               for inner in log.calls):
            for result in call.results or ():
                try:
                    found.append(np.asarray(result, dtype=np.float64))
                except Exception:  # noqa: BLE001 - not an array: nothing to say
                    continue
    return found


def _outer_repeated(log, first, at, target, first_name, instead) -> None:
    """The outer tape differentiated the function again, giving a first derivative."""
    for result in _outer_results(log):
        if result.shape == np.shape(first) and matches(result, first, 1e-4, 1e-12):
            index = (0,) * result.ndim
            where = f" (at x = {np.asarray(at)[index]:.6g} it gave {result[index]:.6g})" \
                if result.ndim else ""
            raise Wrong(f"Your outer tape differentiated {target} itself, so it returned "
                        f"{first_name} a second time{where}. It must differentiate "
                        f"{instead}.", "wrong_target")


def _explain_outer_target(log, got, hessian, v_values, tol: Tolerance, atol) -> None:
    """The outer tape's result is H @ w for some w != v: say which w."""
    expected = hessian @ v_values
    results = [result for result in _outer_results(log)
               if result.shape == expected.shape and np.all(np.isfinite(result))]
    loose = max(tol.rtol, 1e-9) * 10
    if not results or any(matches(result, expected, loose, atol) for result in results):
        return  # no outer result, or the outer result was right and changed afterwards
    if np.linalg.cond(hessian) > 1e6:
        return
    w = np.linalg.solve(hessian, results[-1])
    shown = {"precision": 4, "suppress_small": True}
    raise Wrong("Your outer tape differentiated another target than sum(g * v): its "
                f"gradient is H @ w with w = {np.array2string(w, **shown)}, where H @ v "
                f"needs w = v = {np.array2string(v_values, **shown)}. (When the target "
                "depends on x only through the gradient g, w is its derivative with respect "
                "to g; for sum(g * v) that is v.)", "wrong_target")


_HVP_BETWEEN = " (here the product with v), or pass v as output_gradients instead"

_FORWARD_OVER_REVERSE_HINT = (
    "Your function computed H @ v forward over reverse (a ForwardAccumulator around the "
    "gradient), the route the lesson showed above. This exercise asks for the other "
    "route, reverse over reverse: nested GradientTapes, with the outer one "
    "differentiating sum(g * v).")


@exercise("4.4", "a Hessian-vector product, reverse over reverse")
def hvp(answer):
    """``hvp(f, x, v)`` = H(x) @ v without forming H: reverse over reverse.

    Method (observed): nested GradientTapes; no ``tape.jacobian``/``batch_jacobian``
    (that forms H) and no ForwardAccumulator (forward over reverse, shown in the
    lesson). ``sum(g * v)`` and ``output_gradients=v`` are both accepted.
    Probes, fresh on every call: the Rosenbrock function (float32, 3 to 6 inputs),
    logsumexp (float64, 3 to 6 inputs) and (x.x)**2 / 4 (float32 and float64), at
    fresh x and v with entries of both signs. dtype in = dtype out. A point is judged
    against the size of its terms, sum_j |H_ij v_j| (float64 to 1e-11), since the
    entries of H @ v can cancel.
    """
    rng = fresh_rng("4.4")
    cases = [
        ("the Rosenbrock function", _rosenbrock, _rosenbrock_parts, "float32", 0.4, 1.2),
        ("logsumexp", _logsumexp, _logsumexp_parts, "float64", 0.3, 2.0),
        ("(x.x)**2 / 4", _quartic, _quartic_parts, "float32", 0.3, 1.5),
        ("(x.x)**2 / 4", _quartic, _quartic_parts, "float64", 0.3, 1.5),
    ]
    for label, function, parts_of, dtype, low, high in cases:
        n = int(rng.integers(3, 7))
        x_values, v_values = signed(rng, (n,), low, high), signed(rng, (n,), 0.5, 2.0)
        gradient, hessian = parts_of(x_values)
        x, v = _tensor(x_values, dtype), _tensor(v_values, dtype)
        value, run, wrong = _call(answer, function, x, v, name="`hvp`")
        log = run.log
        forbid_jacobian(log, "H @ v comes from one more backward pass through the "
                        "gradient, the gradient of sum(g * v), never from H itself.")
        if log.accumulators:
            raise Wrong(_FORWARD_OVER_REVERSE_HINT, "forward_over_reverse")
        if value is None or wrong is not None:
            _explain_none_or_error(run, value, wrong, names=((x, "x"), (v, "v")),
                                   name="`hvp`", between=_HVP_BETWEEN)
        shape = _shape_of(value)
        if shape == ():
            raise Wrong("You returned one number, probably v . grad f or v . H v. The "
                        "Hessian-vector product is a vector shaped like x: differentiate "
                        "v . grad f with respect to x.", "directional_derivative")
        if shape == (n, n):
            raise Wrong(f"You returned a {n}x{n} matrix: the Hessian itself, or H * v "
                        f"broadcast. A Hessian-vector product is H @ v, shaped like x, "
                        f"computed without forming H.", "returned_hessian")
        got = as_values(value, name="`hvp`", shape=(n,), dtype=x.dtype)
        tol = _tolerance(dtype)
        expected = hessian @ v_values
        atol = tol.rtol * float(np.max(np.abs(hessian) @ np.abs(v_values)))
        if matches(got, expected, tol.rtol, atol):
            require_nested(log)
            continue
        row_sums = hessian @ np.ones(n)
        _judge(got, expected, tol, run=run, names=((x, "x"), (v, "v")), atol=atol, batch=n,
               between=_HVP_BETWEEN, what="your product",
               computed=("Your outer tape computed H @ v correctly, but your function "
                         "changed it before returning it (multiplied or scaled it?).",
                         [("(H @ v)", expected)], expected),
               summary=f"Not H @ v for {label} in {dtype}.", known=[
                   ("first_not_second", "You returned grad f, the first derivative. "
                    "Differentiate v . grad f once more with respect to x, on an outer "
                    "tape that recorded the inner gradient.", gradient),
                   ("first_not_second", "You returned grad f * v, element by element: "
                    "that product must itself be differentiated, the outer gradient of "
                    "sum(grad f * v).", gradient * v_values),
                   ("hessian_row_sums", "You multiplied by v after the outer gradient. "
                    "outer.gradient(g, x) is H @ ones, the row sums of H; multiply g by v "
                    "inside the outer block and differentiate the sum, or pass "
                    "output_gradients=v.", row_sums * v_values),
                   ("scale_factor", "You normalised v (or scaled it): the exercise asks "
                    "for H @ v for the v it passes, whatever its length.",
                    expected / np.linalg.norm(v_values)),
                   ("hessian_row_sums", "Your result does not depend on v: it is H @ ones, "
                    "the outer gradient of g itself. Differentiate sum(g * v) instead, or "
                    "pass output_gradients=v.", row_sums),
                   ("wrong_target", "Your outer target adds f(x) (or a term like it) "
                    "to sum(g * v), so its gradient adds grad f to H @ v. Differentiate "
                    "sum(g * v) alone.", expected + gradient),
               ], before_generic=lambda: _explain_outer_target(log, got, hessian, v_values,
                                                               tol, atol))
    return ("Nested tapes, no Hessian formed: H @ v is right for three functions you had "
            "not seen, in float32 and to float64 precision. Its cost is about two "
            "gradients, whatever the size of x.")


# --------------------------------------------------------------------------
# Exercise 4.5: a norm with a finite gradient at zero rows

def _norm_rows(rng):
    """(batch, width) rows: one or two zero rows, one of norm exactly 0.05, the rest 0.05-5."""
    width = int(rng.integers(2, 6))
    batch = int(rng.choice([b for b in range(4, 8) if b != width]))
    directions = rng.normal(size=(batch, width))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    sizes = np.round(rng.uniform(0.05, 5.0, size=batch), 3)
    order = rng.permutation(batch)
    sizes[order[0]] = 0.0
    sizes[order[1]] = 0.05
    if batch > 5:
        sizes[order[2]] = 0.0
    return directions * sizes[:, None]


def _risky_ops(answer, dtype: str, shape) -> set:
    """What in the answer can turn a zero row into nan: traced once, nothing runs.

    Labels: "where", "sqrt", "fractional_pow" (x**0.5, tf.pow(x, 0.5)), "rsqrt",
    "euclidean_norm", "log", "reciprocal".
    """
    import tensorflow as tf

    try:
        with learner_code("Your function"):
            graph = tf.function(answer, autograph=False).get_concrete_function(
                tf.TensorSpec(shape, getattr(tf, dtype))).graph
    except BaseException:  # noqa: BLE001 - only a hint depends on it
        return set()
    found = set()
    simple = {"Select": "where", "SelectV2": "where", "Sqrt": "sqrt", "Rsqrt": "rsqrt",
              "EuclideanNorm": "euclidean_norm", "Log": "log", "Reciprocal": "reciprocal"}
    for operation in graph.get_operations():
        if operation.type in simple:
            found.add(simple[operation.type])
        elif operation.type == "Pow":
            exponent = operation.inputs[1]
            if exponent.op.type == "Const":
                value = tf.make_ndarray(exponent.op.get_attr("value"))
                if np.any(value != np.round(value)) or np.any(value < 1):
                    found.add("fractional_pow")
    return found


_NAN_AT_ZERO_HINTS = {
    "fractional_pow": (
        "You wrapped a power (x**0.5 or tf.pow) in tf.where. A single tf.where does not "
        "protect it: the branch not taken still runs backwards, with a zero upstream, and "
        "0 times the infinite slope of x**0.5 at 0 is nan. Use tf.sqrt (its gradient is 0 "
        "where the upstream is 0, so one tf.where around it is enough), or the double "
        "where: feed the power a harmless 1 where the norm is zero."),
    "euclidean_norm": (
        "You wrapped tf.math.reduce_euclidean_norm in tf.where. Its gradient at a zero "
        "row is nan even with a zero upstream, so a single tf.where does not protect it. "
        "Use tf.sqrt(tf.reduce_sum(g**2, -1)) inside the where (tf.sqrt gives 0 where the "
        "upstream is 0), the double where, or an epsilon inside the square root."),
    "rsqrt": (
        "You used tf.math.rsqrt inside tf.where. rsqrt itself passes a zero upstream on "
        "as 0, but its value at 0 is inf, and whatever multiplies it (s * rsqrt(s)) "
        "sends 0 * inf = nan backwards. Use tf.sqrt inside the where, or feed rsqrt a "
        "harmless 1 where the norm is zero (the double where)."),
    "log": (
        "A single tf.where does not protect tf.math.log: at 0 its slope is infinite, and "
        "0 times infinity is nan. Use tf.sqrt on the sum of squares instead."),
    "reciprocal": (
        "A single tf.where does not protect a division by the norm or the sum of squares: "
        "at 0 its slope is infinite, and 0 times infinity is nan. Use tf.sqrt on the sum "
        "of squares inside the where, or feed the division a harmless 1 (the double "
        "where)."),
}


@exercise("4.5", "a safe norm for the gradient penalty")
def safe_norm(answer):
    """``safe_norm(g)``: the Euclidean norm of each row, with a finite gradient at 0.

    Probes, fresh on every call, in float32 and in float64 (dtype in = dtype out):
    a (batch, width) tensor with batch in 4..7 and width in 2..5 (never equal, so a
    reduction over the wrong axis shows), one or two rows of zeros at random
    positions, a row of norm exactly 0.05, the others of norm 0.05 to 5 with entries
    of both signs. Values: within 1e-5 relative of the norm for the nonzero rows,
    at most 1e-3 at the zero rows. Gradient (with an upstream of both signs, never
    1): finite everywhere, upstream * g/|g| on the nonzero rows, at most |upstream|
    long at the zero rows. Any construction is accepted: an epsilon inside the
    square root, tf.maximum, one tf.where around tf.sqrt or tf.norm (their
    gradients are 0 where the upstream is 0), or the double where.
    """
    rng = fresh_rng("4.5")
    values_tol = Tolerance(rtol=1e-5, atol=0.0)  # nonzero rows; zero rows: <= 1e-3
    for dtype in DTYPES:
        rows = _norm_rows(rng)
        batch, width = rows.shape
        norms = np.linalg.norm(rows, axis=-1)
        zero = norms == 0.0
        g = _tensor(rows, dtype)
        try:
            recorded = record_answer(answer, g, name="`safe_norm`")
        except Wrong as wrong:
            raise wrong from None
        shape = _shape_of(recorded.value)
        if shape == ():
            raise Wrong("You returned one number, the norm of the whole batch. The penalty "
                        "needs one norm per example: reduce over the last axis only "
                        "(axis=-1).", "whole_tensor_norm")
        if shape == (width,):
            raise Wrong(f"You returned shape {shape}: one value per column, a reduction "
                        f"over the batch (axis 0). Reduce over the last axis (axis=-1): "
                        f"one norm per row, shape ({batch},).", "wrong_axis")
        value = as_values(recorded.value, name="`safe_norm`", shape=(batch,), dtype=g.dtype)
        if not (matches(value[~zero], norms[~zero], values_tol.rtol, 0.0)
                and np.all(np.abs(value[zero]) <= 1e-3)):
            _explain_norm_values(value, rows, norms)
        upstream_values = upstream(rng, (batch,))
        gradient = recorded.gradient(_tensor(upstream_values, dtype),
                                     label="The gradient of your norm")[0]
        if gradient is None:
            _explain_missing_norm_gradient(answer, dtype, rows.shape)
        got = as_values(gradient, name="The gradient of your norm", shape=(batch, width),
                        dtype=g.dtype)
        if not np.all(np.isfinite(got[zero])):
            _explain_nan_at_zero(answer, dtype, rows.shape, value[zero])
        unit = rows[~zero] / norms[~zero, None] * upstream_values[~zero, None]
        if not matches(got[~zero], unit, 1e-4, 1e-7):
            raise explain_difference(
                got[~zero], unit, rtol=1e-4, atol=1e-7, what="your norm's gradient",
                summary="Away from zero the gradient of a norm is upstream * g / |g|, and "
                        "yours is not.")
        lengths = np.linalg.norm(got[zero], axis=-1)
        if np.any(lengths > np.abs(upstream_values[zero]) * (1 + 1e-3)):
            raise Wrong("The gradient at a zero row is finite but longer than the upstream "
                        "gradient, which no slope of a norm can be: a norm never grows "
                        "faster than its input. Keep the epsilon inside the square root.",
                        "gradient_too_large")
    return ("Row norms to 5 digits in float32 and float64, a finite gradient at the zero "
            "rows, and upstream * g/|g| everywhere else.")


def _explain_norm_values(value, rows, norms) -> None:
    """Name what is wrong with the values of a norm (zero rows may be up to 1e-3)."""
    zero, width = norms == 0.0, rows.shape[1]
    long_rows = norms > 0.5
    if (np.all(np.isfinite(value)) and np.all(value >= norms * (1 - 1e-6))
            and matches(value[long_rows], norms[long_rows], 1e-2, 0.0)):
        short = np.argmin(np.where(zero, np.inf, norms))
        raise Wrong("Right for long rows, but too large for short ones: a zero row gives "
                    f"{value[zero][0]:.3g} and the row of norm {norms[short]:.3g} gives "
                    f"{value[short]:.6g}. Your epsilon is too large: 1e-12 inside the "
                    "square root changes nothing that float32 or the penalty can see.",
                    "eps_too_large")
    loose = Tolerance(rtol=1e-5, atol=1e-3)
    small = ~zero & (norms < 0.5)
    if (matches(value[norms >= 0.5], norms[norms >= 0.5], 1e-5, 0.0)
            and np.any(value[small] == 0.0)):
        raise Wrong(f"Right for long rows, but a row of norm {norms[small][0]:.3g} gives "
                    f"{value[small][0]:.3g}: your tf.where condition treats small rows as "
                    f"zero. Only rows that are exactly zero need the special case: compare "
                    f"with 0, not with a threshold.", "threshold_too_large")
    _judge(value, norms, loose, what="your norm",
           summary="Not the Euclidean norm of each row, sqrt(sum(g**2, axis=-1)).",
           known=[
               ("squared_norm", "You returned the squared norm, sum(g**2). The penalty "
                "uses the norm itself: take the square root.", norms**2),
               ("l1_norm", "You returned the sum of absolute values (the L1 norm). The "
                "penalty uses the Euclidean norm, sqrt(sum(g**2)).",
                np.abs(rows).sum(axis=-1)),
               ("mean_not_sum", "You took the mean of the squares (tf.reduce_mean) before "
                "the square root: the norm sums them.", norms / np.sqrt(width)),
               ("square_of_sum", "You squared the sum of each row, (sum g)**2, instead of "
                "summing the squares, sum(g**2): the norm is sqrt(sum(g**2)).",
                np.abs(rows.sum(axis=-1))),
               ("other_norm", "You returned the largest absolute entry of each row (the "
                "max norm). The penalty uses the Euclidean norm, sqrt(sum(g**2)).",
                np.abs(rows).max(axis=-1)),
               ("clipped_input", "You clipped g itself (tf.clip_by_value or tf.maximum on "
                "g), which turns its negative entries into tiny positive ones and changes "
                "the norm. Leave g alone: protect only the square root at zero.",
                np.linalg.norm(np.maximum(rows, 0.0), axis=-1)),
           ])
    raise Wrong("The norm is right to within 1e-3 but not to 5 digits. Something shifts it "
                "slightly: usually an epsilon added to g itself rather than under the "
                "square root, or float32 arithmetic for a float64 input.", "approximation")


def _explain_missing_norm_gradient(answer, dtype, shape) -> None:
    import tensorflow as tf

    traced = trace(answer, tf.TensorSpec(shape, getattr(tf, dtype)))
    if traced.numpy_detour:
        raise Wrong(none_hint("numpy_detour", "g"), "numpy_detour")
    if traced.non_differentiable:
        raise Wrong(none_hint("non_differentiable_op", "g", traced.non_differentiable),
                    "non_differentiable_op")
    raise Wrong("The gradient of your norm is None: the tape found no path from the norm "
                "back to g, although the check watched g. Is the result computed from g "
                "with TensorFlow ops only, without tf.stop_gradient, and not rebuilt with "
                "tf.constant from values?", "no_gradient")


def _explain_nan_at_zero(answer, dtype, shape, zero_values) -> None:
    if np.all(zero_values > 0) and np.all(zero_values <= 1e-3):
        raise Wrong("The values are right, but the gradient at a zero row is nan: your "
                    "epsilon is added after the square root, where it changes the value "
                    "but not the slope, and the slope of sqrt at 0 is still infinite. Put "
                    "it inside: tf.sqrt(tf.reduce_sum(g**2, axis=-1) + 1e-12).",
                    "eps_outside_sqrt")
    ops = _risky_ops(answer, dtype, shape)
    if "where" in ops:
        for label, hint in _NAN_AT_ZERO_HINTS.items():
            if label in ops:
                raise Wrong(hint, "where_without_safe_branch")
        raise Wrong("You used tf.where, but the gradient at a zero row is still nan. Two "
                    "things must hold: the zero rows must take the branch without the "
                    "square root (for example tf.where(squares > 0, ..., 0.0)), and the "
                    "square-root branch, which still runs backwards there with a zero "
                    "upstream, must be tf.sqrt (its gradient is then 0) or be fed a "
                    "harmless value such as 1 (the double where).",
                    "where_without_safe_branch")
    raise Wrong("The values are right, but the gradient at a zero row is nan: the slope of "
                "the square root at 0 is infinite, and infinity times the zero slope of "
                "sum(g**2) is nan (tf.norm does exactly this). Keep the square root's "
                "argument away from 0 with a tiny epsilon inside it, or pick the value at "
                "zero rows with tf.where.", "nan_gradient_at_zero")
