"""Text for the log1pexp explorer's figure (lesson 03), drawn from cached bitmaps.

Matplotlib lays out and rasterises text glyph by glyph in Python, about 50 µs a
glyph, and the explorer's figure shows several hundred glyphs on every change. A
``StampText`` is a matplotlib ``Text`` that rasterises its string once with
FreeType (the same font, size and hinting as the Agg backend) and then pastes
the bitmap at its anchor, rounded to whole pixels, aligned as matplotlib aligns
text. It supports one line of text, rotated by 0 or 90 degrees, with an optional
opaque ``background`` colour (RGBA 0-255) behind it.
"""

from __future__ import annotations

import functools

import numpy as np


def _rasterise(text: str, path: str, size: float, dpi: float):
    """Coverage bitmap (rows top to bottom) and descent in pixels of one line of text."""
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.font_manager import get_font

    font = get_font(path)
    font.clear()
    font.set_size(size, dpi)
    font.set_text(text, 0.0, flags=get_hinting_flag())
    font.draw_glyphs_to_bitmap(antialiased=True)
    return np.asarray(font.get_image()), font.get_descent() / 64.0


@functools.lru_cache(maxsize=64)
def _line_metrics(path: str, size: float, dpi: float) -> tuple[float, float]:
    """Height and descent of a line ("lp"), as matplotlib aligns text vertically."""
    coverage, descent = _rasterise("lp", path, size, dpi)
    return float(coverage.shape[0]), descent


def _over(image: np.ndarray, background) -> np.ndarray:
    """``image`` (RGBA uint8) composited over a uniform ``background`` colour."""
    top = image.astype(np.float64) / 255.0
    under = np.asarray(background, dtype=np.float64) / 255.0
    alpha = top[..., 3:] + under[3] * (1.0 - top[..., 3:])
    safe = np.where(alpha > 0, alpha, 1.0)
    rgb = (top[..., :3] * top[..., 3:] + under[:3] * under[3] * (1.0 - top[..., 3:])) / safe
    return np.round(np.concatenate([rgb, alpha], axis=-1) * 255.0).astype(np.uint8)


@functools.lru_cache(maxsize=1024)
def stamp(
    text: str,
    colour: tuple,
    background,
    path: str,
    size: float,
    rotation: int,
    ha: str,
    va: str,
    dpi: float,
) -> tuple[np.ndarray, int, int]:
    """The bitmap of one text (rows bottom to top, as ``draw_image`` takes them) and
    its offset in pixels from the text's anchor."""
    coverage, descent = _rasterise(text, path, size, dpi)
    height, width = coverage.shape
    image = np.zeros((height, width, 4), dtype=np.uint8)
    image[..., :3] = np.round(np.array(colour[:3]) * 255)
    image[..., 3] = np.round(coverage * colour[3]).astype(np.uint8)
    if background is not None:
        image = _over(np.pad(image, ((1, 1), (2, 2), (0, 0))), background)
        height, width = image.shape[:2]
        descent += 1
    if rotation == 90:
        image = np.ascontiguousarray(np.rot90(image))
        height, width = image.shape[:2]
        bottom = {"bottom": 0, "baseline": 0, "top": -height}.get(va, -height // 2)
    else:
        line_height, line_descent = _line_metrics(path, size, dpi)
        baseline = {"baseline": 0.0, "bottom": line_descent, "top": line_descent - line_height}.get(
            va, line_descent - line_height / 2
        )
        bottom = int(round(baseline - descent))
    left = {"left": 0, "right": -width}.get(ha, -(width // 2))
    # (shared by every text drawn with it; Agg wants it writeable but never writes it)
    return np.ascontiguousarray(image[::-1]), left, bottom


@functools.cache
def stamp_text_class():
    """``StampText``: a matplotlib ``Text`` drawn from a cached bitmap (see above)."""
    from matplotlib.colors import to_rgba
    from matplotlib.font_manager import findfont
    from matplotlib.text import Text

    class StampText(Text):
        def __init__(self, *args, background=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.background = background

        def draw(self, renderer):
            if renderer is None or not self.get_visible() or not self.get_text():
                return
            props = self.get_fontproperties()
            image, left, bottom = stamp(
                self.get_text(),
                to_rgba(self.get_color(), self.get_alpha()),
                self.background,
                findfont(props),
                props.get_size_in_points(),
                round(self.get_rotation()) % 360,
                self.get_horizontalalignment(),
                self.get_verticalalignment(),
                renderer.dpi,
            )
            x, y = self.get_transform().transform(self.get_unitless_position())
            if not (np.isfinite(x) and np.isfinite(y)):
                return
            gc = renderer.new_gc()
            gc.set_clip_rectangle(self.clipbox if self.get_clip_on() else None)
            renderer.draw_image(gc, int(round(x)) + left, int(round(y)) + bottom, image)
            gc.restore()
            self.stale = False

    return StampText
