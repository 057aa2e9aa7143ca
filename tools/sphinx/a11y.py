"""Sphinx extension: what the book needs so that every reader can read it.

- Chinese glyphs from the book itself. After the build, the Chinese
  characters of every built page and of the scripts the pages run (the
  copy button's tooltips, the search page's messages and the search
  index's result types: `script_characters`) are collected, Noto Sans SC (npm package
  @fontsource/noto-sans-sc, pinned in package.json) is cut down with fontTools
  to exactly those characters, and the pages that contain Chinese get a
  stylesheet that declares the subset with `unicode-range`. The characters
  every such page shares (the sidebar's "English–中文") go into their own tiny
  file, so a page fetches the larger file only if it shows the rest. A reader
  without CJK fonts then sees the characters, not empty boxes. A reader
  whose system has a Chinese font (phones, Windows, macOS, most Linux
  desktops) gets the glyphs from it through ``local()`` and fetches neither
  file (``LOCAL_FONTS``): before, every reader of the Chinese edition
  downloaded up to 150 KB of font before the text settled. (Preloading the
  shared file was tried and measured: on a machine without a Chinese font
  the first paint then waited for the larger file too, 2.2 s against 1.4 s
  on chapter 16.)
- A favicon.ico at the root of the build, for hosts and pages (the
  index.html redirect) where a browser asks for /favicon.ico instead of the
  `html_favicon` (_assets/favicon.svg) every page names: the same 3 x 3
  attention-weight picture in cividis colours, drawn here with Pillow.
- Accessible names that match the visible text: the "Show code cell content"
  toggle (myst-nb labels it "Toggle hidden content") and the bibliography,
  whose entries docutils marks with the deprecated role doc-biblioentry
  inside role="list" (axe-core: a list without list items).
- One id per element: sphinx-exercise gives every exercise's body the id
  "exercise-content" and every solution's "solution-content", so a page had
  four of each and a link (or the language switch, which carries the id
  across) to a later solution landed on the first. Each body's id is its
  exercise's label: "ex-induction-longer-content", "ex-induction-longer-solution".
"""
from __future__ import annotations

import hashlib
import re
import shutil
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

LOG = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
FONT_DIR = ROOT / "node_modules" / "@fontsource" / "noto-sans-sc" / "files"
FAMILY = "Attn Noto Sans SC"
CSS = "_static/cjk/cjk.css"
#: CJK punctuation, unified ideographs (and extension A/B+), compatibility
#: ideographs, vertical/compatibility forms, full-width forms.
CJK = re.compile(r"[\u2e80-\u2fdf\u3000-\u303f\u3100-\u312f\u31a0-\u31bf\u3400-\u4dbf"
                 r"\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]")
HEAD_END = "</head>"
#: the links this extension puts in a page's <head>
OUR_LINKS = re.compile(r'<link rel="stylesheet"[^>]*_static/cjk/[^>]*/>\n')


# --- Chinese glyphs -------------------------------------------------------

def font_sources() -> list[Path]:
    """The regular (400) Noto Sans SC files to take glyphs from, the full
    simplified-Chinese file first, then fontsource's numbered slices.

    They are the WOFF (1.0) files: fontTools reads a glyph of those on demand,
    but must rebuild a WOFF2 file's whole glyph table (about 8,000 glyphs)
    before it can subset it. Cutting the simplified-Chinese font down to 900
    characters took 6.2 s from WOFF2 and 1.3 s from WOFF, for the same
    54,208-byte subset (measured on this project's 2-core machine); each
    edition makes two subsets per clean build."""
    main = FONT_DIR / "noto-sans-sc-chinese-simplified-400-normal.woff"
    slices = sorted(FONT_DIR.glob("noto-sans-sc-[0-9]*-400-normal.woff"),
                    key=lambda p: int(p.name.split("-")[3]))
    return [main, *slices] if main.is_file() else []


def unicode_range(chars: set[str]) -> str:
    return ",".join(f"U+{ord(c):X}" for c in sorted(chars))


def subset_font(source: Path, chars: set[str], target: Path, flavor: str | None = "woff2") -> None:
    """Write the glyphs of `chars` from `source` (a WOFF file) to `target`
    (WOFF2, or with `flavor` None an OpenType file, for matplotlib)."""
    from fontTools import subset
    options = subset.Options()
    options.flavor = flavor
    options.layout_features = ["*"]          # keep vertical forms, locl etc.
    options.name_IDs = ["*"]                 # keep the OFL licence notice
    options.notdef_outline = True
    font = subset.load_font(str(source), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(c) for c in chars])
    subsetter.subset(font)
    subset.save_font(font, str(target), options)


