"""Input checks of attnbook.lm: the model it is given, the ids and lengths that
must fit it, and the mask of real targets, with the wording of attnbook._checks.
"""
from __future__ import annotations

import inspect

import numpy as np
import torch
from torch import nn

from ._checks_torch import as_index_tensor


def real_mask(real, expected: tuple[int, int], logits: torch.Tensor) -> torch.Tensor:
    """`real` as a bool tensor of shape `expected` (batch, n), or raise naming it."""
    if not isinstance(real, (torch.Tensor, np.ndarray)):
        raise TypeError(f"real must be a tensor of bools, got {type(real).__name__}")
    real = as_index_tensor(real, "real", logits.device)
    if real.dtype != torch.bool:
        raise TypeError(f"real must be a tensor of bools, got {real.dtype}; for 0/1 values "
                        f"use real.bool()")
    if tuple(real.shape) != expected:
        raise ValueError(f"real must have shape (batch, n) = {expected} to match logits "
                         f"{tuple(logits.shape)}; got {tuple(real.shape)}")
    return real


def require_module(model, blocks: bool = False, real: bool = False) -> None:
    """Raise TypeError unless `model` is a torch module (with ``blocks``, and a
    forward that takes ``real=``, if asked)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module such as TinyGPT, got "
                        f"{type(model).__name__}")
    if real:
        params = inspect.signature(model.forward).parameters
        if "real" not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            raise TypeError(f"model must take the padding mask as model(idx, real=real), as "
                            f"TinyGPT does; {type(model).__name__}.forward has no real")
    if blocks and not isinstance(getattr(model, "blocks", None), (nn.ModuleList, list, tuple)):
        raise TypeError(f"model must have a list of blocks, model.blocks, as TinyGPT does "
                        f"(one KVCache or head hook per block); {type(model).__name__} has none")


def require_fits(model, idx: torch.Tensor, real: torch.Tensor, name: str,
                 n_in: int | None, vocab: int | None = None) -> None:
    """The ids of `name` (padded to idx, real) lie in [0, vocab), vocab = model.vocab
    unless given, and n_in tokens fit model.max_len (either only if the model has it)."""
    vocab = getattr(model, "vocab", None) if vocab is None else vocab
    if isinstance(vocab, int):
        bad = real & (idx >= vocab)                                  # (batch, n)
        if bad.any():
            row, col = (int(i) for i in torch.nonzero(bad)[0])
            at = col - int((~real[row, :col]).sum())                 # less the left padding
            raise ValueError(f"{name} must hold ids in [0, vocab) = [0, {vocab}), the "
                             f"model's vocabulary; {name}[{row}][{at}] is {int(idx[row, col])}")
    max_len = getattr(model, "max_len", None)
    if n_in is not None and isinstance(max_len, int) and n_in > max_len:
        raise ValueError(f"{name} must fit the model's max_len = {max_len}: the longest "
                         f"sequence gives it n = {n_in} tokens")
