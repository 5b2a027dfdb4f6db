"""Launch links and the setup cell's install line: all built from course.toml.

``repository`` and ``ref`` are the one source of every address that leaves the
repository: the Binder and Colab badges of the README and of every navigation
bar, the absolute links that navigation offers inside Colab, and the helper
package that the setup cell installs on Colab.
"""

from __future__ import annotations

import re

import pytest
from notebooks import COURSE
from notebooks import LESSONS
from notebooks import ROOT
from notebooks import every_notebook
from notebooks import load

from course_tools import notebook_format
from course_tools.config import load_course

COLAB = "https://colab.research.google.com/github/"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def navigation_lines(nb) -> list[str]:
    return [line for line in nb.cells[1].source.split("\n") if line]


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_navigation_has_binder_and_colab_badges_for_this_notebook(folder, lesson):
    badges = navigation_lines(load(folder, lesson))[1]
    path = f"{folder}/{lesson.filename}"
    assert (
        f"[![Launch on Binder]({notebook_format.BINDER_BADGE})]({COURSE.binder_url(path)})"
        in badges
    )
    assert f"[![Open in Colab]({notebook_format.COLAB_BADGE})]({COURSE.colab_url(path)})" in badges
    assert COURSE.colab_url(path) == (f"{COLAB}{COURSE.repository}/blob/{COURSE.ref}/{path}")


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_navigation_works_inside_colab_with_absolute_links(folder, lesson):
    """Colab opens one notebook from GitHub and cannot follow relative links."""
    colab_line = navigation_lines(load(folder, lesson))[-1]
    assert colab_line.startswith("*In Colab:* ")
    links = LINK.findall(colab_line)
    assert all(link.startswith("https://") for link in links), links
    previous, following = COURSE.neighbours(lesson.slug)
    other = "solutions" if folder == "lessons" else "lessons"
    expected = (
        ([COURSE.colab_url(f"{folder}/{previous.filename}")] if previous else [])
        + [COURSE.github_url("README.md") + "#contents"]
        + ([COURSE.colab_url(f"{folder}/{following.filename}")] if following else [])
        + [COURSE.colab_url(f"{other}/{lesson.filename}")]
    )
    assert links == expected


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_contents_link_lands_on_the_readme_heading(folder, lesson):
    """``#Contents`` is the id JupyterLab gives the heading (tests/browser proves it)."""
    first_line = navigation_lines(load(folder, lesson))[0]
    assert "[Contents](../README.md#Contents)" in first_line
    assert "\n## Contents\n" in (ROOT / "README.md").read_text()


def test_readme_contents_table_has_a_colab_badge_per_lesson():
    readme = (ROOT / "README.md").read_text()
    for lesson in LESSONS:
        badge = (
            f"[![Colab]({notebook_format.COLAB_BADGE})]"
            f"({COURSE.colab_url(f'lessons/{lesson.filename}')})"
        )
        assert badge in readme, f"no Colab badge for lesson {lesson.number:02d}"


@pytest.mark.parametrize("folder, lesson", every_notebook())
def test_setup_cell_starts_with_the_generated_preamble(folder, lesson):
    setup = next(cell for cell in load(folder, lesson).cells if cell.cell_type == "code")
    assert setup.source.startswith(notebook_format.setup_preamble(COURSE) + "\n"), (
        "run `./course.sh build` to regenerate the setup cell"
    )


def test_preamble_installs_this_repository_at_its_ref_and_nothing_else():
    preamble = notebook_format.setup_preamble(COURSE)
    (install,) = [line.strip() for line in preamble.split("\n") if "%pip" in line]
    assert install == (
        f"%pip install --quiet --no-deps git+https://github.com/{COURSE.repository}@{COURSE.ref}"
    )
    assert preamble.rstrip().endswith("\nsetup_notebook()")
    assert preamble.count("setup_notebook()") == 1


def test_preamble_replaces_an_older_head_and_keeps_the_lessons_own_lines():
    old = "from autodiff_course import setup_notebook\n\nsetup_notebook()\n\nimport numpy as np"
    once = notebook_format.with_setup_preamble(old, COURSE)
    assert once == notebook_format.setup_preamble(COURSE) + "\n\nimport numpy as np"
    assert notebook_format.with_setup_preamble(once, COURSE) == once


def configured(tmp_path, **course) -> object:
    text = (ROOT / "course.toml").read_text()
    for key, value in course.items():
        text, found = re.subn(rf'^{key} = ".*"$', f'{key} = "{value}"', text, flags=re.M)
        assert found == 1, key
    path = tmp_path / "course.toml"
    path.write_text(text)
    return load_course(path)


def test_a_workshop_tag_moves_every_link_and_the_colab_install(tmp_path):
    course = configured(tmp_path, ref="workshop-2027-03")
    lesson = course.lessons[3]
    navigation = notebook_format.navigation(course, lesson, "lessons")
    assert "/main" not in navigation and "@main" not in navigation
    assert navigation.count("workshop-2027-03") == 6  # Binder, Colab, 4 links in Colab
    assert course.binder_url("lessons/x.ipynb").startswith(
        "https://mybinder.org/v2/gh/gradients-on-tape/gradients-on-tape/workshop-2027-03?"
    )
    assert (
        notebook_format.setup_preamble(course).count(
            "git+https://github.com/gradients-on-tape/gradients-on-tape@workshop-2027-03"
        )
        == 1
    )
    assert "workshop-2027-03" in notebook_format.readme_contents(course)


def test_the_repository_setting_moves_everything_too(tmp_path):
    course = configured(tmp_path, repository="a-school/autodiff")
    text = (
        notebook_format.navigation(course, course.lessons[0], "solutions")
        + notebook_format.readme_contents(course)
        + notebook_format.setup_preamble(course)
    )
    assert "gradients-on-tape" not in text
    assert text.count("a-school/autodiff") >= 3 + 2 * len(course.lessons) + 1


@pytest.mark.parametrize("ref", ["", "feature/x", "v1 0", "main@evil", "-rf", "x#y"])
def test_a_ref_that_cannot_stand_in_an_address_is_refused_in_plain_words(tmp_path, ref):
    with pytest.raises(ValueError, match="ref must be a git branch or tag name"):
        configured(tmp_path, ref=ref)


@pytest.mark.parametrize("repository", ["gradients-on-tape", "https://github.com/a/b", "a/b/c"])
def test_a_repository_not_written_owner_name_is_refused_in_plain_words(tmp_path, repository):
    with pytest.raises(ValueError, match="repository must be a GitHub repository written"):
        configured(tmp_path, repository=repository)


def test_every_launch_link_in_the_readme_follows_course_toml():
    """Links outside the generated table too (the Start section's badges)."""
    readme = (ROOT / "README.md").read_text()
    binder = re.findall(r"https://mybinder\.org/v2/gh/([^/\s]+/[^/\s]+)/([^?\s]+)\?", readme)
    colab = re.findall(
        r"https://colab\.research\.google\.com/github/([^/\s]+/[^/\s]+)/blob/"
        r"([^/\s]+)/",
        readme,
    )
    assert len(binder) > len(LESSONS) and len(colab) > len(LESSONS)
    assert set(binder) | set(colab) == {(COURSE.repository, COURSE.ref)}
