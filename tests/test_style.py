"""One style: ruff, pinned in requirements-test.txt and configured in pyproject.toml,
finds nothing to fix in any Python file or notebook of the course."""

from __future__ import annotations

import pytest

from course_tools.style import ruff


@pytest.mark.parametrize(
    "command, fix",
    [
        (["check", "--no-fix", "--output-format=concise", "."], "ruff check --fix ."),
        (["format", "--check", "."], "ruff format . (notebooks: ./course.sh build)"),
    ],
    ids=["lint", "format"],
)
def test_ruff_finds_nothing(command, fix):
    done = ruff(*command)
    assert done.returncode == 0, f"run `{fix}`:\n{done.stdout}{done.stderr}"


def test_ruff_is_the_pinned_version():
    from course_tools.config import ROOT

    pinned = next(
        line.split("==")[1].strip()
        for line in (ROOT / "requirements-test.txt").read_text().splitlines()
        if line.startswith("ruff==")
    )
    assert ruff("--version").stdout.split()[-1] == pinned
