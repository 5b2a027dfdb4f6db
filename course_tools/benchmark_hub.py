"""A class presses Run All in the same minute, on a real JupyterHub (:mod:`course_tools.hub`).

    python -m course_tools.benchmark_hub [--learners 20]      (./course.sh bench runs it)

In one hub, one run:

1. **one learner alone** follows the guide's nbgitpuller link to lesson 03 and runs it
   top to bottom, with nobody else on the hub: the reference time;
2. **the class**, N learners at once, does the same (the start of every session);
3. then **one more learner opens three notebooks** one after the other (the heaviest
   lesson as the benchmark's memory table has it, its solutions and the lesson before:
   what a learner who never shuts a kernel down holds), once the class's servers have
   stopped (their homes stay, as volumes do).

Every learner starts with an empty home, logs in through the hub's API and starts a
server. The time of each is from the log-in to the reply to the last cell (the link
clicked to the last cell run); failures are any error of the link, the pull, the
server or a cell. Each learner's peak memory is the sum of the high-water marks
(VmHWM) of the server and of every kernel it opened, read before anything is shut down.
The guide's memory guarantee (the server and one lesson) and limit (the server and
three notebooks) are derived from these peaks (:func:`course_tools.benchmark_memory.hub_memory`).

On two cores, N learners who each need about C seconds of CPU cannot all finish before
N x C / 2 seconds: the report prints that floor beside the ratio to one learner alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .benchmark_explorer import percentile
from .benchmark_memory import hub_memory
from .config import ROOT
from .config import load_course
from .hub import Learner
from .hub import LocalHub
from .hub import processes_of
from .hub_image import build as build_image
from .sandbox import cores
from .tracked_files import copy_tracked

RATIO_TARGET = 3.0  # p95 of the class at most 3 x one learner alone (the goal)
LESSON = "03-custom-gradients"
CLONE = "gradients-on-tape"  # the repository's name: nbgitpuller's folder for the clone


def origin_repository(folder: Path) -> Path:
    """A local clone of the course (its tracked files, one commit) that the links point
    at, in place of GitHub; named as the repository, so that nbgitpuller's folder is
    the guide's."""
    repository = copy_tracked(Path(folder) / CLONE)
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=Instructor", "-c", "user.email=instructor@localhost"]
        + ["commit", "-q", "-m", "The course as the class starts it"],
    ):
        subprocess.run(command, cwd=repository, check=True, capture_output=True)
    return repository


def lesson_link(hub: LocalHub, repository: Path, path: str) -> str:
    """The guide's link for ``path`` (``lessons/...``), to the local clone."""
    return hub.link(f"file://{repository}", "main", f"lab/tree/{CLONE}/{path}")


def three_notebooks() -> list[str]:
    """The heaviest lesson's copy and solutions and the lesson before, by the peaks of
    the benchmark's memory table (benchmark/latest.json)."""
    course = load_course()
    peaks = json.loads((ROOT / "benchmark" / "latest.json").read_text())["peak_memory_mb"]
    lessons = course.lessons

    def weight(i: int) -> float:
        slug, before = lessons[i].slug, lessons[i - 1].slug
        return peaks[f"lessons/{slug}"] + peaks[f"solutions/{slug}"] + peaks[f"lessons/{before}"]

    heaviest = max(range(1, len(lessons)), key=weight)
    slug, before = lessons[heaviest].slug, lessons[heaviest - 1].slug
    return [f"lessons/{before}.ipynb", f"lessons/{slug}.ipynb", f"solutions/{slug}.ipynb"]


async def attend(hub: LocalHub, name: str, link: str, notebooks: list[str]) -> dict:
    """One learner: log in, start the server, follow the link, run ``notebooks``."""
    learner = Learner(hub, name)
    home = hub.home(name)
    figures = {
        "name": name,
        "home_was_empty": not home.exists() or not any(home.iterdir()),
        "failures": [],
        "notebooks": notebooks,
    }
    started = time.monotonic()
    step = "logging in"
    try:
        await learner.log_in()
        step = "starting the server"
        await learner.start_server()
        figures["course_in_home_before_the_link"] = (home / CLONE).exists()
        figures["spawned_s"] = time.monotonic() - started
        step = "following the link"
        await learner.follow_link(link)
        figures["pulled_s"] = time.monotonic() - started
        for path in notebooks:
            step = f"running {path}"
            run = await learner.run_notebook(f"{CLONE}/{path}")
            figures["failures"] += [f"{path} cell {index}: {error}" for index, error in run.errors]
    except Exception as error:  # noqa: BLE001 (a failure is counted, the class goes on)
        figures["failures"].append(f"{step}: {type(error).__name__}: {error}")
    figures["seconds"] = time.monotonic() - started
    figures["memory_mb"] = learner.peak_memory_mb()
    figures["cpu_s"] = cpu_seconds(name)
    return figures


def cpu_seconds(name: str) -> float:
    """CPU time the learner's server and kernels have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pids in processes_of(name).values():
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / ticks
            except (OSError, IndexError, ValueError):
                continue
    return total


async def leave(hub: LocalHub, name: str) -> None:
    """The learner's server stops (its memory is given back before the next phase)."""
    await hub.api("DELETE", f"/hub/api/users/{name}/server")
    for _ in range(120):
        user = await hub.api("GET", f"/hub/api/users/{name}")
        if not user.get("servers"):
            return
        await asyncio.sleep(0.5)


