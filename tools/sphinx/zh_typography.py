"""Sphinx extension: the Chinese edition's typography and API page, at build time.

1. Spacing at inline boundaries. In MyST, ``**`` right after a Chinese
   character and before a role (``是**{term}`x`**``) cannot open emphasis,
   so the catalogues put a space there ("这就是 **前置层归一化**"), and a
   ``{doc}`` link's text is only known once resolved ("引入于 <link>").
   After the references are resolved, the whitespace between a Chinese
   character and the start or end of a strong, emphasis, reference, literal
   or inline node is removed where both sides are Chinese characters, or
   either side is Chinese punctuation. A space between Chinese and a Latin
   word, number or code stays: that is the catalogues' convention
   ("softmax 函数", "约 2%", tests/test_translation.py's typography checker).
2. Parenthetical citations ("[Press 和 Wolf，2017]") sit one space after the
   text before them, as 48 of the catalogues' citations do, and none after
   Chinese punctuation ("这就是归纳头[Olsson 等，2022]" was the exception).
   The bibliography's Chinese notes end with "。" and take "，" after
   Chinese, in the list and in the citations' tooltips (pybtex's style
   writes ". " and ", " between fields).
3. The API page. Its docstrings are English reStructuredText (tools/sphinx/
   i18n.py, piece 3); in the Chinese edition "Taught in <chapter> (chapter
   N)." becomes "讲解见第 N 章《<chapter>》。", a paragraph of its own (the
   English that followed it in the docstring's paragraph starts the next
   one), and autodoc's "Alias for field
   number N" becomes "字段 N 的别名". The Python domain's index entries
   "module; attnbook.x" get the edition's word for module.
4. Folding buttons say what they fold: myst-nb formats "Show code cell
   {type}" with type source (the code), content (the whole cell) or
   output(s). The Chinese edition's one label (nb_code_prompt_show, which
   has no {type}) is replaced by the English template before myst-nb
   formats it, and each formatted label is then translated by theme.po
   ("Show code cell source" 显示代码, "... content" 显示代码单元).
5. Field lists ("参数：", "返回：") end their names with a full-width colon.
6. The glossary's Chinese names (its ``**中文**``) are index entries and
   glossary terms too, so 消融 is in the general index and a Chinese search
   ranks the glossary entry first, as an English one does. ("引入于第 16
   章《归纳头》" is written so in glossary.po, with the {doc} link's own
   title: a chapter title such as 归纳头 is also a term.)
7. The general index sorts a Chinese word by its pinyin (the glossary's) and
   lists it under the pinyin's first letter, among the English words.

Every piece does nothing in the English edition.
"""
from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
#: CJK punctuation and full-width forms, and the quotation marks and ellipsis
#: Chinese text uses
PUNCT = re.compile(r"[\u3000-\u303f\uff00-\uffef\ufe30-\ufe4f“”‘’…]")
SPACE = " \t\n"
INLINE = (nodes.strong, nodes.emphasis, nodes.reference, nodes.literal, nodes.inline)
#: where whitespace is not prose
VERBATIM = (nodes.literal_block, nodes.raw, nodes.math, nodes.math_block, nodes.literal,
            addnodes.desc_signature)


def chinese_edition(config) -> bool:
    return (config.language or "").startswith("zh")


def joins(outside: str, inside: str) -> bool:
    """Whether no space belongs between the characters `outside` and `inside`."""
    return bool(PUNCT.match(outside) or PUNCT.match(inside)
                or (HAN.match(outside) and HAN.match(inside)))


def is_citation(node: nodes.Node) -> bool:
    return isinstance(node, nodes.inline) and "bibtex-citation" in node["classes"] \
        and node.astext().startswith("[")


def _set_text(old: nodes.Text, new: str) -> None:
    parent = old.parent
    if new:
        parent.replace(old, nodes.Text(new))
    else:
        parent.remove(old)


def tighten(node: nodes.Element) -> int:
    """Remove the whitespace around the inline `node` where it sits between
    Chinese on both sides (piece 1); return how many gaps were closed."""
    text = node.astext()
    parent = node.parent
    if not text or parent is None or not isinstance(parent, nodes.TextElement):
        return 0
    closed = 0
    index = parent.index(node)
    before = parent[index - 1] if index > 0 else None
    if isinstance(before, nodes.Text) and before[-1:] in tuple(SPACE):
        kept = str(before).rstrip(SPACE)
        if kept and joins(kept[-1], text[0]):
            _set_text(before, kept)
            closed += 1
    index = parent.index(node)
    after = parent[index + 1] if index + 1 < len(parent) else None
    if isinstance(after, nodes.Text) and after[:1] in tuple(SPACE):
        kept = str(after).lstrip(SPACE)
        if kept and joins(kept[0], text[-1]):
            _set_text(after, kept)
            closed += 1
    return closed


