"""Scoring functions: how a query and a key become one number.

Dot-product scores live in `core`; this module adds additive attention
(Bahdanau et al., 2015), which lets queries and keys have different widths.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_real, require_finite, require_ndim

__all__ = ["additive_scores"]


def additive_scores(Q, K, W_q, W_k, w_v) -> np.ndarray:
    """Additive attention scores w_vᵀ tanh(W_qᵀ q + W_kᵀ k) for every query/key pair.

    Q: (..., n_q, d_q)   K: (..., n_k, d_kk)   (d_q and d_kk may differ)
    W_q: (d_q, h)   W_k: (d_kk, h)   w_v: (h,)
    returns scores (..., n_q, n_k), to be passed to softmax / masked_softmax.
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
    q_h = Q @ W_q                                            # (..., n_q, h)
    k_h = K @ W_k                                            # (..., n_k, h)
    features = np.tanh(q_h[..., :, None, :] + k_h[..., None, :, :])  # (..., n_q, n_k, h)
    return features @ w_v                                    # (..., n_q, n_k)
