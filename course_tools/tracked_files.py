"""The repository as git hands it out: the files it tracks, or would track (new files
that ``.gitignore`` does not exclude), and nothing else (no virtual environments, no
caches). What repo2docker copies into the hub image (:mod:`course_tools.hub_image`),
what a learner's clone holds (:mod:`course_tools.benchmark_hub`), and what Binder and
``pip install git+https://...`` see (the Binder and Colab tests).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .config import ROOT


def tracked_files(root: Path = ROOT) -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def copy_tracked(target: Path, root: Path = ROOT) -> Path:
    """The repository as repo2docker (or a git clone) sees it, in ``target``."""
    shutil.rmtree(target, ignore_errors=True)
    for name in tracked_files(root):
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, destination)
    return target
