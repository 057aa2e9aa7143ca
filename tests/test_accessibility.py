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
from test_book import built_pages, editions, goto_settled

from tools.project import ROOT, serve

pytestmark = [pytest.mark.xdist_group("book"), pytest.mark.slow]

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
IMPACTS = ["critical", "serious", "moderate", "minor"]
PHONE, DESKTOP = 390, 1280
CJK = re.compile(r"[\u2e80-\u2fdf\u3000-\u303f\u3100-\u312f\u31a0-\u31bf\u3400-\u4dbf"
                 r"\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003134f]")
CJK_FAMILY = "Attn Noto Sans SC"


def require_axe() -> Path:
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed ({AXE}); run `npm ci` (make book does)",
                    pytrace=False)
    return AXE


@pytest.fixture
def recording_server(built_book):
    """The built book over HTTP on 127.0.0.1; yields (base URL, the list of
    (status, path) of every request answered)."""
    with serve(built_book) as served:
        yield served


def open_page(browser, url: str, width: int = DESKTOP, scheme: str = "light"):
    """A new context at `width` px in `scheme` mode; returns (context, page)
    once the page, its images and fonts have settled."""
    context = browser.new_context(viewport={"width": width, "height": 900},
                                  color_scheme=scheme)
    page = context.new_page()
    goto_settled(page, url)
    return context, page


def run_axe(page, only_contrast: bool = False) -> list[dict]:
    """axe-core's violations on the loaded page: [{id, impact, nodes, help, targets}];
    every WCAG 2.1 A/AA and best-practice rule, or only the colour-contrast one."""
    page.add_script_tag(path=str(require_axe()))
    run_only = ({"type": "rule", "values": ["color-contrast"]} if only_contrast
                else {"type": "tag", "values": AXE_TAGS})
    # KaTeX's HTML rendering of a formula is aria-hidden: assistive technology
    # reads its MathML twin, which stays in the audit. Its many small spans
    # (about 80 per formula) made the audit 2.5 times slower.
    return page.evaluate("""async (runOnly) => {
        const r = await axe.run({exclude: [['.katex-html']]},
                                {runOnly, resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.length,
            targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
    }""", run_only)


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


def test_axe_finds_no_serious_or_critical_violation_on_any_page_light_or_dark(
        built_book, book_server, browser):
    """Every built page: axe-core (WCAG 2.1 A/AA and best practice) reports no
    serious or critical violation in light mode, and no contrast violation in
    dark mode (the page is the same there but for its colours, so the dark pass
    runs the colour-contrast rule only). Prints a per-page table of violating
    nodes by impact; writes the details to _build/axe-report.json."""
    rows = []
    for page_path in built_pages(built_book):
        for scheme in ("light", "dark"):
            context, page = open_page(browser, f"{book_server}/{page_path}", scheme=scheme)
            theme = page.evaluate("() => document.documentElement.dataset.theme")
            assert theme == scheme, f"{page_path}: asked for {scheme} mode, got {theme!r}"
            rows.append({"page": page_path, "mode": scheme,
                         "violations": run_axe(page, only_contrast=scheme == "dark")})
            context.close()
    (ROOT / "_build" / "axe-report.json").write_text(json.dumps(rows, indent=1))
    print("\n[axe] violating nodes per page, by impact\n" + summary_table(rows))
    bad = {f"{r['page']} ({r['mode']})": [v for v in r["violations"]
                                          if v["impact"] in ("serious", "critical")]
           for r in rows}
    bad = {k: v for k, v in bad.items() if v}
    assert not bad, json.dumps(bad, indent=1)


def test_axe_audit_can_fail(tmp_path, browser, built_book):
    """The audit must see a fault: low-contrast text and an unlabelled slider.
    (built_book: the build runs `npm ci`, which installs axe-core.)"""
    (tmp_path / "bad.html").write_text(
        "<!doctype html><html lang='en'><head><title>bad</title></head><body><main>"
        "<h1>Bad page</h1><p style='color:#bbb;background:#fff'>faint text</p>"
        "<input type='range' min='0' max='3'></main></body></html>")
    context, page = open_page(browser, (tmp_path / "bad.html").as_uri())
    found = {v["id"]: v["impact"] for v in run_axe(page)}
    context.close()
    assert found.get("color-contrast") == "serious", found
    assert found.get("label") == "critical", found


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

