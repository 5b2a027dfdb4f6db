"""Other Pythons than the one running: found, given an environment, made kernels.

The tests that run the notebooks elsewhere than in the course's ``.venv`` use these:
the simulated Google Colab (Colab's Python and packages, ``tests/colab/``) and the
oldest Python the course supports (``tests/test_python_range.py``). Each environment
is built once under ``.cache/`` and reused while its requirements and its Python stay;
:func:`run_notebook` runs a notebook there, in the same way for both.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path


def find_python(version: str) -> Path | None:
    """An interpreter of ``version`` ("3.10"): on the PATH, or one of pyenv's."""
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "-c", ""], capture_output=True).returncode == 0:
        return Path(found)  # (a pyenv shim of a version not selected fails to run)
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = sorted(root.glob(f"versions/{version}.*/bin/python{version}"))
    return candidates[-1] if candidates else None


def pip(python: Path, *arguments: str, check: bool = True, cwd=None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *arguments],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=cwd,
    )
    if check and done.returncode != 0:
        raise RuntimeError(
            f"pip {' '.join(arguments)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
    return done


def cached_environment(base: Path, cache: Path, install: list[list[str]], cwd=None) -> Path:
    """A virtual environment of ``base`` in ``cache``, where each argument list of
    ``install`` was given to ``pip install`` in turn; built once, then reused while the
    lists (and the files they name) and the Python stay the same. Its Python."""
    release = subprocess.run(
        [str(base), "-c", "import sys; print(sys.version)"], capture_output=True, text=True
    ).stdout
    digest = hashlib.sha256(release.encode() + json.dumps(install).encode())
    for arguments in install:
        for argument in arguments:
            path = Path(cwd or ".", argument)
            if argument.endswith(".txt") and path.is_file():
                digest.update(path.read_bytes())
    folder = cache / f"venv-{digest.hexdigest()[:12]}"
    python = folder / "bin" / "python"
    if not (folder / "complete").exists():
        if cache.exists():  # an older environment: about 1.5 GB each
            for stale in cache.glob("venv-*"):
                shutil.rmtree(stale, ignore_errors=True)
        subprocess.run([str(base), "-m", "venv", "--clear", str(folder)], check=True)
        for arguments in install:
            pip(python, "install", "--quiet", *arguments, cwd=cwd)
        (folder / "complete").write_text(json.dumps(install) + "\n")
    return python


def kernel_specs(python: Path, folder: Path, name: str):
    """A kernel spec manager that knows one kernel, ``name``, running ``python``."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = folder / name
    spec.mkdir(parents=True, exist_ok=True)
    kernel = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python 3 ({name})",
        "language": "python",
    }
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return KernelSpecManager(kernel_dirs=[str(folder)])


def run_notebook(nb, python: Path, cwd: Path, scratch: Path, variables: dict[str, str]) -> None:
    """Run ``nb`` (an nbformat node, its outputs filled in place) top to bottom in a
    kernel of ``python`` started in ``cwd``, with this process's environment less its
    virtual environment, plus ``variables``. Raises at the first cell that raises."""
    from jupyter_client import KernelManager
    from nbclient import NotebookClient

    name = f"python-{Path(python).parent.parent.name}"
    manager = KernelManager(
        kernel_name=name, kernel_spec_manager=kernel_specs(python, scratch, name)
    )
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environment.update(variables)
    client = NotebookClient(
        nb, km=manager, timeout=600, allow_errors=False, resources={"metadata": {"path": str(cwd)}}
    )
    try:
        client.execute(env=environment)
    finally:
        # nbclient leaves a kernel it was handed running: stop it, or every notebook's
        # kernel (about 0.7 GB each) stays alive until the test session ends.
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