async def class_session(hub: LocalHub, repository: Path, learners: int) -> dict:
    """The three phases of the module's docstring, in one hub."""
    link = lesson_link(hub, repository, f"lessons/{LESSON}.ipynb")
    names = [f"learner{n:02d}" for n in range(1, learners + 1)]
    await hub.add_learners(["alone", *names, "three-notebooks"])
    alone = await attend(hub, "alone", link, [f"lessons/{LESSON}.ipynb"])
    await leave(hub, "alone")
    started = time.monotonic()
    members = await asyncio.gather(
        *(attend(hub, name, link, [f"lessons/{LESSON}.ipynb"]) for name in names)
    )
    wall = time.monotonic() - started
    await asyncio.gather(*(leave(hub, name) for name in names))  # their homes stay
    heavy = await attend(hub, "three-notebooks", link, three_notebooks())
    await leave(hub, "three-notebooks")
    return {"alone": alone, "class": list(members), "class_wall_s": wall, "three": heavy}


def summary(session: dict) -> dict:
    """The figures the benchmark prints and the guide quotes."""
    members, alone, heavy = session["class"], session["alone"], session["three"]
    times = [m["seconds"] for m in members]
    cpu = sum(m["cpu_s"] for m in members)
    one_lesson = max(m["memory_mb"]["total"] for m in [alone, *members])
    return {
        "learners": len(members),
        "failures": sum(len(m["failures"]) for m in [alone, *members, heavy]),
        "failure_lines": [
            f"{m['name']}: {f}" for m in [alone, *members, heavy] for f in m["failures"]
        ],
        "alone_s": alone["seconds"],
        "median_s": statistics.median(times),
        "p95_s": percentile(times, 0.95),
        "ratio_p95": percentile(times, 0.95) / alone["seconds"],
        "class_cpu_s": cpu,
        "cpu_floor_s": cpu / cores(),
        "cores": cores(),
        "one_lesson_mb": one_lesson,
        "server_mb": max(m["memory_mb"]["server"] for m in [alone, *members]),
        "three_notebooks": heavy["notebooks"],
        "three_notebooks_mb": heavy["memory_mb"]["total"],
        "hub_memory": hub_memory(one_lesson, heavy["memory_mb"]["total"]),
    }


def measure(learners: int, say=print) -> dict:
    """Build (or reuse) the image's stand-in, start a hub, run the class; the summary."""
    image = build_image(say)
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="course-hub-") as scratch:
        repository = origin_repository(Path(scratch))
        with LocalHub(image, Path(scratch) / "hub") as hub:
            session = asyncio.run(class_session(hub, repository, learners))
    figures = summary(session)
    figures["session"] = session
    # What else the machine was doing: a benchmark on a shared machine says so.
    figures["load_before"], figures["load_after"] = load, os.getloadavg()[0]
    return figures


def saved(figures: dict) -> dict:
    """What benchmark/latest.json keeps: the summary, and each learner's figures."""
    kept = {k: v for k, v in figures.items() if k not in ("session", "failure_lines")}
    session = figures["session"]
    kept["learners_s"] = [round(m["seconds"], 1) for m in session["class"]]
    kept["learners_mb"] = [round(m["memory_mb"]["total"]) for m in session["class"]]
    kept["class_wall_s"] = session["class_wall_s"]
    return kept


def rows(figures: dict) -> list[tuple]:
    """The benchmark's table rows for the hub."""
    n = figures["learners"]
    memory = figures["hub_memory"]
    load = (
        f"load average {figures['load_before']:.1f} before, {figures['load_after']:.1f} after"
        if "load_before" in figures
        else ""
    )
    floor_ratio = figures["cpu_floor_s"] / figures["alone_s"]
    return [
        (
            f"hub: {n} learners, failures",
            str(figures["failures"]),
            "0",
            load,
        ),
        ("hub: one learner alone, link to last cell", f"{figures['alone_s']:.1f} s", "", ""),
        (f"hub: {n} learners at once, median", f"{figures['median_s']:.1f} s", "", ""),
        (f"hub: {n} learners at once, p95", f"{figures['p95_s']:.1f} s", "", ""),
        (
            f"hub: {n} learners, p95 / one alone",
            f"{figures['ratio_p95']:.1f}x",
            f"<= {RATIO_TARGET:g}x",
            f"CPU floor {floor_ratio:.1f}x on {figures['cores']} cores",
        ),
        (
            "hub: peak memory per learner (server + lesson 03)",
            f"{figures['one_lesson_mb']:.0f} MB",
            f"<= {memory['guarantee']}",
            "",
        ),
        (
            "hub: peak memory, three notebooks open",
            f"{figures['three_notebooks_mb']:.0f} MB",
            f"<= {memory['limit']}",
            ", ".join(figures["three_notebooks"]),
        ),
        ("hub memory guarantee per learner", memory["guarantee"], "", "server + one lesson"),
        ("hub memory limit per learner", memory["limit"], "", "server + three notebooks"),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=20)
    args = parser.parse_args(argv)
    figures = measure(args.learners)
    for name, value, target, note in rows(figures):
        print(f"{name:55}  {value:>9}  {target:>8}  {note}")
    for line in figures["failure_lines"]:
        print(f"  failure: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
