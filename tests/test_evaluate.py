"""evaluate(), evaluate_fewshot(), ablate(), EvalResult, the why labels and McNemar (the eval command: test_cli.py)."""

from __future__ import annotations

import dataclasses
import math
import statistics

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import engine, surface_forms, tasks
from surfacelab.engine import cache
from surfacelab.evaluate import _items_frame, ablate, evaluate, evaluate_fewshot
from surfacelab.runs import label_table, mcnemar
from surfacelab.why import verdicts
from surfacelab.why.verdicts import label_counts
from surfacelab.scoring import option_table
from surfacelab.tasks import Item, Task

SCORERS = ["lm", "avg", "per_char", "unc", "dcpmi", "pmi_null"]
# each scorer recomputed by hand from the raw columns of one (item, option) row
BY_HAND = {
    "lm": lambda r: r["logprob"],
    "avg": lambda r: r["logprob"] / r["n_tokens"],
    "per_char": lambda r: r["logprob"] / len(r["option"]),
    "unc": lambda r: r["domain_logprob"],
    "dcpmi": lambda r: r["logprob"] - r["domain_logprob"],
    "pmi_null": lambda r: r["logprob"] - r["null_logprob"],
}


@pytest.fixture(scope="module")
def data_root():
    assert (tasks.DATA_DIR / "copa" / "val.jsonl").is_file(), "the shipped evaluation data is missing"
    return tasks.DATA_DIR


@pytest.fixture(scope="module")
def copa20(data_root):
    return tasks.load("copa", "val", source=data_root, limit=20)


@pytest.fixture(scope="module")
def result(tiny_lm, copa20):
    return evaluate(tiny_lm, copa20, SCORERS, progress=False)


def _check_by_hand(res, task):
    """Predictions and accuracy recomputed with plain Python from the long frame."""
    rows = res.scores.to_dict("records")
    for s in res.scorers:
        correct = 0
        for i, it in enumerate(task.items):
            vals = [BY_HAND[s](r) for r in rows if r["item"] == i]
            assert len(vals) == len(it.options)
            pred = vals.index(max(vals))
            assert res.items.loc[i, f"pred_{s}"] == pred, (s, i)
            correct += pred == it.gold
        acc = res.accuracy.set_index("scorer").loc[s]
        assert acc["correct"] == correct
        assert math.isclose(acc["accuracy"], correct / len(task.items))


def test_accuracy_recomputed_by_hand(result, copa20):
    assert len(result.items) == 20
    assert len(result.scores) == sum(len(it.options) for it in copa20)
    assert list(result.items["id"]) == [it.id for it in copa20]
    assert list(result.items["gold"]) == [it.gold for it in copa20]
    _check_by_hand(result, copa20)
    acc = {s: result.items[f"correct_{s}"].mean() for s in SCORERS}
    assert result.best() == [s for s in SCORERS if acc[s] == max(acc.values())]


def test_raw_scores_match_independent_engine_calls(tiny_lm, result, copa20):
    it = copa20[3]
    direct = engine.logprobs(tiny_lm, it.requests() + it.domain_requests() + [("", o) for o in it.options],
                             cache=False, progress=False)
    k = len(it.options)
    rows = result.scores[result.scores["item"] == 3]
    np.testing.assert_allclose(rows["logprob"], [d.total for d in direct[:k]], atol=1e-5)
    np.testing.assert_allclose(rows["domain_logprob"], [d.total for d in direct[k:2 * k]], atol=1e-5)
    np.testing.assert_allclose(rows["null_logprob"], [d.total for d in direct[2 * k:]], atol=1e-5)
    for s in SCORERS:  # rank 1 = the predicted option
        top = rows[rows[f"rank_{s}"] == 1]["option_index"].min()
        assert result.items.loc[3, f"pred_{s}"] == top


