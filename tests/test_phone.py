"""Readable on a phone (issue 39): at 390 CSS px, every figure's and
explorer's text is at least 9 px tall, or one tap opens the figure at full
size with pinch zoom and Back returns the reader to where they were; table
cells wrap between words, never inside one, in both editions.

A figure's smallest text is recorded in its PNG by attnbook/_png.py (font
size x dpi / 72, in the PNG's own pixels); the browser gives the width the
page shows it at. The links are tools/sphinx/zoom.py's.
"""
from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from survey import edition_pages

from attnbook import _png
from tools.sphinx.zoom import with_zoom_links

PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 3,
         "is_mobile": True, "has_touch": True}
#: the smallest text a reader should meet on a phone, in CSS px
MIN_TEXT_PX = 9

#: every figure and explorer image of the article: where it is, the width it
#: is shown at, its file, and the link around it
IMAGES = """() => [...document.querySelectorAll('article img')]
  .filter(i => /_images\\/[^/]+\\.png$/.test(i.getAttribute('src') || ''))
  .map(i => { const a = i.closest('a');
    return {src: i.src, shown: i.getBoundingClientRect().width,
            link: a ? a.href : null, zoom: !!(a && a.classList.contains('attn-zoom'))}; })"""


def _recorded_text_px(path: Path) -> float | None:
    from PIL import Image
    text = Image.open(io.BytesIO(path.read_bytes())).text.get(_png.SMALLEST_TEXT_KEY)
    return float(text) if text else None


def test_a_palette_png_records_its_smallest_text():
    from attnbook import plots
    fig, ax = plots.new_figure()
    ax.plot([0, 1])
    ax.set_title("t", fontsize=7)
    from PIL import Image
    png = Image.open(io.BytesIO(plots.palette_png(fig, 110)))
    assert float(png.text[_png.SMALLEST_TEXT_KEY]) == pytest.approx(7 * 110 / 72, abs=0.01)
    ax.set_axis_off()
    ax.title.set_visible(False)
    assert _png.SMALLEST_TEXT_KEY not in Image.open(io.BytesIO(plots.palette_png(fig, 72))).text


def test_zoom_links_wrap_each_build_image_once(tmp_path):
    from attnbook import plots
    fig, _ = plots.new_figure(2, 1)
    (tmp_path / "f.png").write_bytes(plots.palette_png(fig, 100))
    body = ('<img alt="a" src="../_images/f.png" />'
            '<a class="reference internal image-reference" href="x"><img src="../_images/g.png"></a>'
            '<img id="e" src="_images/h.png" width="3" height="4" alt="e">'
            '<img src="https://example.org/x.png" alt="x">')
    out = with_zoom_links(body, {"f.png": tmp_path / "f.png"})
    assert '<a class="attn-zoom" href="../_images/f.png"><img width="200" height="100" ' in out
    assert '<a class="attn-zoom" href="_images/h.png"><img id="e" ' in out
    assert out.count("attn-zoom") == 2, out        # not g.png (linked), not another host's


def _phone_page(browser, url):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(url, wait_until="load")
    return context, page


def _file_of(url: str, built_book: Path) -> Path:
    return built_book / unquote(urlparse(url).path).lstrip("/")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("edition", ["en", "zh"])
def test_every_figure_is_readable_or_a_tap_away_at_390_px(built_book, book_server, browser,
                                                        edition):
    shown, small, unlinked, unrecorded = 0, [], [], []
    for name in edition_pages(built_book, edition):
        if "_images/" not in (built_book / name).read_text(encoding="utf-8"):
            continue
        context, page = _phone_page(browser, f"{book_server}/{name}")
        for image in page.evaluate(IMAGES):
            path = _file_of(image["src"], built_book)
            from PIL import Image
            width = Image.open(path).size[0]
            text_px = _recorded_text_px(path)
            if text_px is None:
                unrecorded.append(f"{name}: {path.name}")
                continue
            shown += 1
            px = text_px * image["shown"] / width
            if px < MIN_TEXT_PX:
                small.append(px)
                if not (image["zoom"] and image["link"] == image["src"]):
                    unlinked.append(f"{name}: {path.name} text {px:.1f} px, link {image['link']}")
        context.close()
    assert shown >= 50, f"only {shown} figures measured in the {edition} edition"
    assert not unrecorded, f"figures that do not record their text size: {unrecorded[:5]}"
    assert not unlinked, f"{len(unlinked)} figures too small to read and not a tap away: " \
                         f"{unlinked[:5]}"
    # the measure is real: on a phone most figures do need the tap
    assert len(small) > shown / 2, (len(small), shown)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["http", "file"])
def test_tapping_an_explorer_opens_the_frame_shown_and_back_returns(built_book, book_server,
                                                                    browser, scheme):
    base = book_server if scheme == "http" else built_book.as_uri()
    context, page = _phone_page(browser, f"{base}/zh/chapters/11_positions.html")
    explorer = page.locator(".attn-explorer").first
    explorer.scroll_into_view_if_needed()
    slider = explorer.locator("input[type=range]")
    slider.focus()
    slider.press("ArrowRight")
    image = explorer.locator("img")
    src = image.evaluate("i => i.src")
    assert image.evaluate("i => i.closest('a').href") == src
    page.evaluate("() => window.scrollBy(0, 1)")        # a place of the reader's own
    place = page.evaluate("() => window.scrollY")
    with page.expect_navigation():
        image.tap()
    assert page.url == src
    assert page.evaluate("() => document.images[0].naturalWidth") > 0
    page.go_back(wait_until="load")
    page.wait_for_timeout(300)
    assert abs(page.evaluate("() => window.scrollY") - place) <= 2
    context.close()


#: the words of the article's table cells that the page breaks over two lines
SPLIT_WORDS = """() => {
  const split = [];
  for (const cell of document.querySelectorAll('article table :is(td, th)')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (const m of n.textContent.matchAll(/[\\p{L}\\p{N}_'’]+/gu)) {
        const r = document.createRange();
        r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(b => b.width > 0)
                             .map(b => Math.round(b.top)));
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  return split; }"""


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("edition", ["en", "zh"])
def test_table_cells_wrap_between_words_at_390_px(built_book, book_server, browser, edition):
    """A word (in Chinese, a run of characters between spaces or punctuation,
    which book.css keeps whole) is never broken over two lines of a cell."""
    tables, split = 0, {}
    for name in edition_pages(built_book, edition):
        if "<table" not in (built_book / name).read_text(encoding="utf-8"):
            continue
        context, page = _phone_page(browser, f"{book_server}/{name}")
        tables += 1
        if words := page.evaluate(SPLIT_WORDS):
            split[name] = words[:8]
        context.close()
    assert tables >= 5, f"only {tables} pages with tables"
    assert not split, split


@pytest.mark.browser
def test_the_word_check_sees_a_split_word(browser):
    """SPLIT_WORDS can fail: a cell 60 px wide that may break anywhere splits
    a long word, and one that wraps between words keeps it whole."""
    page = browser.new_page(viewport={"width": 390, "height": 400})
    cell = "<article><table><tr><td style='width:60px;max-width:60px;{}'>" \
           "a scaled_dot_product_attention call</td></tr></table></article>"
    page.set_content(cell.format("overflow-wrap:anywhere"))
    assert "scaled_dot_product_attention" in page.evaluate(SPLIT_WORDS)
    page.set_content(cell.format(""))
    assert page.evaluate(SPLIT_WORDS) == []
    page.close()
