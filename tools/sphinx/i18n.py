"""Sphinx extension: what the Chinese edition (a gettext translation) needs; the
interface around the prose (theme strings, solution titles, citations, the
search query) is tools/sphinx/i18n_ui.py's, which this extension loads.

Only prose and the figures' alt text are translated
(locales/zh_CN/LC_MESSAGES/*.po); code, outputs, glued numbers and figures
come from the same executed notebooks. Nine pieces, each a few lines:

1. Glue roles in translated messages. myst-nb parses a notebook with a
   notebook renderer that holds the notebook's glue data, stores it on the
   document as ``document["nb_renderer"]`` so that the ``{glue:...}`` roles can
   find it, and drops it when parsing ends. Sphinx translates afterwards: its
   ``Locale`` transform parses every translated message as a *new* small
   document (source ``...:<translated>``), where the glue roles find no
   renderer and fail with "No key ... found in glue data" (so ``-W`` fails
   and the number is missing). This extension keeps the renderer of the
   document being read in ``env.temp_data`` (which Sphinx clears after each
   document) and lends it to the translated messages of that same document
   while they are parsed. Nothing else changes: the glue data is the one
   the original parse loaded from the execution cache.
2. Toctree captions (``_toc.yml``'s part captions). sphinx-external-toc
   inserts the toctrees (transform priority 100) after Sphinx's ``Locale``
   transform (priority 20), so their captions are never translated. A
   transform right after the insertion looks them up in the page's catalogue
   (they are extracted there: intro.po).
3. Autodoc stays out of the catalogue. api.md's docstrings are
   reStructuredText; their translations would be parsed as MyST. Every node
   autodoc generates (its source says ``docstring of ...``, or it sits in a
   ``desc`` signature block) is marked ``translatable = False`` before the
   ``Locale`` transform and before the gettext builder extracts messages,
   so api.po holds only api.md's own prose and "100 % translated" is
   reachable.
4. Chinese search. Sphinx splits Chinese text with jieba (pinned in
   requirements.txt); jieba alone splits compounds it does not know
   (注意力汇聚, 键值对), and Sphinx drops one-character words (键, 值). A
   user dictionary made from the glossary's Chinese terms (every
   ``**中文**`` of glossary.md) is given to jieba (``html_search_options``),
   and the Chinese search language below keeps one-character words that
   the dictionary lists. Pages are cut with jieba's dictionary alone (no
   HMM, which coins words from context), so a phrase is cut alike on every
   page, and the query splitter segments a query against the index's terms
   in the browser (tools/sphinx/i18n_ui.py, piece 5). The Latin words met
   while indexing are kept in a set (Sphinx 7.4 keeps a list and searches it
   for every word it stems, which took 7.3 of a profiled 50 s build).
5. Figure alt text. A figure is a cell output (image/png beside text/plain);
   its alt text comes from the cell's metadata (``mystnb.image.alt``) and is
   on the image node from the start, so Sphinx's ``Locale`` transform
   translates it like any other message. It was never extracted: myst-nb's
   post-transform SelectMimeType keeps one representation per output, by the
   builder's priority list, and for the gettext builder that list has no
   image type, so it kept text/plain and dropped the image node before the
   builder collected the messages. Ranking the image types first for the
   gettext builder, as the HTML builder does (``nb_mime_priority_overrides``,
   at config-inited), puts the alt texts into the page's catalogue. Explorer
   frames are raw HTML made by the kernel: see 8.
6. The language switch: every page gets a link to the same page in the other
   edition (``book_language_switch`` = (label, relative prefix), set by
   tools/build/book.py), rendered by _templates/language-switch.html. The
   link is relative, so it works from file:// and offline.
7. Small doctrees. Sphinx's ``Locale`` transform parses each translation as
   a little document of its own, whose settings hold the build environment,
   and moves the new nodes into the page; nodes below the top level keep
   pointing to that little document, and nodes it replaced stay in
   ``document.ids``. Sphinx clears the environment from the page's own
   settings before it pickles the doctree, but not from these, so every
   Chinese doctree carried the whole environment (every chapter's
   explorer frames among it): 55 MB of doctrees against 8.9 MB in English,
   and 4 s of unpickling on a one-page rebuild. After reading, every node is
   pointed back at its page and the replaced nodes leave ``document.ids``.
8. One set of default settings. myst-parser 3 (which jupyter-book 1 pins)
   builds docutils' default settings, an option parser, for a throwaway
   document on every parse, even when it is handed the document to fill
   (``options.get("document", make_document())``). Sphinx parses each of the
   Chinese edition's 1,700 messages on its own: 3.9 of a profiled 50 s
   build. The defaults are now built once per parser and copied.
9. Each translation parsed once. Sphinx's ``Locale`` transform parses every
   translated message twice: once to map translated section titles and
   glossary terms, once to put it in the page (the first parse of any other
   message is thrown away). The first parse of a message is kept for the
   page being read (``env.temp_data``) and both get a copy of it: in a
   profiled Chinese build, 1,669 parses became 916 and the translating took
   5.9 s instead of 7.5 (the build 27.1 s instead of 29.0). A parse has one
   side effect: sphinxcontrib-bibtex notes each citation it meets, so the
   thrown-away parse gave the reference list extra back-links (see
   tools/sphinx/a11y.py's visit_citation).

The figures' and explorers' own text (their titles, labels, sliders and
alt text) is drawn in Chinese by the kernel: tools/sphinx/figures.py.
"""
from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

