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
    # round 3 (issue 38): flags, probabilities, batches of ids
    (lambda: language.verb_ids("no"), TypeError, ["plural", "True or False", "'no'"]),
    (lambda: language.verb_ids(None), TypeError, ["plural", "None"]),
    (lambda: language.verb_ids(1), TypeError, ["plural", "int 1"]),
    (lambda: language.log_prob("the cat runs .", relative=1.5), ValueError,
     ["relative", "[0, 1]", "1.5"]),
    (lambda: language.log_prob("the cat runs .", adjective=-0.5), ValueError,
     ["adjective", "-0.5"]),
    (lambda: language.log_prob("the cat runs .", transitive=float("nan")), ValueError,
     ["transitive", "nan"]),
    (lambda: language.log_prob("the cat runs .", relative="a"), TypeError, ["relative", "'a'"]),
    (lambda: language.decode([True, 2]), TypeError, ["ids", "bool"]),
    (lambda: language.decode([1.0, 2.0]), TypeError, ["ids", "float64"]),
    (lambda: language.decode("the cat"), TypeError, ["ids", "str"]),
    (lambda: language.decode(5), ValueError, ["ids", "(n,) or (batch, n)", "0 dimension"]),
    (lambda: language.decode(np.zeros((1, 2, 2), int)), ValueError,
     ["ids", "(n,) or (batch, n)", "(1, 2, 2)"]),
    (lambda: language.decode([5, [6]]), TypeError, ["ids", "mixes ids and rows"]),
    (lambda: language.decode([[5, 2], [1, 99]]), ValueError, ["ids[1]", "99"]),
    (lambda: lm.pad([np.array([2 ** 63], np.uint64)]), ValueError,
     ["seqs[0]", "[0, 2**63)", "9223372036854775808"]),
    (lambda: lm.pad([[1, -2]]), ValueError, ["seqs[0]", "-2", "index (1,)"]),
    (lambda: lm.pad([[True, 2]]), TypeError, ["seqs[0]", "bool"]),
    (lambda: lm.pad([[2 ** 70]]), ValueError, ["seqs[0]", "2**63", str(2 ** 70)]),
    (lambda: lm.pad([[1]], pad_id=2 ** 63), ValueError, ["pad_id", "2**63"]),
    (lambda: lm.pad([5]), TypeError, ["seqs[0]", "sequence of token ids", "int 5"]),
    # round 3: the targets and logits of the loss
    (lambda: lm.masked_loss(LOGITS, TARGETS.index_fill(1, torch.tensor([1]), -100), REAL),
     ValueError, ["targets", "[0, vocab) = [0, 5)", "-100", "real=False", "(0, 1)"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS + 5, REAL), ValueError,
     ["targets", "[0, 5)", "found 5"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS.bool(), REAL), TypeError,
     ["targets", "integer ids", "torch.bool"]),
    (lambda: lm.masked_loss(LOGITS.index_fill(2, torch.tensor([0]), float("nan")), TARGETS,
                            REAL), ValueError, ["logits", "finite", "nan", "(0, 0, 0)"]),
    (lambda: lm.masked_loss(LOGITS.index_fill(1, torch.tensor([2]), float("inf")), TARGETS,
                            REAL), ValueError, ["logits", "finite", "inf"]),
    (lambda: lm.masked_loss(torch.zeros(2, 4, 0), TARGETS, REAL), ValueError,
     ["logits", "vocab >= 1", "(2, 4, 0)"]),
    (lambda: lm.masked_loss(LOGITS, TARGETS, REAL.tolist()), TypeError, ["real", "list"]),
    # round 3: training and generation name what they were given
    (lambda: lm.train(tiny(), [[1, 2, 10]], steps=1), ValueError,
     ["seqs", "[0, vocab) = [0, 10)", "seqs[0][2] is 10"]),
    (lambda: lm.train(tiny(), [[1, 2, 3, 4, 5, 6]], steps=1), ValueError,
     ["seqs", "max_len = 4", "n = 5"]),
    (lambda: lm.train(None, [[1, 2, 3]]), TypeError, ["model", "nn.Module", "NoneType"]),
    (lambda: lm.train(torch.nn.Embedding(10, 10), [[1, 2, 3]], steps=1), TypeError,
     ["model", "(logits, weights)", "Tensor"]),
    (lambda: lm.train(tiny(), [[1, 2, 3]], lr=float("nan")), ValueError, ["lr", "nan"]),
    (lambda: lm.train(tiny(), [[1, 2, 3]], lr="0.1"), TypeError, ["lr", "'0.1'"]),
    (lambda: lm.generate(tiny(), [], 2), TypeError, ["prompts", "non-empty"]),
    (lambda: lm.generate(tiny(), [[1.5]], 2), TypeError, ["prompts[0]", "float64"]),
    (lambda: lm.generate(tiny(), [[1], [2, 10]], 1), ValueError,
     ["prompts", "[0, vocab) = [0, 10)", "prompts[1][1] is 10"]),
    (lambda: lm.generate(tiny(), [[-1]], 1), ValueError, ["prompts[0]", "-1"]),
    (lambda: lm.generate(torch.nn.Linear(2, 2), [[1]], 1), TypeError,
     ["model", "blocks", "Linear"]),
    (lambda: lm.generate(tiny(), [[1]], 1, temperature=float("nan")), ValueError,
     ["temperature", "nan"]),
    (lambda: lm.generate(tiny(), [[1]], 1, temperature="hot"), TypeError,
     ["temperature", "'hot'"]),
    (lambda: lm.generate(tiny(), [[1]], 1, temperature=10**400), ValueError,
     ["temperature", "finite", "1000000"]),
    (lambda: lm.last_logits(tiny(), [[10]]), ValueError, ["prompts", "prompts[0][0] is 10"]),
    (lambda: lm.without_heads(None, [(0, 0)]).__enter__(), TypeError, ["model", "NoneType"]),
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
