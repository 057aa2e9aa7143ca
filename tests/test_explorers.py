"""Explorers: the live control really changes the plotted data; the static
form has one frame per value, no URL, and a live frame equals a full redraw;
a display renders only the form its front end shows."""
from __future__ import annotations

import base64
import io
import json
import re
import sys

import numpy as np
import pytest
from PIL import Image
from reference import loop_softmax

from attnbook import explorers as ex
from attnbook import plots
from attnbook.explorers import png
from tools.bench.explorer_cases import KINDS, make


def plotted_data(kind, e):
    """The data of the artists an explorer's slider should change."""
    axes = e.figure.axes
    if kind == "dk":
        steps = [p for p in axes[0].patches]
        return [np.asarray(axes[1].images[0].get_array()).copy(),
                np.asarray(axes[2].images[0].get_array()).copy(),
                *[s.get_data().values.copy() for s in steps]]
    if kind == "temperature":
        return [np.array([b.get_height() for b in axes[0].patches])]
    if kind == "attention":
        rect = [p for p in axes[0].patches][0]
        return [np.array([rect.get_y()]), np.array([b.get_width() for b in axes[1].patches])]
    if kind == "rope":
        return [np.asarray(axes[0].lines[0].get_xdata(), dtype=float).copy(),
                *[np.asarray(line.get_ydata()).copy() for line in axes[1].lines]]
    if kind == "heads":
        frames = [p for ax in axes for p in ax.patches]
        main = next(ax for ax in axes if ax.images and len(ax.get_xticks()))
        return [np.asarray(main.images[0].get_array()).copy(),
                np.array([f.get_visible() for f in frames])]
    if kind == "induction":
        return [np.asarray(axes[0].images[0].get_array()).copy(),
                *[np.asarray(line.get_xdata(), dtype=float).copy()
                  for ax in axes[1:] for line in ax.lines]]
    if kind == "training":
        return [np.asarray(axes[0].images[0].get_array()).copy(),
                *[np.asarray(line.get_xdata(), dtype=float).copy() for line in axes[1].lines]]
    return [np.asarray(axes[0].lines[-1].get_ydata()).copy(),
            np.asarray(axes[1].images[0].get_array()).copy()]




@pytest.mark.parametrize("kind", KINDS)
def test_moving_the_live_slider_changes_the_plotted_data(kind):
    e = make(kind)
    e.widget()
    before = plotted_data(kind, e)
    first_png = e._image.value
    e.slider.value = (e.index + 1) % len(e.values)
    after = plotted_data(kind, e)
    assert any(not np.array_equal(b, a) for b, a in zip(before, after, strict=True)), \
        f"{kind}: slider moved but no plotted data changed"
    assert e._image.value != first_png, f"{kind}: the image widget was not updated"


@pytest.mark.parametrize("kind", KINDS)
def test_the_figure_is_updated_in_place_not_replaced(kind):
    e = make(kind)
    e.widget()
    fig, n_axes = e.figure, len(e.figure.axes)
    for i in range(len(e.values)):
        e.slider.value = i
    assert e.figure is fig and len(fig.axes) == n_axes


@pytest.mark.parametrize("kind", KINDS)
def test_static_form_has_one_frame_per_value_and_no_url(kind):
    e = make(kind)
    page = e.to_html()
    frames = json.loads(re.search(r'id="attnx-[0-9a-f]+-f">(.*?)</script>', page).group(1))
    assert len(frames) == len(e.values)
    assert all(f.startswith("data:image/png;base64,") for f in frames)
    # base64 never contains ':', so any "://" would be a URL
    assert "://" not in page
    assert all(u.startswith("data:") for u in re.findall(r'(?:src|href)="([^"]*)"', page))
    assert 'type="range"' in page and "<output" in page
    assert e.to_html() == page, "static frames must be identical from run to run"


@pytest.mark.parametrize("kind", KINDS)
def test_a_blitted_live_frame_matches_a_full_redraw(kind):
    e = make(kind)
    e.widget()
    e.slider.value = (e.index + 2) % len(e.values)
    live = np.asarray(Image.open(io.BytesIO(e._image.value)).convert("RGB"), dtype=float)
    e._static_mode()
    full = np.asarray(Image.open(io.BytesIO(png.png_full_redraw(e.figure)))
                      .convert("RGB"), dtype=float)
    assert live.shape == full.shape
    assert np.abs(live - full).mean() < 1.0, "live frame differs from a full redraw"


def rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)


