"""Every bad input to the numpy core gets a ValueError or TypeError that names
the argument and shows what was expected and what arrived, before any
arithmetic; and no input returns a silently wrong number (scores that
overflow raise instead of posing as a fully masked row).

The torch modules are in test_bad_input_nn.py, plots and explorers in
test_bad_input_plots.py, analysis, bugs, multihead and word_matrix in
test_bad_input_analysis.py."""
from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest
from badinput import assert_clear_error, ids
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import attnbook as ab
import attnbook.scoring

rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
X, W = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
NAN_Q = Q.copy()
NAN_Q[1, 2] = np.nan
INF_K = K.copy()
INF_K[0, 0] = np.inf

# (description, call, exception type, fragments the message must contain)
CASES = [
    ("d_k of Q differs from K", lambda: ab.scaled_dot_product_attention(Q[:, :3], K, V),
     ValueError, ["Q", "d_k", "(3, 3)", "(5, 4)"]),
    ("n_k of V differs from K", lambda: ab.scaled_dot_product_attention(Q, K, V[:4]),
     ValueError, ["V", "(4, 2)", "(5, 4)", "one row per key"]),
    ("mask does not broadcast",
     lambda: ab.scaled_dot_product_attention(Q, K, V, mask=np.ones((2, 5), bool)),
     ValueError, ["mask", "(3, 5)", "(2, 5)"]),
    ("mask of 0/1 floats", lambda: ab.masked_softmax(np.zeros((3, 5)), mask=np.ones((3, 5))),
     TypeError, ["mask", "boolean", "float64"]),
    ("valid_lens of the wrong length",
     lambda: ab.masked_softmax(np.zeros((2, 3, 5)), valid_lens=np.array([1, 2, 3])),
     ValueError, ["valid_lens", "(2,)", "(2, 3)", "(3,)"]),
    ("valid_lens above n_k",
     lambda: ab.masked_softmax(np.zeros((2, 3, 5)), valid_lens=np.array([1, 6])),
     ValueError, ["valid_lens", "[0, 5]", "6"]),
    ("valid_lens negative",
     lambda: ab.masked_softmax(np.zeros((2, 3, 5)), valid_lens=np.array([-1, 2])),
     ValueError, ["valid_lens", "[0, 5]", "-1"]),
    ("valid_lens as floats",
     lambda: ab.masked_softmax(np.zeros((2, 3, 5)), valid_lens=np.array([1.0, 2.0])),
     TypeError, ["valid_lens", "integers", "float64"]),
    ("K with one dimension", lambda: ab.scaled_dot_product_attention(Q, K[0], V),
     ValueError, ["K", "(..., n_k, d_k)", "(4,)"]),
    ("X with one dimension", lambda: ab.self_attention(X[0], W, W, W),
     ValueError, ["X", "(..., n, d_model)", "(4,)"]),
    ("W_q with the wrong d_model", lambda: ab.self_attention(X, W[:3], W, W),
     ValueError, ["W_q", "(4, d_out)", "(3, 2)"]),
    ("W_q and W_k of different widths", lambda: ab.self_attention(X, W, W[:, :1], W),
     ValueError, ["W_q", "W_k", "d_k", "(4, 2)", "(4, 1)"]),
    ("empty key set", lambda: ab.scaled_dot_product_attention(Q, K[:0], V[:0]),
     ValueError, ["K", "at least one key", "(0, 4)"]),
    ("NaN in Q", lambda: ab.scaled_dot_product_attention(NAN_Q, K, V),
     ValueError, ["Q", "NaN", "(1, 2)", "(3, 4)"]),
    ("inf in K", lambda: ab.scaled_dot_product_attention(Q, INF_K, V),
     ValueError, ["K", "inf", "(0, 0)"]),
    ("NaN in V", lambda: ab.scaled_dot_product_attention(Q, K, np.full((5, 2), np.nan)),
     ValueError, ["V", "NaN"]),
    ("NaN in softmax input", lambda: ab.softmax([1.0, np.nan]),
     ValueError, ["x", "NaN or +inf", "(1,)"]),
    ("+inf in softmax input", lambda: ab.softmax([1.0, np.inf]),
     ValueError, ["x", "NaN or +inf", "inf"]),
    ("+inf in masked_softmax scores", lambda: ab.masked_softmax([[np.inf, 0.0]]),
     ValueError, ["scores", "NaN or +inf"]),
    ("temperature 0", lambda: ab.softmax([1.0, 2.0], temperature=0),
     ValueError, ["temperature", "> 0", "0.0"]),
    ("temperature negative", lambda: ab.softmax([1.0, 2.0], temperature=-1),
     ValueError, ["temperature", "> 0", "-1.0"]),
    ("temperature NaN", lambda: ab.softmax([1.0, 2.0], temperature=float("nan")),
     ValueError, ["temperature", "nan"]),
    ("temperature as a string", lambda: ab.softmax([1.0, 2.0], temperature="1"),
     TypeError, ["temperature", "str"]),
    ("bandwidth 0", lambda: ab.nadaraya_watson([1.0], [0.0, 1.0], [0.0, 1.0], bandwidth=0),
     ValueError, ["bandwidth", "> 0"]),
    ("bandwidth negative", lambda: ab.gaussian_scores([1.0], [0.0], bandwidth=-2),
     ValueError, ["bandwidth", "> 0", "-2.0"]),
    ("y_values of the wrong length",
     lambda: ab.nadaraya_watson([1.0], [0.0, 1.0], [0.0, 1.0, 2.0]),
     ValueError, ["y_values", "(2,)", "(3,)"]),
    ("no keys for Nadaraya-Watson", lambda: ab.nadaraya_watson([1.0], [], []),
     ValueError, ["x_keys", "at least one key", "(0,)"]),
    ("strings as scores", lambda: ab.softmax(["a", "b"]),
     TypeError, ["x", "real numbers", "<U1"]),
    ("None as Q", lambda: ab.scaled_dot_product_attention(None, K, V),
     TypeError, ["Q", "None"]),
    ("complex K", lambda: ab.scaled_dot_product_attention(Q, K + 1j, V),
     TypeError, ["K", "complex"]),
    ("ragged nested list", lambda: ab.softmax([[1.0, 2.0], [3.0]]),
     TypeError, ["x", "real numbers"]),
    ("scalar softmax input", lambda: ab.softmax(3.0),
     ValueError, ["x", "at least one dimension", "()"]),
    ("axis out of range", lambda: ab.softmax([1.0, 2.0], axis=1),
     ValueError, ["axis=1", "1 dimension"]),
    ("batch dimensions that do not broadcast",
     lambda: ab.scaled_dot_product_attention(np.zeros((2, 3, 4)), np.zeros((3, 5, 4)),
                                             np.zeros((3, 5, 2))),
     ValueError, ["batch dimensions", "(2,)", "(3,)"]),
    ("scale 0", lambda: ab.scaled_dot_product_attention(Q, K, V, scale=0.0),
     ValueError, ["scale", "> 0"]),
    ("causal_mask of size 0", lambda: ab.causal_mask(0),
     ValueError, ["n_q", "positive integer", "0"]),
    ("causal_mask with a float", lambda: ab.causal_mask(3, 2.5),
     TypeError, ["n_k", "positive integer", "2.5"]),
    ("toy data with a seed instead of a Generator",
     lambda: ab.toy_regression_data(0),
     TypeError, ["rng", "Generator", "int"]),
    ("additive scores with a wrong W_k",
     lambda: ab.additive_scores(Q, K, np.zeros((4, 3)), np.zeros((5, 3)), np.zeros(3)),
     ValueError, ["W_k", "(4, 3)", "(5, 3)"]),
    # class 1: scores that overflow are refused, naming the inputs and the row
    ("scores overflow to inf (the issue's reproducer)",
     lambda: ab.scaled_dot_product_attention([[1e200, 1e200]], [[1e200, 1e200], [1e200, 0.0]],
                                             [[1.0], [2.0]]),
     ValueError, ["overflow", "Q", "K", "query row 0", "key 0", "scale"]),
    ("scores overflow in a sum of huge products of both signs",
     lambda: ab.scaled_dot_product_attention([[1e300, 1e300]], [[1.0, 1.0], [1e300, -1e300]],
                                             [[1.0], [2.0]]),
     ValueError, ["overflow", "query row 0", "key 1"]),
    ("scores overflow to -inf",
     lambda: ab.scaled_dot_product_attention([[-1e300]], [[1e300], [1.0]], [[1.0], [2.0]]),
     ValueError, ["overflow", "key 0", "-inf"]),
    ("a scale that overflows the scores",
     lambda: ab.scaled_dot_product_attention(Q, K, V, scale=1e308),
     ValueError, ["overflow", "scale", "query row"]),
    ("overflow in a later batch row",
     lambda: ab.scaled_dot_product_attention(np.stack([Q, Q * 1e160]), K * 1e160, V),
     ValueError, ["overflow", "(1, 0, "]),
    ("self-attention projections that overflow the scores",
     lambda: ab.self_attention(X * 1e150, W * 1e10, W, W),
     ValueError, ["overflow", "X @ W_q", "X @ W_k"]),
    ("self-attention projections that overflow to inf",
     lambda: ab.self_attention(X * 1e300, W * 1e300, W, W),
     ValueError, ["X @ W_q", "inf"]),
    # class 2: the kernel in the log domain; raw scores that do not fit float64 are refused
    ("Gaussian scores that overflow",
     lambda: ab.gaussian_scores([0.5], [0.0, 1.0], bandwidth=1e-200),
     ValueError, ["bandwidth", "1e-200", "x_query[0]", "overflow", "nadaraya_watson"]),
    ("bandwidth as an array", lambda: ab.nadaraya_watson([1.0], [0.0], [0.0], bandwidth=[1.0]),
     TypeError, ["bandwidth", "list"]),
    ("x_query with two dimensions",
     lambda: ab.nadaraya_watson(np.zeros((2, 2)), [0.0, 1.0], [0.0, 1.0]),
     ValueError, ["x_query", "(n_q,)", "(2, 2)"]),
    ("per-query keys with the wrong number of rows",
     lambda: ab.nadaraya_watson([1.0, 2.0], np.zeros((3, 2)), np.zeros((3, 2))),
     ValueError, ["x_keys", "(2, n_k)", "(3, 2)"]),
    ("toy_function of NaN", lambda: ab.toy_function([1.0, np.nan]),
     ValueError, ["x", "NaN", "(1,)"]),
    ("toy data with a string noise",
     lambda: ab.toy_regression_data(np.random.default_rng(0), noise="a"),
     TypeError, ["noise", "str"]),
    # class 5: additive scores
    ("additive Q @ W_q that overflows",
     lambda: ab.additive_scores(Q * 1e300, K, np.full((4, 3), 1e10), np.ones((4, 3)), np.ones(3)),
     ValueError, ["Q @ W_q", "overflow", "Q or W_q"]),
    ("additive scores that overflow through w_v",
     lambda: ab.additive_scores(Q, K, np.ones((4, 3)), np.ones((4, 3)), np.full(3, 1e308)),
     ValueError, ["w_v", "overflow"]),
    ("additive batches that do not broadcast",
     lambda: ab.additive_scores(np.zeros((2, 3, 4)), np.zeros((3, 5, 4)), np.zeros((4, 3)),
                                np.zeros((4, 3)), np.zeros(3)),
     ValueError, ["batch dimensions", "(2,)", "(3,)"]),
]


