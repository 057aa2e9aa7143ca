"""TinyGPT.from_gpt2 computes what Hugging Face's GPT2LMHeadModel computes.

The reference is transformers' own GPT-2 (a pinned test dependency; the test
fails, not skips, without it), built from a small random GPT2Config, so no
weights are downloaded: logits and attention weights equal in float64 to
rounding, and greedy generation equal with attnbook's KV cache, with
transformers' generate and with a plain loop over the full forward.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"              # nothing is downloaded, ever
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest
import torch
import transformers

from attnbook.lm import generate
from attnbook.nn import TinyGPT

VOCAB, N_POSITIONS = 50, 16
ATOL = 1e-10                                   # float64 rounding, with room to spare


def gpt2(n_layer=2, n_head=4, n_embd=32, seed=0, n_positions=N_POSITIONS,
         **config) -> transformers.GPT2LMHeadModel:
    """A float64 GPT-2 with random weights, large enough (std 0.3) that greedy
    decoding does not just repeat one token."""
    config = transformers.GPT2Config(
        n_layer=n_layer, n_head=n_head, n_embd=n_embd, vocab_size=VOCAB,
        n_positions=n_positions, initializer_range=0.3, bos_token_id=None,
        eos_token_id=None, pad_token_id=None, **config)
    torch.manual_seed(seed)
    return transformers.GPT2LMHeadModel(config).double().eval()


@pytest.fixture(scope="module")
def pair():
    hf = gpt2()
    return hf, TinyGPT.from_gpt2(hf.state_dict(), n_heads=4)


def test_transformers_is_the_pinned_version():
    pins = (Path(__file__).parents[1] / "requirements.txt").read_text()
    assert f"transformers=={transformers.__version__} " in pins


def test_the_loaded_model_has_gpt2s_sizes_and_a_tied_readout(pair):
    hf, model = pair
    assert (model.vocab, model.max_len, len(model.blocks)) == (VOCAB, N_POSITIONS, 2)
    assert model.head.weight is model.tok_emb.weight
    assert model.tok_emb.weight.dtype == torch.float64 and not model.training
    ours = sum(p.numel() for p in model.parameters())
    assert ours == sum(p.numel() for p in hf.parameters())


@pytest.mark.parametrize("batch, n", [(1, 1), (3, 7), (2, N_POSITIONS)])
def test_logits_equal_transformers_gpt2(pair, batch, n):
    hf, model = pair
    idx = torch.randint(0, VOCAB, (batch, n), generator=torch.Generator().manual_seed(n))
    with torch.no_grad():
        theirs = hf(idx).logits                                    # (batch, n, vocab)
        ours, _ = model(idx)
    assert theirs.dtype == ours.dtype == torch.float64
    torch.testing.assert_close(ours, theirs, rtol=0, atol=ATOL)


def test_attention_weights_equal_transformers_gpt2(pair):
    hf, model = pair
    hf.set_attn_implementation("eager")        # the implementation that returns weights
    try:
        idx = torch.randint(0, VOCAB, (2, 12), generator=torch.Generator().manual_seed(5))
        with torch.no_grad():
            theirs = hf(idx, output_attentions=True).attentions    # per layer
            _, ours = model(idx)
    finally:
        hf.set_attn_implementation("sdpa")
    assert len(ours) == len(theirs) == 2
    for w, ref in zip(ours, theirs, strict=True):
        torch.testing.assert_close(w, ref, rtol=0, atol=ATOL)      # (batch, h, n, n)


def greedy_without_cache(model, prompt, n_new):
    """Greedy decoding by a plain loop: the full forward over the whole sequence
    at every step, no cache, no padding."""
    seq = list(prompt)
    with torch.no_grad():
        for _ in range(n_new):
            logits, _ = model(torch.tensor([seq]))                 # (1, n, vocab)
            seq.append(int(logits[0, -1].argmax()))
    return seq[len(prompt):]


def test_greedy_generation_equals_transformers_with_and_without_the_cache(pair):
    hf, model = pair
    g = torch.Generator().manual_seed(1)
    prompts = [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in (5, 2, 8)]
    n_new = N_POSITIONS - 8
    cached = generate(model, prompts, n_new, temperature=0)        # (3, n_new), KV cache
    for row, prompt in enumerate(prompts):
        idx = torch.tensor([prompt])
        theirs = hf.generate(idx, attention_mask=torch.ones_like(idx), do_sample=False,
                             max_new_tokens=n_new)[0, len(prompt):]
        assert cached[row].tolist() == theirs.tolist()
        assert greedy_without_cache(model, prompt, n_new) == theirs.tolist()
    assert len(set(cached.flatten().tolist())) >= 4    # the test compares real choices


def test_batched_left_padded_generation_equals_transformers(pair):
    hf, model = pair
    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(0, VOCAB, (n,), generator=g).tolist() for n in (3, 8, 1)]
    n = max(map(len, prompts))
    idx = torch.tensor([[0] * (n - len(p)) + p for p in prompts])  # (3, n), left padded
    real = torch.tensor([[0] * (n - len(p)) + [1] * len(p) for p in prompts])
    theirs = hf.generate(idx, attention_mask=real, do_sample=False, max_new_tokens=6)
    ours = generate(model, prompts, 6, temperature=0)
    assert ours.tolist() == theirs[:, n:].tolist()


@pytest.mark.parametrize("n_layer, n_head, n_embd", [(1, 1, 8), (3, 2, 16), (2, 8, 64)])
def test_other_sizes_load_and_agree(n_layer, n_head, n_embd):
    hf = gpt2(n_layer, n_head, n_embd, seed=n_layer)
    model = TinyGPT.from_gpt2(hf.state_dict(), n_heads=n_head)
    idx = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(idx)[0], hf(idx).logits, rtol=0, atol=ATOL)


def test_an_untied_checkpoint_gets_an_untied_readout():
    hf = gpt2(tie_word_embeddings=False)
    sd = hf.state_dict()
    assert not torch.equal(sd["lm_head.weight"], sd["transformer.wte.weight"])
    model = TinyGPT.from_gpt2(sd, n_heads=4)
    assert model.head.weight is not model.tok_emb.weight
    idx = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(idx)[0], hf(idx).logits, rtol=0, atol=ATOL)


def test_gpt2models_state_dict_without_the_prefix_loads_the_same_model(pair):
    hf, model = pair
    bare = TinyGPT.from_gpt2(hf.transformer.state_dict(), n_heads=4)  # 'wte.weight', ...
    assert bare.head.weight is bare.tok_emb.weight
    idx = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(bare(idx)[0], model(idx)[0])


def test_float32_checkpoints_give_a_float32_model():
    hf = gpt2().float()
    model = TinyGPT.from_gpt2(hf.state_dict(), n_heads=4)
    assert model.tok_emb.weight.dtype == torch.float32
    idx = torch.randint(0, VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(idx)[0], hf(idx).logits, rtol=0, atol=1e-4)


def test_loading_copies_the_weights_and_leaves_the_checkpoint_alone(pair):
    hf, model = pair
    before = {k: v.clone() for k, v in hf.state_dict().items()}
    with torch.no_grad():
        model.blocks[0].attn.qkv.weight.add_(1.0)
    try:
        for k, v in hf.state_dict().items():
            assert torch.equal(v, before[k]), k
    finally:
        with torch.no_grad():
            model.blocks[0].attn.qkv.weight.sub_(1.0)


def chapter_code(heading: str = "## GPT-2 itself") -> list[str]:
    """The python blocks of chapter 15's section on GPT-2, as printed (not run
    at build time: they download GPT-2)."""
    path = Path(__file__).parents[1] / "chapters" / "15_tiny_language_model.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    (text,) = [src for c in cells if c["cell_type"] == "markdown"
               and (src := "".join(c["source"])).startswith(heading)]
    return re.findall(r"```python\n(.*?)```", text, re.S)


class StubTokenizer:
    """Characters as token ids below the small model's vocab."""
    def encode(self, text):
        return [ord(ch) % VOCAB for ch in text]

    def decode(self, ids):
        return "".join(chr(65 + i % 26) for i in ids)


