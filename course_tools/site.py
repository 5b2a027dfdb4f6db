"""Build the course's web site into ``_site/``: ``./course.sh site``.

    python -m course_tools.site                # write _site/
    python -m course_tools.site --out DIR      # somewhere else

Every page is static and complete on its own machine: the lessons and solutions
with the outputs saved in them (nothing is executed again: these are the outputs
nbval checked), the README's contents as the home page, the instructor guide, a
search page, and launch buttons (Binder, Colab, a JupyterHub through nbgitpuller)
built by :mod:`.config` from ``course.toml``'s repository and ref, as the
notebooks' badges are. Notebooks come from ``course.toml`` (``Course.notebooks``):
each lesson's notebook and, after it, the optional asides listed for it, each in the
learner's copy and the solutions.

Notebooks are turned into HTML by nbconvert (JupyterLab's own exporter and
styles); math becomes MathML at build time (latex2mathml), which browsers draw
natively; the course's widgets are mounted from the widget state saved in each
notebook by their own JavaScript modules, shipped in ``autodiff_course`` and
copied into the site. No page loads anything from elsewhere, and with JavaScript
off each widget shows the still picture its cell output carries.
"""

from __future__ import annotations

import argparse
import html
import json
import posixpath
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .config import README
from .config import ROOT
from .config import Course
from .config import load_course
from .site_pages import markdown_to_html
from .site_pages import notebook_html
from .site_pages import page
from .site_pages import search_entries

SITE_DIR = ROOT / "_site"
ASSETS = Path(__file__).resolve().parent / "site_assets"
GUIDE = ROOT / "instructors" / "guide.md"
COPIED_FOLDERS = ("figures",)


@dataclass(frozen=True)
class SitePage:
    """One page of the site: where it comes from in the repository and where it goes."""

    source: str  # path in the repository, e.g. "lessons/03-custom-gradients.ipynb"
    target: str  # path in the site, e.g. "lessons/03-custom-gradients.html"
    title: str
    lesson: str | None = None  # the slug of its lesson, for the contents

    @property
    def is_notebook(self) -> bool:
        return self.source.endswith(".ipynb")


def site_pages(course: Course, root: Path = ROOT) -> list[SitePage]:
    """Every page, in the order of the contents: home, each lesson with its asides
    after it (``Course.notebooks``), each in the learner's copy and the solutions, the
    guide, the search page."""
    pages = [SitePage("README.md", "index.html", course.title)]
    for lesson in course.lessons:
        for notebook in (lesson, *course.asides_of(lesson)):
            name = notebook.filename
            for folder in ("lessons", "solutions"):
                if (root / folder / name).exists():
                    pages.append(
                        SitePage(
                            f"{folder}/{name}",
                            f"{folder}/{name[: -len('.ipynb')]}.html",
                            f"{lesson.number:02d} {notebook.title}"
                            + (" (solutions)" if folder == "solutions" else ""),
                            lesson.slug,
                        )
                    )
    pages.append(SitePage("instructors/guide.md", "instructors/guide.html", "Instructor guide"))
    pages.append(SitePage("", "search.html", "Search"))
    return pages


# --- links ------------------------------------------------------------------------

LINK = re.compile(r"""(\b(?:href|src)=)(["'])([^"']*)\2""")


def link_rewriter(course: Course, pages: list[SitePage]):
    """A function that rewrites the links of a page built from repository file ``source``
    so that they work on the site: notebooks and the two Markdown pages become their
    pages, copied folders stay, other files of the repository go to GitHub."""
    by_source = {one.source: one.target for one in pages if one.source}

    def rewrite(markup: str, source: str, target: str) -> str:
        here = posixpath.dirname(source)
        there = posixpath.dirname(target)

        def one(match) -> str:
            attribute, quote, href = match.groups()
            new = site_href(href, here, there, by_source, course)
            return f"{attribute}{quote}{html.escape(new, quote=True)}{quote}"

        return LINK.sub(one, markup)

    return rewrite


