"""What an answer did to its tensors, noted in one run (lessons 02-05).

:class:`Provenance` keeps every eager operation the answer ran (its name, input and
output tensors, on TensorFlow's single id counter) and every conversion of a tensor to
NumPy or to a Python number, while :func:`record_operations` is active; and it holds
the check's own tape, which settles whether a path from a source to a result exists.
:mod:`.provenance` turns what it finds into the cause of a missing gradient.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from dataclasses import field

import numpy as np

_FLAT = ", which TensorFlow gives no gradient (it is flat almost everywhere)"
FLAT_OPS = {
    "Round": "tf.round" + _FLAT,
    "Rint": "tf.math.rint" + _FLAT,
    "Floor": "tf.floor" + _FLAT,
    "Ceil": "tf.math.ceil" + _FLAT,
    "Sign": "tf.sign, whose derivative is 0",
}
INTEGER_OPS = {
    "ArgMax": "tf.argmax, whose result is an integer index with nothing to differentiate",
    "ArgMin": "tf.argmin, whose result is an integer index with nothing to differentiate",
    "Cast": "a tf.cast to an integer dtype, which drops the fractional part and the "
    "gradient with it",
}
STOP_GRADIENT = "tf.stop_gradient, which blocks the gradient on purpose"
ASSIGN_OPS = {"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"}
SHAPE_ONLY = {"OnesLike", "ZerosLike", "Shape", "ShapeN", "Size", "Rank"}


@dataclass
class Operation:
    time: int
    name: str
    inputs: list
    outputs: list
    numbers: list = field(default_factory=list)  # Python numbers passed as inputs (2 in x**2)


class Provenance:
    """The operations and conversions of one run, and the check's own tape."""

    def __init__(self, tape):
        self.tape = tape  # persistent, watching every input from the start
        self.operations: list[Operation] = []
        self.conversions: list = []  # (time, tensor)
        self._connected: dict = {}

    def connected(self, target, source) -> bool:
        """The check's tape finds a path from ``source`` to ``target``."""
        key = (id(target), id(source))
        if key not in self._connected:
            import tensorflow as tf

            found = False
            if isinstance(target, (tf.Tensor, tf.Variable)) and target.dtype.is_floating:
                try:
                    found = self.tape.gradient(target, source) is not None
                except Exception:  # noqa: BLE001 - no path we can show
                    found = False
            self._connected[key] = found
        return self._connected[key]

    def uses_of(self, source) -> list[int]:
        """Times of the operations that read ``source`` directly."""
        handle = getattr(source, "handle", None)
        return [
            op.time
            for op in self.operations
            if any(t is source or (handle is not None and t is handle) for t in op.inputs)
        ]

    def reads_of(self, variable, handle=None) -> list[Operation]:
        """Operations that read ``variable`` (the fast path reads a variable passed to
        an operation itself, without a ReadVariableOp), or its ``handle``."""
        handle = handle if handle is not None else getattr(variable, "handle", None)
        return [
            op
            for op in self.operations
            if any(t is variable for t in op.inputs)
            or (op.name == "ReadVariableOp" and op.inputs and op.inputs[0] is handle)
        ]

    def variable_of(self, handle):
        for op in self.operations:
            for t in op.inputs:
                if getattr(t, "handle", None) is handle:
                    return t
        return None

    def narrowed_to_float32(self) -> bool:
        """Some operation took float64 in and gave float32 out, or widened float32 to
        float64: float32 arithmetic inside a float64 computation."""

        def dtypes(tensors) -> set:
            return {t.dtype.name for t in tensors if getattr(t, "dtype", None) is not None}

        return any(
            {"float64", "float32"} <= dtypes(op.inputs) | dtypes(op.outputs)
            and dtypes(op.inputs) != dtypes(op.outputs)
            for op in self.operations
        )

    def depends_on(self, target, source, copies: bool = False) -> bool:
        """Some chain of the noted operations leads from ``source``'s values to ``target``
        (an operation that reads only a shape, such as ones_like, is no link); with
        ``copies``, from a tensor no operation made that holds ``source``'s values (a copy
        made outside TensorFlow, such as tf.constant(np.asarray(x)))."""
        made_by = {
            id(t): op for op in self.operations if op.name not in SHAPE_ONLY for t in op.outputs
        }
        ends = {id(source), id(getattr(source, "handle", source))}
        frontier, done = [target], set()
        while frontier:
            tensor = frontier.pop()
            if id(tensor) in ends or (copies and _same_values(tensor, source)):
                return True
            if id(tensor) not in done and id(tensor) in made_by:
                done.add(id(tensor))
                frontier += made_by[id(tensor)].inputs
        return False

    def cut_by(self, target, source):
        """``(code, detail)`` for what cut the path from ``source`` to ``target``."""
        import tensorflow as tf

        def fed_by_source(op):
            return any(
                t is source
                or (isinstance(t, tf.Tensor) and t.dtype.is_floating and self.connected(t, source))
                for t in op.inputs
            )

        for op in self.operations:  # an assign whose value came from the source
            if (
                op.name in ASSIGN_OPS
                and len(op.inputs) >= 2
                and self.connected(op.inputs[1], source)
            ):
                handle = op.inputs[0]
                variable = self.variable_of(handle) if isinstance(handle, tf.Tensor) else handle
                later = [
                    read
                    for read in self.reads_of(variable, handle)
                    if read.time > op.time and read.outputs
                ]
                if any(self.connected(target, read.outputs[0]) for read in later):
                    return "stateful_assign", None
        for op in self.operations:  # an operation without a gradient on the path
            if not op.inputs or not op.outputs:
                continue
            output = op.outputs[0]
            if op.name in FLAT_OPS:
                if fed_by_source(op) and self.connected(target, output):
                    return "non_differentiable_op", FLAT_OPS[op.name]
            elif op.name in INTEGER_OPS:
                if not output.dtype.is_floating and fed_by_source(op):
                    return "non_differentiable_op", INTEGER_OPS[op.name]
            elif op.name == "StopGradient":
                if fed_by_source(op):
                    return "non_differentiable_op", STOP_GRADIENT
        for _, tensor in self.conversions:  # a detour through NumPy
            if tensor is source or (tensor.dtype.is_floating and self.connected(tensor, source)):
                return "numpy_detour", None
        return None


