"""What the checks of lesson 06 share: NumPy results read and judged (kind, shape,
dtype, per-point tolerance), arguments changed in place, the last hint for a wrong
gradient (does it scale with the upstream?), fresh values, and the pair of
gradients that the rules of 6.2 and 6.3 return."""

from __future__ import annotations

import re

import numpy as np

from ...checking import Wrong
from ...checking import as_values
from ...checking import call_answer
from ...checking import describe_difference
from ...checking import explain_difference
from ...checking import generic_mistake
from ...checking import matches
from ...checking import signed
from ...checking import tolerance_for


def _is_tape_tensor(value) -> bool:
    """A Tensor of the notebook's own tape: not NumPy, not TensorFlow, keeps ``.value``."""
    module = type(value).__module__ or ""
    return (
        hasattr(value, "value")
        and not isinstance(value, (np.ndarray, np.generic))
        and not module.startswith(("numpy", "tensorflow"))
    )


def _as_float(value):
    """``value`` as a float64 array, or None when it is not numbers."""
    if value is None or isinstance(value, (str, bytes, dict)):
        return None
    try:
        with np.errstate(all="ignore"):
            array = np.asarray(value, dtype=np.float64)
    except Exception:  # noqa: BLE001 - anything a learner may have stored
        return None
    return array


def _dtype_hint(name: str, got, expected) -> Wrong:
    got, expected = np.dtype(got), np.dtype(expected)
    narrowed = expected == np.float64 and got == np.float32
    text = (
        f"{name} is float32 for a float64 input: a cast (astype(np.float32), "
        f"np.float32(...)) or a float32 constant lost half the digits. Keep the "
        f"input's dtype."
        if narrowed
        else f"{name} has dtype {got}, but the input is {expected}: dtype in, same dtype "
        f"out. (np.zeros(shape) and np.float64(...) are float64; np.zeros_like(x) "
        f"and plain Python numbers keep x's dtype.)"
    )
    return Wrong(text, "float32_not_float64" if narrowed else "wrong_dtype")


def _numbers(value, name: str, *, shape=None, dtype=None) -> np.ndarray:
    """A NumPy result as float64 for judging; its kind, shape and dtype checked first."""
    if value is None:
        raise Wrong(f"{name} is None. Did you forget `return`?", "returned_none")
    if _is_tape_tensor(value):
        raise Wrong(
            f"{name} is a Tensor of our tape, not a NumPy array: the rule was "
            f"written with the tape's own operations. Inside a rule, work on the "
            f"NumPy arrays it receives with np. functions and operators.",
            "used_tape",
        )
    if type(value).__module__.startswith("tensorflow"):
        raise Wrong(
            f"{name} is a TensorFlow {type(value).__name__}. Our tape works on "
            f"NumPy arrays: use np. functions and operators.",
            "wrong_type",
        )
    if isinstance(value, (list, tuple)):
        raise Wrong(
            f"{name} is a Python {type(value).__name__}; it should be one NumPy array.",
            "returned_list",
        )
    array_dtype = None
    if isinstance(value, (np.ndarray, np.generic)):
        array_dtype = value.dtype
    values = as_values(value, name=name, require_tensor=False)
    if shape is not None and values.shape != tuple(shape):
        raise _shape_wrong(name, values.shape, tuple(shape))
    if dtype is not None and array_dtype is not None and array_dtype != np.dtype(dtype):
        raise _dtype_hint(name, array_dtype, dtype)
    if dtype is not None and array_dtype is None and np.dtype(dtype) != np.float64:
        raise _dtype_hint(name, np.float64, dtype)  # a Python number is float64
    return values


