"""Training a language model and sampling from it (chapter 15), in torch.

Around chapter 14's `attnbook.transformer.TinyGPT`: `pad` lays sequences of
different lengths into one tensor, padding on the right (for training) or on
the left (for generation), and returns the boolean mask ``real`` of the
tokens that are not padding; `masked_loss` averages the cross-entropy over
the real targets only; `train` fits a model to a list of token-id sequences;
`last_logits` scores the token after each prompt of a batch; `generate`
continues a batch of prompts a token at a time, with one `KVCache` per block,
left padding and positions that the padding does not move; `without_heads`
removes heads for an ablation. Training runs on
one CPU thread with a seeded torch.Generator, as chapter 13's
`attnbook.learn.train` does, and steps with `attnbook.optim.Adam`.
"""
from __future__ import annotations

import contextlib
import numbers

import numpy as np
import torch
from torch import nn

from ._checks import (
    as_ids,
    index_into,
    integer_at_least,
    positive_int,
    positive_number,
)
from ._checks_lm import real_mask, require_fits, require_module
from ._checks_torch import id_tensor
from .layer import KVCache
from .optim import Adam, one_thread

__all__ = ["pad", "masked_loss", "train", "last_logits", "generate", "without_heads"]


def __dir__() -> list[str]:
    return sorted(__all__)


def pad(seqs, side: str = "right", pad_id: int = 0):
    """Sequences of different lengths as one tensor, padded on one side.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    seqs : sequence of sequences of int
        Token ids, of any integer dtype, each in [0, 2**63) (they are
        stored as int64); each sequence holds at least one.
    side : {"right", "left"}, default "right"
        Where the padding goes: after each sequence (training) or before it
        (generation, so that every sequence ends in the last column).
    pad_id : int, default 0
        The id written into the padding, in [0, 2**63).

    Returns
    -------
    idx : torch.Tensor of int64, shape (batch, n)
        n is the length of the longest sequence.
    real : torch.Tensor of bool, shape (batch, n)
        True on the tokens of `seqs`, False on the padding.

    Raises
    ------
    TypeError
        If `seqs` is not a list of sequences, or a sequence holds bools,
        floats or other non-integers.
    ValueError
        If a sequence is empty or not one-dimensional, or an id or `pad_id`
        is negative or does not fit int64.
    """
    return _pad(seqs, side, pad_id, "seqs")


def _pad(seqs, side: str, pad_id: int, name: str):
    """`pad`, with `name` for `seqs` in its errors (`generate` calls them prompts)."""
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    pad_id = integer_at_least(pad_id, "pad_id", 0)
    if pad_id >= 2 ** 63:
        raise ValueError(f"pad_id must be an id in [0, 2**63) (ids are stored as int64), "
                         f"got {pad_id}")
    if isinstance(seqs, (str, bytes, torch.Tensor)) or not hasattr(seqs, "__len__") \
            or not len(seqs):
        raise TypeError(f"{name} must be a non-empty list of token-id sequences, got "
                        f"{type(seqs).__name__} {seqs!r}"[:200])
    rows = []
    for i, s in enumerate(seqs):
        if isinstance(s, numbers.Number) or getattr(s, "ndim", 1) == 0:
            raise TypeError(f"{name}[{i}] must be a sequence of token ids, shape (n,); got "
                            f"{type(s).__name__} {s!r}")
        a = as_ids(s, f"{name}[{i}]", ndim=(1,), layout="(n,)")
        if a.size == 0:
            raise ValueError(f"{name}[{i}] must hold at least one token id; got shape "
                             f"{a.shape}")
        rows.append(a)
    n = max(len(a) for a in rows)
    idx = np.full((len(rows), n), pad_id, dtype=np.int64)            # (batch, n)
    real = np.zeros((len(rows), n), dtype=bool)                      # (batch, n)
    for i, a in enumerate(rows):
        cols = slice(0, len(a)) if side == "right" else slice(n - len(a), n)
        idx[i, cols], real[i, cols] = a, True
    return torch.from_numpy(idx), torch.from_numpy(real)