def space_citation(node: nodes.Element) -> None:
    """One space before a parenthetical citation, none after Chinese punctuation (piece 2)."""
    parent = node.parent
    if parent is None or not isinstance(parent, nodes.TextElement):
        return
    index = parent.index(node)
    if index == 0:
        return
    before = parent[index - 1]
    if isinstance(before, nodes.Text):
        kept = str(before).rstrip(SPACE)
        if not kept:
            return
        wanted = kept if PUNCT.match(kept[-1]) else kept + " "
        if wanted != str(before):
            _set_text(before, wanted)
    elif isinstance(before, nodes.Element):
        last = before.astext()[-1:]
        if last and not PUNCT.match(last) and not last.isspace():
            parent.insert(index, nodes.Text(" "))


#: what a full stop may follow to become "。": Chinese, or a closing Chinese mark
STOP_AFTER = re.compile(r"[\u3400-\u9fff”’）]")


def chinese_stops(text: str, last: str = "") -> str:
    """"权重绑定." -> "权重绑定。", "博客文章, 2024" -> "博客文章，2024": an ASCII
    full stop or comma right after Chinese becomes the full-width one
    (`last`: the character before `text`, in the node before it)."""
    def stop(m):
        before = m.group(1) or last
        return m.group(1) + "。" if before and STOP_AFTER.match(before[-1]) else m.group(0)

    def comma(m):
        before = m.group(1) or last
        return m.group(1) + "，" if before and HAN.match(before[-1]) else m.group(0)
    text = re.sub(r"(^|[\u3400-\u9fff”’）])\.(?=\s|$)", stop, text)
    return re.sub(r"(^|[\u3400-\u9fff]), ", comma, text)


def chinese_bibliography(document: nodes.document) -> None:
    """Piece 2b: the bibliography's Chinese notes end with "。" (pybtex's
    style puts "." and ", " after every field), in the entries and in the
    citations' tooltips."""
    for citation in document.findall(nodes.citation):
        last = ""
        for text in list(citation.findall(nodes.Text)):
            new = chinese_stops(str(text), last)
            if new != str(text):
                text.parent.replace(text, nodes.Text(new))
            last = new[-1:] or last
    for inline in document.findall(nodes.inline):
        if "bibtex-citation" in inline["classes"]:
            for ref in inline.findall(nodes.reference):
                if ref.get("reftitle"):
                    ref["reftitle"] = chinese_stops(ref["reftitle"])


class ChineseInlineSpacing(SphinxPostTransform):
    """Pieces 1 and 2, after references (10), citations and myst-nb (199) are resolved."""

    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs) -> None:
        if not chinese_edition(self.config):
            return
        for node in list(self.document.findall(nodes.Element)):
            if not isinstance(node, INLINE) or node.parent is None:
                continue
            if any(isinstance(a, VERBATIM) for a in _ancestors(node)):
                continue
            tighten(node)
            if is_citation(node):
                space_citation(node)
        chinese_bibliography(self.document)


