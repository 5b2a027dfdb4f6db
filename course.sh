#!/usr/bin/env bash
# One entry point for learners, instructors and maintainers.
#
#   ./course.sh lab      set up from nothing, then open the course in JupyterLab
#   ./course.sh test     set up from nothing (test tools included), then run every test
#   ./course.sh build    regenerate lessons/ (and all outputs) from solutions/
#   ./course.sh figures  regenerate the static figures in figures/
#   ./course.sh bench    run the benchmark and print its table
#
# "Set up" means: create the virtual environment .venv if it is absent (with
# Python 3.10 to 3.12), install the pinned requirements and the course's helper
# package into it. Running it again only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${COURSE_VENV:-.venv}"

pick_python() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  for candidate in python3.11 python3.12 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 12))'; then
      echo "$candidate"; return
    fi
  done
  echo "The course needs Python 3.10, 3.11 or 3.12 (TensorFlow 2.21 supports no other)." >&2
  echo "Install one (python.org, your package manager or pyenv), or set PYTHON=/path/to/python3.11." >&2
  exit 1
}

set_up() {
  local requirements="$1"
  if [ ! -x "$VENV/bin/python" ]; then
    local python; python="$(pick_python)"
    echo "Creating the virtual environment $VENV with $("$python" --version)."
    "$python" -m venv "$VENV"
  fi
  echo "Installing the pinned packages from $requirements (the first time takes a few minutes)."
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  # The helper package, editable so that changes to it take effect at once. (The
  # check runs from / so that this folder on sys.path cannot fake an install.)
  local here python; here="$(pwd -P)"; python="$VENV/bin/python"
  case "$python" in /*) ;; *) python="$here/$python" ;; esac
  if ! (cd / && "$python" -c "import autodiff_course, os, sys; \
sys.exit(os.path.dirname(os.path.dirname(os.path.realpath(autodiff_course.__file__))) != sys.argv[1])" "$here") 2>/dev/null; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e .
  fi
}

ensure_chromium() {
  # The browser tests drive Debian's chromium. Install it where we can; elsewhere
  # the browser tests skip and say how to enable them.
  if command -v chromium >/dev/null 2>&1; then return; fi
  if command -v apt-get >/dev/null 2>&1; then
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
        echo "Chromium is not installed: run 'sudo apt-get install chromium' to enable the browser tests."
        return
      fi
    fi
    echo "Installing Debian's chromium for the browser tests."
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
  else
    echo "No apt-get here: the browser tests will skip (install Chromium and set COURSE_CHROMIUM=/path/to/chromium to run them)."
  fi
}

command="${1:-help}"
shift || true
case "$command" in
  lab)
    set_up requirements.txt
    if [ "$(id -u)" = 0 ]; then set -- --allow-root "$@"; fi
    exec "$VENV/bin/jupyter" lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$PWD" \
      --LabApp.default_url=/lab/tree/lessons/00-welcome.ipynb "$@"
    ;;
  test)
    set_up requirements-test.txt
    ensure_chromium
    exec "$VENV/bin/python" -m pytest "$@"
    ;;
  build)
    set_up requirements-test.txt
    exec "$VENV/bin/python" tools/build_lessons.py "$@"
    ;;
  figures)
    set_up requirements-test.txt
    exec "$VENV/bin/python" tools/make_figures.py "$@"
    ;;
  bench)
    set_up requirements-test.txt
    ensure_chromium
    exec "$VENV/bin/python" tools/benchmark.py "$@"
    ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    ;;
esac