def _shape_wrong(name: str, got: tuple, expected: tuple) -> Wrong:
    text = f"{name} has shape {got}, but it should have shape {expected}."
    if [n for n in got if n != 1] == [n for n in expected if n != 1]:
        return Wrong(
            text + " The numbers may be right, but an axis of size 1 was added or "
            "dropped (keepdims, x[:, None], reshape).",
            "broadcast_shape",
        )
    if got == () and expected != ():
        return Wrong(
            text + " A single number came back: was everything summed (np.sum without an axis)?",
            "wrong_shape",
        )
    if int(np.prod(got)) == int(np.prod(expected)):
        return Wrong(
            text + " The sizes agree, so the axes are reshaped, flattened or in another order.",
            "wrong_shape",
        )
    return Wrong(text, "wrong_shape")


def _plain_indices(text: str) -> str:
    return re.sub(r"np\.(?:int|intp|int64)\((-?\d+)\)", r"\1", text)


def _explain(got, expected, **options) -> Wrong:
    """:func:`explain_difference`, with indices printed as plain numbers."""
    wrong = explain_difference(got, expected, **options)
    return Wrong(_plain_indices(wrong.hint), wrong.mistake)


def _scales_with_upstream(first, second) -> bool | None:
    """Did doubling the upstream gradient double the result? None when it cannot tell."""
    try:
        first = np.asarray(first, dtype=np.float64)
        second = np.asarray(second, dtype=np.float64)
    except Exception:  # noqa: BLE001 - an odd second result: no verdict from it
        return None
    if first.shape != second.shape or not np.all(np.isfinite(first)):
        return None
    return matches(second, 2.0 * first, rtol=1e-6, atol=1e-300)


def _upstream_hint(what: str, where: str, local: str) -> Wrong:
    return Wrong(
        f"{what} does not scale with the upstream gradient: called again with the "
        f"upstream doubled, it did not double{where}. A vector-Jacobian rule is "
        f"linear in the upstream: every term is the upstream times a local "
        f"derivative ({local}), with nothing added, squared or left without it.",
        "upstream_not_linear",
    )


def _fallback(
    got,
    expected,
    *,
    again,
    summary,
    what,
    rtol,
    atol,
    local,
    at=None,
    known=(),
    mixed=None,
    repeat=None,
) -> Wrong:
    """The last hint for a wrong gradient: a known mistake, a generic pattern (sign,
    scale, ...), then, when ``repeat()`` (the result for the very same arguments) differs,
    numbers that do not come from the arguments; then whether it scales with the upstream
    (``again()`` returns the result for a doubled upstream; ``mixed()``, when given, a
    Wrong if a linear rule still mixes the upstreams of different points), and only then
    a point that differs."""
    for code, hint, values in known:
        if matches(got, values, rtol=max(rtol, 1e-6), atol=atol):
            return Wrong(hint, code)
    if repeat is not None and _not_repeatable(got, repeat):
        return Wrong(
            f"Called a second time with the very same upstream, a and b, your function "
            f"returned other numbers for {what}: they do not come from its arguments "
            f"(numbers copied from an earlier run, or drawn at random). A rule computes "
            f"its gradients from upstream, a and b alone.",
            "not_repeatable",
        )
    if generic_mistake(got, expected, rtol=rtol, atol=atol, what=what) is None:
        try:
            scales = _scales_with_upstream(got, again())
        except Wrong:
            scales = None
        example = _plain_indices(describe_difference(got, expected, at, rtol, atol))
        if scales is False:
            return _upstream_hint(what.capitalize(), "", local)
        mixing = mixed() if scales and mixed is not None else None
        if mixing is not None:
            return mixing
        if scales:
            return Wrong(
                f"{what.capitalize()} scales with the upstream gradient as it "
                f"should (doubling the upstream doubled it), so the mistake is in "
                f"the local derivative, which should be {local}. {example}",
                "wrong_local_derivative",
            )
    return _explain(got, expected, at=at, rtol=rtol, atol=atol, summary=summary, what=what)


def _snapshot(*arrays) -> list:
    return [(array, np.array(array, copy=True)) for array in arrays]


