"""torch modules for the book's attention layers (chapters 8 and 9).

Each forward returns the pair ``Attention(output, weights)`` of
attnbook.core explicitly; nothing is stored on the module. Masks follow attnbook.core: boolean, True = may attend; a query with
no allowed key gets zero weights (torch >= 2.5 SDPA convention on the CPU).
Inputs are checked as the numpy functions check theirs, with the same
wording: floating-point tensors of one dtype, the shapes the docstrings give,
no NaN or inf, and scores that overflow raise instead of posing as a
masked row. Masks and valid_lens may be tensors, numpy arrays or lists.

Chapter 12's CausalSelfAttention, KVCache, causal_heads and rope are defined
and documented in attnbook.layer, chapter 14's Block, TinyGPT and
GroupedQueryAttention in attnbook.transformer; ``attnbook.nn.Block`` and
``from attnbook.nn import CausalSelfAttention`` load them on first use.
"""
from __future__ import annotations

import importlib
import math
import numbers
import sys

import torch
from torch import nn

from ._checks import positive_int
from ._checks_torch import (
    allowed_keys,
    as_index_tensor,
    check_attention_inputs,
    check_dot_product_inputs,
    float_tensor,
    probability,
    require_finite_scores,
    require_finite_tensor,
    require_no_underflow,
    require_same_dtype,
    scores_tensor,
    valid_lens_to_mask,
    widened,
)
from .core import Attention

#: Later chapters' torch layers, reachable from here too and loaded on first use:
#: chapter 12's in attnbook.layer, chapter 14's in attnbook.transformer.
_ELSEWHERE = {"CausalSelfAttention": "layer", "KVCache": "layer", "causal_heads": "layer",
              "rope": "layer", "Block": "transformer", "TinyGPT": "transformer",
              "GroupedQueryAttention": "transformer"}

__all__ = ["masked_softmax", "valid_lens_mask", "DotProductAttention", "AdditiveAttention",
           "NWKernelRegression", *_ELSEWHERE]


