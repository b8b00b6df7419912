"""Tests of surfacelab.paraphrase: concept mass, shares, winners, top-k, variants and the teaching set."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.special import logsumexp

from surfacelab import engine, mass_rules, paraphrase, text

PREMISE = "The man took a bath in the"
DOMAIN = "in the"
CONCEPTS = {"bathtub": [" bathtub", " tub", " bath tub"], "sink": [" sink", " basin", " soap"],
            "cat": [" cat", " mat"]}


def _forward_logprob(lm, context: str, continuation: str) -> float:
    """log P(continuation | context) from one plain forward of the HF model (independent of the engine)."""
    tok = lm.tokenizer
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    full = tok(context + continuation, add_special_tokens=False)["input_ids"]
    assert full[:len(ctx)] == ctx, "test premise must be a token prefix"
    ids = ([lm.prefix_id] if not ctx else []) + full
    start = len(ids) - (len(full) - len(ctx))
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return float(sum(logp[i - 1, ids[i]] for i in range(start, len(ids))))


def _next_token_probs(lm, context: str) -> np.ndarray:
    ids = lm.tokenizer(context, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids])).logits[0, -1].float()
    return torch.softmax(logits, dim=-1).double().numpy()


@pytest.fixture(scope="module")
def result(tiny_lm):
    return paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, domain_premise=DOMAIN, answer="bathtub", top_k=5, cache=False)


@pytest.fixture(scope="module")
def lower_lm():
    """A tiny GPT-2 whose WordLevel tokenizer lower-cases and drops spaces: ' Tub' and 'tub' encode alike."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    from surfacelab import load_lm

    words = ["<unk>", "<eos>", "a", "an", "the", "bathtub", "bathtubs", "tub", "tubs", "apple", "apples", "in", "."]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>")
    torch.manual_seed(1)
    config = GPT2Config(vocab_size=len(words), n_positions=32, n_embd=16, n_layer=2, n_head=2,
                        bos_token_id=1, eos_token_id=1, pad_token_id=1)
    return load_lm((GPT2LMHeadModel(config).eval(), fast), device="cpu")


# --- mass --------------------------------------------------------------------------------------

def test_concept_log_mass_is_logsumexp_of_form_rows(result):
    f, c = result.forms, result.concepts.set_index("concept")
    for concept, forms in CONCEPTS.items():
        rows = f[f["concept"] == concept]
        assert rows["form"].tolist() == forms
        lp, dlp = rows["logprob"].to_numpy(), rows["domain_logprob"].to_numpy()
        assert c.loc[concept, "log_mass"] == pytest.approx(logsumexp(lp), abs=1e-9)
        assert c.loc[concept, "log_mass"] == pytest.approx(np.log(np.exp(lp).sum()), abs=1e-9)
        assert c.loc[concept, "domain_log_mass"] == pytest.approx(np.log(np.exp(dlp).sum()), abs=1e-9)
        assert c.loc[concept, "dcpmi"] == pytest.approx(logsumexp(lp) - logsumexp(dlp), abs=1e-9)
        assert c.loc[concept, "n_forms"] == len(forms)
        assert c.loc[concept, "best_form"] == forms[int(np.argmax(lp))]


def test_form_logprob_matches_an_independent_forward(tiny_lm, result):
    f = result.forms.set_index("form")
    for form in (" bathtub", " bath tub", " mat"):
        assert f.loc[form, "logprob"] == pytest.approx(_forward_logprob(tiny_lm, PREMISE, form), abs=1e-4)
        assert f.loc[form, "domain_logprob"] == pytest.approx(_forward_logprob(tiny_lm, DOMAIN, form), abs=1e-4)
        assert f.loc[form, "dcpmi"] == pytest.approx(f.loc[form, "logprob"] - f.loc[form, "domain_logprob"])
        assert f.loc[form, "n_tokens"] == len(tiny_lm.tokenizer(form, add_special_tokens=False)["input_ids"])


def test_shares_are_the_engines_probabilities_split_by_concept(tiny_lm, result):
    """Shares from the forms' log-probs as the engine gives them for (premise, form), not from mass's own columns."""
    forms = [f for fs in CONCEPTS.values() for f in fs]
    p = {f: math.exp(s.total) for f, s in zip(forms, engine.logprobs(tiny_lm, [(PREMISE, f) for f in forms],
                                                                         progress=False, cache=False))}
    mass = {c: sum(p[f] for f in fs) for c, fs in CONCEPTS.items()}
    f = result.forms.set_index("form")
    for c, fs in CONCEPTS.items():
        for form in fs:
            assert f.loc[form, "share_of_concept"] == pytest.approx(p[form] / mass[c], rel=1e-5)
            assert f.loc[form, "share_of_listed"] == pytest.approx(p[form] / sum(p.values()), rel=1e-5)
    c = result.concepts.set_index("concept")
    for concept in CONCEPTS:
        assert c.loc[concept, "log_mass"] == pytest.approx(math.log(mass[concept]), abs=1e-5)
        assert c.loc[concept, "share"] == pytest.approx(mass[concept] / sum(mass.values()), rel=1e-5)
    np.testing.assert_allclose(result.forms["prob"], np.exp(result.forms["logprob"]), rtol=1e-12)
    assert result.coverage["listed_mass"] == pytest.approx(sum(p.values()), rel=1e-5)