def focus_by_keyboard(page, locator) -> None:
    """Give `locator` focus the way a keyboard user does: Tab into it."""
    locator.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")
    assert locator.evaluate("e => e === document.activeElement"), "Tab did not reach it"


def focus_ring(locator) -> dict:
    return locator.evaluate("""e => { const s = getComputedStyle(e);
        return {visible: e.matches(':focus-visible'), style: s.outlineStyle,
                width: parseFloat(s.outlineWidth)}; }""")


def test_explorer_sliders_show_a_focus_ring_and_solutions_open_from_the_keyboard(
        built_book, book_server, browser):
    sliders = solutions = 0
    for page_path in built_pages(built_book):
        text = (built_book / page_path).read_text(errors="replace")
        if 'class="attn-explorer"' not in text and "dropdown admonition" not in text:
            continue
        context, page = open_page(browser, f"{book_server}/{page_path}")
        ranges = page.locator(".attn-explorer input[type=range]")
        for k in range(ranges.count()):
            focus_by_keyboard(page, ranges.nth(k))
            ring = focus_ring(ranges.nth(k))
            assert ring["visible"] and ring["style"] != "none" and ring["width"] >= 2, \
                f"{page_path}: explorer slider {k} shows no focus ring: {ring}"
            sliders += 1
        buttons = page.locator(".dropdown.admonition button.toggle-button")
        for k in range(buttons.count()):
            button = buttons.nth(k)
            box = button.locator("xpath=ancestor::div[contains(@class,'dropdown')][1]")
            body = box.locator(":scope > :not(.admonition-title)").first
            assert not body.is_visible(), f"{page_path}: solution {k} is not folded"
            focus_by_keyboard(page, button)
            ring = focus_ring(button)
            assert ring["visible"] and ring["style"] != "none" and ring["width"] >= 2, \
                f"{page_path}: solution toggle {k} shows no focus ring: {ring}"
            page.keyboard.press("Enter")
            assert body.is_visible(), f"{page_path}: Enter did not open solution {k}"
            assert button.get_attribute("aria-expanded") == "true"
            solutions += 1
        context.close()
    assert sliders and solutions, (sliders, solutions)
    print(f"\n[keyboard] {sliders} slider focus rings, {solutions} solutions opened with Enter")


# --- one search field -----------------------------------------------------

VISIBLE_SEARCH_FIELDS = """() => {
    const shown = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden'
               && !e.closest('[hidden], dialog:not([open])'); };
    return [...document.querySelectorAll(
            'input[type=search], .search-button-field, .search-button, [role=search] input')]
        .filter(e => !e.closest('.bd-article, .bd-search-container') && shown(e))
        .map(e => e.className || e.tagName);
}"""


def test_every_page_shows_exactly_one_search_field_on_desktop_and_phone(
        built_book, book_server, browser):
    """Outside the page's own text (search.html has its query form there), one
    search UI: the sidebar's field on a desktop, the header's button on a phone."""
    for width in (DESKTOP, PHONE):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        for page_path in built_pages(built_book):
            goto_settled(page, f"{book_server}/{page_path}")
            fields = page.evaluate(VISIBLE_SEARCH_FIELDS)
            assert len(fields) == 1, f"{page_path} at {width} px: search fields {fields}"
        context.close()


# --- phones ---------------------------------------------------------------

