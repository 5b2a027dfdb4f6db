"""Exercise 6.1: accumulate the gradient of a value used more than once."""

from __future__ import annotations

import numpy as np

from ...checking import Wrong
from ...checking import call_answer
from ...checking import exercise
from ...checking import fresh_rng
from ...checking import matches
from ...checking import require_callable
from ...checking import sizes as draw_sizes
from ...checking import tolerance_for
from ...checking import upstream as fresh_upstream
from .shared import _as_float
from .shared import _changed
from .shared import _close
from .shared import _explain
from .shared import _numbers
from .shared import _scales_with_upstream
from .shared import _snapshot
from .shared import _values


class _Graph:
    """A small recorded computation for the check's own reverse pass.

    ``records`` are ``(output, inputs, rule)`` in recording order; ``rule(dy, v)``
    returns one contribution per input, computed from the values ``v`` the way a
    tape's rules compute them (``add`` hands its ``dy`` to both inputs unchanged).
    ``expected(v, dy)`` gives every gradient in closed form.
    """

    def __init__(self, description, leaves, forward, records, target, expected, formulas):
        self.description = description
        self.leaves = leaves
        self.forward = forward
        self.records = records
        self.target = target
        self.expected = expected
        self.formulas = formulas


def _same(dy):
    return dy, dy  # the rule of add: one upstream array, handed to both inputs


GRAPHS = [
    _Graph(
        "v = x*x + x",
        ("x",),
        lambda v: {"u": v["x"] * v["x"]} | {"v": v["x"] * v["x"] + v["x"]},
        [
            ("u", ("x", "x"), lambda dy, v: (dy * v["x"], dy * v["x"])),
            ("v", ("u", "x"), lambda dy, v: _same(dy)),
        ],
        "v",
        lambda v, dy: {"v": dy, "u": dy, "x": dy * (2.0 * v["x"] + 1.0)},
        {"x": "dy * (2x + 1)", "u": "dy", "v": "dy"},
    ),
    _Graph(
        "w = x + x",
        ("x",),
        lambda v: {"w": v["x"] + v["x"]},
        [("w", ("x", "x"), lambda dy, v: _same(dy))],
        "w",
        lambda v, dy: {"w": dy, "x": 2.0 * dy},
        {"x": "2 dy", "w": "dy"},
    ),
    _Graph(
        "y = x*x*x",
        ("x",),
        lambda v: {"u": v["x"] * v["x"], "y": v["x"] * v["x"] * v["x"]},
        [
            ("u", ("x", "x"), lambda dy, v: (dy * v["x"], dy * v["x"])),
            ("y", ("u", "x"), lambda dy, v: (dy * v["x"], dy * v["u"])),
        ],
        "y",
        lambda v, dy: {"y": dy, "u": dy * v["x"], "x": 3.0 * dy * v["x"] ** 2},
        {"x": "3 x^2 dy", "u": "x dy", "y": "dy"},
    ),
    _Graph(
        "s = (x + x) + x",
        ("x",),
        lambda v: {"t": v["x"] + v["x"], "s": v["x"] + v["x"] + v["x"]},
        [("t", ("x", "x"), lambda dy, v: _same(dy)), ("s", ("t", "x"), lambda dy, v: _same(dy))],
        "s",
        lambda v, dy: {"s": dy, "t": dy, "x": 3.0 * dy},
        {"x": "3 dy", "t": "dy", "s": "dy"},
    ),
    _Graph(
        "c = (x*y + y) * (x*y)",
        ("x", "y"),
        lambda v: {
            "a": v["x"] * v["y"],
            "b": v["x"] * v["y"] + v["y"],
            "c": (v["x"] * v["y"] + v["y"]) * (v["x"] * v["y"]),
        },
        [
            ("a", ("x", "y"), lambda dy, v: (dy * v["y"], dy * v["x"])),
            ("b", ("a", "y"), lambda dy, v: _same(dy)),
            ("c", ("b", "a"), lambda dy, v: (dy * v["a"], dy * v["b"])),
        ],
        "c",
        lambda v, dy: {
            "c": dy,
            "b": dy * v["a"],
            "a": dy * (v["a"] + v["b"]),
            "x": dy * (v["a"] + v["b"]) * v["y"],
            "y": dy * ((v["a"] + v["b"]) * v["x"] + v["a"]),
        },
        {
            "x": "dy * (2xy + y) * y",
            "y": "dy * (2x^2 y + 2xy)",
            "a": "dy * (a + b)",
            "b": "dy * a",
            "c": "dy",
        },
    ),
]


# (graph index, shape, dtype): scalars, vectors and matrices, float64 and float32.
def _graph_plan(rng):
    m, n = draw_sizes(rng, 2)
    return [
        (0, (n,), np.float64),
        (1, (m, n), np.float64),
        (2, (), np.float64),
        (3, (m,), np.float32),
        (4, (m, n), np.float64),
    ]


def _sim_overwrite(grads, key, c):
    grads[key] = c


def _sim_keep_first(grads, key, c):
    grads.setdefault(key, c)


