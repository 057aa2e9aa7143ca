"""The whole Transformer block and a tiny GPT around it (chapter 14), in torch.

`Block` wraps chapter 12's `attnbook.layer.CausalSelfAttention` (or, with
``n_kv_heads``, `GroupedQueryAttention`) in layer normalisation, a
feed-forward network and two residual connections, pre-LN by default and
post-LN by flag. `TinyGPT` stacks blocks between token and position
embeddings and a readout tied to the token embeddings. The three classes are
also reachable as ``attnbook.nn.Block``, ``attnbook.nn.TinyGPT`` and
``attnbook.nn.GroupedQueryAttention``. As everywhere in attnbook, a forward
returns the attention weights it used instead of storing them.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import choice, flag, integer_at_least, positive_int
from ._checks_torch import require_finite_result, token_ids
from ._checks_transformer import ACTIVATIONS, block_input, head_counts, n_cached
from ._gpt2 import from_gpt2
from .core import Attention
from .layer import (
    CausalSelfAttention,
    KVCache,
    cached_length,
    causal_heads,
    register_causal_mask,
    rope_option,
    rotate_heads,
    with_key_mask,
)

__all__ = ["GroupedQueryAttention", "Block", "TinyGPT"]


def __dir__() -> list[str]:
    return sorted(__all__)


class GroupedQueryAttention(nn.Module):
    """Causal attention in which groups of query heads share one key-value head.

    Taught in :doc:`/chapters/14_the_whole_block` (chapter 14).

    Grouped-query attention (GQA): h query heads, but only n_kv_heads heads
    of keys and values; query head i uses key-value head
    ``i // (n_heads // n_kv_heads)``, the grouping of
    ``scaled_dot_product_attention(..., enable_gqa=True)``. n_kv_heads = h
    is chapter 12's multi-head attention, n_kv_heads = 1 is multi-query
    attention (MQA). Unlike `attnbook.layer.CausalSelfAttention`, whose fused
    ``qkv`` map copies into ``nn.MultiheadAttention``, the layers are ``q``,
    ``nn.Linear(d_model, d_model)``, and ``kv``,
    ``nn.Linear(d_model, 2 n_kv_heads d_head)`` (keys, then values), and the
    output projection ``proj``. An `attnbook.layer.KVCache` passed to `forward`
    stores only the n_kv_heads heads, which is what GQA saves. There is no
    dropout on the weights.

    Parameters
    ----------
    d_model : int
        Width of the tokens.
    n_heads : int
        Number of query heads h, which must divide d_model.
    n_kv_heads : int, optional
        Number of key-value heads; must divide n_heads. Default: n_heads.
    max_len : int, default 1024
        Longest sequence (with a cache: n_past + n) the causal mask covers.
    bias : bool, default True
        Whether the linear maps have biases.
    rope : {None, "adjacent", "half"}, default None
        Turn queries and keys by `attnbook.layer.rope` in that layout (LLaMA's
        checkpoints use "half" in Hugging Face's code), as in
        `attnbook.layer.CausalSelfAttention`; None adds no positions.
    rope_base : float, default 10000.0
        The base of the rotation frequencies (500000 in LLaMA 3).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 max_len: int = 1024, bias: bool = True, rope: str | None = None,
                 rope_base: float = 10000.0):
        super().__init__()
        d_model, n_heads, n_kv_heads = head_counts(d_model, n_heads, n_kv_heads)
        max_len, bias = positive_int(max_len, "max_len"), flag(bias, "bias")
        self.rope, self.rope_base = rope_option(rope, rope_base, d_model // n_heads)
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.kv = nn.Linear(d_model, 2 * n_kv_heads * self.d_head, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        register_causal_mask(self, max_len)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                key_mask: torch.Tensor | None = None):
        """Attend causally over x (and the cached tokens, if a cache is given).

        Query head i reads key-value head ``i // (n_heads // n_kv_heads)``.

        Parameters
        ----------
        x : torch.Tensor, shape (batch, n, d_model)
        cache : KVCache, optional
            Appended to in place with keys and values of shape
            (batch, n_kv_heads, n, d_head).
        key_mask : torch.Tensor of bool, shape (batch, n_past + n), optional
            False for padding keys, as in chapter 12's ``CausalSelfAttention``.

        Returns
        -------
        Attention
            The named pair ``(output, weights)``:
        output : torch.Tensor, shape (batch, n, d_model)
        weights : torch.Tensor, shape (batch, n_heads, n, n_k)
            n_k = n, or n_past + n with a cache.
        """
        x = block_input(x, self.d_model, self.q.weight)
        batch, n, _ = x.shape
        n_past = cached_length(self.mask, cache, n)
        h, g, d_head = self.n_heads, self.n_kv_heads, self.d_head
        q = self.q(x).view(batch, n, h, d_head).transpose(1, 2)   # (batch, h, n, d_head)
        k, v = self.kv(x).split(g * d_head, dim=-1)               # 2 x (batch, n, g d_head)
        k = k.view(batch, n, g, d_head).transpose(1, 2)           # (batch, g, n, d_head)
        v = v.view(batch, n, g, d_head).transpose(1, 2)           # (batch, g, n, d_head)
        n_k = n_past + n
        allowed = self.mask[n_past:n_k, :n_k]                     # (n, n_k)
        allowed = with_key_mask(allowed, key_mask, batch)         # (batch, 1, n, n_k) if masked
        if self.rope is not None:                                 # positions in the scores
            q, k = rotate_heads(q, k, n_past, key_mask, self.rope, self.rope_base)
        if cache is not None:
            k, v = cache.append(k, v)                             # (batch, g, n_k, d_head)
        k = k.repeat_interleave(h // g, dim=1)                    # (batch, h, n_k, d_head)
        v = v.repeat_interleave(h // g, dim=1)                    # (batch, h, n_k, d_head)
        heads, weights = causal_heads(q, k, v, allowed, x.dtype)  # chapter 12's core
        merged = heads.transpose(1, 2).reshape(batch, n, self.d_model)  # (batch, n, d_model)
        output = self.proj(merged)                                # (batch, n, d_model)
        require_finite_result(output, "the output projection proj(heads)")
        return Attention(output, weights)


class Block(nn.Module):
    """One Transformer block: attention and an MLP, each with a residual connection.

    Taught in :doc:`/chapters/14_the_whole_block` (chapter 14).

    Pre-LN (GPT-2 and later; the default) normalises each sublayer's input
    and adds its output to the residual stream::

        x = x + attn(ln1(x));  x = x + mlp(ln2(x))

    Post-LN (the original Transformer; ``pre_ln=False``) normalises after
    each addition::

        x = ln1(x + attn(x));  x = ln2(x + mlp(x))

    The modules are ``ln1``, ``attn`` (chapter 12's `CausalSelfAttention`,
    or `GroupedQueryAttention` when n_kv_heads is given and differs from
    n_heads), ``ln2`` and
    ``mlp`` (``Linear(d_model, 4 d_model)``, GELU,
    ``Linear(4 d_model, d_model)``): the layout of
    ``torch.nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model,
    dropout=0.0, activation="gelu", batch_first=True, norm_first=pre_ln)``.

    Parameters
    ----------
    d_model : int
        Width of the tokens.
    n_heads : int
        Number of attention heads h; must divide d_model.
    n_kv_heads : int, optional
        Key-value heads for grouped-query attention; must divide n_heads.
        Default: ordinary multi-head attention.
    max_len : int, default 1024
        Longest sequence the causal mask covers.
    pre_ln : bool, default True
        True for pre-LN, False for post-LN.
    rope : {None, "adjacent", "half"}, default None
        Passed to the attention layer: RoPE in that layout, or None.
    activation : {"gelu", "gelu_tanh"}, default "gelu"
        The MLP's GELU: exact, or the tanh approximation GPT-2 uses.
    bias : bool, default True
        Whether the linear maps have biases (the layer norms always do).
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 max_len: int = 1024, pre_ln: bool = True, rope: str | None = None, *,
                 activation: str = "gelu", bias: bool = True):
        super().__init__()
        d_model, n_heads, n_kv_heads = head_counts(d_model, n_heads, n_kv_heads)
        activation, bias = choice(activation, "activation", ACTIVATIONS), flag(bias, "bias")
        pre_ln = flag(pre_ln, "pre_ln")
        self.d_model, self.pre_ln = d_model, pre_ln
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        if n_kv_heads == n_heads:
            self.attn = CausalSelfAttention(d_model, n_heads, max_len=max_len, bias=bias,
                                            rope=rope)
        else:
            self.attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads, max_len, bias=bias,
                                              rope=rope)
        gelu = nn.GELU(approximate="tanh" if activation == "gelu_tanh" else "none")
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model, bias=bias), gelu,
                                 nn.Linear(4 * d_model, d_model, bias=bias))

    def writes(self, x: torch.Tensor, cache: KVCache | None = None,
               key_mask: torch.Tensor | None = None):
        """What a pre-LN block adds to the residual stream: x + a + m is its output.

        Parameters
        ----------
        x : torch.Tensor, shape (batch, n, d_model)
        cache, key_mask : optional
            As in `forward`.

        Returns
        -------
        a : torch.Tensor, shape (batch, n, d_model)
            The attention sublayer's output, ``attn(ln1(x))``.
        m : torch.Tensor, shape (batch, n, d_model)
            The MLP's output, ``mlp(ln2(x + a))``.
        weights : torch.Tensor, shape (batch, n_heads, n, n_k)

        Raises
        ------
        ValueError
            For a post-LN block, whose output is not x plus anything.
        """
        if not self.pre_ln:
            raise ValueError("writes needs a pre-LN block (pre_ln=True): a post-LN block "
                             "normalises after each addition, so its output is not x plus "
                             "what the sublayers add")
        x = block_input(x, self.d_model, self.ln1.weight)
        a, weights = self.attn(self.ln1(x), cache, key_mask)      # (batch, n, d_model)
        m = self.mlp(self.ln2(x + a))                             # (batch, n, d_model)
        return a, m, weights

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                key_mask: torch.Tensor | None = None):
        """Run the block: pre-LN, x plus what the sublayers add (`writes`);
        post-LN, a normalisation after each addition.

        Parameters
        ----------
        x : torch.Tensor, shape (batch, n, d_model)
            The residual stream.
        cache : KVCache, optional
            Passed to the attention layer (generation one token at a time).
        key_mask : torch.Tensor of bool, shape (batch, n_past + n), optional
            False for padding keys, which no query attends to (chapter 15).

        Returns
        -------
        Attention
            The named pair ``(output, weights)``:
        output : torch.Tensor, shape (batch, n, d_model)
        weights : torch.Tensor, shape (batch, n_heads, n, n_k)
        """
        if self.pre_ln:
            a, m, weights = self.writes(x, cache, key_mask)
            return Attention(x + a + m, weights)
        x = block_input(x, self.d_model, self.ln1.weight)
        a, weights = self.attn(x, cache, key_mask)
        x = self.ln1(x + a)                                       # (batch, n, d_model)
        return Attention(self.ln2(x + self.mlp(x)), weights)


class TinyGPT(nn.Module):
    """A GPT-style language model: embeddings, n_layers blocks, a readout.

    Taught in :doc:`/chapters/14_the_whole_block` (chapter 14).

    Token embeddings plus learned position embeddings (GPT-2's), the
    blocks, a final layer norm (pre-LN only; a post-LN stack already ends
    in one) and the readout ``head``, whose weight *is* the token embedding
    matrix (weight tying): ``model.head.weight is model.tok_emb.weight``.
    Every linear and embedding weight starts normal with standard deviation
    0.02, biases 0, layer norms at scale 1 and shift 0; ``seed`` makes them
    reproducible. This is Hugging Face's GPT-2 initialisation without one
    step: Hugging Face also scales the output projections of the residual
    branches (``attn.proj``, ``mlp[2]``) down by 1/sqrt(2 n_layers),
    following the GPT-2 paper (Radford et al. 2019, sec. 2.3; checked in
    transformers 5.24.0, GPT2PreTrainedModel._init_weights); TinyGPT does
    not. OpenAI's released code (openai/gpt-2, src/model.py, commit
    122c55a) scales nothing and starts the position embeddings at standard
    deviation 0.01. `from_gpt2` loads GPT-2's weights.

    Parameters
    ----------
    vocab : int
        Number of token ids (the token embedding has vocab rows).
    d_model : int
        Width of the residual stream.
    n_heads : int
        Attention heads per block; must divide d_model.
    n_layers : int
        Number of blocks.
    max_len : int
        Longest sequence (the position embedding has max_len rows).
    n_kv_heads : int, optional
        Key-value heads per block (grouped-query attention).
    pre_ln : bool, default True
        Pre-LN blocks, or post-LN with False.
    seed : int, default 0
        Seeds the initial weights (a local generator; global state is kept).
    rope : {None, "adjacent", "half"}, default None
        None: GPT-2's learned position embedding ``pos_emb``. A layout: no
        ``pos_emb`` (it is None); every attention layer turns its queries and
        keys by `attnbook.layer.rope` instead, at the same positions (with
        ``real``, the real tokens before each), as LLaMA does.
    activation, bias : optional
        The blocks' GELU and biases, as in `Block` ("gelu_tanh" is GPT-2's).
    tied : bool, default True
        The readout ``head`` shares the token embedding's matrix (tied, as in
        chapter 14); False gives it a matrix of its own.
    """

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int,
                 max_len: int, n_kv_heads: int | None = None, pre_ln: bool = True,
                 seed: int = 0, rope: str | None = None, *, activation: str = "gelu",
                 bias: bool = True, tied: bool = True):
        super().__init__()
        vocab, n_layers = positive_int(vocab, "vocab"), positive_int(n_layers, "n_layers")
        max_len = positive_int(max_len, "max_len")
        d_model, n_heads, n_kv_heads = head_counts(d_model, n_heads, n_kv_heads)
        seed, pre_ln = integer_at_least(seed, "seed", 0), flag(pre_ln, "pre_ln")
        tied = flag(tied, "tied")
        rope_option(rope, 10000.0, d_model // n_heads)            # checked before any draw
        self.vocab, self.max_len, self.pre_ln = vocab, max_len, pre_ln
        with torch.random.fork_rng(devices=[]):        # torch's default init draws
            self.tok_emb = nn.Embedding(vocab, d_model)
            self.pos_emb = nn.Embedding(max_len, d_model) if rope is None else None
            self.blocks = nn.ModuleList(Block(d_model, n_heads, n_kv_heads, max_len, pre_ln,
                                              rope, activation=activation, bias=bias)
                                        for _ in range(n_layers))
            self.ln_f = nn.LayerNorm(d_model) if pre_ln else nn.Identity()
            self.head = nn.Linear(d_model, vocab, bias=False)
        if tied:
            self.head.weight = self.tok_emb.weight                # weight tying
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for module in self.modules():       # (nothing to draw on the meta device)
                if isinstance(module, (nn.Linear, nn.Embedding)) and not module.weight.is_meta:
                    module.weight.copy_(torch.randn(module.weight.shape,
                                                    generator=generator) * 0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    module.bias.zero_()

    from_gpt2 = classmethod(from_gpt2)       # GPT-2's weights: attnbook/_gpt2.py

    def _embed(self, idx, cache=None, real=None) -> torch.Tensor:
        """Token plus position embeddings, (batch, n, d_model), with the checks."""
        idx = token_ids(idx, "idx", self.vocab).long()             # uint8, int32: ids too
        if idx.shape[1] == 0:
            raise ValueError(f"idx must have shape (batch, n) with n >= 1; got "
                             f"{tuple(idx.shape)}")
        n_past = n_cached(cache, self.blocks)
        n_all = n_past + idx.shape[1]
        if n_all > self.max_len:
            raise ValueError(f"idx has n = {idx.shape[1]} tokens"
                             + (f" after n_past = {n_past} cached ones" if n_past else "")
                             + f", more than max_len = {self.max_len}, the positions the "
                             f"model has embeddings for")
        if real is None:
            positions = torch.arange(n_past, n_all, device=idx.device)  # (n,)
        else:
            if not isinstance(real, torch.Tensor) or real.dtype != torch.bool:
                raise TypeError("real must be a boolean tensor (True = a real token, False "
                                "= padding), got " + (f"dtype {real.dtype}" if isinstance(
                                    real, torch.Tensor) else type(real).__name__))
            if tuple(real.shape) != (idx.shape[0], n_all):
                raise ValueError(f"real must have shape (batch, n_past + n) = "
                                 f"({idx.shape[0]}, {n_all}), one entry per cached and new "
                                 f"token; got {tuple(real.shape)}")
            # a token's position counts the real tokens before it: padding takes none
            positions = (real.long().cumsum(1) - 1).clamp(min=0)[:, n_past:]  # (batch, n)
        if self.pos_emb is None:                                   # RoPE: in the scores
            return self.tok_emb(idx)                               # (batch, n, d_model)
        return self.tok_emb(idx) + self.pos_emb(positions)         # (batch, n, d_model)

    def stream(self, idx: torch.Tensor) -> torch.Tensor:
        """The residual stream as a sum: the embedding and what each sublayer adds.

        Parameters
        ----------
        idx : torch.Tensor of int, shape (batch, n)
            Token ids in [0, vocab).

        Returns
        -------
        terms : torch.Tensor, shape (2 n_layers + 1, batch, n, d_model)
            ``terms[0]`` is the embedding; ``terms[2l + 1]`` and
            ``terms[2l + 2]`` are what block l's attention and MLP add.
            ``terms.sum(0)`` is the stream after the last block, the input
            of ``ln_f``.

        Raises
        ------
        ValueError
            For a post-LN model (its stream is renormalised after every
            addition, so it is no sum).
        """
        if not self.pre_ln:
            raise ValueError("stream needs a pre-LN model (pre_ln=True): post-LN "
                             "normalises after each addition, so its stream is no sum")
        x = self._embed(idx)                                       # (batch, n, d_model)
        terms = [x]
        for block in self.blocks:
            a, m, _ = block.writes(x)
            terms += [a, m]
            x = x + a + m
        return torch.stack(terms)                                  # (2 L + 1, batch, n, d_model)

    def forward(self, idx: torch.Tensor, cache: list[KVCache] | None = None,
                real: torch.Tensor | None = None):
        """Scores for the next token at every position.

        Parameters
        ----------
        idx : torch.Tensor of int, shape (batch, n)
            Token ids in [0, vocab); n_past + n is at most max_len.
        cache : list of KVCache, optional
            One per block, for generating a token at a time
            (:doc:`/chapters/15_tiny_language_model`, chapter 15): they hold
            the n_past tokens before idx and are appended to.
        real : torch.Tensor of bool, shape (batch, n_past + n), optional
            True for a real token, False for padding, over the cached tokens
            and idx. No query attends to padding, and a token's position
            counts only the real tokens before it,
            ``real.cumsum(1) - 1``, so padding at the start of a row (left
            padding) moves no position. Default: every token is real.

        Returns
        -------
        logits : torch.Tensor, shape (batch, n, vocab)
        weights : list of torch.Tensor, each of shape (batch, n_heads, n, n_past + n)
            One per block.
        """
        x = self._embed(idx, cache, real)                          # (batch, n, d_model)
        weights = []
        for layer, block in enumerate(self.blocks):
            x, w = block(x, None if cache is None else cache[layer], real)
            weights.append(w)
        return self.head(self.ln_f(x)), weights                    # (batch, n, vocab)
