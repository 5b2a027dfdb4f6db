"""Contain the kernels that run learners' notebooks: ``progress`` and nbgrader's autograde.

A learner's notebook is someone else's code, run on the instructor's machine with the
instructor's rights. Every kernel that runs one here is contained in two ways:

* **limits, everywhere** (Linux, macOS): address space, processes and threads, CPU
  time, and the size of any one file, set by :mod:`course_tools.kernel_limits` on the
  kernel process itself just before it starts (:class:`Limits`);
* **a sandbox, on Linux with bubblewrap** (Debian's and Ubuntu's ``bubblewrap``): the
  whole file system read-only (the course and Python included), the homes and the
  temporary folders hidden, a temporary home, ``/tmp`` and working folder that are
  thrown away afterwards, a process tree of its own, and no network. Started as root,
  the kernel also gives up root for a user id of its own (:func:`kernel_user`), since
  Linux applies no process limit to root.

:func:`sandbox_support` says once, in one sentence, whether the sandbox is there and
why not. :class:`SandboxedKernelManager` is the kernel manager that does all this;
``progress`` (:mod:`course_tools.grading`) uses it, and the nbgrader export names it in
``nbgrader_config.py`` so that ``nbgrader autograde`` uses it too. The kernel talks to
its client over Unix sockets (ZeroMQ's ``ipc`` transport) in a folder of its own,
which is how it still reaches the grader with no network at all.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Bool
from traitlets import Integer

from . import kernel_limits

MIB = 1 << 20
GIB = 1 << 30
# Started as root, each kernel runs as a user id of its own from this range, which no
# account uses: Linux counts processes per user, so a fork bomb in one kernel then
# cannot take the processes of another.
KERNEL_USERS = range(2_000_000_000, 2_000_100_000)
# Where a notebook's kernel can see nothing: the homes (the instructor's own, with its
# keys and mail, first), the temporary folders (other programs' sockets and files) and
# the run-time folders (agents' sockets). Whatever the kernel needs from inside them
# (Python, the course) is shown again, read-only.
HIDDEN = ("/home", "/root", "/tmp", "/var/tmp", "/run", "/mnt", "/media")
# Variables a learner's kernel has no use for and must not read.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|_KEY$|^SSH_|AUTH_SOCK|^GPG_")


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Limits:
    """What one kernel may use. ``processes`` counts threads too: a lesson's kernel runs
    about 18 on two cores (TensorFlow's thread pools grow with the cores), and a fork
    bomb must stop long before it slows the machine."""

    memory: int = 4 * GIB  # address space: a lesson's kernel reserves about 2.2 GB of it
    processes: int = 32 + 4 * cores()
    cpu_seconds: int = 600
    file_size: int = 256 * MIB

    @classmethod
    def for_timeout(cls, seconds: float) -> Limits:
        """CPU time for a notebook stopped after ``seconds``: all cores, the whole time."""
        return cls(cpu_seconds=max(60, math.ceil(seconds * cores())))

    def described(self) -> str:
        return (
            f"{self.memory / GIB:g} GiB of memory, {self.processes} processes and threads, "
            f"{self.cpu_seconds} s of CPU time, files up to {self.file_size // MIB} MiB"
        )

    def arguments(self) -> list[str]:
        return [
            f"--memory={self.memory}",
            f"--processes={self.processes}",
            f"--cpu={self.cpu_seconds}",
            f"--file-size={self.file_size}",
        ]


# ------------------------------------------------------------------------ the sandbox


@dataclass(frozen=True)
class Support:
    available: bool
    reason: str  # one sentence: what contains the kernels, or why there is no sandbox


def running_as_root() -> bool:
    return hasattr(os, "getuid") and os.getuid() == 0


def isolation_flags() -> list[str]:
    """bubblewrap's namespaces: all of them. As root, every one but the user namespace,
    so that the kernel can give up root for a real user that the process limit binds."""
    if running_as_root():
        return [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
        ]
    return ["--unshare-all"]


@functools.lru_cache(maxsize=1)
def sandbox_support() -> Support:
    """Whether bubblewrap can build the sandbox here (tried once, then remembered)."""
    if not sys.platform.startswith("linux"):
        return Support(False, "there is no sandbox for this operating system, only on Linux")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Support(
            False,
            "bubblewrap is not installed (on Debian or Ubuntu: sudo apt-get install bubblewrap)",
        )
    trial = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    trial += isolation_flags() + ["--die-with-parent", "--", "true"]
    try:
        done = subprocess.run(trial, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Support(False, f"bubblewrap could not be started ({error})")
    if done.returncode != 0:
        message = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        return Support(
            False, f"bubblewrap is installed but cannot build a sandbox here ({message})"
        )
    return Support(True, "bubblewrap")


def announcement(limits: Limits, sandboxed: bool, support: Support | None = None) -> str:
    """The one sentence ``progress`` prints about how the notebooks are contained."""
    support = support or sandbox_support()
    if sandboxed:
        return (
            "Each notebook runs in a sandbox (bubblewrap): the course read-only, your home "
            "hidden, a temporary home and folder, no network; and within limits: "
            f"{limits.described()}."
        )
    why = support.reason if not support.available else "it was turned off (--no-sandbox)"
    root = (
        " (as root, the process limit does not apply)"
        if running_as_root() and sys.platform.startswith("linux")
        else ""
    )
    return (
        f"No sandbox: {why}. The notebooks run with your rights and can read and change "
        f"your files; only their resources are limited: {limits.described()}{root}."
    )


@functools.lru_cache(maxsize=8)
def python_paths(python: str) -> tuple[str, ...]:
    """The folders ``python`` reads its standard library, packages and the course from."""
    code = (
        "import json, os, sys\n"
        "from importlib.util import find_spec\n"
        "paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, "
        "os.path.dirname(os.path.realpath(sys.executable))] + sys.path\n"
        "for name in ('autodiff_course', 'course_tools'):\n"
        "    try:\n"
        "        spec = find_spec(name)\n"
        "    except Exception:\n"
        "        spec = None\n"
        "    if spec is not None and spec.origin:\n"
        "        paths.append(os.path.dirname(os.path.dirname(spec.origin)))\n"
        "print(json.dumps(paths))\n"
    )
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=60, check=True
        )
        paths = json.loads(done.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        paths = []
    return tuple(sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)}))


def hidden_folders() -> list[str]:
    """The folders of :data:`HIDDEN` that exist here, with this user's home and
    temporary folder wherever they are."""
    found = [*HIDDEN, os.path.expanduser("~"), tempfile.gettempdir()]
    real = {os.path.realpath(folder) for folder in found}
    real = {path for path in real if os.path.isdir(path) and path != "/"}
    # A folder inside another hidden one is hidden with it.
    return sorted(p for p in real if not any(inside(p, o) for o in real if o != p))


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def bwrap_command(
    kernel_command: list[str],
    *,
    work: Path,
    scratch: Path,
    sockets: Path,
    readable: list[str],
) -> list[str]:
    """bubblewrap's command line around ``kernel_command``.

    ``work`` (the working folder) and ``sockets`` (connection file and sockets) are
    writable at their own paths; ``scratch`` becomes ``/tmp``, where the temporary home
    is; each folder of ``readable`` that a hidden folder covers is shown again, read-only.
    """
    hidden = hidden_folders()
    command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in hidden:
        command += ["--tmpfs", folder]
    command += ["--bind", str(scratch), "/tmp"]
    made = set(hidden)

    def show(path: str, how: str) -> None:
        cover = next((folder for folder in hidden if inside(path, folder)), None)
        if cover is not None:  # the folders on the way, traversable by anyone
            steps = Path(path).relative_to(cover).parts[:-1]
            for depth in range(1, len(steps) + 1):
                step = str(Path(cover, *steps[:depth]))
                if step not in made:
                    command.extend(["--perms", "0755", "--dir", step])
                    made.add(step)
        command.extend([how, path, path])

    shown: list[str] = []
    for path in sorted(set(readable)):
        hidden_here = any(inside(path, folder) for folder in hidden)
        if hidden_here and not any(inside(path, other) for other in shown):
            show(path, "--ro-bind")
            shown.append(path)
    for path in (work, sockets):
        show(str(path), "--bind")
    for folder in hidden:
        if folder != "/tmp":
            command += ["--remount-ro", folder]
    command += isolation_flags()
    # The kernel's parent is the sandbox's first process, which ipykernel would take for
    # a sign that the grader died: bubblewrap ends the sandbox with the grader instead.
    command += ["--unsetenv", "JPY_PARENT_PID", "--die-with-parent", "--new-session"]
    command += ["--chdir", str(work), "--"]
    return command + kernel_command


def kernel_environment(environment: dict[str, str], home: str, sandboxed: bool) -> dict[str, str]:
    """The kernel's variables: the given ones without secrets; in the sandbox, its own
    home and temporary folder."""
    kept = {k: v for k, v in environment.items() if not SECRET_NAME.search(k.upper())}
    if sandboxed:
        kept.update(HOME=home, TMPDIR="/tmp", PYTHONDONTWRITEBYTECODE="1")
        kept.pop("XDG_RUNTIME_DIR", None)
        kept.pop("XDG_CACHE_HOME", None)
        kept.pop("XDG_CONFIG_HOME", None)
        kept.pop("MPLCONFIGDIR", None)
    return kept


def matplotlib_font_cache() -> list[Path]:
    """matplotlib's font list of this user, which a fresh home would rebuild (seconds)."""
    folder = os.environ.get("MPLCONFIGDIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "matplotlib"
    )
    return sorted(Path(folder).glob("fontlist-*.json"))


def kernel_user(folder: Path) -> int:
    """A user id of :data:`KERNEL_USERS` for the kernel whose folder is ``folder``:
    free of accounts, and different for kernels that run at the same time."""
    import pwd

    start = folder.stat().st_ino % len(KERNEL_USERS)
    for step in range(len(KERNEL_USERS)):
        uid = KERNEL_USERS[(start + step) % len(KERNEL_USERS)]
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise RuntimeError("no free user id for the kernel")  # pragma: no cover


def hand_over(paths: list[Path], uid: int) -> None:
    """Give ``paths`` and everything in them to ``uid`` (root only)."""
    for top in paths:
        for folder, _, files in os.walk(top):
            os.chown(folder, uid, uid)
            for name in files:
                os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)


