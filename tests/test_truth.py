"""The page says what the code does: one test for each kind of defect that
once made a page disagree with its own source or output.

- a section that vanished (a heading swallowed by a code cell or a fence);
- a fence left open, so the rest of a cell renders as a code block;
- visible code that needs a name only a hidden cell defines
  (tests/nbrun.py runs removed cells in a namespace of their own, and the
  notebook tests execute every chapter that way; here, removed cells are
  checked to do nothing but glue);
- a figure whose alt text is its file path;
- a claim of comparison in the prose that no computation backs.
"""
from __future__ import annotations

import ast
import re

import nbformat
import pytest
from nbrun import run

from tools.build.book import is_removed
from tools.project import ROOT, chapter_notebooks, toc_files

CHAPTERS = chapter_notebooks()
FENCE = re.compile(r"^ {0,3}(`{3,}|:{3,}|~{3,})(.*)$")


def markdown_cells(path):
    nb = nbformat.read(path, as_version=4)
    return [c for c in nb.cells if c.cell_type == "markdown"]


def open_fences(text: str) -> list[str]:
    """The fences still open at the end of `text`. CommonMark: a fence closes
    on a line of the same character, at least as long, with nothing after it.
    A MyST directive (```{name}, :::{name}) is parsed inside, so fences nest in
    it; a code block (```python) is literal text up to its closing fence."""
    stack: list[tuple[str, bool]] = []          # (marker, is a literal code block)
    for line in text.splitlines():
        m = FENCE.match(line)
        if not m:
            continue
        marker, rest = m.groups()
        if stack and marker[0] == stack[-1][0][0] and len(marker) >= len(stack[-1][0]) \
                and not rest.strip():
            stack.pop()
        elif not (stack and stack[-1][1]):
            stack.append((marker, not rest.strip().startswith("{")))
    return [marker for marker, _ in stack]


def source_headings(path) -> list[tuple[int, str]]:
    """(level, text) of every markdown heading outside fenced blocks."""
    out = []
    for cell in markdown_cells(path):
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            h = re.match(r"^(#{1,6})\s+(.*)$", line)
            if h and not open_fences("\n".join(lines[:i])):
                out.append((len(h.group(1)), h.group(2)))
    return out


def normalise(text: str) -> str:
    """Heading text as source and page both show it: no math delimiters,
    emphasis or backticks, and the typographic quotes Sphinx puts in."""
    text = text.translate(str.maketrans("’‘“”", "''\"\""))
    text = re.sub(r"\\\(|\\\)|[$*`]", "", text)
    return " ".join(text.replace("#", "").split())


# --- sources ---------------------------------------------------------------