def __dir__() -> list[str]:
    return sorted(__all__)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None,
                   valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis with masked keys at exactly 0 (torch).

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9). The torch twin of
    ``attnbook.masked_softmax``.

    A row with no allowed key gets all zeros (never NaN). float16 and bfloat16
    scores are summed in float64 (torch sums them in float32).

    Parameters
    ----------
    scores : torch.Tensor, shape (..., n_q, n_k)
        Floating point; -inf means "weight 0", NaN and +inf are refused.
    mask : tensor, array or list of bool, broadcastable to scores, optional
        True = may attend; it may not enlarge scores.
    valid_lens : tensor, array or list of int, shape (...) or (..., n_q), optional
        Integers in [0, n_k]: one per row of the batch, or one per query.

    Returns
    -------
    weights : torch.Tensor, shape (..., n_q, n_k)
    """
    scores = scores_tensor(scores)
    return _masked_softmax(scores, allowed_keys(scores, mask, valid_lens))


def valid_lens_mask(valid_lens, shape) -> torch.Tensor:
    """The boolean mask that valid lengths stand for: True for keys 0..len-1 (torch).

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9). The torch twin
    of ``attnbook.valid_lens_mask``; d2l's ``valid_lens`` convention.

    Parameters
    ----------
    valid_lens : tensor, array or list of int, shape (...) or (..., n_q)
        Integers in [0, n_k] of any integer dtype: one per row of the batch,
        shape ``shape[:-2]``, or one per query, shape ``shape[:-1]``.
    shape : tuple of int or torch.Size
        The shape (..., n_q, n_k) of the scores the mask is for.

    Returns
    -------
    mask : torch.Tensor of bool, shape (..., n_q, n_k)
        ``mask[..., i, j]`` is True where j < the length of query i; on the
        device of `valid_lens` if it is a tensor.

    Raises
    ------
    TypeError
        If `valid_lens` does not hold integers or `shape` is not a tuple of
        integers.
    ValueError
        If `valid_lens` has neither shape, or a length lies outside [0, n_k].
    """
    if not isinstance(shape, (tuple, list, torch.Size)) or not shape or not all(
            isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 0
            for n in shape):
        raise TypeError(f"shape must be a non-empty tuple of integers >= 0, the shape "
                        f"(..., n_q, n_k) of the scores; got {shape!r}")
    shape = torch.Size(int(n) for n in shape)
    device = valid_lens.device if isinstance(valid_lens, torch.Tensor) else None
    lens = as_index_tensor(valid_lens, "valid_lens", device)
    return valid_lens_to_mask(lens, shape).expand(shape).clone()


def _masked_softmax(scores: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    dtype, scores = scores.dtype, widened(scores)                   # float16 sums overflow
    if dtype != scores.dtype:
        weights = _masked_softmax(scores, allowed)
        require_no_underflow(weights, allowed, dtype)
        return weights.to(dtype)
    scores = scores.masked_fill(~allowed, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isinf(top), torch.zeros_like(top), top).detach()
    e = torch.exp(scores - top)
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))


class DotProductAttention(nn.Module):
    """Scaled dot-product attention with dropout on the weights.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    In training mode dropout zeroes some weights and rescales the rest by
    1/(1 - p), so a row no longer sums to exactly 1; in eval mode it does.

    Parameters
    ----------
    dropout : float, default 0.0
        Probability p in [0, 1] of zeroing a weight in training mode.
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(probability(dropout))

    def forward(self, queries, keys, values, mask=None, valid_lens=None):
        """Attend from queries to keys; return the output and the weights used.

        Parameters
        ----------
        queries : torch.Tensor, shape (..., n_q, d_k)
        keys : torch.Tensor, shape (..., n_k, d_k)
        values : torch.Tensor, shape (..., n_k, d_v)
        mask, valid_lens : optional
            As in `masked_softmax`.

        Returns
        -------
        Attention
            The named pair ``(output, weights)``:
        output : torch.Tensor, shape (..., n_q, d_v)
        weights : torch.Tensor, shape (..., n_q, n_k)
            The weights actually used (after dropout).
        """
        check_dot_product_inputs(queries, keys, values)
        d_k, dtype = queries.shape[-1], queries.dtype                # float16: sums in float64
        queries, keys, values = widened(queries), widened(keys), widened(values)
        scores = queries @ keys.transpose(-1, -2) / math.sqrt(d_k)   # (..., n_q, n_k)
        allowed = allowed_keys(scores, mask, valid_lens)             # (..., n_q, n_k)
        require_finite_scores(scores, allowed, "queries @ keysᵀ / sqrt(d_k) must be finite "
                              "where the mask allows a key; rescale queries or keys")
        weights = _masked_softmax(scores, allowed)
        if dtype != weights.dtype:
            require_no_underflow(weights, allowed, dtype)
        weights = self.dropout(weights)
        return Attention((weights @ values).to(dtype), weights.to(dtype))  # (..., n_q, d_v)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: score = w_vᵀ tanh(W_q q + W_k k).

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    The linear maps have no bias, so the numpy ``attnbook.additive_scores``
    with ``W_q = W_q.weight.T``, ``W_k = W_k.weight.T``, ``w_v = w_v.weight[0]``
    agrees.

    Parameters
    ----------
    query_size : int
        d_q, the width of the queries (a positive integer).
    key_size : int
        d_kk, the width of the keys; it may differ from d_q.
    num_hiddens : int
        h, the width of the tanh features.
    dropout : float, default 0.0
        Probability of zeroing a weight in training mode.
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int,
                 dropout: float = 0.0):
        super().__init__()
        query_size = positive_int(query_size, "query_size")
        key_size = positive_int(key_size, "key_size")
        num_hiddens = positive_int(num_hiddens, "num_hiddens")
        dropout = probability(dropout)
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, mask=None, valid_lens=None):
        """Attend with additive scores; return the output and the weights used.

        The inputs must have the dtype of the parameters (call ``.double()`` on
        the module for float64).

        Parameters
        ----------
        queries : torch.Tensor, shape (..., n_q, d_q)
        keys : torch.Tensor, shape (..., n_k, d_kk)
        values : torch.Tensor, shape (..., n_k, d_v)
            float16 and bfloat16 values are weighted and summed in float64.
        mask, valid_lens : optional
            As in `masked_softmax`.

        Returns
        -------
        Attention
            The named pair ``(output, weights)``:
        output : torch.Tensor, shape (..., n_q, d_v)
            In the dtype of values.
        weights : torch.Tensor, shape (..., n_q, n_k)
        """
        queries, keys, values = check_attention_inputs(queries, keys, values)
        require_same_dtype(self.w_v.weight, "the module's parameters", queries=queries)
        for name, x, size, d in (("queries", queries, "query_size", self.W_q.in_features),
                                 ("keys", keys, "key_size", self.W_k.in_features)):
            if x.shape[-1] != d:
                raise ValueError(f"{name} must have shape (..., {d}) for {size} = {d}; got "
                                 f"{name} of shape {tuple(x.shape)}")
        q, k = self.W_q(queries), self.W_k(keys)                     # (..., n_q, h), (..., n_k, h)
        features = torch.tanh(q.unsqueeze(-2) + k.unsqueeze(-3))    # (..., n_q, n_k, h)
        scores = self.w_v(features).squeeze(-1)                      # (..., n_q, n_k)
        allowed = allowed_keys(scores, mask, valid_lens)             # (..., n_q, n_k)
        require_finite_scores(scores, allowed, "w_vᵀ tanh(W_q q + W_k k) must be finite "
                              "where the mask allows a key; check queries, keys and the "
                              "parameters")
        weights = self.dropout(_masked_softmax(scores, allowed))
        return Attention((widened(weights) @ widened(values)).to(values.dtype), weights)


