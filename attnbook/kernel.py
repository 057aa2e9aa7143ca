"""Nadaraya–Watson kernel regression, read as attention over 1-D inputs.

Queries are test inputs x, keys are training inputs x_i, values are training
targets y_i. With the Gaussian kernel the weights are
softmax(-(x - x_i)**2 / (2 * bandwidth**2)) over i, so the prediction is
attention with those scores.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_real, positive_number, require_finite, require_ndim
from .core import _softmax

__all__ = ["gaussian_scores", "nadaraya_watson", "toy_regression_data", "toy_function"]


def gaussian_scores(x_query, x_keys, bandwidth: float = 1.0) -> np.ndarray:
    """Attention scores -(x - x_i)² / (2·bandwidth²) of the Gaussian kernel.

    x_query: (n_q,) or a scalar; x_keys: (n_k,) shared by every query, or
    (n_q, n_k) keys per query (leave-one-out training uses this).
    returns scores (n_q, n_k), or (n_k,) for a scalar query.
    """
    xq, xk = _check_inputs(x_query, x_keys, None)
    h = positive_number(bandwidth, "bandwidth")
    return _squeeze(-(xq[:, None] - xk) ** 2 / (2 * h * h), x_query)


def nadaraya_watson(x_query, x_keys, y_values, bandwidth: float = 1.0):
    """Gaussian-kernel (Nadaraya–Watson) regression.

    x_query: (n_q,) or a scalar; x_keys and y_values: (n_k,), or (n_q, n_k)
    when every query has its own keys.
    returns (y_hat, weights): y_hat (n_q,) and weights (n_q, n_k), each row
    summing to 1 (a scalar query gives a scalar and (n_k,)).
    The result equals softmax attention with `gaussian_scores` as scores. It
    is computed from distances shifted by the nearest key's, so a tiny
    bandwidth gives the nearest neighbour (not 0/0) and a huge one the mean.
    """
    xq, xk = _check_inputs(x_query, x_keys, y_values)
    y = np.broadcast_to(as_real(y_values, "y_values"), xk.shape)
    h = positive_number(bandwidth, "bandwidth")
    d2 = (xq[:, None] - xk) ** 2                              # (n_q, n_k)
    d2 = d2 - d2.min(axis=-1, keepdims=True)                  # softmax is shift-invariant
    weights = _softmax(-d2 / (2 * h * h), axis=1)             # (n_q, n_k)
    y_hat = np.sum(weights * y, axis=1)                       # (n_q,)
    return _squeeze(y_hat, x_query), _squeeze(weights, x_query)


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
    """The noiseless curve of the kernel-regression chapter: 2·sin(x) + x^0.8."""
    x = as_real(x, "x")
    if (x < 0).any():
        raise ValueError("x must be >= 0 (x**0.8 is not real for negative x); "
                         f"got min {x.min()}")
    return 2 * np.sin(x) + x ** 0.8


def toy_regression_data(rng: np.random.Generator, n_train: int = 50,
                        n_test: int = 50, x_max: float = 5.0, noise: float = 0.5):
    """Training and test data for Nadaraya–Watson, as in the d2l chapter.

    rng: a numpy Generator (np.random.default_rng(seed)); nothing global is seeded.
    x_train: n_train sorted draws from Uniform(0, x_max);
    y_train = toy_function(x_train) + ε with ε ~ N(0, noise²);
    x_test: n_test evenly spaced points in [0, x_max); y_test = toy_function(x_test)
    (noiseless, the curve a good fit should follow).
    returns (x_train, y_train, x_test, y_test), each 1-D.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy Generator, e.g. "
                        f"np.random.default_rng(0); got {type(rng).__name__}")
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"{name} must be a positive integer, got {n!r}")
    x_max = positive_number(x_max, "x_max")
    noise = float(noise)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise}")
    x_train = np.sort(rng.uniform(0.0, x_max, size=n_train))
    y_train = toy_function(x_train) + rng.normal(0.0, noise, size=n_train)
    x_test = np.arange(n_test) * (x_max / n_test)
    return x_train, y_train, x_test, toy_function(x_test)
