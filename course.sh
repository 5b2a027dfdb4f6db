#!/usr/bin/env bash
# One entry point for learners, instructors and maintainers.
#
#   ./course.sh lab      set up from nothing, then open the course in JupyterLab
#   ./course.sh test     set up from nothing (test tools included), then run every test
#   ./course.sh build    regenerate lessons/ (and all outputs) from solutions/
#   ./course.sh guide    regenerate the instructor guide, instructors/guide.md
#   ./course.sh figures  regenerate the static figures in figures/
#   ./course.sh site     build the course's web site into _site/ (outputs as saved)
#   ./course.sh bench    run the benchmark and print its table (--save: keep it)
#   ./course.sh progress [PATH...] [--csv FILE] [--timeout SECONDS] [--jobs N]
#                        re-run learners' notebooks and tabulate every exercise's
#                        verdict (no PATH: your own lessons/)
#   ./course.sh nbgrader DIR
#                        write an nbgrader course source (and its config) under DIR,
#                        and install nbgrader into .venv-nbgrader (see the guide)
#
# Each command but lab and test runs a module of course_tools/ (python -m course_tools.…),
# which works the same without this script (Windows, conda).
#
# "Set up" means: create the virtual environment .venv if it is absent (with
# Python 3.10 to 3.13), install the pinned requirements and the course's helper
# package into it. Running it again only installs what is missing.
#
# progress and nbgrader's autograde run learners' notebooks in a sandbox where
# bubblewrap is installed (Debian's and Ubuntu's package bubblewrap; ./course.sh test
# installs it), and within resource limits everywhere.
set -euo pipefail
cd "$(dirname "$0")"
VENV="${COURSE_VENV:-.venv}"

# The Python versions TensorFlow 2.21 has wheels for (tests/test_python_range.py
# keeps these equal to the wheel's own classifiers).
MIN_PYTHON=3.10
MAX_PYTHON=3.13

supported() {
  "$1" -c "import sys; sys.exit(not (${MIN_PYTHON/./, }) <= sys.version_info[:2] <= (${MAX_PYTHON/./, }))" 2>/dev/null
}

pick_python() {
  if [ -n "${PYTHON:-}" ]; then
    if supported "$PYTHON"; then echo "$PYTHON"; return; fi
    echo "PYTHON=$PYTHON is not Python $MIN_PYTHON to $MAX_PYTHON (TensorFlow 2.21 supports no other): point PYTHON at one that is." >&2
    exit 1
  fi
  for candidate in python3.11 python3.12 python3.13 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
      echo "$candidate"; return
    fi
  done
  echo "The course needs Python $MIN_PYTHON to $MAX_PYTHON (TensorFlow 2.21 supports no other)." >&2
  echo "Install one (python.org, your package manager or pyenv), or set PYTHON=/path/to/python3.11." >&2
  exit 1
}

