"""The strict book build, and every built page in headless Chromium.

Each page is loaded from a local server on 127.0.0.1 while every request to
any other host is blocked and counted. A page fails on a console error, a
failed, blocked or 4xx/5xx request, TeX left unrendered, or a broken image.
"""
from __future__ import annotations

import json
import re
from urllib.parse import urlparse

import pytest

from tools.project import ROOT, serve, toc_files

pytestmark = [pytest.mark.xdist_group("book"), pytest.mark.slow]

RAW_TEX = ["\\(", "\\)", "\\[", "\\]", "$$", "\\begin{"]


def built_pages(html_dir):
    """Every page of both editions (the Chinese one is in zh/)."""
    return sorted(p.relative_to(html_dir).as_posix() for p in html_dir.rglob("*.html")
                  if not any(part.startswith(("_", "reports"))
                             for part in p.relative_to(html_dir).parts))


SETTLE = """async () => {
    await document.fonts.ready;
    // colour transitions (the theme's links and buttons) must end before
    // anything measures colours
    await Promise.all(document.getAnimations()
        .filter(a => a.effect && a.effect.getComputedTiming().iterations !== Infinity)
        .map(a => a.finished.catch(() => null)));
}"""


def goto_settled(page, url: str):
    """Open `url` and wait until the page's fonts and transitions have settled.

    The two index.html pages redirect (a meta refresh) to intro.html; for them
    wait for the page they lead to. Waiting for network idle instead costs at
    least 0.5 s per page (26 s over 46 pages, measured) and shows no more.
    """
    page.goto(url, wait_until="load")
    if url.rsplit("/", 1)[-1] == "index.html":
        page.wait_for_url(lambda u: u.rsplit("/", 1)[-1] != "index.html")
        page.wait_for_load_state("load")
    page.evaluate(SETTLE)


def editions(html_dir):
    """(folder, its pages) for the English book and the Chinese edition in zh/."""
    return [(html_dir, [p for p in built_pages(html_dir) if not p.startswith("zh/")]),
            (html_dir / "zh", built_pages(html_dir / "zh"))]


def test_strict_build_produces_a_page_for_every_toc_entry(built_book):
    for name in toc_files():
        assert (built_book / f"{name}.html").is_file(), f"no page for {name}"
    assert (built_book / "_static" / "katex" / "katex.min.css").is_file(), \
        "KaTeX's stylesheet was not vendored into the build (are Node.js and npm installed?)"


def test_no_built_page_references_another_host(built_book):
    """Static check: no script, image, frame or stylesheet/preload/icon link from another host."""
    loaded = re.compile(r'<(?:script|img|iframe)\b[^>]*\bsrc="([^"]+)"'
                        r'|<link\b(?=[^>]*\brel="(?:stylesheet|preload|icon|shortcut icon)")'
                        r'[^>]*\bhref="([^"]+)"')
    offenders = {}
    for page in built_pages(built_book):
        html = (built_book / page).read_text(errors="replace")
        urls = [a or b for a, b in loaded.findall(html)]
        external = [u for u in urls if u.startswith(("http:", "https:", "//"))]
        if external:
            offenders[page] = external
    assert not offenders, f"pages load assets from other hosts: {offenders}"


def check_page(browser, base_url: str, page_path: str) -> dict:
    """Load one page; return what went wrong on it."""
    context = browser.new_context()
    page = context.new_page()
    report = {"page": page_path, "console_errors": [], "failed": [], "blocked": [],
              "bad_status": [], "raw_tex": [], "broken_images": [], "math": 0}

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            r.continue_()
        else:
            report["blocked"].append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and report["console_errors"].append(m.text))
    page.on("pageerror", lambda e: report["console_errors"].append(str(e)))
    page.on("requestfailed", lambda r: report["failed"].append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and report["bad_status"].append(
        f"{r.status} {r.url}"))
    goto_settled(page, f"{base_url}/{page_path}")
    report["math"] = page.evaluate("() => document.querySelectorAll('.katex').length")
    report["broken_images"] = page.evaluate("""async () => {
        const imgs = [...document.images];
        imgs.forEach(i => { i.loading = 'eager'; });
        await Promise.all(imgs.map(i => i.complete ? null :
            new Promise(ok => { i.onload = ok; i.onerror = ok; })));
        return imgs.filter(i => !i.naturalWidth).map(i => i.currentSrc || i.src);
    }""")
    text = page.evaluate("() => (document.querySelector('main') || document.body).innerText")
    report["raw_tex"] = [t for t in RAW_TEX if t in text]
    context.close()
    return report


def test_book_figures_are_palette_pngs(built_book):
    """In the book's build attnbook.plots writes figures as 256-colour palette
    PNGs (ATTNBOOK_STATIC), about a third of the bytes of full-colour ones."""
    from PIL import Image
    names = {m for page in (built_book / "chapters").glob("*.html")
             for m in re.findall(r'src="\.\./_images/([^"]+\.png)"', page.read_text("utf-8"))}
    images = sorted(built_book / "_images" / n for n in names)
    assert len(images) >= 40, f"only {len(images)} figures on the chapter pages"
    full = [p.name for p in images if Image.open(p).mode != "P"]
    assert not full, f"{len(full)} of {len(images)} figures are not palette PNGs: {full[:5]}"


