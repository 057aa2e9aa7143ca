"""One meaning per symbol and per word, as notation.md defines them: a scan
of the chapters for the usages that once drifted from it.

- scores are s (bold for one query's row); x is a kernel-regression input
  and bold x a token's row of X;
- the attention weights are A; W with a subscript is a projection;
- a value is V (a column when each value is a number), not bold v for a
  whole vector of values;
- a head's width is d_head = d_model / h;
- "weights" are attention weights; what a model learns are its parameters
  (projections, matrices);
- A is the weights only (a score matrix is QKᵀ or S; a chapter that quotes a
  source writing A for the scores says so), and one query's weights are α,
  also in the Jacobian diag(α) − ααᵀ, never p;
- positions in chapter 11 are i (query) and j (key), not p and m (m is the
  running maximum of chapter 12); a shift is Δ, not k (k is a key); a score
  gap is γ, not g (g is n_kv_heads); a valid length is ℓ, not L (L is
  n_layers);
- layers and heads count from 1 in prose and figure labels: no "head 0",
  and no label formatted straight from a 0-based loop index.

The same scan runs over the back matter (notation.md, glossary.md), which
states the conventions.
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
    ("scores are s: softmax(x) and e^{x_i} write the scores as x",
     re.compile(r"\\operatorname\{softmax\}\(x\s*[/)]")),
    ("A is the weights only; a score matrix is QK^T or S",
     re.compile(r"softmax\}?\(A\s*/")),
    ("one query's weights are alpha, also in the Jacobian diag(alpha) - alpha alpha^T",
     re.compile(r"diag\}?\(p\)|\bp\s*=\s*\\?(operatorname\{)?softmax\}?\(\s*Q|p_\{?ij\b")),
    ("positions are i and j, not p and m; the rotation is R_i",
     re.compile(r"\$m - p\$|R_\{?[pm]\}?(?![\w{])|\bquery \$p\$|\bkey \$m\$")),
    ("a shift is Delta, not k (k is a key)",
     re.compile(r"M_\{?k\b|\\mathrm\{PE\}_\{p\s*\+\s*k\}|shifted_by_rotation\(k\)|PE\[p \+ k\]")),
    ("a score gap is gamma, not g (g is n_kv_heads)",
     re.compile(r"\bgap \$g\$|\$g\$ between")),
    ("a valid length is ell, not L (L is n_layers)",
     re.compile(r"valid length\}?`?\*{0,2} \$L\$|\$0, \\dots, L\s*-\s*1\$")),
    ("indices count from 0, and one query has n_k scores: s_0, ..., s_{n_k - 1}",
     re.compile(r"s_1, \\dots, s_n\b")),
    ("a token's row is bold x_i (the scalar x is kernel regression's), and k is a key",
     re.compile(r"\(XX\^\\top\)_\{ij\} = \\sum_k x_\{ik\}")),
    ("layers and heads count from 1 in prose and figure labels",
     re.compile(r"\b(?:head|layer) 0\b(?! *[-–:]? *based)|f\"(?:head|layer) \{(\w+)\}\"[^\n]*\bfor \1 in range\(")),
]
UNLESS = {
    # a chapter may quote a source that writes A for the scores, if it says so
    "A is the weights only; a score matrix is QK^T or S":
        re.compile(r"writes? \$A\$ for the (?:score|scores)|\$A\$ (?:for|is) the scores", re.I),
}
BACK_MATTER = [ROOT / "notation.md", ROOT / "glossary.md"]



def cells(path):
    return nbformat.read(path, as_version=4).cells


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_uses_the_notation_page_symbols_and_words(path):
    found = [f"cell {cell.get('id')}: {hit}" for cell in cells(path) for hit in drift(cell.source)]
    assert not found, f"{path.name} drifts from notation.md:\n" + "\n".join(found)


def drift(text: str) -> list[str]:
    hits = []
    for meaning, pattern in FORBIDDEN:
        unless = UNLESS.get(meaning)
        if unless is not None and unless.search(text):
            continue
        hits += [f"{m.group(0)!r}: {meaning}" for m in pattern.finditer(text)]
    return hits


@pytest.mark.parametrize("path", BACK_MATTER, ids=lambda p: p.name)
def test_back_matter_uses_the_symbols_it_defines(path):
    """The glossary and the notation page themselves: the glossary once wrote
    softmax(x) and diag(p) − ppᵀ, and the notation page "a valid length L"."""
    body = path.read_text(encoding="utf-8")
    if path.name == "notation.md":      # the page names the old usages it forbids
        body = body.split("- **One meaning per symbol", 1)[0]
    hits = drift(body)
    assert not hits, f"{path.name} drifts from notation.md:\n" + "\n".join(hits)


def test_the_notation_check_catches_the_drift_it_was_written_for():
    drifted = ["For scores $x_1, \\dots, x_n$", "W = softmax(S, axis=-1)",
               "= \\operatorname{softmax}(\\mathbf{q}K^\\top)\\,\\mathbf{v} .",
               "$h$ heads of width $d_k =\nd_{\\text{model}}/h$", "With these random weights",
               # the letters of issue 37, as the chapters and the glossary wrote them
               "as its own formula\n$\\operatorname{softmax}(A/\\sqrt{d_k})$ shows",
               '(ax2, "grad", "mean ‖diag(p) − ppᵀ‖_F")',
               "$\\operatorname{diag}(p) - p p^\\top$",
               "$\\sum_{j \\le i} p_{ij}$", "with $p = \\operatorname{softmax}(QK^\\top/\\sqrt{d_k})$",
               "$\\operatorname{softmax}(x)_i = e^{x_i} / \\sum_j e^{x_j}$",
               "The divisor $T$ in $\\operatorname{softmax}(x / T)$",
               "query $p$ and key $m$", "their offset $m - p$", "$(R_p\\mathbf{q})\\cdot(R_m\\mathbf{k})$",
               "so $\\mathrm{PE}_{p+k} = M_k\\,\\mathrm{PE}_p$", "def shifted_by_rotation(k):",
               "Only the gap $g$ between the two scores matters",
               "A {term}`valid length` $L$** means", "keys $0, \\dots, L-1$ are real",
               "the bars head 0 to head 3", "For scores $s_1, \\dots, s_n$,",
               "$(XX^\\top)_{ij} = \\sum_k x_{ik} x_{jk}$", 'names = [f"head {h}" for h in range(model.n_heads)]']
    for text in drifted:
        assert drift(text), text
    fine = ["$\\operatorname{softmax}(\\mathbf{s}/T)$", "$\\operatorname{diag}(\\boldsymbol{\\alpha})$",
            "$\\mathrm{PE}_{i+\\Delta} = M_\\Delta\\,\\mathrm{PE}_i$", "the gap $\\gamma$",
            "Let $p = \\operatorname{softmax}(\\mathbf{s})$",     # chapter 15: next-token probabilities
            "layer 2, head 1", 'names = [f"head {h + 1}" for h in range(4)]', "$R_i$ and $R_j$",
            "FunCry writes $A$ for the scores: $\\operatorname{softmax}(A/\\sqrt{d_k})$",
            "$g$ groups, each group sharing one", "head 0-based",
            "For the scores $s_0, \\dots, s_{n_k - 1}$", "$(XX^\\top)_{ij} = \\mathbf{x}_i \\cdot"]
    for text in fine:
        assert not drift(text), (text, drift(text))


def test_notation_page_defines_the_symbols_the_check_enforces():
    page = (ROOT / "notation.md").read_text(encoding="utf-8")
    for symbol in (r"$\mathbf{s}$", r"$\mathbf{x}_i$", r"$d_{\text{head}}$", "| $A$ |",
                   r"$\boldsymbol{\alpha}$", r"$\Delta$", r"$\gamma$", r"$\ell$", "| $i$, $j$ |",
                   r"| $m$, $\ell$ |", "| $L$ |", "| $g$ |", "count from 1", "count from 0"):
        assert symbol in page, symbol
    assert "parameters" in page and "attention weights" in page


def test_notation_page_says_how_index_and_local_letters_are_used():
    """Review r1: the page promised one meaning per letter while chapters 2-5
    index one query's keys by i, and sums and one-formula constants use k and c;
    and its alpha row gave chapters 2-6 a single query (chapter 6 has many)."""
    page = (ROOT / "notation.md").read_text(encoding="utf-8")
    assert "**Indices and local letters.**" in page
    assert "One meaning per symbol" in page and "One meaning per letter" not in page
    alpha = next(line for line in page.splitlines() if line.startswith(r"| $\boldsymbol{\alpha}$"))
    assert "2–6" not in alpha and "2–5" in alpha, alpha
    value = next(line for line in page.splitlines() if line.startswith("| $V$"))
    assert "a column of" not in value, "chapter 4's code keeps V one-dimensional, shape (n_k,)"
