"""Figures for the book: annotated attention heatmaps and grids of them.

Rows are queries, columns are keys. Functions draw on an `ax` you pass, or
make their own figure and return it; none of them touches global rcParams.
Figures get an opaque white background so they read the same on the book's
light and dark themes.

Figures are plain `matplotlib.figure.Figure` objects, not pyplot figures, so
there is no hidden list of open figures. A figure a cell returns is shown
as a picture in Jupyter, with or without ``%matplotlib inline``.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from ._checks import (
    as_real,
    finite_number,
    flag,
    labels_for,
    positive_int,
    positive_number,
    require_finite,
    require_ndim,
)
from ._png import palette_png, quantized_png  # noqa: F401  (plots.palette_png)
from ._word_labels import place_labels

__all__ = ["heatmap", "heatmap_grid", "new_figure", "word_scatter", "CMAP", "GROUP_COLORS"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: Colour-blind-safe qualitative colours (Okabe-Ito) for word groups.
GROUP_COLORS = ("#E69F00", "#009E73", "#0072B2", "#CC79A7", "#D55E00", "#56B4E9")

#: Perceptually uniform, colour-blind-safe sequential colormap.
CMAP = "cividis"
#: Matrices with at most this many cells get their values written in.
ANNOTATE_MAX_CELLS = 144
#: Above this many cells, annotate=True is refused (one text artist per cell).
ANNOTATE_LIMIT = 10_000
#: A labelled axis with more rows or columns than this gets every step-th label.
MAX_TICKS = 30
#: An unlabelled axis with more rows or columns than this gets a few round indices.
MAX_INDEX_TICKS = 12


DPI = 110
# Set (to "1") by the book's build (tools/build/book.py, tests/nbrun.py): figures
# are written for the static HTML book, explorers render every frame.
STATIC_ENV = "ATTNBOOK_STATIC"


def static_build() -> bool:
    """True in the book's build: ``ATTNBOOK_STATIC`` is set and not "0"."""
    return os.environ.get(STATIC_ENV, "") not in ("", "0")


def _register_ipython_png() -> None:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is optional
        return
    shell = get_ipython()
    if shell is None:
        return
    png = shell.display_formatter.formatters["image/png"]
    bundle = shell.display_formatter.mimebundle_formatter
    if Figure in png.type_printers or Figure in bundle.type_printers:
        return
    if static_build():
        from . import figure_text

        def render(fig):
            return palette_png(fig, DPI, bbox_inches="tight")
        # With the build's catalogue, the bundle holds both editions' PNGs.
        # Only one of the two formatters is registered: IPython asks a
        # registered image/png formatter even when the bundle already has
        # that type, which drew every figure a third time.
        if figure_text.catalogue() is not None:
            bundle.for_type(
                Figure, lambda fig, include=None, exclude=None:
                figure_text.figure_bundle(fig, render))
        else:
            png.for_type(Figure, render)
        return
    from IPython.core.pylabtools import print_figure
    png.for_type(Figure, lambda fig: print_figure(fig, "png", dpi=DPI))


_register_ipython_png()


def new_figure(width: float = 4.8, height: float = 3.6, **subplots_kw):
    """A matplotlib Figure (not registered with pyplot) and its axes.

    Taught in :doc:`/chapters/03_word_vectors` (chapter 3).

    Using Figure directly means no global state: nothing to close, nothing
    shared between cells. Jupyter displays a returned Figure as usual.

    Parameters
    ----------
    width, height : float, default 4.8 and 3.6
        Size in inches, finite numbers > 0.
    **subplots_kw
        Passed to ``Figure.subplots`` (``nrows``, ``ncols``, ...).

    Returns
    -------
    fig : matplotlib.figure.Figure
    ax : matplotlib.axes.Axes or ndarray of Axes
    """
    width, height = positive_number(width, "width"), positive_number(height, "height")
    for key in sorted({"nrows", "ncols"} & subplots_kw.keys()):
        subplots_kw[key] = positive_int(subplots_kw[key], key)
    fig = Figure(figsize=(width, height), dpi=DPI, facecolor="white", layout="constrained")
    axes = fig.subplots(**subplots_kw)
    return fig, axes


