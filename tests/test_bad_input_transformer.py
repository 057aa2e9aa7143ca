"""attnbook.transformer and positions.rotate_half (chapter 14) refuse bad input
before any arithmetic, with a message that names the argument and shows what
was expected and what arrived."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import assert_clear_error
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import rotate_half
from attnbook.nn import Block, CausalSelfAttention, GroupedQueryAttention, TinyGPT

F64 = torch.float64

BAD = [
    (lambda: Block(10, 3), ValueError, ["d_model = 10", "n_heads = 3"]),
    (lambda: Block(12, 4, n_kv_heads=3), ValueError, ["n_kv_heads", "n_heads = 4", "3"]),
    (lambda: Block(12, 4, pre_ln="yes"), TypeError, ["pre_ln", "'yes'"]),
    # issue 38: every flag goes through _checks.flag
    (lambda: GroupedQueryAttention(8, 2, bias="no"), TypeError,
     ["bias must be True or False", "'no'"]),
    (lambda: GroupedQueryAttention(8, 2, bias=None), TypeError, ["bias", "None"]),
    (lambda: GroupedQueryAttention(8, 2, bias=0), TypeError, ["bias", "int 0"]),
    (lambda: Block(8, 2, pre_ln=1), TypeError, ["pre_ln must be True or False", "int 1"]),
    (lambda: Block(8, 2, pre_ln=None), TypeError, ["pre_ln", "None"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4, pre_ln="no"), TypeError, ["pre_ln", "'no'"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4, pre_ln=np.float64(1.0)), TypeError, ["pre_ln", "1.0"]),
    # no tokens: TinyGPT refused n = 0, its layers now do too
    (lambda: GroupedQueryAttention(8, 2, 1)(torch.zeros(2, 0, 8)), ValueError,
     ["x", "n >= 1", "(2, 0, 8)"]),
    (lambda: Block(8, 2)(torch.zeros(1, 0, 8)), ValueError, ["x", "n >= 1", "(1, 0, 8)"]),
    (lambda: CausalSelfAttention(8, 2)(torch.zeros(1, 0, 8)), ValueError,
     ["x", "n >= 1", "(1, 0, 8)"]),
    (lambda: GroupedQueryAttention(8, 2, 0), ValueError, ["n_kv_heads", "0"]),
    (lambda: TinyGPT(0, 8, 2, 1, 4), ValueError, ["vocab", "0"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4, seed=-1), ValueError, ["seed", "-1"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4)(torch.zeros(1, 4)), TypeError, ["idx", "float32"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4)(torch.zeros(4, dtype=torch.long)), ValueError,
     ["idx", "(batch, n)", "(4,)"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4)(torch.zeros(1, 5, dtype=torch.long)), ValueError,
     ["n = 5", "max_len = 4"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4)(torch.full((1, 3), 10)), ValueError,
     ["[0, 10)", "10"]),
    (lambda: Block(8, 2)(torch.zeros(1, 3, 6)), ValueError, ["x", "(batch, n, 8)",
                                                            "(1, 3, 6)"]),
    (lambda: Block(8, 2)(torch.zeros(1, 3, 8, dtype=F64)), TypeError,
     ["x", "torch.float32", "torch.float64"]),
    (lambda: Block(8, 2, pre_ln=False).writes(torch.zeros(1, 3, 8)), ValueError,
     ["pre-LN"]),
    (lambda: GroupedQueryAttention(8, 2, 1)(torch.full((1, 2, 8), float("nan"))),
     ValueError, ["x", "NaN"]),
    (lambda: GroupedQueryAttention(8, 2, 1, max_len=2)(torch.zeros(1, 3, 8)), ValueError,
     ["3", "max_len = 2"]),
    (lambda: GroupedQueryAttention(8, 2, 1)(torch.zeros(1, 3, 8), cache={}), TypeError,
     ["cache must be a KVCache", "dict"]),
    (lambda: rotate_half(np.zeros((3, 5)), np.arange(3)), ValueError, ["even", "(3, 5)"]),
    (lambda: rotate_half(np.zeros((3, 4)), np.arange(2)), ValueError,
     ["positions", "(3,)", "(2,)"]),
    (lambda: rotate_half(np.zeros(4), np.arange(1)), ValueError, ["x", "(..., n, d)"]),
    (lambda: rotate_half(np.zeros((2, 4)), [0, np.inf]), ValueError, ["positions"]),
    (lambda: rotate_half(np.zeros((2, 4)), [0, 1], base=0), ValueError, ["base"]),
    # a tiny base: the frequencies overflow (the result used to hold NaN)
    (lambda: rotate_half(np.ones((1, 1000)), [1.0], base=1e-310), ValueError,
     ["base = 1e-310", "too small"]),
    (lambda: rotate_half(np.full((1, 2), 1.5e308), [1.0]), ValueError, ["overflows", "rescale x"]),
]


@pytest.mark.parametrize("call, error, fragments", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_gets_a_clear_error(call, error, fragments):
    assert_clear_error(str(fragments), call, error, fragments)


def test_grouped_query_attention_refuses_scores_that_overflow_instead_of_returning_nan():
    layer = GroupedQueryAttention(8, 2, 1, max_len=16)
    with pytest.raises(ValueError, match="scores overflow"):
        layer(torch.full((1, 4, 8), 1e20))



def gpt2_names(vocab=11, d=8, n_positions=6, n_layers=2, prefix="transformer."):
    """A GPT-2 state dict by hand (GPT2LMHeadModel's names and shapes, Conv1D
    weights stored (in, out)), without transformers."""
    sd = {f"{prefix}wte.weight": torch.randn(vocab, d), f"{prefix}wpe.weight":
          torch.randn(n_positions, d), f"{prefix}ln_f.weight": torch.ones(d),
          f"{prefix}ln_f.bias": torch.zeros(d)}
    for i in range(n_layers):
        for name, w, b in (("ln_1", (d,), d), ("attn.c_attn", (d, 3 * d), 3 * d),
                           ("attn.c_proj", (d, d), d), ("ln_2", (d,), d),
                           ("mlp.c_fc", (d, 4 * d), 4 * d), ("mlp.c_proj", (4 * d, d), d)):
            sd[f"{prefix}h.{i}.{name}.weight"] = torch.randn(w)
            sd[f"{prefix}h.{i}.{name}.bias"] = torch.randn(b)
    sd["lm_head.weight"] = sd[f"{prefix}wte.weight"]
    return sd


def changed(drop=(), **replace):
    """gpt2_names() without the names in `drop`, with the tensors in `replace`
    (keys with '__' for '.', 'transformer.' left out)."""
    sd = gpt2_names()
    for name in drop:
        del sd[name]
    for key, t in replace.items():
        name = key.replace("__", ".")
        sd[name if name.startswith("lm_head") else "transformer." + name] = t
    return sd


def _nan_ln():
    sd = gpt2_names()
    sd["transformer.h.1.ln_2.weight"][3] = float("nan")
    return sd


BAD_OPTIONS = [
    (lambda: Block(8, 2, activation="relu"), ValueError, ["activation", "'gelu_tanh'",
                                                          "'relu'"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4, activation=None), TypeError, ["activation",
                                                                  "'gelu'", "NoneType None"]),
    (lambda: Block(8, 2, bias="no"), TypeError, ["bias", "str 'no'"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4, bias=None), TypeError, ["bias", "None"]),
    (lambda: TinyGPT(10, 8, 2, 1, 4, tied=1), TypeError, ["tied", "int 1"]),
    (lambda: TinyGPT.from_gpt2(TinyGPT(10, 8, 2, 1, 4), 2), TypeError,
     ["state_dict", "mapping", "got TinyGPT"]),
    (lambda: TinyGPT.from_gpt2(TinyGPT(10, 8, 2, 1, 4).state_dict(), 2), ValueError,
     ["not GPT-2's", "'wte.weight'", "'blocks.0.attn.proj.bias'"]),
    (lambda: TinyGPT.from_gpt2(gpt2_names(), 3), ValueError, ["d_model = 8", "n_heads = 3"]),
    (lambda: TinyGPT.from_gpt2(gpt2_names(), n_heads="2"), TypeError, ["n_heads", "'2'"]),
    (lambda: TinyGPT.from_gpt2(changed(["transformer.h.1.mlp.c_fc.bias"]), 2), ValueError,
     ["not GPT-2's", "missing", "'h.1.mlp.c_fc.bias'"]),
    (lambda: TinyGPT.from_gpt2(changed(h__0__attn__q_attn__weight=torch.zeros(8, 8)), 2),
     ValueError, ["not GPT-2's", "unexpected", "'h.0.attn.q_attn.weight'"]),
    (lambda: TinyGPT.from_gpt2(changed(h__0__attn__c_attn__weight=torch.zeros(24, 8)), 2),
     ValueError, ["'h.0.attn.c_attn.weight'", "(8, 24)", "got (24, 8)"]),
    (lambda: TinyGPT.from_gpt2(changed(lm_head__weight=torch.zeros(12, 8)), 2), ValueError,
     ["'lm_head.weight'", "(11, 8)", "(12, 8)"]),
    (lambda: TinyGPT.from_gpt2(changed(wte__weight=torch.zeros(88)), 2), ValueError,
     ["'wte.weight'", "(rows, d_model)", "(88,)"]),
    (lambda: TinyGPT.from_gpt2(changed(["transformer.wpe.weight"]), 2), ValueError,
     ["no 'wpe.weight'", "position"]),
    (lambda: TinyGPT.from_gpt2(changed(ln_f__bias=torch.zeros(8, dtype=torch.long)), 2),
     TypeError, ["'transformer.ln_f.bias'", "floating-point", "torch.int64"]),
    (lambda: TinyGPT.from_gpt2(changed(ln_f__bias=[0.0] * 8), 2), TypeError,
     ["'transformer.ln_f.bias'", "tensor", "list"]),
    (lambda: TinyGPT.from_gpt2(changed(ln_f__bias=torch.zeros(8, dtype=F64)), 2),
     TypeError, ["one dtype", "torch.float32", "torch.float64"]),
    (lambda: TinyGPT.from_gpt2(_nan_ln(), 2), ValueError, ["'h.1.ln_2.weight'", "NaN"]),
    (lambda: TinyGPT.from_gpt2({**gpt2_names(), "wte.weight": torch.zeros(11, 8)}, 2),
     ValueError, ["'wte.weight' twice", "transformer."]),
    (lambda: TinyGPT.from_gpt2({0: torch.zeros(3)}, 2), TypeError, ["keys", "int 0"]),
    (lambda: TinyGPT.from_gpt2({k: v for k, v in gpt2_names().items() if ".h." not in k},
                               2), ValueError, ["no blocks", "'h.0.*'"]),
]


@pytest.mark.parametrize("call, error, fragments", BAD_OPTIONS,
                         ids=[str(i) for i in range(len(BAD_OPTIONS))])
def test_bad_gpt2_options_and_checkpoints_get_a_clear_error(call, error, fragments):
    assert_clear_error(str(fragments), call, error, fragments)


def test_the_hand_made_gpt2_state_dict_loads():
    model = TinyGPT.from_gpt2(gpt2_names(), n_heads=2)   # the rows above change one thing
    assert (model.vocab, model.max_len, len(model.blocks)) == (11, 6, 2)
    bare = TinyGPT.from_gpt2(gpt2_names(prefix=""), n_heads=2)
    assert bare.head.weight is bare.tok_emb.weight


NOT_FLAGS = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5),
                      st.sampled_from([np.int64(1), [True], "True"]))


@settings(max_examples=25, deadline=None)
@given(value=NOT_FLAGS, name=st.sampled_from(["bias", "tied"]))
def test_bias_and_tied_refuse_anything_but_a_bool(value, name):
    with pytest.raises(TypeError, match=f"{name} must be True or False"):
        TinyGPT(10, 8, 2, 1, 4, **{name: value})


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_bias_and_tied_take_python_and_numpy_bools(value):
    model = TinyGPT(10, 8, 2, 1, 4, bias=value, tied=value)
    assert (model.head.weight is model.tok_emb.weight) == bool(value)
    assert (model.blocks[0].mlp[0].bias is not None) == bool(value)
