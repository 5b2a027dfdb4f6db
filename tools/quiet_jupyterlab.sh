#!/bin/bash
# JupyterLab's first minute, shared by `./course.sh lab`, Binder's postBuild and so
# the hub image built from binder/: no pop-up asking whether to fetch Jupyter news
# (the same plugin also checks for JupyterLab updates). The setting is written into
# the environment's own prefix ({sys.prefix}/etc/jupyter/labconfig/page_config.json),
# so it applies to that environment only and never touches the user's home.
#
#   tools/quiet_jupyterlab.sh [path/to/jupyter]     (default: the jupyter on PATH)
set -euo pipefail
jupyter="${1:-jupyter}"
plugin="@jupyterlab/apputils-extension:announcements"
# Done already? (jupyter lives in {prefix}/bin in a venv or a conda environment.)
prefix="$(cd "$(dirname "$(command -v "$jupyter")")/.." && pwd)"
if grep -qs "\"$plugin\": true" "$prefix/etc/jupyter/labconfig/page_config.json"; then
  exit 0
fi
if ! output="$("$jupyter" labextension disable --level=sys_prefix "$plugin" 2>&1)"; then
  echo "Could not disable JupyterLab's news pop-up ($plugin):" >&2
  echo "$output" >&2
  exit 1
fi
