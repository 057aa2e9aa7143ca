"""Positions: the sinusoidal encoding and rotary embeddings (RoPE), in numpy.

Both use the same frequencies. Dimension pair c (columns 2c and 2c+1) turns
at the angular frequency w_c = 1 / base^(2c/d) per position, from 1 radian
per position for c = 0 down to nearly 1/base for the last pair.
"""
from __future__ import annotations

import numbers

import numpy as np

from ._checks import as_real, positive_number, require_finite, require_ndim

__all__ = ["sinusoidal_positions", "rotate", "rotate_half"]


def __dir__() -> list[str]:
    return sorted(__all__)


def sinusoidal_positions(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """The Transformer's sinusoidal position encoding: one row per position.

    Taught in :doc:`/chapters/11_positions` (chapter 11).

    Parameters
    ----------
    n : int
        Number of positions (an integer >= 1); rows are positions 0..n-1.
    d : int
        Width of the encoding (an even integer >= 2), the d_model of the
        embeddings it is added to.
    base : float, default 10000.0
        A finite number > 0 (10000 in the Transformer); the wavelengths run
        from 2π up to about 2π·base.

    Returns
    -------
    PE : ndarray, shape (n, d)
        ``PE[i, 2c] = sin(i / base^(2c/d))`` and
        ``PE[i, 2c+1] = cos(i / base^(2c/d))`` for position i and pair c.
    """
    n = _whole(n, "n", smallest=1)
    d = _whole(d, "d", smallest=2)
    if d % 2:
        raise ValueError(f"d must be even (the encoding pairs a sine with a cosine "
                         f"per frequency); got d = {d}")
    base = positive_number(base, "base")
    angles = _angles(np.arange(n, dtype=float), d, base, "positions 0..n-1")   # (n, d/2)
    pe = np.empty((n, d))
    pe[:, 0::2] = np.sin(angles)                                      # columns 2i
    pe[:, 1::2] = np.cos(angles)                                      # columns 2i+1
    return pe


def rotate(x, positions, base: float = 10000.0) -> np.ndarray:
    """Rotary position embedding (RoPE): turn each row by its position's angles.

    Taught in :doc:`/chapters/11_positions` (chapter 11).

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Queries or keys, one row per token; d must be even.
    positions : array_like, shape (n,)
        The position of each row (integers, or any real numbers).
    base : float, default 10000.0
        A finite number > 0, as in `sinusoidal_positions`.

    Returns
    -------
    ndarray, shape of x
        The pair (x[..., 2c], x[..., 2c+1]) of the row at position i is rotated
        by the angle i / base^(2c/d). Rotations keep lengths, and
        rotate(q, i) · rotate(k, j) depends on i and j only through the offset
        j - i.
    """
    x, cos, sin = _rope_inputs(x, positions, base)                     # cos, sin: (n, d/2)
    even, odd = x[..., 0::2], x[..., 1::2]                             # (..., n, d/2)
    out = np.empty_like(x)
    with np.errstate(over="ignore", invalid="ignore"):                  # named below
        out[..., 0::2] = even * cos - odd * sin
        out[..., 1::2] = even * sin + odd * cos
    return _finite_rotation(out, x)


def rotate_half(x, positions, base: float = 10000.0) -> np.ndarray:
    """RoPE in the rotate-half layout of Hugging Face's code (LLaMA and others).

    Taught in :doc:`/chapters/14_the_whole_block` (chapter 14). The
    interleaved layout is `rotate` (chapter 11).

    Column c is paired with column c + d/2 instead of its neighbour:
    ``x * cos + rotate_half(x) * sin`` with ``rotate_half(x) = [-x2, x1]``
    for the halves x1, x2 of each row. It is `rotate` up to a fixed
    permutation of the columns: with ``perm = [0, 2, ..., d-2, 1, 3, ...,
    d-1]``, ``rotate_half(x[..., perm], p) == rotate(x, p)[..., perm]``.

    Parameters
    ----------
    x : array_like, shape (..., n, d)
        Queries or keys, one row per token; d must be even, for two halves of
        d/2 columns.
    positions : array_like, shape (n,)
        The position of each row (integers, or any real numbers), as in `rotate`.
    base : float, default 10000.0
        A finite number > 0, as in `rotate`.

    Returns
    -------
    ndarray, shape of x
        The pair (x[..., c], x[..., c + d/2]) of the row at position i is
        rotated by the angle i / base^(2c/d).
    """
    x, cos, sin = _rope_inputs(x, positions, base)                     # cos, sin: (n, d/2)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]                              # (..., n, d/2)
    with np.errstate(over="ignore", invalid="ignore"):                  # named below
        out = np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)
    return _finite_rotation(out, x)


def _rope_inputs(x, positions, base: float):
    """x as float64 (..., n, d) with d even, and the cos and sin of its
    angles, (n, d/2) each; every argument checked, overflowing angles refused."""
    x = as_real(x, "x")
    require_ndim(x, "x", ">=2", "(..., n, d)")
    require_finite(x, "x")
    n, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"x must have an even width d (RoPE rotates pairs of "
                         f"columns); got x of shape {x.shape}")
    p = as_real(positions, "positions")
    if p.shape != (n,):
        raise ValueError(f"positions must have shape (n,) = ({n},), one per row of x "
                         f"of shape {x.shape}; got positions of shape {p.shape}")
    require_finite(p, "positions")
    base = positive_number(base, "base")
    angles = _angles(p, d, base, "positions")                           # (n, d/2)
    return x, np.cos(angles), np.sin(angles)


def _finite_rotation(out: np.ndarray, x: np.ndarray) -> np.ndarray:
    if not np.isfinite(out).all():
        raise ValueError(f"the rotated x overflows float64 (a pair's length exceeds "
                         f"about 1.8e308; largest |x| {np.abs(x).max():g}); rescale x")
    return out


def _frequencies(d: int, base: float) -> np.ndarray:
    """w_c = 1 / base^(2c/d) for c = 0..d/2-1: shape (d/2,)."""
    return base ** (-np.arange(0, d, 2) / d)


def _angles(p: np.ndarray, d: int, base: float, what: str) -> np.ndarray:
    """position times w_c for every pair c, shape (n, d/2); raises if a frequency or an angle overflows float64
    (a base < 1 makes the frequencies grow, up to 1/base)."""
    with np.errstate(over="ignore", invalid="ignore"):
        w = _frequencies(d, base)                                       # (d/2,)
        angles = p[:, None] * w[None, :]                                # (n, d/2)
    if not np.isfinite(w).all():
        raise ValueError(f"base = {base:g} is too small for d = {d}: the frequency "
                         f"1/base^(2i/d) of the last pair overflows float64; use a base "
                         f">= {np.finfo(float).max ** (-d / (d - 2)):.3g}")
    if not np.isfinite(angles).all():
        raise ValueError(f"the angles p / base^(2i/d) overflow float64 for {what} up to "
                         f"{np.abs(p).max():g} with base = {base:g}; use a larger base or "
                         f"smaller positions")
    return angles


def _whole(k, name: str, smallest: int) -> int:
    if isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype.kind in "iu":
        k = k.item()                                                    # a 0-d integer array
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {smallest}, got "
                        f"{type(k).__name__} {k!r}")
    if k < smallest:
        raise ValueError(f"{name} must be an integer >= {smallest}, got {k}")
    return int(k)
