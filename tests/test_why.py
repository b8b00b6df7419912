"""sl.why / WhyResult: gap identities, token alignment, occlusion, competitors, verdicts, save/load, figures."""

from __future__ import annotations

import dataclasses
import importlib
import math
import re

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import engine
from surfacelab._format import percent
from surfacelab.why import WhyResult, from_result
from surfacelab.why.first_token import FirstTokenPlan, competitors_frame, first_token_numbers, first_token_plan
from surfacelab.why.occlusion import occlude, premise_units
from surfacelab.why.rules import decompose, verdict

PREMISE = "The man took a bath in the"
OPTIONS = [" bathtub", " mat", " dog"]
DOMAIN = " in the"


@pytest.fixture(scope="module")
def tiny_why(tiny_lm):
    return sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, domain_premise=DOMAIN, sentences=True)


def _totals(lm, requests):
    return [s.total for s in engine.logprobs(lm, requests, cache=False, progress=False)]


# --------------------------------------------------------------------------- decomposition
def test_decompose_by_hand():
    d = decompose(-6.0, -2.0, -10.0, -5.0, 5, 1)
    # u_g = -2, u_a = -5: length = 4 * (-3.5), prior per token = 3 * 3, evidence = -4 - (-5)
    assert d == pytest.approx({"lm": -4.0, "prior": -5.0, "evidence": 1.0, "length": -14.0,
                               "prior_per_token": 9.0, "rate": -3.5})


@pytest.mark.parametrize("domain", [DOMAIN, None])
def test_gap_identities_against_independent_engine_calls(tiny_lm, domain):
    r = sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, domain_premise=domain)
    g, a = OPTIONS[r.gold], OPTIONS[r.against]
    prior_ctx = domain if domain is not None else ""
    lp_g, lp_a, pr_g, pr_a = _totals(tiny_lm, [(PREMISE, g), (PREMISE, a), (prior_ctx, g), (prior_ctx, a)])
    term = {t: r.term(t, "gap") for t in ("length", "prior per token", "premise evidence", "LM gap")}
    assert term["LM gap"] == pytest.approx(lp_g - lp_a, abs=1e-6)
    assert r.term("prior gap") == pytest.approx(pr_g - pr_a, abs=1e-6)
    assert term["premise evidence"] == pytest.approx((lp_g - pr_g) - (lp_a - pr_a), abs=1e-6)
    assert (term["length"] + term["prior per token"] + term["premise evidence"]
            == pytest.approx(term["LM gap"], abs=1e-6))
    # the LM gap's own split by length, per token and per character
    for unit in ("tokens", "chars"):
        split = r.term(f"LM length ({unit})") + r.term(f"LM per {unit[:-1]}")
        assert split == pytest.approx(term["LM gap"], abs=1e-6)
    # token rows carry the gap: their signed parts sum to each gap
    tok = r.tokens
    assert tok["gap_lm"].sum() == pytest.approx(term["LM gap"], abs=1e-6)
    if tok["aligned"].all():
        assert tok["gap_prior"].sum() == pytest.approx(r.term("prior gap"), abs=1e-6)
        assert tok["gap_evidence"].sum() == pytest.approx(term["premise evidence"], abs=1e-6)
    assert r.meta["prior"] == ("domain" if domain is not None else "null")


def test_scorer_rows_are_gold_minus_against_in_the_table(tiny_why):
    t = tiny_why.table
    rows = tiny_why.terms[tiny_why.terms["group"] == "scorer"].set_index("term")["value"]
    cols = {"lm": "logprob", "avg": "avg_token", "per_char": "per_char", "per_byte": "per_byte", "unc": "unc",
            "dcpmi": "dcpmi", "pmi_null": "pmi_null"}
    for name, col in cols.items():
        assert rows[name] == pytest.approx(t[col].iloc[tiny_why.gold] - t[col].iloc[tiny_why.against])