def site_href(href: str, here: str, there: str, by_source: dict, course: Course) -> str:
    """Where ``href``, written in a file of folder ``here``, points on the site, from a
    page in folder ``there``."""
    href = html.unescape(href)
    if not href or href.startswith(("#", "data:", "mailto:")) or re.match(r"^[a-z]+:", href):
        return href
    path, _, fragment = href.partition("#")
    path = path.split("?")[0]
    resolved = posixpath.normpath(posixpath.join(here, path)) if path else ""
    anchor = f"#{fragment}" if fragment else ""
    if not path:
        return anchor
    if resolved in by_source:
        return posixpath.relpath(by_source[resolved], there or ".") + anchor
    if resolved.split("/")[0] in COPIED_FOLDERS and (ROOT / resolved).is_file():
        return posixpath.relpath(resolved, there or ".") + anchor
    return course.github_url(resolved) + anchor


# --- the build --------------------------------------------------------------------


def build(out: Path = SITE_DIR, root: Path = ROOT) -> dict:
    """Write the whole site into ``out`` (emptied first); return what was written."""
    from autodiff_course.widgets.frontend import WIDGET_NAMES
    from autodiff_course.widgets.frontend import module_source
    from autodiff_course.widgets.frontend import saved_model_source
    from autodiff_course.widgets.frontend import style_sheet

    started = time.perf_counter()
    course = load_course(root / "course.toml")
    pages = site_pages(course, root)
    if out.exists():
        shutil.rmtree(out)
    (out / "_static" / "widgets").mkdir(parents=True)
    shutil.copy(ASSETS / "site.css", out / "_static" / "site.css")
    (out / "_static" / "site.js").write_text(
        saved_model_source() + (ASSETS / "site.js").read_text(encoding="utf-8"), "utf-8"
    )
    for name in WIDGET_NAMES:
        (out / "_static" / "widgets" / f"{name}.js").write_text(module_source(name), "utf-8")
    (out / "_static" / "widgets" / "widgets.css").write_text(style_sheet(), "utf-8")
    for folder in COPIED_FOLDERS:
        shutil.copytree(root / folder, out / folder)
    (out / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ as it is

    rewrite = link_rewriter(course, pages)
    index, written, notebook_css = [], {}, None
    for one in pages:
        if one.target == "search.html":
            body = search_body()
        elif one.is_notebook:
            body, css = notebook_html(root / one.source, course, one.source)
            notebook_css = notebook_css or css
        else:
            text = (root / one.source).read_text(encoding="utf-8")
            if one.source == "README.md":
                text = text.split("\n", 1)[1]  # the page shell shows the title
            body = markdown_to_html(text, github_anchors=True)
        body = rewrite(body, one.source or one.target, one.target)
        markup = page(one, pages, body, course)
        path = out / one.target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(markup, encoding="utf-8")
        written[one.target] = len(markup.encode("utf-8"))
        if one.target != "search.html":
            index += search_entries(body, one.target, one.title)
    (out / "_static" / "notebook.css").write_text(notebook_css or "", encoding="utf-8")
    (out / "search-index.json").write_text(json.dumps(index, ensure_ascii=False), "utf-8")
    return {"pages": written, "seconds": time.perf_counter() - started}


def search_body() -> str:
    return (
        "<h1>Search</h1>"
        "<form class='site-search-page' action='search.html' method='get' role='search'>"
        "<label for='search-page-query'>Search the course</label> "
        "<input id='search-page-query' name='q' type='search'> "
        "<button type='submit'>Search</button></form>"
        "<p id='search-status' role='status' aria-live='polite'>"
        "Type words to find the sections that contain all of them (this needs JavaScript).</p>"
        "<ol id='search-results'></ol>"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=SITE_DIR, help="where to write (default _site/)"
    )
    args = parser.parse_args(argv)
    from autodiff_course.notebook_setup import silence_tensorflow_logs

    silence_tensorflow_logs()
    result = build(args.out)
    pages = result["pages"]
    print(
        f"Wrote {len(pages)} pages into {args.out} in {result['seconds']:.1f} s "
        f"(largest: {max(pages, key=pages.get)}, {max(pages.values()) / 1e6:.2f} MB)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

__all__ = ["README", "build", "site_pages"]
