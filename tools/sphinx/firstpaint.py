"""Sphinx extension: what a page fetches and runs before its first paint.

On a phone (tools/bench/phone.py) a chapter page fetched 360 KB before it
painted anything, ch 1 included, most of it for things the first screen
does not need. Three of them are cut here (the explorers' frames are
tools/sphinx/frames.py's, the search index _templates/layout.html's):

**Icons.** pydata-sphinx-theme draws its icons (the menu, search, colour-mode and
download buttons, admonition and breadcrumb marks, the "on this page"
arrow) with Font Awesome's solid font, ``fa-solid-900.woff2``: 157 KB that
every page fetched before its first paint (the header's icons ask for it,
and ``font-display: block`` holds them back until it arrives). The book
shows about twenty of its 1,400 glyphs.

After the build, this extension collects the glyphs the book can show:

- every ``fa-*`` class in the built pages and the theme's scripts, read
  through the theme's stylesheet (``.fa-bars:before{content:"\\f0c9"}``);
- every glyph the stylesheets put in ``content`` with the Font Awesome font
  (``--pst-icon-*``, the breadcrumb divider, sphinx-book-theme's arrow);

cuts the font down to them with fontTools and writes ``_static/icons.css``,
which every page links after the theme's stylesheet: the same family and
weight, the subset inlined as a data URI, and a ``unicode-range`` of
exactly those glyphs. The browser takes a glyph from the last face whose
range holds it, so the book's icons come from the subset with no request of
their own and show at first paint; a glyph outside it (an icon a later
template adds) still comes from the theme's full font, fetched only then.

**The theme's stylesheet** (pydata-sphinx-theme.css, 45 KB compressed, all
of it before the first paint) carries Bootstrap 5 whole and a rule for
each of Font Awesome's 2,000 icon classes. It is written without the rules
no page can match: a rule goes when each of its selectors names a class
(outside ``:not()``) that is neither a word of any built page nor a word of
any of the build's scripts, which add classes such as ``show`` at run time.
A selector with ``:is()``, ``:where()`` or ``:has()``, and every at-rule
(``@font-face``, ``@keyframes``' steps), stays.

**Scripts.** Sphinx's and the extensions' scripts (the copy button, the
folding buttons, sphinx-design's tabs, the search highlighter: 20 KB) were
loaded in <head> without ``defer``, and the theme's bootstrap.js and
pydata-sphinx-theme.js (30 KB) were deferred at the end of the body. None of
them draws anything on the first screen, but the browser's preload scanner
fetched them all before the first paint, and on a phone they took a quarter
of the bandwidth from the stylesheets and fonts that gate it. They are now
inserted, in their order and with ``async = false`` (so each runs after the
one before, as deferred scripts did), by a small inline loader at the end of
the body once the page has painted its first content (a ``paint`` entry
``first-contentful-paint``), or at the ``load`` event in a browser without
paint timing (``LOADER`` below; _templates/static/webpack-macros.html adds
the theme's two). Each of them waits for the document with
``document.readyState``, so running after DOMContentLoaded changes nothing;
sphinx-design's design-tabs.js listens only for DOMContentLoaded, and no
page of the book has tabs. ``documentation_options.js``, ``doctools.js``
and the Chinese edition's ``translations.js`` stay as they were (2.6 KB),
since inline scripts after them use what they define, and the search page
keeps them all blocking: its template loads searchtools.js, which calls
doctools.js's ``_ready`` at once. When every script has run, the loader sets
``data-late-scripts="ran"`` on ``<html>`` (the browser tests wait for it) and
fires ``attn:late-scripts-ran`` on the document, for an inline script that
works on what those scripts made (tools/sphinx/i18n_ui.py's labels of the
folding buttons, which sphinx-togglebutton's script adds).

**Formula fonts.** A page with formulas preloads the KaTeX fonts they use
(tools/sphinx/math.py), so formulas show at first paint: 42 KB on chapter
16, 93 KB on chapter 5, for fonts of 200 to 500 glyphs of which the book's
formulas use a few dozen. Each KaTeX font in the build is cut down to the
characters of the edition's formulas (the text of KaTeX's HTML on every
page), from the vendored originals in _vendor/katex/fonts.

**Figures.** The browser fetched every figure of a page before painting it
(110 KB on chapter 16's first screen, none of them on it): the figures are
``loading="lazy"``, so only those near the viewport are fetched.
"""
from __future__ import annotations