def test_every_page_loads_offline_with_no_errors_and_rendered_math(built_book, book_server,
                                                                    browser):
    reports = [check_page(browser, book_server, p) for p in built_pages(built_book)]
    (ROOT / "_build" / "browser-report.json").write_text(json.dumps(reports, indent=1))
    problems = {r["page"]: {k: v for k, v in r.items() if isinstance(v, list) and v}
                for r in reports}
    problems = {k: v for k, v in problems.items() if v}
    blocked = sum(len(r["blocked"]) for r in reports)
    errors = sum(len(r["console_errors"]) for r in reports)
    print(f"\n[browser] {len(reports)} pages, {blocked} requests outside 127.0.0.1, "
          f"{errors} console errors, {sum(r['math'] for r in reports)} formulas rendered")
    assert not problems, json.dumps(problems, indent=1)
    intro = next(r for r in reports if r["page"] == "intro.html")
    assert intro["math"] > 0, "the introduction's equation was not typeset by KaTeX"


def test_page_checker_catches_raw_tex_broken_images_and_other_hosts(tmp_path, browser):
    """The checker above must be able to fail: feed it a page with each fault."""
    (tmp_path / "bad.html").write_text(
        "<html><body><main><p>Unrendered \\(x^2\\) here.</p>"
        "<img src='missing.png'>"
        "<script src='http://example.invalid/x.js'></script>"
        "<script>console.error('boom')</script></main></body></html>")
    with serve(tmp_path) as (url, _):
        report = check_page(browser, url, "bad.html")
    assert report["raw_tex"], report
    assert report["broken_images"], report
    assert report["blocked"] == ["http://example.invalid/x.js"], report
    assert any("boom" in e for e in report["console_errors"]), report


def test_static_explorer_sliders_respond_to_the_keyboard(built_book, book_server, browser):
    """Every explorer in the book: focus its slider, press an arrow key, and
    check that the visible frame, the value label and the frame's alt text
    (which names the value) change."""
    pages = [p for p in built_pages(built_book)
             if 'class="attn-explorer"' in (built_book / p).read_text(errors="replace")]
    assert pages, "no page of the book contains an explorer"
    moved = 0
    for page_path in pages:
        page = browser.new_page()
        page.goto(f"{book_server}/{page_path}")
        sliders = page.locator(".attn-explorer input[type=range]")
        for k in range(sliders.count()):
            slider = sliders.nth(k)
            box = slider.locator("xpath=ancestor::div[contains(@class,'attn-explorer')]")
            image, label = box.locator("img"), box.locator("output")
            before = (image.get_attribute("src"), label.inner_text())
            alt_before = image.get_attribute("alt")
            at_max = slider.get_attribute("value") == slider.get_attribute("max")
            slider.focus()
            page.keyboard.press("ArrowLeft" if at_max else "ArrowRight")
            after = (image.get_attribute("src"), label.inner_text())
            assert after[0] != before[0], f"{page_path}: explorer {k}: the frame did not change"
            assert after[1] != before[1], f"{page_path}: explorer {k}: the label did not change"
            alt = image.get_attribute("alt")
            assert alt != alt_before and after[1].split(" = ")[-1] in alt, \
                f"{page_path}: explorer {k}: the alt text {alt!r} does not follow {after[1]!r}"
            assert image.evaluate("i => i.complete && i.naturalWidth > 0")
            moved += 1
        page.close()
    print(f"\n[browser] moved {moved} explorer sliders with the keyboard on {len(pages)} pages")


def test_static_explorer_works_over_file_urls(built_book, browser):
    """Opened straight from disk (file://), the frames still switch."""
    page_path = next(p for p in built_pages(built_book)
                     if 'class="attn-explorer"' in (built_book / p).read_text(errors="replace"))
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((built_book / page_path).as_uri())
    slider = page.locator(".attn-explorer input[type=range]").first
    box = slider.locator("xpath=ancestor::div[contains(@class,'attn-explorer')]")
    slider.focus()
    page.keyboard.press("Home")
    first = (box.locator("img").get_attribute("src"), box.locator("output").inner_text())
    page.keyboard.press("ArrowRight")
    second = (box.locator("img").get_attribute("src"), box.locator("output").inner_text())
    assert slider.evaluate("r => r.value") == "1"
    assert first[0] != second[0] and first[1] != second[1], (first[1], second[1])
    assert not errors, errors
    page.close()


# --- the two editions (issue 18) --------------------------------------------

SWITCH = re.compile(r'<a class="btn btn-sm book-language-switch" href="([^"]+)"')