def plan_files(groups: list[set[str]]) -> list[tuple[Path, set[str]]]:
    """For each group of characters, the font files that hold them: a list of
    (source, characters). Characters no file holds are logged and left out."""
    from fontTools.ttLib import TTFont
    cmaps: dict[Path, set[int]] = {}
    plan = []
    for group in groups:
        left = set(group)
        for source in font_sources():
            if not left:
                break
            if source not in cmaps:
                cmaps[source] = set(TTFont(str(source), lazy=True).getBestCmap())
            here = {c for c in left if ord(c) in cmaps[source]}
            if here:
                plan.append((source, here))
                left -= here
        if left:
            LOG.info(f"[tools.sphinx.a11y] Noto Sans SC has no glyph for {''.join(sorted(left))!r}")
    return plan


def script_characters(out: Path) -> set[str]:
    """The Chinese characters the pages' scripts can show: every script in
    _static/ (the search page's messages in Sphinx's translations.js, the
    copy button's tooltips in copybutton.js, the theme's), and the search
    index (the object types of its results, "Python 托管属性"), their
    ``\\uXXXX`` escapes read as characters."""
    scripts = [*sorted((out / "_static").rglob("*.js")), out / "searchindex.js"]
    chars: set[str] = set()
    for script in scripts:
        if script.is_file():
            text = script.read_text(encoding="utf-8", errors="replace")
            text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
            chars |= set(CJK.findall(text))
    return chars


def _polish_scripts(app, exception) -> None:
    """sphinx-copybutton's Chinese tooltip ends with an ASCII "!" ("复制成功!")."""
    if exception is not None or app.builder.format != "html":
        return
    script = Path(app.outdir) / "_static" / "copybutton.js"
    if script.is_file():
        text = script.read_text(encoding="utf-8")
        if "复制成功!" in text:
            script.write_text(text.replace("复制成功!", "复制成功！"), encoding="utf-8")


