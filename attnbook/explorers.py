"""Explorers: one slider over one figure, live in Jupyter and static in the book.

Each `explore_*` function returns an `Explorer`. Displayed in a live kernel
(JupyterLab, VS Code, Colab) it is an ipywidgets slider whose callback
updates the artists of one matplotlib figure in place and re-renders it. In
the HTML book the same output is a kernel-free slider over frames rendered
when the book was built: an <input type="range"> (keyboard-operable) that
swaps inline PNG frames, with the current value beside it. It needs no
network and works over file://.

Without ipywidgets, a notebook shows the current frame as a still picture.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import struct
import zlib
from collections.abc import Callable, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colorbar import Colorbar
from matplotlib.figure import Figure
from matplotlib.ticker import FormatStrFormatter, MaxNLocator

from . import plots
from ._checks import (
    as_real,
    index_into,
    labels_for,
    positive_int,
    positive_number,
    require_finite,
    require_ndim,
    rope_offset_args,
    training_args,
)
from .analysis import dk_statistics
from .core import scaled_dot_product_attention, softmax
from .kernel import nadaraya_watson

__all__ = ["Explorer", "explore_dk", "explore_temperature", "explore_attention",
           "explore_bandwidth", "explore_rope_offset", "explore_training"]

# Live and static frames share one resolution: the layout is frozen at it, so a
# live frame and the book's frame for the same value are the same picture (a
# chapter with several explorers stays under 3 MB at 72 dpi).
DPI = 72
def _png_of_canvas(canvas: FigureCanvasAgg) -> bytes:
    """What the canvas last drew, as an RGB PNG, written for speed (live frames).

    No row filter and zlib level 1: about half the time Pillow's adaptive
    filtering takes, for the same size on these mostly flat plots.
    """
    width, height = canvas.get_width_height(physical=True)
    rgba = np.asarray(canvas.buffer_rgba())                            # (height, width, 4)
    rows = np.zeros((height, 1 + 3 * width), np.uint8)                 # filter byte 0: none
    rows[:, 1:] = rgba[:, :, :3].reshape(height, 3 * width)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data)))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)    # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b""))


def _png_full_redraw(fig: Figure) -> bytes:
    """The whole figure drawn afresh and written as a live frame (no blitting)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return _png_of_canvas(canvas)


def _png_palette(fig: Figure) -> bytes:
    """The whole figure as a palette PNG at `DPI` (the book's static frames)."""
    return plots.palette_png(fig, DPI)


def _steady_ticks(target, smallest_top: float, nbins: int = 4) -> None:
    """Ticks at 1, 2 or 5 x 10^k on `target` (an Axis, or a Colorbar, which
    keeps its own locator and formatter), all labelled with the decimals that
    the smallest range over the frames, [0, smallest_top], needs. The labels
    keep one width as the slider moves, so the layout frozen at the first
    value fits every frame (with the default formatter, 0.05 became 0.075
    and ran off the figure)."""
    locator = MaxNLocator(nbins, steps=[1, 2, 5, 10])
    # a step is at least smallest_top / nbins >= 10**-decimals, so it is a
    # multiple of 10**-decimals and every label is exact
    decimals = max(0, int(np.ceil(-np.log10(smallest_top / nbins))))
    formatter = FormatStrFormatter(f"%.{decimals}f")
    if isinstance(target, Colorbar):
        target.locator, target.formatter = locator, formatter
    else:
        target.set_major_locator(locator)
        target.set_major_formatter(formatter)