def test_winners_follow_their_rules(result):
    f = result.forms
    by_hand = {
        "lm": f.loc[f["logprob"].idxmax(), "concept"],
        "mass": f.groupby("concept")["prob"].sum().idxmax(),
        "dcpmi": (np.log(f.groupby("concept")["prob"].sum())
                  - np.log(np.exp(f["domain_logprob"]).groupby(f["concept"]).sum())).idxmax(),
        "dcpmi_form": f.loc[f["dcpmi"].idxmax(), "concept"],
    }
    w = result.winners.set_index("scorer")
    assert list(w.index) == list(mass_rules.WINNER_RULES)
    for rule, concept in by_hand.items():
        assert result.winner(rule) == concept
        assert w.loc[rule, "correct"] == (concept == "bathtub")
    assert w.loc["lm", "form"] == f.loc[f["logprob"].idxmax(), "form"]
    assert (w["margin"] >= 0).all()
    assert "bathtub" in result.explain()


def test_explain_names_each_winning_form_with_its_concept_and_says_what_form_dcpmi_is(result):
    f = result.forms
    best = f.loc[f["logprob"].idxmax()]
    pmi = f["logprob"] - f["domain_logprob"]
    by_pmi = f.loc[pmi.idxmax()]
    mass = f.groupby("concept")["prob"].sum()
    dcpmi = (np.log(mass) - np.log(np.exp(f["domain_logprob"]).groupby(f["concept"]).sum())).idxmax()
    text = result.explain()
    assert text.startswith(f"best single form: {best['form']!r} (concept {best['concept']!r}), the most likely of all "
                           f"the listed forms, not only of the options (P(form|premise) = {best['prob']:.3g}).")
    assert f"concept mass: {mass.idxmax()!r}" in text
    assert f"form DC-PMI: {by_pmi['form']!r} (concept {by_pmi['concept']!r})." in text
    assert ("Form DC-PMI is the DC-PMI of each single form, log P(form|premise) − log P(form|domain premise); "
            "the concept of the best form wins.") in text
    right = [name for name, concept in (("best single form", best["concept"]), ("concept mass", mass.idxmax()),
                                        ("concept DC-PMI", dcpmi),
                                        ("form DC-PMI", by_pmi["concept"])) if concept == "bathtub"]
    assert f"The intended answer, concept 'bathtub', wins under {', '.join(right) or 'no rule'}." in text
    assert "LM" not in text.replace("DC-PMI", "") and "dcpmi" not in text  # neither scorer names nor rule keys


def test_named_winners_show_a_picked_form_with_its_concept():
    winners = pd.DataFrame({"scorer": ["lm", "mass", "dcpmi", "dcpmi_form"],
                            "concept": ["an oven", "a pan", "a pan", "a pan"],
                            "form": [" the oven", np.nan, None, " a frying pan"]})
    assert mass_rules.named_winners(winners) == [
        "best single form: ' the oven' (concept 'an oven')", "concept mass: 'a pan'", "concept DC-PMI: 'a pan'",
        "form DC-PMI: ' a frying pan' (concept 'a pan')"]


def test_topk_and_first_token_coverage(tiny_lm, result):
    probs = _next_token_probs(tiny_lm, PREMISE)
    top = np.argsort(-probs)[:5]
    assert result.topk["token_id"].tolist() == top.tolist()
    np.testing.assert_allclose(result.topk["prob"], probs[top], rtol=1e-4)
    ctx = tiny_lm.tokenizer(PREMISE, add_special_tokens=False)["input_ids"]
    firsts = {tiny_lm.tokenizer(PREMISE + form, add_special_tokens=False)["input_ids"][len(ctx)]
              for forms in CONCEPTS.values() for form in forms}
    expected = probs[sorted(firsts)].sum()
    assert result.coverage["first_token_mass"] == pytest.approx(expected, rel=1e-4)
    assert result.coverage["rest"] == pytest.approx(1 - expected, rel=1e-4)
    assert result.topk["listed"].tolist() == [int(t) in firsts for t in top]


