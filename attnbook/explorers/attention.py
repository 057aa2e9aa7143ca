"""The attention explorer (chapter 7): one query's weights and output."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import plots
from .._checks import index_into, labels_for
from ..core import scaled_dot_product_attention
from .explorer import Explorer


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

    names = value_labels or [f"dim {c}" for c in range(d_v)]

    def describe(i: int) -> tuple[str, str]:
        # the tokens and numbers read the same in both editions' alt text
        weights = ", ".join(f"{k} {wj:.2f}" for k, wj in zip(k_names, w[i], strict=True))
        output = ", ".join(f"{c} {o:.2f}" for c, o in zip(names, out[i], strict=True))
        return "weights over the keys, then the output", f"{weights}; {output}"

    return Explorer("query", list(range(n_q)), q_names, fig, update, index,
                    "Attention weights of the selected query and its output vector",
                    dynamic=[box, *bars, *texts, title], describe=describe)
