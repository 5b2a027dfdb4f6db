"""Run a process as on an x86-64 CPU without AVX-512 (AVX2, x86-64-v3), on any x86-64 CPU.

NumPy's AVX-512 dispatch targets are disabled (``NPY_DISABLE_CPU_FEATURES``) and oneDNN,
which TensorFlow's float32 matrix products go through, is held to AVX2
(``ONEDNN_MAX_CPU_ISA``). The Binder test runs nbval over both folders this way, so that
the saved outputs are proven on both kinds of x86-64 CPU TensorFlow's wheels run on;
``tests/test_outputs_portable.py`` proves that both settings take effect.
"""

from __future__ import annotations

# NumPy 2.4 dispatches to X86_V3 (AVX2), X86_V4 (AVX-512), AVX512_ICL and AVX512_SPR;
# disabling X86_V4 alone leaves AVX512_ICL on where the CPU has it.
NUMPY_AVX512_TARGETS = ("X86_V4", "AVX512_ICL", "AVX512_SPR")
WITHOUT_AVX512 = {
    "NPY_DISABLE_CPU_FEATURES": " ".join(NUMPY_AVX512_TARGETS),
    "ONEDNN_MAX_CPU_ISA": "AVX2",
}


def without_avx512(environment: dict[str, str]) -> dict[str, str]:
    """``environment`` with the two settings added."""
    return dict(environment, **WITHOUT_AVX512)


def described() -> str:
    """The settings as a shell would set them, for messages."""
    return " ".join(f"{name}={value!r}" for name, value in WITHOUT_AVX512.items())