def masked_loss(logits: torch.Tensor, targets, real):
    """Cross-entropy averaged over the real targets; padding contributes nothing.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    logits : torch.Tensor, shape (batch, n, vocab)
        Finite wherever `real` is True (padded positions are not read).
    targets : torch.Tensor of int, shape (batch, n)
        The token that follows each position, of any integer dtype (a
        numpy array too). Where `real` is True each is an id in
        [0, vocab); there is no ignored id such as torch's -100: padding is
        what `real` marks, and the targets under it are not read.
    real : torch.Tensor of bool, shape (batch, n)
        True where the target is a real token, False where it is padding.

    Returns
    -------
    torch.Tensor, shape ()
        The mean of ``-log softmax(logits)[target]`` over the real targets.

    Raises
    ------
    TypeError
        If `logits` is not a float tensor, `targets` not integers or `real`
        not bools.
    ValueError
        If the shapes disagree, no target is real, a real target lies
        outside [0, vocab), or a real position's logits hold NaN or inf.
    """
    if not isinstance(logits, torch.Tensor) or not logits.dtype.is_floating_point \
            or logits.dim() != 3:
        raise TypeError("logits must be a float tensor of shape (batch, n, vocab); got "
                        + (f"dtype {logits.dtype}, shape {tuple(logits.shape)}"
                           if isinstance(logits, torch.Tensor) else type(logits).__name__))
    expected, vocab = tuple(logits.shape[:2]), logits.shape[2]
    if vocab == 0:
        raise ValueError(f"logits must hold at least one score per position (vocab >= 1); "
                         f"got shape {tuple(logits.shape)}")
    real = real_mask(real, expected, logits)
    if not real.any():
        raise ValueError("real must mark at least one target as real; the mean over no "
                         "targets is undefined")
    targets = id_tensor(targets, "targets", vocab, "(batch, n)", shape=expected, where=real,
                        hint=" where real is True (no id is ignored, as torch's -100 is: "
                             "mark padding with real=False)")
    bad = ~torch.isfinite(logits) & real[..., None]                  # (batch, n, vocab)
    if bad.any():
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"logits must be finite where real is True; found "
                         f"{logits[where].item()} at index {where} of logits with shape "
                         f"{tuple(logits.shape)}")
    return nn.functional.cross_entropy(logits[real], targets[real])  # over (n_real, vocab)


def train(model: nn.Module, seqs, steps: int = 300, batch_size: int = 32,
          lr: float = 3e-3, seed: int = 0) -> np.ndarray:
    """Train a language model in place to predict each next token of `seqs`.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Each step draws batch_size sequences with a torch.Generator seeded with
    `seed`, pads them on the right, and takes one Adam step on
    `masked_loss` of predicting tokens 1 to n from tokens 0 to n - 1. It
    runs on one CPU thread, as `attnbook.learn.train` does.

    Parameters
    ----------
    model : torch.nn.Module
        Called as ``model(idx)`` and returning (logits, weights), such as
        `attnbook.transformer.TinyGPT`.
    seqs : sequence of sequences of int
        Training sequences of token ids, each at least two long.
    steps : int, default 300
    batch_size : int, default 32
    lr : float, default 3e-3
        Adam's step size, > 0.
    seed : int, default 0

    Returns
    -------
    losses : ndarray, shape (n_steps,)
        The training loss at each step.
    """
    require_module(model)
    steps, batch_size = positive_int(steps, "steps"), positive_int(batch_size, "batch_size")
    seed, lr = integer_at_least(seed, "seed", 0), positive_number(lr, "lr")
    idx, real = pad(seqs)                                           # (n_sequences, n)
    if real.sum(1).min() < 2:
        raise ValueError("every sequence in seqs must hold at least two tokens (an input "
                         "and the token that follows it)")
    require_fits(model, idx, real, "seqs", idx.shape[1] - 1)
    with torch.no_grad():                  # one sequence, to see what the model returns
        was = model.training
        model.eval()
        out = model(idx[:1, :int(real[0].sum()) - 1])
        model.train(was)
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], torch.Tensor)
            and out[0].dim() == 3 and out[0].dtype.is_floating_point):
        raise TypeError(f"model must return (logits, weights) with logits a float tensor of "
                        f"shape (batch, n, vocab), as TinyGPT does; it returned "
                        f"{type(out).__name__}")
    require_fits(model, idx, real, "seqs", None, out[0].shape[-1])
    generator = torch.Generator().manual_seed(seed)
    adam = Adam(list(model.parameters()), lr)
    losses = np.zeros(steps)
    model.train()
    try:
        with one_thread():
            for step in range(steps):
                rows = torch.randint(len(idx), (batch_size,), generator=generator)
                n = int(real[rows].sum(1).max())                     # the batch's longest
                x, r = idx[rows, :n], real[rows, :n]                 # (batch_size, n)
                logits, _ = model(x[:, :-1])                         # (batch_size, n - 1, vocab)
                losses[step] = adam.descend(masked_loss(logits, x[:, 1:], r[:, 1:]))
    finally:
        model.eval()
    return losses