def test_the_book_build_gets_every_frame_and_no_widget(monkeypatch):
    monkeypatch.setenv(plots.STATIC_ENV, "1")
    e = make("temperature")
    bundle = e._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" not in bundle
    assert bundle["text/html"] == e.to_html()
    assert bundle["text/html"].count("data:image/png;base64,") == len(e.values) + 1  # + the <img>
    assert e.slider is None, "the book's build must not build the live widget"


@pytest.mark.parametrize("unset", ["delete", "0", ""])
def test_a_live_kernel_gets_the_widget_and_only_the_current_frame(monkeypatch, unset):
    if unset == "delete":
        monkeypatch.delenv(plots.STATIC_ENV, raising=False)
    else:
        monkeypatch.setenv(plots.STATIC_ENV, unset)
    e = make("dk")
    calls = []
    monkeypatch.setattr(png, "png_palette", lambda fig: calls.append(fig) or b"")
    bundle = e._repr_mimebundle_()
    assert not calls, "a live display must not render the book's palette frames"
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    uris = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(uris) == 1 and 'type="range"' not in page
    assert base64.b64decode(uris[0]) == e._image.value, "the fallback is the widget's frame"
    assert f"d_k = {e.labels[e.index]}" in page


def test_without_ipywidgets_a_live_kernel_still_shows_the_current_frame(monkeypatch):
    monkeypatch.delenv(plots.STATIC_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "ipywidgets", None)     # import ipywidgets fails
    e = make("temperature")
    bundle = e._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/html"].count("data:image/png;base64,") == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_revisited_value_shows_the_frame_a_first_visit_draws(kind):
    """Live frames are kept per value: sliding back returns what a fresh
    explorer draws for that value, and the figure's artists follow the slider."""
    e = make(kind)
    e.widget()
    i, j = (e.index + 1) % len(e.values), (e.index + 2) % len(e.values)
    e.slider.value = i
    at_i = plotted_data(kind, e)
    e.slider.value = j
    e.slider.value = i
    for a, b in zip(at_i, plotted_data(kind, e), strict=True):
        np.testing.assert_array_equal(a, b)
    fresh = make(kind)
    fresh.widget()
    fresh.slider.value = i
    assert e._image.value == fresh._image.value
    e._live_frames.clear()
    assert e.render_live() == fresh._image.value, "a cached frame differs from a redraw"


@pytest.mark.parametrize("kind", KINDS)
def test_each_book_frame_matches_the_live_frame_for_the_same_value(kind):
    e = make(kind)
    e.widget()
    frames = e.frames()
    for i in range(len(e.values)):
        e.slider.value = i
        live, static = rgb(e._image.value), rgb(frames[i])
        assert live.shape == static.shape
        assert np.abs(live - static).mean() < 1.0, f"{kind}: frame {i} differs from the live one"


def test_the_live_png_writer_stores_the_canvas_pixels_exactly():
    e = make("bandwidth")
    e.widget()
    canvas = e._canvas
    expected = np.asarray(canvas.buffer_rgba())[:, :, :3]
    decoded = Image.open(io.BytesIO(png.png_of_canvas(canvas)))
    assert decoded.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(decoded), expected)


def test_every_attribute_is_set_in_init():
    e = make("bandwidth")
    names = set(vars(e))
    e.widget()
    e.slider.value = 0
    e.to_html()
    e._repr_mimebundle_()
    assert set(vars(e)) == names, set(vars(e)) ^ names


def test_temperature_explorer_limits_are_the_dict_lookup_and_the_average():
    e = ex.explore_temperature([2.0, 1.5, -1.0], ["a", "b", "c"], values=[10.0, 5.0, 2.0],
                               temperatures=[0.01, 100.0])
    e.show(0)
    heights = [b.get_height() for b in e.figure.axes[0].patches]
    np.testing.assert_allclose(heights, [1, 0, 0], atol=1e-12)
    e.show(1)
    heights = [b.get_height() for b in e.figure.axes[0].patches]
    np.testing.assert_allclose(heights, [1 / 3] * 3, atol=0.02)


def test_explorer_inputs_are_checked():
    with pytest.raises(ValueError, match="labels"):
        ex.explore_temperature([1.0, 2.0], ["only one"])
    with pytest.raises(ValueError, match="index"):
        make("temperature").show(99)


