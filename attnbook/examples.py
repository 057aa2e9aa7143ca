"""The sources' worked examples, as data, so every chapter uses the same numbers.

Nothing here computes; chapters and tests compute from these inputs.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ._checks import as_real, require_finite, require_ndim

__all__ = ["FRUIT_TABLE", "FRUIT_WEIGHTS", "WORDS", "WORD_GROUPS", "ANALOGY",
           "WorkedExample", "I_AM_GOOD", "KARIM", "word_matrix"]


def __dir__() -> list[str]:
    return sorted(__all__)

#: The lookup table (key -> value) of Jay Mody's "An Intuition for Attention",
#: as revised on 17 February 2023 (commit 50d73f4 of jaymody/blogposts); its
#: first version (October 2022) used racket, ball and tree instead.
FRUIT_TABLE = {"apple": 10.0, "banana": 5.0, "chair": 2.0}

#: The hand-chosen weights for the query "fruit" in the same revision (the
#: first version asked for "tennis").
FRUIT_WEIGHTS = {"apple": 0.6, "banana": 0.4, "chair": 0.0}


def _frozen(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64)
    a.setflags(write=False)
    return a


#: A hand-made 2-d embedding (chapters 3 to 6). Fruits sit up and to the
#: right, vegetables up and a little to the left, furniture at the bottom; the
#: category words sit with their clusters, though none inside the triangle
#: of its three members (chapter 3 asserts it). Every fruit is closer to every
#: vegetable than to any piece of furniture, by distance, cosine and dot
#: product, and the other way round (chapter 3 asserts it). "cherry" points
#: the same way as "fruit" but is short, which is where the dot product and
#: the cosine disagree.
WORDS = {
    "apple": _frozen([2.2, 1.2]),
    "banana": _frozen([1.4, 2.0]),
    "cherry": _frozen([0.6, 0.31]),
    "fruit": _frozen([1.0, 0.5]),
    "carrot": _frozen([-0.7, 1.8]),
    "broccoli": _frozen([-1.0, 1.6]),
    "potato": _frozen([-0.6, 1.3]),
    "vegetable": _frozen([-0.5, 1.0]),
    "chair": _frozen([0.3, -2.0]),
    "table": _frozen([-0.6, -2.4]),
    "sofa": _frozen([0.7, -2.6]),
    "furniture": _frozen([-0.1, -1.8]),
}

#: The cluster of each word in WORDS.
WORD_GROUPS = {
    "fruit": ("apple", "banana", "cherry", "fruit"),
    "vegetable": ("carrot", "broccoli", "potato", "vegetable"),
    "furniture": ("chair", "table", "sofa", "furniture"),
}

#: Toy 2-d vectors for the king - man + woman analogy. Axis 0 ~ "royalty",
#: axis 1 ~ "female minus male", with small deliberate imperfections.
ANALOGY = {
    "man": _frozen([0.3, -1.0]),
    "woman": _frozen([0.4, 1.1]),
    "king": _frozen([2.1, -0.9]),
    "queen": _frozen([2.0, 1.2]),
    "prince": _frozen([1.5, -1.1]),
    "princess": _frozen([1.4, 1.0]),
}


def word_matrix(words, table=None) -> np.ndarray:
    """Stack the vectors of `words` (from WORDS, or `table`) as rows.

    Taught in :doc:`/chapters/03_word_vectors` (chapter 3).

    Parameters
    ----------
    words : sequence of str
        A non-empty list of words (a single string is refused: it is not a
        list of its letters).
    table : dict, optional
        word -> vector; the vectors share one width d and are finite.
        Defaults to WORDS.

    Returns
    -------
    ndarray, shape (n, d)
        One row per word.

    Raises
    ------
    KeyError
        If a word has no vector; the message lists the known words.
    """
    table = WORDS if table is None else table
    if not isinstance(table, Mapping):
        raise TypeError(f"table must be a dict word -> vector, got {type(table).__name__}")
    if isinstance(words, (str, bytes)) or not isinstance(words, Iterable) \
            or (isinstance(words, np.ndarray) and words.ndim == 0):
        raise TypeError(f"words must be a list of words, got {type(words).__name__} "
                        f"{words!r}" + (f"; for one word use [{words!r}]"
                                        if isinstance(words, str) else ""))
    words = list(words)
    if not words:
        raise ValueError("words must hold at least one word; got none")
    if not all(isinstance(w, str) for w in words):
        raise TypeError(f"words must be strings; got {[type(w).__name__ for w in words]}")
    missing = [w for w in words if w not in table]
    if missing:
        raise KeyError(f"no vector for {missing}; known words: {sorted(table)}")
    rows = []
    for w in words:
        v = as_real(table[w], f"the vector of {w!r}")
        require_ndim(v, f"the vector of {w!r}", (1,), "(d,)")
        require_finite(v, f"the vector of {w!r}")
        if rows and v.shape != rows[0].shape:
            raise ValueError(f"the words' vectors must share one width d: the vector of "
                             f"{words[0]!r} has shape {rows[0].shape}, the vector of {w!r} "
                             f"has shape {v.shape}")
        rows.append(v)
    return np.stack(rows)                                    # (n, d)


@dataclass(frozen=True, eq=False)
class WorkedExample:
    """A worked example of self-attention from the sources: tokens, their vectors
    and, where the source gives them, the projection matrices.

    Taught in :doc:`/chapters/07_self_attention` (chapter 7). The instances
    `I_AM_GOOD` and `KARIM` are the book's two; their arrays are read-only.

    Parameters
    ----------
    tokens : tuple of str, length n
        The tokens, in order: one per row of `X`.
    X : ndarray, shape (n, d_model)
        One input vector per token.
    W_q, W_k : ndarray, shape (d_model, d_k), or None
        Projections to queries and keys; they multiply `X` from the right
        (``Q = X @ W_q``). None where the source has no projections.
    W_v : ndarray, shape (d_model, d_v), or None
        Projection to values (``V = X @ W_v``), or None.
    """
    tokens: tuple[str, ...]
    X: np.ndarray                                            # (n, d_model)
    W_q: np.ndarray | None = None                            # (d_model, d_k)
    W_k: np.ndarray | None = None                            # (d_model, d_k)
    W_v: np.ndarray | None = None                            # (d_model, d_v)

    def __post_init__(self):
        """Check the fields: tokens strings, X (n, d_model) with one row per token,
        the projections (d_model, ...) with W_q and W_k of one width; all finite."""
        tokens = self.tokens
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable) \
                or not all(isinstance(t, str) for t in tokens):
            raise TypeError(f"tokens must be a tuple of strings, got {type(tokens).__name__} "
                            f"{tokens!r}")
        object.__setattr__(self, "tokens", tuple(tokens))
        for name in ("X", "W_q", "W_k", "W_v"):
            value = getattr(self, name)
            if value is None and name != "X":
                continue
            a = as_real(value, name)
            require_ndim(a, name, (2,), "(n, d_model)" if name == "X" else "(d_model, d)")
            require_finite(a, name)
            if not isinstance(value, np.ndarray):
                object.__setattr__(self, name, a)
        n, d_model = np.shape(self.X)
        if n != len(self.tokens):
            raise ValueError(f"X must have one row per token: expected ({len(self.tokens)}, "
                             f"d_model); got shape {np.shape(self.X)}")
        for name in ("W_q", "W_k", "W_v"):
            w = getattr(self, name)
            if w is not None and np.shape(w)[0] != d_model:
                raise ValueError(f"{name} must have shape (d_model, d) = ({d_model}, d), to "
                                 f"multiply X {np.shape(self.X)} from the right; got "
                                 f"{np.shape(w)}")
        if self.W_q is not None and self.W_k is not None \
                and np.shape(self.W_q)[1] != np.shape(self.W_k)[1]:
            raise ValueError(f"W_q and W_k must share d_k; got W_q {np.shape(self.W_q)} and "
                             f"W_k {np.shape(self.W_k)}")


#: The "I am good" sentence, one 3-d word vector per token (rows of X), (n, d) = (3, 3).
I_AM_GOOD = WorkedExample(
    tokens=("I", "am", "good"),
    X=_frozen([[1, 3, 2],
               [1, 1, 3],
               [1, 2, 1]]))                                  # (3, 3)

#: The example of Raimi Karim's "Illustrated Self-Attention", 3 inputs of width 4. The weights
#: are (d_model, d) = (4, 3) and multiply the inputs from the right:
#: K = X @ W_k, Q = X @ W_q, V = X @ W_v.
KARIM = WorkedExample(
    tokens=("input 1", "input 2", "input 3"),
    X=_frozen([[1, 0, 1, 0],
               [0, 2, 0, 2],
               [1, 1, 1, 1]]),                               # (3, 4)
    W_k=_frozen([[0, 0, 1],
                 [1, 1, 0],
                 [0, 1, 0],
                 [1, 1, 0]]),                                # (4, 3)
    W_q=_frozen([[1, 0, 1],
                 [1, 0, 0],
                 [0, 0, 1],
                 [0, 1, 1]]),                                # (4, 3)
    W_v=_frozen([[0, 2, 0],
                 [0, 3, 0],
                 [1, 0, 3],
                 [1, 1, 0]]))                                # (4, 3)