def test_against_defaults_to_the_winner_or_the_runner_up(tiny_lm):
    r = sl.score(tiny_lm, PREMISE, OPTIONS, domain_premise=DOMAIN)
    lp = r.table["logprob"].to_numpy()
    order = list(np.argsort(-lp, kind="stable"))
    for gold in range(len(OPTIONS)):
        w = from_result(tiny_lm, r, gold=gold)
        expected = order[0] if order[0] != gold else order[1]
        assert w.against == expected
        assert w.meta["gold_lost"] == (order[0] != gold)
        assert (w.verdict == "right") == (order[0] == gold)
    d = r.table["dcpmi"].to_numpy()
    dc_winner = int(np.argmax(d))
    gold = (dc_winner + 1) % len(OPTIONS)
    assert from_result(tiny_lm, r, gold=gold, scorer="dcpmi").against == dc_winner
    assert from_result(tiny_lm, r, gold=" bathtub", against=" dog").against == 2


def test_a_gold_compared_with_an_option_it_beats_is_ahead_and_every_sentence_says_so(tiny_lm):
    r = sl.score(tiny_lm, PREMISE, OPTIONS, domain_premise=DOMAIN)
    order = [int(i) for i in np.argsort(-r.table["logprob"].to_numpy(), kind="stable")]
    winner, gold, against = order  # the gold is second under LM, compared with the last option
    w = from_result(tiny_lm, r, gold=gold, against=against, all_options=False)
    assert w.term("LM gap", "gap") > 0 and w.verdict == "ahead"
    name = repr(OPTIONS[winner].strip())
    sentence = w.terms.loc[w.terms["group"] == "verdict", "sentence"].iloc[0]
    assert f"but loses to {name}" in sentence and "against the gold)" not in sentence
    text = w.explain()
    assert text.startswith(f"The gold {OPTIONS[gold].strip()!r} loses to {name} under LM; compared here with "
                           f"{OPTIONS[against].strip()!r}.")
    occ = w.attribution[w.attribution["method"] == "remove"]
    flipped = [x for x, m in zip(occ["text"], occ["lm_margin"]) if m < 0]  # the pair's margin, as the frame's
    if flipped:
        assert f"Removing {', '.join(repr(x) for x in flipped)} would make the gold lose to" in text
    else:
        assert "Removing" not in text
    words = next((line for line in text.splitlines() if line.startswith("Premise words")), "")
    assert not re.search(r"[-+]\d", words)  # the side a word supports carries the sign; its size is unsigned
    assert "-0.00" not in text and "under lm" not in text
    assert not any(v == 0 and math.copysign(1.0, v) < 0 for v in w.terms["value"])  # no negative zero


# --------------------------------------------------------------------------- occlusion
def test_units_and_occlusion_text():
    units = premise_units(" I pressed my hand into the wet cement so. Then it's 5-6 p.m.", sentences=True)
    words = units[units["unit"] == "word"]
    assert list(words["text"]) == ["I", "pressed", "my", "hand", "into", "the", "wet", "cement", "so", "Then",
                                   "it's", "5-6", "p.m"]
    assert list(units[units["unit"] == "sentence"]["text"]) == ["I pressed my hand into the wet cement so.",
                                                               "Then it's 5-6 p.m."]
    p = " The man opened the door."
    assert occlude(p, 5, 8) == " The opened the door."  # the following space goes
    assert occlude(p, 20, 24) == " The man opened the."  # punctuation follows: the preceding space goes
    assert occlude(" cement so", 8, 10) == " cement"  # the last word
    assert occlude(p, 5, 8, "something") == " The something opened the door."


