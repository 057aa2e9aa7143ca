"""Formulas are typeset while the book is built, and a formula KaTeX cannot
typeset fails the build.

sphinxcontrib-katex prerenders every formula with KaTeX in Node.js, so pages
carry finished HTML and MathML and load no maths script (they read correctly
with JavaScript off). Its default option ``throwOnError: false`` would show
a formula KaTeX does not understand as red source text and build on; here
that raises instead, naming the formula.
"""
from __future__ import annotations

from sphinx.application import Sphinx


def setup(app: Sphinx) -> dict:
    import sphinxcontrib.katex as katex
    katex.KATEX_DEFAULT_OPTIONS = {**katex.KATEX_DEFAULT_OPTIONS, "throwOnError": True,
                                   "strict": "error"}
    return {"parallel_read_safe": True, "parallel_write_safe": True}
