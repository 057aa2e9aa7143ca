"""The d_k explorer (chapter 5): what 1/√d_k does to scores and weights."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import plots
from .._checks import index_into, positive_int, sequence
from ..analysis import dk_statistics
from ..core import softmax
from .explorer import Explorer, steady_ticks


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
    d_ks = [positive_int(d, f"d_ks[{i}]")
            for i, d in enumerate(sequence(d_ks, "d_ks", "whole numbers > 0"))]
    if not d_ks:
        raise ValueError("d_ks must hold at least one d_k; got none")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"seed must be an integer >= 0, got {type(seed).__name__} {seed!r}")
    n_queries, n_keys = 200, 16
    n_show = sequence(n_show, "n_show", "two whole numbers (queries, keys)")
    if len(n_show) != 2:
        raise ValueError(f"n_show must be (queries, keys) to show; got {n_show!r}")
    for name, n, top in (("n_show[0]", n_show[0], n_queries), ("n_show[1]", n_show[1], n_keys)):
        if positive_int(n, name) > top:
            raise ValueError(f"{name} must be at most {top}, the number drawn; got {n}")
    index = index_into(index, len(d_ks))
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
    # per d_k: raw bin edges and densities, then the scaled densities, which
    # keep the fixed edges: bins that widened with the raw spread would
    # flatten a std-1 histogram into two bins at large d_k
    histograms = []
    for d_k, raw in zip(d_ks, stats["scores"], strict=True):
        width = max(4.0, 4 * np.sqrt(d_k))
        e = np.linspace(-width, width, 41)
        histograms.append((e, np.histogram(raw, e, density=True)[0],
                           np.histogram(raw / np.sqrt(d_k), edges, density=True)[0]))
    tops = [1.1 * max(h[2].max(), 1e-9) for h in histograms]
    steady_ticks(ax_hist.yaxis, min(tops))
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
        step_scaled.set_data(hist_scaled, edges)
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
