"""Every reader can read it: an axe-core audit of every built page in light and
dark mode, keyboard focus, one search field, Chinese glyphs from the book's own
font, pages that fit a 390 px phone, and no 404 (favicon included) over HTTP.

axe-core comes from npm (package.json, a dev dependency) and is injected into
each page by these tests only; the book never loads it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from survey import (
    AXE,
    BY_EDITION,
    CJK_FAMILY,
    DESKTOP,
    HIDE_CODE_TWINS,
    PHONE,
    built_pages,
    cjk_characters,
    failures,
    glyph_sample,
    goto_settled,
    read_glyphs,
    run_axe,
)
from test_book import editions

from tools.project import ROOT

pytestmark = [pytest.mark.slow]

IMPACTS = ["critical", "serious", "moderate", "minor"]


def require_axe() -> None:
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed ({AXE}); run `npm ci` (make book does)",
                    pytrace=False)


def open_page(browser, url: str, width: int = DESKTOP, scheme: str = "light"):
    """A new context at `width` px in `scheme` mode; returns (context, page)
    once the page, its images and fonts have settled."""
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  color_scheme=scheme)
    page = context.new_page()
    goto_settled(page, url)
    return context, page


def summary_table(rows: list[dict]) -> str:
    head = f"{'page':44} {'mode':5} " + " ".join(f"{i:>8}" for i in IMPACTS) + "  rules"
    lines = [head, "-" * len(head)]
    for r in rows:
        counts = {i: sum(v["nodes"] for v in r["violations"] if v["impact"] == i)
                  for i in IMPACTS}
        rules = ",".join(sorted({v["id"] for v in r["violations"]})) or "-"
        lines.append(f"{r['page']:44} {r['mode']:5} "
                     + " ".join(f"{counts[i]:>8}" for i in IMPACTS) + f"  {rules}")
    return "\n".join(lines)


def is_dark(css_colour: str) -> bool:
    """An opaque rgb()/rgba() colour with CIELAB lightness below 30
    (transparent black, "rgba(0, 0, 0, 0)", is no dark background)."""
    parts = [float(v) for v in re.findall(r"[\d.]+", css_colour)]
    opaque = len(parts) == 3 or (len(parts) == 4 and parts[3] == 1)
    return opaque and srgb_to_lightness([v / 255 for v in parts[:3]]) < 30


def serious(violations: list[dict]) -> list[dict]:
    return [v for v in violations if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("edition", BY_EDITION)
def test_axe_finds_no_serious_or_critical_violation_on_any_page_light_or_dark(surveyed,
                                                                              edition):
    """Every built page: axe-core (WCAG 2.1 A/AA and best practice) reports no
    serious or critical violation in light mode, and none from the
    colour-contrast rule once the page is switched to the dark theme (the page
    is the same there but for its colours). A reader who asks for dark mode
    gets the dark theme (the phone visit asks). Prints a per-page table of
    violating nodes by impact; writes the details to _build/axe-report-*.json."""
    require_axe()
    result = surveyed(edition)
    rows = [{"page": page, "mode": mode, "violations": found}
            for page, r in result["pages"].items()
            for mode, found in (("light", r.get("axe", [])),
                                ("dark", r.get("dark", {}).get("violations", [])))]
    (ROOT / "_build" / f"axe-report-{edition}.json").write_text(json.dumps(rows, indent=1))
    print(f"\n[axe] {edition}: violating nodes per page, by impact\n" + summary_table(rows))
    bad = {**failures(result, "axe", lambda found, _: serious(found)),
           **{f"{page} (dark)": found for page, found in failures(
               result, "dark", lambda d, _: serious(d["violations"])
               or (d["theme"] != "dark" and f"switched to dark, got {d['theme']!r}")
               or (not is_dark(d["background"]) and f"dark theme on {d['background']}")).items()},
           **{f"{page} (asks for dark)": found for page, found in failures(
               result, "phone", lambda p, _: p["theme"] != "dark" and
               f"a reader asking for dark mode got the {p['theme']!r} theme").items()}}
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)


def test_axe_audit_can_fail(tmp_path, browser, built_book):
    """The audit must see a fault: low-contrast text and an unlabelled slider.
    (built_book: the build runs `npm ci`, which installs axe-core.)"""
    require_axe()
    (tmp_path / "bad.html").write_text(
        "<!doctype html><html lang='en'><head><title>bad</title></head><body><main>"
        "<h1>Bad page</h1><p style='color:#bbb;background:#fff'>faint text</p>"
        "<input type='range' min='0' max='3'></main></body></html>")
    context, page = open_page(browser, (tmp_path / "bad.html").as_uri())
    found = {v["id"]: v["impact"] for v in run_axe(page)}
    context.close()
    assert found.get("color-contrast") == "serious", found
    assert found.get("label") == "critical", found


def test_axe_audit_still_sees_code_whose_look_differs_from_a_token_before_it(
        tmp_path, browser, built_book):
    """The audit hides a code token's twins (tests/survey.py's HIDE_CODE_TWINS),
    not a later token that looks faint: one in its own colour, or one in the
    colour of the tokens before it over a block of another background. Every
    twin is shown again after the audit."""
    require_axe()
    tokens = "<span class='n'>value</span> <span class='o'>and</span> " * 40
    (tmp_path / "code.html").write_text(
        "<!doctype html><html lang='en'><head><title>code</title><style>"
        ".highlight { background: #fff; } .n { color: #222; } .o { color: #555; }"
        ".faint { color: #bbb; } .dark .highlight { background: #333; }</style></head>"
        "<body><main><h1>Code</h1>"
        f"<div class='highlight'><pre>{tokens}<span class='faint'>faint</span></pre></div>"
        f"<div class='highlight'><pre>{tokens}</pre></div>"
        f"<div class='dark'><div class='highlight'><pre>{tokens}</pre></div></div>"
        "</main></body></html>")
    context, page = open_page(browser, (tmp_path / "code.html").as_uri())
    found = {v["id"]: v for v in run_axe(page, only_contrast=True)}
    twins = page.evaluate("() => document.querySelectorAll('[data-axe-twin]').length")
    hidden = page.evaluate(HIDE_CODE_TWINS)
    context.close()
    assert found["color-contrast"]["nodes"] == 3, found   # .faint, then .n and .o on #333
    assert twins == 0
    assert hidden == 3 * 80 + 1 - 5, "the twins are the spans after the 5 distinct looks"


def test_search_button_override_is_the_installed_themes_without_a_mismatched_label():
    import pydata_sphinx_theme
    theme = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
             / "components" / "search-button-field.html").read_text()
    ours = (ROOT / "_templates" / "search-button-field.html").read_text()
    ours = re.sub(r"^\{#-.*?-#\}\n", "", ours, flags=re.S)
    theme = re.sub(r"\{#.*?#\}\n?", "", theme, flags=re.S)          # its own comments
    theme = re.sub(r' (title|aria-label)="\{\{ _\(\'Search\'\) \}\}"'
                   r'| data-bs-placement="bottom" data-bs-toggle="tooltip"', "", theme)
    assert ours.split() == theme.split(), \
        "the theme's search button changed: update _templates/search-button-field.html"


# --- keyboard -------------------------------------------------------------

@pytest.mark.parametrize("edition", BY_EDITION)
def test_explorer_sliders_show_a_focus_ring_and_solutions_open_from_the_keyboard(
        surveyed, edition):
    """Tab reaches every explorer slider and folded solution, each shows a focus
    ring (visible, at least 2 px), a solution starts folded and Enter opens it."""
    result = surveyed(edition)
    bad = failures(result, "keyboard",
                   lambda k, _: k["slider_problems"] + k["solution_problems"])
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)
    found = [r["keyboard"] for r in result["pages"].values()]
    sliders, solutions = (sum(k[n] for k in found) for n in ("sliders", "solutions"))
    assert sliders and solutions, (sliders, solutions)
    print(f"\n[keyboard] {edition}: {sliders} slider focus rings, {solutions} solutions "
          "opened with Enter")


# --- one search field -----------------------------------------------------

@pytest.mark.parametrize("edition", BY_EDITION)
def test_every_page_shows_exactly_one_search_field_on_desktop_and_phone(surveyed, edition):
    """Outside the page's own text (search.html has its query form there), one
    search UI: the sidebar's field on a desktop, the header's button on a phone."""
    result = surveyed(edition)
    bad = {**failures(result, "search_laptop", lambda f, _: len(f) != 1 and f),
           **{f"{page} (phone)": found for page, found in failures(
               result, "phone", lambda p, _: len(p["search_fields"]) != 1
               and p["search_fields"]).items()}}
    assert not bad, json.dumps(bad, indent=1)


# --- phones ---------------------------------------------------------------

def phone_problems(found: dict, _) -> dict | list | None:
    if found["scrollWidth"] > found["clientWidth"] or found["clipped"]:
        return {k: found[k] for k in ("scrollWidth", "clientWidth", "clipped")}
    return [f"explorer {k} is wider than the phone" if max(img["right"], slider["right"]) > PHONE
            else f"explorer {k}: the slider is not under the picture"
            for k, (img, slider) in enumerate(found["explorers"])
            if max(img["right"], slider["right"]) > PHONE or slider["top"] < img["bottom"]]


@pytest.mark.parametrize("edition", BY_EDITION)
def test_no_page_scrolls_sideways_at_390_px(surveyed, edition):
    """At a phone's width the page never scrolls sideways, and nothing in the
    text sticks out past the screen unless it sits in its own scrolling box
    (a wide table or equation); explorers keep picture and slider on screen."""
    result = surveyed(edition)
    bad = failures(result, "phone", phone_problems)
    assert not bad, json.dumps(bad, indent=1)
    explorers = sum(len(r["phone"]["explorers"]) for r in result["pages"].values())
    print(f"\n[phone] {edition}: {len(result['pages'])} pages fit {PHONE} px; "
          f"{explorers} explorers on screen")


@pytest.mark.parametrize("edition", BY_EDITION)
def test_no_code_cell_scrolls_sideways_on_a_laptop(surveyed, edition):
    """At 1280 px every line of every shown code cell, and of the code in every
    opened solution, fits its box on the chapter pages: the chapters are
    formatted to 76 characters (chapters/ruff.toml) and the prose's code to 68
    (tests/test_repo.py), and this checks that the theme's boxes hold them."""
    result = surveyed(edition)
    chapters = [p for p in result["pages"] if p.removeprefix("zh/").startswith("chapters/")]
    bad = failures(result, "code", lambda c, _: c["wide"], pages=chapters)
    cells = sum(result["pages"][p]["code"]["cells"] for p in chapters
                if "code" in result["pages"][p])
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)
    assert cells > 50, f"only {cells} code cells found"
    print(f"\n[laptop] {edition}: {cells} code blocks (cells and opened solutions) on the "
          "chapter pages fit 1280 px")


