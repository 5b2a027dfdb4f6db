"""The course's web site (``./course.sh site``), read in Chromium as a learner reads it.

The site is built into a temporary folder and served from a loopback server;
every request that would leave that server is blocked and reported. On every page:
no console error, no request elsewhere, every widget mounted, every internal link
(fragment included) resolves, and axe-core finds no WCAG 2.1 A or AA violation.
The widgets answer the keyboard with TensorFlow's numbers, without a kernel; with
JavaScript off, each shows its still picture; the launch buttons are built from
``course.toml`` as the notebooks' badges are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs
from urllib.parse import unquote
from urllib.parse import urlsplit

import numpy as np
import pytest

from course_tools import site
from course_tools.browser import chromium_browser
from course_tools.browser import confine
from course_tools.browser import static_server
from course_tools.config import load_course

COURSE = load_course()
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
PAGES = [one.target for one in site.site_pages(COURSE)]
EXPLORER = ".course-widget-host .log1pexp-explorer"


@pytest.fixture(scope="module")
def built(tmp_path_factory, chromium_path):
    out = tmp_path_factory.mktemp("site") / "_site"
    site.build(out)
    return out


@pytest.fixture(scope="module")
def served(built):
    with static_server(built) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def site_browser(chromium_path, served):
    with chromium_browser(chromium_path) as browser:
        yield browser


class Visit:
    """One page opened in its own context: the console errors and blocked requests seen."""

    def __init__(self, browser, base_url: str, path: str, javascript: bool = True):
        self.context = browser.new_context(
            viewport={"width": 1280, "height": 900}, java_script_enabled=javascript
        )
        self.blocked = confine(self.context, base_url)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(f"{base_url}/{path}", wait_until="load")
        if javascript:
            self.page.wait_for_function(
                """() => [...document.querySelectorAll('.course-widget-mount')]
                    .every(mount => mount.dataset.mounted === 'true')""",
                timeout=30_000,
            )

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(site_browser, served):
    opened = []

    def open_page(path: str, javascript: bool = True) -> Visit:
        one = Visit(site_browser, served, path, javascript)
        opened.append(one)
        return one

    yield open_page
    for one in opened:
        one.close()


def anchors_of(markup: str) -> set[str]:
    """Every id on a page, as written and percent-decoded."""
    import html.parser

    found = set()

    class Ids(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            for key, value in attrs:
                if key == "id" and value:
                    found.update({value, unquote(value)})

    Ids().feed(markup)
    return found


@pytest.mark.parametrize("path", PAGES)
def test_every_page_loads_cleanly_and_its_links_resolve(visit, built, axe_script, artifacts, path):
    shown = visit(path)
    page = shown.page
    assert shown.errors == []
    assert shown.blocked == []
    mounts = page.locator(".course-widget-mount").count()
    assert page.locator(".course-widget-host .course-widget").count() == mounts
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
    base = page.url.rsplit("/", 1)[0]
    origin = "/".join(page.url.split("/")[:3])
    broken = []
    for href in hrefs:
        if not href.startswith(origin):
            continue
        address = urlsplit(href)
        target = built / unquote(address.path).lstrip("/")
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(href)
        elif address.fragment and target.suffix == ".html":
            ids = anchors_of(target.read_text(encoding="utf-8"))
            if address.fragment not in ids and unquote(address.fragment) not in ids:
                broken.append(href)
    assert broken == [], f"links from {path} (at {base}) that do not resolve"
    page.add_script_tag(content=axe_script)
    report = page.evaluate(
        """async (tags) => {
        const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
        return result.violations.map(rule => ({rule: rule.id, help: rule.help,
            nodes: rule.nodes.slice(0, 5).map(node => node.html.slice(0, 160))}));
    }""",
        WCAG_21_AA,
    )
    (artifacts / f"site-axe-{path.replace('/', '-')}.json").write_text(json.dumps(report, indent=1))
    assert report == []


def readout(page) -> dict:
    return page.evaluate(
        f"() => Object.assign({{}}, document.querySelector('{EXPLORER} [data-dtype]').dataset)"
    )


def press(page, selector: str, key: str, times: int = 1) -> None:
    page.locator(selector).first.focus()
    for _ in range(times):
        page.keyboard.press(key)


def test_the_explorer_answers_the_keyboard_with_tensorflows_numbers(visit, artifacts):
    page = visit("lessons/03-custom-gradients.html").page
    page.locator(EXPLORER).scroll_into_view_if_needed()
    data = readout(page)
    assert (data["dtype"], data["x"], data["quantity"]) == ("float32", "88.5", "gradient")
    assert data["naiveGradient"] == "0.0"  # the silent 0.0
    row = page.locator(f"{EXPLORER} tr[data-method='naive'] td").nth(1)
    assert row.inner_text() == "0.0"
    flags = page.locator(f"{EXPLORER} .log1pexp-flags").inner_text()
    assert "silent 0.0 from x = 87.34 to 88.72; nan from x = 88.72" in flags
    alt = page.locator(f"{EXPLORER} canvas").get_attribute("aria-label")
    assert alt.startswith(
        "Plot of the float32 gradient of log(1 + e^x) for x from -20.00 to 100.00"
    )

    press(page, f"{EXPLORER} .log1pexp-x-from input", "ArrowUp", 3)
    assert readout(page)["xMin"] == "-19.7"
    press(page, f"{EXPLORER} .log1pexp-readout-x input", "ArrowUp")
    moved = readout(page)["x"]
    assert float(moved) > 88.5
    press(page, f"{EXPLORER} .log1pexp-method-naive input", " ")
    assert readout(page)["methods"] == "documented stable"
    press(page, f"{EXPLORER} .log1pexp-method-naive input", " ")
    # the dtype radio buttons: the arrow keys move to the next option and choose it
    press(page, f"{EXPLORER} .log1pexp-dtype input[value='float32']", "ArrowRight")
    data = readout(page)  # a range of the learner's own is kept on a first visit
    assert data["dtype"] == "float64" and (data["xMin"], data["xMax"]) == ("-19.7", "100.0")
    assert abs(float(data["x"]) - float(moved)) <= 0.5  # its nearest float64-tabulated x
    press(page, f"{EXPLORER} .log1pexp-dtype input[value='float64']", "ArrowRight")
    assert readout(page)["dtype"] == "float16"
    press(page, f"{EXPLORER} .log1pexp-dtype input[value='float16']", "ArrowRight")
    data = readout(page)  # back in float32: the learner's own range, as it was
    assert (data["dtype"], data["xMin"], data["xMax"]) == ("float32", "-19.7", "100.0")
    page.locator(EXPLORER).screenshot(path=str(artifacts / "site-explorer.png"))


def test_a_zero_width_range_is_widened_with_a_message(visit):
    page = visit("lessons/03-custom-gradients.html").page
    for name, text in (("x-to", "88.5"), ("x-from", "88.5")):
        box = page.locator(f"{EXPLORER} .log1pexp-{name} input")
        box.fill(text)
        box.press("Enter")
    data = readout(page)
    assert (data["xMin"], data["xMax"]) == ("88.0", "89.0")
    message = page.locator(f"{EXPLORER} .course-message").inner_text()
    assert "too narrow to plot; widened to 88 to 89" in message


def test_every_quantity_and_method_draws_tensorflows_numbers(visit):
    """Each quantity's readout equals the tables Python computed, number for number."""
    from autodiff_course.widgets.log1pexp import explorer_table
    from autodiff_course.widgets.log1pexp.wording import format_number

    page = visit("lessons/03-custom-gradients.html").page
    table = explorer_table("float32")
    index = table.index_of(88.5)
    data = readout(page)
    for method in ("naive", "documented", "stable"):
        for key, name in (("value", "Value"), ("gradient", "Gradient")):
            expected = format_number(table.series(method, key)[index], "exact", dtype="float32")
            assert data[f"{method}{name}"] == expected, (method, key)
    for quantity in ("value", "second_derivative", "relative_error", "gradient"):
        page.locator(f"{EXPLORER} .log1pexp-quantity input[value='{quantity}']").check()
        assert readout(page)["quantity"] == quantity
    assert np.isnan(table.series("naive", "gradient")[table.index_of(100.0)])