@pytest.mark.parametrize("description,call,error,fragments", CASES, ids=ids(CASES))
def test_bad_input_gets_a_clear_error(description, call, error, fragments):
    assert_clear_error(description, call, error, fragments)


def test_minus_inf_in_scores_is_allowed_and_means_weight_zero():
    w = ab.masked_softmax([[-np.inf, 0.0], [-np.inf, -np.inf]])
    np.testing.assert_array_equal(w, [[0.0, 1.0], [0.0, 0.0]])


def test_errors_are_raised_before_any_arithmetic():
    """A NaN check after the product would warn; an early check raises cleanly."""
    with np.errstate(all="raise"):
        with pytest.raises(ValueError, match="Q"):
            ab.scaled_dot_product_attention(np.full((2, 4), np.nan), K, V)


def test_import_attnbook_imports_neither_torch_nor_matplotlib():
    """Keeps `import attnbook` light; its time is measured by `make bench`."""
    code = "import sys, attnbook; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"], f"torch imported: {out[0]}, matplotlib imported: {out[1]}"


def test_messages_name_the_argument_first_for_readability():
    with pytest.raises(ValueError) as info:
        ab.scaled_dot_product_attention(Q, K, V[:4])
    assert re.match(r"^V ", str(info.value))


# -- no silently wrong numbers: the classes of issue 14 and their neighbours -------------------
def test_an_overflow_is_not_reported_as_a_fully_masked_row_but_a_mask_still_is():
    Q1, K1, V1 = [[1e200, 1e200]], [[1e200, 1e200], [1e200, 0.0]], [[1.0], [2.0]]
    with pytest.raises(ValueError, match="overflow"):
        ab.scaled_dot_product_attention(Q1, K1, V1)
    # the same overflowing scores, masked away: the mask's -inf is allowed
    out, w = ab.scaled_dot_product_attention(Q1, K1, V1, mask=[[False, False]])
    np.testing.assert_array_equal(w, [[0.0, 0.0]])
    np.testing.assert_array_equal(out, [[0.0]])
    # only the overflowing key masked: the other key takes all the weight
    out, w = ab.scaled_dot_product_attention([[1e200, 1.0]], [[1e200, 1.0], [1.0, 1.0]], V1,
                                             mask=[[False, True]])
    np.testing.assert_array_equal(w, [[0.0, 1.0]])


