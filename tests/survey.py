"""One visit per page: what the browser tests read off every built page.

Opening a page in Chromium costs most of a second here (the theme's scripts,
fonts, transitions that must end before colours are measured), and the
browser tests used to open every page once for each thing they checked, ten
times in all. Now `survey` opens each page of an edition three times and
reads everything on those visits:

- on a laptop (1280 px, light mode): requests, console errors, rendered
  maths, images, the search field, the favicon, Chinese glyphs, an axe-core
  audit, the explorers' sliders and the folded solutions from the keyboard,
  the width of every code block with the solutions open; then the same page
  switched to the dark theme for axe-core's contrast rule; where the
  language switch leads from three places on the page; on the search page,
  what a few queries find;
- on a phone (390 px, the reader asking for dark mode): the theme follows
  that wish, nothing scrolls sideways, explorers fit, one search control;
- with JavaScript off: every formula is laid out by the HTML KaTeX wrote at
  build time.

The tests (tests/test_book.py, tests/test_accessibility.py) assert on the
survey, one edition per test. Each edition is surveyed once per test run,
and the pytest-xdist workers share the surveys through files
(`shared_survey`): a worker that needs an edition another worker is
surveying surveys the other edition meanwhile, so the two editions are
surveyed side by side on two cores. A check that
raises on a page records its error under `errors[check]`, and the test that
owns the check fails with it; the other checks carry on.

The checks' own ability to fail is tested on pages made to fail
(`test_page_checker_catches_...`, `test_axe_audit_can_fail`,
`test_glyph_check_sees_boxes_without_the_books_font`).
"""
from __future__ import annotations

import json
import shutil
import time
import traceback
from pathlib import Path
from urllib.parse import urlparse

from tools.project import ROOT, serve
from tools.sphinx.a11y import CJK
from tools.sphinx.a11y import FAMILY as CJK_FAMILY

DESKTOP, PHONE = 1280, 390
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
RAW_TEX = ["\\(", "\\)", "\\[", "\\]", "$$", "\\begin{"]
EDITIONS = ("en", "zh")
#: The parameter of the tests that assert on a survey, one test per edition.
BY_EDITION = EDITIONS


def built_pages(html_dir: Path) -> list[str]:
    """Every page of both editions (the Chinese one is in zh/)."""
    return sorted(p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*.html")
                  if not any(part.startswith(("_", "reports"))
                             for part in p.relative_to(html_dir).parts))


def edition_pages(html_dir: Path, edition: str) -> list[str]:
    """The pages of one edition, as paths under html_dir ('zh/...' for Chinese)."""
    return [p for p in built_pages(html_dir) if p.startswith("zh/") == (edition == "zh")]


def cjk_characters(html_dir: Path, page: str) -> set[str]:
    return set(CJK.findall((html_dir / page).read_text(encoding="utf-8")))


SETTLE = """async () => {
    await document.fonts.ready;
    // colour transitions (the theme's links and buttons) must end before
    // anything measures colours: each finite one is taken to its end state
    // at once (waiting for them cost about 0.3 s a page)
    document.getAnimations()
        .filter(a => a.effect && a.effect.getComputedTiming().iterations !== Infinity)
        .forEach(a => a.finish());
}"""


#: true once the page's late scripts have run, or on a page without the loader
LATE_SCRIPTS_RAN = """() => document.documentElement.dataset.lateScripts === 'ran'
    || ![...document.scripts].some(s => s.textContent.includes('data-late-scripts'))"""


def goto_settled(page, url: str, transitions: bool = True) -> None:
    """Open `url` and wait until the page's fonts (and, unless `transitions`
    is False, its colour transitions) have settled.

    The two index.html pages redirect (a meta refresh) to intro.html; for them
    wait for the page they lead to. Waiting for network idle instead costs at
    least 0.5 s per page and shows no more. The theme sets its colours once
    the page is shown, so their transitions run for about 0.3 s after load:
    what measures colours must see them ended, what measures layout need not.
    """
    page.goto(url, wait_until="load")
    if url.rsplit("/", 1)[-1] == "index.html":
        page.wait_for_url(lambda u: u.rsplit("/", 1)[-1] != "index.html")
        page.wait_for_load_state("load")
    # the theme's and the buttons' scripts run after first paint (tools/sphinx/firstpaint.py)
    page.wait_for_function(LATE_SCRIPTS_RAN, timeout=30_000)
    page.evaluate(SETTLE if transitions else "async () => { await document.fonts.ready; }")


