"""Tests for surfacelab.letters: the maths on synthetic arrays, the pipeline on a synthetic model,
the ID distribution against a direct forward of the tiny model, bad input, and a real-model smoke run."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from surfacelab import engine, letters, text

PI = np.array([0.55, 0.25, 0.15, 0.05])  # a strong ID prior, A favoured


def _observed(prior: np.ndarray, content: np.ndarray, perms: list[tuple[int, ...]]) -> np.ndarray:
    """observed[k, pos] = normalise(prior[pos] * content[perm_k[pos]]): the PriDe decomposition, by hand."""
    obs = np.array([[prior[pos] * content[c] for pos, c in enumerate(pm)] for pm in perms])
    return obs / obs.sum(1, keepdims=True)


# ----------------------------------------------------------------------------- pure maths
@pytest.mark.parametrize("content", [np.full(4, 0.25), np.array([0.1, 0.6, 0.2, 0.1])])
@pytest.mark.parametrize("kind", ["cyclic", "full"])
def test_permutation_debias_recovers_prior_and_content_exactly(content, kind):
    perms = letters.cyclic_permutations(4) if kind == "cyclic" else letters.full_permutations(4)
    debiased, prior = letters.permutation_debias(_observed(PI, content, perms), perms)
    np.testing.assert_allclose(prior, PI, rtol=0, atol=1e-12)
    np.testing.assert_allclose(debiased, content, rtol=0, atol=1e-12)


def test_permutation_debias_is_a_geometric_mean():
    perms = letters.cyclic_permutations(3)
    obs = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    debiased, prior = letters.permutation_debias(obs, perms)
    # option c sits at position (c - k) % 3 under shift k; geometric means by hand, then normalised
    want = np.array([np.prod([obs[k, (c - k) % 3] for k in range(3)]) ** (1 / 3) for c in range(3)])
    np.testing.assert_allclose(debiased, want / want.sum(), atol=1e-12)
    want_prior = np.prod(obs, axis=0) ** (1 / 3)
    np.testing.assert_allclose(prior, want_prior / want_prior.sum(), atol=1e-12)


def test_pride_debias_removes_a_pure_prior():
    content = np.array([0.1, 0.2, 0.3, 0.4])
    observed = PI * content / (PI * content).sum()
    np.testing.assert_allclose(letters.pride_debias(observed, PI), content, atol=1e-12)


def test_calibration_formula_by_hand():
    # p / p_cf = [1, 1.2, 0.8], which sums to 3
    got = letters.calibrate([0.5, 0.3, 0.2], [0.5, 0.25, 0.25])
    np.testing.assert_allclose(got, [1 / 3, 0.4, 0.8 / 3], atol=1e-12)
    with pytest.raises(ValueError, match="p_cf"):
        letters.calibrate([0.5, 0.5], [1.0, 0.0])
    with pytest.raises(ValueError, match="p_cf"):
        letters.calibrate([0.5, 0.5], [0.2, 0.3, 0.5])


def test_batch_prior_is_the_mean_distribution():
    obs = np.array([[0.6, 0.4], [0.2, 0.8], [3.0, 1.0]])  # the last row unnormalised: read as 0.75, 0.25
    np.testing.assert_allclose(letters.math.batch_prior(obs), [(0.6 + 0.2 + 0.75) / 3, (0.4 + 0.8 + 0.25) / 3])
    with pytest.raises(ValueError, match="observed: expected one ID distribution per item"):
        letters.math.batch_prior([0.5, 0.5])


def test_domain_texts_are_seeded_draws_of_the_texts_words():
    texts = ["what is the capital of France", "how many legs", "why"]  # 6 + 3 + 1 words: 3 per draw
    words = {w for t in texts for w in t.split()}
    drawn = letters.prompts.domain_texts(texts, 5, seed=2)
    assert len(drawn) == 5 and all(len(d.split()) == 3 and set(d.split()) <= words for d in drawn)
    assert drawn == letters.prompts.domain_texts(texts, 5, seed=2) != letters.prompts.domain_texts(texts, 5, seed=3)
    with pytest.raises(ValueError, match="texts: no words"):
        letters.prompts.domain_texts(["", " "], 2)
    with pytest.raises(ValueError, match="samples: expected an integer >= 1"):
        letters.prompts.domain_texts(texts, 0)


def test_rstd_on_a_hand_built_confusion_matrix():
    # rows = gold A..D, columns = predicted A..D
    confusion = np.array([[4, 0, 0, 0],   # recall A = 100
                          [2, 2, 0, 0],   # recall B = 50
                          [4, 0, 0, 0],   # recall C = 0
                          [1, 0, 1, 2]])  # recall D = 50
    gold, pred = [], []
    for g, p in itertools.product(range(4), range(4)):
        gold += [g] * confusion[g, p]
        pred += [p] * confusion[g, p]
    # mean recall 50; squared deviations 2500, 0, 2500, 0 -> population variance 1250
    assert letters.rstd(gold, pred) == pytest.approx(math.sqrt(1250), abs=1e-9)
    assert letters.rstd([0, 1, 2], [0, 1, 2]) == 0.0
    with pytest.raises(ValueError, match="pred"):
        letters.rstd([0, 1], [0])


def test_permutation_orders():
    opts = ["a", "b", "c", "d"]
    shown = [[opts[c] for c in pm] for pm in letters.cyclic_permutations(4)]
    assert shown == [opts[i:] + opts[:i] for i in range(4)]  # PriDe's cycle_options
    full = letters.full_permutations(4)
    assert len(full) == 24 and len(set(full)) == 24 and full[0] == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="max_permutations"):
        letters.full_permutations(5)
    assert len(letters.full_permutations(5, max_permutations=120)) == 120


def test_move_gold_swaps_the_answer_into_place():
    assert letters.move_gold(["a", "b", "c", "d"], 1, 3) == (["a", "d", "c", "b"], 3)
    with pytest.raises(ValueError, match="position"):
        letters.move_gold(["a", "b"], 0, 2)


# ----------------------------------------------------------------------------- items and samplers
def test_stratified_sample_is_proportional_seeded_and_covers_every_subject():
    pool = [(f"q{s}{i}", ["x", "y"], 0, s) for s, size in zip("abcd", (50, 30, 15, 5)) for i in range(size)]
    sample = letters.stratified_sample(pool, 20, seed=1)
    assert len(sample) == 20
    counts = {s: sum(1 for it in sample if it[3] == s) for s in "abcd"}
    assert counts == {"a": 10, "b": 6, "c": 3, "d": 1}  # 20 * (50, 30, 15, 5) / 100
    assert sample == letters.stratified_sample(pool, 20, seed=1)
    assert sample != letters.stratified_sample(pool, 20, seed=2)
    tiny = letters.stratified_sample(pool, 4, seed=0)
    assert sorted(it[3] for it in tiny) == list("abcd")
    with pytest.raises(ValueError, match="n"):
        letters.stratified_sample(pool, 101)


def test_cross_reference_filter():
    assert letters.refers_to_other_options(["1", "2", "None of the above"])
    assert letters.refers_to_other_options(["x", "A and B"])
    assert not letters.refers_to_other_options(["Andes", "Bandits"])
    pool = [("q", ["x", "y", "All of the above"], 0), ("q", ["x", "y", "z"], 1)]
    assert letters.drop_cross_references(pool) == [pool[1]]


def test_as_items_reads_raw_questions_from_a_task(tmp_path):
    """Through the real loader, on MMLU-shaped lines written here (no data folder needed)."""
    import json

    from surfacelab.tasks.loader import load

    rows = [{"subject": s, "question": f"Question {k} about {s}?", "A": f"a{k}", "B": f"b{k}", "C": f"c{k}",
             "D": f"d{k}", "answer": "ABCD"[k % 4]} for k, s in enumerate(["algebra", "algebra", "law", "law"])]
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = load("mmlu", "test", source=path, limit=3, seed=0)
    assert len(task) == 3
    items = letters.as_items(task)
    for it, item in zip(items, task):
        raw = item.meta["raw"]
        assert it.question == raw["question"]
        assert it.options == tuple(raw[k] for k in "ABCD")
        assert it.gold == "ABCD".index(raw["answer"]) and it.subject == raw["subject"]
    sub = letters.stratified_sample(task, 2)
    assert type(sub) is type(task) and len(sub) == 2


# ----------------------------------------------------------------------------- pipeline on a synthetic model
def _fake_variants(content: dict[tuple[str, str], float]):
    """A stand-in for the model: P(ID at pos) = PI[pos] * weight of the option shown there (uniform for
    content-free questions); only the " A" variant carries mass."""

    def fake(lm, prompts, ids, cue, cache):
        out = np.full((len(prompts), len(ids), 2), -np.inf)
        for p, prompt in enumerate(prompts):
            lines = prompt.split("\n")
            question = lines[0][len("Question: "):]
            shown = [ln.split(". ", 1)[1] for ln in lines[1:-1]]
            for pos, opt in enumerate(shown):
                out[p, pos, 0] = np.log(PI[pos] * content.get((question, opt), 1.0))
        return out

    return fake


@pytest.fixture
def synthetic(monkeypatch):
    """8 questions with gold balanced over A-D; gold content weight 0.7, the rest 0.1."""
    items, content = [], {}
    for i in range(8):
        q, gold = f"question {i}", i % 4
        opts = [f"q{i} option {j}" for j in range(4)]
        for j, o in enumerate(opts):
            content[(q, o)] = 0.7 if j == gold else 0.1
        items.append((q, opts, gold))
    monkeypatch.setattr(letters.evaluation, "variant_logprobs", _fake_variants(content))
    return items


def test_evaluate_recovers_the_prior_and_the_answers(synthetic):
    res = letters.evaluate(object(), synthetic, ("default", "calibrated", "cyclic", "full", "pride", "gold@A"),
                           alpha=0.25, template="plain")
    s = res.summary.set_index("method")
    np.testing.assert_allclose(res.prior[4], PI, atol=1e-12)
    np.testing.assert_allclose(s.loc["calibrated", "prior"], PI, atol=1e-12)  # p_cf = the pure prior
    np.testing.assert_allclose(s.loc["cyclic", "prior"], PI, atol=1e-12)
    for m in ("calibrated", "cyclic", "full", "pride", "gold@A"):
        assert s.loc[m, "accuracy"] == 100.0, m
    assert s.loc["pride", "rstd"] == 0.0
    # default: only gold D loses (0.05*0.7 < 0.55*0.1), to A
    assert s.loc["default", "accuracy"] == 75.0 and s.loc["default", "chosen_A"] == 50.0
    # recalls 100, 100, 100, 0 -> mean 75, population variance (3*625 + 5625) / 4 = 1875
    assert s.loc["default", "rstd"] == pytest.approx(math.sqrt(1875))
    assert s.loc["pride", "cost"] == pytest.approx((2 * 4 + 6) / 8)  # 25 % of 8 items estimate: 2 x 4 forwards
    assert list(s["cost"][["default", "calibrated", "cyclic", "full", "gold@A"]]) == [1, 4, 4, 24, 1]
    items = res.items[res.items.method == "cyclic"]
    content = np.array([0.7, 0.1, 0.1, 0.1])
    np.testing.assert_allclose(items.probs.iloc[0], content, atol=1e-12)  # item 0: gold A
    assert (res.items[res.items.method == "pride"].role == "estimate").sum() == 2


def test_evaluate_deduplicates_prompts_and_transfers_a_prior(synthetic):
    res = letters.evaluate(object(), synthetic, ("default", "cyclic"), template="plain")
    assert res.n_prompts == 8 * 4  # the identity order is shared by default and cyclic
    moved = letters.evaluate(object(), synthetic, ("pride",), prior=PI, template="plain")
    assert moved.summary.cost[0] == 1.0 and moved.summary.accuracy[0] == 100.0
    with pytest.raises(ValueError, match="prior"):
        letters.evaluate(object(), synthetic, ("pride",), prior={3: [0.2, 0.3, 0.5]}, template="plain")
    seeded = [letters.evaluate(object(), synthetic, ("pride",), alpha=0.25, seed=s, template="plain")
              for s in (0, 0, 1)]
    roles = [tuple(r.items.role) for r in seeded]
    assert roles[0] == roles[1] != roles[2]


# ----------------------------------------------------------------------------- tiny model
def _next_token_logprobs_by_hand(lm, prompt: str) -> torch.Tensor:
    ids = torch.tensor([text.encode_prompt(lm, prompt)])
    with torch.no_grad():
        return torch.log_softmax(lm.model(ids).logits[0, -1].float(), -1)


def test_observed_matches_a_direct_forward(tiny_lm):
    r = letters.score(tiny_lm, "Is it?", ["yes", "no", "maybe"], template="plain", gold=0)
    plan = letters.id_variants(tiny_lm, r.ids)
    assert plan.single.all()
    lp = _next_token_logprobs_by_hand(tiny_lm, r.prompt).exp().double()
    p = np.array([sum(lp[t[0]].item() for t in plan[plan.id == i].token_ids) for i in r.ids])
    np.testing.assert_allclose(r.table.observed, p / p.sum(), rtol=1e-5)
    np.testing.assert_allclose(r.table.p_space, [lp[plan.token_ids[2 * j][0]].item() for j in range(3)], rtol=1e-5)
    for col in ("observed", "prior", "calibrated", "perm_prior", "debiased"):
        assert r.table[col].sum() == pytest.approx(1.0)
    assert r.prompt == "Question: Is it?\nA. yes\nB. no\nC. maybe\nAnswer:"
    assert len(r.permutations) == 9 and len(r.content_free) == 9


def _id_distribution_by_hand(lm, question: str, options: list[str]) -> np.ndarray:
    """P(ID) at "Answer:" of the plain template, " X" and "X" summed and renormalised: one forward of the model."""
    prompt = "Question: " + question.strip() + "\n" + "".join(f"{'ABCD'[j]}. {o}\n" for j, o in enumerate(options))
    lp = _next_token_logprobs_by_hand(lm, prompt + "Answer:").exp().double()
    p = []
    for j in range(len(options)):
        (space,), (bare,) = (lm.tokenizer.encode(v, add_special_tokens=False) for v in (" " + "ABCD"[j], "ABCD"[j]))
        p.append(lp[space].item() + lp[bare].item())
    return np.array(p) / sum(p)


ITEMS = [("Is it?", ["yes", "no", "maybe"], 0), ("Which one", ["red", "green", "blue"], 2),
         ("Pick a number", ["one", "two", "three", "four"], 1), ("Where now", ["here", "there", "nowhere"], 1),
         ("Who knows", ["me", "you", "them", "us"], 3)]


def test_batch_calibration_equals_its_definition_on_a_tiny_model(tiny_lm):
    res = letters.evaluate(tiny_lm, ITEMS, ("default", "batch"), template="plain", cache=False)
    observed = [_id_distribution_by_hand(tiny_lm, q, o) for q, o, _ in ITEMS]
    priors = {n: np.mean([p for p in observed if len(p) == n], axis=0) for n in (3, 4)}  # one batch per size
    got = res.items[res.items.method == "batch"]
    for p, probs in zip(observed, got.probs):
        want = p / priors[len(p)]
        np.testing.assert_allclose(probs, want / want.sum(), rtol=1e-4)
    line = res.summary.set_index("method").loc["batch"]
    assert line["cost"] == 1.0
    for n in (3, 4):
        np.testing.assert_allclose(line["prior"][n], priors[n], rtol=1e-4)


def test_domain_context_calibration_equals_its_definition_on_a_tiny_model(tiny_lm):
    res = letters.evaluate(tiny_lm, ITEMS, ("default", "domain"), template="plain", domain_samples=3, seed=4,
                           cache=False)
    texts = res.meta["domain_texts"]
    words = [w for q, _, _ in ITEMS for w in q.split()]
    assert len(texts) == 3 and all(len(t.split()) == 2 and set(t.split()) <= set(words) for t in texts)
    got = res.items[res.items.method == "domain"]
    for (q, opts, _), probs in zip(ITEMS, got.probs):
        p = _id_distribution_by_hand(tiny_lm, q, opts)
        p_dc = np.mean([_id_distribution_by_hand(tiny_lm, t, opts) for t in texts], axis=0)
        np.testing.assert_allclose(probs, (p / p_dc) / (p / p_dc).sum(), rtol=1e-4)
    assert res.summary.set_index("method").loc["domain", "cost"] == 4.0
    assert res.meta["domain_samples"] == 3
    with pytest.raises(ValueError, match="domain_samples: expected an integer >= 1"):
        letters.evaluate(tiny_lm, ITEMS, ("domain",), domain_samples=0)


def test_multi_token_ids_go_through_the_engine(tiny_lm):
    ids = ["10", "11", "12"]
    plan = letters.id_variants(tiny_lm, ids)
    assert not plan.single.all()
    r = letters.score(tiny_lm, "Pick", ["a", "b", "c"], ids=ids, template="plain")
    # independent path: the whole sequence prompt + variant through the model, summed log-softmax
    p = []
    for i in ids:
        mass = 0.0
        for v in dict.fromkeys((" " + i, i)):
            enc = text.encode(tiny_lm, r.prompt, v)
            with torch.no_grad():
                logits = tiny_lm.model(torch.tensor([enc.input_ids])).logits[0].float()
            lsm = torch.log_softmax(logits, -1)
            mass += math.exp(sum(lsm[k - 1, enc.input_ids[k]].item() for k in range(enc.start, len(enc.input_ids))))
        p.append(mass)
    np.testing.assert_allclose(r.table.observed, np.array(p) / sum(p), rtol=1e-4)


def test_multi_token_variants_of_several_prompts_each_read_their_own_request(tiny_lm):
    # several prompts of different lengths (as permutations give), IDs of one and of several tokens
    ids = ("A", "10", "112")
    prompts = ["Q: pick one\nAnswer:", "Question: which of these three?\nAnswer:", "Answer:"]
    got = letters.reading.variant_logprobs(tiny_lm, prompts, ids, "Answer:", cache=False)
    plan = letters.id_variants(tiny_lm, ids)
    assert (~plan.single).any()
    for row, prompt in enumerate(prompts):
        for idx, r in plan[~plan.single & ~plan.duplicate].iterrows():
            alone = engine.logprobs(tiny_lm, [(prompt, r.variant)], cache=False, batch_size=1, progress=False)[0]
            assert got[row, idx // 2, idx % 2] == pytest.approx(alone.total, abs=1e-4), (prompt, r.variant)


def test_score_uses_the_cache(tiny_lm, monkeypatch):
    first = letters.score(tiny_lm, "Cached?", ["yes", "no"], template="plain")

    def boom(*a, **k):
        raise AssertionError("the cache should have answered")

    for method in ("score", "next_token"):  # no forward at all
        monkeypatch.setattr(type(tiny_lm.backend), method, boom)
    again = letters.score(tiny_lm, "Cached?", ["yes", "no"], template="plain")
    np.testing.assert_array_equal(first.table.observed, again.table.observed)


def test_bad_input_names_the_argument(tiny_lm):
    opts = ["a", "b", "c", "d", "e"]
    with pytest.raises(ValueError, match="options: 5 options but only 4 ids"):
        letters.score(tiny_lm, "q", opts, ids="ABCD")
    with pytest.raises(ValueError, match="ids: duplicate"):
        letters.score(tiny_lm, "q", ["a", "b"], ids="AA")
    with pytest.raises(ValueError, match=r"options\[1\]: .*more than whitespace"):
        letters.score(tiny_lm, "q", ["a", " "])
    with pytest.raises(ValueError, match="permutation"):
        letters.score(tiny_lm, "q", ["a", "b"], permutation="random")
    with pytest.raises(ValueError, match="template"):
        letters.score(tiny_lm, "q", ["a", "b"], template="nope")
    with pytest.raises(ValueError, match="cue"):
        letters.LetterTemplate("x", prompt="Q: {question}\n{options}\nAnswer: ", cue="Answer: ")
    with pytest.raises(ValueError, match="methods"):
        letters.evaluate(tiny_lm, [("q", ["a", "b"], 0)], ("default", "gold@Z"))
    with pytest.raises(ValueError, match="alpha"):
        letters.evaluate(tiny_lm, [("q", ["a", "b"], 0)], alpha=0)
    with pytest.raises(ValueError, match="gold"):
        letters.evaluate(tiny_lm, [("q", ["a", "b"], None)])


# ----------------------------------------------------------------------------- real model
@pytest.mark.slow
def test_real_model_smoke(real_lm):
    from surfacelab.tasks.loader import load

    r = letters.score(real_lm, "What is the capital of France?", ["Berlin", "Paris", "Rome", "Madrid"], gold=1)
    assert r.prompt.startswith("The following are multiple choice questions. You should directly answer")
    assert r.prompt.endswith("D. Madrid\nAnswer:")
    assert (r.table.p_space > r.table.p_bare).all()  # after "Answer:" the spaced letter is the natural token
    task = load("arc-challenge", "pride_test", limit=3, seed=0)
    res = letters.evaluate(real_lm, task)
    assert list(res.summary.method) == ["default", "calibrated", "cyclic", "pride"]
    assert list(res.summary.cost[:3]) == [1, 4, 4]
    for probs in res.items.probs:
        assert sum(probs) == pytest.approx(1.0)


def test_evaluate_limit_is_the_first_items_and_sample_a_seeded_draw(synthetic):
    head = letters.evaluate(object(), synthetic, ("default",), limit=3, seed=5, template="plain")
    assert list(head.items["item_id"]) == [it.id for it in letters.as_items(synthetic)[:3]]
    assert head.meta["limit"] == 3 and head.meta["sample"] is None
    drawn = [letters.evaluate(object(), synthetic, ("default",), sample=3, seed=s, template="plain").items["item_id"]
             .tolist() for s in (0, 0, 3)]
    assert drawn[0] == drawn[1] != drawn[2]
    with pytest.raises(ValueError, match="limit, sample: give one of them"):
        letters.evaluate(object(), synthetic, ("default",), limit=3, sample=3)
    with pytest.raises(ValueError, match="sample: expected an integer >= 1"):
        letters.evaluate(object(), synthetic, ("default",), sample=0)
