"""Chapter 12's attention layer in torch: causal, multi-head, with a KV cache.

`CausalSelfAttention` is the layer in GPT's layout (one fused ``qkv`` map,
then ``proj``); `KVCache` holds the keys and values of the tokens seen so
far, for decoding one token at a time; `causal_heads` is the attention core
both it and chapter 14's `attnbook.transformer.GroupedQueryAttention` call;
`rope` is chapter 11's rotary position embedding in torch, in both layouts.
Each forward returns the pair ``Attention(output, weights)`` explicitly; the
cache is state the caller holds. The four are also reachable as
``attnbook.nn.CausalSelfAttention``, ``attnbook.nn.KVCache``,
``attnbook.nn.causal_heads`` and ``attnbook.nn.rope``.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ._checks import choice, flag, positive_int, positive_number
from ._checks_torch import (
    as_index_tensor,
    check_cache_append,
    float_tensor,
    probability,
    require_finite_result,
    require_finite_scores,
    require_finite_tensor,
    require_no_underflow,
    require_same_dtype,
    widened,
)
from .core import Attention

__all__ = ["CausalSelfAttention", "KVCache", "causal_heads", "rope"]

#: The two layouts of RoPE's pairs of columns (see `rope`).
ROPE_LAYOUTS = ("adjacent", "half")


def __dir__() -> list[str]:
    return sorted(__all__)


def rope(x, positions=None, base: float = 10000.0, layout: str = "adjacent") -> torch.Tensor:
    """Rotary position embedding (RoPE) in torch: turn each row by its position's angles.

    Taught in :doc:`/chapters/11_positions` (chapter 11); the rotate-half
    layout in :doc:`/chapters/14_the_whole_block` (chapter 14).

    Pair c of the row at position p turns by the angle p w_c, with
    w_c = 1 / base^(2c/d), the frequencies of the numpy ``attnbook.rotate``.
    The layouts differ only in which columns form pair c:

    - ``"adjacent"``: columns 2c and 2c+1, as in the RoPE paper and Meta's
      LLaMA code (``torch.view_as_complex`` of pairs); equals ``attnbook.rotate``.
    - ``"half"``: columns c and c + d/2, ``x * cos + rotate_half(x) * sin`` as in
      Hugging Face's code and GPT-NeoX; equals ``attnbook.rotate_half``.

    The angles, their cos and sin are computed in float64 (numpy's, as in
    `attnbook.rotate`) and rounded to x's dtype, so float16 and bfloat16
    work; gradients flow to x. In float32 and float64 the adjacent layout
    multiplies complex numbers, as LLaMA's code does and chapter 16's model
    always has (its trained numbers depend on the last bits).

    Parameters
    ----------
    x : torch.Tensor, shape (..., n, d)
        Queries or keys, one row per token, floating point; d must be even.
    positions : tensor, array or list of real numbers, shape (n,), optional
        The position of each row; any shape that broadcasts to x.shape[:-1]
        with last axis n, e.g. (batch, 1, n) for per-row positions of x
        (batch, h, n, d). Default: 0, 1, ..., n-1.
    base : float, default 10000.0
        A finite number > 0 (10000 in RoPE and LLaMA 2, 500000 in LLaMA 3).
    layout : {"adjacent", "half"}, default "adjacent"
        Which columns are paired, as above.

    Returns
    -------
    torch.Tensor, shape of x
        Rotated rows, in x's dtype; rotations keep lengths, and
        ``rope(q, i) · rope(k, j)`` depends on i and j only through j - i.

    Raises
    ------
    TypeError
        If x is not a floating-point tensor, positions are not real numbers,
        base is not a number or layout is not a string.
    ValueError
        If d is odd, positions do not fit x, layout is not one of the two,
        or an angle overflows float64.
    """
    x = float_tensor(x, "x", 2, "(..., n, d)")
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"x must have an even width d (RoPE rotates pairs of columns); "
                         f"got x of shape {tuple(x.shape)}")
    layout = choice(layout, "layout", ROPE_LAYOUTS)
    base = positive_number(base, "base")
    if positions is None:
        p = torch.arange(n, dtype=torch.float64)                          # (n,)
    else:
        p = as_index_tensor(positions, "positions", None)
        if p.dtype == torch.bool or p.is_complex():
            raise TypeError(f"positions must hold real numbers, got dtype {p.dtype}")
        p = p.to("cpu", torch.float64)
        try:
            fits = p.dim() >= 1 and p.shape[-1] == n and torch.broadcast_shapes(
                p.shape, x.shape[:-1]) == x.shape[:-1]
        except RuntimeError:
            fits = False
        if not fits:
            raise ValueError(f"positions must have shape (n,) = ({n},), or one that "
                             f"broadcasts to x.shape[:-1] = {tuple(x.shape[:-1])} with last "
                             f"axis n; got positions of shape {tuple(p.shape)}")
        require_finite_tensor(p, "positions")
    with np.errstate(over="ignore"):
        w = torch.from_numpy(base ** (-np.arange(0, d, 2) / d))          # (d/2,), float64
    angles = p[..., None] * w                                             # (..., n, d/2)
    if not torch.isfinite(angles).all():
        raise ValueError(f"the angles p / base^(2c/d) overflow float64 for positions up to "
                         f"{float(p.abs().max()) if p.numel() else 0:g} with base = "
                         f"{base:g} and d = {d}; use a larger base or smaller positions")
    angles = angles.numpy()                                               # (..., n, d/2)
    cos, sin = torch.from_numpy(np.cos(angles)), torch.from_numpy(np.sin(angles))
    if layout == "adjacent" and x.dtype in (torch.float32, torch.float64):
        # LLaMA's form: pair c as the complex number x[2c] + i x[2c+1], times e^(i angle)
        turn = torch.complex(cos, sin).to(x.device, torch.complex128 if x.dtype ==
                                          torch.float64 else torch.complex64)
        pairs = torch.view_as_complex(                                   # (..., n, d/2)
            x.contiguous().reshape(*x.shape[:-1], d // 2, 2))   # any strides: a copy if need be
        out = torch.view_as_real(pairs * turn).flatten(-2)                # (..., n, d)
    else:
        cos, sin = cos.to(x.device, x.dtype), sin.to(x.device, x.dtype)   # (..., n, d/2)
        half = d // 2 if layout == "half" else None
        x1 = x[..., :half] if half else x[..., 0::2]                      # (..., n, d/2)
        x2 = x[..., half:] if half else x[..., 1::2]
        first, second = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        out = torch.cat([first, second], dim=-1) if half else \
            torch.stack([first, second], dim=-1).flatten(-2)              # (..., n, d)
    require_finite_result(out, "the rotated x")
    return out                                                            # (..., n, d)


class KVCache:
    """The keys and values of the tokens seen so far, for step-by-step decoding.

    Taught in :doc:`/chapters/12_attention_layer` (chapter 12).

    Pass the same KVCache to every call of ``CausalSelfAttention.forward``
    while generating; each call appends the new tokens' keys and values, so
    earlier tokens are never projected again. The cache is state the caller
    holds and can inspect, not hidden state on the module. It takes no
    arguments; ``len(cache)`` is n_past. Its attributes ``k`` and ``v`` are
    the cached keys and values, tensors of shape (batch, n_heads, n_past,
    d_head) (n_kv_heads in place of n_heads under grouped-query attention),
    or None while the cache is empty.
    """

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def __len__(self) -> int:
        """n_past: how many tokens the cache holds."""
        return 0 if self.k is None else self.k.shape[-2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add the new tokens' keys and values; return all of them.

        Parameters
        ----------
        k, v : torch.Tensor, shape (batch, n_heads, n_new, d_head)
            Under grouped-query attention, n_kv_heads in place of n_heads.

        Returns
        -------
        k, v : torch.Tensor, shape (batch, n_heads, n_past + n_new, d_head)

        Raises
        ------
        TypeError, ValueError
            If k and v are not floating-point tensors of one shape and dtype
            that match the cache, or hold NaN or inf.
        """
        check_cache_append(self.k, k, v)
        if self.k is None:
            self.k, self.v = k, v
        else:
            self.k = torch.cat([self.k, k], dim=-2)
            self.v = torch.cat([self.v, v], dim=-2)
        return self.k, self.v


