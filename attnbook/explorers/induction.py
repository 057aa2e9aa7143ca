"""The induction explorer (chapter 16): the induction stripe appearing in training."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.patches import Rectangle

from .. import plots
from .._checks import (
    as_real,
    index_into,
    labels_for,
    positive_int,
    require_between,
    require_finite,
    require_ndim,
)
from .explorer import Explorer
from .training import STEP_COLOUR, over_steps


def explore_induction(steps, weights, half: int, scores, losses,
                      labels: Sequence[str] | None = None, index: int = -1,
                      title: str = "induction head") -> Explorer:
    """Slide over saved checkpoints: a head's weights on one repeated sequence.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    The heatmap outlines the cells an induction head looks at, query q on
    key q - half + 1 for every query of the second half; beside it, the
    head's induction score and the loss on the second half at every
    checkpoint, with the current one marked.

    Parameters
    ----------
    steps : array_like, shape (n_checkpoints,)
        The training steps of the checkpoints, whole numbers >= 0.
    weights : array_like, shape (n_checkpoints, n, n)
        The head's weights on one sequence of two halves at each checkpoint.
    half : int
        Tokens in each half; half < n <= 2 half.
    scores : array_like, shape (n_checkpoints,)
        The head's induction score at each checkpoint.
    losses : array_like, shape (n_checkpoints,)
        The loss on the second half at each checkpoint.
    labels : sequence of str, length n, optional
        Names of the positions (the tokens), for both axes.
    index : int
        The checkpoint shown first, in [-n_checkpoints, n_checkpoints - 1]
        (default -1: the last).
    title : str
        The heatmap's title.

    Returns
    -------
    Explorer
        The slider over the checkpoints.
    """
    steps, w = as_real(steps, "steps"), as_real(weights, "weights")
    require_ndim(steps, "steps", (1,), "(n_checkpoints,)")
    require_ndim(w, "weights", (3,), "(n_checkpoints, n, n)")
    if steps.size == 0:
        raise ValueError(f"steps must not be empty; got shape {steps.shape}")
    require_finite(steps, "steps")
    if (steps < 0).any() or (steps != np.round(steps)).any():
        raise ValueError(f"steps must be whole numbers >= 0; got {steps}")
    half = positive_int(half, "half")
    n_q = w.shape[1]
    if w.shape[0] != steps.size or w.shape[2] != n_q or not half < n_q <= 2 * half:
        raise ValueError(f"weights must have shape (n_checkpoints, n, n) = ({steps.size}, n, "
                         f"n) with half < n <= 2 half = {2 * half}; got {w.shape}")
    require_finite(w, "weights")
    require_between(w, "weights", 0, 1, "attention weights")
    curves = []
    for name, a in (("scores", scores), ("losses", losses)):
        a = as_real(a, name)
        if a.shape != steps.shape:
            raise ValueError(f"{name} must have one value per checkpoint: expected shape "
                             f"{steps.shape}; got {a.shape}")
        require_finite(a, name)
        curves.append(a)
    scores, losses = curves
    require_between(scores, "scores", 0, 1, "induction scores (an average of weights)")
    require_between(losses, "losses", 0, np.inf, "cross-entropy losses")
    labels_for(labels, "labels", n_q, strings=True)
    index = index_into(index, steps.size, negative=True)
    fig, (ax_w, ax_c) = plots.new_figure(10.0, 4.6, ncols=2,
                                         gridspec_kw={"width_ratios": [5, 4]})
    plots.heatmap(w[index], ax=ax_w, row_labels=labels, col_labels=labels, title=title,
                  annotate=False, xlabel="key (position:token)", ylabel="query (position:token)")
    im = ax_w.images[0]
    for q in range(half, n_q):
        ax_w.add_patch(Rectangle((q - half + 1 - 0.5, q - 0.5), 1, 1, fill=False,
                                 ec="#d95f02", lw=1.2))
    ax_c.plot(steps, losses, color="#2166ac", lw=1.5, label="loss on the second half")
    ax_c.set_xlabel("training step")
    ax_c.set_ylabel("loss on the second half", color="#2166ac")
    ax_c.set_ylim(0, max(float(losses.max()) * 1.05, 1e-9))
    ax_s = ax_c.twinx()
    ax_s.plot(steps, scores, color="#1b9e77", lw=1.5, label="induction score")
    ax_s.set_ylabel("induction score", color="#1b9e77")
    ax_s.set_ylim(0, 1)
    marker = ax_c.axvline(steps[index], color=STEP_COLOUR, lw=1.5)
    dot_l, = ax_c.plot([], [], "o", color="#2166ac", ms=5)
    dot_s, = ax_s.plot([], [], "o", color="#1b9e77", ms=5)
    caption = fig.suptitle("")

    def show(i: int, s: int) -> None:
        dot_l.set_data([s], [losses[i]])
        dot_s.set_data([s], [scores[i]])
        caption.set_text(f"after {s} training steps: induction score {scores[i]:.2f}, "
                         f"loss on the second half {losses[i]:.2f}")

    return over_steps(fig, steps, index, im, w, marker, show, [dot_l, dot_s, caption],
                      "The attention weights of one head on a sequence whose second half "
                      "repeats its first, with the induction stripe outlined, beside its "
                      "induction score and the loss on the second half over training")
