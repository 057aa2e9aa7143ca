"""Sphinx extension: the translated edition's interface, around the prose.

tools/sphinx/i18n.py translates the pages' own text; this module does what
the themes, sphinx-exercise, sphinxcontrib-bibtex and Sphinx's search
produce around it. i18n.py loads it, so the English build runs it too, and
each piece does nothing there (no catalogue, or a setting left unset).
tools/build/book.py sets the Chinese edition's settings (ZH_SETTINGS).

1. Theme strings. Two hand-written catalogues go in front of the ones the
   packages ship: booktheme.po (domain ``booktheme``, sphinx-book-theme's
   zh_CN uses Taiwan wording) and theme.po (domain ``sphinx``: strings of
   Sphinx and pydata-sphinx-theme their zh catalogues leave English, such as
   "Link to this heading" and "Color mode"). They are compiled here, in
   memory, so a fresh checkout's first build uses them too (Sphinx compiles
   the .mo files after this point). Strings the themes' templates hard-code
   in English are wrapped in ``_()`` by the overrides in _templates/, so they
   are extracted into sphinx.po like the book's own template strings.
2. Solution titles. sphinx-exercise writes "<Solution to> <Exercise n>",
   which in Chinese reads backwards ("解答 练习 25"). With
   ``book_solution_title`` (e.g. "{exercise} 的解答") the title is rebuilt
   in that order, the link to the exercise kept.
3. Textual citations. ``{cite:t}`` joins authors with English words
   ("Milakov and Gimelshein [2018]"). With ``book_citation_words`` the
   reference style is the configured one with those separators ("和", "等",
   and "；" between the works of one citation).
4. Bibliography notes. The ``note`` and ``howpublished`` fields of
   references.bib ("Blog post", "In Chinese. Source of ...") are English
   prose. The gettext builder adds them to the catalogue of the page that
   holds the bibliography; a translated build formats each entry with its
   fields translated (the bibliography and the citations' tooltips).
5. Chinese search queries (the splitter is registered by i18n.py's Chinese
   search language): Sphinx splits a query at spaces and punctuation only,
   so 梯度消失 was one word, absent from an index that jieba cut into
   梯度 and 消失. SPLITTER segments the query in the browser against the
   index's own terms, longest first (forward maximum matching); a character
   that starts no term is dropped where the index dropped it (a one-character
   word between two terms, 查询和键), else its bigram is searched for.
6. The folding button's label: sphinx-togglebutton's script labels every
   button "Toggle hidden content"; with ``book_toggle_label`` a script
   relabels them once they exist.
7. Search messages. The search page's script takes its messages from
   Sphinx's compiled translations.js, which the catalogues of piece 1 do not
   reach. Each message of JS_MESSAGES that theme.po translates is added by
   a script that runs after translations.js (the no-result message: there
   are no "categories" to select in this book).
8. Not about language, but about the bibliography plugins pieces 3 and 4
   use, so here: pybtex and sphinxcontrib-bibtex find their plugins from one
   scan of the installed entry points (`scan_entry_points_once`), in both
   editions.
"""
from __future__ import annotations

import gettext
import io
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LOG = logging.getLogger(__name__)


# --- 1. theme strings ---------------------------------------------------------

#: hand-written catalogue -> the translation domain it goes in front of
OVERRIDES = {"booktheme.po": "booktheme", "theme.po": "sphinx"}


def compiled(po: Path) -> gettext.GNUTranslations:
    """`po` compiled in memory (babel), without its fuzzy messages."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    with po.open("rb") as f:
        catalog = read_po(f)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def _theme_catalogue_overrides(app, config) -> None:
    """Put each hand-written catalogue in front of its domain's translations."""
    from sphinx import locale
    if not config.language or config.language == "en":
        return
    for name, domain in OVERRIDES.items():
        key = ("general", domain)
        for folder in config.locale_dirs:
            po = Path(app.srcdir, folder, config.language, "LC_MESSAGES", name)
            if not po.is_file() or key not in locale.translators:
                continue
            ours = compiled(po)
            ours.add_fallback(locale.translators[key])
            locale.translators[key] = ours
            if domain == "sphinx":
                app.translator = ours          # the templates' _() is this one


# --- 2. solution titles ---------------------------------------------------------

class OrderSolutionTitles(SphinxPostTransform):
    """"<Solution to> <link: Exercise n>" -> the template's order, e.g.
    "<link: 练习 n> 的解答" (after sphinx-exercise's title post-transforms, 21-22)."""

    default_priority = 23

    def run(self, **kwargs) -> None:
        template = self.config.book_solution_title
        if not template or "sphinx_exercise" not in self.app.extensions:
            return
        from sphinx_exercise.nodes import solution_node
        before, _, after = template.partition("{exercise}")
        for solution in self.document.findall(solution_node):
            title = solution[0] if len(solution) else None
            if not (isinstance(title, nodes.title) and len(title) == 2
                    and isinstance(title[0], nodes.Text)
                    and isinstance(title[1], nodes.reference)):
                continue
            link = title[1]
            exercise = link.astext().strip()
            link.children = []
            link += nodes.Text(exercise)
            title.children = []
            if before:
                title += nodes.Text(before)
            title += link
            link.parent = title
            if after:
                title += nodes.Text(after)
            solution["title"] = before + exercise + after