class CausalSelfAttention(nn.Module):
    """Causal multi-head self-attention in the GPT layout, returning (output, weights).

    Taught in :doc:`/chapters/12_attention_layer` (chapter 12). Heads:
    :doc:`/chapters/10_toward_the_transformer` (chapter 10).

    The layers are ``qkv``, one fused ``nn.Linear(d_model, 3 d_model)`` whose
    output columns are Q, K and V side by side (the order and layout of
    ``nn.MultiheadAttention``'s in_proj_weight), and ``proj``, the output
    projection ``nn.Linear(d_model, d_model)``. The causal mask is the boolean
    buffer ``mask`` (max_len, max_len), True = may attend. GPT-2's published
    checkpoint stores ``c_attn.weight`` and ``c_proj.weight`` as (in, out),
    (d_model, 3 d_model) and (d_model, d_model): the transposes of
    ``qkv.weight`` and ``proj.weight``, so they are copied in with ``.T``.

    Parameters
    ----------
    d_model : int
        Width of the tokens.
    n_heads : int
        Number of heads h, which must divide d_model; each head has width
        d_head = d_model / n_heads.
    dropout : float, default 0.0
        Probability of zeroing an attention weight in training mode, in [0, 1).
    max_len : int, default 1024
        Longest sequence (with the cache: n_past + n_new) the causal mask
        buffer covers; GPT-2 uses 1024.
    bias : bool, default True
        Whether the two linear maps have biases (GPT-2's do).
    rope : {None, "adjacent", "half"}, default None
        None: no positions inside the layer (GPT-2's are added to the
        tokens). Otherwise each head's queries and keys are turned by `rope`
        in that layout, before the keys enter the cache, at the positions
        the causal mask gives them: n_past, ..., n_past + n - 1, or with a
        ``key_mask`` the number of real tokens before each.
    rope_base : float, default 10000.0
        The base of `rope`'s frequencies.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0,
                 max_len: int = 1024, bias: bool = True, rope: str | None = None,
                 rope_base: float = 10000.0):
        super().__init__()
        d_model, n_heads = positive_int(d_model, "d_model"), positive_int(n_heads, "n_heads")
        max_len = positive_int(max_len, "max_len")
        if d_model % n_heads:
            raise ValueError(f"d_model = {d_model} must be divisible by n_heads = {n_heads}")
        if probability(dropout) == 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout!r}")
        bias = flag(bias, "bias")
        self.rope, self.rope_base = rope_option(rope, rope_base, d_model // n_heads)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        register_causal_mask(self, max_len)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                key_mask: torch.Tensor | None = None):
        """Attend causally over x (and the cached tokens, if a cache is given).

        Parameters
        ----------
        x : torch.Tensor, shape (batch, n, d_model)
        cache : KVCache, optional
            Appended to in place; its tokens come before x's.
        key_mask : torch.Tensor of bool, shape (batch, n_past + n), optional
            False for padding: no query attends to that key (chapter 15's
            left padding). A query with no key left gets zero weights.

        Returns
        -------
        Attention
            The named pair ``(output, weights)``:
        output : torch.Tensor, shape (batch, n, d_model)
        weights : torch.Tensor, shape (batch, n_heads, n, n_k)
            n_k = n without a cache and n_past + n with one. The weights returned
            are the ones used, after dropout.
        """
        x = float_tensor(x, "x", 3, "(batch, n, d_model)")
        require_same_dtype(self.qkv.weight, "the module's parameters", x=x)
        if x.dim() != 3 or x.shape[-1] != self.d_model or x.shape[1] == 0:
            raise ValueError(f"x must have shape (batch, n, d_model) = (batch, n, "
                             f"{self.d_model}) with n >= 1 tokens; got {tuple(x.shape)}")
        batch, n, _ = x.shape
        n_past = cached_length(self.mask, cache, n)
        h, d_head = self.n_heads, self.d_head
        qkv = self.qkv(x)                                       # (batch, n, 3 d_model)
        require_finite_result(qkv, "the projection qkv(x)")
        q, k, v = qkv.split(self.d_model, dim=-1)               # 3 x (batch, n, d_model)
        q = q.view(batch, n, h, d_head).transpose(1, 2)         # (batch, h, n, d_head)
        k = k.view(batch, n, h, d_head).transpose(1, 2)         # (batch, h, n, d_head)
        v = v.view(batch, n, h, d_head).transpose(1, 2)         # (batch, h, n, d_head)
        n_k = n_past + n
        # query i sits at position n_past + i and may see keys 0..n_past + i
        allowed = self.mask[n_past:n_k, :n_k]                   # (n, n_k)
        allowed = with_key_mask(allowed, key_mask, batch)       # (n, n_k) or (batch, 1, n, n_k)
        if self.rope is not None:                               # positions in the scores
            q, k = rotate_heads(q, k, n_past, key_mask, self.rope, self.rope_base)
        if cache is not None:
            k, v = cache.append(k, v)                           # (batch, h, n_k, d_head)
        heads, weights = causal_heads(q, k, v, allowed, x.dtype, self.dropout)
        merged = heads.transpose(1, 2).reshape(batch, n, self.d_model)  # (batch, n, d_model)
        output = self.proj(merged)                              # (batch, n, d_model)
        require_finite_result(output, "the output projection proj(heads)")
        return Attention(output, weights)


def _check_heads(q, k, v, allowed, dtype) -> None:
    """causal_heads' arguments: float tensors of one dtype and matching shapes, a
    bool mask that broadcasts, a floating dtype; else a clear error."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point or t.dim() != 4:
            raise TypeError(f"{name} must be a float torch tensor of shape (batch, h, n, "
                            f"d_head), got " + (f"dtype {t.dtype}, shape {tuple(t.shape)}"
                                                if isinstance(t, torch.Tensor)
                                                else type(t).__name__))
    require_same_dtype(q, "q", k=k, v=v)
    b, h, n, d = q.shape
    if k.shape[:2] != (b, h) or k.shape[-1] != d or v.shape[:3] != k.shape[:3]:
        raise ValueError(f"k and v must have shape (batch, h, n_k, d_head) = ({b}, {h}, n_k, "
                         f"{d}) like q {tuple(q.shape)}; got k {tuple(k.shape)}, "
                         f"v {tuple(v.shape)}")
    n_k = k.shape[2]
    if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool \
            or tuple(allowed.shape) not in ((n, n_k), (b, 1, n, n_k)):
        raise TypeError(f"allowed must be a bool torch tensor of shape (n, n_k) = ({n}, {n_k}) "
                        f"or (batch, 1, n, n_k) = ({b}, 1, {n}, {n_k}); got "
                        + (f"dtype {allowed.dtype}, shape {tuple(allowed.shape)}"
                           if isinstance(allowed, torch.Tensor) else type(allowed).__name__))
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")