class Explorer:
    """One figure, one parameter, a list of values to slide over.

    The ``explore_*`` functions build one; displaying it shows a live slider
    in a Jupyter kernel and a kernel-free one in the HTML book. The first is
    in :doc:`/chapters/04_softmax_attention` (chapter 4).

    Parameters
    ----------
    name : str
        What the slider controls, shown beside it, e.g. ``"d_k"``.
    values : sequence, length n_values
        The parameter values, at least one.
    labels : sequence of str, length n_values
        How each value is shown.
    figure : matplotlib.figure.Figure
        The figure the slider redraws.
    update : callable
        ``update(index)`` changes the figure's artists in place to show
        ``values[index]``.
    index : int, optional
        The value shown first, in ``[0, n_values - 1]``. Default 0.
    description : str, optional
        What the figure shows: the start of every frame's alt text (see
        `frame_alt`). Default ``"Figure for <name>"``.
    dynamic : sequence of matplotlib artists, optional
        The artists `update` changes (whole Axes allowed). The live form
        draws everything else once and then redraws only these (blitting);
        empty means a full redraw on every move.
    describe : callable, optional
        ``describe(index)`` says in words what the frame for
        ``values[index]`` shows (its numbers), for its alt text. Default:
        the figure's changing titles.

    Raises
    ------
    ValueError
        If values and labels are empty or of different lengths, or index is
        out of range.
    """

    def __init__(self, name: str, values: Sequence, labels: Sequence[str], figure: Figure,
                 update: Callable[[int], None], index: int = 0, description: str = "",
                 dynamic: Sequence = (), describe: Callable[[int], str] | None = None):
        if len(values) != len(labels) or not len(values):
            raise ValueError(f"values and labels must be non-empty and of equal length; "
                             f"got {len(values)} values and {len(labels)} labels")
        self.name, self.values, self.labels = name, list(values), list(labels)
        self.figure, self._update = figure, update
        self.description = description or f"Figure for {name}"
        self.dynamic = list(dynamic)
        self._describe = describe
        self.index = index_into(index, len(self.values))
        self.slider = None          # the ipywidgets SelectionSlider, once widget() built it
        self._image = None          # the ipywidgets Image under it
        self._box = None            # the VBox holding both
        self._canvas = None         # the Agg canvas the live form blits on
        self._background = None     # its pixels without the dynamic artists
        self._live_frames: dict[int, bytes] = {}   # live PNG per index, drawn on first visit
        self._update(self.index)
        self._freeze_layout()

    def _freeze_layout(self) -> None:
        """Lay the figure out once, then keep every panel where it is, so frames
        do not jump as labels change and every rendering of a frame is identical."""
        fig = self.figure
        fig.set_dpi(DPI)
        FigureCanvasAgg(fig).draw()
        fig.set_layout_engine("none")

    # -- state ---------------------------------------------------------------------------
    def show(self, index: int) -> None:
        """Redraw the figure's artists for ``values[index]`` (no new figure).

        Parameters
        ----------
        index : int
            In ``[0, n_values - 1]``.
        """
        self.index = index = index_into(index, len(self.values))
        self._update(index)

    @property
    def value(self):
        """The value shown now, ``values[index]``."""
        return self.values[self.index]

    # -- live form -----------------------------------------------------------------------
    def widget(self):
        """The live form: a SelectionSlider above the figure as an Image widget.

        Returns
        -------
        ipywidgets.VBox
            The slider and the image; built on the first call, the same
            object afterwards.
        """
        import ipywidgets as widgets
        if self._box is None:
            self.slider = widgets.SelectionSlider(
                options=list(zip(self.labels, range(len(self.values)), strict=True)),
                value=self.index, description=self.name, continuous_update=True,
                layout=widgets.Layout(width="32rem"),
                style={"description_width": "initial"})
            self._image = widgets.Image(value=self.render_live(), format="png")
            self.slider.observe(self._on_slide, names="value")
            self._box = widgets.VBox([self.slider, self._image])
        return self._box

    def _on_slide(self, change) -> None:
        self.show(change["new"])
        self._image.value = self.render_live()

    def render_live(self) -> bytes:
        """The current frame as a PNG image, as the live slider shows it.

        Returns
        -------
        bytes
            An RGB PNG of the figure at `DPI`.
        """
        frame = self._live_frames.get(self.index)
        if frame is not None:
            return frame
        fig = self.figure
        if not self.dynamic:
            frame = _png_full_redraw(fig)
        else:
            if self._background is None:
                self._canvas = FigureCanvasAgg(fig)
                for artist in self.dynamic:
                    artist.set_animated(True)
                self._canvas.draw()                       # everything that does not move
                self._background = self._canvas.copy_from_bbox(fig.bbox)
            self._canvas.restore_region(self._background)
            renderer = self._canvas.get_renderer()
            for artist in self.dynamic:
                artist.draw(renderer)
            frame = _png_of_canvas(self._canvas)
        self._live_frames[self.index] = frame
        return frame

    def _static_mode(self) -> None:
        """Undo the live form's blitting set-up so a full draw shows every artist."""
        if self._background is not None:
            for artist in self.dynamic:
                artist.set_animated(False)
            self._background = None

    # -- static form ---------------------------------------------------------------------
    def frames(self) -> list[bytes]:
        """Every value's frame as a PNG image, as the HTML book shows them.

        The figure is left showing the current index.

        Returns
        -------
        list of bytes, length n_values
            One PNG per value, in order.
        """
        return [png for png, _ in self._frames_with_alt()]

    def frame_alt(self) -> str:
        """The current frame's alt text: the description, the value, and what
        the frame shows: `describe`'s words, or else the figure's changing
        titles (which carry the frame's numbers), without a leading restatement
        of the value.

        Returns
        -------
        str
            E.g. ``"<description>. d_k = 8: score std 2.81 unscaled, 0.99 scaled"``.
        """
        value = f"{self.name} = {self.labels[self.index]}"
        if self._describe is not None:
            shown = [self._describe(self.index)]
        else:
            fig = self.figure
            titles = {id(t) for t in (fig._suptitle, *(ax.title for ax in fig.axes))
                      if t is not None}
            shown = [a.get_text() for a in self.dynamic
                     if id(a) in titles and a.get_visible() and a.get_text().strip()]
            shown = [t.removeprefix(value).lstrip(":, ") if t.startswith(value) else t
                     for t in shown]
        shown = [t for t in shown if t]
        return f"{self.description}. {value}" + (": " + "; ".join(shown) if shown else "")

    def _frames_with_alt(self) -> list[tuple[bytes, str]]:
        """(palette PNG, alt text) for every value; the figure is left as it was."""
        self._static_mode()
        current, out = self.index, []
        for i in range(len(self.values)):
            self.show(i)
            out.append((_png_palette(self.figure), self.frame_alt()))
        self.show(current)
        return out

    def to_html(self) -> str:
        """A self-contained, kernel-free slider over every pre-rendered frame.

        Returns
        -------
        str
            HTML: a slider, the current value, and an image that shows the
            frame of that value, each frame with its alt text.
        """
        frames = self._frames_with_alt()
        uris = ["data:image/png;base64," + base64.b64encode(f).decode() for f, _ in frames]
        alts = [a for _, a in frames]
        uid = "attnx-" + hashlib.sha1((self.name + uris[0]).encode()).hexdigest()[:10]
        labels = [f"{self.name} = {lab}" for lab in self.labels]
        alt = html.escape(alts[self.index], quote=True)
        lead = html.escape(self.description, quote=True)
        return f"""<div class="attn-explorer" id="{uid}" data-alt-lead="{lead}">
<div class="attn-controls"><label for="{uid}-r">{html.escape(self.name)}</label>
<input type="range" id="{uid}-r" min="0" max="{len(uris) - 1}" step="1" value="{self.index}" \
aria-valuetext="{html.escape(labels[self.index], quote=True)}">
<output for="{uid}-r" id="{uid}-o" aria-live="polite">{html.escape(labels[self.index])}</output></div>
<img id="{uid}-i" src="{uris[self.index]}" alt="{alt}">
<script type="application/json" id="{uid}-f">{json.dumps(uris)}</script>
<script type="application/json" id="{uid}-l">{html.escape(json.dumps(labels), quote=False)}</script>
<script type="application/json" id="{uid}-a">{html.escape(json.dumps(alts), quote=False)}</script>
<script>(function () {{
  var id = "{uid}", r = document.getElementById(id + "-r"), o = document.getElementById(id + "-o"),
      im = document.getElementById(id + "-i"),
      f = JSON.parse(document.getElementById(id + "-f").textContent),
      l = JSON.parse(document.getElementById(id + "-l").textContent),
      a = JSON.parse(document.getElementById(id + "-a").textContent);
  function show() {{ var k = +r.value; im.src = f[k]; im.alt = a[k]; o.textContent = l[k];
                     r.setAttribute("aria-valuetext", l[k]); }}
  r.addEventListener("input", show); r.addEventListener("change", show);
}})();</script>
</div>"""

    def _one_frame_html(self) -> str:
        """The current frame alone, as an inline image with the value beside it."""
        uri = "data:image/png;base64," + base64.b64encode(self.render_live()).decode()
        label = html.escape(f"{self.name} = {self.labels[self.index]}")
        return (f'<div class="attn-explorer-frame"><p>{label}</p>'
                f'<img src="{uri}" alt="{html.escape(self.frame_alt(), quote=True)}"></div>')

    def _repr_mimebundle_(self, include=None, exclude=None):
        """What Jupyter displays: only the form the front end will show.

        In the book's build (``ATTNBOOK_STATIC=1``, see
        `attnbook.plots.STATIC_ENV`) the kernel-free slider over every frame;
        elsewhere the live widget, with
        the current frame as 'text/html' for front ends without ipywidgets.
        """
        plain = f"<Explorer over {self.name}: {len(self.values)} values>"
        if plots.static_build():
            return {"text/html": self.to_html(), "text/plain": plain}
        bundle = {}
        try:
            bundle.update(self.widget()._repr_mimebundle_())
        except ImportError:        # ipywidgets missing: the current frame still shows
            pass
        bundle["text/html"] = self._one_frame_html()
        bundle["text/plain"] = plain
        return bundle


