"""attnbook.positions and attnbook.blockwise (chapters 11 and 12) against
plain loops, the angle-sum formulas and scaled_dot_product_attention."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from badinput import assert_clear_error, ids

from attnbook import (
    blockwise_attention,
    causal_mask,
    rotate,
    scaled_dot_product_attention,
    sinusoidal_positions,
)

# --- sinusoidal_positions ---------------------------------------------------------------

@pytest.mark.parametrize("n, d, base", [(1, 2, 10000.0), (7, 4, 10000.0), (50, 16, 10000.0),
                                        (33, 10, 100.0), (5, 64, 2.5)])
def test_sinusoidal_positions_match_the_formula_in_a_loop(n, d, base):
    pe = sinusoidal_positions(n, d, base=base)
    assert pe.shape == (n, d)
    for p in range(n):
        for i in range(d // 2):
            angle = p / base ** (2 * i / d)
            assert pe[p, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[p, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)


def test_every_pair_of_the_encoding_is_a_unit_vector_and_position_zero_is_0_1():
    pe = sinusoidal_positions(40, 12)
    np.testing.assert_allclose(pe[:, 0::2] ** 2 + pe[:, 1::2] ** 2, 1.0, atol=1e-12)
    np.testing.assert_array_equal(pe[0], np.tile([0.0, 1.0], 6))


@pytest.mark.parametrize("k", [1, 2, 5, 17])
def test_a_shift_of_the_encoding_is_one_fixed_rotation_built_by_hand(k):
    n, d, base = 30, 8, 10000.0
    pe = sinusoidal_positions(n + k, d, base)
    M = np.zeros((d, d))                       # block-diagonal, from the angle-sum formulas
    for i in range(d // 2):
        a = k / base ** (2 * i / d)
        M[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(a), math.sin(a)],
                                               [-math.sin(a), math.cos(a)]]
    np.testing.assert_allclose(pe[k:], pe[:n] @ M.T, atol=1e-12)
    # and that matrix is `rotate` by the position -k, as chapter 11 says
    np.testing.assert_allclose(rotate(pe[:n], np.full(n, -k)), pe[:n] @ M.T, atol=1e-12)


# --- rotate ---------------------------------------------------------------------------

def test_rotate_matches_a_loop_over_rows_and_pairs():
    rng = np.random.default_rng(3)
    x, pos = rng.normal(size=(2, 5, 6)), np.array([0, 3, 1, 10, 7])
    out = rotate(x, pos, base=50.0)
    assert out.shape == x.shape
    for b in range(2):
        for r in range(5):
            for i in range(3):
                a = pos[r] / 50.0 ** (2 * i / 6)
                x0, x1 = x[b, r, 2 * i], x[b, r, 2 * i + 1]
                assert out[b, r, 2 * i] == pytest.approx(x0 * math.cos(a) - x1 * math.sin(a))
                assert out[b, r, 2 * i + 1] == pytest.approx(x0 * math.sin(a) + x1 * math.cos(a))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rope_score_depends_only_on_the_offset_over_random_positions(seed):
    rng = np.random.default_rng(seed)
    d = 2 * int(rng.integers(1, 33))
    q, k = rng.normal(size=(2, d))
    p, m = rng.integers(0, 2000, size=(2, 500))
    shift = rng.integers(-5000, 5000, size=500)       # move both positions together
    def score(p, m):
        return np.sum(rotate(np.tile(q, (len(p), 1)), p) * rotate(np.tile(k, (len(m), 1)), m), 1)
    np.testing.assert_allclose(score(p, m), score(p + shift, m + shift), atol=1e-9)
    np.testing.assert_allclose(score(p, m), score(np.zeros_like(p), m - p), atol=1e-9)


def test_rope_keeps_lengths_and_position_zero_is_the_identity():
    rng = np.random.default_rng(4)
    x, pos = rng.normal(size=(9, 8)), rng.normal(size=9) * 100
    np.testing.assert_allclose(np.linalg.norm(rotate(x, pos), axis=1), np.linalg.norm(x, axis=1))
    np.testing.assert_array_equal(rotate(x, np.zeros(9)), x)


def test_added_sinusoids_do_not_have_the_offset_property():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 16))
    pe = sinusoidal_positions(200, 16)
    scores = [(q + pe[t]) @ (k + pe[t + 3]) for t in range(0, 190, 10)]
    assert np.ptp(scores) > 0.1


# --- blockwise_attention --------------------------------------------------------------

def _sdpa_torch(Q, K, V, mask):
    out = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(Q), torch.tensor(K), torch.tensor(V),
        attn_mask=None if mask is None else torch.tensor(mask))
    return out.numpy()


@pytest.mark.parametrize("block_size", [1, 3, 8, 16, 29, 64, 100])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "random"])
def test_blockwise_equals_sdpa_for_block_sizes_masks_and_ragged_last_blocks(block_size, mask_kind):
    rng = np.random.default_rng(block_size)
    Q, K, V = rng.normal(size=(2, 3, 29, 8)), rng.normal(size=(2, 3, 29, 8)), \
        rng.normal(size=(2, 3, 29, 5))
    mask = {"none": None, "causal": causal_mask(29),
            "random": rng.random((2, 3, 29, 29)) < 0.7}[mask_kind]
    if mask_kind == "random":
        mask[..., 0] = True               # torch's SDPA gives NaN for fully masked rows
    ours = blockwise_attention(Q, K, V, block_size, mask=mask)
    reference, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(ours, reference, atol=1e-12)
    np.testing.assert_allclose(ours, _sdpa_torch(Q, K, V, mask), atol=1e-12)


@pytest.mark.parametrize("n_q, n_k, block_size", [(7, 7, 1), (7, 7, 3), (5, 9, 2), (9, 5, 4)])
def test_blockwise_causal_from_positions_equals_the_full_causal_mask(n_q, n_k, block_size):
    rng = np.random.default_rng(n_q * n_k + block_size)
    Q, K, V = rng.normal(size=(n_q, 4)), rng.normal(size=(n_k, 4)), rng.normal(size=(n_k, 3))
    ref, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(n_q, n_k))
    np.testing.assert_allclose(blockwise_attention(Q, K, V, block_size, causal=True), ref,
                               atol=1e-12)
    padding = np.ones((n_q, n_k), dtype=bool)
    padding[:, -1] = False
    ref2, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(n_q, n_k) & padding)
    np.testing.assert_allclose(blockwise_attention(Q, K, V, block_size, mask=padding,
                                                   causal=True), ref2, atol=1e-12)


def test_blockwise_causal_is_aligned_top_left_as_its_docstring_says():
    """Query i stands at position i: right for n_q = n_k, wrong for one decoding
    query after cached keys (chapter 12), which causal=False serves."""
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(10, 8)), rng.normal(size=(10, 8)), rng.normal(size=(10, 3))
    full, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(10))
    last = Q[-1:]
    np.testing.assert_allclose(blockwise_attention(last, K, V, 4, causal=True), V[:1],
                               atol=1e-12)                  # sees key 0 only
    assert np.abs(blockwise_attention(last, K, V, 4, causal=True) - full[-1:]).max() > 0.1
    np.testing.assert_allclose(blockwise_attention(last, K, V, 4), full[-1:], atol=1e-12)
    assert '"top-left"' in blockwise_attention.__doc__
    # the decoding alignment, by name: one new query sees every key
    np.testing.assert_allclose(blockwise_attention(last, K, V, 4, causal=True,
                                                   align="bottom-right"), full[-1:], atol=1e-12)


def test_blockwise_with_rectangular_inputs_a_scale_and_huge_scores():
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(7, 4)) * 30, rng.normal(size=(19, 4)) * 30, rng.normal(size=(19, 2))
    ref, _ = scaled_dot_product_attention(Q, K, V, scale=2.0)
    np.testing.assert_allclose(blockwise_attention(Q, K, V, 5, scale=2.0), ref, atol=1e-12)


def test_blockwise_gives_a_fully_masked_query_a_zero_output():
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 2))
    mask = np.ones((3, 6), dtype=bool)
    mask[1] = False
    mask[2, :4] = False                    # query 2 sees only the second block
    out = blockwise_attention(Q, K, V, 4, mask=mask)
    np.testing.assert_array_equal(out[1], 0.0)
    ref, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(out, ref, atol=1e-12)


# --- bad input ------------------------------------------------------------------------

X4 = np.zeros((3, 4))
BAD = [
    ("odd d", lambda: sinusoidal_positions(5, 3), ValueError, ["d", "even", "3"]),
    ("n of zero", lambda: sinusoidal_positions(0, 4), ValueError, ["n", ">= 1", "0"]),
    ("float n", lambda: sinusoidal_positions(2.5, 4), TypeError, ["n", "integer", "2.5"]),
    ("negative base", lambda: sinusoidal_positions(3, 4, base=-1.0), ValueError, ["base", "-1"]),
    ("rotate odd width", lambda: rotate(np.zeros((3, 5)), np.arange(3)), ValueError,
     ["x", "even", "(3, 5)"]),
    ("rotate one row", lambda: rotate(np.zeros(4), [0]), ValueError, ["x", "(..., n, d)", "(4,)"]),
    ("rotate wrong positions", lambda: rotate(X4, np.arange(4)), ValueError,
     ["positions", "(3,)", "(4,)", "(3, 4)"]),
    ("rotate NaN position", lambda: rotate(X4, [0, np.nan, 1]), ValueError, ["positions", "NaN"]),
    ("rotate string", lambda: rotate("abc", [0]), TypeError, ["x", "real numbers"]),
    ("block size zero", lambda: blockwise_attention(X4, X4, X4, 0), ValueError,
     ["block_size", ">= 1", "0"]),
    ("block size float", lambda: blockwise_attention(X4, X4, X4, 2.0), TypeError,
     ["block_size", "integer", "2.0"]),
    ("Q and K widths differ", lambda: blockwise_attention(np.zeros((3, 2)), X4, X4, 2),
     ValueError, ["Q", "d_k", "(3, 2)", "(3, 4)"]),
    ("V rows differ", lambda: blockwise_attention(X4, X4, np.zeros((2, 4)), 2), ValueError,
     ["V", "one row per key", "(2, 4)"]),
    ("mask of floats", lambda: blockwise_attention(X4, X4, X4, 2, mask=np.ones((3, 3))),
     TypeError, ["mask", "boolean"]),
    ("mask of the wrong shape",
     lambda: blockwise_attention(X4, X4, X4, 2, mask=np.ones((2, 3), bool)), ValueError,
     ["mask", "(3, 3)", "(2, 3)"]),
    ("NaN in K", lambda: blockwise_attention(X4, np.full((3, 4), np.nan), X4, 2), ValueError,
     ["K", "NaN"]),
]


@pytest.mark.parametrize("what, call, error, fragments", BAD, ids=ids(BAD))
def test_bad_input_names_the_argument(what, call, error, fragments):
    assert_clear_error(what, call, error, fragments)
