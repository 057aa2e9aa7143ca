"""Explorers: one slider over one figure, live in Jupyter and static in the book.

Each `explore_*` function returns an `Explorer`. Displayed in a live kernel
(JupyterLab, VS Code, Colab) it is an ipywidgets slider whose callback
updates the artists of one matplotlib figure in place and re-renders it. In
the HTML book the same output is a kernel-free slider over frames rendered
when the book was built: an <input type="range"> (keyboard-operable) that
swaps PNG frames, with the current value beside it. `Explorer.to_html`
writes the frames inline as data URIs, so its output stands alone; the
book's build then moves each frame to a PNG file in the book's
``_images/`` folder and links it from the page (tools/sphinx/frames.py).
The slider needs no network and works over file://.

Without ipywidgets, a notebook shows the current frame as a still picture.

One explorer per module: `dk` (chapter 5), `temperature` (chapter 4),
`attention` (chapter 7), `bandwidth` (chapter 8), `rope_offset` (chapter 11),
`training` (chapter 13), `heads` (chapter 15) and `induction` (chapter 16); the
`Explorer` class is in `explorer`, and the frames' PNG encoding (at 72 dpi) in `png`.
"""
from __future__ import annotations

from .attention import explore_attention
from .bandwidth import explore_bandwidth
from .dk import explore_dk
from .explorer import Explorer
from .heads import explore_heads
from .induction import explore_induction
from .rope_offset import explore_rope_offset
from .temperature import explore_temperature
from .training import explore_training

__all__ = ["Explorer", "explore_dk", "explore_temperature", "explore_attention",
           "explore_bandwidth", "explore_rope_offset", "explore_training", "explore_heads",
           "explore_induction"]


def __dir__() -> list[str]:
    return sorted(__all__)