def explore_dk(seed: int = 0, d_ks: Sequence[int] = tuple(2**i for i in range(11)),
               n_show: tuple[int, int] = (4, 6), index: int = 3) -> Explorer:
    """Slide d_k over powers of two: what 1/√d_k does to scores and weights.

    Taught in :doc:`/chapters/05_scaling` (chapter 5). q and K have N(0, 1)
    entries drawn from ``np.random.default_rng(seed)``, 200 queries and 16
    keys per d_k. Panels: the distribution of the scores with and without
    scaling; the weights of the first n_show queries x keys, unscaled and
    scaled; the mean largest weight and the mean entropy against d_k, with
    the current d_k marked.

    Parameters
    ----------
    seed : int
        Seed of the random q and K, >= 0.
    d_ks : sequence of int, length n_values
        The key widths to slide over, each >= 1. Default 1, 2, 4, ..., 1024.
    n_show : (int, int)
        The (queries, keys) shown in the heatmaps, at most (200, 16).
    index : int
        The d_k shown first, in ``[0, n_values - 1]``.

    Returns
    -------
    Explorer
        The slider over d_ks.
    """
    d_ks = [positive_int(d, f"d_ks[{i}]") for i, d in enumerate(d_ks)]
    if not d_ks:
        raise ValueError("d_ks must hold at least one d_k; got none")
    index = index_into(index, len(d_ks))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"seed must be an integer >= 0, got {type(seed).__name__} {seed!r}")
    n_queries, n_keys = 200, 16
    if len(n_show) != 2:
        raise ValueError(f"n_show must be (queries, keys) to show; got {n_show!r}")
    for name, n, top in (("n_show[0]", n_show[0], n_queries), ("n_show[1]", n_show[1], n_keys)):
        if positive_int(n, name) > top:
            raise ValueError(f"{name} must be at most {top}, the number drawn; got {n}")
    stats = dk_statistics(d_ks, np.random.default_rng(seed), n_q=n_queries, n_k=n_keys)
    nq, nk = n_show
    fig, axes = plots.new_figure(10.5, 6.2, nrows=2, ncols=3)
    ax_hist, ax_raw, ax_scaled = axes[0]
    ax_max, ax_ent, ax_note = axes[1]
    ax_note.axis("off")
    ax_note.text(0, 0.66, "q and K: N(0, 1) entries\n"
                 f"{n_queries} queries x {n_keys} keys per d_k\n"
                 f"heatmaps: the first {nq} queries, {nk} keys\n\n"
                 f"dotted line: ln {n_keys}, the entropy\nof uniform weights over {n_keys} keys\n\n"
                 "unscaled: q·k has std √d_k,\nso softmax saturates\n"
                 "scaled: q·k/√d_k has std 1", va="top", fontsize=9, transform=ax_note.transAxes)
    edges = np.linspace(-4, 4, 41)
    step_raw = ax_hist.stairs(np.zeros(40), edges, label="q·k", color="#b2182b")
    step_scaled = ax_hist.stairs(np.zeros(40), edges, label="q·k / √d_k", color="#2166ac")
    ax_hist.set_xlabel("score")
    ax_hist.set_ylabel("density")
    histograms = []                     # per d_k: bin edges, raw and scaled densities
    for d_k, raw in zip(d_ks, stats["scores"], strict=True):
        width = max(4.0, 4 * np.sqrt(d_k))
        e = np.linspace(-width, width, 41)
        scaled = np.clip(raw / np.sqrt(d_k), -width, width)
        histograms.append((e, np.histogram(raw, e, density=True)[0],
                           np.histogram(scaled, e, density=True)[0]))
    tops = [1.1 * max(h[2].max(), 1e-9) for h in histograms]
    _steady_ticks(ax_hist.yaxis, min(tops))
    # the legend sits in the static note panel, so a slider move redraws less text
    ax_note.legend(handles=[step_raw, step_scaled], loc="upper left", bbox_to_anchor=(0, 1.05),
                   fontsize=8, title="score histograms (top left)", title_fontsize=8,
                   alignment="left")
    blank = np.zeros((nq, nk))
    plots.heatmap(blank, ax=ax_raw, title="weights, unscaled", colorbar=False, annotate=False,
                  xlabel="keys", ylabel="queries")
    plots.heatmap(blank, ax=ax_scaled, title="weights, scaled", colorbar=False, annotate=False,
                  xlabel="keys", ylabel="")
    im_raw, im_scaled = ax_raw.images[0], ax_scaled.images[0]
    fig.colorbar(im_scaled, ax=[ax_raw, ax_scaled], shrink=0.8)
    for ax, key, ylabel in ((ax_max, "max", "mean largest weight"),
                            (ax_ent, "ent", "mean entropy (nats)")):
        ax.plot(d_ks, stats[f"{key}_raw"], "o-", color="#b2182b", ms=3, label="unscaled")
        ax.plot(d_ks, stats[f"{key}_scaled"], "s-", color="#2166ac", ms=3, label="scaled")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("d_k")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=8)
    ax_ent.axhline(np.log(n_keys), color="grey", lw=0.8, ls=":")
    markers = [ax.axvline(d_ks[0], color="black", lw=1) for ax in (ax_max, ax_ent)]
    title = fig.suptitle("")

    def update(i: int) -> None:
        d_k, raw = d_ks[i], stats["scores"][i]
        scaled = raw / np.sqrt(d_k)
        e, hist_raw, hist_scaled = histograms[i]
        step_raw.set_data(hist_raw, e)
        step_scaled.set_data(hist_scaled, e)
        ax_hist.set_xlim(e[0], e[-1])
        ax_hist.set_ylim(0, tops[i])
        im_raw.set_data(softmax(raw[:nq, :nk], axis=1))
        im_scaled.set_data(softmax(scaled[:nq, :nk], axis=1))
        for m in markers:
            m.set_xdata([d_k, d_k])
        title.set_text(f"d_k = {d_k}: score std {stats['std_raw'][i]:.2f} unscaled, "
                       f"{stats['std_scaled'][i]:.2f} scaled")

    return Explorer("d_k", d_ks, [str(d) for d in d_ks], fig, update, index,
                    "Score distributions, weight heatmaps and saturation statistics for "
                    "scaled and unscaled dot-product attention as d_k changes",
                    dynamic=[ax_hist, im_raw, im_scaled, *markers, title])


