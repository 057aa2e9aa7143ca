"""Properties of the input checks of Part V (issue 38): every integer dtype of ids
gives the int64 answer, flags are real booleans, AttentionOnly runs in float16 and
bfloat16, weights that are not distributions are refused, and the written-out
Adam steps as torch.optim.Adam does. References are torch's own functions and
plain loops, not attnbook."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import induction, language, lm
from attnbook.nn import TinyGPT
from attnbook.optim import Adam

PROPERTY = settings(max_examples=25, deadline=None)
NUMPY_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
TORCH_INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
MODEL = induction.AttentionOnly(12, 16, 4, max_len=16)
GPT = TinyGPT(vocab=10, d_model=8, n_heads=2, n_layers=2, max_len=8)


def as_dtype(a: np.ndarray, dtype):
    """a (small non-negative ints) in a numpy or a torch integer dtype."""
    return a.astype(dtype) if isinstance(dtype, type) else torch.as_tensor(a).to(dtype)


def loop_loss(logits, targets, real) -> float:
    """The mean of -log softmax(logits)[target] over the real targets, one by one."""
    total, count = 0.0, 0
    for b in range(logits.shape[0]):
        for i in range(logits.shape[1]):
            if real[b, i]:
                row = logits[b, i].double()
                total += float(torch.logsumexp(row, 0) - row[int(targets[b, i])])
                count += 1
    return total / count


ids = st.sampled_from(NUMPY_INTS + TORCH_INTS)


@PROPERTY
@given(dtype=ids, seed=st.integers(0, 2 ** 16))
def test_masked_loss_reads_targets_of_every_integer_dtype(dtype, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(2, 5, 7, generator=g)
    targets = torch.randint(0, 7, (2, 5), generator=g)
    real = torch.rand(2, 5, generator=g) < 0.7
    real[0, 0] = True
    got = lm.masked_loss(logits, as_dtype(targets.numpy(), dtype), real)
    assert math.isclose(float(got), loop_loss(logits, targets, real), rel_tol=1e-5)


@PROPERTY
@given(dtype=ids, bad=st.one_of(st.integers(-300, -1), st.integers(7, 2 ** 62)),
       where=st.tuples(st.integers(0, 1), st.integers(0, 4)))
def test_masked_loss_refuses_any_real_target_outside_the_vocabulary(dtype, bad, where):
    targets = np.zeros((2, 5), np.int64)
    targets[where] = bad
    with pytest.raises(ValueError, match=rf"targets must hold ids in \[0, vocab\).*{bad}"):
        lm.masked_loss(torch.zeros(2, 5, 7), targets, torch.ones(2, 5, dtype=torch.bool))


@PROPERTY
@given(dtype=ids, seed=st.integers(0, 2 ** 16))
def test_next_token_losses_read_tokens_of_every_integer_dtype(dtype, seed):
    tokens = induction.repeated_tokens(np.random.default_rng(seed), 2, 4, 12)   # (2, 8)
    losses, weights = induction.next_token_losses(MODEL, as_dtype(tokens, dtype))
    with torch.no_grad():
        t = torch.as_tensor(tokens)
        logits, w = MODEL(t[:, :-1])
        ref = torch.nn.functional.cross_entropy(logits.transpose(1, 2), t[:, 1:],
                                                reduction="none")
    np.testing.assert_array_equal(losses, ref.double().numpy())
    np.testing.assert_array_equal(weights, w.double().numpy())


@PROPERTY
@given(dtype=ids, rows=st.lists(st.lists(st.integers(0, 27), min_size=1, max_size=6),
                                min_size=1, max_size=3))
def test_decode_reads_ids_and_batches_of_every_integer_dtype(dtype, rows):
    n = min(len(r) for r in rows)
    batch = np.array([r[:n] for r in rows])                       # (batch, n)

    def by_loop(row):
        words = []
        for i in row:
            if language.VOCAB[i] not in (language.PAD, language.BOS):
                words.append(language.VOCAB[i])
                if language.VOCAB[i] == language.END:
                    break
        return " ".join(words)

    assert language.decode(as_dtype(batch, dtype)) == [by_loop(r) for r in batch.tolist()]
    assert language.decode(as_dtype(batch[0], dtype)) == by_loop(batch[0].tolist())
    assert language.decode(rows) == [by_loop(r) for r in rows]     # ragged lists: row by row


not_a_bool = st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=3),
                       st.lists(st.booleans(), min_size=1, max_size=2),
                       st.sampled_from([np.int64(1), np.float64(0.0), "no", "True", b"x"]))


@PROPERTY
@given(plural=st.sampled_from([True, False, np.True_, np.False_]))
def test_verb_ids_takes_python_and_numpy_bools(plural):
    words = [language.VOCAB[i] for i in language.verb_ids(plural)]
    ending = [w.endswith("s") for w in words]
    assert ending == ([False, False, False, False, False] if plural else [True] * 5)


@PROPERTY
@given(plural=not_a_bool)
def test_verb_ids_refuses_everything_else_by_name(plural):
    with pytest.raises(TypeError, match="plural must be True or False"):
        language.verb_ids(plural)


@PROPERTY
@given(name=st.sampled_from(["relative", "adjective", "transitive"]),
       p=st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(
           lambda x: not 0 <= x <= 1), st.booleans(), st.text(max_size=2), st.none()))
def test_log_prob_refuses_what_is_not_a_probability(name, p):
    with pytest.raises((TypeError, ValueError), match=name):
        language.log_prob("the cat that sees some dogs runs .", **{name: p})


@PROPERTY
@given(rel=st.floats(0, 1), adj=st.floats(0, 1), tr=st.floats(0, 1),
       seed=st.integers(0, 2 ** 16))
def test_log_prob_is_at_most_0_and_minus_inf_only_for_an_impossible_choice(rel, adj, tr, seed):
    text = language.sentence(np.random.default_rng(seed))
    lp = language.log_prob(text, relative=rel, adjective=adj, transitive=tr)
    words = text.split()
    has_adj = [w in language.ADJECTIVES for w in words]
    n_nouns = sum(w in language.WORDS["noun"][0] + language.WORDS["noun"][1] for w in words)
    n_trans = sum(w in language.WORDS["transitive"][0] + language.WORDS["transitive"][1]
                  for w in words)
    n_verbs = sum(w in language.WORDS["intransitive"][0] + language.WORDS["intransitive"][1]
                  for w in words) + n_trans
    impossible = (rel == 0 and "that" in words) or (rel == 1 and "that" not in words) \
        or (adj == 0 and any(has_adj)) or (adj == 1 and sum(has_adj) < n_nouns) \
        or (tr == 0 and n_trans) or (tr == 1 and n_trans < n_verbs)
    assert lp <= 0 and (lp == -math.inf) == bool(impossible)


@PROPERTY
@given(dtype=st.sampled_from([torch.float16, torch.bfloat16]), seed=st.integers(0, 2 ** 16))
def test_attention_only_runs_in_half_precision_close_to_float32(dtype, seed):
    tokens = torch.as_tensor(induction.repeated_tokens(np.random.default_rng(seed), 2, 5, 12))
    narrow = induction.AttentionOnly(12, 16, 4, max_len=16).to(dtype)
    cast = induction.AttentionOnly(12, 16, 4, max_len=16)
    cast = cast.half() if dtype == torch.float16 else cast.bfloat16()
    with torch.no_grad():
        assert torch.equal(cast(tokens)[0], narrow(tokens)[0])      # .to keeps RoPE's sines
        logits, w = narrow(tokens)
        ref_logits, ref_w = MODEL(tokens)
    assert logits.dtype == dtype and w.dtype == dtype
    torch.testing.assert_close(logits.float(), ref_logits, atol=0.1, rtol=0.05)
    torch.testing.assert_close(w.float(), ref_w, atol=0.02, rtol=0.05)
    losses, weights = induction.next_token_losses(narrow, tokens)
    assert np.isfinite(losses).all()
    scores = induction.induction_scores(weights[:, 1], 5)          # the rows pass as weights
    assert ((0 <= scores) & (scores <= 1)).all()


causal = np.tril(np.ones((7, 7)))
CAUSAL = np.broadcast_to(causal / causal.sum(1, keepdims=True), (2, 3, 7, 7))


@PROPERTY
@given(seed=st.integers(0, 2 ** 16), how=st.sampled_from(["negative", "scaled", "shifted"]),
       score=st.sampled_from(["previous", "induction"]))
def test_weights_that_are_not_distributions_are_refused(seed, how, score):
    rng = np.random.default_rng(seed)
    w = rng.random((2, 3, 7, 7))
    w /= w.sum(-1, keepdims=True)                                 # valid weights ...
    at = tuple(rng.integers(0, s) for s in w.shape[:3])
    if how == "negative":
        w[at + (0,)] -= 1.5                                       # a weight < 0
    elif how == "scaled":
        w[at] *= rng.choice([0.5, 1.5, 3.0])                      # a row summing to 0.5..3
    else:
        w[at + (1,)] += 0.01                                      # off by 0.01
    call = induction.previous_token_scores if score == "previous" else \
        (lambda x: induction.induction_scores(x, 4))
    with pytest.raises(ValueError, match="weights"):
        call(w)


@PROPERTY
@given(seed=st.integers(0, 2 ** 16), dtype=st.sampled_from([np.float64, np.float32]))
def test_scores_of_real_weights_match_a_loop_and_lie_in_0_1(seed, dtype):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(2, 3, 7, 7)) * 3
    scores[..., np.triu_indices(7, 1)[0], np.triu_indices(7, 1)[1]] = -np.inf
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = (w / w.sum(-1, keepdims=True)).astype(dtype)
    prev = [np.mean([w[b, h, i, i - 1] for b in range(2) for i in range(1, 7)]) for h in range(3)]
    ind = [np.mean([w[b, h, q, q - 3] for b in range(2) for q in range(4, 7)]) for h in range(3)]
    np.testing.assert_allclose(induction.previous_token_scores(w), prev, rtol=1e-6)
    np.testing.assert_allclose(induction.induction_scores(w, 4), ind, rtol=1e-6)


@PROPERTY
@given(lr=st.floats(0, 0.5), b1=st.floats(0, 0.99), b2=st.floats(0, 0.999),
       eps=st.floats(1e-10, 1e-2), form=st.sampled_from(["list", "generator", "groups"]))
def test_adam_steps_as_torch_optim_adam_does(lr, b1, b2, eps, form):
    g = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 2, generator=g, dtype=torch.float64) for _ in range(2)]
    ours = [torch.nn.Parameter(s.clone()) for s in start]
    ref = [torch.nn.Parameter(s.clone()) for s in start]

    def params(ps):
        if form == "list":
            return list(ps)
        if form == "generator":
            return (p for p in ps)
        return [{"params": [ps[0]]}, {"params": [ps[1]], "lr": lr / 2, "eps": eps * 3}]

    adam = Adam(params(ours), lr, betas=(b1, b2), eps=eps)
    torch_adam = torch.optim.Adam(params(ref), lr, betas=(b1, b2), eps=eps)
    target = torch.randn(3, 2, generator=g, dtype=torch.float64)
    for _ in range(6):
        for ps, opt in ((ours, adam), (ref, torch_adam)):
            for p in ps:
                p.grad = None
            sum(((p - target) ** 4).sum() for p in ps).backward()
            opt.step()
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


@PROPERTY
@given(temperature=st.one_of(st.sampled_from([5e-324, 1e-320, 1e-310, 1e-300]),
                             st.floats(1e-300, 1e-30)))
def test_generate_at_a_tiny_temperature_is_greedy(temperature):
    prompts = [[1, 2], [3], [4, 5, 6]]
    greedy = lm.generate(GPT, prompts, 4, temperature=0)
    assert torch.equal(lm.generate(GPT, prompts, 4, temperature=temperature), greedy)


@PROPERTY
@given(dtype=st.sampled_from(NUMPY_INTS), values=st.lists(st.integers(0, 100), min_size=1,
                                                          max_size=4))
def test_pad_keeps_every_id_of_every_integer_dtype(dtype, values):
    idx, real = lm.pad([np.array(values, dtype), np.array(values[:1], dtype)], side="left")
    assert idx.dtype == torch.int64 and idx[0].tolist() == values
    assert idx[1, -1].item() == values[0] and real.sum().item() == len(values) + 1


@PROPERTY
@given(big=st.integers(2 ** 63, 2 ** 64 - 1))
def test_pad_refuses_ids_beyond_int64(big):
    with pytest.raises(ValueError, match=r"seqs\[0\] must hold ids in \[0, 2\*\*63\)"):
        lm.pad([np.array([1, big], np.uint64)])
