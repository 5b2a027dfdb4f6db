"""TEMPORARY stand-in for lesson 07's judging: it gives no verdict of correctness.

Lesson 07's checks are specified (each exercise module's docstring lists the probes
the check must draw and the method it must verify) and their float64 references are
written, but the judging itself is not: it comes with the course's declarative
exercise specs, and this module is deleted then. Until that happens, each check
call

* computes its reference on one fixed probe, so that the reference is known to run;
* calls the answer once on that probe, only to tell a stub (which raises
  ``NotImplementedError``) from an attempt; and
* prints one line: *not attempted yet* for a stub, otherwise that the answer ran (or
  what it raised) and that it was not judged.

It never says *correct* and never writes a verdict to a progress report. In strict
mode (the solutions build, nbgrader's autograded cells) a stub or an answer that
raises fails, as with every check; an answer that runs cannot fail, since nothing
judges it.
"""

from __future__ import annotations

from ...checking import ExerciseNotSolved
from ...checking.verdicts import strict_mode

NOT_JUDGED = "this check does not judge answers yet: compare yours with the solutions copy"


def announce(number: str, title: str, run_answer) -> None:
    """Run ``run_answer()`` and print the one line described above."""
    heading = f"Exercise {number} ({title})"
    failed = True
    try:
        run_answer()
    except NotImplementedError:
        line = f"⏳ {heading}: not attempted yet (the stub still raises NotImplementedError)."
    except Exception as error:  # the learner's error, reported in one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        line = (
            f"🚧 {heading}: your code raised {type(error).__name__}: {first[:200]}; {NOT_JUDGED}."
        )
    else:
        line, failed = f"🚧 {heading}: your code ran; {NOT_JUDGED}.", False
    print(line)
    if failed and strict_mode():
        raise ExerciseNotSolved(line)
