"""A class on a real JupyterHub, then an update of the course in the middle of term.

One hub (:mod:`course_tools.hub`) runs the course's image stood in for
(:mod:`course_tools.hub_image`): JupyterHub from PyPI, configurable-http-proxy from
npm, on 127.0.0.1. Every learner starts with an empty home where the image's home
would be (the persistent volume of Zero to JupyterHub), so that the server starting
at all, and the lesson running from the copy nbgitpuller puts there, prove that the
course lives outside the home. Five learners run lesson 03 at once after one learner
alone (``./course.sh bench`` runs twenty, :mod:`course_tools.benchmark_hub`); one more
opens three notebooks. Then the instructor commits a change to lesson 03 (a fixed
sentence, a new cell, a changed exercise stub) and a new file, after the learners
changed their copies (an exercise solved, a note added, a cell deleted, cells run,
another notebook deleted, a file of their own made under the new file's name), and
each learner follows the link again.

The times are printed, not asserted (performance is the benchmark's business); the
failures, the homes, the memory against the guide's limit and every merge are.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from course_tools import benchmark_hub
from course_tools import hub_image
from course_tools.config import ROOT
from course_tools.hub import Learner
from course_tools.hub import LocalHub
from course_tools.lessons import find_exercises
from course_tools.notebook_merge import COPY_SUFFIX

LEARNERS = 5
LESSON = benchmark_hub.LESSON
CLONE = benchmark_hub.CLONE
PATH = f"{CLONE}/lessons/{LESSON}.ipynb"
GUIDE = ROOT / "instructors" / "guide.md"

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None and not os.environ.get("CI"),
    reason="npm is needed for configurable-http-proxy (./course.sh test installs it)",
)


@pytest.fixture(scope="module")
def image():
    return hub_image.build(say=print)


@pytest.fixture(scope="module")
def hub(image, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hub")
    repository = benchmark_hub.origin_repository(folder / "origin")
    with LocalHub(image, folder / "hub") as running:
        running.repository = repository
        yield running


@pytest.fixture(scope="module")
def session(hub):
    figures = asyncio.run(benchmark_hub.class_session(hub, hub.repository, LEARNERS))
    summary = benchmark_hub.summary(figures)
    for name, value, target, note in benchmark_hub.rows(summary):
        print(f"{name}: {value} (target {target or '-'}) {note}")
    return figures, summary


def guide_memory() -> dict:
    return json.loads((ROOT / "benchmark" / "latest.json").read_text())["hub_memory"]


def gigabytes(value: str) -> float:
    return float(value.rstrip("G"))


def test_no_learner_fails(session):
    _, summary = session
    assert summary["failures"] == 0, summary["failure_lines"]


def test_every_learner_starts_with_an_empty_home_and_gets_the_course_from_the_link(session, hub):
    figures, _ = session
    for member in [figures["alone"], *figures["class"], figures["three"]]:
        assert member["home_was_empty"], member["name"]
        assert member["course_in_home_before_the_link"] is False, member["name"]
        assert (hub.home(member["name"]) / PATH).is_file(), member["name"]
    assert not (hub.home("alone") / "binder").exists()


def test_every_learner_fits_the_guides_memory_limit(session):
    figures, summary = session
    limit_mb = gigabytes(guide_memory()["limit"]) * 1e9 / 2**20
    for member in [figures["alone"], *figures["class"], figures["three"]]:
        assert member["memory_mb"]["total"] <= limit_mb, member
    three = figures["three"]["memory_mb"]
    assert len(three["kernels"]) == 3, three  # all three kernels were open when measured
    assert summary["three_notebooks_mb"] <= limit_mb


def test_the_guide_quotes_the_hub_measurement():
    text = GUIDE.read_text(encoding="utf-8")
    memory = guide_memory()
    assert f"guarantee: {memory['guarantee']}" in text
    assert f"limit: {memory['limit']}" in text
    assert "three notebooks" in text


# ------------------------------------------------------------------ the update


def cells_of(nb: dict) -> dict[str, dict]:
    return {cell["id"]: cell for cell in nb["cells"]}


def text(cell: dict) -> str:
    source = cell["source"]
    return "".join(source) if isinstance(source, list) else source


def places(nb: dict) -> dict[str, str]:
    """The ids of the cells the update touches: the Markdown cell after the setup cell
    (the sentence fixed; later deleted by one learner), the setup cell (the new cell and
    a learner's note go after it), and exercise 3.1's stub."""
    setup = next(i for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code")
    node = nbformat.from_dict(nb)
    first = find_exercises(node)[0]
    stub = next(
        i
        for i in range(first.heading_cell + 1, first.check_cell)
        if "NotImplementedError" in text(nb["cells"][i])
    )
    return {
        "sentence": nb["cells"][setup + 1]["id"],
        "setup": nb["cells"][setup]["id"],
        "stub": nb["cells"][stub]["id"],
    }


FIXED = " (This sentence was fixed by the instructor.)"
NEW_CELL = "A tip the instructor added after the setup cell."
HINT = "# Hint: start from the stable rule of section 2.\n"
NOTE = "My note: run the setup cell first, every time."
MY_ANSWER = "def log1pexp_stable(x):\n    return x  # my own attempt\n"
# A file the instructor adds, which one learner had already made a file of their own
# under the same name; and a notebook another learner deleted.
NEW_FILE = "lessons/more-exercises.md"
INSTRUCTORS_FILE = "More exercises, from the instructor.\n"
LEARNERS_FILE = "My own list of exercises.\n"
DELETED = "lessons/00-welcome.ipynb"


def instructor_update(repository: Path, where: dict) -> None:
    path = repository / "lessons" / f"{LESSON}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells = cells_of(nb)
    cells[where["sentence"]]["source"] = text(cells[where["sentence"]]) + FIXED
    cells[where["stub"]]["source"] = HINT + text(cells[where["stub"]])
    after = [cell["id"] for cell in nb["cells"]].index(where["setup"]) + 1
    nb["cells"].insert(after, nbformat.v4.new_markdown_cell(NEW_CELL, id="03-tip"))
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    (repository / NEW_FILE).write_text(INSTRUCTORS_FILE, encoding="utf-8")
    instructor = ["git", "-c", "user.name=Instructor", "-c", "user.email=instructor@localhost"]
    subprocess.run([*instructor, "add", NEW_FILE], cwd=repository, check=True)
    message = "Lesson 03: a sentence fixed, a tip added, a hint in exercise 3.1; exercises"
    subprocess.run([*instructor, "commit", "-qam", message], cwd=repository, check=True)


async def edit(learner: Learner, how: str, where: dict) -> None:
    """What each learner did to their copy, which they had run and saved in class."""
    if how in ("untouched", "ran"):
        return
    nb = await learner.read_notebook(PATH)
    cells = cells_of(nb)
    if how == "solved":
        cells[where["stub"]]["source"] = MY_ANSWER
    elif how == "note":  # and another notebook deleted
        after = [cell["id"] for cell in nb["cells"]].index(where["setup"]) + 1
        nb["cells"].insert(after, nbformat.v4.new_markdown_cell(NOTE, id="my-note"))
        await learner.request("DELETE", f"{learner.server}/api/contents/{CLONE}/{DELETED}")
    elif how == "deleted":  # a cell, and a file of their own made
        nb["cells"] = [cell for cell in nb["cells"] if cell["id"] != where["sentence"]]
        body = {"type": "file", "format": "text", "content": LEARNERS_FILE}
        await learner.request("PUT", f"{learner.server}/api/contents/{CLONE}/{NEW_FILE}", body)
    await learner.save_notebook(PATH, nb)


EDITS = {"learner01": "solved", "learner02": "note", "learner03": "deleted"}


@pytest.fixture(scope="module")
def updated(session, hub):
    async def term():
        link = benchmark_hub.lesson_link(hub, hub.repository, f"lessons/{LESSON}.ipynb")
        names = [f"learner{n:02d}" for n in range(1, LEARNERS + 1)]
        learners = {name: Learner(hub, name) for name in names}

        async def come_back(learner):  # the class's servers stopped; their homes stayed
            await learner.log_in()
            await learner.start_server()

        await asyncio.gather(*(come_back(learner) for learner in learners.values()))
        # the lesson as it came (every learner's copy is their own by now)
        where = places(json.loads((hub.repository / "lessons" / f"{LESSON}.ipynb").read_text()))
        await asyncio.gather(
            *(edit(learners[name], EDITS.get(name, "untouched"), where) for name in learners)
        )
        instructor_update(hub.repository, where)
        pulls = await asyncio.gather(*(each.follow_link(link) for each in learners.values()))
        logs = dict(zip(learners, pulls))
        merged = {name: await learner.read_notebook(PATH) for name, learner in learners.items()}
        return where, merged, logs

    where, merged, logs = asyncio.run(term())
    copies = {
        name: hub.home(name) / benchmark_hub.CLONE / "lessons" / f"{LESSON}{COPY_SUFFIX}"
        for name in merged
    }
    return where, merged, logs, copies


def test_a_learner_who_changed_nothing_gets_every_change(updated):
    where, merged, _, copies = updated
    for name in ("learner04", "learner05"):  # ran every cell and saved, nothing else
        cells = cells_of(merged[name])
        assert text(cells[where["sentence"]]).endswith(FIXED), name
        assert text(cells[where["stub"]]).startswith(HINT), name
        assert "03-tip" in cells, name
        assert not copies[name].exists(), name


def test_a_solved_exercise_stays_and_the_instructors_stub_lies_beside_it(updated):
    where, merged, logs, copies = updated
    cells = cells_of(merged["learner01"])
    assert text(cells[where["stub"]]) == MY_ANSWER
    assert text(cells[where["sentence"]]).endswith(FIXED)  # what did not conflict arrives
    assert "03-tip" in cells
    copy = json.loads(copies["learner01"].read_text())
    assert text(cells_of(copy)[where["stub"]]).startswith(HINT)
    assert f"{LESSON}{COPY_SUFFIX}" in logs["learner01"]  # git's output, shown while pulling


def test_a_note_stays_beside_the_instructors_new_cell(updated):
    where, merged, _, copies = updated
    ids = [cell["id"] for cell in merged["learner02"]["cells"]]
    assert "my-note" in ids and "03-tip" in ids
    assert ids.index(where["setup"]) < ids.index("03-tip") and ids.index("my-note") > ids.index(
        where["setup"]
    )
    assert text(cells_of(merged["learner02"])[where["stub"]]).startswith(HINT)
    assert not copies["learner02"].exists()


def test_a_deleted_cell_stays_deleted_and_the_fixed_one_lies_beside_it(updated):
    where, merged, _, copies = updated
    cells = cells_of(merged["learner03"])
    assert where["sentence"] not in cells
    assert "03-tip" in cells and text(cells[where["stub"]]).startswith(HINT)
    copy = json.loads(copies["learner03"].read_text())
    assert text(cells_of(copy)[where["sentence"]]).endswith(FIXED)


def test_every_merged_copy_is_a_valid_notebook(updated):
    _, merged, _, _ = updated
    for nb in merged.values():
        nbformat.validate(nbformat.from_dict(nb))


def test_a_notebook_the_learner_deleted_comes_back(updated, hub):
    restored = hub.home("learner02") / CLONE / DELETED
    assert restored.is_file()
    assert restored.read_bytes() == (hub.repository / DELETED).read_bytes()


def test_a_file_of_the_learners_own_under_the_instructors_new_name_is_renamed(updated, hub):
    _, _, logs, _ = updated
    folder = hub.home("learner03") / CLONE / "lessons"
    assert (folder / "more-exercises.md").read_text() == INSTRUCTORS_FILE
    renamed = list(folder.glob("more-exercises__*.md"))  # nbgitpuller's time stamp
    assert [path.read_text() for path in renamed] == [LEARNERS_FILE]
    assert "to avoid conflict with upstream" in logs["learner03"]
    assert not list((hub.home("learner04") / CLONE / "lessons").glob("more-exercises__*"))
