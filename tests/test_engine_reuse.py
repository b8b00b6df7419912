"""Shared-prefix reuse, batching and counters of ``surfacelab.engine``.

The reference for every number is a different computation path: the plain (no reuse) path with
reuse switched off, or a full forward of the whole model (``model(ids).logits``) per request.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig,
                          LlamaForCausalLM, PreTrainedTokenizerFast)

from surfacelab import engine
from surfacelab.backends import packing
from surfacelab.backends import transformers as tb
from surfacelab.models import load_lm

CORPUS = [
    "The cat sat on the mat. The dog ate the bone!! Hello there, the answer is: a bathtub.",
    "Which of these is a mammal? the answer is: whale, shark, trout, eel. It rained so we stayed in.",
] * 20

QUESTION = "Which of these animals is a mammal that lives in the sea and the cat sat on the mat"
REQUESTS = [
    *[(QUESTION, f" {o}") for o in ["whale", "shark", "trout", "eel", "a bathtub"]],
    *[(" the answer is:", f" {o}") for o in ["whale", "shark", "trout", "eel", "a bathtub"]],
    (QUESTION + " and the ma", "t"),  # boundary merge: "mat" straddles the join
    (QUESTION + " and the dog", "!!"),
    (QUESTION, " whale"),  # duplicate
    ("", " Hello there"),  # empty context
    ("The dog ate the bone", "!! Hello"),
]


def _tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<bos>", "<eos>", "<pad>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")


def _model(kind: str, vocab: int) -> torch.nn.Module:
    torch.manual_seed(0)
    ids = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}
    if kind.startswith("llama"):
        cfg = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, **ids)
        model = LlamaForCausalLM(cfg)
        if kind == "llama-eager":  # additive-mask attention instead of SDPA
            model.set_attn_implementation("eager")
        return model
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=4, n_positions=256, **ids))
    cfg = Gemma3TextConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=48,
                           layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=30.0,
                           max_position_embeddings=256, **ids)
    return Gemma3ForCausalLM(cfg)


@pytest.fixture(scope="module", params=["llama", "llama-eager", "gpt2", "gemma3"])
def lm(request):
    tok = _tokenizer()
    return load_lm((_model(request.param, len(tok)), tok), device="cpu")


def _run(lm, requests, *, paths=None, **kwargs):
    """``engine.logprobs`` with the shortcut paths limited to ``paths`` ("packed", "kv"; () = plain rows only)."""
    backend = lm.backend
    backend.warm_up()
    saved = backend.pack, backend.kv
    if paths is not None:
        backend.pack, backend.kv = saved[0] and "packed" in paths, saved[1] and "kv" in paths
    try:
        out = engine.logprobs(lm, requests, progress=False, cache=False, **kwargs)
    finally:
        backend.pack, backend.kv = saved
    return out, out.stats


def _full_forward(lm, enc) -> tuple[np.ndarray, np.ndarray]:
    """Log-probs and entropies of the scored tokens from one plain forward of the whole model."""
    with torch.inference_mode():
        logits = lm.model(torch.tensor([enc.input_ids])).logits[0].float()
    logp = torch.log_softmax(logits[enc.start - 1:-1], -1)
    lp = logp.gather(1, torch.tensor(enc.scored_ids)[:, None])[:, 0]
    return lp.numpy(), (-(logp.exp() * logp).sum(1)).numpy()


def _max_diff(a, b) -> float:
    return max(float(np.abs(x.logprob - y.logprob).max()) for x, y in zip(a, b))


def test_reuse_matches_plain_and_full_forward(lm):
    reused, st = _run(lm, REQUESTS)
    assert st.prefix_groups > 0 and st.reused >= 5
    plain, st_plain = _run(lm, REQUESTS, paths=())
    assert st_plain.prefix_groups == 0 and st_plain.reused == 0
    assert st.tokens_forwarded < st_plain.tokens_forwarded
    assert _max_diff(reused, plain) <= 1e-4
    for s in reused:
        lp, ent = _full_forward(lm, s.encoding)
        np.testing.assert_allclose(s.logprob, lp, atol=1e-4)
        np.testing.assert_allclose(s.entropy, ent, atol=1e-4)
        assert (s.greedy == (s.rank == 1)).all()
    assert any(s.encoding.merged for s in reused)


def _occluded(premise: str) -> list[str]:
    """The premise with each word removed in turn (the Why view's occlusion)."""
    words = premise.split()
    return [" ".join(words[:k] + words[k + 1:]) for k in range(len(words))]


def test_nested_rows_forward_the_token_trie_once(lm):
    """Premises with one word removed share their first words with one another at every depth, and each carries
    two options: packed rows forward each distinct prefix once (the requests' token trie), not a flat prefix
    with whole suffixes; every number is a full forward's."""
    requests = [(p, o) for p in _occluded("the cat sat on the mat and the dog ate the bone")
                for o in (" whale", " eel")]
    nested, st = _run(lm, requests)
    assert st.paths == {"packed": len(requests)} and st.tokens_forwarded < st.tokens_needed // 3
    if lm.backend.row_cap >= st.tokens_unique:
        assert st.tokens_forwarded == st.tokens_unique
    for s in nested:
        np.testing.assert_allclose(s.logprob, _full_forward(lm, s.encoding)[0], atol=1e-4)
    row = lm.backend.row_cap
    lm.backend.row_cap = 40  # the trie outgrows a row: segments are cut where they would, each forwards its prefix
    try:
        cut, st_cut = _run(lm, requests)
    finally:
        lm.backend.row_cap = row
    assert st_cut.paths == st.paths
    assert st.tokens_unique < st_cut.tokens_forwarded < st.tokens_needed // 2
    assert _max_diff(cut, nested) <= 1e-4


def test_truncated_requests_match_full_forward():
    tok = _tokenizer()
    lm = load_lm((_model("llama", len(tok)), tok), device="cpu", max_length=12)
    requests = [(QUESTION, f" {o}") for o in ["whale", "shark", "trout", "a bathtub"]]
    reused, _ = _run(lm, requests)
    assert all(s.encoding.truncated for s in reused)
    plain, _ = _run(lm, requests, paths=())
    assert _max_diff(reused, plain) <= 1e-4
    for s in reused:
        np.testing.assert_allclose(s.logprob, _full_forward(lm, s.encoding)[0], atol=1e-4)


@pytest.mark.parametrize("batch_size", [1, 7])
def test_batch_sizes_agree(lm, batch_size):
    auto, _ = _run(lm, REQUESTS)
    fixed, st = _run(lm, REQUESTS, batch_size=batch_size)
    assert _max_diff(auto, fixed) <= 1e-4
    assert all((a.rank == b.rank).all() for a, b in zip(auto, fixed))
    if batch_size == 1:
        assert st.prefix_groups == 0 and st.batches == st.unique


def test_sliding_window_never_packs_past_the_window():
    tok = _tokenizer()
    lm = load_lm((_model("gemma3", len(tok)), tok), device="cpu")
    long_context = " ".join([QUESTION] * 4)  # longer than the 48-token window
    requests = [(long_context, f" {o}") for o in ["whale", "shark", "trout"]]
    out, st = _run(lm, requests)
    assert all(len(s.encoding.input_ids) > lm.model.config.sliding_window for s in out)
    assert "packed" not in st.paths and st.paths["kv"] == 3  # the prefix ran once, on the model's own mask
    for s in out:
        np.testing.assert_allclose(s.logprob, _full_forward(lm, s.encoding)[0], atol=1e-4)


def test_cost_model_keeps_plain_rows_where_reuse_does_not_pay():
    tok = _tokenizer()
    lm = load_lm((_model("llama", len(tok)), tok), device="cpu")
    out, st = _run(lm, [("The dog ate the bone", " so"), ("It rained so we stayed", " in")])
    assert len(out[0].encoding.input_ids) == len(out[1].encoding.input_ids)  # no padding to save either
    assert st.paths == {"plain": 2} and st.prefix_groups == 0  # packing would only add attention
    _, st = _run(lm, [(QUESTION, " whale"), (QUESTION, " shark")])
    assert st.prefix_groups == 1 and st.reused == 2 and st.paths == {"packed": 2}


def test_counters_by_hand():
    tok = _tokenizer()
    lm = load_lm((_model("llama", len(tok)), tok), device="cpu")
    requests = [(QUESTION, " whale"), (QUESTION, " shark"), (QUESTION, " whale")]
    out, st = _run(lm, requests)
    a, b = (s.encoding for s in out[:2])
    common = next(i for i, (x, y) in enumerate(zip(a.input_ids, b.input_ids)) if x != y)
    assert st.requests == 3 and st.unique == 2
    assert st.tokens_needed == len(a.input_ids) - 1 + len(b.input_ids) - 1
    assert st.tokens_unique == (len(a.input_ids) - 1) + (len(b.input_ids) - 1) - common
    # the prefix runs through every shared token; a scored position inside it is projected once
    assert st.tokens_forwarded == st.tokens_unique == st.tokens_padded
    shared_scored = max(0, common - (min(a.start, b.start) - 1))
    assert st.tokens_scored == (len(a.input_ids) - a.start) + (len(b.input_ids) - b.start) - shared_scored
    assert st.redundancy == 1.0
    assert st.as_dict()["redundancy"] == st.redundancy and st.as_dict()["paths"] == {"packed": 2}


def test_oom_backs_off_and_resets(monkeypatch):
    tok = _tokenizer()
    lm = load_lm((_model("llama", len(tok)), tok), device="cpu")
    expected, _ = _run(lm, REQUESTS)
    real_rows, real_make = tb.TransformersBackend._rows, packing.make
    budgets, calls = [], {"n": 0}

    def flaky(self, *args):
        calls["n"] += 1
        if calls["n"] == 1:
            raise torch.OutOfMemoryError("simulated")
        return real_rows(self, *args)

    def record(jobs, **kwargs):
        budgets.append(kwargs["budget"])
        return real_make(jobs, **kwargs)

    monkeypatch.setattr(tb.TransformersBackend, "_rows", flaky)
    monkeypatch.setattr(packing, "make", record)
    monkeypatch.setattr(tb, "TOKEN_BUDGET", {"cpu": 10**6})
    got, st = _run(lm, REQUESTS)
    assert st.oom_backoffs == 1 and budgets[:2] == [10**6, 10**6 // 2]
    assert _max_diff(got, expected) <= 1e-4
    budgets.clear()
    _run(lm, REQUESTS)
    assert budgets[0] == 10**6  # the back-off does not carry over to the next call


@pytest.mark.slow
def test_real_model_reuse_matches_plain(real_lm):
    lm = real_lm
    stem = ("An astronomer observes that a planet rotates faster after a meteorite impact. "
            "Which is the most likely effect?")
    options = [" Planetary density will decrease.", " Planetary years will become longer.",
               " Planetary days will become shorter.", " Planetary gravity will become stronger."]
    requests = [(stem, o) for o in options] + [(" the answer is:", o) for o in options]
    requests += [("The weather today is sunn", "y and warm"), ("Hello", "!! World")]  # boundary merges
    reused, st = _run(lm, requests)
    assert st.prefix_groups >= 1
    plain, _ = _run(lm, requests, paths=())
    assert _max_diff(reused, plain) <= 1e-4
    assert any(s.encoding.merged for s in reused)
    short = load_lm((lm.model, lm.tokenizer), device="cpu", max_length=16)
    t_reused, _ = _run(short, requests[:4])
    t_plain, _ = _run(short, requests[:4], paths=())
    assert all(s.encoding.truncated for s in t_reused)
    assert _max_diff(t_reused, t_plain) <= 1e-4


def _long_prefix_lm():
    tok = _tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                      bos_token_id=0, eos_token_id=1, pad_token_id=2)
    return load_lm((LlamaForCausalLM(cfg), tok), device="cpu")


def _context(lm, n_tokens: int) -> str:
    """A context of exactly ``n_tokens`` tokens (words of the tokenizer's corpus)."""
    words = (" ".join(CORPUS)).split()
    n_words = len(words)
    while len(lm.tokenizer(" ".join(words[i % len(words)] for i in range(n_words)))["input_ids"]) < n_tokens:
        n_words *= 2  # grow geometrically: tokenizing word by word costs minutes at 4000 tokens
    ids = lm.tokenizer(" ".join(words[i % len(words)] for i in range(n_words)))["input_ids"][:n_tokens]
    return lm.tokenizer.decode(ids)


@pytest.mark.parametrize("n_prefix", [300, 1000, 4000])
def test_long_prefix_costs_the_prefix_once(n_prefix):
    lm = _long_prefix_lm()
    context = _context(lm, n_prefix)
    options = [" whale", " shark", " a bathtub", " trout and eel", " the dog", " Hello there", " no", " mat"]
    out, st = _run(lm, [(context, o) for o in options])
    encs = [s.encoding for s in out]
    common = min(next((i for i, (x, y) in enumerate(zip(a.input_ids, encs[0].input_ids)) if x != y), len(a.input_ids))
                 for a in encs[1:])
    suffixes = sum(len(e.input_ids) - 1 - common for e in encs)
    assert common >= n_prefix - 1
    assert st.tokens_forwarded == common + suffixes == st.tokens_unique  # linear in the prefix: it ran once
    assert st.tokens_padded <= common + len(options) * max(len(e.input_ids) - 1 - common for e in encs)
    assert st.prefix_groups == 1 and st.reused == len(options) and st.paths == {"kv": len(options)}
    if n_prefix <= 1000:  # the numbers of a plain forward (the 4000-token case is the same path, only longer)
        for s in out:
            np.testing.assert_allclose(s.logprob, _full_forward(lm, s.encoding)[0], atol=1e-4)


def test_long_prefix_next_token_prompts_share_it():
    """Option-ID prompts that differ only after a long question (letters with many IDs) run it once."""
    lm = _long_prefix_lm()
    context = _context(lm, 600)
    prompts = [f"{context}\nAnswer {i}:" for i in range(30)]
    res = engine.next_token_logprobs(lm, prompts, token_ids=[5, 7], top_k=2)
    st = res.stats
    # one prefix, then each prompt's own tail (a star: tails that share a token or two repeat it)
    assert st.tokens_forwarded <= st.tokens_unique + len(prompts) and st.tokens_forwarded < st.tokens_needed / 10
    with torch.inference_mode():
        for p, r in zip(prompts[:3], res):
            ids = torch.tensor([r.input_ids])
            logp = torch.log_softmax(lm.model(ids).logits[0, -1].float(), -1)
            np.testing.assert_allclose(r.selected, logp[[5, 7]].numpy(), atol=1e-4)


def test_the_plan_takes_the_cheaper_of_nested_and_flat_rows():
    """Nested rows forward the token trie, flat ones fill rows with whole groups: ``packing.make`` builds both at each
    row length and keeps the cheaper, so neither layout ever makes a plan costlier than the other would."""
    rng = np.random.default_rng(0)
    questions = [tuple(rng.integers(3, 400, 30)) for _ in range(20)]
    grouped = [packing.Job(q + tuple(rng.integers(3, 400, 3)), 30) for q in questions for _ in range(5)]
    words = tuple(rng.integers(3, 400, 12))
    occluded = [packing.Job(words[:k] + words[k + 1:] + (o,), 11) for k in range(12) for o in (7, 8)]
    kw = dict(max_requests=None, budget=1 << 14, pack=True, kv=True, row_cap=256, window=None, span=2048)
    for jobs in (grouped, occluded):
        best = packing.cost(packing.make(jobs, **kw), 2048)
        segments = packing.groups(jobs, packing.GROUP_MAX, 1)
        for cap in packing.ROW_CAPS:
            for nested in (True, False):
                layout = packing._layout(jobs, segments, max_requests=None, budget=1 << 14, pack=True, kv=True, cap=cap,
                                      window=None, nested=nested)
                assert best <= packing.cost(layout, 2048)
                assert sorted(m for b in layout for m in b.members) == list(range(len(jobs)))
    forwarded = sum(s.length for b in packing.make(occluded, **kw) for r in b.rows for s in r)
    assert forwarded == packing.unique_prefix_tokens([j.ids for j in occluded])  # the occluded premises' trie, once


def test_shared_prefix_counters_count_only_the_requests_that_share():
    """In one nested segment, two requests share "5 6" and a third shares nothing: one shared prefix, two requests
    on it (not three), and the numbers of a full forward."""
    tok = _tokenizer()
    lm = load_lm((_model("llama", len(tok)), tok), device="cpu")
    jobs = [packing.Job((10, 11, 12), 1), packing.Job((5, 6, 7), 1), packing.Job((5, 6, 8), 1)]
    (seg,) = packing.nest(jobs, [0, 1, 2], 64)
    assert seg.members == [1, 2, 0] and seg.starts() == [0, 2, 0] and seg.length == 7
    stats, got = engine.EngineStats(), {}

    def finish(members, feats, where):
        got.update({m: feats[w] for m, w in zip(members, where)})

    with torch.inference_mode():
        lm.backend._execute(jobs, packing.Batch("packed", [[seg]]), 1 << 12, stats, finish)
        for m, job in enumerate(jobs):
            ref = lm.model.base_model(torch.tensor([job.ids])).last_hidden_state[0, job.first:]
            torch.testing.assert_close(got[m], ref, atol=1e-5, rtol=1e-5)
    assert stats.prefix_groups == 1 and stats.reused == 2 and stats.tokens_forwarded == 7