def test_fence_checker_finds_the_kind_of_slip_chapter_1_had():
    slip = "````{solution} x\n```python\ncode\n```\nprose\n```\n\n## Next\n"
    assert open_fences(slip)[0] == "````"        # the solution never closes
    fixed = slip.replace("prose\n```\n", "prose\n````\n")
    assert open_fences(fixed) == []
    assert open_fences(":::{note}\ntext\n:::\n```{exercise}\n:label: a\n```\n") == []


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_fence_in_a_chapter_is_closed(path):
    for cell in markdown_cells(path):
        left = open_fences(cell.source)
        assert not left, f"{path.name}, cell {cell.get('id')}: fence {left} never closed"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_code_cell_carries_markdown_as_comments(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        heading = re.search(r"^#\s*#{1,6}\s+\S.*$", cell.source, re.M)
        assert not heading, (f"{path.name}, cell {cell.get('id')}: a markdown heading as a "
                             f"comment: {heading.group(0)!r}")


def glue_only(statements) -> bool:
    for s in statements:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) \
                and getattr(s.value.func, "id", None) == "glue":
            continue
        if isinstance(s, ast.For) and not s.orelse and glue_only(s.body):
            continue
        return False
    return True


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_removed_cells_only_glue_numbers(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if is_removed(cell):
            assert glue_only(ast.parse(cell.source).body), (
                f"{path.name}, cell {cell.get('id')} is hidden from the reader but does "
                f"more than glue; move the computation to a visible cell:\n{cell.source}")


def test_a_visible_cell_using_a_name_from_a_removed_cell_fails(tmp_path):
    nb = nbformat.v4.new_notebook()
    hidden = nbformat.v4.new_code_cell("secret = 42")
    hidden.metadata["tags"] = ["remove-cell"]
    nb.cells = [hidden, nbformat.v4.new_code_cell("secret + 1")]
    with pytest.raises(Exception, match="NameError"):
        run(nb, "scratch.ipynb", tmp_path)


# --- claims -----------------------------------------------------------------

COMPARISON = re.compile(
    r"\b(closer|nearer|farther|faster|slower|more than|less than|larger than|smaller than|"
    r"bigger than|higher than|lower than|better than|worse than|most (of the )?weight|"
    r"dominat\w*|orders? of magnitude|times (faster|slower|larger|smaller))\b", re.I)

#: Paragraphs with a comparison but no glued number: where each is checked.
#: Key: (chapter, a phrase of the paragraph); value: the test that asserts it,
#: or "not data: ..." for a comparison that rests on no measurement.
CHECKED_ELSEWHERE = {
    ("13_attention_that_learns", "each key scores itself higher than any other key"):
        "test_part4_learning.py::test_ch13_each_key_scores_itself_highest",
    ("02_soft_lookup", "more than any stored value"): "test_part1.py::test_ch2_exercise_answers",
    ("04_softmax_attention", "matters more than it looks"): "not data: a turn of phrase",
    ("05_scaling", "keep their order of magnitude"):
        "not data: what d2l v1.0.3 writes as its reason for the division",
    ("09_scoring_and_masks", "dot products are much faster in practice"):
        "not data: the Transformer paper's report, cited there",
    ("15_tiny_language_model", "counts more than a token of a long one"):
        "not data: algebra, a token's weight is one over its sentence's length",
}


def comparison_paragraphs():
    for path in CHAPTERS:
        for cell in markdown_cells(path):
            for para in re.split(r"\n\s*\n", cell.source):
                if COMPARISON.search(para) and "{glue" not in para:
                    yield path.stem, " ".join(para.split())


def test_every_comparison_in_the_prose_is_glued_or_checked_by_a_named_test():
    unchecked = []
    used = set()
    for chapter, para in comparison_paragraphs():
        keys = [k for k in CHECKED_ELSEWHERE if k[0] == chapter and k[1] in para]
        if not keys:
            unchecked.append(f"{chapter}: {para[:160]}")
        used.update(keys)
    assert not unchecked, ("comparisons with no glued number and no test named in "
                           "CHECKED_ELSEWHERE:\n" + "\n".join(unchecked))
    assert not set(CHECKED_ELSEWHERE) - used, \
        f"stale entries: {set(CHECKED_ELSEWHERE) - used}"
    for where in CHECKED_ELSEWHERE.values():
        if where.startswith("not data"):
            continue
        file, test = where.split("::")
        assert f"def {test}(" in (ROOT / "tests" / file).read_text(), f"no test {where}"


# --- the built pages -------------------------------------------------------

def soup(built_book, stem):
    """The built page, each typeset formula replaced by its TeX source (which
    KaTeX keeps in the formula's MathML annotation)."""
    from bs4 import BeautifulSoup
    page = BeautifulSoup((built_book / "chapters" / f"{stem}.html").read_text(encoding="utf-8"),
                         "html.parser")
    for formula in page.select(".katex"):
        tex = formula.select_one('annotation[encoding="application/x-tex"]')
        formula.replace_with(tex.get_text() if tex else formula.get_text())
    return page


@pytest.mark.book
@pytest.mark.slow
@pytest.mark.xdist_group("book")
@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_source_heading_is_a_heading_of_the_page_and_in_its_contents(built_book, path):
    page = soup(built_book, path.stem)
    article = page.select_one("article.bd-article")
    built = [normalise(h.get_text()) for h in article.find_all(re.compile(r"^h[1-6]$"))]
    contents = [normalise(a.get_text()) for a in page.select("#jb-print-toc nav a")]
    for level, text in source_headings(path):
        assert normalise(text) in built, f"{path.name}: heading {text!r} is not on the page"
        if level in (2, 3):
            assert normalise(text) in contents, f"{path.name}: {text!r} not in the contents"


@pytest.mark.book
@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_no_built_page_shows_a_stray_fence(built_book):
    from bs4 import BeautifulSoup
    for path in CHAPTERS:
        article = soup(built_book, path.stem).select_one("article.bd-article")
        for pre in article.find_all("pre"):
            stray = [ln for ln in pre.get_text().splitlines()
                     if re.match(r"^\s*(`{3,}|:{3,})", ln) or re.match(r"^#{2,6} \w", ln)]
            assert not stray, f"{path.name}: markdown shown as code: {stray}"
        text = BeautifulSoup(str(article), "html.parser")
        for pre in text.find_all("pre"):
            pre.decompose()
        assert "```" not in text.get_text(), f"{path.name}: a fence is shown as text"


@pytest.mark.book
@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_every_image_has_alt_text_that_describes_it(built_book):
    from bs4 import BeautifulSoup
    bad = []
    for name in toc_files():
        page = built_book / f"{name}.html"
        for img in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find_all("img"):
            alt, src = (img.get("alt") or "").strip(), img.get("src", "")
            looks_like_a_path = (alt == src or "_images/" in alt
                                 or re.search(r"\.(png|jpe?g|svg|gif)$", alt, re.I))
            if len(alt.split()) < 4 or looks_like_a_path:
                bad.append(f"{name}: {src[:60]} alt={alt[:80]!r}")
    assert not bad, "images without a real description:\n" + "\n".join(bad[:40])


# --- numbers typed by hand -------------------------------------------------

#: A decimal number (3.775, 0.750, 3e-4) in what a reader reads: the prose,
#: and the comments of code blocks in solutions (where answers get printed).
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?:[eE][−-]?\d+)?(?!\w)|(?<![\w.])\d+[eE][−-]?\d+(?!\w)")
ROLE_OR_CODE = re.compile(r"\{[\w:-]+\}`[^`]*`|`[^`]*`")