def test_the_chapters_gpt2_code_runs_as_printed_on_a_small_gpt2(monkeypatch, capsys):
    """Chapter 15's code with from_pretrained answered by a small random GPT-2
    (the names it uses exist in the pinned transformers; nothing is fetched)."""
    hf = gpt2(n_layer=2, n_head=4, n_embd=32, n_positions=128).float()
    monkeypatch.setattr(transformers.GPT2LMHeadModel, "from_pretrained",
                        lambda name: hf if name == "gpt2" else None)
    monkeypatch.setattr(transformers.GPT2Tokenizer, "from_pretrained",
                        lambda name: StubTokenizer() if name == "gpt2" else None)
    load, measure = chapter_code()
    ns = {}
    exec(load, ns)
    assert ns["gpt2"].max_len == 128 and ns["new"].shape == (1, 10)
    printed = capsys.readouterr().out.split()                   # vocab, heads, context
    assert printed[:1] == [str(ns["gpt2"].vocab)] and printed[-1] == "128", printed
    exec(measure, ns)
    rows = capsys.readouterr().out.strip().splitlines()
    assert [r.split()[0] for r in rows] == ["0", "1"]           # a line per layer
    scores = [float(x) for r in rows for x in r.replace("[", " ").replace("]", " ").split()[1:]]
    assert len(scores) == 2 * 2 * 4 and all(0 <= s <= 1 for s in scores)


@pytest.mark.parametrize("impl", [None, "eager"])   # None: the default
def test_chapter_12s_account_of_transformers_masks(impl):
    """Chapter 12: in the pinned transformers GPT2Attention has no _attn and
    no mask buffer; with the default sdpa a query whose every key is masked
    (left padding) gets a zero output, as attnbook's layer does, while the
    eager option adds finfo.min, so that query averages the values."""
    from transformers.models.gpt2 import modeling_gpt2

    assert not hasattr(modeling_gpt2.GPT2Attention, "_attn")
    chosen = {} if impl is None else {"attn_implementation": impl}
    hf = gpt2(n_layer=1, **chosen)
    assert hf.config._attn_implementation == (impl or "sdpa")
    assert not any(n.endswith("attn.bias") for n, _ in hf.named_buffers())
    seen = {}
    hf.transformer.h[0].attn.c_proj.register_forward_hook(
        lambda module, args, out: seen.setdefault("heads", args[0]))
    ids, keep = torch.tensor([[3, 4, 5, 6]]), torch.tensor([[0, 0, 1, 1]])
    with torch.no_grad():
        hf(input_ids=ids, attention_mask=keep)
    padded = seen["heads"][0, 0]                 # query 0: only padding to see
    assert torch.isfinite(padded).all()
    assert (padded == 0).all() == (impl is None)
