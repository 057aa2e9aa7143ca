"""Reference numpy implementations of softmax and scaled dot-product attention.

Notation follows the book: n_q queries and n_k keys of width d_k, values of
width d_v. Rows are tokens, so Q is (n_q, d_k), K is (n_k, d_k), V is
(n_k, d_v), scores and weights are (n_q, n_k) and the output is (n_q, d_v).
Leading batch dimensions ("...") broadcast as in numpy.

Conventions (the same as torch >= 2.5 scaled_dot_product_attention on the CPU):
- a mask is boolean with True = "this query may attend to this key";
- a masked position gets weight exactly 0;
- a row whose keys are all masked gets all-zero weights, so its output is 0.
Everything is computed in float64.

Every attention function of attnbook returns an `Attention`, the named pair
``(output, weights)``, so ``out, w = f(...)`` and ``f(...).weights`` both
work; a function that computes more (`self_attention`, chapter 10's
``multi_head_attention``) returns a subclass that keeps the intermediate
steps as attributes.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import (
    ALIGNMENTS,
    as_mask,
    as_real,
    axis_index,
    choice,
    positive_int,
    positive_number,
    require_finite,
    require_finite_scores,
    require_ndim,
)
from ._checks_core import attention_inputs, self_attention_inputs, valid_lens_bool

__all__ = ["softmax", "masked_softmax", "valid_lens_mask", "scaled_dot_product_attention",
           "self_attention", "causal_mask", "Attention", "SelfAttention"]


def __dir__() -> list[str]:
    return sorted(__all__)


def softmax(x, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """softmax(x / temperature) along `axis`, computed stably in float64.

    Taught in :doc:`/chapters/04_softmax_attention` (chapter 4).

    Parameters
    ----------
    x : array_like, any shape with at least one axis
        Real numbers (bool, int and uint8 are cast to float64 first). -inf is
        allowed and gets weight exactly 0; a slice that is all -inf gets all
        zeros. NaN and +inf are refused.
    axis : int, default -1
        The axis the weights are taken over.
    temperature : float, default 1.0
        A finite number > 0. Near 0 the result tends to the one-hot argmax;
        large values tend to the uniform distribution.

    Returns
    -------
    ndarray, shape of x
        Each slice along `axis` sums to 1 (or is all 0).

    Raises
    ------
    TypeError
        If `x` is not real numbers or `temperature` is not a number.
    ValueError
        If `x` holds NaN or +inf or is a scalar, or `temperature` is not > 0.
    """
    x = as_real(x, "x")
    t = positive_number(temperature, "temperature")
    ax = axis_index(axis, x.ndim) if x.ndim else None
    require_finite(x, "x", allow_neg_inf=True)
    if x.ndim == 0:
        raise ValueError("x must have at least one dimension to take a softmax "
                         "over; got a scalar, shape ()")
    return _softmax(x, ax, t)


def _softmax(x: np.ndarray, axis: int, temperature: float = 1.0) -> np.ndarray:
    """softmax without checks; x is float64 with no NaN or +inf."""
    if x.shape[axis] == 0:
        return x.copy()
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isneginf(top), 0.0, top)       # all -inf slices stay -inf
    # shift first, then divide: (x - top) <= 0, so the only possible overflow is
    # towards -inf, whose exp is the exact 0 we want
    with np.errstate(over="ignore"):
        z = (x - top) / temperature
        if temperature > 1:     # x - top may overflow where (x - top) / T does not
            z = np.where(np.isneginf(z) & ~np.isneginf(x), x / temperature - top / temperature, z)
        e = np.exp(z)
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def masked_softmax(scores, mask=None, valid_lens=None, axis: int = -1) -> np.ndarray:
    """softmax over `axis` that gives masked positions exactly 0.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    A row with no allowed key (valid length 0, or an all-False mask row) gets
    all-zero weights: the convention of torch >= 2.5
    scaled_dot_product_attention on the CPU, not NaN and not a uniform row.

    Parameters
    ----------
    scores : array_like, shape (..., n_q, n_k)
        Real numbers; -inf means "weight 0", NaN and +inf are refused.
    mask : array_like of bool, broadcastable to scores, optional
        True = may attend.
    valid_lens : array_like of int, shape (...) or (..., n_q), optional
        Integers in [0, n_k], as in the d2l book: either one per row of the
        batch, shape ``scores.shape[:-2]`` (shared by all its queries), or one
        per query, shape ``scores.shape[:-1]``. Query i then sees keys
        0..len-1. Only for ``axis=-1``.
    axis : int, default -1
        The axis the weights are taken over.

    Returns
    -------
    weights : ndarray, shape (..., n_q, n_k)
        The shape of scores; each row sums to 1, or is all 0.
    """
    scores = as_real(scores, "scores")
    require_ndim(scores, "scores", ">=1", "(..., n_k)")
    ax = axis_index(axis, scores.ndim)
    require_finite(scores, "scores", allow_neg_inf=True)
    allowed = np.ones(scores.shape, dtype=bool)
    if mask is not None:
        allowed = allowed & as_mask(mask, "mask", scores.shape)
    if valid_lens is not None:
        if ax != scores.ndim - 1:
            raise ValueError(f"valid_lens counts keys along the last axis; it "
                             f"cannot be combined with axis={axis}")
        allowed = allowed & valid_lens_bool(valid_lens, scores.shape)
    return _softmax(np.where(allowed, scores, -np.inf), ax)


def valid_lens_mask(valid_lens, shape) -> np.ndarray:
    """The boolean mask that valid lengths stand for: True for keys 0..len-1.

    Taught in :doc:`/chapters/09_scoring_and_masks` (chapter 9).

    d2l's convention (``d2l.masked_softmax(X, valid_lens)``): a length per
    row of the batch is shared by all its queries, a length per query is
    its own. ``masked_softmax(scores, valid_lens=lens)`` is
    ``masked_softmax(scores, mask=valid_lens_mask(lens, scores.shape))``;
    where d2l puts -1e6 on the masked scores, this mask gives them weight
    exactly 0, and a length of 0 gives a zero row (d2l: a uniform one).

    Parameters
    ----------
    valid_lens : array_like of int, shape (...) or (..., n_q)
        Integers in [0, n_k] of any integer dtype (a torch tensor too): one
        per row of the batch, shape ``shape[:-2]``, or one per query, shape
        ``shape[:-1]``.
    shape : tuple of int
        The shape (..., n_q, n_k) of the scores the mask is for; a 1-tuple
        (n_k,) takes one length of shape ().

    Returns
    -------
    mask : ndarray of bool, shape (..., n_q, n_k)
        ``mask[..., i, j]`` is True where j < the length of query i.

    Raises
    ------
    TypeError
        If `valid_lens` does not hold integers (bool and float are refused)
        or `shape` is not a tuple of integers.
    ValueError
        If `valid_lens` has neither shape, or a length lies outside [0, n_k].
    """
    if not isinstance(shape, (tuple, list)) or not shape or not all(
            isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
            and n >= 0 for n in shape):
        raise TypeError(f"shape must be a non-empty tuple of integers >= 0, the shape "
                        f"(..., n_q, n_k) of the scores; got {shape!r}")
    shape = tuple(int(n) for n in shape)
    return np.broadcast_to(valid_lens_bool(valid_lens, shape), shape).copy()


class Attention(NamedTuple):
    """What an attention function returns: the pair (output, weights).

    Taught in :doc:`/chapters/04_softmax_attention` (chapter 4).

    A named tuple, so ``output, weights = scaled_dot_product_attention(...)``
    and ``result.weights`` both work. Every attention function and layer of
    attnbook returns one: numpy arrays here, torch tensors from the torch
    layers (`attnbook.nn`). Those that compute more return a subclass
    (`SelfAttention`, ``attnbook.multihead.MultiHead``) that is still this
    pair and keeps the intermediate steps as attributes.

    Parameters
    ----------
    output : ndarray or torch.Tensor, shape (..., n_q, d_v)
        The weighted averages of the values.
    weights : ndarray or torch.Tensor, shape (..., n_q, n_k)
        Rows sum to 1 (or 0 if fully masked).
    """
    output: np.ndarray   # (..., n_q, d_v)
    weights: np.ndarray  # (..., n_q, n_k)

    def __getnewargs_ex__(self):            # pickle and copy: a subclass's steps too
        return tuple(self), dict(getattr(self, "__dict__", {}))

    def __repr__(self) -> str:
        steps = getattr(self, "__dict__", {})
        return f"{type(self).__name__}(" + ", ".join(
            f"{k}={v!r}" for k, v in {**self._asdict(), **steps}.items()) + ")"


class SelfAttention(Attention):
    """(output, weights) of one self-attention step, with its steps Q, K, V, scores.

    Taught in :doc:`/chapters/07_self_attention` (chapter 7).

    An `Attention`: ``output, weights = self_attention(...)`` unpacks the
    pair, and the intermediates are attributes.

    Parameters
    ----------
    output : ndarray, shape (..., n, d_v)
        weights @ V.
    weights : ndarray, shape (..., n, n)
        Rows sum to 1 (or 0 if fully masked).
    Q : ndarray, shape (..., n, d_k)
        The queries, X @ W_q.
    K : ndarray, shape (..., n, d_k)
        The keys, X @ W_k.
    V : ndarray, shape (..., n, d_v)
        The values, X @ W_v.
    scores : ndarray, shape (..., n, n)
        Scaled, before the softmax.
    """
    Q: np.ndarray        # (..., n, d_k)
    K: np.ndarray        # (..., n, d_k)
    V: np.ndarray        # (..., n, d_v)
    scores: np.ndarray   # (..., n, n), scaled, before the softmax

    def __new__(cls, output, weights, *, Q, K, V, scores):
        self = super().__new__(cls, output, weights)
        vars(self).update(Q=Q, K=K, V=V, scores=scores)
        return self

    def _replace(self, **fields):
        """A copy with some fields or steps replaced; the others are kept."""
        return type(self)(**{**self._asdict(), **vars(self), **fields})


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None, valid_lens=None) -> Attention:
    """softmax(scale * Q Kᵀ) V, with an optional boolean mask.

    Taught in :doc:`/chapters/04_softmax_attention` (chapter 4).

    A query whose keys are all masked gets zero weights and a zero output.
    Only the mask (or a valid length of 0) makes a weight row zero.

    Parameters
    ----------
    Q : array_like, shape (..., n_q, d_k), or one query (d_k,)
    K : array_like, shape (..., n_k, d_k)
    V : array_like, shape (..., n_k, d_v), or scalar values (n_k,)
    mask : array_like of bool, broadcastable to (..., n_q, n_k), optional
        True = may attend.
    scale : float, optional
        Defaults to 1/sqrt(d_k); ``scale=1.0`` gives plain dot-product attention.
    valid_lens : array_like of int, shape (...) or (..., n_q), optional
        Query i sees keys 0..len-1 only, d2l's ``valid_lens``: one length in
        [0, n_k] per row of the batch or per query, as in `valid_lens_mask`
        (a single query (d_k,) takes a length of shape (...)). Combines with
        ``mask``.

    Returns
    -------
    Attention
        ``Attention(output, weights)``: output (..., n_q, d_v), weights
        (..., n_q, n_k). A single query drops the n_q axis and scalar values
        drop the d_v axis, so q (d_k,) with V (n_k,) gives a scalar output.

    Raises
    ------
    ValueError
        If the shapes do not fit together (the message names the argument and
        shows the expected and actual shapes), or if scores overflow float64
        (inputs near 1e154 and beyond): the message names the query row and
        key, where a plain softmax would turn them into a zero row.
    """
    _, weights, output = _attend(Q, K, V, mask, scale, names=("Q", "K", "V"),
                                 valid_lens=valid_lens)
    return Attention(output, weights)


def self_attention(X, W_q, W_k, W_v, mask=None, scale=None) -> SelfAttention:
    """Self-attention of the tokens in X with projections W_q, W_k, W_v.

    Taught in :doc:`/chapters/07_self_attention` (chapter 7).

    Q = X W_q, K = X W_k, V = X W_v (rows are tokens); then
    ``scaled_dot_product_attention(Q, K, V, mask, scale)``.

    Parameters
    ----------
    X : array_like, shape (..., n, d_model)
    W_q, W_k : array_like, shape (d_model, d_k)
    W_v : array_like, shape (d_model, d_v)
    mask : array_like of bool, broadcastable to (..., n, n), optional
        True = may attend.
    scale : float, optional
        Defaults to 1/sqrt(d_k).

    Returns
    -------
    SelfAttention
        The pair ``(output, weights)``, output (..., n, d_v) and weights
        (..., n, n), with the attributes ``Q``, ``K``, ``V`` and ``scores``
        (already scaled, taken before the softmax).
    """
    X, W_q, W_k, W_v = self_attention_inputs(X, W_q, W_k, W_v)
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is named below
        Q, K, V = X @ W_q, X @ W_k, X @ W_v      # (..., n, d_k), (..., n, d_k), (..., n, d_v)
    scores, weights, output = _attend(Q, K, V, mask, scale,
                                      names=("X @ W_q", "X @ W_k", "X @ W_v"))
    return SelfAttention(output, weights, Q=Q, K=K, V=V, scores=scores)


def _attend(Q, K, V, mask, scale, names, valid_lens=None):
    """Checked attention; returns (scores, weights, output)."""
    nq, nk, nv = names
    Q, K, V, scale, allowed = attention_inputs(Q, K, V, mask, scale, names, valid_lens)
    one_query, scalar_values = Q.ndim == 1, V.ndim == 1
    Q2 = Q[None, :] if one_query else Q                      # (..., n_q, d_k)
    V2 = V[:, None] if scalar_values else V                  # (..., n_k, d_v)

    scores = scaled_scores(Q2, K, scale)                     # (..., n_q, n_k)
    require_finite_scores(scores, allowed, f"scale * {nq} @ {nk}ᵀ must be finite where the "
                          f"mask allows a key (scale = {scale:g}); rescale {nq} or {nk}, "
                          f"or pass a smaller scale")
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    weights = _softmax(scores, scores.ndim - 1)              # (..., n_q, n_k)
    with np.errstate(over="ignore", invalid="ignore"):
        output = weights @ V2                                # (..., n_q, d_v)
    if not np.isfinite(output).all():
        raise ValueError(f"the output overflows float64: a weighted average of the rows "
                         f"of {nv} (largest |value| {np.abs(V2).max():g}) is not finite; "
                         f"rescale {nv}")
    if one_query:                                            # drop n_q
        scores, weights = scores[..., 0, :], weights[..., 0, :]
        output = output[..., 0, :]
    if scalar_values:                                        # drop d_v
        output = output[..., 0]
    return scores, weights, output


def scaled_scores(Q: np.ndarray, K: np.ndarray, scale: float) -> np.ndarray:
    """scale * Q Kᵀ, shape (..., n_q, n_k), without checks.

    Where Q Kᵀ overflows but scale * Q Kᵀ would not, the score is computed
    again from Q and K divided by powers of 2 (exact) and multiplied back,
    so only a score that float64 cannot hold comes out as ±inf.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        scores = scale * (Q @ np.swapaxes(K, -1, -2))       # (..., n_q, n_k)
        if np.isfinite(scores).all():
            return scores
        e_q, e_k = (int(np.frexp(np.abs(a).max())[1]) for a in (Q, K))
        unit = np.ldexp(Q, -e_q) @ np.swapaxes(np.ldexp(K, -e_k), -1, -2)   # |.| <= d_k
        again = np.ldexp(scale * unit, e_q + e_k)
    return np.where(np.isfinite(scores), scores, again)


