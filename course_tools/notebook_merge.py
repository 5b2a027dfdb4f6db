"""Merge an instructor's update into a learner's notebook, cell by cell, losing nothing.

    python -m course_tools.notebook_merge BASE OURS THEIRS PATH

git's merge driver for notebooks (``.gitattributes``: ``*.ipynb merge=course-notebook``;
the hub image defines the driver in ``binder/start``), so that it runs when nbgitpuller
merges the course's new commits into a learner's copy. Git's own line merge knows
nothing of cells: nbgitpuller's ``-Xours`` drops the instructor's lines wherever they
touch lines the learner changed (a new cell next to a run cell's outputs, for one),
silently. Here the unit is the cell, matched by its id:

* a cell only the instructor changed (its text, type or tags; outputs do not count)
  takes the instructor's version; a cell only the learner changed, deleted or added
  stays as the learner has it; a new cell of the instructor's goes in after the cell
  it follows in the instructor's version; a cell only the instructor deleted goes;
* a cell both changed, differently, or that one changed and the other deleted, is a
  conflict: the learner's version stays, and the instructor's whole notebook is
  written beside it as ``<name>.instructor-update.ipynb``.

OURS (the learner's, which git replaces with the result) is always left a valid
notebook, and the exit status is always 0: a conflict here must never stop the merge
halfway, which would leave the learner's copy in the middle of a git merge.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

COPY_SUFFIX = ".instructor-update.ipynb"


def read(path: Path) -> dict | None:
    try:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(isinstance(c, dict) and c.get("id") for c in cells):
        return None  # not a notebook whose cells can be told apart
    return nb


def text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def content(cell: dict) -> tuple:
    """What a change to a cell is: its type, text and tags; never its outputs."""
    return (cell.get("cell_type"), text(cell), tuple(cell.get("metadata", {}).get("tags", [])))


def merge_cells(base: dict, ours: dict, theirs: dict) -> tuple[list[dict], list[str]]:
    """The merged cells, and the ids of the cells in conflict (see the module's docstring)."""
    base_cells = {c["id"]: c for c in base["cells"]}
    their_cells = {c["id"]: c for c in theirs["cells"]}
    merged = list(ours["cells"])
    conflicts = []
    for ident, old in base_cells.items():
        mine = next((c for c in merged if c["id"] == ident), None)
        new = their_cells.get(ident)
        i_changed = mine is not None and content(mine) != content(old)
        they_changed = new is not None and content(new) != content(old)
        if mine is not None and new is not None:
            if they_changed and not i_changed:
                merged[merged.index(mine)] = new
            elif they_changed and content(new) != content(mine):
                conflicts.append(ident)
        elif mine is None and they_changed:
            conflicts.append(ident)  # the learner deleted what the instructor changed
        elif new is None and mine is not None:
            if i_changed:
                conflicts.append(ident)  # the instructor deleted what the learner changed
            else:
                merged.remove(mine)
    present = {c["id"] for c in merged}
    previous = None
    for cell in theirs["cells"]:
        if cell["id"] not in base_cells and cell["id"] not in present:
            at = next((i + 1 for i, c in enumerate(merged) if c["id"] == previous), 0)
            merged.insert(at, cell)
            present.add(cell["id"])
        if cell["id"] in present:
            previous = cell["id"]
    return merged, conflicts


def copy_path(path: str) -> Path:
    name = Path(path)
    return name.with_name(name.name[: -len(".ipynb")] + COPY_SUFFIX)


def main(argv: list[str] | None = None) -> int:
    base_path, ours_path, theirs_path, path = (argv if argv is not None else sys.argv[1:])[:4]
    base, ours, theirs = read(base_path), read(ours_path), read(theirs_path)
    if base is None or ours is None or theirs is None:
        merged, conflicts = None, ["(the whole notebook)"]
    else:
        cells, conflicts = merge_cells(base, ours, theirs)
        merged = dict(ours, cells=cells)
        merged["nbformat_minor"] = max(
            ours.get("nbformat_minor", 0), theirs.get("nbformat_minor", 0)
        )
    if merged is not None:
        Path(ours_path).write_text(
            json.dumps(merged, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    if conflicts:
        copy = copy_path(path)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(Path(theirs_path).read_bytes())
        count = len(conflicts)
        print(
            f"{path}: your version kept where you and the instructor both changed "
            f"{'a cell' if count == 1 else f'{count} cells'}; the instructor's new version "
            f"is beside it, in {copy}."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
