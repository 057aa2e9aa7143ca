"""Loading GPT-2's weights into TinyGPT: `from_gpt2`, which attnbook.transformer
makes the class method ``TinyGPT.from_gpt2``.

GPT-2's names (Hugging Face's ``GPT2LMHeadModel`` and ``GPT2Model``) are
mapped to TinyGPT's, its ``Conv1D`` weights, stored (in, out), are
transposed into ``nn.Linear``'s (out, in), and a state dict that is not
GPT-2's is refused with the names and shapes that were expected.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from .layer import register_causal_mask


def from_gpt2(cls, state_dict, n_heads: int):
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
        model = cls(vocab, d, n_heads, n_layers, wpe.shape[0],
                    activation="gelu_tanh", tied=tied)          # checks n_heads
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
