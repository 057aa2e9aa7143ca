"""torch modules for the book's attention layers (the only module importing torch).

Each forward returns (output, weights) explicitly; nothing is stored on the
module. Masks follow attnbook.core: boolean, True = may attend; a query with
no allowed key gets zero weights (torch >= 2.5 SDPA convention).
Inputs are checked as the numpy functions check theirs, with the same
wording: floating-point tensors of one dtype, the shapes the docstrings give,
no NaN or inf, and scores that overflow raise instead of posing as a
masked row. Masks and valid_lens may be tensors, numpy arrays or lists.
"""
from __future__ import annotations

import math
import numbers

import numpy as np
import torch
from torch import nn

from ._checks import require_finite

__all__ = ["masked_softmax", "DotProductAttention", "AdditiveAttention", "NWKernelRegression"]


# -- input checks: the same rules and wording as attnbook._checks, for tensors --------------
def _tensor(x, name: str, min_ndim: int, layout: str) -> torch.Tensor:
    """`x` if it is a floating-point tensor with >= min_ndim axes and no NaN or inf."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of floats, got {type(x).__name__}; "
                        f"convert it with torch.as_tensor({name})")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must hold floating-point numbers, got dtype {x.dtype}; "
                        f"use {name}.double() or {name}.float()")
    if x.dim() < min_ndim:
        raise ValueError(f"{name} must have shape {layout}; got {x.dim()} dimension(s), "
                         f"shape {tuple(x.shape)}")
    _require_finite(x, name)
    return x


def _require_finite(x: torch.Tensor, name: str, allow_neg_inf: bool = False) -> None:
    """attnbook._checks.require_finite for a tensor (it converts only on failure)."""
    if not torch.isfinite(x).all():
        require_finite(x.detach().cpu().double().numpy(), name, allow_neg_inf)


def _same_dtype(reference: torch.Tensor | torch.nn.Parameter, ref_name: str, **tensors) -> None:
    for name, x in tensors.items():
        if x.dtype != reference.dtype:
            raise TypeError(f"{name} must have the dtype of {ref_name}, {reference.dtype}; got "
                            f"{x.dtype}. Convert with {name}.to({reference.dtype})"
                            + (", or convert the module with .double() / .float()"
                               if "parameters" in ref_name else ""))


def _as_index_tensor(x, name: str, device) -> torch.Tensor:
    """A mask or valid_lens as a tensor; numpy arrays and lists are accepted."""
    if isinstance(x, torch.Tensor):
        return x.to(device)
    try:
        a = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise TypeError(f"{name} could not be read as an array ({err})") from None
    if a.dtype == object or a.dtype.kind in "USV":
        raise TypeError(f"{name} must be a tensor or array of numbers, got dtype {a.dtype}")
    return torch.as_tensor(a, device=device)


def _allowed(scores: torch.Tensor, mask, valid_lens) -> torch.Tensor:
    """Boolean (..., n_q, n_k): True where a key may be attended."""
    shape = tuple(scores.shape)
    allowed = torch.ones(shape, dtype=torch.bool, device=scores.device)
    if mask is not None:
        m = _as_index_tensor(mask, "mask", scores.device)
        if m.dtype != torch.bool:
            raise TypeError(f"mask must be boolean (True = may attend), got dtype {m.dtype}; "
                            f"for 0/1 values use mask.bool(), and pass additive score "
                            f"offsets as scores instead")
        try:
            fits = torch.broadcast_shapes(tuple(m.shape), shape) == shape
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"mask must broadcast to the scores' shape {shape}; got shape "
                             f"{tuple(m.shape)}")
        allowed = allowed & m
    if valid_lens is not None:
        lens = _as_index_tensor(valid_lens, "valid_lens", scores.device)
        allowed = allowed & _valid_lens_to_mask(lens, scores.shape)
    return allowed


def _require_finite_scores(scores: torch.Tensor, allowed: torch.Tensor, what: str) -> None:
    """Scores the mask allows must be finite: an overflow must not pose as a masked row."""
    bad = ~torch.isfinite(scores) & allowed
    if bad.any():
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"the scores overflow {scores.dtype}: score {where} (query row "
                         f"{where[-2] if len(where) > 1 else 0}, key {where[-1]}) of the "
                         f"scores with shape {tuple(scores.shape)} is {scores[where].item()}; "
                         f"{what}")


def _probability(p, name: str = "dropout") -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


def _valid_lens_to_mask(valid_lens: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Boolean mask (..., n_q, n_k) from lengths of shape (...) or (..., n_q)."""
    n_k = shape[-1]
    if valid_lens.dtype.is_floating_point or valid_lens.dtype.is_complex \
            or valid_lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integers, got dtype {valid_lens.dtype}")
    if tuple(valid_lens.shape) == tuple(shape[:-1]):
        lens = valid_lens[..., None]
    elif len(shape) >= 2 and tuple(valid_lens.shape) == tuple(shape[:-2]):
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

    scores: (..., n_q, n_k) floating tensor; -inf means "weight 0", NaN and
    +inf are refused;
    mask: bool, broadcastable, True = may attend;
    valid_lens: (...) or (..., n_q) integers in [0, n_k].
    mask and valid_lens may also be numpy arrays or lists.
    A row with no allowed key gets all zeros (never NaN).
    """
    scores = _tensor_scores(scores)
    return _masked_softmax(scores, _allowed(scores, mask, valid_lens))


def _tensor_scores(scores) -> torch.Tensor:
    if not isinstance(scores, torch.Tensor):
        raise TypeError(f"scores must be a torch.Tensor of floats, got "
                        f"{type(scores).__name__}; convert it with torch.as_tensor(scores)")
    if not scores.dtype.is_floating_point:
        raise TypeError(f"scores must hold floating-point numbers, got dtype {scores.dtype}")
    if scores.dim() < 1:
        raise ValueError("scores must have shape (..., n_k); got 0 dimension(s), shape ()")
    _require_finite(scores, "scores", allow_neg_inf=True)
    return scores


def _masked_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isinf(top), torch.zeros_like(top), top).detach()
    e = torch.exp(scores - top)
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


def _check_attention_inputs(queries, keys, values, d_k_name: str = "d_k"):
    """Check queries (..., n_q, d), keys (..., n_k, d'), values (..., n_k, d_v)."""
    queries = _tensor(queries, "queries", 2, "(..., n_q, d_q)")
    keys = _tensor(keys, "keys", 2, "(..., n_k, d_k)")
    values = _tensor(values, "values", 2, "(..., n_k, d_v)")
    _same_dtype(queries, "queries", keys=keys, values=values)
    if keys.shape[-2] == 0:
        raise ValueError(f"there must be at least one key; got keys of shape "
                         f"{tuple(keys.shape)} (n_k = 0)")
    if keys.shape[-2] != values.shape[-2]:
        raise ValueError(f"values must have one row per key: expected (..., {keys.shape[-2]}, "
                         f"d_v) to match keys {tuple(keys.shape)}; got values "
                         f"{tuple(values.shape)}")
    try:
        torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2], values.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the batch dimensions of queries {tuple(queries.shape[:-2])}, keys "
                         f"{tuple(keys.shape[:-2])} and values {tuple(values.shape[:-2])} do "
                         f"not broadcast together") from None
    return queries, keys, values