def causal_heads(q, k, v, allowed, dtype, dropout=None):
    """softmax(q kᵀ / √d_head) v over the allowed keys, head by head.

    Taught in :doc:`/chapters/12_attention_layer` (chapter 12); chapter 14's
    grouped-query layer shares it. float16 and bfloat16 are summed in float64.

    Parameters
    ----------
    q : torch.Tensor, shape (batch, h, n, d_head)
    k, v : torch.Tensor, shape (batch, h, n_k, d_head)
    allowed : torch.Tensor of bool, shape (n, n_k) or (batch, 1, n, n_k)
        A query with no allowed key gets zero weights (chapter 9's rule).
    dtype : torch.dtype
        The dtype of the results.
    dropout : torch.nn.Module, optional
        Applied to the weights before they mix the values.

    Returns
    -------
    Attention
        The named pair ``(output, weights)``:
    heads : torch.Tensor, shape (batch, h, n, d_head)
        The output, each head's.
    weights : torch.Tensor, shape (batch, h, n, n_k)
    """
    _check_heads(q, k, v, allowed, dtype)
    scores = widened(q) @ widened(k).transpose(-2, -1) / math.sqrt(q.shape[-1])
    require_finite_scores(scores, allowed, "q @ kᵀ / sqrt(d_head) must be finite; rescale "
                          "x, or use float64")
    scores = scores.masked_fill(~allowed, float("-inf"))
    empty = ~allowed.any(-1, keepdim=True)                  # queries with no key (padding)
    some_empty = not allowed.is_meta and bool(empty.any())  # (the meta device has no values)
    if some_empty:                                          # a 0 row, and no NaN in backward
        scores = scores.masked_fill(empty, 0.0)
    weights = torch.softmax(scores, dim=-1)
    if some_empty:
        weights = weights.masked_fill(empty, 0.0)
    if weights.dtype != dtype:
        require_no_underflow(weights, allowed, dtype)
    if dropout is not None:
        weights = dropout(weights)
    return Attention((weights @ widened(v)).to(dtype), weights.to(dtype))