def test_overflow_check_warns_nothing():
    with np.errstate(all="raise"):
        with pytest.raises(ValueError, match="overflow"):
            ab.scaled_dot_product_attention([[1e200]], [[1e200]], [[1.0]])


finite_floats = st.floats(allow_nan=False, allow_infinity=False)   # any magnitude, subnormals too


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 3), st.data())
def test_finite_inputs_of_any_magnitude_give_a_finite_output_or_an_error(n_q, n_k, d_k, data):
    """Never a zero row without a mask, never NaN: either a real answer or a ValueError."""
    Q = data.draw(hnp.arrays(np.float64, (n_q, d_k), elements=finite_floats), label="Q")
    K = data.draw(hnp.arrays(np.float64, (n_k, d_k), elements=finite_floats), label="K")
    V = data.draw(hnp.arrays(np.float64, (n_k, 2), elements=finite_floats), label="V")
    try:
        out, w = ab.scaled_dot_product_attention(Q, K, V)
    except ValueError as err:
        assert "overflow" in str(err)
        return
    assert np.isfinite(out).all() and np.isfinite(w).all()
    assert ((w >= 0) & (w <= 1)).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)   # no zero row
    lo, hi = V.min(axis=0), V.max(axis=0)                           # a weighted average of V
    # rounding: relative for normal numbers; each of the n_k products and sums of
    # subnormal values may be off by a subnormal step
    span = np.maximum(np.abs(lo), np.abs(hi)) * 1e-12 + 4 * n_k * np.finfo(float).smallest_subnormal
    with np.errstate(over="ignore"):                                # lo - span may be -inf
        assert ((out >= lo - span) & (out <= hi + span)).all()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=4),
       st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=5),
       st.floats(5e-324, 1e308), st.data())