def last_logits(model: nn.Module, prompts) -> torch.Tensor:
    """The model's scores for the token after each prompt, prompts padded on the left.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    Parameters
    ----------
    model : torch.nn.Module
        Called as ``model(idx, real=real)``, such as
        `attnbook.transformer.TinyGPT`.
    prompts : sequence of sequences of int
        Token ids, at least one per prompt, in [0, model.vocab) if the
        model has ``vocab``.

    Returns
    -------
    torch.Tensor, shape (batch, vocab)
    """
    require_module(model, real=True)
    idx, real = _pad(prompts, "left", 0, "prompts")                  # (batch, n)
    require_fits(model, idx, real, "prompts", idx.shape[1])
    with torch.no_grad():
        logits, _ = model(idx, real=real)                            # (batch, n, vocab)
    return logits[:, -1]


def _choose(logits: torch.Tensor, temperature: float, generator) -> torch.Tensor:
    """One token id per row: the largest score at temperature 0, else a sample
    from softmax(logits / temperature)."""
    if temperature == 0:
        return logits.argmax(-1)                                     # (batch,)
    scaled = logits.double() / temperature                           # (batch, vocab)
    if not torch.isfinite(scaled).all():      # a tiny temperature: the gaps to the largest
        top = logits.double().amax(-1, keepdim=True)                 # score scaled instead,
        scaled = (logits.double() - top) / temperature               # 0 for the largest
    probs = torch.softmax(scaled, dim=-1)                            # (batch, vocab)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]    # (batch,)


def generate(model: nn.Module, prompts, n_new: int, temperature: float = 1.0,
             seed: int = 0) -> torch.Tensor:
    """Continue every prompt by n_new tokens, all in one batch, with a KV cache.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    The prompts are padded on the left, so each ends in the last column and
    the new tokens of every row go in one new column. The first call runs
    the padded prompts; each later call runs only the newest token against
    one `attnbook.layer.KVCache` per block. The mask ``real`` tells the model
    which tokens are padding: no query attends to them, and positions count
    only real tokens, so every row is continued as it would be alone.

    Parameters
    ----------
    model : attnbook.transformer.TinyGPT
        Or any module with ``blocks`` called as ``model(idx, cache, real)``.
    prompts : sequence of sequences of int
        Token ids, at least one per prompt, of any integer dtype; in
        [0, model.vocab) if the model has ``vocab``.
    n_new : int
        How many tokens to add to each prompt (longest prompt + n_new must
        fit the model's max_len).
    temperature : float, default 1.0
        Any finite number >= 0. Each token is drawn from
        ``softmax(logits / temperature)``; 0 takes the largest score
        instead (greedy decoding), and a temperature so small that
        ``logits / temperature`` overflows draws among the largest scores
        only, which is the same choice unless two scores tie.
    seed : int, default 0
        Seeds the torch.Generator the draws come from.

    Returns
    -------
    torch.Tensor of int64, shape (batch, n_new)
        The new tokens; a row keeps going after END, and
        `attnbook.language.decode` stops at it: ``decode(generate(...))``
        is a list of strings, one per prompt.

    Raises
    ------
    TypeError
        If `model` has no ``blocks``, `prompts` is not a list of id
        sequences, or `temperature` is not a real number.
    ValueError
        If a prompt is empty or holds an id outside the vocabulary, the
        prompts and n_new exceed max_len, `temperature` is negative, NaN or
        inf, or the model's logits are not finite.
    """
    require_module(model, blocks=True)
    n_new = positive_int(n_new, "n_new")
    seed = integer_at_least(seed, "seed", 0)
    if isinstance(temperature, (bool, np.bool_)) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a real number >= 0 (0: greedy), got "
                        f"{type(temperature).__name__} {temperature!r}")
    if not 0 <= temperature <= float(np.finfo(np.float64).max):    # 10**400 too
        raise ValueError(f"temperature must be a finite number >= 0 (0: greedy), got "
                         f"{temperature!r}")
    idx, real = _pad(prompts, "left", 0, "prompts")                  # (batch, n)
    require_fits(model, idx, real, "prompts", None)
    max_len = getattr(model, "max_len", None)
    if max_len is not None and idx.shape[1] + n_new - 1 > max_len:
        raise ValueError(f"the longest prompt (n = {idx.shape[1]} tokens) and n_new - 1 = "
                         f"{n_new - 1} more tokens in the cache exceed the model's max_len = "
                         f"{max_len}; shorten the prompts or n_new")
    cache = [KVCache() for _ in model.blocks]
    generator = torch.Generator().manual_seed(seed)
    new = []
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            tokens = idx
            for _ in range(n_new):
                logits, _ = model(tokens, cache, real)               # (batch, n, vocab)
                if not torch.isfinite(logits[:, -1]).all():
                    raise ValueError(f"the model's logits must be finite to choose a token; "
                                     f"at new token {len(new)} they hold NaN or inf")
                tokens = _choose(logits[:, -1], float(temperature), generator)[:, None]
                new.append(tokens)                                   # (batch, 1)
                real = torch.cat([real, torch.ones_like(tokens, dtype=torch.bool)], 1)
    finally:
        model.train(was)
    return torch.cat(new, 1)                                         # (batch, n_new)


