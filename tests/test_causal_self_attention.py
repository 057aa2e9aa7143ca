"""attnbook.nn.CausalSelfAttention and KVCache (chapter 12) against
torch.nn.MultiheadAttention, F.scaled_dot_product_attention, a per-head loop,
gradcheck, and the full recomputation for cached decoding."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from badinput import assert_clear_error, ids

from attnbook import causal_mask, scaled_dot_product_attention
from attnbook.nn import CausalSelfAttention, KVCache


def test_the_chapter_12_layer_is_reachable_from_attnbook_nn():
    """Chapter 12's classes live in attnbook.layer; the chapters import them
    from attnbook.nn, which loads them on first use."""
    import attnbook.layer
    import attnbook.nn
    for name in attnbook.layer.__all__:
        assert getattr(attnbook.nn, name) is getattr(attnbook.layer, name), name


def make(d_model=12, n_heads=3, seed=0, **kw):
    torch.manual_seed(seed)
    return CausalSelfAttention(d_model, n_heads, **kw).double().eval()


def as_mha(layer: CausalSelfAttention) -> torch.nn.MultiheadAttention:
    mha = torch.nn.MultiheadAttention(layer.d_model, layer.n_heads, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(layer.qkv.weight)
        mha.in_proj_bias.copy_(layer.qkv.bias)
        mha.out_proj.weight.copy_(layer.proj.weight)
        mha.out_proj.bias.copy_(layer.proj.bias)
    return mha.eval()


@pytest.mark.parametrize("d_model, n_heads, batch, n", [(12, 3, 2, 7), (8, 1, 1, 1),
                                                        (16, 4, 3, 16), (6, 6, 2, 5)])
def test_matches_torch_multihead_attention_in_float64(d_model, n_heads, batch, n):
    layer = make(d_model, n_heads)
    x = torch.randn(batch, n, d_model, dtype=torch.float64)
    with torch.no_grad():
        out, w = layer(x)
        ref, ref_w = as_mha(layer)(x, x, x, attn_mask=~torch.tensor(causal_mask(n)),
                                   average_attn_weights=False)
    assert w.shape == (batch, n_heads, n, n)
    assert (out - ref).abs().max() < 1e-12
    assert (w - ref_w).abs().max() < 1e-12


def test_matches_sdpa_is_causal_and_a_numpy_loop_over_heads():
    layer = make(12, 3)
    x = torch.randn(2, 9, 12, dtype=torch.float64)
    with torch.no_grad():
        out, w = layer(x)
        qkv = layer.qkv(x)
    q, k, v = (qkv[..., i * 12:(i + 1) * 12] for i in range(3))          # (2, 9, 12)
    heads = [F.scaled_dot_product_attention(*(t[..., h * 4:(h + 1) * 4] for t in (q, k, v)),
                                            is_causal=True) for h in range(3)]
    with torch.no_grad():
        ref = layer.proj(torch.cat(heads, dim=-1))
    assert (out - ref).abs().max() < 1e-12
    for b in range(2):                        # weights against numpy, head by head
        for h in range(3):
            cols = slice(h * 4, (h + 1) * 4)
            _, wn = scaled_dot_product_attention(q[b, :, cols].numpy(), k[b, :, cols].numpy(),
                                                 v[b, :, cols].numpy(), mask=causal_mask(9))
            np.testing.assert_allclose(w[b, h].numpy(), wn, atol=1e-12)


def test_weights_are_causal_rows_sum_to_one_and_nothing_is_stored_on_the_module():
    layer = make()
    before = set(vars(layer))
    _, w = layer(torch.randn(2, 6, 12, dtype=torch.float64))
    assert set(vars(layer)) == before
    assert (w.triu(diagonal=1) == 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 6, dtype=torch.float64))


def test_gradcheck_through_the_input_and_the_fused_qkv_weight():
    layer = make(4, 2)
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: layer(x)[0], (x,))
    params = dict(layer.named_parameters())

    def through_qkv(w):
        return torch.func.functional_call(layer, {**params, "qkv.weight": w}, (x.detach(),))[0]

    w = layer.qkv.weight.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(through_qkv, (w,))


@pytest.mark.parametrize("chunks", [[1] * 10, [3, 1, 4, 2], [10], [5, 5]])
def test_kv_cache_gives_the_full_recomputation_chunk_by_chunk(chunks):
    layer = make(12, 3)
    x = torch.randn(2, sum(chunks), 12, dtype=torch.float64)
    with torch.no_grad():
        full, full_w = layer(x)
        cache, outs, start = KVCache(), [], 0
        for c in chunks:
            o, w = layer(x[:, start:start + c], cache)
            assert w.shape == (2, 3, c, start + c)       # new queries x all keys so far
            torch.testing.assert_close(w, full_w[:, :, start:start + c, :start + c],
                                       rtol=0, atol=1e-12)
            outs.append(o)
            start += c
            assert len(cache) == start
    assert (torch.cat(outs, dim=1) - full).abs().max() < 1e-12


def test_kv_cache_step_by_step_equals_recomputing_the_prefix_each_step():
    layer = make(8, 2)
    x = torch.randn(1, 12, 8, dtype=torch.float64)
    cache = KVCache()
    with torch.no_grad():
        for t in range(12):
            o_cached, w_cached = layer(x[:, t:t + 1], cache)
            o_full, w_full = layer(x[:, :t + 1])
            assert w_cached.shape[-2:] == (1, t + 1) and w_full.shape[-2:] == (t + 1, t + 1)
            assert (o_cached[:, -1] - o_full[:, -1]).abs().max() < 1e-12


def test_dropout_zeroes_weights_in_training_and_not_in_eval():
    layer = make(8, 2, dropout=0.5).train()
    x = torch.randn(1, 20, 8, dtype=torch.float64)
    _, w = layer(x)
    lower = torch.tril(torch.ones(20, 20, dtype=torch.bool))
    assert (w[..., lower] == 0).any()
    layer.eval()
    _, w = layer(x)
    torch.testing.assert_close(w.sum(-1), torch.ones(1, 2, 20, dtype=torch.float64))


def test_gpt2_small_attention_has_the_published_shapes_and_parameter_count():
    with torch.device("meta"):
        layer = CausalSelfAttention(768, 12, max_len=1024)
    assert layer.qkv.weight.shape == (2304, 768) and layer.d_head == 64
    assert sum(p.numel() for p in layer.parameters()) == 768 * 2304 + 2304 + 768 * 768 + 768
    assert layer.mask.shape == (1024, 1024)


BAD = [
    ("heads do not divide", lambda: CausalSelfAttention(10, 3), ValueError,
     ["d_model", "10", "n_heads", "3"]),
    ("zero heads", lambda: CausalSelfAttention(8, 0), ValueError, ["n_heads", "0"]),
    ("dropout of 1", lambda: CausalSelfAttention(8, 2, dropout=1.0), ValueError,
     ["dropout", "[0, 1)"]),
    ("x of rank 2", lambda: make(8, 2)(torch.zeros(5, 8, dtype=torch.float64)), ValueError,
     ["x", "(batch, n, d_model)", "(5, 8)"]),
    ("x of the wrong width", lambda: make(8, 2)(torch.zeros(1, 5, 6, dtype=torch.float64)),
     ValueError, ["x", "8", "(1, 5, 6)"]),
    ("longer than max_len",
     lambda: make(8, 2, max_len=4)(torch.zeros(1, 5, 8, dtype=torch.float64)), ValueError,
     ["max_len", "4", "5"]),
]


@pytest.mark.parametrize("what, call, error, fragments", BAD, ids=ids(BAD))
def test_bad_input_names_the_argument(what, call, error, fragments):
    assert_clear_error(what, call, error, fragments)


def test_cache_refuses_keys_of_another_layer_shape():
    cache = KVCache()
    cache.append(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"k must have shape .*\(1, 2, n_new, 4\).*\(1, 3, 1, 4\)"):
        cache.append(torch.zeros(1, 3, 1, 4), torch.zeros(1, 3, 1, 4))


def test_the_scale_is_one_over_the_square_root_of_the_head_width():
    layer = make(16, 4)
    with torch.no_grad():
        layer.qkv.weight.zero_()
        layer.qkv.bias.zero_()
        layer.qkv.bias[:16] = 1.0             # every query all ones
        layer.qkv.bias[16] = 2.0              # key coordinate 0 of head 0 ...
        layer.qkv.weight[16, 0] = 1.0         # ... plus 1 for a token whose x[0] is 1
        x = torch.zeros(1, 2, 16, dtype=torch.float64)
        x[0, 1, 0] = 1.0                      # token 1's key is 3, token 0's is 2
        _, w = layer(x)
    s = 3.0 / math.sqrt(4)                     # token 1's key·query in head 0, scaled
    expected = math.exp(s) / (math.exp(2.0 / math.sqrt(4)) + math.exp(s))
    assert w[0, 0, 1, 1].item() == pytest.approx(expected, rel=1e-12)