def _sim_multiply(grads, key, c):
    grads[key] = grads[key] * c if key in grads else c


def _sim_twice(grads, key, c):
    grads[key] = grads.get(key, c) + c


def _sim_subtract(grads, key, c):
    grads[key] = grads[key] - c if key in grads else c


def _sim_average(grads, key, c):
    grads[key] = (grads[key] + c) / 2.0 if key in grads else c


ACCUMULATION_MISTAKES = [  # (code, hint, the same mistake written by the check)
    (
        "overwrote_gradient",
        "In {graph} your gradient of {key} is only its last contribution: each new "
        "contribution replaced the stored one. A value used several times receives the sum "
        "of the gradients of all its uses: when the key is already in grads, add to it.",
        _sim_overwrite,
    ),
    (
        "kept_first_gradient",
        "In {graph} your gradient of {key} is only its first contribution: the later ones "
        "were dropped. When the key is already in grads, add the new contribution to it.",
        _sim_keep_first,
    ),
    (
        "multiplied_gradients",
        "In {graph} your gradient of {key} is the product of its contributions. Gradients of "
        "a value used several times add up (the multivariable chain rule sums over the uses).",
        _sim_multiply,
    ),
    (
        "added_twice",
        "In {graph} your gradient of {key} counts one contribution twice: the first one was "
        "stored and then added again. Store the first contribution as it is, and add each "
        "later one once.",
        _sim_twice,
    ),
    (
        "subtracted_gradient",
        "In {graph} your gradient of {key} subtracts the later contributions: gradients of a "
        "value used several times are added, whatever their sign.",
        _sim_subtract,
    ),
    (
        "averaged_gradients",
        "In {graph} your gradient of {key} averages the contributions. They add up: a value "
        "used three times gets all three, not their mean.",
        _sim_average,
    ),
]


def _reverse_pass(graph, values, dy, accumulate, *, learner: bool):
    """The check's own reverse pass over ``graph``; ``accumulate`` adds each contribution.

    With ``learner=True`` every call is checked as it happens: something stored, of the
    right shape and dtype, and no array the pass still holds changed in place.
    """
    grads = {graph.target: dy}
    snapshots = _snapshot(dy)
    for output, inputs, rule in reversed(graph.records):
        if output not in grads:
            continue
        contributions = rule(grads[output], values)
        for key, contribution in zip(inputs, contributions):
            if not learner:
                accumulate(grads, key, contribution)
                continue
            snapshots += _snapshot(contribution)
            returned = call_answer(
                accumulate, grads, key, contribution, name="`accumulate_gradient`"
            )
            _check_call(graph, values, grads, key, returned, snapshots)
    return grads


def _holders(grads, array) -> list[str]:
    return [name for name, value in grads.items() if value is array]


def _check_call(graph, values, grads, key, returned, snapshots):
    dtype = np.asarray(values[graph.leaves[0]]).dtype
    changed = _changed(snapshots)
    if changed:
        others = [name for name in _holders(grads, changed[0]) if name != key]
        held = (
            f"the gradient stored for {others[0]!r} changed with it"
            if others
            else "an array the tape had handed out changed"
        )
        raise Wrong(
            f"In {graph.description}, while adding a contribution to {key!r}, "
            f"{held}: your function changed an array in place (`+=`, or "
            f"np.add(..., out=...)). A tape often holds one array twice: the rule of "
            f"`+` hands the same upstream array to both of its inputs, so changing "
            f"one changes the other. Build a new array instead: "
            f"grads[key] = grads[key] + contribution.",
            "changed_in_place",
        )
    if key not in grads:
        if isinstance(returned, dict):
            raise Wrong(
                "Your function returned a dictionary but left `grads` without the "
                "new entry. Update the dictionary it receives, in place: "
                "grads[key] = ... (it returns nothing).",
                "returned_new_dict",
            )
        raise Wrong(
            f"After your function ran, `grads` had no entry for {key!r}, the key "
            f"it was given. The first contribution must be stored: "
            f"grads[key] = contribution.",
            "not_stored",
        )
    stored = grads[key]
    if stored is None:
        raise Wrong(
            "Your function stored None in `grads`. Store the contribution itself "
            "the first time, and the sum of old and new after that.",
            "stored_none",
        )
    if isinstance(stored, (list, tuple)):
        raise Wrong(
            f"Your function stored a Python {type(stored).__name__} for {key!r}: a "
            f"list of contributions. Store one array, their sum: "
            f"grads[key] = grads[key] + contribution.",
            "returned_list",
        )
    _numbers(
        stored,
        f"The gradient your function stored for {key!r} (in {graph.description})",
        shape=np.shape(values[graph.leaves[0]]),
        dtype=dtype,
    )


