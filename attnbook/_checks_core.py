"""Input checks of attnbook.core's attention functions: the arrays, shapes,
mask and valid lengths of `scaled_dot_product_attention` and the projections
of `self_attention`, with the rules and wording of attnbook._checks.

Kept apart from core.py, which computes with what these return.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_mask, as_real, positive_number, require_finite, require_ndim


def valid_lens_bool(valid_lens, shape: tuple[int, ...]) -> np.ndarray:
    """Boolean mask broadcastable to `shape` = (..., n_q, n_k) from per-row or
    per-query lengths, checked."""
    n_k = shape[-1]
    lens = np.asarray(valid_lens.detach().cpu().numpy()
                      if hasattr(valid_lens, "detach") else valid_lens)
    if lens.dtype == np.bool_ or not np.issubdtype(lens.dtype, np.integer):
        raise TypeError(f"valid_lens must hold integers, got dtype {lens.dtype}")
    per_query, per_row = shape[:-1], shape[:-2]
    if lens.shape == per_query:
        lens = lens[..., None]                               # (..., n_q, 1)
    elif len(shape) >= 2 and lens.shape == per_row:
        lens = lens[..., None, None]                         # (..., 1, 1)
    else:
        expected = f"{per_row} (one per row of the batch) or {per_query} " \
                   f"(one per query)" if len(shape) >= 2 else f"{per_query}"
        raise ValueError(f"valid_lens must have shape {expected} for scores of "
                         f"shape {shape}; got shape {lens.shape}")
    if lens.size and (lens.min() < 0 or lens.max() > n_k):
        bad = lens[(lens < 0) | (lens > n_k)].ravel()[0]
        raise ValueError(f"valid_lens must lie in [0, n_k] = [0, {n_k}]; got {bad}")
    return np.arange(n_k) < lens                             # (..., n_q, n_k)


def self_attention_inputs(X, W_q, W_k, W_v):
    """X (..., n, d_model) and W_q, W_k, W_v (d_model, d_out) as float64,
    checked: finite, each W fitting X, and W_q and W_k of one width d_k."""
    X = as_real(X, "X")
    require_ndim(X, "X", ">=2", "(..., n, d_model)")
    require_finite(X, "X")
    d_model = X.shape[-1]
    projections = []
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):
        W = as_real(W, name)
        require_ndim(W, name, (2,), "(d_model, d_out)")
        if W.shape[0] != d_model:
            raise ValueError(f"{name} must have shape (d_model, d_out) = "
                             f"({d_model}, d_out) to multiply X of shape "
                             f"{X.shape}; got {name} of shape {W.shape}")
        require_finite(W, name)
        projections.append(W)
    W_q, W_k, W_v = projections
    if W_q.shape[1] != W_k.shape[1]:
        raise ValueError(f"W_q and W_k must give queries and keys of the same "
                         f"width d_k; got W_q {W_q.shape} and W_k {W_k.shape}")
    return X, W_q, W_k, W_v


def attention_inputs(Q, K, V, mask, scale, names, valid_lens=None):
    """(Q, K, V, scale, allowed) checked: Q, K and V as float64 that fit
    together, the scale (default 1/sqrt(d_k)), and the mask and valid lengths
    combined into `allowed`, broadcastable to the scores (..., n_q, n_k)
    (with an n_q axis for one query), or None. `names` name Q, K and V."""
    nq, nk, nv = names
    Q, K, V = as_real(Q, nq), as_real(K, nk), as_real(V, nv)
    require_ndim(Q, nq, ">=1", "(..., n_q, d_k) or (d_k,)")
    require_ndim(K, nk, ">=2", "(..., n_k, d_k)")
    require_ndim(V, nv, ">=1", "(..., n_k, d_v) or (n_k,)")
    one_query, scalar_values = Q.ndim == 1, V.ndim == 1
    Q2 = Q[None, :] if one_query else Q                      # (..., n_q, d_k)
    V2 = V[:, None] if scalar_values else V                  # (..., n_k, d_v)
    n_k, d_k = K.shape[-2], K.shape[-1]
    if Q2.shape[-1] != d_k:
        raise ValueError(f"{nq} and {nk} must share d_k (their last axis): "
                         f"expected {nq} (..., n_q, {d_k}) to match {nk} of shape "
                         f"{K.shape}; got {nq} of shape {Q.shape}")
    if d_k == 0:
        raise ValueError(f"d_k must be at least 1; got {nk} of shape {K.shape}")
    if n_k == 0:
        raise ValueError(f"there must be at least one key; got {nk} of shape "
                         f"{K.shape} (n_k = 0)")
    if V2.shape[-2] != n_k:
        expected = f"({n_k},) or (..., {n_k}, d_v)"
        raise ValueError(f"{nv} must have one row per key: expected {expected} "
                         f"to match {nk} of shape {K.shape}; got {nv} of shape "
                         f"{V.shape}")
    try:
        batch = np.broadcast_shapes(Q2.shape[:-2], K.shape[:-2], V2.shape[:-2])
    except ValueError:
        raise ValueError(f"the batch dimensions of {nq} {Q.shape[:-2]}, {nk} "
                         f"{K.shape[:-2]} and {nv} {V.shape[:-2]} do not "
                         f"broadcast together") from None
    for name, a in ((nq, Q), (nk, K), (nv, V)):
        require_finite(a, name)
    scale = 1.0 / np.sqrt(d_k) if scale is None else positive_number(scale, "scale")
    scores_shape = batch + (Q2.shape[-2], n_k)
    allowed = None
    if mask is not None:
        shown = scores_shape[:-2] + (n_k,) if one_query else scores_shape
        allowed = as_mask(mask, "mask", shown)
        if one_query:
            allowed = allowed[..., None, :]
    if valid_lens is not None:
        lens = valid_lens_bool(valid_lens, scores_shape[:-2] + (n_k,) if one_query
                               else scores_shape)
        lens = lens[..., None, :] if one_query else lens
        allowed = lens if allowed is None else allowed & lens
    return Q, K, V, scale, allowed
