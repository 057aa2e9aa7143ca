"""The Chinese edition (issue 18): catalogues never stale, translations keep
what must not be translated, glossary terms carried over, the glue fix.

- The .po files hold exactly the messages of the current English text (the
  test regenerates the .pot files with Sphinx's gettext builder), and every
  message is translated and not fuzzy: a changed English sentence fails here
  until `make translations` and a translator have updated it.
- Each msgstr keeps the roles, maths, inline code and URLs of its msgid.
- Where an English page links a glossary term, the Chinese page shows the
  term's Chinese name.
- tools/sphinx/i18n.py: a translated message with a glue role renders the
  glued number (and without the extension the same build fails); a figure
  on a Chinese page has its translated alt text.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from tools.glossary.terms import glossary_entries
from tools.project import ROOT, toc_files

LOCALE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
#: Catalogues that are not generated from the text (theme overrides,
#: tools/sphinx/i18n_ui.py).
NOT_GENERATED = {"booktheme.po", "theme.po"}
ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")
MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.S)
URL = re.compile(r"https?://[^\s)>\]]+")
#: Prose inside a formula: ``\text{ layers}`` (a space or a CJK character in
#: it), which a translation translates; ``\text{model}`` is notation and stays.
MATH_PROSE = re.compile(r"\\text\{([^{}]*(?:\s|[\u4e00-\u9fff])[^{}]*)\}")
ENGLISH_WORD = re.compile(r"[A-Za-z]{2,}")
CJK = re.compile(r"[\u4e00-\u9fff]")


def catalogue_files() -> list[Path]:
    return sorted(p for p in LOCALE.rglob("*.po") if p.name not in NOT_GENERATED)


def read_catalogue(path: Path):
    with path.open("rb") as f:
        return read_po(f)


def messages(path: Path) -> dict[str, object]:
    return {m.id: m for m in read_catalogue(path) if m.id}


# --- what each msgstr must keep ---------------------------------------------

def _role_key(role: str) -> str:
    """{term}`label <target>` may translate its label but keeps role and target;
    {term}`target` may become {term}`中文 <target>`."""
    name = role.split("`")[0]
    inner = role[len(name) + 1:-1]
    target = re.search(r"<([^<>]+)>$", inner)
    if name in ("{term}", "{doc}", "{ref}"):
        return name + (target.group(1) if target else inner)
    return role


def protected(text: str) -> dict[str, list[str]]:
    roles = ROLE.findall(text)
    rest = ROLE.sub(" ", text)
    code = re.findall(r"`[^`]+`", rest)
    rest = re.sub(r"`[^`]+`", " ", rest)
    maths = [MATH_PROSE.sub(r"\\text{…}", m) for m in MATH.findall(rest)]
    return {"roles": sorted(map(_role_key, roles)), "code": sorted(code),
            "maths": sorted(maths), "urls": sorted(URL.findall(text))}


def english_in_formulas(text: str) -> list[str]:
    """The prose of ``\\text{...}`` in the formulas of `text` that is still English."""
    rest = re.sub(r"`[^`]+`", " ", ROLE.sub(" ", text))
    return [prose for formula in MATH.findall(rest) for prose in MATH_PROSE.findall(formula)
            if ENGLISH_WORD.search(prose) and not CJK.search(prose)]


def translation_problems(path: Path) -> list[str]:
    """Untranslated or fuzzy messages, and msgstrs that lose or change a role,
    a formula, inline code or a URL of their msgid."""
    problems = []
    for mid, m in messages(path).items():
        mid = mid if isinstance(mid, str) else mid[0]
        mstr = m.string if isinstance(m.string, str) else m.string[0]
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        where = f"{name}: {mid[:70]!r}"
        if not mstr:
            problems.append(f"untranslated {where}")
        elif m.fuzzy:
            problems.append(f"fuzzy {where}")
        else:
            en, zh = protected(mid), protected(mstr)
            problems += [f"{kind} differ in {where}: {en[kind]} -> {zh[kind]}"
                         for kind in en if en[kind] != zh[kind]]
            problems += [f"maths words untranslated in {where}: {w!r}"
                         for w in english_in_formulas(mstr)]
    return problems


def test_translation_checker_catches_each_fault(tmp_path):
    header = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
    cases = {
        "untranslated": 'msgid "A key."\nmsgstr ""\n',
        "fuzzy": '#, fuzzy\nmsgid "A key."\nmsgstr "一个键。"\n',
        "roles": 'msgid "A {term}`key`."\nmsgstr "一个键。"\n',
        "maths": 'msgid "Width $d_k$."\nmsgstr "宽度 d_k。"\n',
        "code": 'msgid "Call `softmax`."\nmsgstr "调用 softmax。"\n',
        "maths words": 'msgid "$2 \\\\text{ layers}$."\nmsgstr "$2 \\\\text{ layers}$。"\n',
    }
    for fault, entry in cases.items():
        po = tmp_path / f"{fault}.po"
        po.write_text(header + entry, encoding="utf-8")
        found = translation_problems(po)
        assert found and found[0].startswith(fault), (fault, found)
    good = tmp_path / "good.po"
    good.write_text(header + 'msgid "A {term}`key` of width $d_k$ from `softmax`."\n'
                    'msgstr "宽度为 $d_k$ 的{term}`键 <key>`，来自 `softmax`。"\n\n'
                    'msgid "$12 \\\\text{ layers}$ of $d_{\\\\text{model}}$."\n'
                    'msgstr "$12 \\\\text{ 层}$，宽 $d_{\\\\text{model}}$。"\n',
                    encoding="utf-8")
    assert translation_problems(good) == []


def test_every_message_is_translated_and_keeps_roles_maths_and_code():
    """Fails until the translators' catalogues are merged (100 % translated)."""
    problems = [p for path in catalogue_files() for p in translation_problems(path)]
    total = sum(len(messages(p)) for p in catalogue_files())
    print(f"\n[translation] {total} messages in {len(catalogue_files())} catalogues, "
          f"{len(problems)} problems")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:60])


