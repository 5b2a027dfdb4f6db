"""Binder: its own set-up files, the Dockerfile repo2docker makes of them, and the
environment they produce, built the way Binder builds it.

Binder ignores the top-level requirements.txt once binder/ exists, so binder/
carries its own pins; they must equal the top-level ones for Linux.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
REPO2DOCKER = "jupyter-repo2docker==2026.4.0"
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.11",
         "python_full_version": "3.11.7", "os_name": "posix"}


def pins(path: Path) -> dict[str, str]:
    """name -> exact version for the requirements that apply on Linux, Python 3.11."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate(LINUX):
            continue
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{line} is not pinned exactly"
        found[requirement.name.lower().replace("_", "-")] = specifier.version
    return found


def test_binder_pins_equal_the_top_level_pins_for_linux():
    assert pins(BINDER / "requirements.txt") == pins(ROOT / "requirements.txt")


def test_binder_installs_the_helper_package_and_uses_python_3_11():
    assert "-e ." in (BINDER / "requirements.txt").read_text().splitlines()
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


@pytest.mark.parametrize("script", ["postBuild", "start"])
def test_binder_scripts_are_executable_bash(script):
    path = BINDER / script
    assert os.access(path, os.X_OK)
    assert path.read_text().startswith("#!/bin/bash\n")


def test_post_build_stops_at_the_first_error_and_silences_news():
    text = (BINDER / "postBuild").read_text()
    assert "\nset -e\n" in text
    assert "apputils-extension:announcements" in text


def test_start_hands_over_to_the_server():
    assert (BINDER / "start").read_text().rstrip().endswith('exec "$@"')


def tracked_files_copy(target: Path) -> Path:
    """The repository as Binder sees it: the files git tracks, nothing else."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            destination = target / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination)
    return target


def fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin"


@pytest.fixture(scope="module")
def binder_copy(tmp_path_factory):
    return tracked_files_copy(tmp_path_factory.mktemp("binder") / "repo")


def test_repo2docker_dockerfile_installs_requirements_and_runs_post_build(
        binder_copy, tmp_path):
    bin_dir = fresh_venv(tmp_path / "repo2docker")
    subprocess.run([bin_dir / "python", "-m", "pip", "install", "--quiet",
                    "--disable-pip-version-check", REPO2DOCKER], check=True)
    done = subprocess.run([bin_dir / "repo2docker", "--no-build", "--no-run", "--debug",
                           str(binder_copy)], capture_output=True, text=True, timeout=300)
    dockerfile = done.stdout + done.stderr
    assert done.returncode == 0, dockerfile[-2000:]
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    assert "RUN ./binder/postBuild" in dockerfile
    assert 'R2D_ENTRYPOINT="${REPO_DIR}/binder/start"' in dockerfile
    assert "Building conda environment for python=3.11" in dockerfile
    # The whole repository is copied before pip runs, so "-e ." finds the package.
    assert dockerfile.index("COPY --chown") < dockerfile.index("binder/requirements.txt\"")


def test_environment_built_like_binder_passes_nbval_on_the_lessons(binder_copy, tmp_path):
    """A fresh venv from binder/requirements.txt, then postBuild, then start."""
    bin_dir = fresh_venv(tmp_path / "binder-env")
    environment = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                       VIRTUAL_ENV=str(bin_dir.parent))
    environment.pop("AUTODIFF_COURSE_STRICT", None)

    def run(*command, timeout=1800):
        done = subprocess.run(command, cwd=binder_copy, env=environment, timeout=timeout,
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        return done

    run("python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "-r", "binder/requirements.txt")
    run("./binder/postBuild")
    run("python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "nbval==0.11.0", "pytest==9.2.0")
    done = run("./binder/start", "python", "-m", "pytest", "-p", "no:cacheprovider",
               "--nbval", "--nbval-current-env", "-o", "addopts=", "-o", "testpaths=",
               "--rootdir", str(binder_copy), "-c", os.devnull, "lessons")
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, summary