def explore_temperature(scores, labels: Sequence[str], values=None,
                        temperatures: Sequence[float] | None = None, index: int | None = None,
                        query: str = "query") -> Explorer:
    """Slide the softmax temperature over one row of scores.

    Taught in :doc:`/chapters/04_softmax_attention` (chapter 4). Near 0 the
    weights become one-hot (the dict lookup); large, uniform (the average).

    Parameters
    ----------
    scores : array_like, shape (n_k,)
        The scores of one query; -inf allowed, NaN and +inf refused.
    labels : sequence of str, length n_k
        The key names.
    values : array_like, shape (n_k,), optional
        Scalar values, whose weighted average is shown in the title.
    temperatures : sequence of float, optional
        The temperatures to slide over, each > 0. Default 0.01 to 100.
    index : int, optional
        The temperature shown first. Default: that of T = 1 if present, else 0.
    query : str
        The query's name in the title.

    Returns
    -------
    Explorer
        The slider over the temperatures.
    """
    s = as_real(scores, "scores")
    require_ndim(s, "scores", (1,), "(n_k,)")
    require_finite(s, "scores", allow_neg_inf=True)
    if s.shape[0] == 0:
        raise ValueError("scores must hold at least one key; got shape (0,)")
    labels_for(labels, "labels", s.shape[0], optional=False)
    v = None if values is None else as_real(values, "values")
    if v is not None and v.shape != s.shape:
        raise ValueError(f"values must have shape {s.shape} like scores; got {v.shape}")
    if v is not None:
        require_finite(v, "values")
    temps = [positive_number(t, f"temperatures[{i}]") for i, t in enumerate(
        temperatures if temperatures is not None else
        (0.01, 0.03, 0.1, 0.3, 0.5, 1, 2, 3, 10, 30, 100))]
    if not temps:
        raise ValueError("temperatures must hold at least one temperature; got none")
    if index is None:
        index = temps.index(1.0) if 1.0 in temps else 0
    index = index_into(index, len(temps))
    fig, ax = plots.new_figure(6.0, 3.4)
    bars = ax.bar(range(len(s)), np.zeros(len(s)), color="#2166ac")
    ax.set_xticks(range(len(s)), labels=labels)
    ax.set_ylim(0, 1.15)                       # room for the "1.00" label above a full bar
    ax.set_ylabel("weight")
    ax.set_xlabel("keys")
    ax.axhline(1 / len(s), color="0.4", lw=0.8, ls=":")
    # named in the right margin, where no bar's value label can run into it
    ax.annotate(f"uniform\n(1/{len(s)})", xy=(1, 1 / len(s)), xycoords=("axes fraction", "data"),
                xytext=(4, 0), textcoords="offset points", color="0.3", fontsize=9,
                ha="left", va="center")
    texts = [ax.text(j, 0, "", ha="center", va="bottom", fontsize=9) for j in range(len(s))]
    title = ax.set_title("")

    def update(i: int) -> None:
        w = softmax(s, temperature=temps[i])
        for bar, text, wj in zip(bars, texts, w, strict=True):
            bar.set_height(wj)
            text.set_y(wj + 0.01)
            text.set_text(f"{wj:.2f}")
        out = f", output = {w @ v:.2f}" if v is not None else ""
        title.set_text(f"{query}: temperature T = {temps[i]:g}{out}")

    def describe(i: int) -> str:
        w = softmax(s, temperature=temps[i])
        weights = ", ".join(f"{name} {wj:.2f}" for name, wj in zip(labels, w, strict=True))
        out = f"; output {w @ v:.2f}" if v is not None else ""
        return f"{query}: weights {weights}{out}"

    return Explorer("T", temps, [f"{t:g}" for t in temps], fig, update, index,
                    "Softmax weights over the keys as the temperature changes",
                    dynamic=[*bars, *texts, title], describe=describe)


