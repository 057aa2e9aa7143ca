"""Formulas are typeset while the book is built, and a formula KaTeX cannot
typeset fails the build.

sphinxcontrib-katex prerenders every formula with KaTeX in Node.js, so pages
carry finished HTML and MathML and load no maths script (they read correctly
with JavaScript off). Its default option ``throwOnError: false`` would show
a formula KaTeX does not understand as red source text and build on; here
that raises instead, naming the formula.

A page with formulas also preloads the two KaTeX fonts every such page uses
(upright and italic), so its formulas can show at first paint instead of
waiting for the stylesheet to ask for them; the other fonts load only where a
page uses them.
"""
from __future__ import annotations

from sphinx.application import Sphinx

#: The fonts of plain symbols and of letters in maths, on every page with formulas.
PRELOAD = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")


def preload_fonts(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree) -> None:
    if 'class="katex"' not in context.get("body", "") or not app.config.katex_prerender:
        return
    links = "".join(
        f'<link rel="preload" href="{context["pathto"]("_static/katex/fonts/" + name, 1)}" '
        'as="font" type="font/woff2" crossorigin>\n' for name in PRELOAD)
    context["metatags"] = context.get("metatags", "") + links


def setup(app: Sphinx) -> dict:
    import sphinxcontrib.katex as katex
    katex.KATEX_DEFAULT_OPTIONS = {**katex.KATEX_DEFAULT_OPTIONS, "throwOnError": True,
                                   "strict": "error"}
    app.connect("html-page-context", preload_fonts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
