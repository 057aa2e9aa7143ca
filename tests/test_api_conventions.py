"""The API conventions of issue 38, against references attnbook did not write:
every attention function returns Attention(output, weights); valid_lens as
in d2l 1.0.3; RoPE in torch against numpy and complex numbers; the two causal
alignments against a loop and torch's SDPA."""
from __future__ import annotations

import cmath
import math
import pickle

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention.bias import causal_lower_right

import attnbook as ab
from attnbook import nn as abnn

F64 = torch.float64


def t(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a, dtype=float))


# --- one return convention --------------------------------------------------

def _results():
    rng = np.random.default_rng(0)
    X, W = rng.normal(size=(4, 6)), [rng.normal(size=(6, 6)) for _ in range(4)]
    x = torch.randn(2, 4, 6, dtype=F64, generator=torch.Generator().manual_seed(0))
    q = torch.randn(2, 3, 4, 2, dtype=F64)
    yield "scaled_dot_product_attention", ab.scaled_dot_product_attention(X, X, X)
    yield "self_attention", ab.self_attention(X, *W[:3])
    yield "multi_head_attention", ab.multi_head_attention(X, *W, n_heads=2)
    yield "nadaraya_watson", ab.nadaraya_watson([0.0, 1.0], [0.0, 0.5, 2.0], [1.0, 2.0, 3.0])
    yield "DotProductAttention", abnn.DotProductAttention()(x, x, x)
    yield "AdditiveAttention", abnn.AdditiveAttention(6, 6, 5).double()(x, x, x)
    yield "NWKernelRegression", abnn.NWKernelRegression()(
        torch.zeros(2), torch.ones(2, 3), torch.ones(2, 3))
    yield "CausalSelfAttention", abnn.CausalSelfAttention(6, 2).double()(x)
    yield "causal_heads", abnn.causal_heads(q, q, q, torch.ones(4, 4, dtype=torch.bool), F64)
    yield "GroupedQueryAttention", abnn.GroupedQueryAttention(6, 2, 1).double()(x)
    yield "Block", abnn.Block(6, 2).double()(x)


@pytest.mark.parametrize(("name", "result"), list(_results()), ids=[n for n, _ in _results()])
def test_every_attention_function_returns_the_pair_output_weights(name, result):
    assert isinstance(result, ab.Attention), type(result)
    assert result._fields == ("output", "weights")
    output, weights = result                                    # the d2l / torch habit
    assert output is result.output and weights is result.weights
    assert result[0] is output and len(result) == 2


def test_the_steps_stay_attributes_and_survive_copy_pickle_and_replace():
    rng = np.random.default_rng(1)
    X, W = rng.normal(size=(3, 4)), [rng.normal(size=(4, 4)) for _ in range(4)]
    r = ab.self_attention(X, *W[:3])
    np.testing.assert_allclose(r.Q, X @ W[0])
    np.testing.assert_allclose(r.scores, (X @ W[0]) @ (X @ W[1]).T / 2)
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is ab.SelfAttention
    np.testing.assert_array_equal(back.scores, r.scores)
    np.testing.assert_array_equal(r._replace(output=0).V, r.V)
    mh = ab.multi_head_attention(X, *W, n_heads=2)
    np.testing.assert_allclose(mh.output, mh.concat @ W[3])
    assert mh.heads.shape == (2, 3, 2) and "concat=" in repr(mh)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(mh)).heads, mh.heads)


# --- valid_lens as d2l 1.0.3 ------------------------------------------------

def d2l_masked_softmax(X: torch.Tensor, valid_lens: torch.Tensor) -> torch.Tensor:
    """d2l 1.0.3's masked_softmax (d2l/torch.py), copied: -1e6 on masked scores."""
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = X.reshape(-1, shape[-1]).clone()
    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32)[None, :] < valid_lens[:, None]
    X[~mask] = -1e6
    return torch.nn.functional.softmax(X.reshape(shape), dim=-1)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 5), st.booleans(), st.data())
def test_valid_lens_agree_with_d2l_and_with_a_loop(batch, n_q, n_k, per_query, data):
    shape = (batch, n_q) if per_query else (batch,)
    dtype = data.draw(st.sampled_from([np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                       np.uint32, np.int64, np.uint64]))
    lens = data.draw(hnp.arrays(dtype, shape, elements=st.integers(0, n_k)), label="lens")
    rng = np.random.default_rng(batch * 100 + n_q * 10 + n_k)
    Q, K, V = (rng.normal(size=(batch, n, 3)) for n in (n_q, n_k, n_k))
    mask = ab.valid_lens_mask(lens, (batch, n_q, n_k))
    per = lens if per_query else np.repeat(lens[:, None], n_q, axis=1)
    loop = [[[j < per[b][i] for j in range(n_k)] for i in range(n_q)] for b in range(batch)]
    np.testing.assert_array_equal(mask, loop)
    np.testing.assert_array_equal(abnn.valid_lens_mask(torch.as_tensor(lens),   # any dtype
                                                       (batch, n_q, n_k)).numpy(), loop)
    ours = ab.scaled_dot_product_attention(Q, K, V, valid_lens=lens).weights
    theirs = d2l_masked_softmax(t(Q) @ t(K).transpose(1, 2) / math.sqrt(3),
                                torch.as_tensor(lens.astype(np.int64))).numpy()
    empty = per == 0                                  # d2l: a uniform row; attnbook: zeros
    np.testing.assert_allclose(ours[~empty], theirs[~empty], atol=1e-12)
    assert (ours[empty] == 0).all()
    np.testing.assert_allclose(ours, ab.masked_softmax(
        Q @ np.swapaxes(K, 1, 2) / math.sqrt(3), mask=mask), atol=1e-15)