# --- the catalogues match the current English text --------------------------

@pytest.fixture(scope="session")
def fresh_pot(testrun_uid) -> Path:
    """The .pot files of the current English text (Sphinx's gettext builder),
    extracted once per test run for every pytest-xdist worker. The tests that
    read them share one xdist group (`CATALOGUES`), so one worker extracts
    them while the other goes on with other tests (it waited for them
    otherwise: about 8 s)."""
    # after this run's build, so that the extraction reads the notebooks the
    # build executed instead of executing them again beside it
    from nbrun import build_once, made_once

    from tools.build import translations
    build_once(testrun_uid)
    folder = made_once("gettext", testrun_uid, translations.extract_messages)
    return folder / "_build" / "gettext"


#: The xdist group of the tests that read `fresh_pot`.
CATALOGUES = pytest.mark.xdist_group("catalogues")


def compare_catalogues(pot_dir: Path, locale_dir: Path) -> list[str]:
    """Differences in msgids between each .pot and its .po."""
    problems = []
    pots = {p.relative_to(pot_dir).with_suffix(".po"): p for p in pot_dir.rglob("*.pot")}
    pos = {p.relative_to(locale_dir): p for p in locale_dir.rglob("*.po")
           if p.name not in NOT_GENERATED}
    for name in sorted(set(pots) | set(pos)):
        if name not in pos:
            problems.append(f"{name}: no catalogue (run `make translations`)")
            continue
        if name not in pots:
            problems.append(f"{name}: no page produces it any more")
            continue
        want, have = set(messages(pots[name])), set(messages(pos[name]))
        for mid in sorted(want - have):
            problems.append(f"{name}: new English text not in the catalogue: {str(mid)[:80]!r}")
        for mid in sorted(have - want):
            problems.append(f"{name}: catalogue message no longer in the text: {str(mid)[:80]!r}")
    return problems


@CATALOGUES
def test_catalogues_hold_exactly_the_current_english_text(fresh_pot):
    problems = compare_catalogues(fresh_pot, LOCALE)
    assert not problems, ("the catalogues are stale; run `make translations` and translate:\n"
                          + "\n".join(problems[:60]))


@CATALOGUES
def test_catalogue_comparison_catches_a_changed_sentence(fresh_pot, tmp_path):
    import shutil
    locale = tmp_path / "locale"
    shutil.copytree(LOCALE, locale)
    po = locale / "intro.po"
    text = po.read_text(encoding="utf-8")
    first = next(m for m in messages(po) if len(str(m)) > 20)
    quoted = first.split()[0]
    assert quoted in text
    po.write_text(text.replace(quoted, quoted + "X", 1), encoding="utf-8")
    problems = compare_catalogues(fresh_pot, locale)
    assert any("new English text" in p for p in problems), problems
    assert any("no longer in the text" in p for p in problems), problems