def test_occlusion_rows_match_direct_scoring_and_run_in_one_call(tiny_lm, monkeypatch):
    r = sl.score(tiny_lm, PREMISE, OPTIONS, domain_premise=DOMAIN)
    calls = []
    real = engine.logprobs
    monkeypatch.setattr(engine, "logprobs", lambda *a, **k: calls.append(len(a[1])) or real(*a, **k))
    w = from_result(tiny_lm, r, gold=0, neutral="thing")
    monkeypatch.setattr(engine, "logprobs", real)
    n_words = len(PREMISE.split())
    assert calls == [n_words * 2 * len(OPTIONS)]  # every word x (remove, replace) x every option, one call
    occ = w.attribution
    assert len(occ) == n_words * 2 and set(occ["method"]) == {"remove", "replace"}
    cost = w.meta["cost"]["occlusion"]
    assert cost["requests"] == calls[0] and cost["tokens_forwarded"] + cost["cached"] > 0
    base = r.table.set_index("option")
    margin0 = base.loc[OPTIONS[0], "logprob"] - base.loc[OPTIONS[w.against], "logprob"]
    prior = base["domain_logprob"].to_numpy()
    for row in occ.sample(4, random_state=0).itertuples():
        words = PREMISE.split(" ")
        text = " ".join(words[:row.index] + (["thing"] if row.method == "replace" else []) + words[row.index + 1:])
        assert row.occluded == text
        lp = np.array(_totals(tiny_lm, [(text, o) for o in OPTIONS]))
        assert row.lm_margin == pytest.approx(lp[0] - lp[w.against], abs=1e-5)
        assert row.delta_lm == pytest.approx(lp[0] - lp[w.against] - margin0, abs=1e-5)
        assert row.lm_winner == int(np.argmax(lp)) and row.dcpmi_winner == int(np.argmax(lp - prior))
    # the prior context holds no premise word: both scorers' margins move alike
    np.testing.assert_allclose(occ["delta_lm"], occ["delta_dcpmi"], atol=1e-9)


def test_pair_only_occlusion_scores_two_options(tiny_lm):
    w = sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, domain_premise=DOMAIN, all_options=False)
    assert w.meta["cost"]["occlusion"]["requests"] == len(PREMISE.split()) * 2 * 2
    assert set(w.attribution["lm_winner"]) <= {0, w.against}


def test_gradient_x_input_matches_a_direct_computation(tiny_lm):
    import torch

    w = sl.why(tiny_lm, PREMISE, OPTIONS[:2], gold=0, domain_premise=DOMAIN, gradient=True)
    grad = w.attribution[w.attribution["method"] == "grad_x_input"].set_index("text")["delta_lm"]
    assert len(grad) == len(PREMISE.split()) and np.isfinite(grad).all()
    # by hand for the word "bath": tokens of the premise inside its span, both options
    tok, model = tiny_lm.tokenizer, tiny_lm.model
    start = PREMISE.index("bath")
    total = 0.0
    for option, sign in ((OPTIONS[0], 1), (OPTIONS[1], -1)):
        enc = tok(PREMISE + option, return_offsets_mapping=True)
        n_ctx = next(i for i, (s, e) in enumerate(enc["offset_mapping"]) if e > len(PREMISE))
        ids = torch.tensor([enc["input_ids"]])
        emb = model.get_input_embeddings()(ids).detach().requires_grad_(True)
        logp = torch.log_softmax(model(inputs_embeds=emb).logits[0].float(), -1)
        lp = logp[n_ctx - 1:-1].gather(1, ids[0, n_ctx:, None]).sum()
        (g,) = torch.autograd.grad(lp, emb)
        per = (g * emb).sum(-1)[0].detach()
        total += sign * sum(float(per[i]) for i, (s, e) in enumerate(enc["offset_mapping"][:n_ctx])
                            if s < start + 4 and e > start)
    assert grad["bath"] == pytest.approx(-total, rel=1e-4, abs=1e-6)


