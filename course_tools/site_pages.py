"""The pieces of the course's web site (:mod:`.site`): Markdown and notebooks as HTML,
the page around them, the widgets' mount points and the search index."""

from __future__ import annotations

import html
import json
import posixpath
import re
from urllib.parse import quote

from autodiff_course.widgets.frontend import SLIDES_SCRIPT_CLASS

from .config import Course

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# The plain text each course widget starts with -> its front-end module.
WIDGET_MODULES = {
    "Chain-rule explorer": "chain_rule",
    "log1pexp explorer": "log1pexp",
    "Jacobian heatmap": "jacobian_heatmap",
}
STATE_KEYS_LEFT_OUT = (
    "_esm",
    "_css",
    "_anywidget_id",
    "_dom_classes",
    "layout",
    "tabbable",
    "tooltip",
)


# --- Markdown, with math as MathML ---------------------------------------------------


def _renderer():
    from latex2mathml.converter import convert
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class MathMLRenderer(IPythonRenderer):
        """nbconvert's renderer, with TeX turned into MathML (no script needed to read it)."""

        def block_math(self, body: str) -> str:
            return f"<div class='math-display'>{convert(body, display='block')}</div>"

        def inline_math(self, body: str) -> str:
            return convert(body)

    return MathMLRenderer(escape=False, anchor_link_text="¶")


