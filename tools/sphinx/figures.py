"""Sphinx extension: each edition shows the figures drawn in its language.

When the book is built, a figure's output holds two renderings from the same
figure object (attnbook/figure_text.py): English as 'image/png', Chinese as
`attnbook.figure_text.TRANSLATED_PNG`; an explorer's output likewise holds
'text/html' and `TRANSLATED_HTML`. myst-nb renders every representation of
an output and keeps one, by the builder's priority list
(``nb_mime_priority_overrides``). This extension

- renders the two Chinese types, as an image and as raw HTML (myst-nb's own
  renderers, under the types they stand for); myst-nb finds renderers for
  other types through the entry-point group ``myst_nb.mime_renderers``,
  which only installed packages can join, so the plugin is added to the
  list myst-nb loads (``myst_nb.core.render.load_mime_renders``) instead;
- in the Chinese edition (``language`` zh_CN), ranks the Chinese types ahead
  of the English ones; the English edition does not rank them, so it keeps
  'image/png' and 'text/html'.

An output without the Chinese types (the build ran without the catalogue)
shows its English rendering in both editions.
"""
from __future__ import annotations

import dataclasses

from attnbook.figure_text import TRANSLATED_HTML, TRANSLATED_PNG

#: ahead of text/html (30) and image/png (50) in myst-nb's HTML priorities
CHINESE_PRIORITY = {TRANSLATED_HTML: 25, TRANSLATED_PNG: 45}


class TranslatedOutputs:
    """myst-nb mime renderer plugin (see myst_nb.core.render.MimeRenderPlugin)."""

    mime_priority_overrides = ()

    @staticmethod
    def handle_mime(renderer, data, inline: bool):
        if inline:
            return None
        if data.mime_type == TRANSLATED_PNG:
            return renderer.render_image(dataclasses.replace(data, mime_type="image/png"))
        if data.mime_type == TRANSLATED_HTML:
            return renderer.render_text_html(data)
        return None


def register_plugin() -> None:
    from myst_nb.core import render
    loaded = render.load_mime_renders
    if getattr(loaded, "with_translated_outputs", False):
        return

    def load_mime_renders():
        return [*loaded(), TranslatedOutputs]
    load_mime_renders.with_translated_outputs = True
    render.load_mime_renders = load_mime_renders


def _rank_chinese_outputs(app, config) -> None:
    if (config.language or "").startswith("zh"):
        config.nb_mime_priority_overrides = [
            *config.nb_mime_priority_overrides,
            *((builder, mime, p) for builder in ("html", "dirhtml", "singlehtml")
              for mime, p in CHINESE_PRIORITY.items())]


def setup(app):
    register_plugin()
    app.connect("config-inited", _rank_chinese_outputs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
