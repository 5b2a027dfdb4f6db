"""An exercise as data: what to probe, what is right, and the mistakes to name (lesson 00).

Every check of the course is an :class:`Exercise`, a handful of declarations that one
judge (:mod:`.judge`) interprets the same way for every exercise: its probes
(:class:`Probe`, declared by :class:`Points`, :class:`Probes`, :class:`Shaped` or a
function ``draw(rng) -> [Probe, ...]``); its ``reference``, one array or a dict of named
*parts*, computed independently of the method the exercise asks for (closed forms in
float64, finite differences of a reference); the mistakes it names (:class:`Mistake`,
:class:`Symptom`, :class:`Pattern`, :class:`Shape`, :class:`Story`); and a *harness*
(:mod:`.harness`, one per kind of answer) that knows how to call the answer, what method
the exercise demands, and the mistakes every answer of that kind can make.

The mistake codes an exercise declares are registered when it is made, with their
one-line meaning, and its check's docstring is written from the declarations.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

import numpy as np

from . import mistakes
from .probes import upstream as draw_upstream
from .verdicts import exercise

LEVELS = {1: "easy", 2: "medium", 3: "hard"}


@dataclass(frozen=True)
class Probe:
    """One call's inputs: their dtype, their values ``x`` (float64, as the answer sees
    them after rounding to ``dtype``), the ``upstream`` gradient the check's tape starts
    from (when there is one), exercise-specific ``data`` (read as attributes:
    ``probe.w``) and a ``label`` that says which probe a hint is about."""

    dtype: str
    x: Any = None
    upstream: Any = None
    data: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    at: Any = None

    def __getattr__(self, name: str):
        data = object.__getattribute__(self, "data")
        if name in data:
            return data[name]
        raise AttributeError(name)

    def but(self, **changes) -> Probe:
        """The same probe with some fields (or ``data`` entries) changed."""
        fields = {k: v for k, v in changes.items() if k in Probe.__dataclass_fields__}
        extra = {k: v for k, v in changes.items() if k not in fields}
        if extra:
            fields["data"] = {**self.data, **extra}
        return replace(self, **fields)

    @property
    def where(self):
        """The points a hint quotes ("at x = ..."): ``at`` if given, else ``x``."""
        return self.x if self.at is None else self.at

    @property
    def shape(self) -> tuple:
        return tuple(np.shape(self.x))


def as_dtype(values, dtype: str) -> np.ndarray:
    """``values`` rounded to ``dtype`` (what TensorFlow sees), back in float64."""
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float64).astype(dtype).astype(np.float64)


@dataclass(frozen=True)
class Points:
    """Values for an element-wise probe: ``fixed`` points (every boundary the lesson
    names) plus ``fresh`` ones, ``(low, high, count)`` drawn anew at every call."""

    fixed: tuple = ()
    fresh: tuple = ()
    decimals: int | None = 3

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        drawn = [rng.uniform(low, high, size=count) for low, high, count in self.fresh]
        if self.decimals is not None:
            drawn = [np.round(d, self.decimals) for d in drawn]
        return np.unique(np.concatenate([np.asarray(self.fixed, dtype=np.float64), *drawn]))

    def describe(self) -> str:
        shown = ", ".join(f"{v:g}" for v in self.fixed[:12])
        more = ", ..." if len(self.fixed) > 12 else ""
        fresh = "; ".join(f"{count} in [{low:g}, {high:g}]" for low, high, count in self.fresh)
        return f"fixed {shown}{more}" + (f"; fresh {fresh}" if fresh else "")


SIZE_ONE_SHAPES = ((1,), (1, 3))


@dataclass(frozen=True)
class Probes:
    """Element-wise probes: per dtype, the vector of all ``points`` and each of
    ``shapes`` filled with draws from them. With ``size_one`` (the default) the first
    dtype is also probed with shapes (1,) and (1, 3), so a squeeze or an axis added
    shows. With ``upstream``, each probe carries an upstream of both signs, never 1."""

    points: Mapping[str, Points]
    shapes: Mapping[str, tuple] = field(default_factory=dict)
    size_one: bool = True
    upstream: bool = False
    data: Callable | None = None

    def _shapes(self, index: int, dtype: str) -> list:
        shapes = list(self.shapes.get(dtype, ("points",)))
        if self.size_one and index == 0:
            shapes += [s for s in SIZE_ONE_SHAPES if s not in shapes]
        return shapes

    def draw(self, rng: np.random.Generator) -> list[Probe]:
        found = []
        for index, (dtype, points) in enumerate(self.points.items()):
            values = as_dtype(points.draw(rng), dtype)
            for shape in self._shapes(index, dtype):
                x = values if shape == "points" else rng.choice(values, size=shape)
                x = np.asarray(x, dtype=np.float64)
                label = (
                    f"a {dtype} vector of {x.size} points"
                    if shape == "points"
                    else f"a {dtype} input of shape {tuple(shape)}"
                )
                probe = Probe(dtype, x, label=label)
                if self.upstream:
                    probe = probe.but(upstream=as_dtype(draw_upstream(rng, x.shape), dtype))
                if self.data is not None:
                    probe = probe.but(**self.data(rng, probe))
                found.append(probe)
        return found

    def describe(self) -> str:
        lines = []
        for index, (dtype, points) in enumerate(self.points.items()):
            shown = ", ".join(str(tuple(s)) for s in self._shapes(index, dtype) if s != "points")
            lines.append(
                f"* {dtype}: {points.describe()}" + (f"; also shapes {shown}" if shown else "")
            )
        if self.upstream:
            lines.append("* upstreams of both signs, never 1")
        return "\n".join(lines)


@dataclass(frozen=True)
class Shaped:
    """Probes built from named axis sizes, for answers of several shapes (a Jacobian, a
    batch): ``sizes(rng)`` lists ``(dtype, {axis: size})``, whose docstring says what is
    drawn, and ``make(rng, dtype, sizes)`` builds each probe. With ``size_one`` (the
    default) the first dtype is probed once more with every axis of size 1, a batch of one
    included, so that a squeeze shows; an exercise whose check could not afford that call
    puts size-1 axes into the sizes it lists instead."""

    make: Callable
    sizes: Callable
    size_one: bool = True

    def draw(self, rng: np.random.Generator) -> list[Probe]:
        listed = list(self.sizes(rng))
        if self.size_one and listed:
            listed.append((listed[0][0], dict.fromkeys(listed[0][1], 1)))
        return [self.make(rng, dtype, sizes) for dtype, sizes in listed]

    def describe(self) -> str:
        text = " ".join((self.sizes.__doc__ or "").split())
        return text + (" Then every axis of size 1, a batch of one." if self.size_one else "")


@dataclass(frozen=True)
class Mistake:
    """A wrong answer named by what it ``gives`` at a probe (an array for ``part``,
    the harness's main part by default; or, with no ``part``, a dict of parts, each of
    which it is recognised in). ``hint`` may name probe fields in braces
    (``{n}``, ``{dtype}``). ``means`` is the code's one-line meaning, needed once for a
    code the framework does not already know. With ``where_finite``, the mistake is
    recognised wherever the answer is finite (its far ends are another mistake)."""

    code: str
    hint: str
    gives: Callable[[Probe], Any]
    part: str | None = None
    means: str = ""
    where_finite: bool = False


@dataclass(frozen=True)
class Symptom:
    """A property of one part of the result: ``shows(got, probe)`` is a boolean mask of
    the points that have it, looked for only where ``region(probe)`` is true. The hint
    may name ``{points}`` (where it showed), ``{value}`` (the first such value) and the
    probe's fields."""

    code: str
    hint: str
    shows: Callable[[np.ndarray, Probe], np.ndarray]
    region: Callable[[Probe], np.ndarray] | None = None
    part: str | None = None
    means: str = ""
    at: Callable[[Probe], np.ndarray] | None = None


