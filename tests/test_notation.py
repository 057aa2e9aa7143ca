"""One meaning per symbol and per word, as notation.md defines them: a scan
of the chapters for the usages that once drifted from it.

- scores are s (bold for one query's row); x is a kernel-regression input
  and bold x a token's row of X;
- the attention weights are A; W with a subscript is a projection;
- a value is V (a column when each value is a number), not bold v for a
  whole vector of values;
- a head's width is d_head = d_model / h;
- "weights" are attention weights; what a model learns are its parameters
  (projections, matrices).
"""
from __future__ import annotations

import re

import nbformat
import pytest

from tools.project import ROOT, chapter_notebooks

#: Chapters the check leaves out (none).
SKIPPED: set[str] = set()
CHAPTERS = [p for p in chapter_notebooks() if p.stem not in SKIPPED]

#: (what notation.md says instead, the pattern that breaks it)
FORBIDDEN = [
    ("scores are s, not x (x is a kernel-regression input)",
     re.compile(r"softmax\}?\(\\mathbf\{x\}\)|e\^\{x_[ij]|x_1, \\dots, x_n")),
    ("the attention weights are A, not W",
     re.compile(r"\bW\s*=\s*(\\operatorname\{)?softmax")),
    ("values are V; bold v is one value",
     re.compile(r"K\^\\top(/\\sqrt\{d_k\})?\)\\?,?\s*\\mathbf\{v\}|\\mathbf\{v\}\$ \(length \$n_k")),
    ("a head's width is d_head = d_model / h",
     re.compile(r"d_k\s*=\s*d_\{\\text\{model\}\}\s*/\s*h")),
    ("'weights' are attention weights; a model's learned numbers are parameters",
     re.compile(r"\b(random|learned|trained|untrained|initial)\s+weights\b|\bweight matrices\b"
                r"|\bweights are stored\b|\b(layer's|model's) weights\b|the weights\.\*\*"
                r"|\bmany weights\b|\bcount the weights\b|\binputs and their weights\b", re.I)),
]


def cells(path):
    return nbformat.read(path, as_version=4).cells


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_uses_the_notation_page_symbols_and_words(path):
    found = []
    for cell in cells(path):
        for meaning, pattern in FORBIDDEN:
            for m in pattern.finditer(cell.source):
                found.append(f"cell {cell.get('id')}: {m.group(0)!r}: {meaning}")
    assert not found, f"{path.name} drifts from notation.md:\n" + "\n".join(found)


def test_the_notation_check_catches_the_drift_it_was_written_for():
    drifted = ["For scores $x_1, \\dots, x_n$", "W = softmax(S, axis=-1)",
               "= \\operatorname{softmax}(\\mathbf{q}K^\\top)\\,\\mathbf{v} .",
               "$h$ heads of width $d_k =\nd_{\\text{model}}/h$", "With these random weights"]
    for text in drifted:
        assert any(p.search(text) for _, p in FORBIDDEN), text


def test_notation_page_defines_the_symbols_the_check_enforces():
    page = (ROOT / "notation.md").read_text(encoding="utf-8")
    for symbol in (r"$\mathbf{s}$", r"$\mathbf{x}_i$", r"$d_{\text{head}}$", "| $A$ |"):
        assert symbol in page, symbol
    assert "parameters" in page and "attention weights" in page
