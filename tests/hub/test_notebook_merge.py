"""The notebook merge driver (course_tools/notebook_merge.py), through git itself.

Each case makes a repository with lesson 03, a learner's clone that changes its copy,
and an instructor's commit, then merges as nbgitpuller does (``git merge -Xours``),
once with git's own line merge and once with the driver defined as ``binder/start``
defines it. The line merge is what nbgitpuller does by itself; the first test shows
the change it loses without a word.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.config import ROOT
from course_tools.notebook_merge import COPY_SUFFIX
from course_tools.notebook_merge import main as merge_driver

LESSON = "lessons/03-custom-gradients.ipynb"
IDENTITY = ["-c", "user.name=Someone", "-c", "user.email=someone@localhost"]


def git(folder: Path, *arguments: str, environment=None) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *arguments],
        cwd=folder,
        capture_output=True,
        text=True,
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def driver_environment() -> dict:
    """The variables binder/start exports, with this Python as the image's."""
    start = (ROOT / "binder" / "start").read_text()
    assert "GIT_CONFIG_KEY_1=merge.course-notebook.driver" in start
    environment = dict(os.environ, GIT_CONFIG_COUNT="1")
    environment["GIT_CONFIG_KEY_0"] = "merge.course-notebook.driver"
    environment["GIT_CONFIG_VALUE_0"] = (
        f"{sys.executable} -m course_tools.notebook_merge %O %A %B %P"
    )
    return environment


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def save(nb: dict, path: Path) -> None:
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def text(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def index_of(nb: dict, ident: str) -> int:
    return [cell["id"] for cell in nb["cells"]].index(ident)


def first_code(nb: dict) -> str:
    return next(cell["id"] for cell in nb["cells"] if cell["cell_type"] == "code")


def stub_of_3_1(nb: dict) -> str:
    heading = next(i for i, c in enumerate(nb["cells"]) if text(c).startswith("### Exercise 3.1"))
    return next(c["id"] for c in nb["cells"][heading:] if "NotImplementedError" in text(c))


def ran(nb: dict) -> None:
    """A learner ran every cell: new execution counts (JupyterLab then saves them)."""
    for count, cell in enumerate((c for c in nb["cells"] if c["cell_type"] == "code"), 1):
        cell["execution_count"] = 100 + count


def scenario(tmp_path: Path, learner, instructor, driver: bool) -> tuple[Path, str]:
    origin = tmp_path / "origin"
    (origin / "lessons").mkdir(parents=True)
    (origin / LESSON).write_bytes((ROOT / LESSON).read_bytes())
    (origin / ".gitattributes").write_bytes((ROOT / ".gitattributes").read_bytes())
    git(origin, "init", "-q", "-b", "main")
    git(origin, "add", "-A")
    git(origin, "commit", "-qm", "the lesson")
    clone = tmp_path / "learner"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    nb = load(clone / LESSON)
    learner(nb)
    save(nb, clone / LESSON)
    git(clone, "commit", "-qam", "the learner's work")  # as nbgitpuller commits it
    nb = load(origin / LESSON)
    instructor(nb)
    save(nb, origin / LESSON)
    git(origin, "commit", "-qam", "the instructor's update")
    git(clone, "fetch", "-q")
    output = git(
        clone,
        "merge",
        "-Xours",
        "origin/main",
        environment=driver_environment() if driver else None,
    )
    return clone, output


def new_cell_after_setup(nb: dict) -> None:
    nb["cells"].insert(
        index_of(nb, first_code(nb)) + 1,
        {"cell_type": "markdown", "id": "tip", "metadata": {}, "source": "A tip."},
    )


def test_git_alone_drops_the_instructors_new_cell_where_the_learner_added_a_note(tmp_path):
    """nbgitpuller by itself: a learner's note and the instructor's new cell after the
    same cell are one conflict to git, which -Xours settles by dropping the
    instructor's cell, without a word. The driver keeps both."""

    def learner(nb):
        ran(nb)
        nb["cells"].insert(
            index_of(nb, first_code(nb)) + 1,
            {"cell_type": "markdown", "id": "note", "metadata": {}, "source": "My note."},
        )

    clone, _ = scenario(tmp_path / "git", learner, new_cell_after_setup, driver=False)
    ids = [c["id"] for c in load(clone / LESSON)["cells"]]
    assert "note" in ids and "tip" not in ids
    clone, _ = scenario(tmp_path / "driver", learner, new_cell_after_setup, driver=True)
    merged = load(clone / LESSON)
    setup = index_of(merged, first_code(merged))
    assert {index_of(merged, "tip"), index_of(merged, "note")} == {setup + 1, setup + 2}
    assert merged["cells"][setup]["execution_count"] == 101
    assert not (clone / LESSON.replace(".ipynb", COPY_SUFFIX)).exists()


def test_a_fixed_sentence_reaches_a_learner_who_solved_an_exercise(tmp_path):
    sentence = {}

    def learner(nb):
        ran(nb)
        stub = next(c for c in nb["cells"] if c["id"] == stub_of_3_1(nb))
        stub["source"] = "def log1pexp_stable(x):\n    return x\n"

    def instructor(nb):
        cell = nb["cells"][index_of(nb, first_code(nb)) + 1]
        cell["source"] = text(cell) + " Fixed."
        sentence["id"] = cell["id"]

    clone, _ = scenario(tmp_path, learner, instructor, driver=True)
    merged = {c["id"]: c for c in load(clone / LESSON)["cells"]}
    assert text(merged[sentence["id"]]).endswith(" Fixed.")
    assert "return x" in text(merged[stub_of_3_1(load(ROOT / LESSON))])
    assert not (clone / LESSON.replace(".ipynb", COPY_SUFFIX)).exists()


def test_both_changed_the_stub_the_learners_stays_the_instructors_lies_beside(tmp_path):
    def learner(nb):
        next(c for c in nb["cells"] if c["id"] == stub_of_3_1(nb))["source"] = "mine\n"

    def instructor(nb):
        cell = next(c for c in nb["cells"] if c["id"] == stub_of_3_1(nb))
        cell["source"] = "# a hint\n" + text(cell)

    clone, output = scenario(tmp_path, learner, instructor, driver=True)
    stub = stub_of_3_1(load(ROOT / LESSON))
    assert text({c["id"]: c for c in load(clone / LESSON)["cells"]}[stub]) == "mine\n"
    copy = load(clone / LESSON.replace(".ipynb", COPY_SUFFIX))
    assert text({c["id"]: c for c in copy["cells"]}[stub]).startswith("# a hint\n")
    assert "your version kept" in output
    assert (
        git(clone, "status", "--porcelain").strip() == f"?? {LESSON.replace('.ipynb', COPY_SUFFIX)}"
    )


def test_a_cell_the_learner_deleted_stays_deleted_when_the_instructor_changed_it(tmp_path):
    chosen = {}

    def learner(nb):
        chosen["id"] = nb["cells"][-2]["id"]
        del nb["cells"][-2]

    def instructor(nb):
        nb["cells"][-2]["source"] = text(nb["cells"][-2]) + " Changed."

    clone, _ = scenario(tmp_path, learner, instructor, driver=True)
    assert chosen["id"] not in [c["id"] for c in load(clone / LESSON)["cells"]]
    copy = load(clone / LESSON.replace(".ipynb", COPY_SUFFIX))
    assert text(copy["cells"][-2]).endswith(" Changed.")


def test_cells_only_one_side_added_or_the_instructor_deleted(tmp_path):
    def learner(nb):
        nb["cells"].insert(
            3, {"cell_type": "markdown", "id": "mine", "metadata": {}, "source": "My note."}
        )

    def instructor(nb):
        new_cell_after_setup(nb)
        del nb["cells"][-2]  # an unchanged cell of the learner's: it goes

    gone = load(ROOT / LESSON)["cells"][-2]["id"]
    clone, _ = scenario(tmp_path, learner, instructor, driver=True)
    ids = [c["id"] for c in load(clone / LESSON)["cells"]]
    assert "mine" in ids and "tip" in ids and gone not in ids


def test_an_unreadable_notebook_is_kept_as_it_is_with_the_update_beside_it(tmp_path):
    base, ours, theirs = (tmp_path / name for name in ("base", "ours", "theirs"))
    base.write_bytes((ROOT / LESSON).read_bytes())
    theirs.write_bytes((ROOT / LESSON).read_bytes())
    ours.write_text("{ not json")
    (tmp_path / "lessons").mkdir()
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        assert merge_driver([str(base), str(ours), str(theirs), LESSON]) == 0
    finally:
        os.chdir(here)
    assert ours.read_text() == "{ not json"
    assert (tmp_path / LESSON.replace(".ipynb", COPY_SUFFIX)).read_bytes() == theirs.read_bytes()


@pytest.mark.parametrize("name", [".gitattributes"])
def test_gitattributes_names_the_driver_for_notebooks(name):
    assert "*.ipynb merge=course-notebook" in (ROOT / name).read_text().splitlines()
