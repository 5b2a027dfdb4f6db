"""The nbgrader export (``./course.sh nbgrader DIR``), checked against nbgrader itself.

The quick tests read what the export writes for every lesson. The slow one installs
nbgrader (requirements-nbgrader.txt) into its own environment, ``.cache/nbgrader-venv``
(git-ignored, kept between runs and rebuilt when that file changes), because nbgrader
adds its menus and server extensions to the JupyterLab it is installed beside, and the
course's .venv is the learners' JupyterLab. nbgrader's "python3" kernel is pointed at
this interpreter, as an instructor's hub image would have it. Then it runs
``generate_assignment`` and ``autograde`` on three submissions of one lesson (all
correct, untouched, one wrong answer) and compares each test cell's score with the
verdict its check reported.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
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

VENV = ROOT / ".cache" / "nbgrader-venv"
REQUIREMENTS = ROOT / "requirements-nbgrader.txt"
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


def nbgrader_environment() -> Path:
    """``.cache/nbgrader-venv`` with requirements-nbgrader.txt installed (cached)."""
    VENV.parent.mkdir(exist_ok=True)
    stamp = VENV / "installed-requirements.txt"
    with open(VENV.parent / "nbgrader-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = REQUIREMENTS.read_text()
        if stamp.exists() and stamp.read_text() == wanted and (VENV / "bin" / "nbgrader").exists():
            return VENV
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        installed = subprocess.run(
            [*pip, "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
            capture_output=True,
            text=True,
        )
        if installed.returncode != 0:
            pytest.fail(
                "could not install requirements-nbgrader.txt into "
                f".cache/nbgrader-venv:\n{installed.stderr[-3000:]}"
            )
        stamp.write_text(wanted)
    return VENV


def nbgrader(course: Path, environment: dict, *arguments: str) -> None:
    done = subprocess.run(
        [str(VENV / "bin" / "nbgrader"), *arguments],
        cwd=course,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0 or "[AutogradeApp | ERROR]" in done.stderr:
        pytest.fail(f"nbgrader {' '.join(arguments)} failed:\n{done.stderr[-4000:]}")


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


def scores(course: Path, environment: dict, assignment: str) -> dict:
    done = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", GRADEBOOK_SCRIPT, assignment],
        cwd=course,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def verdicts(course: Path, student: str, assignment: str) -> dict[str, str]:
    """Exercise number -> status, as the checks reported them while autograde ran."""
    report = course / "autograded" / student / assignment / "verdicts.jsonl"
    records = [json.loads(line) for line in report.read_text().splitlines()]
    return {record["exercise"]: record["status"] for record in records}


def autograded_cells(path: Path) -> list[tuple[str, str, int]]:
    """(exercise number, grade_id, points) of each autograded cell, from the export."""
    nb = nbformat.read(path, as_version=4)
    by_cell = {f.check_cell: f.number for f in find_exercises(nb)}
    return [
        (by_cell[index], cell.metadata["nbgrader"]["grade_id"], cell.metadata["nbgrader"]["points"])
        for index, cell in enumerate(nb.cells)
        if cell.metadata["nbgrader"]["grade"]
    ]


def wrong_submission(source_nb):
    """The solutions with the first exercise's answer deliberately doubled."""
    nb = nbformat.from_dict(json.loads(json.dumps(source_nb)))
    found = find_exercises(nb)
    target = next(f for f in found if f.answer and f.answer.isidentifier())
    cell = next(
        cell
        for cell in nb.cells[target.heading_cell : target.check_cell]
        if cell.cell_type == "code" and cell.metadata["nbgrader"]["solution"]
    )
    cell.source += (
        f"\n\n_right_answer = {target.answer}\n\n"
        f"def {target.answer}(*args, **kwargs):  # wrong: twice the right value\n"
        f"    return 2 * _right_answer(*args, **kwargs)\n"
    )
    return nb, target.number


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Autograde three submissions of the first lesson whose solutions pass their
    checks: lesson 01, unless its solutions are broken while someone reworks them."""
    nbgrader_environment()
    course = tmp_path_factory.mktemp("nbgrader-autograde")
    kernels = course.parent / f"{course.name}-jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3 (the course's environment)",
                "language": "python",
            }
        )
    )
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("AUTODIFF_COURSE_")
    }
    environment.update(
        PATH=f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        JUPYTER_PATH=str(kernels.parent.parent),
        # Relative: each kernel writes its verdicts beside the notebook it runs.
        AUTODIFF_COURSE_REPORT="verdicts.jsonl",
    )
    passed_over = []
    for lesson in [lesson for lesson in COURSE.lessons if COURSE.exercises(lesson)]:
        name = lesson.slug
        if not nbgrader_export.export(course, COURSE, [name], say=lambda line: None):
            passed_over.append(f"{name}: not exported")
            continue
        source = course / "source" / name / lesson.filename
        nbgrader(course, environment, "generate_assignment", name, "--force")
        submissions = {
            "correct": nbformat.read(source, as_version=4),
            "untouched": nbformat.read(course / "release" / name / lesson.filename, as_version=4),
        }
        submissions["wrong"], wrong_exercise = wrong_submission(submissions["correct"])
        for student, nb in submissions.items():
            folder = course / "submitted" / student / name
            folder.mkdir(parents=True)
            nbformat.write(nb, folder / lesson.filename)
        nbgrader(course, environment, "autograde", name)
        statuses = verdicts(course, "correct", name)
        if set(statuses.values()) == {"correct"} and len(statuses) == len(autograded_cells(source)):
            break
        passed_over.append(f"{name}: its solutions do not pass their checks ({statuses})")
    else:
        pytest.fail("no lesson's solutions pass their checks: " + "; ".join(passed_over))
    return {
        "course": course,
        "lesson": name,
        "source": source,
        "passed_over": passed_over,
        "wrong_exercise": wrong_exercise,
        "scores": scores(course, environment, name),
    }


def expected_cells(graded, student: str) -> dict[str, float]:
    statuses = verdicts(graded["course"], student, graded["lesson"])
    return {
        grade_id: float(points) if statuses.get(number) == "correct" else 0.0
        for number, grade_id, points in autograded_cells(graded["source"])
    }


def test_nbgrader_gives_full_marks_to_the_solutions(graded):
    result = graded["scores"]["correct"]
    total = sum(points for _, _, points in autograded_cells(graded["source"]))
    assert result["max_score"] == total
    assert result["score"] == total
    assert result["cells"] == expected_cells(graded, "correct")


def test_nbgrader_gives_nothing_to_an_untouched_notebook(graded):
    result = graded["scores"]["untouched"]
    statuses = verdicts(graded["course"], "untouched", graded["lesson"])
    assert set(statuses.values()) == {"not attempted yet"}
    assert result["score"] == 0
    assert result["cells"] == expected_cells(graded, "untouched")


def test_nbgrader_takes_off_the_points_of_a_wrong_answer(graded):
    result = graded["scores"]["wrong"]
    statuses = verdicts(graded["course"], "wrong", graded["lesson"])
    assert statuses[graded["wrong_exercise"]] == "not yet"
    cells = expected_cells(graded, "wrong")
    assert result["cells"] == cells
    assert result["score"] == sum(cells.values()) < result["max_score"]
    lost = dict((number, points) for number, _, points in autograded_cells(graded["source"]))
    assert result["max_score"] - result["score"] >= lost[graded["wrong_exercise"]]
