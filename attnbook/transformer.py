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

import re
from collections.abc import Mapping

import torch
from torch import nn

from ._checks import flag, integer_at_least, positive_int
from ._checks_torch import (
    float_tensor,
    require_finite_result,
    require_same_dtype,
    token_ids,
)
from .layer import (
    CausalSelfAttention,
    KVCache,
    cached_length,
    causal_heads,
    register_causal_mask,
    with_key_mask,
)

__all__ = ["GroupedQueryAttention", "Block", "TinyGPT"]


def _heads(d_model, n_heads, n_kv_heads) -> tuple[int, int, int]:
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


# the MLP's activation: name -> nn.GELU's `approximate`
_ACTIVATIONS = {"gelu": "none", "gelu_tanh": "tanh"}


def _gelu(activation) -> nn.GELU:
    """The MLP's GELU for `activation`, "gelu" (exact) or "gelu_tanh" (GPT-2's)."""
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be 'gelu' (exact, x Phi(x)) or 'gelu_tanh' (the "
                         f"tanh approximation GPT-2 uses); got {type(activation).__name__} "
                         f"{activation!r}")
    return nn.GELU(approximate=_ACTIVATIONS[activation])


def _check_x(x, d_model: int, reference: torch.Tensor) -> torch.Tensor:
    """x as a float tensor (batch, n, d_model) of the parameters' dtype, without
    NaN or inf (a tensor on the meta device has shapes only, and is not read)."""
    if isinstance(x, torch.Tensor) and x.is_meta and x.dtype.is_floating_point:
        pass
    else:
        x = float_tensor(x, "x", 3, "(batch, n, d_model)")
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"x must have shape (batch, n, d_model) = (batch, n, {d_model}); "
                         f"got {tuple(x.shape)}")
    require_same_dtype(reference, "the module's parameters", x=x)
    return x


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
    output projection ``proj``. A `attnbook.layer.KVCache` passed to `forward`
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
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 max_len: int = 1024, bias: bool = True):
        super().__init__()
        d_model, n_heads, n_kv_heads = _heads(d_model, n_heads, n_kv_heads)
        max_len = positive_int(max_len, "max_len")
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
        output : torch.Tensor, shape (batch, n, d_model)
        weights : torch.Tensor, shape (batch, n_heads, n, n_k)
            n_k = n, or n_past + n with a cache.
        """
        x = _check_x(x, self.d_model, self.q.weight)
        batch, n, _ = x.shape
        n_past = cached_length(self.mask, cache, n)
        h, g, d_head = self.n_heads, self.n_kv_heads, self.d_head
        q = self.q(x).view(batch, n, h, d_head).transpose(1, 2)   # (batch, h, n, d_head)
        k, v = self.kv(x).split(g * d_head, dim=-1)               # 2 x (batch, n, g d_head)
        k = k.view(batch, n, g, d_head).transpose(1, 2)           # (batch, g, n, d_head)
        v = v.view(batch, n, g, d_head).transpose(1, 2)           # (batch, g, n, d_head)
        if cache is not None:
            k, v = cache.append(k, v)                             # (batch, g, n_k, d_head)
        k = k.repeat_interleave(h // g, dim=1)                    # (batch, h, n_k, d_head)
        v = v.repeat_interleave(h // g, dim=1)                    # (batch, h, n_k, d_head)
        n_k = k.shape[-2]
        allowed = self.mask[n_past:n_k, :n_k]                     # (n, n_k)
        allowed = with_key_mask(allowed, key_mask, batch)         # (batch, 1, n, n_k) if masked
        heads, weights = causal_heads(q, k, v, allowed, x.dtype)  # chapter 12's core
        merged = heads.transpose(1, 2).reshape(batch, n, self.d_model)  # (batch, n, d_model)
        output = self.proj(merged)                                # (batch, n, d_model)
        require_finite_result(output, "the output projection proj(heads)")
        return output, weights


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
    or `GroupedQueryAttention` when n_kv_heads is given), ``ln2`` and
    ``mlp`` (``Linear(d_model, 4 d_model)``, GELU,
    ``Linear(4 d_model, d_model)``): the layout of
    ``torch.nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model,
    dropout=0.0, activation="gelu", batch_first=True, norm_first=pre_ln)``.
    The layer norms have torch's eps = 1e-5, which is also GPT-2's.

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
    activation : {"gelu", "gelu_tanh"}, default "gelu"
        The MLP's GELU: exact, x Phi(x), or the tanh approximation GPT-2
        uses, ``approximate="tanh"`` in ``nn.GELU`` (Hugging Face's
        ``gelu_new``).
    bias : bool, default True
        Whether the attention's and the MLP's linear maps have biases
        (GPT-2's do); the layer norms always have their shift.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None,
                 max_len: int = 1024, pre_ln: bool = True, *, activation: str = "gelu",
                 bias: bool = True):
        super().__init__()
        d_model, n_heads, n_kv_heads = _heads(d_model, n_heads, n_kv_heads)
        gelu, bias = _gelu(activation), flag(bias, "bias")
        if not isinstance(pre_ln, bool):
            raise TypeError(f"pre_ln must be True or False, got {type(pre_ln).__name__} "
                            f"{pre_ln!r}")
        self.d_model, self.pre_ln = d_model, pre_ln
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        if n_kv_heads == n_heads:
            self.attn = CausalSelfAttention(d_model, n_heads, max_len=max_len, bias=bias)
        else:
            self.attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads, max_len=max_len,
                                              bias=bias)
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
        x = _check_x(x, self.d_model, self.ln1.weight)
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
        output : torch.Tensor, shape (batch, n, d_model)
        weights : torch.Tensor, shape (batch, n_heads, n, n_k)
        """
        if self.pre_ln:
            a, m, weights = self.writes(x, cache, key_mask)
            return x + a + m, weights
        x = _check_x(x, self.d_model, self.ln1.weight)
        a, weights = self.attn(x, cache, key_mask)
        x = self.ln1(x + a)                                       # (batch, n, d_model)
        return self.ln2(x + self.mlp(x)), weights


