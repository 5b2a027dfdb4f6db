"""Start a learner's kernel under resource limits: the last step before the kernel runs.

    python course_tools/kernel_limits.py --memory BYTES --processes N --cpu SECONDS \\
        --file-size BYTES [--user UID] -- KERNEL COMMAND...

:mod:`course_tools.sandbox` runs this file (by its path: it needs nothing but the
standard library) inside the sandbox where there is one, so that the process which
sets the limits is the one that becomes the kernel: ``exec`` keeps them, and every
process the kernel starts inherits them. ``--user`` is given only to a sandbox started
as root: the kernel then runs as that user, since Linux never applies a process limit
to root. Each limit that this platform does not support is named on standard error,
and the kernel starts all the same.
"""

from __future__ import annotations

import argparse
import os
import sys

try:
    import resource
except ImportError:  # Windows: no resource limits at all
    resource = None


def processes_of(uid: int) -> int:
    """Processes and threads (what ``RLIMIT_NPROC`` counts) of ``uid`` in this
    process's view of /proc; 0 where there is no /proc."""
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def apply_limits(memory: int, processes: int, cpu: int, file_size: int) -> list[str]:
    """Set the limits on this process; the names of those that could not be set.

    ``processes`` counts on top of what this user already runs (the count Linux keeps
    is per user, so a fixed number would be too tight for someone with a busy desktop).
    A process over its CPU time receives SIGXCPU, and SIGKILL 5 s later.
    """
    if resource is None:
        return ["memory", "processes", "CPU time", "file size"]
    wanted = [
        ("memory", "RLIMIT_AS", memory, memory),
        ("processes", "RLIMIT_NPROC", None, None),
        ("CPU time", "RLIMIT_CPU", cpu, cpu + 5),
        ("file size", "RLIMIT_FSIZE", file_size, file_size),
        (None, "RLIMIT_CORE", 0, 0),  # no core file of a 600 MB kernel
    ]
    failed = []
    for label, name, soft, hard in wanted:
        if name == "RLIMIT_NPROC":
            soft = hard = processes_of(os.getuid()) + processes
        try:
            resource.setrlimit(getattr(resource, name), (soft, hard))
        except (AttributeError, ValueError, OSError):
            if label:
                failed.append(label)
    return failed


def become(uid: int) -> None:
    """As root, give up root for ``uid`` (its group too), for good."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernel_limits", description=__doc__.split("\n\n")[0])
    p.add_argument("--memory", type=int, required=True, help="bytes of address space")
    p.add_argument("--processes", type=int, required=True, help="processes and threads")
    p.add_argument("--cpu", type=int, required=True, help="seconds of CPU time")
    p.add_argument("--file-size", type=int, required=True, help="bytes in any one file")
    p.add_argument("--user", type=int, default=None, help="run as this user id (root only)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the kernel's command")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("kernel_limits: no kernel command after --", file=sys.stderr)
        return 2
    if args.user is not None and hasattr(os, "getuid") and os.getuid() == 0:
        become(args.user)
    failed = apply_limits(args.memory, args.processes, args.cpu, args.file_size)
    if failed:
        print(f"kernel_limits: not supported here: {', '.join(failed)}", file=sys.stderr)
    os.execvp(command[0], command)
    return 127  # pragma: no cover (execvp does not return)


if __name__ == "__main__":
    sys.exit(main())
