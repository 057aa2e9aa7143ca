"""Chapter 16 (the induction head): the repeated sequences, the attention-only
model against a hand-written forward pass, RoPE against chapter 11's numpy
`rotate`, ablation against zeroing a head's columns of the output projection,
the head scores on hand-made weights against plain loops, reproducible
training with checkpoints, and the glued numbers the prose compares."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from attnbook import induction, rotate


def tokens(n_sequences=3, half=5, vocab=12, seed=0):
    return induction.repeated_tokens(np.random.default_rng(seed), n_sequences, half, vocab)


# --- data ---------------------------------------------------------------------

def test_repeated_tokens_repeat_their_first_half_of_distinct_tokens():
    t = induction.repeated_tokens(np.random.default_rng(3), 50, 6, 9)
    assert t.shape == (50, 12) and t.dtype == np.int64
    np.testing.assert_array_equal(t[:, 6:], t[:, :6])
    assert all(len(set(row[:6].tolist())) == 6 for row in t)
    assert t.min() >= 0 and t.max() < 9
    np.testing.assert_array_equal(t, induction.repeated_tokens(np.random.default_rng(3),
                                                               50, 6, 9))


# --- the model against a hand-written forward pass -------------------------------

def reference_forward(model, t, ablate=()):
    """The attention-only model computed from its parameters with numpy and
    chapter 11's `rotate`, head by head and query by query."""
    p = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    x = p["tok_emb.weight"][t]                                   # (batch, n, d_model)
    batch, n, d_model = x.shape
    h = model.n_heads
    d_head = d_model // h
    all_weights = []
    for layer in range(model.n_layers):
        qkv = x @ p[f"layers.{layer}.qkv.weight"].T + p[f"layers.{layer}.qkv.bias"]
        out = np.zeros((batch, n, d_model))
        weights = np.zeros((batch, h, n, n))
        for b in range(batch):
            for head in range(h):
                cols = slice(head * d_head, (head + 1) * d_head)
                q = rotate(qkv[b, :, :d_model][:, cols], np.arange(n))
                k = rotate(qkv[b, :, d_model:2 * d_model][:, cols], np.arange(n))
                v = qkv[b, :, 2 * d_model:][:, cols]
                for i in range(n):
                    s = np.array([q[i] @ k[j] / math.sqrt(d_head) for j in range(i + 1)])
                    w = np.exp(s - s.max())
                    w /= w.sum()
                    weights[b, head, i, :i + 1] = w
                    if (layer, head) not in ablate:
                        out[b, i, cols] = w @ v[:i + 1]
        x = x + out @ p[f"layers.{layer}.proj.weight"].T
        all_weights.append(weights)
    return x @ p["unembed.weight"].T, np.stack(all_weights, axis=1)


@pytest.mark.parametrize("ablate", [(), [(0, 1)], [(1, 0), (1, 2)]])
def test_forward_matches_a_hand_written_numpy_forward(ablate):
    model = induction.AttentionOnly(12, 16, 4, seed=2).double()
    t = tokens()
    with torch.no_grad():
        logits, weights = model(torch.as_tensor(t), ablate)
    ref_logits, ref_weights = reference_forward(model, t, ablate)
    np.testing.assert_allclose(logits.numpy(), ref_logits, atol=1e-10)
    np.testing.assert_allclose(weights.numpy(), ref_weights, atol=1e-12)
    assert weights.shape == (3, 2, 4, 10, 10)


def test_the_rotation_is_chapter_11s_rotate():
    """The layers turn queries and keys with the public attnbook.layer.rope
    (tests/test_api_conventions.py checks that they call it), chapter 11's rotate."""
    from attnbook.layer import rope
    x = torch.randn(2, 2, 9, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    np.testing.assert_allclose(rope(x).numpy(), rotate(x.numpy(), np.arange(9)), atol=1e-14)


def test_ablating_a_head_is_zeroing_its_columns_of_the_output_projection():
    model = induction.AttentionOnly(12, 16, 4, seed=1).double()
    t = torch.as_tensor(tokens())
    for layer, head in [(0, 0), (0, 3), (1, 2)]:
        zeroed = copy.deepcopy(model)
        with torch.no_grad():
            zeroed.layers[layer].proj.weight[:, head * 4:(head + 1) * 4] = 0
            expected, _ = zeroed(t)
            got, _ = model(t, ablate=[(layer, head)])
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)
    with torch.no_grad():
        intact, _ = model(t)
    assert (intact - got).abs().max() > 1e-3, "an ablation must change the logits"