def test_chain_rule_and_jacobian_widgets_answer_the_keyboard(visit):
    page = visit("lessons/01-chain-rule-and-upstream-dy.html").page
    before = page.locator(".chain-rule-readout").last.get_attribute("data-x")
    press(page, ".course-widget-host .chain-rule-x input", "ArrowUp", 2)
    assert before == "1.00"
    assert page.locator(".course-widget-host .chain-rule-readout").get_attribute("data-x") == "1.50"
    page = visit("lessons/05-jacobians.html").page
    host = ".course-widget-host .jacobian-heatmap"
    press(page, f"{host} .jacobian-heatmap-batch input", "ArrowUp")
    readout_node = page.locator(f"{host} .jacobian-heatmap-readout")
    assert readout_node.get_attribute("data-batch") == "5"
    press(page, f"{host} .jacobian-heatmap-layer input[value='centred']", "ArrowRight")
    assert readout_node.get_attribute("data-layer") == "batch norm"


def test_without_javascript_the_still_pictures_show(visit):
    for path in (
        "lessons/01-chain-rule-and-upstream-dy.html",
        "lessons/03-custom-gradients.html",
        "lessons/05-jacobians.html",
    ):
        page = visit(path, javascript=False).page
        stills = page.locator(".course-widget-mount .widget-still")
        assert stills.count() >= 1, path
        assert stills.first.is_visible()
        pictures = page.evaluate(
            """() => [...document.querySelectorAll('.course-widget-mount .widget-still img')]
                .map(image => ({alt: image.alt.length, width: image.naturalWidth}))"""
        )
        assert all(p["alt"] and p["width"] for p in pictures), (path, pictures)
        assert page.locator(".course-widget-host").count() == 0


