"""Claims one page makes about other pages, checked against those pages.

Each test here was written after a reader found a page that described the
rest of the book as it once was:

- the introduction's arc stopped at chapter 14 (chapters 15 and 16 had been
  added since) and described a chapter by a choice it does not make;
- running.md listed the chapters that need torch by hand, and missed the
  three newest;
- the glossary's "Introduced in" named chapter 10 for terms that chapters 3
  and 5 already define;
- a chapter counted heads from 0 where the others count them from 1;
- the bibliography's note on Llama 2 said the opposite of the chapter that
  cites it, about Meta's code.

So the habit for each class: derive the list from the pages it describes, and
keep a table of the facts that two pages both state.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tools.glossary.terms import TERM_ROLE, chapter_cells, glossary_entries, prose
from tools.project import ROOT, toc_notebooks

CHAPTERS = toc_notebooks()


def chapter_number(path: Path) -> int:
    return int(path.stem.split("_", 1)[0])


def chapter_title(path: Path) -> str:
    first = chapter_cells(path)[0]
    return re.match(r"#\s+(.*)", first).group(1).strip()


def plain(markdown: str) -> str:
    """A title as a reader sees it: $\\sqrt{d_k}$ is √d_k."""
    text = re.sub(r"\$\\sqrt\{([^}]*)\}\$", r"√\1", markdown)
    return text.replace("*", "").replace("`", "").strip()


# --- the introduction's arc ----------------------------------------------------------

def arc(intro: str) -> list[tuple[int, str, str]]:
    """(number, title, description) of each item of the intro's numbered arc."""
    section = intro.split("## The arc of the book", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^(\d+)\.\s+\*\*(.+?)\*\*:?\s*(.*?)(?=^\d+\.\s|^\S|\Z)", section, re.M | re.S)
    return [(int(n), plain(title), " ".join(desc.split())) for n, title, desc in items]


def arc_problems(intro: str) -> list[str]:
    items = arc(intro)
    want = [(chapter_number(p), chapter_title(p)) for p in CHAPTERS]
    got = [(n, title) for n, title, _ in items]
    problems = []
    if got != want:
        problems.append(f"the arc lists {got}, _toc.yml has {want}")
    # the one description the review found wrong: chapter 14's tiny GPT has
    # learned position vectors; the chapter compares the two RoPE layouts
    for n, _, desc in items:
        if n == 14 and re.search(r"rotary embeddings in the rotate-half layout", desc):
            problems.append("chapter 14 does not adopt the rotate-half layout; it compares both")
    return problems


def test_the_intro_arc_lists_every_chapter_in_order_with_its_title():
    problems = arc_problems((ROOT / "intro.md").read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_arc_check_catches_a_missing_chapter():
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    last = re.compile(r"^16\. .*?(?=^\S|\Z)", re.M | re.S)
    assert last.search(intro)
    assert arc_problems(last.sub("", intro))


def test_the_intro_says_where_the_book_ends():
    opening = (ROOT / "intro.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    last = CHAPTERS[-1]
    assert f"chapter {chapter_number(last)}" in opening, \
        f"the opening does not say that the book ends with chapter {chapter_number(last)}"


# --- running.md: which chapters need torch ---------------------------------------------

def _imports(source: str, package: str | None = None) -> set[str]:
    """Modules a piece of Python imports (`import a.b`, `from a import b`:
    a, a.b), IPython magics and shell lines dropped."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    found: set[str] = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level and package:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for mod in found for m in _prefixes(mod)}


def _prefixes(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _module_path(name: str) -> Path | None:
    rel = Path(*name.split("."))
    for cand in (ROOT / f"{rel}.py", ROOT / rel / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _top_level_imports(path: Path, name: str) -> set[str]:
    """What a module imports when it is imported: its module-level imports,
    not those inside functions (attnbook imports its torch modules lazily)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found |= _imports(ast.unparse(node), package)
    return found


def needs_torch(module: str, seen: set[str] | None = None) -> bool:
    if module == "torch" or module.startswith("torch."):
        return True
    if not module.startswith("attnbook"):
        return False
    seen = set() if seen is None else seen
    if module in seen:
        return False
    seen.add(module)
    path = _module_path(module)
    return path is not None and any(needs_torch(m, seen) for m in _top_level_imports(path, module))


def torch_chapters() -> list[int]:
    out = []
    for path in CHAPTERS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        if any(needs_torch(m) for m in _imports(code)):
            out.append(chapter_number(path))
    return out


def running_torch_list(text: str) -> list[int]:
    m = re.search(r"Chapters\s+([\d–, and\s-]+?)\s+also\s+use\s+torch", text)
    assert m, "running.md no longer says which chapters use torch"
    numbers: list[int] = []
    for part in re.split(r",|\band\b", m.group(1)):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("–") if "–" in part else part.partition("-")
        numbers += list(range(int(lo), int(hi or lo) + 1))
    return numbers


def test_running_lists_the_chapters_that_import_torch():
    text = (ROOT / "running.md").read_text(encoding="utf-8")
    assert running_torch_list(text) == torch_chapters()


def test_the_torch_finder_follows_attnbook_modules():
    assert needs_torch("attnbook.induction")       # chapter 16 imports torch only through it
    assert not needs_torch("attnbook.core")
    assert not needs_torch("attnbook")             # the package imports its torch modules lazily
    assert _imports("from attnbook import induction\n%matplotlib inline") >= {
        "attnbook", "attnbook.induction"}
    assert running_torch_list("Chapters 5–10, 12 and 13\nalso use torch") == \
        [5, 6, 7, 8, 9, 10, 12, 13]


# --- the glossary's "Introduced in" ----------------------------------------------------

#: term: (the chapter that first links it, the chapter that defines it, why).
#: A chapter may link a term only to point ahead to the chapter that defines
#: it; the entry then names the later chapter. Every other entry names the
#: first chapter that links the term.
FORWARD_MENTIONS = {
    "softmax": (1, 4, "names softmaxes as what the chapter comes before"),
    "similarity": (1, 3, "what chapter 3's word vectors give"),
    "word vector": (1, 3, "'which is what word vectors give us in chapter 3'"),
    "soft lookup": (1, 2, "'it is where we go next': chapter 2"),
    "self-attention": (3, 7, "'keep that in mind for self-attention (chapter 7)'"),
    "projection": (5, 7, "'without projections (chapter 7)'"),
    "head": (7, 10, "'with several heads, chapter 10'"),
    "kernel regression": (7, 8, "'Next:', the following chapter"),
    "ablation": (10, 15, "the original paper's ablations, named; chapter 15 runs one"),
    "language model": (12, 15, "'a language model such as GPT-2', named"),
    "in-context learning": (13, 16, "'where in-context learning is thought to start', named"),
    "layer normalisation": (3, 5, "'Transformers first normalise that vector', named"),
    "left padding": (9, 15, "'padding placed before the tokens, chapter 15', named"),
    "additive attention": (5, 9, "the experiments Vaswani et al. cite for the scaling, named"),
    "previous-token head": (15, 16, "'GPT-2 itself' names chapter 16's measurements"),
    "induction score": (15, 16, "'GPT-2 itself' names chapter 16's measurements"),
    "attention-only model": (15, 16, "'chapter 16's own code, written for its attention-only "
                             "model', named"),
    "induction head": (13, 16, "'Where this comes from' names the next step; chapter 16 "
                      "finds them"),
}


def linking_chapters(term: str) -> list[int]:
    """The chapters, in _toc order, whose prose links `term`."""
    out = []
    for path in CHAPTERS:
        for cell in chapter_cells(path):
            targets = {re.sub(r".*<(.*)>", r"\1", m.group(1)).strip().lower()
                       for m in TERM_ROLE.finditer(cell)}
            if term.lower() in targets:
                out.append(chapter_number(path))
                break
    return out


def introduced_in(term: str) -> int | None:
    chapters = linking_chapters(term)
    if not chapters:
        return None
    first, defining, _ = FORWARD_MENTIONS.get(term, (chapters[0], chapters[0], ""))
    return defining if first == chapters[0] else chapters[0]


def test_each_glossary_entry_names_the_chapter_that_first_defines_it():
    wrong = []
    for e in glossary_entries():
        named = int(e.chapter.split("/")[1].split("_")[0])
        want = introduced_in(e.term)
        if named != want:
            wrong.append(f"{e.term!r}: 'Introduced in' chapter {named}, first defined in {want}")
    assert not wrong, "\n".join(wrong)


def test_forward_mentions_are_the_first_links_and_point_to_a_later_linking_chapter():
    for term, (first, defining, _) in FORWARD_MENTIONS.items():
        chapters = linking_chapters(term)
        assert chapters and chapters[0] == first, \
            f"{term!r} is first linked in chapter {chapters[:1]}, not {first}: update the table"
        assert defining in chapters and defining > first, (term, defining, chapters)


# --- layers and heads count from 1 ------------------------------------------------------

ZERO_BASED = re.compile(r"\b(?:head|layer)s? 0\b(?! *[-–:]? *based)"
                        r"|f\"(?:head|layer) \{(\w+)\}\"[^\n]*\bfor \1 in range\(")


def zero_based_labels(path: Path) -> list[str]:
    """Prose, alt text and figure labels that count a head or layer from 0."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    hits = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        texts = [prose(src)] if cell["cell_type"] == "markdown" else [src]
        texts += [str(v) for k, v in cell.get("metadata", {}).items() if k in ("alt", "caption")]
        hits += [f"cell {cell.get('id')}: {m.group(0)!r}" for t in texts for m in ZERO_BASED.finditer(t)]
    return hits


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_layers_and_heads_count_from_one(path):
    hits = zero_based_labels(path)
    assert not hits, f"{path.name} counts heads or layers from 0 where a reader sees it:\n" + \
        "\n".join(hits)


def test_the_counting_convention_is_stated_where_a_reader_looks_it_up():
    notation = (ROOT / "notation.md").read_text(encoding="utf-8")
    assert re.search(r"Layers and \{term\}`heads <head>` count from 1", notation)
    assert "count from 0" in notation


def test_the_counting_check_catches_zero_based_labels():
    assert ZERO_BASED.search('names = [f"head {h}" for h in range(model.n_heads)]')
    assert ZERO_BASED.search("the bars for head 0 to head 3")
    assert not ZERO_BASED.search('names = [f"head {h + 1}" for h in range(4)]')
    assert not ZERO_BASED.search("layer 2, head 1")


# --- claims about outside work -----------------------------------------------------------

def bib_entries(text: str) -> dict[str, dict[str, str]]:
    entries = {}
    for m in re.finditer(r"@\w+\{([^,]+),(.*?)\n\}", text, re.S):
        fields = {k.lower(): " ".join(v.split())
                  for k, v in re.findall(r"(\w+)\s*=\s*\{((?:[^{}]|\{[^{}]*\})*)\}", m.group(2))}
        entries[m.group(1).strip()] = fields
    return entries


BIB = bib_entries((ROOT / "references.bib").read_text(encoding="utf-8"))

#: Notes that say what outside code does or what a paper found: each names
#: the version or commit it was checked against.
DESCRIBES_CODE_OR_RESULTS = re.compile(
    r"\b(code|layout|rotates?|needs|train|repeats|wanders|found|uses)\b", re.I)
CHECKED = re.compile(r"checked against [^;)]*?(commit [0-9a-f]{7,}|version|edition|arXiv:\d{4}\.\d{4,5})")


def unchecked_notes(entries: dict[str, dict[str, str]]) -> list[str]:
    return [f"{key}: {f['note']!r}" for key, f in entries.items()
            if "note" in f and DESCRIBES_CODE_OR_RESULTS.search(f["note"])
            and not CHECKED.search(f["note"])]


def test_notes_about_code_or_results_name_what_was_checked():
    missing = unchecked_notes(BIB)
    assert not missing, ("these notes describe outside code or results without naming the "
                         "version or commit checked:\n" + "\n".join(missing))


#: Facts that a chapter and the bibliography note of the work it cites both
#: state: (bib key, chapter, what the chapter says, what the note must say).
SHARED_FACTS = [
    ("touvron2023llama", "14_the_whole_block",
     r"neighbouring\* columns, the pairs \$\(2c, 2c\+1\)\$.*?as Meta's own LLaMA code does",
     r"Meta's code rotates adjacent column pairs \(2c, 2c\+1\)"),
    ("touvron2023llama", "14_the_whole_block",
     r"LLaMA 2\s+uses it in its 34B and 70B models",
     r"Grouped-query attention in the 34B and 70B models"),
    ("touvron2023llama", "14_the_whole_block",
     r"LLaMA, whose \$W_q\$ and \$W_k\$ have no biases",
     r"its wq, wk have no biases"),
    ("touvron2023llama", "14_the_whole_block",
     r"convert_llama_weights_to_hf\.py` in huggingface/transformers at commit\s+`01cc9cd`",
     r"convert_llama_weights_to_hf\.py permutes the rows of wq and\s+wk head by head"
     r" \(checked against huggingface/transformers at commit\s+01cc9cd"),
    ("brown2020language", "15_tiny_language_model",
     r"GPT-3 put a special end-of-text token there and masked nothing",
     r"separated by an end-of-text token, with no mask between them"),
    ("xiong2020layer", "14_the_whole_block",
     r"their pre-LN models trained\s+without it",
     r"pre-LN can train without one"),
    ("mikolov2013efficient", "03_word_vectors",
     r"The words of the question\s+are left out of the candidates",
     r"leaves the three question words out of the\s+candidates"),
    ("mody2022intuition", "02_soft_lookup",
     r"as revised in February 2023", r"as revised in February 2023"),
    ("mody2022intuition", "01_looking_things_up",
     r"as revised in February 2023", r"as revised in February 2023"),
]


def shared_fact_problems(entries: dict[str, dict[str, str]]) -> list[str]:
    problems = []
    for key, chapter, in_chapter, in_note in SHARED_FACTS:
        text = "\n".join(chapter_cells(ROOT / "chapters" / f"{chapter}.ipynb"))
        if not re.search(in_chapter, text, re.S):
            problems.append(f"{chapter} no longer says /{in_chapter}/: update SHARED_FACTS")
        if key not in text:
            problems.append(f"{chapter} no longer cites {key}")
        if not re.search(in_note, entries[key].get("note", "")):
            problems.append(f"{key}'s note does not say /{in_note}/, as {chapter} does")
    return problems


def test_bibliography_notes_agree_with_the_chapters_that_cite_them():
    problems = shared_fact_problems(BIB)
    assert not problems, "\n".join(problems)


def test_the_outside_work_checks_catch_the_old_llama_note():
    old = bib_entries("@article{touvron2023llama,\n  note = {Grouped-query attention in the 70B "
                      "model; rotary embeddings in the rotate-half layout}\n}")
    assert unchecked_notes(old)
    assert any("touvron2023llama's note" in p for p in shared_fact_problems({**BIB, **old}))


# --- the Chinese edition says the same ---------------------------------------------------

ZH = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"


def _messages(name: str):
    from babel.messages.pofile import read_po

    with open(ZH / f"{name}.po", "rb") as f:
        return [m for m in read_po(f) if m.id and isinstance(m.id, str)]


def test_the_chinese_running_page_lists_the_same_torch_chapters():
    (msg,) = [m for m in _messages("running") if "also use torch" in m.id]
    m = re.search(r"((?:第\s*[\d–、和及以上]+\s*章[、和及以上]*)+)还会用到 torch", msg.string)
    assert m, msg.string
    numbers: list[int] = []
    for lo, hi in re.findall(r"(\d+)(?:–(\d+))?", m.group(1)):
        numbers += list(range(int(lo), int(hi or lo) + 1))
    assert numbers == torch_chapters(), msg.string


def test_the_chinese_glossary_names_each_chapter_by_number_and_title():
    """引入于 归纳头 reads as the term itself: say 第 16 章《归纳头》."""
    titles = {}
    for path in CHAPTERS:
        title = chapter_title(path)
        with open(ZH / "chapters" / f"{path.stem}.po", "rb") as f:
            from babel.messages.pofile import read_po

            titles[path.stem] = read_po(f).get(title).string
    wrong = []
    for msg in _messages("glossary"):
        if "Introduced in" not in msg.id:
            continue
        target = re.search(r"Introduced in\s+\{doc\}`(chapters/[^`]+)`", msg.id).group(1)
        stem = target.split("/")[1]
        want = f"引入于{{doc}}`第 {int(stem[:2])} 章《{titles[stem]}》 <{target}>`"
        if want not in msg.string:
            wrong.append(f"{msg.id[:30]!r}: wants {want}")
    assert not wrong, "\n".join(wrong)


# --- review r1: what the intro and part I say about other pages and sources -------------

def fruit_table_chapters(intro: str) -> set[int]:
    """The chapters the intro names for the apple/banana/chair table."""
    m = re.search(r"`chair` to numbers, in (chapters .*?)\)", intro, re.S)
    assert m, "the intro no longer names the fruit table's chapters: update this test"
    return {int(n) for n in re.findall(r"\d+", m.group(1))}


def test_the_intro_names_the_chapters_that_use_the_fruit_table():
    """It once said chapters 1-4, 6 and 9: chapter 3 uses only the words'
    vectors, and chapter 9 has no table. Chapter 6 rebuilds the values with a
    carrot added; the others import the table."""
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    importing = {chapter_number(p) for p in CHAPTERS
                 if "FRUIT_TABLE" in p.read_text(encoding="utf-8")}
    ch6 = "\n".join(chapter_cells(ROOT / "chapters" / "06_many_queries.ipynb"))
    assert re.search(r"as in the\s+fruit\s+table", ch6)
    assert "[10.0, 5.0, 4.0, 2.0]" in (ROOT / "chapters" / "06_many_queries.ipynb").read_text()
    assert fruit_table_chapters(intro) == importing | {6}
    assert fruit_table_chapters("`chair` to numbers, in chapters 1–4, 6 and 9)") != importing | {6}


def test_the_intro_does_not_call_the_masks_a_matter_of_speed():
    """Masks decide which keys a query may use; they do not make attention
    stable, fast or trainable, and a causal model's word sees only the past."""
    opening = (ROOT / "intro.md").read_text(encoding="utf-8").split("\n## The arc", 1)[0]
    sentence = re.search(r"[^.]*stable, fast and trainable[^.]*\.", opening).group(0)
    assert "stable, fast and trainable;" in sentence
    before = sentence.split("stable, fast and trainable", 1)[0]
    assert "mask" not in before, sentence
    assert "every word look at every\nother word" not in opening


def test_part_one_credits_the_d2l_edition_that_has_the_attention_cues():
    """The cues (and pooling as attention without a query) are in d2l's release
    v0.17.6, section "Attention Cues" (chapter_attention-mechanisms/attention-cues.md,
    commit 0f920da8); the 2023 edition (master 23d7a5ae) has no such section, and
    neither edition has a librarian."""
    for stem in ("01_looking_things_up", "02_soft_lookup"):
        text = "\n".join(chapter_cells(ROOT / "chapters" / f"{stem}.ipynb"))
        assert re.search(r"release\s+`v0\.17\.6`\s+\{cite\}`zhang2022d2l017`", text), stem
        assert not re.search(r"librar\w*[^.]*zhang2023d2l", text, re.S | re.I), stem
    ch1 = "\n".join(chapter_cells(ROOT / "chapters" / "01_looking_things_up.ipynb"))
    cues = re.search(r"[^.]*\{term\}`cue <attention cue>`", ch1).group(0)
    assert "zhang2022d2l017" in cues and "zhang2023d2l" not in cues, cues
