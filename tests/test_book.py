"""The strict book build, and every built page in headless Chromium.

Each page is loaded from a local server on 127.0.0.1 while every request to
any other host is blocked and counted (tests/survey.py visits each page once
for all the browser checks). A page fails on a console error, a failed,
blocked or 4xx/5xx request, TeX left unrendered, or a broken image.
"""
from __future__ import annotations

import json
import re

import pytest
from survey import BY_EDITION, built_pages, check_page, failures

from tools.project import ROOT, serve, toc_files

pytestmark = [pytest.mark.slow]


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


def test_glued_negative_numbers_have_a_minus_sign_in_both_editions(built_book):
    """tools/sphinx/glued.py: a glued number that is negative reads "−0.70"
    (U+2212), as the prose's own numbers do, never "-0.70"; an exponent such
    as 4.54e-05 keeps its hyphen."""
    pasted = re.compile(r'<span class="pasted-text">([^<]*)</span>')
    hyphen = re.compile(r"(?:^|[\s(\[{])-[\d.]")
    minus, slips = 0, []
    for page in built_pages(built_book):
        for text in pasted.findall((built_book / page).read_text("utf-8")):
            minus += text.count("\u2212")
            if hyphen.search(text):
                slips.append((page, text))
    assert not slips, f"glued numbers written with a hyphen-minus: {slips[:5]}"
    assert minus >= 20, f"only {minus} glued minus signs: are the negative numbers glued?"


@pytest.mark.parametrize("edition", BY_EDITION)
def test_each_source_links_back_once_to_each_place_that_cites_it(built_book, edition):
    """The reference list: a source cited on the page links back to each
    citation once (the Chinese edition's parsed every translated citation
    more than once, and showed "(1, 2, 3)": three links to one spot)."""
    page = built_book / ("zh/" if edition == "zh" else "") / "references.html"
    entries = re.split(r'<div class="citation"', page.read_text(encoding="utf-8"))[1:]
    links = [re.findall(r'role="doc-backlink" href="([^"]+)"', e.split("</div>")[0])
             for e in entries]
    assert len(entries) >= 5 and sum(map(bool, links)) >= 5, (len(entries), links)
    repeated = [ls for ls in links if len(ls) != len(set(ls))]
    assert not repeated, repeated


@pytest.mark.parametrize("edition", BY_EDITION)
def test_every_page_loads_offline_with_no_errors_and_rendered_math(surveyed, edition):
    """Every page, loaded from 127.0.0.1 with every other host blocked, and
    while the other browser checks work on it: no console error, no failed,
    blocked or 4xx/5xx request, no TeX left unrendered, no broken image."""
    result = surveyed(edition)
    problems = {}
    for page, r in result["pages"].items():
        found = {k: r[k] for k in ("console_errors", "failed", "blocked", "bad_status") if r[k]}
        if "load" in r["errors"]:
            found["load"] = r["errors"]["load"]
        else:
            found.update({k: v for k, v in r["load"].items() if isinstance(v, list) and v})
        if found:
            problems[page] = found
    (ROOT / "_build" / f"browser-report-{edition}.json").write_text(
        json.dumps(result["pages"], indent=1, ensure_ascii=False))
    reports = result["pages"].values()
    print(f"\n[browser] {edition}: {len(reports)} pages, "
          f"{sum(len(r['blocked']) for r in reports)} requests outside 127.0.0.1, "
          f"{sum(len(r['console_errors']) for r in reports)} console errors, "
          f"{sum(r.get('load', {}).get('math', 0) for r in reports)} formulas rendered")
    assert not problems, json.dumps(problems, indent=1)
    intro = result["pages"][("zh/" if edition == "zh" else "") + "intro.html"]
    assert intro["load"]["math"] > 0, "the introduction's equation was not typeset by KaTeX"


@pytest.mark.parametrize("edition", BY_EDITION)
def test_every_katex_font_a_page_loads_was_preloaded(surveyed, edition):
    """A page preloads the KaTeX fonts its formulas use (tools/sphinx/math.py),
    so formulas show at first paint: every KaTeX font the page fetched is
    among its preloads."""
    result = surveyed(edition)
    bad = failures(result, "load", lambda r, _: sorted(
        set(r["katex_fonts"]["fetched"]) - set(r["katex_fonts"]["preloaded"])))
    assert not bad, json.dumps(bad, indent=1)
    fetched = {f for r in result["pages"].values() for f in r["load"]["katex_fonts"]["fetched"]}
    assert fetched, "no page fetched a KaTeX font: are the formulas still typeset?"


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