def test_bootstrap_ci_contains_accuracy_and_is_seeded(tiny_lm, copa20, result):
    acc = result.accuracy
    assert ((acc.ci_low <= acc.accuracy) & (acc.accuracy <= acc.ci_high)).all()
    assert ((acc.ci_low >= 0) & (acc.ci_high <= 1)).all()
    # width close to the normal approximation 2 * 1.96 * sqrt(p(1-p)/n)
    p = acc.accuracy.to_numpy()
    normal = 2 * 1.96 * np.sqrt(p * (1 - p) / 20)
    np.testing.assert_allclose(acc.ci_high - acc.ci_low, normal, atol=0.12)
    again = evaluate(tiny_lm, copa20, SCORERS, progress=False)
    pd.testing.assert_frame_equal(again.accuracy, acc)
    assert evaluate(tiny_lm, copa20, "lm", n_boot=0, progress=False).accuracy["ci_low"].isna().all()


def test_mcnemar_against_a_hand_computed_binomial():
    a = [True] * 7 + [False] * 2 + [True] * 5 + [False] * 3
    b = [False] * 7 + [True] * 2 + [True] * 5 + [False] * 3
    only_a, only_b, p = mcnemar(a, b)
    # two-sided exact binomial: 2 * P(X <= 2), X ~ Bin(9, 1/2) = 2 * (1 + 9 + 36) / 512
    assert (only_a, only_b) == (7, 2)
    assert math.isclose(p, 2 * (1 + 9 + 36) / 512)
    assert mcnemar([True, False], [True, False]) == (0, 0, 1.0)
    with pytest.raises(ValueError, match="b"):
        mcnemar([True], [True, False])


def test_mcnemar_on_known_tables():
    # 2 items only a gets right, 1 only b: two-sided binomial P(X <= 1 or X >= 2 | n=3, 1/2) = 1
    assert mcnemar([1, 1, 0, 0, 1, 1], [0, 1, 1, 0, 0, 1]) == (2, 1, 1.0)
    # 8 discordant items all for a: 2 * 0.5**8
    assert mcnemar([1] * 8 + [0, 1], [0] * 8 + [0, 1]) == (8, 0, pytest.approx(2 * 0.5**8))
    # 6 vs 1: 2 * P(X <= 1 | n=7) = 2 * 8 / 128
    assert mcnemar([1] * 6 + [0], [0] * 6 + [1])[2] == pytest.approx(16 / 128)
    assert mcnemar([1, 0], [1, 0]) == (0, 0, 1.0)


def test_paired_frame_has_every_pair_in_scorer_order(result):
    pairs = [(r.scorer_a, r.scorer_b) for r in result.paired.itertuples()]
    assert pairs == [(a, b) for k, a in enumerate(SCORERS) for b in SCORERS[k + 1:]]
    first = result.paired.iloc[0]
    a, b = result.items["correct_" + first.scorer_a], result.items["correct_" + first.scorer_b]
    assert (first.only_a, first.only_b, first.p_value) == mcnemar(a, b)
    assert first.acc_a == pytest.approx(a.mean()) and first.acc_b == pytest.approx(b.mean())


