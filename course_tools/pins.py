"""The pinned versions, written once: in ``requirements.txt``.

pip reads them there (``binder/requirements.txt`` includes that file). The setup cell
reports the installed versions against them at run time, on Colab too, where the
helper package is installed from the repository without ``requirements.txt``; so the
lesson build copies them into ``autodiff_course/_pins.py``, an ordinary module of the
installed package, and ``--check`` (and the tests) fail when that copy is stale.

    python -m course_tools.pins            # write autodiff_course/_pins.py
    python -m course_tools.pins --check    # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from .config import REQUIREMENTS
from .config import ROOT
from .derived import report_stale

PINS_MODULE = ROOT / "autodiff_course" / "_pins.py"
# Distributions of one package: the setup cell reports the CPU-only wheel as TensorFlow.
SAME_PACKAGE = {"tensorflow-cpu": "tensorflow"}
# The Python the saved outputs are produced with (./course.sh picks it first).
OUTPUTS_PYTHON = "3.11"

HEADER = '''\
"""The exact versions requirements.txt pins, for the setup cell's report.

Generated from requirements.txt by the lesson build (course_tools.pins); do not edit:
change requirements.txt and run `./course.sh build`. A test fails when this is stale.
"""

PINS = {
'''


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def for_the_outputs(requirement) -> bool:
    """Whether a requirement applies to the Python the outputs are produced with
    (:data:`OUTPUTS_PYTHON`), on any platform."""
    if requirement.marker is None:
        return True
    return any(
        requirement.marker.evaluate(
            {
                "sys_platform": platform,
                "platform_system": system,
                "python_version": OUTPUTS_PYTHON,
                "python_full_version": f"{OUTPUTS_PYTHON}.0",
            }
        )
        for platform, system in (("linux", "Linux"), ("darwin", "Darwin"), ("win32", "Windows"))
    )


def read_pins(path: Path = REQUIREMENTS) -> dict[str, str]:
    """Name -> exact version of every requirement in ``path`` that applies to the
    outputs' Python, whatever its platform marker (``tensorflow-cpu`` counted as
    ``tensorflow``); the pins for older Pythons (3.10, which lacks wheels of the
    newest releases) are pip's business only. Raises ValueError for a requirement that
    is not pinned exactly or a package pinned at two versions."""
    from packaging.requirements import Requirement

    pins: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        requirement = Requirement(line)
        specifiers = list(requirement.specifier)
        if len(specifiers) != 1 or specifiers[0].operator != "==":
            raise ValueError(f"{path.name}, line {number}: {line!r} is not pinned exactly")
        if not for_the_outputs(requirement):
            continue
        name = canonical(requirement.name)
        name = SAME_PACKAGE.get(name, name)
        version = specifiers[0].version
        if pins.setdefault(name, version) != version:
            raise ValueError(f"{path.name} pins {name} at both {pins[name]} and {version}")
    return dict(sorted(pins.items()))


def render(pins: dict[str, str]) -> str:
    return (
        HEADER + "".join(f'    "{name}": "{version}",\n' for name, version in pins.items()) + "}\n"
    )


def stale(requirements: Path = REQUIREMENTS, module: Path = PINS_MODULE) -> list[str]:
    """What is out of date in ``autodiff_course/_pins.py`` (nothing: an empty list)."""
    if not module.exists():
        return ["autodiff_course/_pins.py is missing"]
    if module.read_text(encoding="utf-8") != render(read_pins(requirements)):
        return ["autodiff_course/_pins.py differs from requirements.txt"]
    return []


def write() -> bool:
    """Write ``autodiff_course/_pins.py`` from requirements.txt; True if it changed."""
    if not stale():
        return False
    PINS_MODULE.write_text(render(read_pins()), encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if _pins.py is stale")
    args = parser.parse_args(argv)
    if args.check:
        return report_stale(
            stale(), "python -m course_tools.pins", "autodiff_course/_pins.py is current."
        )
    print("wrote autodiff_course/_pins.py" if write() else "autodiff_course/_pins.py is current.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
