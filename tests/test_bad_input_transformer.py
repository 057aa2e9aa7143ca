"""attnbook.transformer and positions.rotate_half (chapter 14) refuse bad input
before any arithmetic, with a message that names the argument and shows what
was expected and what arrived."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import assert_clear_error

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

