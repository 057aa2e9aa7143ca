"""Nadaraya–Watson, additive scores and the torch modules against references."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attnbook
from attnbook import (
    additive_scores,
    gaussian_scores,
    masked_softmax,
    nadaraya_watson,
    scaled_dot_product_attention,
    softmax,
    toy_function,
    toy_regression_data,
)
from attnbook.nn import AdditiveAttention, DotProductAttention, NWKernelRegression


def t(a):
    return torch.tensor(np.array(a))


def data(seed=0):
    return toy_regression_data(np.random.default_rng(seed))


def loop_nw(xq, xk, y, h):
    out = []
    for x in xq:
        k = [math.exp(-((x - xi) ** 2) / (2 * h * h)) for xi in xk]
        out.append(sum(ki * yi for ki, yi in zip(k, y, strict=True)) / sum(k))
    return np.array(out)


@pytest.mark.parametrize("h", [0.3, 1.0, 2.5])
def test_nadaraya_watson_matches_the_kernel_formula_in_a_loop(h):
    x_train, y_train, x_test, _ = data()
    y_hat, w = nadaraya_watson(x_test, x_train, y_train, bandwidth=h)
    np.testing.assert_allclose(y_hat, loop_nw(x_test, x_train, y_train, h), rtol=1e-12)
    assert w.shape == (50, 50)


def test_nadaraya_watson_is_attention_with_gaussian_scores():
    x_train, y_train, x_test, _ = data(1)
    y_hat, w = nadaraya_watson(x_test, x_train, y_train, bandwidth=0.7)
    scores = gaussian_scores(x_test, x_train, bandwidth=0.7)
    np.testing.assert_allclose(w, softmax(scores), rtol=1e-12)
    # the same through torch SDPA: zero queries and keys, scores as an additive float mask
    n_q, n_k = scores.shape
    ref = F.scaled_dot_product_attention(torch.zeros(n_q, 1, dtype=torch.float64),
                                         torch.zeros(n_k, 1, dtype=torch.float64),
                                         t(y_train)[:, None], attn_mask=t(scores))
    torch.testing.assert_close(t(y_hat), ref[:, 0])


def test_bandwidth_to_zero_is_the_nearest_neighbour_and_to_infinity_the_mean():
    x_train, y_train, x_test, _ = data(2)
    nearest = y_train[np.abs(x_test[:, None] - x_train).argmin(axis=1)]
    np.testing.assert_allclose(nadaraya_watson(x_test, x_train, y_train, 1e-6)[0], nearest)
    np.testing.assert_allclose(nadaraya_watson(x_test, x_train, y_train, 1e6)[0],
                               np.full(50, y_train.mean()), rtol=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-3, 1e3), st.integers(0, 1000))
def test_nadaraya_watson_prediction_stays_within_the_training_targets(h, seed):
    x_train, y_train, x_test, _ = data(seed)
    y_hat, w = nadaraya_watson(x_test, x_train, y_train, h)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert (y_hat >= y_train.min() - 1e-9).all() and (y_hat <= y_train.max() + 1e-9).all()


def test_scalar_query_and_per_query_keys():
    y, w = nadaraya_watson(1.0, [0.0, 1.0, 3.0], [0.0, 1.0, 9.0])
    assert np.ndim(y) == 0 and w.shape == (3,)
    xk = np.array([[1.0, 2.0], [0.0, 2.0]])
    yv = np.array([[1.0, 2.0], [0.0, 2.0]])
    y2, w2 = nadaraya_watson(np.array([0.0, 1.0]), xk, yv)
    np.testing.assert_allclose(y2, [loop_nw([0.0], xk[0], yv[0], 1)[0],
                                    loop_nw([1.0], xk[1], yv[1], 1)[0]])


def test_toy_data_uses_only_the_rng_it_is_given():
    a = toy_regression_data(np.random.default_rng(3))
    np.random.seed(0)
    b = toy_regression_data(np.random.default_rng(3))
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)
    x_train, y_train, x_test, y_test = a
    assert (np.diff(x_train) >= 0).all() and len(x_train) == 50 and len(x_test) == 50
    np.testing.assert_allclose(y_test, 2 * np.sin(x_test) + x_test ** 0.8)
    residual = y_train - toy_function(x_train)
    assert 0.3 < residual.std() < 0.7     # N(0, 0.5²) noise, 50 draws


def test_additive_scores_match_a_loop_for_different_query_and_key_sizes():
    rng = np.random.default_rng(8)
    Q, K = rng.normal(size=(2, 3)), rng.normal(size=(4, 5))
    W_q, W_k, w_v = rng.normal(size=(3, 6)), rng.normal(size=(5, 6)), rng.normal(size=6)
    s = additive_scores(Q, K, W_q, W_k, w_v)
    for i in range(2):
        for j in range(4):
            expected = sum(w_v[h] * math.tanh(Q[i] @ W_q[:, h] + K[j] @ W_k[:, h])
                           for h in range(6))
            assert s[i, j] == pytest.approx(expected, rel=1e-12)


def test_additive_attention_module_agrees_with_numpy_core():
    torch.manual_seed(0)
    module = AdditiveAttention(3, 5, 6).double().eval()
    rng = np.random.default_rng(9)
    Q, K, V = rng.normal(size=(2, 2, 3)), rng.normal(size=(2, 4, 5)), rng.normal(size=(2, 4, 2))
    lens = np.array([2, 4])
    out, w = module(t(Q), t(K), t(V), valid_lens=t(lens))
    scores = additive_scores(Q, K, module.W_q.weight.detach().numpy().T,
                             module.W_k.weight.detach().numpy().T,
                             module.w_v.weight.detach().numpy()[0])
    ref_w = masked_softmax(scores, valid_lens=lens)
    torch.testing.assert_close(w, t(ref_w))
    torch.testing.assert_close(out, t(ref_w @ V))


def test_dot_product_attention_module_agrees_with_numpy_core_and_has_no_hidden_state():
    module = DotProductAttention(dropout=0.5).eval()
    rng = np.random.default_rng(10)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    mask = rng.random((2, 3, 5)) < 0.7
    mask[..., 0] = True
    out, w = module(t(Q), t(K), t(V), mask=t(mask))
    ref_out, ref_w = scaled_dot_product_attention(Q, K, V, mask=mask)
    torch.testing.assert_close(out, t(ref_out))
    torch.testing.assert_close(w, t(ref_w))
    assert not hasattr(module, "attention_weights")


def test_dropout_in_training_mode_breaks_the_sum_to_one():
    torch.manual_seed(0)
    module = DotProductAttention(dropout=0.5).train()
    x = torch.randn(1, 8, 4, dtype=torch.float64)
    _, w = module(x, x, x)
    assert not torch.allclose(w.sum(-1), torch.ones(8, dtype=torch.float64))
    _, w_eval = module.eval()(x, x, x)
    torch.testing.assert_close(w_eval.sum(-1), torch.ones(1, 8, dtype=torch.float64))


def test_torch_masked_softmax_gives_zeros_for_valid_length_zero():
    w = attnbook.nn.masked_softmax(torch.ones(2, 2, 3), valid_lens=torch.tensor([0, 2]))
    assert (w[0] == 0).all() and not torch.isnan(w).any()
    torch.testing.assert_close(w[1, :, :2], torch.full((2, 2), 0.5))


def test_nw_module_agrees_with_numpy_nadaraya_watson_with_bandwidth_1_over_w():
    x_train, y_train, _, _ = data(4)
    n = len(x_train)
    keep = ~np.eye(n, dtype=bool)
    xk = x_train[None, :].repeat(n, 0)[keep].reshape(n, n - 1)   # leave-one-out keys
    yk = y_train[None, :].repeat(n, 0)[keep].reshape(n, n - 1)
    module = NWKernelRegression(w=2.0).double()
    y_hat, w = module(t(x_train), t(xk), t(yk))
    ref, ref_w = nadaraya_watson(x_train, xk, yk, bandwidth=0.5)
    torch.testing.assert_close(y_hat, t(ref))
    torch.testing.assert_close(w, t(ref_w))
