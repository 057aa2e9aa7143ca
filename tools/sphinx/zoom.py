"""Sphinx extension: one tap opens a figure at full size.

On a phone (390 CSS px) a figure of the book is drawn at about half its
width, and its smallest text (tick labels of 8 pt at 110 dpi, an explorer's
10 pt labels at 72 dpi) falls to 4-7 px, too small to read. Every figure and
explorer image in a page is therefore a link to its own PNG: one tap opens it
alone, where the browser shows it at the screen's full width and lets the
reader pinch to zoom, and Back returns to the same place in the chapter.
It is a plain link, so it works with JavaScript off and from ``file://``.
An explorer's link follows its slider (attnbook/explorers/_html.py sets the
link to the frame shown).

A figure's <img> also gets its width and height from the PNG, as an
explorer's has: the page does not shift as lazy images arrive, so the place
Back returns to is where the reader was. tests/test_phone.py measures the
text of every figure at 390 px from the size the PNG records
(attnbook.plots.SMALLEST_TEXT_KEY) and follows the links.
"""
from __future__ import annotations

import re
import struct
from pathlib import Path

#: an <img> whose source is one of the build's images, and what comes before
#: it: a link around it already (Sphinx's scaled-image link) is left alone
IMG = re.compile(r'(<a\b[^>]*>\s*)?<img\b([^>]*?)\bsrc="((?:\.\./)*_images/[^"]+\.png)"([^>]*)>')


def png_size(path: Path) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, or None if it is no PNG."""
    try:
        head = path.read_bytes()[:24]
    except OSError:
        return None
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def with_zoom_links(body: str, sources: dict[str, Path]) -> str:
    """`body` with each build image not yet in a link wrapped in one to its
    file, and given width and height if it has none (`sources`: an image's
    name in _images/ -> its file)."""
    def wrap(m: re.Match) -> str:
        before, attrs, src, after = m.group(1), m.group(2), m.group(3), m.group(4)
        if before:
            return m.group(0)
        tag = m.group(0)
        if "width=" not in attrs + after:
            size = png_size(sources.get(src.rsplit("/", 1)[1], Path("-")))
            if size:
                tag = tag.replace("<img", f'<img width="{size[0]}" height="{size[1]}"', 1)
        return f'<a class="attn-zoom" href="{src}">{tag}</a>'
    return IMG.sub(wrap, body)


def _page(app, pagename, templatename, context, doctree) -> None:
    if "body" not in context or "_images/" not in context["body"]:
        return
    srcdir = Path(app.srcdir)
    sources = {name: srcdir / source for source, name in app.builder.images.items()}
    context["body"] = with_zoom_links(context["body"], _Sources(sources, Path(app.outdir)))


class _Sources(dict):
    """An image's source file, or the file already written to _images/
    (an explorer's frames, which tools.sphinx.frames writes there)."""

    def __init__(self, sources: dict[str, Path], outdir: Path):
        super().__init__(sources)
        self.outdir = outdir

    def get(self, name, default=None):
        return super().get(name) or self.outdir / "_images" / name


def setup(app):
    app.connect("html-page-context", _page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
