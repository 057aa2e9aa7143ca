"""The induction head (chapter 16): repeated random tokens, a two-layer
attention-only model, and the measurements that find its heads.

A sequence is `half` random tokens followed by the same tokens again, so its
second half can only be predicted by copying. The model is token embeddings,
layers of causal multi-head attention with residual connections (each calls
chapter 12's `attnbook.layer.causal_heads`) and an unembedding; positions
enter only the scores, by chapter 11's RoPE. Training uses chapter 13's
`attnbook.optim.Adam` on one CPU thread; another CPU, maths library or
thread count trains to other last bits, and chapter 16 claims only what
holds for all of them (tests/test_platforms.py).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ._checks import generator, integer_at_least, positive_int, positive_number
from ._checks_induction import attention_weights, halves_range, keep_mask
from ._checks_torch import id_tensor, require_finite_result
from .layer import causal_heads, register_causal_mask, rope
from .optim import Adam, one_thread

__all__ = ["repeated_tokens", "AttentionOnly", "InductionRun", "train_induction",
           "next_token_losses", "previous_token_scores", "induction_scores", "History",
           "history"]


def __dir__() -> list[str]:
    return sorted(__all__)


def repeated_tokens(rng, n_sequences: int, half: int, vocab: int) -> np.ndarray:
    """Sequences of `half` distinct random tokens followed by the same tokens again.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Only the second half can be predicted, and only by finding the current
    token's earlier occurrence and copying the token that followed it: the
    task an induction head solves.

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness: the same generator state gives the
        same sequences.
    n_sequences : int
        How many sequences (rows).
    half : int
        Tokens in each half, at least 1 and at most vocab.
    vocab : int
        Number of token ids.

    Returns
    -------
    ndarray of int64, shape (n_sequences, 2 half)
        ``tokens[:, half:] == tokens[:, :half]``; within a half no id repeats.
    """
    rng = generator(rng)
    n_sequences, half = positive_int(n_sequences, "n_sequences"), positive_int(half, "half")
    vocab = positive_int(vocab, "vocab")
    if half > vocab:
        raise ValueError(f"half must be <= vocab for distinct tokens; got half={half}, "
                         f"vocab={vocab}")
    first = rng.random((n_sequences, vocab)).argsort(axis=1)[:, :half]  # (n_sequences, half)
    return np.concatenate([first, first], axis=1).astype(np.int64)      # (n_sequences, 2 half)


class _RotaryAttention(nn.Module):
    """Causal multi-head attention whose queries and keys are turned by RoPE."""

    def __init__(self, d_model: int, n_heads: int, max_len: int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)           # biases: queries and keys
        self.proj = nn.Linear(d_model, d_model, bias=False)  # that do not depend on the token
        register_causal_mask(self, max_len)                  # mask: (max_len, max_len)

    def forward(self, x: torch.Tensor, keep: torch.Tensor):
        batch, n, d_model = x.shape
        h, d_head = self.n_heads, self.d_head
        qkv = self.qkv(x).view(batch, n, 3, h, d_head).permute(2, 0, 3, 1, 4)
        q, k = rope(qkv[:2])              # chapter 11's `rotate`: (batch, h, n, d_head)
        heads, weights = causal_heads(q, k, qkv[2], self.mask[:n, :n], x.dtype)
        heads = heads * keep[:, None, None].to(x.dtype)                 # ablated heads give 0
        merged = heads.transpose(1, 2).reshape(batch, n, d_model)       # (batch, n, d_model)
        return self.proj(merged), weights                               # (batch, n, d_model)


class AttentionOnly(nn.Module):
    """A Transformer with attention and nothing else: embed, n_layers of heads, unembed.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    The residual stream starts as the token embedding ``tok_emb`` and each
    layer adds its causal attention, ``x = x + attn(x)``; no MLP, no layer norm,
    no position embedding: each head turns its queries and keys by RoPE
    (chapter 11). Layer l is ``layers[l].qkv`` (``Linear(d_model, 3 d_model)``,
    Q, K, V side by side) and ``layers[l].proj`` (no bias); the readout is
    ``unembed``. Initial parameters: torch's defaults, drawn from ``seed``.

    Parameters
    ----------
    vocab : int
        Number of token ids.
    d_model : int
        Width of the residual stream.
    n_heads : int
        Heads per layer; d_head = d_model / n_heads must be a whole even number.
    n_layers : int, default 2
    max_len : int, default 64
        Longest sequence the rotations and the causal mask cover.
    seed : int, default 0
        Seeds the initial parameters (torch's global random state is kept).
    """

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int = 2,
                 max_len: int = 64, seed: int = 0):
        super().__init__()
        self.vocab, self.max_len = positive_int(vocab, "vocab"), positive_int(max_len, "max_len")
        d_model, n_heads = positive_int(d_model, "d_model"), positive_int(n_heads, "n_heads")
        n_layers, seed = positive_int(n_layers, "n_layers"), integer_at_least(seed, "seed", 0)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be a whole even number (RoPE turns pairs "
                             f"of columns); got d_model = {d_model}, n_heads = {n_heads}")
        self.n_layers, self.n_heads = n_layers, n_heads
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.tok_emb = nn.Embedding(self.vocab, d_model)                  # N(0, 1) entries
            self.layers = nn.ModuleList(_RotaryAttention(d_model, n_heads, self.max_len)
                                        for _ in range(n_layers))
            self.unembed = nn.Linear(d_model, self.vocab, bias=False)

    def forward(self, tokens: torch.Tensor, ablate=()):
        """Scores for the next token at every position, and every head's weights.

        Parameters
        ----------
        tokens : torch.Tensor of int, shape (batch, n)
            Token ids in [0, vocab), of any integer dtype; n is at most
            max_len.
        ablate : sequence of (int, int), optional
            (layer, head) pairs, counted from 0, whose output is set to zero
            before the output projection: the head is removed.

        Returns
        -------
        logits : torch.Tensor, shape (batch, n, vocab)
        weights : torch.Tensor, shape (batch, n_layers, n_heads, n, n)
            Rows = queries, columns = keys; an ablated head's weights are
            still returned (they are what it would have used).
        """
        tokens = id_tensor(tokens, "tokens", self.vocab, "(batch, n)")  # (batch, n) int64
        if not 1 <= tokens.shape[1] <= self.max_len:
            raise ValueError(f"tokens must have shape (batch, n) with 1 <= n <= max_len = "
                             f"{self.max_len}; got {tuple(tokens.shape)}")
        keep = keep_mask(ablate, self.n_layers, self.n_heads)        # (n_layers, n_heads)
        x = self.tok_emb(tokens)                                     # (batch, n, d_model)
        weights = []
        for layer, keep_l in zip(self.layers, keep, strict=True):
            a, w = layer(x, keep_l)
            x = x + a                                                # the residual stream
            weights.append(w)
        logits = self.unembed(x)                                     # (batch, n, vocab)
        require_finite_result(logits, "the logits unembed(x)")
        return logits, torch.stack(weights, dim=1)                   # (batch, L, h, n, n)


class InductionRun(NamedTuple):
    """What `train_induction` records.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Parameters
    ----------
    losses : ndarray, shape (n_steps,)
        The training loss at each step: the mean cross-entropy of every
        next-token prediction in the step's batch, both halves together.
    checkpoint_steps : ndarray, shape (n_checkpoints,)
        The steps at which the parameters were saved (0 is before training).
    checkpoints : list of dict
        A ``state_dict()`` copy per checkpoint; the last is the trained model.
    """
    losses: np.ndarray            # (n_steps,)
    checkpoint_steps: np.ndarray  # (n_checkpoints,)
    checkpoints: list             # n_checkpoints state dicts


def train_induction(model: AttentionOnly, steps: int = 600, batch_size: int = 64,
                    lr: float = 0.01, halves=(4, 10), seed: int = 0,
                    checkpoint_every: int = 25) -> InductionRun:
    """Train `model` in place to predict the next token of repeated random sequences.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Each step draws a half length from `halves` and batch_size fresh sequences
    of `repeated_tokens` (a numpy generator seeded with `seed`), and lowers the
    cross-entropy of every next token with `attnbook.optim.Adam` on one CPU
    thread. The length changes, so no head can find the copy by distance.

    Parameters
    ----------
    model : AttentionOnly
    steps : int, default 600
    batch_size : int, default 64
    lr : float, default 0.01
        Adam's step size, > 0.
    halves : (int, int), default (4, 10)
        Smallest and largest half length; 2 * largest - 1 <= max_len.
    seed : int, default 0
    checkpoint_every : int, default 25
        Parameters are saved at step 0, every checkpoint_every steps, and
        after the last step.

    Returns
    -------
    InductionRun
        ``InductionRun(losses, checkpoint_steps, checkpoints)``.
    """
    if not isinstance(model, AttentionOnly):
        raise TypeError(f"model must be an AttentionOnly, got {type(model).__name__}")
    steps, batch_size = positive_int(steps, "steps"), positive_int(batch_size, "batch_size")
    checkpoint_every = positive_int(checkpoint_every, "checkpoint_every")
    seed = integer_at_least(seed, "seed", 0)
    lr = positive_number(lr, "lr")
    low, high = halves_range(halves, model)
    rng = np.random.default_rng(seed)
    adam = Adam(list(model.parameters()), lr)
    losses, marks, saved = np.zeros(steps), [], []
    with one_thread():
        for step in range(steps + 1):
            if step % checkpoint_every == 0 or step == steps:
                marks.append(step)
                saved.append({k: t.detach().clone() for k, t in model.state_dict().items()})
            if step == steps:
                break
            half = int(rng.integers(low, high + 1))
            tokens = torch.from_numpy(repeated_tokens(rng, batch_size, half, model.vocab))
            model.train()
            logits, _ = model(tokens[:, :-1])                        # (batch, n - 1, vocab)
            loss = nn.functional.cross_entropy(logits.transpose(1, 2), tokens[:, 1:])
            losses[step] = adam.descend(loss)
    model.eval()
    return InductionRun(losses, np.array(marks, dtype=int), saved)


def next_token_losses(model: AttentionOnly, tokens, ablate=()):
    """The loss of every next-token prediction, and the weights that made them.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Parameters
    ----------
    model : AttentionOnly
    tokens : array_like of int, shape (batch, n)
        Ids in [0, vocab), of any integer dtype; 2 <= n <= max_len + 1. The
        model reads ``tokens[:, :-1]`` and predicts ``tokens[:, 1:]``, so
        the last column is checked too (no id is ignored, as torch's -100
        is).
    ablate : sequence of (int, int), optional
        Heads to remove, as in `AttentionOnly.forward`.

    Returns
    -------
    losses : ndarray, shape (batch, n - 1)
        ``losses[b, t - 1]`` is the cross-entropy of token t given tokens 0..t-1.
    weights : ndarray, shape (batch, n_layers, n_heads, n - 1, n - 1)
    """
    if not isinstance(model, AttentionOnly):
        raise TypeError(f"model must be an AttentionOnly, got {type(model).__name__}")
    t = id_tensor(tokens, "tokens", model.vocab, "(batch, n)")   # (batch, n) int64
    if not 2 <= t.shape[1] <= model.max_len + 1:
        raise ValueError(f"tokens must have shape (batch, n) with n >= 2 (a token to read "
                         f"and one to predict) and n - 1 <= max_len = {model.max_len}; got "
                         f"{tuple(t.shape)}")
    model.eval()
    with torch.no_grad():
        logits, weights = model(t[:, :-1], ablate)                  # (batch, n - 1, vocab)
        losses = nn.functional.cross_entropy(logits.transpose(1, 2), t[:, 1:],
                                             reduction="none")      # (batch, n - 1)
    return losses.double().numpy(), weights.double().numpy()


def previous_token_scores(weights) -> np.ndarray:
    """Each head's mean weight from position i on position i - 1.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Parameters
    ----------
    weights : array_like, shape (batch, n_heads, n, n)
        One layer's attention weights, batch >= 1 and n >= 2: each row >= 0
        and summing to 1 within the rounding of the narrowest float type
        that holds every value exactly (float64 weights widened from a
        float16 or float32 model are checked at that model's precision);
        positions 1..n-1 are averaged.

    Returns
    -------
    ndarray, shape (n_heads,)
        In [0, 1]; 1 for a head that always looks at the token just before.

    Raises
    ------
    ValueError
        If `weights` has another shape, an empty batch, NaN or inf, a
        negative weight or a row that does not sum to 1 (or 0).
    """
    w = attention_weights(weights)
    i = np.arange(1, w.shape[-1])
    return w[..., i, i - 1].mean(axis=(0, 2))                   # (batch, h, n - 1) -> (h,)


def induction_scores(weights, half: int) -> np.ndarray:
    """Each head's mean weight from a second-half token on the token after its first.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    For sequences of `repeated_tokens`, the token at position q >= half
    first occurred at q - half, so the head should look at q - half + 1.

    Parameters
    ----------
    weights : array_like, shape (batch, n_heads, n, n)
        One layer's attention weights, batch >= 1 and half < n <= 2 half:
        each row >= 0 and summing to 1, as in `previous_token_scores`.
    half : int
        Tokens in each half.

    Returns
    -------
    ndarray, shape (n_heads,)
        In [0, 1]; 1 for a head that always looks at the token after the
        first occurrence.

    Raises
    ------
    ValueError
        As `previous_token_scores`, and if n does not fit `half`.
    """
    w = attention_weights(weights)
    half, n = positive_int(half, "half"), w.shape[-1]
    if not half < n <= 2 * half:
        raise ValueError(f"weights for sequences of two halves of {half} tokens need "
                         f"half < n <= 2 half = {2 * half}; got n = {n}, shape {w.shape}")
    q = np.arange(half, n)                                      # the second half's queries
    return w[..., q, q - half + 1].mean(axis=(0, 2))            # (batch, h, n - half) -> (h,)


class History(NamedTuple):
    """What `history` measures at every checkpoint.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Parameters
    ----------
    steps : ndarray, shape (n_checkpoints,)
    first_half, second_half : ndarray, shape (n_checkpoints,)
        Mean loss on tokens 1..half-1 and on tokens half..2 half-1.
    previous_token, induction : ndarray, shape (n_checkpoints, n_layers, n_heads)
        Every head's `previous_token_scores` and `induction_scores`.
    probe : ndarray, shape (n_checkpoints, n_layers, n_heads, n, n)
        Every head's weights on the first sequence, n = 2 half - 1.
    """
    steps: np.ndarray
    first_half: np.ndarray
    second_half: np.ndarray
    previous_token: np.ndarray
    induction: np.ndarray
    probe: np.ndarray


def history(model: AttentionOnly, run: InductionRun, tokens, half: int) -> History:
    """Load each checkpoint of `run` into `model` and measure it on `tokens`.

    Taught in :doc:`/chapters/16_induction_head` (chapter 16).

    Parameters
    ----------
    model : AttentionOnly
        The trained model; it holds the last checkpoint again afterwards.
    run : InductionRun
        With at least one checkpoint.
    tokens : array_like of int, shape (n_sequences, 2 half)
        Held-out sequences of `repeated_tokens`, ids in [0, vocab).
    half : int

    Returns
    -------
    History
    """
    if not isinstance(model, AttentionOnly):
        raise TypeError(f"model must be an AttentionOnly, got {type(model).__name__}")
    if not isinstance(run, InductionRun):
        raise TypeError(f"run must be the InductionRun of train_induction, got "
                        f"{type(run).__name__}")
    if not run.checkpoints:
        raise ValueError("run must hold at least one checkpoint; run.checkpoints is empty")
    half = integer_at_least(half, "half", 2)
    t = id_tensor(tokens, "tokens", model.vocab, "(n_sequences, 2 half)")
    if t.shape[1] != 2 * half:
        raise ValueError(f"tokens must have shape (n_sequences, 2 half) = (n_sequences, "
                         f"{2 * half}); got {tuple(t.shape)}")
    out = {k: [] for k in History._fields if k != "steps"}
    try:
        for state in run.checkpoints:
            model.load_state_dict(state)
            losses, w = next_token_losses(model, t)   # (batch, n), (batch, L, h, n, n)
            out["first_half"].append(losses[:, :half - 1].mean())
            out["second_half"].append(losses[:, half - 1:].mean())
            layers = range(w.shape[1])
            out["previous_token"].append([previous_token_scores(w[:, i]) for i in layers])
            out["induction"].append([induction_scores(w[:, i], half) for i in layers])
            out["probe"].append(w[0])
    finally:
        model.load_state_dict(run.checkpoints[-1])
    return History(np.asarray(run.checkpoint_steps), *(np.array(out[k]) for k in out))