# --- 3. textual citations -----------------------------------------------------------

REFERENCING = "sphinxcontrib.bibtex.style.referencing"


def _citation_words(app, config) -> None:
    """Register the configured reference style with the edition's words and use it."""
    words = config.book_citation_words
    if not words or "sphinxcontrib.bibtex" not in app.extensions:
        return
    from sphinxcontrib.bibtex.plugin import find_plugin, register_plugin
    from sphinxcontrib.bibtex.style.referencing import PersonStyle
    base = find_plugin(REFERENCING, config.bibtex_reference_style)
    own = {f.name for f in fields(base)}
    if "person" not in own:
        LOG.warning("book_citation_words: reference style %r has no person style",
                    config.bibtex_reference_style)
        return
    person = {k: v for k, v in words.items() if k in {f.name for f in fields(PersonStyle)}}
    style = {k: v for k, v in words.items() if k in own}
    # "bracket_sep": the separator between the works of one citation, in
    # every bracket style ("[A, 2021, B, 2022]" has the author-year comma)
    bracket_sep = words.get("bracket_sep")

    @dataclass
    class Translated(base):
        person: PersonStyle = field(default_factory=lambda: PersonStyle(**person))

        def __post_init__(self):
            for name, value in style.items():
                setattr(self, name, value)
            if bracket_sep:
                for f in fields(self):
                    if f.name.startswith("bracket_"):
                        setattr(self, f.name, replace(getattr(self, f.name), sep=bracket_sep))
            super().__post_init__()

    name = f"{config.bibtex_reference_style}-{config.language}"
    register_plugin(REFERENCING, name, Translated, force=True)
    config.bibtex_reference_style = name


# --- 4. bibliography notes ------------------------------------------------------------

#: the fields of references.bib that are prose
BIB_FIELDS = ("howpublished", "note")


def bib_message(value: str) -> str:
    """A field's text as a catalogue message: its whitespace collapsed."""
    return " ".join(value.split())


def bibliography_pages(env) -> list[str]:
    """The documents that hold a ``{bibliography}``."""
    domain = env.get_domain("cite")
    return sorted({key.docname for key in domain.bibliographies})


def _extract_bib_fields(app, doctree, docname: str) -> None:
    """The gettext builder: add the bib files' prose fields to the catalogue
    of the page with the bibliography."""
    if (app.builder.name != "gettext" or "sphinxcontrib.bibtex" not in app.extensions
            or docname not in bibliography_pages(app.env)):
        return
    from sphinx.builders.gettext import MsgOrigin
    from sphinx.util.i18n import docname_to_domain
    catalog = app.builder.catalogs[docname_to_domain(docname, app.config.gettext_compact)]
    for entry in app.env.get_domain("cite").bibdata.data.entries.values():
        for name in BIB_FIELDS:
            if name in entry.fields:
                catalog.add(bib_message(entry.fields[name]), MsgOrigin(doctree["source"], 0))


def _translated_bibliography_style(app, config) -> None:
    """In a translated build, format entries with their prose fields translated."""
    if (not config.language or config.language == "en"
            or "sphinxcontrib.bibtex" not in app.extensions):
        return
    import pybtex.plugin
    from pybtex.database import Entry
    base = pybtex.plugin.find_plugin("pybtex.style.formatting", config.bibtex_default_style)
    catalogues: list = []

    def translate(text: str) -> str:
        if not catalogues:
            from sphinx.locale import init as init_locale
            from sphinx.util.i18n import docname_to_domain
            dirs = [str(Path(app.srcdir, d)) for d in config.locale_dirs]
            for page in bibliography_pages(app.env):
                domain = docname_to_domain(page, config.gettext_compact)
                catalogues.append(init_locale(dirs, config.language, domain)[0])
        message = bib_message(text)
        for catalog in catalogues:
            if (found := catalog.gettext(message)) != message:
                return found
        return text

    class Translated(base):
        def format_entry(self, label, entry, bib_data=None):
            changed = {k: translate(v) for k, v in entry.fields.items() if k in BIB_FIELDS}
            if any(entry.fields[k] != v for k, v in changed.items()):
                copy = Entry(entry.type, fields={**entry.fields, **changed},
                             persons=entry.persons)
                copy.key = entry.key
                entry = copy
            return super().format_entry(label, entry, bib_data=bib_data)

    name = f"{config.bibtex_default_style}-{config.language}"
    pybtex.plugin.register_plugin("pybtex.style.formatting", name, Translated, force=True)
    config.bibtex_default_style = name


# --- 5. Chinese search queries ---------------------------------------------------------