@pytest.mark.slow
def test_removing_the_only_informative_word_flips_the_winner(real_lm):
    premise, options = " I live in France, so at home I speak", [" French", " English"]
    w = sl.why(real_lm, premise, options, gold=0)
    removed = w.attribution[w.attribution["method"] == "remove"].set_index("text")
    assert removed["delta_lm"].idxmin() == "France"
    assert list(removed.index[~removed["gold_wins_lm"]]) == ["France"]
    # independently: score the premise without the word
    before = sl.score(real_lm, premise, options)
    after = sl.score(real_lm, " I live in, so at home I speak", options)
    assert before.winner("lm") == " French" and after.winner("lm") == " English"
    gap = lambda r: r.table["logprob"].iloc[0] - r.table["logprob"].iloc[1]  # noqa: E731
    assert removed.loc["France", "delta_lm"] == pytest.approx(gap(after) - gap(before), abs=1e-4)
    assert "France" in w.explain()


# --------------------------------------------------------------------------- where the mass went
def test_competitor_grouping_on_a_hand_built_top_k(tiny_lm):
    # tokens: 10 gold's own, 11 only an unlisted gold form, 12 against's own, 13 only an against form,
    # 14 starts forms of both (an article), 15 and 16 start no form
    forms = pd.DataFrame({"option": [0, 0, 1, 0, 1], "form": [" Tub", " tubs", " Sink", " a tub", " a sink"],
                          "rule": ["capitalised", "plural", "capitalised", "article=a", "article=a"],
                          "token_id": [11, 10, 13, 14, 14]})
    plan = FirstTokenPlan("in the", 0, [10, 12], forms, {10: {0}, 11: {0}, 12: {1}, 13: {1}, 14: {0, 1}})
    probs = {10: 0.05, 11: 0.15, 12: 0.20, 13: 0.02, 14: 0.08, 15: 0.30, 16: 0.10}
    top = [15, 12, 11, 16]  # the top-k, most likely first
    nt = engine.NextToken("in the", (), np.log([probs[t] for t in plan.token_ids]).astype(np.float32),
                          np.array(top), np.log([probs[t] for t in top]).astype(np.float32), [], float("nan"))
    comp = competitors_frame(tiny_lm, plan, nt, [" tub", " sink"], 0, 1).set_index("token_id")
    assert comp.loc[[10, 11, 12, 13, 14, 15, 16], "group"].tolist() == [
        "gold", "gold form", "against", "against form", "shared", "elsewhere", "elsewhere"]
    assert comp.loc[[10, 11, 12, 15], "kind"].tolist() == ["gold", "gold", "other options", "elsewhere"]
    assert comp.loc[[15, 12, 11, 16, 10], "rank"].tolist() == [1, 2, 3, 4, 0]
    np.testing.assert_allclose(comp.loc[list(probs), "prob"], list(probs.values()), rtol=1e-6)
    assert "' tubs'" in comp.loc[10, "forms"] and "(listed)" in comp.loc[10, "forms"]
    m = first_token_numbers(plan, {t: math.log(probs[t]) for t in plan.token_ids}, 0, 1)
    assert m["gold_listed"] == pytest.approx(0.05) and m["gold_unlisted"] == pytest.approx(0.15)
    assert m["gold_ratio"] == pytest.approx(3.0)  # unlisted forms hold 3x the listed form's token
    assert m["against_ratio"] == pytest.approx(0.1) and m["shared"] == pytest.approx(0.08)
    assert m["mass_gain"] == pytest.approx(math.log(4.0) - math.log(1.1))


def test_mass_plan_reads_the_first_token_where_options_differ(tiny_lm):
    plan = first_token_plan(tiny_lm, "A cat sat on", [" the mat", " the dog"])
    assert plan.shared == 1 and plan.prompt == "A cat sat on the" and not plan.reason
    ids = [sl.engine.text.encode(tiny_lm, "A cat sat on", o).scored_ids[1] for o in (" the mat", " the dog")]
    assert plan.listed == list(ids)
    assert plan.owners[ids[0]] == {0} and plan.owners[ids[1]] == {1}
    assert (plan.forms["form"].str.startswith(" the")).all()
    assert first_token_plan(tiny_lm, "Hello", ["!!", "!!!"]).reason  # one option is a token prefix of the other