def heatmap(weights, ax=None, row_labels: Sequence[str] | None = None,
            col_labels: Sequence[str] | None = None, title: str | None = None,
            xlabel: str = "keys", ylabel: str = "queries", vmin: float | None = 0.0,
            vmax: float | None = 1.0, annotate: bool | None = None, fmt: str = "{:.2f}",
            colorbar: bool = True, cmap: str = CMAP):
    """Draw a (n_q, n_k) matrix as an annotated heatmap.

    Taught in :doc:`/chapters/01_looking_things_up` (chapter 1).

    An axis longer than 30 cells (the constant MAX_TICKS) gets at most 30
    evenly spaced ticks (each with its own row's or column's label), instead
    of one unreadable label per row and column.

    Parameters
    ----------
    weights : array_like, shape (n_q, n_k) or (n_k,)
        A 1-d array is drawn as one row.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when None.
    row_labels, col_labels : sequence of str, optional
        Tick labels (token names) for queries and keys.
    title, xlabel, ylabel : str, optional
    vmin, vmax : float or None, default 0.0 and 1.0
        Colour range, finite numbers with vmin < vmax (a bool is refused);
        the default [0, 1] suits attention weights. Pass None to fit the
        data (for raw scores); a bound that is given is always kept.
    annotate : bool, optional
        Write each value in its cell; default: when there are at most
        144 cells (the constant ANNOTATE_MAX_CELLS); more than 10,000 cells
        (ANNOTATE_LIMIT) is refused.
    fmt : str, default "{:.2f}"
        Format of the written values.
    colorbar : bool, default True
    cmap : str, default "cividis"

    Returns
    -------
    matplotlib.figure.Figure
        A new one when `ax` is None, else ax's.
    """
    w = as_real(weights, "weights")
    require_ndim(w, "weights", (1, 2), "(n_q, n_k) or (n_k,)")
    w = np.atleast_2d(w)
    n_q, n_k = w.shape
    if w.size == 0:
        raise ValueError(f"weights must have at least one row and one column; got shape "
                         f"{w.shape}")
    for name, labels, n in (("row_labels", row_labels, n_q), ("col_labels", col_labels, n_k)):
        labels_for(labels, name, None)
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} must have one label per {'row' if name[0] == 'r' else 'column'}"
                             f" of weights {w.shape}: expected {n}, got {len(labels)}")
    if ax is not None and not hasattr(ax, "imshow"):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    vmin, vmax = _bounds(vmin, vmax)
    for name, text in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name} must be a string or None, got {type(text).__name__} "
                            f"{text!r}")
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a format string like '{{:.2f}}', got "
                        f"{type(fmt).__name__} {fmt!r}")
    if not isinstance(cmap, str) or cmap not in matplotlib.colormaps:
        raise ValueError(f"cmap must be the name of a matplotlib colormap, e.g. 'cividis'; "
                         f"got {cmap!r}")
    colorbar = flag(colorbar, "colorbar")
    annotate = w.size <= ANNOTATE_MAX_CELLS if annotate is None else flag(annotate, "annotate")
    if annotate and w.size > ANNOTATE_LIMIT:
        raise ValueError(f"annotate=True writes one label per cell; weights {w.shape} has "
                         f"{w.size} cells, more than ANNOTATE_LIMIT = {ANNOTATE_LIMIT}")
    if annotate:
        try:
            fmt.format(0.5)
        except (ValueError, TypeError, IndexError, KeyError) as err:
            raise ValueError(f"fmt must format one float, like '{{:.2f}}'; got {fmt!r} "
                             f"({err})") from None
    if ax is None:
        width = min(1.6 + 0.62 * n_k + (0.9 if colorbar else 0), 9.0)
        height = min(1.3 + 0.5 * n_q, 7.0)
        fig, ax = new_figure(width, height)
    fig = ax.figure
    lo, hi = _colour_range(w[np.isfinite(w)], vmin, vmax)
    image = ax.imshow(w, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", interpolation="nearest")
    ax.set_xticks(*_ticks(n_k, col_labels))
    ax.set_yticks(*_ticks(n_q, row_labels))
    longest = max((len(str(c)) for c in col_labels), default=0) if col_labels is not None else 0
    if longest > 8 or (n_k > 6 and longest > 3):        # rotate only when labels would collide
        ax.tick_params(axis="x", labelrotation=45)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if annotate:
        colormap = matplotlib.colormaps[cmap]
        for i in range(n_q):
            for j in range(n_k):
                value = w[i, j]
                shade = colormap((value - lo) / (hi - lo)) if np.isfinite(value) else (1, 1, 1, 1)
                luminance = 0.2126 * shade[0] + 0.7152 * shade[1] + 0.0722 * shade[2]
                ax.text(j, i, fmt.format(value), ha="center", va="center", fontsize=9,
                        color="black" if luminance > 0.5 else "white")
    if colorbar:
        fig.colorbar(image, ax=ax, shrink=0.9)
    return fig


def _bounds(vmin, vmax) -> tuple[float | None, float | None]:
    """vmin and vmax checked: each None or a finite real number (a bool is refused,
    it would draw from 1), and vmin < vmax when both are given."""
    vmin = None if vmin is None else finite_number(vmin, "vmin")
    vmax = None if vmax is None else finite_number(vmax, "vmax")
    if vmin is not None and vmax is not None and vmin >= vmax:
        raise ValueError(f"vmin must be less than vmax; got vmin = {vmin}, vmax = {vmax}")
    return vmin, vmax


def _colour_range(finite: np.ndarray, vmin, vmax) -> tuple[float, float]:
    """The colour range: a bound given is kept, a bound that is None fits the
    data's finite values (an empty or constant range is widened by 1 on the
    side that was not given, so a given vmin or vmax is never replaced)."""
    lo = vmin if vmin is not None else float(finite.min()) if finite.size else 0.0
    hi = vmax if vmax is not None else float(finite.max()) if finite.size else 1.0
    if hi <= lo:
        if vmax is None:
            hi = lo + 1.0
        else:                                   # data all above a given vmax
            lo = hi - 1.0
    if not np.isfinite(hi - lo):
        raise ValueError(f"weights span [{lo:g}, {hi:g}], a colour range wider than "
                         f"float64 holds; give vmin and vmax, or rescale the weights")
    return lo, hi


def _ticks(n: int, labels):
    """Tick positions and labels for an axis of n cells: all of them, or every
    step-th (one label per row of 4096 costs seconds). Labelled axes keep up to
    MAX_TICKS labels; bare indices step by a round number (1, 2, 5, 10, 20, ...)
    to at most MAX_INDEX_TICKS ticks."""
    if labels is not None:
        step = 1 if n <= MAX_TICKS else -(-n // MAX_TICKS)
    else:
        step = next(s for k in range(20) for s in (10 ** k, 2 * 10 ** k, 5 * 10 ** k)
                    if -(-n // s) <= MAX_INDEX_TICKS)
    positions = range(0, n, step)
    names = list(positions) if labels is None else [labels[i] for i in positions]
    return positions, names


def heatmap_grid(matrices, titles: Sequence[str] | None = None,
                 row_labels: Sequence[str] | None = None,
                 col_labels: Sequence[str] | None = None, ncols: int | None = None,
                 vmin: float | None = 0.0, vmax: float | None = 1.0, **heatmap_kw):
    """Several heatmaps side by side with one shared colour bar.

    Taught in :doc:`/chapters/07_self_attention` (chapter 7).

    Parameters
    ----------
    matrices : sequence of array_like, each (n_q, n_k), or array_like (m, n_q, n_k)
    titles : sequence of str, optional
        One per matrix.
    row_labels, col_labels : sequence of str, optional
        Shared by all the matrices.
    ncols : int, optional
        Heatmaps per row (a positive integer); default: all in one row.
    vmin, vmax : float or None, default 0.0 and 1.0
        The shared colour range.
    **heatmap_kw
        Passed to `heatmap`.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if matrices is None or isinstance(matrices, (str, bytes)) or not hasattr(
            matrices, "__iter__") or (isinstance(matrices, np.ndarray) and matrices.ndim == 0):
        raise TypeError(f"matrices must be a sequence of (n_q, n_k) arrays or an array "
                        f"(m, n_q, n_k); got {type(matrices).__name__}")
    mats = []
    for i, m in enumerate(matrices):
        m = as_real(m, f"matrices[{i}]")
        require_ndim(m, f"matrices[{i}]", (1, 2), "(n_q, n_k) or (n_k,)")
        if m.size == 0:
            raise ValueError(f"matrices[{i}] must have at least one row and one column; got "
                             f"shape {m.shape}")
        mats.append(np.atleast_2d(m))
    if not mats:
        raise ValueError("matrices must hold at least one matrix; got none")
    shapes = {m.shape for m in mats}
    if len(shapes) > 1:
        raise ValueError(f"matrices must all have one shape (they share labels and a layout); "
                         f"got shapes {[m.shape for m in mats]}")
    labels_for(titles, "titles", None, strings=True)
    if titles is not None and len(titles) != len(mats):
        raise ValueError(f"titles must have one entry per matrix: expected "
                         f"{len(mats)}, got {len(titles)}")
    ncols = len(mats) if ncols is None else positive_int(ncols, "ncols")
    nrows = -(-len(mats) // ncols)
    n_q, n_k = mats[0].shape
    vmin, vmax = _bounds(vmin, vmax)
    if vmin is None or vmax is None:
        finite = np.concatenate([m[np.isfinite(m)] for m in mats])
        if not finite.size:
            raise ValueError("matrices hold no finite value to fit the colour range to; pass "
                             "vmin and vmax")
        vmin, vmax = _colour_range(finite, vmin, vmax)
    fig, axes = new_figure(min(1.0 + ncols * (1.2 + 0.55 * n_k), 12.0),
                           min(0.8 + nrows * (1.0 + 0.45 * n_q), 9.0),
                           nrows=nrows, ncols=ncols, squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(mats):
            ax.set_visible(False)
            continue
        heatmap(mats[k], ax=ax, row_labels=row_labels, col_labels=col_labels,
                title=titles[k] if titles else None, vmin=vmin, vmax=vmax,
                colorbar=False, **heatmap_kw)
        if k % ncols:
            ax.set_ylabel("")
    fig.colorbar(axes.flat[0].images[0], ax=axes.ravel().tolist(), shrink=0.85)
    return fig


def word_scatter(vectors: dict, groups: dict | None = None, ax=None, arrows_from_origin=(),
                 title: str | None = None):
    """2-d word vectors as labelled points, coloured by group.

    Taught in :doc:`/chapters/03_word_vectors` (chapter 3).

    Parameters
    ----------
    vectors : dict
        {word: vector of shape (2,)}.
    groups : dict, optional
        {group name: words}.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when None.
    arrows_from_origin : sequence of str, default ()
        Words to draw as arrows from (0, 0).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(vectors, dict):
        raise TypeError(f"vectors must be a dict {{word: (2,) vector}}, got "
                        f"{type(vectors).__name__}")
    if not vectors:
        raise ValueError("vectors must hold at least one word; got an empty dict")
    for word, v in vectors.items():
        v = as_real(v, f"vectors[{word!r}]")
        if v.shape != (2,):
            raise ValueError(f"word_scatter draws 2-d vectors; {word!r} has shape {v.shape}")
        require_finite(v, f"vectors[{word!r}]")
    if groups is not None and not isinstance(groups, dict):
        raise TypeError(f"groups must be a dict {{group name: words}}, got "
                        f"{type(groups).__name__}")
    for what, words in [*((f"groups[{k!r}]", ws) for k, ws in (groups or {}).items()),
                        ("arrows_from_origin", arrows_from_origin)]:
        if isinstance(words, str) or not hasattr(words, "__iter__"):
            raise TypeError(f"{what} must be a sequence of words, got "
                            f"{type(words).__name__} {words!r}")
        if what != "arrows_from_origin" and not len(list(words)):
            raise ValueError(f"{what} must name at least one word; got none")
        missing = [w for w in words if w not in vectors]
        if missing:
            raise ValueError(f"{what} names words that vectors lacks: {missing}")
    if ax is None:
        _, ax = new_figure(5.2, 4.6)
    fig = ax.figure
    groups = groups or {"words": tuple(vectors)}
    for k, (name, words) in enumerate(groups.items()):
        pts = np.array([vectors[w] for w in words if w in vectors])
        ax.scatter(pts[:, 0], pts[:, 1], s=36, color=GROUP_COLORS[k % len(GROUP_COLORS)],
                   label=name, zorder=3)
    for word in arrows_from_origin:
        v = vectors[word]
        ax.annotate("", xy=v, xytext=(0, 0),
                    arrowprops={"arrowstyle": "->", "color": "0.35", "lw": 1.2})
    ax.axhline(0, color="0.8", lw=0.8, zorder=0)
    ax.axvline(0, color="0.8", lw=0.8, zorder=0)
    ax.set_aspect("equal", adjustable="datalim")
    place_labels(ax, vectors, arrows_from_origin)
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    if len(groups) > 1:
        ax.legend(fontsize=8, loc="best")
    if title:
        ax.set_title(title)
    return fig