def test_the_model_is_seeded_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b = (induction.AttentionOnly(12, 16, 4, seed=5) for _ in range(2))
    assert torch.equal(torch.random.get_rng_state(), state)
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(x, y), name
    c = induction.AttentionOnly(12, 16, 4, seed=6)
    assert not torch.equal(a.tok_emb.weight, c.tok_emb.weight)


# --- the scores on hand-made weights ------------------------------------------------

def loop_previous(w):
    batch, h, n, _ = w.shape
    return np.array([np.mean([w[b, k, i, i - 1] for b in range(batch) for i in range(1, n)])
                     for k in range(h)])


def loop_induction(w, half):
    batch, h, n, _ = w.shape
    return np.array([np.mean([w[b, k, q, q - half + 1] for b in range(batch)
                              for q in range(half, n)]) for k in range(h)])


def test_scores_of_perfect_heads_are_1_and_of_the_other_kind_0():
    n, half = 9, 5
    prev, stripe = np.zeros((n, n)), np.zeros((n, n))
    prev[0, 0] = 1
    stripe[np.arange(half), np.arange(half)] = 1                # the first half: itself
    prev[np.arange(1, n), np.arange(n - 1)] = 1
    q = np.arange(half, n)
    stripe[q, q - half + 1] = 1
    w = np.stack([prev, stripe])[None]                          # (1, 2, n, n)
    np.testing.assert_allclose(induction.previous_token_scores(w), [1, 0])
    np.testing.assert_allclose(induction.induction_scores(w, half), [0, 1])


def test_scores_match_plain_loops_on_random_weights():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(7), size=(3, 2, 7))               # (3, 2, 7, 7)
    np.testing.assert_allclose(induction.previous_token_scores(w), loop_previous(w))
    for half in (4, 5, 6):
        np.testing.assert_allclose(induction.induction_scores(w, half), loop_induction(w, half))


def test_a_uniform_causal_head_scores_the_mean_of_one_over_the_keys_it_sees():
    n, half = 19, 10
    uniform = np.tril(np.ones((n, n)))
    uniform /= uniform.sum(axis=1, keepdims=True)
    got = induction.induction_scores(uniform[None, None], half)[0]
    assert got == pytest.approx(np.mean([1 / (q + 1) for q in range(10, 19)]))
    assert induction.previous_token_scores(uniform[None, None])[0] == \
        pytest.approx(np.mean([1 / (i + 1) for i in range(1, 19)]))


# --- training ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def short_run():
    model = induction.AttentionOnly(12, 16, 2, seed=0)
    return model, induction.train_induction(model, steps=30, batch_size=16, halves=(3, 5),
                                            checkpoint_every=10)


def test_training_is_reproducible_and_keeps_global_state(short_run):
    model, run = short_run
    state, threads = torch.random.get_rng_state(), torch.get_num_threads()
    again = induction.AttentionOnly(12, 16, 2, seed=0)
    run2 = induction.train_induction(again, steps=30, batch_size=16, halves=(3, 5),
                                     checkpoint_every=10)
    assert torch.equal(torch.random.get_rng_state(), state)
    assert torch.get_num_threads() == threads
    np.testing.assert_array_equal(run.losses, run2.losses)
    for a, b in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)
    other = induction.train_induction(induction.AttentionOnly(12, 16, 2, seed=0), steps=30,
                                      batch_size=16, halves=(3, 5), seed=1)
    assert not np.array_equal(run.losses, other.losses), "the seed draws the data"


def test_checkpoints_start_untrained_and_end_trained(short_run):
    model, run = short_run
    assert run.checkpoint_steps.tolist() == [0, 10, 20, 30]
    assert len(run.checkpoints) == 4 and run.losses.shape == (30,)
    fresh = induction.AttentionOnly(12, 16, 2, seed=0)
    for name, t in fresh.state_dict().items():
        assert torch.equal(run.checkpoints[0][name], t), name
        assert torch.equal(run.checkpoints[-1][name], model.state_dict()[name]), name