def test_competitors_frame_of_a_result_reads_one_next_token_call(tiny_why):
    comp = tiny_why.competitors
    assert comp["prob"].is_monotonic_decreasing
    assert (comp["in_top_k"] == (comp["rank"] > 0)).all() and comp["in_top_k"].sum() == tiny_why.meta["top_k"]
    gold_row = comp[comp["group"] == "gold"]
    assert len(gold_row) == 1
    assert tiny_why.term("gold listed", "first token") == pytest.approx(float(gold_row["prob"].iloc[0]))


def test_a_second_account_of_the_same_question_reuses_the_next_token_forward(tiny_lm):
    engine.clear_top_cache()
    result = sl.score(tiny_lm, PREMISE, OPTIONS, domain_premise=DOMAIN)
    first = sl.why(tiny_lm, result, gold=0, occlusion=False)  # the workbench's first part
    rest = sl.why(tiny_lm, result, gold=0)  # then the whole account
    assert first.meta["cost"]["next_token"]["cached"] == 0
    assert rest.meta["cost"]["next_token"]["cached"] == 1 and rest.meta["cost"]["next_token"]["tokens_forwarded"] == 0
    pd.testing.assert_frame_equal(first.competitors, rest.competitors)
    off = sl.why(tiny_lm, result, gold=0, occlusion=False, cache=False)
    assert off.meta["cost"]["next_token"]["cached"] == 0  # cache=False: computed again


# --------------------------------------------------------------------------- verdicts
@pytest.mark.parametrize("args, kwargs, label", [
    ((1.0, 0.0, 0.5, 0.5), {"gold_wins": True}, "right"),
    ((0.0, 0.0, 0.0, 0.0), {"gold_wins": False}, "tie"),
    ((-2.0, 0.0, -0.5, -1.5), {"gold_wins": False}, "premise evidence"),
    ((-2.0, 0.0, -1.0, -1.0), {"gold_wins": False}, "premise evidence"),  # exactly half: evidence first
    ((-1.0, 0.0, -0.8, -0.2), {"gold_wins": False, "mass_ratio": 2.0, "mass_gain": 1.05}, "split mass"),
    ((-1.0, 0.0, -0.8, -0.2), {"gold_wins": False, "mass_ratio": 0.4, "mass_gain": 1.05}, "prior"),
    ((-1.0, 0.0, -0.8, -0.2), {"gold_wins": False, "mass_ratio": 2.0, "mass_gain": 0.9}, "prior"),
    ((-4.0, -14.0, 9.0, 1.0), {"gold_wins": False}, "length"),
    ((-1.0, 0.0, -1.5, 0.5), {"gold_wins": False, "letters": True}, "letter bias"),
    ((-1.6, -0.7, -0.3, -0.6), {"gold_wins": False}, "mixed"),
    ((-1.0, float("nan"), float("nan"), float("nan")), {"gold_wins": False}, "lost"),
])
def test_verdict_rules(args, kwargs, label):
    assert verdict(*args, **kwargs) == label


# --------------------------------------------------------------------------- result object
def test_save_load_round_trip(tiny_lm, tmp_path):
    w = sl.why(tiny_lm, PREMISE, OPTIONS, gold=1, domain_premise=DOMAIN, gradient=True)
    back = WhyResult.load(w.save(tmp_path / "why.json"))
    for name in ("table", "terms", "tokens", "attribution", "competitors"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(w, name), check_exact=True)
    for name in ("premise", "options", "domain_premise", "model", "gold", "against", "scorer", "verdict", "meta"):
        assert getattr(back, name) == getattr(w, name), name
    assert back.explain() == w.explain()
    with pytest.raises(ValueError, match="path"):
        w.save(tmp_path / "why.csv")
    with pytest.raises(ValueError, match="path"):
        WhyResult.load(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"premise": ""}')
    with pytest.raises(ValueError, match="not a saved WhyResult"):
        WhyResult.load(tmp_path / "other.json")


