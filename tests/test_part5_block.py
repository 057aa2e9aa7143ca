"""Part V, chapter 14: every glued number against an independent computation
(formulas, torch, loops), the comparisons the prose makes, and the exercise
answers."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nbrun import glued_float

from attnbook import rotate, rotate_half
from attnbook.layer import CausalSelfAttention
from attnbook.nn import Block, GroupedQueryAttention, KVCache, TinyGPT

pytestmark = pytest.mark.slow
CH14 = "14_the_whole_block"


def block_params(d):
    return 4 * d + (d * 3 * d + 3 * d + d * d + d) + (d * 4 * d + 4 * d + 4 * d * d + d)


def test_ch14_every_agreement_is_rounding():
    for key in ("torch_gap", "gqa_gap", "stream_gap", "layout_gap", "score_gap"):
        assert glued_float(CH14, key) < 1e-12, key
    assert glued_float(CH14, "unordered_gap") > 0.1


def test_ch14_parameter_counts_against_the_formula():
    assert glued_float(CH14, "tiny_params") == 64 * 32 + 16 * 32 + 4 * block_params(32) + 64
    gpt2 = 50257 * 768 + 1024 * 768 + 12 * block_params(768) + 2 * 768
    assert glued_float(CH14, "gpt2_params") == gpt2 == 124_439_808
    assert glued_float(CH14, "gpt2_tied") == 50257 * 768
    assert glued_float(CH14, "tied_share") == pytest.approx(50257 * 768 / (gpt2 + 50257 * 768))


@pytest.mark.parametrize("key, layers, g, d_head, n, size", [
    ("gpt2_cache", 12, 12, 64, 1024, 4), ("gpt2_gqa", 12, 4, 64, 1024, 4),
    ("gpt2_mqa", 12, 1, 64, 1024, 4), ("llama_mqa", 80, 1, 128, 4096, 2)])
def test_ch14_kv_cache_sizes_against_the_formula(key, layers, g, d_head, n, size):
    assert glued_float(CH14, key) == 2 * layers * g * d_head * n * size / 2 ** 20


def test_ch14_llama_cache_in_gib_and_the_gqa_factor():
    assert glued_float(CH14, "llama_mha_gib") == 2 * 80 * 64 * 128 * 4096 * 2 / 2 ** 30 == 10
    assert glued_float(CH14, "llama_gqa_gib") == 2 * 80 * 8 * 128 * 4096 * 2 / 2 ** 30
    assert glued_float(CH14, "gqa_factor") == 8


def test_ch14_one_sequences_cache_is_smaller_than_the_parameters_a_batch_is_not():
    weights_mib = 124_439_808 * 4 / 2 ** 20                 # GPT-2 small in float32
    per_token_kib = 2 * 12 * 768 * 4 / 2 ** 10               # k and v, 12 layers
    assert glued_float(CH14, "gpt2_weights_mib") == pytest.approx(weights_mib)
    assert glued_float(CH14, "gpt2_token_kib") == per_token_kib == 72
    tokens = glued_float(CH14, "break_even_tokens")
    # the first whole number of tokens whose cache exceeds the parameters
    assert tokens == math.ceil(weights_mib * 2 ** 10 / per_token_kib) and tokens > 1024
    assert (tokens - 1) * per_token_kib < weights_mib * 2 ** 10 < tokens * per_token_kib
    cache_mib = glued_float(CH14, "gpt2_cache")
    batch = glued_float(CH14, "break_even_batch")
    assert (batch - 1) * cache_mib < weights_mib < batch * cache_mib


def test_ch14_gradient_comparisons_in_the_prose():
    post2, post8 = glued_float(CH14, "post_last_2"), glued_float(CH14, "post_last_8")
    pre2, pre8 = glued_float(CH14, "pre_last_2"), glued_float(CH14, "pre_last_8")
    assert glued_float(CH14, "ratio_2") == pytest.approx(post2 / pre2)
    assert glued_float(CH14, "ratio_8") == pytest.approx(post8 / pre8)
    assert 1 < glued_float(CH14, "ratio_2") < glued_float(CH14, "ratio_8")
    assert pre8 < pre2
    rise = glued_float(CH14, "post_rise_pct")              # "rises slowly, by"
    assert rise == pytest.approx(100 * (post8 / post2 - 1)) and 0 < rise < 30
    assert glued_float(CH14, "pre_sqrt_8") == pytest.approx(pre2 / 2)
    assert pre8 > glued_float(CH14, "pre_sqrt_8")       # "more slowly than that"
    assert glued_float(CH14, "pre_fall") == pytest.approx(pre2 / pre8)
    assert 1 < glued_float(CH14, "pre_fall") < 2        # "where 1/sqrt(L) would give 2"


def test_ch14_stream_sizes_are_ordered_as_the_prose_says():
    assert glued_float(CH14, "n_terms") == 9
    low, high = glued_float(CH14, "term_low"), glued_float(CH14, "term_high")
    assert low < high < glued_float(CH14, "emb_size") < glued_float(CH14, "stream_end")


def test_ch14_exercise_answers():
    # 1. zeroed output layers: every pre-LN block is the identity, post-LN is not
    m = TinyGPT(vocab=64, d_model=32, n_heads=4, n_layers=4, max_len=16).double()
    idx = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(0))
    post = Block(32, 4, pre_ln=False).double()
    with torch.no_grad():
        for b in [*m.blocks, post]:
            for lin in (b.attn.proj, b.mlp[2]):
                lin.weight.zero_()
                lin.bias.zero_()
        terms = m.stream(idx)
        x = torch.randn(2, 5, 32, dtype=torch.float64) * 3 + 1
        assert (post(x)[0] - x).abs().max() > 1
    assert terms[1:].abs().max() == 0
    # 2. LLaMA 2 7B's cache, by formula and by the chapter's meta-device layer
    expected = {32: 2 ** 31, 8: 512 * 2 ** 20, 1: 64 * 2 ** 20}
    for g, size in expected.items():
        assert 2 * 32 * g * 128 * 4096 * 2 == size
        with torch.device("meta"):
            layer = GroupedQueryAttention(4096, 32, g, max_len=4096).to(torch.float16)
            cache = KVCache()
            layer(torch.empty(1, 4096, 4096, dtype=torch.float16), cache)
        assert 32 * 2 * cache.k.nelement() * cache.k.element_size() == size
    # 3. reordering W_q's and W_k's columns per head turns rotate into rotate_half
    rng = np.random.default_rng(0)
    d_head, X, p = 8, rng.normal(size=(5, 16)), np.arange(5)
    W_q, W_k = rng.normal(size=(2, 16, d_head))
    perm = np.r_[0:d_head:2, 1:d_head:2]
    old = rotate(X @ W_q, p) @ rotate(X @ W_k, p).T
    new = rotate_half(X @ W_q[:, perm], p) @ rotate_half(X @ W_k[:, perm], p).T
    np.testing.assert_allclose(new, old, atol=1e-10)
    assert np.abs(rotate_half(X @ W_q, p) @ rotate_half(X @ W_k, p).T - old).max() > 0.1
    # ... and with the biases of the book's own layer, their entries reordered too
    torch.manual_seed(0)
    layer = CausalSelfAttention(16, 2).double()
    with torch.no_grad():
        layer.qkv.bias.normal_()
    W = layer.qkv.weight.detach().numpy().T                  # (d_model, 3 d_model)
    b = layer.qkv.bias.detach().numpy()
    assert np.abs(b).max() > 0.1
    for h in range(2):
        q_cols = slice(h * d_head, (h + 1) * d_head)
        k_cols = slice(16 + h * d_head, 16 + (h + 1) * d_head)
        W_q, b_q, W_k, b_k = W[:, q_cols], b[q_cols], W[:, k_cols], b[k_cols]
        old = rotate(X @ W_q + b_q, p) @ rotate(X @ W_k + b_k, p).T
        new = (rotate_half(X @ W_q[:, perm] + b_q[perm], p)
               @ rotate_half(X @ W_k[:, perm] + b_k[perm], p).T)
        np.testing.assert_allclose(new, old, atol=1e-10)
        weights_only = (rotate_half(X @ W_q[:, perm] + b_q, p)
                        @ rotate_half(X @ W_k[:, perm] + b_k, p).T)
        assert np.abs(weights_only - old).max() > 0.1