@dataclass(frozen=True)
class Pattern:
    """A mistake recognised by a test of the result itself: ``find(got, probe)`` returns
    the fields of ``hint`` (a dict, perhaps empty) when the result shows it, else None.
    For what no fixed formula describes (a clip at a range of the learner's choosing,
    the power of a factor)."""

    code: str
    hint: str
    find: Callable[[np.ndarray, Probe], dict | None]
    part: str | None = None
    means: str = ""


@dataclass(frozen=True)
class Shape:
    """A wrong answer named by the shape of what came back, before its values are read:
    ``shape(probe)`` is the shape that mistake gives (None where the probe cannot show
    it), such as ``()`` for a sum over every axis."""

    code: str
    hint: str
    shape: Callable[[Probe], tuple | None]
    means: str = ""
    part: str | None = None


@dataclass(frozen=True)
class Story:
    """Symptoms reported together (``Still 2 failure modes of the log1pexp story: ...``),
    each only for a part that is right in the ``quiet`` region, where none of them can
    act: a formula wrong everywhere has another mistake, whatever its far ends do."""

    name: str
    symptoms: tuple
    quiet: Callable[[Probe], np.ndarray]


def _codes_of(exercise: Exercise):
    for item in (*exercise.mistakes, *(s for story in exercise.stories for s in story.symptoms)):
        yield item.code, item.means


