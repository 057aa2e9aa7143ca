"""attnbook.figure_text: figure text as messages, and figures drawn in Chinese.

The translation is checked on real figures: every kind of text a chapter
draws (title, axis label, legend, annotation, string tick labels, a
colour bar's label, mathematics) comes out translated while the block runs
and exactly as before afterwards, and the drawing uses the translation's
font (no missing-glyph warning).
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from matplotlib.text import Text
from PIL import Image

from attnbook import figure_text, plots
from attnbook.figure_text import template, translate

MESSAGES = {
    "weights": "权重",
    "query {}": "查询 {}",
    "d_k = {}: score std {} unscaled": "d_k = {}：未缩放时分数标准差 {}",
    "unscaled": "未缩放",
    "scaled": "缩放后",
    "entropy of $\\alpha$ at {} keys": "{} 个键时 $\\alpha$ 的熵",
    "legend": "图例",
    "note": "注",
}


@pytest.mark.parametrize("text, message, numbers", [
    ("d_k = 64: entropy 2.71", "d_k = {}: entropy {}", ["64", "2.71"]),
    ("layer 2, head −1", "layer {}, head {}", ["2", "−1"]),
    ("word2vec and x1", "word2vec and x1", []),           # digits inside a word stay
    ("1,024 keys, lr 1e-3", "{} keys, lr {}", ["1,024", "1e-3"]),
    ("$10^{-3}$ at 5", "$10^{-3}$ at {}", ["5"]),         # mathematics is kept whole
])
def test_template_takes_out_numbers_outside_maths(text, message, numbers):
    assert template(text) == (message, numbers)


def test_translate_puts_the_numbers_back_in_order():
    assert translate("d_k = 64: score std 8.02 unscaled", MESSAGES) == \
        "d_k = 64：未缩放时分数标准差 8.02"
    assert translate("0.25", MESSAGES) == "0.25"            # no words: nothing to translate
    assert translate("$\\alpha$", MESSAGES) == "$\\alpha$"
    assert translate("keys", MESSAGES) is None              # missing from the catalogue


def test_translate_refuses_a_translation_that_loses_a_number():
    with pytest.raises(ValueError, match=r"'query \{\}'.*1 \{\}.*'查询'"):
        translate("query 3", {"query {}": "查询"})


def _figure():
    fig, axes = plots.new_figure(6, 3, ncols=2)
    ax, ax2 = axes
    ax.bar(["unscaled", "scaled"], [1.0, 2.0], label="weights")   # category tick labels
    ax.set_title("d_k = 64: score std 8.02 unscaled")
    ax.set_ylabel("entropy of $\\alpha$ at 16 keys")
    ax.legend(title="legend")
    ax.annotate("note", (0, 1))
    image = ax2.imshow(np.eye(3))
    ax2.set_xticks(range(3), [f"query {i}" for i in range(3)])       # fixed tick labels
    fig.colorbar(image, ax=ax2, label="weights")
    return fig


def _tick_labels(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]


def _shown(fig) -> set[str]:
    plots.palette_png(fig, 72)
    return {t.get_text() for t in fig.findobj(Text)} | set(_tick_labels(fig))


def test_every_kind_of_text_is_translated_and_put_back(families):
    fig = _figure()
    plots.palette_png(fig, 72)                   # the first drawing settles the layout
    before = plots.palette_png(fig, 72)
    english = _shown(fig)
    assert set(figure_text.texts(fig)) == {
        "unscaled", "scaled", "weights", "d_k = {}: score std {} unscaled",
        "entropy of $\\alpha$ at {} keys", "legend", "note", "query {}"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # a missing glyph warns: fail on it
        with figure_text.translated(fig, MESSAGES, families) as missing:
            chinese = _shown(fig)
            png = plots.palette_png(fig, 72)
    assert not missing
    assert {"未缩放", "缩放后", "权重", "d_k = 64：未缩放时分数标准差 8.02",
            "16 个键时 $\\alpha$ 的熵", "图例", "注", "查询 0", "查询 2"} <= chinese
    assert not {"unscaled", "weights", "legend", "note", "query 0"} & chinese
    assert english & {"unscaled", "weights", "legend", "note", "query 0"}
    # constrained layout lays out from the previous drawing's tick labels,
    # so it takes one drawing to settle, as after the figure was made
    plots.palette_png(fig, 72)
    assert plots.palette_png(fig, 72) == before, "the figure must be as it was after the block"
    assert Image.open(io.BytesIO(png)).size[0] > 0


def _varied_figure():
    """`_figure` plus rotated, multi-line, wrapped and repeated texts, in a
    constrained layout, as the book's heatmap grids are."""
    fig = _figure()
    fig.set_layout_engine("constrained")
    ax = fig.axes[0]
    ax.tick_params(axis="x", labelrotation=45)
    ax.text(0.5, 0.5, "two\nlines", rotation=30, ha="right", va="baseline",
            multialignment="center", transform=ax.transAxes)
    ax.text(0.1, 0.9, "a caption that wraps " * 3, wrap=True, transform=ax.transAxes,
            in_layout=False)
    for i in range(3):
        for j in range(3):
            fig.axes[1].text(j, i, "0.33", ha="center", va="center")   # one layout, nine places
    # the same words laid out otherwise: each is drawn elsewhere if it is
    # given the centred 0.33's layout
    ax.text(0.2, 0.3, "0.33", rotation=90, ha="center", va="center", transform=ax.transAxes)
    ax.text(0.2, 0.3, "0.33", ha="center", va="top", transform=ax.transAxes)
    ax.text(0.2, 0.3, "0.33", fontsize=14, ha="center", va="center", transform=ax.transAxes)
    return fig


