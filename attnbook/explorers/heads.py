"""The heads explorer (chapter 15): every head of every layer on one sentence."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.patches import Rectangle

from .. import plots
from .._checks import (
    as_real,
    index_into,
    labels_for,
    require_between,
    require_finite,
    require_ndim,
)
from .explorer import Explorer


def explore_heads(weights, tokens: Sequence[str], index: int = 0) -> Explorer:
    """Slide over the heads of a model, layer by layer: each one's weights on a sentence.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    The large heatmap is the selected head's attention weights (rows: the
    tokens as queries, columns: as keys); the small ones beside it are all
    the heads at once, the selected one framed.

    Parameters
    ----------
    weights : array_like, shape (n_layers, n_heads, n, n)
        The attention weights of every head of every block on one sequence,
        e.g. ``torch.stack(weights)[:, 0]`` of `TinyGPT`'s output.
    tokens : sequence of str, length n
        The sequence's tokens, to label the rows and columns.
    index : int, default 0
        The head shown first, counted layer by layer: head i (from 0) of
        layer l (from 0) is ``l * n_heads + i``.

    Returns
    -------
    Explorer
        The slider over the n_layers * n_heads heads.
    """
    w = as_real(weights, "weights")
    require_ndim(w, "weights", (4,), "(n_layers, n_heads, n, n)")
    n_layers, n_heads, n, n_k = w.shape
    if n != n_k or w.size == 0:
        raise ValueError(f"weights must have shape (n_layers, n_heads, n, n): square, one "
                         f"row and column per token, with at least one layer, head and "
                         f"token; got {w.shape}")
    require_finite(w, "weights")
    require_between(w, "weights", 0, 1, "attention weights")
    labels_for(tokens, "tokens", n, strings=True, optional=False)
    index = index_into(index, n_layers * n_heads)
    heads = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    fig, axes = plots.new_figure(
        9.6, 1.2 + 0.3 * n, nrows=n_layers, ncols=n_heads + 1,
        gridspec_kw={"width_ratios": [2.6 * n_heads] + [1.6] * n_heads})
    axes = np.asarray(axes).reshape(n_layers, n_heads + 1)
    grid = axes[0, 0].get_gridspec()
    for ax in axes[:, 0]:
        ax.remove()
    main = fig.add_subplot(grid[:, 0])
    plots.heatmap(w[heads[index]], ax=main, row_labels=list(tokens), col_labels=list(tokens),
                  annotate=False, xlabel="key token", ylabel="query token")
    image = main.images[0]
    title = main.set_title("")
    frames = []
    for (layer, head), ax in zip(heads, axes[:, 1:].ravel(), strict=True):
        ax.imshow(w[layer, head], cmap=plots.CMAP, vmin=0, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=7)
        frames.append(ax.add_patch(Rectangle((-0.5, -0.5), n, n, fill=False, ec="#d95f02",
                                             lw=3, clip_on=False, visible=False)))

    def update(i: int) -> None:
        layer, head = heads[i]
        image.set_data(w[layer, head])
        title.set_text(f"layer {layer + 1}, head {head + 1}")
        for j, frame in enumerate(frames):
            frame.set_visible(j == i)

    def describe(i: int) -> tuple[str, str]:
        rows = w[heads[i]]
        best = rows.argmax(axis=1)
        # the tokens and weights read the same in both editions' alt text
        return "the key each token attends to most", "; ".join(
            f"{tokens[q]} → {tokens[k]} {rows[q, k]:.2f}" for q, k in enumerate(best))

    return Explorer("layer, head", heads, [f"{layer + 1}, {head + 1}" for layer, head in heads],
                    fig, update, index,
                    "Attention weights of one head on a sentence, rows the tokens as "
                    "queries and columns as keys, beside small maps of every head of "
                    "every layer with the selected one framed",
                    dynamic=[image, title, *frames], describe=describe)