def markdown_to_html(text: str, github_anchors: bool = False) -> str:
    """Markdown (GitHub's flavour, with $math$) as HTML. Headings get JupyterLab's ids
    ("Running-a-session"); with ``github_anchors`` also GitHub's ("running-a-session"),
    which links written for a Markdown file on GitHub use."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    markup = MarkdownWithMath(renderer=_renderer()).render(text)
    if not github_anchors:
        return markup

    def anchor(match) -> str:
        words = re.sub(r"<[^>]+>", "", match.group(2)).replace("¶", "").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", html.unescape(words)).replace(" ", "-")
        return f"<span id='{html.escape(slug, quote=True)}'></span>{match.group(0)}"

    return re.sub(r"<h([1-6])[^>]*>(.*?)</h\1>", anchor, markup, flags=re.S)


# --- notebooks -----------------------------------------------------------------------


def widget_mount(output: dict, states: dict) -> str | None:
    """The HTML that stands for a course widget's output: its still picture, and the
    saved state its module draws from when JavaScript runs; None for other outputs."""
    data = output.get("data", {})
    if WIDGET_VIEW not in data:
        return None
    text = str(data.get("text/plain", ""))
    module = next((m for prefix, m in WIDGET_MODULES.items() if text.startswith(prefix)), None)
    still = without_slides_script(data.get("text/html")) or f"<pre>{html.escape(text)}</pre>"
    model = states.get(data[WIDGET_VIEW]["model_id"], {}).get("state")
    if module is None or model is None:
        return f"<div class='widget-still-only'>{still}</div>"
    kept = {key: value for key, value in model.items() if key not in STATE_KEYS_LEFT_OUT}
    payload = json.dumps(kept, separators=(",", ":")).replace("</", "<\\/")
    return (
        f"<div class='course-widget-mount' data-widget='{module}'>"
        f"<script type='application/json' class='course-widget-state'>{payload}</script>"
        f"{still}</div>"
    )


def without_slides_script(still) -> str:
    """A still picture without the script that makes it live in slide mode (the site
    mounts its widgets itself)."""
    still = "".join(still) if isinstance(still, list) else still or ""
    return re.sub(
        rf"<script type='module' class='{SLIDES_SCRIPT_CLASS}'>.*?</script>", "", still, flags=re.S
    )


def notebook_html(path, course: Course, source: str) -> tuple[str, str]:
    """(the cells of a notebook as HTML, the CSS they need), from its saved outputs."""
    import nbformat
    from nbconvert import HTMLExporter

    notebook = nbformat.read(path, as_version=4)
    states = notebook.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            mount = widget_mount(output, states)
            if mount is not None:
                output["data"] = {"text/html": mount}
                output["metadata"] = {}
    exporter = HTMLExporter(template_name="lab", exclude_input_prompt=False)
    exporter.register_filter("markdown2html", lambda text, **_: markdown_to_html(text))
    markup, _ = exporter.from_notebook_node(notebook)
    styles = "\n".join(re.findall(r"<style[^>]*>(.*?)</style>", markup, flags=re.S))
    main = re.search(r"<main>(.*)</main>", markup, flags=re.S).group(1)
    return main, styles


# --- the page around each body --------------------------------------------------------


OUTPUT_PICTURE_ALT = "A plot drawn by the code cell above; the text around it says what it shows."


def output_pictures_described(markup: str) -> str:
    """Pictures in cell outputs without a text alternative get one that says where
    the description is (a page of the site has no image without alt text)."""
    return re.sub(
        r"<img(?![^>]*\balt=)(\s)", lambda m: f"<img alt='{OUTPUT_PICTURE_ALT}'{m.group(1)}", markup
    )


def external_images_as_text(markup: str) -> str:
    """Badges and other pictures from elsewhere become their alt text (a page of the
    site loads nothing from another server)."""

    def one(match) -> str:
        alt = re.search(r"""alt=(["'])(.*?)\1""", match.group(0))
        return f"<span class='badge-text'>{alt.group(2) if alt else 'picture'}</span>"

    return re.sub(r"""<img\b[^>]*\bsrc=(["'])(?:https?:)?//[^"']*\1[^>]*>""", one, markup)


def launch_bar(source: str, course: Course) -> str:
    """Binder, Colab and JupyterHub (nbgitpuller) buttons for notebook ``source``."""
    folder = course.repository.split("/")[1]  # the folder nbgitpuller clones into
    pull = (
        f"repo={quote(f'https://github.com/{course.repository}', safe='')}"
        f"&branch={quote(course.ref, safe='')}"
        f"&urlpath={quote(f'lab/tree/{folder}/{source}', safe='')}"
    )
    return (
        "<nav class='launch' aria-label='run this notebook'>"
        f"<a class='button' href='{html.escape(course.binder_url(source))}'>Run on Binder</a> "
        f"<a class='button' href='{html.escape(course.colab_url(source))}'>Open in Colab</a> "
        f"<form class='hub-launch' data-pull='{html.escape(pull)}' action='#'>"
        "<label for='hub-address'>or on your JupyterHub</label> "
        "<input id='hub-address' name='hub' type='url' placeholder='https://hub.example.org'"
        " autocomplete='url'> <button type='submit'>Open</button></form>"
        f"<a class='source-link' href='{html.escape(course.github_url(source))}'>"
        "the notebook on GitHub</a></nav>"
    )


def contents_nav(pages, current, course: Course) -> str:
    there = posixpath.dirname(current.target)

    def link(one, text) -> str:
        href = posixpath.relpath(one.target, there or ".")
        here = " aria-current='page'" if one.target == current.target else ""
        return f"<a href='{href}'{here}>{html.escape(text)}</a>"

    items = [f"<li>{link(pages[0], 'Home')}</li>"]
    by_lesson = {}
    for one in pages:
        if one.lesson:
            by_lesson.setdefault(one.lesson, []).append(one)
    for lesson in course.lessons:
        entries = by_lesson.get(lesson.slug, [])
        links = " · ".join(
            link(one, "solutions" if one.source.startswith("solutions/") else "lesson")
            if one.source.endswith(lesson.filename)
            else link(one, one.title.split(" ", 1)[1])
            for one in entries
        )
        items.append(
            f"<li><span class='lesson-title'>{lesson.number:02d} {html.escape(lesson.title)}</span>"
            f"<br>{links}</li>"
        )
    for one in pages:
        if one.target in ("instructors/guide.html", "search.html"):
            items.append(f"<li>{link(one, one.title)}</li>")
    return f"<nav class='contents' aria-label='course contents'><ul>{''.join(items)}</ul></nav>"


def page(one, pages, body: str, course: Course) -> str:
    """A whole HTML page: header with search, contents, the body (and launch buttons)."""
    there = posixpath.dirname(one.target)
    up = posixpath.relpath(".", there or ".")
    static = f"{up}/_static" if there else "_static"
    launch = launch_bar(one.source, course) if one.is_notebook else ""
    styles = [f"{static}/site.css", f"{static}/widgets/widgets.css"]
    if one.is_notebook:
        styles.insert(0, f"{static}/notebook.css")
    links = "".join(f"<link rel='stylesheet' href='{href}'>" for href in styles)
    home = "index.html" if not there else f"{up}/index.html"
    search = "search.html" if not there else f"{up}/search.html"
    title = one.title if one.target == "index.html" else f"{one.title} · {course.title}"
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title>{links}"
        f"<script type='module' src='{static}/site.js'></script></head>"
        f"<body data-static='{static}' data-root='{up if there else '.'}'>"
        "<a class='skip-link' href='#content'>Skip to the content</a>"
        f"<header class='site-header'><a class='site-title' href='{home}'>"
        f"{html.escape(course.title)}</a><span class='site-subtitle'>"
        f"{html.escape(course.subtitle)}</span>"
        f"<form class='site-search' action='{search}' method='get' role='search'>"
        "<label for='site-search-query' class='visually-hidden'>Search the course</label>"
        "<input id='site-search-query' name='q' type='search' placeholder='Search the course'>"
        "<button type='submit'>Search</button></form></header>"
        f"<div class='site-body'>{contents_nav(pages, one, course)}"
        f"<main id='content' class='site-main{' jp-Notebook' if one.is_notebook else ''}'>"
        f"{launch}{external_images_as_text(output_pictures_described(body))}</main></div></body></html>\n"
    )


# --- search ---------------------------------------------------------------------------

HEADING = re.compile(r"<h([1-3])[^>]*?(?:id=(['\"])([^'\"]*)\2)?[^>]*>(.*?)</h\1>", re.S)


def _text(markup: str) -> str:
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.S)
    markup = re.sub(r"<math\b.*?</math>", " ", markup, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def search_entries(body: str, target: str, title: str) -> list[dict]:
    """One search entry per section (H1 to H3) of a page: its address, title and words."""
    entries = []
    matches = list(HEADING.finditer(body))
    starts = [m.start() for m in matches] + [len(body)]
    if not matches or matches[0].start() > 0:
        entries.append(
            {"url": target, "page": title, "section": title, "text": _text(body[: starts[0]])}
        )
    for match, end in zip(matches, starts[1:]):
        anchor = match.group(3)
        section = _text(match.group(4)).rstrip("¶").strip()
        entries.append(
            {
                "url": target + (f"#{anchor}" if anchor else ""),
                "page": title,
                "section": section,
                "text": _text(body[match.end() : end])[:4000],
            }
        )
    return [entry for entry in entries if entry["text"] or entry["section"]]
