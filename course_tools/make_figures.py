"""Regenerate the static figures in figures/ (for readers without a kernel).

    python -m course_tools.make_figures              # write figures/*.png
    python -m course_tools.make_figures --check      # exit 1 if a committed figure is stale
    python -m course_tools.make_figures --out DIR    # write (or with --check, compare) DIR

Each figure is the log1pexp explorer's plot for one state, drawn by the widget's
own code (``render_png``), so a figure shows exactly what the widget shows. The
bytes are the same on every run: fixed fonts and layout, no metadata or timestamp
in the PNG, and the numbers come from the same TensorFlow kernels.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .config import ROOT
from .derived import report_stale

FIGURES_DIR = ROOT / "figures"
FIGURE_DPI = 100  # 800 x 525 pixels: the widget's 640 x 420 layout, sharper


def figure_states() -> dict:
    """File name -> the explorer state it shows."""
    from autodiff_course.widgets.log1pexp import ExplorerState

    return {
        # The opening view: float32 gradients, readout in the silent 0.0 band.
        "log1pexp-explorer.png": ExplorerState(dtype="float32"),
        # float64 tells the same story further out: 0.0 at 709.7, nan from 709.8.
        "log1pexp-explorer-float64.png": ExplorerState(dtype="float64"),
        # The documented rule cancels for negative x: 4.6e-4 at -10, 17 % at -15,
        # 100 % (a 0.0 gradient) from -16.6 down; the other two stay at float32's
        # rounding error.
        "log1pexp-relative-error.png": ExplorerState(
            dtype="float32", x_range=(-25.0, 5.0), quantity="relative_error", readout_x=-15.0
        ),
    }


def render_all() -> dict[str, bytes]:
    """File name -> PNG bytes, rendered fresh."""
    from autodiff_course.notebook_setup import silence_tensorflow_logs

    silence_tensorflow_logs()  # also keeps oneDNN off, which the figures' bytes rely on
    from autodiff_course.widgets.log1pexp import ExplorerFigure
    from autodiff_course.widgets.log1pexp import render_png

    figure = ExplorerFigure(dpi=FIGURE_DPI)
    return {name: render_png(state, figure) for name, state in figure_states().items()}


def stale_figures(directory: Path, rendered: dict[str, bytes]) -> list[str]:
    """Names whose file in ``directory`` is missing or differs from ``rendered``."""
    stale = []
    for name, data in rendered.items():
        path = directory / name
        if not path.exists():
            stale.append(f"{name} (missing)")
        elif path.read_bytes() != data:
            stale.append(f"{name} (differs from a fresh render)")
    return stale


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare instead of writing; exit 1 if anything is stale",
    )
    parser.add_argument(
        "--out", type=Path, default=FIGURES_DIR, help="folder to write or check (default: figures/)"
    )
    args = parser.parse_args(argv)
    rendered = render_all()
    if args.check:
        return report_stale(
            stale_figures(args.out, rendered),
            "python -m course_tools.make_figures",
            f"{len(rendered)} figures up to date in {args.out}",
        )
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in rendered.items():
        (args.out / name).write_bytes(data)
        print(f"wrote {args.out / name} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