import base64
import html
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from sphinx.util import logging

LOG = logging.getLogger(__name__)
CSS = "icons.css"
FAMILY = "Font Awesome 6 Free"
FONT = "vendor/fontawesome/webfonts/fa-solid-900.woff2"
THEME_CSS = "styles/pydata-sphinx-theme.css"
STYLESHEETS = ("styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css")

RULE = re.compile(r"([^{}]*)\{([^{}]*)\}")
CLASS_GLYPH = re.compile(r"\.(fa-[a-z0-9-]+):(?:before|after)")
CONTENT = re.compile(r'content:\s*"((?:[^"\\]|\\[0-9a-fA-F]{1,6}\s?|\\.)*)"')
VARIABLE = re.compile(r'(--pst-(?:icon-[a-z-]+|breadcrumb-divider)):\s*"((?:[^"\\]|\\.)*)"')
USED_CLASS = re.compile(r"\bfa-[a-z0-9-]+")
COMMENT = re.compile(r"/\*.*?\*/", re.S)
EMPTY_MEDIA = re.compile(r"@(?:media|supports)[^{}]*\{\s*\}")
FUNCTIONAL = re.compile(r":(?:is|where|has|matches|-webkit-any)\(")
NOT = re.compile(r":not\([^()]*\)")
SELECTOR_CLASS = re.compile(r"\.(-?[A-Za-z_][\w-]*)")
WORD = re.compile(r"-?[A-Za-z_][\w-]*")


def css_string(text: str) -> str:
    """A CSS string's characters, its escapes (``\\f0c9``) read."""
    return re.sub(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)",
                  lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text)


def icon_glyphs(css: str) -> tuple[dict[str, set[str]], set[str]]:
    """({fa-class: its glyphs}, the glyphs of rules that draw with the font)
    from a stylesheet."""
    by_class: dict[str, set[str]] = {}
    drawn: set[str] = set()
    for selectors, body in RULE.findall(css):
        content = CONTENT.search(body)
        if content is None:
            continue
        glyphs = {c for c in css_string(content.group(1)) if 0xE000 <= ord(c) <= 0xF8FF}
        for name in CLASS_GLYPH.findall(selectors):
            by_class.setdefault(name, set()).update(glyphs)
        if "Font Awesome" in body or "--fa-font" in body:
            drawn |= glyphs
    for _, value in VARIABLE.findall(css):
        drawn |= {c for c in css_string(value) if 0xE000 <= ord(c) <= 0xF8FF}
    return by_class, drawn


def glyphs_shown(out: Path, nested: set[str]) -> set[str]:
    """The private-use characters the book's pages can show with the font."""
    static = out / "_static"
    by_class, glyphs = {}, set()
    for sheet in STYLESHEETS:
        if (static / sheet).is_file():
            classes, drawn = icon_glyphs((static / sheet).read_text(encoding="utf-8"))
            for name, found in classes.items():
                by_class.setdefault(name, set()).update(found)
            glyphs |= drawn
    for name in used_classes(out, nested):
        glyphs |= by_class.get(name, set())
    return glyphs


def strip_unused_classes(css: str, used: set[str], words: set[str] | None = None) -> str:
    """`css` without the rules that only give a glyph to Font Awesome classes
    outside `used` (``.fa-bug:before,.fa-insect:before{content:"\\f188"}``),
    and, given `words` (every word of the pages and scripts), without the
    rules none of whose selectors can match (`may_match`)."""
    def keep(m: re.Match) -> str:
        selectors, body = m.group(1), m.group(2)
        names = CLASS_GLYPH.findall(selectors)
        only_icons = names and re.fullmatch(
            r"(?:\.fa-[a-z0-9-]+:(?:before|after),?)+", selectors.strip())
        if only_icons and body.startswith("content:") and not set(names) & used:
            return ""
        text = COMMENT.sub("", selectors).strip()
        if words is not None and text and not text.startswith("@") and not any(
                may_match(selector, words) for selector in selector_list(text)):
            return ""
        return m.group(0)
    return EMPTY_MEDIA.sub("", RULE.sub(keep, css))


