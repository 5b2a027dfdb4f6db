"""Binder: its own set-up files, the Dockerfile repo2docker makes of them, and the
environment they produce, built the way Binder builds it.

Binder ignores the top-level requirements.txt once binder/ exists, so binder/
carries its own pins; they must equal the top-level ones for Linux, plus the two
that only Binder and a hub need (``BINDER_ONLY``). The same folder is the recipe of
the hub image (instructors/guide-header.md): ``repo2docker`` turns it into a
Dockerfile, checked here with ``--no-build``, which needs no Docker daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from course_tools import hub_image
from course_tools.avx2_emulation import described
from course_tools.avx2_emulation import without_avx512

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
# repo2docker comes from requirements-test.txt, installed beside pytest.
REPO2DOCKER = Path(sys.executable).parent / "repo2docker"
# Pinned in binder/requirements.txt only: notebook replaces the base image's 7.4
# (which requires jupyterlab < 4.5), nbgitpuller serves the guide's hub links.
BINDER_ONLY = {"notebook", "nbgitpuller"}
LINUX = {
    "sys_platform": "linux",
    "platform_system": "Linux",
    "python_version": "3.11",
    "python_full_version": "3.11.7",
    "os_name": "posix",
}


def pins(path: Path) -> dict[str, str]:
    """name -> exact version for the requirements that apply on Linux, Python 3.11,
    those of included files (``-r``) too."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found.update(pins(path.parent / line[3:].strip()))
            continue
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
    """binder/requirements.txt includes requirements.txt and pins only its own two."""
    text = (BINDER / "requirements.txt").read_text()
    assert "\n-r ../requirements.txt\n" in text
    own = {
        Requirement(line).name
        for line in text.splitlines()
        if line and not line.startswith(("#", "-"))
    }
    assert own == BINDER_ONLY, "binder/ pins notebook and nbgitpuller, and nothing else"
    binder = pins(BINDER / "requirements.txt")
    shared = {name: version for name, version in binder.items() if name not in BINDER_ONLY}
    assert shared == pins(ROOT / "requirements.txt")


def test_binder_replaces_the_base_images_notebook_and_jupyterlab():
    """The base image brings its own notebook and jupyterlab; the pins must win.

    Binder's notebook 7.4 requires jupyterlab < 4.5, so it cannot stay beside the
    pinned jupyterlab 4.6; pip replaces both because binder/ pins both (the
    environment test below installs them and runs ``pip check``).
    """
    base, binder = hub_image.base_image_packages(), pins(BINDER / "requirements.txt")
    for name in ("notebook", "jupyterlab"):
        assert name in base, f"repo2docker's base image no longer brings {name}"
        assert name in binder, f"binder/requirements.txt must pin {name}"
    # notebook 7.6 is the first release whose jupyterlab range (>= 4.6, < 4.7)
    # admits the pinned jupyterlab 4.6.
    assert Version(binder["notebook"]) >= Version("7.6")
    assert Version(binder["jupyterlab"]).release[:2] == (4, 6)


def test_repo2docker_is_a_pinned_test_tool():
    assert "jupyter-repo2docker==" in (ROOT / "requirements-test.txt").read_text()
    assert REPO2DOCKER.exists(), "run `./course.sh test` to install the test tools"


def test_binder_installs_the_helper_package_and_uses_python_3_11():
    assert "-e ." in (BINDER / "requirements.txt").read_text().splitlines()
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"


@pytest.mark.parametrize("script", ["postBuild", "start"])
def test_binder_scripts_are_executable_bash(script):
    path = BINDER / script
    assert os.access(path, os.X_OK)
    assert path.read_text().startswith("#!/bin/bash\n")


def test_post_build_stops_at_the_first_error_and_silences_news():
    """One mechanism for the news pop-up, shared with ./course.sh lab."""
    text = (BINDER / "postBuild").read_text()
    assert "\nset -e\n" in text
    assert "\npython -m course_tools.quiet_jupyterlab jupyter\n" in text
    assert (
        '-m course_tools.quiet_jupyterlab "$VENV/bin/jupyter"' in (ROOT / "course.sh").read_text()
    )


FAKE_JUPYTER = r"""#!/bin/bash
echo "$*" >> CALLS
mkdir -p PREFIX/etc/jupyter/labconfig
printf '{"disabledExtensions": {"%s": true}}' "$4" > PREFIX/etc/jupyter/labconfig/page_config.json
"""


def test_quiet_jupyterlab_disables_the_news_plugin_in_the_environment_only(tmp_path):
    """The script writes the environment's page_config.json, and only once."""
    prefix = tmp_path / "env"
    (prefix / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    fake = prefix / "bin" / "jupyter"  # records its arguments, then does what jupyter does
    fake.write_text(FAKE_JUPYTER.replace("CALLS", str(calls)).replace("PREFIX", str(prefix)))
    fake.chmod(0o755)
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "course_tools.quiet_jupyterlab", fake], check=True)
    assert calls.read_text().splitlines() == [
        "labextension disable --level=sys_prefix @jupyterlab/apputils-extension:announcements"
    ]
    page_config = json.loads((prefix / "etc/jupyter/labconfig/page_config.json").read_text())
    assert page_config == {
        "disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}
    }