def test_nadaraya_watson_is_finite_for_any_bandwidth_and_stays_within_the_targets(
        xq, xk, h, data):
    y = data.draw(st.lists(st.floats(-1e300, 1e300), min_size=len(xk), max_size=len(xk)))
    y_hat, w = ab.nadaraya_watson(xq, xk, y, bandwidth=h)
    assert np.isfinite(y_hat).all() and np.isfinite(w).all()
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-12)    # never a zero row
    assert ((y_hat >= min(y) - 1e-9 * abs(min(y))) & (y_hat <= max(y) + 1e-9 * abs(max(y)))).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=4),
       st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=6, unique=True),
       st.sampled_from([1e-200, 1e-300, 5e-324]))
def test_a_tiny_bandwidth_gives_the_nearest_neighbour_like_a_loop(xq, xk, h):
    y = np.arange(len(xk), dtype=float)
    y_hat, _ = ab.nadaraya_watson(xq, xk, y, bandwidth=h)
    for x, got in zip(xq, y_hat, strict=True):
        d = sorted({abs(x - k) for k in xk})
        # the limit holds once the gap to the second nearest key dwarfs the bandwidth
        assume(len(d) == 1 or (d[1] - d[0]) * (d[1] + d[0]) > 1e-290)
        nearest = [y[j] for j in range(len(xk)) if abs(x - xk[j]) == d[0]]
        assert got == pytest.approx(sum(nearest) / len(nearest))


