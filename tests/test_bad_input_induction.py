"""attnbook.induction and explore_induction (chapter 16) refuse bad input
before any arithmetic, with a message that names the argument and shows what
was expected and what arrived."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import assert_clear_error

from attnbook import induction
from attnbook.explorers import explore_induction

RNG = np.random.default_rng
MODEL = induction.AttentionOnly(12, 16, 4, max_len=16)
SEQS = induction.repeated_tokens(RNG(0), 2, 4, 12)                    # (2, 8)
W = np.full((2, 2, 7, 7), 1 / 7)                                      # (batch, h, n, n)
STEPS, FRAMES = [0, 10], np.full((2, 7, 7), 1 / 7)


def run():
    m = induction.AttentionOnly(12, 16, 4, max_len=16)
    return m, induction.train_induction(m, steps=2, batch_size=2, halves=(2, 3))


BAD = [
    (lambda: induction.repeated_tokens(RNG(0), 2, 13, 12), ValueError,
     ["half", "vocab", "13", "12"]),
    (lambda: induction.repeated_tokens(RNG(0), 0, 4, 12), ValueError, ["n_sequences", "0"]),
    (lambda: induction.repeated_tokens(0, 2, 4, 12), TypeError, ["rng"]),
    (lambda: induction.AttentionOnly(12, 12, 4), ValueError,
     ["d_model / n_heads", "even", "d_model = 12", "n_heads = 4"]),
    (lambda: induction.AttentionOnly(12, 16, 3), ValueError, ["d_model = 16", "n_heads = 3"]),
    (lambda: induction.AttentionOnly(0, 16, 4), ValueError, ["vocab", "0"]),
    (lambda: induction.AttentionOnly(12, 16, 4, seed=-1), ValueError, ["seed", "-1"]),
    (lambda: MODEL(torch.zeros(1, 4)), TypeError, ["tokens", "float32"]),
    (lambda: MODEL(torch.zeros(4, dtype=torch.long)), ValueError,
     ["tokens", "(batch, n)", "(4,)"]),
    (lambda: MODEL(torch.zeros(1, 17, dtype=torch.long)), ValueError,
     ["(1, 17)", "max_len = 16"]),
    (lambda: MODEL(torch.full((1, 3), 12)), ValueError, ["tokens", "[0, 12)", "12"]),
    (lambda: MODEL(torch.zeros(1, 3, dtype=torch.long), ablate=[(2, 0)]), ValueError,
     ["ablate", "layer in [0, 1]", "(2, 0)"]),
    (lambda: MODEL(torch.zeros(1, 3, dtype=torch.long), ablate=[(0, 4)]), ValueError,
     ["ablate", "head in [0, 3]", "(0, 4)"]),
    (lambda: MODEL(torch.zeros(1, 3, dtype=torch.long), ablate=5), TypeError,
     ["ablate", "(layer, head) pairs", "5"]),
    (lambda: induction.train_induction(torch.nn.Linear(2, 2)), TypeError,
     ["model", "AttentionOnly", "Linear"]),
    (lambda: induction.train_induction(MODEL, steps=0), ValueError, ["steps", "0"]),
    (lambda: induction.train_induction(MODEL, lr=0), ValueError, ["lr", "0"]),
    (lambda: induction.train_induction(MODEL, halves=(5, 4)), ValueError,
     ["halves", "(5, 4)"]),
    (lambda: induction.train_induction(MODEL, halves=(2, 9)), ValueError,
     ["halves", "max_len = 16", "(2, 9)"]),
    (lambda: induction.train_induction(MODEL, halves=4), TypeError, ["halves", "pair", "4"]),
    (lambda: induction.next_token_losses(MODEL, SEQS[:, :1]), ValueError,
     ["tokens", "n >= 2", "(2, 1)"]),
    (lambda: induction.next_token_losses("model", SEQS), TypeError, ["model", "str"]),
    (lambda: induction.previous_token_scores(W[0]), ValueError,
     ["weights", "(batch, n_heads, n, n)", "(2, 7, 7)"]),
    (lambda: induction.previous_token_scores(W[..., :6]), ValueError,
     ["weights", "(2, 2, 7, 6)"]),
    (lambda: induction.induction_scores(W, 3), ValueError,
     ["half < n <= 2 half = 6", "n = 7", "(2, 2, 7, 7)"]),
    (lambda: induction.induction_scores(W, 7), ValueError, ["n = 7", "half < n"]),
    (lambda: induction.induction_scores(np.full((2, 2, 7, 7), np.nan), 4), ValueError,
     ["weights", "NaN"]),
    # round 3 (issue 38): ids of the predicted column, weights that are not weights
    (lambda: induction.next_token_losses(MODEL, np.where(np.arange(8) == 7, -100, SEQS)),
     ValueError, ["tokens", "[0, vocab) = [0, 12)", "-100", "(0, 7)"]),
    (lambda: induction.next_token_losses(MODEL, np.where(np.arange(8) == 7, 12, SEQS)),
     ValueError, ["tokens", "[0, 12)", "found 12"]),
    (lambda: induction.next_token_losses(MODEL, SEQS > 3), TypeError, ["tokens", "bool"]),
    (lambda: induction.next_token_losses(MODEL, SEQS * 1.0), TypeError, ["tokens", "float64"]),
    (lambda: induction.next_token_losses(MODEL, np.zeros((1, 18), int)), ValueError,
     ["tokens", "max_len = 16", "(1, 18)"]),
    (lambda: MODEL(torch.ones(1, 3, dtype=torch.bool)), TypeError, ["tokens", "torch.bool"]),
    (lambda: induction.previous_token_scores(-W), ValueError, ["weights", ">= 0", "-0.14"]),
    (lambda: induction.previous_token_scores(2 * W), ValueError,
     ["weights", "sum to 1", "sums to 1.99"]),
    (lambda: induction.induction_scores(W / 2, 4), ValueError, ["weights", "sum to 1", "sums to 0.49"]),
    (lambda: induction.induction_scores(np.where(W > 0, np.inf, 0), 4), ValueError,
     ["weights", "inf"]),
    (lambda: induction.previous_token_scores(W[:0]), ValueError,
     ["weights", "batch >= 1", "(0, 2, 7, 7)"]),
    (lambda: induction.induction_scores(W[:0], 4), ValueError, ["weights", "batch >= 1"]),
    (lambda: induction.train_induction(MODEL, lr=float("nan")), ValueError, ["lr", "nan"]),
    (lambda: induction.train_induction(MODEL, lr="0.1"), TypeError, ["lr", "'0.1'"]),
    (lambda: induction.history(MODEL, None, SEQS, 4), TypeError,
     ["run", "InductionRun", "NoneType"]),
    (lambda: induction.history(MODEL, induction.InductionRun(np.zeros(0), np.zeros(0), []),
                               SEQS, 4), ValueError, ["run", "checkpoint"]),
    (lambda: induction.history(*run(), SEQS[:, :6], 4), ValueError,
     ["tokens", "(n_sequences, 8)", "(2, 6)"]),
    (lambda: explore_induction(STEPS, FRAMES[:1], 4, [0, 1], [1, 0]), ValueError,
     ["weights", "(2, n, n)", "(1, 7, 7)"]),
    (lambda: explore_induction(STEPS, FRAMES, 3, [0, 1], [1, 0]), ValueError,
     ["half < n <= 2 half = 6", "(2, 7, 7)"]),
    (lambda: explore_induction(STEPS, FRAMES, 4, [0, 1, 1], [1, 0]), ValueError,
     ["scores", "(2,)", "(3,)"]),
    (lambda: explore_induction(STEPS, FRAMES, 4, [0, 1], [1, np.inf]), ValueError,
     ["losses"]),
    (lambda: explore_induction([0, -1], FRAMES, 4, [0, 1], [1, 0]), ValueError,
     ["steps", "whole numbers >= 0"]),
    (lambda: explore_induction(STEPS, FRAMES, 4, [0, 1], [1, 0], labels=["a"]), ValueError,
     ["labels", "7"]),
    (lambda: explore_induction(STEPS, FRAMES, 4, [0, 1], [1, 0], index=2), ValueError,
     ["index", "[-2, 1]", "2"]),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_is_named_with_what_was_expected(i):
    call, error, fragments = BAD[i]
    assert_clear_error(f"case {i}", call, error, fragments)