def test_every_page_links_the_same_page_in_the_other_edition(built_book):
    """Both ways: English page -> zh/ page of the same name -> back."""
    english, chinese = (pages for _, pages in editions(built_book))
    assert english and sorted(english) == sorted(chinese), \
        f"the editions differ: {sorted(set(english) ^ set(chinese))}"
    for home, pages in editions(built_book):
        for page in pages:
            html = (home / page).read_text(encoding="utf-8")
            if 'http-equiv="Refresh"' in html or "http-equiv=\"refresh\"" in html:
                continue                         # index.html only redirects
            m = SWITCH.search(html)
            assert m, f"{home.name}/{page}: no language switch"
            target = ((home / page).parent / m.group(1)).resolve()
            other = built_book / "zh" if home == built_book else built_book
            assert target == (other / page).resolve(), f"{page}: switch leads to {target}"


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_language_switch_works_both_ways_in_the_browser(built_book, book_server, browser,
                                                         scheme):
    page_path = "chapters/02_soft_lookup.html"
    url = ((built_book / page_path).as_uri() if scheme == "file"
           else f"{book_server}/{page_path}")
    page = browser.new_page()
    page.goto(url)
    for width in (1280, 390):                  # wholly inside the page, laptop and phone
        page.set_viewport_size({"width": width, "height": 800})
        box = page.locator("a.book-language-switch").first.bounding_box()
        assert box and box["y"] >= 0 and box["x"] + box["width"] <= width, (width, box)
    page.locator("a.book-language-switch").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/zh/" + page_path), page.url
    assert page.evaluate("document.documentElement.lang").startswith("zh"), page.url
    page.locator("a.book-language-switch").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith("/" + page_path) and "/zh/" not in page.url, page.url
    assert page.evaluate("document.documentElement.lang") == "en"
    page.close()


def search_results(browser, base_url: str, query: str) -> list[str]:
    """The pages Sphinx's search page lists for `query` (their paths)."""
    from urllib.parse import quote
    page = browser.new_page()
    page.goto(f"{base_url}/search.html?q={quote(query)}")
    # Sphinx lists the results one at a time (5 ms apart) and writes the summary
    # ("Search finished, found N page(s)...") only after the last one
    page.wait_for_function("() => document.querySelector('#search-results p.search-summary')"
                           "?.innerText.trim()", timeout=30000)
    hrefs = page.eval_on_selector_all("#search-results ul.search li a",
                                      "els => els.map(a => a.getAttribute('href'))")
    page.close()
    return sorted({h.split("#")[0].split("?")[0].removesuffix(".html") for h in hrefs})


@pytest.mark.parametrize("query", ["注意力", "键值对"])
def test_chinese_search_finds_the_right_chapters(built_book, book_server, browser, query):
    """Search the Chinese edition: the pages whose title holds the query and
    the chapter that introduces the glossary term of that Chinese name are
    found (needs jieba and the glossary's user dictionary, tools/sphinx/i18n.py)."""
    from tools.glossary.terms import glossary_entries
    zh = built_book / "zh"
    expected = {p.removesuffix(".html") for p in built_pages(zh)
                if query in (re.search(r"<title>(.*?)</title>",
                                       (zh / p).read_text(encoding="utf-8"), re.S)
                             or [""])[0] and p != "search.html"}
    expected |= {e.chapter for e in glossary_entries()
                 if query in [c for c, _, _ in e.chinese] and e.chapter}
    assert expected, f"no page is about {query}: is the Chinese edition translated?"
    found = search_results(browser, f"{book_server}/zh", query)
    assert expected <= set(found), f"search for {query} lists {found}, not {sorted(expected)}"


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


def test_math_reads_with_javascript_off_in_both_editions(built_book, book_server, browser):
    """Formulas are typeset when the book is built: with JavaScript off,
    every formula of every page of both editions is laid out by KaTeX's
    HTML in KaTeX's fonts (served by the book), no TeX source shows, and no
    page loads a maths script."""
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    pages, formulas, fonts, problems = 0, 0, set(), {}
    for folder, names in editions(built_book):
        prefix = "" if folder == built_book else "zh/"
        for name in names:
            if name.rsplit("/", 1)[-1] == "index.html":
                continue                    # a redirect to intro.html, checked there
            page.goto(f"{book_server}/{prefix}{name}", wait_until="load")
            r = page.evaluate(MATH_WITHOUT_SCRIPTS)
            raw = [t for t in RAW_TEX if t in r["text"]]
            if r["unset"] or r["errors"] or r["scripts"] or raw:
                problems[prefix + name] = {"unset": r["unset"], "errors": r["errors"],
                                           "scripts": r["scripts"], "raw_tex": raw}
            if r["formulas"] and not r["fonts"]:
                problems[prefix + name] = "formulas but no KaTeX font loaded"
            pages, formulas = pages + 1, formulas + r["formulas"]
            fonts.update(r["fonts"])
    context.close()
    print(f"\n[no-js] {pages} pages, {formulas} formulas typeset without JavaScript, "
          f"KaTeX fonts used: {len(fonts)}")
    assert not problems, json.dumps(problems, indent=1, ensure_ascii=False)
    assert formulas > 500, f"only {formulas} formulas found: is the maths still typeset?"