@contextlib.contextmanager
def without_heads(model: nn.Module, heads):
    """Inside the ``with`` block, the given heads of `model` output zeros: an ablation.

    Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

    A head's output is its slice of the input of its block's output
    projection ``attn.proj``; a forward pre-hook sets that slice to zero, so
    the head adds nothing to the residual stream while its weights are
    still computed and returned. The hooks are removed on leaving the block,
    also when it raises.

    Parameters
    ----------
    model : attnbook.transformer.TinyGPT
        Or any module whose ``blocks[layer].attn`` has ``n_heads``, ``d_head``
        and the linear layer ``proj``.
    heads : sequence of (int, int)
        (layer, head) pairs, both counted from 0 as in the code: ``(1, 0)``
        is the first head of the second layer.

    Yields
    ------
    torch.nn.Module
        The model itself.
    """
    require_module(model, blocks=True)
    if isinstance(heads, (str, bytes)) or not hasattr(heads, "__iter__"):
        raise TypeError(f"heads must be a sequence of (layer, head) pairs, got {heads!r}")
    pairs = []
    for p in heads:
        if not (isinstance(p, (tuple, list, np.ndarray)) and len(p) == 2):
            raise TypeError(f"heads must be (layer, head) pairs, got {p!r} in heads")
        pairs.append((index_into(p[0], len(model.blocks), "a layer in heads"),
                      index_into(p[1], model.blocks[0].attn.n_heads, "a head in heads")))
    for layer, head in pairs:
        if not (0 <= layer < len(model.blocks) and 0 <= head < model.blocks[layer].attn.n_heads):
            raise ValueError(f"no head {head} in layer {layer} (both counted from 0): the model "
                             f"has {len(model.blocks)} layers of "
                             f"{model.blocks[0].attn.n_heads} heads")
    hooks = []

    def hook(drop):
        def zero(module, args):
            x = args[0].clone()                                      # (batch, n, d_model)
            for lo, hi in drop:
                x[..., lo:hi] = 0
            return (x, *args[1:])
        return zero

    try:
        for layer in sorted({layer for layer, _ in pairs}):
            attn = model.blocks[layer].attn
            drop = [(h * attn.d_head, (h + 1) * attn.d_head) for l_, h in pairs if l_ == layer]
            hooks.append(attn.proj.register_forward_pre_hook(hook(drop)))
        yield model
    finally:
        for handle in hooks:
            handle.remove()