# --- what one visit reads ---------------------------------------------------

def block_other_hosts(context, blocked: list[str]) -> None:
    """Let requests to 127.0.0.1 (and data:/blob:) through; abort and record the rest."""
    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()
    context.route("**/*", route)


def listen(page, report_now) -> None:
    """Record console errors, failed requests and 4xx/5xx answers into
    `report_now()`, the report of the page being visited."""
    page.on("console", lambda m: m.type == "error"
            and report_now()["console_errors"].append(m.text))
    page.on("pageerror", lambda e: report_now()["console_errors"].append(str(e)))
    page.on("requestfailed", lambda r: report_now()["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and report_now()["bad_status"].append(
        f"{r.status} {r.url}"))


def read_load(page) -> dict:
    """Formulas typeset, broken images, TeX left in the text."""
    images = page.evaluate("""async () => {
        const imgs = [...document.images];
        imgs.forEach(i => { i.loading = 'eager'; });
        await Promise.all(imgs.map(i => i.complete ? null :
            new Promise(ok => { i.onload = ok; i.onerror = ok; })));
        return imgs.filter(i => !i.naturalWidth).map(i => i.currentSrc || i.src);
    }""")
    text = page.evaluate("() => (document.querySelector('main') || document.body).innerText")
    fonts = page.evaluate("""() => ({
        fetched: performance.getEntriesByType('resource').map(e => e.name)
            .filter(n => /\\/katex\\/fonts\\//.test(n)).map(n => n.split('/').pop()),
        preloaded: [...document.querySelectorAll('link[rel=preload][as=font]')]
            .map(l => l.href.split('/').pop())})""")
    return {"math": page.evaluate("() => document.querySelectorAll('.katex').length"),
            "broken_images": images, "raw_tex": [t for t in RAW_TEX if t in text],
            "katex_fonts": fonts}


def new_report(page: str) -> dict:
    return {"page": page, "console_errors": [], "failed": [], "blocked": [], "bad_status": [],
            "errors": {}}


def check_page(browser, base_url: str, page_path: str) -> dict:
    """Load one page on its own; what went wrong on it (the laptop visit's first
    checks, for pages made to fail)."""
    report = new_report(page_path)
    context = browser.new_context()
    block_other_hosts(context, report["blocked"])
    page = context.new_page()
    listen(page, lambda: report)
    goto_settled(page, f"{base_url}/{page_path}")
    report.update(read_load(page))
    context.close()
    return report


VISIBLE_SEARCH_FIELDS = """() => {
    const shown = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
        return r.width > 0 && r.height > 0 && s.visibility !== 'hidden'
               && !e.closest('[hidden], dialog:not([open])'); };
    return [...document.querySelectorAll(
            'input[type=search], .search-button-field, .search-button, [role=search] input')]
        .filter(e => !e.closest('.bd-article, .bd-search-container') && shown(e))
        .map(e => e.className || e.tagName);
}"""

FAVICON = """async () => { const l = document.querySelector("link[rel~=icon]");
    if (!l) return null;
    const r = await fetch(l.href); return [r.status, r.headers.get('content-type')]; }"""

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


def glyph_sample(chars: set[str]) -> str:
    return "".join(sorted(chars)[:12])


def read_glyphs(page, sample: str) -> dict:
    """How the page draws `sample` with its own font stack, against the missing-glyph box."""
    return page.evaluate(GLYPHS, [CJK_FAMILY, sample])