def explore_attention(tokens: Sequence[str], Q, K, V, scale=None, index: int = 0,
                      value_labels: Sequence[str] | None = None) -> Explorer:
    """Pick a query token: its row of weights (highlighted) and its output vector.

    Taught in :doc:`/chapters/07_self_attention` (chapter 7).

    Parameters
    ----------
    tokens : sequence of str, length n_q
        Names of the queries (and of the keys, for self-attention: n_q = n_k).
    Q : array_like, shape (n_q, d_k)
        The queries.
    K : array_like, shape (n_k, d_k)
        The keys.
    V : array_like, shape (n_k, d_v)
        The values.
    scale : float, optional
        As in `scaled_dot_product_attention`; default 1/√d_k.
    index : int
        The query shown first, in ``[0, n_q - 1]``.
    value_labels : sequence of str, length d_v, optional
        Names of V's columns. Default ``"dim 0"``, ``"dim 1"``, ...

    Returns
    -------
    Explorer
        The slider over the queries.
    """
    out, w = scaled_dot_product_attention(Q, K, V, scale=scale)
    if out.ndim != 2 or w.ndim != 2:
        raise ValueError(f"explore_attention needs Q (n_q, d_k) and V (n_k, d_v); got "
                         f"weights {w.shape} and output {out.shape}")
    n_q, n_k = w.shape
    labels_for(tokens, "tokens", None, optional=False)
    labels_for(value_labels, "value_labels", None)
    if len(tokens) not in (n_q, n_k):
        raise ValueError(f"tokens must name the {n_q} queries; got {len(tokens)}")
    q_names = list(tokens) if len(tokens) == n_q else [f"q{i}" for i in range(n_q)]
    k_names = list(tokens) if len(tokens) == n_k else [f"k{j}" for j in range(n_k)]
    d_v = out.shape[1]
    index = index_into(index, n_q)
    if value_labels is not None and len(value_labels) != d_v:
        raise ValueError(f"value_labels must name each of the d_v = {d_v} columns of V; "
                         f"got {len(value_labels)}")
    fig, (ax_w, ax_o) = plots.new_figure(8.5, 1.6 + 0.45 * n_q, ncols=2,
                                         gridspec_kw={"width_ratios": [n_k + 1.5, d_v + 1.5]})
    plots.heatmap(w, ax=ax_w, row_labels=q_names, col_labels=k_names, title="weights",
                  colorbar=False)
    from matplotlib.patches import Rectangle
    box = ax_w.add_patch(Rectangle((-0.5, -0.5), n_k, 1, fill=False, ec="#d95f02", lw=3))
    lo, hi = min(out.min(), 0), max(out.max(), 0)
    span = hi - lo + 1e-9
    bars = ax_o.barh(range(d_v), np.zeros(d_v), color="#d95f02")
    ax_o.set_yticks(range(d_v), labels=value_labels or [f"dim {c}" for c in range(d_v)])
    ax_o.invert_yaxis()
    ax_o.set_xlim(lo - 0.1 * span, hi + 0.25 * span)
    ax_o.set_xlabel("output value")
    texts = [ax_o.text(0, c, "", va="center", fontsize=9) for c in range(d_v)]
    title = ax_o.set_title("")

    def update(i: int) -> None:
        box.set_y(i - 0.5)
        for c, (bar, text) in enumerate(zip(bars, texts, strict=True)):
            bar.set_width(out[i, c])
            text.set_x(max(out[i, c], 0) + 0.02 * span)
            text.set_text(f"{out[i, c]:.2f}")
        title.set_text(f"output for {q_names[i]!r}")

    return Explorer("query", list(range(n_q)), q_names, fig, update, index,
                    "Attention weights of the selected query and its output vector",
                    dynamic=[box, *bars, *texts, title])


