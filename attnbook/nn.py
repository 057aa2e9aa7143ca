"""torch modules for the book's attention layers (the only module importing torch).

Each forward returns (output, weights) explicitly; nothing is stored on the
module. Masks follow attnbook.core: boolean, True = may attend; a query with
no allowed key gets zero weights (torch >= 2.5 SDPA convention).
"""
from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["masked_softmax", "DotProductAttention", "AdditiveAttention", "NWKernelRegression"]


def _valid_lens_to_mask(valid_lens: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Boolean mask (..., n_q, n_k) from lengths of shape (...) or (..., n_q)."""
    n_k = shape[-1]
    if valid_lens.dtype.is_floating_point or valid_lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integers, got dtype {valid_lens.dtype}")
    if tuple(valid_lens.shape) == tuple(shape[:-1]):
        lens = valid_lens[..., None]
    elif tuple(valid_lens.shape) == tuple(shape[:-2]):
        lens = valid_lens[..., None, None]
    else:
        raise ValueError(f"valid_lens must have shape {tuple(shape[:-2])} (one per row of "
                         f"the batch) or {tuple(shape[:-1])} (one per query) for scores of "
                         f"shape {tuple(shape)}; got shape {tuple(valid_lens.shape)}")
    if valid_lens.numel() and (valid_lens.min() < 0 or valid_lens.max() > n_k):
        raise ValueError(f"valid_lens must lie in [0, n_k] = [0, {n_k}]; got values from "
                         f"{int(valid_lens.min())} to {int(valid_lens.max())}")
    return torch.arange(n_k, device=valid_lens.device) < lens


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None,
                   valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis with masked keys at exactly 0.

    scores: (..., n_q, n_k); mask: bool, broadcastable, True = may attend;
    valid_lens: (...) or (..., n_q) integers in [0, n_k].
    A row with no allowed key gets all zeros (never NaN).
    """
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if mask is not None:
        if mask.dtype != torch.bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
        try:
            allowed = allowed & mask
        except RuntimeError:
            raise ValueError(f"mask must broadcast to the scores' shape {tuple(scores.shape)}; "
                             f"got shape {tuple(mask.shape)}") from None
    if valid_lens is not None:
        allowed = allowed & _valid_lens_to_mask(valid_lens, scores.shape)
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isinf(top), torch.zeros_like(top), top).detach()
    e = torch.exp(scores - top)
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def _check_attention_shapes(queries, keys, values):
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries and keys must share d_k: expected queries (..., n_q, "
                         f"{keys.shape[-1]}) to match keys {tuple(keys.shape)}; got queries "
                         f"{tuple(queries.shape)}")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"values must have one row per key: expected (..., {keys.shape[-2]}, "
                         f"d_v) to match keys {tuple(keys.shape)}; got values "
                         f"{tuple(values.shape)}")


class DotProductAttention(nn.Module):
    """Scaled dot-product attention with dropout on the weights.

    forward(queries (..., n_q, d_k), keys (..., n_k, d_k), values (..., n_k, d_v),
    mask=None, valid_lens=None) -> (output (..., n_q, d_v), weights (..., n_q, n_k)).
    In training mode dropout zeroes some weights and rescales the rest by
    1/(1 - p), so a row no longer sums to exactly 1; in eval mode it does.
    The returned weights are the ones actually used (after dropout).
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, mask=None, valid_lens=None):
        _check_attention_shapes(queries, keys, values)
        d_k = queries.shape[-1]
        scores = queries @ keys.transpose(-1, -2) / math.sqrt(d_k)   # (..., n_q, n_k)
        weights = self.dropout(masked_softmax(scores, mask, valid_lens))
        return weights @ values, weights                             # (..., n_q, d_v)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: score = w_vᵀ tanh(W_q q + W_k k).

    Queries (..., n_q, d_q) and keys (..., n_k, d_kk) may have different widths.
    forward(queries, keys, values, mask=None, valid_lens=None) -> (output, weights).
    The linear maps have no bias, so the numpy `attnbook.additive_scores`
    with W_q = W_q.weight.T, W_k = W_k.weight.T, w_v = w_v.weight[0] agrees.
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int,
                 dropout: float = 0.0):
        super().__init__()
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, mask=None, valid_lens=None):
        if keys.shape[-2] != values.shape[-2]:
            raise ValueError(f"values must have one row per key: expected (..., "
                             f"{keys.shape[-2]}, d_v); got values {tuple(values.shape)}")
        q, k = self.W_q(queries), self.W_k(keys)                     # (..., n_q, h), (..., n_k, h)
        features = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))    # (..., n_q, n_k, h)
        scores = self.w_v(features).squeeze(-1)                      # (..., n_q, n_k)
        weights = self.dropout(masked_softmax(scores, mask, valid_lens))
        return weights @ values, weights


class NWKernelRegression(nn.Module):
    """Nadaraya–Watson regression with one learnable width w.

    Scores are -((x - x_i) * w)² / 2, i.e. a Gaussian kernel with bandwidth 1/|w|.
    forward(x_query (n_q,), x_keys (n_q, n_k), y_values (n_q, n_k))
    -> (y_hat (n_q,), weights (n_q, n_k)). Keys are given per query so that
    training can leave each point out of its own keys.
    """

    def __init__(self, w: float = 1.0):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(float(w)))

    def forward(self, x_query, x_keys, y_values):
        if x_keys.shape != y_values.shape or x_keys.dim() != 2 \
                or x_keys.shape[0] != x_query.shape[0]:
            raise ValueError(f"expected x_query (n_q,), x_keys and y_values (n_q, n_k); got "
                             f"{tuple(x_query.shape)}, {tuple(x_keys.shape)}, "
                             f"{tuple(y_values.shape)}")
        scores = -((x_query[:, None] - x_keys) * self.w) ** 2 / 2    # (n_q, n_k)
        weights = torch.softmax(scores, dim=1)
        return (weights * y_values).sum(dim=1), weights              # (n_q,), (n_q, n_k)


# =============================================================================
# Chapter 12: a real attention layer (causal, multi-head, with a KV cache).
# Appended as its own section; nothing above depends on it.
# =============================================================================

__all__ += ["CausalSelfAttention", "KVCache"]


class KVCache:
    """The keys and values of the tokens seen so far, for step-by-step decoding.

    Taught in chapter 12. Pass the same KVCache to every call of
    `CausalSelfAttention.forward` while generating; each call appends the new
    tokens' keys and values, so earlier tokens are never projected again.
    The cache is state the caller holds and can inspect, not hidden state
    on the module. Its attributes `k` and `v` are the cached keys and values,
    (batch, n_heads, n_past, d_head) tensors, or None while the cache is empty.
    """

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        """n_past: how many tokens the cache holds."""
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new tokens' k, v (batch, n_heads, n_new, d_head); return all of them,
        (batch, n_heads, n_past + n_new, d_head) each."""
        if self.k is None:
            self.k, self.v = k, v
        else:
            if k.shape[:2] != self.k.shape[:2] or k.shape[-1] != self.k.shape[-1]:
                raise ValueError(f"k must have shape (batch, n_heads, n_new, d_head) = "
                                 f"({self.k.shape[0]}, {self.k.shape[1]}, n_new, "
                                 f"{self.k.shape[-1]}) to join the cache; got {tuple(k.shape)}")
            self.k = torch.cat([self.k, k], dim=-2)
            self.v = torch.cat([self.v, v], dim=-2)
        return self.k, self.v


