"""JupyterLab's first minute, shared by ``./course.sh lab``, Binder's postBuild and so
the hub image built from binder/: no pop-up asking whether to fetch Jupyter news (the
same plugin also checks for JupyterLab updates). The setting is written into the
environment's own prefix (``{prefix}/etc/jupyter/labconfig/page_config.json``), so it
applies to that environment only and never touches the user's home.

    python -m course_tools.quiet_jupyterlab [path/to/jupyter]   (default: jupyter on PATH)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

PLUGIN = "@jupyterlab/apputils-extension:announcements"


def quiet(jupyter: str = "jupyter") -> int:
    found = shutil.which(jupyter)
    if found is None:
        print(f"Could not disable JupyterLab's news pop-up: no {jupyter} here.", file=sys.stderr)
        return 1
    # jupyter lives in {prefix}/bin in a venv or a conda environment.
    prefix = Path(found).absolute().parent.parent
    page_config = prefix / "etc" / "jupyter" / "labconfig" / "page_config.json"
    if page_config.is_file() and f'"{PLUGIN}": true' in page_config.read_text(errors="replace"):
        return 0  # done already
    done = subprocess.run(
        [found, "labextension", "disable", "--level=sys_prefix", PLUGIN],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"Could not disable JupyterLab's news pop-up ({PLUGIN}):", file=sys.stderr)
        print(done.stdout + done.stderr, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(quiet(*sys.argv[1:2]))