# --- Chinese glyphs -------------------------------------------------------

def cjk_pages(built_book) -> dict[str, set[str]]:
    """{page: its Chinese characters} for every page that has any."""
    return {p: chars for p in built_pages(built_book)
            if (chars := cjk_characters(built_book, p))}


@pytest.mark.parametrize("edition", ["", "zh"])
def test_pages_with_chinese_and_only_those_load_a_font_holding_every_character(built_book,
                                                                                edition):
    """Each edition (the English book, the Chinese one in zh/) has its own subset."""
    from fontTools.ttLib import TTFont
    home = built_book / edition
    folder = home / "_static" / "cjk"
    with_cjk = {p: c for p, c in cjk_pages(built_book).items()
                if (p.startswith("zh/") if edition else not p.startswith("zh/"))}
    with_cjk = {p.removeprefix("zh/"): c for p, c in with_cjk.items()}
    assert "glossary.html" in with_cjk, "the glossary has no Chinese?"
    for page_path in (p for e, pages in editions(built_book) if e == home for p in pages):
        linked = "_static/cjk/cjk.css" in (home / page_path).read_text(encoding="utf-8")
        assert linked == (page_path in with_cjk), f"{page_path}: font CSS linked={linked}"
    css = (folder / "cjk.css").read_text()
    served = re.findall(r'url\("([^"]+\.woff2)"\)', css)
    held = set()
    for name in served:
        held |= {chr(c) for c in TTFont(str(folder / name)).getBestCmap()}
    needed = set.union(*with_cjk.values())
    assert needed <= held, f"characters missing from the subset: {sorted(needed - held)}"
    # a reader with a Chinese font of their own (every phone) fetches neither file
    from tools.sphinx.a11y import LOCAL_FONTS
    faces = re.findall(r"@font-face \{(.*?)\}", css, re.S)
    assert len(faces) == len(served), faces
    for face in faces:
        sources = re.search(r"src: (.*?);", face, re.S).group(1)
        assert re.findall(r'local\("([^"]+)"\)', sources) == LOCAL_FONTS, sources
        assert sources.rindex("local(") < sources.index("url("), sources
    size = sum((folder / name).stat().st_size for name in served)
    print(f"\n[cjk] {len(needed)} characters on {len(with_cjk)} pages; "
          f"{len(served)} font files, {size / 1024:.1f} KiB in all")


