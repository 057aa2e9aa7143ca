"""Part IV, chapters 11 and 12: every glued number against an independent
computation (plain loops, formulas, torch), and the exercise answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from nbrun import glued_float
from reference import loop_softmax

from attnbook import rotate, scaled_dot_product_attention, sinusoidal_positions
from attnbook.examples import KARIM

pytestmark = pytest.mark.slow
CH11, CH12 = "11_positions", "12_attention_layer"


def karim_outputs(X):
    """Scaled self-attention with Karim's weights, by loops."""
    X = [list(r) for r in X]
    def proj(W):
        return [[sum(x[a] * W[a][c] for a in range(4)) for c in range(3)] for x in X]
    Q, K, V = proj(KARIM.W_q.tolist()), proj(KARIM.W_k.tolist()), proj(KARIM.W_v.tolist())
    out = []
    for q in Q:
        w = loop_softmax([sum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(3) for k in K])
        out.append([sum(w[j] * V[j][c] for j in range(3)) for c in range(3)])
    return out


def pe_loop(n, d):
    return [[(math.sin if c % 2 == 0 else math.cos)(p / 10000 ** ((c - c % 2) / d))
             for c in range(d)] for p in range(n)]


# --- chapter 11 -------------------------------------------------------------------------

def test_ch11_permutation_equivariance_numbers():
    X = KARIM.X.tolist()
    before = karim_outputs(X)
    after = karim_outputs([X[2], X[0], X[1]])
    assert glued_float(CH11, "perm_z") == pytest.approx(after[0][1], rel=1e-12)
    assert after[0][1] == pytest.approx(before[2][1], rel=1e-12)
    assert glued_float(CH11, "perm_gap") < 1e-12


def test_ch11_added_positions_break_the_symmetry_by_the_glued_amounts():
    X, P = KARIM.X.tolist(), pe_loop(3, 4)
    in_order = karim_outputs([[x + p for x, p in zip(X[i], P[i], strict=True)] for i in range(3)])
    order = [2, 0, 1]
    shuffled = karim_outputs([[x + p for x, p in zip(X[order[i]], P[i], strict=True)]
                              for i in range(3)])
    gap = max(abs(shuffled[i][c] - in_order[order[i]][c]) for i in range(3) for c in range(3))
    assert glued_float(CH11, "pos_gap") == pytest.approx(gap, rel=1e-9)
    assert gap > 1.0
    assert glued_float(CH11, "pos_z_first") == pytest.approx(shuffled[0][1], rel=1e-12)
    assert glued_float(CH11, "pos_z_last") == pytest.approx(in_order[2][1], rel=1e-12)


def test_ch11_encoding_numbers():
    d = glued_float(CH11, "pe_d")
    assert glued_float(CH11, "wave_short") == pytest.approx(2 * math.pi)
    assert glued_float(CH11, "wave_long") == pytest.approx(2 * math.pi * 10000 ** ((d - 2) / d))
    assert glued_float(CH11, "self_dot") == pytest.approx(d / 2)
    rows = {tuple(round(v, 9) for v in row) for row in pe_loop(int(glued_float(CH11, "pe_n")),
                                                                int(d))}
    assert len(rows) == glued_float(CH11, "pe_n")      # "no two rows are equal"
    assert glued_float(CH11, "rotation_gap") < 1e-12
    assert glued_float(CH11, "diagonal_spread") < 1e-12


def test_ch11_rope_offset_and_the_added_sinusoids_spread():
    assert glued_float(CH11, "rope_gap") < 1e-9
    assert glued_float(CH11, "rope_range") > 1.0
    rng = np.random.default_rng(0)          # the chapter's draws, recomputed by loops
    q, k = rng.normal(size=(2, 64))
    pe = pe_loop(4000, 64)
    scores = [sum((q[c] + pe[t][c]) * (k[c] + pe[t + 3][c]) for c in range(64))
              for t in range(0, 4000, 100)]
    assert glued_float(CH11, "n_starts") == len(scores)
    assert glued_float(CH11, "added_spread") == pytest.approx(max(scores) - min(scores),
                                                              rel=1e-9)
    assert glued_float(CH11, "added_spread") > 100 * glued_float(CH11, "rope_gap")


def test_ch11_rope_offset_explorer_line_stays_inside_the_axes_at_both_ends():
    """The vertical line at the chosen offset lies strictly inside the x-limits,
    at -max_offset and +max_offset too (it used to sit on the spine there)."""
    from attnbook.explorers import explore_rope_offset
    e = explore_rope_offset(d=16, n_positions=16, max_offset=8)
    ax = e.figure.axes[0]
    lo, hi = ax.get_xlim()
    for i in (0, len(e.values) - 1):
        e.show(i)
        x = ax.lines[0].get_xdata()[0]
        assert x == e.values[i]
        assert lo + 0.25 <= x <= hi - 0.25, (lo, x, hi)


