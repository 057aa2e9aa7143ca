"""Multi-head self-attention in numpy, with every reshape spelled out."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_real, require_finite, require_ndim
from .core import scaled_dot_product_attention

__all__ = ["multi_head_attention", "split_heads", "merge_heads", "MultiHead"]


class MultiHead(NamedTuple):
    """The intermediates of `multi_head_attention`."""
    heads: np.ndarray     # (h, n, d_head): each head's output
    weights: np.ndarray   # (h, n, n): each head's attention weights
    concat: np.ndarray    # (n, d_model): heads side by side
    output: np.ndarray    # (n, d_model): concat @ W_o


def split_heads(A: np.ndarray, n_heads: int) -> np.ndarray:
    """(n, d_model) -> (h, n, d_head): columns [i*d_head, (i+1)*d_head) go to head i."""
    n, d_model = A.shape
    return A.reshape(n, n_heads, d_model // n_heads).transpose(1, 0, 2)


def merge_heads(H: np.ndarray) -> np.ndarray:
    """(h, n, d_head) -> (n, h*d_head): the inverse of split_heads."""
    h, n, d_head = H.shape
    return H.transpose(1, 0, 2).reshape(n, h * d_head)


def multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads: int, mask=None) -> MultiHead:
    """Self-attention with n_heads heads, as in the Transformer.

    X: (n, d_model); W_q, W_k, W_v, W_o: (d_model, d_model); d_model must be
    divisible by n_heads, and each head has width d_head = d_model / n_heads.
    Q = X W_q is split by columns into heads; head i attends with scale
    1/sqrt(d_head); the head outputs are concatenated and multiplied by W_o.
    """
    X = as_real(X, "X")
    require_ndim(X, "X", (2,), "(n, d_model)")
    require_finite(X, "X")
    d_model = X.shape[1]
    if isinstance(n_heads, bool) or not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if d_model % n_heads:
        raise ValueError(f"d_model = {d_model} (X of shape {X.shape}) must be divisible by "
                         f"n_heads = {n_heads}")
    mats = []
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
        W = as_real(W, name)
        if W.shape != (d_model, d_model):
            raise ValueError(f"{name} must have shape (d_model, d_model) = ({d_model}, "
                             f"{d_model}); got {W.shape}")
        require_finite(W, name)
        mats.append(W)
    W_q, W_k, W_v, W_o = mats
    Q, K, V = (split_heads(X @ W, n_heads) for W in (W_q, W_k, W_v))   # (h, n, d_head) each
    heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # (h, n, d_head), (h, n, n)
    concat = merge_heads(heads)                                        # (n, d_model)
    return MultiHead(heads, weights, concat, concat @ W_o)             # output (n, d_model)
