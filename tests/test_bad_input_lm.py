"""attnbook.language, attnbook.lm and chapter 15's additions to TinyGPT and the
attention layers refuse bad input before any arithmetic, with a message that
names the argument and shows what was expected and what arrived."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import assert_clear_error

from attnbook import language, lm
from attnbook.nn import CausalSelfAttention, KVCache, TinyGPT

RNG = np.random.default_rng


def tiny():
    return TinyGPT(vocab=10, d_model=8, n_heads=2, n_layers=2, max_len=4)


def cached(lengths):
    """A KVCache per block, holding lengths[i] tokens."""
    caches = []
    for n in lengths:
        c = KVCache()
        if n:
            c.append(torch.zeros(1, 2, n, 4), torch.zeros(1, 2, n, 4))
        caches.append(c)
    return caches


LOGITS = torch.zeros(2, 4, 5)
TARGETS = torch.zeros(2, 4, dtype=torch.long)
REAL = torch.ones(2, 4, dtype=torch.bool)
IDS = torch.zeros(1, 3, dtype=torch.long)

BAD = [
    # the language
    (lambda: language.sentence(None), TypeError, ["rng", "NoneType"]),
    (lambda: language.sentence(RNG(0), relative=1.5), ValueError, ["relative", "1.5"]),
    (lambda: language.sentence(RNG(0), adjective="a"), TypeError, ["adjective", "'a'"]),
    (lambda: language.corpus(RNG(0), 0), ValueError, ["n_sentences", "0"]),
    (lambda: language.is_grammatical(["the", "cat"]), TypeError, ["text", "list"]),
    (lambda: language.encode("the cow runs ."), ValueError, ["VOCAB", "'cow'"]),
    (lambda: language.encode("<pad> cat"), ValueError, ["VOCAB", "'<pad>'"]),
    (lambda: language.decode([1, 99]), ValueError, ["ids", "[0, len(VOCAB)) = [0, 28)", "99"]),
    (lambda: language.log_prob("the cat run ."), ValueError,
     ["grammatical", "'the cat run .'"]),
    (lambda: language.attractor_prefixes(RNG(0), -1), ValueError, ["n_sentences", "-1"]),
    # padding and the loss
    (lambda: lm.pad([]), TypeError, ["seqs", "non-empty"]),
    (lambda: lm.pad("the cat"), TypeError, ["seqs", "str"]),
    (lambda: lm.pad([[1], []]), ValueError, ["seqs[1]", "(0,)"]),
    (lambda: lm.pad([[1.5, 2.0]]), TypeError, ["seqs[0]", "float64"]),
    (lambda: lm.pad([[1]], side="middle"), ValueError, ["side", "'middle'"]),
    (lambda: lm.pad([[1]], pad_id=-1), ValueError, ["pad_id", "-1"]),
    (lambda: lm.masked_loss(LOGITS.long(), TARGETS, REAL), TypeError,
     ["logits", "(batch, n, vocab)", "torch.int64"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS[:, :3], REAL), ValueError,
     ["targets", "(2, 4)", "(2, 3)"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS.float(), REAL), TypeError,
     ["targets", "integer ids", "torch.float32"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS, REAL.long()), TypeError,
     ["real", "bools", "torch.int64"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS, ~REAL), ValueError, ["real", "at least one"]),
    # training and generation
    (lambda: lm.train(tiny(), [[1, 2, 3]], lr=0), ValueError, ["lr", "0"]),
    (lambda: lm.train(tiny(), [[1, 2, 3]], steps=0), ValueError, ["steps", "0"]),
    (lambda: lm.train(tiny(), [[1, 2], [3]]), ValueError, ["seqs", "at least two tokens"]),
    (lambda: lm.generate(tiny(), [[1]], 2, temperature=-1), ValueError,
     ["temperature", "-1", "0: greedy"]),
    (lambda: lm.generate(tiny(), [[1]], 0), ValueError, ["n_new", "0"]),
    (lambda: lm.generate(tiny(), [[1, 2, 3]], 3), ValueError,
     ["longest prompt (n = 3", "n_new - 1 = 2", "max_len = 4"]),
    # TinyGPT's cache and mask of real tokens
    (lambda: tiny()(IDS, real=torch.ones(1, 3)), TypeError, ["real", "torch.float32"]),
    (lambda: tiny()(IDS, real=torch.ones(1, 2, dtype=torch.bool)), ValueError,
     ["real", "(batch, n_past + n) = (1, 3)", "(1, 2)"]),
    (lambda: tiny()(IDS, cache=[KVCache()]), TypeError,
     ["cache", "n_layers = 2", "length 1"]),
    (lambda: tiny()(IDS, cache=KVCache()), TypeError, ["cache", "KVCache", "one per block"]),
    (lambda: tiny()(IDS[:, :1], cache=cached([1, 0])), ValueError, ["same tokens", "[1, 0]"]),
    (lambda: tiny()(IDS[:, :2], cache=cached([3, 3])), ValueError,
     ["n = 2", "n_past = 3", "max_len = 4"]),
    (lambda: tiny()(IDS[:, :1], cache=cached([1, 1]), real=torch.ones(1, 1, dtype=torch.bool)),
     ValueError, ["real", "(1, 2)", "(1, 1)"]),
    # the attention layer's key mask
    (lambda: CausalSelfAttention(8, 2)(torch.zeros(1, 3, 8),
                                       key_mask=torch.ones(1, 2, dtype=torch.bool)),
     ValueError, ["key_mask", "(batch, n_past + n) = (1, 3)", "(1, 2)"]),
    (lambda: CausalSelfAttention(8, 2)(torch.zeros(1, 3, 8), key_mask=torch.ones(1, 3)),
     TypeError, ["key_mask", "boolean", "torch.float32"]),
]


@pytest.mark.parametrize("call, error, fragments", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_input_gets_a_clear_error(call, error, fragments):
    assert_clear_error(str(fragments), call, error, fragments)