LOG = logging.getLogger(__name__)
KEY = "sphinx_i18n_nb_renderer"


# --- 1. glue roles in translated messages -----------------------------------

class _KeepRenderer(dict):
    """document.attributes while myst-nb parses: remember the renderer it pops."""

    def __init__(self, attributes: dict, temp_data: dict):
        super().__init__(attributes)
        self.temp_data = temp_data

    def pop(self, key, *default):
        value = super().pop(key, *default)
        if key == "nb_renderer" and value is not None:
            self.temp_data[KEY] = value
        return value


def replace_once(owner, name: str, make) -> None:
    """Set `owner.name` to `make(original)`, unless an earlier call (this build
    sets its extensions up once per process, the tests more often) did."""
    original = getattr(owner, name)
    if getattr(original, "_book_replaced", False):
        return
    replacement = make(original)
    replacement._book_replaced = True
    setattr(owner, name, replacement)


def build_default_settings_once() -> None:
    """Piece 8: myst-parser's make_document copies defaults made once."""
    import copy
    import functools

    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser as RSTParser
    from docutils.utils import new_document
    from myst_parser.mdit_to_docutils import base
    defaults = functools.cache(get_default_settings)

    def make(_original):
        def make_document(source_path="notset", parser_cls=RSTParser):
            return new_document(source_path, settings=copy.deepcopy(defaults(parser_cls)))
        return make_document
    replace_once(base, "make_document", make)


def parse_each_translation_once() -> None:
    """Piece 9: Sphinx's publish_msgstr, remembered per page being read."""
    from sphinx.transforms import i18n

    def make(original):
        def publish_msgstr(app, source, source_path, source_line, config, settings):
            parsed = app.env.temp_data.setdefault("book_parsed_msgstr", {})
            key = (source, source_path, source_line)
            if key not in parsed:
                parsed[key] = original(app, source, source_path, source_line, config,
                                       settings)
            return parsed[key].deepcopy()
        return publish_msgstr
    replace_once(i18n, "publish_msgstr", make)


