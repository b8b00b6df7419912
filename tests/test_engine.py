"""Engine: parity with an independent full-sequence forward, batch invariance, dedup, cache."""

import os
import sqlite3
import time

import numpy as np
import pytest
import torch

from surfacelab import engine
from surfacelab.engine.cache import ScoreCache

CONTEXTS = [
    "The man took a bath in the",
    "The man took a bath in the ",
    "Question: Which gas do plants absorb? the answer is:",
    "Q: 2+2=\nA:",
    "",
    "She said: «bonjour»",
    "Emoji time 🙂",
    "Line one\nLine two\n",
    "He paid $5.",
    "(" + "a very long premise that keeps going, " * 12 + ")",
]
CONTINUATIONS = [
    " bathtub", "bathtub", " a bathtub.", "\n", "!!", "?", " ...", " 42", " café", " 🙂🙂",
    " Naïve résumé", "\tTab", " xylophone", " the answer is: yes", " so", ", because", " A", "A",
    " über", " 東京",
]
PAIRS = [(c, x) for c in CONTEXTS for x in CONTINUATIONS]


def reference_sum(lm, context, continuation):
    """lm-eval style: rstrip the context, encode context and whole separately, one unbatched forward."""
    n = len(context) - len(context.rstrip())
    if n:
        context, continuation = context[:-n], context[-n:] + continuation
    tok = lm.tokenizer
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    whole = tok(context + continuation, add_special_tokens=False)["input_ids"]
    if not ctx:
        ctx, whole = [lm.prefix_id], [lm.prefix_id] + whole
    prefix_ok = whole[: len(ctx)] == ctx
    ids = torch.tensor([whole])
    with torch.no_grad():
        lp = torch.log_softmax(lm.model(ids).logits.float(), -1)[0]
    total = sum(lp[i - 1, whole[i]].item() for i in range(len(ctx), len(whole)))
    return total, prefix_ok


@pytest.mark.slow
def test_parity_with_full_forward_on_real_model(real_lm):
    assert len(PAIRS) >= 200
    got = engine.logprobs(real_lm, PAIRS, cache=False, progress=False)
    worst, merges, checked = 0.0, 0, 0
    for (ctx, cont), s in zip(PAIRS, got):
        ref, prefix_ok = reference_sum(real_lm, ctx, cont)
        if prefix_ok:
            worst = max(worst, abs(ref - s.total))
            checked += 1
            assert not s.encoding.merged
        else:
            merges += 1
            assert s.encoding.merged and s.flags[0].startswith("boundary_merge")
    assert checked >= 180
    assert merges >= 1  # the set does exercise the boundary rule
    assert worst <= 1e-4, worst


def test_batch_size_and_padding_do_not_change_results(tiny_lm):
    pairs = PAIRS[::3]
    runs = [engine.logprobs(tiny_lm, pairs, batch_size=b, cache=False, progress=False) for b in (1, 7, "auto")]
    for a, b in zip(runs[0], runs[1]):
        np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-4)
    for a, b in zip(runs[0], runs[2]):
        np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-4)
        assert (a.rank == b.rank).all()


def test_results_come_back_in_order_and_duplicates_run_once(tiny_lm):
    pairs = [("a cat", " sat"), ("the dog", " barked at the mailman"), ("a cat", " sat")]
    got = engine.logprobs(tiny_lm, pairs, cache=False, progress=False)
    assert got.stats.unique == 2 and got.stats.requests == 3
    assert [s.request for s in got] == pairs
    assert got[0].total == got[2].total
    single = engine.logprobs(tiny_lm, [pairs[1]], cache=False, progress=False)[0]
    assert abs(single.total - got[1].total) < 1e-5


def test_token_records_are_consistent(tiny_lm):
    s = engine.logprobs(tiny_lm, [("The woman went to the", " store because")], cache=False)[0]
    f = s.frame()
    assert list(f.columns) == ["position", "token", "token_id", "char_start", "char_end", "logprob", "rank",
                               "entropy", "greedy", "flags"]
    assert (f["rank"] >= 1).all() and (f["greedy"] == (f["rank"] == 1)).all()
    vocab = np.log(len(tiny_lm.tokenizer))
    assert ((f["entropy"] > 0) & (f["entropy"] <= vocab + 1e-4)).all()
    assert abs(f["logprob"].sum() - s.total) < 1e-6


def test_cache_hit_is_identical_and_skips_compute(tiny_lm, tmp_path):
    store = ScoreCache(tmp_path / "c.sqlite")
    first = engine.logprobs(tiny_lm, PAIRS[:20], cache=store, progress=False)
    assert first.stats.cached == 0
    second = engine.logprobs(tiny_lm, PAIRS[:20], cache=store, progress=False)
    assert second.stats.cached == second.stats.unique and second.stats.batches == 0
    for a, b in zip(first, second):
        assert (a.logprob == b.logprob).all() and (a.rank == b.rank).all() and (a.entropy == b.entropy).all()