def rope_option(rope, base, d_head: int) -> tuple[str | None, float]:
    """Checked (rope, rope_base) of a layer: None or a layout of `rope`, and a
    base > 0; a layout needs an even d_head."""
    if rope is not None:
        rope = choice(rope, "rope", ROPE_LAYOUTS)
        if d_head % 2:
            raise ValueError(f"rope needs an even head width d_head (it turns pairs of "
                             f"columns); got d_head = {d_head}")
    return rope, positive_number(base, "rope_base")


def rotate_heads(q, k, n_past: int, key_mask, layout: str, base: float):
    """q, k (batch, heads, n, d_head) turned by `rope` at their positions: n_past + i,
    or with a key_mask (batch, n_past + n) the real tokens before each, as
    TinyGPT counts them. Call after `with_key_mask` has checked key_mask."""
    n = q.shape[-2]
    if key_mask is None:
        positions = torch.arange(n_past, n_past + n)                   # (n,)
    else:
        counted = (key_mask.long().cumsum(1) - 1).clamp(min=0)          # (batch, n_past + n)
        positions = counted[:, None, n_past:].cpu()                     # (batch, 1, n)
    return (rope(q, positions, base, layout),
            rope(k, positions, base, layout))                           # (batch, ., n, d_head)


def register_causal_mask(module: nn.Module, max_len: int) -> None:
    """Give `module` the boolean buffer ``mask`` of shape (max_len, max_len), True
    = may attend (query i sees keys 0 to i); it is not saved in the state dict.

    The layers slice it as ``mask[n_past:n_past + n, :n_past + n]``: the n new
    queries are the last of the n_past + n tokens, so the slice is the
    bottom-right alignment of `attnbook.core.causal_mask`, by construction;
    without a cache (n_past = 0) both alignments agree."""
    module.register_buffer("mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)),
                           persistent=False)