def test_ch11_exercise_answers():
    # wavelengths for d = 512
    assert 2 * math.pi == pytest.approx(6.28, abs=0.005)
    longest = 2 * math.pi * 10000 ** (510 / 512)
    assert longest == pytest.approx(60_611, abs=1)
    assert abs(30_000 / longest - 0.5) < 0.01          # positions 3 and 30 003: almost opposite
    # the coded solution: lengths kept, equivariance gone
    rng = np.random.default_rng(1)
    Q, K, V = rng.normal(size=(3, 5, 8))
    pos, order = np.arange(5), [4, 2, 0, 1, 3]
    assert np.allclose(np.linalg.norm(rotate(Q, pos), axis=1), np.linalg.norm(Q, axis=1))
    _, w = scaled_dot_product_attention(rotate(Q, pos), rotate(K, pos), V)
    _, w2 = scaled_dot_product_attention(rotate(Q[order], pos), rotate(K[order], pos), V[order])
    assert not np.allclose(w2, w[order][:, order])
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(10, 5)


# --- chapter 12 -------------------------------------------------------------------------

def test_ch12_layer_agrees_with_torch_in_each_comparison():
    for key in ("mha_gap", "sdpa_gap", "cross_gap", "cache_gap"):
        assert glued_float(CH12, key) < 1e-12, key


def test_ch12_cache_work_counts_are_the_triangle_and_square_sums():
    n = int(glued_float(CH12, "n_steps"))
    assert glued_float(CH12, "last_cached") == n
    assert glued_float(CH12, "last_full") == n * n
    assert glued_float(CH12, "total_cached") == sum(t for t in range(1, n + 1))
    assert glued_float(CH12, "total_full") == sum(t * t for t in range(1, n + 1))


def test_ch12_gpt2_counts_against_the_formula():
    d, layers, vocab, ctx = 768, 12, 50257, 1024
    attention = d * 3 * d + 3 * d + d * d + d
    mlp = d * 4 * d + 4 * d + 4 * d * d + d
    total = vocab * d + ctx * d + layers * (attention + mlp + 4 * d) + 2 * d
    assert glued_float(CH12, "attn_params") == attention
    assert glued_float(CH12, "gpt2_total") == total == 124_439_808
    assert glued_float(CH12, "attn_share") == pytest.approx(layers * attention / total)
    assert glued_float(CH12, "bytes_per_weight") == 4
    assert glued_float(CH12, "w_1024_mb") == 12 * 1024 ** 2 * 4 / 2 ** 20 == 48
    assert glued_float(CH12, "w_32k_gb") == 12 * 32768 ** 2 * 4 / 2 ** 30
    assert glued_float(CH12, "w_32k_layers_gb") == 12 * glued_float(CH12, "w_32k_gb")


def test_ch12_online_softmax_blockwise_and_peak_memory_claims():
    assert glued_float(CH12, "online_gap") < 1e-15
    assert glued_float(CH12, "block_gap") < 1e-12
    plain, blocked = glued_float(CH12, "peak_plain"), glued_float(CH12, "peak_blocked")
    assert glued_float(CH12, "peak_ratio") == pytest.approx(plain / blocked)
    n = glued_float(CH12, "peak_n")
    assert plain > 3 * n * n * 8 / 2 ** 20                # at least three n x n float64 arrays
    assert blocked < plain / 4
    assert 3.5 < glued_float(CH12, "plain_growth") < 4.5   # n² when n doubles
    assert 1.5 < glued_float(CH12, "blocked_growth") < 2.5  # n when n doubles


def test_ch12_exercise_answers():
    cache_bytes = 2 * 12 * 1024 * 768 * 4
    assert cache_bytes == 75_497_472 and cache_bytes / 2 ** 20 == 72
    assert 12 * 1024 ** 2 * 4 / 2 ** 20 == 48
    rng = np.random.default_rng(0)                        # the merge solution, as printed
    q, K, V = rng.normal(size=8), rng.normal(size=(10, 8)), rng.normal(size=(10, 3))

    def partial(K, V):
        s = K @ q / np.sqrt(8)
        return s.max(), np.exp(s - s.max()).sum(), np.exp(s - s.max()) @ V

    (m1, l1, o1), (m2, l2, o2) = partial(K[:5], V[:5]), partial(K[5:], V[5:])
    m = max(m1, m2)
    merged = (np.exp(m1 - m) * o1 + np.exp(m2 - m) * o2) / (np.exp(m1 - m) * l1
                                                            + np.exp(m2 - m) * l2)
    assert np.allclose(merged, scaled_dot_product_attention(q, K, V)[0])


def test_ch12_causal_blockwise_skips_nothing_for_n_q_equal_n_k_and_misplaces_a_decoding_query():
    n, b = int(glued_float(CH12, "block_n")), 128
    assert glued_float(CH12, "n_blocks") == math.ceil(n / b)
    assert glued_float(CH12, "blocks_scored") == glued_float(CH12, "n_blocks")   # none skipped
    assert glued_float(CH12, "decode_scored") == 1          # the prose says "1 block"
    assert glued_float(CH12, "decode_gap") > 0.1
    assert glued_float(CH12, "block_gap") < 1e-12           # equal up to rounding
