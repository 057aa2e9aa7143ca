"""attnbook: the helpers of the book "Attention, Step by Step".

The numpy core (`core`, `kernel`, `scoring`, `positions`, `blockwise`) is
imported here. The other modules (`attnbook.plots`, `attnbook.explorers`,
the seven that import torch: `attnbook.nn`, `attnbook.layer`,
`attnbook.transformer`, `attnbook.optim`, `attnbook.learn`, `attnbook.lm` and
`attnbook.induction`, and the rest) load on first use, as `attnbook.<name>`
or by an import, so `import attnbook` stays fast and torch-free.
"""
from __future__ import annotations

import importlib

from .blockwise import blockwise_attention
from .core import (
    SelfAttention,
    causal_mask,
    masked_softmax,
    scaled_dot_product_attention,
    self_attention,
    softmax,
)
from .kernel import gaussian_scores, nadaraya_watson, toy_function, toy_regression_data
from .positions import rotate, rotate_half, sinusoidal_positions
from .scoring import additive_scores

__version__ = "0.1.0"
__all__ = ["softmax", "masked_softmax", "scaled_dot_product_attention",
           "self_attention", "SelfAttention", "causal_mask", "gaussian_scores",
           "nadaraya_watson", "toy_function", "toy_regression_data",
           "additive_scores", "sinusoidal_positions", "rotate", "rotate_half",
           "blockwise_attention"]

_SUBMODULES = {"analysis", "bugs", "examples", "explorers", "figure_text", "glue", "induction",
               "language", "layer", "learn", "lm", "multihead", "nn", "optim", "plots", "transformer"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnbook' has no attribute {name!r}")