def test_corrupt_cache_file_is_survived(tiny_lm, tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    with pytest.warns(UserWarning, match="unreadable"):
        got = engine.logprobs(tiny_lm, PAIRS[:5], cache=ScoreCache(path), progress=False)
    assert len(got) == 5
    assert list(tmp_path.glob("c.sqlite.corrupt-*"))
    # the fresh file works again
    again = engine.logprobs(tiny_lm, PAIRS[:5], cache=ScoreCache(path), progress=False)
    assert again.stats.cached == again.stats.unique
    assert again[0].total == got[0].total


def test_locked_cache_is_survived(tiny_lm, tmp_path):
    path = tmp_path / "c.sqlite"
    ScoreCache(path).put_many({})  # create it
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.warns(UserWarning, match="locked"):
            got = engine.logprobs(tiny_lm, PAIRS[:3], cache=ScoreCache(path), progress=False)
        assert len(got) == 3
    finally:
        holder.rollback()
        holder.close()


@pytest.mark.parametrize("bad", ["just a string", [("only one",)], [("ctx", 3)], [("ctx", "")]])
def test_bad_requests(tiny_lm, bad):
    with pytest.raises((TypeError, ValueError), match="requests"):
        engine.logprobs(tiny_lm, bad, cache=False)


def test_bad_batch_size(tiny_lm):
    with pytest.raises(ValueError, match="batch_size"):
        engine.logprobs(tiny_lm, PAIRS[:2], batch_size=0, cache=False)


def test_next_token_matches_scored_single_token(tiny_lm):
    s = engine.logprobs(tiny_lm, [("the cat", " sat")], cache=False)[0]
    tid = s.encoding.scored_ids[0]
    nt = engine.next_token_logprobs(tiny_lm, ["the cat"], token_ids=[tid], top_k=3)[0]
    if s.n_tokens == 1:
        assert abs(nt.selected[0] - s.total) < 1e-5
    assert np.all(np.diff(nt.top_logprobs) <= 0)
    assert nt.top_logprobs[0] >= nt.selected[0]


def test_next_token_shares_prefixes_and_matches_one_by_one(tiny_lm):
    stem = "the cat sat on the mat and then the dog ran to the park with"
    prompts = [f"{stem} a {w}" for w in ["ball", "stick", "friend", "cat"]] + ["a short one"]
    tid = [5, 17]
    together = engine.next_token_logprobs(tiny_lm, prompts, token_ids=tid, top_k=4)
    st = together.stats
    assert st.prefix_groups >= 1 and st.tokens_forwarded < st.tokens_needed  # the stem ran once
    for p, nt in zip(prompts, together):
        alone_list = engine.next_token_logprobs(tiny_lm, [p], token_ids=tid, top_k=4)
        alone = alone_list[0]
        assert alone_list.stats.prefix_groups == 0
        np.testing.assert_allclose(nt.selected, alone.selected, atol=1e-4)
        np.testing.assert_allclose(nt.top_logprobs, alone.top_logprobs, atol=1e-4)
        assert abs(nt.entropy - alone.entropy) < 1e-4
        assert nt.input_ids == alone.input_ids and nt.context == p


def test_next_token_cache_answers_repeats(tiny_lm, monkeypatch, tmp_path):
    store = ScoreCache(tmp_path / "c.sqlite")
    first = engine.next_token_logprobs(tiny_lm, ["one", "two", "one"], token_ids=[3, 4], cache=store)
    np.testing.assert_array_equal(first[0].selected, first[2].selected)

    def boom(*a, **k):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(type(tiny_lm.backend), "next_token", boom)
    again = engine.next_token_logprobs(tiny_lm, ["two", "one"], token_ids=[3, 4], cache=store)
    np.testing.assert_array_equal(again[0].selected, first[1].selected)
    assert abs(again[1].entropy - first[0].entropy) < 1e-6
    with pytest.raises(AssertionError, match="cache should have answered"):  # top-k is never cached
        engine.next_token_logprobs(tiny_lm, ["one"], token_ids=[3, 4], top_k=2, cache=store)


def test_next_token_ids_per_context_are_keyed_by_each_prompt_alone(tiny_lm, monkeypatch, tmp_path):
    """One list of ids per prompt: each answer holds its own ids, and its cache entry is found again whatever other
    prompts (another item set) come with it; a large union is asked in groups (prompts x union bounded)."""
    store = ScoreCache(tmp_path / "c.sqlite")
    prompts = ["the cat sat", "a dog ran", "one two three", "the bird"]
    ids = [[3, 9], [5], [7, 3, 11], [12, 4]]
    calls = []
    real = type(tiny_lm.backend).next_token

    def spy(self, prompts, **kw):
        calls.append(len(kw["token_ids"]))
        return real(self, prompts, **kw)

    monkeypatch.setattr(type(tiny_lm.backend), "next_token", spy)
    monkeypatch.setattr(engine, "SELECT_ELEMENTS", 8)  # at most 8 selected log-probs per backend call
    got = engine.next_token_logprobs(tiny_lm, prompts, token_ids=ids, cache=store)
    assert len(calls) > 1 and all(n <= 8 for n in calls)
    union = sorted({t for own in ids for t in own})
    full = engine.next_token_logprobs(tiny_lm, prompts, token_ids=union, cache=False)
    for g, f, own in zip(got, full, ids):
        assert g.selected.shape == (len(own),)
        np.testing.assert_allclose(g.selected, f.selected[[union.index(t) for t in own]], atol=1e-6)
    again = engine.next_token_logprobs(tiny_lm, ["a new prompt", prompts[1], prompts[2]],
                                       token_ids=[[4], ids[1], ids[2]], cache=store)
    assert again.stats.cached == 2
    np.testing.assert_array_equal(again[1].selected, got[1].selected)
    with pytest.raises(ValueError, match="one list per context"):
        engine.next_token_logprobs(tiny_lm, prompts, token_ids=ids[:2])
    with pytest.raises(ValueError, match="not vocabulary ids"):
        engine.next_token_logprobs(tiny_lm, prompts[:2], token_ids=[[3], [10 ** 9]])


def test_derived_numbers_are_cached_exactly_per_payload(tiny_lm, monkeypatch, tmp_path):
    """engine.derived: float64 numbers kept bit for bit, computed once per payload, keyed by model, kind and
    payload; a forward hook on the model switches it off like the rest of the cache."""
    store = ScoreCache(tmp_path / "c.sqlite")
    monkeypatch.setattr(engine, "default_cache", lambda: store)
    asked = []

    def compute(positions):
        asked.append(list(positions))
        return [np.array([np.pi * (k + 1), 1 / 3, np.nan]) for k in positions]

    first, cached = engine.derived(tiny_lm, "test|v1", ["a", "b", "a"], compute)
    assert cached == 0 and asked == [[0, 1]]  # "a" computed once
    np.testing.assert_array_equal(first[2], first[0])
    again, cached = engine.derived(tiny_lm, "test|v1", ["b", "c", "a"], compute)
    assert cached == 2 and asked[-1] == [1]
    np.testing.assert_array_equal(again[0], first[1])  # float64, not float32: every bit kept
    assert again[2][0] == np.pi
    _, cached = engine.derived(tiny_lm, "test|v2", ["a"], compute)
    assert cached == 0  # another kind (code version) never reads them
    handle = tiny_lm.model.register_forward_hook(lambda *a: None)
    try:
        with pytest.warns(UserWarning, match="forward hooks"):
            _, cached = engine.derived(tiny_lm, "test|v1", ["a"], compute)
        assert cached == 0
    finally:
        handle.remove()


def test_top_k_keeps_the_stored_scores_and_matches_next_token(tiny_lm, tmp_path):
    store = ScoreCache(tmp_path / "c.sqlite")
    engine.clear_top_cache()
    plain = engine.logprobs(tiny_lm, PAIRS[:6], cache=store)
    top = engine.logprobs(tiny_lm, PAIRS[:6], cache=store, top_k=3)
    for p, t in zip(plain, top):
        np.testing.assert_array_equal(p.logprob, t.logprob)  # one value per request, whichever pass asked
        assert p.top_ids is None and t.top_ids.shape == t.top_logprobs.shape == (t.n_tokens, 3)
        assert np.all(np.diff(t.top_logprobs, axis=1) <= 0)
        assert np.all((t.rank > 3) | (t.top_ids == np.asarray(t.encoding.scored_ids)[:, None]).any(1))
    nts = engine.next_token_logprobs(tiny_lm, [t.encoding.context for t in top], top_k=3)
    clean = [(t, nt) for t, nt in zip(top, nts) if nt.input_ids == t.encoding.input_ids[:t.encoding.start]]
    assert clean  # the first scored position is the next-token distribution after the context
    for t, nt in clean:
        assert nt.top_ids.tolist() == t.top_ids[0].tolist()
        np.testing.assert_allclose(nt.top_logprobs, t.top_logprobs[0], atol=1e-4)
    with pytest.raises(ValueError, match="top_k"):
        engine.logprobs(tiny_lm, PAIRS[:1], top_k=-1)


_KILLED_MID_CALL = """
import json, os, signal, sys
sys.path.insert(0, sys.argv[3])
from tiny_models import tiny_causal
from surfacelab import engine, load_lm
from surfacelab.backends import transformers as tb
from surfacelab.engine.cache import ScoreCache

tb.TOKEN_BUDGET = {"cpu": 64}  # many small batches
lm = load_lm(tiny_causal(), device="cpu")
store = ScoreCache(sys.argv[1])
commit, seen = store.put_many, []

def put_then_die(rows):
    commit(rows)
    seen.append(len(rows))
    if len(seen) == 3:
        print(sum(seen), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

store.put_many = put_then_die
engine.logprobs(lm, [tuple(p) for p in json.load(open(sys.argv[2]))], cache=store, progress=False)
"""


@pytest.mark.process
def test_sigkill_mid_call_then_rerun_resumes_from_the_cache(tiny_lm, tmp_path, monkeypatch):
    import json
    import subprocess
    import sys
    from pathlib import Path

    from surfacelab.backends import transformers as tb

    pairs = PAIRS[::2]
    (tmp_path / "pairs.json").write_text(json.dumps(pairs))
    path = tmp_path / "c.sqlite"
    child = subprocess.run([sys.executable, "-c", _KILLED_MID_CALL, str(path), str(tmp_path / "pairs.json"),
                            str(Path(__file__).parent)], capture_output=True, text=True, timeout=300)
    assert child.returncode == -9, child.stderr[-2000:]
    committed = int(child.stdout.split()[-1])
    monkeypatch.setattr(tb, "TOKEN_BUDGET", {"cpu": 64})
    whole = engine.logprobs(tiny_lm, pairs, cache=False, progress=False)
    assert 0 < committed < whole.stats.unique and whole.stats.batches > 3
    rerun = engine.logprobs(tiny_lm, pairs, cache=ScoreCache(path), progress=False)
    assert rerun.stats.cached == committed  # the finished batches survived the kill
    assert rerun.stats.unique - rerun.stats.cached == sum(rerun.stats.paths.values())  # only the rest ran
    for a, b in zip(rerun, whole):
        np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-5)
        assert (a.rank == b.rank).all()


