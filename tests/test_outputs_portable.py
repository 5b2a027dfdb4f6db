"""The saved outputs do not depend on the x86-64 CPU they were saved on.

The suite runs nbval strict over ``lessons/`` and ``solutions/`` twice:

* **natively**, as collected by pytest from ``testpaths``: the machine's own vector
  instructions (on a CPU with AVX-512, NumPy's AVX-512 loops and oneDNN's AVX-512
  kernels, which TensorFlow's float32 matrix products go through);
* **as on a CPU without AVX-512**, in the environment Binder builds
  (``tests/binder/test_binder.py``): kernels started with NumPy's AVX-512 dispatch
  targets disabled and oneDNN held to AVX2 (:mod:`course_tools.avx2_emulation`), which
  is what an x86-64-v3 CPU (AVX2, no AVX-512) runs. The test below proves that both
  settings take effect.

On a CPU with AVX-512 the two runs cover both kinds of x86-64 CPU that TensorFlow's
wheels run on; on one without, both take the AVX2 paths. The conftest's summary says
which. Neither run covers other architectures (ARM), GPUs or other library versions:
the setup cell names those as unverified.
"""

from __future__ import annotations

import os
import subprocess
import sys

from course_tools.avx2_emulation import without_avx512


def test_the_emulation_takes_the_avx2_paths():
    """Under the two settings NumPy finds no AVX-512 target and oneDNN says it runs AVX2."""
    probe = (
        "from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__\n"
        "print('numpy:', [t for t in __cpu_dispatch__ if __cpu_features__.get(t)])\n"
        "import tensorflow as tf\n"
        "tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        env=without_avx512(dict(os.environ, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="3")),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    numpy_targets = next(line for line in done.stdout.splitlines() if line.startswith("numpy:"))
    assert not any(target in numpy_targets for target in ("X86_V4", "AVX512")), numpy_targets
    isa = [line for line in done.stdout.splitlines() if ",isa:" in line]
    assert isa and all(line.endswith("isa:Intel AVX2") for line in isa), isa
