"""The book's figures as 256-colour palette PNGs that record their smallest text.

`palette_png` writes a figure for the static HTML book (attnbook.plots'
figures at 110 dpi, the explorers' frames at 72 dpi). Each PNG records, in a
text chunk under `SMALLEST_TEXT_KEY`, the size in pixels of the smallest
text the figure draws (font size in points x dpi / 72): at its own size, a
PNG with 8 pt tick labels at 110 dpi shows them 12.2 px tall, and a page
that shows it at half its width shows them 6.1 px tall. The book's phone
test (tests/test_phone.py) reads it to measure every figure's text at
390 px.
"""
from __future__ import annotations

import io

from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.text import Text

#: The PNG text chunk's key (Pillow: ``Image.open(f).text[SMALLEST_TEXT_KEY]``).
SMALLEST_TEXT_KEY = "attnbook:smallest-text-px"


def _drawn_texts(artist):
    """The non-empty texts under `artist` that are drawn: an invisible
    artist hides its children, and an Axes with its axis off its axes."""
    if not artist.get_visible():
        return
    if isinstance(artist, Text) and artist.get_text().strip():
        yield artist
    for child in artist.get_children():
        if isinstance(child, Axis) and not getattr(artist, "axison", True):
            continue
        yield from _drawn_texts(child)


def smallest_text_px(fig: Figure, dpi: float) -> float | None:
    """The size in pixels of the smallest text `fig` draws at `dpi`, or None
    if it draws none."""
    sizes = [t.get_fontsize() for t in _drawn_texts(fig)]
    return min(sizes) * dpi / 72 if sizes else None


def palette_png(fig: Figure, dpi: float, **savefig_kw) -> bytes:
    """`fig` as a 256-colour palette PNG on white, for the HTML book.

    About a third of the bytes of a full-colour PNG, and the same picture for
    plots drawn from a few colour maps.
    """
    from PIL import Image

    from ._layout_cache import text_layouts_cached
    buf = io.BytesIO()
    # An uncompressed TIFF only carries the pixels to Pillow (a PNG would be
    # compressed here and decompressed at once)
    with text_layouts_cached():
        fig.savefig(buf, format="tiff", dpi=dpi, facecolor="white",
                    pil_kwargs={"compression": "raw"}, **savefig_kw)
    return quantized_png(Image.open(buf), smallest_text_px(fig, dpi))


def quantized_png(image, text_px: float | None = None) -> bytes:
    """A PIL image as the 256-colour palette PNG that `palette_png` writes,
    recording `text_px` (the smallest text's size in pixels) if given.

    zlib level 8, not Pillow's ``optimize`` (level 9): on the book's 82
    figures and frames of chapters 5, 9, 11 and 16, level 9 took 1.95 s and
    wrote 1.774 MB, level 8 0.65 s and 1.793 MB (1 % more).
    """
    from PIL import Image, PngImagePlugin
    palette = image.convert("RGB").quantize(
        colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    if text_px is not None:
        info.add_text(SMALLEST_TEXT_KEY, f"{text_px:.2f}")
    out = io.BytesIO()
    palette.save(out, format="PNG", compress_level=8, pnginfo=info)
    return out.getvalue()