# --------------------------------------------------------------------------- why labels on constructed items
# options, gold, logprob, n_tokens, domain_logprob, mass (gold ratio, mass gain) or None, expected why, rescued_by;
# the gap terms by hand: length = (n_g - n_a)(u_g + u_a)/2, prior per token = (n_g + n_a)/2 (u_g - u_a) with
# u = domain_logprob / n, evidence = LM gap - prior gap; shares are each term's part of the negative total.
CASES = [
    # gap -4 = length -14 + prior per token +9 + evidence +1: all of the loss is length
    ([" a", " a much longer gold answer"], 1, [-2.0, -6.0], [1, 5], [-5.0, -10.0], None, "length",
     "avg,per_char,dcpmi"),
    # gap -1 = 0 + (-2.5) + 1.5: prior
    ([" cat", " dog"], 1, [-1.0, -2.0], [1, 1], [-0.5, -3.0], None, "prior", "dcpmi"),
    ([" x", " y"], 1, [-1.0, -1.0], [1, 1], [-1.0, -1.0], None, "tie", ""),
    ([" sun", " moon"], 0, [-1.0, -3.0], [1, 1], [-1.0, -2.0], None, "right", ""),
    # gap -2 = 0 + 0.5 + (-2.5): all of the loss is evidence (the prior favours the gold: Unc rescues it)
    ([" sun", " moon"], 1, [-1.0, -3.0], [1, 1], [-1.5, -1.0], None, "premise evidence", "unc"),
    # gap -1 = 0 + (-0.8) + (-0.2); unlisted gold forms hold 2x, counting forms adds log 3 - log 1.1 > 1
    ([" tub", " sink"], 0, [-3.0, -2.0], [1, 1], [-3.0, -2.2], (2.0, math.log(3) - math.log(1.1)), "split mass", ""),
    ([" tub", " sink"], 0, [-3.0, -2.0], [1, 1], [-3.0, -2.2], (0.4, math.log(1.4) - math.log(1.1)), "prior", ""),
    ([" A", " B"], 1, [-1.0, -2.0], [1, 1], [-0.5, -2.0], None, "letter bias", "dcpmi"),
    # gap -1.6 = -0.7 + (-0.3) + (-0.6): no term holds half
    ([" p", " q r"], 1, [-1.0, -2.6], [1, 2], [-0.6, -1.6], None, "mixed", ""),
]


def _constructed(cases, scorers, with_domain=True):
    items = [Item(str(i), "premise", opts, gold, " so") for i, (opts, gold, *_rest) in enumerate(cases)]
    task = Task("constructed", "test", items, tasks.SPECS["copa"].templates["paper"], "memory")
    raw = pd.DataFrame({
        "item": [i for i, c in enumerate(cases) for _ in c[0]],
        "option_index": [j for c in cases for j in range(len(c[0]))],
        "is_gold": [j == c[1] for c in cases for j in range(len(c[0]))],
        "option": [o for c in cases for o in c[0]],
        "logprob": [v for c in cases for v in c[2]],
        "n_tokens": [v for c in cases for v in c[3]],
        "domain_logprob": [v for c in cases for v in c[4]] if with_domain else np.nan,
        "null_logprob": np.nan,
    })
    mass = {i: {"gold_ratio": c[5][0], "mass_gain": c[5][1]} for i, c in enumerate(cases) if c[5] is not None}
    return task, _items_frame(task, option_table(raw, by="item"), scorers, mass)


def test_why_labels_on_constructed_items():
    scorers = ["lm", "avg", "per_char", "unc", "dcpmi"]
    _, frame = _constructed(CASES, scorers)
    assert list(frame["why"]) == [c[6] for c in CASES]
    assert list(frame["rescued_by"]) == [c[7] for c in CASES]
    assert frame.loc[0, ["gap_lm", "gap_length", "gap_prior_per_token", "gap_evidence"]].tolist() == \
        pytest.approx([-4.0, -14.0, 9.0, 1.0])
    parts = frame["gap_length"] + frame["gap_prior_per_token"] + frame["gap_evidence"]
    np.testing.assert_allclose(parts, frame["gap_lm"], atol=1e-12)
    assert list(frame["against"]) == [0, 0, 0, 1, 0, 1, 1, 0, 0]  # LM's pick, or LM's runner-up when LM is right
    assert (frame["prior"] == "domain").all()
    assert frame.loc[2, "tie_lm"] and frame.loc[2, "pred_lm"] == 0  # first option on an exact tie
    assert not frame.loc[0, "tie_lm"]
    labels = label_counts(frame, scorers).set_index("why")
    assert labels.loc["prior", "n"] == 2 and labels.loc["right", "n"] == 1 and labels["n"].sum() == len(CASES)
    assert list(labels.index) == ["right", "tie", "premise evidence", "split mass", "length", "prior",
                                  "letter bias", "mixed"]
    assert labels.loc["prior", "rescued_dcpmi"] == 1 and labels.loc["length", "rescued_avg"] == 1
    assert labels.loc["premise evidence", "rescued_unc"] == 1 and labels.loc["prior", "share"] == 2 / len(CASES)
    # no prior context scored: the lost items say so
    _, bare = _constructed(CASES[:2], ["lm", "avg"], with_domain=False)
    assert list(bare["why"]) == ["lost", "lost"] and (bare["prior"] == "").all()


