"""The architecture matrix: on every causal family transformers can build from a tiny config, the engine's
plans (packed rows, the kv prefix path, plain rows) give the numbers of a plain unbatched forward.

Each family (``arch_zoo``) scores ~40 options under a context longer than its local window, ~40
under a short one, and a few unrelated requests; the reference is ``model(input_ids).logits`` of
each whole sequence alone. A plan that ignored a window, built ALiBi over packed coordinates or let a
row outgrow a mask buffer would be off by 0.05-0.5 nats here (the defects this matrix was written for).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import arch_zoo
from surfacelab import engine, load_lm
from test_engine_reuse import _tokenizer

WORDS = "the cat sat on the mat and the dog ate the bone while it rained so we stayed in".split()
ALIBI = {"bloom", "falcon_alibi", "mpt"}
WINDOWED = {"gpt_neo", "mistral", "qwen2", "gemma2", "gemma3", "phi3", "starcoder2", "cohere2"}
NOT_ATTENTION = {"mamba"}


def _requests() -> list[tuple[str, str]]:
    rng = random.Random(0)
    long_context = " ".join(rng.choice(WORDS) for _ in range(40))
    options: dict[str, None] = {}
    while len(options) < 40:
        options.setdefault(" " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))))
    return ([(long_context, o) for o in options] + [("Which of these animals is a mammal", o) for o in options]
            + [("", " hello there"), ("The dog ate the bone", "!! Hello"), (long_context + " and the ma", "t")])


REQUESTS = _requests()


@pytest.fixture(scope="module")
def tokenizer():
    return _tokenizer()


def _reference(model, enc) -> np.ndarray:
    """Log-probs of the scored tokens from one unbatched forward of the whole sequence."""
    with torch.inference_mode():
        logits = model(torch.tensor([enc.input_ids])).logits[0].float()
    logp = torch.log_softmax(logits[enc.start - 1:-1], -1)
    return logp.gather(1, torch.tensor(enc.scored_ids)[:, None])[:, 0].numpy()


def _check(results, reference: dict) -> None:
    for s in results:
        ref = reference[s.encoding.key]
        assert np.abs(s.logprob - ref).max() <= 1e-4, (s.request, s.logprob, ref)
        assert abs(s.total - float(ref.astype(np.float64).sum())) <= 1e-4


@pytest.mark.parametrize("family", list(arch_zoo.FAMILIES))
def test_every_plan_matches_a_plain_forward(family, tokenizer, monkeypatch):
    model = arch_zoo.build(family, len(tokenizer))
    lm = load_lm((model, tokenizer), device="cpu")
    auto = engine.logprobs(lm, REQUESTS, cache=False, progress=False)
    reference = {s.encoding.key: _reference(model, s.encoding) for s in auto}
    long_enc = auto[0].encoding
    assert len(long_enc.input_ids) > arch_zoo.WINDOW  # the context outgrows every local window
    _check(auto, reference)
    paths, rule = auto.stats.paths, auto.stats.rule
    if family in ALIBI:
        assert "packed" not in paths and "ALiBi" in rule and paths.get("kv", 0) >= 40
    elif family in NOT_ATTENTION:
        assert paths == {"plain": auto.stats.unique}
    elif family in WINDOWED:
        assert paths.get("kv", 0) >= 40  # the long-context options: never packed past the window
    else:
        assert paths == {"packed": auto.stats.unique} and "packed rows" in rule
        assert auto.stats.tokens_forwarded == auto.stats.tokens_unique  # nested rows: the requests' token trie
    _check(engine.logprobs(lm, REQUESTS, batch_size=1, cache=False, progress=False), reference)
    if lm.backend.kv:  # every shared prefix through the kv path, whatever the rule prefers
        monkeypatch.setattr(lm.backend, "pack", False)
        only_kv = engine.logprobs(lm, REQUESTS, cache=False, progress=False)
        assert only_kv.stats.paths.get("kv", 0) >= 80
        _check(only_kv, reference)


@pytest.mark.parametrize("family", list(arch_zoo.FAMILIES))
def test_a_recalled_next_token_distribution_is_a_plain_forwards_and_a_cancel_stops_any_family(family, tokenizer):
    """After scoring a question's options (packed rows, or the kv path past a window), the next token after each
    context is answered from that pass; a cancelled forward stops at the family's first block."""
    model = arch_zoo.build(family, len(tokenizer))
    lm = load_lm((model, tokenizer), device="cpu")
    long_context, short = REQUESTS[0][0], REQUESTS[40][0]
    engine.logprobs(lm, [r for r in REQUESTS if r[0] in (long_context, short)][::4], cache=False, progress=False)
    ids = [5, 17, 40]
    got = engine.next_token_logprobs(lm, [long_context, short], token_ids=ids, top_k=3, cache=True)
    assert got.stats.paths == {"recalled": 2}
    for r in got:
        with torch.inference_mode():
            ref = torch.log_softmax(model(torch.tensor([list(r.input_ids)])).logits[0, -1].float(), -1).numpy()
        assert np.abs(r.selected - ref[ids]).max() <= 1e-4, family
        assert np.abs(r.top_logprobs - np.sort(ref)[::-1][:3]).max() <= 1e-4, family
    checks = []
    with pytest.raises(engine.Cancelled), engine.cancelled_when(lambda: checks.append(1) or len(checks) > 1):
        engine.logprobs(lm, [("the dog ate the", " bone")], cache=False, progress=False)
    assert len(checks) == 2  # the batch's check, then the first block's


def test_alibi_and_windows_are_read_from_the_config():
    from surfacelab.backends import arch

    tok_vocab = 64
    for family in arch_zoo.FAMILIES:
        t = arch.traits(arch_zoo.build(family, tok_vocab))
        assert t.pack == (family not in ALIBI | NOT_ATTENTION), family
        assert (t.window == arch_zoo.WINDOW) == (family in WINDOWED), family


def test_packed_rows_never_outgrow_a_small_position_table(tokenizer):
    """GPT-Neo slices a mask buffer of ``max_position_embeddings`` by the row's own coordinates: a packed
    row longer than that crashed ("size of tensor a (64) must match ... (76)")."""
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    torch.manual_seed(0)
    cfg = GPTNeoConfig(vocab_size=len(tokenizer), hidden_size=32, num_layers=2, num_heads=4,
                       max_position_embeddings=64, attention_types=[[["global"], 2]], bos_token_id=0,
                       eos_token_id=1, pad_token_id=2)
    model = GPTNeoForCausalLM(cfg).eval()
    lm = load_lm((model, tokenizer), device="cpu")
    requests = [r for r in REQUESTS if len(r[0]) < 60]  # the short question's 40 options (about 200 tokens)
    got = engine.logprobs(lm, requests, cache=False, progress=False)
    assert got.stats.paths.get("packed", 0) >= 40 and lm.backend.row_cap == 64
    _check(got, {s.encoding.key: _reference(model, s.encoding) for s in got})