def with_key_mask(allowed: torch.Tensor, key_mask, batch: int) -> torch.Tensor:
    """The causal `allowed` (n, n_k) combined with a per-row `key_mask` (batch, n_k),
    True = a real token, as (batch, 1, n, n_k); `allowed` itself without one."""
    if key_mask is None:
        return allowed
    n_k = allowed.shape[-1]
    if not isinstance(key_mask, torch.Tensor) or key_mask.dtype != torch.bool:
        raise TypeError("key_mask must be a boolean tensor (True = a real token), got "
                        + (f"dtype {key_mask.dtype}" if isinstance(key_mask, torch.Tensor)
                           else type(key_mask).__name__))
    if tuple(key_mask.shape) != (batch, n_k):
        raise ValueError(f"key_mask must have shape (batch, n_past + n) = ({batch}, {n_k}), "
                         f"one entry per key; got {tuple(key_mask.shape)}")
    return allowed & key_mask[:, None, None, :]                 # (batch, 1, n, n_k)


def cached_length(mask: torch.Tensor, cache: KVCache | None, n: int) -> int:
    """n_past, the number of tokens in `cache` (0 without one), checked: the cache
    must be a KVCache or None, and n_past + n tokens must fit the causal `mask`."""
    if cache is not None and not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache or None, got {type(cache).__name__}")
    n_past = 0 if cache is None else len(cache)
    if n_past + n > mask.shape[0]:
        raise ValueError(f"n_past + n = {n_past} + {n} tokens exceed max_len = "
                         f"{mask.shape[0]}, the length the causal mask covers")
    return n_past
