"""A gallery of common attention bugs, each a small wrong implementation.

Chapter 9 draws each one's weights beside the correct ones, and the tests
check that each reproduces the symptom stated in its docstring. Do not use
these for anything else.

Every function takes scores-producing inputs like `scaled_dot_product_attention`:
Q (n_q, d_k), K (n_k, d_k), and a boolean mask (n_q, n_k) where needed, and
returns the (n_q, n_k) weights it would use.
"""
from __future__ import annotations

import numpy as np

from .core import _softmax

__all__ = ["softmax_over_queries", "mask_after_softmax", "multiply_by_sqrt_d",
           "float16_additive_mask", "queries_equal_keys", "BUGS"]


def softmax_over_queries(Q, K):
    """softmax over axis 0 instead of -1. Symptom: columns sum to 1, rows do not."""
    scores = Q @ K.T / np.sqrt(K.shape[1])
    return _softmax(scores, axis=0)


def mask_after_softmax(Q, K, mask):
    """Softmax first, then zero the masked weights. Symptom: masked entries are 0,
    but rows sum to less than 1 (the removed share is never redistributed)."""
    weights = _softmax(Q @ K.T / np.sqrt(K.shape[1]), axis=1)
    return np.where(mask, weights, 0.0)


def multiply_by_sqrt_d(Q, K):
    """scores * sqrt(d_k) instead of / sqrt(d_k). Symptom: near one-hot rows."""
    return _softmax(Q @ K.T * np.sqrt(K.shape[1]), axis=1)


def float16_additive_mask(Q, K, mask):
    """In float16, add (~mask) * -1e9 to the scores. -1e9 overflows to -inf in
    float16, and 0 * -inf = NaN, so every score becomes NaN or -inf.
    Symptom: every row is NaN (a blank heatmap)."""
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (Q @ K.T / np.sqrt(K.shape[1])).astype(np.float16)
        penalty = np.float16(-1e9)                      # -inf: float16 stops at 65504
        scores = scores + (~mask).astype(np.float16) * penalty
        top = np.max(scores, axis=1, keepdims=True)
        e = np.exp((scores - top).astype(np.float64))
        return e / e.sum(axis=1, keepdims=True)


def queries_equal_keys(Q, K):
    """Passing the keys as queries (softmax(K Kᵀ)). Symptom: a bright diagonal,
    each token attending mostly to itself whatever it should be asking."""
    return _softmax(K @ K.T / np.sqrt(K.shape[1]), axis=1)


#: name -> (function, needs a mask)
BUGS = {
    "softmax over the wrong axis": (softmax_over_queries, False),
    "mask applied after the softmax": (mask_after_softmax, True),
    "multiplying by √d_k": (multiply_by_sqrt_d, False),
    "−1e9 mask in float16": (float16_additive_mask, True),
    "queries equal to the keys": (queries_equal_keys, False),
}
