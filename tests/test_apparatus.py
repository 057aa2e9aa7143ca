"""The reader's apparatus: glossary, notation, bibliography, API reference,
notebook downloads and the CI workflow for a public host."""
from __future__ import annotations

import html
import importlib
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from tools.glossary.terms import (
    chapter_cells,
    chinese_table,
    chinese_table_rows,
    english_context,
    first_uses,
    glossary_entries,
    pinyin_key,
    term_pattern,
)
from tools.project import ROOT, book_config, chapter_notebooks, toc_files

SEEDS = ROOT.parent / "shared" / "seeds"
API_MODULES = ["core", "kernel", "scoring", "positions", "blockwise", "analysis", "multihead",
               "nn", "layer", "transformer", "optim", "learn", "language", "lm", "induction", "plots",
               "figure_text", "explorers", "examples", "bugs", "glue"]
ENTRIES = glossary_entries()
TERMS = [e.term for e in ENTRIES]


# --- glossary -------------------------------------------------------------

def test_every_glossary_entry_gives_its_chinese_term_pinyin_and_chapter():
    assert len(ENTRIES) >= 30
    for e in ENTRIES:
        assert e.chinese, f"glossary entry {e.term!r} has no **中文** *pinyin*"
        assert e.chapter, f"glossary entry {e.term!r} does not say where it is introduced"
        assert (ROOT / f"{e.chapter}.ipynb").is_file(), f"{e.term!r}: no chapter {e.chapter}"


def test_glossary_covers_the_terms_the_issue_lists():
    required = {"query": "查询", "key": "键", "value": "值", "attention score": "注意力分数",
                "attention weight": "注意力权重", "attention pooling": "注意力汇聚",
                "scaled dot-product attention": "缩放点积注意力", "self-attention": "自注意力",
                "masked softmax": "掩蔽 softmax", "additive attention": "加性注意力",
                "kernel regression": "核回归"}
    by_term = {e.term: e for e in ENTRIES}
    for term, zh in required.items():
        assert term in by_term, f"the glossary has no entry {term!r}"
        assert any(zh in c for c, _, _ in by_term[term].chinese), (term, by_term[term].chinese)


def test_glossary_entries_are_in_alphabetical_order():
    # case aside; a space or hyphen sorts before any letter ("key" before "key–value pair")
    def key(term: str) -> str:
        return term.casefold().replace("–", "-")
    assert TERMS == sorted(TERMS, key=key), [
        (a, b) for a, b in zip(TERMS, TERMS[1:], strict=False) if key(a) > key(b)]


def test_chinese_table_lists_every_glossary_term_sorted_by_pinyin():
    rows = chinese_table()
    table = {(zh.rstrip("†"), pinyin, term) for zh, pinyin, term in rows}
    glossary = {(zh, pinyin, e.term) for e in ENTRIES for zh, pinyin, _ in e.chinese}
    assert table == glossary, (f"only in the table: {table - glossary}; "
                               f"only in the glossary: {glossary - table}")
    keys = [pinyin_key(p) for _, p, _ in rows]
    assert keys == sorted(keys), "the 中文 → English table is not in pinyin order"


def test_chinese_table_gives_each_chinese_term_its_own_english():
    """The 中文 → English table against the entries: a row shows the English
    that its Chinese term translates, not only the entry it belongs to
    (非自主性提示 is a non-volitional cue, 带参数的注意力汇聚 is *parametric*
    attention pooling, in the entries of attention cue and nonparametric
    attention pooling). An entry's own Chinese term shows the entry's term;
    another shows the words the entry writes just before it."""
    entries = {e.term: e for e in ENTRIES}
    wrong = []
    for zh, _, label, target in chinese_table_rows():
        entry, zh = entries[target], zh.rstrip("†")
        context = english_context(entry, zh)
        if context is None and label != entry.term:
            wrong.append(f"{zh}: shows {label!r}, names the entry {entry.term!r} itself")
        elif context is not None and (label == entry.term
                                      or not context.lower().endswith(label.lower())):
            wrong.append(f"{zh}: shows {label!r}, the entry {entry.term!r} writes "
                         f"'…{context[-40:]}' before it")
    assert not wrong, "\n".join(wrong)