def selector_list(text: str) -> list[str]:
    """The selectors of a rule: `text` split at the commas outside brackets
    (``img:not(.only-dark,.dark-light)`` is one selector)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in "([") - (c in ")]")
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def may_match(selector: str, words: set[str]) -> bool:
    """False if `selector` needs a class that is not in `words`."""
    if FUNCTIONAL.search(selector):
        return True
    return all(name in words for name in SELECTOR_CLASS.findall(NOT.sub("", selector)))


def page_and_script_words(out: Path, nested: set[str]) -> set[str]:
    """Every word (letters, digits, _ and -) of the built pages and scripts."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*.html")
             if p.relative_to(out).parts[0] not in ("_images", "_sources", *nested)]
    texts += [p.read_text(encoding="utf-8", errors="replace")
              for p in (out / "_static").rglob("*.js")]
    return {w for text in texts for w in WORD.findall(text)}


def used_classes(out: Path, nested: set[str]) -> set[str]:
    """Every fa-* class named in the built pages and the theme's scripts."""
    static = out / "_static"
    texts = [p.read_text(encoding="utf-8") for p in out.rglob("*.html")
             if p.relative_to(out).parts[0] not in ("_static", "_images", "_sources", *nested)]
    texts += [p.read_text(encoding="utf-8") for p in (static / "scripts").glob("*.js")
              if not p.name.startswith("fontawesome")]
    return {name for text in texts for name in USED_CLASS.findall(text)}


def subset_woff2(source: Path, chars: set[str]) -> bytes:
    from fontTools import subset
    options = subset.Options()
    options.flavor = "woff2"
    options.name_IDs = ["*"]                 # keep the licence notice
    options.notdef_outline = True
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(font)
    buffer = io.BytesIO()
    subset.save_font(font, buffer, options)
    return buffer.getvalue()


def _write_icons(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    source = out / "_static" / FONT
    target = out / "_static" / CSS
    if not source.is_file():
        target.write_text("/* tools/sphinx/icons.py: the theme has no Font Awesome font */\n")
        return
    # a folder with its own searchindex.js is another build (zh/)
    nested = {d.name for d in out.iterdir() if (d / "searchindex.js").is_file()}
    glyphs = glyphs_shown(out, nested)
    from fontTools.ttLib import TTFont
    cmap = TTFont(str(source), lazy=True).getBestCmap()
    glyphs = {c for c in glyphs if ord(c) in cmap}
    data = subset_woff2(source, glyphs)
    ranges = ",".join(f"U+{ord(c):X}" for c in sorted(glyphs))
    target.write_text(
        "/* Generated by tools/sphinx/icons.py: Font Awesome Free's solid font (SIL OFL\n"
        "   1.1) cut down to the icons the book shows; other glyphs still come from the\n"
        "   theme's full font. */\n"
        f'@font-face {{\n  font-family: "{FAMILY}";\n  font-style: normal;\n'
        f"  font-weight: 900;\n  font-display: block;\n"
        f'  src: url("data:font/woff2;base64,{base64.b64encode(data).decode()}") '
        f'format("woff2");\n  unicode-range: {ranges};\n}}\n', encoding="utf-8")
    LOG.info(f"[tools.sphinx.firstpaint] {CSS}: {len(glyphs)} Font Awesome glyphs, "
             f"{len(data) / 1024:.1f} KiB")
    # the theme's stylesheet, from the installed theme (not the copy in the
    # build, which an earlier build may have cut already)
    import pydata_sphinx_theme
    theme = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
             / "static" / THEME_CSS)
    if theme.is_file():
        used = used_classes(out, nested)
        (out / "_static" / THEME_CSS).write_text(
            strip_unused_classes(theme.read_text(encoding="utf-8"), used,
                                 page_and_script_words(out, nested)), encoding="utf-8")


KATEX_FONTS = Path(__file__).resolve().parents[2] / "_vendor" / "katex" / "fonts"


