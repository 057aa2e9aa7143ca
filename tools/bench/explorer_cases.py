"""One explorer of each kind, built the same way for the tests
(tests/test_explorers.py) and the bench (tools/bench/__main__.py): `make(kind)` for
`kind` in `KINDS`."""
from __future__ import annotations

import numpy as np

from attnbook import explorers as ex
from attnbook import toy_regression_data

KINDS = ["dk", "temperature", "attention", "bandwidth", "rope", "training", "heads",
         "induction"]


def make(kind):
    if kind == "dk":
        return ex.explore_dk(seed=0)
    if kind == "temperature":
        return ex.explore_temperature([2.0, 1.5, -1.0], ["apple", "banana", "chair"],
                                      values=[10.0, 5.0, 2.0])
    if kind == "attention":
        X = np.array([[1.0, 3, 2], [1, 1, 3], [1, 2, 1]])
        return ex.explore_attention(["I", "am", "good"], X, X, X, scale=1.0)
    if kind == "rope":
        return ex.explore_rope_offset()
    if kind == "training":
        rng = np.random.default_rng(0)
        weights = rng.dirichlet(np.ones(5), size=(4, 5))          # (4 snapshots, 5, 5)
        return ex.explore_training([0, 10, 20, 30], weights, np.linspace(2.0, 0.1, 31))
    if kind == "heads":
        rng = np.random.default_rng(0)
        causal = np.tril(rng.random((2, 2, 5, 5)) + 0.1)             # (layers, heads, n, n)
        weights = causal / causal.sum(-1, keepdims=True)
        return ex.explore_heads(weights, ["<bos>", "the", "cat", "runs", "."])
    if kind == "induction":
        rng = np.random.default_rng(0)
        weights = rng.dirichlet(np.ones(7), size=(4, 7))          # (4 checkpoints, 7, 7)
        return ex.explore_induction([0, 10, 20, 30], weights, 4, [0.1, 0.2, 0.6, 0.9],
                                    [2.5, 2.4, 1.0, 0.3])
    x_train, y_train, x_test, y_test = toy_regression_data(np.random.default_rng(0))
    return ex.explore_bandwidth(x_train, y_train, x_test, y_test)