def test_english_context_reads_the_entries():
    by_term = {e.term: e for e in ENTRIES}
    assert english_context(by_term["attention cue"], "注意力提示") is None
    assert english_context(by_term["attention cue"], "非自主性提示").endswith(
        "A non-volitional cue")
    assert english_context(by_term["mask"], "掩蔽") is None       # another name
    assert english_context(by_term["pre-LN"], "后置层归一化").endswith("post-LN")


def test_chinese_terms_without_a_dagger_are_the_source_articles_own():
    if not SEEDS.is_dir():
        pytest.skip(f"the source articles are not beside the checkout ({SEEDS})")
    text = "".join(p.read_text(encoding="utf-8") for p in SEEDS.glob("*.txt"))
    missing = [(e.term, zh) for e in ENTRIES for zh, _, in_sources in e.chinese
               if in_sources and zh.replace(" ", "") not in text]
    assert not missing, f"marked as the sources' term but not found in them: {missing}"


def test_every_chapter_links_the_first_use_of_each_glossary_term():
    problems = []
    for nb in chapter_notebooks():
        for term, use in first_uses(chapter_cells(nb), TERMS).items():
            if not use.linked:
                problems.append(f"{nb.name}: first use of {term!r} is not a link: ...{use.excerpt}...")
    assert not problems, ("\n".join(problems) + "\n(run `python -m tools.glossary` to see "
                          "them, and `--write` to link them)")


def test_each_glossary_entry_is_linked_from_the_chapter_it_names():
    for e in ENTRIES:
        cells = chapter_cells(ROOT / f"{e.chapter}.ipynb")
        use = first_uses(cells, TERMS).get(e.term.lower())
        assert use is not None and use.linked, \
            f"glossary says {e.term!r} is introduced in {e.chapter}, which never links it"


#: how an entry names an earlier chapter that uses its term before the one
#: that introduces it: "Chapter 10 uses the term first", "(chapter 3 names it
#: first, in passing)", "{doc}`chapters/05_scaling` names them first"
EARLIER = re.compile(r"[Cc]hapter (\d+) (?:uses the term|names (?:it|them)) first"
                     r"|\{doc\}`chapters/(\d+)_[^`]*` names (?:it|them) first")


def test_each_glossary_entry_names_the_first_chapter_that_uses_its_term():
    """zh round 9, W2: "Introduced in" names the chapter that explains a
    term; when an earlier chapter already uses it (chapter 1 says "softmax"
    before chapter 4 defines it), the entry says so, and the chapter it names
    as first is no later than the first use the glossary checker finds."""
    first: dict[str, int] = {}
    for nb in chapter_notebooks():
        for term in first_uses(chapter_cells(nb), TERMS):
            first.setdefault(term, int(nb.name[:2]))
    problems = []
    for e in ENTRIES:
        named = int(e.chapter.split("/")[1][:2])
        said = [int(a or b) for a, b in EARLIER.findall(e.definition)]
        used = first.get(e.term.lower(), named)
        if used < named and not (said and min(said) <= used):
            problems.append(f"{e.term!r}: introduced in {named}, but chapter {used} uses it first")
        if said and min(said) >= named:
            problems.append(f"{e.term!r}: says chapter {min(said)} uses it first, "
                            f"not before {named}")
    assert not problems, problems


def test_first_use_checker_ignores_headings_code_math_and_quotes_but_not_prose():
    cells = ["# Queries and keys\n\nA `query` in code, $q$ in math, a \"key\" quoted.\n",
             "Now the {term}`keys <key>` and the queries.\n\nMore queries.",
             "```python\nvalue = 1\n```\nA value."]
    uses = first_uses(cells, ["query", "key", "value"])
    assert uses["key"].linked and uses["key"].cell == 1
    assert not uses["query"].linked and uses["query"].cell == 1
    assert cells[1][uses["query"].start:uses["query"].end] == "queries"
    assert not uses["value"].linked and uses["value"].cell == 2
    assert term_pattern("scaled dot-product attention").fullmatch("Scaled dot product\nattention")
    longer = first_uses(["the scaled dot-product attention"], ["dot product",
                                                               "scaled dot-product attention"])
    assert list(longer) == ["scaled dot-product attention"]