def explore_bandwidth(x_train, y_train, x_test, y_test=None,
                      bandwidths: Sequence[float] = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0,
                                                     1.5, 2.0, 3.0, 5.0),
                      index: int | None = None) -> Explorer:
    """Nadaraya–Watson with a Gaussian kernel: slide the bandwidth.

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8). Left, the
    training points, the true curve (if y_test is given) and the fit;
    right, the weights (test inputs x training inputs, both sorted).

    Parameters
    ----------
    x_train, y_train : array_like, shape (n_k,)
        Training inputs (the keys) and targets (the values), finite.
    x_test : array_like, shape (n_q,)
        The inputs the fit is drawn at (the queries).
    y_test : array_like, shape (n_q,), optional
        The true curve at x_test; the title then gives the fit's MSE.
    bandwidths : sequence of float, length n_values
        The bandwidths to slide over, each > 0.
    index : int, optional
        The bandwidth shown first. Default: that of h = 1 if present, else 0.

    Returns
    -------
    Explorer
        The slider over the bandwidths.
    """
    x_train, y_train = as_real(x_train, "x_train"), as_real(y_train, "y_train")
    x_test = as_real(x_test, "x_test")
    require_ndim(x_train, "x_train", (1,), "(n_train,)")
    require_ndim(x_test, "x_test", (1,), "(n_test,)")
    if y_train.shape != x_train.shape:
        raise ValueError(f"y_train must have one target per training input, shape "
                         f"{x_train.shape} like x_train; got shape {y_train.shape}")
    if y_test is not None:
        y_test = as_real(y_test, "y_test")
        if y_test.shape != x_test.shape:
            raise ValueError(f"y_test must have one value per test input, shape "
                             f"{x_test.shape} like x_test; got shape {y_test.shape}")
        require_finite(y_test, "y_test")
    for name, a in (("x_train", x_train), ("y_train", y_train), ("x_test", x_test)):
        require_finite(a, name)
    if not x_train.size or not x_test.size:
        raise ValueError(f"x_train and x_test must not be empty; got shapes {x_train.shape} "
                         f"and {x_test.shape}")
    bandwidths = [positive_number(h, f"bandwidths[{i}]") for i, h in enumerate(bandwidths)]
    if not bandwidths:
        raise ValueError("bandwidths must hold at least one bandwidth; got none")
    order = np.argsort(x_train)
    x_train, y_train = x_train[order], y_train[order]
    fits = [nadaraya_watson(x_test, x_train, y_train, h) for h in bandwidths]
    if index is None:
        index = bandwidths.index(1.0) if 1.0 in bandwidths else 0
    index = index_into(index, len(bandwidths))
    fig, (ax_fit, ax_w) = plots.new_figure(10.0, 3.8, ncols=2)
    ax_fit.plot(x_train, y_train, "o", color="grey", ms=3, alpha=0.7, label="training data")
    if y_test is not None:
        ax_fit.plot(x_test, y_test, "--", color="black", lw=1, label="truth")
    (line,) = ax_fit.plot(x_test, fits[0][0], color="#d95f02", lw=2, label="prediction")
    ax_fit.set_xlabel("x")
    ax_fit.set_ylabel("y")
    ax_fit.legend(fontsize=8, loc="lower center")
    plots.heatmap(fits[0][1], ax=ax_w, title="weights", annotate=False, xlabel="training inputs",
                  ylabel="test inputs", colorbar=True, vmax=None)
    ax_w.set_xticks([])
    ax_w.set_yticks([])
    im = ax_w.images[0]
    _steady_ticks(im.colorbar, min(w.max() for _, w in fits), nbins=5)
    title = fig.suptitle("")

    def update(i: int) -> None:
        y_hat, w = fits[i]
        line.set_ydata(y_hat)
        im.set_data(w)
        im.set_clim(0, w.max())
        mse = "" if y_test is None else \
            f", MSE against the truth {np.mean((y_hat - y_test) ** 2):.3f}"
        title.set_text(f"bandwidth h = {bandwidths[i]:g}{mse}")

    return Explorer("bandwidth", list(bandwidths), [f"{h:g}" for h in bandwidths], fig,
                    update, index, "Nadaraya–Watson fit and weights as the bandwidth changes",
                    dynamic=[line, im, im.colorbar.ax, title])