@CATALOGUES
def test_autodoc_output_is_not_in_the_catalogue(fresh_pot):
    """api.md's docstrings (reStructuredText) stay English and out of api.pot."""
    ids = set(messages(fresh_pot / "api.pot"))
    assert "The attnbook API" in ids
    import attnbook.core
    first_line = attnbook.core.__doc__.strip().splitlines()[0]
    assert not any(first_line in str(m) for m in ids), "autodoc text leaked into api.pot"


# --- glossary terms on both editions ----------------------------------------

def _glossary_links(html: str) -> set[str]:
    return set(re.findall(r'href="(?:\.\./)*glossary\.html#(term-[^"]+)"', html))


def test_linked_glossary_terms_appear_in_chinese(built_book):
    """Where an English page links a glossary term, the Chinese page shows
    the term's Chinese name (fails until the translations are merged)."""
    glossary = (built_book / "glossary.html").read_text(encoding="utf-8")
    ids = dict(re.findall(r'<dt id="(term-[^"]+)">(.*?)<', glossary))
    chinese = {e.term: [zh for zh, _, _ in e.chinese] for e in glossary_entries()}
    missing = {}
    for name in toc_files():
        if name == "glossary":
            continue
        english = (built_book / f"{name}.html").read_text(encoding="utf-8")
        zh_page = (built_book / "zh" / f"{name}.html").read_text(encoding="utf-8")
        zh_text = re.sub(r"<[^>]+>", "", zh_page)
        for anchor in _glossary_links(english):
            term = ids.get(anchor, "").strip()
            names = chinese.get(term) or []
            if names and not any(n in zh_text for n in names):
                missing.setdefault(name, []).append(f"{term} ({'/'.join(names)})")
    assert not missing, json.dumps(missing, ensure_ascii=False, indent=1)


# --- figure alt text ------------------------------------------------------------


def _figure_alts(page: Path) -> list[str]:
    """Alt texts of the figures in a page's article. Explorer frames
    (``.attn-explorer``) are left out: the kernel draws them, and writes
    their alt text, in each language (see the next test but one)."""
    from bs4 import BeautifulSoup
    article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one(
        "article.bd-article")
    return [img["alt"] for img in article.find_all("img", alt=True)
            if not img.find_parent(class_=re.compile(r"^attn-explorer"))]


def test_figure_alt_text_is_translated(built_book):
    """Each figure on a Chinese chapter page has the catalogue's translation of
    its English alt text (tools/sphinx/i18n.py, piece 5); the English pages
    keep the English."""
    wrong, count = [], 0
    for zh_page in sorted((built_book / "zh" / "chapters").glob("*.html")):
        english = _figure_alts(built_book / "chapters" / zh_page.name)
        chinese = _figure_alts(zh_page)
        catalogue = messages(LOCALE / "chapters" / zh_page.with_suffix(".po").name)
        assert len(english) == len(chinese), zh_page.name
        count += len(english)
        for en, zh in zip(english, chinese, strict=True):
            want = catalogue[en].string if en in catalogue else None
            if CJK.search(en) or not want or zh != want or not CJK.search(zh):
                wrong.append(f"{zh_page.name}: {en[:60]!r} -> {zh[:40]!r}")
    assert count >= 40, f"only {count} figures found"
    assert not wrong, f"{len(wrong)} figures without their translated alt text:\n" + \
        "\n".join(wrong)


def _explorers(page: Path) -> list[tuple[str, str, list[str]]]:
    """(data-alt-lead, the image's alt, the script's alt texts) per explorer."""
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    return [(div["data-alt-lead"], div.find("img")["alt"],
             json.loads(div.find("script", id=f"{div['id']}-a").string))
            for div in soup.select("div.attn-explorer")]


def test_explorers_are_drawn_in_chinese_on_chinese_pages(built_book):
    """Every explorer on a Chinese page is the kernel's Chinese rendering
    (attnbook/figure_text.py, tools/sphinx/figures.py): its description is
    figures.po's translation of the English one, every frame's alt text
    starts with it, and each frame is a different picture from the English
    frame (its text is translated)."""
    catalogue = messages(LOCALE / "figures.po")
    wrong, frames = [], 0
    for zh_page in sorted((built_book / "zh" / "chapters").glob("*.html")):
        english = _explorers(built_book / "chapters" / zh_page.name)
        chinese = _explorers(zh_page)
        assert len(english) == len(chinese), zh_page.name
        for (lead, _, alts), (lead_zh, alt_zh, alts_zh) in zip(english, chinese, strict=True):
            frames += len(alts_zh)
            want = catalogue[lead].string if lead in catalogue else None
            ok = (want and CJK.search(want) and lead_zh == want and len(alts) == len(alts_zh)
                  and alt_zh.startswith(want + "。")
                  and all(a.startswith(want + "。") for a in alts_zh))
            if not ok:
                wrong.append(f"{zh_page.name}: {lead[:50]!r} -> {lead_zh[:30]!r}")
    assert frames >= 40, f"only {frames} explorer frames found"
    assert not wrong, "explorers not drawn in Chinese:\n" + "\n".join(wrong)