#: Hides, for the audit's sake, each code token that looks exactly like one
#: met before on the page: a leaf <span> in a highlighted block with the same
#: colour, font and text shadow, over the same chain of ancestors'
#: backgrounds, opacities, filters and blend modes up to the root (none of
#: them an image or a gradient). Such a twin has the contrast of the first
#: one, so the audit checks each distinct look once. A chapter has about
#: 2,200 token spans and a few dozen looks; the twins took half of the
#: contrast rule's time. (axe's own `exclude` is slower still with
#: thousands of nodes.) `visibility: hidden` keeps the layout; SHOW_CODE_TWINS
#: undoes it. An element laid over a token from elsewhere, not an ancestor,
#: is not part of its look: the book's code blocks have none (the copy
#: button shows on hover only). Returns how many spans were hidden.
HIDE_CODE_TWINS = """() => {
    if (!document.getElementById('axe-code-twins')) {
        const style = document.createElement('style');
        style.id = 'axe-code-twins';
        style.textContent = '[data-axe-twin] { visibility: hidden !important; }';
        document.head.appendChild(style);
    }
    const chain = new Map();
    const context = e => {
        if (!e) return '';
        if (!chain.has(e)) {
            const c = getComputedStyle(e);
            chain.set(e, [c.backgroundColor, c.backgroundImage, c.opacity, c.filter,
                          c.mixBlendMode, c.backdropFilter].join(',')
                         + '|' + context(e.parentElement));
        }
        return chain.get(e);
    };
    const seen = new Set();
    let hidden = 0;
    for (const span of document.querySelectorAll('.highlight pre span')) {
        if (span.children.length) continue;          // only leaf tokens
        const c = getComputedStyle(span);
        const look = [c.color, c.fontSize, c.fontWeight, c.fontFamily, c.textShadow,
                      c.backgroundColor, c.backgroundImage, c.opacity, c.filter,
                      c.mixBlendMode].join(',') + '|' + context(span.parentElement);
        if (look.includes('url(') || look.includes('gradient(')) continue;  // where it is matters
        if (seen.has(look)) { span.setAttribute('data-axe-twin', ''); hidden++; }
        else seen.add(look);
    }
    return hidden;
}"""
SHOW_CODE_TWINS = """() => document.querySelectorAll('[data-axe-twin]')
    .forEach(e => e.removeAttribute('data-axe-twin'))"""


def run_axe(page, only_contrast: bool = False) -> list[dict]:
    """axe-core's violations on the loaded page: [{id, impact, nodes, help, targets}];
    every WCAG 2.1 A/AA and best-practice rule, or only the colour-contrast one."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    run_only = ({"type": "rule", "values": ["color-contrast"]} if only_contrast
                else {"type": "tag", "values": AXE_TAGS})
    # KaTeX's HTML rendering of a formula is aria-hidden: assistive technology
    # reads its MathML twin, which stays in the audit. Its many small spans
    # (about 80 per formula) made the audit 2.5 times slower. A code token's
    # twins are hidden meanwhile (HIDE_CODE_TWINS): plain spans, of which
    # the rules check only the contrast, and each look is audited once.
    page.evaluate(HIDE_CODE_TWINS)
    try:
        return _axe_violations(page, run_only)
    finally:
        page.evaluate(SHOW_CODE_TWINS)


def _axe_violations(page, run_only: dict) -> list[dict]:
    return page.evaluate("""async (runOnly) => {
        const r = await axe.run({exclude: [['.katex-html']]},
                                {runOnly, resultTypes: ['violations']});
        return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.length,
            targets: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
    }""", run_only)


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


def ring_problem(ring: dict) -> bool:
    return not (ring["visible"] and ring["style"] != "none" and ring["width"] >= 2)


def read_keyboard(page) -> dict:
    """Every explorer slider: reached with Tab, a focus ring, an arrow key moves
    the frame, its value label and its alt text. Every folded solution: folded,
    a focus ring on its toggle, Enter opens it (all are left open); the
    toggles' labels."""
    sliders, solutions = [], []           # what is wrong with each, by kind
    ranges = page.locator(".attn-explorer input[type=range]")
    for k in range(ranges.count()):
        slider = ranges.nth(k)
        focus_by_keyboard(page, slider)
        if ring_problem(ring := focus_ring(slider)):
            sliders.append(f"explorer slider {k} shows no focus ring: {ring}")
        box = slider.locator("xpath=ancestor::div[contains(@class,'attn-explorer')]")
        image, label = box.locator("img"), box.locator("output")
        before = (image.get_attribute("src"), label.inner_text(), image.get_attribute("alt"))
        at_max = slider.get_attribute("value") == slider.get_attribute("max")
        page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
        src, value, alt = (image.get_attribute("src"), label.inner_text(),
                           image.get_attribute("alt"))
        if src == before[0]:
            sliders.append(f"explorer {k}: the frame did not change")
        if value == before[1]:
            sliders.append(f"explorer {k}: the label did not change")
        if alt == before[2] or value.split(" = ")[-1] not in alt:
            sliders.append(f"explorer {k}: the alt text {alt!r} does not follow {value!r}")
        # the frame is a file the slider's script fetched when the explorer
        # neared the viewport (tools/sphinx/frames.py): wait until it is drawn
        if not image.evaluate("i => i.decode().then(() => i.naturalWidth > 0, () => false)"):
            sliders.append(f"explorer {k}: the new frame is not drawn")
    buttons = page.locator(".dropdown.admonition button.toggle-button")
    for k in range(buttons.count()):
        button = buttons.nth(k)
        box = button.locator("xpath=ancestor::div[contains(@class,'dropdown')][1]")
        body = box.locator(":scope > :not(.admonition-title)").first
        if body.is_visible():
            solutions.append(f"solution {k} is not folded")
        focus_by_keyboard(page, button)
        if ring_problem(ring := focus_ring(button)):
            solutions.append(f"solution toggle {k} shows no focus ring: {ring}")
        page.keyboard.press("Enter")
        if not body.is_visible() or button.get_attribute("aria-expanded") != "true":
            solutions.append(f"Enter did not open solution {k}")
    labels = sorted(set(buttons.evaluate_all("bs => bs.map(b => b.getAttribute('aria-label'))")))
    return {"sliders": ranges.count(), "solutions": buttons.count(), "labels": labels,
            "slider_problems": sliders, "solution_problems": solutions}


