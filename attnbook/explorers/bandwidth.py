"""The bandwidth explorer (chapter 8): Nadaraya–Watson from wiggly to flat."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.colors import LogNorm

from .. import plots
from .._checks import (
    as_real,
    index_into,
    positive_number,
    require_finite,
    require_ndim,
    sequence,
)
from ..kernel import nadaraya_watson
from .explorer import Explorer

#: The smallest weight the colour scale tells apart; smaller ones, down to
#: 0, share its colour.
WEIGHT_FLOOR = 1e-3


def explore_bandwidth(x_train, y_train, x_test, y_test=None,
                      bandwidths: Sequence[float] = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0,
                                                     1.5, 2.0, 3.0, 5.0),
                      index: int | None = None) -> Explorer:
    """Nadaraya–Watson with a Gaussian kernel: slide the bandwidth.

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8). Left, the
    training points, the true curve (if y_test is given) and the fit;
    right, the weights (test inputs x training inputs, both sorted), on
    one colour scale for every frame: logarithmic from WEIGHT_FLOOR to 1,
    so that a frame's colours compare with another's (uniform weights at a
    large bandwidth look faint, not as bright as one-hot ones).

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
    bandwidths = [positive_number(h, f"bandwidths[{i}]")
                  for i, h in enumerate(sequence(bandwidths, "bandwidths", "numbers > 0"))]
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
    plots.heatmap(np.maximum(fits[0][1], WEIGHT_FLOOR), ax=ax_w,
                  title="weights (log colour scale)", annotate=False,
                  xlabel="training inputs", ylabel="test inputs", colorbar=False)
    ax_w.set_xticks([])
    ax_w.set_yticks([])
    im = ax_w.images[0]
    im.set_norm(LogNorm(vmin=WEIGHT_FLOOR, vmax=1.0))
    bar = fig.colorbar(im, ax=ax_w)
    bar.set_label(f"weight (bottom colour: {WEIGHT_FLOOR:g} or less)")
    title = fig.suptitle("")

    def update(i: int) -> None:
        y_hat, w = fits[i]
        line.set_ydata(y_hat)
        im.set_data(np.maximum(w, WEIGHT_FLOOR))
        mse = "" if y_test is None else \
            f", MSE against the truth {np.mean((y_hat - y_test) ** 2):.3f}"
        title.set_text(f"bandwidth h = {bandwidths[i]:g}{mse}")

    return Explorer("bandwidth", list(bandwidths), [f"{h:g}" for h in bandwidths], fig,
                    update, index, "Nadaraya–Watson fit and weights as the bandwidth changes",
                    dynamic=[line, im, title])
