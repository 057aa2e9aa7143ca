"""The measurements of chapter 5 (attnbook.analysis), the bug gallery of
chapter 9 (attnbook.bugs), multi-head attention of chapter 10
(attnbook.multihead) and word_matrix refuse bad input as the numpy core does:
an error that names the argument and shows what was expected and what
arrived, before any arithmetic; and no input returns a silently wrong number
(a weight row that is not a distribution, d_k = 0, an overflow posing as a
masked row)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import torch
from badinput import assert_clear_error, ids
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import attnbook as ab
from attnbook import analysis as an
from attnbook import bugs
from attnbook import multihead as mh
from attnbook.examples import word_matrix

rng = np.random.default_rng(0)
Q, K = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
X = rng.normal(size=(3, 4))
I4 = np.eye(4)
MASK = np.ones((3, 5), dtype=bool)
MAX = np.finfo(float).max


def gen():
    return np.random.default_rng(0)


def mha(X=X, W_q=I4, W_k=I4, W_v=I4, W_o=I4, n_heads=2, mask=None):
    return mh.multi_head_attention(X, W_q, W_k, W_v, W_o, n_heads, mask=mask)


# (description, call, exception type, fragments the message must contain)
CASES = [
    # entropy and softmax_jacobian: their input must be a row of weights
    ("entropy of weights that are not a distribution (the issue's reproducer)",
     lambda: an.entropy([-0.5, 1.5]), ValueError, ["weights", ">= 0", "-0.5", "(0,)", "(2,)"]),
    ("entropy of a row summing to 1.1", lambda: an.entropy([0.5, 0.6]),
     ValueError, ["weights", "sum to 1", "(2,)", "1.1"]),
    ("entropy of a later row that does not sum to 1",
     lambda: an.entropy([[0.5, 0.5], [0.2, 0.2]]),
     ValueError, ["weights", "row (1,)", "(2, 2)", "0.4"]),
    ("entropy of scores instead of weights", lambda: an.entropy([3.0, 1.0, -2.0]),
     ValueError, ["weights", ">= 0", "-2.0"]),
    ("entropy of NaN", lambda: an.entropy([np.nan, 1.0]),
     ValueError, ["weights", "NaN", "(0,)", "(2,)"]),
    ("entropy of a scalar", lambda: an.entropy(0.5),
     ValueError, ["weights", "(..., n)", "shape ()"]),
    ("entropy of rows with no entries", lambda: an.entropy(np.zeros((2, 0))),
     ValueError, ["weights", "at least one entry", "(2, 0)"]),
    ("entropy of strings", lambda: an.entropy("a"), TypeError, ["weights", "real numbers", "<U1"]),
    ("softmax_jacobian at NaN (the issue's reproducer)",
     lambda: an.softmax_jacobian([np.nan, 1.0]), ValueError, ["p", "NaN", "(0,)", "(2,)"]),
    ("softmax_jacobian at a scalar (the issue's reproducer)", lambda: an.softmax_jacobian(1.0),
     ValueError, ["p", "(..., n)", "shape ()"]),
    ("softmax_jacobian at inf", lambda: an.softmax_jacobian([np.inf, 0.0]),
     ValueError, ["p", "inf"]),
    ("softmax_jacobian at scores instead of weights", lambda: an.softmax_jacobian([4.0, -1.0]),
     ValueError, ["p", ">= 0", "-1.0"]),
    ("softmax_jacobian at a row summing to 2", lambda: an.softmax_jacobian([1.0, 1.0]),
     ValueError, ["p", "sum to 1", "2.0"]),
    ("softmax_jacobian of None", lambda: an.softmax_jacobian(None), TypeError, ["p", "None"]),
    # dk_statistics
    ("dk_statistics with d_k = 0 (the issue's reproducer)",
     lambda: an.dk_statistics([0], gen()), ValueError, ["d_ks[0]", "positive integer", "0"]),
    ("dk_statistics with a negative d_k", lambda: an.dk_statistics([4, -2], gen()),
     ValueError, ["d_ks[1]", "positive integer", "-2"]),
    ("dk_statistics with a float d_k", lambda: an.dk_statistics([1.5], gen()),
     TypeError, ["d_ks[0]", "positive integer", "float", "1.5"]),
    ("dk_statistics with float d_ks in an array", lambda: an.dk_statistics(np.array([1.0]), gen()),
     TypeError, ["d_ks[0]", "positive integer", "float"]),
    ("dk_statistics with one d_k, not a list", lambda: an.dk_statistics(16, gen()),
     TypeError, ["d_ks", "sequence", "int", "16"]),
    ("dk_statistics with d_ks as a string", lambda: an.dk_statistics("16", gen()),
     TypeError, ["d_ks", "sequence", "str"]),
    ("dk_statistics with no d_k", lambda: an.dk_statistics([], gen()),
     ValueError, ["d_ks", "at least one"]),
    ("dk_statistics with a seed instead of a Generator (the issue's reproducer)",
     lambda: an.dk_statistics([1], 0), TypeError, ["rng", "Generator", "int"]),
    ("dk_statistics with the legacy RandomState",
     lambda: an.dk_statistics([1], np.random.RandomState(0)),
     TypeError, ["rng", "Generator", "RandomState"]),
    ("dk_statistics with n_q = 0", lambda: an.dk_statistics([1], gen(), n_q=0),
     ValueError, ["n_q", "positive integer", "0"]),
    ("dk_statistics with a float n_k", lambda: an.dk_statistics([1], gen(), n_k=2.5),
     TypeError, ["n_k", "positive integer", "2.5"]),
    ("dk_statistics with a NaN mean", lambda: an.dk_statistics([1], gen(), mean=np.nan),
     ValueError, ["mean", "finite", "nan"]),
    ("dk_statistics with a string mean", lambda: an.dk_statistics([1], gen(), mean="0"),
     TypeError, ["mean", "real number", "str"]),
    ("dk_statistics with a mean whose scores overflow",
     lambda: an.dk_statistics([4], gen(), mean=1e200),
     ValueError, ["overflow", "mean", "1e+200", "d_k = 4"]),
    ("dk_statistics with a mean whose scores' spread overflows",
     lambda: an.dk_statistics([1], gen(), mean=1e153),
     ValueError, ["overflow", "spread", "mean", "1e+153"]),
    # score_variance
    ("score_variance with d_k = 0 (the issue's reproducer)",
     lambda: an.score_variance([0], gen()), ValueError, ["d_ks[0]", "positive integer", "0"]),
    ("score_variance with chunk = 0 (the issue's reproducer)",
     lambda: an.score_variance([1], gen(), chunk=0), ValueError, ["chunk", "positive integer", "0"]),
    ("score_variance with a float chunk", lambda: an.score_variance([1], gen(), chunk=10.0),
     TypeError, ["chunk", "positive integer", "float"]),
    ("score_variance with one pair", lambda: an.score_variance([1], gen(), n_pairs=1),
     ValueError, ["n_pairs", "at least 2", "1"]),
    ("score_variance with a negative n_pairs", lambda: an.score_variance([1], gen(), n_pairs=-5),
     ValueError, ["n_pairs", "positive integer", "-5"]),
    ("score_variance with a seed", lambda: an.score_variance([1], 0),
     TypeError, ["rng", "Generator", "int"]),
    ("score_variance with a boolean d_k", lambda: an.score_variance([True], gen()),
     TypeError, ["d_ks[0]", "positive integer", "bool"]),
    # the bug gallery checks like scaled_dot_product_attention
    ("a bug given lists of mismatched width (the issue's reproducer)",
     lambda: bugs.softmax_over_queries([[1.0]], [[1.0, 2.0]]),
     ValueError, ["Q", "K", "d_k", "(1, 1)", "(1, 2)"]),
    ("mask_after_softmax with a mask of the wrong shape (the issue's reproducer)",
     lambda: bugs.mask_after_softmax(Q, K, np.ones((2, 2), bool)),
     ValueError, ["mask", "(3, 5)", "(2, 2)"]),
    ("a mask that would enlarge the scores",
     lambda: bugs.mask_after_softmax(Q, K, np.ones((2, 3, 5), bool)),
     ValueError, ["mask", "(3, 5)", "(2, 3, 5)"]),
    ("float16_additive_mask with a 0/1 integer mask",
     lambda: bugs.float16_additive_mask(Q, K, MASK.astype(int)),
     TypeError, ["mask", "boolean", "int64"]),
    ("mask_after_softmax without a mask", lambda: bugs.mask_after_softmax(Q, K, None),
     TypeError, ["mask", "required", "(n_q, n_k)"]),
    ("a bug given a batch of queries", lambda: bugs.multiply_by_sqrt_d(Q[None], K),
     ValueError, ["Q", "(n_q, d_k)", "(1, 3, 4)"]),
    ("a bug given one key vector", lambda: bugs.queries_equal_keys(Q, K[0]),
     ValueError, ["K", "(n_k, d_k)", "(4,)"]),
    ("a bug given NaN queries, which queries_equal_keys then ignores",
     lambda: bugs.queries_equal_keys(np.full((3, 4), np.nan), K),
     ValueError, ["Q", "NaN", "(0, 0)", "(3, 4)"]),
    ("a bug given inf keys", lambda: bugs.softmax_over_queries(Q, np.full((5, 4), np.inf)),
     ValueError, ["K", "inf"]),
    ("a bug given no keys", lambda: bugs.softmax_over_queries(Q, K[:0]),
     ValueError, ["K", "at least one key", "(0, 4)"]),
    ("a bug given d_k = 0", lambda: bugs.multiply_by_sqrt_d(Q[:, :0], K[:, :0]),
     ValueError, ["d_k", "at least 1", "K", "(5, 0)"]),
    ("a bug given complex keys", lambda: bugs.queries_equal_keys(Q, K + 1j),
     TypeError, ["K", "complex"]),
    ("a bug whose scores overflow",
     lambda: bugs.multiply_by_sqrt_d(Q * 1e160, K * 1e160),
     ValueError, ["overflow", "query row 0", "Q or K"]),
    ("queries_equal_keys whose K Kᵀ overflows",
     lambda: bugs.queries_equal_keys(Q, K * 1e160), ValueError, ["overflow", "rescale K"]),
    # multi-head attention
    ("split_heads with a width n_heads does not divide (the issue's reproducer)",
     lambda: mh.split_heads(np.zeros((3, 4)), 3),
     ValueError, ["n_heads = 3", "d_model = 4", "(3, 4)", "divide"]),
    ("split_heads of one row", lambda: mh.split_heads(np.zeros(4), 2),
     ValueError, ["A", "(n, d_model)", "(4,)"]),
    ("split_heads with a float n_heads", lambda: mh.split_heads(np.zeros((3, 4)), 2.0),
     TypeError, ["n_heads", "positive integer", "float"]),
    ("split_heads with n_heads = 0", lambda: mh.split_heads(np.zeros((3, 4)), 0),
     ValueError, ["n_heads", "positive integer", "0"]),
    ("split_heads of a list of strings", lambda: mh.split_heads([["a", "b"]], 1),
     TypeError, ["A", "real numbers", "<U1"]),
    ("split_heads of NaN", lambda: mh.split_heads(np.full((3, 4), np.nan), 2),
     ValueError, ["A", "NaN", "(3, 4)"]),
    ("merge_heads of a 2-D array (the issue's reproducer)", lambda: mh.merge_heads(np.zeros((3, 4))),
     ValueError, ["H", "(h, n, d_head)", "(3, 4)"]),
    ("merge_heads of a 4-D array", lambda: mh.merge_heads(np.zeros((1, 2, 3, 4))),
     ValueError, ["H", "(h, n, d_head)", "(1, 2, 3, 4)"]),
    ("merge_heads of inf", lambda: mh.merge_heads(np.full((2, 3, 2), np.inf)),
     ValueError, ["H", "inf"]),
    ("multi-head projections that overflow (the issue's reproducer)",
     lambda: mha(X * 1e200, W_q=I4 * 1e200),
     ValueError, ["X @ W_q", "overflow", "(3, 4)", "rescale X or W_q"]),
    ("multi-head value projection that overflows", lambda: mha(W_v=I4 * 1e200, X=X * 1e200),
     ValueError, ["X @ W_v", "overflow"]),
    ("multi-head scores that overflow", lambda: mha(X * 1e160, W_q=I4 * 1e10),
     ValueError, ["overflow", "X @ W_q", "X @ W_k", "d_head = 2", "query row"]),
    ("multi-head output projection that overflows",
     lambda: mha(W_v=I4 * 1e200, W_o=I4 * 1e200),
     ValueError, ["concat @ W_o", "overflow", "rescale W_o"]),
    ("multi-head heads whose weighted average of X @ W_v overflows",
     lambda: mh.multi_head_attention([[1.0, 0.35], [1.0, 0.82], [1.0, 0.33], [1.0, -1.3]],
                                     [[0.0, 0.0], [0.91, 0.0]], [[0.0, 0.0], [1.0, 0.0]],
                                     [[MAX, MAX], [0.0, 0.0]], np.eye(2), 1),
     ValueError, ["overflow", "X @ W_v", "rescale X or W_v"]),
    ("multi-head with n_heads = 0", lambda: mha(n_heads=0),
     ValueError, ["n_heads", "positive integer", "0"]),
    ("multi-head with n_heads = 3 for d_model = 4", lambda: mha(n_heads=3),
     ValueError, ["n_heads = 3", "d_model = 4", "(3, 4)", "divisible"]),
    ("multi-head with a float n_heads", lambda: mha(n_heads=2.0),
     TypeError, ["n_heads", "positive integer", "2.0"]),
    ("multi-head with a W_o of the wrong shape", lambda: mha(W_o=np.eye(3)),
     ValueError, ["W_o", "(4, 4)", "(3, 3)"]),
    ("multi-head with a 1-D W_k", lambda: mha(W_k=np.ones(4)),
     ValueError, ["W_k", "(4, 4)", "(4,)"]),
    ("multi-head with a mask of the wrong shape", lambda: mha(mask=np.ones((2, 2), bool)),
     ValueError, ["mask", "(2, 3, 3)", "(2, 2)"]),
    ("multi-head with a mask that would enlarge the batch",
     lambda: mha(mask=np.ones((2, 2, 3, 3), bool)),
     ValueError, ["mask", "(2, 3, 3)", "(2, 2, 3, 3)"]),
    ("multi-head with a 0/1 float mask", lambda: mha(mask=np.ones((3, 3))),
     TypeError, ["mask", "boolean", "float64"]),
    ("multi-head with no tokens", lambda: mha(X=np.zeros((0, 4))),
     ValueError, ["X", "at least one token", "(0, 4)"]),
    ("multi-head with a 3-D X", lambda: mha(X=X[None]),
     ValueError, ["X", "(n, d_model)", "(1, 3, 4)"]),
    ("multi-head with NaN in W_v", lambda: mha(W_v=np.full((4, 4), np.nan)),
     ValueError, ["W_v", "NaN", "(4, 4)"]),
    # word_matrix
    ("word_matrix of one word as a string", lambda: word_matrix("apple"),
     TypeError, ["words", "list", "'apple'", "['apple']"]),
    ("word_matrix of no words", lambda: word_matrix([]), ValueError, ["words", "at least one"]),
    ("word_matrix of an unknown word", lambda: word_matrix(["apple", "pear"]),
     KeyError, ["pear", "known words"]),
    ("word_matrix with vectors of two widths",
     lambda: word_matrix(["a", "b"], table={"a": [1.0, 2.0], "b": [1.0, 2.0, 3.0]}),
     ValueError, ["'a'", "'b'", "(2,)", "(3,)", "width"]),
    ("word_matrix with a NaN vector", lambda: word_matrix(["a"], table={"a": [np.nan, 1.0]}),
     ValueError, ["'a'", "NaN", "(2,)"]),
    ("word_matrix with a table that is not a dict", lambda: word_matrix(["a"], table=[1.0]),
     TypeError, ["table", "dict", "list"]),
]


@pytest.mark.parametrize("description,call,error,fragments", CASES, ids=ids(CASES))
def test_bad_input_to_analysis_bugs_and_multihead_gets_a_clear_error(
        description, call, error, fragments):
    assert_clear_error(description, call, error, fragments)


@pytest.mark.parametrize("call", [
    lambda: an.entropy([-0.5, 1.5]),
    lambda: an.softmax_jacobian([np.nan, 1.0]),
    lambda: an.dk_statistics([0], gen()),
    lambda: an.score_variance([1], gen(), chunk=0),
    lambda: bugs.softmax_over_queries(np.full((3, 4), np.nan), K),
    lambda: mh.split_heads(np.full((3, 4), np.inf), 2),
    lambda: mha(W_o=np.full((4, 4), np.nan)),
], ids=["entropy", "jacobian", "dk_statistics", "score_variance", "bug", "split_heads", "mha"])
def test_errors_are_raised_before_any_arithmetic(call):
    """A check after the arithmetic would warn first; an early check raises cleanly."""
    with np.errstate(all="raise"), pytest.raises((ValueError, TypeError)):
        call()


# -- what is still accepted, and gives the right number ----------------------------------------
@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 40)),
                  elements=st.floats(-6e4, 6e4)),
       st.sampled_from([torch.float64, torch.float32, torch.float16]))
def test_any_softmax_output_is_accepted_and_its_entropy_and_jacobian_match_references(x, dtype):
    """torch's softmax in any float dtype passes the check (its rows miss 1 by
    rounding); the entropy agrees with scipy's -p log p and the Jacobian with
    torch autograd (independent references)."""
    p = torch.softmax(torch.tensor(x).to(dtype), dim=-1)
    ent = an.entropy(p)
    np.testing.assert_allclose(ent, scipy.special.entr(p.double().numpy()).sum(axis=-1),
                               rtol=1e-12, atol=1e-300)
    p64 = torch.softmax(torch.tensor(x), dim=-1)
    jac = an.softmax_jacobian(p64)
    for row, xr in zip(jac, torch.tensor(x), strict=True):
        auto = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, 0), xr).numpy()
        np.testing.assert_allclose(row, auto, atol=1e-15)


def test_a_fully_masked_row_has_entropy_0_and_a_zero_jacobian():
    """The library's convention for a query with no key: all-zero weights, which do
    not move when the scores move (torch autograd agrees)."""
    w = ab.masked_softmax(np.array([[1.0, 2.0, 0.5], [1.0, 2.0, 0.5]]),
                          mask=np.array([[True] * 3, [False] * 3]))
    assert an.entropy(w)[1] == 0.0 and np.signbit(an.entropy(w)[1]) == 0
    np.testing.assert_array_equal(an.softmax_jacobian(w)[1], np.zeros((3, 3)))
    scores = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    masked = torch.tensor([False] * 3)
    auto = torch.autograd.functional.jacobian(
        lambda s: torch.softmax(s.masked_fill(~masked, -torch.inf), 0).nan_to_num(0.0), scores)
    np.testing.assert_array_equal(auto.numpy(), np.zeros((3, 3)))


def test_dk_statistics_and_score_variance_take_numpy_ints_as_the_chapter_does():
    """Chapter 5 passes 2 ** np.arange(11): the same numbers as a list of ints."""
    a = an.dk_statistics(2 ** np.arange(3), gen(), n_q=5, n_k=4)
    b = an.dk_statistics([1, 2, 4], gen(), n_q=5, n_k=4)
    assert a.keys() == b.keys()
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(an.score_variance(2 ** np.arange(3), gen(), n_pairs=50),
                                  an.score_variance([1, 2, 4], gen(), n_pairs=50))


def test_score_variance_does_not_depend_on_the_chunk_size_beyond_rounding():
    """chunk only splits the draws: a plain loop over pairs gives the same variance."""
    n_pairs, d_k = 37, 3
    loop_rng, dots = gen(), []
    for m in (10, 10, 10, 7):                     # chunk = 10: four blocks
        q, k = loop_rng.normal(size=(m, d_k)), loop_rng.normal(size=(m, d_k))
        dots += [sum(q[i, j] * k[i, j] for j in range(d_k)) for i in range(m)]
    var_raw, var_scaled = an.score_variance([d_k], gen(), n_pairs=n_pairs, chunk=10)
    assert var_raw[0] == pytest.approx(np.var(dots), rel=1e-12)
    assert var_scaled[0] == pytest.approx(np.var(dots) / d_k, rel=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.integers(1, 4), st.data())
def test_multi_head_is_finite_or_an_error_naming_a_product_for_inputs_of_any_magnitude(
        n_heads, n, data):
    """Never NaN, never a zero row without a mask: a real answer or a ValueError
    that names what to rescale."""
    floats = st.floats(-1e200, 1e200)
    Xh = data.draw(hnp.arrays(np.float64, (n, 4), elements=floats), label="X")
    Ws = [data.draw(hnp.arrays(np.float64, (4, 4), elements=floats), label=name)
          for name in ("W_q", "W_k", "W_v", "W_o")]
    try:
        r = mh.multi_head_attention(Xh, *Ws, n_heads)
    except ValueError as err:
        assert "overflow" in str(err) and "rescale" in str(err), str(err)
        return
    assert all(np.isfinite(a).all() for a in r)
    np.testing.assert_allclose(r.weights.sum(axis=-1), 1.0, rtol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_each_bug_is_its_symptom_or_an_error_for_inputs_of_any_magnitude(n_q, n_k, data):
    """The bugs keep their documented symptoms and never turn an overflow into one."""
    floats = st.floats(-1e200, 1e200)
    Qb = data.draw(hnp.arrays(np.float64, (n_q, 2), elements=floats), label="Q")
    Kb = data.draw(hnp.arrays(np.float64, (n_k, 2), elements=floats), label="K")
    mask = np.ones((n_q, n_k), dtype=bool)
    for name, (bug, needs_mask) in bugs.BUGS.items():
        try:
            w = bug(Qb, Kb, mask) if needs_mask else bug(Qb, Kb)
        except ValueError as err:
            assert "overflow" in str(err), (name, str(err))
            continue
        if bug is bugs.float16_additive_mask:
            assert np.isnan(w).all()                 # its symptom, even unmasked
        elif bug is bugs.softmax_over_queries:
            np.testing.assert_allclose(w.sum(axis=0), 1.0, rtol=1e-12)
        else:
            np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)