def test_start_hands_over_to_the_server():
    assert (BINDER / "start").read_text().rstrip().endswith('exec "$@"')


@pytest.fixture(scope="module")
def binder_copy(tmp_path_factory, tracked_files_copy):
    return tracked_files_copy(tmp_path_factory.mktemp("binder") / "repo")


def test_repo2docker_dockerfile_puts_the_course_outside_the_home(binder_copy):
    """The hub image recipe, as instructors/guide-header.md builds it, minus the build.

    ``--no-build --debug`` prints the Dockerfile without contacting Docker, so this
    runs where no Docker daemon is. ``--target-repo-dir /srv/repo`` keeps the course
    (its start script and the helper package's editable install) out of the home,
    which Zero to JupyterHub covers with each learner's own volume.
    """
    environment = dict(os.environ, DOCKER_HOST="unix:///nonexistent/docker.sock")
    guide = (ROOT / "instructors" / "guide-header.md").read_text()
    command = "repo2docker --ref {{ref}} --no-run --user-name jovyan --user-id 1000 \\\n"
    assert command + "       --target-repo-dir /srv/repo \\\n" in guide
    done = subprocess.run(
        [
            REPO2DOCKER,
            "--no-build",
            "--no-run",
            "--debug",
            "--user-name",
            "jovyan",
            "--user-id",
            "1000",
            "--target-repo-dir",
            "/srv/repo",
            "--image-name",
            "gradients-on-tape:test",
            str(binder_copy),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    dockerfile = done.stdout + done.stderr
    assert done.returncode == 0, dockerfile[-2000:]
    # The course goes wherever REPO_DIR says, a build argument that repo2docker sets
    # to --target-repo-dir (and to the home without it); the home stays the home.
    assert "ARG REPO_DIR=${HOME}\nENV REPO_DIR=${REPO_DIR}\n" in dockerfile
    assert "    HOME=/home/${NB_USER}" in dockerfile
    assert "WORKDIR ${REPO_DIR}" in dockerfile
    from repo2docker.__main__ import make_r2d

    app = make_r2d(["--no-build", "--target-repo-dir", "/srv/repo", str(binder_copy)])
    assert app.target_repo_dir == "/srv/repo"
    assert 'pip install --no-cache-dir -r "binder/requirements.txt"' in dockerfile
    assert "RUN ./binder/postBuild" in dockerfile
    assert 'R2D_ENTRYPOINT="${REPO_DIR}/binder/start"' in dockerfile
    assert "Building conda environment for python=3.11" in dockerfile
    # The whole repository is copied before pip runs, so "-e ." finds the package,
    # and before postBuild, which runs the package's course_tools; it belongs to
    # uid 1000, the hub's user (without --user-id it would belong to whoever built it).
    copy_all = dockerfile.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/")
    assert copy_all < dockerfile.index('pip install --no-cache-dir -r "binder/requirements.txt"')
    assert copy_all < dockerfile.index("RUN ./binder/postBuild")


@pytest.fixture(scope="module")
def image():
    """The environment binder/ makes, as the hub image has it (course_tools.hub_image:
    binder/requirements.txt, pip check, postBuild, the image's jupyterhub-singleuser)."""
    return hub_image.build(say=print)


def test_the_image_has_nbgitpuller_and_the_hubs_single_user_server(image):
    environment = image.environment()
    for code in ("import nbgitpuller", "import jupyterhub.singleuser"):
        subprocess.run([image.python, "-c", code], env=environment, check=True, cwd="/")
    found = subprocess.run(
        [image.python, "-c", "import jupyterhub; print(jupyterhub.__version__)"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found == hub_image.jupyterhub_version()


def test_environment_built_like_binder_passes_nbval_as_on_a_cpu_without_avx512(image):
    """Both folders, run by binder/start in that environment, match their saved outputs,
    in kernels that take NumPy's and oneDNN's AVX2 paths (course_tools.avx2_emulation):
    the suite's second nbval run, after the native one. The repository's conftest.py
    runs solutions/ in strict mode, as in the native run."""
    environment = without_avx512(image.environment())

    def run(*command, timeout=1800):
        done = subprocess.run(
            command,
            cwd=image.repo,
            env=environment,
            timeout=timeout,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, (
            f"{command} ({described()}): {done.stdout[-6000:]}{done.stderr[-3000:]}"
        )
        return done

    pip = (str(image.python), "-m", "pip")
    quietly = ("--quiet", "--disable-pip-version-check")
    run(*pip, "install", *quietly, "nbval==0.11.0", "pytest==9.2.0")
    done = run(
        "./binder/start",
        "python",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--nbval",
        "--nbval-current-env",
        "-o",
        "addopts=",
        "-o",
        "testpaths=",
        "--rootdir",
        str(image.repo),
        "-c",
        os.devnull,
        "lessons",
        "solutions",
    )
    notebooks = len(
        list(image.repo.glob("lessons/*.ipynb")) + list(image.repo.glob("solutions/*.ipynb"))
    )
    assert f"nbval strict: {notebooks} notebooks validated" in done.stdout, done.stdout[-3000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary, summary
