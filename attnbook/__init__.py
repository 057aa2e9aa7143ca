"""attnbook: the helpers of the book "Attention, Step by Step".

The numpy core (`core`, `kernel`, `scoring`, `positions`, `blockwise`) is
imported here. The other modules (`attnbook.plots`, `attnbook.explorers`,
the seven that import torch: `attnbook.nn`, `attnbook.layer`,
`attnbook.transformer`, `attnbook.optim`, `attnbook.learn`, `attnbook.lm` and
`attnbook.induction`, and the rest) load on first use, as `attnbook.<name>`
or by an import, so `import attnbook` stays fast and torch-free. So do the
short paths ``attnbook.multi_head_attention``, ``attnbook.TinyGPT`` and the
other names of `attnbook.multihead` and `attnbook.nn` (see ``_LAZY``), the
same in every chapter and in any order. ``dir(attnbook)`` lists them all.
"""
from __future__ import annotations

import importlib

from .blockwise import blockwise_attention
from .core import (
    Attention,
    SelfAttention,
    causal_mask,
    masked_softmax,
    scaled_dot_product_attention,
    self_attention,
    softmax,
    valid_lens_mask,
)
from .kernel import gaussian_scores, nadaraya_watson, toy_function, toy_regression_data
from .positions import rotate, rotate_half, sinusoidal_positions
from .scoring import additive_scores

__version__ = "0.1.0"

#: Short paths to names of the lazily loaded modules: ``attnbook.TinyGPT`` is
#: ``attnbook.transformer.TinyGPT``, loaded (with torch) on first use. They are
#: chapter 10's multi-head attention and every name of `attnbook.nn`, chapters
#: 8-14's torch layers, except its ``masked_softmax`` and ``valid_lens_mask``:
#: ``attnbook.masked_softmax`` and ``attnbook.valid_lens_mask`` are numpy's.
_LAZY = {"multi_head_attention": "multihead", "split_heads": "multihead",
         "merge_heads": "multihead", "MultiHead": "multihead",
         "DotProductAttention": "nn", "AdditiveAttention": "nn",
         "NWKernelRegression": "nn", "CausalSelfAttention": "layer", "KVCache": "layer",
         "causal_heads": "layer", "rope": "layer", "GroupedQueryAttention": "transformer",
         "Block": "transformer", "TinyGPT": "transformer"}

_SUBMODULES = ("analysis", "bugs", "examples", "explorers", "figure_text", "glue",
               "induction", "language", "layer", "learn", "lm", "multihead", "nn", "optim",
               "plots", "transformer")

#: What a reader may use: the numpy core, the short paths (`_LAZY`) and the
#: modules, in alphabetical order. ``from attnbook import *`` therefore loads
#: every module, torch included; ``import attnbook`` loads only the numpy core.
__all__ = ["AdditiveAttention", "Attention", "Block", "CausalSelfAttention",
           "DotProductAttention", "GroupedQueryAttention", "KVCache", "MultiHead",
           "NWKernelRegression", "SelfAttention", "TinyGPT", "additive_scores",
           "analysis", "blockwise", "blockwise_attention", "bugs", "causal_heads",
           "causal_mask", "core", "examples", "explorers", "figure_text",
           "gaussian_scores", "glue", "induction", "kernel", "language", "layer",
           "learn", "lm", "masked_softmax", "merge_heads", "multi_head_attention",
           "multihead", "nadaraya_watson", "nn", "optim", "plots", "positions", "rope",
           "rotate", "rotate_half", "scaled_dot_product_attention", "scoring",
           "self_attention", "sinusoidal_positions", "softmax", "split_heads",
           "toy_function", "toy_regression_data", "transformer", "valid_lens_mask"]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'attnbook' has no attribute {name!r}")


def __dir__() -> list[str]:
    return list(__all__)
