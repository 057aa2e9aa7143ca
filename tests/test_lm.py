"""attnbook.language and attnbook.lm (chapter 15), and what chapter 15 added to
TinyGPT and the attention layers (a cache per block, a mask of real tokens),
each against an independent computation: enumeration of the grammar, the loss
of each sequence alone, generation that recomputes the whole prefix of each
sequence alone, torch's scaled_dot_product_attention."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnbook import language, lm
from attnbook.nn import CausalSelfAttention, KVCache, TinyGPT, causal_heads
from attnbook.transformer import GroupedQueryAttention

W = language.WORDS
ADJ = language.ADJECTIVES


def noun_phrases(plural):
    return [" ".join(w for w in (d, a, n) if w) for d in W["det"][plural]
            for a in (None, *ADJ) for n in W["noun"][plural]]


def verb_phrases(plural):
    objects = noun_phrases(0) + noun_phrases(1)
    return list(W["intransitive"][plural]) + [f"{v} {o}" for v in W["transitive"][plural]
                                              for o in objects]


# --- the language -----------------------------------------------------------------------

def test_every_drawn_sentence_is_grammatical_and_ends_in_a_full_stop():
    for s in language.corpus(np.random.default_rng(0), 3000):
        assert language.is_grammatical(s) and s.endswith(" .")


@pytest.mark.parametrize("bad", [
    "a cats run .",                               # a + plural
    "some cat runs .",                            # some + singular
    "the cat run .",                              # verb number
    "the cats that sees the dog run .",           # the relative clause's verb
    "the cat that chases the dogs chase .",       # agreement with the attractor
    "the cat sees .",                             # transitive without an object
    "the cat runs the dog .",                     # intransitive with an object
    "the cat runs",                               # no full stop
    "the cat that runs that sleeps runs .",       # two relative clauses
    "the big red cat runs .",                     # two adjectives
    "the cat sees the dog that runs .",           # a relative clause on an object
    "the  cat runs .",                            # two spaces
])
def test_sentences_that_break_a_rule_are_refused(bad):
    assert not language.is_grammatical(bad)


def test_the_language_without_relative_clauses_has_the_probability_the_rules_give():
    """Enumerated: every subject without a relative clause and every verb phrase; the
    recogniser accepts each, and their probabilities sum to 1 - relative."""
    total, count = 0.0, 0
    for p in (0, 1):
        for subject, vp in itertools.product(noun_phrases(p), verb_phrases(p)):
            s = f"{subject} {vp} ."
            assert language.is_grammatical(s), s
            total += math.exp(language.log_prob(s))
            count += 1
    assert count == 2 * 32 * (2 + 3 * 64)
    assert total == pytest.approx(0.6, abs=1e-12)


def test_relative_clauses_with_intransitive_verbs_have_the_probability_the_rules_give():
    total = sum(math.exp(language.log_prob(f"{np_} that {v1} {v2} ."))
                for p in (0, 1) for np_ in noun_phrases(p)
                for v1 in W["intransitive"][p] for v2 in W["intransitive"][p])
    assert total == pytest.approx(0.4 * 0.4 * 0.4, abs=1e-12)


def test_log_prob_matches_the_frequency_of_the_likeliest_sentences():
    text = language.corpus(np.random.default_rng(5), 40000)
    for s in ("the cat runs .", "some dogs sleep ."):
        freq = text.count(s) / len(text)
        p = math.exp(language.log_prob(s))
        assert abs(freq - p) < 4 * math.sqrt(p / len(text)), (s, freq, p)


def test_language_size_counted_from_its_parts():
    """The chapter's count, from enumerated noun and verb phrases (each tried in a
    sentence the recogniser accepts), not from the formula."""
    size = 0
    for p in (0, 1):
        nps = [x for x in noun_phrases(p) if language.is_grammatical(f"{x} sleep{'s' * (1 - p)} .")]
        vps = [v for v in verb_phrases(p) if language.is_grammatical(f"{nps[0]} {v} .")]
        subjects = len(nps) * (1 + len(vps))
        size += subjects * len(vps)
    assert size == 2_421_120


def test_encode_and_decode_round_trip_and_decode_stops_at_the_full_stop():
    s = "some big dogs that chase a cat sleep ."
    ids = language.encode(s)
    assert ids[0] == language.VOCAB.index(language.BOS)
    assert language.decode(ids) == s
    assert language.decode(ids + ids[1:] + [0, 0]) == s
    assert language.decode(language.encode("the cat")) == "the cat"
    assert language.encode("") == [1] and len(language.VOCAB) == 28


def test_attractor_prefixes_hold_a_noun_of_the_other_number_before_the_verb():
    prefixes, plural = language.attractor_prefixes(np.random.default_rng(0), 200)
    assert 0.3 < plural.mean() < 0.7
    for prefix, pl in zip(prefixes, plural, strict=True):
        last = prefix.split()[-1]
        assert last in W["noun"][1 - int(pl)], prefix
        right = language.VOCAB[language.verb_ids(pl)[0]]
        wrong = language.VOCAB[language.verb_ids(not pl)[0]]
        assert language.is_grammatical(f"{prefix} {right} .")
        assert not language.is_grammatical(f"{prefix} {wrong} .")


# --- padding and the loss ---------------------------------------------------------------

@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_places_each_sequence_on_its_side_and_marks_it_real(side):
    seqs = [[5, 6], [7], [8, 9, 10]]
    idx, real = lm.pad(seqs, side=side, pad_id=0)
    assert idx.dtype == torch.int64 and real.dtype == torch.bool
    for row, s in enumerate(seqs):
        cols = range(len(s)) if side == "right" else range(3 - len(s), 3)
        assert idx[row, list(cols)].tolist() == s
        assert real[row].tolist() == [c in cols for c in range(3)]
        assert (idx[row][~real[row]] == 0).all()


@pytest.mark.parametrize("lengths", [[4, 1, 3], [2], [5, 5]])
def test_masked_loss_equals_the_loss_of_the_sequences_alone(lengths):
    g = torch.Generator().manual_seed(0)
    n, vocab = max(lengths), 7
    logits = torch.randn(len(lengths), n, vocab, generator=g, dtype=torch.float64)
    targets = torch.randint(vocab, (len(lengths), n), generator=g)
    real = torch.arange(n) < torch.tensor(lengths)[:, None]
    summed = sum(-torch.log_softmax(logits[b, t], -1)[targets[b, t]]
                 for b, m in enumerate(lengths) for t in range(m))
    expected = summed / sum(lengths)
    assert lm.masked_loss(logits, targets, real).item() == pytest.approx(expected.item(),
                                                                       rel=1e-12)


# --- the model with padding and a cache ---------------------------------------------------

def model_f64(n_kv_heads=None, seed=0):
    return TinyGPT(vocab=11, d_model=16, n_heads=4, n_layers=2, max_len=12,
                   n_kv_heads=n_kv_heads, seed=seed).double().eval()


def random_prompts(rng, n_prompts, vocab=11):
    return [rng.integers(1, vocab, size=rng.integers(1, 6)).tolist() for _ in range(n_prompts)]


def test_with_right_padding_the_real_positions_see_what_they_see_alone():
    model = model_f64()
    seqs = random_prompts(np.random.default_rng(1), 5)
    idx, _ = lm.pad(seqs)
    with torch.no_grad():
        padded = model(idx)[0]
        for b, s in enumerate(seqs):
            alone = model(torch.tensor([s]))[0][0]
            torch.testing.assert_close(padded[b, :len(s)], alone, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_kv_heads", [None, 2])
def test_with_left_padding_and_real_every_row_scores_as_it_does_alone(n_kv_heads):
    model = model_f64(n_kv_heads)
    prompts = random_prompts(np.random.default_rng(2), 6)
    idx, real = lm.pad(prompts, side="left")
    with torch.no_grad():
        out, weights = model(idx, real=real)
        for b, p in enumerate(prompts):
            alone = model(torch.tensor([p]))[0][0]
            torch.testing.assert_close(out[b, -len(p):], alone, rtol=0, atol=1e-12)
    for w in weights:                           # no weight on padding; padding queries get none
        assert (w.masked_fill(real[:, None, None, :], 0) == 0).all()
        rows_of_padding = ~real[:, None, :, None].expand_as(w)
        assert (w[rows_of_padding] == 0).all()
        assert torch.isfinite(w).all()


def reference_generate(model, prompts, n_new, temperature, seed):
    """No cache, no padding shortcuts: every step re-runs the whole left-padded
    prefix, and draws with the generator exactly as lm.generate does."""
    idx, real = lm.pad(prompts, side="left")
    g = torch.Generator().manual_seed(seed)
    new = []
    with torch.no_grad():
        for _ in range(n_new):
            scores = model(idx, real=real)[0][:, -1]
            if temperature == 0:
                tok = scores.argmax(-1)
            else:
                tok = torch.multinomial(torch.softmax(scores.double() / temperature, -1), 1,
                                        generator=g)[:, 0]
            new.append(tok)
            idx = torch.cat([idx, tok[:, None]], 1)
            real = torch.cat([real, torch.ones_like(tok[:, None], dtype=torch.bool)], 1)
    return torch.stack(new, 1)


@pytest.mark.parametrize("n_kv_heads", [None, 1])
@pytest.mark.parametrize("temperature", [0, 0.7, 1.0])
def test_generate_with_the_cache_equals_recomputing_the_whole_prefix(n_kv_heads, temperature):
    model = model_f64(n_kv_heads, seed=3)
    prompts = random_prompts(np.random.default_rng(3), 5)
    ours = lm.generate(model, prompts, 6, temperature=temperature, seed=4)
    assert torch.equal(ours, reference_generate(model, prompts, 6, temperature, seed=4))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_generation_in_a_batch_equals_each_prompt_alone(seed):
    model = model_f64(seed=seed)
    prompts = random_prompts(np.random.default_rng(seed), 7)
    batch = lm.generate(model, prompts, 6, temperature=0)
    for b, p in enumerate(prompts):
        alone = lm.generate(model, [p], 6, temperature=0)[0]
        assert torch.equal(batch[b], alone)
        # and the same as the unpadded prompt extended by plain forward passes
        seq = list(p)
        with torch.no_grad():
            for _ in range(6):
                seq.append(int(model(torch.tensor([seq]))[0][0, -1].argmax()))
        assert batch[b].tolist() == seq[len(p):]


def test_generate_is_reproducible_and_leaves_the_global_random_state_alone():
    model = model_f64()
    state = torch.random.get_rng_state()
    a = lm.generate(model, [[1, 2]] * 4, 5, temperature=1.0, seed=9)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.equal(a, lm.generate(model, [[1, 2]] * 4, 5, temperature=1.0, seed=9))


def test_cache_positions_continue_from_n_past():
    model = model_f64()
    seq = torch.tensor([[3, 4, 5, 6, 7]])
    cache = [KVCache() for _ in model.blocks]
    with torch.no_grad():
        full = model(seq)[0]
        first = model(seq[:, :2], cache)[0]
        rest = torch.cat([model(seq[:, t:t + 1], cache)[0] for t in range(2, 5)], 1)
    torch.testing.assert_close(torch.cat([first, rest], 1), full, rtol=0, atol=1e-12)
    assert all(len(c) == 5 for c in cache)


# --- the attention core under a key mask ---------------------------------------------------

def test_key_mask_matches_torch_sdpa_with_the_combined_mask():
    torch.manual_seed(0)
    layer = CausalSelfAttention(8, 2, max_len=6).double()
    x = torch.randn(3, 6, 8, dtype=torch.float64)
    key_mask = torch.tensor([[False, False, True, True, True, True],
                             [True] * 6, [False, True, True, True, True, True]])
    out, w = layer(x, key_mask=key_mask)
    q, k, v = layer.qkv(x).split(8, -1)
    q, k, v = (t.view(3, 6, 2, 4).transpose(1, 2) for t in (q, k, v))
    allowed = torch.tril(torch.ones(6, 6, dtype=torch.bool)) & key_mask[:, None, None, :]
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    ref = layer.proj(ref.transpose(1, 2).reshape(3, 6, 8))
    has_key = allowed.any(-1)[:, 0]                                    # (batch, n)
    torch.testing.assert_close(out[has_key], ref[has_key], rtol=0, atol=1e-12)
    assert (w[~allowed.expand_as(w)] == 0).all()


def test_a_query_with_no_allowed_key_gets_zero_weights_and_finite_gradients():
    q, k, v = (torch.randn(1, 1, 3, 4, dtype=torch.float64, requires_grad=True)
               for _ in range(3))
    allowed = torch.tensor([[[[False, False, False], [False, True, False],
                              [False, True, True]]]])
    heads, w = causal_heads(q, k, v, allowed, torch.float64)
    assert (w[0, 0, 0] == 0).all() and (heads[0, 0, 0] == 0).all()
    assert w[0, 0, 1:].sum(-1).tolist() == pytest.approx([1, 1])
    heads.sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_grouped_query_attention_takes_the_key_mask_too():
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(8, 4, 2, max_len=5).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    key_mask = torch.tensor([[False, True, True, True, True], [True] * 5])
    out, w = gqa(x, key_mask=key_mask)
    alone, _ = gqa(x[:1, 1:])
    torch.testing.assert_close(out[0, 1:], alone[0], rtol=0, atol=1e-12)
    assert (w[0, :, :, 0] == 0).all()


# --- training ------------------------------------------------------------------------------

def test_train_is_reproducible_lowers_the_loss_and_restores_the_thread_count():
    seqs = [language.encode(s) for s in language.corpus(np.random.default_rng(0), 200)]
    threads = torch.get_num_threads()
    runs = []
    for _ in range(2):
        model = TinyGPT(len(language.VOCAB), 16, 2, 1, 16, seed=1)
        runs.append(lm.train(model, seqs, steps=40, batch_size=16, lr=1e-2, seed=2))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert runs[0][-10:].mean() < runs[0][:5].mean() - 0.5
    assert torch.get_num_threads() == threads
    assert not model.training


def test_last_logits_is_the_last_real_position_of_each_prompt():
    model = model_f64()
    prompts = random_prompts(np.random.default_rng(4), 4)
    scores = lm.last_logits(model, prompts)
    with torch.no_grad():
        for b, p in enumerate(prompts):
            torch.testing.assert_close(scores[b], model(torch.tensor([p]))[0][0, -1],
                                       rtol=0, atol=1e-12)


def test_the_layers_still_run_on_the_meta_device():
    """Chapter 14 sizes caches on the meta device, where no value can be read."""
    with torch.device("meta"):
        layer = GroupedQueryAttention(16, 4, 2, max_len=8)
        cache = KVCache()
        layer(torch.empty(1, 8, 16), cache)
        out, _ = CausalSelfAttention(16, 4, max_len=8)(
            torch.empty(2, 8, 16), key_mask=torch.ones(2, 8, dtype=torch.bool))
    assert cache.k.shape == (1, 2, 8, 4) and out.shape == (2, 8, 16)


@pytest.mark.parametrize("n_kv_heads", [None, 2])
def test_without_heads_equals_zeroing_those_columns_of_the_output_projection(n_kv_heads):
    """Chapter 15's ablation: a removed head adds nothing, which is the same as
    zeroing its d_head columns of attn.proj's weight; the hooks go on leaving."""
    model = model_f64(n_kv_heads)
    idx = torch.tensor(random_prompts(np.random.default_rng(5), 1)[0])[None]
    with torch.no_grad():
        before = model(idx)[0]
        with lm.without_heads(model, [(1, 0), (0, 3), (1, 2)]):
            ablated = model(idx)[0]
        torch.testing.assert_close(model(idx)[0], before, rtol=0, atol=0)
        for layer, head in [(1, 0), (0, 3), (1, 2)]:
            attn = model.blocks[layer].attn
            attn.proj.weight[:, head * attn.d_head:(head + 1) * attn.d_head] = 0
        torch.testing.assert_close(ablated, model(idx)[0], rtol=0, atol=1e-12)
    assert not (ablated - before).abs().max() < 1e-6
    with pytest.raises(ValueError, match="a layer in heads must lie in"):
        with lm.without_heads(model, [(2, 0)]):
            pass
    for bad, error, words in [([(0, 4)], ValueError, "a head in heads must lie in"),
                              ([(True, 0)], TypeError, "a layer in heads must be an integer"),
                              ([(0, 1.0)], TypeError, "a head in heads must be an integer"),
                              ([0], TypeError, r"heads must be \(layer, head\) pairs"),
                              (None, TypeError, r"heads must be a sequence of")]:
        with pytest.raises(error, match=words):
            with lm.without_heads(model, bad):
                pass
