"""The files people look for first: LICENSE, CITATION.cff and CONTRIBUTING.md."""

from __future__ import annotations

import re
import sys

import yaml
from notebooks import COURSE
from notebooks import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# The keys CFF 1.2.0 requires (https://github.com/citation-file-format/citation-file-format).
CFF_REQUIRED = {"cff-version", "message", "title", "authors"}


def test_license_states_both_licences_and_the_full_mit_text():
    text = (ROOT / "LICENSE").read_text()
    assert "MIT License" in text
    for sentence in (
        "Permission is hereby granted, free of charge, to any person obtaining a copy",
        "The above copyright notice and this permission notice shall be included in all",
        'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR',
    ):
        assert sentence in text
    assert "Creative Commons Attribution 4.0" in text and "(CC BY 4.0)" in text
    assert "https://creativecommons.org/licenses/by/4.0/legalcode" in text
    assert re.search(r"Copyright \(c\) \d{4} ", text)


def test_citation_cff_parses_and_has_the_required_keys():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert CFF_REQUIRED <= set(citation), CFF_REQUIRED - set(citation)
    assert citation["cff-version"] == "1.2.0"
    assert isinstance(citation["message"], str) and citation["message"].strip()
    assert citation["title"].startswith(COURSE.title)
    assert citation["authors"] and all(
        isinstance(author, dict) and ("name" in author or "family-names" in author)
        for author in citation["authors"]
    )


def test_citation_agrees_with_the_project():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    with open(ROOT / "pyproject.toml", "rb") as handle:
        project = tomllib.load(handle)["project"]
    assert citation["version"] == project["version"]
    assert citation["repository-code"] == f"https://github.com/{COURSE.repository}"
    assert set(citation["license"]) == {"MIT", "CC-BY-4.0"}


def test_contributing_says_how_to_change_a_lesson_and_run_the_tests():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for needed in (
        "solutions/",
        "### BEGIN SOLUTION",
        "./course.sh build NN",
        "./course.sh test",
        "python -m course_tools.build_lessons --check",
        "pytest tests/browser",
        "chromium",
        "COURSE_CHROMIUM",
    ):
        assert needed in text, needed


def test_readme_links_all_three():
    readme = (ROOT / "README.md").read_text()
    for name in ("LICENSE", "CITATION.cff", "CONTRIBUTING.md"):
        assert f"]({name})" in readme, name
        assert (ROOT / name).is_file()