def _outputs(name: str):
    """Every display output of the executed chapter `name`."""
    from nbrun import executed
    for cell in executed(name).cells:
        for output in cell.get("outputs", []):
            if "data" in output:
                yield output


def test_every_figure_and_explorer_has_a_chinese_rendering_with_all_its_text(built_book):
    """Each figure output ('image/png') and explorer ('text/html' slider)
    carries the Chinese edition's rendering, drawn with every text it has in
    figures.po (none missing), and the Chinese pages show those renderings:
    no Chinese page shows an English figure whose text needs translating."""
    from attnbook.figure_text import METADATA_KEY, TRANSLATED_HTML, TRANSLATED_PNG
    problems, figures, with_text, alike = [], 0, 0, set()
    for notebook in sorted((ROOT / "chapters").glob("*.ipynb")):
        for output in _outputs(notebook.stem):
            data, meta = output["data"], output.get("metadata", {}).get(METADATA_KEY)
            explorer = 'class="attn-explorer"' in data.get("text/html", "")
            if "image/png" not in data and not explorer:
                continue
            figures += 1
            wanted = TRANSLATED_HTML if explorer else TRANSLATED_PNG
            if wanted not in data or meta is None:
                problems.append(f"{notebook.name}: a figure without its Chinese rendering")
                continue
            if meta["missing"]:
                problems.append(f"{notebook.name}: drawn without {meta['missing'][:3]}")
            if meta["texts"]:
                with_text += 1
            if not explorer and data[wanted] == data["image/png"]:
                if meta["texts"]:
                    problems.append(f"{notebook.name}: the Chinese figure is the English one "
                                    f"although it has {meta['texts'][:3]}")
                alike.add(hashlib.sha256(base64.b64decode(data["image/png"])).hexdigest())
    assert figures >= 45 and with_text >= 45, (figures, with_text)   # 50 in chapters 1-14
    assert not problems, "\n".join(problems)
    for zh_page in sorted((built_book / "zh" / "chapters").glob("*.html")):
        english = set(re.findall(r'_images/([0-9a-f]{64})', (built_book / "chapters" /
                                                              zh_page.name).read_text()))
        chinese = set(re.findall(r'_images/([0-9a-f]{64})', zh_page.read_text()))
        shared = (english & chinese) - alike
        assert not shared, f"{zh_page.name} shows English figures {shared}"


def test_figure_translations_keep_their_numbers_and_have_chinese_text():
    """figures.po: each translation has as many number slots ({}) as its
    message, and a message with words has Chinese in its translation unless
    it is a name, symbol or example word the book keeps as the code spells it
    (then the translation is the message itself)."""
    from attnbook.figure_text import SLOT
    bad = []
    for mid, m in messages(LOCALE / "figures.po").items():
        if m.string.count(SLOT) != mid.count(SLOT):
            bad.append(f"{mid!r}: {m.string!r} has {m.string.count(SLOT)} {SLOT}")
        elif not CJK.search(m.string) and m.string != mid:
            bad.append(f"{mid!r}: {m.string!r} is neither Chinese nor kept as it is")
    assert not bad, "\n".join(bad)


# --- the glue fix -------------------------------------------------------------

NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "m1", "metadata": {},
         "source": "The answer is {glue:text}`answer`."},
        {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": None,
         "outputs": [], "source": "from myst_nb import glue\nglue('answer', 4217, display=False)"},
    ],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5,
}
PO = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
      'msgid "The answer is {glue:text}`answer`."\nmsgstr "答案是 {glue:text}`answer`。"\n')