CODE_WIDTHS = """() => [...document.querySelectorAll('.cell_input pre, .dropdown.admonition pre')]
    .filter(pre => pre.clientWidth > 0)
    .map(pre => ({over: pre.scrollWidth - pre.clientWidth,
                  line: pre.innerText.split('\\n')
                           .reduce((a, b) => b.length > a.length ? b : a, '')}))"""


def read_code_widths(page) -> dict:
    """Code blocks shown (cells, and solutions, which read_keyboard opened) and
    the longest line of each that scrolls sideways."""
    found = page.evaluate(CODE_WIDTHS)
    return {"cells": len(found), "wide": [f["line"] for f in found if f["over"] > 1]}


SWITCH = """() => {
    // The language switch keeps the reader's place (_templates/language-switch.html).
    // Follow it three times without leaving the page (a listener after the
    // link's own cancels the navigation) and record where it leads: from the
    // top of the page, with the address naming the last section, and with
    // none named, scrolled to a long section's heading.
    const link = document.querySelector('a.book-language-switch');
    if (!link) return null;
    const root = document.documentElement;
    root.style.scrollBehavior = 'auto';               // jump, do not animate
    const headings = [...document.querySelectorAll(
        'article.bd-article section[id] > :is(h1, h2, h3, h4, h5, h6):first-child')];
    const follow = () => {
        window.addEventListener('click', e => e.preventDefault(), {once: true});
        link.click();
        return link.getAttribute('href');
    };
    const found = {sections: headings.length};
    history.replaceState(null, '', location.pathname);
    window.scrollTo(0, 0);
    found.top = follow();
    if (headings.length > 1) {
        const named = headings[headings.length - 1].parentElement;
        location.hash = named.id;
        found.named = {id: named.id, href: follow()};
        history.replaceState(null, '', location.pathname);
        const top = h => h.getBoundingClientRect().top + window.scrollY;
        const long = headings.slice(1).findIndex((h, i) => top(h) - top(headings[i]) > 2 * innerHeight);
        if (long >= 0) {
            const read = headings[long];
            window.scrollTo(0, top(read) - 10);
            found.read = {id: read.parentElement.id, href: follow()};
        }
    }
    root.style.scrollBehavior = '';
    return found;
}"""


def read_switch(page) -> dict | None:
    return page.evaluate(SWITCH)