def test_topk_when_every_form_merges_with_the_premise(tiny_lm):
    premise, concepts = "I saw th", {"there": ["ere"], "the": ["e cat"], "that": ["at"]}
    r = paraphrase.mass(tiny_lm, premise, concepts, top_k=4, cache=False)
    assert r.forms["flags"].str.contains("boundary_merge").all()  # so no form shows the next-token distribution
    probs = _next_token_probs(tiny_lm, premise)
    assert r.topk["token_id"].tolist() == np.argsort(-probs)[:4].tolist()  # from a next-token pass of its own
    np.testing.assert_allclose(r.topk["prob"], np.sort(probs)[::-1][:4], rtol=1e-4)
    assert r.coverage["first_token_mass"] == 0.0


def test_all_requests_go_to_the_engine_in_one_call(tiny_lm, monkeypatch):
    calls = []
    real = engine.logprobs

    def spy(lm, requests, **kw):
        calls.append(list(requests))
        return real(lm, requests, **kw)

    monkeypatch.setattr(engine, "logprobs", spy)
    paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, domain_premise=DOMAIN, cache=False)
    forms = [f for fs in CONCEPTS.values() for f in fs]
    assert len(calls) == 1
    assert sorted(calls[0]) == sorted([(PREMISE, f) for f in forms] + [(DOMAIN, f) for f in forms])


def test_without_domain_premise_there_is_no_dcpmi(tiny_lm):
    r = paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, cache=False, top_k=0)
    assert r.winners["scorer"].tolist() == ["lm", "mass"]
    assert r.concepts["dcpmi"].isna().all() and r.topk.empty
    with pytest.raises(ValueError, match="domain premise"):
        r.winner("dcpmi")


def test_list_of_lists_gets_names_and_prefix_overlap_is_flagged(tiny_lm):
    r = paraphrase.mass(tiny_lm, PREMISE, [[" bath", " bath tub"], [" sink"]], cache=False, top_k=0)
    assert r.concepts["concept"].tolist() == ["bath", "sink"]
    f = r.forms.set_index("form")
    ids = [text.encode(tiny_lm, PREMISE, x).scored_ids for x in (" bath", " bath tub")]
    overlap = ids[1][:len(ids[0])] == ids[0]
    assert (f.loc[" bath", "prefix_of"] == "' bath tub'") == overlap
    assert f.loc[" bath tub", "prefix_of"] == ""


def test_mass_items_matches_single_calls(tiny_lm, result):
    items = [{"premise": PREMISE, "concepts": CONCEPTS, "domain_premise": DOMAIN, "answer": "bathtub"},
             ("A cat sat on the", {"mat": [" mat", " rug"], "dog": [" dog", " hound"]}, None)]
    many = paraphrase.mass_items(tiny_lm, items, top_k=5, progress=False, cache=False)
    np.testing.assert_allclose(many[0].concepts["log_mass"], result.concepts["log_mass"], atol=1e-5)
    table = paraphrase.winners_table(many, ids=["a", "b"])
    assert table["id"].tolist() == ["a", "b"]
    assert table.loc[0, "mass_correct"] == (result.winner("mass") == "bathtub")
    assert pd.isna(table.loc[1, "answer"]) and pd.isna(table.loc[1, "dcpmi"])


def test_save_round_trips_the_frames(result, tmp_path):
    doc = json.loads(result.save(tmp_path / "r.json").read_text())
    back = type(result).load(tmp_path / "r.json")
    assert back.forms["form"].tolist() == result.forms["form"].tolist()
    assert back.concepts["log_mass"].tolist() == result.concepts["log_mass"].tolist()  # exact: floats by repr
    assert doc["coverage"] == pytest.approx(result.coverage)
    assert back.explain() == result.explain()  # a loaded result names its winners as the original did
    back = pd.read_csv(result.save(tmp_path / "r.csv"))
    assert back["concept"].tolist() == list(CONCEPTS)
    with pytest.raises(ValueError, match="path"):
        result.save(tmp_path / "r.txt")


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("concepts, error, message", [
    ({"bathtub": [" tub"], "sink": []}, ValueError, r"concepts\['sink'\]: the concept has no surface forms"),
    ({"bathtub": [" tub", " sink"], "sink": [" sink"]}, ValueError, r"' sink'.*two concepts, 'bathtub' and 'sink'"),
    ({"bathtub": [" tub", " tub"]}, ValueError, r"' tub' is listed twice in concept 'bathtub'"),
    ({"bathtub": [" tub", 3]}, TypeError, r"concepts\['bathtub'\]\[1\]: expected a string, got int"),
    ({"bathtub": [" tub", ""]}, ValueError, r"concepts\['bathtub'\]\[1\]: must not be empty"),
    ({"bathtub": [" tub", "  "]}, ValueError, r"concepts\['bathtub'\]\[1\]: .*more than whitespace"),
    ({"bathtub": " tub"}, TypeError, r"concepts\['bathtub'\]: expected a list of surface forms"),
    ({}, ValueError, r"concepts: no concepts given"),
    (" tub", TypeError, r"concepts: expected a dict"),
    ({3: [" tub"]}, TypeError, r"concepts: concept names must be non-empty strings"),
])
def test_bad_concepts_are_named(tiny_lm, concepts, error, message):
    with pytest.raises(error, match=message):
        paraphrase.mass(tiny_lm, PREMISE, concepts)