def test_top_k_memory_cache_honours_cache_false(tiny_lm, monkeypatch):
    engine.clear_top_cache()
    engine.logprobs(tiny_lm, PAIRS[:3], cache=False, top_k=2, progress=False)
    assert len(engine.memory.TOP_CACHE) == 0  # not written
    engine.logprobs(tiny_lm, PAIRS[:3], top_k=2, progress=False)
    assert len(engine.memory.TOP_CACHE) == 3
    again = engine.logprobs(tiny_lm, PAIRS[:3], cache=False, top_k=2, progress=False)
    assert again.stats.cached == 0 and sum(again.stats.paths.values()) == 3  # not read either


def test_next_token_top_k_is_kept_in_memory_and_read_back_whole(tiny_lm):
    engine.clear_top_cache()
    prompts = ["The man took a", "The cat"]
    first = engine.next_token_logprobs(tiny_lm, prompts, token_ids=[5, 7], top_k=3, cache=True)
    assert first.stats.cached == 0 and len(engine.memory.TOP_CACHE) == 2
    again = engine.next_token_logprobs(tiny_lm, prompts, token_ids=[5, 7], top_k=3, cache=True)
    assert again.stats.cached == 2 and again.stats.tokens_forwarded == 0
    for a, b in zip(first, again):
        assert (a.top_ids == b.top_ids).all() and a.top_tokens == b.top_tokens and a.entropy == b.entropy
        np.testing.assert_array_equal(a.top_logprobs, b.top_logprobs)
        np.testing.assert_array_equal(a.selected, b.selected)
    other = engine.next_token_logprobs(tiny_lm, prompts, token_ids=[5], top_k=3, cache=True)
    assert other.stats.cached == 0  # other token ids: another entry
    off = engine.next_token_logprobs(tiny_lm, prompts, token_ids=[5, 7], top_k=3, cache=False)
    assert off.stats.cached == 0  # cache=False reads nothing