def _glue_book(tmp_path: Path, with_fix: bool) -> subprocess.CompletedProcess:
    import yaml
    book = tmp_path / ("fixed" if with_fix else "plain")
    (book / "locales" / "zh_CN" / "LC_MESSAGES").mkdir(parents=True)
    (book / "page.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    (book / "locales" / "zh_CN" / "LC_MESSAGES" / "page.po").write_text(PO, encoding="utf-8")
    (book / "_toc.yml").write_text("format: jb-book\nroot: page\n")
    sphinx = {"language": "zh_CN", "locale_dirs": ["locales"], "gettext_compact": False}
    config = {"title": "t", "execute": {"execute_notebooks": "force"},
              "sphinx": {"config": sphinx,
                         "local_extensions": {"tools.sphinx.i18n": str(ROOT)}
                         if with_fix else {}}}
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    jb = Path(sys.executable).with_name("jupyter-book")
    return subprocess.run([str(jb), "build", str(book), "-W", "-n", "--keep-going"],
                          capture_output=True, text=True, cwd=book)


def test_chinese_doctrees_hold_their_own_page_only(built_book):
    """Translated nodes are adopted by their page (tools/sphinx/i18n.py, piece
    7): no Chinese doctree reaches the build environment, so none holds
    another chapter's content and they weigh about what the English ones do
    (before the fix: 55 MB against 8.9 MB, every page carrying every explorer)."""
    import pickle
    trees = {}
    for edition, folder in (("en", ROOT / "_build" / ".doctrees"),
                            ("zh", ROOT / "_build" / "zh" / "_build" / ".doctrees")):
        trees[edition] = {p.relative_to(folder): p for p in folder.rglob("*.doctree")}
    assert trees["zh"].keys() == trees["en"].keys()
    foreign = []
    for name, path in sorted(trees["zh"].items()):
        doctree = pickle.loads(path.read_bytes())
        strays = [n for n in doctree.findall() if n.document is not doctree]
        strays += [k for k, n in doctree.ids.items() if n.document is not doctree]
        if strays:
            foreign.append(f"{name}: {len(strays)} nodes of another document")
    assert not foreign, foreign
    size = {e: sum(p.stat().st_size for p in t.values()) for e, t in trees.items()}
    print(f"\n[doctrees] English {size['en'] / 1e6:.1f} MB, Chinese {size['zh'] / 1e6:.1f} MB")
    assert size["zh"] < 1.5 * size["en"], size


def test_glue_role_in_a_translated_message_renders_the_number(tmp_path):
    fixed = _glue_book(tmp_path, with_fix=True)
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-2000:]
    html = (tmp_path / "fixed" / "_build" / "html" / "page.html").read_text(encoding="utf-8")
    assert re.search(r"答案是\s*(<[^>]+>\s*)*4217", html), "the glued number is missing"
    # and the same book without the extension shows the bug this fixes
    plain = _glue_book(tmp_path, with_fix=False)
    assert plain.returncode != 0 and "No key 'answer' found" in plain.stdout + plain.stderr


# --- Chinese search ---------------------------------------------------------

def test_glossary_dictionary_keeps_compounds_and_one_character_terms_whole(tmp_path):
    """jieba alone splits 注意力汇聚 and 键值对; with the dictionary made from the
    glossary they come out whole, and Sphinx keeps 键 and 值 (one character)."""
    import jieba

    from tools.sphinx import i18n
    terms = i18n.glossary_chinese_terms(ROOT / "glossary.md")
    assert {"注意力汇聚", "键值对", "键", "值", "查询"} <= set(terms), terms
    text = "注意力汇聚把每个键值对里的值加权求和"
    plain = jieba.Tokenizer()
    assert not {"注意力汇聚", "键值对"} <= set(plain.cut_for_search(text)), \
        "jieba alone already keeps these terms: the dictionary is not needed any more?"
    ours = jieba.Tokenizer()
    ours.load_userdict(str(i18n.write_user_dictionary(terms, tmp_path / "dict.txt")))
    words = set(ours.cut_for_search(text))
    assert {"注意力汇聚", "注意力", "键值对", "值"} <= words, words
    i18n.register_search_language()
    language = i18n.BookSearchChinese({})
    language.single_characters = {"键", "值"}
    assert language.word_filter("键") and language.word_filter("值")
    assert not language.word_filter("的")


# --- the interface around the prose (tools/sphinx/i18n_ui.py) ------------------

#: English the Chinese pages show on purpose: the link to the English edition,
#: the keyboard shortcut and the download buttons' file types.
ENGLISH_ON_PURPOSE = {"English", "Ctrl", ".ipynb", ".md", ".pdf"}
UI_ATTRIBUTES = ("title", "aria-label", "data-bs-title", "placeholder")


def chinese_pages(built_book: Path) -> dict[str, object]:
    """{page: its parsed HTML} for every page of the Chinese edition."""
    from bs4 import BeautifulSoup
    from survey import built_pages
    zh = built_book / "zh"
    return {p: BeautifulSoup((zh / p).read_text(encoding="utf-8"), "html.parser")
            for p in built_pages(zh) if p != "index.html"}