def _split_mass_candidates(items):
    """The items whose label split mass can decide: LM wrong, no exact tie, not "premise evidence"."""
    return int((~items["why"].isin(["right", "tie", "premise evidence"])).sum())


def test_labels_table_and_one_extra_next_token_call(tiny_lm, copa20, monkeypatch, tmp_path):
    store = cache.ScoreCache(tmp_path / "scores.sqlite")
    monkeypatch.setattr(engine, "default_cache", lambda: store)
    calls = {"logprobs": 0, "next_token_logprobs": 0}
    for name in calls:
        real = getattr(engine, name)
        monkeypatch.setattr(engine, name, lambda *a, _r=real, _n=name, **k: calls.__setitem__(_n, calls[_n] + 1)
                            or _r(*a, **k))
    res = evaluate(tiny_lm, copa20, SCORERS, progress=False)
    assert calls == {"logprobs": 1, "next_token_logprobs": 1}
    lost = res.items[~res.items["correct_lm"]]
    cost = res.meta["why_cost"]
    assert cost["prompts"] == lost["mass_ratio"].notna().sum() > 0
    assert cost["items"] == _split_mass_candidates(res.items) and cost["items_cached"] == 0
    planned = []  # a warm rerun plans no first token (no tokenizer work): every item's numbers are in the cache
    monkeypatch.setattr(verdicts, "first_token_plan", lambda *a, _r=verdicts.first_token_plan: planned.append(a)
                        or _r(*a))
    again = evaluate(tiny_lm, copa20, SCORERS, progress=False)
    assert calls == {"logprobs": 2, "next_token_logprobs": 1} and planned == []
    assert again.meta["why_cost"]["items_cached"] == cost["items"] and again.meta["why_cost"]["prompts"] == 0
    pd.testing.assert_frame_equal(again.items, res.items)
    assert res.items.loc[res.items["correct_lm"], "mass_ratio"].isna().all()
    assert res.items.loc[res.items["why"] == "premise evidence", "mass_ratio"].isna().all()  # cannot change them
    labels = res.labels.set_index("why")
    assert labels["n"].sum() == len(res.items)
    for label, row in labels.iterrows():
        sub = res.items[res.items["why"] == label]
        assert row["n"] == len(sub)
        for s in SCORERS:
            assert row[f"rescued_{s}"] == sub[f"correct_{s}"].sum()
    table = label_table([res, res])
    assert len(table) == 2 * len(res.labels) and set(table["task"]) == {res.task}
    # the item numbers agree with sl.why on the same item
    i = int(lost.loc[lost["mass_ratio"].notna(), "item"].iloc[0])
    it = copa20[i]
    w = sl.why(tiny_lm, it.premise, it.options, gold=it.gold, domain_premise=it.domain_premise)
    row = res.items.loc[i]
    assert w.against == row["against"] and w.verdict == row["why"]
    assert w.term("LM gap") == pytest.approx(row["gap_lm"], abs=1e-5)
    assert w.term("length", "gap") == pytest.approx(row["gap_length"], abs=1e-5)
    assert w.term("gold ratio", "first token") == pytest.approx(row["mass_ratio"], rel=1e-3)