@pytest.mark.parametrize("target", [p for p in PAGES if p.startswith(("lessons/", "solutions/"))])
def test_launch_buttons_are_built_from_course_toml_as_the_badges_are(built, target):
    source = target[: -len(".html")] + ".ipynb"
    markup = (built / target).read_text(encoding="utf-8")
    launch = re.search(r"<nav class='launch'.*?</nav>", markup, flags=re.S).group(0)
    links = re.findall(r"href='([^']+)'", launch)
    assert COURSE.binder_url(source) in [link.replace("&amp;", "&") for link in links]
    assert COURSE.colab_url(source) in links
    assert COURSE.github_url(source) in links
    pull = parse_qs(re.search(r"data-pull='([^']+)'", launch).group(1).replace("&amp;", "&"))
    folder = COURSE.repository.split("/")[1]
    assert pull == {
        "repo": [f"https://github.com/{COURSE.repository}"],
        "branch": [COURSE.ref],
        "urlpath": [f"lab/tree/{folder}/{source}"],
    }


def test_every_notebook_of_course_toml_is_a_page_and_nothing_else(tmp_path):
    """A notebook added later (a new lesson or aside in course.toml) becomes a page
    without a change to the tools, its asides right after its lesson; a notebook that
    course.toml does not list is not published."""
    root = tmp_path / "course"
    (root / "solutions").mkdir(parents=True)
    (root / "lessons").mkdir()
    import nbformat

    for folder, name in (
        ("solutions", "03-custom-gradients.ipynb"),
        ("solutions", "03-aside-avx-kernels.ipynb"),
        ("lessons", "03-aside-avx-kernels.ipynb"),
        ("solutions", "03-scratch.ipynb"),
        ("solutions", "07-training.ipynb"),
        ("lessons", "07-training.ipynb"),
    ):
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_markdown_cell(f"# {name}")]
        nbformat.write(notebook, root / folder / name)
    toml = Path(site.ROOT / "course.toml").read_text().split("[[lessons]]")[0]
    toml += (
        '[[lessons]]\nslug = "03-custom-gradients"\ntitle = "Custom"\n'
        "teaching_minutes = 1\nexercise_minutes = 1\n"
        '[[lessons]]\nslug = "07-training"\ntitle = "Training"\n'
        "teaching_minutes = 1\nexercise_minutes = 1\n"
        '[[asides]]\nslug = "03-aside-avx-kernels"\ntitle = "AVX kernels"\n'
        'lesson = "03-custom-gradients"\nteaching_minutes = 1\n'
    )
    (root / "course.toml").write_text(toml)
    pages = site.site_pages(load_course(root / "course.toml"), root)
    assert [one.target for one in pages] == [
        "index.html",
        "solutions/03-custom-gradients.html",
        "lessons/03-aside-avx-kernels.html",
        "solutions/03-aside-avx-kernels.html",
        "lessons/07-training.html",
        "solutions/07-training.html",
        "instructors/guide.html",
        "search.html",
    ]
    assert pages[2].title == "03 AVX kernels"


def test_the_site_has_a_page_for_every_notebook_the_course_builds():
    sources = {one.source for one in site.site_pages(COURSE)}
    for notebook in COURSE.notebooks:
        for folder in ("lessons", "solutions"):
            assert f"{folder}/{notebook.filename}" in sources


def test_search_finds_a_section(visit):
    page = visit("search.html?q=silent+0.0").page
    page.wait_for_function("() => document.querySelectorAll('#search-results li').length > 0")
    assert "03" in page.locator("#search-results li").first.inner_text()
