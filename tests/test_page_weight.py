"""The page on a phone (issue 39): the structural facts that keep a chapter
page light before its first paint. The timings themselves (LCP, bytes before
first paint under Lighthouse's mobile profile) are measured by
`python -m tools.bench.phone`, not here: they vary with the machine's load.

- no explorer frame is inlined as a data: URI: each is a file in the
  edition's _images/ (tools/sphinx/frames.py), the first shown by a plain
  <img> with its size and alt text, the others loaded by the slider's
  script when the explorer nears the viewport;
- neither Font Awesome's font nor searchindex.js is requested before first
  paint (tools/sphinx/icons.py, _templates/layout.html), and every icon on
  the page still has its glyph;
- the page's scripts (the theme's, the copy and folding buttons') are
  requested after first paint, in their order, and still run
  (tools/sphinx/firstpaint.py's loader);
- stepping through an explorer with the keyboard shows every frame with its
  alt text, and with JavaScript off the first frame shows.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from survey import built_pages

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.book]

EXPLORER = re.compile(r'<div class="attn-explorer" id="(attnx-[0-9a-f]+)"')
#: a chapter page with explorers far below its first screen, in each edition
PAGES = ["chapters/16_induction_head.html", "zh/chapters/16_induction_head.html"]


def frame_lists(page_html: str) -> dict[str, list[str]]:
    """{explorer id: the URLs of its frames}."""
    return {uid: json.loads(re.search(rf'id="{uid}-f">(.*?)</script>', page_html, re.S).group(1))
            for uid in EXPLORER.findall(page_html)}


def test_no_page_inlines_explorer_frames(built_book):
    """At most one data: PNG per explorer in any page's HTML (there are none:
    the first frame is a file too), and every frame a page names exists."""
    pages = [p for p in built_pages(built_book) if p.endswith(".html")]
    explorers = 0
    for page in pages:
        text = (built_book / page).read_text(encoding="utf-8", errors="replace")
        frames = frame_lists(text)
        explorers += len(frames)
        assert text.count("data:image/png") <= len(frames), page
        for uid, urls in frames.items():
            assert not [u for u in urls if u.startswith("data:")], f"{page}: {uid}"
            img = re.search(rf'<img id="{uid}-i" src="([^"]+)" width="\d+" height="\d+" '
                            r'loading="lazy" alt="[^"]+">', text)
            assert img and img.group(1) in urls, f"{page}: {uid}'s <img> is not a plain frame"
            missing = [u for u in urls if not ((built_book / page).parent / u).is_file()]
            assert not missing, f"{page}: {uid} names missing frames {missing[:2]}"
    assert explorers >= 16, f"only {explorers} explorers in the book"


FIRST_PAINT = """() => {
    const fcp = performance.getEntriesByName('first-contentful-paint')[0].startTime;
    return performance.getEntriesByType('resource')
        .map(r => ({name: r.name, start: r.startTime, early: r.startTime < fcp}));
}"""

#: every Font Awesome glyph the page shows (a ::before or ::after drawn with
#: the font), and whether a loaded Font Awesome face's unicode-range holds it
ICONS = """() => {
    const loaded = [...document.fonts].filter(f => f.family.includes('Font Awesome')
                                                   && f.status === 'loaded');
    const holds = (face, code) => face.unicodeRange.split(',').some(r => {
        const [a, b] = r.trim().replace(/^U\\+/i, '').split('-').map(h => parseInt(h, 16));
        return code >= a && code <= (b === undefined ? a : b);
    });
    const seen = [];
    for (const el of document.querySelectorAll('body *')) {
        if (!el.getClientRects().length) continue;
        for (const pseudo of ['::before', '::after']) {
            const s = getComputedStyle(el, pseudo);
            if (!s.fontFamily.includes('Font Awesome') || s.content === 'none') continue;
            const text = s.content.replace(/^"|"$/g, '');
            if (!text || text === 'normal') continue;
            const code = text.codePointAt(0);
            seen.push({cls: String(el.className), text: code.toString(16),
                       ok: loaded.some(face => holds(face, code))});
        }
    }
    return seen;
}"""


@pytest.mark.parametrize("page_path", PAGES)
def test_font_awesome_and_search_index_wait_for_first_paint(built_book, book_server, browser,
                                                            page_path):
    """On a chapter page neither fa-solid-900.woff2 nor searchindex.js is
    requested before first paint (both are not requested at all), and every
    icon shown has its glyph loaded."""
    context = browser.new_context(viewport={"width": 412, "height": 823})
    page = context.new_page()
    page.goto(f"{book_server}/{page_path}", wait_until="load")
    page.evaluate("document.fonts.ready.then(() => true)")
    fetched = page.evaluate(FIRST_PAINT)
    icons = page.evaluate(ICONS)
    context.close()
    early = [r["name"] for r in fetched if r["early"]]
    assert not [n for n in early if "fontawesome" in n or "searchindex" in n], early
    assert not [r["name"] for r in fetched if "fa-solid-900" in r["name"]
                or r["name"].endswith("searchindex.js")], "loaded after first paint"
    assert len(icons) >= 4, f"only {len(icons)} icons shown: {icons}"
    assert all(i["ok"] for i in icons), [i for i in icons if not i["ok"]]


@pytest.mark.parametrize("page_path", PAGES)
def test_scripts_wait_for_first_paint_and_still_run(built_book, book_server, browser, page_path):
    """No script file but documentation_options.js, doctools.js (and the
    Chinese translations.js) is requested before first paint; the others are
    requested after it, in the page's order, and do their work: the theme
    (bootstrap's global, the sidebar toggle), the copy buttons and the
    folding buttons."""
    from tools.sphinx.firstpaint import BLOCKING
    page_html = (built_book / page_path).read_text(encoding="utf-8")
    assert not re.search(r'<script[^>]*\bdefer\b[^>]*\bsrc=', page_html), "a deferred script"
    order = [s["src"].split("?")[0].rsplit("/", 1)[-1]
             for s in json.loads(re.search(r"\}\)\((\[.*?\])\);</script>", page_html).group(1))]
    assert order[-2:] == ["bootstrap.js", "pydata-sphinx-theme.js"], order
    assert {"copybutton.js", "togglebutton.js", "sphinx-book-theme.js"} <= set(order), order
    context = browser.new_context(viewport={"width": 412, "height": 823})
    page = context.new_page()
    page.goto(f"{book_server}/{page_path}", wait_until="load")
    page.wait_for_selector("html[data-late-scripts=ran]", state="attached", timeout=20_000)
    fetched = page.evaluate(FIRST_PAINT)
    scripts = [r for r in fetched if r["name"].split("?")[0].endswith(".js")]
    early = {r["name"].split("?")[0].rsplit("/", 1)[-1] for r in scripts if r["early"]}
    assert early <= {Path(b).name for b in BLOCKING}, early
    late = [r["name"].split("?")[0].rsplit("/", 1)[-1] for r in scripts if not r["early"]]
    assert [n for n in late if n in order] == order, late
    ran = page.evaluate("""() => ({
        bootstrap: typeof bootstrap === 'object' && typeof bootstrap.Tooltip === 'function',
        copy: document.querySelectorAll('button.copybtn').length,
        toggles: document.querySelectorAll('button.toggle-button').length,
        noprint: document.querySelector('.bd-header').classList.contains('noprint')})""")
    context.close()
    assert ran["bootstrap"] and ran["noprint"], ran
    assert ran["copy"] >= 5 and ran["toggles"] >= 1, ran


def test_the_search_page_still_loads_the_index(built_book, book_server, browser):
    page = browser.new_page()
    page.goto(f"{book_server}/search.html?q=softmax", wait_until="load")
    page.wait_for_selector("#search-results li", timeout=20_000)
    page.close()


@pytest.mark.parametrize("page_path", PAGES)
def test_explorer_frames_load_near_the_viewport_and_every_frame_steps(built_book, book_server,
                                                                      browser, page_path):
    """After the page has loaded, only the first frame of an explorer far
    below is fetched (lazily, near the viewport); scrolled near, all its
    frames are fetched; then Home and ArrowRight through every value show
    each frame, drawn, with its alt text; Home again returns to the first."""
    text = (built_book / page_path).read_text(encoding="utf-8")
    frames = frame_lists(text)
    uid, urls = list(frames.items())[-1]                 # the last explorer: far down
    alts = json.loads(re.search(rf'id="{uid}-a">(.*?)</script>', text, re.S).group(1))
    names = {u.rsplit("/", 1)[-1] for u in urls}
    page = browser.new_page(viewport={"width": 412, "height": 823})
    page.goto(f"{book_server}/{page_path}", wait_until="load")
    page.wait_for_timeout(300)

    def fetched() -> set[str]:
        return {n.rsplit("/", 1)[-1] for n in page.evaluate(
            "() => performance.getEntriesByType('resource').map(r => r.name)")} & names

    assert len(fetched()) <= 1, f"{len(fetched())} of {len(urls)} frames fetched before scrolling"
    page.locator(f"#{uid}").scroll_into_view_if_needed()
    page.wait_for_function(
        f"() => performance.getEntriesByType('resource').filter(r => "
        f"{json.dumps(sorted(names))}.some(n => r.name.endsWith(n))).length == {len(names)}",
        timeout=20_000)
    slider, image = page.locator(f"#{uid}-r"), page.locator(f"#{uid}-i")
    slider.focus()
    page.keyboard.press("Home")
    for k, (url, alt) in enumerate(zip(urls, alts, strict=True)):
        if k:
            page.keyboard.press("ArrowRight")
        assert image.get_attribute("src") == url and image.get_attribute("alt") == alt, k
        assert image.evaluate("i => i.decode().then(() => i.naturalWidth > 0, () => false)"), k
    page.keyboard.press("Home")
    assert image.get_attribute("src") == urls[0]
    page.close()


def test_with_javascript_off_the_first_frame_shows(built_book, book_server, browser):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{book_server}/{PAGES[0]}", wait_until="load")
    image = page.locator(".attn-explorer img").first
    image.scroll_into_view_if_needed()
    page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=image.element_handle())
    assert image.get_attribute("alt")
    context.close()


def test_theme_stylesheet_keeps_every_rule_a_page_or_script_can_match():
    """tools/sphinx/firstpaint.py drops a rule of the theme's stylesheet only
    when each of its selectors needs a class that no page and no script names."""
    from tools.sphinx.firstpaint import strip_unused_classes
    css = ("/*! .gone */:root{--a:1}.used{a:1}.gone{b:2}.used:not(.gone){c:3}"
           "@media (min-width:1px){.gone{d:4}}.gone,.used{e:5}.used .gone{f:6}"
           ":is(.gone){g:7}html[data-theme=dark] img:not(.only-dark,.dark-light){h:8}"
           "@font-face{font-family:x}@keyframes k{0%{a:1}to{a:2}}")
    kept = strip_unused_classes(css, set(), {"used", "img", "html"})
    for rule in (":root{--a:1}", ".used{a:1}", ".used:not(.gone){c:3}", ".gone,.used{e:5}",
                 ":is(.gone){g:7}", "img:not(.only-dark,.dark-light){h:8}",
                 "@font-face{font-family:x}", "@keyframes k{0%{a:1}to{a:2}}"):
        assert rule in kept, rule
    for rule in (".gone{b:2}", ".gone{d:4}", "@media", ".used .gone{f:6}"):
        assert rule not in kept, rule


def test_built_theme_stylesheet_is_cut_but_keeps_what_scripts_add(built_book):
    import gzip
    css = (built_book / "_static" / "styles" / "pydata-sphinx-theme.css").read_bytes()
    assert len(gzip.compress(css)) < 25_000, len(gzip.compress(css))
    text = css.decode()
    # classes bootstrap.js and the theme's script add at run time
    for selector in (".show", ".collapsing", ".bd-search", ".dropdown-menu"):
        assert selector in text, selector
