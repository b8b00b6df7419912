"""Batch Calibration and domain-context calibration as cloze scorers of fixed label sets, each against its formula
computed here from direct forward passes (not through the engine)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from scipy.special import logsumexp

import surfacelab as sl
from surfacelab import tasks
from surfacelab.tasks import Task


def _short(task: Task, n: int, max_chars: int = 45) -> Task:
    return dataclasses.replace(task, items=[it for it in task.items if len(it.meta["raw"]["sentence"]) < max_chars][:n])


@pytest.fixture(scope="module")
def sst(tiny_lm):
    return _short(tasks.load("sst-2", "test", sample=80), 8)


def direct_logprob(lm, context: str, option: str) -> float:
    """Σ log P(option | context): one forward of context+option, float32 log-softmax, the option's tokens summed (the
    context's trailing whitespace scored with the option, as lm-eval does)."""
    tok, model = lm.tokenizer, lm.model
    stripped = context.rstrip()
    context, option = stripped, context[len(stripped):] + option
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    full = tok(context + option, add_special_tokens=False)["input_ids"]
    assert full[:len(ctx)] == ctx, "the context is not a token prefix here: pick other test strings"
    with torch.no_grad():
        logits = model(torch.tensor([full])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    return float(sum(logp[k - 1, full[k]] for k in range(len(ctx), len(full))))


def test_batch_cal_equals_its_definition_on_a_batch(tiny_lm, sst):
    run = sl.evaluate(tiny_lm, sst, "lm,batch_cal", progress=False, n_boot=0)
    lp = np.array([[direct_logprob(tiny_lm, it.premise, o) for o in it.options] for it in sst.items])
    p = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))  # over the label set, per item
    expected = np.log(p) - np.log(p.mean(axis=0))
    got = run.scores.pivot(index="item", columns="option_index", values="batch_cal").to_numpy()
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert not np.allclose(got, lp - lp.max(axis=1, keepdims=True), atol=1e-3)  # the prior moved the scores
    assert (run.items["pred_batch_cal"] == expected.argmax(axis=1)).all()
    assert run.accuracy.set_index("scorer").loc["batch_cal", "note"] == ""
    # one item of the run keeps the score the run gave it (one item alone has no batch)
    one = run.result(3)
    np.testing.assert_allclose(one.table["batch_cal"], expected[3], atol=1e-4)
    assert one.winner("batch_cal") == sst.items[3].options[int(expected[3].argmax())]


def test_batch_cal_is_not_applicable_to_one_item(tiny_lm):
    r = sl.score(tiny_lm, "The movie was", [" good", " bad"], domain_premise=" the", cache=False)
    assert r.table["batch_cal"].isna().all() and r.table["rank_batch_cal"].isna().all()
    assert "not applicable to one item" in r.not_applicable("batch_cal")
    with pytest.raises(ValueError, match="batch_cal.*not applicable to one item.*run's items"):
        r.winner("batch_cal")
    assert "batch_cal" not in r.winners() and "lm" in r.winners()
    listed = sl.list_scorers().set_index("scorer")  # formula and paper of each
    assert listed.loc["batch_cal", "formula"] == "log p(y|x) − log mean_i p(y|x_i)"
    assert "Zhou et al. 2024" in listed.loc["batch_cal", "description"]
    assert "Fei et al. 2023" in listed.loc["domain_cal", "description"] and listed.loc["domain_cal", "needs"] == \
        "premise,domain_ctx"


