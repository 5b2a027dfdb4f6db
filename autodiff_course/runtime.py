"""Where the saved outputs hold, and the setup cell's line where this runtime differs
(introduced in lesson 00).

Every lesson's outputs were saved with the pinned TensorFlow on an x86-64 CPU without a
GPU (the suite checks them on x86-64 CPUs with and without AVX-512). Elsewhere the
runtime line names what differs and the lessons whose numbers rest on it."""

from __future__ import annotations

import platform
from dataclasses import dataclass

from ._pins import PINS

FIX_COMMAND = "pip install -r requirements.txt"


def _as_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


REFERENCE_RUNTIME = f"TensorFlow {PINS['tensorflow']} on an x86-64 CPU, without a GPU"
X86_64_NAMES = {"x86_64", "amd64"}  # platform.machine() on Linux and macOS, on Windows
# The lessons that print float results of TensorFlow's (and NumPy's) kernels.
LESSONS_WITH_FLOAT_RESULTS = (1, 2, 3, 4, 5, 6, 7)
# The lessons whose numbers rest on the CPU flushing subnormal float32 results to zero.
LESSONS_ON_FLUSH_TO_ZERO = (3, 4)
# The lessons that print results of float32 matrix products (TF32 on a GPU).
LESSONS_WITH_FLOAT32_MATMULS = (4, 5, 6, 7)
# The lesson whose optional aside rests on the 8-wide AVX float32 kernels of x86 builds.
LESSONS_ON_X86_KERNELS = (3,)


@dataclass(frozen=True)
class Runtime:
    """What the lessons' numbers rest on besides the package versions."""

    machine: str
    tensorflow: str | None
    gpus: int = 0
    tf32: bool = False
    colab: bool = False


def lessons(numbers: tuple[int, ...]) -> str:
    """'lesson 03', 'lessons 03 and 04', 'lessons 01 to 06' or 'lessons 03, 04 and 06'."""
    names = [f"{number:02d}" for number in numbers]
    if len(names) == 1:
        return f"lesson {names[0]}"
    if len(names) > 2 and list(numbers) == list(range(numbers[0], numbers[-1] + 1)):
        return f"lessons {names[0]} to {names[-1]}"
    return "lessons " + _and(names)


def runtime_differences(runtime: Runtime) -> list[str]:
    """How ``runtime`` differs from the reference one, each with what it may change."""
    differences = []
    pinned, version = PINS["tensorflow"], runtime.tensorflow
    too_old = version and not runtime.colab and _as_tuple(version) < _as_tuple(pinned)
    if version and version != pinned and not too_old:  # too old: a problem, reported above
        fix = (
            "Colab's own version, kept as it is"
            if runtime.colab
            else f"`{FIX_COMMAND}` installs {pinned}"
        )
        differences.append(
            f"TensorFlow is {version}, so the numbers, warnings and error messages of "
            f"{lessons(LESSONS_WITH_FLOAT_RESULTS)} may differ ({fix})"
        )
    if runtime.machine.lower() not in X86_64_NAMES:
        differences.append(
            f"the CPU is {runtime.machine}, not x86-64, so float results in "
            f"{lessons(LESSONS_WITH_FLOAT_RESULTS)} may differ in their last digits, and "
            f"the optional aside of {lessons(LESSONS_ON_X86_KERNELS)} on 8-wide AVX "
            "kernels describes x86 builds"
        )
    if runtime.gpus:
        differences.append(
            f"TensorFlow sees {runtime.gpus} GPU{'s' if runtime.gpus > 1 else ''} and runs "
            "the lessons' operations there, where the course has not been checked: float "
            f"results in {lessons(LESSONS_WITH_FLOAT_RESULTS)} may differ, most of all "
            f"where {lessons(LESSONS_ON_FLUSH_TO_ZERO)} rest on the CPU flushing "
            "subnormal numbers to zero"
        )
        if runtime.tf32:
            differences.append(
                "TF32 is on for the GPU's float32 matrix products (TensorFlow's default), "
                "which keeps about three significant digits: the float32 results of "
                f"{lessons(LESSONS_WITH_FLOAT32_MATMULS)} may differ from the fourth digit "
                "(`tf.config.experimental.enable_tensor_float_32_execution(False)` "
                "turns it off)"
            )
    return differences


def runtime_line(runtime: Runtime) -> str | None:
    """One line naming how ``runtime`` differs from the reference one, or None."""
    differences = runtime_differences(runtime)
    if not differences:
        return None
    return (
        f"Runtime note: the saved outputs come from {REFERENCE_RUNTIME}. Here "
        + "; ".join(differences)
        + "."
    )


def visible_gpus() -> int:
    import tensorflow as tf

    return len(tf.config.list_physical_devices("GPU"))


def tf32_enabled() -> bool:
    import tensorflow as tf

    return bool(tf.config.experimental.tensor_float_32_execution_enabled())


def current_runtime(versions: dict[str, str | None], colab: bool) -> Runtime:
    """This kernel's runtime (TensorFlow is imported to ask it about GPUs and TF32)."""
    gpus = visible_gpus()
    return Runtime(
        machine=platform.machine() or "unknown",
        tensorflow=versions.get("tensorflow"),
        gpus=gpus,
        tf32=gpus > 0 and tf32_enabled(),
        colab=colab,
    )