@pytest.mark.book
@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_every_glossary_term_is_linked_from_at_least_one_built_chapter(built_book):
    glossary = (built_book / "glossary.html").read_text(encoding="utf-8")
    anchors = re.findall(r'<dt id="(term-[^"]+)"', glossary)
    assert len(anchors) == len(ENTRIES), (len(anchors), len(ENTRIES))
    pages = "".join(p.read_text(encoding="utf-8") for p in (built_book / "chapters").glob("*.html"))
    unlinked = [a for a in anchors if f'glossary.html#{a}"' not in pages]
    assert not unlinked, f"glossary terms no chapter links to: {unlinked}"


# --- notation -------------------------------------------------------------

def _public_callables():
    """Every function and class of every module's __all__, once: a name that a
    module re-exports from another documented module (attnbook.nn.TinyGPT) is
    documented and checked at home (attnbook.transformer.TinyGPT)."""
    for name in API_MODULES:
        module = importlib.import_module(f"attnbook.{name}")
        for attr in module.__all__:
            obj = getattr(module, attr)
            home = getattr(obj, "__module__", "").removeprefix("attnbook.")
            if home != name and home in API_MODULES and attr in importlib.import_module(
                    f"attnbook.{home}").__all__:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                yield f"attnbook.{name}.{attr}", obj


def test_every_dimension_name_in_a_docstring_shape_is_in_the_notation_page():
    notation = (ROOT / "notation.md").read_text(encoding="utf-8")
    in_table = set(re.findall(r"`(\w+)`", notation))
    unknown = {}
    for qualname, obj in _public_callables():
        for shape in re.findall(r"\(([^()]*)\)", inspect.getdoc(obj) or ""):
            parts = [p.strip() for p in shape.split(",")]
            if not parts or not all(re.fullmatch(r"\.\.\.|\d+|[nd]_\w+|h|n", p)
                                    for p in parts if p):
                continue              # not a shape tuple
            for p in parts:
                if re.fullmatch(r"[nd]_\w+|h|n", p) and p not in in_table:
                    unknown.setdefault(p, qualname)
    assert not unknown, f"shape names missing from notation.md (name: first docstring): {unknown}"


# --- bibliography ---------------------------------------------------------

def _sources() -> str:
    texts = [(ROOT / f"{name}.md").read_text(encoding="utf-8") for name in toc_files()
             if (ROOT / f"{name}.md").is_file()]
    texts += ["\n".join(chapter_cells(nb)) for nb in chapter_notebooks()]
    return "\n".join(texts)


def test_every_bibliography_entry_is_cited_somewhere_and_every_citation_exists():
    bib = set(re.findall(r"@\w+\{([^,]+),", (ROOT / "references.bib").read_text()))
    cited = {key.strip() for group in re.findall(r"\{cite[:a-z]*\}`([^`]+)`", _sources())
             for key in group.split(",")}
    for key in ["vaswani2017attention", "bahdanau2015neural", "nadaraya1964estimating",
                "watson1964smooth", "mody2022intuition", "karim2019illustrated", "zhang2023d2l"]:
        assert key in bib, f"references.bib lacks {key}"
    assert not bib - cited, f"never cited: {sorted(bib - cited)}"
    assert not cited - bib, f"cited but not in references.bib: {sorted(cited - bib)}"


def _mini_book(tmp_path: Path, page: str) -> subprocess.CompletedProcess:
    """Build a one-page book with the project's own _config.yml (static paths
    dropped, local extensions made absolute) and the strict flags."""
    config = book_config()
    config["sphinx"]["config"]["html_static_path"] = []
    tmp_path.mkdir()
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: index\n")
    (tmp_path / "references.bib").write_text((ROOT / "references.bib").read_text())
    (tmp_path / "index.md").write_text(page)
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(tmp_path), "-W", "-n", "--keep-going"],
                          cwd=tmp_path, capture_output=True, text=True)


