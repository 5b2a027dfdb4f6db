"""What a learner meets while reading: answers kept back, and declared times that hold.

**Spoilers.** A learner scrolling through a lesson must not read an exercise's
answer before a clear spoiler point. Everything of a learner's copy above an
exercise's spoiler point (``tests/exercises.py`` says where each exercise sits)
counts as read: markdown, saved text outputs and code, in folded cells too
(``jupyter.source_hidden``), since every notebook viewer but JupyterLab shows
folded code in full. Five rules, one per way an answer gets out:

1. *Copied lines.* For every ``### BEGIN SOLUTION`` region of ``solutions/``, an
   answer counts as given away when half or more of its substantive lines appear
   above the spoiler point verbatim (after normalising spaces and dropping
   comments). Boilerplate lines that every answer of a kind shares
   (``with tf.GradientTape() as tape:``, ``tape.watch(x)``, ``def grad_fn(upstream):``,
   a bare ``return``) are not substantive.
2. *The answer's name.* No cell but the exercise's stub binds a name the stub
   defines (``def``, ``class``, assignment, import): a second ``multiply_vjp`` is
   either the answer or a trap.
3. *An equivalent implementation.* No function written on the page above the
   spoiler point, whatever its name, cell or spelling, is one that the exercise's
   own check accepts: ``tests/answer_probe.py`` runs the learner's copy and asks
   the check about every function with the stub's number of arguments. Functions
   imported from the helper package (the reference answers of
   ``autodiff_course.reference``) are not on the page, and later cells may use them.
4. *A verdict on another answer.* Above the spoiler point an exercise's check runs
   only in its own check cell, on the learner's own function: its verdict on any
   other answer names what that answer lacks, and so the fix.
5. *Folded code in an exercise's section.* No code cell between an exercise's
   heading and the end of its section is folded. Code the learner needs there is
   shown, and judged by the rules above; an answer that later cells need comes from
   the reference package, imported after the check with a line that says why. (A
   working answer folded right under its check, inlined in a larger function, is
   what this rule catches and the others may not.)

**Pace.** A lesson's teaching time is estimated from what a learner reads and
runs outside the exercises: prose at 120 words per minute (technical text with
formulas), and per code cell 30 seconds to run it and read its output plus
5 seconds per line of code (collapsed cells: the 30 seconds only). An exercise
section runs from its heading to the next heading or spoiler point; teaching
cells after a spoiler point count as teaching. The minutes
declared in ``course.toml`` may differ from the estimate by at most 25%, and a
lesson's exercise minutes must add up to the minutes given in its exercise
headings.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from exercises import SPOILER_TAG
from exercises import bound_names
from exercises import check_alias
from exercises import check_calls
from exercises import exercises
from exercises import is_hidden
from exercises import parse
from notebooks import LESSONS
from notebooks import load
from notebooks import notebook_path

from course_tools.notebook_format import BEGIN_SOLUTION as BEGIN
from course_tools.notebook_format import END_SOLUTION as END
from course_tools.notebook_format import EXERCISE_HEADING

PROSE_WORDS_PER_MINUTE = 120
SECONDS_PER_CODE_CELL = 30
SECONDS_PER_CODE_LINE = 5
ALLOWED_TIME_DIFFERENCE = 0.25

HEADING = re.compile(r"^\s*#{1,3}\s")

BOILERPLATE = [
    re.compile(pattern)
    for pattern in (
        r"^with tf\.(autodiff\.)?GradientTape\(.*\) as \w+:$",
        r"^with tf\.autodiff\.ForwardAccumulator\(.*\) as \w+:$",
        r"^\w+\.watch\(\w+\)$",
        r"^def \w+\([\w, =*]*\):$",
        r"^@tf\.custom_gradient$",
        r"^return( \w+(, \w+)*)?$",
        r"^(else|try|finally|pass|break|continue):?$",
        r"^del \w+$",
        r"^[\w\[\]]+ = \[\]$",
    )
]
MIN_SUBSTANTIVE_LENGTH = 12


def normalise(line: str) -> str:
    line = line.split(" #", 1)[0] if not line.lstrip().startswith("#") else ""
    return " ".join(line.split())


def substantive(line: str) -> bool:
    return len(line) >= MIN_SUBSTANTIVE_LENGTH and not any(
        pattern.match(line) for pattern in BOILERPLATE
    )


def solution_regions(solution_nb):
    """(exercise number, substantive lines) per BEGIN/END SOLUTION region, in order."""
    regions, exercise, inside = [], None, False
    for cell in solution_nb.cells:
        if cell.cell_type == "markdown":
            found = EXERCISE_HEADING.search(cell.source)
            if found:
                exercise = found["number"]
        lines = []
        for raw in cell.source.split("\n"):
            stripped = raw.strip()
            if stripped.startswith(BEGIN):
                inside, lines = True, []
                continue
            if stripped.startswith(END):
                inside = False
                regions.append(
                    (exercise, [line for line in map(normalise, lines) if substantive(line)])
                )
                continue
            if inside:
                lines.append(raw)
    return regions


def is_shown(cell) -> bool:
    return not cell.metadata.get("jupyter", {}).get("source_hidden", False)


def readable_text(cell) -> list[str]:
    """Everything a notebook viewer shows of a cell: its source, folded or not, and its
    saved text outputs."""
    texts = [cell.source]
    for output in cell.get("outputs", []):
        texts.append(output.get("text", ""))
        for kind in ("text/plain", "text/markdown", "text/html"):
            texts.append(output.get("data", {}).get(kind, ""))
    return ["".join(text) if isinstance(text, list) else text for text in texts]


def readable_lines(learner_nb, spoiler: int) -> set[str]:
    """Normalised lines a learner can read above the spoiler point ``spoiler``."""
    shown: set[str] = set()
    for cell in learner_nb.cells[:spoiler]:
        for text in readable_text(cell):
            shown.update(normalise(line) for line in text.split("\n"))
    return shown


def copied_answers(solution_nb, learner_nb) -> list[str]:
    """Rule 1: answers half or more of whose substantive lines can be read."""
    spoilers = {exercise.number: exercise.spoiler for exercise in exercises(learner_nb)}
    given_away = []
    for exercise, lines in solution_regions(solution_nb):
        if not lines:
            continue
        readable = readable_lines(learner_nb, spoilers.get(exercise, len(learner_nb.cells)))
        seen = [line for line in lines if line in readable]
        if len(seen) * 2 >= len(lines):
            given_away.append(
                f"exercise {exercise}: {len(seen)} of {len(lines)} "
                f"answer lines readable, e.g. {seen[0]!r}"
            )
    return given_away


def code_trees(learner_nb, below: int):
    """(index, syntax tree) of every code cell above ``below``."""
    for index, cell in enumerate(learner_nb.cells[:below]):
        tree = parse(cell.source) if cell.cell_type == "code" else None
        if tree is not None:
            yield index, tree


def answer_names_bound_elsewhere(learner_nb) -> list[str]:
    """Rule 2: a cell other than the stub that binds a name the stub defines."""
    found = []
    for exercise in exercises(learner_nb):
        for index, tree in code_trees(learner_nb, exercise.spoiler):
            if index in exercise.stubs:
                continue
            for name in sorted(bound_names(tree) & exercise.names):
                found.append(f"exercise {exercise.number}: cell {index} defines {name!r} too")
    return found


def own_check_calls(tree, uses, names) -> list[ast.Attribute]:
    """The uses of a check that call it on one of ``names`` and nothing else."""
    return [
        node.func
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and any(node.func is use for use in uses)
        and len(node.args) == 1
        and not node.keywords
        and getattr(node.args[0], "id", None) in names
    ]


def verdicts_on_other_answers(learner_nb) -> list[str]:
    """Rule 4: a use of an exercise's check, above its spoiler point, other than the
    check cell's one call on the learner's own function."""
    alias = check_alias(learner_nb)
    found = []
    for exercise in exercises(learner_nb) if alias else ():
        for index, tree in code_trees(learner_nb, exercise.spoiler):
            uses = [node for node in check_calls(tree, alias) if node.attr == exercise.check]
            if index == exercise.check_cell:
                own = own_check_calls(tree, uses, exercise.names)[:1]
                uses = [use for use in uses if not any(use is allowed for allowed in own)]
            found += [
                f"exercise {exercise.number}: cell {index} runs {alias}.{use.attr} on "
                f"something other than the learner's own "
                f"{' or '.join(sorted(exercise.names)) or 'answer'}"
                for use in uses
            ]
    return found


def folded_code_in_exercise_sections(learner_nb) -> list[str]:
    """Rule 5: a folded code cell between an exercise's heading and its section's end."""
    return [
        f"exercise {exercise.number}: cell {index} is folded: "
        f"{learner_nb.cells[index].source.splitlines()[0]!r}"
        for exercise in exercises(learner_nb)
        for index in range(exercise.heading, exercise.section_end)
        if learner_nb.cells[index].cell_type == "code" and is_hidden(learner_nb.cells[index])
    ]


def run_answer_probe(path) -> dict:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("answer_probe.py")), str(path)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


LESSONS_WITH_EXERCISES = [lesson for lesson in LESSONS if lesson.exercise_minutes]


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_no_answer_is_copied_above_its_spoiler_point(lesson):
    given_away = copied_answers(load("solutions", lesson), load("lessons", lesson))
    assert not given_away, "\n".join(given_away)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_no_cell_but_the_stub_defines_an_answer_name(lesson):
    found = answer_names_bound_elsewhere(load("lessons", lesson))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_no_check_judges_another_answer_above_the_spoiler_point(lesson):
    found = verdicts_on_other_answers(load("lessons", lesson))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_no_code_is_folded_in_an_exercise_section(lesson):
    found = folded_code_in_exercise_sections(load("lessons", lesson))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("lesson", LESSONS_WITH_EXERCISES, ids=lambda lesson: lesson.slug)
def test_no_function_on_the_page_passes_a_check_above_its_spoiler_point(lesson):
    learner = load("lessons", lesson)
    report = run_answer_probe(notebook_path("lessons", lesson))
    stubs = {name for exercise in exercises(learner) for name in exercise.names}
    assert set(report.pop("stubs")) == stubs, "the probe did not see every stub function"
    accepted = [
        f"exercise {number}: the check accepts {function}"
        for number, verdicts in report.items()
        for function in verdicts["accepted"]
    ]
    assert not accepted, "\n".join(accepted)


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_spoiler_points_say_so(lesson):
    for cell in load("lessons", lesson).cells:
        if SPOILER_TAG in cell.metadata.get("tags", []):
            assert cell.cell_type == "markdown" and "spoiler" in cell.source.lower()


# -- pace ------------------------------------------------------------------------


def teaching_estimate(learner_nb) -> tuple[float, int]:
    """(estimated teaching minutes, exercise minutes from the headings)."""
    seconds, exercise_minutes, in_exercise = 0.0, 0, False
    for cell in learner_nb.cells:
        tags = cell.metadata.get("tags", [])
        if "navigation-top" in tags or "navigation-bottom" in tags:
            continue
        if cell.cell_type == "markdown":
            found = EXERCISE_HEADING.search(cell.source)
            if found:
                in_exercise = True
                exercise_minutes += int(found["minutes"])
                continue
            if HEADING.match(cell.source) or SPOILER_TAG in tags:
                in_exercise = False
            if not in_exercise:
                words = len(re.findall(r"[A-Za-z0-9_']+", cell.source))
                seconds += 60.0 * words / PROSE_WORDS_PER_MINUTE
        elif cell.cell_type == "code" and not in_exercise:
            seconds += SECONDS_PER_CODE_CELL
            if is_shown(cell):
                code_lines = [line for line in cell.source.split("\n") if line.strip()]
                seconds += SECONDS_PER_CODE_LINE * len(code_lines)
    return seconds / 60.0, exercise_minutes


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_declared_teaching_time_matches_the_content(lesson):
    estimate, _ = teaching_estimate(load("lessons", lesson))
    declared = lesson.teaching_minutes
    assert abs(declared - estimate) <= ALLOWED_TIME_DIFFERENCE * estimate, (
        f"{lesson.slug}: declared {declared} min of teaching, the content suggests "
        f"{estimate:.0f} min (prose at {PROSE_WORDS_PER_MINUTE} words/min, "
        f"{SECONDS_PER_CODE_CELL} s per code cell plus {SECONDS_PER_CODE_LINE} s per line)"
    )


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.slug for lesson in LESSONS])
def test_exercise_minutes_add_up(lesson):
    _, from_headings = teaching_estimate(load("lessons", lesson))
    assert lesson.exercise_minutes == from_headings


# -- the spoiler rules, each shown to catch what it is for ------------------------------

SETUP = "from autodiff_course.checks import lesson06 as check"
HEADING_61 = "### Exercise 6.1: Accumulate, don't overwrite (★★☆ medium, 10 min)"
STUB_61 = (
    "def accumulate_gradient(grads, key, contribution):\n"
    "    # YOUR CODE HERE\n"
    "    raise NotImplementedError()"
)
CHECK_61 = "check.accumulate_gradient(accumulate_gradient)"
ANSWER_61 = (
    "def accumulate_gradient(grads, key, contribution):\n"
    "    ### BEGIN SOLUTION\n"
    "    if key in grads:\n"
    "        grads[key] = grads[key] + contribution\n"
    "    else:\n"
    "        grads[key] = contribution\n"
    "    ### END SOLUTION"
)
# A working answer under another name, inlined the way a tape's reverse pass would.
EQUIVALENT_61 = (
    "def add_up(grads, tensor, gradient):\n"
    "    grads[tensor] = grads[tensor] + gradient if tensor in grads else gradient"
)


def notebook(*cells):
    """A learner's copy made of ``cells``: strings (code, or markdown when they start
    with '#' or '**'), or (source, metadata) pairs."""
    nb = nbformat.v4.new_notebook()
    for cell in cells:
        source, metadata = cell if isinstance(cell, tuple) else (cell, {})
        markdown = source.startswith(("#", "**"))
        make = nbformat.v4.new_markdown_cell if markdown else nbformat.v4.new_code_cell
        nb.cells.append(make(source, metadata=metadata))
    return nb


FOLDED = {"jupyter": {"source_hidden": True}}
SPOILERS = ("**Spoilers below.** Solve exercise 6.1 first.", {"tags": [SPOILER_TAG]})


def exercise_61(*after):
    return notebook(SETUP, HEADING_61, STUB_61, CHECK_61, *after)


def test_copied_lines_count_in_folded_cells_and_outputs():
    solution = notebook(SETUP, HEADING_61, ANSWER_61, CHECK_61)
    answer_body = ANSWER_61.split("\n", 2)[2].replace("    ### END SOLUTION", "")
    folded = exercise_61(("def helper():\n" + answer_body, FOLDED))
    assert copied_answers(solution, folded) != []
    printed = exercise_61("print(source)")
    printed.cells[-1].outputs = [{"output_type": "stream", "name": "stdout", "text": answer_body}]
    assert copied_answers(solution, printed) != []
    assert copied_answers(solution, exercise_61(SPOILERS, "def helper():\n" + answer_body)) == []


@pytest.mark.parametrize(
    "cell",
    [
        "def accumulate_gradient(grads, key, contribution):\n    pass",
        "accumulate_gradient = reference.accumulate_gradient",
        "from autodiff_course.reference.lesson06 import accumulate_gradient",
    ],
)
def test_a_second_definition_of_the_answer_name_is_caught(cell):
    assert answer_names_bound_elsewhere(exercise_61(cell)) != []
    assert answer_names_bound_elsewhere(exercise_61(SPOILERS, cell)) == []


def test_a_verdict_on_another_answer_is_caught():
    assert verdicts_on_other_answers(exercise_61()) == []
    other = "print(check.accumulate_gradient.evaluate(add_up).message)"
    assert verdicts_on_other_answers(exercise_61(EQUIVALENT_61, other)) != []
    assert verdicts_on_other_answers(exercise_61(CHECK_61)) != [], (
        "a second call is a second verdict"
    )
    assert verdicts_on_other_answers(exercise_61(SPOILERS, EQUIVALENT_61, other)) == []


def test_folded_code_in_an_exercise_section_is_caught():
    assert folded_code_in_exercise_sections(exercise_61((EQUIVALENT_61, FOLDED))) != []
    later = exercise_61("## 3. The next section", (EQUIVALENT_61, FOLDED))
    assert folded_code_in_exercise_sections(later) == []


def test_the_probe_finds_an_equivalent_answer_under_another_name(tmp_path):
    path = tmp_path / "06-probe.ipynb"
    reference = "from autodiff_course.reference.lesson06 import accumulate_gradient as given"
    nbformat.write(exercise_61((EQUIVALENT_61, FOLDED), reference), path)
    report = run_answer_probe(path)
    assert report["stubs"] == ["accumulate_gradient"]
    # add_up is on the page and works; the imported reference answer is not on the page.
    assert report["6.1"] == {"judged": 1, "accepted": ["add_up (cell 4)"]}