def english_interface_text(soup) -> list[str]:
    """Text and labels outside the page's own article that are English only,
    and the titles of the article's heading links. The tables of contents
    (entries in a ``nav``) repeat the pages' own headings and are left out."""
    from bs4 import Comment
    found = []
    for tag in soup.find_all(True):
        inside = tag.find_parent("article") is not None
        for name in UI_ATTRIBUTES:
            value = tag.get(name)
            if (value and (not inside or "headerlink" in tag.get("class", []))
                    and ENGLISH_WORD.search(value) and not CJK.search(value)):
                found.append(f"{tag.name}[{name}]={value!r}")
    for text in soup.body.find_all(string=True):
        if (isinstance(text, Comment) or text.find_parent(["script", "style", "article"])
                or text.strip() in ENGLISH_ON_PURPOSE or text.find_parent(class_="katex")
                or (text.find_parent("li") and text.find_parent("nav"))):
            continue
        if ENGLISH_WORD.search(text) and not CJK.search(text):
            found.append(f"{text.parent.name}: {text.strip()[:60]!r}")
    return found


def test_chinese_interface_is_chinese(built_book):
    """No English label, tooltip or text around the Chinese pages' prose; the
    book's Chinese title in every <title> and its authors in the footer; the
    folding hints in Chinese (tools/build/book.py's ZH_SETTINGS)."""
    from tools.build.book import ZH_AUTHOR, ZH_TITLE
    bad = {}
    for page, soup in chinese_pages(built_book).items():
        found = english_interface_text(soup)
        if not soup.title.get_text().endswith(ZH_TITLE):
            found.append(f"<title>{soup.title.get_text()}")
        author = soup.select_one(".component-author")
        if author is None or author.get_text(" ", strip=True) != f"作者：{ZH_AUTHOR}":
            found.append(f"author line {author and author.get_text(strip=True)!r}")
        hints = re.findall(r"toggleHint\w+ = '([^']*)'", str(soup))
        if len(hints) != 2 or not all(CJK.search(h) for h in hints):
            found.append(f"folding hints {hints}")
        if found:
            bad[page] = found
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)


def test_interface_checker_sees_english_labels():
    from bs4 import BeautifulSoup
    soup = BeautifulSoup('<body><nav aria-label="Main"><ul><li>softmax</li></ul></nav>'
                         '<article><h2>标题<a class="headerlink" title="Link to this heading">'
                         '#</a></h2><p>softmax only</p></article><p>© Copyright 2026.</p>'
                         '<a>English</a></body>', "html.parser")
    assert len(english_interface_text(soup)) == 3, english_interface_text(soup)


def test_solution_titles_read_exercise_then_solution(built_book):
    """Every folded solution of the Chinese edition is titled "练习 n 的解答"
    (the link to the exercise first), as many as the English edition has."""
    count, wrong = 0, []
    for page, soup in chinese_pages(built_book).items():
        english = (built_book / page).read_text(encoding="utf-8").count(
            'class="solution dropdown admonition"')
        titles = [t.get_text().strip() for t in soup.select(".solution > .admonition-title")]
        count += len(titles)
        if len(titles) != english:
            wrong.append(f"{page}: {len(titles)} solutions, {english} in English")
        wrong += [f"{page}: {t!r}" for t in titles if not re.fullmatch(r"练习 \d+ 的解答", t)]
    assert count >= 40, f"only {count} solutions"
    assert not wrong, "\n".join(wrong)


def test_citations_and_bibliography_notes_are_chinese(built_book):
    """Textual citations join names with 和 and shorten with 等, not "and" or
    "et al."; every bibliography note references.po translates shows
    translated, in the bibliography and in the citations' tooltips, and its
    English is on no Chinese page."""
    import html as html_lib
    pages = {p: (built_book / "zh" / p).read_text(encoding="utf-8")
             for p in chinese_pages(built_book)}
    cited = [(p, html_lib.unescape(text)) for p, page in pages.items()
             for text in re.findall(r'href="(?:\.\./)*references\.html#[^"]*"[^>]*>([^<]+)</a>',
                                    page)]
    assert len(cited) > 20, f"only {len(cited)} citations found"
    english = [f"{p}: {t}" for p, t in cited if re.search(r"\band\b|et al", t)]
    assert not english, english
    assert any(" 和 " in t for _, t in cited) and any(" 等" in t for _, t in cited)
    notes = {m.id: m.string for m in read_catalogue(LOCALE / "references.po")
             if m.id and m.string and m.string != m.id and not CJK.search(m.id)
             and len(m.id.split()) <= 20 and "{" not in m.id}
    text = {p: html_lib.unescape(page) for p, page in pages.items()}
    for note, translated in notes.items():
        assert translated in text["references.html"], f"not in the bibliography: {translated}"
        assert not [p for p, t in text.items() if note in t], f"English note shown: {note}"


