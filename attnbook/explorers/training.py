"""The training explorer (chapter 13): the attention pattern forming."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import plots
from .._checks_explorers import training_args
from .explorer import Explorer


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
    marker = ax_loss.axvline(steps[index], color=STEP_COLOUR, lw=1.5)
    dot, = ax_loss.plot([], [], "o", color=STEP_COLOUR, ms=5)
    caption = fig.suptitle("")

    def show(i: int, s: int) -> None:
        at = min(s, len(losses) - 1)
        dot.set_data([at], [losses[at]])
        caption.set_text(f"after {s} training steps")

    return over_steps(fig, steps, index, im, w, marker, show, [dot, caption],
                      "Attention weights of a probe input at each recorded training step, "
                      "beside the training loss curve with that step marked")


#: The line (and dot) that marks the slider's step on a training curve.
STEP_COLOUR = "#d95f02"


def over_steps(fig, steps, index: int, im, w, marker, show, dynamic: list,
               alt: str) -> Explorer:
    """An Explorer over recorded training steps, the frame for step i showing
    w[i] in the image `im` and the vertical line `marker` at that step;
    ``show(i, step)`` draws the rest, on the artists in `dynamic`."""
    def update(i: int) -> None:
        im.set_data(w[i])
        s = int(steps[i])
        marker.set_xdata([s, s])
        show(i, s)

    return Explorer("step", [int(s) for s in steps], [str(int(s)) for s in steps], fig,
                    update, index, alt, dynamic=[im, marker, *dynamic])
