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

from ._checks import as_mask, as_real, require_finite, require_finite_scores, require_ndim
from .core import softmax

__all__ = ["softmax_over_queries", "mask_after_softmax", "multiply_by_sqrt_d",
           "float16_additive_mask", "queries_equal_keys", "BUGS"]


def __dir__() -> list[str]:
    return sorted(__all__)


def _checked(Q, K, mask=None, needs_mask=False):
    """Q, K as float64 (n_q, d_k), (n_k, d_k), and the mask broadcast to (n_q, n_k).

    The bugs are in the arithmetic, never in the input: each function refuses
    what scaled_dot_product_attention refuses, before computing anything.
    """
    Q, K = as_real(Q, "Q"), as_real(K, "K")
    require_ndim(Q, "Q", (2,), "(n_q, d_k)")
    require_ndim(K, "K", (2,), "(n_k, d_k)")
    n_k, d_k = K.shape
    if Q.shape[1] != d_k:
        raise ValueError(f"Q and K must share d_k (their last axis): expected Q (n_q, {d_k}) "
                         f"to match K of shape {K.shape}; got Q of shape {Q.shape}")
    if d_k == 0:
        raise ValueError(f"d_k must be at least 1; got K of shape {K.shape}")
    if n_k == 0:
        raise ValueError(f"there must be at least one key; got K of shape {K.shape} (n_k = 0)")
    require_finite(Q, "Q")
    require_finite(K, "K")
    if needs_mask:
        if mask is None:
            raise TypeError("mask is required: a boolean (n_q, n_k) array, True = may attend")
        mask = as_mask(mask, "mask", (Q.shape[0], n_k))
    return Q, K, mask


def _scaled_scores(A, B, what, times_sqrt_d=False):
    """A Bᵀ / √d_k (or · √d_k), refused if it overflows float64 (a softmax would
    turn it into NaN or a zero row). `what` says which inputs to rescale."""
    root_d = np.sqrt(B.shape[1])
    with np.errstate(over="ignore", invalid="ignore"):
        scores = A @ B.T * root_d if times_sqrt_d else A @ B.T / root_d   # (rows of A, rows of B)
    require_finite_scores(scores, None, what)
    return scores


def softmax_over_queries(Q, K):
    """softmax over axis 0 instead of -1. Symptom: columns sum to 1, rows do not.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    Parameters
    ----------
    Q : array_like, shape (n_q, d_k)
        The softmax normalises over these n_q queries (axis 0): the bug.
    K : array_like, shape (n_k, d_k)

    Returns
    -------
    weights : ndarray, shape (n_q, n_k)
    """
    Q, K, _ = _checked(Q, K)
    scores = _scaled_scores(Q, K, "rescale Q or K")
    return softmax(scores, axis=0)


def mask_after_softmax(Q, K, mask):
    """Softmax first, then zero the masked weights.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    Symptom: masked entries are 0, but rows sum to less than 1 (the removed
    share is never redistributed).

    Parameters
    ----------
    Q : array_like, shape (n_q, d_k)
    K : array_like, shape (n_k, d_k)
    mask : array_like of bool, broadcastable to (n_q, n_k)
        True = may attend; applied to the weights after the softmax: the bug.

    Returns
    -------
    weights : ndarray, shape (n_q, n_k)
    """
    Q, K, mask = _checked(Q, K, mask, needs_mask=True)
    weights = softmax(_scaled_scores(Q, K, "rescale Q or K"), axis=1)
    return np.where(mask, weights, 0.0)


def multiply_by_sqrt_d(Q, K):
    """scores * sqrt(d_k) instead of / sqrt(d_k). Symptom: near one-hot rows.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    Parameters
    ----------
    Q : array_like, shape (n_q, d_k)
    K : array_like, shape (n_k, d_k)
        The scores Q Kᵀ are multiplied by √d_k instead of divided by it: the
        bug.

    Returns
    -------
    weights : ndarray, shape (n_q, n_k)
    """
    Q, K, _ = _checked(Q, K)
    return softmax(_scaled_scores(Q, K, "rescale Q or K", times_sqrt_d=True), axis=1)


def float16_additive_mask(Q, K, mask):
    """In float16, add (~mask) * -1e9 to the scores.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    numpy converts the constant first: ``np.float16(-1e9)`` is -inf, and
    0 * -inf = NaN, so every score becomes NaN or -inf. Symptom: every row is
    NaN (a blank heatmap). (torch differs: ``masked_fill`` with -1e9 on a
    float16 tensor raises an error, and a float16 mask times -1e9 gives the
    right weights.)

    Parameters
    ----------
    Q : array_like, shape (n_q, d_k)
    K : array_like, shape (n_k, d_k)
    mask : array_like of bool, broadcastable to (n_q, n_k)
        True = may attend; added to the float16 scores as (~mask) * -1e9: the
        bug.

    Returns
    -------
    weights : ndarray, shape (n_q, n_k)
        All NaN: the bug's symptom, not a bad input.
    """
    Q, K, mask = _checked(Q, K, mask, needs_mask=True)
    scores = _scaled_scores(Q, K, "rescale Q or K")
    with np.errstate(over="ignore", invalid="ignore"):
        scores = scores.astype(np.float16)
        penalty = np.float16(-1e9)                      # -inf: float16 stops at 65504
        scores = scores + (~mask).astype(np.float16) * penalty
        top = np.max(scores, axis=1, keepdims=True)
        e = np.exp((scores - top).astype(np.float64))
        return e / e.sum(axis=1, keepdims=True)


def queries_equal_keys(Q, K):
    """Passing the keys as queries (softmax(K Kᵀ)).

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    Symptom: a bright diagonal, each token attending mostly to itself
    whatever it should be asking.

    Parameters
    ----------
    Q : array_like, shape (n_q, d_k)
        Checked like a real query and then ignored (that is the bug).
    K : array_like, shape (n_k, d_k)

    Returns
    -------
    weights : ndarray, shape (n_k, n_k)
    """
    _, K, _ = _checked(Q, K)
    return softmax(_scaled_scores(K, K, "rescale K"), axis=1)


#: name -> (function, needs a mask)
BUGS = {
    "softmax over the wrong axis": (softmax_over_queries, False),
    "mask applied after the softmax": (mask_after_softmax, True),
    "multiplying by √d_k": (multiply_by_sqrt_d, False),
    "−1e9 mask in float16": (float16_additive_mask, True),
    "queries equal to the keys": (queries_equal_keys, False),
}
