"""Sphinx extension: an explorer's frames are files, not data in the page.

The kernel writes an explorer (`attnbook.explorers.explorer.Explorer._html`)
as a self-contained slider: every frame a ``data:image/png;base64`` URI.
Inlined, chapter 11's 18 frames made its page 755 KB (467 KB compressed),
all of it parsed before the first paragraph could be painted on a phone.
When a page is written, this extension writes each frame of each explorer
to ``_images/<sha256>.png`` in the edition being built (the Chinese
edition's frames, drawn in Chinese, go to ``zh/_images/``) and puts the
file's relative URL where its data URI was: in the <img>, which then shows
the first frame as a plain image (with JavaScript off as well), and in the
list of frames the slider's script loads when the explorer nears the
viewport. A relative URL in an ``<img src>`` works over ``file://`` too.
"""
from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from docutils import nodes

DATA_URI = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")
MARK = 'class="attn-explorer"'


def frame_file(images: Path, data: bytes) -> str:
    """Write `data` to images/<sha256>.png (once); return the file's name."""
    name = hashlib.sha256(data).hexdigest() + ".png"
    target = images / name
    if not target.is_file() or target.stat().st_size != len(data):
        images.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return name


def frames_to_files(text: str, images: Path, prefix: str) -> str:
    """`text` (an explorer's HTML) with every PNG data URI replaced by the
    URL `prefix` + the name of the file it was written to in `images`."""
    return DATA_URI.sub(
        lambda m: prefix + frame_file(images, base64.b64decode(m.group(1))), text)


def _write_frames(app, doctree, docname: str) -> None:
    if app.builder.format != "html":
        return
    images = Path(app.outdir) / "_images"
    prefix = "../" * docname.count("/") + "_images/"
    for node in list(doctree.findall(nodes.raw)):
        if "html" not in node.get("format", "").split() or MARK not in node.astext():
            continue
        text = frames_to_files(node.astext(), images, prefix)
        node.replace(node.children[0], nodes.Text(text))


def setup(app):
    app.connect("doctree-resolved", _write_frames)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