def _check_attention_shapes(queries, keys, values):
    queries, keys, values = _check_attention_inputs(queries, keys, values)
    if queries.shape[-1] != keys.shape[-1]:
        raise ValueError(f"queries and keys must share d_k: expected queries (..., n_q, "
                         f"{keys.shape[-1]}) to match keys {tuple(keys.shape)}; got queries "
                         f"{tuple(queries.shape)}")
    if keys.shape[-1] == 0:
        raise ValueError(f"d_k must be at least 1; got keys of shape {tuple(keys.shape)}")


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
        self.dropout = nn.Dropout(_probability(dropout))

    def forward(self, queries, keys, values, mask=None, valid_lens=None):
        _check_attention_shapes(queries, keys, values)
        d_k = queries.shape[-1]
        scores = queries @ keys.transpose(-1, -2) / math.sqrt(d_k)   # (..., n_q, n_k)
        allowed = _allowed(scores, mask, valid_lens)                 # (..., n_q, n_k)
        _require_finite_scores(scores, allowed, "queries @ keysᵀ / sqrt(d_k) must be finite "
                               "where the mask allows a key; rescale queries or keys")
        weights = self.dropout(_masked_softmax(scores, allowed))
        return weights @ values, weights                             # (..., n_q, d_v)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: score = w_vᵀ tanh(W_q q + W_k k).

    Queries (..., n_q, d_q) and keys (..., n_k, d_kk) may have different widths:
    d_q = query_size, d_kk = key_size.
    forward(queries, keys, values, mask=None, valid_lens=None) -> (output, weights);
    the inputs must have the dtype of the parameters (call .double() for float64).
    The linear maps have no bias, so the numpy `attnbook.additive_scores`
    with W_q = W_q.weight.T, W_k = W_k.weight.T, w_v = w_v.weight[0] agrees.
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int,
                 dropout: float = 0.0):
        super().__init__()
        query_size, key_size = _size(query_size, "query_size"), _size(key_size, "key_size")
        num_hiddens = _size(num_hiddens, "num_hiddens")
        dropout = _probability(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, mask=None, valid_lens=None):
        queries, keys, values = _check_attention_inputs(queries, keys, values)
        _same_dtype(self.w_v.weight, "the module's parameters", queries=queries)
        for name, x, size in (("queries", queries, "query_size"), ("keys", keys, "key_size")):
            d = (self.W_q if name == "queries" else self.W_k).in_features
            if x.shape[-1] != d:
                raise ValueError(f"{name} must have shape (..., {d}) for {size} = {d}; got "
                                 f"{name} of shape {tuple(x.shape)}")
        q, k = self.W_q(queries), self.W_k(keys)                     # (..., n_q, h), (..., n_k, h)
        features = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))    # (..., n_q, n_k, h)
        scores = self.w_v(features).squeeze(-1)                      # (..., n_q, n_k)
        allowed = _allowed(scores, mask, valid_lens)                 # (..., n_q, n_k)
        _require_finite_scores(scores, allowed, "w_vᵀ tanh(W_q q + W_k k) must be finite "
                               "where the mask allows a key; check queries, keys and the "
                               "parameters")
        weights = self.dropout(_masked_softmax(scores, allowed))
        return weights @ values, weights