SPLITTER = r"""
/* tools/sphinx/i18n_ui.py: segment a query as the index was segmented,
   longest index term first; see that module's docstring (piece 5). */
var splitQuery = (query) => {
  const han = /\p{Script=Han}/u;
  const index = typeof Search !== "undefined" ? Search._index : null;
  // a term on no page is left over from an earlier build (Sphinx keeps the
  // old index's terms when it re-reads every page, with empty page lists)
  const on = (map, word) => Object.hasOwn(map, word)
      && !(Array.isArray(map[word]) && map[word].length === 0);
  const known = (word) => index !== null && (on(index.terms, word) || on(index.titleterms, word));
  let longest = 1;
  if (index !== null) {
    for (const term of [...Object.keys(index.terms), ...Object.keys(index.titleterms)]) {
      if (term.length > longest && han.test(term)) longest = term.length;
    }
  }
  const words = [];
  for (const word of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    for (const part of word.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu) || []) {
      if (index === null || !han.test(part)) {
        words.push(part);
        continue;
      }
      // the length of the longest index term that starts at i, or 0
      const termAt = (i) => {
        for (let n = Math.min(longest, part.length - i); n >= 1; n--) {
          if (known(part.substr(i, n))) return n;
        }
        return 0;
      };
      for (let i = 0; i < part.length;) {
        const n = termAt(i);
        if (n) {
          words.push(part.substr(i, n));
          i += n;
          continue;
        }
        // no term starts here: a lone character before a term was dropped
        // from the index too; otherwise search for the bigram
        if (i + 1 < part.length && !termAt(i + 1)) words.push(part.substr(i, 2));
        i += 1;
      }
    }
  }
  return words;
};
"""


# --- 6. the folding button's label ----------------------------------------------------

def _toggle_label(app, config) -> None:
    label = config.book_toggle_label
    if not label:
        return
    # after sphinx-togglebutton's script has added the buttons: it runs before
    # DOMContentLoaded on the search page, and after the first paint on the
    # others (tools/sphinx/firstpaint.py's loader, which then fires
    # attn:late-scripts-ran)
    app.add_js_file(None, body=(
        "(function () {\n"
        "  function label() {\n"
        '    document.querySelectorAll("button.toggle-button").forEach(function (b) {\n'
        f'      b.setAttribute("aria-label", {json.dumps(label, ensure_ascii=False)});\n'
        "    });\n"
        "  }\n"
        '  document.addEventListener("DOMContentLoaded", label);\n'
        '  document.addEventListener("attn:late-scripts-ran", label);\n'
        "})();"))


# --- 7. search messages ------------------------------------------------------------

#: searchtools.js messages theme.po may translate
JS_MESSAGES = ("Your search did not match any documents. Please make sure that all words are "
               "spelled correctly and that you've selected enough categories.",)


def _search_messages(app) -> None:
    config = app.config
    if not config.language or config.language == "en" or app.builder.format != "html":
        return
    ours = {m: app.translator.gettext(m) for m in JS_MESSAGES}
    ours = {m: t for m, t in ours.items() if t != m}
    if ours:
        # after translations.js (priority 500), whose messages it replaces
        app.add_js_file(None, priority=900, body=(
            "Object.assign(Documentation.TRANSLATIONS, "
            f"{json.dumps(ours, ensure_ascii=False)});"))


def scan_entry_points_once() -> None:
    """Let pybtex and sphinxcontrib-bibtex read the installed entry points
    from one scan instead of one per plugin lookup.

    Both look a plugin up with importlib.metadata's ``entry_points(group=,
    name=)``, which reads the metadata of every installed distribution on
    each call: the bibliography's citations made 143 such calls, 3.1 of a
    profiled English build's 28 seconds. Registering every pybtex plugin
    up front (pybtex's register_plugin) also avoided them, but imported
    every plugin, 0.44 s on every rebuild. The packages' module-level
    ``entry_points`` is replaced by one that selects from a single scan,
    made when first asked (a plugin installed during the build is not seen)."""
    import functools
    from importlib import metadata

    import pybtex.plugin
    import sphinxcontrib.bibtex.plugin as bibtex_plugin
    scan = functools.cache(metadata.entry_points)

    def entry_points(**params):
        return scan().select(**params)
    pybtex.plugin.entry_points = bibtex_plugin.entry_points = entry_points


def setup(app):
    scan_entry_points_once()
    app.add_config_value("book_solution_title", None, "env")
    app.add_config_value("book_citation_words", None, "env")
    app.add_config_value("book_toggle_label", None, "html")
    app.connect("config-inited", _theme_catalogue_overrides)
    app.connect("config-inited", _citation_words)
    app.connect("config-inited", _translated_bibliography_style)
    app.connect("config-inited", _toggle_label)
    app.connect("doctree-resolved", _extract_bib_fields)
    app.connect("builder-inited", _search_messages)
    app.add_post_transform(OrderSolutionTitles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
