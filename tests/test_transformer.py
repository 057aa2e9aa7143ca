"""attnbook.transformer (chapter 14): Block against torch's
TransformerEncoderLayer (pre-LN and post-LN, causal mask), GroupedQueryAttention
against SDPA's enable_gqa and a per-head loop, TinyGPT's tied weights and its
residual stream, and rotate_half against rotate (bad input: test_bad_input_transformer.py)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from badinput import assert_clear_error
from torch import nn

import attnbook.nn as abn
from attnbook import rotate, rotate_half
from attnbook.nn import Block, GroupedQueryAttention, KVCache, TinyGPT

F64 = torch.float64


def encoder_layer_like(block: Block) -> nn.TransformerEncoderLayer:
    d, h = block.d_model, block.attn.n_heads
    ref = nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.0, activation="gelu",
                                     batch_first=True, norm_first=block.pre_ln, dtype=F64)
    with torch.no_grad():
        ref.self_attn.in_proj_weight.copy_(block.attn.qkv.weight)
        ref.self_attn.in_proj_bias.copy_(block.attn.qkv.bias)
        ref.self_attn.out_proj.weight.copy_(block.attn.proj.weight)
        ref.self_attn.out_proj.bias.copy_(block.attn.proj.bias)
        ref.linear1.load_state_dict(block.mlp[0].state_dict())
        ref.linear2.load_state_dict(block.mlp[2].state_dict())
        ref.norm1.load_state_dict(block.ln1.state_dict())
        ref.norm2.load_state_dict(block.ln2.state_dict())
    return ref.eval()


@pytest.mark.parametrize("pre_ln", [True, False])
@pytest.mark.parametrize("d_model, n_heads, batch, n", [(16, 4, 2, 7), (8, 1, 1, 1),
                                                        (12, 3, 3, 10)])
def test_block_matches_torch_transformer_encoder_layer(pre_ln, d_model, n_heads, batch, n):
    torch.manual_seed(0)
    block = Block(d_model, n_heads, pre_ln=pre_ln).double().eval()
    with torch.no_grad():                     # layer norms away from scale 1, shift 0
        for ln in (block.ln1, block.ln2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_()
    x = torch.randn(batch, n, d_model, dtype=F64)
    mask = nn.Transformer.generate_square_subsequent_mask(n, dtype=F64)
    with torch.no_grad():
        out, w = block(x)
        ref = encoder_layer_like(block)(x, src_mask=mask, is_causal=True)
    assert w.shape == (batch, n_heads, n, n)
    assert (out - ref).abs().max() < 1e-12


def test_pre_ln_block_is_x_plus_what_its_sublayers_write_by_hand():
    torch.manual_seed(1)
    block = Block(8, 2).double()
    x = torch.randn(2, 5, 8, dtype=F64)
    with torch.no_grad():
        a, m, _ = block.writes(x)
        ln = F.layer_norm
        a_ref, _ = block.attn(ln(x, (8,), block.ln1.weight, block.ln1.bias))
        h = x + a_ref
        m_ref = block.mlp[2](F.gelu(block.mlp[0](ln(h, (8,), block.ln2.weight,
                                                     block.ln2.bias))))
        out, _ = block(x)
    torch.testing.assert_close(a, a_ref, rtol=0, atol=1e-14)
    torch.testing.assert_close(m, m_ref, rtol=0, atol=1e-14)
    torch.testing.assert_close(out, x + a + m, rtol=0, atol=1e-14)


def gqa_by_loop(layer: GroupedQueryAttention, x: torch.Tensor) -> torch.Tensor:
    """Each query head against its key-value head, token by token."""
    h, g, d = layer.n_heads, layer.n_kv_heads, layer.d_head
    q, kv = layer.q(x), layer.kv(x)
    k, v = kv[..., : g * d], kv[..., g * d:]
    batch, n, _ = x.shape
    out = torch.zeros(batch, n, h * d, dtype=x.dtype)
    for b in range(batch):
        for head in range(h):
            j = head // (h // g)
            for i in range(n):
                qi = q[b, i, head * d:(head + 1) * d]
                s = torch.stack([qi @ k[b, t, j * d:(j + 1) * d] for t in range(i + 1)])
                w = torch.softmax(s / math.sqrt(d), dim=0)
                out[b, i, head * d:(head + 1) * d] = sum(
                    w[t] * v[b, t, j * d:(j + 1) * d] for t in range(i + 1))
    return layer.proj(out)


@pytest.mark.parametrize("n_heads, n_kv_heads", [(4, 4), (4, 2), (4, 1), (6, 3)])
def test_gqa_matches_sdpa_enable_gqa_and_a_loop(n_heads, n_kv_heads):
    torch.manual_seed(0)
    d_model = 4 * n_heads
    layer = GroupedQueryAttention(d_model, n_heads, n_kv_heads).double()
    x = torch.randn(2, 6, d_model, dtype=F64)
    g, d = n_kv_heads, layer.d_head
    with torch.no_grad():
        out, w = layer(x)
        q = layer.q(x).view(2, 6, n_heads, d).transpose(1, 2)
        k, v = (t.view(2, 6, g, d).transpose(1, 2) for t in layer.kv(x).split(g * d, -1))
        sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ref = layer.proj(sdpa.transpose(1, 2).reshape(2, 6, d_model))
        loop = gqa_by_loop(layer, x)
    assert w.shape == (2, n_heads, 6, 6)
    assert (out - ref).abs().max() < 1e-12
    assert (out - loop).abs().max() < 1e-12


def test_gqa_cache_holds_only_the_kv_heads_and_matches_the_full_run():
    torch.manual_seed(0)
    layer = GroupedQueryAttention(16, 4, 2, max_len=8).double()
    x = torch.randn(1, 8, 16, dtype=F64)
    cache = KVCache()
    with torch.no_grad():
        steps = torch.cat([layer(x[:, t:t + 1], cache)[0] for t in range(8)], dim=1)
        full, _ = layer(x)
    assert cache.k.shape == (1, 2, 8, 4)
    assert (steps - full).abs().max() < 1e-12


def test_gqa_with_as_many_kv_heads_as_heads_is_chapter_12s_layer():
    torch.manual_seed(0)
    mha = abn.CausalSelfAttention(12, 3).double()
    gqa = GroupedQueryAttention(12, 3).double()
    with torch.no_grad():
        gqa.q.weight.copy_(mha.qkv.weight[:12])
        gqa.q.bias.copy_(mha.qkv.bias[:12])
        gqa.kv.weight.copy_(mha.qkv.weight[12:])
        gqa.kv.bias.copy_(mha.qkv.bias[12:])
        gqa.proj.load_state_dict(mha.proj.state_dict())
        x = torch.randn(2, 5, 12, dtype=F64)
        assert (gqa(x)[0] - mha(x)[0]).abs().max() < 1e-12


def test_tinygpt_ties_the_readout_to_the_embedding_and_counts_it_once():
    model = TinyGPT(50, 16, 4, 2, 12)
    assert model.head.weight is model.tok_emb.weight
    per_block = 4 * 16 + (16 * 48 + 48 + 16 * 16 + 16) + (16 * 64 + 64 + 64 * 16 + 16)
    assert sum(p.numel() for p in model.parameters()) == (50 * 16 + 12 * 16 + 2 * per_block
                                                          + 2 * 16)


def test_tinygpt_stream_sums_to_the_hidden_state_and_forward_uses_it():
    model = TinyGPT(20, 16, 2, 3, 10, seed=3).double()
    idx = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        terms = model.stream(idx)
        logits, weights = model(idx)
        x = model.tok_emb(idx) + model.pos_emb(torch.arange(10))
        for block in model.blocks:
            x, _ = block(x)
    assert terms.shape == (7, 2, 10, 16) and len(weights) == 3
    torch.testing.assert_close(terms.sum(0), x, rtol=0, atol=1e-12)
    ref = model.ln_f(terms.sum(0)) @ model.tok_emb.weight.T
    torch.testing.assert_close(logits, ref, rtol=0, atol=1e-12)


def test_tinygpt_seed_gives_the_same_weights_and_leaves_global_state_alone():
    state = torch.random.get_rng_state()
    a, b = TinyGPT(10, 8, 2, 1, 4, seed=5), TinyGPT(10, 8, 2, 1, 4, seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_tinygpt_init_is_normal_002_everywhere_without_gpt2s_residual_scaling():
    # the docstring: every weight N(0, 0.02^2), biases 0; unlike GPT-2, the output
    # projections of the residual branches are not scaled by 1/sqrt(2 n_layers)
    m = TinyGPT(vocab=512, d_model=128, n_heads=4, n_layers=8, max_len=64)
    b = m.blocks[-1]
    for w in (m.tok_emb.weight, b.attn.qkv.weight, b.attn.proj.weight, b.mlp[2].weight):
        assert w.std().item() == pytest.approx(0.02, rel=0.05)
    assert 0.02 / math.sqrt(2 * 8) < 0.6 * b.attn.proj.weight.std().item()
    assert all(lin.bias.abs().max() == 0 for lin in (b.attn.qkv, b.attn.proj, b.mlp[2]))


def test_post_ln_model_runs_but_has_no_stream():
    model = TinyGPT(10, 8, 2, 2, 4, pre_ln=False)
    logits, _ = model(torch.zeros(1, 4, dtype=torch.long))
    assert logits.shape == (1, 4, 10)
    assert_clear_error("stream of post-LN", lambda: model.stream(
        torch.zeros(1, 4, dtype=torch.long)), ValueError, ["pre-LN", "pre_ln=True"])


@pytest.mark.parametrize("d", [2, 8, 64])
def test_rotate_half_is_rotate_up_to_a_permutation_of_the_columns(d):
    rng = np.random.default_rng(d)
    x, p = rng.normal(size=(3, 7, d)), rng.normal(size=7) * 50
    perm = np.r_[0:d:2, 1:d:2]
    np.testing.assert_allclose(rotate_half(x[..., perm], p), rotate(x, p)[..., perm],
                               rtol=0, atol=1e-12)
    q, k = x[0], x[1]                     # scores are equal without permuting back
    np.testing.assert_allclose(rotate_half(q[:, perm], p) @ rotate_half(k[:, perm], p).T,
                               rotate(q, p) @ rotate(k, p).T, rtol=0, atol=1e-10)


def test_rotate_half_by_the_hugging_face_formula():
    rng = np.random.default_rng(0)
    x, p, d = rng.normal(size=(5, 6)), np.arange(5.0), 6
    inv = 1 / 10000 ** (np.arange(0, d, 2) / d)
    emb = np.concatenate([np.outer(p, inv)] * 2, axis=-1)        # (n, d)
    halves = np.concatenate([-x[:, 3:], x[:, :3]], axis=-1)
    np.testing.assert_allclose(rotate_half(x, p), x * np.cos(emb) + halves * np.sin(emb),
                               atol=1e-14)


def test_the_chapter_14_classes_load_lazily_from_attnbook_nn():
    import subprocess
    import sys
    code = ("import sys, attnbook.nn as n; assert 'attnbook.transformer' not in sys.modules; "
            "from attnbook.nn import TinyGPT; import attnbook.transformer as t; "
            "assert TinyGPT is t.TinyGPT and n.Block is t.Block")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with pytest.raises(AttributeError, match="no attribute 'Blocks'"):
        abn.Blocks  # noqa: B018


# --- the options GPT-2 needs (TinyGPT.from_gpt2 against transformers: test_gpt2.py) ---

def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("pre_ln", [True, False])
def test_block_with_the_tanh_gelu_matches_torchs_encoder_layer_with_it(pre_ln):
    torch.manual_seed(2)
    block = Block(16, 4, pre_ln=pre_ln, activation="gelu_tanh").double().eval()
    ref = encoder_layer_like(block)
    ref.activation = lambda t: F.gelu(t, approximate="tanh")   # no fused fast path:
    ref.activation_relu_or_gelu = 0                          # it would use the exact GELU
    x = torch.randn(2, 7, 16, dtype=F64) * 3                   # where the two GELUs differ
    mask = nn.Transformer.generate_square_subsequent_mask(7, dtype=F64)
    with torch.no_grad():
        out, _ = block(x)
        want = ref(x, src_mask=mask, is_causal=True)
    torch.testing.assert_close(out, want, rtol=0, atol=1e-12)


def test_the_tanh_gelu_is_gpt2s_formula_and_not_the_exact_one():
    x = torch.linspace(-5, 5, 101, dtype=F64)
    mlp = Block(4, 1, activation="gelu_tanh").mlp[1]
    gpt2 = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    torch.testing.assert_close(mlp(x), gpt2, rtol=0, atol=1e-15)
    assert (mlp(x) - Block(4, 1).mlp[1](x)).abs().max() > 1e-4


@pytest.mark.parametrize("n_kv_heads", [None, 1])
def test_bias_false_drops_every_linear_bias_and_keeps_the_layer_norm_shifts(n_kv_heads):
    with_bias = Block(8, 2, n_kv_heads)
    without = Block(8, 2, n_kv_heads, bias=False)
    linears = [m for m in without.modules() if isinstance(m, nn.Linear)]
    assert len(linears) == (4 if n_kv_heads is None else 5)
    assert all(m.bias is None for m in linears)
    assert without.ln1.bias is not None and without.ln2.bias is not None
    n_biases = sum(m.bias.numel() for m in with_bias.modules() if isinstance(m, nn.Linear))
    assert n_params(with_bias) - n_params(without) == n_biases
    x = torch.randn(2, 5, 8)
    assert without(x)[0].shape == (2, 5, 8)


def test_an_untied_readout_is_a_matrix_of_its_own_that_forward_uses():
    model = TinyGPT(20, 16, 2, 2, 8, tied=False).double()
    tied = TinyGPT(20, 16, 2, 2, 8)
    assert model.head.weight is not model.tok_emb.weight
    assert not torch.equal(model.head.weight.float(), model.tok_emb.weight.float())
    assert n_params(model) == n_params(tied) + 20 * 16
    idx = torch.randint(0, 20, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        logits, _ = model(idx)
        ref = model.ln_f(model.stream(idx).sum(0)) @ model.head.weight.T
    torch.testing.assert_close(logits, ref, rtol=0, atol=1e-12)


def test_the_default_options_are_the_models_the_chapters_build():
    a = TinyGPT(20, 16, 2, 2, 8, seed=4)
    b = TinyGPT(20, 16, 2, 2, 8, seed=4, activation="gelu", bias=True, tied=True)
    assert a.head.weight is a.tok_emb.weight
    assert a.blocks[0].mlp[1].approximate == "none"
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