@pytest.mark.parametrize("edition", BY_EDITION)
def test_static_explorer_sliders_respond_to_the_keyboard(built_book, surveyed, edition):
    """Every explorer in the book: focus its slider, press an arrow key, and
    check that the visible frame, the value label and the frame's alt text
    (which names the value) change."""
    result = surveyed(edition)
    expected = {p: (built_book / p).read_text(errors="replace").count('class="attn-explorer"')
                for p in result["pages"]}
    assert sum(expected.values()), "no page of the book contains an explorer"
    bad = failures(result, "keyboard", lambda k, r: k["slider_problems"]
                   or (k["sliders"] != expected[r["page"]]
                       and f"{k['sliders']} sliders, {expected[r['page']]} explorers"))
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)
    print(f"\n[browser] {edition}: moved {sum(expected.values())} explorer sliders with the "
          f"keyboard on {sum(map(bool, expected.values()))} pages")


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


SECTION_ID = re.compile(r'<section id="([^"]+)">\s*<h[2-6]')


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_language_switch_works_both_ways_in_the_browser(built_book, book_server, browser,
                                                         scheme):
    """Both ways, from a section the address names: the other edition opens
    at that section (the editions share section ids)."""
    page_path = "chapters/02_soft_lookup.html"
    sections = SECTION_ID.findall((built_book / page_path).read_text(encoding="utf-8"))
    section = sections[len(sections) // 2]
    url = ((built_book / page_path).as_uri() if scheme == "file"
           else f"{book_server}/{page_path}") + f"#{section}"
    page = browser.new_page()
    page.goto(url)
    for width in (390, 1280):                  # wholly inside the page, phone and laptop
        page.set_viewport_size({"width": width, "height": 800})
        box = page.locator("a.book-language-switch").first.bounding_box()
        assert box and box["y"] >= 0 and box["x"] + box["width"] <= width, (width, box)
    page.goto(url)                              # at the section again, on the laptop
    at_section = f"""() => {{ const box = document.getElementById({section!r})
        .getBoundingClientRect(); return box.top >= 0 && box.top < innerHeight / 2; }}"""
    for lang in ("zh", "en"):
        page.wait_for_function(at_section, timeout=5000)    # the section is on screen
        page.locator("a.book-language-switch").first.click()
        page.wait_for_load_state("load")
        ending = ("/zh/" if lang == "zh" else "/") + f"{page_path}#{section}"
        assert page.url.endswith(ending) and (lang == "zh") == ("/zh/" in page.url), page.url
        assert page.evaluate("document.documentElement.lang").startswith(lang), page.url
    page.wait_for_function(at_section, timeout=5000)
    page.close()


@pytest.mark.parametrize("edition", BY_EDITION)
def test_language_switch_keeps_the_readers_place_on_every_page(built_book, surveyed,
                                                                edition):
    """On every page, the switch leads to the same page of the other edition:
    at its top from the top, at the section the address names, and at the
    section being read when none is named (_templates/language-switch.html);
    the other edition has each of those sections."""
    result = surveyed(edition)

    def problems(found, report):
        page = report["page"].removeprefix("zh/")
        if page == "index.html":
            return None                     # a redirect: the survey read intro.html
        if found is None:
            return "no language switch"
        other = built_book if edition == "zh" else built_book / "zh"
        ids = set(re.findall(r'\bid="([^"]+)"', (other / page).read_text(encoding="utf-8")))
        name = page.rsplit("/", 1)[-1]
        wrong = [] if found["top"].rsplit("/", 1)[-1] == name else [f"top: {found['top']}"]
        for case in ("named", "read"):
            if case in found and (found[case]["href"].rsplit("/", 1)[-1]
                                  != f"{name}#{found[case]['id']}"
                                  or found[case]["id"] not in ids):
                wrong.append(f"{case}: {found[case]}")
        return wrong
    bad = failures(result, "switch", problems)
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)
    checked = [r["switch"] for r in result["pages"].values() if r.get("switch")]
    assert sum("named" in s for s in checked) >= len(checked) // 2, checked
    assert sum("read" in s for s in checked) >= 5, "too few long sections to scroll to"
    print(f"\n[switch] {edition}: {len(checked)} pages, "
          f"{sum('read' in s for s in checked)} read by scrolling")


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