# ----------------------------------------------------------------- the kernel manager


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels run contained (see the module's docstring).

    Configurable like any kernel manager, e.g. in ``nbgrader_config.py``::

        c.Execute.kernel_manager_class = "course_tools.sandbox.SandboxedKernelManager"
        c.SandboxedKernelManager.copy_working_folder = True
    """

    use_sandbox = Bool(
        True, config=True, help="Run each kernel in the sandbox where bubblewrap is available."
    )
    memory_limit = Integer(Limits.memory, config=True, help="Bytes of address space.")
    process_limit = Integer(
        Limits().processes, config=True, help="Processes and threads, besides the user's own."
    )
    cpu_limit = Integer(Limits.cpu_seconds, config=True, help="Seconds of CPU time.")
    file_size_limit = Integer(Limits.file_size, config=True, help="Bytes in any one file.")
    copy_working_folder = Bool(
        False,
        config=True,
        help="Run the kernel in a temporary copy of the folder it is started in "
        "(nbgrader's autograde), not in that folder itself (progress's own scratch copy).",
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.folder: Path | None = None  # the kernel's own, made when it starts
        self.work: Path | None = None

    def _make_folders(self) -> None:
        """The kernel's folder: its sockets and connection file, and its ``/tmp``."""
        self.folder = Path(tempfile.mkdtemp(prefix="course-kernel-"))
        self.sockets = self.folder / "sockets"
        self.scratch = self.folder / "tmp"
        self.sockets.mkdir()
        (self.scratch / "home").mkdir(parents=True)
        if os.name == "posix":
            self.transport = "ipc"
            self.ip = str(self.sockets / "kernel")
        self.connection_file = str(self.sockets / "connection.json")

    @property
    def limits(self) -> Limits:
        return Limits(self.memory_limit, self.process_limit, self.cpu_limit, self.file_size_limit)

    @property
    def sandboxed(self) -> bool:
        return self.use_sandbox and sandbox_support().available

    def exit_status(self) -> int | None:
        """The kernel process's exit status once it has ended (negative: a signal)."""
        process = getattr(self.provisioner, "process", None)
        return process.poll() if process is not None else None

    async def _async_pre_start_kernel(self, **kwargs):
        if self.folder is None:
            self._make_folders()
        cwd = Path(kwargs.get("cwd") or os.getcwd()).resolve()
        if self.copy_working_folder:
            self.work = self.folder / "work"
            shutil.copytree(cwd, self.work, symlinks=True)
        else:
            self.work = cwd
        kwargs["cwd"] = str(self.work)
        home = "/tmp/home" if self.sandboxed else os.path.expanduser("~")
        environment = dict(kwargs.get("env") or os.environ)
        kwargs["env"] = kernel_environment(environment, home, self.sandboxed)
        if self.sandboxed:
            fonts = self.scratch / "home" / ".cache" / "matplotlib"
            for cache in matplotlib_font_cache():
                fonts.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(cache, fonts / cache.name)
        return await super()._async_pre_start_kernel(**kwargs)

    def format_kernel_cmd(self, extra_arguments=None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        launcher = [sys.executable, kernel_limits.__file__, *self.limits.arguments()]
        if not self.sandboxed:
            return [*launcher, "--", *command]
        if running_as_root():
            uid = kernel_user(self.folder)
            launcher.append(f"--user={uid}")
            hand_over([self.sockets, self.scratch, self.work], uid)
        readable = [
            *python_paths(command[0]),
            *python_paths(sys.executable),
            os.path.dirname(os.path.realpath(kernel_limits.__file__)),
        ]
        return bwrap_command(
            [*launcher, "--", *command],
            work=self.work,
            scratch=self.scratch,
            sockets=self.sockets,
            readable=readable,
        )

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    cleanup_resources = _async_cleanup_resources