def test_history_measures_each_checkpoint_and_restores_the_last(short_run):
    model, run = short_run
    held_out = tokens(n_sequences=8, half=5, vocab=12, seed=9)
    h = induction.history(model, run, held_out, 5)
    assert h.previous_token.shape == h.induction.shape == (4, 2, 2)
    assert h.probe.shape == (4, 2, 2, 9, 9)
    for name, t in model.state_dict().items():
        assert torch.equal(t, run.checkpoints[-1][name]), name
    losses, w = induction.next_token_losses(model, held_out)
    assert h.first_half[-1] == pytest.approx(losses[:, :4].mean())
    assert h.second_half[-1] == pytest.approx(losses[:, 4:].mean())
    np.testing.assert_allclose(h.induction[-1, 1], induction.induction_scores(w[:, 1], 5))
    np.testing.assert_allclose(h.probe[-1], w[0])


def test_next_token_losses_are_the_cross_entropy_of_each_next_token():
    model = induction.AttentionOnly(12, 16, 2, seed=3).double()
    t = tokens(n_sequences=2)
    losses, _ = induction.next_token_losses(model, t)
    with torch.no_grad():
        logits, _ = model(torch.as_tensor(t[:, :-1]))
    logp = torch.log_softmax(logits, -1).numpy()
    expected = -np.take_along_axis(logp, t[:, 1:, None], axis=-1)[..., 0]
    np.testing.assert_allclose(losses, expected, atol=1e-12)


# --- the chapter's glued numbers ---------------------------------------------------

CH16 = "16_induction_head"


@pytest.mark.slow
def test_ch16_comparisons_the_prose_makes():
    from nbrun import glued_float

    def g(key):
        return glued_float(CH16, key)
    assert g("drop_around") > g("drop_before")
    assert g("ind_after") > g("ind_before") and g("prev_after") > g("prev_before")
    assert g("first_end") > g("ln_vocab") > g("floor_first")
    assert g("prev_best") > g("prev_second") and g("ind_best") > 0.5
    assert g("ind_gone") < g("ctrl_ind_low") <= g("ctrl_ind_high")
    assert g("loss_gone") > g("ctrl_loss_high") >= g("ctrl_loss_low")
    assert g("second_intact") < g("second_start")
    assert g("gone_copy") > g("mean_copy") and g("mean_copy") < g("mean_first")
    assert g("icl_score") == pytest.approx(g("last_token") - g("first_token"))
    assert g("icl_late") == pytest.approx(g("last_token") - g("first_last"))
    assert g("first_last") > g("first_token") and g("seen_last") > g("seen_first")
    assert g("tok0_last") < g("seen_last")
    # token 10 is certain to be token 0, and the model gives it little
    assert g("tok0_start") < 0.3
    # the first half ends further above the best guess than it starts
    assert g("gap_last") > g("gap_first")
    # the induction heads' scores: the one shown is the highest by a near tie
    assert g("ind_low") > 0.5 and 0 <= g("ind_gap") < 0.1
    # the first half's loss falls without the induction heads (Exercise 49)
    assert g("no_ind_first") < g("mean_first")
    assert g("floor_bayes") > g("floor_first")
    assert g("alone_low") > g("second_intact") > 0 and g("l2_ctrl_high") < g("alone_low")
    assert g("floor_first") == pytest.approx(np.mean(np.log(24 - np.arange(1, 10))))
    # halves of 4 to 10: after t >= 4 new tokens, token 0 comes next with 1 / (11 - t)
    t = np.arange(1, 10)
    bayes = np.log(24 - t) - np.log(1 - np.where(t >= 4, 1 / (11 - t), 0))
    assert g("floor_bayes") == pytest.approx(bayes.mean())


@pytest.mark.slow
def test_ch16_exercise_answers():
    from nbrun import glued_float
    assert glued_float(CH16, "uniform_score") == pytest.approx(
        np.mean(1 / np.arange(11, 20)))
    assert abs(glued_float(CH16, "ind_start") - glued_float(CH16, "uniform_score")) < 0.05
    assert glued_float(CH16, "no_ind_second") > glued_float(CH16, "second_intact") + 1
    assert glued_float(CH16, "no_ind_second") > glued_float(CH16, "alone_high")
    assert glued_float(CH16, "long_ind") < glued_float(CH16, "ind_best")
    assert glued_float(CH16, "long_copy") > glued_float(CH16, "mean_copy")