def test_threads_share_the_top_k_cache_and_keep_their_own_stats(tiny_lm, monkeypatch):
    import threading

    monkeypatch.setattr(engine, "TOP_CACHE", engine.memory.TopCache(4))  # small: constant eviction
    errors, counts = [], {}

    def work(k):
        try:
            for i in range(15):
                pairs = PAIRS[(k * 7 + i) % 50:(k * 7 + i) % 50 + 1 + k]
                res = engine.logprobs(tiny_lm, pairs, top_k=2, progress=False)
                assert res.stats.requests == len(pairs) == len(res)
                counts[k] = counts.get(k, 0) + res.stats.requests
        except Exception as err:  # any failure: reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert counts == {k: 15 * (1 + k) for k in range(3)}


def test_token_budget_follows_free_gpu_memory_and_model_size():
    from surfacelab.backends import budget

    from types import SimpleNamespace


    llama_8b = SimpleNamespace(hidden_size=4096, intermediate_size=14336, num_attention_heads=32)
    smol = SimpleNamespace(hidden_size=576, intermediate_size=1536, num_attention_heads=9)
    gib = 1 << 30
    # the CPU keeps its fixed table, whatever the model
    assert budget.token_budget({"cpu": 4096}, torch.device("cpu"), llama_8b) == 4096
    # more free memory, more tokens; a bigger model, fewer tokens per byte
    budgets = [budget.scaled_budget(f * gib, budget.token_bytes(llama_8b)) for f in (1, 8, 40, 60)]
    assert budgets == sorted(budgets) and budgets[0] < budgets[-1]
    per_token = {name: budget.token_bytes(c) for name, c in (("smol", smol), ("llama", llama_8b))}
    assert budget.scaled_budget(40 * gib, per_token["smol"]) > budget.scaled_budget(40 * gib, per_token["llama"])
    # an 8B model with 60 GiB free (an 80 GB card) gets tens of thousands of tokens, not the CPU's 4096 nor millions
    assert 16_000 <= budget.scaled_budget(60 * gib, budget.token_bytes(llama_8b)) <= 131_072
    # a nearly full card still gets a usable floor; a huge one is capped
    assert budget.scaled_budget(0, budget.token_bytes(llama_8b)) == budget.CUDA_BUDGET_BOUNDS[0]
    assert budget.scaled_budget(10**15, budget.token_bytes(smol)) == budget.CUDA_BUDGET_BOUNDS[1]
    # a multimodal config is read through its text config
    wrapped = SimpleNamespace(get_text_config=lambda: smol)
    assert budget.token_bytes(wrapped) == budget.token_bytes(smol)


