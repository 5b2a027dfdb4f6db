"""Save the widgets' state with each notebook, in JupyterLab's settings for one environment.

JupyterLab does not save widget state by default, so a notebook saved after its
widgets ran and opened again shows "Error displaying widget: model not found" where
each widget was. With ``saveState`` on, the course's widgets come back as the
learner left them, drawn by their own JavaScript from the saved state, kernel or
not. ``./course.sh lab``, Binder's postBuild and so the hub image run this; it
writes ``{prefix}/share/jupyter/lab/settings/overrides.json`` (the setting's
default for that environment only; a learner's own setting still wins).

    python -m course_tools.widget_state [PREFIX]     (default: this Python's prefix)
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"


def save_widget_state(prefix: str | Path = sys.prefix) -> Path:
    """Turn on ``saveState`` in the environment at ``prefix``; keep its other overrides."""
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    overrides = json.loads(path.read_text()) if path.is_file() else {}
    if overrides.get(PLUGIN, {}).get("saveState") is not True:
        overrides.setdefault(PLUGIN, {})["saveState"] = True
        path.parent.mkdir(parents=True, exist_ok=True)
        written = path.with_name(f"{path.name}.{os.getpid()}")  # (whole, for a reader at once)
        written.write_text(json.dumps(overrides, indent=2) + "\n")
        os.replace(written, path)
    return path


if __name__ == "__main__":
    save_widget_state(*sys.argv[1:2])