def test_why_of_a_scored_result_reuses_the_scores(tiny_lm, monkeypatch):
    r = sl.score(tiny_lm, PREMISE, OPTIONS, domain_premise=DOMAIN, gold=2)
    calls = []
    real = engine.logprobs
    monkeypatch.setattr(engine, "logprobs", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    w = sl.why(tiny_lm, r)
    monkeypatch.setattr(engine, "logprobs", real)
    assert len(calls) == 1 and all(ctx != PREMISE for ctx, _ in calls[0])  # occlusion only, no rescoring
    assert w.gold == 2 and "score" not in w.meta["cost"]
    direct = sl.why(tiny_lm, PREMISE, OPTIONS, gold=2, domain_premise=DOMAIN)
    pd.testing.assert_frame_equal(w.terms, direct.terms)


def test_explain_states_the_numbers(tiny_why):
    text = tiny_why.explain()
    assert f"{abs(tiny_why.term('LM gap')):.2f} nats" in text
    assert f"{tiny_why.term('premise evidence', 'gap'):+.2f}" in text
    assert f"Verdict: {tiny_why.verdict}" in text
    top = tiny_why.attribution[tiny_why.attribution["method"] == "remove"].nsmallest(1, "delta_lm")["text"].iloc[0]
    assert repr(top) in text


def test_figures_are_built_from_the_frames(tiny_why):
    figs = tiny_why.show()
    assert set(figs) == {"gap", "tokens", "attribution", "competitors"}
    gap = tiny_why.terms[tiny_why.terms["group"] == "gap"].set_index("term")["value"]
    np.testing.assert_allclose(figs["gap"].data[0].y, gap[["length", "prior per token", "premise evidence",
                                                           "LM gap"]])
    words = tiny_why.attribution[(tiny_why.attribution["unit"] == "word")
                                 & (tiny_why.attribution["method"] == "remove")].sort_values("index")
    np.testing.assert_allclose(figs["attribution"].data[0].y, -words["delta_lm"])
    drawn = np.concatenate([t.x for t in figs["competitors"].data])
    np.testing.assert_allclose(sorted(drawn), sorted(tiny_why.competitors["prob"].head(20)))
    assert tiny_why.show("gap") is not None
    with pytest.raises(ValueError, match="view"):
        tiny_why.show("nope")


def test_waterfall_labels_never_print_a_negative_zero(tiny_why):
    from surfacelab.viz import gap_waterfall_spec

    terms = tiny_why.terms.copy()
    rows = (terms["group"] == "gap") & terms["term"].isin(["length", "prior per token"])
    terms.loc[rows, "value"] = [-0.0, -0.0004]  # equal token counts; a tiny prior gap
    labels = dict(zip(gap_waterfall_spec(terms)["data"][0]["x"], gap_waterfall_spec(terms)["data"][0]["text"]))
    assert labels["length"] == "0.00" and labels["prior per token"] == "-0.0004"


def test_sentences_quote_options_without_a_doubled_apostrophe(tiny_lm):
    for gold in range(len(OPTIONS)):
        account = sl.why(tiny_lm, PREMISE, OPTIONS, gold=gold, domain_premise=DOMAIN)
        assert not any("''s" in t for t in account.terms["sentence"]), account.terms["sentence"].tolist()


def test_bad_input_names_the_argument(tiny_lm):
    with pytest.raises(ValueError, match="gold"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=3)
    with pytest.raises(ValueError, match="gold"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=True)
    with pytest.raises(ValueError, match="gold"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=" cat")
    with pytest.raises(ValueError, match="against"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, against=0)
    with pytest.raises(ValueError, match="scorer"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, scorer="dcpmi")  # no domain premise
    with pytest.raises(ValueError, match="scorer"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, scorer="nope")
    with pytest.raises(ValueError, match="options"):
        sl.why(tiny_lm, PREMISE, [" bathtub"], gold=0)
    with pytest.raises(ValueError, match="top_k"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, top_k=0)
    with pytest.raises(ValueError, match="neutral"):
        sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, neutral="  ")
    with pytest.raises(TypeError, match="result"):
        from_result(tiny_lm, "not a result")
    r = sl.score(tiny_lm, PREMISE, OPTIONS)
    with pytest.raises(ValueError, match="gold"):
        sl.why(tiny_lm, r)  # the result has no gold
    with pytest.raises(ValueError, match="options: not with a scored MCResult"):
        sl.why(tiny_lm, r, OPTIONS, gold=0)
    with pytest.raises(ValueError, match="options: the options to compare"):
        sl.why(tiny_lm, PREMISE, gold=0)


