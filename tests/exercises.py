"""Where each exercise of a learner's copy sits, for the tests that keep answers back.

An exercise runs from its heading (``### Exercise N.M: ...``) to the first later cell
that starts a heading or carries the ``spoilers-below`` tag: that is its *section*.
Its *spoiler point* is the first ``spoilers-below`` cell after its heading (or the
end of the notebook): everything above it can be read before the exercise is
solved. Its *stub cells* are the code cells of its section that hold the learner's
stub (``raise NotImplementedError()``), its *names* the functions and classes those
cells define, and its *check* the attribute of the lesson's check module that the
first later cell calls (``check.accumulate_gradient(accumulate_gradient)``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from dataclasses import field

from course_tools.notebook_format import CODE_STUB
from course_tools.notebook_format import EXERCISE_HEADING

SPOILER_TAG = "spoilers-below"
CHECKS_PACKAGE = "autodiff_course.checks"
ANY_HEADING = re.compile(r"^\s*#{1,3}\s", re.MULTILINE)
STUB_LINE = CODE_STUB.split("\n")[-1]


@dataclass
class Exercise:
    number: str
    heading: int
    section_end: int
    spoiler: int
    stubs: list[int] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    check_cell: int | None = None
    check: str | None = None


def tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def is_hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden", False))


def parse(source: str) -> ast.Module | None:
    """A code cell's syntax tree; IPython's magics (``%pip``) are read as comments."""
    lines = [
        "#" + line if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n")
    ]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def check_alias(nb) -> str | None:
    """The name a notebook gives its lesson's check module (``... import lesson06 as check``)."""
    for cell in nb.cells:
        tree = parse(cell.source) if cell.cell_type == "code" else None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.ImportFrom) and node.module == CHECKS_PACKAGE:
                for alias in node.names:
                    if re.fullmatch(r"lesson\d\d", alias.name):
                        return alias.asname or alias.name
    return None


def check_calls(tree, alias: str) -> list[ast.Attribute]:
    """Every ``alias.<name>`` in a syntax tree: each use of one of the lesson's checks."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == alias
    ]


def defined_names(tree) -> set[str]:
    """The functions and classes a cell defines at its top level."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def bound_names(tree) -> set[str]:
    """Every name a cell binds anywhere: definitions, assignments, imports, loop targets."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def exercises(nb) -> list[Exercise]:
    """The exercises of a learner's copy, in order, located as the module docstring says."""
    cells = nb.cells
    alias = check_alias(nb)
    found = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        for heading in EXERCISE_HEADING.finditer(cell.source):
            later = range(index + 1, len(cells))
            spoiler = next((k for k in later if SPOILER_TAG in tags(cells[k])), len(cells))
            section_end = next(
                (
                    k
                    for k in later
                    if SPOILER_TAG in tags(cells[k])
                    or (cells[k].cell_type == "markdown" and ANY_HEADING.search(cells[k].source))
                ),
                len(cells),
            )
            exercise = Exercise(heading["number"], index, section_end, spoiler)
            for k in range(index + 1, section_end):
                if cells[k].cell_type == "code" and STUB_LINE in cells[k].source:
                    exercise.stubs.append(k)
                    tree = parse(cells[k].source)
                    exercise.names |= defined_names(tree) if tree else set()
            after = exercise.stubs[-1] + 1 if exercise.stubs else index + 1
            for k in range(after, section_end):
                tree = parse(cells[k].source) if cells[k].cell_type == "code" else None
                calls = [
                    node.func
                    for node in (ast.walk(tree) if tree and alias else ())
                    if isinstance(node, ast.Call) and node.func in check_calls(tree, alias)
                ]
                if calls:
                    exercise.check_cell, exercise.check = k, calls[0].attr
                    break
            found.append(exercise)
    return found
