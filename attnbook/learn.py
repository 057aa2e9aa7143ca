"""Attention that learns: two tiny tasks and one-layer attention models for them.

Taught in chapter 13. Task data come from numpy generators that take an
`rng`; models are torch modules whose forward returns (logits, weights)
explicitly, nothing stored on the module. Training runs on CPU with one
thread and a seeded torch.Generator, so on one machine and torch build the
same seed gives the same weights on every run. Another CPU, maths library
or torch build may round some operations differently in the last bit, and
hundreds of steps amplify that: what such a run shares with this one is
what chapter 13 claims (the accuracy targets, the patterns the attention
forms), not the last digits of its weights (tests/test_platforms.py).

The two tasks:

- reversal: read n distinct symbols, write them in reverse order; the answer
  at position i sits at position n-1-i whatever the symbols: only positions find it.
- lookup: read n_pairs (key, value) pairs and a query key, answer the value
  paired with it (chapter 1's dict): only content finds it.
"""
from __future__ import annotations

import contextlib
import math
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from ._checks import flag, generator, integer_at_least, positive_int, positive_number
from ._checks_torch import check_target, row_tensors, token_ids
from .optim import Adam, one_thread
from .positions import sinusoidal_positions

__all__ = ["REVERSAL_TARGET", "LOOKUP_TARGET", "reversal_data", "lookup_data",
           "SequenceAttention", "LookupAttention", "TrainingRun", "train",
           "accuracy"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: Held-out accuracy the reversal task must reach, whatever the seed (chapter 13).
REVERSAL_TARGET = 0.95
#: Held-out accuracy the lookup task must reach, whatever the seed (chapter 13).
LOOKUP_TARGET = 0.95


def reversal_data(rng, n_sequences: int, n: int = 8, n_symbols: int = 16):
    """Sequences of n distinct symbols and their reversals (chapter 13's first task).

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    n_sequences : int
        How many sequences (rows).
    n : int, default 8
        Sequence length, at least 2 and at most n_symbols.
    n_symbols : int, default 16
        How many different symbols there are.

    Returns
    -------
    x, y : ndarray of int64, shape (n_sequences, n)
        ``y[:, i] = x[:, n - 1 - i]``.
    """
    rng = generator(rng)
    n_sequences = positive_int(n_sequences, "n_sequences")
    n = integer_at_least(n, "n", 2)
    n_symbols = integer_at_least(n_symbols, "n_symbols", 2)
    if n > n_symbols:
        raise ValueError(f"n must be <= n_symbols for distinct symbols; got n={n}, "
                         f"n_symbols={n_symbols}")
    x = rng.random((n_sequences, n_symbols)).argsort(axis=1)[:, :n]   # (n_sequences, n)
    return x.astype(np.int64), x[:, ::-1].astype(np.int64).copy()


class Lookups(NamedTuple):
    """A batch of the lookup task (see `lookup_data`)."""
    keys: np.ndarray      # (n_sequences, n_pairs), distinct within a row
    values: np.ndarray    # (n_sequences, n_pairs)
    query: np.ndarray     # (n_sequences,), one of the row's keys
    target: np.ndarray    # (n_sequences,), the value paired with the query
    match: np.ndarray     # (n_sequences,), the index of the matching pair


def lookup_data(rng, n_sequences: int, n_pairs: int = 6, n_keys: int = 16,
                n_values: int = 16) -> Lookups:
    """Dictionaries of n_pairs (key, value) pairs and one query each (chapter 13).

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Keys are distinct within a dictionary, values are drawn with replacement,
    and the query is one of the keys, chosen uniformly.

    Parameters
    ----------
    rng : numpy.random.Generator
        The only source of randomness.
    n_sequences : int
        How many dictionaries (rows).
    n_pairs : int, default 6
        Pairs per dictionary, at most n_keys.
    n_keys, n_values : int, default 16
        How many different keys and values there are.

    Returns
    -------
    Lookups
        ``Lookups(keys, values, query, target, match)``, all int64: keys and
        values (n_sequences, n_pairs); query, target and match (n_sequences,),
        with ``target = values[row, match]`` and ``keys[row, match] = query``.
    """
    rng = generator(rng)
    n_sequences = positive_int(n_sequences, "n_sequences")
    n_pairs = positive_int(n_pairs, "n_pairs")
    n_keys, n_values = positive_int(n_keys, "n_keys"), positive_int(n_values, "n_values")
    if n_pairs > n_keys:
        raise ValueError(f"n_pairs must be <= n_keys for distinct keys; got n_pairs="
                         f"{n_pairs}, n_keys={n_keys}")
    keys = rng.random((n_sequences, n_keys)).argsort(axis=1)[:, :n_pairs]   # (n_seq, n_pairs)
    values = rng.integers(0, n_values, size=(n_sequences, n_pairs))         # (n_seq, n_pairs)
    match = rng.integers(0, n_pairs, size=n_sequences)                       # (n_seq,)
    rows = np.arange(n_sequences)
    return Lookups(*(a.astype(np.int64) for a in (keys, values, keys[rows, match],
                                                  values[rows, match], match)))


def _attend(x_q, x_k, x_v, W_q, W_k, W_v):
    """One head: softmax(x_q W_q (x_k W_k)ᵀ / √d) x_v W_v, and the weights."""
    q, k, v = W_q(x_q), W_k(x_k), W_v(x_v)                          # (..., n_q|n_k, d)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])        # (..., n_q, n_k)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights                                      # (..., n_q, d)


@contextlib.contextmanager
def _seeded(seed: int):
    """Draw torch's random numbers from torch.manual_seed(seed) inside the block,
    and leave the global random state as it was before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(integer_at_least(seed, "seed", 0))
        yield


class SequenceAttention(nn.Module):
    """One self-attention layer that reads symbols and writes a symbol per position.

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    x_j = embedding(token_j) + PE_j (PE: sinusoidal positions, or nothing
    with ``positions=False``); one head of width d_model; a linear readout to
    n_symbols logits.

    Parameters
    ----------
    n_symbols : int, default 16
        Vocabulary size, at least 2.
    n : int, default 8
        Sequence length, at least 2.
    d_model : int, default 32
        Width of the embeddings, even and at least 2.
    positions : bool, default True
        Whether to add the sinusoidal positions.
    seed : int, default 0
        Seeds the initial parameters (the global torch state is left alone).
    """

    def __init__(self, n_symbols: int = 16, n: int = 8, d_model: int = 32,
                 positions: bool = True, seed: int = 0):
        super().__init__()
        self.n_symbols = integer_at_least(n_symbols, "n_symbols", 2)
        self.n = integer_at_least(n, "n", 2)
        d_model = integer_at_least(d_model, "d_model", 2)
        if d_model % 2:
            raise ValueError(f"d_model must be even (sin and cos pairs), got {d_model}")
        with _seeded(seed):
            self.embed = nn.Embedding(self.n_symbols, d_model)      # N(0, 1) entries
            self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False)
                                            for _ in range(3))
            self.readout = nn.Linear(d_model, self.n_symbols)
        pe = (torch.from_numpy(sinusoidal_positions(self.n, d_model)).float()
              if flag(positions, "positions")
              else torch.zeros(self.n, d_model))
        self.register_buffer("pe", pe)                              # (n, d_model)

    def forward(self, tokens: torch.Tensor):
        """Logits for every position, and the attention weights.

        Parameters
        ----------
        tokens : torch.Tensor of int64, shape (batch, n)

        Returns
        -------
        logits : torch.Tensor, shape (batch, n, n_symbols)
        weights : torch.Tensor, shape (batch, n, n)
            Rows = queries (output positions), columns = keys.
        """
        tokens = token_ids(tokens, "tokens", self.n_symbols).long()  # any integer dtype
        if tokens.shape[1] != self.n:
            raise ValueError(f"tokens must have shape (batch, {self.n}); got "
                             f"{tuple(tokens.shape)}")
        x = self.embed(tokens) + self.pe                            # (batch, n, d_model)
        mixed, weights = _attend(x, x, x, self.W_q, self.W_k, self.W_v)
        return self.readout(mixed), weights                         # (batch, n, n_symbols)


class LookupAttention(nn.Module):
    """One query attends over n_pairs (key, value) tokens (chapter 13's dict).

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Pair j is the token x_j = E_key[key_j] + E_value[value_j]; the query is
    E_key[query]. One head of width d_model, then a linear readout to n_values
    logits. There are no positions: a dict has no order.

    Parameters
    ----------
    n_keys, n_values : int, default 16
        How many different keys and values there are.
    d_model : int, default 32
        Width of the embeddings, a positive integer.
    seed : int, default 0
        Seeds the initial parameters.
    """

    def __init__(self, n_keys: int = 16, n_values: int = 16, d_model: int = 32,
                 seed: int = 0):
        super().__init__()
        self.n_keys = positive_int(n_keys, "n_keys")
        self.n_values = positive_int(n_values, "n_values")
        d_model = positive_int(d_model, "d_model")
        with _seeded(seed):
            self.key_embed = nn.Embedding(self.n_keys, d_model)     # N(0, 1) entries
            self.value_embed = nn.Embedding(self.n_values, d_model)
            self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model, bias=False)
                                            for _ in range(3))
            self.readout = nn.Linear(d_model, self.n_values)

    def forward(self, keys: torch.Tensor, values: torch.Tensor, query: torch.Tensor):
        """Logits for the value paired with the query, and the attention weights.

        Parameters
        ----------
        keys, values : torch.Tensor of int64, shape (batch, n_pairs)
        query : torch.Tensor of int64, shape (batch,)

        Returns
        -------
        logits : torch.Tensor, shape (batch, n_values)
        weights : torch.Tensor, shape (batch, n_pairs)
        """
        keys = token_ids(keys, "keys", self.n_keys, "(batch, n_pairs)").long()
        values = token_ids(values, "values", self.n_values, "(batch, n_pairs)").long()
        query = token_ids(query, "query", self.n_keys, "(batch,)", ndim=1).long()
        if values.shape != keys.shape or query.shape[0] != keys.shape[0]:
            raise ValueError(f"keys and values must have the same shape (batch, n_pairs) and "
                             f"query shape (batch,); got keys {tuple(keys.shape)}, values "
                             f"{tuple(values.shape)}, query {tuple(query.shape)}")
        if keys.shape[1] == 0:
            raise ValueError(f"keys must hold at least one pair, shape (batch, n_pairs) with "
                             f"n_pairs >= 1; got {tuple(keys.shape)}")
        pairs = self.key_embed(keys) + self.value_embed(values)     # (batch, n_pairs, d_model)
        q = self.key_embed(query)[:, None, :]                       # (batch, 1, d_model)
        mixed, weights = _attend(q, pairs, pairs, self.W_q, self.W_k, self.W_v)
        return self.readout(mixed[:, 0]), weights[:, 0]             # (batch, n_values), (batch, n_pairs)


class TrainingRun(NamedTuple):
    """What `train` records.

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Parameters
    ----------
    losses : ndarray, shape (n_steps,)
        The training loss at each step.
    snapshot_steps : ndarray, shape (n_snapshots,)
        The steps at which weights were recorded.
    snapshots : ndarray, shape (n_snapshots, ...)
        The probe's attention weights at those steps.
    """
    losses: np.ndarray          # (n_steps,)
    snapshot_steps: np.ndarray  # (n_snapshots,)
    snapshots: np.ndarray       # (n_snapshots, ...)


def _tensor(a) -> torch.Tensor:
    """`a` as a tensor; numpy views with negative strides (x[:, ::-1]) are copied."""
    return a if isinstance(a, torch.Tensor) else torch.as_tensor(np.ascontiguousarray(a))


def _as_tensors(arrays, name: str) -> tuple[torch.Tensor, ...]:
    if not isinstance(arrays, (tuple, list)) or not arrays:
        raise TypeError(f"{name} must be a non-empty tuple of arrays, got {type(arrays).__name__}")
    out = tuple(_tensor(a) for a in arrays)
    if any(t.shape[:1] != out[0].shape[:1] for t in out):
        raise ValueError(f"every array in {name} must have one row per sequence; got shapes "
                         f"{[tuple(t.shape) for t in out]}")
    return out


def train(model: nn.Module, inputs, target, steps: int = 150, batch_size: int = 64,
          lr: float = 0.02, seed: int = 0, probe=None, snapshot_every: int = 15) -> TrainingRun:
    """Train `model` in place with Adam and cross-entropy (chapter 13).

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Each step draws batch_size rows from a torch.Generator seeded with
    `seed`, on one CPU thread, so a run is reproducible on the same machine
    and torch build (another CPU or maths library can give other last bits,
    which training amplifies).

    Parameters
    ----------
    model : torch.nn.Module
        A module whose forward returns (logits, weights).
    inputs : tuple of array_like
        Each with one row per training sequence, passed to ``model(*inputs)``.
    target : array_like of int
        The logits' shape minus the last axis.
    steps : int, default 150
    batch_size : int, default 64
        Training rows per step.
    lr : float, default 0.02
        Adam's step size, > 0.
    seed : int, default 0
        Seeds the generator that draws the batches (an integer >= 0).
    probe : tuple of array_like, optional
        Inputs whose attention weights are recorded at step 0, every
        snapshot_every steps, and after the last step.
    snapshot_every : int, default 15

    Returns
    -------
    TrainingRun
        ``TrainingRun(losses, snapshot_steps, snapshots)``; losses has shape
        (n_steps,) with n_steps = steps.

    Raises
    ------
    TypeError
        For float16 parameters, which Adam cannot update (its eps rounds to
        0); bfloat16, float32 and float64 train.
    ValueError
        If the loss turns into NaN or inf (training diverged), naming the step.
    """
    steps, batch_size = positive_int(steps, "steps"), positive_int(batch_size, "batch_size")
    snapshot_every = positive_int(snapshot_every, "snapshot_every")
    seed = integer_at_least(seed, "seed", 0)
    lr = positive_number(lr, "lr")
    xs = _as_tensors(row_tensors(inputs, "inputs"), "inputs")
    y = check_target(model, xs, target)
    half = [name for name, p in model.named_parameters() if p.dtype == torch.float16]
    if half:
        raise TypeError(f"train cannot update float16 parameters ({half[0]} is float16): "
                        f"Adam's eps = 1e-8 and the squared gradients round to 0 in float16, "
                        f"and the first step turns every parameter into inf or NaN. Train "
                        f"in float32, bfloat16 or float64 (model.float()), and convert "
                        f"with model.half() afterwards")
    probe = None if probe is None else _as_tensors(row_tensors(probe, "probe"), "probe")
    generator = torch.Generator().manual_seed(seed)
    adam = Adam(list(model.parameters()), float(lr))
    losses, marks, shots = np.zeros(steps), [], []
    with one_thread():
        for step in range(steps + 1):
            if probe is not None and (step % snapshot_every == 0 or step == steps):
                model.eval()
                with torch.no_grad():
                    shots.append(model(*probe)[1].numpy().copy())
                marks.append(step)
            if step == steps:
                break
            model.train()
            rows = torch.randint(len(y), (batch_size,), generator=generator)
            logits, _ = model(*(x[rows] for x in xs))
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                               y[rows].reshape(-1))
            if not torch.isfinite(loss.detach()):
                raise ValueError(f"the training loss is {loss.item()} at step {step}: "
                                 f"training diverged (lr = {lr:g}); use a smaller lr, or "
                                 f"float32 or float64 parameters")
            losses[step] = adam.descend(loss)
    model.eval()
    return TrainingRun(losses, np.array(marks, dtype=int),
                       np.array(shots) if shots else np.zeros((0,)))


def accuracy(model: nn.Module, inputs, target) -> float:
    """Fraction of answers (every position of every sequence) the model gets right.

    Taught in :doc:`/chapters/13_attention_that_learns` (chapter 13).

    Parameters
    ----------
    model : torch.nn.Module
        A module whose forward returns (logits, weights).
    inputs : tuple of array_like
        Passed to ``model(*inputs)``.
    target : array_like of int
        The logits' shape minus the last axis.

    Returns
    -------
    float
        In [0, 1].
    """
    xs = _as_tensors(row_tensors(inputs, "inputs"), "inputs")
    y = check_target(model, xs, target)
    model.eval()
    with torch.no_grad():
        logits, _ = model(*xs)
    if tuple(logits.shape[:-1]) != tuple(y.shape):
        raise ValueError(f"target must have shape {tuple(logits.shape[:-1])} (the logits' "
                         f"shape minus the last axis); got {tuple(y.shape)}")
    return float((logits.argmax(-1) == y).double().mean())