def test_a_shared_token_prefix_cancels_and_is_not_ranked(tiny_lm):
    w = sl.why(tiny_lm, "A cat sat on", [" the mat", " the dog"], gold=0)
    tok = w.tokens
    shared = tok[tok["shared"]]
    assert list(shared["position"]) == [0, 0] and (shared["rank_cost"] == 0).all()
    assert shared["gap_lm"].sum() == pytest.approx(0.0, abs=1e-6)
    ranks = tok.loc[~tok["shared"], "rank_cost"]
    assert sorted(ranks) == list(range(1, len(ranks) + 1))
    assert w.meta["first_token_shared"] == 1 and w.meta["first_token_prompt"] == "A cat sat on the"


def test_edge_items_empty_premise_and_no_distinguishing_token(tiny_lm, tmp_path):
    w = sl.why(tiny_lm, "", [" cat", " dog"], gold=1)
    assert w.attribution.empty and "occlusion" not in w.meta["cost"]
    assert w.term("length", "gap") + w.term("prior per token") + w.term("premise evidence") == pytest.approx(
        w.term("LM gap"), abs=1e-6)
    # one option is a token prefix of the other: no position where they differ, said in words
    w = sl.why(tiny_lm, PREMISE, [" bath", " bathtub"], gold=1, domain_premise=DOMAIN)
    assert w.competitors.empty and w.meta["first_token_unavailable"]
    assert "not measured" in w.explain()
    back = WhyResult.load(w.save(tmp_path / "edge.json"))
    pd.testing.assert_frame_equal(back.competitors, w.competitors)


# --------------------------------------------------------------------------- wording
#: A verb that carries a direction followed by a signed number ("raises 'a pan' by -2.85", "cost -5.30")
SIGNED_AFTER_VERB = re.compile(r"\b(raises|lowers|costs?)\b[^.;:()]*?[-+]\d")


def test_a_premise_that_lowers_an_option_is_said_to_lower_it(tiny_lm):
    r = sl.score(tiny_lm, PREMISE, OPTIONS[:2], domain_premise=DOMAIN)
    t = r.table.copy()
    # the premise lowers the gold by 2.85 nats and raises the other option by 1.5 over the domain premise
    t["logprob"] = t["domain_logprob"] + np.array([-2.85, 1.5])
    w = from_result(tiny_lm, dataclasses.replace(r, table=t), gold=0, against=1, occlusion=False)
    sentence = w.terms.set_index("term").loc["premise evidence", "sentence"]
    assert "the premise lowers 'bathtub' by 2.85 nats and raises 'mat' by 1.50 nats" in sentence
    assert sentence.endswith(": -4.35 nats to the gold.")
    for gold in range(len(OPTIONS)):  # no template puts a signed number after a verb that has a direction
        account = sl.why(tiny_lm, PREMISE, OPTIONS, gold=gold, domain_premise=DOMAIN)
        for text in [*account.terms["sentence"], *account.explain().splitlines()]:
            assert not SIGNED_AFTER_VERB.search(text), text


