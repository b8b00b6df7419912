"""The "Extending" examples of docs/extending.md run as written: a scorer, a task, a letter method, a PLL metric, a
backend and a log reader."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import surfacelab as sl
from surfacelab import letters, scorers, tasks
from surfacelab.pll import METRICS as PLL_METRICS

EXTENDING = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def _blocks() -> list[str]:
    text = EXTENDING.read_text()
    section = text[text.index("## Extending"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_page_has_six_examples():
    assert len(_blocks()) == 6


def test_register_a_scorer(tiny_lm):
    ns = {"lm": tiny_lm}
    try:
        exec(_blocks()[0], ns)
        cols = list(ns["r"].table.columns)
        assert [c for c in cols if c in scorers.SCORER_LABELS][-1] == "neg_chars" and "rank_neg_chars" in cols
        assert scorers.SCORER_LABELS["neg_chars"] == "−chars"
        assert sl.viz.scorer_table(ns["r"].table).data[0].header.values[-1] == "−chars"
    finally:
        scorers.SCORERS.unregister("neg_chars")


def test_register_a_task(tiny_lm, tmp_path):
    path = tmp_path / "yes-no.jsonl"
    path.write_text("".join(json.dumps({"q": f"Is {x} a colour?", "answer": a}) + "\n"
                            for x, a in [("red", "yes"), ("soup", "no"), ("blue", "yes")]))
    ns = {"lm": tiny_lm, "sl": sl, "path": path}
    try:
        exec(_blocks()[1], ns)
        task, res = ns["task"], ns["res"]
        assert [it.gold for it in task] == [0, 1, 0] and task[0].options == [" yes", " no"]
        assert task[0].domain_premise == " answer:" and len(res.items) == 3
        assert list(res.accuracy.scorer) == ["lm", "dcpmi"]
        with pytest.raises(ValueError, match="'yes-no' is already registered"):
            tasks.register_task(tasks.SPECS["yes-no"])
    finally:
        tasks.SPECS.unregister("yes-no")
    with pytest.raises(ValueError, match=r"name: unknown task 'yes-no'"):
        tasks.load("yes-no", source=path)


def test_register_a_letter_method(tiny_lm):
    ns = {"lm": tiny_lm}
    try:
        exec(_blocks()[2], ns)
        ev = ns["ev"]
        rev = ev.items.set_index("method").loc["reversed"]
        # the reversed prompt shows option 2 at ID A: its probability is read there and mapped back
        direct = letters.score(tiny_lm, "2 + 2 =", ["6", "5", "4"], template="plain").table.observed.to_numpy()
        assert rev["probs"] == pytest.approx(direct[::-1].tolist(), abs=1e-6)
        assert ev.summary.set_index("method").loc["reversed", "cost"] == 1
    finally:
        letters.METHODS.unregister("reversed")


def test_register_a_pll_metric(tiny_mlm):
    ns = {"mlm": tiny_mlm, "sl": sl}
    try:
        exec(_blocks()[3], ns)
        res = ns["res"]
        one_piece = res.tokens.groupby("word_idx").filter(lambda g: len(g) == 1)
        orig = sl.pll(tiny_mlm, ["The souvenir was cheap."], metric="original").tokens
        whole = sl.pll(tiny_mlm, ["The souvenir was cheap."], metric="whole_word").tokens
        # a one-piece word masks only itself under every metric
        assert one_piece.logprob.to_numpy() == pytest.approx(orig.loc[one_piece.index, "logprob"].to_numpy())
        # the last piece of a split word sees the whole word masked, as under whole_word
        last = res.tokens.groupby("word_idx").filter(lambda g: len(g) > 1).groupby("word_idx").tail(1).index
        assert len(last) and res.tokens.loc[last, "logprob"].to_numpy() == pytest.approx(
            whole.loc[last, "logprob"].to_numpy(), abs=1e-5)
        assert not res.tokens.loc[last, "logprob"].to_numpy() == pytest.approx(orig.loc[last, "logprob"].to_numpy())
        assert res.metric == "word_r2l"
    finally:
        PLL_METRICS.unregister("word_r2l")


def test_register_a_backend(tiny_lm):
    from surfacelab.backends import BACKENDS

    ns = {"lm": tiny_lm, "sl": sl}
    try:
        exec(_blocks()[4], ns)
        r, counted = ns["r"], ns["counted"]
        assert ns["Counted"].requests > 0 and type(counted.backend).__name__ == "Counted"
        direct = sl.score(tiny_lm, "The man took a bath in the", [" tub", " sink"], domain_premise=" the")
        assert r.table["dcpmi"].tolist() == pytest.approx(direct.table["dcpmi"].tolist(), abs=1e-5)
    finally:
        BACKENDS.unregister("counted")


def test_register_a_log_reader(tmp_path):
    from surfacelab.logs import READERS

    path = tmp_path / "mine-quiz.jsonl"
    lines = [{"prompt": "2 + 2 =", "choices": [" 4", " 5"], "gold": 0, "loglik": [-1.0, -2.5], "correct": 1},
             {"prompt": "The sky is", "choices": [" green", " blue"], "gold": 1, "loglik": [-0.5, -3.0], "correct": 0}]
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    ns = {"sl": sl, "path": path}
    try:
        exec(_blocks()[5], ns)
        run = ns["run"]
        assert run.meta["reader"] == "mine" and run.items["correct_lm"].tolist() == [True, False]
        assert run.accuracy.set_index("scorer").loc["lm", "log_metric"] == "acc"
        assert run.meta["log_disagreements"] == {}  # the logged acc is the argmax of the logged log-likelihoods
        assert sl.from_log(path).meta["reader"] == "mine"  # found by its detect
    finally:
        READERS.unregister("mine")