def test_batch_cal_is_not_applicable_where_options_differ(tiny_lm, tmp_path):
    copa = tasks.load("copa", "val", limit=6)
    run = sl.evaluate(tiny_lm, copa, "lm,batch_cal", progress=False, n_boot=50)
    acc = run.accuracy.set_index("scorer")
    assert acc.loc["batch_cal", "note"] == "not applicable: options differ per item" and acc.loc["lm", "note"] == ""
    assert np.isnan(acc.loc["batch_cal", ["accuracy", "ci_low", "ci_high"]].to_numpy(dtype=float)).all()
    assert acc.loc["batch_cal", "n"] == 0 and acc.loc["lm", "n"] == 6
    assert run.scores["batch_cal"].isna().all() and (run.items["pred_batch_cal"] == -1).all()
    assert np.isnan(run.paired["p_value"].iloc[0])
    assert run.meta["not_applicable"] == {"batch_cal": "not applicable: options differ per item"}
    with pytest.raises(ValueError, match="options differ per item"):
        run.result(0).winner("batch_cal")
    back = sl.EvalResult.load(run.save(tmp_path / "run"))  # the reason comes back with the run
    assert back.accuracy["note"].tolist() == acc["note"].tolist() and back.meta["not_applicable"] == run.meta[
        "not_applicable"] and back.result(0).not_applicable("batch_cal") == "not applicable: options differ per item"


def test_the_calibrations_of_a_run_in_chunks_are_those_of_one_run(tiny_lm, sst):
    from surfacelab import explore

    whole = sl.evaluate(tiny_lm, sst, "lm,batch_cal,domain_cal", progress=False, n_boot=0)
    chunked = explore.evaluate_in_chunks(tiny_lm, sst, "lm,batch_cal,domain_cal", chunk=3, first_chunk=3, n_boot=0)
    for s in ("batch_cal", "domain_cal"):  # the batch and the content-free words are the whole run's
        np.testing.assert_allclose(chunked.scores[s], whole.scores[s], atol=1e-4)
        for col in (f"pred_{s}", f"correct_{s}"):
            assert chunked.items[col].tolist() == whole.items[col].tolist(), col
    assert chunked.items["rescued_by"].tolist() == whole.items["rescued_by"].tolist()
    assert chunked.accuracy["note"].tolist() == ["", "", ""]
    # the explorer's column and filter of the scorer read the run's predictions
    runs = {"run": chunked}
    assert "run:batch_cal" in explore.columns(runs) and "run:batch_cal" in explore.item_table(runs)
    right = explore.select(runs, right=["run:batch_cal"])
    assert right.tolist() == np.flatnonzero(whole.items["correct_batch_cal"]).tolist()


# --------------------------------------------------------------------------- domain-context calibration
def _draws(texts, samples, seed):
    """Fei et al.'s content-free texts, written out here: words drawn with replacement from the texts' words, each
    text as many words as their mean (random.Random(seed).choices)."""
    import random

    words = [w for t in texts for w in t.split()]
    length = max(1, round(len(words) / len(texts)))
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, k=length)) for _ in range(samples)]


def test_domain_ctx_requests_string_by_string(sst):
    from surfacelab import calibration
    from surfacelab.engine.requests import Entry, Plan

    texts = _draws([it.meta["fields"]["sentence"] for it in sst.items], 3, 5)
    entries = [Entry.of(it) for it in sst.items]
    plan = Plan([calibration.with_samples(entries, calibration.domain_contexts(sst, 3, 5))], ["premise", "domain_ctx"])
    got = [(r.key.item, r.key.option, r.key.variant, r.context, r.continuation) for r in plan.requests
           if r.key.condition == "domain_ctx"]
    assert got == [(i, k, s, f"{texts[s]}:", o) for i in range(len(sst)) for k, o in
                   enumerate([" negative\n", " positive\n"]) for s in range(3)]
    # the same contexts for every item: the engine scores 3 x 2 of them for the whole run
    assert len({(c, o) for _, _, _, c, o in got}) == 6
    # two text fields, each drawn from its own words with its own seed, through the template's pattern
    rte = tasks.load("rte", limit=4)
    premises = _draws([it.meta["fields"]["premise"] for it in rte.items], 2, 0)
    hypotheses = _draws([it.meta["fields"]["hypothesis"] for it in rte.items], 2, 1)
    assert calibration.domain_contexts(rte, 2, 0)[3] == [f" {p}\n question: {h} true or false?\n answer:"
                                                         for p, h in zip(premises, hypotheses)]
    assert calibration.domain_contexts(tasks.load("copa", "val", limit=4)) is None


