"""The figures' text in Chinese: what the kernels need, and its extraction.

`write_catalogue` turns locales/zh_CN/LC_MESSAGES/figures.po into the JSON
catalogue that attnbook/figure_text.py reads in every kernel of the build
(named by `attnbook.figure_text.CATALOGUE_ENV`), with fonts cut from Noto
Sans SC (the npm package the pages' font comes from) down to the characters
the translations use. Its digest joins attnbook's in the execution cache's
key (tools/build/book.py), so a changed translation redraws the figures.

`extract` reads the messages the executed notebooks' figures and explorers
recorded (output metadata `attnbook.figure_text.METADATA_KEY`) into
figures.pot, for ``python -m tools.build --translations``.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tools.project import ROOT

PO = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "figures.po"
OUT = ROOT / "_build" / ".figures"


def translations(po: Path = PO) -> dict[str, str]:
    """{message: translation} of figures.po, without empty or fuzzy ones."""
    if not po.is_file():
        return {}
    from babel.messages.pofile import read_po
    with po.open("rb") as f:
        catalog = read_po(f)
    return {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}


def _fonts(chars: set[str]) -> list[Path]:
    """Subsets of Noto Sans SC holding `chars`, one per source file needed,
    each under a family name of its own (matplotlib falls back from one
    family to the next, not between files of one family)."""
    from fontTools.ttLib import TTFont

    from tools.sphinx.a11y import font_sources, subset_font
    # the first font also has ASCII: mathtext takes the words around a
    # formula, digits included, from that one font (attnbook.figure_text)
    left, fonts = set(chars) | {chr(c) for c in range(0x20, 0x7F)}, []
    OUT.mkdir(parents=True, exist_ok=True)
    for source in font_sources():
        if not left:
            break
        cmap = TTFont(str(source), lazy=True).getBestCmap()
        here = {c for c in left if ord(c) in cmap}
        if not here:
            continue
        target = OUT / f"noto-sans-sc-figures-{len(fonts)}.otf"
        subset_font(source, here, target, flavor=None)
        font = TTFont(str(target))
        family = f"Noto Sans SC figures {len(fonts)}"
        for record in font["name"].names:
            if record.nameID in (1, 4, 16):
                record.string = family
            elif record.nameID == 6:
                record.string = family.replace(" ", "")
        font.save(str(target))
        fonts.append(target)
        left -= here
    if left:
        raise SystemExit(f"Noto Sans SC has no glyph for {''.join(sorted(left))!r}, used in "
                         f"{PO.relative_to(ROOT)}")
    return fonts


def _dejavu_sans() -> set[str]:
    """The characters of matplotlib's own font (DejaVu Sans)."""
    from fontTools.ttLib import TTFont
    from matplotlib import font_manager
    return {chr(c) for c in TTFont(font_manager.findfont("DejaVu Sans"), lazy=True).getBestCmap()}


def write_catalogue() -> Path | None:
    """Write _build/.figures/catalogue.json (and its fonts) if figures.po
    changed; return its path, or None if the translations need Noto Sans SC
    and it is not installed (npm ci). Without figures.po the catalogue is
    empty: the figures are drawn twice, alike, and record their text for
    `extract`."""
    from tools.sphinx.a11y import font_sources
    messages = translations()
    target = OUT / "catalogue.json"
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    if target.is_file():        # made for these messages, fonts and all: nothing to do
        made = json.loads(target.read_text())
        if made["digest"] == digest and all(Path(f).is_file() for f in made["fonts"]):
            return target
    chars = {c for text in messages.values() for c in text if c.isprintable()} - _dejavu_sans()
    if chars and not font_sources():
        return None
    OUT.mkdir(parents=True, exist_ok=True)
    fonts = _fonts(chars)
    target.write_text(json.dumps({"language": "zh_CN", "digest": digest,
                                  "fonts": [str(f) for f in fonts], "messages": messages},
                                 ensure_ascii=False, indent=0), encoding="utf-8")
    return target


def catalogue_digest() -> str:
    """What the figures' Chinese text depends on (joins the cache's key)."""
    target = OUT / "catalogue.json"
    return json.loads(target.read_text())["digest"] if target.is_file() else ""


def recorded_texts(cache_path: Path) -> dict[str, list[str]]:
    """{message: [notebook, ...]} of every figure and explorer text the
    executed notebooks in the cache recorded, in order of first use."""
    import nbformat
    from jupyter_cache import get_cache

    from attnbook.figure_text import METADATA_KEY
    cache = get_cache(str(cache_path))
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        try:
            _, nb = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            continue
        for cell in nb.cells:
            for output in cell.get("outputs", []):
                for text in output.get("metadata", {}).get(METADATA_KEY, {}).get("texts", []):
                    where = found.setdefault(text, [])
                    if path.name not in where:
                        where.append(path.name)
    return found


def extract(cache_path: Path, pot_dir: Path) -> Path:
    """Write figures.pot into `pot_dir` from the executed notebooks."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po
    catalog = Catalog(project="Attention, Step by Step", charset="utf-8")
    for text, notebooks in recorded_texts(cache_path).items():
        catalog.add(text, locations=[(f"chapters/{n}", 0) for n in notebooks])
    target = pot_dir / "figures.pot"
    with target.open("wb") as f:
        write_po(f, catalog, width=100, omit_header=False, include_lineno=False)
    return target
