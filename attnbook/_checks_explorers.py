"""Input checks of two explorers (attnbook.explorers.rope_offset and .training),
with the wording of attnbook._checks."""
from __future__ import annotations

import numpy as np

from ._checks import (
    as_real,
    index_into,
    integer_at_least,
    positive_int,
    positive_number,
    require_between,
    require_finite,
    require_ndim,
    short,
)


def rope_offset_args(d, max_offset, n_positions, base, seed, index):
    """The arguments of explorers.explore_rope_offset, checked; index defaults to offset 3."""
    d = positive_int(d, "d")
    if d % 2:
        raise ValueError(f"d must be even (RoPE rotates pairs of columns); got d = {d}")
    max_offset = integer_at_least(max_offset, "max_offset", 0)
    n_positions, base = positive_int(n_positions, "n_positions"), positive_number(base, "base")
    seed = integer_at_least(seed, "seed", 0)
    index = min(3, max_offset) + max_offset if index is None else \
        index_into(index, 2 * max_offset + 1)
    return d, max_offset, n_positions, base, seed, index


def training_args(steps, weights, losses, index):
    """The arrays of explorers.explore_training, checked: steps (n_snapshots,) of whole
    numbers in [0, n_steps], weights (n_snapshots, n_q, n_k), losses (n_steps,), all
    non-empty and finite; index in [-n_snapshots, n_snapshots - 1]."""
    steps, losses, w = as_real(steps, "steps"), as_real(losses, "losses"), \
        as_real(weights, "weights")
    require_ndim(steps, "steps", (1,), "(n_snapshots,)")
    require_ndim(w, "weights", (3,), "(n_snapshots, n_q, n_k)")
    require_ndim(losses, "losses", (1,), "(n_steps,)")
    if w.shape[0] != steps.shape[0]:
        raise ValueError(f"weights must have one matrix per step: expected "
                         f"({steps.shape[0]}, n_q, n_k); got {w.shape}")
    for name, a in (("steps", steps), ("weights", w), ("losses", losses)):
        if a.size == 0:
            raise ValueError(f"{name} must not be empty; got shape {a.shape}")
        require_finite(a, name)
    require_between(w, "weights", 0, 1, "attention weights")
    if (steps < 0).any() or (steps > len(losses)).any() or (steps != np.round(steps)).any():
        raise ValueError(f"steps must be whole numbers in [0, n_steps] = [0, {len(losses)}] "
                         f"(losses has one entry per step); got {short(steps)}")
    return steps, w, losses, index_into(index, len(steps), negative=True)