#: Chapters whose literals are not checked (none).
LITERALS_SKIPPED: set[str] = set()

#: Numbers typed by hand on purpose. Key: (chapter, the number as written);
#: value: why it is not glued. Anything computed from the book's data and
#: quoted as a result must be glued instead.
TYPED_ON_PURPOSE = {
    **{("14_the_whole_block", n): "the comment of Exercise 42's solution code, "
       "the pen-and-paper answer in MiB; a hidden cell of the chapter asserts it"
       for n in ("2048.0", "512.0", "64.0")},
    **{("02_soft_lookup", n): "input: the weights an exercise hands the reader"
       for n in ("0.5", "0.2", "0.6", "1.5")},
    **{("02_soft_lookup", n): "pen-and-paper answer from the exercise's inputs; "
       "test_part1.py::test_ch2_exercise_answers recomputes it" for n in ("7.5", "4.2", "2.5")},
    ("02_soft_lookup", "8.0"): "the comment of a solution's code; "
    "test_part1.py::test_ch2_soft_lookup_of_fruit_is_8_and_uniform_is_the_mean",
    **{("02_soft_lookup", n): "a floating-point example: these literals are the point"
       for n in ("0.4", "0.0", "0.7", "0.1", "0.9999999999999999")},
    **{("03_word_vectors", n): "pen-and-paper answer from the vectors the exercise quotes; "
       "test_part1.py::test_ch3_exercise_answers"
       for n in ("0.5", "0.7", "1.0", "1.8", "0.35", "2.15", "0.3", "2.0", "0.15")},
    ("04_softmax_attention", "2.1"): "input: the source's example scores [4, −1, 2.1]",
    ("04_softmax_attention", "1.8"): "a constant: float64's largest value, about 1.8e308",
    ("04_softmax_attention", "0.01"): "input: a temperature the reader sets",
    **{("04_softmax_attention", n): "input: the vegetable vector the solution quotes"
       for n in ("0.5", "1.0")},
    **{("04_softmax_attention", n): "pen-and-paper answer, softmax([1, 0]) and "
       "softmax([1, 0, 0]); test_part1.py::test_ch4_exercise_answers"
       for n in ("0.731", "0.269", "0.576", "0.212")},
    **{("05_scaling", n): "quoted from the source, to show its truncation"
       for n in ("0.665", "0.244", "0.090")},
    ("05_scaling", "0.5"): "input: the mean μ of the entries",
    **{("06_many_queries", n): "the article's published outputs, which the reconstruction "
       "must reproduce; test_part2.py::"
       "test_ch6_departments_reconstruction_reproduces_the_published_outputs"
       for n in ("6.9", "7.5", "10.1", "8.3", "8.7", "7.3")},
    **{("07_self_attention", n): "quoted from the source article, to show its rounding"
       for n in ("0.97", "0.02", "0.01", "0.90", "0.05", "0.0", "0.5", "2.0", "7.0", "1.5")},
    **{("08_kernel_regression", n): "input: the data's formula and noise, and the "
       "learning rate" for n in ("0.8", "0.5")},
    **{("08_kernel_regression", n): "1/5 and 1/3, the bandwidths of the stated range of w; "
       "test_part3.py::test_nw_width_learned_with_leave_one_out_is_stable_and_without_it_grows"
       for n in ("0.2", "0.33")},
    ("09_scoring_and_masks", "2.5"): "a version number of torch",
    ("09_scoring_and_masks", "0.5"): "input: the dropout probability",
    ("09_scoring_and_masks", "3e-4"): "the comment of a solution's code; "
    "test_part3.py::test_ch9_exercise_float16_mask_solution",
    ("12_attention_layer", "5.24"): "a version number of transformers, the "
    "pinned one (requirements.txt; tests/test_gpt2.py checks the pin)",
    ("11_positions", "6.28"): "a constant: 2π",
    **{("15_tiny_language_model", n): "input: a sampling temperature the chapter chooses"
       for n in ("0.25", "0.5", "1.5")},
    ("16_induction_head", "0.5"): "a threshold the text chooses (an induction score above "
    "it counts as an induction head); test_induction.py::test_ch16_comparisons_the_prose_makes",
}