def patch_myst_nb_parser() -> None:
    """Wrap MystNbParser.parse (once): keep the renderer, lend it to translations."""
    from myst_nb.sphinx_ import Parser

    def make(original):
        def parse(self, inputstring, document):
            env = getattr(document.settings, "env", None)
            if env is None:
                return original(self, inputstring, document)
            if document.current_source and document.current_source.endswith("<translated>"):
                kept = env.temp_data.get(KEY)
                if kept is None:
                    return original(self, inputstring, document)
                document.attributes["nb_renderer"] = kept
                try:
                    return original(self, inputstring, document)
                finally:
                    document.attributes.pop("nb_renderer", None)
            document.attributes = _KeepRenderer(document.attributes, env.temp_data)
            try:
                return original(self, inputstring, document)
            finally:
                # a plain dict again: doctrees are pickled
                document.attributes = dict(document.attributes)
        return parse
    replace_once(Parser, "parse", make)


# --- 2. toctree captions ------------------------------------------------------

def page_catalogue(transform: SphinxTransform):
    """The translations of the page `transform` is reading (a gettext
    catalogue), or None in the English build or where the page has none."""
    config = transform.config
    if not config.language or config.language == "en":
        return None
    from sphinx.locale import init as init_locale
    from sphinx.util.i18n import docname_to_domain
    dirs = [str(transform.env.srcdir / d) for d in config.locale_dirs]
    domain = docname_to_domain(transform.env.docname, config.gettext_compact)
    catalog, has_catalog = init_locale(dirs, config.language, domain)
    return catalog if has_catalog else None


class TranslateTocCaptions(SphinxTransform):
    """Translate toctree captions inserted by sphinx-external-toc (priority 100)."""

    default_priority = 105

    def apply(self, **kwargs) -> None:
        toctrees = [t for t in self.document.findall(addnodes.toctree) if t.get("caption")]
        catalog = page_catalogue(self) if toctrees else None
        if catalog is None:
            return
        for toctree in toctrees:
            toctree["caption"] = catalog.gettext(toctree["caption"])
            toctree["rawcaption"] = toctree["caption"]


# --- 3. autodoc output untranslated and out of the catalogue ----------------

def is_autodoc(node: nodes.Node) -> bool:
    source = getattr(node, "source", None) or ""
    return ":docstring of " in source or isinstance(node, (addnodes.desc_signature,
                                                             addnodes.desc_content))


class KeepAutodocUntranslated(SphinxTransform):
    """Mark what autodoc generated as not translatable (before Locale, priority 20)."""

    default_priority = 15

    def apply(self, **kwargs) -> None:
        for node in list(self.document.findall(nodes.Element)):
            if is_autodoc(node):
                for inner in node.findall(nodes.Element):
                    # Sphinx's RemoveTranslatableInline unwraps every ``inline``
                    # that carries a ``translatable`` attribute, whatever its
                    # value, and appends its children at the end of the parent:
                    # marking a signature's inlines turned ``axis=-1`` into
                    # ``=axis-1``. So an inline is marked only if it already is
                    # a placeholder for translation (docfields make those).
                    if not isinstance(inner, nodes.inline) or "translatable" in inner:
                        inner["translatable"] = False


# --- 4. Chinese search ---------------------------------------------------------

GLOSSARY_ZH = re.compile(r"\*\*([^*]*[\u4e00-\u9fff][^*]*)\*\*")


def glossary_chinese_terms(glossary: Path) -> list[str]:
    """The Chinese terms of the glossary: every ``**中文**`` of glossary.md."""
    text = glossary.read_text(encoding="utf-8")
    terms = []
    for bold in GLOSSARY_ZH.findall(text):
        for term in re.split(r"[、，,/；;（）()\s]+", bold):
            if re.search(r"[\u4e00-\u9fff]", term) and term not in terms:
                terms.append(term)
    return terms


def write_user_dictionary(terms: list[str], target: Path) -> Path:
    """A jieba user dictionary: one word a line (jieba picks a frequency that
    makes each word come out whole)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(f"{t}\n" for t in terms), encoding="utf-8")
    return target


def _search_dictionary(app, config) -> None:
    if not (config.language or "").startswith("zh"):
        return
    glossary = Path(app.srcdir) / "glossary.md"
    if not glossary.is_file():
        return
    terms = glossary_chinese_terms(glossary)
    path = write_user_dictionary(terms, Path(app.doctreedir).parent / "jieba-userdict.txt")
    config.html_search_options = {**(config.html_search_options or {}), "dict": str(path)}
    BookSearchChinese.single_characters = {t for t in terms if len(t) == 1}


class LatinTerms(set):
    """The Latin words a page holds, as SearchChinese's `latin_terms`."""
    extend = set.update