@pytest.mark.slow
def test_an_unknown_citation_key_fails_the_strict_build(tmp_path):
    good = _mini_book(tmp_path / "good", "# Page\n\nSee {cite}`vaswani2017attention`.\n\n"
                      "```{bibliography}\n```\n")
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    bad = _mini_book(tmp_path / "bad", "# Page\n\nSee {cite}`nosuchkey2099`.\n\n"
                     "```{bibliography}\n```\n")
    assert bad.returncode != 0
    assert "nosuchkey2099" in bad.stdout + bad.stderr


# --- API reference --------------------------------------------------------

def test_api_page_documents_every_attnbook_module():
    api = (ROOT / "api.md").read_text()
    modules = {p.stem for p in (ROOT / "attnbook").glob("*.py")} | {
        p.parent.name for p in (ROOT / "attnbook").glob("*/__init__.py")}
    modules = {m for m in modules if not m.startswith("_")}
    assert modules == set(API_MODULES)
    for name in API_MODULES:
        assert f".. automodule:: attnbook.{name}\n   :members:" in api, name


def test_the_constants_a_docstring_names_have_the_values_it_gives():
    """The API page has no entry for a module's constants, so the docstrings
    that name one give its value; a changed constant must change them."""
    import importlib
    doc = {"figure_text": ("CATALOGUE_ENV", "SLOT", "TRANSLATED_PNG", "METADATA_KEY"),
           "plots": ("MAX_TICKS", "ANNOTATE_MAX_CELLS", "ANNOTATE_LIMIT"),
           "explorers.png": ("DPI",)}
    text = "\n".join((ROOT / "attnbook" / f"{m.replace('.', '/')}.py").read_text()
                     for m in doc)
    text += (ROOT / "attnbook" / "explorers" / "__init__.py").read_text()
    text += (ROOT / "attnbook" / "explorers" / "explorer.py").read_text()
    for module, names in doc.items():
        mod = importlib.import_module(f"attnbook.{module}")
        for name in names:
            value = getattr(mod, name)
            shown = ({f"{value:,}", f"{value} dpi"} if isinstance(value, int)
                     else {f'``"{value}"``', f"``{value}``"})
            assert any(s in text for s in shown), (module, name, shown)


