"""The committed figures are exactly what course_tools.make_figures renders now."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from course_tools import make_figures
from course_tools.config import ROOT

EXPECTED = {"log1pexp-explorer.png", "log1pexp-explorer-float64.png", "log1pexp-relative-error.png"}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """The figures regenerated into a temporary folder, by the command itself."""
    out = tmp_path_factory.mktemp("figures")
    result = subprocess.run(
        [sys.executable, "-m", "course_tools.make_figures", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_the_lesson_figures_exist():
    assert set(make_figures.figure_states()) == EXPECTED
    for name in EXPECTED:
        assert (ROOT / "figures" / name).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_committed_figures_equal_a_fresh_render_byte_for_byte(fresh):
    stale = [
        name
        for name in sorted(EXPECTED)
        if (fresh / name).read_bytes() != (ROOT / "figures" / name).read_bytes()
    ]
    # Named, not diffed: pytest's diff of two PNGs' bytes takes many minutes.
    assert not stale, f"stale: {', '.join(stale)}: run `./course.sh figures`"


def test_rendering_is_repeatable_in_process(fresh):
    rendered = make_figures.render_all()
    differ = [name for name, data in rendered.items() if data != (fresh / name).read_bytes()]
    assert not differ, differ


def test_check_mode_exits_1_on_a_stale_or_missing_figure(fresh, tmp_path, capsys):
    copy = tmp_path / "figures"
    shutil.copytree(fresh, copy)
    assert make_figures.main(["--check", "--out", str(copy)]) == 0
    stale = copy / "log1pexp-relative-error.png"
    stale.write_bytes(stale.read_bytes()[:-1] + b"\x00")
    (copy / "log1pexp-explorer.png").unlink()
    assert make_figures.main(["--check", "--out", str(copy)]) == 1
    output = capsys.readouterr().out
    assert "log1pexp-relative-error.png (differs from a fresh render)" in output
    assert "log1pexp-explorer.png (missing)" in output