def register_search_language() -> None:
    from sphinx import search
    from sphinx.search.zh import SearchChinese

    from tools.sphinx.i18n_ui import SPLITTER

    class _BookSearchChinese(SearchChinese):
        single_characters: set[str] = set()
        js_splitter_code = SPLITTER     # queries segmented against the index's terms

        def word_filter(self, stemmed_word: str) -> bool:
            return len(stemmed_word) > 1 or stemmed_word in self.single_characters

        def init(self, options: dict[str, str]) -> None:
            super().init(options)
            # Sphinx 7.4 keeps the Latin words seen in a list and looks every
            # word up in it when stemming, so indexing grew with the square of
            # the book: 7.3 of the Chinese build's 50 profiled seconds. A set
            # answers the same question.
            self.latin_terms = LatinTerms()

        def split(self, input: str) -> list[str]:
            # jieba's dictionary only: its HMM coins words from context (查询和键
            # became 查询 + 和键 on one page, 查询 + 和 + 键 on another), so a
            # query segmented against the index missed pages holding the phrase
            import jieba
            latin = [t.strip() for t in self.latin1_letters.findall(input)]
            self.latin_terms.extend(latin)
            return list(jieba.cut_for_search(input, HMM=False)) + latin

    global BookSearchChinese
    BookSearchChinese = _BookSearchChinese
    search.languages["zh"] = _BookSearchChinese
    search.languages["zh_CN"] = _BookSearchChinese


BookSearchChinese = None


# --- 5. figure alt text -------------------------------------------------------

#: in the HTML builder's order, ahead of myst-nb's gettext list (text/latex 10,
#: text/markdown 20, text/plain 30), which has no image type
IMAGE_TYPES = {"image/svg+xml": 4, "image/png": 5, "image/gif": 6, "image/jpeg": 7}


def _extract_figures(app, config) -> None:
    """Let the gettext builder keep an output's image (and its alt text)."""
    config.nb_mime_priority_overrides = [*config.nb_mime_priority_overrides,
                                         *(("gettext", t, p) for t, p in IMAGE_TYPES.items())]


# --- 7. doctrees without the environment --------------------------------------

def adopt_translated_nodes(app, doctree: nodes.document) -> None:
    """Point every node at `doctree` and drop ids of nodes no longer in it."""
    inside = set()
    for node in doctree.findall():
        node.document = doctree
        inside.add(id(node))
    for name, node in list(doctree.ids.items()):
        if id(node) not in inside:
            del doctree.ids[name]


# --- 6. the language switch ---------------------------------------------------

def add_language_switch(app, pagename, templatename, context, doctree) -> None:
    """Give the template the link to this page in the other edition."""
    switch = app.config.book_language_switch
    if not switch:
        return
    label, prefix, lang = switch
    up = "../" * pagename.count("/")
    context["book_language_switch"] = {"label": label, "lang": lang,
                                       "href": f"{up}{prefix}{pagename}.html"}


def setup(app):
    app.setup_extension("tools.sphinx.i18n_ui")    # the interface around the prose
    app.setup_extension("tools.sphinx.zh_typography")  # spacing, the API page, fold labels
    patch_myst_nb_parser()
    build_default_settings_once()
    parse_each_translation_once()
    register_search_language()
    app.connect("config-inited", _search_dictionary)
    app.connect("config-inited", _extract_figures)
    app.add_transform(TranslateTocCaptions)
    app.add_transform(KeepAutodocUntranslated)
    app.add_config_value("book_language_switch", None, "html")
    app.connect("html-page-context", add_language_switch)
    app.connect("doctree-read", adopt_translated_nodes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
