"""Tests of surfacelab.pll: masked copies, the three metrics, bounded batches, the disk cache, cancellation,
parity with minicons, BLiMP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from surfacelab import engine, models
from surfacelab.backends import masked as masked_backend
from surfacelab.engine.cache import ScoreCache
from surfacelab.pll import METRICS, pll, pll_blimp, pll_metrics
from surfacelab.tasks import load_blimp

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "benchmarks" / "pll_reference" / "minicons_reference.json"
BLIMP = ROOT / "data" / "eval" / "blimp"

# A WordPiece vocabulary in which six objects split into three pieces each ("so ##uven ##ir").
THREE_PIECE = {"souvenir": ("so", "##uven", "##ir"), "tomato": ("to", "##mat", "##o"),
               "banana": ("ba", "##nan", "##a"), "pancake": ("pan", "##ca", "##ke"),
               "kimono": ("ki", "##mon", "##o"), "potato": ("po", "##ta", "##to")}
WORDS = ["i", "we", "they", "you", "bought", "saw", "sold", "liked", "a", "the", "gift", "book", "hat", "cup",
         "it", "was", "so", "very", "cheap", "nice", "red", ".", ",", "'", "t", "didn", "and", "then", "man"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
STEPS = 300


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models as tmodels, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    pieces = sorted({p for ps in THREE_PIECE.values() for p in ps} - set(WORDS))
    vocab = {t: i for i, t in enumerate(SPECIALS + WORDS + pieces)}
    tok = Tokenizer(tmodels.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def _bert(tokenizer, seed: int = 0, positions: int = 512):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=48, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=96, max_position_embeddings=positions, pad_token_id=tokenizer.pad_token_id)
    return BertForMaskedLM(config).eval()


@pytest.fixture(scope="module")
def toy():
    """An untrained 2-layer BERT with the in-memory WordPiece vocabulary above."""
    tok = _tokenizer()
    return models.load_mlm((_bert(tok), tok), device="cpu")


@pytest.fixture(scope="module")
def trained():
    """The toy BERT trained for a few seconds on "<subject> <verb> a <object> ." sentences.

    Six objects are three-piece words, so with the later pieces visible the first piece is certain
    (original PLL), and with them masked it is one of six (word_l2r).
    """
    return _train(STEPS)


def _train(steps: int) -> models.MLM:
    tok = _tokenizer()
    model = _bert(tok, seed=1, positions=16)
    objects = ["gift", "book", "hat", "cup", *THREE_PIECE]
    corpus = [f"{s} {v} a {o} ." for s in ["i", "they"] for v in ["bought", "liked"] for o in objects]
    enc = tok(corpus, padding=True, return_tensors="pt")
    ids, attn = enc["input_ids"], enc["attention_mask"]
    real = (attn == 1) & (ids != tok.cls_token_id) & (ids != tok.sep_token_id)
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny ops: one thread is faster, and kinder to a shared machine
    for _ in range(steps):
        masked = real & (torch.rand(ids.shape, generator=gen) < 0.35)
        inp = ids.masked_fill(masked, tok.mask_token_id)
        labels = ids.masked_fill(~masked, -100)
        loss = model(input_ids=inp, attention_mask=attn, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.set_num_threads(threads)
    model.eval()
    return models.load_mlm((model, tok), device="cpu")


SENTENCES = ["I bought a souvenir.", "We saw a tomato, didn't we?", "The man sold a banana and a kimono.",
             "It was red."]


# --- masked copies and the three metrics -----------------------------------------------------------

def test_souvenir_first_piece_scores_much_lower_under_word_l2r(trained):
    rows = {m: pll(trained, ["I bought a souvenir."], metric=m).tokens.set_index("subword") for m in METRICS}
    assert list(rows["original"].loc[["so", "##uven", "##ir"], "word"]) == ["souvenir"] * 3
    orig, l2r = rows["original"].loc["so", "logprob"], rows["word_l2r"].loc["so", "logprob"]
    assert orig > -0.5  # the later pieces give the first one away
    assert l2r < orig - 1.0  # with them masked it is one of six three-piece objects (log 6 = 1.8)


def test_ordering_on_average_for_multi_piece_words(trained):
    sents = [f"They liked a {w}." for w in THREE_PIECE]
    words = {m: pll(trained, sents, metric=m).words for m in METRICS}
    multi = words["original"]["n_subwords"] >= 3
    assert multi.sum() == len(THREE_PIECE)
    mean = {m: words[m].loc[multi, "pll"].mean() for m in METRICS}
    assert mean["whole_word"] < mean["word_l2r"] < mean["original"]


def test_masks_follow_the_definitions(toy):
    res = {m: pll(toy, SENTENCES, metric=m).tokens for m in METRICS}
    for m, tokens in res.items():
        for _, r in tokens.iterrows():
            same_word = tokens[(tokens.sentence_idx == r.sentence_idx) & (tokens.word_idx == r.word_idx)]
            later = tuple(p for p in same_word.position if p >= r.position)
            expected = {"original": (r.position,), "word_l2r": later, "whole_word": tuple(same_word.position)}[m]
            assert r.masked == expected
    o, l2r, w = (res[m].logprob.to_numpy() for m in METRICS)
    first = (res["original"].subword_idx == 0).to_numpy()
    last = (res["original"].subword_idx == res["original"].n_subwords - 1).to_numpy()
    np.testing.assert_allclose(l2r[first], w[first], atol=1e-5)  # same mask: the whole word
    np.testing.assert_allclose(l2r[last], o[last], atol=1e-5)  # same mask: the token alone
    assert (~last).any()  # multi-piece words are present, so the identities above are not vacuous


def test_metrics_together_equal_metrics_alone_with_fewer_copies(toy):
    together = pll_metrics(toy, SENTENCES, METRICS, cache=False)  # both computed here, not read from the cache
    assert list(together) == list(METRICS)
    alone = {m: pll(toy, SENTENCES, metric=m, cache=False) for m in METRICS}
    for m in METRICS:
        a, t = alone[m].tokens, together[m].tokens
        assert t.drop(columns=["logprob", "rank"]).equals(a.drop(columns=["logprob", "rank"]))  # same masks, order
        assert (t["rank"] - a["rank"]).abs().max() <= 1  # float noise of other batch layouts may split a near-tie
        np.testing.assert_allclose(t.logprob, a.logprob, atol=1e-5)
        np.testing.assert_allclose(together[m].table.pll, alone[m].table.pll, atol=1e-4)
    # a copy shared by metrics runs once: every single-piece word, and word_l2r's first piece
    assert together["original"].stats["copies"] < sum(alone[m].stats["copies"] for m in METRICS)
    tok = alone["original"].tokens
    multi_words = tok[tok.n_subwords > 1].groupby(["sentence_idx", "word_idx"]).ngroups  # whole-word masks
    middle = ((tok.subword_idx >= 1) & (tok.n_subwords - tok.subword_idx >= 2)).sum()  # word_l2r's own masks
    assert together["original"].stats["copies"] == len(tok) + multi_words + middle


def test_no_special_tokens_scored_and_frames_agree(toy):
    res = pll(toy, SENTENCES + [SENTENCES[0]], metric="word_l2r")
    tok = toy.tokenizer
    for i, s in enumerate(res.table.sentence):
        ids = tok(s)["input_ids"]
        got = res.tokens[res.tokens.sentence_idx == i]
        assert list(got.position) == list(range(1, len(ids) - 1))
        assert list(got.token_id) == ids[1:-1]
    sums = res.tokens.groupby("sentence_idx").logprob.sum()
    np.testing.assert_allclose(res.table.pll, sums, rtol=1e-9)
    np.testing.assert_allclose(res.table.pll, [sum(w) for w in res.table.word_pll], rtol=1e-9)
    assert list(res.table.n_words) == list(res.words.groupby("sentence_idx").size())
    assert res.table.pll[0] == res.table.pll[len(SENTENCES)]  # duplicates scored once, reported twice
    souvenir = res.words[(res.words.sentence_idx == 0) & (res.words.word == "souvenir")]
    assert souvenir.n_subwords.item() == 3
    assert res.tokens.loc[res.tokens.word == "souvenir", "char_start"].min() == len("I bought a ")


def test_head_only_at_masked_positions_equals_full_logits(toy, real_mlm):
    for mlm in (toy, real_mlm):
        res = pll(mlm, SENTENCES[:2], metric="word_l2r")
        for sentence, rows in res.tokens.groupby("sentence"):
            ids = torch.tensor([mlm.tokenizer(sentence)["input_ids"]] * len(rows))
            for r, masked in enumerate(rows.masked):
                ids[r, list(masked)] = mlm.mask_id
            with torch.no_grad():  # the model's own forward: full logits at every position
                logits = mlm.model(input_ids=ids).logits[torch.arange(len(rows)), torch.tensor(rows.position.values)]
            logp = torch.log_softmax(logits.float(), -1)
            want = logp[torch.arange(len(rows)), torch.tensor(rows.token_id.values)]
            np.testing.assert_allclose(rows.logprob, want.numpy(), atol=1e-5)
            assert list(rows["rank"]) == ((logp > want[:, None]).sum(1) + 1).tolist()


def test_batch_size_invariance(toy):
    ref = pll(toy, SENTENCES, metric="word_l2r", cache=False).tokens.logprob.to_numpy()
    for bs in (1, 3, 64):
        got = pll(toy, SENTENCES, metric="word_l2r", batch_size=bs, cache=False)
        np.testing.assert_allclose(got.tokens.logprob.to_numpy(), ref, atol=1e-5)
        assert got.stats["max_rows"] <= bs


def test_long_input_runs_in_bounded_batches(toy):
    sentence = " ".join((["i", "bought", "a", "red", "hat", "and", "then"] * 60)[:400]) + " ."
    shapes = []
    hook = toy.model.base_model.register_forward_pre_hook(lambda _, args, kwargs: shapes.append(
        tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    try:
        res = pll(toy, [sentence], metric="original", progress=False, cache=False)
    finally:
        hook.remove()
    n = len(toy.tokenizer(sentence)["input_ids"])
    assert res.table.n_tokens.item() == n - 2 == 401
    assert len(shapes) > 1
    assert max(r * w for r, w in shapes) <= masked_backend.MASKED_TOKEN_BUDGET["cpu"] < (n - 2) * n  # never all at once
    assert sum(r for r, _ in shapes) == n - 2


def test_conditional_masks_only_the_continuation(toy):
    cond = pll(toy, ["a souvenir."], prefix="I bought", metric="original")
    full = pll(toy, ["I bought a souvenir."], metric="original")
    assert list(cond.tokens.word) == ["a", "souvenir", "souvenir", "souvenir", "."]
    assert cond.tokens.char_start.tolist()[:2] == [0, 2]
    tail = full.tokens[full.tokens.position.isin(cond.tokens.position)]
    np.testing.assert_allclose(cond.tokens.logprob, tail.logprob, atol=1e-6)  # same input, same masks
    assert cond.table.prefix.item() == "I bought"
    assert all(min(m) >= 3 for m in pll(toy, ["a souvenir."], prefix=["I bought"]).tokens.masked)


# --- the disk cache and cancellation ------------------------------------------------------------------

def test_a_second_identical_call_forwards_nothing(toy, tmp_path):
    store = ScoreCache(tmp_path / "scores.sqlite")
    first = pll_metrics(toy, SENTENCES, METRICS, cache=store)
    again = pll_metrics(toy, SENTENCES, METRICS, cache=store)
    assert first["original"].stats["batches"] > 0
    assert again["original"].stats == {**first["original"].stats, "batches": 0, "max_rows": 0, "max_tokens": 0,
                                       "tokens_forwarded": 0}
    for m in METRICS:  # the same numbers, dtypes included
        assert again[m].tokens.equals(first[m].tokens) and again[m].table.equals(first[m].table)
    copies = [masked_backend.MaskedCopy(tuple(toy.tokenizer(s)["input_ids"]), (1,), (1,)) for s in SENTENCES]
    counted = engine.masked_logprobs(toy, copies, cache=store).stats  # the engine's counters say the same
    assert counted.cached == counted.unique == len(SENTENCES) and counted.batches == 0
    # the default cache (``cache=True``) answers a repeated call too
    assert pll(toy, ["they sold a kimono ."]).stats["batches"] == 1
    assert pll(toy, ["they sold a kimono ."]).stats["batches"] == 0


def test_cancelled_between_batches_keeps_only_the_finished_ones(toy, tmp_path):
    store = ScoreCache(tmp_path / "scores.sqlite")
    full = pll(toy, SENTENCES, metric="original", batch_size=2, cache=False)
    checks = []
    with pytest.raises(engine.Cancelled), engine.cancelled_when(lambda: checks.append(1) or len(checks) > 2):
        pll(toy, SENTENCES, metric="original", batch_size=2, cache=store)
    assert len(checks) == 3  # checked before each batch: two ran, the third was stopped
    rerun = pll(toy, SENTENCES, metric="original", batch_size=2, cache=store)
    # the two finished batches (two copies of the longest sentence each) came from the cache, nothing else did
    assert rerun.stats["tokens_forwarded"] == full.stats["tokens_forwarded"] - 2 * full.stats["max_tokens"]
    np.testing.assert_allclose(rerun.tokens.logprob, full.tokens.logprob, atol=1e-6)
    assert (rerun.tokens["rank"] == full.tokens["rank"]).all()


# --- bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, err, match", [
    ({"sentences": ["fine", ""]}, ValueError, r"sentences\[1\]"),
    ({"sentences": ["  "]}, ValueError, r"sentences\[0\]"),
    ({"sentences": []}, ValueError, "sentences"),
    ({"sentences": [3]}, TypeError, r"sentences\[0\]"),
    ({"sentences": ["a"], "metric": "l2r"}, ValueError, "metric"),
    ({"sentences": ["a"], "batch_size": 0}, ValueError, "batch_size"),
    ({"sentences": ["a", "b"], "prefix": ["x"]}, ValueError, "prefix"),
    ({"sentences": ["a"], "prefix": 3}, TypeError, "prefix"),
])
def test_bad_input(toy, kwargs, err, match):
    with pytest.raises(err, match=match):
        pll(toy, **kwargs)


def test_too_long_for_the_window_is_an_error(toy):
    short = models.load_mlm((toy.model, toy.tokenizer), device="cpu", max_length=8)
    assert pll(short, ["i bought a red hat ."]).table.n_tokens.item() == 6  # 8 with [CLS]/[SEP] fits
    with pytest.raises(ValueError, match=r"sentences\[1\].*window of 8"):
        pll(short, ["i bought a hat .", "i bought a very red hat ."])


def test_causal_lm_is_rejected(tiny_lm):
    with pytest.raises(TypeError, match="mlm"):
        pll(tiny_lm, ["a"])


# --- labels travel with results ----------------------------------------------------------------------

def test_retrieval_note_travels(real_mlm):
    res = pll(real_mlm, ["I bought a souvenir."])
    assert res.model == "splade-tiny" and res.note == real_mlm.note and "retriev" in res.note
    assert "retriev" in repr(res)


# --- parity with minicons --------------------------------------------------------------------------

def _reference_model(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks" / "pll_reference"))
    import tiny_bert

    if name == "splade-tiny":
        return models.load_mlm("splade-tiny", device="cpu"), None
    model = tiny_bert.build_model()
    return models.load_mlm((model, tiny_bert.build_tokenizer()), device="cpu"), tiny_bert.weights_digest(model)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["splade-tiny", "tiny-random-bert"])
def test_parity_with_minicons(name):
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    entry = ref["models"][name]
    mlm, digest = _reference_model(name)
    if digest is not None:
        assert digest == entry["weights_sha256"], "tiny_bert.py no longer rebuilds the reference weights"
    assert len(ref["sentences"]) >= 200
    for theirs, ours in [("original", "original"), ("within_word_l2r", "word_l2r")]:
        got = pll(mlm, ref["sentences"], metric=ours, progress=False).scores
        assert np.abs(got - np.array(entry[theirs])).max() < 1e-3


@pytest.mark.slow
def test_ordering_on_average_splade(real_mlm):
    sents = json.loads(REFERENCE.read_text(encoding="utf-8"))["sentences"]
    words = {m: pll(real_mlm, sents, metric=m, progress=False).words for m in METRICS}
    multi = words["original"]["n_subwords"] >= 2
    assert multi.sum() > 50
    mean = {m: words[m].loc[multi, "pll"].mean() for m in METRICS}
    assert mean["whole_word"] <= mean["word_l2r"] <= mean["original"]


# --- BLiMP ------------------------------------------------------------------------------------------

def _write_blimp(folder: Path) -> None:
    recs = {
        "toy_agreement": [("I bought a hat.", "I bought a hats.", "morphology"),
                          ("We saw a cup.", "We saw a cups.", "morphology")],
        "toy_order": [("It was red.", "Red it was was.", "syntax"),
                      ("They liked a book.", "Liked they a book.", "syntax"),
                      ("You sold a gift.", "You a gift sold.", "syntax")],
    }
    folder.mkdir()
    for uid, pairs in recs.items():
        lines = [json.dumps({"sentence_good": g, "sentence_bad": b, "field": f, "linguistics_term": "toy",
                             "UID": uid, "pairID": str(i)}) for i, (g, b, f) in enumerate(pairs)]
        (folder / f"{uid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_blimp_accuracy_matches_direct_scores(toy, tmp_path):
    _write_blimp(tmp_path / "blimp")
    res = pll_blimp(toy, tmp_path, metrics=("original", "word_l2r"), progress=False)
    data = load_blimp(tmp_path / "blimp")
    for metric in ("original", "word_l2r"):
        good = pll(toy, list(data.sentence_good), metric=metric).scores
        bad = pll(toy, list(data.sentence_bad), metric=metric).scores
        correct = good > bad
        par = res.paradigms[res.paradigms.metric == metric].set_index("paradigm").accuracy
        assert par["toy_agreement"] == pytest.approx(correct[:2].mean())
        assert par["toy_order"] == pytest.approx(correct[2:].mean())
        overall = res.overall.set_index("metric").accuracy[metric]
        assert overall == pytest.approx((correct[:2].mean() + correct[2:].mean()) / 2)
        assert res.summary().loc["syntax", metric] == pytest.approx(correct[2:].mean())
    assert list(res.summary().columns) == ["original", "word_l2r"]
    assert len(pll_blimp(toy, tmp_path / "blimp", metrics="whole_word", limit=1).pairs) == 2


def test_blimp_bad_input(toy, tmp_path):
    _write_blimp(tmp_path / "blimp")
    with pytest.raises(ValueError, match="paradigms.*toy_order"):
        pll_blimp(toy, tmp_path, paradigms=["toy_ordr"])
    with pytest.raises(ValueError, match="limit"):
        pll_blimp(toy, tmp_path, limit=0)
    with pytest.raises(ValueError, match="metric"):
        pll_blimp(toy, tmp_path, metrics=("nope",))
    with pytest.raises(ValueError, match="data_dir"):
        pll_blimp(toy, tmp_path / "missing")


def test_blimp_real_data_fields(real_mlm):
    res = pll_blimp(real_mlm, BLIMP, paradigms=["anaphor_gender_agreement", "npi_present_1", "principle_A_case_2"],
                    limit=3, metrics=("word_l2r",), progress=False)
    # principle_A_case_2 spells its field "syntax/semantics", the other 13 such paradigms "syntax_semantics"
    assert set(res.fields.field) == {"morphology", "semantics", "syntax_semantics"}
    assert res.overall.n.item() == 9 and res.note == real_mlm.note
    assert isinstance(res.summary(), pd.DataFrame)


def test_out_of_memory_halves_the_budget_and_gives_the_same_scores(tiny_mlm, monkeypatch):
    sents = ["The souvenir was cheap.", "A cat sat on the mat; the dog barked."]
    want = pll(tiny_mlm, sents, metric="original", cache=False).tokens
    real, calls, fail = masked_backend.MaskedBackend.forward, [], [True]

    def flaky(self, ids, *a, **k):
        calls.append(ids.shape[0])
        if fail[0]:
            fail[0] = False
            raise torch.OutOfMemoryError("simulated")
        return real(self, ids, *a, **k)

    monkeypatch.setattr(masked_backend.MaskedBackend, "forward", flaky)
    monkeypatch.setattr(masked_backend, "MASKED_TOKEN_BUDGET", {"cpu": 120})  # batches of a few copies
    got = pll(tiny_mlm, sents, metric="original", cache=False).tokens
    assert calls[1] < calls[0]  # the failed batch was planned again, smaller
    np.testing.assert_allclose(got.logprob, want.logprob, atol=1e-6)
    fail[0] = True
    with pytest.raises(torch.OutOfMemoryError):  # fixed rows: nothing to shrink
        pll(tiny_mlm, sents, metric="original", batch_size=4, cache=False)


def test_a_pll_run_fingerprints_the_weights_as_they_are_then():
    from tiny_models import tiny_masked

    mlm = models.load_mlm(tiny_masked(), device="cpu")
    loaded = mlm.fingerprint
    with torch.no_grad():  # ablate MLP neuron 5 in every layer: its row of the MLP's input projection
        for layer in mlm.model.bert.encoder.layer:
            layer.intermediate.dense.weight[5] = 0
    pll(mlm, ["the cat sat on the mat."], progress=False)
    assert mlm.fingerprint != loaded