def test_valid_lens_for_a_single_query_and_with_a_mask():
    q, K, V = np.ones(2), np.eye(4, 2), np.arange(8.0).reshape(4, 2)
    out, w = ab.scaled_dot_product_attention(q, K, V, valid_lens=2)
    np.testing.assert_allclose(w, ab.scaled_dot_product_attention(q, K[:2], V[:2]).weights
                               .tolist() + [0, 0])
    both = ab.scaled_dot_product_attention(q, K, V, mask=[False, True, True, True],
                                           valid_lens=2).weights
    np.testing.assert_allclose(both, [0, 1, 0, 0])


# --- RoPE in torch --------------------------------------------------------------

def complex_rope(x: np.ndarray, positions, base: float, layout: str) -> np.ndarray:
    """A loop with Python complex numbers: pair c as x[a] + i x[b], times e^(i p w_c)."""
    out = np.empty_like(x)
    d = x.shape[-1]
    for index in np.ndindex(*x.shape[:-1]):
        p = positions[index[-1]]
        for c in range(d // 2):
            a, b = (2 * c, 2 * c + 1) if layout == "adjacent" else (c, c + d // 2)
            z = complex(x[index + (a,)], x[index + (b,)]) * cmath.exp(
                1j * p * base ** (-2 * c / d))
            out[index + (a,)], out[index + (b,)] = z.real, z.imag
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.sampled_from([2, 4, 8]), st.sampled_from(["adjacent", "half"]),
       st.floats(1.5, 1e6), st.integers(0, 2**31 - 1))
def test_rope_agrees_with_numpy_and_with_complex_numbers(n, d, layout, base, seed):
    rng = np.random.default_rng(seed)
    x, positions = rng.normal(size=(2, n, d)), rng.uniform(-50, 50, size=n)
    ours = ab.rope(torch.tensor(x), positions, base, layout).numpy()
    numpy_twin = ab.rotate if layout == "adjacent" else ab.rotate_half
    np.testing.assert_allclose(ours, numpy_twin(x, positions, base), atol=1e-12)
    np.testing.assert_allclose(ours, complex_rope(x, positions, base, layout), atol=1e-12)


@pytest.mark.parametrize("layout", ["adjacent", "half"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_rope_in_lower_precision_is_the_float64_result_rounded(layout, dtype):
    x = torch.randn(3, 7, 8, dtype=F64, generator=torch.Generator().manual_seed(2))
    exact = ab.rope(x, layout=layout)
    low = ab.rope(x.to(dtype), layout=layout)
    assert low.dtype == dtype
    tol = {torch.float32: 1e-6, torch.float16: 5e-3, torch.bfloat16: 4e-2}[dtype]
    torch.testing.assert_close(low.double(), exact, atol=tol * 4, rtol=tol)


def test_rope_scores_depend_only_on_the_offset_and_gradients_flow():
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 8, dtype=F64, generator=g), torch.randn(1, 8, dtype=F64, generator=g)
    for layout in ("adjacent", "half"):
        s = [float(ab.rope(q, [i], layout=layout) @ ab.rope(k, [i + 2], layout=layout).T)
             for i in (0, 5, 40)]
        np.testing.assert_allclose(s, s[0], rtol=1e-12)
    x = torch.randn(2, 4, 6, requires_grad=True)
    ab.rope(x).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


@pytest.mark.parametrize("n_kv_heads", [None, 1])
@pytest.mark.parametrize("layout", ["adjacent", "half"])
def test_rope_option_of_the_layers_against_torch_sdpa(layout, n_kv_heads):
    """With rope, the layer is torch's SDPA (enable_gqa, is_causal) on rotated
    queries and keys; the cache and left padding change nothing."""
    torch.manual_seed(0)
    layer = (abnn.CausalSelfAttention(8, 4, rope=layout) if n_kv_heads is None else
             abnn.GroupedQueryAttention(8, 4, n_kv_heads, rope=layout)).double().eval()
    x = torch.randn(2, 5, 8, dtype=F64)
    if n_kv_heads is None:
        q, k, v = layer.qkv(x).split(8, dim=-1)
        g = 4
    else:
        q, (k, v), g = layer.q(x), layer.kv(x).split(2 * n_kv_heads, dim=-1), n_kv_heads
    q = q.view(2, 5, 4, 2).transpose(1, 2)
    k, v = (a.reshape(2, 5, g, 2).transpose(1, 2) for a in (k, v))
    ref = torch.nn.functional.scaled_dot_product_attention(
        ab.rope(q, layout=layout), ab.rope(k, layout=layout), v, is_causal=True,
        enable_gqa=True)
    ref = layer.proj(ref.transpose(1, 2).reshape(2, 5, 8))
    out, _ = layer(x)
    torch.testing.assert_close(out, ref)
    cache = abnn.KVCache()
    steps = torch.cat([layer(x[:, :3], cache).output, layer(x[:, 3:], cache).output], 1)
    torch.testing.assert_close(steps, out)
    padded = torch.cat([torch.zeros(2, 2, 8, dtype=F64), x], 1)
    real = torch.arange(7).expand(2, 7) >= 2
    torch.testing.assert_close(layer(padded, key_mask=real).output[:, 2:], out)


def test_rope_is_off_by_default_and_tinygpt_with_rope_has_no_position_embedding():
    plain = abnn.TinyGPT(11, 8, 2, 2, 16)
    assert plain.pos_emb is not None and all(b.attn.rope is None for b in plain.blocks)
    assert "pos_emb.weight" in plain.state_dict()
    roped = abnn.TinyGPT(11, 8, 2, 2, 16, rope="half").double().eval()
    assert roped.pos_emb is None and "pos_emb.weight" not in roped.state_dict()
    idx = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(0))
    full, _ = roped(idx)
    cache = [abnn.KVCache() for _ in roped.blocks]
    steps = torch.cat([roped(idx[:, :4], cache)[0], roped(idx[:, 4:], cache)[0]], 1)
    torch.testing.assert_close(steps, full)


def test_induction_uses_the_public_rope():
    from attnbook import induction
    model = induction.AttentionOnly(10, 8, 2, max_len=12).double()
    layer = model.layers[0]
    assert not hasattr(layer, "_rotate") and not hasattr(layer, "turn")
    x = torch.randn(1, 6, 8, dtype=F64)
    qkv = layer.qkv(x).view(1, 6, 3, 2, 4).permute(2, 0, 3, 1, 4)
    ref = torch.nn.functional.scaled_dot_product_attention(
        ab.rope(qkv[0]), ab.rope(qkv[1]), qkv[2], is_causal=True)
    out, _ = layer(x, torch.ones(2, dtype=torch.bool))
    torch.testing.assert_close(out, layer.proj(ref.transpose(1, 2).reshape(1, 6, 8)))


# --- the two causal alignments ------------------------------------------------

@pytest.mark.parametrize("n_q", range(1, 7))
@pytest.mark.parametrize("n_k", range(1, 7))
def test_causal_mask_alignments_against_a_loop(n_q, n_k):
    top = [[j <= i for j in range(n_k)] for i in range(n_q)]
    bottom = [[j <= i + n_k - n_q for j in range(n_k)] for i in range(n_q)]
    np.testing.assert_array_equal(ab.causal_mask(n_q, n_k), top)          # the default
    np.testing.assert_array_equal(ab.causal_mask(n_q, n_k, align="top-left"), top)
    np.testing.assert_array_equal(ab.causal_mask(n_q, n_k, align="bottom-right"), bottom)


@pytest.mark.parametrize(("n_q", "n_k"), [(1, 5), (3, 7), (4, 4), (2, 9)])
@pytest.mark.parametrize("block_size", [1, 3, 16])
def test_both_alignments_against_torch_sdpa_and_blockwise(n_q, n_k, block_size):
    """top-left is torch's is_causal; bottom-right is causal_lower_right."""
    rng = np.random.default_rng(n_q * n_k)
    Q, K, V = rng.normal(size=(2, n_q, 4)), rng.normal(size=(2, n_k, 4)), rng.normal(
        size=(2, n_k, 3))
    F = torch.nn.functional.scaled_dot_product_attention
    refs = {"top-left": F(t(Q), t(K), t(V), is_causal=True).numpy(),
            "bottom-right": F(t(Q), t(K), t(V),
                              attn_mask=causal_lower_right(n_q, n_k)).numpy()}
    for align, ref in refs.items():
        mask = ab.causal_mask(n_q, n_k, align=align)
        np.testing.assert_allclose(ab.scaled_dot_product_attention(Q, K, V, mask=mask).output,
                                   ref, atol=1e-12)
        np.testing.assert_allclose(ab.blockwise_attention(Q, K, V, block_size, causal=True,
                                                          align=align), ref, atol=1e-12)


def test_bottom_right_with_more_queries_than_keys_gives_the_first_rows_nothing():
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(5, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    out = ab.blockwise_attention(Q, K, V, 2, causal=True, align="bottom-right")
    ref = ab.scaled_dot_product_attention(
        Q, K, V, mask=ab.causal_mask(5, 3, align="bottom-right")).output
    np.testing.assert_allclose(out, ref, atol=1e-12)
    assert (out[:2] == 0).all() and (out[2:] != 0).all()