def _changed(snapshots) -> list:
    """The arrays (by identity) whose values changed since their snapshot."""
    changed = []
    for array, copy in snapshots:
        try:
            same = np.array_equal(np.asarray(array), copy, equal_nan=True)
        except Exception:  # noqa: BLE001 - an array replaced by something odd
            same = False
        if not same:
            changed.append(array)
    return changed


def _close(got, expected, dtype, scale=None) -> bool:
    """Per point: within rtol of the size of the terms (``scale``) or of the value."""
    tolerance = tolerance_for(dtype)
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        return False
    size = np.abs(expected) if scale is None else np.maximum(np.abs(expected), scale)
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(
            np.all(
                np.isfinite(got)
                & (np.abs(got - expected) <= tolerance.rtol * size + tolerance.atol)
            )
        )


def _values(rng, shape, dtype, low: float = 0.6):
    return np.asarray(signed(rng, shape, low=low), dtype=dtype)


def _terms_tolerance(dtype, size) -> dict:
    """``rtol`` and ``atol`` for the hints on one of the two gradients of 6.2 and 6.3:
    the dtype's rtol, and that rtol of the largest size of the terms (``size``)."""
    rtol = tolerance_for(dtype).rtol
    return {"rtol": rtol, "atol": rtol * float(np.max(size))}


def _called_again(answer, label: str, arguments, name: str, factor: float = 2.0):
    """The rule of exercises 6.2 and 6.3 called anew, as a thunk for :func:`_fallback`:
    on ``(upstream, a, b)`` = ``arguments`` with the upstream times ``factor`` (2 for
    ``again``, 1 for ``repeat``), returning its gradient ``name`` (grad_a or grad_b)."""
    upstream, a, b = arguments
    index = 0 if name == "grad_a" else 1
    return lambda: _two_gradients(
        call_answer(answer, factor * upstream, a.copy(), b.copy(), name=label)
    )[index]


def _not_repeatable(got, repeat) -> bool:
    """Whether calling the rule again on the same arguments gave other numbers."""
    try:
        again = np.asarray(repeat(), dtype=np.float64)
    except Exception:  # noqa: BLE001 (a Wrong, or anything odd the second time: judged elsewhere)
        return False
    mine = np.asarray(got, dtype=np.float64)
    return mine.shape != again.shape or not np.array_equal(mine, again, equal_nan=True)


def _two_gradients(value):
    """Unpack the (grad_a, grad_b) pair a rule for two inputs returns."""
    if value is None:
        raise Wrong(
            "Your function returned None. Did you forget `return`? A rule for an "
            "operation with two inputs returns two gradients: "
            "`return grad_a, grad_b`.",
            "returned_none",
        )
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        kind = (
            f"a {type(value).__name__} of length {len(value)}"
            if isinstance(value, (tuple, list))
            else "one NumPy array"
            if isinstance(value, np.ndarray)
            else f"a {type(value).__name__}"
        )
        raise Wrong(
            f"Your function returned {kind}. A rule for an operation with two "
            f"inputs returns one gradient per input, as a pair: "
            f"`return grad_a, grad_b`.",
            "not_a_pair",
        )
    return value


def _shape_of(value):
    try:
        return tuple(np.shape(value))
    except Exception:  # noqa: BLE001 - judged properly by _numbers
        return None


def _in_place_hint(case, changed, arrays, example):
    which = next(name for name, array in arrays if array is changed[0])
    return Wrong(
        f"For {case}, your function changed `{which}` in place (`*=`, `+=`, "
        f"out=...). A rule must leave its arguments alone: the tape still holds "
        f"them, and the same upstream array may be handed to other inputs. Build "
        f"new arrays instead ({example}).",
        "changed_in_place",
    )


def _diagnose_pair(got, known, rtol=1e-6, atol=1e-12):
    for code, hint, values in known:
        if all(matches(g, v, rtol=rtol, atol=atol) for g, v in zip(got, values)):
            raise Wrong(hint, code)