def _ancestors(node: nodes.Node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


# --- 3. the API page --------------------------------------------------------

CHAPTER = re.compile(r"^ \(chapter (\d+)\)([.,;:]?)\s*")
INSIDE = re.compile(r"^, chapter (\d+)\)")
PLAIN = re.compile(r"Taught in chapter (\d+)([.,;:]?) ?")
ALIAS = re.compile(r"^Alias for field number (\d+)$")
PUNCT_ZH = {".": "。", ",": "，", ";": "；", ":": "：", "": ""}


def _rest_of_docstring(text: str) -> str:
    """The English after "Taught in ... (chapter N)" as a sentence of its own:
    "; chapter 14's layer shares it" -> "Chapter 14's layer shares it",
    ", and used by the training" -> "Used by the training"."""
    text = re.sub(r"^and\s+", "", text.lstrip())
    return text[:1].upper() + text[1:]


def split_after(paragraph: nodes.paragraph, index: int, tail: str) -> nodes.paragraph | None:
    """End `paragraph` at child `index` (whose text now ends the Chinese
    sentence) and move `tail` and the children after it into a paragraph of
    their own, so that "讲解见第 N 章《…》。" is never followed by half an English
    paragraph. Returns the new paragraph, or None if nothing followed."""
    following = list(paragraph.children[index + 1:])
    if not tail.strip() and not following:
        return None
    rest = nodes.paragraph()
    if tail.strip():
        rest += nodes.Text(_rest_of_docstring(tail))
    for child in following:
        paragraph.remove(child)
        rest += child
    if not tail.strip() and isinstance(rest[0], nodes.Text):
        rest.replace(rest[0], nodes.Text(_rest_of_docstring(str(rest[0]))))
    paragraph.parent.insert(paragraph.parent.index(paragraph) + 1, rest)
    return rest


def taught_in(paragraph: nodes.paragraph) -> bool:
    """"Taught in <doc link> (chapter N)." -> "讲解见第 N 章《<doc link>》。";
    "<doc link> (chapter N)" elsewhere -> "第 N 章《<doc link>》" and
    "(<doc link>, chapter N)" -> "（第 N 章《<doc link>》）". True if changed."""
    changed = False
    for xref in list(paragraph.findall(addnodes.pending_xref)):
        if xref.get("reftype") != "doc" or xref.parent is not paragraph:
            continue
        index = paragraph.index(xref)
        if index == 0 or index + 1 >= len(paragraph):
            continue
        before, after = paragraph[index - 1], paragraph[index + 1]
        if not (isinstance(before, nodes.Text) and isinstance(after, nodes.Text)):
            continue
        head, rest = str(before), str(after)
        if (m := CHAPTER.match(rest)) and head.endswith("Taught in "):
            head = head[:-len("Taught in ")]
            if not head.strip() and index == 1 and m.group(2):
                # the docstring opens with it: the Chinese sentence is a
                # paragraph of its own, the English goes on in the next one
                paragraph.replace(before, nodes.Text(f"讲解见第 {m.group(1)} 章《"))
                paragraph.replace(after, nodes.Text("》。"))
                split_after(paragraph, index + 1, rest[m.end():])
                return True
            head += f"讲解见第 {m.group(1)} 章《"
            rest = f"》{PUNCT_ZH[m.group(2)]}" + rest[m.end():]
        elif m := CHAPTER.match(rest):
            head += f"第 {m.group(1)} 章《"
            rest = "》" + rest[m.start(2):]
        elif (m := INSIDE.match(rest)) and head.endswith("("):
            head = head[:-1] + f"（第 {m.group(1)} 章《"
            rest = "》）" + rest[m.end():]
        else:
            continue
        paragraph.replace(before, nodes.Text(head))
        paragraph.replace(after, nodes.Text(rest))
        changed = True
    return changed


class ChineseApiPage(SphinxTransform):
    """Piece 3 on the doctree as read (autodoc's nodes are there; after Locale, 20)."""

    default_priority = 30

    def apply(self, **kwargs) -> None:
        if not chinese_edition(self.config):
            return
        paragraphs = list(self.document.findall(nodes.paragraph))
        while paragraphs:
            paragraph = paragraphs.pop(0)
            if paragraph.parent is None:
                continue
            following = paragraph.parent.index(paragraph) + 1
            siblings = len(paragraph.parent)
            if len(paragraph) == 1 and isinstance(paragraph[0], nodes.Text):
                m = ALIAS.match(paragraph[0].astext().strip())
                if m:
                    paragraph.replace(paragraph[0], nodes.Text(f"字段 {m.group(1)} 的别名"))
                    continue
            taught_in(paragraph)
            first = paragraph[0] if len(paragraph) else None
            if isinstance(first, nodes.Text) and (m := PLAIN.match(str(first))) and m.group(2):
                paragraph.replace(first, nodes.Text(f"讲解见第 {m.group(1)} 章。"))
                split_after(paragraph, 0, str(first)[m.end():])
            for text in list(paragraph.findall(nodes.Text)):
                if "Taught in chapter" in text:
                    text.parent.replace(text, nodes.Text(PLAIN.sub(
                        lambda m: f"讲解见第 {m.group(1)} 章{PUNCT_ZH[m.group(2)]}", str(text))))
            if len(paragraph.parent) > siblings:  # split: read the new paragraph too
                paragraphs.insert(0, paragraph.parent[following])
        for index in self.document.findall(addnodes.index):
            index["entries"] = [(kind, re.sub(r"^module; ", "模块; ", value), *rest)
                                for kind, value, *rest in index["entries"]]


# --- 6. the glossary's Chinese names -------------------------------------------

class ChineseGlossaryNames(SphinxTransform):
    """Piece 6 (after Locale, 20): each term's Chinese names beside its English one."""

    default_priority = 31

    def apply(self, **kwargs) -> None:
        if not chinese_edition(self.config) or self.env.docname != "glossary":
            return
        from tools.glossary.terms import glossary_entries
        names = {e.term: [zh for zh, _, _ in e.chinese] for e in glossary_entries()}
        std = self.env.get_domain("std")
        for term in self.document.findall(nodes.term):
            index = next(iter(term.findall(addnodes.index)), None)
            if index is None or not term["ids"]:
                continue
            node_id = term["ids"][0]
            for chinese in names.get(term.astext(), []):
                if ("term", chinese) in std.objects:
                    continue
                index["entries"].append(("single", chinese, node_id, "main", None))
                std._note_term(chinese, node_id, location=term)


# --- 4. folding buttons -------------------------------------------------------

#: myst-nb's own labels, which it formats with the type (source, content, output(s))
PROMPTS = {"prompt_show": "Show code cell {type}", "prompt_hide": "Hide code cell {type}"}


class EnglishFoldingPrompts(SphinxPostTransform):
    """Piece 4, first half: just before myst-nb's HideInputCells (199) formats
    the cells' prompts, give them the English templates, whose formatted
    labels theme.po translates one by one."""

    default_priority = 198
    formats = ("html",)

    def run(self, **kwargs) -> None:
        if not chinese_edition(self.config):
            return
        for node in self.document.findall(nodes.container):
            if node.get("nb_element") == "cell_code" and node.get("hide_mode"):
                for key, template in PROMPTS.items():
                    node[key] = template


class FoldingLabels(SphinxPostTransform):
    """Piece 4, second half: after HideInputCells (199), each label translated."""

    default_priority = 201
    formats = ("html",)

    def run(self, **kwargs) -> None:
        if not chinese_edition(self.config):
            return
        from myst_nb.sphinx_ import HideCodeCellNode
        from sphinx.locale import _
        for node in self.document.findall(HideCodeCellNode):
            for key in PROMPTS:
                node[key] = str(_(node[key]))


# --- 5. field names ("参数：") ---------------------------------------------------

def visit_field_name(self, node):
    type(self).visit_field_name(self, node)


def depart_field_name(self, node):
    """docutils writes "<name><span class="colon">:</span>"; the Chinese edition a full-width colon."""
    if chinese_edition(self.config):
        self.body.append('<span class="colon">：</span></dt>\n')
    else:
        type(self).depart_field_name(self, node)


# --- 7. the general index in pinyin order ---------------------------------------

#: Chinese index words that are not a glossary name, with their pinyin
#: (piece 3 turns "module; attnbook.x" into "模块; attnbook.x")
PINYIN = {"模块": "mókuài"}


def chinese_pinyin() -> dict[str, str]:
    """Each Chinese index word -> its pinyin without tones (tools/glossary/terms.py's key)."""
    from tools.glossary.terms import glossary_entries, pinyin_key
    names = {zh: pinyin for e in glossary_entries() for zh, pinyin, _ in e.chinese}
    return {zh: pinyin_key(pinyin) for zh, pinyin in {**names, **PINYIN}.items()}


def pinyin_index(entries: list, pinyin: dict[str, str]) -> list:
    """Sphinx groups and sorts index entries by code point, so each Chinese
    word heads a group of its own (上, 交, 位, ..., 残 in the middle). Here a
    Chinese word goes under its pinyin's first letter and sorts by its pinyin
    among the English words (残差流 cánchāliú under C, beside "causal mask"),
    as the glossary's 中文 → English table is sorted. A Chinese word without
    a known pinyin keeps its own group (tests/test_zh_typography.py checks there is none)."""
    keyed = []
    for letter, group in entries:
        for entry in group:
            name = entry[0]
            if HAN.match(name) and name in pinyin:
                keyed.append((pinyin[name][:1].upper(), pinyin[name], entry))
            else:
                keyed.append((letter, name.lower(), entry))
    def latin(letter: str) -> bool:
        return len(letter) == 1 and letter.isascii() and letter.isalpha()
    first_latin = next((i for i, (k, _) in enumerate(entries) if latin(k)), len(entries))
    before = {k for k, _ in entries[:first_latin]}  # Sphinx's 符号 (Symbols) group

    def rank(letter: str) -> tuple:  # Symbols first, as Sphinx has it, then A-Z
        return (1 if latin(letter) else 0 if letter in before else 2), letter
    letters = sorted({k for k, _, _ in keyed}, key=rank)
    return [(letter, [e for _, _, e in sorted((x for x in keyed if x[0] == letter),
                                              key=lambda x: (x[1], x[2][0]))])
            for letter in letters]


def sort_chinese_index(app, pagename, templatename, context, doctree) -> None:
    """Piece 7 on the page "genindex" (html-page-context)."""
    if pagename != "genindex" or not chinese_edition(app.config):
        return
    if context.get("genindexentries"):
        context["genindexentries"] = pinyin_index(context["genindexentries"], chinese_pinyin())
        context["genindexcounts"] = [sum(1 + len(sub) for _, (_, sub, _) in group)
                                     for _, group in context["genindexentries"]]


def setup(app):
    app.connect("html-page-context", sort_chinese_index)
    app.add_node(nodes.field_name, override=True, html=(visit_field_name, depart_field_name))
    app.add_post_transform(ChineseInlineSpacing)
    app.add_post_transform(EnglishFoldingPrompts)
    app.add_post_transform(FoldingLabels)
    app.add_transform(ChineseApiPage)
    app.add_transform(ChineseGlossaryNames)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