def test_split_mass_is_cached_per_item_whatever_the_item_set(tiny_lm, data_root, monkeypatch, tmp_path):
    """An item's split-mass entry depends on that item and the model only: a run over another item set reads the
    items it shares with an earlier run from the cache, and its numbers equal a run with no cache at all."""
    store = cache.ScoreCache(tmp_path / "scores.sqlite")
    monkeypatch.setattr(engine, "default_cache", lambda: store)
    copa = tasks.load("copa", "val", source=data_root, limit=40)
    first = evaluate(tiny_lm, dataclasses.replace(copa, items=copa.items[:25]), SCORERS, progress=False)
    later = dataclasses.replace(copa, items=copa.items[10:40])
    second = evaluate(tiny_lm, later, SCORERS, progress=False)
    shared = _split_mass_candidates(first.items.iloc[10:])
    assert shared > 0 and second.meta["why_cost"]["items_cached"] == shared
    assert second.meta["why_cost"]["items"] == _split_mass_candidates(second.items)
    monkeypatch.setattr(engine, "default_cache", lambda: None)
    fresh = evaluate(tiny_lm, later, SCORERS, progress=False)
    assert fresh.meta["why_cost"]["items_cached"] == 0
    for col in ("why", "against", "rescued_by"):
        np.testing.assert_array_equal(second.items[col].to_numpy(), fresh.items[col].to_numpy(), err_msg=col)
    for col in ("mass_ratio", "mass_gain", "gap_lm"):  # forwards batched with other prompts: float noise only
        np.testing.assert_allclose(second.items[col], fresh.items[col], rtol=1e-5, atol=1e-6, err_msg=col)
    assert second.items["mass_ratio"].notna().sum() > 0


def test_copa_flipped_collapses_every_scorer_onto_lm(tiny_lm, data_root):
    flipped = tasks.load("copa-flipped", "val", source=data_root, limit=20)
    res = evaluate(tiny_lm, flipped, SCORERS, progress=False)
    assert res.meta["flipped"]
    assert (res.scores["context"] != "").all()
    assert res.scores.groupby("item")["option"].nunique().eq(1).all()  # one shared continuation
    for s in ["avg", "per_char", "dcpmi", "pmi_null"]:
        assert (res.items[f"pred_{s}"] == res.items["pred_lm"]).all(), s
    assert res.items["tie_unc"].all() and (res.items["pred_unc"] == 0).all()
    _check_by_hand(res, flipped)


# --------------------------------------------------------------------------- ablate, few-shot, save
def _short(task: Task, n: int, max_chars: int = 50) -> Task:
    return dataclasses.replace(task, items=[it for it in task.items if len(it.meta["raw"]["sentence"]) < max_chars][:n])


def test_ablate_grid_matches_separate_evaluations_and_uses_one_engine_call(tiny_lm, data_root, monkeypatch):
    sst = _short(tasks.load("sst-2", "test", source=data_root, sample=60), 6)
    tpls = tasks.templates("sst-2")[:2]
    dps = [" It was", " The tone is"]
    calls = []
    real = engine.logprobs
    monkeypatch.setattr(engine, "logprobs", lambda *a, **k: calls.append(1) or real(*a, **k))
    frame = ablate(tiny_lm, sst, templates=tpls, domain_premises=dps, scorers="lm,dcpmi", progress=False, n_boot=50)
    assert len(calls) == 1
    assert len(frame) == 2 * 2 * 2
    assert set(frame["template"]) == {t.name for t in tpls} and set(frame["domain_premise"]) == set(dps)
    assert (frame["n"] == 6).all()
    monkeypatch.setattr(engine, "logprobs", real)
    one = evaluate(tiny_lm, sst.with_template(tpls[1], domain_premise=dps[0]), "lm,dcpmi", progress=False)
    cell = frame[(frame.template == tpls[1].name) & (frame.domain_premise == dps[0])].set_index("scorer")
    np.testing.assert_allclose(cell.loc[["lm", "dcpmi"], "accuracy"], one.accuracy["accuracy"])


def test_fewshot_mean_and_std_over_seeds(tiny_lm, data_root):
    base = tasks.load("copa", "val", source=data_root, limit=4)
    frame = evaluate_fewshot(tiny_lm, base, 1, seeds=(0, 1, 2), scorers="lm,dcpmi", progress=False)
    assert list(frame["scorer"]) == ["lm", "dcpmi"]
    for s in ["lm", "dcpmi"]:
        accs = [evaluate(tiny_lm, tasks.fewshot(base, 1, seed=k), s, progress=False).accuracy["accuracy"].item()
                for k in (0, 1, 2)]
        row = frame.set_index("scorer").loc[s]
        assert [row[f"acc_seed_{k}"] for k in (0, 1, 2)] == accs
        assert math.isclose(row["mean"], statistics.mean(accs))
        assert math.isclose(row["std"], statistics.stdev(accs))