#: _templates/ overrides of sphinx-book-theme's templates that only wrap its
#: hard-coded English in _() (tools/sphinx/i18n_ui.py, piece 1): ours -> theirs
WRAPPED_TEMPLATES = {"toggle-primary-sidebar.html": "components/toggle-primary-sidebar.html",
                     "toggle-secondary-sidebar.html": "components/toggle-secondary-sidebar.html",
                     "sbt-sidebar-nav.html": "components/sbt-sidebar-nav.html",
                     "layout.html": "layout.html"}


def test_template_overrides_are_the_installed_themes_with_translatable_strings():
    import sphinx_book_theme
    theme = Path(sphinx_book_theme.__file__).parent / "theme" / "sphinx_book_theme"
    for ours, theirs in WRAPPED_TEMPLATES.items():
        text = re.sub(r"^\{#-.*?-#\}\n", "", (ROOT / "_templates" / ours).read_text(), flags=re.S)
        # a block the book changes on purpose (tests/test_apparatus.py checks it)
        text = re.sub(r"\{#- book:.*?\{#- /book -#\}\n", "", text, flags=re.S)
        assert "{{ _(" in text, ours
        unwrapped = re.sub(r"\{\{ _\('([^']*)'\) \}\}", r"\1", text)
        assert unwrapped == (theme / theirs).read_text(), \
            f"the theme's {theirs} changed: update _templates/{ours}"
    author = (theme / "components" / "author.html").read_text()
    assert "{{ translate('By') }} {{ author }}" in author, \
        "the theme's author line changed: update _templates/author.html"


def test_folding_buttons_are_labelled_in_chinese(surveyed):
    """sphinx-togglebutton's script labels its buttons "Toggle hidden content";
    the Chinese edition relabels them (tools/sphinx/i18n_ui.py, piece 6)."""
    result = surveyed("zh")
    labels = {label for r in result["pages"].values()
              for label in r.get("keyboard", {}).get("labels", [])}
    assert labels and all(CJK.search(label) for label in labels), labels


# --- one word for one thing -------------------------------------------------

#: Words the Chinese edition does not use, and what it writes instead.
DISCOURAGED = {"屏蔽": "掩蔽 (the glossary's word for masking)",
               "测试集": "留出集 (a held-out set; 测试 is the test suite's word)",
               "错误示例集": "bug 集锦 (chapter 9's gallery of bugs)"}


def chinese_messages() -> list[tuple[str, str, str]]:
    """(catalogue, msgid, msgstr) of every translated message."""
    return [(path.name, str(m.id), m.string) for path in catalogue_files()
            for m in read_catalogue(path) if m.id and isinstance(m.string, str) and m.string]


def test_chinese_edition_uses_one_word_for_each_thing():
    """No discouraged word, and every {term} whose label is Chinese names its
    entry by one of the glossary's Chinese terms for it (a projection is
    投影 or 投影矩阵, never 权重矩阵, which is the matrix of attention weights)."""
    names = {e.term.lower(): [zh for zh, _, _ in e.chinese] for e in glossary_entries()}
    wrong = []
    for name, _, text in chinese_messages():
        wrong += [f"{name}: {word} -> {instead}: {text[:60]!r}"
                  for word, instead in DISCOURAGED.items() if word in text]
        for label, target in re.findall(r"\{term\}`([^`<]*?)\s*<([^<>`]+)>`", text):
            chinese = names.get(target.lower(), [])
            if CJK.search(label) and not any(zh in label for zh in chinese):
                wrong.append(f"{name}: {{term}}`{label} <{target}>`: the glossary says "
                             f"{'/'.join(chinese)}")
    assert not wrong, "\n".join(wrong)


# --- typography of the Chinese text ---------------------------------------------

HAN = "\u4e00-\u9fff"
TERM_LINK = re.compile(r"\{term\}`([^`<]*?)\s*(?:<[^<>`]*>)?`")
LATIN = "A-Za-z0-9"