def test_every_documented_module_is_an_attribute_of_the_package():
    """api.md documents `attnbook.<name>`; a reader who types it must get the module."""
    code = ("import attnbook, sys; "
            f"missing = [n for n in {API_MODULES!r} if getattr(attnbook, n).__name__ != "
            "'attnbook.' + n]; print(missing); sys.exit(bool(missing))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_public_function_and_class_has_a_docstring():
    missing = [q for q, obj in _public_callables() if not (inspect.getdoc(obj) or "").strip()]
    assert not missing, f"no docstring: {missing}"


def _numpy_docstring_problems(obj) -> list[str]:
    """What the house docstring convention (CONTRIBUTING.md) finds missing in obj's
    docstring: NumPy-style Parameters and Returns sections (classes: Parameters,
    unless the constructor takes no argument) and a :doc: link to the chapter
    that teaches it, which must be an existing chapter notebook."""
    doc = inspect.getdoc(obj) or ""
    sections = ["Parameters"] if inspect.isclass(obj) else ["Parameters", "Returns"]
    if inspect.isclass(obj) and not inspect.signature(obj).parameters:
        sections = []
    # a generator or context manager documents what it yields (numpydoc's Yields)
    problems = [f"no {name} section" for name in sections
                if not re.search(rf"^{name}\n-{{{len(name)}}}$", doc, re.M)
                and not (name == "Returns" and re.search(r"^Yields\n-{6}$", doc, re.M))]
    chapters = re.findall(r":doc:`/chapters/([^`]+)`", doc)
    if not chapters:
        problems.append("names no chapter (:doc:`/chapters/<notebook>`)")
    problems += [f"names {c}, which is not a chapter" for c in chapters
                 if not (ROOT / "chapters" / f"{c}.ipynb").is_file()]
    return problems


#: Modules no chapter teaches: the build's machinery, documented on the API
#: page for maintainers (figure_text draws the Chinese edition's figures).
NOT_TAUGHT = {"figure_text"}


@pytest.mark.parametrize("module", API_MODULES)
def test_every_public_callable_has_a_numpy_docstring_naming_its_chapter(module):
    problems = {qualname: p for qualname, obj in _public_callables()
                if qualname.startswith(f"attnbook.{module}.")
                and (p := [x for x in _numpy_docstring_problems(obj)
                           if not (module in NOT_TAUGHT and x.startswith("names no chapter"))])}
    assert not problems, f"docstrings off the convention: {problems}"


def test_the_docstring_check_catches_a_house_style_docstring_and_a_wrong_chapter():
    def house_style(q, k):
        """Attend. Taught in chapter 4.

        q: (n_q, d_k); k: (n_k, d_k)
        returns weights (n_q, n_k)
        """

    def wrong_chapter(q):
        """Attend.

        Taught in :doc:`/chapters/04_softmax` (chapter 4).

        Parameters
        ----------
        q : array_like, shape (n_q, d_k)

        Returns
        -------
        ndarray, shape (n_q,)
        """

    assert _numpy_docstring_problems(house_style) == [
        "no Parameters section", "no Returns section",
        "names no chapter (:doc:`/chapters/<notebook>`)"]
    assert _numpy_docstring_problems(wrong_chapter) == [
        "names 04_softmax, which is not a chapter"]


@pytest.mark.book
@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_every_public_function_appears_in_the_built_api_reference_with_its_docstring(built_book):
    api = (built_book / "api.html").read_text(encoding="utf-8")
    text = "".join(html.unescape(re.sub(r"<[^>]+>", " ", api)).split())
    absent, undocumented = [], []
    for qualname, obj in _public_callables():
        if f'id="{qualname}"' not in api:
            absent.append(qualname)
            continue
        signature = re.search(rf'id="{re.escape(qualname)}">(.*?)</dt>', api, re.S)
        shown = re.sub(r"<[^>]+>", "", signature.group(1)) if signature else ""
        params = [n if p.default is p.empty else f"{n}="
                  for n, p in inspect.signature(obj).parameters.items() if n != "self"]
        if not all(re.search(rf"(?<![\w=]){n}" + ("" if n.endswith("=") else r"\b"), shown)
                   for n in params):
            absent.append(f"{qualname} (signature shown: {shown.strip()!r}, expected {params})")
        summary = inspect.getdoc(obj).splitlines()[0]
        words = " ".join(summary.replace("`", "").split()[:4])
        if "".join(words.split()) not in text.replace("\u2019", "'"):
            undocumented.append((qualname, words))
    assert not absent, f"not in api.html: {absent}"
    assert not undocumented, f"docstring summary not shown: {undocumented}"
    # the Chinese edition keeps the docstrings in English: same signatures
    zh = (built_book / "zh" / "api.html").read_text(encoding="utf-8")
    for qualname, _ in _public_callables():
        shown = re.search(rf'id="{re.escape(qualname)}">(.*?)</dt>', zh, re.S)
        english = re.search(rf'id="{re.escape(qualname)}">(.*?)</dt>', api, re.S)
        assert shown and re.sub(r"<[^>]+>", "", shown.group(1)) == re.sub(
            r"<[^>]+>", "", english.group(1)), f"zh/api.html: signature of {qualname}"


# --- downloads ------------------------------------------------------------

@pytest.mark.book
@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_each_chapter_page_offers_its_own_notebook_for_download(built_book):
    for nb in chapter_notebooks():
        page = (built_book / "chapters" / f"{nb.stem}.html").read_text(encoding="utf-8")
        links = re.findall(r'<a href="([^"]+\.ipynb)" download="([^"]+)"', page)
        assert links, f"{nb.stem}.html has no download link for a notebook"
        href, filename = links[0]
        assert filename == nb.name
        served = (built_book / "chapters" / href).resolve()
        downloaded = nbformat.read(served, as_version=4)
        nbformat.validate(downloaded)
        code = [c.source for c in downloaded.cells if c.cell_type == "code"]
        assert code == [c.source for c in nbformat.read(nb, as_version=4).cells
                        if c.cell_type == "code"], f"{href} is not {nb.name}"


@pytest.mark.book
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.xdist_group("book")
def test_download_button_saves_the_notebook_in_chromium(built_book, book_server, browser):
    nb = chapter_notebooks()[1]
    page = browser.new_page(accept_downloads=True)
    page.goto(f"{book_server}/chapters/{nb.stem}.html")
    page.locator(".dropdown-download-buttons button.dropdown-toggle").click()
    with page.expect_download() as info:
        page.locator("a.btn-download-source-button").click()
    download = info.value
    assert download.suggested_filename == nb.name
    saved = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert saved["cells"][0]["source"] == json.loads(nb.read_text())["cells"][0]["source"]
    page.close()


# --- the CI workflow for a public host ------------------------------------

def test_github_workflow_is_valid_and_runs_the_ci_script_then_publishes_the_book():
    workflow = ROOT / ".github" / "workflows" / "book.yml"
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", str(workflow)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = yaml.safe_load(workflow.read_text())["jobs"]
    steps = jobs["test"]["steps"]
    assert any(s.get("run", "").strip() == "bash .ci/run" for s in steps)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert jobs["deploy"]["needs"] == "test"
    # every Python the README supports, and make (not the workflow) installs torch
    assert jobs["test"]["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    assert "3.11–3.13" in (ROOT / "README.md").read_text()
    assert not any("torch" in s.get("run", "") for s in steps)


def test_glue_without_myst_nb_is_a_no_op(monkeypatch):
    from attnbook.glue import glue
    monkeypatch.setitem(sys.modules, "myst_nb", None)     # import myst_nb now fails
    assert glue("x", 1.5) is None


def test_glue_writes_what_myst_nb_glue_writes(monkeypatch):
    """attnbook.glue.glue writes myst-nb's glue output itself (importing
    myst_nb.ext.glue costs a notebook seconds): the same display call."""
    import IPython.display
    import myst_nb.ext.glue
    import numpy as np

    from attnbook.glue import glue
    calls = []
    record = lambda *args, **kwargs: calls.append((args, kwargs))  # noqa: E731
    monkeypatch.setattr(IPython.display, "display", record)
    monkeypatch.setattr(myst_nb.ext.glue, "ipy_display", record)
    for value in (1.5, np.float64(0.25), "text", np.int64(3)):
        calls.clear()
        glue("x", value)
        myst_nb.ext.glue.glue("x", value.item() if isinstance(value, np.generic) else value,
                              display=False)
        assert len(calls) == 2 and calls[0] == calls[1], calls


def test_template_override_is_the_installed_themes_macros_without_what_delays_first_paint():
    """Without fontawesome.js, with basic.css instead of theme.css (its only
    rule imports basic.css), without preloads of the deferred scripts, and
    with the theme's two scripts handed to tools/sphinx/firstpaint.py's loader
    instead of <script defer>."""
    import pydata_sphinx_theme
    theme = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
             / "static" / "webpack-macros.html").read_text()
    ours = (ROOT / "_templates" / "static" / "webpack-macros.html").read_text()
    ours = re.sub(r"^\{#-.*?-#\}\n", "", ours, flags=re.S)
    assert "fontawesome.js" in theme and "fontawesome.js" not in ours
    # theme.css is only the import of basic.css, which ours links directly
    theme_css = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
                 / "static" / "styles" / "theme.css")
    imports = [line for line in theme_css.read_text().splitlines()
               if line.strip() and not line.startswith("/*")]
    assert imports == ['@import "../basic.css";'], imports
    theme = theme.replace("_static/styles/theme.css', 1) }}?digest=55c26ed414f5f8a31ebb",
                          "_static/basic.css', 1) }}")
    kept = [line for line in theme.splitlines()
            if "fontawesome.js" not in line and "custom icons" not in line
            and 'rel="preload" as="script"' not in line
            and "Pre-loaded scripts" not in line]
    # the theme's body_post: its two deferred scripts, which ours gives the loader
    post = kept.index("{% macro body_post() %}")
    theirs = re.findall(r"_static/scripts/[\w.-]+\.js', 1\) \}\}\?digest=\w+", "\n".join(kept[post:]))
    mine = re.findall(r"_static/scripts/[\w.-]+\.js', 1\) ~ \"\?digest=\w+", ours)
    assert [s.replace(" }}", "") for s in theirs] == [s.replace(' ~ "', "") for s in mine], (
        theirs, mine)
    ours_lines = ours.splitlines()
    assert ours_lines[:ours_lines.index("{% macro body_post() %}")] == kept[:post], (
        "the theme's macros changed: update _templates/static/")


