"""The containment of learners' kernels (course_tools/sandbox.py, kernel_limits.py).

The hostile notebooks themselves, graded by ``progress`` in and out of the sandbox,
are in test_progress.py; nbgrader's autograde in test_nbgrader_export.py. Here: the
limits a kernel gets, what the sandbox hides and shows, and the one sentence that
says how the notebooks are contained.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from course_tools import kernel_limits
from course_tools import sandbox
from course_tools.sandbox import Limits
from course_tools.sandbox import Support

LIMITS = Limits(memory=3 << 30, processes=50, cpu_seconds=77, file_size=5 << 20)

needs_sandbox = pytest.mark.skipif(
    not sandbox.sandbox_support().available and not os.environ.get("CI"),
    reason=f"no sandbox here: {sandbox.sandbox_support().reason}",
)


def limits_seen_by(command_prefix: list[str]) -> dict:
    code = (
        "import json, resource\n"
        "print(json.dumps({name: resource.getrlimit(getattr(resource, name)) for name in "
        "('RLIMIT_AS', 'RLIMIT_NPROC', 'RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_CORE')}))"
    )
    done = subprocess.run(
        [*command_prefix, sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_launcher_sets_every_limit_then_becomes_the_kernel():
    launcher = [sys.executable, kernel_limits.__file__, *LIMITS.arguments(), "--"]
    seen = limits_seen_by(launcher)
    assert seen["RLIMIT_AS"] == [3 << 30, 3 << 30]
    assert seen["RLIMIT_CPU"] == [77, 82]  # SIGXCPU at 77 s, SIGKILL 5 s later
    assert seen["RLIMIT_FSIZE"] == [5 << 20, 5 << 20]
    assert seen["RLIMIT_CORE"] == [0, 0]
    # On top of what this user already runs, which Linux counts against the limit.
    assert 50 < seen["RLIMIT_NPROC"][0] == seen["RLIMIT_NPROC"][1]


def test_the_limits_for_a_time_limit_give_every_core_the_whole_time():
    assert Limits.for_timeout(120).cpu_seconds == max(60, 120 * sandbox.cores())
    assert Limits.for_timeout(1).cpu_seconds == 60
    assert "4 GiB of memory" in Limits().described()


def test_the_sandbox_hides_the_homes_and_temporary_folders_and_shows_what_the_kernel_needs(
    tmp_path, monkeypatch
):
    home = tmp_path / "instructor"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    hidden = sandbox.hidden_folders()
    assert "/tmp" in hidden and "/root" in hidden
    assert not any(sandbox.inside(str(home), folder) and folder != "/tmp" for folder in hidden)
    command = sandbox.bwrap_command(
        ["python", "-m", "ipykernel_launcher"],
        work=tmp_path / "work",
        scratch=tmp_path / "scratch",
        sockets=tmp_path / "sockets",
        readable=["/root/.pyenv/versions/3.11.7", "/usr/lib/python3"],
    )
    assert command[:3] == ["bwrap", "--ro-bind", "/"]
    for folder in hidden:
        assert ["--tmpfs", folder] == command[command.index(folder) - 1 : command.index(folder) + 1]
    # What lies in a hidden folder is shown again, read-only, by traversable folders.
    assert "--ro-bind /root/.pyenv/versions/3.11.7 /root/.pyenv/versions/3.11.7" in " ".join(
        command
    )
    assert "--perms 0755 --dir /root/.pyenv" in " ".join(command)
    assert "/usr/lib/python3" not in command  # not hidden: already there, read-only
    assert f"--bind {tmp_path / 'work'} {tmp_path / 'work'}" in " ".join(command)
    assert "--unshare-net" in command or "--unshare-all" in command
    assert command[-3:] == ["python", "-m", "ipykernel_launcher"]


def test_secrets_never_reach_a_learners_kernel():
    kept = sandbox.kernel_environment(
        {
            "JUPYTERHUB_API_TOKEN": "x",
            "AWS_SECRET_ACCESS_KEY": "x",
            "SSH_AUTH_SOCK": "/tmp/agent",
            "GITHUB_TOKEN": "x",
            "PATH": "/usr/bin",
            "HOME": "/root",
        },
        home="/tmp/home",
        sandboxed=True,
    )
    assert kept == {
        "PATH": "/usr/bin",
        "HOME": "/tmp/home",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def test_without_a_sandbox_one_sentence_says_why_and_what_still_applies():
    missing = Support(
        False, "bubblewrap is not installed (on Debian or Ubuntu: sudo apt-get install bubblewrap)"
    )
    line = sandbox.announcement(LIMITS, sandboxed=False, support=missing)
    assert line.startswith("No sandbox: bubblewrap is not installed (on Debian or Ubuntu: ")
    assert "can read and change your files" in line
    assert LIMITS.described() in line
    assert line.count(". ") == 1 and line.endswith(".")  # one sentence of why, one of what
    inside = sandbox.announcement(LIMITS, sandboxed=True, support=Support(True, "bubblewrap"))
    assert inside.startswith("Each notebook runs in a sandbox (bubblewrap)")


def test_root_kernels_get_user_ids_of_their_own(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    ids = {sandbox.kernel_user(first), sandbox.kernel_user(second)}
    assert len(ids) == 2 and all(uid in sandbox.KERNEL_USERS for uid in ids)


@needs_sandbox
def test_a_sandboxed_kernel_runs_and_its_folders_are_gone_afterwards(tmp_path):
    import asyncio

    from course_tools.grading import kernel_manager
    from course_tools.grading import stop_kernel

    async def run():
        manager = kernel_manager(LIMITS, sandbox=True)
        await manager.start_kernel(cwd=str(tmp_path))
        client = manager.client()
        client.start_channels()
        await client.wait_for_ready(timeout=60)
        reply = await client.execute_interactive(
            "import os, socket; print(os.getcwd(), os.environ['HOME'], "
            "sorted(os.listdir('/tmp')), socket.if_nameindex())",
            timeout=60,
            output_hook=lambda message: seen.append(message),
        )
        folder = manager.folder
        client.stop_channels()
        await stop_kernel(manager)
        return reply, folder

    seen: list = []
    reply, folder = asyncio.run(run())
    assert reply["content"]["status"] == "ok"
    text = "".join(m["content"].get("text", "") for m in seen if m["msg_type"] == "stream")
    assert text.startswith(f"{tmp_path} /tmp/home ")
    assert "(1, 'lo')" in text and "eth" not in text  # its own network: the loopback only
    assert not folder.exists()
