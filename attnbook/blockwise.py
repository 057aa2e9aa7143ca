"""Attention over blocks of keys with the online softmax, in numpy.

The idea behind FlashAttention: never hold the (n_q, n_k) matrix of scores.
Keys and values are visited block_size at a time; each query keeps a running
maximum m of its scores, a running sum l of exp(score - m) and a running
weighted sum of values, and rescales the last two by exp(m_old - m_new)
whenever the maximum grows. The largest temporary is (..., n_q, block_size).
With causal=True the causal mask is made inside each block from the query and
key positions, as FlashAttention does, so no (n_q, n_k) array exists either;
query i stands at position i by default (top-left alignment, the wrong one
for cached decoding: see `blockwise_attention`), or at n_k - n_q + i with
``align="bottom-right"``.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._checks import (
    as_mask,
    as_real,
    flag,
    positive_number,
    require_finite,
    require_finite_scores,
    require_ndim,
)
from .core import causal_offset, scaled_scores

__all__ = ["blockwise_attention"]


def __dir__() -> list[str]:
    return sorted(__all__)


def blockwise_attention(Q, K, V, block_size: int, mask=None, scale=None,
                        causal: bool = False, align: str = "top-left") -> np.ndarray:
    """softmax(scale * Q Kᵀ) V computed one block of keys at a time.

    Taught in :doc:`/chapters/12_attention_layer` (chapter 12).

    Equal (to rounding) to the output of `scaled_dot_product_attention` with
    the same arguments, but its largest temporary array is
    (..., n_q, block_size) instead of (..., n_q, n_k).

    Parameters
    ----------
    Q : array_like, shape (..., n_q, d_k)
    K : array_like, shape (..., n_k, d_k)
    V : array_like, shape (..., n_k, d_v)
    block_size : int
        Keys per block, an integer >= 1; the last block may be shorter.
    mask : array_like of bool, broadcastable to (..., n_q, n_k), optional
        True = may attend. A query whose keys are all masked gets a zero
        output, as in attnbook.core. An (n_q, n_k) mask is itself as large
        as the scores; for causal attention use ``causal=True`` instead.
    scale : float, optional
        Defaults to 1/sqrt(d_k).
    causal : bool, default False
        Query i may attend to keys 0..i only, as with ``causal_mask(n_q, n_k)``,
        but the mask is computed per block from the positions. Combines with
        ``mask``.
    align : {"top-left", "bottom-right"}, default "top-left"
        Where the queries stand when n_q != n_k, as in `causal_mask` (only
        read with ``causal=True``). ``"top-left"``, the default as in torch's
        ``is_causal``: query i stands at position i, right when Q and K come
        from the same tokens (n_q = n_k) and wrong for cached decoding, where
        the n_q new queries stand at positions n_k - n_q, ..., n_k - 1: that
        is ``"bottom-right"``, under which one new query sees every key. A
        block is skipped only if no query sees it: top-left, one that starts
        at or after key n_q; with n_q = n_k none is, and every block is
        scored in full before the keys above the diagonal are masked.

    Returns
    -------
    output : ndarray, shape (..., n_q, d_v)
        There are no weights to return: they never exist as one matrix.

    Raises
    ------
    ValueError
        Where `scaled_dot_product_attention` raises: bad shapes, and scores
        or an output that overflow float64 (the message names the block).
    """
    Q, K, V = as_real(Q, "Q"), as_real(K, "K"), as_real(V, "V")
    require_ndim(Q, "Q", ">=2", "(..., n_q, d_k)")
    require_ndim(K, "K", ">=2", "(..., n_k, d_k)")
    require_ndim(V, "V", ">=2", "(..., n_k, d_v)")
    n_q, (n_k, d_k) = Q.shape[-2], K.shape[-2:]
    if Q.shape[-1] != d_k:
        raise ValueError(f"Q and K must share d_k (their last axis): expected Q "
                         f"(..., n_q, {d_k}) to match K of shape {K.shape}; got Q "
                         f"of shape {Q.shape}")
    if d_k == 0 or n_k == 0:
        raise ValueError(f"K must hold at least one key of width >= 1; got K of "
                         f"shape {K.shape}")
    if V.shape[-2] != n_k:
        raise ValueError(f"V must have one row per key: expected (..., {n_k}, d_v) "
                         f"to match K of shape {K.shape}; got V of shape {V.shape}")
    if isinstance(block_size, np.ndarray) and block_size.ndim == 0 \
            and block_size.dtype.kind in "iu":
        block_size = block_size.item()                       # a 0-d integer array
    if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size,
                                                                   numbers.Integral):
        raise TypeError(f"block_size must be an integer >= 1, got "
                        f"{type(block_size).__name__} {block_size!r}")
    if block_size < 1:
        raise ValueError(f"block_size must be an integer >= 1, got {block_size}")
    try:
        batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except ValueError:
        raise ValueError(f"the batch dimensions of Q {Q.shape[:-2]}, K {K.shape[:-2]} "
                         f"and V {V.shape[:-2]} do not broadcast together") from None
    for name, a in (("Q", Q), ("K", K), ("V", V)):
        require_finite(a, name)
    scale = 1.0 / np.sqrt(d_k) if scale is None else positive_number(scale, "scale")
    allowed = None if mask is None else as_mask(mask, "mask", batch + (n_q, n_k))
    causal = flag(causal, "causal")
    offset = causal_offset(n_q, n_k, align)           # query i stands at i + offset
    query_pos = np.arange(n_q)[:, None] + offset       # (n_q, 1)

    e_v = int(np.frexp(np.abs(V).max(initial=0.0))[1])
    V = np.ldexp(V, -e_v)                             # |V| <= 1 (exact): acc cannot overflow
    m = np.full(batch + (n_q, 1), -np.inf)            # running max of each query's scores
    total = np.zeros(batch + (n_q, 1))                # running sum of exp(score - m)
    acc = np.zeros(batch + (n_q, V.shape[-1]))        # running sum of exp(score - m) * value
    for start in range(0, n_k, block_size):
        if causal and start >= n_q + offset:          # no query sees these keys
            break
        stop = min(start + block_size, n_k)
        s = scaled_scores(Q, K[..., start:stop, :], scale)             # (..., n_q, b)
        block = None if allowed is None else allowed[..., start:stop]
        if causal:                                    # key j is seen by queries i >= j
            seen = np.arange(start, stop) <= query_pos                 # (n_q, b)
            block = seen if block is None else block & seen
        require_finite_scores(s, block, f"in the block of keys {start} to {stop - 1}, scale * "
                              f"Q @ Kᵀ must be finite where the mask allows a key (scale = {scale:g}); rescale Q or K, or pass "
                              f"a smaller scale")
        if block is not None:
            s = np.where(block, s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))           # (..., n_q, 1)
        shift = np.where(np.isneginf(m_new), 0.0, m_new)               # all masked so far
        rescale = np.exp(m - shift)                                    # (..., n_q, 1), <= 1
        with np.errstate(over="ignore"):                               # s - shift: -inf is fine
            p = np.exp(s - shift)                                      # (..., n_q, b)
        total = total * rescale + p.sum(axis=-1, keepdims=True)
        acc = acc * rescale + p @ V[..., start:stop, :]                # (..., n_q, d_v)
        m = m_new
    out = np.divide(acc, total, out=np.zeros_like(acc), where=total > 0)   # (..., n_q, d_v)
    with np.errstate(over="ignore"):
        out = np.ldexp(out, e_v)
    if not np.isfinite(out).all():
        raise ValueError(f"the output overflows float64: a weighted average of the rows of V "
                         f"(largest |value| {np.ldexp(np.abs(V).max(), e_v):g}) is not "
                         f"finite; rescale V")
    return out
