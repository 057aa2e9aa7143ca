"""Measurements behind chapter 5: how score size and softmax saturation grow with d_k."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import as_distribution, finite_number, generator, positive_int, positive_ints
from .core import softmax

__all__ = ["softmax_jacobian", "entropy", "dk_statistics", "score_variance"]


def __dir__() -> list[str]:
    return sorted(__all__)


def softmax_jacobian(p) -> np.ndarray:
    """Jacobian of softmax at its output α (the argument p): ∂α_i/∂s_j = α_i (δ_ij − α_j).

    Taught in :doc:`/chapters/05_scaling` (chapter 5).

    Parameters
    ----------
    p : array_like, shape (..., n)
        Softmax outputs: each row >= 0 and summing to 1, or all 0 (a fully
        masked query, whose weights do not move: its Jacobian is 0).

    Returns
    -------
    ndarray, shape (..., n, n)
        diag(α) − α αᵀ, the derivative of the weights α with respect to
        the scores s.
    """
    p = as_distribution(p, "p")
    return _jacobian(p)


def _jacobian(p: np.ndarray) -> np.ndarray:
    """softmax_jacobian without checks."""
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def entropy(weights) -> np.ndarray:
    """Shannon entropy (nats) along the last axis; 0·log 0 counts as 0.

    Taught in :doc:`/chapters/05_scaling` (chapter 5).

    Uniform weights over n keys have the largest entropy, ln n; one-hot
    weights have 0.

    Parameters
    ----------
    weights : array_like, shape (..., n)
        Attention weights: each row >= 0 and summing to 1, or all 0 (a fully
        masked query, whose entropy is 0).

    Returns
    -------
    ndarray, shape (...)
        One entropy per row.
    """
    return _entropy(as_distribution(weights, "weights"))


def _entropy(w: np.ndarray) -> np.ndarray:
    """entropy without checks."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(w > 0, np.log(w), 0.0)
    return 0.0 - (w * logs).sum(axis=-1)                  # 0.0 -: no -0 for a one-hot row


def dk_statistics(d_ks: Sequence[int], rng: np.random.Generator, n_q: int = 200,
                  n_k: int = 16, mean: float = 0.0) -> dict:
    """For q, K with N(mean, 1) entries, per d_k: score spread and softmax saturation.

    Taught in :doc:`/chapters/05_scaling` (chapter 5).

    Parameters
    ----------
    d_ks : sequence of int
        The widths to measure, positive integers.
    rng : numpy.random.Generator
        For instance ``np.random.default_rng(seed)``.
    n_q : int, default 200
        Queries drawn per d_k, a positive integer.
    n_k : int, default 16
        Keys drawn per d_k, a positive integer.
    mean : float, default 0.0
        The mean of every entry, a finite number.

    Returns
    -------
    dict
        Arrays over d_ks for "raw" (q·k) and "scaled" (q·k/√d_k) scores:
        ``std_*``, the standard deviation of the scores; ``max_*``, the mean
        largest weight per query; ``ent_*``, the mean entropy of the weights;
        ``grad_*``, the mean Frobenius norm of the softmax Jacobian
        diag(α) − ααᵀ (how much the weights still respond to their scores);
        ``qgrad_*`` and ``qgrad_median_*``, the mean and the median over the
        queries of the Frobenius norm of ∂α/∂q = (diag(α) − ααᵀ) K / T, the
        derivative of the weights with respect to the query (T = 1 raw,
        √d_k scaled); and ``"scores"``, the raw scores per d_k, each
        (n_q, n_k).

    Raises
    ------
    ValueError
        If the mean is so large that the scores or their spread overflow float64,
        or that float64 loses the N(0, 1) noise in them.
    """
    d_ks = positive_ints(d_ks, "d_ks")
    rng = generator(rng)
    n_q, n_k = positive_int(n_q, "n_q"), positive_int(n_k, "n_k")
    mean = finite_number(mean, "mean")
    d_top, mean2 = max(d_ks), np.float64(mean) ** 2 if abs(mean) < 1e150 else np.inf
    rounding = np.finfo(float).eps * d_top * (mean2 + 1)       # of one score q·k
    if rounding > 1e-6 * np.sqrt(d_top * (2 * mean2 + 1)):      # vs the scores' spread
        raise ValueError(f"mean = {mean:g} is too large to measure at d_k = {d_top}: float64 "
                         f"rounds the scores q·k ≈ d_k · mean² = {d_top * mean2:.3g} by "
                         f"about {rounding:.2g}, more than a millionth of their spread, so the "
                         f"N(0, 1) noise is lost; choose |mean| <= "
                         f"{1e-6 * np.sqrt(2 / d_top) / np.finfo(float).eps:.3g}")
    keys = ("std", "max", "ent", "grad", "qgrad", "qgrad_median")
    stats = {f"{k}_{t}": [] for k in keys for t in ("raw", "scaled")}
    stats["scores"] = []
    for d_k in d_ks:
        Q = rng.normal(mean, 1.0, size=(n_q, d_k))
        K = rng.normal(mean, 1.0, size=(n_k, d_k))
        with np.errstate(over="ignore", invalid="ignore"):   # an overflow is named below
            raw = Q @ K.T                                      # (n_q, n_k)
            spread = raw.std()
        if not (np.isfinite(raw).all() and np.isfinite(spread)):
            raise ValueError(f"the scores or their spread overflow float64 for mean = "
                             f"{mean:g} at d_k = {d_k} (q·k grows like d_k · mean²); "
                             f"choose a smaller |mean|")
        for tag, T in (("raw", 1.0), ("scaled", np.sqrt(d_k))):
            s = raw / T
            w = softmax(s, axis=1)                             # (n_q, n_k)
            J = _jacobian(w)                                   # (n_q, n_k, n_k)
            dq = np.linalg.norm(J @ K / T, axis=(1, 2))        # (n_q,) norms of ∂α/∂q
            stats[f"std_{tag}"].append(s.std())
            stats[f"max_{tag}"].append(w.max(axis=1).mean())
            stats[f"ent_{tag}"].append(_entropy(w).mean())
            stats[f"grad_{tag}"].append(np.linalg.norm(J, axis=(1, 2)).mean())
            stats[f"qgrad_{tag}"].append(dq.mean())
            stats[f"qgrad_median_{tag}"].append(np.median(dq))
        stats["scores"].append(raw)
    return {k: (v if k == "scores" else np.array(v)) for k, v in stats.items()}