#: Queries the survey runs on each edition's search page, through Sphinx's
#: own two steps of a search (the splitter of tools/sphinx/i18n_ui.py first).
SEARCH_QUERIES = {"en": [], "zh": ["上限并没有消失", "查询和键", "缩放点积注意力"]}

SEARCH = """async (queries) => {
    for (let waited = 0; !Search.hasIndex(); waited += 50) {
        if (waited > 10000) throw new Error('the search index did not load');
        await new Promise(ok => setTimeout(ok, 50));
    }
    return Object.fromEntries(queries.map(query => {
        const parsed = Search._parseQuery(query);
        const results = Search._performSearch(...parsed);
        return [query, {terms: [...parsed[1]],
                        pages: [...new Set(results.map(r => r[0]))].sort()}];
    }));
}"""


def read_search(page, queries: list[str]) -> dict:
    """{query: {terms: what the query was split into, pages: the docnames found}}."""
    return page.evaluate(SEARCH, queries)


def read_dark(page) -> dict:
    """Switch the page to the dark theme as the theme's own button does and run
    axe-core's contrast rule on the dark colours. Transitions are switched off
    first, so the colours are the final ones at once (waiting for the
    theme's colour transitions cost 0.3 s a page)."""
    page.evaluate("""() => {
        const style = document.createElement('style');
        style.textContent = '*, *::before, *::after { transition: none !important; }';
        document.head.appendChild(style);
        document.documentElement.dataset.theme = 'dark';
        getComputedStyle(document.body).color;           // apply the new colours now
    }""")
    page.evaluate(SETTLE)
    return {"theme": page.evaluate("() => document.documentElement.dataset.theme"),
            "background": page.evaluate("() => getComputedStyle(document.body).backgroundColor"),
            "violations": run_axe(page, only_contrast=True)}


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
    const explorers = [...document.querySelectorAll('.attn-explorer')].map(b =>
        [b.querySelector('img'), b.querySelector('input')].map(e => {
            const r = e.getBoundingClientRect();
            return {right: r.right, top: r.top, bottom: r.bottom}; }));
    return {scrollWidth: root.scrollWidth, clientWidth: vw, clipped: bad.slice(0, 5),
            explorers, theme: root.dataset.theme};
}"""


def read_phone(page) -> dict:
    found = page.evaluate(OVERFLOW)
    found["search_fields"] = page.evaluate(VISIBLE_SEARCH_FIELDS)
    return found


MATH_WITHOUT_SCRIPTS = """async () => {
    await document.fonts.ready;
    const math = [...document.querySelectorAll('.bd-article span.math, .bd-article div.math')];
    const unset = math.filter(m => {
        const html = m.querySelector('.katex-html');
        return !html || html.getBoundingClientRect().width < 1;
    });
    const text = (document.querySelector('main') || document.body).innerText;
    const katexFonts = [...document.fonts].filter(
        f => f.family.replace(/"/g, '').startsWith('KaTeX_') && f.status === 'loaded');
    return {formulas: math.length, unset: unset.slice(0, 3).map(m => m.textContent.slice(0, 60)),
            errors: document.querySelectorAll('.katex-error').length,
            scripts: [...document.scripts].filter(s => /katex|mathjax/i.test(s.src)).length,
            text, fonts: katexFonts.map(f => f.family)};
}"""


def read_without_javascript(page) -> dict:
    found = page.evaluate(MATH_WITHOUT_SCRIPTS)
    text = found.pop("text")
    found["raw_tex"] = [t for t in RAW_TEX if t in text]
    return found


# --- the survey -------------------------------------------------------------

def attempt(report: dict, check: str, read, *args) -> None:
    """report[check] = read(*args); an exception is recorded, not raised."""
    try:
        report[check] = read(*args)
    except Exception:                       # noqa: BLE001 - the owning test reports it
        report["errors"][check] = traceback.format_exc(limit=3)


def visit(tab, url: str, read, settle: str = "colours"):
    """Open `url` in `tab`, then read(tab). `settle`: "colours" waits for
    fonts and colour transitions, "layout" for fonts, "load" for the load event."""
    if settle == "load":
        tab.goto(url, wait_until="load")
    else:
        goto_settled(tab, url, transitions=settle == "colours")
    return read(tab)


def survey(browser, html_dir: Path, edition: str) -> dict:
    """Visit every page of one edition on a laptop, a phone and with JavaScript
    off; returns {"pages": {page: report}, "requests": [(status, path)]} with
    each report holding what every check read (see the module docstring)."""
    reports = {p: new_report(p) for p in edition_pages(html_dir, edition)}
    visiting: list[dict] = [{}]
    blocked: list[str] = []
    with serve(html_dir) as (base, requests):
        contexts = {
            "laptop": browser.new_context(viewport={"width": DESKTOP, "height": 900},
                                          color_scheme="light"),
            "phone": browser.new_context(viewport={"width": PHONE, "height": 844},
                                         color_scheme="dark"),
            "plain": browser.new_context(java_script_enabled=False)}
        tabs = {}
        for name, context in contexts.items():
            block_other_hosts(context, blocked)
            tabs[name] = context.new_page()
            if name != "plain":
                listen(tabs[name], lambda: visiting[0])
        laptop = tabs["laptop"]
        for page_path, report in reports.items():
            visiting[0], start, url = report, len(blocked), f"{base}/{page_path}"
            attempt(report, "load", visit, laptop, url, read_load)
            attempt(report, "search_laptop", laptop.evaluate, VISIBLE_SEARCH_FIELDS)
            attempt(report, "favicon", laptop.evaluate, FAVICON)
            if chars := cjk_characters(html_dir, page_path):
                attempt(report, "glyphs", read_glyphs, laptop, glyph_sample(chars))
            attempt(report, "axe", run_axe, laptop)
            attempt(report, "keyboard", read_keyboard, laptop)
            attempt(report, "code", read_code_widths, laptop)
            attempt(report, "dark", read_dark, laptop)
            attempt(report, "switch", read_switch, laptop)
            if page_path.rsplit("/", 1)[-1] == "search.html" and SEARCH_QUERIES[edition]:
                attempt(report, "search", read_search, laptop, SEARCH_QUERIES[edition])
            attempt(report, "phone", visit, tabs["phone"], url, read_phone, "layout")
            if page_path.rsplit("/", 1)[-1] != "index.html":  # a redirect, read at intro
                attempt(report, "plain", visit, tabs["plain"], url, read_without_javascript,
                        "load")
            report["blocked"] = blocked[start:]
        for context in contexts.values():
            context.close()
        return {"pages": reports, "requests": list(requests)}


def failures(result: dict, check: str, problem, pages=None) -> dict[str, object]:
    """{page: what is wrong} for one check over the surveyed pages (or those of
    `pages`): the check's recorded error, or `problem(data, report)` when it
    returns something truthy."""
    bad = {}
    for page, report in result["pages"].items():
        if pages is not None and page not in pages:
            continue
        if check in report["errors"]:
            bad[page] = report["errors"][check]
        elif check in report and (found := problem(report[check], report)):
            bad[page] = found
    return bad


def shared_survey(browser, html_dir: Path, edition: str, run_id: str) -> dict:
    """The survey of `edition` for this test run, made by whichever worker
    asks first and kept in _build/.survey/<run_id>/. While another worker
    surveys the edition asked for, survey one nobody has started."""
    folder = ROOT / "_build" / ".survey" / run_id
    if not folder.is_dir():
        for old in folder.parent.glob("*"):
            if old.name != run_id:                # another worker may have made it
                shutil.rmtree(old, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock, Timeout
    wanted = folder / f"{edition}.json"
    while not wanted.exists():
        for other in (edition, *(e for e in EDITIONS if e != edition)):
            done = folder / f"{other}.json"
            lock = FileLock(str(folder / f"{other}.lock"))
            try:
                lock.acquire(timeout=0)
            except Timeout:
                continue                    # another worker is surveying it
            try:
                if not done.exists():
                    result = survey(browser, html_dir, other)
                    partial = done.with_suffix(".partial")
                    partial.write_text(json.dumps(result, ensure_ascii=False))
                    partial.replace(done)
            finally:
                lock.release()
            break
        else:
            time.sleep(0.5)
    return json.loads(wanted.read_text())
