"""The temperature explorer (chapter 4): softmax from lookup to average."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import plots
from .._checks import (
    as_real,
    index_into,
    labels_for,
    positive_number,
    require_finite,
    require_ndim,
    sequence,
)
from ..core import softmax
from .explorer import Explorer


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
    temps = [positive_number(t, f"temperatures[{i}]") for i, t in enumerate(sequence(
        temperatures if temperatures is not None else
        (0.01, 0.03, 0.1, 0.3, 0.5, 1, 2, 3, 10, 30, 100), "temperatures", "numbers > 0"))]
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
