"""Run a learner's copy and judge every function it defines with the exercises' own checks.

``python tests/answer_probe.py LESSON.ipynb`` runs the notebook top to bottom in a
fresh kernel, with checks printing rather than raising, as a learner who has solved
nothing would. After every cell it notes the functions that cell defined: functions
whose code is on the page (hidden cells included), not those imported from a package
such as the course's reference answers. At the end, each exercise's check judges
every function defined above the exercise's spoiler point that takes as many
positional arguments as the exercise's stub (every class defined above it, for a stub
class), the stub itself excepted. It prints one
JSON line: for each exercise, how many functions were judged and which ones the check
called correct, and which stub functions it found (so that a test can tell that the
probe saw the notebook at all).

A function that an exercise's check accepts is a working answer, whatever its name
and however it is written, so a learner who reads it has read the answer.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import nbformat
from exercises import exercises  # run as a script, tests/ is its first import path

from autodiff_course.checking import STRICT_ENVIRONMENT_VARIABLE

MARKER = "ANSWER-PROBE "

# Defined first in the kernel: note(index) records, by identity, each function that
# appeared in the namespace and whose code was compiled from a notebook cell.
RECORDER = """
def _probe_note(index, _found={}):
    import inspect
    for name, value in list(globals().items()):
        if name.startswith("_") or not callable(value):
            continue
        if isinstance(value, type):  # a class defined in a cell (a Keras layer's answer)
            if value.__module__ == "__main__" and id(value) not in _found:
                _found[id(value)] = (index, name, value)
            continue
        try:
            code = inspect.unwrap(value).__code__
        except (AttributeError, ValueError):
            continue
        if id(value) not in _found and "ipykernel_" in code.co_filename:
            _found[id(value)] = (index, name, value)


_probe_found = _probe_note.__defaults__[0]
"""

# Run last: each exercise's check judges the candidates for it.
JUDGE = """
import importlib as _importlib
import inspect as _inspect
import json as _json


def _probe_takes(function, count):
    try:
        _inspect.signature(function).bind(*range(count))
    except (TypeError, ValueError):
        return False
    return True


def _probe_judge(module, plan):
    checks = _importlib.import_module(module)
    seen = _probe_found.values()
    report = {"stubs": sorted({name for index, name, _ in seen if index in plan["stub_cells"]})}
    for exercise in plan["exercises"]:
        judge = getattr(checks, exercise["check"])
        judged, accepted = 0, []
        for index, name, function in list(_probe_found.values()):
            if index >= exercise["spoiler"] or index in exercise["stubs"]:
                continue
            wanted = exercise["arguments"]
            if isinstance(function, type) != (wanted == "class"):
                continue
            if wanted != "class" and not _probe_takes(function, wanted):
                continue
            judged += 1
            if judge.evaluate(function).status.name == "CORRECT":
                accepted.append(f"{name} (cell {index})")
        report[exercise["number"]] = {"judged": judged, "accepted": accepted}
    print(_PROBE_MARKER + _json.dumps(report))
"""


def stub_arguments(nb, exercise) -> int | str:
    """How many positional arguments the exercise's stub function takes (``"class"`` for
    a stub class: its candidates are the classes defined in cells)."""
    import ast

    for index in exercise.stubs:
        for node in ast.parse(nb.cells[index].source).body:
            if isinstance(node, ast.ClassDef) and node.name in exercise.names:
                return "class"
            if isinstance(node, ast.FunctionDef) and node.name in exercise.names:
                return len(node.args.posonlyargs) + len(node.args.args)
    return -1


def instrumented(nb, plan: dict, module: str):
    """A copy of ``nb`` that records functions after every code cell and judges them last."""
    probe = nbformat.v4.new_notebook(metadata=nb.metadata)
    probe.cells.append(nbformat.v4.new_code_cell(RECORDER))
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        probe.cells.append(nbformat.v4.new_code_cell(cell.source))
        probe.cells.append(nbformat.v4.new_code_cell(f"_probe_note({index})"))
    call = f"_probe_judge({module!r}, _json.loads({json.dumps(plan)!r}))"
    probe.cells.append(nbformat.v4.new_code_cell(f"_PROBE_MARKER = {MARKER!r}\n{JUDGE}\n{call}"))
    return probe


def probe(path: Path) -> dict:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    found = [exercise for exercise in exercises(nb) if exercise.check]
    plan = {
        "stub_cells": sorted({index for exercise in found for index in exercise.stubs}),
        "exercises": [
            {
                "number": exercise.number,
                "check": exercise.check,
                "spoiler": exercise.spoiler,
                "stubs": exercise.stubs,
                "arguments": stub_arguments(nb, exercise),
            }
            for exercise in found
        ],
    }
    module = f"autodiff_course.checks.lesson{path.name[:2]}"
    run = instrumented(nb, plan, module)
    environment = dict(os.environ, **{STRICT_ENVIRONMENT_VARIABLE: "0", "MPLBACKEND": "agg"})
    with tempfile.TemporaryDirectory() as scratch:
        client = NotebookClient(
            run, timeout=600, kernel_name="python3", resources={"metadata": {"path": scratch}}
        )
        client.execute(env=environment, cwd=scratch)
    for output in run.cells[-1].outputs:
        for line in output.get("text", "").splitlines():
            if line.startswith(MARKER):
                return json.loads(line[len(MARKER) :])
    raise RuntimeError(f"the probe printed no report for {path.name}")


if __name__ == "__main__":
    print(json.dumps(probe(Path(sys.argv[1]))))
