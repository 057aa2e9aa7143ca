"""Sphinx extension: make the theme's ".ipynb" button download the notebook.

sphinx-book-theme links a chapter's source notebook with target="_blank", so
a browser opens the JSON in a new tab (or not at all, by host) instead of
saving it. After the build, this gives every such link a `download`
attribute with the notebook's file name and drops the new-tab target.
"""
from __future__ import annotations

import re
from pathlib import Path

LINK = re.compile(r'<a href="([^"]*_sources/[^"]*?([^/"]+\.ipynb))" target="_blank"(\s+class="btn '
                  r'btn-sm btn-download-source-button)')


def _add_download(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = LINK.sub(r'<a href="\1" download="\2"\3', text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("build-finished", _add_download)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
