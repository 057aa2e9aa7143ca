"""Measurements behind chapter 5: how score size and softmax saturation grow with d_k."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._checks import as_real
from .core import _softmax

__all__ = ["softmax_jacobian", "entropy", "dk_statistics", "score_variance"]


def softmax_jacobian(p) -> np.ndarray:
    """Jacobian of softmax at output p: ∂p_i/∂x_j = p_i (δ_ij − p_j).

    p: (..., n) softmax outputs; returns (..., n, n) = diag(p) − p pᵀ.
    """
    p = as_real(p, "p")
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def entropy(weights) -> np.ndarray:
    """Shannon entropy (nats) along the last axis; 0·log 0 counts as 0."""
    w = as_real(weights, "weights")
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(w > 0, np.log(w), 0.0)
    return -(w * logs).sum(axis=-1)


def dk_statistics(d_ks: Sequence[int], rng: np.random.Generator, n_q: int = 200,
                  n_k: int = 16, mean: float = 0.0) -> dict:
    """For q, K with N(mean, 1) entries, per d_k: score spread and softmax saturation.

    Returns arrays over d_ks for "raw" (q·k) and "scaled" (q·k/√d_k) scores:
    std_*: standard deviation of the scores;
    max_*: mean largest weight per query; ent_*: mean entropy of the weights;
    grad_*: mean Frobenius norm of the softmax Jacobian (how much the weights
    still respond to their inputs); and "scores": the raw scores per d_k.
    """
    keys = ("std", "max", "ent", "grad")
    stats = {f"{k}_{t}": [] for k in keys for t in ("raw", "scaled")}
    stats["scores"] = []
    for d_k in d_ks:
        Q = rng.normal(mean, 1.0, size=(n_q, d_k))
        K = rng.normal(mean, 1.0, size=(n_k, d_k))
        raw = Q @ K.T                                          # (n_q, n_k)
        for tag, s in (("raw", raw), ("scaled", raw / np.sqrt(d_k))):
            w = _softmax(s, axis=1)                            # (n_q, n_k)
            stats[f"std_{tag}"].append(s.std())
            stats[f"max_{tag}"].append(w.max(axis=1).mean())
            stats[f"ent_{tag}"].append(entropy(w).mean())
            stats[f"grad_{tag}"].append(np.linalg.norm(softmax_jacobian(w), axis=(1, 2)).mean())
        stats["scores"].append(raw)
    return {k: (v if k == "scores" else np.array(v)) for k, v in stats.items()}


def score_variance(d_ks: Sequence[int], rng: np.random.Generator, n_pairs: int = 20000,
                   chunk: int = 1000):
    """Sample variance of q·k and of q·k/√d_k over independent (q, k) pairs.

    q and k have independent N(0, 1) entries; each pair is fresh, so the
    estimate's relative error is about sqrt(2 / n_pairs) (1 % for 20000).
    returns (var_raw, var_scaled), arrays over d_ks.
    """
    sizes = [m for m in [chunk] * (n_pairs // chunk) + [n_pairs % chunk] if m]
    var_raw = []
    for d_k in d_ks:
        dots = np.concatenate([                                # (n_pairs,), in chunks
            np.einsum("ij,ij->i", rng.normal(size=(m, d_k)), rng.normal(size=(m, d_k)))
            for m in sizes])
        var_raw.append(dots.var())
    var_raw = np.array(var_raw)
    return var_raw, var_raw / np.asarray(d_ks, dtype=float)