def _one_step(answer, dtype):
    """One accumulation on its own: {k: A} plus C must store A + C. A Wrong, or None."""
    old = np.asarray([1.5, -0.25], dtype=dtype)
    results = []
    for contribution in ([0.5, 2.0], [-3.0, 0.75]):
        grads = {"k": old.copy()}
        try:
            call_answer(
                answer,
                grads,
                "k",
                np.asarray(contribution, dtype=dtype),
                name="`accumulate_gradient`",
            )
        except Wrong:
            return None
        results.append(_as_float(grads.get("k")))
    if any(result is None or result.shape != old.shape for result in results):
        return None
    if matches(results[0], results[1], rtol=1e-12, atol=0.0):
        return Wrong(
            f"When the key is already in grads, your function ignores the new "
            f"contribution: with grads = {{k: [1.5, -0.25]}}, adding [0.5, 2.0] and "
            f"adding [-3.0, 0.75] both store {_show(results[0])}. Add the "
            f"contribution: grads[key] = grads[key] + contribution.",
            "contribution_ignored",
        )
    if not matches(results[0], [2.0, 1.75], rtol=1e-6, atol=1e-12):
        return Wrong(
            f"One step of your function, on its own: with grads = "
            f"{{k: [1.5, -0.25]}} and the contribution [0.5, 2.0], it stores "
            f"{_show(results[0])}, but the sum is [2.0, 1.75]. When the key is "
            f"already in grads, store old + new.",
            "other",
        )
    return None


def _show(values) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in np.asarray(values).ravel()) + "]"


@exercise("6.1", "accumulate the gradient of a value used more than once")
def accumulate_gradient(answer):
    """Runs the check's own reverse pass, with ``answer`` adding every contribution.

    Probes: five graphs, drawn with fresh values, sizes and upstream gradients (never
    1) on each call: ``v = x*x + x`` (x used three times; the rule of ``+`` hands one
    upstream array to u and x), ``w = x + x`` (the same upstream array handed to both
    inputs, which are one key), ``y = x*x*x`` and ``s = (x + x) + x`` (three uses, the
    second with one array throughout), and ``c = (x*y + y) * (x*y)`` (two inputs, a
    value of each used twice). Scalars, vectors and matrices; float64, and one float32
    graph (dtype in = dtype out). After every call: an entry stored, the right shape and
    dtype, and no array the pass still holds changed (the aliasing mistake of ``+=``).
    At the end every gradient, intermediate ones included, is compared with its closed
    form; a wrong one is matched against the check's own version of each typical
    mistake before the generic fallback.
    """
    require_callable(answer)
    rng = fresh_rng("6.1")
    for index, shape, dtype in _graph_plan(rng):
        graph = GRAPHS[index]
        values = {leaf: _values(rng, shape, dtype) for leaf in graph.leaves}
        values.update({k: np.asarray(v, dtype=dtype) for k, v in graph.forward(values).items()})
        dy = np.asarray(fresh_upstream(rng, shape), dtype=dtype)
        grads = _reverse_pass(graph, values, dy, answer, learner=True)
        expected = graph.expected(values, dy)
        got = {key: _as_float(grads.get(key)) for key in expected}
        wrong = [
            key
            for key in expected
            if got[key] is None or not _close(got[key], expected[key], dtype)
        ]
        if not wrong:
            continue
        key = next((k for k in graph.leaves if k in wrong), wrong[0])
        if got[key] is None or got[key].shape != expected[key].shape:
            raise Wrong(
                f"After the reverse pass over {graph.description}, the entry for "
                f"{key!r} in `grads` is missing or no longer an array of its shape: "
                f"your function changed entries other than the one it was given.",
                "not_stored",
            )
        for code, hint, simulate in ACCUMULATION_MISTAKES:
            copies = {k: np.array(v, copy=True) for k, v in values.items()}
            simulated = _reverse_pass(graph, copies, dy.copy(), simulate, learner=False)
            if all(
                got.get(k) is not None and matches(got[k], simulated[k], rtol=1e-6, atol=1e-12)
                for k in simulated
            ):
                raise Wrong(hint.format(graph=graph.description, key=repr(key)), code)
        tolerance = tolerance_for(dtype)
        try:
            copies = {k: np.array(v, copy=True) for k, v in values.items()}
            doubled = _reverse_pass(graph, copies, 2 * dy, answer, learner=True)
            scales = _scales_with_upstream(got[key], doubled.get(key))
        except Wrong:
            scales = None
        if scales is False:
            raise Wrong(
                f"In {graph.description} your gradients do not scale with the "
                f"upstream gradient dy: with dy doubled, the gradient of {key!r} "
                f"did not double. Sums of contributions do; products, squares or "
                f"added constants do not. Add each contribution as it is.",
                "upstream_not_linear",
            )
        step = _one_step(answer, dtype)
        if step is not None:
            raise step
        raise _explain(
            got[key],
            expected[key],
            summary=(
                f"In {graph.description} the gradient of {key!r} should be "
                f"{graph.formulas[key]}, the sum of its contributions."
            ),
            rtol=tolerance.rtol,
            atol=tolerance.atol,
            what=f"your gradient of {key!r}",
        )
    return (
        "Each contribution was added to what was stored, and no array was changed in "
        "place: checked on five graphs (a value used two and three times, one upstream "
        "array handed to two inputs, two inputs sharing a graph), with scalars, vectors "
        "and matrices, in float64 and float32, every gradient compared."
    )