def page_title(page: str) -> str:
    """A page's own title: its <title> without the book's (which holds 注意力)."""
    import html
    found = re.search(r"<title>(.*?)</title>", page, re.S)
    return html.unescape(found.group(1)).split(" — ")[0] if found else ""


@pytest.mark.parametrize("query", ["注意力", "键值对"])
def test_chinese_search_finds_the_right_chapters(built_book, book_server, browser, query):
    """Search the Chinese edition: the pages whose title holds the query and
    the chapter that introduces the glossary term of that Chinese name are
    found (needs jieba and the glossary's user dictionary, tools/sphinx/i18n.py)."""
    from tools.glossary.terms import glossary_entries
    zh = built_book / "zh"
    expected = {p.removesuffix(".html") for p in built_pages(zh)
                if query in page_title((zh / p).read_text(encoding="utf-8"))
                and p != "search.html"}
    expected |= {e.chapter for e in glossary_entries()
                 if query in [c for c, _, _ in e.chinese] and e.chapter}
    assert expected, f"no page is about {query}: is the Chinese edition translated?"
    found = search_results(browser, f"{book_server}/zh", query)
    assert expected <= set(found), f"search for {query} lists {found}, not {sorted(expected)}"


def article_texts(html_dir) -> dict[str, str]:
    """{docname: the text of its article} for every page of an edition."""
    from bs4 import BeautifulSoup
    texts = {}
    for page in built_pages(html_dir):
        article = BeautifulSoup((html_dir / page).read_text(encoding="utf-8"),
                                "html.parser").select_one("article.bd-article")
        if article is not None and page not in ("search.html", "genindex.html"):
            texts[page.removesuffix(".html")] = article.get_text()
    return texts


def test_chinese_search_segments_a_query_of_several_words(built_book, surveyed):
    """A query of several words finds every page whose text holds it
    (tests/survey.py's SEARCH_QUERIES): Sphinx alone took a query such as
    梯度消失 for one word and found nothing; tools/sphinx/i18n_ui.py's splitter segments it
    against the index's terms."""
    from survey import SEARCH_QUERIES
    result = surveyed("zh")
    found = result["pages"]["zh/search.html"]
    assert "search" not in found["errors"], found["errors"]["search"]
    texts = article_texts(built_book / "zh")
    for query in SEARCH_QUERIES["zh"]:
        holding = {page for page, text in texts.items() if query in text}
        got = found["search"][query]
        print(f"\n[search] {query}: split into {got['terms']}, {len(got['pages'])} pages found, "
              f"{len(holding)} hold it")
        assert holding, f"no page holds {query}: change the query"
        assert len(got["terms"]) > 1 or query in got["terms"], got
        assert holding <= set(got["pages"]), \
            f"{query}: split into {got['terms']}, misses {sorted(holding - set(got['pages']))}"


@pytest.mark.parametrize("edition", BY_EDITION)
def test_math_reads_with_javascript_off(surveyed, edition):
    """Formulas are typeset when the book is built: with JavaScript off,
    every formula of every page is laid out by KaTeX's HTML in KaTeX's fonts
    (served by the book), no TeX source shows, and no page loads a maths
    script. (index.html only redirects to intro.html, which is read.)"""
    result = surveyed(edition)
    bad = failures(result, "plain", lambda r, _: {
        k: r[k] for k in ("unset", "errors", "scripts", "raw_tex") if r[k]}
        or (r["formulas"] and not r["fonts"] and "formulas but no KaTeX font loaded"))
    read = [r["plain"] for r in result["pages"].values() if "plain" in r]
    formulas = sum(r["formulas"] for r in read)
    print(f"\n[no-js] {edition}: {len(read)} pages, {formulas} formulas typeset without "
          f"JavaScript, KaTeX fonts used: {len({f for r in read for f in r['fonts']})}")
    assert not bad, json.dumps(bad, indent=1, ensure_ascii=False)
    assert len(read) >= len(result["pages"]) - 1, "pages were not read with JavaScript off"
    assert formulas > 250, f"only {formulas} formulas found: is the maths still typeset?"