def test_a_character_in_several_byte_pieces_is_shown_once(tiny_lm):
    """Byte-level BPE splits an emoji into byte pieces whose spans all cover it: the first shows it, the others
    read as the continuation mark (the token view showed the emoji once per byte)."""
    import surfacelab as sl

    r = sl.score(tiny_lm, "I like", [" 🎉 ok", " tea"], cache=False)
    t = r.tokens[(r.tokens["condition"] == "premise") & (r.tokens["option"] == " 🎉 ok")]
    covering = t[(t["char_start"] <= 1) & (t["char_end"] >= 2)]  # every piece that covers the emoji
    assert len(covering) > 1, t  # (the test needs the emoji split)
    assert "".join(t["token"]).count("🎉") == 1
    assert list(covering["token"])[1:] == [engine.results.SAME_CHARACTER] * (len(covering) - 1)
    assert "".join(t["token"]).endswith("ok")


def _plain_next(lm, prompt_ids) -> np.ndarray:
    """The next-token log-softmax after ``prompt_ids`` from one plain forward of the whole model."""
    with torch.inference_mode():
        logits = lm.backend.model(torch.tensor([list(prompt_ids)])).logits[0, -1].float()
    return torch.log_softmax(logits, -1).numpy()


@pytest.fixture
def own_tiny_lm():
    """A tiny LM of this test's own (what a backend remembers is not shared with other tests' threads)."""
    from surfacelab import load_lm
    from tiny_models import tiny_causal

    return load_lm(tiny_causal(), device="cpu")


def test_a_prompt_that_was_a_scored_context_is_recalled_without_a_forward(own_tiny_lm):
    tiny_lm, premise = own_tiny_lm, "the dog sat in the"
    engine.logprobs(tiny_lm, [(premise, o) for o in (" mat", " sun", " cat sat")] + [(" the", " mat")],
                    cache=False, progress=False)
    ids = [3, 40, 99]
    got = engine.next_token_logprobs(tiny_lm, [premise, " the", "the dog ran"], token_ids=ids, top_k=4, cache=True)
    assert got.stats.paths == {"recalled": 2, "plain": 1}
    assert got.stats.tokens_forwarded == len(got[2].input_ids)  # only the prompt no scoring call had
    for r in got:
        ref = _plain_next(tiny_lm, r.input_ids)
        np.testing.assert_allclose(r.selected, ref[ids], atol=1e-5)
        assert r.top_ids.tolist() == np.argsort(-ref, kind="stable")[:4].tolist()
        np.testing.assert_allclose(r.top_logprobs, np.sort(ref)[::-1][:4], atol=1e-5)
        assert abs(r.entropy + float((np.exp(ref) * ref).sum())) < 1e-4
    fresh = engine.next_token_logprobs(tiny_lm, [premise], token_ids=ids, cache=False)
    assert fresh.stats.paths == {"plain": 1}  # cache=False: computed, never recalled


