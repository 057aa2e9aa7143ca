"""Multi-head self-attention in numpy, with every reshape spelled out."""
from __future__ import annotations

import numpy as np

from ._checks import (
    as_mask,
    as_real,
    first_index,
    positive_int,
    require_finite,
    require_finite_scores,
    require_ndim,
)
from .core import Attention, scaled_dot_product_attention

__all__ = ["multi_head_attention", "split_heads", "merge_heads", "MultiHead"]


def __dir__() -> list[str]:
    return sorted(__all__)


class MultiHead(Attention):
    """(output, weights) of `multi_head_attention`, with its steps heads and concat.

    Taught in :doc:`/chapters/10_toward_the_transformer` (chapter 10).

    An `attnbook.core.Attention`: ``output, weights = multi_head_attention(...)``
    unpacks the pair, and the intermediates are attributes.

    Parameters
    ----------
    output : ndarray, shape (n, d_model)
        concat @ W_o.
    weights : ndarray, shape (h, n, n)
        Each head's attention weights.
    heads : ndarray, shape (h, n, d_head)
        Each head's output.
    concat : ndarray, shape (n, d_model)
        The heads side by side.
    """
    heads: np.ndarray     # (h, n, d_head): each head's output
    concat: np.ndarray    # (n, d_model): heads side by side

    def __new__(cls, output, weights, *, heads, concat):
        self = super().__new__(cls, output, weights)
        vars(self).update(heads=heads, concat=concat)
        return self

    def _replace(self, **fields):
        """A copy with some fields or steps replaced; the others are kept."""
        return type(self)(**{**self._asdict(), **vars(self), **fields})


def split_heads(A, n_heads: int) -> np.ndarray:
    """(n, d_model) -> (h, n, d_head): columns [i*d_head, (i+1)*d_head) go to head i.

    Taught in :doc:`/chapters/10_toward_the_transformer` (chapter 10).

    Parameters
    ----------
    A : array_like, shape (n, d_model)
        Real and finite.
    n_heads : int
        A positive integer that divides d_model.

    Returns
    -------
    ndarray, shape (h, n, d_head)
        h = n_heads and d_head = d_model / n_heads.
    """
    A = as_real(A, "A")
    require_ndim(A, "A", (2,), "(n, d_model)")
    n_heads = positive_int(n_heads, "n_heads")
    n, d_model = A.shape
    if d_model % n_heads:
        raise ValueError(f"n_heads = {n_heads} must divide d_model = {d_model} (the width "
                         f"of A with shape {A.shape}) so that every head has the same width")
    require_finite(A, "A")
    return A.reshape(n, n_heads, d_model // n_heads).transpose(1, 0, 2)   # (h, n, d_head)


def merge_heads(H) -> np.ndarray:
    """(h, n, d_head) -> (n, h*d_head): the inverse of split_heads.

    Taught in :doc:`/chapters/10_toward_the_transformer` (chapter 10).

    Parameters
    ----------
    H : array_like, shape (h, n, d_head)
        Real and finite.

    Returns
    -------
    ndarray, shape (n, h*d_head)
    """
    H = as_real(H, "H")
    require_ndim(H, "H", (3,), "(h, n, d_head)")
    require_finite(H, "H")
    h, n, d_head = H.shape
    return H.transpose(1, 0, 2).reshape(n, h * d_head)                  # (n, d_model)


def multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads: int, mask=None) -> MultiHead:
    """Self-attention with n_heads heads, as in the Transformer.

    Taught in :doc:`/chapters/10_toward_the_transformer` (chapter 10).

    Q = X W_q is split by columns into heads; head i attends with scale
    1/sqrt(d_head); the head outputs are concatenated and multiplied by W_o.

    Parameters
    ----------
    X : array_like, shape (n, d_model)
    W_q, W_k, W_v, W_o : array_like, shape (d_model, d_model)
    n_heads : int
        A positive integer that divides d_model; each head has width
        d_head = d_model / n_heads.
    mask : array_like of bool, broadcastable to (h, n, n), optional
        True = may attend.

    Returns
    -------
    MultiHead
        The pair ``(output, weights)``, output (n, d_model) and weights
        (h, n, n), with the attributes ``heads`` and ``concat``.

    Raises
    ------
    ValueError
        If projections, scores or outputs overflow float64: the message names
        the product (X @ W_q, ...) instead of returning NaN or zero rows.
    """
    X = as_real(X, "X")
    require_ndim(X, "X", (2,), "(n, d_model)")
    n, d_model = X.shape
    if n == 0 or d_model == 0:
        raise ValueError(f"X must have at least one token and one column, shape "
                         f"(n, d_model) with n, d_model >= 1; got shape {X.shape}")
    require_finite(X, "X")
    n_heads = positive_int(n_heads, "n_heads")
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
    allowed = None if mask is None else as_mask(mask, "mask", (n_heads, n, n))
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is named below
        projected = [X @ W for W in (W_q, W_k, W_v)]                   # (n, d_model) each
    for P, W in zip(projected, ("W_q", "W_k", "W_v"), strict=True):
        _require_no_overflow(P, f"X @ {W}", f"rescale X or {W}")
    Q, K, V = (split_heads(P, n_heads) for P in projected)             # (h, n, d_head) each
    d_head = d_model // n_heads
    with np.errstate(over="ignore", invalid="ignore"):
        scores = 1.0 / np.sqrt(d_head) * (Q @ K.transpose(0, 2, 1))  # (h, n, n)
    require_finite_scores(scores, allowed, f"each head's scores are (X @ W_q)(X @ W_k)ᵀ / "
                          f"√d_head for its columns (the first index is the head, d_head = "
                          f"{d_head}); rescale X, W_q or W_k")
    try:
        heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask)  # (h, n, d_head), (h, n, n)
    except ValueError as err:    # all that is left: a weighted average of X @ W_v overflows
        raise ValueError(f"the heads' outputs overflow float64: each is a weighted average of "
                         f"rows of X @ W_v (largest |value| {np.abs(V).max():g}); rescale X or "
                         f"W_v") from err
    concat = merge_heads(heads)                                        # (n, d_model)
    with np.errstate(over="ignore", invalid="ignore"):
        output = concat @ W_o                                          # (n, d_model)
    _require_no_overflow(output, "concat @ W_o", "rescale W_o (or X and W_v)")
    return MultiHead(output, weights, heads=heads, concat=concat)


def _require_no_overflow(P: np.ndarray, product: str, advice: str) -> None:
    """Raise ValueError naming `product` if the finite inputs multiplied to NaN or inf."""
    if not np.isfinite(P).all():
        where = first_index(~np.isfinite(P))
        raise ValueError(f"{product} overflows float64: entry {where} of {product} with "
                         f"shape {P.shape} is {P[where]}; {advice}")