# -- chapter 11: positions ----------------------------------------------------------------

def explore_rope_offset(d: int = 16, max_offset: int = 8, n_positions: int = 16,
                        base: float = 10000.0, seed: int = 0, index: int | None = None
                        ) -> Explorer:
    """Slide the offset m - p between a query at position p and a key at position m.

    Taught in :doc:`/chapters/11_positions` (chapter 11). One query q and
    one key k (N(0, 1) entries of width d, drawn from
    ``np.random.default_rng(seed)``) are placed at every pair of positions:
    with RoPE the score is rotate(q, p) · rotate(k, m) / √d, with added
    sinusoids it is (q + PE[p]) · (k + PE[m]) / √d. Left, the score against
    the offset for each of n_positions query positions (with RoPE the curves
    coincide); right, at the chosen offset, the score against the query
    position: flat for RoPE, wavy for added sinusoids.

    Parameters
    ----------
    d : int
        Width of q and k (even, for RoPE).
    max_offset : int
        The offsets slid over are -max_offset, ..., max_offset.
    n_positions : int
        How many query positions p (from max_offset on).
    base : float
        The frequency base of RoPE and of the sinusoids.
    seed : int
        Seed of q and k.
    index : int, optional
        The offset shown first, as an index into the offsets. Default:
        offset 3 (or max_offset if smaller).

    Returns
    -------
    Explorer
        The slider over the offsets.
    """
    from .positions import rotate, sinusoidal_positions
    d, max_offset, n_positions, base, seed, index = rope_offset_args(
        d, max_offset, n_positions, base, seed, index)
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, d))                                       # (d,), (d,)
    offsets = list(range(-max_offset, max_offset + 1))
    p = np.arange(max_offset, max_offset + n_positions)                  # query positions
    pe = sinusoidal_positions(n_positions + 2 * max_offset, d, base)     # (n_pos + 2 max_off, d)
    q_rope = rotate(np.tile(q, (n_positions, 1)), p, base)               # (n_positions, d)
    q_added = q + pe[p]                                                  # (n_positions, d)
    rope, added = [], []                                                 # (n_offsets, n_positions)
    for off in offsets:
        k_rope = rotate(np.tile(k, (n_positions, 1)), p + off, base)     # (n_positions, d)
        rope.append(np.sum(q_rope * k_rope, axis=1) / np.sqrt(d))
        added.append(np.sum(q_added * (k + pe[p + off]), axis=1) / np.sqrt(d))
    rope, added = np.array(rope), np.array(added)
    lo, hi = min(rope.min(), added.min()), max(rope.max(), added.max())
    pad = 0.08 * (hi - lo)
    fig, (ax_off, ax_pos) = plots.new_figure(10.0, 3.8, ncols=2)
    from matplotlib.collections import LineCollection
    for curves, color, lw, label in ((added, "#d95f02", 0.8, "added sinusoids"),
                                     (rope, "#1b9e77", 1.6, "RoPE")):
        segments = [np.column_stack([offsets, curves[:, j]]) for j in range(n_positions)]
        ax_off.add_collection(LineCollection(segments, colors=color, linewidths=lw,
                                             alpha=0.6 if lw < 1 else 1.0, label=label))
    ax_off.set_xlim(offsets[0], offsets[-1])
    ax_off.set_xlabel("offset m − p (key position minus query position)")
    ax_off.set_ylabel("score q·k / √d")
    ax_off.set_title(f"one curve per query position p ({n_positions} of them)", fontsize=10)
    ax_off.set_ylim(lo - pad, hi + pad)
    ax_off.legend(fontsize=8, loc="upper left")
    marker = ax_off.axvline(offsets[0], color="black", lw=1)
    (line_rope,) = ax_pos.plot(p, rope[0], "o-", color="#1b9e77", ms=3, label="RoPE")
    (line_added,) = ax_pos.plot(p, added[0], "s-", color="#d95f02", ms=3,
                                label="added sinusoids")
    ax_pos.set_xlabel("query position p")
    ax_pos.set_ylabel("score q·k / √d")
    # headroom above every score for the legend, so it never covers a point
    ax_pos.set_ylim(lo - pad, hi + pad + 0.3 * (hi - lo + 2 * pad))
    ax_pos.legend(fontsize=8, loc="upper left", ncols=2)
    title = ax_pos.set_title("", fontsize=10)

    def update(i: int) -> None:
        marker.set_xdata([offsets[i], offsets[i]])
        line_rope.set_ydata(rope[i])
        line_added.set_ydata(added[i])
        title.set_text(f"offset = {offsets[i]}: spread over p {np.ptp(rope[i]):.1e} (RoPE), "
                       f"{np.ptp(added[i]):.2f} (added)")

    return Explorer("offset", offsets, [str(o) for o in offsets], fig, update, index,
                    "Left: the attention score of one query and one key against their "
                    "offset, one curve per query position, for rotary embeddings (the "
                    "curves coincide) and for added sinusoidal encodings (a different curve "
                    "at each position), a vertical line at the chosen offset. Right: the "
                    "score at that offset for each query position, flat for rotary "
                    "embeddings and varying for added sinusoids",
                    dynamic=[marker, line_rope, line_added, title])