@pytest.mark.parametrize("kind", KINDS)
def test_static_frames_are_palette_pngs_that_look_like_the_full_colour_figure(kind):
    e = make(kind)
    e._static_mode()
    full = np.asarray(Image.open(io.BytesIO(png.png_full_redraw(e.figure)))
                      .convert("RGB")).astype(int)
    frame = Image.open(io.BytesIO(png.png_palette(e.figure)))
    assert frame.mode == "P", frame.mode
    diff = np.abs(np.asarray(frame.convert("RGB")).astype(int) - full)
    assert diff.shape == full.shape
    assert diff.mean() < 0.5 and np.percentile(diff, 99.9) <= 32, (diff.mean(), diff.max())


def test_rope_offset_explorer_is_flat_for_rope_and_not_for_added_sinusoids():
    """At every offset the RoPE score is the same for all query positions, and
    it equals rotate(q, p) . rotate(k, p + offset) / sqrt(d) computed here."""
    from attnbook import rotate, sinusoidal_positions
    e = ex.explore_rope_offset(d=8, max_offset=4, n_positions=6, seed=3)
    q, k = np.random.default_rng(3).normal(size=(2, 8))
    pe = sinusoidal_positions(6 + 8, 8)
    for i, offset in enumerate(e.values):
        e.show(i)
        rope, added = (np.asarray(line.get_ydata()) for line in e.figure.axes[1].lines)
        assert np.ptp(rope) < 1e-12
        p = 4
        expected = rotate(q[None], [p]) @ rotate(k[None], [p + offset]).T / np.sqrt(8)
        assert rope[0] == pytest.approx(expected.item(), abs=1e-12)
        assert added[0] == pytest.approx((q + pe[p]) @ (k + pe[p + offset]) / np.sqrt(8))
        assert np.ptp(added) > 1e-3


def test_training_explorer_shows_the_recorded_weights_and_marks_their_step():
    rng = np.random.default_rng(1)
    weights = rng.dirichlet(np.ones(3), size=(3, 2))               # (3 snapshots, 2, 3)
    losses = np.linspace(3.0, 0.5, 21)
    e = ex.explore_training([0, 10, 20], weights, losses, index=0)
    for i, step in enumerate([0, 10, 20]):
        e.show(i)
        np.testing.assert_array_equal(e.figure.axes[0].images[0].get_array(), weights[i])
        marker, dot = e.figure.axes[1].lines[1:]
        assert list(marker.get_xdata()) == [step, step]
        assert list(dot.get_ydata()) == [losses[step]]
    assert ex.explore_training([0, 10, 20], weights, losses).index == 2, "default: the last step"