class _FormulaText(HTMLParser):
    """The characters inside KaTeX's visible HTML (``span.katex-html``)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth, self.chars = 0, set()

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += tag not in VOID
        elif "katex-html" in (dict(attrs).get("class") or "").split():
            self.depth = 1

    def handle_endtag(self, tag):
        if self.depth and tag not in VOID:
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.chars |= set(data)


VOID = {"br", "img", "hr", "wbr", "input", "meta", "link"}


def formula_characters(pages: list[str]) -> set[str]:
    parser = _FormulaText()
    for text in pages:
        if 'class="katex-html"' in text:
            parser.feed(text)
            parser.depth = 0
    return parser.chars - {"\n"}


def _cut_katex_fonts(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or not KATEX_FONTS.is_dir():
        return
    out = Path(app.outdir)
    target = out / "_static" / "katex" / "fonts"
    if not target.is_dir():
        return
    nested = {d.name for d in out.iterdir() if (d / "searchindex.js").is_file()}
    chars = formula_characters([
        p.read_text(encoding="utf-8") for p in out.rglob("*.html")
        if p.relative_to(out).parts[0] not in ("_static", "_images", "_sources", *nested)])
    if not chars:
        return
    from fontTools.ttLib import TTFont
    before = after = 0
    for source in sorted(KATEX_FONTS.glob("*.woff2")):
        cmap = TTFont(str(source), lazy=True).getBestCmap()
        here = {c for c in chars if ord(c) in cmap}
        data = subset_woff2(source, here | {" "}) if here else source.read_bytes()
        (target / source.name).write_bytes(data)
        before, after = before + source.stat().st_size, after + len(data)
    LOG.info(f"[tools.sphinx.firstpaint] KaTeX fonts cut to {len(chars)} characters: "
             f"{before / 1024:.0f} KiB to {after / 1024:.0f} KiB")


#: scripts that stay blocking: inline scripts after them use what they define
#: (DOCUMENTATION_OPTIONS.pagename; tools/sphinx/i18n_ui.py's
#: Object.assign(Documentation.TRANSLATIONS, ...), which must follow translations.js)
BLOCKING = {"_static/documentation_options.js", "_static/doctools.js",
            "_static/translations.js"}


#: an <img> without a loading attribute
EAGER_IMG = re.compile(r"<img (?![^>]*\bloading=)")


#: inserts the page's scripts after its first paint (see **Scripts.** above)
LOADER = """<script>(function (scripts) {
  var started = false;
  function load() {
    if (started) return;
    started = true;
    scripts.forEach(function (attributes, i) {
      var s = document.createElement("script");
      for (var name in attributes) s.setAttribute(name, attributes[name]);
      s.async = false;
      if (i === scripts.length - 1) s.onload = s.onerror = function () {
        document.documentElement.setAttribute("data-late-scripts", "ran");
        document.dispatchEvent(new Event("attn:late-scripts-ran"));
      };
      document.body.appendChild(s);
    });
  }
  try {
    new PerformanceObserver(function (list) {
      if (list.getEntriesByName("first-contentful-paint").length) setTimeout(load, 0);
    }).observe({type: "paint", buffered: true});
  } catch (e) {}
  addEventListener("load", load);
})(%s);</script>"""

ATTRIBUTE = re.compile(r'([\w:-]+)="([^"]*)"')


def script_attributes(tag: str) -> dict[str, str]:
    """The attributes of the ``<script ...>`` tag Sphinx's ``js_tag`` writes."""
    opening = tag[:tag.index(">")]
    return {name: html.unescape(value) for name, value in ATTRIBUTE.findall(opening)}


def loader(scripts: list[dict[str, str]]) -> str:
    """The inline ``<script>`` that inserts ``scripts`` after the first paint."""
    text = json.dumps(scripts, ensure_ascii=False).replace("</", "<\\/")
    return LOADER % text


def _page(app, pagename, templatename, context, doctree) -> None:
    if "body" in context:
        context["body"] = EAGER_IMG.sub('<img loading="lazy" decoding="async" ', context["body"])
    context["late_scripts"] = []
    context["late_loader"] = loader
    if pagename == "search":        # its searchtools.js needs doctools.js's _ready first
        return
    # new objects: the page's list holds the builder's own, shared by every page
    scripts, late = [], []
    for script in context.get("script_files", []):
        name = getattr(script, "filename", "") or ""
        attributes = getattr(script, "attributes", None)
        if (name and name not in BLOCKING and attributes is not None
                and "body" not in attributes and "async" not in attributes):
            attributes = script_attributes(context["js_tag"](script))
            attributes.pop("defer", None)
            late.append(attributes)
        else:
            scripts.append(script)
    if "script_files" in context:
        context["script_files"] = scripts
    context["late_scripts"] = late


def setup(app):
    app.add_css_file(CSS)
    app.connect("build-finished", _write_icons)
    app.connect("build-finished", _cut_katex_fonts)
    app.connect("html-page-context", _page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