def score_variance(d_ks: Sequence[int], rng: np.random.Generator, n_pairs: int = 20000,
                   chunk: int = 1000):
    """Sample variance of q·k and of q·k/√d_k over independent (q, k) pairs.

    Taught in :doc:`/chapters/05_scaling` (chapter 5).

    q and k have independent N(0, 1) entries; each pair is fresh, so the
    estimate's relative error is about sqrt((2 + 6 / d_k) / n_pairs): q·k
    has kurtosis 3 + 6/d_k, so for 20000 pairs that is 2 % at d_k = 1 and
    approaches 1 % as d_k grows.

    Parameters
    ----------
    d_ks : sequence of int
        The widths d_k to measure, positive integers.
    rng : numpy.random.Generator
        For instance ``np.random.default_rng(seed)``.
    n_pairs : int, default 20000
        An integer >= 2 (one pair has no spread to measure).
    chunk : int, default 1000
        Pairs drawn at a time, a positive integer (it bounds memory, not the
        result).

    Returns
    -------
    var_raw, var_scaled : ndarray
        One entry per width in d_ks. Only var_raw is measured: var_scaled is
        var_raw / d_k, since dividing every sample by √d_k divides their
        variance by exactly d_k.
    """
    d_ks = positive_ints(d_ks, "d_ks")
    rng = generator(rng)
    if positive_int(n_pairs, "n_pairs") < 2:
        raise ValueError(f"n_pairs must be at least 2 to measure a variance; got {n_pairs}")
    chunk = positive_int(chunk, "chunk")
    sizes = [m for m in [chunk] * (n_pairs // chunk) + [n_pairs % chunk] if m]
    var_raw = []
    for d_k in d_ks:
        dots = np.concatenate([                                # (n_pairs,), in chunks
            np.einsum("ij,ij->i", rng.normal(size=(m, d_k)), rng.normal(size=(m, d_k)))
            for m in sizes])
        var_raw.append(dots.var())
    var_raw = np.array(var_raw)
    return var_raw, var_raw / np.asarray(d_ks, dtype=float)
