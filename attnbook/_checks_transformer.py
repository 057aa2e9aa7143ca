"""Input checks of attnbook.transformer: head counts, the blocks' input x and
a TinyGPT's cache, with the rules and wording of attnbook._checks.
"""
from __future__ import annotations

import torch

from ._checks import positive_int
from ._checks_torch import float_tensor, require_same_dtype
from .layer import KVCache


def head_counts(d_model, n_heads, n_kv_heads) -> tuple[int, int, int]:
    """Checked (d_model, n_heads, n_kv_heads); n_kv_heads None means n_heads."""
    d_model, n_heads = positive_int(d_model, "d_model"), positive_int(n_heads, "n_heads")
    if d_model % n_heads:
        raise ValueError(f"d_model = {d_model} must be divisible by n_heads = {n_heads}")
    n_kv_heads = n_heads if n_kv_heads is None else positive_int(n_kv_heads, "n_kv_heads")
    if n_heads % n_kv_heads:
        raise ValueError(f"n_kv_heads must divide n_heads = {n_heads} (each key-value "
                         f"head serves n_heads / n_kv_heads query heads); got "
                         f"n_kv_heads = {n_kv_heads}")
    return d_model, n_heads, n_kv_heads


#: The GELUs `Block`'s MLP offers, each with the words its error message shows.
ACTIVATIONS = {"gelu": "exact, x Phi(x)", "gelu_tanh": "the tanh approximation GPT-2 uses"}


def block_input(x, d_model: int, reference: torch.Tensor) -> torch.Tensor:
    """x as a float tensor (batch, n, d_model) of the parameters' dtype, without
    NaN or inf (a tensor on the meta device has shapes only, and is not read)."""
    if isinstance(x, torch.Tensor) and x.is_meta and x.dtype.is_floating_point:
        pass
    else:
        x = float_tensor(x, "x", 3, "(batch, n, d_model)")
    if x.dim() != 3 or x.shape[-1] != d_model or x.shape[1] == 0:
        raise ValueError(f"x must have shape (batch, n, d_model) = (batch, n, {d_model}) "
                         f"with n >= 1 tokens; got {tuple(x.shape)}")
    require_same_dtype(reference, "the module's parameters", x=x)
    return x


def n_cached(cache, blocks) -> int:
    """n_past of a checked cache: None, or one KVCache per block, all equally long."""
    if cache is None:
        return 0
    if not isinstance(cache, (list, tuple)) or len(cache) != len(blocks) \
            or not all(isinstance(c, KVCache) for c in cache):
        raise TypeError(f"cache must be a list of n_layers = {len(blocks)} KVCache "
                        f"objects, one per block; got {type(cache).__name__}"
                        + (f" of length {len(cache)}" if isinstance(cache, (list, tuple))
                           else ""))
    lengths = {len(c) for c in cache}
    if len(lengths) > 1:
        raise ValueError(f"every block's KVCache must hold the same tokens; got lengths "
                         f"{[len(c) for c in cache]}")
    return lengths.pop()