def test_save_writes_every_frame(result, tmp_path):
    d = result.save(tmp_path / "run")
    for name in ("items", "scores", "accuracy", "paired", "labels"):
        back = pd.read_csv(d / f"{name}.csv")
        assert len(back) == len(getattr(result, name))
    assert (d / "meta.json").is_file()
    assert pd.read_csv(d / "accuracy.csv")["accuracy"].tolist() == pytest.approx(result.accuracy["accuracy"].tolist())


# --------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument(tiny_lm, copa20):
    with pytest.raises(ValueError, match="scorer"):
        evaluate(tiny_lm, copa20, ["lm", "nope"])
    with pytest.raises(ValueError, match="scorers"):
        evaluate(tiny_lm, copa20, [])
    with pytest.raises(ValueError, match="has no items"):
        evaluate(tiny_lm, dataclasses.replace(copa20, items=[]))
    for bad in (0, -3, True, 2.5):
        with pytest.raises(ValueError, match="limit"):
            evaluate(tiny_lm, copa20, "lm", limit=bad)
    with pytest.raises(TypeError, match="task"):
        evaluate(tiny_lm, [("a", "b")], "lm")
    with pytest.raises(ValueError, match="n_boot"):
        evaluate(tiny_lm, copa20, "lm", n_boot=-1)
    with pytest.raises(ValueError, match="seeds"):
        evaluate_fewshot(tiny_lm, copa20, 1, seeds=())
    with pytest.raises(ValueError, match="n_shot"):
        evaluate_fewshot(tiny_lm, copa20, 0)
    with pytest.raises(ValueError, match="templates"):
        ablate(tiny_lm, copa20, templates=[])


def test_truncation_is_reported_in_the_frames(tiny_lm):
    premise = " ".join(["The man took a bath in the bathtub and"] * 6)  # longer than the 64-token window
    options = [[" tub.", " a very large bathtub full of soap."], [" sink.", " tub."]]
    items = [Item(f"i{k}", premise, opts, 0, " the") for k, opts in enumerate(options)]
    task = Task("constructed", "test", items, tasks.SPECS["copa"].templates["paper"], "memory")
    with pytest.warns(UserWarning, match=r"window of 64 tokens: the context of 4 options \(2 items\).*the options of "
                                         r"1 items were cut by different amounts"):
        res = evaluate(tiny_lm, task, "lm,dcpmi", progress=False, n_boot=0)
    n_ctx = len(tiny_lm.tokenizer(premise, add_special_tokens=False)["input_ids"])
    for row in res.scores.itertuples():  # what cannot fit beside the option, counted with the tokenizer alone
        n_opt = len(tiny_lm.tokenizer(row.option, add_special_tokens=False)["input_ids"])
        assert row.truncated == n_ctx + n_opt - tiny_lm.max_length
    assert (res.scores["domain_truncated"] == 0).all()
    assert list(res.items["truncated"]) == list(res.scores.groupby("item")["truncated"].max())
    assert list(res.items["truncation_differs"]) == [True, False]  # " sink." and " tub." have as many tokens