@pytest.mark.parametrize("edition", BY_EDITION)
def test_chinese_glyphs_render_from_the_books_font_not_as_boxes(built_book, surveyed, edition):
    """On every page with Chinese: the font is loaded for those characters, each
    character is drawn one em wide with the page's own font stack, unlike the
    missing-glyph box, and different characters give different pictures (boxes
    would all look alike)."""
    result = surveyed(edition)
    with_cjk = {p: c for p, c in cjk_pages(built_book).items() if p in result["pages"]}
    assert with_cjk, f"no page of the {edition} edition has Chinese characters"

    def wrong(r: dict, report: dict):
        sample = glyph_sample(with_cjk[report["page"]])
        return ((not r["check"] and f"document.fonts.check failed for {sample!r}")
                or (CJK_FAMILY not in r["stack"] and f"page font stack {r['stack']}")
                or (not all(abs(w - 40) < 0.5 for w in r["widths"]) and r["widths"])
                or ((r["likeBox"] or r["distinct"] != len(sample)) and r))
    bad = failures(result, "glyphs", wrong)
    unread = sorted(set(with_cjk) - {p for p, r in result["pages"].items() if "glyphs" in r})
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)
    assert not unread, f"pages with Chinese whose glyphs were not read: {unread}"


def test_glyph_check_sees_boxes_without_the_books_font(built_book, book_server, browser):
    """The check above must be able to fail: with the font's stylesheet blocked,
    on a machine without CJK fonts, the glossary's Chinese is drawn as boxes."""
    import shutil
    import subprocess
    if shutil.which("fc-list") and subprocess.run(["fc-list", ":lang=zh"], capture_output=True,
                                                  text=True).stdout.strip():
        pytest.skip("this machine has CJK fonts of its own, so no boxes to see")
    context = browser.new_context()
    context.route("**/cjk.css", lambda route: route.abort())
    page = context.new_page()
    page.goto(f"{book_server}/glossary.html", wait_until="load")
    sample = glyph_sample(cjk_pages(built_book)["glossary.html"])
    r = read_glyphs(page, sample)
    context.close()
    assert r["likeBox"] == len(sample) and r["distinct"] == 1, r