class NWKernelRegression(nn.Module):
    """Nadaraya–Watson regression with one learnable inverse width w.

    Taught in :doc:`/chapters/08_kernel_regression` (chapter 8).

    Scores are -((x - x_i) * w)² / 2, a Gaussian kernel with bandwidth ``1/|w|``.

    Parameters
    ----------
    w : float, default 1.0
        The initial inverse width (1 / bandwidth), a finite number.
    """

    def __init__(self, w: float = 1.0):
        super().__init__()
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(f"w must be a real number, got {type(w).__name__} {w!r}")
        if not -math.inf < w < math.inf or abs(w) > sys.float_info.max:
            raise ValueError(f"w must be a finite number, got {w}")
        self.w = nn.Parameter(torch.tensor(float(w)))
        if not torch.isfinite(self.w).all():
            raise ValueError(f"w = {w:g} does not fit the module's {self.w.dtype} "
                             f"parameter; w must be a finite number")

    def forward(self, x_query, x_keys, y_values):
        """Predict y at each query from its own keys and values.

        Keys are given per query so that training can leave each point out of
        its own keys. The inputs must have the dtype of w (call ``.double()`` for
        float64).

        Parameters
        ----------
        x_query : torch.Tensor, shape (n_q,)
        x_keys : torch.Tensor, shape (n_q, n_k)
        y_values : torch.Tensor, shape (n_q, n_k)

        Returns
        -------
        Attention
            The named pair ``(output, weights)``, with y_hat as the output:
        y_hat : torch.Tensor, shape (n_q,)
        weights : torch.Tensor, shape (n_q, n_k)

        Raises
        ------
        ValueError
            If scores are too large for the dtype (the numpy `nadaraya_watson` has
            no such limit).
        """
        x_query = float_tensor(x_query, "x_query", 1, "(n_q,)")
        x_keys = float_tensor(x_keys, "x_keys", 2, "(n_q, n_k)")
        y_values = float_tensor(y_values, "y_values", 2, "(n_q, n_k)")
        require_same_dtype(self.w, "the module's parameters", x_query=x_query,
                           x_keys=x_keys, y_values=y_values)
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
        require_finite_tensor(self.w.detach(), "w")
        scores = -((x_query[:, None] - x_keys) * self.w) ** 2 / 2    # (n_q, n_k)
        require_finite_scores(scores, torch.ones_like(scores, dtype=torch.bool),
                              f"|x_query - x_keys| * |w| is too large (w = "
                              f"{self.w.item():g}); use a smaller w, a wider kernel")
        weights = torch.softmax(widened(scores), dim=1)               # float16: sum in float64
        require_no_underflow(weights, torch.ones_like(scores, dtype=torch.bool), scores.dtype)
        y_hat = (weights * widened(y_values)).sum(dim=1)             # (n_q,)
        return Attention(y_hat.to(scores.dtype), weights.to(scores.dtype))  # (n_q,), (n_q, n_k)


def __getattr__(name: str):
    if name in _ELSEWHERE:
        return getattr(importlib.import_module(f".{_ELSEWHERE[name]}", __package__), name)
    raise AttributeError(f"module 'attnbook.nn' has no attribute {name!r}")