OVERFLOW = """() => {
    const root = document.documentElement, vw = root.clientWidth, bad = [];
    // inside a box that scrolls, or clips (KaTeX's SVG strokes for roots and
    // braces are drawn wide and cut to size by such a box), nothing sticks out
    const scrolls = e => { for (let a = e.parentElement; a && a !== root; a = a.parentElement) {
        const o = getComputedStyle(a).overflowX;
        if (['auto', 'scroll', 'hidden', 'clip'].includes(o)
                && a.getBoundingClientRect().right <= vw + 1)
            return true; }
        return false; };
    for (const e of document.querySelectorAll('.bd-article *')) {
        const r = e.getBoundingClientRect();
        if (e.closest('.katex-mathml')) continue;    // KaTeX's visually hidden MathML copy
        if (r.width > 1 && r.right > vw + 1 && !scrolls(e)) {
            bad.push(e.tagName.toLowerCase() + '.' + [...e.classList].join('.')
                     + ' right=' + Math.round(r.right));
        }
    }
    return {scrollWidth: root.scrollWidth, clientWidth: vw, clipped: bad.slice(0, 5)};
}"""


def test_no_page_scrolls_sideways_at_390_px(built_book, book_server, browser):
    """At a phone's width the page never scrolls sideways, and nothing in the
    text sticks out past the screen unless it sits in its own scrolling box
    (a wide table or equation); explorers keep picture and slider on screen."""
    context = browser.new_context(viewport={"width": PHONE, "height": 844})
    page = context.new_page()
    problems, explorers = {}, 0
    for page_path in built_pages(built_book):
        goto_settled(page, f"{book_server}/{page_path}")
        found = page.evaluate(OVERFLOW)
        if found["scrollWidth"] > found["clientWidth"] or found["clipped"]:
            problems[page_path] = found
        for box in page.locator(".attn-explorer").all():
            img, slider = box.evaluate("""b => [b.querySelector('img'), b.querySelector('input')]
                .map(e => { const r = e.getBoundingClientRect();
                            return {right: r.right, top: r.top, bottom: r.bottom}; })""")
            assert max(img["right"], slider["right"]) <= PHONE, \
                f"{page_path}: an explorer is wider than the phone"
            assert slider["top"] >= img["bottom"], f"{page_path}: the slider is not under the picture"
            explorers += 1
    context.close()
    assert not problems, json.dumps(problems, indent=1)
    print(f"\n[phone] {len(built_pages(built_book))} pages fit {PHONE} px; "
          f"{explorers} explorers on screen")


def test_no_code_cell_scrolls_sideways_on_a_laptop(built_book, book_server, browser):
    """At 1280 px every line of every shown code cell, and of the code in every
    opened solution, fits its box: the chapters are formatted to 76
    characters (chapters/ruff.toml) and the prose's code to 68
    (tests/test_repo.py), and this checks that the theme's boxes hold them."""
    context, page = open_page(browser, f"{book_server}/intro.html", width=DESKTOP)
    wide, cells = {}, 0
    for page_path in built_pages(built_book):
        if not page_path.startswith("chapters/"):
            continue
        goto_settled(page, f"{book_server}/{page_path}")
        buttons = page.locator(".dropdown.admonition button.toggle-button")
        for k in range(buttons.count()):
            buttons.nth(k).click()
        found = page.evaluate("""() => [...document.querySelectorAll(
                '.cell_input pre, .dropdown.admonition pre')]
            .filter(pre => pre.clientWidth > 0)
            .map(pre => ({over: pre.scrollWidth - pre.clientWidth,
                          line: pre.innerText.split('\\n')
                                   .reduce((a, b) => b.length > a.length ? b : a, '')}))""")
        cells += len(found)
        if over := [f["line"] for f in found if f["over"] > 1]:
            wide[page_path] = over
    context.close()
    assert cells > 100, f"only {cells} code cells found"
    assert not wide, json.dumps(wide, indent=1, ensure_ascii=False)
    print(f"\n[laptop] {cells} code blocks (cells and opened solutions) on the chapter "
          "pages fit 1280 px")


# --- Chinese glyphs -------------------------------------------------------

def cjk_pages(built_book) -> dict[str, set[str]]:
    pages = {p: set(CJK.findall((built_book / p).read_text(encoding="utf-8")))
             for p in built_pages(built_book)}
    return {p: chars for p, chars in pages.items() if chars}


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
    size = sum((folder / name).stat().st_size for name in served)
    print(f"\n[cjk] {len(needed)} characters on {len(with_cjk)} pages; "
          f"{len(served)} font files, {size / 1024:.1f} KiB in all")