set_up() {
  local requirements="$1"
  # A folder without a working pip (an earlier creation that failed half-way) is rebuilt.
  if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    local python; python="$(pick_python)"
    if ! "$python" -c "import ensurepip" 2>/dev/null; then
      apt_install_module "$python" python3-venv "the virtual environment"
    fi
    echo "Creating the virtual environment $VENV with $("$python" --version)."
    "$python" -m venv --clear "$VENV"
  fi
  # pip runs only when a requirements file changed since the last install into $VENV.
  local stamp="$VENV/.course-installed-$(basename "$requirements")"
  if ! cat requirements.txt "$requirements" | cmp -s - "$stamp"; then
    echo "Installing the pinned packages from $requirements (the first time takes a few minutes)."
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    cat requirements.txt "$requirements" > "$stamp"
  fi
  # The helper package and the tools, editable so that changes take effect at once. (The
  # check runs from / so that this folder on sys.path cannot fake an install.)
  local here python; here="$(pwd -P)"; python="$VENV/bin/python"
  case "$python" in /*) ;; *) python="$here/$python" ;; esac
  if ! (cd / && "$python" -c "import autodiff_course, course_tools, os, sys; \
sys.exit(any(os.path.dirname(os.path.dirname(os.path.realpath(m.__file__))) != sys.argv[1] \
for m in (autodiff_course, course_tools)))" "$here") 2>/dev/null; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e .
  fi
}

set_up_grading() {
  # nbgrader in an environment of its own, "$VENV-nbgrader" (nbgrader adds its menus to
  # the JupyterLab it is installed beside, and $VENV is the learners' JupyterLab), with
  # the course's tools (autograde's sandbox) and a "python3" kernel that is $VENV's.
  local grading="$VENV-nbgrader" stamp
  stamp="$VENV-nbgrader/.course-installed-requirements-nbgrader.txt"
  if ! "$grading/bin/python" -m pip --version >/dev/null 2>&1; then
    echo "Creating $grading for nbgrader."
    "$VENV/bin/python" -m venv --clear "$grading"
  fi
  if ! cmp -s requirements-nbgrader.txt "$stamp"; then
    echo "Installing nbgrader into $grading (the first time takes a minute)."
    "$grading/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r requirements-nbgrader.txt
    "$grading/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -e .
    cp requirements-nbgrader.txt "$stamp"
  fi
  mkdir -p "$grading/share/jupyter/kernels/python3"
  "$VENV/bin/python" -c 'import json, os, sys; json.dump({"argv": [os.path.abspath(sys.executable),
"-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": "Python 3 (the course)",
"language": "python"}, open(sys.argv[1], "w"), indent=1)' \
    "$grading/share/jupyter/kernels/python3/kernel.json"
}

apt_install() {
  # apt_install COMMAND PACKAGE PURPOSE: install Debian's PACKAGE unless COMMAND exists.
  if command -v "$1" >/dev/null 2>&1; then return; fi
  apt_get_install "$2" "$3"
}

apt_get_install() {
  # apt_get_install PACKAGE PURPOSE: with apt-get, as root or with password-less sudo.
  local package="$1" purpose="$2"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "No apt-get here: install $package yourself to run $purpose (they skip without it)."
    return
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "$package is not installed: run 'sudo apt-get install $package' to run $purpose."
      return
    fi
  fi
  echo "Installing Debian's $package for $purpose."
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null
}

apt_install_module() {
  # apt_install_module PYTHON PACKAGE PURPOSE: Debian ships venv's ensurepip apart.
  local python="$1" package="$2" purpose="$3"
  apt_get_install "$package" "$purpose"
  "$python" -c "import ensurepip" 2>/dev/null || {
    echo "$python cannot create a virtual environment: install $package (python3.X-venv for your version) and run again." >&2
    exit 1
  }
}

ensure_test_tools() {
  # The browser tests drive Debian's chromium (set COURSE_CHROMIUM=/path/to/chromium
  # elsewhere); the accessibility tests fetch axe-core and the hub test
  # configurable-http-proxy from the npm registry; the graders' sandbox is bubblewrap.
  apt_install chromium chromium "the browser tests"
  apt_install npm npm "the accessibility and hub tests"
  apt_install bwrap bubblewrap "the sandbox of progress and nbgrader's autograde"
}

# progress and nbgrader run from the caller's folder, so that relative paths mean
# what the caller meant (the cd above left it in OLDPWD).
run_course_tool() {
  local module="$1"; shift
  local python="$VENV/bin/python"
  case "$python" in /*) ;; *) python="$PWD/$python" ;; esac
  cd "$OLDPWD"
  exec "$python" -m "$module" "$@"
}

command="${1:-help}"
shift || true
case "$command" in
  lab)
    set_up requirements.txt
    # No news pop-up (Binder does the same).
    "$VENV/bin/python" -m course_tools.quiet_jupyterlab "$VENV/bin/jupyter"
    # Saved notebooks keep their widgets' state, so they reopen as they were left.
    "$VENV/bin/python" -m course_tools.widget_state
    if [ "$(id -u)" = 0 ]; then set -- --allow-root "$@"; fi
    exec "$VENV/bin/jupyter" lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir="$PWD" \
      --LabApp.default_url=/lab/tree/lessons/00-welcome.ipynb "$@"
    ;;
  test)
    set_up requirements-test.txt
    ensure_test_tools
    # Two workers (pytest-xdist; conftest.py says which tests stay together), and the
    # line coverage of autodiff_course and course_tools (pyproject.toml) at the end.
    exec "$VENV/bin/python" -m pytest --numprocesses=2 --cov=autodiff_course \
      --cov=course_tools --cov-report=term:skip-covered "$@"
    ;;
  build)
    set_up requirements-test.txt
    exec "$VENV/bin/python" -m course_tools.build_lessons "$@"
    ;;
  guide)
    set_up requirements-test.txt
    exec "$VENV/bin/python" -m course_tools.build_instructor_guide "$@"
    ;;
  figures)
    set_up requirements-test.txt
    exec "$VENV/bin/python" -m course_tools.make_figures "$@"
    ;;
  site)
    set_up requirements-test.txt
    exec "$VENV/bin/python" -m course_tools.site "$@"
    ;;
  bench)
    set_up requirements-test.txt
    ensure_test_tools
    exec "$VENV/bin/python" -m course_tools.benchmark "$@"
    ;;
  progress)
    set_up requirements.txt
    run_course_tool course_tools.progress "$@"
    ;;
  nbgrader)
    set_up requirements.txt
    set_up_grading
    run_course_tool course_tools.nbgrader_export "$@"
    ;;
  *)
    awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"
    ;;
esac
