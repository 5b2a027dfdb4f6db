"""What one view of the log1pexp explorer (lesson 03) shows: an immutable state.

:class:`ExplorerState` is the explorer's single source of truth. It is valid by
construction: building one checks every field once, says in plain words what is
wrong with a bad one, and clamps numbers into the dtype's bounds. Changing the
view means building a new state (:meth:`ExplorerState.changed`); the widget then
writes its controls from it and never reads them back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

from ...log1pexp import DTYPES
from ...log1pexp import METHODS
from ...log1pexp import QUANTITIES
from ...log1pexp import dtype_name

# The x bounds reach past each dtype's exp overflow (float16 11.09, float32 88.72,
# float64 709.78) and stay where float64's reference sigmoid is a nonzero number.
X_BOUNDS = {"float32": (-120.0, 120.0), "float64": (-740.0, 760.0), "float16": (-16.0, 16.0)}
X_STEPS = {"float32": 0.1, "float64": 0.1, "float16": 0.01}
DEFAULT_X_RANGE = {"float32": (-20.0, 100.0), "float64": (640.0, 720.0), "float16": (-12.0, 14.0)}
DEFAULT_READOUT_X = {"float32": 88.5, "float64": 709.7, "float16": 10.5}
DEFAULT_QUANTITY = "gradient"
# A range narrower than this many arrow steps is widened to it, around its middle.
NARROWEST_STEPS = 10


def _choices(values) -> str:
    names = [f"'{value}'" for value in values]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _dtype(value) -> str:
    try:
        name = dtype_name(value)
    except TypeError:
        name = None
    if name not in DTYPES:
        raise ValueError(f"dtype must be {_choices(DTYPES)}, not {value!r}.")
    return name


def _number(value, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, not {value!r}.") from None
    if math.isnan(number):
        raise ValueError(f"{what} must be a number, not nan.")
    return number


def _sequence(value, what: str) -> tuple:
    """``value`` as a tuple: a single string is one item, a lone number none."""
    if isinstance(value, str):
        return (value,)
    try:
        return tuple(value)
    except TypeError:
        if what:
            raise ValueError(f"{what}, not {value!r}.") from None
        return ()


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


@dataclass(frozen=True)
class ExplorerState:
    """Everything one view depends on; any two equal states draw the same pixels.

    * ``dtype``: "float32", "float64" or "float16" (``tf.float32`` and NumPy
      dtypes are accepted and stored by name);
    * ``x_range``: (low, high), sorted and clamped to :data:`X_BOUNDS` of the
      dtype; ``None`` gives the dtype's opening range;
    * ``methods``: any subset of "naive", "documented", "stable", stored in that
      order (a single name is accepted);
    * ``quantity``: "value", "gradient", "second_derivative" or
      "relative_error" (of the gradient, against float64);
    * ``readout_x``: where the readout reads the numbers, clamped like the range;
      ``None`` gives the dtype's opening readout (the widget reads it at the
      tabulated point nearest to it);
    * ``remembered``: the (x_range, readout_x) last shown in each other dtype, so
      that a round trip through another dtype comes back to them.

    A range narrower than :data:`NARROWEST_STEPS` arrow steps (a zero-width one
    included) is widened around its middle, and ``message`` says so. A bad dtype,
    method, quantity or a value that is not a number raises ``ValueError`` saying
    what was expected.
    """

    dtype: str = "float32"
    x_range: tuple[float, float] | None = None
    methods: tuple[str, ...] = METHODS
    quantity: str = DEFAULT_QUANTITY
    readout_x: float | None = None
    remembered: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    message: str = field(default="", compare=False, hash=False)

    def __post_init__(self) -> None:
        dtype = _dtype(self.dtype)
        if self.quantity not in QUANTITIES:
            raise ValueError(f"quantity must be {_choices(QUANTITIES)}, not {self.quantity!r}.")
        methods = _sequence(self.methods, "methods must be method names")
        unknown = [method for method in methods if method not in METHODS]
        if unknown:
            raise ValueError(
                f"methods must be chosen from {_choices(METHODS)}; "
                f"{', '.join(map(repr, unknown))} is not one of them."
            )
        low, high = X_BOUNDS[dtype]
        x_range = DEFAULT_X_RANGE[dtype] if self.x_range is None else self.x_range
        ends = () if isinstance(x_range, str) else _sequence(x_range, "")
        if len(ends) != 2:
            raise ValueError(f"x_range must be two numbers (low, high), not {x_range!r}.")
        ends = sorted(_clamp(_number(end, "each end of x_range"), low, high) for end in ends)
        ends, message = widened(ends, dtype)
        readout = DEFAULT_READOUT_X[dtype] if self.readout_x is None else self.readout_x
        fields = {
            "dtype": dtype,
            "x_range": ends,
            "methods": tuple(method for method in METHODS if method in methods),
            "readout_x": _clamp(_number(readout, "readout_x"), low, high),
            "remembered": dict(self.remembered),
            "message": message or self.message,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    @classmethod
    def default(cls, dtype="float32", **changes) -> ExplorerState:
        """The opening view of ``dtype``, with ``changes`` (``None``: keep) applied."""
        return cls(dtype=dtype).changed(**changes)

    def changed(self, **changes) -> ExplorerState:
        """A new state with ``changes`` applied; a ``None`` value leaves a field as is.

        A new dtype brings back the range and readout x last shown in it; on a first
        visit, it moves them to its own opening values when they are still at the
        old dtype's (a range of the learner's own is kept, clamped to the new
        bounds). ``message`` says what was widened, if anything, in this change only.
        """
        changes = {key: value for key, value in changes.items() if value is not None}
        settings = [name for name in self.__dataclass_fields__ if name not in _INTERNAL]
        unknown = sorted(set(changes) - set(settings))
        if unknown:
            raise ValueError(
                f"the explorer has no setting {', '.join(map(repr, unknown))}; "
                f"its settings are {_choices(settings)}."
            )
        dtype = _dtype(changes.pop("dtype", self.dtype))
        remembered = dict(self.remembered)
        if dtype != self.dtype:
            remembered[self.dtype] = (self.x_range, self.readout_x)
            if dtype in remembered:
                x_range, readout_x = remembered[dtype]
            else:
                x_range, readout_x = self.x_range, self.readout_x
                if x_range == DEFAULT_X_RANGE[self.dtype]:
                    x_range = DEFAULT_X_RANGE[dtype]
                if readout_x == DEFAULT_READOUT_X[self.dtype]:
                    readout_x = DEFAULT_READOUT_X[dtype]
            changes.setdefault("x_range", x_range)
            changes.setdefault("readout_x", readout_x)
        return replace(self, **changes, dtype=dtype, remembered=remembered, message="")

    @property
    def bounds(self) -> tuple[float, float]:
        """The lowest and highest x this dtype's controls allow."""
        return X_BOUNDS[self.dtype]

    @property
    def step(self) -> float:
        """One arrow-key step of the x controls."""
        return X_STEPS[self.dtype]

    def same_curves(self, other: ExplorerState | None) -> bool:
        """True when ``other`` draws the same curves (its readout x may differ)."""
        return other is not None and replace(other, readout_x=self.readout_x) == self


_INTERNAL = ("remembered", "message")


def widened(ends, dtype: str) -> tuple[tuple[float, float], str]:
    """``ends`` (sorted, within bounds), widened to :data:`NARROWEST_STEPS` arrow steps
    around their middle when narrower, and the message that says so (or "")."""
    low, high = ends
    width = NARROWEST_STEPS * X_STEPS[dtype]
    if high - low >= width - 1e-9:
        return (low, high), ""
    bottom, top = X_BOUNDS[dtype]
    middle = _clamp((low + high) / 2, bottom + width / 2, top - width / 2)
    new = (round(middle - width / 2, 6), round(middle + width / 2, 6))
    return new, (
        f"The x range {low:g} to {high:g} is too narrow to plot; "
        f"widened to {new[0]:g} to {new[1]:g}."
    )