def test_other_bad_arguments(tiny_lm, lower_lm):
    with pytest.raises(ValueError, match=r"answer: 'bath' is not one of the concepts"):
        paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, answer="bath")
    with pytest.raises(ValueError, match="top_k"):
        paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, top_k=-1)
    with pytest.raises(TypeError, match="premise"):
        paraphrase.mass(tiny_lm, None, CONCEPTS)
    with pytest.raises(TypeError, match="domain_premise"):
        paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, domain_premise=3)
    with pytest.raises(ValueError, match=r"' Tub' and ' tub' encode to the same tokens"):
        paraphrase.mass(lower_lm, "in the", {"a": [" bathtub", " Tub"], "b": [" tub"]}, cache=False)
    with pytest.raises(ValueError, match="scorer"):
        paraphrase.mass(tiny_lm, PREMISE, CONCEPTS, top_k=0, cache=False).winner("avg")


# --- teaching set ------------------------------------------------------------------------------

def test_teaching_set_file_is_valid():
    raw = json.loads(Path(paraphrase.TEACHING_SET).read_text(encoding="utf-8"))["items"]
    assert len(raw) >= 25
    assert len({it["id"] for it in raw}) == len(raw)
    for it in raw:
        assert len(it["concepts"]) >= 2
        assert it["answer"] in it["concepts"]
        forms = [f for fs in it["concepts"].values() for f in fs]
        assert len(forms) == len(set(forms))
        assert all(len(fs) >= 3 for fs in it["concepts"].values())
        assert all(f.startswith(" ") and f.strip() for f in forms)
        assert it["premise"] == it["premise"].rstrip() and it["domain_premise"] == it["domain_premise"].rstrip()
    items = paraphrase.load_teaching_set()
    assert [it["id"] for it in items] == [it["id"] for it in raw]


@pytest.mark.parametrize("change, message", [
    (lambda it: it["concepts"].update(sink=[" sink", " basin"]), r"'sink' has 2 forms"),
    (lambda it: it.update(answer="nothing"), r"answer 'nothing' is not one of the concepts"),
    (lambda it: it.update(premise="in the "), r"premise must not end in whitespace"),
    (lambda it: it["concepts"].update(sink=[" sink", " basin", " tub"]), r"two concepts"),
    (lambda it: it["concepts"].update(sink=[" sink", " basin", "washbasin"]), r"must start with a space"),
    (lambda it: it.pop("domain_premise"), r"missing key\(s\) \['domain_premise'\]"),
])
def test_teaching_set_loader_rejects_bad_items(tmp_path, change, message):
    item = {"id": "x", "premise": "in the", "domain_premise": "the",
            "concepts": {"bathtub": [" bathtub", " tub", " bath tub"], "sink": [" sink", " basin", " washbasin"]},
            "answer": "bathtub"}
    change(item)
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"items": [item]}))
    with pytest.raises(ValueError, match=message):
        paraphrase.load_teaching_set(path)
    with pytest.raises(ValueError, match="path"):
        paraphrase.load_teaching_set(tmp_path / "missing.json")


# --- real model --------------------------------------------------------------------------------

@pytest.mark.slow
def test_real_model_item_and_teaching_set_tokenization(real_lm):
    items = paraphrase.load_teaching_set()
    item = next(it for it in items if it["id"] == "bath")
    r = paraphrase.mass_items(real_lm, [item], top_k=5, progress=False, cache=False)[0]
    f = r.forms.set_index("form")
    assert f.loc[" bath tub", "logprob"] == pytest.approx(_forward_logprob(real_lm, item["premise"], " bath tub"),
                                                          abs=2e-3)
    c = r.concepts.set_index("concept")
    for concept, forms in item["concepts"].items():
        assert c.loc[concept, "log_mass"] == pytest.approx(logsumexp(f.loc[forms, "logprob"].to_numpy()), abs=1e-9)
    assert r.forms["share_of_listed"].sum() == pytest.approx(1.0)
    assert 0 < r.coverage["first_token_mass"] < 1
    # no form of any teaching item is a token prefix of another form of the same item (mass would double count)
    for it in items:
        forms = [x for fs in it["concepts"].values() for x in fs]
        ids = {x: text.encode(real_lm, it["premise"], x).scored_ids for x in forms}
        for a in forms:
            assert not any(b != a and ids[b][:len(ids[a])] == ids[a] for b in forms), (it["id"], a)