def constants_added(op, besides=()) -> list[float]:
    """The scalar constants an addition or subtraction ``op`` takes (Python numbers and
    tensors of rank 0 other than ``besides``), as floats: an epsilon, a finite difference's
    step."""
    if op.name not in ("AddV2", "Add", "Sub"):
        return []
    others = [t for t in op.inputs if not any(t is b for b in besides)]
    tensors = [float(np.asarray(t)) for t in others if getattr(t.shape, "rank", None) == 0]
    return [float(n) for n in op.numbers] + tensors


def _same_values(tensor, source) -> bool:
    try:
        got, want = np.asarray(tensor), np.asarray(source)
    except Exception:  # noqa: BLE001 - a resource handle, an exotic input
        return False
    return got.shape == want.shape and got.size > 1 and np.array_equal(got, want)


@contextlib.contextmanager
def record_operations(provenance: Provenance):
    """Note eager operations and NumPy conversions while the block runs."""
    from tensorflow.python import pywrap_tfe
    from tensorflow.python.eager import execute
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import resource_variable_ops

    tensor_base = ops._EagerTensorBase
    kinds = (ops.EagerTensor, resource_variable_ops.BaseResourceVariable)
    conversions = ("numpy", "__array__", "__float__", "__int__")
    replaced = [(pywrap_tfe, "TFE_Py_FastPathExecute"), (execute, "execute")]
    saved = {key: getattr(*key) for key in replaced + [(tensor_base, c) for c in conversions]}

    def tensors(values) -> list:
        found = []
        for value in values:
            if isinstance(value, kinds):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(item for item in value if isinstance(item, kinds))
        return found

    def note(name, inputs, result):
        outputs = tensors(result if isinstance(result, (list, tuple)) else [result])
        name = name.decode() if isinstance(name, bytes) else str(name)
        numbers = [v for v in inputs if isinstance(v, (int, float)) and not isinstance(v, bool)]
        provenance.operations.append(Operation(ops.uid(), name, tensors(inputs), outputs, numbers))

    fast_path = saved[(pywrap_tfe, "TFE_Py_FastPathExecute")]
    slow_path = saved[(execute, "execute")]

    def fast_path_execute(ctx, op_name, name, *args):
        result = fast_path(ctx, op_name, name, *args)
        note(op_name, args, result)
        return result

    def slow_execute(op_name, num_outputs, inputs, attrs, ctx, name=None):
        result = slow_path(op_name, num_outputs, inputs, attrs, ctx, name)
        note(op_name, inputs, result)
        return result

    def conversion(method):
        original = saved[(tensor_base, method)]

        def convert(self, *args, **kwargs):
            provenance.conversions.append((ops.uid(), self))
            return original(self, *args, **kwargs)

        return convert

    pywrap_tfe.TFE_Py_FastPathExecute = fast_path_execute
    execute.execute = slow_execute
    for method in conversions:
        setattr(tensor_base, method, conversion(method))
    try:
        yield
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)
