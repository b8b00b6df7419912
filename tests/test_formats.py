"""Noisy channel, the multiple-choice formulation (OLMES) and choices-only (Balepur et al. 2024): their request texts
written string by string per task, and their scores in ``evaluate`` equal to a direct forward of the tiny model."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import surfacelab as sl
from surfacelab import formats, runs, tasks
from surfacelab.engine.requests import Entry

SST2 = [{"sentence": "a fine film", "label": 1}, {"sentence": "dull and long", "label": 0}]
ARC = [{"question": "What is wet?", "A": "water", "B": "sand", "answer": "A"},
       {"question": "Cats eat?", "A": "rocks", "B": "fish", "C": "air", "answer": "B"}]


def _load(tmp_path, name: str, records: list[dict]) -> tasks.Task:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return tasks.load(name, source=str(path))


def test_sst2_requests_are_min_et_als_label_sentence_before_the_sentence(tmp_path):
    item = _load(tmp_path, "sst-2", SST2)[0]
    got = formats.requests("sst-2", item, ["channel", "mcf", "choices"])
    assert got["channel"] == (("It was terrible.", " a fine film"), ("It was great.", " a fine film"))
    mcf = "Question: a fine film\nA. terrible\nB. great\nAnswer:"
    assert got["mcf"] == ((mcf, " A"), (mcf, " B"))
    assert got["choices"] == (("A. terrible\nB. great\nAnswer:", " A"), ("A. terrible\nB. great\nAnswer:", " B"))


def test_arc_requests_put_each_option_before_the_question(tmp_path):
    item = _load(tmp_path, "arc-challenge", ARC)[1]
    got = formats.requests("arc-challenge", item, ["channel", "mcf", "choices"])
    assert got["channel"] == (("rocks", " Cats eat?"), ("fish", " Cats eat?"), ("air", " Cats eat?"))
    mcf = "Question: Cats eat?\nA. rocks\nB. fish\nC. air\nAnswer:"
    assert got["mcf"] == ((mcf, " A"), (mcf, " B"), (mcf, " C"))
    assert [c for c, _ in got["choices"]] == ["A. rocks\nB. fish\nC. air\nAnswer:"] * 3


def test_copa_channel_is_the_papers_flipped_direction(tmp_path):
    rec = {"premise": "The man fell.", "choice1": "He tripped.", "choice2": "He sang.", "question": "cause",
           "label": 0}
    item = _load(tmp_path, "copa", [rec])[0]
    got = formats.requests("copa", item, ["channel", "mcf"])
    assert got["channel"] == ((" he tripped so", " the man fell."), (" he sang so", " the man fell."))
    assert got["mcf"][0][0] == "Question: The man fell. What was the cause?\nA. He tripped.\nB. He sang.\nAnswer:"
    # the flipped task has its options as contexts already: not scored under these conditions
    flipped = tasks.load("copa-flipped", limit=1)[0]
    assert formats.requests("copa-flipped", flipped, ["channel", "mcf", "choices"]) == {}


def test_only_the_conditions_asked_for_are_written(tmp_path):
    item = _load(tmp_path, "sst-2", SST2)[0]
    assert set(formats.requests("sst-2", item, ["premise", "mcf"])) == {"mcf"}
    assert formats.requests("sst-2", item, ["premise", "domain"]) == {}


def test_an_entry_refuses_extra_requests_that_do_not_match_its_options():
    with pytest.raises(ValueError, match="extra: expected one of"):
        Entry(("p", "p"), (" a", " b"), extra={"mcf": (("p", " A"),)})
    with pytest.raises(ValueError, match="'premise'"):
        Entry(("p",), (" a",), extra={"premise": (("p", " a"),)})


def _direct(model, tok, context: str, continuation: str) -> float:
    """Σ log P(continuation | context) from one plain forward (float32 log-softmax), context a token prefix."""
    ctx = tok(context, add_special_tokens=False)["input_ids"]
    ids = tok(context + continuation, add_special_tokens=False)["input_ids"]
    assert ids[:len(ctx)] == ctx, (context, continuation)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    return float(sum(logp[k - 1, ids[k]] for k in range(len(ctx), len(ids))))


@pytest.mark.parametrize("name, records", [("sst-2", SST2), ("arc-challenge", ARC)])
def test_evaluate_scores_channel_mcf_and_choices_as_a_direct_forward(tmp_path, tiny_lm, name, records):
    from tiny_models import tiny_causal

    model, tok = tiny_causal()
    task = _load(tmp_path, name, records)
    res = sl.evaluate(tiny_lm, task, "lm,channel,mcf,choices", n_boot=0, progress=False)
    labels = {"sst-2": [["terrible", "great"]] * 2,
              "arc-challenge": [["water", "sand"], ["rocks", "fish", "air"]]}[name]
    inputs = {"sst-2": [" a fine film", " dull and long"], "arc-challenge": [" What is wet?", " Cats eat?"]}[name]
    for i, (words, text) in enumerate(zip(labels, inputs)):
        rows = res.scores[res.scores["item"] == i].sort_values("option_index")
        ids = "ABC"[:len(words)]
        options = "\n".join(f"{L}. {w}" for L, w in zip(ids, words))
        mcf = f"Question: {text.strip()}\n{options}\nAnswer:"
        for k, w in enumerate(words):
            channel = f"It was {w}." if name == "sst-2" else w
            assert rows["channel"].iloc[k] == pytest.approx(_direct(model, tok, channel, text), abs=1e-4)
            assert rows["mcf"].iloc[k] == pytest.approx(_direct(model, tok, mcf, " " + ids[k]), abs=1e-4)
            assert rows["choices"].iloc[k] == pytest.approx(_direct(model, tok, f"{options}\nAnswer:", " " + ids[k]),
                                                            abs=1e-4)
        for s in ("channel", "mcf", "choices"):
            assert res.items.loc[i, f"pred_{s}"] == int(np.argmax(rows[s].to_numpy()))


def test_evaluate_reports_each_scorers_formulation_and_the_one_olmes_reports(tmp_path, tiny_lm):
    res = sl.evaluate(tiny_lm, _load(tmp_path, "arc-challenge", ARC), "lm,per_char,unc,channel,mcf,choices", n_boot=0,
                      progress=False)
    acc = res.accuracy.set_index("scorer")
    assert acc["formulation"].to_dict() == {"lm": "cloze", "per_char": "cloze", "unc": "prior", "channel": "channel",
                                            "mcf": "mcf", "choices": "choices-only"}
    best = max(acc.loc[["lm", "per_char"], "accuracy"].max(), acc.loc["mcf", "accuracy"])
    marked = {s for s in ("lm", "per_char", "mcf") if acc.loc[s, "accuracy"] == best}
    assert set(acc.index[acc["olmes"]]) == marked
    without_mcf = sl.evaluate(tiny_lm, _load(tmp_path, "arc-challenge", ARC), "lm,choices", n_boot=0, progress=False)
    assert not without_mcf.accuracy["olmes"].any()


def test_olmes_takes_the_cloze_normalisations_not_the_calibrations():
    table = pd.DataFrame({"formulation": [sl.scorers.SCORERS[s].formulation for s in ("lm", "batch_cal", "domain_cal",
                                                                                      "mcf")],
                          "accuracy": [0.40, 0.70, 0.65, 0.45]})
    assert table["formulation"].tolist() == ["cloze", "calibrated", "calibrated", "mcf"]
    assert runs.olmes_rows(table).tolist() == [False, False, False, True]


def test_a_run_saved_and_loaded_keeps_the_new_columns_and_an_old_run_without_them_loads(tmp_path, tiny_lm):
    res = sl.evaluate(tiny_lm, _load(tmp_path, "sst-2", SST2), "lm,channel,mcf", n_boot=0, progress=False)
    back = sl.EvalResult.load(res.save(tmp_path / "run"))
    assert np.allclose(back.scores["channel"], res.scores["channel"])
    assert back.result(0).winner("mcf") == res.result(0).winner("mcf")
    # a run saved before these conditions existed: its scores hold none of their columns
    old = tmp_path / "old"
    lm_only = sl.evaluate(tiny_lm, _load(tmp_path, "sst-2", SST2), "lm", n_boot=0, progress=False)
    lm_only.scores = lm_only.scores.drop(columns=[c for c in lm_only.scores if c.startswith(("channel", "mcf",
                                                                                               "choices"))])
    lm_only.save(old)
    table = sl.EvalResult.load(old).result(1).table
    assert table["mcf_logprob"].isna().all() and (table["mcf_truncated"] == 0).all()

