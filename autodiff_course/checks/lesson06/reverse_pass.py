"""The five graphs of exercise 6.1 and the check's own reverse pass over them, which
hands each contribution to an ``accumulate`` of the learner's (or of a mistake's)."""

import numpy as np

from ...checking.probes import signed
from ...checking.probes import sizes
from ...checking.probes import upstream
from ...checking.spec import Probe
from ...checking.spec import as_dtype
from ...checking.verdicts import Wrong

# Each graph: its records in recording order ("u=x*x": output u, the product of x and
# x), and the closed forms of its leaves' gradients.
GRAPHS = {
    "v = x*x + x": ("u=x*x v=u+x", lambda x, y, dy: {"x": dy * (2 * x + 1)}),
    "w = x + x": ("w=x+x", lambda x, y, dy: {"x": 2 * dy}),
    "z = x*x*x": ("u=x*x z=u*x", lambda x, y, dy: {"x": 3 * dy * x**2}),
    "s = (x + x) + x": ("t=x+x s=t+x", lambda x, y, dy: {"x": 3 * dy}),
    "c = (x*y + y) * (x*y)": (
        "a=x*y b=a+y c=b*a",
        lambda x, y, dy: {"x": dy * (2 * x * y + y) * y, "y": dy * (2 * x * x * y + 2 * x * y)},
    ),
}


def draw(rng) -> list:
    """The five graphs with fresh values and upstreams (never 1): x*x + x (a vector; the
    rule of `+` hands one array to two inputs), x + x (a (1, n) row), x*x*x (a float32
    scalar, where a Python float stored would widen it), (x + x) + x (float32) and two
    inputs sharing a graph (a matrix, y with a 0: stored gradients with a 0 entry)."""
    m, n = sizes(rng, 2)
    probes = []
    for graph, shape in zip(GRAPHS, [(n,), (1, n), (), (m,), (m, n)]):
        dtype = "float32" if shape in ((m,), ()) else "float64"
        x, y = (as_dtype(signed(rng, shape, 0.6), dtype) for _ in "xy")
        if shape == (m, n):
            y.flat[0] = 0.0
        probes.append(Probe(dtype, x, as_dtype(upstream(rng, shape), dtype), {"y": y}, graph))
    return probes


def reverse_pass(p, accumulate, dtype=None) -> dict:
    """The check's own tape: the graph's forward values, then its reverse pass, with
    ``accumulate(grads, key, c)`` adding each contribution; the leaves' gradients."""
    dtype = dtype or p.dtype
    records = [(r[0], r[2], r[3], r[4]) for r in GRAPHS[p.label][0].split()]
    v = {"x": np.array(p.x, dtype=dtype), "y": np.array(p.y, dtype=dtype)}
    for out, left, op, right in records:
        v[out] = v[left] + v[right] if op == "+" else v[left] * v[right]
    grads = {records[-1][0]: np.array(p.upstream, dtype=dtype)}
    for out, left, op, right in reversed(records):
        if out not in grads:  # every record leads to the target
            raise Wrong(
                f"The entry for {out!r} left `grads`: change only grads[key].", "not_stored"
            )
        dy = grads[out]
        shares = (dy, dy) if op == "+" else (dy * v[right], dy * v[left])
        for key, contribution in zip((left, right), shares):
            accumulate(grads, key, contribution)
    return {leaf: grads.get(leaf) for leaf in "xy" if leaf in GRAPHS[p.label][0]}