# -- chapter 13: attention that learns ------------------------------------------------------

def explore_training(steps, weights, losses, row_labels: Sequence[str] | None = None,
                     col_labels: Sequence[str] | None = None, index: int = -1,
                     title: str = "attention weights") -> Explorer:
    """Slide over training steps: the attention pattern forming.

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Parameters
    ----------
    steps : array_like, shape (n_snapshots,)
        The training steps at which the weights were recorded.
    weights : array_like, shape (n_snapshots, n_q, n_k)
        The probe's attention weights at each recorded step.
    losses : array_like, shape (n_steps,)
        The training loss at every step, drawn with the current step marked.
    row_labels : sequence of str, length n_q, optional
        Names of the queries.
    col_labels : sequence of str, length n_k, optional
        Names of the keys.
    index : int
        The snapshot shown first, in [-n_snapshots, n_snapshots - 1] (default
        -1: the last, after training).
    title : str
        The heatmap's title.

    Returns
    -------
    Explorer
        The slider over the recorded steps.
    """
    steps, w, losses, index = training_args(steps, weights, losses, index)
    n_snap, n_q, n_k = w.shape
    fig, (ax_w, ax_loss) = plots.new_figure(9.0, 3.2 + 0.18 * n_q, ncols=2,
                                            gridspec_kw={"width_ratios": [n_k + 2, 8]})
    plots.heatmap(w[index], ax=ax_w, row_labels=row_labels, col_labels=col_labels,
                  title=title, annotate=False)
    im = ax_w.images[0]
    ax_loss.plot(np.arange(len(losses)), losses, color="#2166ac", lw=1)
    ax_loss.set_xlabel("training step")
    ax_loss.set_ylabel("training loss")
    marker = ax_loss.axvline(steps[index], color="#d95f02", lw=1.5)
    dot, = ax_loss.plot([], [], "o", color="#d95f02", ms=5)
    caption = fig.suptitle("")

    def update(i: int) -> None:
        im.set_data(w[i])
        s = steps[i]
        marker.set_xdata([s, s])
        at = int(min(s, len(losses) - 1))
        dot.set_data([at], [losses[at]])
        caption.set_text(f"after {int(s)} training steps")

    return Explorer("step", [int(s) for s in steps], [str(int(s)) for s in steps], fig,
                    update, index, "Attention weights of a probe input at each recorded "
                    "training step, beside the training loss curve with that step marked",
                    dynamic=[im, marker, dot, caption])