def readable_text(source: str):
    """The lines of a markdown cell a reader reads numbers in: prose outside
    code blocks (inline code and roles such as glue removed; directive
    options skipped), and the comments of literal code blocks."""
    stack: list[tuple[str, bool]] = []
    for line in source.splitlines():
        m = FENCE.match(line)
        if m:
            marker, rest = m.groups()
            if stack and marker[0] == stack[-1][0][0] and len(marker) >= len(stack[-1][0]) \
                    and not rest.strip():
                stack.pop()
                continue
            if not (stack and stack[-1][1]):
                stack.append((marker, not rest.strip().startswith("{")))
                continue
        if stack and stack[-1][1]:
            yield line.split("#", 1)[1] if "#" in line else ""
        elif not line.lstrip().startswith(":"):
            yield ROLE_OR_CODE.sub(" ", line)


def test_literal_finder_catches_the_kind_of_number_that_slipped_in():
    cell = ("The product grows from 0.755 to 3.775, {glue:text}`x:.2f` is glued, "
            "`np.array([0.6])` is code.\n```python\nf(2.5)  # about 3e-4\n```\n")
    found = [n for line in readable_text(cell) for n in DECIMAL.findall(line)]
    assert found == ["0.755", "3.775", "3e-4"]


def test_every_typed_number_in_prose_and_solutions_is_glued_or_listed_with_a_reason():
    unlisted, used = [], set()
    for path in CHAPTERS:
        if path.stem in LITERALS_SKIPPED:
            continue
        for cell in markdown_cells(path):
            for line in readable_text(cell.source):
                for number in DECIMAL.findall(line):
                    key = (path.stem, number.replace("−", "-"))
                    if key in TYPED_ON_PURPOSE:
                        used.add(key)
                    else:
                        unlisted.append(f"{path.stem}: {number} in {line.strip()[:100]!r}")
    assert not unlisted, ("numbers typed by hand: glue them, or list them in "
                          "TYPED_ON_PURPOSE with a reason:\n" + "\n".join(unlisted))
    assert not set(TYPED_ON_PURPOSE) - used, f"stale entries: {set(TYPED_ON_PURPOSE) - used}"
    for reason in TYPED_ON_PURPOSE.values():
        for file, test in re.findall(r"(test_\w+\.py)::(\w+)", reason):
            assert f"def {test}(" in (ROOT / "tests" / file).read_text(), f"no test {file}::{test}"