def test_premise_words_are_listed_by_the_side_they_support_with_unsigned_sizes(tiny_why):
    occ = tiny_why.attribution
    occ = occ[(occ["unit"] == "word") & (occ["method"] == "remove")].head(3).copy()
    occ["delta_lm"] = [-1.25, 0.75, -0.5]  # removing the 1st and 3rd word lowers the gold's margin: they support it
    occ["gold_wins_lm"] = tiny_why.meta["gold_wins_lm"]  # no word flips the winner
    words = occ["text"].tolist()
    text = dataclasses.replace(tiny_why, attribution=occ).explain()
    other = repr(OPTIONS[tiny_why.against].strip())
    line = next(line for line in text.splitlines() if line.startswith("Premise words"))
    assert line == (f"Premise words that support the gold most (removing one lowers the gold's LM margin over {other} "
                    f"by): {words[0]!r} 1.25, {words[2]!r} 0.50; that work against the gold, for {other} (removing "
                    f"one raises the gold's margin by): {words[1]!r} 0.75.")


def test_two_options_that_start_with_the_same_token_are_said_to_once(tiny_lm, tiny_why):
    prompt, options = "The man took", [" a bath", " a dog", " the mat"]  # " a" starts both compared options
    w = sl.why(tiny_lm, prompt, options, gold=0, against=1, occlusion=False)
    (a,) = tiny_lm.tokenizer(" a", add_special_tokens=False)["input_ids"]
    p = math.exp(float(engine.next_token_logprobs(tiny_lm, [prompt], token_ids=[a])[0].selected[0]))
    text = w.explain()
    said = f"At the options' first token, 'a bath' and 'a dog' both start with the same token ' a' (P = {percent(p)})."
    assert text.count(said) == 1 and "own token" not in text and "starts with" not in text
    # options that start differently: one sentence each, naming each option's own first token
    first = [tiny_lm.tokenizer.decode(sl.engine.text.encode(tiny_lm, PREMISE, OPTIONS[i]).scored_ids[:1])
             for i in (tiny_why.gold, tiny_why.against)]
    text = tiny_why.explain()
    assert f"the gold 'bathtub' starts with {first[0]!r} (P = " in text
    assert f"{OPTIONS[tiny_why.against].strip()!r} starts with {first[1]!r} (P = " in text


def test_probabilities_a_tenth_of_a_nat_apart_print_apart(tiny_lm, monkeypatch):
    # the gold's listed token at 0.0500%, its unlisted forms 0.09 nats above: fixed decimals print both "0.05%"
    mass = {"gold_listed": 0.000500, "gold_unlisted": 0.000547, "against_listed": 0.0123, "against_unlisted": 0.0,
            "shared": 0.00052, "against_ratio": 0.0, "gold_ratio": 0.000547 / 0.000500}
    mass["mass_gain"] = math.log1p(mass["gold_ratio"])
    # the module (``surfacelab.why`` is the function): the account reads these numbers instead of measuring them
    monkeypatch.setattr(importlib.import_module("surfacelab.why"), "first_token_numbers", lambda *args: mass)
    w = sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, domain_premise=DOMAIN, occlusion=False)
    said = w.terms.set_index("term")["sentence"]
    assert said["gold listed"].endswith("(P = 0.0500%).")
    assert "hold 0.0547% (1.09× the listed token)" in said["gold unlisted"]
    assert said["shared"].endswith("hold 0.0520%.")
    assert "(P = 0.0500%)" in w.explain() and "hold 0.0547%" in w.explain()


def test_scores_that_are_not_finite_are_not_blamed_on_a_missing_domain_premise(tiny_lm):
    raw = pd.DataFrame({"option": [" tub", " bathtub"], "logprob": [np.nan, -5.0], "n_tokens": [1, 3],
                        "domain_logprob": [-3.0, -9.0], "null_logprob": [-4.0, -8.0]})
    r = sl.MCResult("The man took a bath in the", [" tub", " bathtub"], " the", "m",
                    sl.scoring.option_table(raw), pd.DataFrame(), gold=1)
    with pytest.raises(ValueError, match=r"scorer: the scores of 'lm' are not finite \(' tub' \(nan\)\)") as err:
        sl.why(tiny_lm, r)
    assert "domain premise" not in str(err.value)