def test_a_saved_figure_is_the_same_with_each_text_laid_out_once(families, monkeypatch):
    """plots.palette_png lays each distinct text out once per save
    (attnbook._layout_cache); matplotlib laying every text out each time
    writes the same bytes, in English and in Chinese, on the first drawing
    (which settles the constrained layout) and on the next."""
    import contextlib

    from attnbook import _layout_cache

    def drawings(cached: bool) -> list[bytes]:
        if not cached:
            monkeypatch.setattr(_layout_cache, "text_layouts_cached", contextlib.nullcontext)
        try:
            fig = _varied_figure()
            pngs = [plots.palette_png(fig, 72, bbox_inches="tight") for _ in range(2)]
            with figure_text.translated(fig, MESSAGES, families):
                pngs += [plots.palette_png(fig, 72, bbox_inches="tight") for _ in range(2)]
            return pngs
        finally:
            monkeypatch.undo()

    assert drawings(cached=True) == drawings(cached=False)
    assert Text._get_layout.__module__ == "matplotlib.text", "matplotlib's own method again"


def test_missing_messages_are_reported_and_left_in_english():
    fig = _figure()
    with figure_text.translated(fig, {"weights": "权重"}) as missing:
        plots.palette_png(fig, 72)
    assert "scaled" in missing and "query {}" in missing and "weights" not in missing


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    """A font with the test's Chinese characters, cut from the book's Noto
    Sans SC as the build cuts it (tools/build/figures.py)."""
    from matplotlib import font_manager

    from tools.build import figures
    from tools.sphinx.a11y import font_sources
    if not font_sources():
        pytest.skip("Noto Sans SC (npm ci) is not installed")
    figures.OUT, saved = tmp_path_factory.mktemp("fonts"), figures.OUT
    try:
        chars = {c for t in MESSAGES.values() for c in t if c.isprintable()}
        fonts = figures._fonts(chars - figures._dejavu_sans())
    finally:
        figures.OUT = saved
    for font in fonts:
        font_manager.fontManager.addfont(str(font))
    return [font_manager.FontProperties(fname=str(f)).get_name() for f in fonts]


SHOWN_IN_A_BUILD_KERNEL = r"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import attnbook.plots as plots
from attnbook.figure_text import TRANSLATED_PNG
drawn = []
real = plots.palette_png
plots.palette_png = lambda *a, **k: drawn.append(1) or real(*a, **k)
fig, ax = plots.new_figure(3, 2)
ax.set_title("weights")
data, _ = shell.display_formatter.format(fig)
print(json.dumps({"drawn": len(drawn), "types": sorted(data)}))
"""


def test_a_figure_shown_in_the_build_is_drawn_once_per_edition(tmp_path):
    """In the build's kernels (ATTNBOOK_STATIC, a figure catalogue) a figure a
    cell shows is drawn twice, English and Chinese, and no third time: an
    image/png formatter registered beside the bundle made IPython draw it again."""
    import json
    import os
    import subprocess
    import sys
    catalogue = tmp_path / "catalogue.json"
    catalogue.write_text(json.dumps({"messages": {"weights": "权重"}, "fonts": []}))
    env = {**os.environ, plots.STATIC_ENV: "1",
           figure_text.CATALOGUE_ENV: str(catalogue)}
    run = subprocess.run([sys.executable, "-c", SHOWN_IN_A_BUILD_KERNEL], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    assert found == {"drawn": 2, "types": sorted(["image/png", figure_text.TRANSLATED_PNG,
                                                    "text/plain"])}
