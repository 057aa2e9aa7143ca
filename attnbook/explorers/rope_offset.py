"""The RoPE offset explorer (chapter 11): scores that depend on the offset only."""
from __future__ import annotations

import numpy as np

from .. import plots
from .._checks_explorers import rope_offset_args
from ..positions import rotate, sinusoidal_positions
from .explorer import Explorer


def explore_rope_offset(d: int = 16, max_offset: int = 8, n_positions: int = 16,
                        base: float = 10000.0, seed: int = 0, index: int | None = None
                        ) -> Explorer:
    """Slide the offset j - i between a query at position i and a key at position j.

    Taught in :doc:`/chapters/11_positions` (chapter 11). One query q and
    one key k (N(0, 1) entries of width d, drawn from
    ``np.random.default_rng(seed)``) are placed at every pair of positions:
    with RoPE the score is rotate(q, i) · rotate(k, j) / √d, with added
    sinusoids it is (q + PE[i]) · (k + PE[j]) / √d. Left, the score against
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
        How many query positions i (from max_offset on).
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
    d, max_offset, n_positions, base, seed, index = rope_offset_args(
        d, max_offset, n_positions, base, seed, index)
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, d))                                       # (d,), (d,)
    offsets = list(range(-max_offset, max_offset + 1))
    pos = np.arange(max_offset, max_offset + n_positions)                  # query positions
    pe = sinusoidal_positions(n_positions + 2 * max_offset, d, base)     # (n_pos + 2 max_off, d)
    q_rope = rotate(np.tile(q, (n_positions, 1)), pos, base)               # (n_positions, d)
    q_added = q + pe[pos]                                                  # (n_positions, d)
    rope, added = [], []                                                 # (n_offsets, n_positions)
    for off in offsets:
        k_rope = rotate(np.tile(k, (n_positions, 1)), pos + off, base)     # (n_positions, d)
        rope.append(np.sum(q_rope * k_rope, axis=1) / np.sqrt(d))
        added.append(np.sum(q_added * (k + pe[pos + off]), axis=1) / np.sqrt(d))
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
    # half a step of margin, so that the line at either end is not hidden by the spine
    ax_off.set_xlim(offsets[0] - 0.5, offsets[-1] + 0.5)
    ax_off.set_xlabel("offset j − i (key position minus query position)")
    ax_off.set_ylabel("score / √d")
    ax_off.set_title(f"one curve per query position i ({n_positions} of them)", fontsize=10)
    ax_off.set_ylim(lo - pad, hi + pad)
    ax_off.legend(fontsize=8, loc="upper left")
    marker = ax_off.axvline(offsets[0], color="black", lw=1)
    (line_rope,) = ax_pos.plot(pos, rope[0], "o-", color="#1b9e77", ms=3, label="RoPE")
    (line_added,) = ax_pos.plot(pos, added[0], "s-", color="#d95f02", ms=3,
                                label="added sinusoids")
    ax_pos.set_xlabel("query position i")
    ax_pos.set_ylabel("score / √d")
    # headroom above every score for the legend, so it never covers a point
    ax_pos.set_ylim(lo - pad, hi + pad + 0.3 * (hi - lo + 2 * pad))
    ax_pos.legend(fontsize=8, loc="upper left", ncols=2)
    title = ax_pos.set_title("", fontsize=10)

    def update(frame: int) -> None:
        marker.set_xdata([offsets[frame], offsets[frame]])
        line_rope.set_ydata(rope[frame])
        line_added.set_ydata(added[frame])
        title.set_text(f"offset = {offsets[frame]}: spread over i {np.ptp(rope[frame]):.1e} (RoPE), "
                       f"{np.ptp(added[frame]):.2f} (added)")

    return Explorer("offset", offsets, [str(o) for o in offsets], fig, update, index,
                    "Left: the attention score of one query and one key against their "
                    "offset, one curve per query position, for rotary embeddings (the "
                    "curves coincide) and for added sinusoidal encodings (a different curve "
                    "at each position), a vertical line at the chosen offset. Right: the "
                    "score at that offset for each query position, flat for rotary "
                    "embeddings and varying for added sinusoids",
                    dynamic=[marker, line_rope, line_added, title])
