"""The sources' worked examples, as data, so every chapter uses the same numbers.

Nothing here computes; chapters and tests compute from these inputs.
"""
from __future__ import annotations

import numpy as np

__all__ = ["FRUIT_TABLE", "FRUIT_WEIGHTS", "I_AM_GOOD", "KARIM"]

#: The lookup table of Jay Mody's "An Intuition for Attention": key -> value.
FRUIT_TABLE = {"apple": 10.0, "banana": 5.0, "chair": 2.0}

#: The hand-chosen weights for the query "fruit" in the same post.
FRUIT_WEIGHTS = {"apple": 0.6, "banana": 0.4, "chair": 0.0}


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


class _IAmGood:
    """The "I am good" sentence: one 3-d word vector per token (rows of X)."""
    tokens = ("I", "am", "good")
    X = _frozen([[1, 3, 2],
                 [1, 1, 3],
                 [1, 2, 1]])                                 # (n, d) = (3, 3)


class _Karim:
    """Raimi Karim's "Illustrated: Self-Attention": 3 inputs of width 4.

    Weights are (d_model, d) = (4, 3) and multiply the inputs from the right:
    K = X @ W_k, Q = X @ W_q, V = X @ W_v.
    """
    tokens = ("input 1", "input 2", "input 3")
    X = _frozen([[1, 0, 1, 0],
                 [0, 2, 0, 2],
                 [1, 1, 1, 1]])                              # (3, 4)
    W_k = _frozen([[0, 0, 1],
                   [1, 1, 0],
                   [0, 1, 0],
                   [1, 1, 0]])                               # (4, 3)
    W_q = _frozen([[1, 0, 1],
                   [1, 0, 0],
                   [0, 0, 1],
                   [0, 1, 1]])                               # (4, 3)
    W_v = _frozen([[0, 2, 0],
                   [0, 3, 0],
                   [1, 0, 3],
                   [1, 1, 0]])                               # (4, 3)


I_AM_GOOD = _IAmGood()
KARIM = _Karim()