class TinyGPT(nn.Module):
    """A GPT-style language model: embeddings, n_layers blocks, a readout.

    Taught in :doc:`/chapters/14_the_whole_block` (chapter 14).

    Token embeddings plus learned position embeddings (GPT-2's), the
    blocks, a final layer norm (pre-LN only; a post-LN stack already ends
    in one) and the readout ``head``, whose weight *is* the token embedding
    matrix (weight tying): ``model.head.weight is model.tok_emb.weight``,
    unless ``tied=False``. Every linear and embedding weight starts normal
    with standard deviation 0.02, biases 0, layer norms at scale 1 and
    shift 0; ``seed`` makes them reproducible. GPT-2 draws the same way but
    also scales the output projections of the residual branches
    (``attn.proj``, ``mlp[2]``) by 1/sqrt(2 n_layers); TinyGPT does not.
    With ``activation="gelu_tanh"`` it computes what GPT-2 computes, and
    `from_gpt2` loads GPT-2's weights.

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
    activation : {"gelu", "gelu_tanh"}, default "gelu"
        The blocks' GELU, as in `Block`: exact, or GPT-2's tanh
        approximation.
    bias : bool, default True
        Whether the blocks' linear maps have biases, as in `Block`.
    tied : bool, default True
        Whether the readout ``head`` shares the token embedding matrix
        (GPT-2's weight tying); False gives it a matrix of its own.
    """

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int,
                 max_len: int, n_kv_heads: int | None = None, pre_ln: bool = True,
                 seed: int = 0, *, activation: str = "gelu", bias: bool = True,
                 tied: bool = True):
        super().__init__()
        vocab, n_layers = positive_int(vocab, "vocab"), positive_int(n_layers, "n_layers")
        max_len = positive_int(max_len, "max_len")
        d_model, n_heads, n_kv_heads = _heads(d_model, n_heads, n_kv_heads)
        seed = integer_at_least(seed, "seed", 0)
        _gelu(activation)
        bias, tied = flag(bias, "bias"), flag(tied, "tied")
        self.vocab, self.max_len, self.pre_ln = vocab, max_len, pre_ln
        with torch.random.fork_rng(devices=[]):        # torch's default init draws
            self.tok_emb = nn.Embedding(vocab, d_model)
            self.pos_emb = nn.Embedding(max_len, d_model)
            self.blocks = nn.ModuleList(Block(d_model, n_heads, n_kv_heads, max_len, pre_ln,
                                              activation=activation, bias=bias)
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

    @classmethod
    def from_gpt2(cls, state_dict, n_heads: int) -> TinyGPT:
        """A TinyGPT that computes what a GPT-2 checkpoint computes, its weights copied in.

        Taught in :doc:`/chapters/15_tiny_language_model` (chapter 15).

        The sizes come from the shapes: vocab and d_model from ``wte``,
        max_len from ``wpe``, n_layers from the blocks ``h.0``, ``h.1``,
        and so on. The number of heads is not in any shape, so it is an
        argument (``GPT2Config.n_head``; 12 for GPT-2 small). The model
        has pre-LN blocks with biases and ``activation="gelu_tanh"``.
        GPT-2's ``Conv1D`` layers store their weights as (in, out), so
        ``c_attn``, ``c_proj``, ``c_fc`` and ``mlp.c_proj`` are copied
        transposed into ``qkv``, ``proj``, ``mlp[0]`` and ``mlp[2]``;
        ``c_attn``'s output columns are Q, K and V side by side, the layout
        of ``qkv``. The settings that change no shape are assumed to be
        those of every released GPT-2 (``GPT2Config``'s defaults): layer
        norm eps 1e-5, the activation ``gelu_new`` (the tanh GELU), scores
        divided by sqrt(d_head) and by nothing else.

        Parameters
        ----------
        state_dict : mapping of str to torch.Tensor
            The ``state_dict()`` of a Hugging Face ``GPT2LMHeadModel``
            (names starting with ``transformer.``, and ``lm_head.weight``)
            or of a ``GPT2Model`` (no prefix and no ``lm_head``). The old
            checkpoints' causal-mask buffers ``h.<i>.attn.bias`` and
            ``h.<i>.attn.masked_bias`` are ignored.
            An ``lm_head.weight`` equal to ``wte.weight`` (or none) gives a
            tied readout, any other an untied one holding it.
        n_heads : int
            Attention heads per block; must divide d_model.

        Returns
        -------
        TinyGPT
            In eval mode, with the parameters' dtype and device those of
            ``wte.weight``.

        Raises
        ------
        TypeError
            If state_dict is not a mapping of names to floating-point
            tensors of one dtype.
        ValueError
            If a name GPT-2 has is missing, a name it does not have is
            present, a tensor has the wrong shape or holds NaN or inf, or
            n_heads does not divide d_model.
        """
        sd = _gpt2_names(state_dict)
        wte, wpe = sd["wte.weight"], sd["wpe.weight"]
        vocab, d = wte.shape
        d_model, n_heads, _ = _heads(d, n_heads, None)
        n_layers = 1 + max((int(name.split(".")[1]) for name in sd
                            if re.match(r"h\.\d+\.", name)), default=-1)
        if n_layers == 0:
            raise ValueError(f"state_dict is not GPT-2's: it has no blocks 'h.0.*'; got the "
                             f"names {_some(sd)}")
        expected = _gpt2_shapes(vocab, d, wpe.shape[0], n_layers)
        _check_gpt2(sd, expected)
        head = sd.get("lm_head.weight")
        tied = head is None or torch.equal(head, wte)
        with torch.device("meta"):    # no initial draws: every weight is copied in below
            model = cls(vocab, d_model, n_heads, n_layers, wpe.shape[0],
                        activation="gelu_tanh", tied=tied)
        model = model.to_empty(device="cpu").to(wte.dtype)
        if tied:
            model.head.weight = model.tok_emb.weight               # to_empty untied them
        for block in model.blocks:            # the causal masks, which no state dict holds
            register_causal_mask(block.attn, wpe.shape[0])
        unset = [name for name, _ in model.named_buffers() if not name.endswith("attn.mask")]
        if unset:                             # a buffer added to TinyGPT must be set here
            raise RuntimeError(f"from_gpt2 does not set the buffers {unset}")
        ours = {"tok_emb.weight": wte, "pos_emb.weight": wpe,
                "ln_f.weight": sd["ln_f.weight"], "ln_f.bias": sd["ln_f.bias"],
                "head.weight": wte if tied else head}
        for i in range(n_layers):
            for theirs, mine, transposed in _GPT2_BLOCK:
                w = sd[f"h.{i}.{theirs}.weight"]                   # Conv1D's: (in, out)
                ours[f"blocks.{i}.{mine}.weight"] = w.T if transposed else w
                ours[f"blocks.{i}.{mine}.bias"] = sd[f"h.{i}.{theirs}.bias"]
        model.load_state_dict(ours)
        return model.to(wte.device).eval()

    def _embed(self, idx, cache=None, real=None) -> torch.Tensor:
        """Token plus position embeddings, (batch, n, d_model), with the checks."""
        token_ids(idx, "idx", self.vocab)
        if idx.shape[1] == 0:
            raise ValueError(f"idx must have shape (batch, n) with n >= 1; got "
                             f"{tuple(idx.shape)}")
        n_past = self._cached(cache)
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
        return self.tok_emb(idx) + self.pos_emb(positions)         # (batch, n, d_model)

    def _cached(self, cache) -> int:
        """n_past of a checked cache: None, or one KVCache per block, all equally long."""
        if cache is None:
            return 0
        if not isinstance(cache, (list, tuple)) or len(cache) != len(self.blocks) \
                or not all(isinstance(c, KVCache) for c in cache):
            raise TypeError(f"cache must be a list of n_layers = {len(self.blocks)} KVCache "
                            f"objects, one per block; got {type(cache).__name__}"
                            + (f" of length {len(cache)}" if isinstance(cache, (list, tuple))
                               else ""))
        lengths = {len(c) for c in cache}
        if len(lengths) > 1:
            raise ValueError(f"every block's KVCache must hold the same tokens; got lengths "
                             f"{[len(c) for c in cache]}")
        return lengths.pop()

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


# GPT-2's name in a block, TinyGPT's, and whether the weight is stored transposed
_GPT2_BLOCK = [("ln_1", "ln1", False), ("attn.c_attn", "attn.qkv", True),
               ("attn.c_proj", "attn.proj", True), ("ln_2", "ln2", False),
               ("mlp.c_fc", "mlp.0", True), ("mlp.c_proj", "mlp.2", True)]


def _gpt2_names(state_dict) -> dict[str, torch.Tensor]:
    """The tensors of a GPT-2 state dict by GPT2Model's names (``transformer.``
    dropped; the old causal-mask buffers left out), checked to be float tensors
    of one dtype, with wte and wpe present and 2-D."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"state_dict must be a mapping of names to tensors, such as "
                        f"GPT2LMHeadModel(...).state_dict(); got "
                        f"{type(state_dict).__name__}")
    sd = {}
    for name, t in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"state_dict's keys must be names (str); got "
                            f"{type(name).__name__} {name!r}")
        short = name.removeprefix("transformer.")
        parts = short.split(".")
        if len(parts) == 4 and parts[0] == "h" and parts[2] == "attn" \
                and parts[3] in ("bias", "masked_bias"):
            continue                            # the old checkpoints' causal-mask buffers
        if short in sd:
            raise ValueError(f"state_dict holds {short!r} twice, with and without the "
                             f"prefix 'transformer.'")
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            raise TypeError(f"state_dict[{name!r}] must be a floating-point tensor; got "
                            + (f"dtype {t.dtype}" if isinstance(t, torch.Tensor)
                               else type(t).__name__))
        sd[short] = t
    for name in ("wte.weight", "wpe.weight"):
        if name not in sd:
            what = "token" if name == "wte.weight" else "position"
            raise ValueError(f"state_dict is not GPT-2's: it has no {name!r} (or "
                             f"'transformer.{name}'), the {what} embedding; got the names "
                             f"{_some(sd)}")
        if sd[name].dim() != 2:
            raise ValueError(f"state_dict[{name!r}] must have shape (rows, d_model); got "
                             f"{tuple(sd[name].shape)}")
    dtypes = {t.dtype for t in sd.values()}
    if len(dtypes) > 1:
        raise TypeError(f"state_dict's tensors must share one dtype; got "
                        f"{sorted(str(d) for d in dtypes)}")
    return sd


def _gpt2_shapes(vocab: int, d: int, n_positions: int, n_layers: int) -> dict:
    """The shape of every tensor of GPT-2 with these sizes, by GPT2Model's names."""
    shapes = {"wte.weight": (vocab, d), "wpe.weight": (n_positions, d),
              "ln_f.weight": (d,), "ln_f.bias": (d,)}
    for i in range(n_layers):
        for name, w, b in (("ln_1", (d,), (d,)), ("attn.c_attn", (d, 3 * d), (3 * d,)),
                           ("attn.c_proj", (d, d), (d,)), ("ln_2", (d,), (d,)),
                           ("mlp.c_fc", (d, 4 * d), (4 * d,)),
                           ("mlp.c_proj", (4 * d, d), (d,))):
            shapes[f"h.{i}.{name}.weight"], shapes[f"h.{i}.{name}.bias"] = w, b
    return shapes


def _check_gpt2(sd: dict, expected: dict) -> None:
    """Every name GPT-2 has, no other (``lm_head.weight`` may come too), each of
    its shape and finite."""
    optional = {"lm_head.weight": expected["wte.weight"]}
    missing = [name for name in expected if name not in sd]
    extra = [name for name in sd if name not in expected and name not in optional]
    if missing or extra:
        raise ValueError("state_dict is not GPT-2's (GPT2LMHeadModel's or GPT2Model's): "
                         + (f"missing {_some(missing)}" if missing else "")
                         + ("; " if missing and extra else "")
                         + (f"unexpected {_some(extra)}" if extra else "")
                         + f". Expected the {len(expected)} names of a GPT-2 with "
                         f"{expected['wte.weight'][0]} tokens and d_model = "
                         f"{expected['wte.weight'][1]}, such as 'h.0.attn.c_attn.weight', "
                         f"optionally prefixed 'transformer.'")
    for name, t in sd.items():
        shape = expected.get(name, optional.get(name))
        if tuple(t.shape) != shape:
            raise ValueError(f"state_dict[{name!r}] must have shape {shape} for GPT-2 with "
                             f"vocab = {expected['wte.weight'][0]} and d_model = "
                             f"{expected['wte.weight'][1]}; got {tuple(t.shape)}")
        bad = torch.zeros(()) if t.is_meta else ~torch.isfinite(t)
        if bad.any():
            where = tuple(bad.nonzero()[0].tolist())
            raise ValueError(f"state_dict[{name!r}] must not contain NaN or inf; found "
                             f"{t[where].item()} at index {where}")


def _some(names) -> str:
    """A few of `names`, for an error message."""
    names = sorted(names)
    shown = ", ".join(repr(n) for n in names[:4])
    return f"[{shown}{f', ... ({len(names)} in all)' if len(names) > 4 else ''}]"