# --- citation labels ------------------------------------------------------

def test_references_bib_years_are_plain_years():
    """A suffix typed into a year ("2020a") broke the alpha labels ("LJH+0a");
    tools/sphinx/citations.py adds the a/b instead."""
    years = re.findall(r"^\s*year\s*=\s*\{([^}]*)\}", (ROOT / "references.bib").read_text(), re.M)
    assert years and all(re.fullmatch(r"\d{4}", y) for y in years), years


def test_same_authors_and_year_get_a_and_b_in_text_and_references():
    import pybtex.plugin
    from pybtex.database import parse_file
    from sphinxcontrib.bibtex.plugin import find_plugin

    from tools.sphinx.citations import year_suffixes
    entries = parse_file(ROOT / "references.bib").entries
    reference = find_plugin("sphinxcontrib.bibtex.style.referencing", "author_year")()
    bibliography = pybtex.plugin.find_plugin("pybtex.style.formatting", "alpha")()
    years = year_suffixes(entries.values(), reference, bibliography)
    assert years["liu2020variance"] == "2020a" and years["liu2020understanding"] == "2020b"
    assert years["zhang2022d2l017"] == "2022a" and years["zhang2022d2lzh"] == "2022b"
    assert "zhang2023d2l" not in years and "vaswani2017attention" not in years