def test_training_explorer_inputs_are_checked():
    w = np.full((2, 3, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"weights must have one matrix per step.*\(3, n_q, n_k\)"):
        ex.explore_training([0, 1, 2], w, [1.0, 0.5])
    with pytest.raises(ValueError, match=r"weights must have shape \(n_snapshots, n_q, n_k\)"):
        ex.explore_training([0, 1], w[0], [1.0, 0.5])
    with pytest.raises(ValueError, match=r"losses must have shape \(n_steps,\)"):
        ex.explore_training([0, 1], w, [[1.0, 0.5]])
    with pytest.raises(TypeError, match="steps"):
        ex.explore_training(None, w, [1.0, 0.5])


def test_heads_explorer_shows_each_head_of_each_layer_and_frames_its_small_map():
    rng = np.random.default_rng(2)
    weights = rng.dirichlet(np.ones(4), size=(3, 2, 4))             # (layers, heads, n, n)
    tokens = ["<bos>", "a", "cat", "runs"]
    e = ex.explore_heads(weights, tokens, index=3)
    assert e.labels == ["1, 1", "1, 2", "2, 1", "2, 2", "3, 1", "3, 2"]
    assert e.value == (1, 1)
    small = [ax for ax in e.figure.axes if ax.images and not ax.get_xticks().size]
    assert len(small) == 6
    for i, (layer, head) in enumerate(e.values):
        e.show(i)
        big = next(ax for ax in e.figure.axes if ax.get_title() == f"layer {layer + 1}, "
                   f"head {head + 1}" and ax.get_xticks().size)
        np.testing.assert_array_equal(big.images[0].get_array(), weights[layer, head])
        np.testing.assert_array_equal(small[i].images[0].get_array(), weights[layer, head])
        shown = [ax for ax in small if ax.patches[0].get_visible()]
        assert shown == [small[i]], "exactly the selected head's small map is framed"
        best = weights[layer, head].argmax(1)
        assert f"cat → {tokens[best[2]]} {weights[layer, head, 2, best[2]]:.2f}" in e.frame_alt()


def test_heads_explorer_inputs_are_checked():
    w = np.full((1, 2, 3, 3), 1 / 3)
    with pytest.raises(ValueError, match=r"weights must have shape \(n_layers, n_heads, n, n\)"):
        ex.explore_heads(w[0], ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"square.*\(1, 2, 3, 2\)"):
        ex.explore_heads(w[..., :2], ["a", "b", "c"])
    with pytest.raises(ValueError, match="tokens must have one label for each of the 3"):
        ex.explore_heads(w, ["a", "b"])
    with pytest.raises(ValueError, match="index"):
        ex.explore_heads(w, ["a", "b", "c"], index=2)


def test_induction_explorer_outlines_the_stripe_and_marks_each_checkpoint():
    rng = np.random.default_rng(2)
    weights = rng.dirichlet(np.ones(9), size=(3, 9))                # (3 checkpoints, 9, 9)
    scores, losses = [0.1, 0.5, 0.9], [3.0, 1.5, 0.2]
    e = ex.explore_induction([0, 25, 50], weights, 5, scores, losses, index=0)
    by_label = {ax.get_ylabel(): ax for ax in e.figure.axes}
    ax_w = e.figure.axes[0]
    ax_loss, ax_score = by_label["loss on the second half"], by_label["induction score"]
    cells = sorted((round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in ax_w.patches)
    assert cells == [(q, q - 5 + 1) for q in range(5, 9)], "query q on key q - half + 1"
    for i, step in enumerate([0, 25, 50]):
        e.show(i)
        np.testing.assert_array_equal(ax_w.images[0].get_array(), weights[i])
        marker, dot = ax_loss.lines[1:]
        assert list(marker.get_xdata()) == [step, step]
        assert list(dot.get_ydata()) == [losses[i]]
        assert list(ax_score.lines[1].get_ydata()) == [scores[i]]
        assert f"induction score {scores[i]:.2f}" in e.figure._suptitle.get_text()
    assert ex.explore_induction([0, 25, 50], weights, 5, scores, losses).index == 2


def text_outside_the_figure(fig) -> list[str]:
    """What of `fig` reaches past the figure's edge: each Axes (colorbars
    included) with everything it draws (tick labels, titles, axis labels,
    legends), and the figure's own texts; as 'what (by how many pixels)'."""
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    out = []
    parts = [(f"axes {i} ({ax.get_title() or ax.get_ylabel() or ax.get_label()!s})",
              ax.get_tightbbox(renderer)) for i, ax in enumerate(fig.axes) if ax.get_visible()]
    parts += [(repr(t.get_text()), t.get_window_extent(renderer))
              for t in fig.texts if t.get_visible() and t.get_text().strip()]
    for what, box in parts:
        if box is None:
            continue
        past = max(frame.x0 - box.x0, box.x1 - frame.x1, frame.y0 - box.y0, box.y1 - frame.y1)
        if past > 0.5:
            out.append(f"{what} (by {past:.1f} px)")
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_frame_keeps_all_its_text_inside_the_figure(kind):
    """The layout is frozen at the first value shown; labels that grow at
    another value (colorbar ticks, titles) must still fit in every frame."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    e = make(kind)
    FigureCanvasAgg(e.figure)
    clipped = {}
    for i in range(len(e.values)):
        e.show(i)
        e.figure.canvas.draw()
        if found := text_outside_the_figure(e.figure):
            clipped[e.labels[i]] = found
    assert not clipped, f"{kind}: text cut off at the figure's edge: {clipped}"


def test_the_clipping_check_sees_text_past_the_edge():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = plots.new_figure(3.0, 2.0)[0]
    fig.set_layout_engine("none")
    fig.text(0.9, 0.5, "a label running off the right edge")
    FigureCanvasAgg(fig).draw()
    assert text_outside_the_figure(fig)


@pytest.mark.parametrize("kind", KINDS)
def test_each_frame_has_alt_text_naming_its_value_and_its_numbers(kind, monkeypatch):
    """The static slider carries one alt text per frame: the description,
    the value and the frame's title, and its script swaps them with the frames."""
    e = make(kind)
    page = e.to_html()
    alts = json.loads(re.search(r'id="attnx-[0-9a-f]+-a">(.*?)</script>', page).group(1))
    assert len(alts) == len(e.values) == len(set(alts)), "one distinct alt text per frame"
    for alt, label in zip(alts, e.labels, strict=True):
        assert alt.startswith(e.description) and f"{e.name} = {label}" in alt
    e.show(len(e.values) - 1)
    assert e.frame_alt() == alts[-1]
    value = f"{e.name} = {e.labels[-1]}"
    assert alts[-1].count(value) == 1, f"the value is said once: {alts[-1]}"
    if e._describe is not None:
        assert alts[-1].endswith(e._describe(len(e.values) - 1))
    else:
        title = e.figure._suptitle or next(ax.title for ax in e.figure.axes
                                           if any(ax.title is a for a in e.dynamic))
        assert title.get_text().removeprefix(value).lstrip(":, ") in alts[-1]
    assert "im.alt = a[k]" in page


def test_temperature_frames_alt_text_gives_every_weight_and_the_output():
    e = ex.explore_temperature([2.0, 1.5, -1.0], ["apple", "banana", "chair"],
                               values=[10.0, 5.0, 2.0], query="fruit", temperatures=[1.0])
    w = loop_softmax([2.0, 1.5, -1.0])
    output = w[0] * 10.0 + w[1] * 5.0 + w[2] * 2.0
    assert e.frame_alt() == (f"{e.description}. T = 1: fruit: weights apple {w[0]:.2f}, "
                             f"banana {w[1]:.2f}, chair {w[2]:.2f}; output {output:.2f}")


def markings(fig) -> list:
    """What an explorer draws to mark cells and points: every visible outline
    (an unfilled patch that is not a spine, e.g. the induction stripe's cells or
    the selected head's frame) and every line drawn with markers (dots), each
    with the colour it is drawn in."""
    from matplotlib.colors import to_rgb
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    out = []
    for ax in fig.axes:
        spines = set(map(id, ax.spines.values()))
        for a in ax.get_children():
            if not a.get_visible() or a is ax.patch or id(a) in spines:
                continue
            if isinstance(a, Patch) and not a.get_fill() and a.get_edgecolor()[3] > 0:
                out.append((a, a.get_edgecolor()[:3]))
            elif (isinstance(a, Line2D) and len(a.get_xdata())
                  and a.get_marker() not in ("None", "", " ", None)):
                out.append((a, to_rgb(a.get_markerfacecolor())))
    return out


def pixels_showing(frame: np.ndarray, fig, artist, colour) -> int:
    """How many pixels of `frame`, inside `artist`'s extent, are nearer its
    colour than the same figure drawn without it: 0 if the frame lost it."""
    h = frame.shape[0]
    box = artist.get_window_extent(fig.canvas.get_renderer())
    x0, x1 = int(max(box.x0 - 2, 0)), int(min(box.x1 + 2, frame.shape[1]))
    y0, y1 = int(max(h - box.y1 - 2, 0)), int(min(h - box.y0 + 2, h))
    artist.set_visible(False)
    without = rgb(png.png_full_redraw(fig))
    artist.set_visible(True)
    c = np.array(colour) * 255
    saved, bare = frame[y0:y1, x0:x1], without[y0:y1, x0:x1]
    return int((np.linalg.norm(saved - c, axis=2) + 20
                < np.linalg.norm(bare - c, axis=2)).sum())


@pytest.mark.parametrize("kind", KINDS)
def test_every_outline_and_marker_shows_in_every_book_frame(kind):
    """Chapter 16 promised the induction stripe outlined while the blitted
    heatmap covered the outlines in every frame; this looks at the saved
    frames' pixels for every marking every explorer draws."""
    e = make(kind)
    for i, frame in enumerate(e.frames()):
        e.show(i)
        for artist, colour in markings(e.figure):
            assert pixels_showing(rgb(frame), e.figure, artist, colour) > 5, \
                f"{kind}, frame {i}: {artist} is not in the saved frame"


@pytest.mark.parametrize("kind", KINDS)
def test_every_book_frame_is_the_full_drawing_of_its_figure(kind):
    """Blitting draws, over the background, what a full drawing puts after
    the dynamic artists (outlines, spines, ticks); so each frame is the figure
    drawn in full, up to a few anti-aliased pixels where twin Axes overlap
    (which can move a palette colour by a few levels)."""
    e = make(kind)
    for i, frame in enumerate(e.frames()):
        e.show(i)
        full = rgb(png.png_palette(e.figure))
        differ = (np.abs(rgb(frame) - full).max(axis=2) > 16).sum()
        assert differ <= 10, f"{kind}, frame {i}: {differ} pixels differ from a full drawing"
