"""Every bad input gets a ValueError or TypeError that names the argument and
shows what was expected and what arrived, before any arithmetic."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import attnbook as ab

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
]


@pytest.mark.parametrize("description,call,error,fragments", CASES,
                         ids=[c[0].replace(" ", "_") for c in CASES])
def test_bad_input_gets_a_clear_error(description, call, error, fragments):
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    missing = [f for f in fragments if f not in message]
    assert not missing, f"{description}: message {message!r} lacks {missing}"


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