@pytest.mark.parametrize("edition", ["en", "zh"])
def test_built_citations_are_unique_and_labels_end_in_a_two_digit_year(built_book, edition):
    """Every label of the references page is alpha style ending in the
    year's last two digits ("LJH+20", not "LJH+0a"); no in-text citation
    text ("Liu et al., 2020a") links to two different works."""
    root = built_book / ("zh" if edition == "zh" else "")
    refs = (root / "references.html").read_text()
    labels = [re.sub(r"<[^>]+>", "", lab) for lab in re.findall(
        r'<span class="label"><span class="fn-bracket">\[</span>(.*?)'
        r'<span class="fn-bracket">\]</span>', refs)]
    assert len(labels) > 10, "no labels found on references.html"
    # no digits at all for a work without a year (Karim's translation: "Kar")
    bad = [lab for lab in labels if not re.fullmatch(r"\D+(\d\d[a-z]?)?", lab)]
    assert not bad, bad
    texts: dict[str, set[str]] = {}
    for page in [root / "references.html", *sorted((root / "chapters").glob("*.html"))]:
        for href, text in re.findall(r'href="[^"]*references\.html(#id[^"]+)"[^>]*>(.*?)</a>',
                                     page.read_text()):
            texts.setdefault(re.sub(r"<[^>]+>", "", text), set()).add(href)
    # author and year in one link (a textual citation links the year alone)
    shared = {t: h for t, h in texts.items()
              if len(h) > 1 and re.search(r"[^\W\d]{2}", t) and re.search(r"\d{4}", t)}
    assert not shared, shared
def test_layout_override_drops_only_the_search_scripts_of_the_themes_extrahead():
    """_templates/layout.html replaces pydata-sphinx-theme's extrahead block by
    the same block without searchtools.js, language_data.js and searchindex.js
    on every page (issue 39); search.html loads them in its own block."""
    import pydata_sphinx_theme
    folder = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    theirs = re.search(r"\{%- block extrahead %\}(.*?)\{%- endblock extrahead %\}",
                       (folder / "layout.html").read_text(), re.S).group(1)
    ours = re.search(r"\{%- block extrahead %\}(.*?)\{%- endblock extrahead %\}",
                     (ROOT / "_templates" / "layout.html").read_text(), re.S).group(1)
    search = re.search(r"\s*\{% if pagename == 'search' %\}.*?\{% endif %\}", theirs, re.S)
    assert search and "searchindex.js" in search.group(0), "the theme's extrahead changed"
    assert ours.rstrip() == (theirs[:search.start()] + theirs[search.end():]).rstrip(), \
        "the theme's extrahead changed: update _templates/layout.html"
    assert "searchindex.js" in (folder / "search.html").read_text()