def _chinese_font(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    # a folder with its own searchindex.js is another build (the Chinese
    # edition in zh/), which makes its own subset
    nested = {d.name for d in out.iterdir() if (d / "searchindex.js").is_file()}
    pages = {p: p.read_text(encoding="utf-8") for p in out.rglob("*.html")
             if p.relative_to(out).parts[0] not in ("_static", "_images", "_sources", *nested)}
    used = {p: set(CJK.findall(text)) for p, text in pages.items()}
    with_cjk = [p for p, chars in used.items() if chars]
    if not with_cjk:
        return
    if not font_sources():
        LOG.info("[tools.sphinx.a11y] @fontsource/noto-sans-sc is not installed (npm ci): "
                 "Chinese text is left to the reader's own fonts")
        return
    common = set.intersection(*(used[p] for p in with_cjk))
    scripted = script_characters(out)
    rest = (set.union(*(used[p] for p in with_cjk)) | scripted) - common
    folder = out / "_static" / "cjk"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.woff2"):
        old.unlink()
    faces = []
    for group in (common, rest):
        for source, chars in plan_files([group] if group else []):
            key = hashlib.sha256((source.name + "".join(sorted(chars))).encode()).hexdigest()[:10]
            target = folder / f"noto-sans-sc-{key}.woff2"
            # keep each subset made beside the doctrees and reuse it while the
            # characters stay the same (a rebuild then subsets nothing)
            made = Path(app.doctreedir) / "cjk-subsets" / f"{source.stat().st_size}-{target.name}"
            if not made.is_file():
                made.parent.mkdir(parents=True, exist_ok=True)
                subset_font(source, chars, made)
            shutil.copyfile(made, target)
            faces.append(font_face(target.name, chars))
            LOG.info(f"[tools.sphinx.a11y] {target.name}: {len(chars)} characters from "
                     f"{source.name}, {target.stat().st_size / 1024:.1f} KiB")
    (folder / "cjk.css").write_text(
        "/* Generated by tools/sphinx/a11y.py: Noto Sans SC (SIL OFL 1.1, npm package\n"
        "   @fontsource/noto-sans-sc) cut down to the characters the book uses, taken\n"
        "   from the reader's own Chinese font when it has one (local()). */\n"
        + "".join(faces)
        + f':root {{\n  --pst-font-family-base: "{FAMILY}", var(--pst-font-family-base-system);\n'
        f'  --pst-font-family-heading: "{FAMILY}", var(--pst-font-family-base-system);\n'
        f'  --pst-font-family-monospace: var(--pst-font-family-monospace-system), "{FAMILY}";\n'
        "}\n", encoding="utf-8")
    for page in with_cjk:
        up = "../" * (len(page.relative_to(out).parts) - 1)
        links = f'<link rel="stylesheet" type="text/css" href="{escape(up + CSS)}" />\n'
        # a page Sphinx did not write again still has the links of the last build
        text = OUR_LINKS.sub("", pages[page])
        if HEAD_END in text:
            text = text.replace(HEAD_END, links + HEAD_END, 1)
        if text != pages[page]:
            page.write_text(text, encoding="utf-8")


#: the reader's own Chinese fonts, tried before the book's subset (full and
#: PostScript names, which local() matches): Apple's, Microsoft's, and Noto
#: Sans CJK / Source Han Sans (Android's and most Linux desktops')
LOCAL_FONTS = ["PingFang SC Regular", "PingFangSC-Regular", "Hiragino Sans GB W3",
               "HiraginoSansGB-W3", "Microsoft YaHei", "MicrosoftYaHei",
               "Noto Sans CJK SC Regular", "NotoSansCJKsc-Regular",
               "Source Han Sans SC Regular", "SourceHanSansSC-Regular"]


def font_face(file: str, chars: set[str]) -> str:
    """The @font-face of one subset: the reader's own Chinese font if it has
    one, else the subset file, for exactly `chars`."""
    local = ", ".join(f'local("{name}")' for name in LOCAL_FONTS)
    return (f'@font-face {{\n  font-family: "{FAMILY}";\n  font-style: normal;\n'
            f'  font-weight: 400;\n  font-display: swap;\n'
            f'  src: {local},\n       url("{file}") format("woff2");\n'
            f'  unicode-range: {unicode_range(chars)};\n}}\n')


# --- favicon --------------------------------------------------------------

#: Colours of _assets/favicon.svg: background, then the 3 x 3 weights row by row.
ICON_BACKGROUND = "#002b62"
ICON_CELLS = [["#fee838", "#4f576c", "#888578"],
              ["#4f576c", "#fee838", "#4f576c"],
              ["#888578", "#c8b866", "#fee838"]]


def _favicon_ico(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from PIL import Image, ImageDraw
    image = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((0, 0, 63, 63), radius=8, fill=ICON_BACKGROUND)
    for i, row in enumerate(ICON_CELLS):
        for j, colour in enumerate(row):
            x, y = 5 + 18 * j, 5 + 18 * i
            draw.rectangle((x, y, x + 16, y + 16), fill=colour)
    image.save(Path(app.outdir) / "favicon.ico", sizes=[(16, 16), (32, 32), (48, 48)])


# --- accessible names -----------------------------------------------------

def visit_citation(self, node):
    """docutils' HTML5 citation, with role listitem in its role="list", and
    one back-link to each place that cites it. sphinxcontrib-bibtex records a
    citation each time a ``{cite}`` role is parsed: Sphinx parses a translated
    message twice (tools/sphinx/i18n.py, piece 9, now once) and a rebuild
    parses the page again, so the same place came back up to three times,
    shown as "(1, 2, 3)" links that all led to one spot."""
    node["backrefs"] = list(dict.fromkeys(node["backrefs"]))
    if not isinstance(node.previous_sibling(), type(node)):
        self.body.append('<div role="list" class="citation-list">\n')
    self.body.append(self.starttag(node, "div", classes=[node.tagname], role="listitem"))


def depart_citation(self, node):
    self.body.append("</div>\n")
    if not isinstance(node.next_node(descend=False, siblings=True), type(node)):
        self.body.append("</div>\n")


def visit_hidden_input(self, node):
    """myst-nb's folded code cell, without an aria-label that differs from
    the visible "Show code cell content" (the summary's text names it)."""
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


class UniqueExerciseIds(SphinxPostTransform):
    """The bodies of exercises and solutions get ids of their own."""

    default_priority = 5

    def run(self, **kwargs) -> None:
        seen: set[str] = set()
        for section in self.document.findall(nodes.section):
            if section["ids"] not in (["exercise-content"], ["solution-content"]):
                continue
            parent = section.parent
            if section["ids"] == ["solution-content"]:
                base = f"{parent.get('target_label') or 'exercise'}-solution"
            else:
                base = f"{(parent.get('ids') or [parent.get('label') or 'exercise'])[0]}-content"
            new, n = base, 1
            while new in seen or new in self.document.ids:
                n += 1
                new = f"{base}-{n}"
            seen.add(new)
            self.document.ids.pop(section["ids"][0], None)
            section["ids"] = [new]
            self.document.ids[new] = section


def setup(app):
    app.add_post_transform(UniqueExerciseIds)
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
    app.setup_extension("myst_nb")
    app.add_node(HideCodeCellNode, override=True,
                 html=(visit_hidden_input, depart_HideCellInput))
    app.add_node(nodes.citation, override=True, html=(visit_citation, depart_citation))
    app.connect("build-finished", _polish_scripts)
    app.connect("build-finished", _chinese_font)
    app.connect("build-finished", _favicon_ico)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