def test_the_issue_kernel_reproducer_gives_the_nearest_neighbour():
    y_hat, w = ab.nadaraya_watson([0.9], [0.0, 1.0, 2.0], [1.0, 2.0, 3.0], bandwidth=1e-200)
    np.testing.assert_array_equal(y_hat, [2.0])
    np.testing.assert_array_equal(w, [[0.0, 1.0, 0.0]])


def test_nadaraya_watson_with_keys_beyond_float64_differences():
    """x - x_i would overflow to inf for both keys; halving first keeps them apart."""
    big = np.finfo(float).max
    y_hat, w = ab.nadaraya_watson([big], [-big, -0.9 * big], [1.0, 2.0])
    np.testing.assert_array_equal(w, [[0.0, 1.0]])


def test_gaussian_scores_are_finite_for_a_query_on_a_key_with_a_tiny_bandwidth():
    s = ab.gaussian_scores([0.0], [0.0, 1e-150], bandwidth=1e-100)   # was 0/0 = NaN
    assert s[0, 0] == 0.0 and np.isfinite(s).all()


def test_additive_scores_builds_its_features_in_bounded_blocks(monkeypatch):
    """Same numbers as the one-shot formula, with features never above the block size."""
    rng = np.random.default_rng(12)
    Qa, Ka = rng.normal(size=(2, 9, 3)), rng.normal(size=(2, 7, 4))
    W_q, W_k, w_v = rng.normal(size=(3, 5)), rng.normal(size=(4, 5)), rng.normal(size=5)
    one_shot = np.tanh((Qa @ W_q)[..., :, None, :] + (Ka @ W_k)[..., None, :, :]) @ w_v
    sizes = []
    real_tanh = np.tanh

    def spy(x, *args, **kwargs):
        sizes.append(np.size(x))
        return real_tanh(x, *args, **kwargs)

    monkeypatch.setattr(attnbook.scoring, "CHUNK_BYTES", 8 * 2 * 7 * 5 * 2)   # 2 queries a block
    monkeypatch.setattr(np, "tanh", spy)
    got = ab.additive_scores(Qa, Ka, W_q, W_k, w_v)
    np.testing.assert_allclose(got, one_shot, rtol=1e-13)
    assert max(sizes) == 2 * 2 * 7 * 5 and len(sizes) == math.ceil(9 / 2)
