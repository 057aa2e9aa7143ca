"""scaled_dot_product_attention and self_attention against loops and torch."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import causal_mask, scaled_dot_product_attention, self_attention, softmax


def loop_attention(Q, K, V, scale, mask=None):
    """Attention for 2-D Q, K, V with Python loops over queries and keys."""
    out, weights = [], []
    for i, q in enumerate(Q):
        scores = [scale * sum(a * b for a, b in zip(q, k, strict=True)) for k in K]
        kept = [j for j in range(len(K)) if mask is None or mask[i][j]]
        if not kept:
            weights.append([0.0] * len(K))
            out.append([0.0] * len(V[0]))
            continue
        top = max(scores[j] for j in kept)
        e = [math.exp(scores[j] - top) if j in kept else 0.0 for j in range(len(K))]
        w = [v / sum(e) for v in e]
        weights.append(w)
        out.append([sum(w[j] * V[j][c] for j in range(len(K))) for c in range(len(V[0]))])
    return np.array(out), np.array(weights)


def rand(rng, *shape):
    return rng.normal(size=shape)


@pytest.mark.parametrize("n_q,n_k,d_k,d_v", [(1, 1, 1, 1), (3, 4, 2, 5), (4, 3, 8, 2),
                                             (1, 6, 3, 1)])
def test_matches_a_plain_loop(n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(n_q * 100 + n_k)
    Q, K, V = rand(rng, n_q, d_k), rand(rng, n_k, d_k), rand(rng, n_k, d_v)
    out, w = scaled_dot_product_attention(Q, K, V)
    ref_out, ref_w = loop_attention(Q, K, V, 1 / math.sqrt(d_k))
    np.testing.assert_allclose(w, ref_w, rtol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)


def t(a):
    return torch.tensor(np.array(a))


@pytest.mark.parametrize("batch_q,batch_k", [((), ()), ((2,), (2,)), ((2, 3), (3,)),
                                             ((1, 3), (2, 1))])
@pytest.mark.parametrize("scale", [None, 1.0, 0.1])
def test_agrees_with_torch_sdpa_with_broadcast_batches_and_custom_scale(batch_q, batch_k, scale):
    rng = np.random.default_rng(7)
    Q = rand(rng, *batch_q, 3, 4)
    K, V = rand(rng, *batch_k, 5, 4), rand(rng, *batch_k, 5, 2)
    out, w = scaled_dot_product_attention(Q, K, V, scale=scale)
    batch = np.broadcast_shapes(batch_q, batch_k)
    Qt, Kt, Vt = (t(np.broadcast_to(a, batch + a.shape[-2:])) for a in (Q, K, V))
    ref = F.scaled_dot_product_attention(Qt, Kt, Vt, scale=scale)
    torch.testing.assert_close(t(out), ref)   # float64 defaults: rtol 1e-7, atol 1e-7


@pytest.mark.parametrize("mask_kind", ["random", "causal", "one_row_empty"])
def test_agrees_with_torch_sdpa_with_boolean_masks(mask_kind):
    rng = np.random.default_rng(11)
    Q, K, V = rand(rng, 2, 4, 3), rand(rng, 2, 4, 3), rand(rng, 2, 4, 2)
    if mask_kind == "random":
        mask = rng.random((2, 4, 4)) < 0.6
        mask[..., 0] = True
    elif mask_kind == "causal":
        mask = causal_mask(4)
    else:
        mask = np.ones((4, 4), dtype=bool)
        mask[2] = False
    out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    ref = F.scaled_dot_product_attention(t(Q), t(K), t(V), attn_mask=t(mask))
    torch.testing.assert_close(t(out), ref)
    assert (w[~np.broadcast_to(mask, w.shape)] == 0).all()


def test_causal_mask_matches_torch_is_causal_for_rectangular_shapes():
    rng = np.random.default_rng(3)
    Q, K, V = rand(rng, 3, 2), rand(rng, 5, 2), rand(rng, 5, 2)
    out, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(3, 5))
    ref = F.scaled_dot_product_attention(t(Q), t(K), t(V), is_causal=True)
    torch.testing.assert_close(t(out), ref)


def test_fully_masked_row_gets_zero_weight_and_zero_output_like_torch():
    rng = np.random.default_rng(4)
    Q, K, V = rand(rng, 2, 3), rand(rng, 3, 3), rand(rng, 3, 2)
    mask = np.array([[True, True, False], [False, False, False]])
    out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    assert (w[1] == 0).all() and (out[1] == 0).all()
    ref = F.scaled_dot_product_attention(t(Q), t(K), t(V), attn_mask=t(mask))
    torch.testing.assert_close(t(out), ref)


def test_single_query_and_scalar_values_give_a_scalar_as_in_the_fruit_example():
    q = np.array([1.0, 0.5])
    K = np.array([[1.0, 0.4], [0.8, 0.7], [-1.0, -0.2]])
    v = np.array([10.0, 5.0, 2.0])
    out, w = scaled_dot_product_attention(q, K, v, scale=1.0)
    assert np.ndim(out) == 0 and w.shape == (3,)
    ref_w = softmax(K @ q)
    np.testing.assert_allclose(w, ref_w)
    np.testing.assert_allclose(out, ref_w @ v)
    out2, _ = scaled_dot_product_attention(q, K, v[:, None], scale=1.0)
    assert out2.shape == (1,)


def test_single_query_accepts_a_mask_over_keys():
    q, K, v = np.ones(2), np.eye(2).repeat(2, axis=0)[:3], np.array([1.0, 2.0, 3.0])
    out, w = scaled_dot_product_attention(q, K, v, mask=np.array([True, False, True]))
    assert w[1] == 0


def test_self_attention_agrees_with_torch_one_head_multihead_attention():
    rng = np.random.default_rng(5)
    n, d_model = 4, 6
    X, W_q, W_k, W_v = rand(rng, n, d_model), *(rand(rng, d_model, d_model) for _ in range(3))
    mha = torch.nn.MultiheadAttention(d_model, num_heads=1, bias=False, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        # torch keeps (out_features, in_features) and computes x @ W.T: transpose ours
        mha.in_proj_weight.copy_(t(np.concatenate([W_q.T, W_k.T, W_v.T])))
        mha.out_proj.weight.copy_(torch.eye(d_model, dtype=torch.float64))
    ref_out, ref_w = mha(t(X)[None], t(X)[None], t(X)[None])
    ours = self_attention(X, W_q, W_k, W_v)
    torch.testing.assert_close(t(ours.output), ref_out[0])
    torch.testing.assert_close(t(ours.weights), ref_w[0])


def test_self_attention_record_holds_every_step():
    rng = np.random.default_rng(6)
    X, W_q, W_k, W_v = rand(rng, 3, 4), rand(rng, 4, 2), rand(rng, 4, 2), rand(rng, 4, 5)
    r = self_attention(X, W_q, W_k, W_v)
    np.testing.assert_allclose(r.Q, X @ W_q)
    np.testing.assert_allclose(r.scores, (X @ W_q) @ (X @ W_k).T / math.sqrt(2))
    np.testing.assert_allclose(r.weights, softmax(r.scores))
    np.testing.assert_allclose(r.output, r.weights @ r.V)
    assert r._fields == ("output", "weights")        # the pair; the steps are attributes
    output, weights = r
    assert output is r.output and weights is r.weights


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**31 - 1))
def test_self_attention_without_mask_is_permutation_equivariant(n, seed):
    rng = np.random.default_rng(seed)
    X, W = rand(rng, n, 3), [rand(rng, 3, 3) for _ in range(3)]
    perm = rng.permutation(n)
    out = self_attention(X, *W).output
    np.testing.assert_allclose(self_attention(X[perm], *W).output, out[perm], atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_output_is_a_convex_combination_of_value_rows(n_q, n_k, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = rand(rng, n_q, 3) * 5, rand(rng, n_k, 3) * 5, rand(rng, n_k, 2)
    out, w = scaled_dot_product_attention(Q, K, V)
    assert ((w >= 0) & (w <= 1)).all()
    np.testing.assert_allclose(w.sum(-1), 1.0)
    np.testing.assert_allclose(out, w @ V)
    assert (out <= V.max(axis=0) + 1e-12).all() and (out >= V.min(axis=0) - 1e-12).all()


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_multi_head_attention_agrees_with_torch_multihead_attention(n_heads):
    from attnbook.multihead import multi_head_attention
    rng = np.random.default_rng(n_heads)
    n, d_model = 5, 8
    X = rand(rng, n, d_model)
    W_q, W_k, W_v, W_o = (rand(rng, d_model, d_model) for _ in range(4))
    mha = torch.nn.MultiheadAttention(d_model, n_heads, bias=False, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(t(np.concatenate([W_q.T, W_k.T, W_v.T])))
        mha.out_proj.weight.copy_(t(W_o.T))
    ref, ref_w = mha(t(X)[None], t(X)[None], t(X)[None], average_attn_weights=False)
    ours = multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads)
    torch.testing.assert_close(t(ours.output), ref[0])
    torch.testing.assert_close(t(ours.weights), ref_w[0])


def test_split_and_merge_heads_are_inverse_and_slice_columns():
    from attnbook.multihead import merge_heads, split_heads
    A = np.arange(24.0).reshape(3, 8)
    H = split_heads(A, 4)
    assert H.shape == (4, 3, 2)
    np.testing.assert_array_equal(H[1], A[:, 2:4])
    np.testing.assert_array_equal(merge_heads(H), A)


def test_multi_head_rejects_indivisible_width():
    from attnbook.multihead import multi_head_attention
    W = np.eye(6)
    with pytest.raises(ValueError, match="divisible"):
        multi_head_attention(np.ones((2, 6)), W, W, W, W, n_heads=4)