@dataclass(frozen=True, eq=False)
class Exercise:
    """One exercise: its heading (number, ``title``, difficulty ``stars``, ``minutes``),
    the ``harness`` for its kind of answer, its probes, its ``reference``, and its
    ``mistakes`` (:class:`Mistake` or :class:`Symptom`, tried in order) and ``stories``.

    ``describe`` says, per part, what it should be (the last words of a hint that
    names no mistake); ``claim`` what the praise says was compared; ``tolerance``,
    when given, ``(probe, part) -> Tolerance`` replaces the dtype's own (its ``atol``
    may be an array, one bound per point: a value that only needs to be small at some
    points and exact at others).
    """

    number: str
    title: str
    stars: int
    minutes: int
    harness: Any
    probes: Any
    reference: Callable[[Probe], Any]
    mistakes: tuple = ()
    stories: tuple = ()
    describe: Mapping[str, str] = field(default_factory=dict)
    claim: str = ""
    tolerance: Callable | None = None

    def __post_init__(self):
        mistakes.register({code: means for code, means in _codes_of(self) if means})
        unknown = [code for code, _ in _codes_of(self) if not mistakes.is_known(code)]
        if unknown:
            raise ValueError(f"exercise {self.number}: codes without a meaning: {unknown}")

    @property
    def heading(self) -> str:
        """The notebook's heading for this exercise, e.g.
        ``Exercise 3.1: A stable log1pexp (★★★ hard, 15 min)``."""
        stars = "★" * self.stars + "☆" * (3 - self.stars)
        difficulty = f"{stars} {LEVELS[self.stars]}, {self.minutes} min"
        return f"Exercise {self.number}: {self.title} ({difficulty})"

    def draw(self, rng) -> list[Probe]:
        return self.probes.draw(rng) if hasattr(self.probes, "draw") else self.probes(rng)

    def expected(self, probe: Probe) -> dict:
        """The reference at ``probe`` as a dict of float64 parts."""
        found = self.reference(probe)
        if not isinstance(found, Mapping):
            found = {self.harness.main: found}
        return {part: np.asarray(values, dtype=np.float64) for part, values in found.items()}

    def evaluate(self, answer):
        """The :class:`~.verdicts.CheckResult` of ``answer``."""
        return self.check.evaluate(answer)

    @functools.cached_property
    def check(self):
        """The function a notebook calls: prints the verdict (raises in strict mode)."""
        from .judge import run

        check = exercise(self.number, self.title)(lambda answer: run(self, answer))
        check.spec = self
        check.__name__ = getattr(self.harness, "name", "check").strip("`")
        check.__doc__ = self.docstring()
        return check

    def docstring(self) -> str:
        probes = self.probes.describe() if hasattr(self.probes, "describe") else None
        probes = probes or inspect.cleandoc(self.probes.__doc__ or "")
        codes = ", ".join(dict.fromkeys(code for code, _ in _codes_of(self)))
        return (
            f"Exercise {self.number}: {self.title}.\n\nProbes (fresh on every call):\n"
            f"{probes}\n\nMethod: {self.harness.describe()}\n\nMistakes named, in order: "
            f"{codes or 'the generic ones only'}; then the harness's own, the shared "
            f"patterns, and a point that differs."
        )
