"""What the generators share: a generated block between two markers of a hand-written
file, and the report of a ``--check`` run."""

from __future__ import annotations


def between_markers(text: str, start: str, end: str, body: str) -> str | None:
    """``text`` with what stands between the ``start`` and ``end`` markers replaced by
    ``body``, or None when a marker is missing."""
    if start not in text or end not in text:
        return None
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def report_stale(problems: list[str], command: str, current: str) -> int:
    """Print one line per stale file and how to regenerate them (exit status 1), or
    that everything is ``current`` (exit status 0)."""
    for problem in problems:
        print(f"stale: {problem}")
    if problems:
        print(f"Run `{command}` to regenerate.")
        return 1
    print(current)
    return 0
