"""The keyed request plan shared by score_items and evaluate: every result lands on its own key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from surfacelab import engine, paraphrase, scoring, tasks
from surfacelab.evaluate import evaluate
from surfacelab.engine.requests import Entry, Key, Plan
from surfacelab.why import from_result
from surfacelab.tasks import Item, Task

# options of different token lengths; " mat" and " grand piano bench" recur across items, under other
# premises, and the domain premise " the" recurs across items: a mix-up by position or by string shows
ITEMS = [
    ("The cat sat on the", [" mat", " grand piano bench", " a"], " the"),
    ("Paris is in", [" grand piano bench", " mat"], None),
    ("She put the cup on a", [" mat", " table", " very old wooden stool"], " the"),
]
TOL = 1e-5


def _alone(lm, context: str, option: str) -> engine.Scored:
    """One request scored by itself: no batching, no deduplication, no cache."""
    return engine.logprobs(lm, [(context, option)], batch_size=1, progress=False, cache=False)[0]


def test_the_fixture_can_tell_the_requests_apart(tiny_lm):
    """The check below could fail: the same option scores differently under another premise."""
    a, b = (_alone(tiny_lm, ctx, " mat").total for ctx in ("The cat sat on the", "Paris is in"))
    assert abs(a - b) > 100 * TOL


def test_plan_results_come_back_under_their_own_key(tiny_lm):
    plan = Plan([[Entry((p,) * len(o), tuple(o), d) for p, o, d in ITEMS], [Entry(("x y", "z"), (" mat", " mat"))]])
    keys = [r.key for r in plan.requests]
    assert len(set(keys)) == len(keys) == 9 + 4 + 9 + 4  # items without a domain premise have no domain condition
    assert Key(0, 1, "domain", 0) not in keys and Key(1, 0, "domain", 0) not in keys
    scores = plan.run(tiny_lm, progress=False, cache=False)
    assert set(scores) == set(keys)
    for r in plan.requests:
        assert scores[r.key].request == (r.context, r.continuation), r.key


def test_score_items_maps_every_option_and_condition_to_its_own_request(tiny_lm):
    results = scoring.score_items(tiny_lm, ITEMS, progress=False, cache=False)
    for (premise, options, domain), res in zip(ITEMS, results):
        t = res.table
        assert list(t["option"]) == options
        for j, opt in enumerate(options):
            lm = _alone(tiny_lm, premise, opt)
            assert abs(t.loc[j, "logprob"] - lm.total) < TOL and t.loc[j, "n_tokens"] == lm.n_tokens
            assert abs(t.loc[j, "null_logprob"] - _alone(tiny_lm, "", opt).total) < TOL
            if domain is None:
                assert np.isnan(t.loc[j, "domain_logprob"])
            else:
                assert abs(t.loc[j, "domain_logprob"] - _alone(tiny_lm, domain, opt).total) < TOL
            tok = res.tokens[(res.tokens["option"] == opt) & (res.tokens["condition"] == "premise")]
            np.testing.assert_allclose(tok["logprob"], lm.logprob, atol=TOL)


def test_evaluate_maps_every_row_to_its_own_request(tiny_lm):
    items = [Item(str(i), p, o, len(o) - 1, d or " so") for i, (p, o, d) in enumerate(ITEMS)]
    # a flipped-style item: each option has its own context, the continuation is shared
    items.append(Item("flip", "", [" it rained", " it rained"], 1, " so",
                      premise_per_option=["The grass is wet because", "The sun is out, so"]))
    task = Task("constructed", "test", items, tasks.SPECS["copa"].templates["paper"], "memory")
    res = evaluate(tiny_lm, task, "lm,dcpmi,pmi_null", progress=False, n_boot=0)
    assert len(res.scores) == sum(len(it.options) for it in items)
    for row in res.scores.itertuples():
        it = items[row.item]
        assert (row.id, row.option, row.context) == (it.id, it.options[row.option_index],
                                                     it.contexts()[row.option_index])
        lm = _alone(tiny_lm, row.context, row.option)
        assert abs(row.logprob - lm.total) < TOL and row.n_tokens == lm.n_tokens
        assert abs(row.domain_logprob - _alone(tiny_lm, it.domain_premise, row.option).total) < TOL
        assert abs(row.null_logprob - _alone(tiny_lm, "", row.option).total) < TOL
    # EvalResult.result(i) reads its rows back into the table score() gives for the same item
    premise, options, domain = ITEMS[0]
    alone = scoring.score(tiny_lm, premise, options, domain_premise=domain).table
    pd.testing.assert_frame_equal(res.result(0).table, alone, check_exact=False, atol=TOL)


def test_plan_results_reads_one_items_options_in_order(tiny_lm):
    plan = Plan([[Entry((p,) * len(o), tuple(o), d) for p, o, d in ITEMS]], ["premise", "domain"])
    scores = plan.run(tiny_lm, progress=False, cache=False)
    for i, (premise, options, domain) in enumerate(ITEMS):
        assert [s.request for s in plan.results(scores, i)] == [(premise, o) for o in options]
        if domain is None:
            with pytest.raises(KeyError):
                plan.results(scores, i, "domain")
        else:
            assert [s.request for s in plan.results(scores, i, "domain")] == [(domain, o) for o in options]


def test_mass_items_maps_every_form_and_condition_to_its_own_request(tiny_lm):
    # forms of different token lengths, recurring across items (under other premises, in other concepts)
    items = [{"premise": p, "domain_premise": d, "concepts": {"a": o[:1], "b": o[1:]}} if d else
             {"premise": p, "concepts": {"a": o[1:], "b": o[:1]}} for p, o, d in ITEMS]
    for it, res in zip(items, paraphrase.mass_items(tiny_lm, items, top_k=0, progress=False, cache=False)):
        forms = res.forms.set_index("form")
        assert sorted(forms.index) == sorted(f for fs in it["concepts"].values() for f in fs)
        for form, row in forms.iterrows():
            lm = _alone(tiny_lm, it["premise"], form)
            assert abs(row["logprob"] - lm.total) < TOL and row["n_tokens"] == lm.n_tokens, form
            if "domain_premise" in it:
                assert abs(row["domain_logprob"] - _alone(tiny_lm, it["domain_premise"], form).total) < TOL
            else:
                assert np.isnan(row["domain_logprob"])


@pytest.mark.parametrize("all_options", [True, False])
def test_why_occlusion_maps_every_occluded_premise_and_option_to_its_own_request(tiny_lm, all_options):
    # options of 1, 4 and 2 tokens; the gold (2) comes after the option it is compared with
    premise, options = "The cat sat on the mat", [" a", " grand piano bench", " mat"]
    res = scoring.score(tiny_lm, premise, options, domain_premise=" the", cache=False)
    w = from_result(tiny_lm, res, gold=2, against=0, all_options=all_options, cache=False)
    prior = res.table["domain_logprob"].to_numpy()
    scored = range(3) if all_options else (0, 2)
    assert len(w.attribution) == 2 * len(premise.split())
    for row in w.attribution.itertuples():
        lp = np.full(3, -np.inf)
        for i in scored:
            lp[i] = _alone(tiny_lm, row.occluded, options[i]).total
        assert abs(row.lm_margin - (lp[2] - lp[0])) < TOL, row.occluded
        assert (row.lm_winner, row.dcpmi_winner) == (np.argmax(lp), np.argmax(lp - prior)), row.occluded


def test_plan_refuses_unknown_conditions():
    with pytest.raises(ValueError, match="conditions"):
        Plan([[Entry(("a",), (" b",))]], ["premise", "prior"])
    with pytest.raises(ValueError, match="conditions"):
        Plan([[Entry(("a",), (" b",))]], ["null"])