# --- no 404, favicon included ---------------------------------------------

@pytest.mark.parametrize("edition", BY_EDITION)
def test_every_page_over_http_gets_no_404_and_has_a_favicon(surveyed, edition):
    """Served over HTTP, as a host would serve it: the server answers every
    request the browser made on the survey's visits (the browser's own favicon
    requests included) with success, and each page names its icon."""
    result = surveyed(edition)
    bad = failures(result, "favicon", lambda icon, _: not (
        icon and icon[0] == 200 and icon[1].startswith("image/")) and (icon or "no icon link"))
    failed = [(status, path) for status, path in result["requests"] if status >= 400]
    assert not bad, json.dumps(bad, indent=1)
    assert not failed, failed
    print(f"\n[http] {edition}: {len(result['requests'])} requests answered, none failed")


# --- colour ---------------------------------------------------------------

def srgb_to_lightness(rgb) -> float:
    """CIELAB L* (0-100) of an sRGB colour with components in [0, 1]."""
    import numpy as np
    c = np.asarray(rgb[:3], dtype=float)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    y = float(linear @ [0.2126, 0.7152, 0.0722])
    return 116 * (y ** (1 / 3) if y > 216 / 24389 else (24389 / 27 * y + 16) / 116) - 16


def test_heatmap_colour_map_reads_without_colour_vision():
    """The heatmaps' colour map: its lightness rises steadily from end to end, so
    the order of values survives greyscale printing and every kind of colour
    blindness (a rainbow or red-green map fails this)."""
    import matplotlib
    import numpy as np

    from attnbook import plots
    cmap = matplotlib.colormaps[plots.CMAP]
    lightness = np.array([srgb_to_lightness(cmap(x)) for x in np.linspace(0, 1, 64)])
    steps = np.diff(lightness)
    assert (steps > 0).all(), f"{plots.CMAP}: lightness is not monotonic"
    assert lightness[-1] - lightness[0] > 60, f"{plots.CMAP}: too little lightness range"
    assert steps.max() < 2.5 * steps.mean(), f"{plots.CMAP}: lightness steps are uneven"
    jet = np.array([srgb_to_lightness(matplotlib.colormaps["jet"](x))
                    for x in np.linspace(0, 1, 64)])
    assert not (np.diff(jet) > 0).all(), "the check must reject a rainbow map"