def causal_mask(n_q: int, n_k: int | None = None, align: str = "top-left") -> np.ndarray:
    """Boolean mask, True where query i may look at key j.

    Taught in :doc:`/chapters/07_self_attention` (chapter 7); the two
    alignments: :doc:`/chapters/12_attention_layer` (chapter 12).

    With n_q = n_k both alignments are the lower triangle, j <= i. They
    differ when n_q != n_k:

    - ``"top-left"`` (the default): query i stands at position i and sees
      keys 0..i, like torch's ``scaled_dot_product_attention(is_causal=True)``.
      Right when the queries are the first n_q of the keys' tokens.
    - ``"bottom-right"``: the queries are the *last* n_q tokens, so query i
      stands at position i + n_k - n_q and sees keys 0..i + n_k - n_q, like
      torch's ``torch.nn.attention.bias.causal_lower_right``. This is cached
      decoding: one new query (n_q = 1) sees every key. With n_q > n_k the
      first n_q - n_k rows see no key.

    The default stays top-left because it is torch's ``is_causal`` and what
    chapters 7-12 build on; chapter 12's exercise on decoding shows the trap
    it sets for a single new query, which ``align="bottom-right"`` avoids.

    Parameters
    ----------
    n_q : int
        Number of queries, a positive integer.
    n_k : int, optional
        Number of keys, a positive integer; defaults to n_q.
    align : {"top-left", "bottom-right"}, default "top-left"
        Where the diagonal starts when n_q != n_k, as above.

    Returns
    -------
    ndarray of bool, shape (n_q, n_k)
        ``mask[i, j]`` is ``j <= i`` (top-left) or ``j <= i + n_k - n_q``
        (bottom-right).
    """
    n_q = positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else positive_int(n_k, "n_k")
    offset = causal_offset(n_q, n_k, align)
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=offset)


def causal_offset(n_q: int, n_k: int, align) -> int:
    """The checked `align`'s diagonal: key j is seen by query i if j <= i + offset."""
    align = choice(align, "align", ALIGNMENTS)
    return 0 if align == "top-left" else n_k - n_q
