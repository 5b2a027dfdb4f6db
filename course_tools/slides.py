"""Slide types for jupyterlab-rise, so that every slide fits a projector's screen.

Every ``#`` or ``##`` heading starts a slide and every ``###`` heading a sub-slide
(the lesson's own structure). Between headings, a long stretch is cut into further
sub-slides so that no slide is taller than :data:`SLIDE_BUDGET` pixels, about one and
a half screens at 1280x720 (``tests/browser/test_slides.py`` measures the real
slides and allows two). A cut goes where the lesson's prose allows one:

* before a markdown cell, so that an explanation stays with the code and output
  under it, whenever the material since the last cut no longer fits;
* before a code cell only when one markdown cell and its code cells together are
  too tall for any slide (then the paragraph stays on the slide before, with the
  code that fits).

Heights are estimated from a cell's source and saved outputs (text lines, wrapped
paragraphs, tables, code blocks, pictures and their pixel sizes), in the layout
pixels of jupyterlab-rise at 1280x720. The estimate only decides where to cut; the
browser test checks the result. The cuts of the solutions copy are those of the
learner's copy too (:func:`course_tools.notebook_format.lesson_from_solution`), so
both copies present the same slides; the solutions copy, with every answer written
out, is the taller of the two.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from pathlib import Path

from .config import ROOT

# Slides taller than this (estimated) are cut; two screens at 1280x720 are 1440 px.
SLIDE_BUDGET = 1150

# What a cell's parts take on a slide, in the layout pixels of jupyterlab-rise at
# 1280x720: fitted by least squares to every cell of the lessons as Chromium drew
# them (within 25% for every markdown cell and 23% for every code cell).
PROSE_CHARACTERS_PER_LINE = 150
OUTPUT_CHARACTERS_PER_LINE = 120
MARKDOWN = {
    "cell": 6,
    "block": 22,  # a paragraph, list, table or heading: the gap around it
    "prose line": 19,
    "heading": {1: 75, 2: 37, 3: 17},
    "table row": 21,
    "code line": 14,  # in a fenced code block
    "display math": 19,
    "picture": 1.1,  # per pixel of a linked figure's height
}
CODE = {
    "shown": 23,
    "source line": 18,
    "folded": 104,  # a source_hidden cell shows a placeholder bar
    "output": 14.5,
    "output line": 16,
    "picture": 1.2,  # per pixel of a picture's height
    "html row": 17.5,
}

MARKDOWN_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)")
HTML_IMAGE = re.compile(r"<img[^>]*src=['\"]data:image/png;base64,([A-Za-z0-9+/=]+)")
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
HTML_TAG = re.compile(r"<[^>]+>")
HTML_SCRIPT = re.compile(r"<script\b.*?</script>", re.S)  # code a page runs, never shown


def png_height(data: bytes) -> int:
    """The pixel height of a PNG image, read from its first 24 bytes."""
    return struct.unpack(">II", data[16:24])[1] if data[:8] == b"\x89PNG\r\n\x1a\n" else 0


def _lines(text: str, width: int) -> int:
    """Lines that ``text`` wraps to at ``width`` characters."""
    return max(1, math.ceil(len(text.rstrip()) / width))


def markdown_height(source: str, folder: Path) -> float:
    height, in_code = MARKDOWN["cell"], False
    for block in re.split(r"\n\s*\n", source.strip()):
        height += MARKDOWN["block"]
        lines = block.split("\n")
        if block.lstrip().startswith("```") or in_code:
            in_code = not block.rstrip().endswith("```") or block.strip() == "```"
            height += MARKDOWN["code line"] * len(lines)
            continue
        for line in lines:
            heading = re.match(r"^(#{1,3})\s", line)
            image = MARKDOWN_IMAGE.search(line)
            if heading:
                height += MARKDOWN["heading"][len(heading.group(1))]
            elif image and not re.match(r"\w+://", image.group(1)):
                path = (folder / image.group(1)).resolve()
                picture = png_height(path.read_bytes()[:24]) if path.is_file() else 0
                height += MARKDOWN["picture"] * picture
            elif line.lstrip().startswith("|"):
                height += 0 if re.fullmatch(r"[\s|:-]+", line) else MARKDOWN["table row"]
            elif line.strip().startswith("$$"):
                height += MARKDOWN["display math"]
            elif line.strip():
                visible = LINK.sub(r"\1", line).replace("**", "").replace("`", "")
                height += MARKDOWN["prose line"] * _lines(visible, PROSE_CHARACTERS_PER_LINE)
    return height


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _text_lines(text: str) -> int:
    return sum(_lines(line, OUTPUT_CHARACTERS_PER_LINE) for line in text.rstrip("\n").split("\n"))


def output_height(output) -> float:
    height = CODE["output"]
    if output.get("output_type") == "stream":
        return height + CODE["output line"] * _text_lines(_text(output.get("text")))
    data = output.get("data", {})
    if "image/png" in data:
        picture = png_height(base64.b64decode(_text(data["image/png"])[:64]))
        return height + CODE["picture"] * picture
    if "text/html" in data:
        html = _text(data["text/html"])
        pictures = sum(png_height(base64.b64decode(m[:64])) for m in HTML_IMAGE.findall(html))
        prose = HTML_TAG.sub("", HTML_IMAGE.sub("", HTML_SCRIPT.sub("", html)))
        return (
            height
            + pictures
            + CODE["html row"] * html.count("<tr")
            + MARKDOWN["prose line"] * (len(prose) // PROSE_CHARACTERS_PER_LINE)
        )
    if "text/plain" in data:
        return height + CODE["output line"] * _text_lines(_text(data["text/plain"]))
    return height


def estimated_height(cell, folder: Path = ROOT / "lessons") -> float:
    """The height of ``cell`` on a slide, in layout pixels (see the module docstring)."""
    if cell.cell_type == "markdown":
        return markdown_height(cell.source, folder)
    if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
        height = CODE["folded"]
    else:
        height = CODE["shown"] + CODE["source line"] * (cell.source.count("\n") + 1)
    return height + sum(output_height(output) for output in cell.get("outputs", []))


def heading_level(cell) -> int | None:
    if cell.cell_type != "markdown":
        return None
    first = cell.source.lstrip().split("\n", 1)[0]
    found = re.match(r"^(#{1,3})\s", first)
    return len(found.group(1)) if found else None


def slide_types(cells, folder: Path = ROOT / "lessons") -> list[str]:
    """The ``slideshow.slide_type`` of every cell, as the module docstring says."""
    types = []
    used = 0.0  # estimated height of the slide so far
    for index, cell in enumerate(cells):
        level = heading_level(cell)
        height = estimated_height(cell, folder)
        if level is not None:
            kind = "slide" if level <= 2 else "subslide"
        elif used == 0.0:
            kind = "-"
        elif cell.cell_type == "markdown":
            # Cut before the paragraph if it and its code fit a slide of their own but
            # not this one; if they fit no slide, cut inside them, at a code cell.
            unit = height + sum(estimated_height(c, folder) for c in _code_after(cells, index))
            too_tall = used + height > SLIDE_BUDGET or used + unit > SLIDE_BUDGET >= unit
            kind = "subslide" if too_tall else "-"
        else:
            kind = "subslide" if used + height > SLIDE_BUDGET else "-"
        if kind != "-":
            used = 0.0
        used += height
        types.append(kind)
    return types


def _code_after(cells, index: int) -> list:
    """The code cells right after the markdown cell at ``index``: what it introduces."""
    following = []
    for cell in cells[index + 1 :]:
        if cell.cell_type != "code":
            break
        following.append(cell)
    return following
