"""The torch modules of attnbook.nn refuse bad input as the numpy core does:
an error that names the argument, with the same wording, and no silently
wrong number (a mask that enlarges the batch, an overflow posing as a masked
row). Also: gradcheck and gradgradcheck, and agreement with torch SDPA."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from badinput import assert_clear_error, ids
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import attnbook as ab
from attnbook import nn as abn

rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
tq, tk, tv = (torch.tensor(a) for a in (Q, K, V))
F64 = torch.float64


def dpa(*args, **kwargs):
    return abn.DotProductAttention()(*args, **kwargs)


def additive(*args, **kwargs):
    torch.manual_seed(0)
    return abn.AdditiveAttention(4, 4, 3).double()(*args, **kwargs)


def nw(*args, w=1.0):
    return abn.NWKernelRegression(w=w).double()(*args)


XQ = torch.tensor([0.5, 1.5, 2.5], dtype=F64)
XK = torch.tensor(np.tile([0.0, 1.0, 2.0, 3.0], (3, 1)), dtype=F64)
YV = torch.tensor(np.tile([1.0, 2.0, 0.0, 1.0], (3, 1)), dtype=F64)
BOOL = torch.bool

# (description, call, exception type, fragments the message must contain)
CASES = [
    # masks: the same rules as attnbook.masked_softmax
    ("mask that would enlarge the batch (the issue's reproducer)",
     lambda: dpa(tq, tk, tv, mask=torch.ones(2, 3, 5, dtype=BOOL)),
     ValueError, ["mask", "broadcast", "(3, 5)", "(2, 3, 5)"]),
    ("mask that does not broadcast", lambda: dpa(tq, tk, tv, mask=torch.ones(3, 4, dtype=BOOL)),
     ValueError, ["mask", "(3, 5)", "(3, 4)"]),
    ("mask of 0/1 floats", lambda: dpa(tq, tk, tv, mask=torch.ones(3, 5)),
     TypeError, ["mask", "boolean", "torch.float32"]),
    ("numpy mask of 0/1 floats",
     lambda: abn.masked_softmax(torch.zeros(3, 5), mask=np.ones((3, 5))),
     TypeError, ["mask", "boolean", "torch.float64"]),
    ("mask of strings", lambda: abn.masked_softmax(torch.zeros(1, 2), mask=[["a", "b"]]),
     TypeError, ["mask", "<U1"]),
    ("additive module: mask that would enlarge the batch",
     lambda: additive(tq, tk, tv, mask=torch.ones(2, 3, 5, dtype=BOOL)),
     ValueError, ["mask", "(3, 5)", "(2, 3, 5)"]),
    # valid_lens
    ("valid_lens as floats", lambda: dpa(tq[None], tk[None], tv[None], valid_lens=[2.0]),
     TypeError, ["valid_lens", "integers", "float64"]),
    ("valid_lens above n_k", lambda: dpa(tq[None], tk[None], tv[None], valid_lens=np.array([6])),
     ValueError, ["valid_lens", "[0, 5]", "6"]),
    ("valid_lens of the wrong shape",
     lambda: dpa(tq[None], tk[None], tv[None], valid_lens=torch.tensor([1, 2])),
     ValueError, ["valid_lens", "(1,)", "(1, 3)", "(2,)"]),
    ("valid_lens as booleans", lambda: abn.masked_softmax(torch.zeros(2, 3, 5), valid_lens=[True, False]),
     TypeError, ["valid_lens", "integers", "bool"]),
    # the data: tensors of one floating dtype, the right shapes, finite
    ("numpy queries", lambda: dpa(Q, tk, tv),
     TypeError, ["queries", "torch.Tensor", "ndarray", "torch.as_tensor"]),
    ("list keys", lambda: dpa(tq, K.tolist(), tv), TypeError, ["keys", "torch.Tensor", "list"]),
    ("numpy scores for masked_softmax", lambda: abn.masked_softmax(np.zeros((3, 5))),
     TypeError, ["scores", "torch.Tensor", "ndarray"]),
    ("integer tensors", lambda: dpa(torch.ones(3, 4, dtype=torch.long), tk, tv),
     TypeError, ["queries", "floating-point", "torch.int64"]),
    ("integer scores", lambda: abn.masked_softmax(torch.zeros(3, 5, dtype=torch.long)),
     TypeError, ["scores", "floating-point", "torch.int64"]),
    ("float32 queries with float64 keys", lambda: dpa(tq.float(), tk, tv),
     TypeError, ["keys", "dtype of queries", "torch.float32", "torch.float64"]),
    ("float32 values", lambda: dpa(tq, tk, tv.float()),
     TypeError, ["values", "dtype of queries", "torch.float64", "torch.float32"]),
    ("float64 inputs to a float32 additive module",
     lambda: abn.AdditiveAttention(4, 4, 3)(tq, tk, tv),
     TypeError, ["queries", "parameters", "torch.float32", "torch.float64", ".double()"]),
    ("float32 inputs to a float64 NW module", lambda: nw(XQ.float(), XK.float(), YV.float()),
     TypeError, ["x_query", "parameters", "torch.float64", "torch.float32"]),
    ("d_k of queries differs from keys", lambda: dpa(tq[:, :3], tk, tv),
     ValueError, ["queries", "d_k", "(3, 3)", "(5, 4)"]),
    ("values with the wrong number of rows", lambda: dpa(tq, tk, tv[:4]),
     ValueError, ["values", "one row per key", "(4, 2)", "(5, 4)"]),
    ("keys with one dimension", lambda: dpa(tq, tk[0], tv),
     ValueError, ["keys", "(..., n_k, d_k)", "(4,)"]),
    ("no keys", lambda: dpa(tq, tk[:0], tv[:0]), ValueError, ["keys", "at least one key", "(0, 4)"]),
    ("d_k of 0", lambda: dpa(tq[:, :0], tk[:, :0], tv), ValueError, ["d_k", "keys", "(5, 0)"]),
    ("batches that do not broadcast",
     lambda: dpa(torch.zeros(2, 3, 4), torch.zeros(3, 5, 4), torch.zeros(3, 5, 2)),
     ValueError, ["batch dimensions", "queries", "(2,)", "(3,)"]),
    ("NaN in queries", lambda: dpa(torch.where(tq > 1, float("nan"), tq), tk, tv),
     ValueError, ["queries", "NaN", "(3, 4)"]),
    ("inf in keys", lambda: dpa(tq, torch.full((5, 4), float("inf"), dtype=F64), tv),
     ValueError, ["keys", "inf", "(0, 0)"]),
    ("NaN in masked_softmax scores", lambda: abn.masked_softmax(torch.tensor([[float("nan"), 0.0]])),
     ValueError, ["scores", "NaN or +inf", "(0, 0)"]),
    ("+inf in masked_softmax scores", lambda: abn.masked_softmax(torch.tensor([[float("inf"), 0.0]])),
     ValueError, ["scores", "NaN or +inf"]),
    ("scalar masked_softmax scores", lambda: abn.masked_softmax(torch.tensor(1.0)),
     ValueError, ["scores", "(..., n_k)", "()"]),
    # overflow: refused, never a zero or NaN row
    ("scores that overflow (the numpy reproducer, in torch)",
     lambda: dpa(torch.tensor([[1e200, 1e200]], dtype=F64),
                 torch.tensor([[1e200, 1e200], [1e200, 0.0]], dtype=F64),
                 torch.tensor([[1.0], [2.0]], dtype=F64)),
     ValueError, ["overflow", "query row 0", "key 0", "queries or keys"]),
    ("float32 scores that overflow",
     lambda: dpa(torch.full((2, 4), 1e20), torch.full((3, 4), 1e20), torch.ones(3, 1)),
     ValueError, ["overflow", "torch.float32", "query row 0"]),
    ("NW scores that overflow", lambda: nw(XQ * 1e140, XK, YV, w=1e20),
     ValueError, ["overflow", "w = 1e+20", "x_query", "query row 0"]),
    ("NW w beyond float32", lambda: abn.NWKernelRegression(w=1e200),
     ValueError, ["w = 1e+200", "torch.float32", "finite"]),
    # the additive module's sizes
    ("queries wider than query_size", lambda: additive(tq[:, :3], tk, tv),
     ValueError, ["queries", "query_size = 4", "(3, 3)"]),
    ("keys wider than key_size", lambda: additive(tq, torch.zeros(5, 6, dtype=F64), tv),
     ValueError, ["keys", "key_size = 4", "(5, 6)"]),
    ("values with the wrong number of rows (additive)", lambda: additive(tq, tk, tv[:4]),
     ValueError, ["values", "one row per key"]),
    ("NaN in additive keys", lambda: additive(tq, torch.full((5, 4), float("nan"), dtype=F64), tv),
     ValueError, ["keys", "NaN"]),
    ("query_size 0", lambda: abn.AdditiveAttention(0, 4, 3),
     ValueError, ["query_size", "positive integer", "0"]),
    ("num_hiddens as a float", lambda: abn.AdditiveAttention(4, 4, 2.5),
     TypeError, ["num_hiddens", "positive integer", "2.5"]),
    ("dropout above 1", lambda: abn.DotProductAttention(dropout=1.5),
     ValueError, ["dropout", "[0, 1]", "1.5"]),
    ("dropout as a string", lambda: abn.AdditiveAttention(4, 4, 3, dropout="0.1"),
     ValueError, ["dropout", "'0.1'"]),
    # the NW module
    ("NW x_query with two dimensions (used to give wrong shapes)",
     lambda: nw(XQ[:, None], XK, YV), ValueError, ["x_query", "(n_q,)", "(3, 1)"]),
    ("NW square x_query", lambda: nw(XK[:, :3], XK[:, :3], YV[:, :3]),
     ValueError, ["x_query", "(n_q,)", "(3, 3)"]),
    ("NW w = NaN", lambda: abn.NWKernelRegression(w=float("nan")), ValueError, ["w", "finite", "nan"]),
    ("NW w = inf", lambda: abn.NWKernelRegression(w=float("inf")), ValueError, ["w", "finite"]),
    ("NW w as a string", lambda: abn.NWKernelRegression(w="1"), TypeError, ["w", "str"]),
    ("NW keys shared, not per query", lambda: nw(XQ, XK[0], YV[0]),
     ValueError, ["x_keys", "(n_q, n_k)", "(4,)"]),
    ("NW keys for the wrong number of queries", lambda: nw(XQ, XK[:2], YV[:2]),
     ValueError, ["x_keys", "(3, n_k)", "(2, 4)"]),
    ("NW y_values of another shape", lambda: nw(XQ, XK, YV[:, :3]),
     ValueError, ["y_values", "(3, 4)", "(3, 3)"]),
    ("NW no keys", lambda: nw(XQ, XK[:, :0], YV[:, :0]), ValueError, ["x_keys", "n_k >= 1", "(3, 0)"]),
    ("NW NaN in x_query", lambda: nw(torch.tensor([np.nan, 0.0, 0.0], dtype=F64), XK, YV),
     ValueError, ["x_query", "NaN"]),
    ("NW numpy x_query", lambda: nw(XQ.numpy(), XK, YV), TypeError, ["x_query", "torch.Tensor"]),
]


@pytest.mark.parametrize("description,call,error,fragments", CASES, ids=ids(CASES))
def test_bad_input_to_the_torch_modules_gets_a_clear_error(description, call, error, fragments):
    assert_clear_error(description, call, error, fragments)


def test_nw_w_that_became_nan_in_training_is_named():
    module = abn.NWKernelRegression().double()
    with torch.no_grad():
        module.w.fill_(float("nan"))
    with pytest.raises(ValueError, match="^w must not contain NaN"):
        module(XQ, XK, YV)


@pytest.mark.parametrize("make_mask", [lambda m: m, lambda m: torch.tensor(m), lambda m: m.tolist()])
def test_masks_and_valid_lens_may_be_numpy_arrays_lists_or_tensors(make_mask):
    mask = ab.causal_mask(3, 5)                              # numpy, as the core returns it
    out, w = dpa(tq, tk, tv, mask=make_mask(mask))
    ref_out, ref_w = ab.scaled_dot_product_attention(Q, K, V, mask=mask)
    torch.testing.assert_close(w, torch.tensor(ref_w), rtol=0, atol=1e-15)
    torch.testing.assert_close(out, torch.tensor(ref_out), rtol=0, atol=1e-15)
    lens = np.array([2, 4])
    for given_lens in (lens, lens.tolist(), torch.tensor(lens)):
        w = abn.masked_softmax(torch.zeros(2, 3, 5, dtype=F64), valid_lens=given_lens)
        torch.testing.assert_close(w, torch.tensor(ab.masked_softmax(np.zeros((2, 3, 5)),
                                                                    valid_lens=lens)))


def test_a_masked_overflow_is_allowed_and_a_fully_masked_row_still_gives_zero():
    big = torch.tensor([[1e200, 1e200]], dtype=F64)
    keys = torch.tensor([[1e200, 1e200], [0.0, 1.0]], dtype=F64)
    out, w = dpa(big, keys, torch.tensor([[1.0], [2.0]], dtype=F64),
                 mask=torch.tensor([[False, True]]))
    torch.testing.assert_close(w, torch.tensor([[0.0, 1.0]], dtype=F64))
    out, w = dpa(tq, tk, tv, mask=torch.zeros(3, 5, dtype=BOOL))
    assert (w == 0).all() and (out == 0).all()
    ref = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.zeros(3, 5, dtype=BOOL))
    torch.testing.assert_close(out, ref)


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-15), (torch.float32, 1e-6)])
def test_dot_product_module_agrees_with_torch_sdpa(dtype, tol):
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, n, 8, generator=g, dtype=dtype) for n in (4, 6, 6))
    mask = torch.rand(2, 4, 6, generator=g) < 0.7
    mask[..., 0] = True
    out, _ = abn.DotProductAttention().eval()(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(out, ref, rtol=0, atol=tol)


def test_every_module_passes_gradcheck_and_gradgradcheck():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, n, 3, generator=g, dtype=F64, requires_grad=True)
               for n in (3, 4, 4))
    lens = torch.tensor([2, 4])
    dot = abn.DotProductAttention().eval()
    torch.manual_seed(0)
    add = abn.AdditiveAttention(3, 3, 5).double().eval()
    nwm = abn.NWKernelRegression(w=1.3).double()
    xq = torch.randn(3, generator=g, dtype=F64, requires_grad=True)
    xk = torch.randn(3, 4, generator=g, dtype=F64, requires_grad=True)
    yv = torch.randn(3, 4, generator=g, dtype=F64, requires_grad=True)
    w = nwm.w.detach().clone().requires_grad_(True)
    checks = {
        "DotProductAttention": (lambda a, b, c: dot(a, b, c, valid_lens=lens), (q, k, v)),
        "AdditiveAttention": (lambda a, b, c: add(a, b, c, valid_lens=lens), (q, k, v)),
        "NWKernelRegression": (lambda ww, a, b, c: torch.func.functional_call(
            nwm, {"w": ww}, (a, b, c)), (w, xq, xk, yv)),
        "masked_softmax": (lambda s: abn.masked_softmax(s, valid_lens=lens), (q @ k.mT,)),
    }
    for name, (fn, inputs) in checks.items():
        assert torch.autograd.gradcheck(fn, inputs), name
        assert torch.autograd.gradgradcheck(fn, inputs), name


finite_floats = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.data())
def test_module_output_is_finite_or_an_error_for_finite_inputs_of_any_magnitude(n_q, n_k, data):
    q = data.draw(hnp.arrays(np.float64, (n_q, 2), elements=finite_floats), label="q")
    k = data.draw(hnp.arrays(np.float64, (n_k, 2), elements=finite_floats), label="k")
    v = data.draw(hnp.arrays(np.float64, (n_k, 1), elements=st.floats(-1e6, 1e6)), label="v")
    try:
        out, w = dpa(torch.tensor(q), torch.tensor(k), torch.tensor(v))
    except ValueError as err:
        assert "overflow" in str(err)
        return
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(n_q, dtype=F64))   # never a zero row
