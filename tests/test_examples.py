"""The sources' worked examples, recomputed by plain loops and compared with attnbook."""
from __future__ import annotations

import math

import numpy as np
from reference import loop_softmax

from attnbook import scaled_dot_product_attention, self_attention, softmax
from attnbook.examples import FRUIT_TABLE, FRUIT_WEIGHTS, I_AM_GOOD, KARIM


def matmul(A, B):
    return [[sum(a * b for a, b in zip(row, col, strict=True)) for col in zip(*B, strict=True)]
            for row in A]


def test_fruit_soft_lookup_is_8():
    total = sum(FRUIT_WEIGHTS[k] * FRUIT_TABLE[k] for k in FRUIT_TABLE)
    assert math.isclose(total, 8.0)
    w = np.array([FRUIT_WEIGHTS[k] for k in FRUIT_TABLE])
    assert math.isclose(float(w @ np.array(list(FRUIT_TABLE.values()))), 8.0)


def test_i_am_good_z_equals_a_loop():
    X = I_AM_GOOD.X.tolist()
    S = matmul(X, [list(c) for c in zip(*X, strict=True)])            # X Xᵀ
    W = [loop_softmax(row) for row in S]
    Z = matmul(W, X)
    out, weights = scaled_dot_product_attention(I_AM_GOOD.X, I_AM_GOOD.X, I_AM_GOOD.X,
                                                scale=1.0)
    np.testing.assert_allclose(weights, W, rtol=1e-13)
    np.testing.assert_allclose(out, Z, rtol=1e-13)
    assert S == [[14, 10, 9], [10, 11, 6], [9, 6, 6]]


def test_karim_eight_steps_against_loops_unscaled_as_in_the_article():
    X, Wk, Wq, Wv = (a.tolist() for a in (KARIM.X, KARIM.W_k, KARIM.W_q, KARIM.W_v))
    keys, queries, values = matmul(X, Wk), matmul(X, Wq), matmul(X, Wv)
    assert keys == [[0, 1, 1], [4, 4, 0], [2, 3, 1]]
    assert values == [[1, 2, 3], [2, 8, 0], [2, 6, 3]]
    assert queries == [[1, 0, 2], [2, 2, 2], [2, 1, 3]]
    scores_1 = [sum(q * k for q, k in zip(queries[0], key, strict=True)) for key in keys]
    assert scores_1 == [2, 4, 4]
    w1 = loop_softmax(scores_1)
    out1 = [sum(w1[j] * values[j][c] for j in range(3)) for c in range(3)]
    r = self_attention(KARIM.X, KARIM.W_q, KARIM.W_k, KARIM.W_v, scale=1.0)
    np.testing.assert_allclose(r.scores[0], scores_1)
    np.testing.assert_allclose(r.weights[0], w1, rtol=1e-13)
    np.testing.assert_allclose(r.output[0], out1, rtol=1e-13)
    # the article rounds softmax([2, 4, 4]) to [0.0, 0.5, 0.5] and output 1 to
    # [2.0, 7.0, 1.5]; the exact values differ in the first decimal
    np.testing.assert_allclose(w1, [0.0634, 0.4683, 0.4683], atol=5e-5)
    np.testing.assert_allclose(out1, [1.9366, 6.6831, 1.5951], atol=5e-5)
    assert abs(out1[1] - 7.0) > 0.3


def test_karim_all_inputs_scaled_by_sqrt_d_k():
    r = self_attention(KARIM.X, KARIM.W_q, KARIM.W_k, KARIM.W_v)
    Qm, Km = KARIM.X @ KARIM.W_q, KARIM.X @ KARIM.W_k
    for i in range(3):
        row = [float(Qm[i] @ Km[j]) / math.sqrt(3) for j in range(3)]
        np.testing.assert_allclose(r.weights[i], loop_softmax(row), rtol=1e-13)
    np.testing.assert_allclose(r.weights, softmax(Qm @ Km.T / math.sqrt(3)))
