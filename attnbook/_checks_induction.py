"""Input checks of attnbook.induction: the heads to ablate, the half lengths to
train on and the attention weights to measure, with the wording of
attnbook._checks.
"""
from __future__ import annotations

import numpy as np
import torch

from ._checks import as_distribution, as_real, positive_int, require_ndim


def keep_mask(ablate, n_layers: int, n_heads: int) -> torch.Tensor:
    """(n_layers, n_heads) bools: False for each (layer, head) pair in `ablate`."""
    keep = torch.ones(n_layers, n_heads, dtype=torch.bool)
    try:
        pairs = [tuple(p) for p in ablate]
    except TypeError:
        raise TypeError(f"ablate must be a sequence of (layer, head) pairs, got "
                        f"{ablate!r}") from None
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool)
                                     for i in pair) \
                or not (0 <= pair[0] < n_layers and 0 <= pair[1] < n_heads):
            raise ValueError(f"ablate must hold (layer, head) pairs with layer in [0, "
                             f"{n_layers - 1}] and head in [0, {n_heads - 1}]; got {pair!r}")
        keep[pair] = False
    return keep


def halves_range(halves, model) -> tuple[int, int]:
    """The checked (smallest, largest) half lengths of `halves` for an
    AttentionOnly `model`: both fit its vocab and its max_len."""
    try:
        low, high = halves
    except (TypeError, ValueError):
        raise TypeError(f"halves must be a pair (smallest, largest), got {halves!r}") from None
    low, high = positive_int(low, "halves[0]"), positive_int(high, "halves[1]")
    if low > high or high > model.vocab or 2 * high - 1 > model.max_len:
        raise ValueError(f"halves must satisfy 1 <= smallest <= largest <= vocab = "
                         f"{model.vocab} and 2 * largest - 1 <= max_len = {model.max_len}; "
                         f"got {halves!r}")
    return low, high


def attention_weights(weights) -> np.ndarray:
    """weights (batch, n_heads, n, n) as float64, checked to be attention weights:
    at least one sequence, n >= 2, each row >= 0 summing to 1 (or all 0, a masked
    query) within the rounding of the precision the numbers carry."""
    w = as_real(weights, "weights")
    require_ndim(w, "weights", (4,), "(batch, n_heads, n, n)")
    if w.shape[-1] != w.shape[-2] or w.shape[-1] < 2 or w.shape[0] == 0:
        raise ValueError(f"weights must have shape (batch, n_heads, n, n) with batch >= 1 "
                         f"and n >= 2, one row and one column per position; got {w.shape}")
    as_distribution(as_carried(weights, w), "weights")
    return w


def as_carried(weights, w: np.ndarray):
    """`w` in the narrowest float dtype that holds each of its values exactly, when it
    arrived as float64: the weights of a float32 or float16 model that
    `next_token_losses` widened to float64 still sum to 1 only within that
    dtype's rounding, which `as_distribution` reads from the dtype it gets."""
    if getattr(weights, "dtype", np.float64) not in (np.float64, torch.float64):
        return weights                                  # its own dtype says its precision
    with np.errstate(over="ignore"):
        if np.array_equal(w.astype(np.float16), w):
            return w.astype(np.float16)
    bf16 = torch.from_numpy(w).bfloat16()            # bfloat16's values are all float32's
    if torch.equal(bf16.double(), torch.from_numpy(w)):
        return bf16
    return w.astype(np.float32) if np.array_equal(w.astype(np.float32), w) else w