def test_domain_cal_equals_its_definition(tiny_lm, sst):
    run = sl.evaluate(tiny_lm, sst, "lm,domain_cal", progress=False, n_boot=0, domain_samples=4, seed=2)
    cf = [f"{t}:" for t in _draws([it.meta["fields"]["sentence"] for it in sst.items], 4, 2)]
    options = sst.items[0].options
    prior = np.array([logsumexp([direct_logprob(tiny_lm, c, o) for c in cf]) - np.log(len(cf)) for o in options])
    lp = np.array([[direct_logprob(tiny_lm, it.premise, o) for o in options] for it in sst.items])
    got = run.scores.pivot(index="item", columns="option_index", values="domain_cal").to_numpy()
    np.testing.assert_allclose(got, lp - prior, atol=1e-4)
    assert (run.items["pred_domain_cal"] == (lp - prior).argmax(axis=1)).all()
    assert run.meta["domain_samples"] == 4 and run.accuracy.set_index("scorer").loc["domain_cal", "note"] == ""
    # the engine forwarded each content-free context once for the whole run
    assert run.meta["engine"]["requests"] == len(sst) * 2 * (1 + 4)


def test_domain_cal_is_not_applicable_to_one_item_or_where_options_differ(tiny_lm):
    r = sl.score(tiny_lm, "The movie was", [" good", " bad"], cache=False)
    assert r.table["domain_cal"].isna().all() and "domain_cal" not in r.winners()
    with pytest.raises(ValueError, match="domain_cal.*not applicable to one item: domain-context.*words of a task"):
        r.winner("domain_cal")
    copa = tasks.load("copa", "val", limit=4)
    run = sl.evaluate(tiny_lm, copa, "lm,domain_cal", progress=False, n_boot=0)
    assert run.accuracy.set_index("scorer").loc["domain_cal", "note"] == "not applicable: options differ per item"
    assert run.meta["engine"]["requests"] == sum(len(it.options) for it in copa.items)  # no content-free requests


def test_domain_cal_under_a_chat_template_renders_its_inputs_as_chat_turns(sst):
    from tiny_models import tiny_causal

    model, tok = tiny_causal()
    tok.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
                         "{% if add_generation_prompt %}<assistant>\n{% endif %}")
    lm = sl.load_lm((model, tok), device="cpu")
    items = dataclasses.replace(sst, items=sst.items[:4])
    run = sl.evaluate(lm, items, "lm,domain_cal", progress=False, n_boot=0, domain_samples=3, chat_template=True)

    def turn(user: str) -> str:
        return tok.apply_chat_template([{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True)

    cf = [turn(f"{t}:") for t in _draws([it.meta["fields"]["sentence"] for it in items.items], 3, 0)]
    options = items.items[0].options
    prior = np.array([logsumexp([direct_logprob(lm, c, o) for c in cf]) - np.log(3) for o in options])
    lp = np.array([[direct_logprob(lm, turn(it.premise), o) for o in options] for it in items.items])
    got = run.scores.pivot(index="item", columns="option_index", values="domain_cal").to_numpy()
    np.testing.assert_allclose(got, lp - prior, atol=1e-4)


@pytest.mark.slow
def test_both_calibrations_equal_their_formulas_on_the_real_model(real_lm):
    sst = _short(tasks.load("sst-2", "test", sample=80), 8)
    run = sl.evaluate(real_lm, sst, "lm,batch_cal,domain_cal", progress=False, n_boot=0, domain_samples=3)
    options = sst.items[0].options
    lp = np.array([[direct_logprob(real_lm, it.premise, o) for o in options] for it in sst.items])
    p = np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
    cf = [f"{t}:" for t in _draws([it.meta["fields"]["sentence"] for it in sst.items], 3, 0)]
    prior = np.array([logsumexp([direct_logprob(real_lm, c, o) for c in cf]) - np.log(3) for o in options])
    for scorer, expected in (("batch_cal", np.log(p) - np.log(p.mean(axis=0))), ("domain_cal", lp - prior)):
        got = run.scores.pivot(index="item", columns="option_index", values=scorer).to_numpy()
        np.testing.assert_allclose(got, expected, atol=2e-3, err_msg=scorer)
