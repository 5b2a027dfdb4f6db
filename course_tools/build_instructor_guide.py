"""Generate the instructor guide, instructors/guide.md, from the notebooks.

    python -m course_tools.build_instructor_guide           # write instructors/guide.md
    python -m course_tools.build_instructor_guide --check   # exit 1 if it is stale

Sources, so that nothing is written twice:

* ``course.toml``: each lesson's title, teaching and exercise minutes;
* the solutions notebook's *Overview*: the objectives;
* its exercise headings: number, title, difficulty and minutes of each exercise;
* its cell tagged ``instructor-only``: the live-coding script and the
  misconceptions to expect. A misconception names the cell that exposes it with
  a tag, written in the notes as ``[[misconception-some-name]]``; the same tag
  sits on that cell, in both copies, and the guide shows its position and first
  line;
* its cell tagged ``answers``: the answers to *Check your understanding*.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from urllib.parse import quote

from .config import ROOT
from .config import SOLUTIONS_DIR
from .config import load_course
from .derived import report_stale
from .notebook_format import EXERCISE_HEADING
from .notebook_format import read
from .notebook_format import tags

GUIDE = ROOT / "instructors" / "guide.md"
BENCHMARK = ROOT / "benchmark" / "latest.json"
COMMAND = "python -m course_tools.build_instructor_guide"
REFERENCE = re.compile(r"\[\[(misconception-[a-z0-9-]+)\]\]")


class GuideError(ValueError):
    """The notebooks lack something the guide needs; the message says what."""


def section(text: str, heading: str) -> str:
    """The body of a markdown section, from ``heading`` to the next heading of its level."""
    level = heading.split(" ", 1)[0]
    match = re.search(
        rf"^{re.escape(heading)}\s*$(.*?)(?=^{level} |\Z)", text, re.MULTILINE | re.DOTALL
    )
    return match.group(1).strip() if match else ""


def objectives(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## Overview"):
            match = re.search(r"\*\*Objectives\*\*\s*(.*?)(?=\n\*\*|\Z)", cell.source, re.DOTALL)
            if match:
                return match.group(1).strip()
    raise GuideError("no **Objectives** in the Overview")


def tagged_cell(nb, tag: str):
    for index, cell in enumerate(nb.cells):
        if tag in tags(cell):
            return index, cell
    return None, None


def describe_cell(nb, tag: str) -> str:
    index, cell = tagged_cell(nb, tag)
    if cell is None:
        raise GuideError(f"no cell carries the tag {tag!r}")
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    kind = "code" if cell.cell_type == "code" else "text"
    return f"cell {index} ({kind}: `{first.strip()[:70]}`)"


def lesson_section(course, lesson) -> str:
    nb = read(SOLUTIONS_DIR / lesson.filename)
    markdown_text = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    _, notes = tagged_cell(nb, "instructor-only")
    _, answers = tagged_cell(nb, "answers")
    if notes is None:
        raise GuideError(f"{lesson.filename}: no cell tagged instructor-only")
    if answers is None:
        raise GuideError(f"{lesson.filename}: no cell tagged answers")
    live = section(notes.source, "### Live coding")
    misconceptions = section(notes.source, "### Misconceptions to expect")
    if not live or not misconceptions:
        raise GuideError(
            f"{lesson.filename}: the instructor notes need '### Live coding' "
            f"and '### Misconceptions to expect'"
        )
    if not REFERENCE.search(misconceptions):
        raise GuideError(
            f"{lesson.filename}: each misconception names its cell as [[misconception-...]]"
        )
    try:
        misconceptions = REFERENCE.sub(lambda m: describe_cell(nb, m.group(1)), misconceptions)
    except GuideError as error:
        raise GuideError(f"{lesson.filename}: {error}") from None

    lines = [f"## {lesson.number:02d} {lesson.title}", ""]
    lines.append(
        f"Notebook: [`solutions/{lesson.filename}`](../solutions/{lesson.filename}) "
        f"(learners: [`lessons/{lesson.filename}`](../lessons/{lesson.filename})). "
        f"Teaching {lesson.teaching_minutes} min, exercises "
        f"{lesson.exercise_minutes} min, {lesson.minutes} min in all."
    )
    lines += ["", "### Objectives", "", objectives(nb)]
    exercises = list(EXERCISE_HEADING.finditer(markdown_text))
    if exercises:
        lines += [
            "",
            "### Exercises",
            "",
            "| exercise | title | difficulty | minutes |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {e['number']} | {e['title']} | {e['difficulty']} | {e['minutes']} |"
            for e in exercises
        ]
        total = sum(int(e["minutes"]) for e in exercises)
        lines += ["", f"Exercise minutes add up to {total}, as course.toml says."]
    lines += [
        "",
        "### Live coding",
        "",
        live,
        "",
        "### Misconceptions to expect",
        "",
        misconceptions,
        "",
        "### Answers to *Check your understanding*",
        "",
    ]
    answer_text = answers.source
    answer_text = re.sub(r"^### Answers\s*", "", answer_text).strip()
    lines += [answer_text, ""]
    return "\n".join(lines)


def memory_table(course) -> str:
    """Peak kernel memory per lesson, from the latest benchmark run."""
    if not BENCHMARK.exists():
        raise GuideError("benchmark/latest.json is missing: run ./course.sh bench --save")
    results = json.loads(BENCHMARK.read_text(encoding="utf-8"))
    peaks = results["peak_memory_mb"]
    rows = ["| lesson | learner's copy | solutions copy |", "|---|---|---|"]
    for lesson in course.lessons:
        try:
            lesson_mb = peaks[f"lessons/{lesson.slug}"]
            solution_mb = peaks[f"solutions/{lesson.slug}"]
        except KeyError:
            raise GuideError(
                f"benchmark/latest.json has no memory figure for {lesson.slug}: "
                f"run ./course.sh bench --save"
            ) from None
        rows.append(
            f"| {lesson.number:02d} {lesson.title} | {lesson_mb:.0f} MB | {solution_mb:.0f} MB |"
        )
    rows.append("")
    rows.append(f"(Measured on {results['date']}, {results['machine']}.)")
    return "\n".join(rows)


def hub_values(course) -> dict[str, str]:
    """The hub section's placeholders: the repository and ref of course.toml, and what
    ``./course.sh bench --save`` measured of a class on a hub (the memory guarantee
    and limit derived from it among them)."""
    results = json.loads(BENCHMARK.read_text(encoding="utf-8"))
    memory, hub = results.get("hub_memory"), results.get("hub")
    if not memory or not hub:
        raise GuideError(
            "benchmark/latest.json has no figures of a class on a hub: run ./course.sh bench --save"
        )
    name = course.repository.split("/")[1]  # nbgitpuller's folder for the clone
    per_learner_cpu = hub["class_cpu_s"] / hub["learners"]
    return {
        "repository": course.repository,
        "ref": course.ref,
        "nbgitpuller_repo": quote(f"https://github.com/{course.repository}", safe=""),
        "nbgitpuller_urlpath": quote(f"lab/tree/{name}/lessons/00-welcome.ipynb", safe=""),
        "hub_memory_guarantee": memory["guarantee"],
        "hub_memory_limit": memory["limit"],
        "hub_machine": results["machine"],
        "hub_learners": str(hub["learners"]),
        "hub_three_notebooks": ", ".join(f"`{path}`" for path in hub["three_notebooks"]),
        "hub_one_lesson": f"{memory['one_lesson_mb']:.0f} MB",
        "hub_three": f"{memory['three_notebooks_mb']:.0f} MB",
        "hub_alone": f"{hub['alone_s']:.0f} s",
        "hub_median": f"{hub['median_s']:.0f} s",
        "hub_p95": f"{hub['p95_s']:.0f} s",
        "hub_ratio": f"{hub['ratio_p95']:.1f} times",
        "hub_failures": str(hub["failures"]),
        "hub_cores": str(hub["cores"]),
        "hub_cpu": f"{hub['class_cpu_s']:.0f} s",
        "hub_cpu_floor": f"{hub['cpu_floor_s']:.0f} s",
        "hub_learners_per_core": str(max(1, int(3 * hub["alone_s"] / per_learner_cpu))),
        "hub_load": f"{hub['load_before']:.1f} before the run and {hub['load_after']:.1f} after",
    }


def render(course) -> str:
    header = (ROOT / "instructors" / "guide-header.md").read_text(encoding="utf-8").rstrip()
    header = header.replace("{{memory_table}}", memory_table(course))
    for key, value in hub_values(course).items():
        header = header.replace("{{" + key + "}}", value)
    total = sum(lesson.minutes for lesson in course.lessons)
    overview = ["| lesson | teaching | exercises | total |", "|---|---|---|---|"]
    for lesson in course.lessons:
        overview.append(
            f"| {lesson.number:02d} {lesson.title} | {lesson.teaching_minutes} min "
            f"| {lesson.exercise_minutes} min | {lesson.minutes} min |"
        )
    overview.append(f"| **all lessons** | | | **{total} min** |")
    parts = [header, "", "## Timings at a glance", "", "\n".join(overview), ""]
    parts += [lesson_section(course, lesson) for lesson in course.lessons]
    return (
        f"<!-- Generated by {COMMAND}: edit the notebooks instead. -->\n"
        + "\n".join(parts).rstrip()
        + "\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    try:
        text = render(load_course())
    except GuideError as error:
        print(f"instructor guide: {error}")
        return 1
    if args.check:
        current = GUIDE.exists() and GUIDE.read_text(encoding="utf-8") == text
        problems = [] if current else ["instructors/guide.md differs from the notebooks"]
        return report_stale(problems, COMMAND, "instructors/guide.md is current.")
    GUIDE.write_text(text, encoding="utf-8")
    print(f"wrote {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
