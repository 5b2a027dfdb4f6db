"""One style for the course's code: ruff, configured in ``pyproject.toml``.

``ruff check`` and ``ruff format --check`` cover the Python files and the notebooks
(the test suite runs both). The notebooks' code cells are formatted by the lesson
build, with :func:`format_code_cells`, before the lessons are derived and executed.
"""

from __future__ import annotations

import subprocess

import nbformat

from .config import ROOT


def ruff(*arguments: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run the ruff that requirements-test.txt pins, from the course's root folder."""
    from ruff.__main__ import find_ruff_bin

    return subprocess.run(
        [find_ruff_bin(), *arguments],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def format_code_cells(nb, name: str = "notebook.ipynb"):
    """Format every code cell of ``nb`` in place (sources only; outputs are kept)."""
    done = ruff("format", "--stdin-filename", name, "-", stdin=nbformat.writes(nb, version=4))
    if done.returncode != 0:
        raise ValueError(f"ruff could not format {name}: {done.stderr.strip()}")
    formatted = nbformat.reads(done.stdout, as_version=4)
    for cell, new in zip(nb.cells, formatted.cells, strict=True):
        if cell.cell_type == "code":
            cell.source = new.source
    return nb