def _rendered(text: str) -> str:
    """`text` as a reader sees it, for spacing: a {term} by its label, a glued
    number by "0", code and formulas by "A" (Latin: the book spaces them
    from Chinese), other roles and URLs by an opaque mark, emphasis markers
    dropped."""
    text = TERM_LINK.sub(lambda m: m.group(1), text)
    text = re.sub(r"\{glue(?::[a-z]+)?\}`[^`]*`", "0", text)
    text = ROLE.sub("\x00", text)
    text = re.sub(r"``.*?``|`[^`]+`", "A", text)
    text = MATH.sub("A", text)
    text = URL.sub("\x00", text)
    return text.replace("*", "")


def _prose(text: str) -> str:
    """`text` with its code, formulas and roles' insides blanked (same length)."""
    blank = lambda m: "\x00" * len(m.group(0))       # noqa: E731
    return MATH.sub(blank, re.sub(r"``.*?``|`[^`]+`", blank, text))


def typography_problems(text: str) -> list[str]:
    """The Chinese text's spacing slips (issue 29): a space between a Chinese
    character and a glossary link whose label begins or ends with one; a
    space before %; a space before “ or after ”; no space between a Chinese
    character and a Latin letter or digit (a word, a number, code, a formula,
    a glued number: "softmax 函数", "约 2%")."""
    problems = []
    for m in re.finditer(rf"[{HAN}] +\{{term\}}`[{HAN}]", text):
        problems.append(f"space before a link: {m.group(0)!r}")
    for m in re.finditer(rf"\{{term\}}`[^`<]*[{HAN}]\s*(?:<[^<>`]*>)?` +[{HAN}]", text):
        problems.append(f"space after a link: {m.group(0)[-20:]!r}")
    prose = _prose(text)
    for m in re.finditer(r"\s+%", prose):
        problems.append(f"space before %: {text[max(0, m.start() - 12):m.end()]!r}")
    for m in re.finditer(r"\s+“|”\s+", prose):
        problems.append(f"space at a quotation mark: {text[max(0, m.start() - 8):m.end() + 8]!r}")
    seen = _rendered(text)
    for m in re.finditer(rf"[{HAN}][{LATIN}]|[{LATIN}][{HAN}]", seen):
        problems.append(f"no space between Chinese and Latin: "
                        f"{seen[max(0, m.start() - 8):m.end() + 8]!r}")
    return problems


def test_typography_checker_sees_each_slip():
    assert typography_problems("外加一个 {term}`查询 <query>`，它是其中的 {term}`键 <key>`。") == [
        "space before a link: '个 {term}`查'", "space before a link: '的 {term}`键'"]
    assert len(typography_problems("在 {term}`softmax 函数 <softmax>` 之前")) == 1
    assert len(typography_problems("约 {glue:text}`p:.0f` % 的查询，60 %")) == 2
    assert len(typography_problems("查找 “fruit” 的值")) == 2
    assert len(typography_problems("掩蔽softmax操作和{term}`softmax 函数 <softmax>`")) == 3
    good = ("在引入 {term}`softmax 函数 <softmax>`之前，约 {glue:text}`p:.1f`% 的查询"
            "（第 2 章）找到“fruit”的值 $x$，`x % 2` 和 $50 \\%$ 不变；见 {cite}`mody2022intuition`。")
    assert typography_problems(good) == []


def test_chinese_text_is_spaced_as_the_book_spaces_it():
    """Every translated message of every catalogue (chapters 15 and 16 too)."""
    wrong = [f"{name}: {p}" for name, _, text in chinese_messages()
             for p in typography_problems(text)]
    assert not wrong, f"{len(wrong)} slips:\n" + "\n".join(wrong[:80])


GLOSSARY_LINK = re.compile(r'(.)(\s*)<a class="reference internal" href="[^"]*#term-[^"]*">'
                           r'<span class="xref std std-term">([^<]+)</span></a>(\s*)(.)')


def test_glossary_links_sit_in_the_chinese_text_without_spaces(built_book):
    """On the built Chinese pages, no space between a Chinese character and a
    glossary link whose text begins or ends with one, either side."""
    wrong, links = [], 0
    for page in chinese_pages(built_book):
        text = (built_book / "zh" / page).read_text(encoding="utf-8")
        for before, gap, label, after_gap, after in GLOSSARY_LINK.findall(text):
            links += 1
            if (gap and CJK.match(before) and CJK.match(label[0])) or \
                    (after_gap and CJK.match(after) and CJK.match(label[-1])):
                wrong.append(f"{page}: {before}{gap}[{label}]{after_gap}{after}")
    assert links > 300, f"only {links} glossary links found"
    assert not wrong, f"{len(wrong)} links set off by spaces:\n" + "\n".join(wrong[:40])