def _size(n, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {type(n).__name__} {n!r}")
    if n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n}")
    return int(n)


class NWKernelRegression(nn.Module):
    """Nadaraya–Watson regression with one learnable width w.

    Scores are -((x - x_i) * w)² / 2, i.e. a Gaussian kernel with bandwidth 1/|w|.
    forward(x_query (n_q,), x_keys (n_q, n_k), y_values (n_q, n_k))
    -> (y_hat (n_q,), weights (n_q, n_k)). Keys are given per query so that
    training can leave each point out of its own keys. The inputs must have
    the dtype of w (call .double() for float64); scores too large for that
    dtype raise a ValueError (the numpy `nadaraya_watson` has no such limit).
    """

    def __init__(self, w: float = 1.0):
        super().__init__()
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(f"w must be a real number, got {type(w).__name__} {w!r}")
        if not math.isfinite(w):
            raise ValueError(f"w must be a finite number, got {w}")
        self.w = nn.Parameter(torch.tensor(float(w)))
        if not torch.isfinite(self.w).all():
            raise ValueError(f"w = {w:g} does not fit the module's {self.w.dtype} "
                             f"parameter; w must be a finite number")

    def forward(self, x_query, x_keys, y_values):
        x_query = _tensor(x_query, "x_query", 1, "(n_q,)")
        x_keys = _tensor(x_keys, "x_keys", 2, "(n_q, n_k)")
        y_values = _tensor(y_values, "y_values", 2, "(n_q, n_k)")
        _same_dtype(self.w, "the module's parameters", x_query=x_query, x_keys=x_keys,
                    y_values=y_values)
        n_q = x_query.shape[0]
        if x_query.dim() != 1:
            raise ValueError(f"x_query must have shape (n_q,); got {x_query.dim()} "
                             f"dimension(s), shape {tuple(x_query.shape)}")
        if x_keys.dim() != 2 or x_keys.shape[0] != n_q or x_keys.shape[1] == 0:
            raise ValueError(f"x_keys must have shape (n_q, n_k) = ({n_q}, n_k) with n_k >= 1, "
                             f"one row of keys per query; got shape {tuple(x_keys.shape)}")
        if y_values.shape != x_keys.shape:
            raise ValueError(f"y_values must have one value per key, shape "
                             f"{tuple(x_keys.shape)}; got shape {tuple(y_values.shape)}")
        _require_finite(self.w.detach(), "w")
        scores = -((x_query[:, None] - x_keys) * self.w) ** 2 / 2    # (n_q, n_k)
        _require_finite_scores(scores, torch.ones_like(scores, dtype=torch.bool),
                               f"|x_query - x_keys| * |w| is too large (w = "
                               f"{self.w.item():g}); use a smaller w, a wider kernel")
        weights = torch.softmax(scores, dim=1)
        return (weights * y_values).sum(dim=1), weights              # (n_q,), (n_q, n_k)
