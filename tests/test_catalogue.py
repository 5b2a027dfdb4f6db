"""The exercise catalogue tests itself: every declared mistake can be named, and is.

For every exercise spec (``autodiff_course.checks.all_exercises()``) and several probe
seeds:

* every declared :class:`~autodiff_course.checking.spec.Mistake` differs from the
  reference at some probe, and at the first such probe the judge names it, not one of
  the mistakes declared before it (a mistake that can never be reached is dead);
* every mistake code an exercise declares, and every code its harness generates, has at
  least one row in that lesson's test module (``tests/test_checks_lessonNN.py``), where
  an answer that makes the mistake is judged.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from autodiff_course.checking.judge import Case
from autodiff_course.checking.judge import named_mistake
from autodiff_course.checking.judge import tolerance_of
from autodiff_course.checking.judging import matches
from autodiff_course.checking.spec import Mistake
from autodiff_course.checks import all_exercises

SEEDS = (0, 1, 2, 3)
EXERCISES = all_exercises()
TESTS = Path(__file__).parent


def _parts(spec, mistake):
    return mistake.part or spec.harness.main


def _gives(mistake, probe, part):
    gives = mistake.gives(probe)
    if isinstance(gives, dict):
        gives = gives.get(part)
    return None if gives is None else np.asarray(gives, dtype=np.float64)


@pytest.mark.parametrize("number", list(EXERCISES))
@pytest.mark.parametrize("seed", SEEDS)
def test_every_declared_mistake_is_named_where_it_first_shows(number, seed):
    spec = EXERCISES[number]
    probes = spec.draw(np.random.default_rng([seed, 17]))
    for mistake in (m for m in spec.mistakes if isinstance(m, Mistake)):
        part = _parts(spec, mistake)
        for probe in probes:
            expected = spec.expected(probe)[part]
            got = _gives(mistake, probe, part)
            if got is None:
                continue
            got = np.broadcast_to(got, expected.shape) if got.size == 1 else got
            tolerance = tolerance_of(spec, probe, part)
            if matches(got, expected, tolerance.rtol, tolerance.atol):
                continue
            case = Case(spec, probe, None, part, got, expected, tolerance)
            found = named_mistake(case, spec.mistakes)
            assert found is not None and found.mistake == mistake.code, (
                f"{number}: {mistake.code} ({mistake.hint[:60]}...) is named "
                f"{found and found.mistake} at {probe.label}"
            )
            break
        else:
            pytest.fail(f"{number}: {mistake.code} gives the right answer at every probe")


def _literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


@pytest.mark.parametrize("number", list(EXERCISES))
def test_every_code_has_a_test_row(number):
    spec = EXERCISES[number]
    lesson = int(number.split(".")[0])
    literals = _literals(TESTS / f"test_checks_lesson{lesson:02d}.py")
    declared = {item.code for item in spec.mistakes}
    declared |= {s.code for story in spec.stories for s in story.symptoms}
    declared |= set(getattr(spec.harness, "generates", ()))
    assert not declared - literals, f"{number}: no test row names {sorted(declared - literals)}"
