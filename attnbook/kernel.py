"""Nadaraya–Watson kernel regression, read as attention over 1-D inputs.

Queries are test inputs x, keys are training inputs x_i, values are training
targets y_i. With the Gaussian kernel the weights are
softmax(-(x - x_i)**2 / (2 * bandwidth**2)) over i, so the prediction is
attention with those scores.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._checks import as_real, first_index, generator, positive_number, require_finite, require_ndim
from .core import Attention, softmax

__all__ = ["gaussian_scores", "nadaraya_watson", "toy_regression_data", "toy_function"]


def __dir__() -> list[str]:
    return sorted(__all__)


def gaussian_scores(x_query, x_keys, bandwidth: float = 1.0) -> np.ndarray:
    """Attention scores -(x - x_i)² / (2·bandwidth²) of the Gaussian kernel.

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8).

    Parameters
    ----------
    x_query : array_like, shape (n_q,), or a scalar
    x_keys : array_like, shape (n_k,) or (n_q, n_k)
        Keys shared by every query, or keys per query (leave-one-out training
        uses this).
    bandwidth : float, default 1.0
        A finite number > 0.

    Returns
    -------
    scores : ndarray, shape (n_q, n_k), or (n_k,) for a scalar query

    Raises
    ------
    ValueError
        If a score is too large for float64 (``|x - x_i|`` / bandwidth beyond about
        1e154); `nadaraya_watson` shifts the scores first and has no such limit.

    Notes
    -----
    The scores depend only on (x - x_i) / bandwidth, which is computed from
    the inputs multiplied by a power of two (exact), so subnormal inputs
    keep every bit and x - x_i cannot overflow.
    """
    xq, xk = _check_inputs(x_query, x_keys, None)
    h = positive_number(bandwidth, "bandwidth")
    d, h_scaled = _distances(xq, xk, h)                       # (n_q, n_k), exact
    with np.errstate(over="ignore"):
        scores = -(d / h_scaled) ** 2 / 2                     # (n_q, n_k)
    if not np.isfinite(scores).all():
        i, j = first_index(~np.isfinite(scores))
        raise ValueError(f"bandwidth = {h:g} is too small for these inputs: the score of "
                         f"x_query[{i}] = {xq[i]:g} and key {j} = {xk[i, j]:g}, "
                         f"-(x - x_i)² / (2·bandwidth²), overflows float64; use a larger "
                         f"bandwidth, or nadaraya_watson, which shifts the scores first")
    return _squeeze(scores, x_query)


def nadaraya_watson(x_query, x_keys, y_values, bandwidth: float = 1.0):
    """Gaussian-kernel (Nadaraya–Watson) regression.

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8).

    The result equals softmax attention with `gaussian_scores` as scores. It
    is computed in the log domain from the scores shifted by the nearest
    key's, (d² - d_min²) / (2·bandwidth²) written as a product that cannot
    overflow to NaN, so any bandwidth works: a tiny one (even 1e-300) gives
    the nearest neighbour (the mean of tied nearest keys), a huge one the mean.
    The inputs are first multiplied by a power of two, which is exact, so
    subnormal inputs (below 2.2e-308) keep every bit.

    Parameters
    ----------
    x_query : array_like, shape (n_q,), or a scalar
    x_keys : array_like, shape (n_k,) or (n_q, n_k)
        Shared keys, or keys per query.
    y_values : array_like, shape of x_keys
        One value per key.
    bandwidth : float, default 1.0
        A finite number > 0.

    Returns
    -------
    Attention
        The named pair ``(output, weights)`` of `attnbook.core.Attention`,
        with y_hat as the output:
    y_hat : ndarray, shape (n_q,)
        A scalar for a scalar query.
    weights : ndarray, shape (n_q, n_k)
        Each row sums to 1; (n_k,) for a scalar query.
    """
    xq, xk = _check_inputs(x_query, x_keys, y_values)
    y = np.broadcast_to(as_real(y_values, "y_values"), xk.shape)
    h = positive_number(bandwidth, "bandwidth")
    d, h_scaled = _distances(xq, xk, h)                       # (n_q, n_k), |x - x_i|
    d_min = d.min(axis=1, keepdims=True)                      # (n_q, 1), the nearest key
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):  # too far: inf
        shift = ((d - d_min) / h_scaled) * ((d + d_min) / h_scaled) / 2  # (n_q, n_k) >= 0
    shift = np.where(d == d_min, 0.0, shift)                  # the nearest keys score 0
    weights = softmax(-shift, axis=1)                         # (n_q, n_k)
    with np.errstate(over="ignore", invalid="ignore"):
        y_hat = np.sum(weights * y, axis=1)                   # (n_q,)
    if not np.isfinite(y_hat).all():
        raise ValueError(f"the prediction overflows float64: a weighted average of "
                         f"y_values (largest |value| {np.abs(y).max():g}) is not finite; "
                         f"rescale y_values")
    return Attention(_squeeze(y_hat, x_query), _squeeze(weights, x_query))


def _distances(xq: np.ndarray, xk: np.ndarray, h: float) -> tuple[np.ndarray, float]:
    """|x - x_i| for every query and key, (n_q, n_k), and the bandwidth, both in
    units of 2**-k: the inputs are multiplied by the power of two 2**k that
    brings the largest of them just below 2**1021. Multiplying by a power of
    two is exact, so a subnormal input keeps every bit (halving it would lose
    one, and 5e-324 / 2 is 0) and the difference of two inputs cannot
    overflow; the scores, which depend only on (x - x_i) / bandwidth, are
    unchanged."""
    largest = max(float(np.abs(xq).max()), float(np.abs(xk).max()), h)
    k = 1021 - int(np.frexp(largest)[1])                     # largest * 2**k < 2**1021
    xq, xk, h = np.ldexp(xq, k), np.ldexp(xk, k), float(np.ldexp(h, k))
    return np.abs(xq[:, None] - xk), h                        # (n_q, n_k), < 2**1022


def _check_inputs(x_query, x_keys, y_values):
    xq = as_real(x_query, "x_query")
    require_ndim(xq, "x_query", (0, 1), "(n_q,) or a scalar")
    xq = np.atleast_1d(xq)
    xk = as_real(x_keys, "x_keys")
    require_ndim(xk, "x_keys", (1, 2), "(n_k,) or (n_q, n_k)")
    if xk.shape[-1] == 0:
        raise ValueError(f"x_keys must hold at least one key; got shape {xk.shape}")
    if xk.ndim == 2 and xk.shape[0] != xq.shape[0]:
        raise ValueError(f"x_keys with one row of keys per query must have shape "
                         f"(n_q, n_k) = ({xq.shape[0]}, n_k); got {xk.shape}")
    if y_values is not None:
        y = as_real(y_values, "y_values")
        if y.shape != xk.shape and not (y.ndim == 1 and y.shape == xk.shape[-1:]):
            raise ValueError(f"y_values must have one value per key, shape "
                             f"{xk.shape}; got shape {y.shape}")
        require_finite(y, "y_values")
    require_finite(xq, "x_query")
    require_finite(xk, "x_keys")
    return xq, np.broadcast_to(xk, (xq.shape[0], xk.shape[-1]))


def _squeeze(a: np.ndarray, x_query):
    return a[0] if np.ndim(x_query) == 0 else a


def toy_function(x) -> np.ndarray:
    """The noiseless curve of the kernel-regression chapter: 2·sin(x) + x^0.8.

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8).

    Parameters
    ----------
    x : array_like, any shape
        Real numbers >= 0 (x^0.8 needs them).

    Returns
    -------
    ndarray, shape of x
    """
    x = as_real(x, "x")
    require_finite(x, "x")
    if (x < 0).any():
        raise ValueError("x must be >= 0 (x**0.8 is not real for negative x); "
                         f"got min {x.min()}")
    return 2 * np.sin(x) + x ** 0.8


def toy_regression_data(rng: np.random.Generator, n_train: int = 50,
                        n_test: int = 50, x_max: float = 5.0, noise: float = 0.5):
    """Training and test data for Nadaraya–Watson, as in d2l v0.17.6 and d2l-zh v2.0.0.

    (d2l 1.0 uses other data: 2 sin x + x, unit-variance noise, 40 points.)

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8).

    Parameters
    ----------
    rng : numpy.random.Generator
        For instance ``np.random.default_rng(seed)``; nothing global is seeded.
    n_train : int, default 50
        Training points: sorted draws from Uniform(0, x_max).
    n_test : int, default 50
        Test points, evenly spaced in [0, x_max).
    x_max : float, default 5.0
    noise : float, default 0.5
        Standard deviation of the noise ε ~ N(0, noise²) on the training targets.

    Returns
    -------
    x_train, y_train : ndarray
        1-d, n_train entries each; ``y_train = toy_function(x_train) + ε``.
    x_test, y_test : ndarray
        1-d, n_test entries each; ``y_test = toy_function(x_test)``, noiseless: the curve a good fit
        should follow.
    """
    rng = generator(rng)
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"{name} must be a positive integer, got {n!r}")
    x_max = positive_number(x_max, "x_max")
    if isinstance(noise, (bool, np.bool_)) or not isinstance(noise, numbers.Real):
        raise TypeError(f"noise must be a real number >= 0, got {type(noise).__name__} "
                        f"{noise!r}")
    noise = float(noise)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise}")
    x_train = np.sort(rng.uniform(0.0, x_max, size=n_train))
    y_train = toy_function(x_train) + rng.normal(0.0, noise, size=n_train)
    x_test = np.arange(n_test) * (x_max / n_test)
    return x_train, y_train, x_test, toy_function(x_test)
