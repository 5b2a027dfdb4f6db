"""The course's plot style and PNG writer (autodiff_course.plotting)."""

from __future__ import annotations

import io
import zlib

import numpy as np
import pytest

from autodiff_course.plotting import MUTED_TEXT
from autodiff_course.plotting import SERIES_STYLES
from autodiff_course.plotting import TEXT_BACKGROUNDS
from autodiff_course.plotting import TEXT_COLOURS
from autodiff_course.plotting import WARNING_TEXT
from autodiff_course.plotting import contrast_ratio
from autodiff_course.plotting import encode_png
from autodiff_course.plotting import figure_png
from autodiff_course.plotting import series_style
from autodiff_course.plotting import text_colour


@pytest.mark.parametrize(
    "colour, ratio", [("#000000", 21.0), ("#FFFFFF", 1.0), ("#767676", 4.54), ("#D55E00", 3.87)]
)
def test_contrast_ratio_follows_wcag(colour, ratio):
    assert contrast_ratio(colour) == pytest.approx(ratio, abs=0.01)


@pytest.mark.parametrize("colour", [*TEXT_COLOURS, MUTED_TEXT, WARNING_TEXT])
@pytest.mark.parametrize("background", TEXT_BACKGROUNDS)
def test_text_colours_reach_4_5_to_1(colour, background):
    assert contrast_ratio(colour, background) >= 4.5


def test_each_series_has_a_text_colour_of_its_own_hue():
    assert len(TEXT_COLOURS) == len(SERIES_STYLES)
    for index, (colour, _, _) in enumerate(SERIES_STYLES):
        line = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
        text = np.array([int(text_colour(index)[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
        assert np.allclose(text / max(text.max(), 1), line / max(line.max(), 1), atol=0.02)
        assert series_style(index)["color"] == colour


def decode_png(data: bytes) -> np.ndarray:
    """An independent reading of an unfiltered 8-bit RGB PNG, chunk by chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, position = {}, 8
    while position < len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        tag = data[position + 4 : position + 8]
        body = data[position + 8 : position + 8 + length]
        crc = int.from_bytes(data[position + 8 + length : position + 12 + length], "big")
        assert zlib.crc32(tag + body) & 0xFFFFFFFF == crc
        chunks[tag] = body
        position += 12 + length
    assert list(chunks) == [b"IHDR", b"IDAT", b"IEND"]  # no text, no timestamp
    width, height = (int.from_bytes(chunks[b"IHDR"][i : i + 4], "big") for i in (0, 4))
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), dtype=np.uint8)
    rows = rows.reshape(height, 1 + 3 * width)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, 3)


def test_encode_png_keeps_every_pixel_and_gives_the_same_bytes_for_the_same_pixels():
    from PIL import Image

    rng = np.random.default_rng(0)
    rgba = rng.integers(0, 256, size=(7, 5, 4), dtype=np.uint8)
    data = encode_png(rgba)
    np.testing.assert_array_equal(decode_png(data), rgba[..., :3])
    np.testing.assert_array_equal(
        np.asarray(Image.open(io.BytesIO(data)).convert("RGB")), rgba[..., :3]
    )
    assert encode_png(rgba.copy()) == data


def test_figure_png_draws_a_figure_without_pyplot():
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    figures = plt.get_fignums()
    figure = Figure(figsize=(2, 1), dpi=50)
    figure.add_subplot().plot([0, 1], [1, 0])
    data = figure_png(figure)
    assert decode_png(data).shape == (50, 100, 3)
    assert figure_png(figure) == data and plt.get_fignums() == figures