def test_only_a_call_with_a_few_contexts_is_remembered_and_only_the_last_ones(own_tiny_lm):
    from surfacelab.backends.recent import RECENT_CONTEXTS, REMEMBER_MAX_CONTEXTS

    contexts = [f"the bird {'sat ' * k}on the" for k in range(REMEMBER_MAX_CONTEXTS + 1)]  # a dataset-sized call
    engine.logprobs(own_tiny_lm, [(c, " mat") for c in contexts], cache=False, progress=False)
    assert "recalled" not in engine.next_token_logprobs(own_tiny_lm, contexts[:2], token_ids=[3],
                                                        cache=True).stats.paths
    questions = [f"the cat {'ran ' * k}to the" for k in range(RECENT_CONTEXTS + 1)]
    for q in questions:  # one question a call, as the workbench scores them
        engine.logprobs(own_tiny_lm, [(q, " mat"), (q, " sun")], cache=False, progress=False)
    got = engine.next_token_logprobs(own_tiny_lm, [questions[0], questions[1], questions[-1]], token_ids=[3],
                                     cache=True)
    assert got.stats.paths == {"plain": 1, "recalled": 2}  # the oldest one was let go


def test_a_cancelled_forward_stops_between_layers_and_leaves_the_backend_sound(tiny_lm):
    requests = [("the cat ate the", o) for o in (" bone", " mat", " sun")]
    with pytest.raises(engine.Cancelled):
        with engine.cancelled_when(lambda: True):
            engine.logprobs(tiny_lm, requests, cache=False, progress=False)
    seen = []

    def after_the_batch_check() -> bool:  # False before the batch, True at the first layer: stops mid-forward
        seen.append(1)
        return len(seen) > 1

    with pytest.raises(engine.Cancelled), engine.cancelled_when(after_the_batch_check):
        engine.logprobs(tiny_lm, requests, cache=False, progress=False)
    assert len(seen) == 2
    with engine.cancelled_when(lambda: False):  # a check that stays false changes nothing
        kept = engine.logprobs(tiny_lm, requests, cache=False, progress=False)
    for s in kept:
        assert abs(s.total - reference_sum(tiny_lm, *s.request)[0]) <= 1e-4



def test_reporting_counts_the_distinct_requests_done_after_each_batch_on_this_thread_only(tiny_lm, tmp_path):
    import threading

    store = ScoreCache(tmp_path / "scores.sqlite")
    first = [(f"{w} sat on the warm mat by the door of the old house in the town", " today")  # one a row
             for w in ("a cat", "the dog", "my bird", "one fox", "his cow", "an owl")]
    engine.logprobs(tiny_lm, first[:2], cache=store, progress=False)  # two answered by the cache
    seen, elsewhere = [], []
    with engine.reporting(lambda done, total: seen.append((done, total))):
        engine.logprobs(tiny_lm, first + first[:1], batch_size=2, cache=store, progress=False)  # 6 distinct
        thread = threading.Thread(target=lambda: engine.logprobs(tiny_lm, [("a dog", " ran")], cache=False,
                                                                 progress=False))
        thread.start(), thread.join()
    assert seen == [(4, 6), (6, 6)] and not elsewhere  # two rows a batch; the cached two count from the start
    with engine.reporting(lambda done, total: elsewhere.append(done)), engine.reporting(None):
        engine.logprobs(tiny_lm, [("a dog", " sat")], cache=False, progress=False)
    assert not elsewhere  # the inner block reports nothing, and the outer one is back after it
    with engine.reporting(lambda done, total: elsewhere.append(done)):
        engine.logprobs(tiny_lm, [("a dog", " sat")], cache=False, progress=False)
    assert elsewhere == [1]

# ------------------------------------------------------------------ masked copies (PLL's forwards)

def test_masked_copies_run_once_match_a_plain_forward_and_are_cached_by_their_positions(tiny_mlm, tmp_path):
    store = ScoreCache(tmp_path / "scores.sqlite")
    ids = tuple(tiny_mlm.tokenizer("the cat sat on the mat")["input_ids"])
    one, two = engine.MaskedCopy(ids, (2,), (2,)), engine.MaskedCopy(ids, (2, 3), (2, 3))
    first = engine.masked_logprobs(tiny_mlm, [one, two, one], cache=store, progress=False)
    assert (first.stats.requests, first.stats.unique, first.stats.cached) == (3, 2, 0)
    assert first.stats.tokens_forwarded == 2 * len(ids)  # the duplicate ran once
    masked_ids = torch.tensor([ids])
    masked_ids[0, [2, 3]] = tiny_mlm.mask_id
    with torch.no_grad():  # the model's own forward: full logits at every position
        logp = torch.log_softmax(tiny_mlm.model(input_ids=masked_ids).logits.float(), -1)[0]
    want = logp[[2, 3], [ids[2], ids[3]]]
    np.testing.assert_allclose(first[1].logprob, want.numpy(), atol=1e-5)
    assert first[1].rank.tolist() == ((logp[[2, 3]] > want[:, None]).sum(1) + 1).tolist()
    again = engine.masked_logprobs(tiny_mlm, [two, one], cache=store, progress=False)
    assert again.stats.cached == again.stats.unique == 2 and again.stats.batches == 0
    for got, was in zip(again, [first[1], first[0]]):
        assert got.logprob.dtype == np.float32 and got.rank.dtype == np.int64
        assert np.array_equal(got.logprob, was.logprob) and np.array_equal(got.rank, was.rank)
    other = engine.masked_logprobs(tiny_mlm, [engine.MaskedCopy(ids, (2,), (3,))], cache=store, progress=False)
    assert other.stats.cached == 0  # other scored positions: another key


