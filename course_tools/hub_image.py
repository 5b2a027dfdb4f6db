"""The hub image, stood in for without Docker: the course's environment built from
``binder/`` as repo2docker builds it, with the course outside the learner's home.

The image that the instructor guide builds (``repo2docker --target-repo-dir /srv/repo``)
holds the course in ``/srv/repo``, its packages in one environment with repo2docker's
``jupyterhub-singleuser``, and ``binder/start`` as the entry point; a Zero to JupyterHub
hub mounts each learner's volume, empty at first, over the home. The stand-in:

* ``repo/``: the files git tracks (or would), as repo2docker copies them: ``/srv/repo``;
* ``env/``: a virtual environment with ``binder/requirements.txt`` installed from
  ``repo/`` (the helper package is an editable install of ``repo/``), the JupyterHub
  of repo2docker's base environment (its version read from repo2docker's own lock
  file), ``pip check`` passed and ``binder/postBuild`` run;
* ``proxy/``: configurable-http-proxy from the npm registry, at the version of
  ``tests/hub/proxy/package-lock.json``, for the hub itself.

Built once under ``.cache/hub-image/`` (git-ignored), keyed by every file that goes
into it, and reused; only ``repo/`` is copied afresh each time. Used by the Binder and
hub tests and by ``./course.sh bench``.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

from .config import ROOT
from .tracked_files import copy_tracked

CACHE = ROOT / ".cache" / "hub-image"
PROXY_PINS = ROOT / "tests" / "hub" / "proxy"
# The files whose content decides what the environment holds.
INPUTS = ("binder/requirements.txt", "binder/postBuild", "requirements.txt", "pyproject.toml")


def base_image_packages() -> dict[str, str]:
    """name -> version of the conda packages in repo2docker's base environment."""
    from importlib.util import find_spec

    package = Path(find_spec("repo2docker").origin).parent  # found, not imported
    lock = package / "buildpacks" / "conda" / "environment.py-3.11-linux-64.lock"
    found = {}
    for url in re.findall(r"/([^/\s]+)\.conda#", lock.read_text()):
        name, version, _build = url.rsplit("-", 2)
        found[name.lower().replace("_", "-")] = version
    return found


def jupyterhub_version() -> str:
    """The JupyterHub of the image: repo2docker's base environment's."""
    return base_image_packages()["jupyterhub-base"]


@dataclass(frozen=True)
class Image:
    folder: Path
    repo: Path  # the course, where the image has it (/srv/repo)
    bin: Path  # the environment's executables, first on the PATH as in the image
    proxy: Path  # configurable-http-proxy

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Variables for a process of the image: its executables first on the PATH,
        and nothing of the caller's environment (venv, coverage, the course's checks)."""
        base = dict(os.environ if base is None else base)
        for name in list(base):
            if name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME") or name.startswith(
                ("COV_CORE_", "COVERAGE_", "AUTODIFF_COURSE_", "JUPYTER", "JPY_")
            ):
                base.pop(name)
        base["PATH"] = f"{self.bin}{os.pathsep}{base.get('PATH', '')}"
        return base


def key() -> str:
    digest = hashlib.sha256()
    for name in INPUTS:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    for name in ("package.json", "package-lock.json"):
        digest.update((PROXY_PINS / name).read_bytes())
    digest.update(jupyterhub_version().encode() + sys.version.encode())
    return digest.hexdigest()[:12]


def run(command: list, cwd: Path, environment: dict, what: str, timeout: float = 1800) -> None:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def build(say=print) -> Image:
    """The stand-in image, built the first time and reused while its inputs stay."""
    folder = CACHE / f"image-{key()}"
    image = Image(
        folder,
        folder / "repo",
        folder / "env" / "bin",
        folder / "proxy" / "node_modules" / ".bin" / "configurable-http-proxy",
    )
    copy_tracked(image.repo)
    if (folder / "complete").exists():
        return image
    for stale in CACHE.glob("image-*"):  # about 1.5 GB each
        if stale != folder:
            shutil.rmtree(stale, ignore_errors=True)
    say(f"Building the hub image's stand-in in {folder} (the first time takes minutes).")
    venv.EnvBuilder(with_pip=True, clear=True).create(folder / "env")
    environment = image.environment()
    pip = [image.python, "-m", "pip", "--disable-pip-version-check"]
    run(
        [
            *pip,
            "install",
            "--quiet",
            "-r",
            "binder/requirements.txt",
            f"jupyterhub=={jupyterhub_version()}",
        ],
        image.repo,
        environment,
        "pip install -r binder/requirements.txt",
    )
    run([*pip, "check"], image.repo, environment, "pip check")
    run(["./binder/postBuild"], image.repo, environment, "binder/postBuild")
    proxy = folder / "proxy"
    proxy.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PROXY_PINS / name, proxy / name)
    run(["npm", "ci", "--no-audit", "--no-fund"], proxy, environment, "npm ci (the proxy)")
    (folder / "complete").write_text("built\n")
    return image
