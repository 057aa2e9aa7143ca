"""attnbook: the helpers of the book "Attention, Step by Step".

The numpy core is imported here; `attnbook.plots`, `attnbook.explorers`,
`attnbook.examples`, `attnbook.nn` and `attnbook.learn` (the only two modules
that import torch) load on first use, so `import attnbook` stays fast and
torch-free.
"""
from __future__ import annotations

import importlib

from .core import (SelfAttention, causal_mask, masked_softmax,
                   scaled_dot_product_attention, self_attention, softmax)
from .kernel import gaussian_scores, nadaraya_watson, toy_function, toy_regression_data
from .scoring import additive_scores

__version__ = "0.1.0"
__all__ = ["softmax", "masked_softmax", "scaled_dot_product_attention",
           "self_attention", "SelfAttention", "causal_mask", "gaussian_scores",
           "nadaraya_watson", "toy_function", "toy_regression_data",
           "additive_scores"]

_SUBMODULES = {"plots", "explorers", "examples", "nn", "learn"}


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnbook' has no attribute {name!r}")