class CausalSelfAttention(nn.Module):
    """Causal multi-head self-attention in the GPT layout, returning (output, weights).

    Taught in chapter 12 (heads: chapter 10).

    d_model: width of the tokens; n_heads: number of heads h, which must
       divide d_model; each head has width d_head = d_model / n_heads.
    dropout: probability of zeroing an attention weight in training mode.
    max_len: longest sequence (with the cache: n_past + n_new) the causal
       mask buffer covers; GPT-2 uses 1024.
    bias: whether the two linear maps have biases (GPT-2's do).

    The layers are `qkv`, one fused nn.Linear(d_model, 3 d_model) whose output
    columns are Q, K and V side by side (the order and layout of
    nn.MultiheadAttention's in_proj_weight), and `proj`, the output
    projection nn.Linear(d_model, d_model). The causal mask is the boolean
    buffer `mask` (max_len, max_len), True = may attend.

    forward(x (batch, n, d_model), cache=None) -> (output (batch, n, d_model),
    weights (batch, n_heads, n, n_k)), where n_k = n without a cache and
    n_past + n with one. The weights returned are the ones used, after dropout.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 max_len: int = 1024, bias: bool = True):
        super().__init__()
        for name, k in (("d_model", d_model), ("n_heads", n_heads), ("max_len", max_len)):
            if isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise ValueError(f"{name} must be a positive integer, got {k!r}")
        if d_model % n_heads:
            raise ValueError(f"d_model = {d_model} must be divisible by n_heads = {n_heads}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout!r}")
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None):
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, n, d_model) = (batch, n, "
                             f"{self.d_model}); got {tuple(x.shape)}")
        batch, n, _ = x.shape
        n_past = 0 if cache is None else len(cache)
        if n_past + n > self.mask.shape[0]:
            raise ValueError(f"n_past + n = {n_past} + {n} tokens exceed max_len = "
                             f"{self.mask.shape[0]}, the length the causal mask covers")
        h, d_head = self.n_heads, self.d_head
        q, k, v = self.qkv(x).split(self.d_model, dim=-1)       # 3 x (batch, n, d_model)
        q = q.view(batch, n, h, d_head).transpose(1, 2)         # (batch, h, n, d_head)
        k = k.view(batch, n, h, d_head).transpose(1, 2)         # (batch, h, n, d_head)
        v = v.view(batch, n, h, d_head).transpose(1, 2)         # (batch, h, n, d_head)
        if cache is not None:
            k, v = cache.append(k, v)                           # (batch, h, n_k, d_head)
        n_k = k.shape[-2]                                       # n_past + n
        scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)   # (batch, h, n, n_k)
        # query i sits at position n_past + i and may see keys 0..n_past + i
        allowed = self.mask[n_past:n_k, :n_k]                   # (n, n_k)
        scores = scores.masked_fill(~allowed, float("-inf"))
        weights = self.dropout(torch.softmax(scores, dim=-1))   # (batch, h, n, n_k)
        heads = weights @ v                                     # (batch, h, n, d_head)
        merged = heads.transpose(1, 2).reshape(batch, n, self.d_model)  # (batch, n, d_model)
        return self.proj(merged), weights                       # (batch, n, d_model)
