"""The parameters round 3 added to the API (issue 38) refuse bad input before
any arithmetic, naming the argument, what was expected and what arrived:
valid_lens in the numpy SDPA, the public valid_lens_mask (numpy and torch),
the causal alignment, and RoPE (the function and the layers' option)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import assert_clear_error, ids

import attnbook as ab
from attnbook import nn as abnn

Q, K, V = np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 2))
X = torch.zeros(1, 3, 8)

CASES = [
    # valid_lens in the numpy SDPA
    ("valid_lens of floats", lambda: ab.scaled_dot_product_attention(
        Q, K, V, valid_lens=[1.5, 2.0]), TypeError, ["valid_lens", "integers", "float64"]),
    ("valid_lens of bools", lambda: ab.scaled_dot_product_attention(
        Q, K, V, valid_lens=[True, False]), TypeError, ["valid_lens", "integers", "bool"]),
    ("valid_lens as a string", lambda: ab.scaled_dot_product_attention(
        Q, K, V, valid_lens="3"), TypeError, ["valid_lens", "integers"]),
    ("valid_lens above n_k", lambda: ab.scaled_dot_product_attention(
        Q, K, V, valid_lens=[1, 6]), ValueError, ["valid_lens", "[0, 5]", "6"]),
    ("valid_lens negative", lambda: ab.scaled_dot_product_attention(
        Q, K, V, valid_lens=[-1, 2]), ValueError, ["valid_lens", "[0, 5]", "-1"]),
    ("valid_lens of the wrong shape", lambda: ab.scaled_dot_product_attention(
        Q, K, V, valid_lens=[1, 2, 3]), ValueError, ["valid_lens", "(2,)", "(2, 3)", "(3,)"]),
    # valid_lens_mask, numpy and torch
    ("valid_lens_mask with a shape that is no tuple", lambda: ab.valid_lens_mask([1], 5),
     TypeError, ["shape", "tuple of integers", "5"]),
    ("valid_lens_mask with a float in the shape", lambda: ab.valid_lens_mask(
        [1], (1, 2.0)), TypeError, ["shape", "(1, 2.0)"]),
    ("valid_lens_mask with lengths of floats", lambda: ab.valid_lens_mask(
        [1.0], (1, 3, 4)), TypeError, ["valid_lens", "integers", "float64"]),
    ("torch valid_lens_mask with a bool tensor", lambda: abnn.valid_lens_mask(
        torch.tensor([True]), (1, 3, 4)), TypeError, ["valid_lens", "integers", "bool"]),
    ("torch valid_lens_mask above n_k", lambda: abnn.valid_lens_mask(
        torch.tensor([5]), (1, 3, 4)), ValueError, ["valid_lens", "[0, 4]", "5"]),
    ("torch valid_lens_mask of uint64 above n_k", lambda: abnn.valid_lens_mask(
        np.array([2**63], dtype=np.uint64), (1, 3, 4)), ValueError,
     ["valid_lens", "[0, 4]", "9223372036854775808"]),
    ("torch valid_lens_mask with a shape of bools", lambda: abnn.valid_lens_mask(
        [1], (True, 4)), TypeError, ["shape", "(True, 4)"]),
    # the causal alignment
    ("causal_mask align not a string", lambda: ab.causal_mask(2, 4, align=True),
     TypeError, ["align", "'top-left' or 'bottom-right'", "bool True"]),
    ("causal_mask align misspelt", lambda: ab.causal_mask(2, 4, align="bottom_right"),
     ValueError, ["align", "'top-left' or 'bottom-right'", "'bottom_right'"]),
    ("causal_mask align None", lambda: ab.causal_mask(2, 4, align=None),
     TypeError, ["align", "NoneType None"]),
    ("blockwise align misspelt", lambda: ab.blockwise_attention(
        Q, K, V, 2, causal=True, align="right"), ValueError, ["align", "'right'"]),
    ("blockwise align of another type", lambda: ab.blockwise_attention(
        Q, K, V, 2, causal=True, align=1), TypeError, ["align", "int 1"]),
    # rope, the function
    ("rope of an array", lambda: ab.rope(np.zeros((3, 4))), TypeError,
     ["x", "torch.Tensor", "ndarray"]),
    ("rope of integers", lambda: ab.rope(torch.zeros(3, 4, dtype=torch.long)), TypeError,
     ["x", "floating-point", "int64"]),
    ("rope of one row", lambda: ab.rope(torch.zeros(4)), ValueError, ["x", "(..., n, d)"]),
    ("rope of an odd width", lambda: ab.rope(torch.zeros(3, 5)), ValueError,
     ["even width", "(3, 5)"]),
    ("rope of NaN", lambda: ab.rope(torch.full((3, 4), float("nan"))), ValueError,
     ["x", "NaN"]),
    ("rope layout misspelt", lambda: ab.rope(torch.zeros(3, 4), layout="rotate_half"),
     ValueError, ["layout", "'adjacent' or 'half'", "'rotate_half'"]),
    ("rope layout not a string", lambda: ab.rope(torch.zeros(3, 4), layout=0), TypeError,
     ["layout", "int 0"]),
    ("rope base zero", lambda: ab.rope(torch.zeros(3, 4), base=0), ValueError,
     ["base", "0"]),
    ("rope base a string", lambda: ab.rope(torch.zeros(3, 4), base="1e4"), TypeError,
     ["base", "'1e4'"]),
    ("rope positions too few", lambda: ab.rope(torch.zeros(3, 4), [0, 1]), ValueError,
     ["positions", "(3,)", "(2,)"]),
    ("rope positions of bools", lambda: ab.rope(torch.zeros(2, 4), [True, False]),
     TypeError, ["positions", "real numbers", "bool"]),
    ("rope positions NaN", lambda: ab.rope(torch.zeros(2, 4), [0.0, float("nan")]),
     ValueError, ["positions", "NaN"]),
    ("rope positions as strings", lambda: ab.rope(torch.zeros(2, 4), ["a", "b"]),
     TypeError, ["positions", "dtype <U1"]),
    ("rope angles that overflow", lambda: ab.rope(torch.zeros(2, 4), [0.0, 1e308],
                                                  base=1e-300), ValueError,
     ["angles", "overflow", "base"]),
    # rope, the layers' option
    ("CausalSelfAttention rope=True", lambda: abnn.CausalSelfAttention(8, 2, rope=True),
     TypeError, ["rope", "'adjacent' or 'half'", "bool True"]),
    ("CausalSelfAttention rope misspelt", lambda: abnn.CausalSelfAttention(
        8, 2, rope="interleaved"), ValueError, ["rope", "'interleaved'"]),
    ("CausalSelfAttention rope with an odd d_head", lambda: abnn.CausalSelfAttention(
        6, 2, rope="half"), ValueError, ["rope", "even", "d_head = 3"]),
    ("CausalSelfAttention rope_base negative", lambda: abnn.CausalSelfAttention(
        8, 2, rope="half", rope_base=-1.0), ValueError, ["rope_base", "-1"]),
    ("GroupedQueryAttention rope as a number", lambda: abnn.GroupedQueryAttention(
        8, 2, 1, rope=1), TypeError, ["rope", "int 1"]),
    ("GroupedQueryAttention rope_base NaN", lambda: abnn.GroupedQueryAttention(
        8, 2, 1, rope="adjacent", rope_base=float("nan")), ValueError, ["rope_base", "nan"]),
    ("Block rope misspelt", lambda: abnn.Block(8, 2, rope="Half"), ValueError,
     ["rope", "'Half'"]),
    ("TinyGPT rope as a flag", lambda: abnn.TinyGPT(10, 8, 2, 1, 4, rope=False), TypeError,
     ["rope", "'adjacent' or 'half'", "bool False"]),
    ("TinyGPT rope with an odd d_head", lambda: abnn.TinyGPT(10, 6, 2, 1, 4, rope="half"),
     ValueError, ["rope", "d_head = 3"]),
]


@pytest.mark.parametrize(("description", "call", "error", "fragments"), CASES,
                         ids=ids(CASES))
def test_new_api_parameters_refuse_bad_input(description, call, error, fragments):
    assert_clear_error(description, call, error, fragments)


@pytest.mark.parametrize("align", [np.str_("bottom-right"), "bottom-right"])
def test_a_numpy_string_is_a_string(align):
    np.testing.assert_array_equal(ab.causal_mask(1, 3, align=align), [[True] * 3])
