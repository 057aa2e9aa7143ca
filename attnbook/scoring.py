"""Scoring functions: how a query and a key become one number.

Dot-product scores live in `core`; this module adds additive attention
(Bahdanau et al., 2015), which lets queries and keys have different widths.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_real, first_index, require_finite, require_ndim

__all__ = ["additive_scores"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: additive_scores builds its (n_q, n_k, h) features in blocks of about this many bytes.
CHUNK_BYTES = 32 * 2 ** 20


def additive_scores(Q, K, W_q, W_k, w_v) -> np.ndarray:
    """Additive attention scores w_vᵀ tanh(W_qᵀ q + W_kᵀ k) for every query/key pair.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    The (..., n_q, n_k, h) tanh features are built a block of queries at a
    time (about CHUNK_BYTES each), so memory grows only with the scores.

    Parameters
    ----------
    Q : array_like, shape (..., n_q, d_q)
    K : array_like, shape (..., n_k, d_kk)
        d_q and d_kk may differ.
    W_q : array_like, shape (d_q, h)
    W_k : array_like, shape (d_kk, h)
    w_v : array_like, shape (h,)

    Returns
    -------
    scores : ndarray, shape (..., n_q, n_k)
        To be passed to softmax or masked_softmax.
    """
    Q, K = as_real(Q, "Q"), as_real(K, "K")
    W_q, W_k, w_v = as_real(W_q, "W_q"), as_real(W_k, "W_k"), as_real(w_v, "w_v")
    require_ndim(Q, "Q", ">=2", "(..., n_q, d_q)")
    require_ndim(K, "K", ">=2", "(..., n_k, d_kk)")
    require_ndim(W_q, "W_q", (2,), "(d_q, h)")
    require_ndim(W_k, "W_k", (2,), "(d_kk, h)")
    require_ndim(w_v, "w_v", (1,), "(h,)")
    h = w_v.shape[0]
    if W_q.shape != (Q.shape[-1], h):
        raise ValueError(f"W_q must have shape (d_q, h) = ({Q.shape[-1]}, {h}) for "
                         f"Q {Q.shape} and w_v {w_v.shape}; got {W_q.shape}")
    if W_k.shape != (K.shape[-1], h):
        raise ValueError(f"W_k must have shape (d_kk, h) = ({K.shape[-1]}, {h}) for "
                         f"K {K.shape} and w_v {w_v.shape}; got {W_k.shape}")
    if K.shape[-2] == 0:
        raise ValueError(f"there must be at least one key; got K of shape {K.shape}")
    try:
        np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    except ValueError:
        raise ValueError(f"the batch dimensions of Q {Q.shape[:-2]} and K "
                         f"{K.shape[:-2]} do not broadcast together") from None
    for name, a in (("Q", Q), ("K", K), ("W_q", W_q), ("W_k", W_k), ("w_v", w_v)):
        require_finite(a, name)
    with np.errstate(over="ignore", invalid="ignore"):
        q_h = Q @ W_q                                        # (..., n_q, h)
        k_h = K @ W_k                                        # (..., n_k, h)
    for name, a, x, W in (("Q @ W_q", q_h, "Q", "W_q"), ("K @ W_k", k_h, "K", "W_k")):
        if not np.isfinite(a).all():
            where = first_index(~np.isfinite(a))
            raise ValueError(f"{name} overflows float64: entry {where} is {a[where]}; "
                             f"rescale {x} or {W}")
    batch = np.broadcast_shapes(q_h.shape[:-2], k_h.shape[:-2])
    n_q, n_k = q_h.shape[-2], k_h.shape[-2]
    scores = np.empty(batch + (n_q, n_k))                    # (..., n_q, n_k)
    # the features are (..., n_q, n_k, h): build them a block of queries at a time,
    # so memory stays near CHUNK_BYTES whatever n_q and n_k are
    per_query = 8 * max(1, int(np.prod(batch))) * n_k * h
    step = max(1, CHUNK_BYTES // max(per_query, 1))
    for start in range(0, n_q, step):
        rows = slice(start, start + step)
        features = np.tanh(q_h[..., rows, None, :] + k_h[..., None, :, :])  # (..., step, n_k, h)
        with np.errstate(over="ignore", invalid="ignore"):
            scores[..., rows, :] = features @ w_v                          # (..., step, n_k)
    if not np.isfinite(scores).all():
        raise ValueError(f"the scores overflow float64: w_v (largest |value| "
                         f"{np.abs(w_v).max():g}) times {h} features in [-1, 1] is not "
                         f"finite; rescale w_v")
    return scores