GLYPHS = """async ([family, chars]) => {
    await document.fonts.ready;
    await document.fonts.load(`40px "${family}"`, chars);
    const draw = (text, font) => {
        const c = document.createElement('canvas'); c.width = 60; c.height = 60;
        const g = c.getContext('2d'); g.font = font; g.fillText(text, 5, 45);
        return {width: g.measureText(text).width,
                pixels: Array.from(g.getImageData(0, 0, 60, 60).data).join()};
    };
    const stack = getComputedStyle(document.querySelector('main')).fontFamily;
    const ours = [...chars].map(ch => draw(ch, `40px ${stack}`));
    const box = draw('\\u0378', `40px ${stack}`);      // unassigned: always the missing-glyph box
    return {check: document.fonts.check(`40px "${family}"`, chars), stack,
            widths: ours.map(o => o.width), box: box.width,
            distinct: new Set(ours.map(o => o.pixels)).size,
            likeBox: ours.filter(o => o.pixels === box.pixels).length};
}"""


def test_chinese_glyphs_render_from_the_books_font_not_as_boxes(built_book, book_server,
                                                                  browser):
    """On every page with Chinese: the font is loaded for those characters, each
    character is drawn one em wide with the page's own font stack, unlike the
    missing-glyph box, and different characters give different pictures (boxes
    would all look alike)."""
    for page_path, chars in cjk_pages(built_book).items():
        sample = "".join(sorted(chars)[:12])
        context, page = open_page(browser, f"{book_server}/{page_path}")
        r = page.evaluate(GLYPHS, [CJK_FAMILY, sample])
        context.close()
        assert r["check"], f"{page_path}: document.fonts.check failed for {sample!r}"
        assert CJK_FAMILY in r["stack"], f"{page_path}: page font stack {r['stack']}"
        assert all(abs(w - 40) < 0.5 for w in r["widths"]), (page_path, sample, r["widths"])
        assert r["likeBox"] == 0 and r["distinct"] == len(sample), (page_path, sample, r)


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
    sample = "".join(sorted(cjk_pages(built_book)["glossary.html"])[:12])
    r = page.evaluate(GLYPHS, [CJK_FAMILY, sample])
    context.close()
    assert r["likeBox"] == len(sample) and r["distinct"] == 1, r


# --- no 404, favicon included ---------------------------------------------

def test_every_page_over_http_gets_no_404_and_has_a_favicon(built_book, recording_server,
                                                           browser):
    """Served over HTTP, as a host would serve it: the server answers every
    request the browser makes (the browser's own favicon request included) with
    success, no page logs a console error, and each page names its icon."""
    base, log = recording_server
    context = browser.new_context()
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    for page_path in built_pages(built_book):
        page.goto(f"{base}/{page_path}", wait_until="load")
        page.wait_for_load_state("networkidle")   # the favicon request comes after load
        icon = page.evaluate("""async () => { const l = document.querySelector("link[rel~=icon]");
            if (!l) return null;
            const r = await fetch(l.href); return [r.status, r.headers.get('content-type')]; }""")
        assert icon and icon[0] == 200 and icon[1].startswith("image/"), (page_path, icon)
    context.close()
    failed = [(status, path) for status, path in log if status >= 400]
    assert not failed, failed
    assert not errors, errors
    print(f"\n[http] {len(log)} requests answered, none failed; 0 console errors")


# --- colour ---------------------------------------------------------------

def srgb_to_lightness(rgb) -> float:
    """CIELAB L* (0-100) of an sRGB colour with components in [0, 1]."""
    import numpy as np
    c = np.asarray(rgb[:3], dtype=float)
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    y = float(linear @ [0.2126, 0.7152, 0.0722])
    return 116 * (y ** (1 / 3) if y > 216 / 24389 else (24389 / 27 * y + 16) / 116) - 116


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