def test_limit_keeps_the_first_items(result, tiny_lm, copa20):
    small = evaluate(tiny_lm, copa20, SCORERS, limit=5, progress=False)
    assert list(small.items["id"]) == list(result.items["id"][:5])
    # the same numbers up to float32 rounding: 5 items are packed in other rows than 20 (4.7e-7 nats apart in a
    # gap_evidence of 3e-4 on one CPU), so differences of near-equal sums are compared in nats, not relatively
    pd.testing.assert_frame_equal(small.items.drop(columns="why"), result.items.drop(columns="why").head(5),
                                  check_exact=False, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- the real model
@pytest.mark.slow
def test_real_model_copa_val_20(real_lm, data_root):
    copa = tasks.load("copa", "val", source=data_root, limit=20)
    res = evaluate(real_lm, copa, "lm,avg,per_char,unc,dcpmi", progress=False)
    _check_by_hand(res, copa)
    it = copa[0]
    direct = sl.score(real_lm, it.premise, it.options, domain_premise=it.domain_premise)
    rows = res.scores[res.scores["item"] == 0]
    np.testing.assert_allclose(rows["logprob"], direct.table["logprob"], atol=1e-4)
    np.testing.assert_allclose(rows["dcpmi"], direct.table["dcpmi"], atol=1e-4)
    assert res.accuracy["accuracy"].between(0, 1).all()


@pytest.mark.slow
def test_real_model_copa_val_labels_match_an_independent_computation(real_lm, data_root):
    """Every item's label recomputed with plain forward passes and the rules of surfacelab.why's docstring."""
    import torch

    from surfacelab import text

    copa = tasks.load("copa", "val", source=data_root)
    res = evaluate(real_lm, copa, "lm,avg,per_char,unc,dcpmi", progress=False)

    def log_softmax(ids):
        with torch.no_grad():
            return torch.log_softmax(real_lm.model(torch.tensor([ids])).logits[0].float(), -1)

    def total(ctx, cont):
        e = text.encode(real_lm, ctx, cont)
        lp = log_softmax(e.input_ids)
        return float(sum(lp[k - 1, t] for k, t in enumerate(e.input_ids) if k >= e.start)), len(e.scored_ids)

    labels = []
    for it in copa:
        lp, n = map(list, zip(*(total(it.premise, o) for o in it.options)))
        pred = lp.index(max(lp))
        if pred == it.gold:
            labels.append("right")
            continue
        g, a = it.gold, pred
        dom = [total(it.domain_premise, o)[0] for o in it.options]
        ug, ua = dom[g] / n[g], dom[a] / n[a]
        gap = lp[g] - lp[a]
        terms = {"premise evidence": gap - (dom[g] - dom[a]), "length": (n[g] - n[a]) * (ug + ua) / 2,
                 "prior": (n[g] + n[a]) / 2 * (ug - ua)}
        neg = sum(min(v, 0) for v in terms.values())
        share = {k: min(v, 0) / neg for k, v in terms.items()}
        # mass at the first token where the options differ, from the variants of each option's text
        encs = [text.encode(real_lm, it.premise, o) for o in it.options]
        seqs = [e.scored_ids for e in encs]
        d = 0
        while len({s[d] for s in seqs}) == 1:
            d += 1
        cut = encs[0].spans[d - 1][1] if d else 0
        conts = [e.continuation for e in encs]
        tail = "." if all(c.endswith(".") for c in conts) else ""
        owners = {}
        for i, c in enumerate(conts):
            owners.setdefault(seqs[i][d], set()).add(i)
            for v in surface_forms.variants(c[cut:len(c) - len(tail)])["variant"]:
                ids = text.encode(real_lm, it.premise, c[:cut] + v + tail).scored_ids
                if len(ids) > d and ids[:d] == seqs[0][:d]:
                    owners.setdefault(ids[d], set()).add(i)
        nxt = log_softmax(encs[0].input_ids[:encs[0].start + d])[-1].exp()
        ratio = {i: sum(float(nxt[t]) for t, o in owners.items() if o == {i} and t != seqs[i][d])
                 / float(nxt[seqs[i][d]]) for i in (g, a)}
        gain = math.log1p(ratio[g]) - math.log1p(ratio[a])
        if share["premise evidence"] >= 0.5:
            labels.append("premise evidence")
        elif ratio[g] >= 0.5 and gap + gain >= 0:
            labels.append("split mass")
        elif share["length"] >= 0.5:
            labels.append("length")
        elif share["prior"] >= 0.5:
            labels.append("prior")
        else:
            labels.append("mixed")
    assert list(res.items["why"]) == labels
    counts = res.labels.set_index("why")["n"].to_dict()
    assert counts == {k: labels.count(k) for k in set(labels)}
    assert counts["right"] == res.items["correct_lm"].sum()