@pytest.mark.parametrize("copies, err, match", [
    ("abc", TypeError, "copies"),
    ([((1, 2, 3), (1,), (1,))], TypeError, r"copies\[0\]"),
    ([engine.MaskedCopy((1, 2, 3), (1,), ())], ValueError, r"copies\[0\]"),
    ([engine.MaskedCopy((1, 2, 3), (1,), (1,)), engine.MaskedCopy((1, 2, 3), (3,), (1,))], ValueError,
     r"copies\[1\]"),
])
def test_masked_copies_bad_input(tiny_mlm, copies, err, match):
    with pytest.raises(err, match=match):
        engine.masked_logprobs(tiny_mlm, copies, cache=False)


# ------------------------------------------------------------------ edited models and forward hooks

REQS = [("the dog sat in the", " mat"), ("the dog sat in the", " sun")]


def _zero_one_neuron_in_every_layer(model, neuron: int = 5) -> None:
    """Ablate one MLP neuron in every layer, in place: its row of the MLP's output projection."""
    with torch.no_grad():
        for block in model.transformer.h:
            block.mlp.c_proj.weight[neuron] = 0


def _watch(store, monkeypatch) -> dict[str, int]:
    """Count the keys ``store`` is asked for and given."""
    seen = {"get_many": 0, "put_many": 0}
    for name in seen:
        def spy(arg, real=getattr(store, name), name=name):
            seen[name] += len(arg)
            return real(arg)
        monkeypatch.setattr(store, name, spy)
    return seen


def _unedited_weights() -> dict:
    from tiny_models import tiny_causal

    return tiny_causal()[0].state_dict()


def test_zeroing_one_mlp_neuron_in_every_layer_is_recomputed_not_served_stale(own_tiny_lm, tmp_path):
    lm, store = own_tiny_lm, ScoreCache(tmp_path / "c.sqlite")
    stale = engine.logprobs(lm, PAIRS[:20], cache=store, progress=False)
    loaded = lm.fingerprint
    _zero_one_neuron_in_every_layer(lm.model)
    got = engine.logprobs(lm, PAIRS[:20], cache=store, progress=False)
    fresh = engine.logprobs(lm, PAIRS[:20], cache=False, progress=False)
    assert lm.fingerprint != loaded and got.stats.cached == 0
    assert [s.total for s in got] == pytest.approx([s.total for s in fresh], abs=1e-6)
    assert max(abs(s.total - t.total) for s, t in zip(got, stale)) > 1e-3


def test_an_in_place_edit_after_load_gives_the_edited_numbers_on_the_next_call(own_tiny_lm, tmp_path):
    lm, store = own_tiny_lm, ScoreCache(tmp_path / "c.sqlite")
    before = engine.logprobs(lm, REQS, cache=store, progress=False)  # a small call: its context is remembered too
    with torch.no_grad():
        lm.model.transformer.h[0].attn.c_attn.weight.mul_(0.5)
    ids = [3, 40, 99]
    nxt = engine.next_token_logprobs(lm, [REQS[0][0]], token_ids=ids, cache=True)
    assert "recalled" not in nxt.stats.paths  # the distribution remembered before the edit is not the model's now
    np.testing.assert_allclose(nxt[0].selected, _plain_next(lm, nxt[0].input_ids)[ids], atol=1e-5)
    after = engine.logprobs(lm, REQS, cache=store, progress=False)
    assert after.stats.cached == 0
    for s, b in zip(after, before):
        assert abs(s.total - reference_sum(lm, *s.request)[0]) <= 1e-4 and abs(s.total - b.total) > 1e-3
    lm.model.load_state_dict(_unedited_weights())  # the loaded weights again: their cached numbers serve
    again = engine.logprobs(lm, REQS, cache=store, progress=False)
    assert again.stats.cached == again.stats.unique and [s.total for s in again] == [s.total for s in before]


def test_a_parameter_replaced_wholesale_is_recomputed(own_tiny_lm, tmp_path):
    lm, store = own_tiny_lm, ScoreCache(tmp_path / "c.sqlite")
    before = engine.logprobs(lm, REQS, cache=store, progress=False)
    mlp = lm.model.transformer.h[0].mlp
    mlp.c_fc.weight = torch.nn.Parameter(torch.randn_like(mlp.c_fc.weight), requires_grad=False)
    after = engine.logprobs(lm, REQS, cache=store, progress=False)
    assert after.stats.cached == 0
    for s, b in zip(after, before):
        assert abs(s.total - reference_sum(lm, *s.request)[0]) <= 1e-4 and abs(s.total - b.total) > 1e-3


