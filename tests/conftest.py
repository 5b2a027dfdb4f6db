"""Fixtures shared by the tests of the exercise checks (``tests/test_checks_lessonNN.py``).

The repository's own ``conftest.py`` (one folder up) sets up nbval; this one only
offers helpers, as fixtures so that no test module imports another:

* ``judge(check, answer, mistake=None, runs=1)`` runs a check and asserts its verdict:
  *correct* for ``mistake=None``, *not attempted yet* for ``"not_attempted"``, else
  *not yet* with that mistake code and a plain message. ``runs`` repeats the check
  (fresh probes on every call), so a mistake must be named the same way every time;
* ``custom_gradient(forward, backward)`` builds a ``@tf.custom_gradient`` answer from
  ``forward(x)`` and ``backward(upstream, x)``, so a table row can hold a rule as two
  short functions;
* ``stub`` is a learner's untouched stub: it raises ``NotImplementedError``;
* ``display_bundle(shown)`` returns a course widget's display bundle, checked for the
  three views every widget offers (live widget, still picture, plain text);
* ``tracked_files_copy(target)`` copies the repository as git would hand it out (the
  files it tracks, or would track), for the Binder and Colab tests;
* ``installed_python(version, purpose)`` is that Python of this machine, for the
  tests that run the notebooks on another Python (Colab's, the oldest the course takes).

Before each test module, the checks' fresh draws start again from the first call.

What every check promises whatever its lesson (stubs, non-functions, raising or
malformed answers, strict mode) is tested once for all in ``test_checker_contract.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autodiff_course.checking import Status
from course_tools.interpreters import find_python
from course_tools.tracked_files import copy_tracked


def _judge(check, answer, mistake=None, *, runs=1):
    for _ in range(runs):
        result = check.evaluate(answer)
        if mistake is None:
            assert (result.status, result.mistake) == (Status.CORRECT, None), result.message
        elif mistake == "not_attempted":
            assert (result.status, result.mistake) == (Status.NOT_ATTEMPTED, mistake), result
        else:
            assert (result.status, result.mistake) == (Status.WRONG, mistake), result.message
            assert len(result.message) > 30 and "Traceback" not in result.message, result
    return result


@pytest.fixture
def judge():
    return _judge


@pytest.fixture(autouse=True, scope="module")
def _draws_from_the_start():
    """Each test module sees the checks' fresh draws from the first call on, whatever
    modules ran before it in the same process (two workers take the files in any order),
    so no module's verdicts depend on the order the tests run in."""
    from autodiff_course.checking.probes import restart_fresh_draws

    restart_fresh_draws()


def _custom_gradient(forward, backward):
    import tensorflow as tf

    @tf.custom_gradient
    def answer(x):
        def grad_fn(upstream):
            return backward(upstream, x)

        return forward(x), grad_fn

    return answer


@pytest.fixture
def custom_gradient():
    return _custom_gradient


def _stub(*args, **kwargs):
    raise NotImplementedError()


@pytest.fixture
def stub():
    return _stub


def _display_bundle(shown) -> dict:
    from autodiff_course.widgets.display import WIDGET_VIEW

    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html", WIDGET_VIEW}
    assert bundle[WIDGET_VIEW] == {
        "version_major": 2,
        "version_minor": 0,
        "model_id": shown.widget.model_id,
    }
    return bundle


@pytest.fixture
def display_bundle():
    return _display_bundle


def _installed_python(version: str, purpose: str) -> Path:
    """Python ``version`` of this machine (``find_python``); without one the test skips,
    and fails under CI, where every Python the tests need is installed."""
    found = find_python(version)
    if found is None:
        message = f"no Python {version} here: install it {purpose}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def installed_python():
    return _installed_python


@pytest.fixture(scope="session")
def tracked_files_copy():
    return copy_tracked