def _doubled(model):
    return model.transformer.h[0].mlp


HOOKS = {  # each doubles the output of layer 0's MLP
    "forward": lambda m: _doubled(m).register_forward_hook(lambda mod, args, out: out * 2),
    "with_kwargs": lambda m: _doubled(m).register_forward_hook(lambda mod, args, kwargs, out: out * 2,
                                                               with_kwargs=True),
    "pre": lambda m: _doubled(m).register_forward_pre_hook(lambda mod, args: (args[0] * 2,)),
    "global": lambda m: torch.nn.modules.module.register_module_forward_hook(
        lambda mod, args, out: out * 2 if mod is _doubled(m) else None),
}


@pytest.mark.parametrize("kind", list(HOOKS))
def test_a_forward_hook_switches_the_cache_off_for_that_call(own_tiny_lm, tmp_path, monkeypatch, kind):
    lm, store = own_tiny_lm, ScoreCache(tmp_path / "c.sqlite")
    plain = engine.logprobs(lm, REQS, cache=store, progress=False)
    seen = _watch(store, monkeypatch)
    other = ("a cat sat on the", " mat")  # a context no call has had: a hooked call must not leave it remembered
    handle = HOOKS[kind](lm.model)
    try:
        with pytest.warns(UserWarning, match="forward hooks on the model.*cache is not used for this call") as caught:
            hooked = engine.logprobs(lm, REQS + [other], cache=store, progress=False)
        refs = [reference_sum(lm, *r)[0] for r in REQS + [other]]
    finally:
        handle.remove()
    assert sum("forward hooks" in str(w.message) for w in caught) == 1
    assert seen == {"get_many": 0, "put_many": 0} and hooked.stats.cached == 0
    for s, ref in zip(hooked, refs):
        assert abs(s.total - ref) <= 1e-4
    assert max(abs(s.total - p.total) for s, p in zip(hooked, plain)) > 1e-3
    nxt = engine.next_token_logprobs(lm, [other[0]], token_ids=[3, 40], cache=True)
    np.testing.assert_allclose(nxt[0].selected, _plain_next(lm, nxt[0].input_ids)[[3, 40]], atol=1e-5)
    again = engine.logprobs(lm, REQS, cache=store, progress=False)  # the hook gone: the unhooked numbers, cached
    assert again.stats.cached == again.stats.unique and [s.total for s in again] == [s.total for s in plain]


def test_the_own_cancellation_hook_keeps_the_cache_on_and_any_other_hook_turns_it_off(own_tiny_lm, tmp_path,
                                                                                       recwarn):
    lm, store = own_tiny_lm, ScoreCache(tmp_path / "c.sqlite")
    with engine.cancelled_when(lambda: False):
        engine.logprobs(lm, REQS, cache=store, progress=False)
        again = engine.logprobs(lm, REQS, cache=store, progress=False)
    assert again.stats.cached == again.stats.unique
    assert not [w for w in recwarn if "forward hooks" in str(w.message)]
    handle = lm.model.transformer.h[0].register_forward_pre_hook(lambda mod, args: None)  # a no-op, not surfacelab's
    try:
        with pytest.warns(UserWarning, match="forward hooks on the model"):
            hooked = engine.logprobs(lm, REQS, cache=store, progress=False)
    finally:
        handle.remove()
    assert hooked.stats.cached == 0


# ------------------------------------------------------------------ OpenMP workers of the main thread

def _threads_settle(expected: int) -> int:
    """The process's thread count once it reaches ``expected`` (released workers exit on their own), or after 2 s."""
    end = time.monotonic() + 2.0
    while len(os.listdir("/proc/self/task")) != expected and time.monotonic() < end:
        time.sleep(0.01)
    return len(os.listdir("/proc/self/task"))


def test_the_main_thread_frees_its_openmp_workers_after_a_forward_and_a_background_thread_keeps_its_own(tiny_lm):
    import threading

    from surfacelab.backends import openmp

    if not openmp.release() or torch.get_num_threads() < 2 or not os.path.isdir("/proc/self/task"):
        pytest.skip("torch runs on no libgomp here, or on one thread")
    workers = torch.get_num_threads() - 1
    bare = len(os.listdir("/proc/self/task"))
    x = torch.randn(1024, 1024)
    x @ x  # a parallel region on the main thread: libgomp starts its pool of workers
    assert _threads_settle(bare + workers) == bare + workers
    engine.logprobs(tiny_lm, [("the cat sat on the", " mat")], cache=False, progress=False)
    assert _threads_settle(bare) == bare  # the backend let them go after its forwards
    got = []
    thread = threading.Thread(target=lambda: got.append(openmp.release()))
    thread.start(), thread.join()
    assert got == [False]  # a background thread's pool goes with the thread
