"""Few-shot prefixes (the paper's SST-2 format) and the shipped template sets."""

from __future__ import annotations

import json
import re

import pytest

import surfacelab.tasks as tasks

SST2 = [
    {"label": 1, "sentence": "Great fun ."},
    {"label": 0, "sentence": "A dull mess ."},
    {"label": 1, "sentence": "Warm and witty ."},
    {"label": 0, "sentence": "Too long by half ."},
    {"label": 1, "sentence": "A small gem ."},
]


@pytest.fixture
def sst2_file(tmp_path):
    f = tmp_path / "sst2.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in SST2))
    return f


def test_fewshot_never_includes_item_itself(sst2_file):
    task = tasks.load("sst-2", "dev", source=sst2_file)
    shot = tasks.fewshot(task, 4, seed=0, source_split="dev")
    for it, rec in zip(shot, SST2):
        own = f" {rec['sentence']}:"
        prefix = it.meta["fewshot_prefix"]
        assert own + " " not in prefix  # its own sentence is never a shot
        assert it.premise == prefix + f"{rec['sentence']}:"
        # the four other records, each once, in the paper's ' <sentence>: <label>\n' format
        lines = prefix.splitlines(keepends=True)
        assert len(lines) == 4
        expected = {f" {r['sentence']}: {'positive' if r['label'] else 'negative'}\n" for r in SST2 if r is not rec}
        assert set(lines) == expected
        assert it.domain_premise == " The quote has a tone that is"  # unchanged by shots


def test_fewshot_shared_set_and_seeds(data_root):
    a = tasks.load("sst-2", "test", source=data_root, limit=20, n_shot=4, shot_seed=1)
    b = tasks.load("sst-2", "test", source=data_root, limit=20, n_shot=4, shot_seed=1)
    c = tasks.load("sst-2", "test", source=data_root, limit=20, n_shot=4, shot_seed=2)
    assert [it.premise for it in a] == [it.premise for it in b]
    assert a[0].meta["fewshot_prefix"] != c[0].meta["fewshot_prefix"]
    assert a[0].meta["shot_split"] == "dev"  # SST-2 shots come from dev when evaluating test
    assert len({it.meta["fewshot_prefix"] for it in a}) == 1  # one shared set per seed, as in the paper
    assert re.fullmatch(r"( [^\n]*: (positive|negative)\n){4}", a[0].meta["fewshot_prefix"])
    plain = tasks.load("sst-2", "test", source=data_root, limit=20)
    assert [it.premise for it in a] == [it.meta["fewshot_prefix"] + p.premise for it, p in zip(a, plain)]


def test_fewshot_bad_n(sst2_file):
    task = tasks.load("sst-2", "dev", source=sst2_file)
    with pytest.raises(ValueError, match="n"):
        tasks.fewshot(task, 0)
    with pytest.raises(ValueError, match="too large"):
        tasks.fewshot(task, 5, source_split="dev")


def test_fewshot_flipped_refused(data_root):
    with pytest.raises(ValueError, match="few-shot"):
        tasks.load("copa-flipped", "val", source=data_root, n_shot=2)


def test_fewshot_generic_task(data_root):
    task = tasks.load("commonsenseqa", "dev", source=data_root, limit=3, n_shot=2, shot_seed=0)
    for it in task:
        shots = it.meta["shot_ids"]
        assert len(shots) == 2 and it.id not in shots
        assert it.premise.endswith("? the answer is:")
        assert it.meta["fewshot_prefix"].count('? the answer is: "') == 2


def test_sst2_template_set(data_root, by_line):
    tpls = tasks.templates("sst-2")
    assert len(tpls) >= 15
    assert len({t.name for t in tpls}) == len(tpls)
    task = tasks.load("sst-2", "dev", source=data_root, limit=3)
    for t in tpls:
        other = task.with_template(t)
        for it, base in zip(other, task):
            assert len(it.options) == 2 and it.gold == base.gold
            assert base.meta["fields"]["sentence"] in it.premise
            assert it.premise.endswith(it.domain_premise)  # the domain premise is the premise's ending
            assert all(o.startswith(" ") for o in it.options)
    by_name = {t.name: t for t in tpls}
    full = tasks.load("sst-2", "dev", source=data_root)
    it = by_line(full.with_template(by_name["sst2-movie-review"]), 1)
    assert it.premise == " Movie review: It 's a lovely film with lovely performances by Buy and Accorsi .\n Sentiment:"
    assert it.options == [" negative", " positive"]
    assert it.domain_premise == "\n Sentiment:"
    assert task.with_template("sst2-grade")[0].options == [" F", " A"]  # by name


def test_fewshot_with_project_template(data_root):
    task = tasks.load("sst-2", "test", source=data_root, limit=2, n_shot=2, shot_seed=0)
    other = task.with_template("sst2-text-label")
    prefix = other[0].meta["fewshot_prefix"]
    assert re.fullmatch(r"( Text: [^\n]*\n Label: (Negative|Positive)\n){2}", prefix)


def test_arc_and_cqa_domain_variants(data_root):
    arc = tasks.templates("arc-challenge")
    dps = [t.domain_premise for t in arc]
    assert {" the answer is:", " Answer:", "\nAnswer:", " A:"} <= set(dps)
    task = tasks.load("arc-challenge", "test", source=data_root, limit=2)
    for t in arc:
        other = task.with_template(t)
        assert [i.premise for i in other] == [i.premise for i in task]
        assert other[0].domain_premise == t.domain_premise
    assert tasks.templates("arc-easy")[0].domain_premise == " the answer is:"
    cqa = tasks.templates("commonsenseqa")
    assert len(cqa) >= 4
    base = tasks.load("commonsenseqa", "dev", source=data_root, limit=2)
    assert base.with_template(cqa[0])[0].premise == base[0].premise  # first variant is the paper's
    for t in cqa:
        it = base.with_template(t)[0]
        assert it.premise.endswith(it.domain_premise) and it.options == base[0].options
    newline = base.with_template("cqa-newline-Answer")
    assert newline[0].domain_premise == "\nAnswer:" and newline[0].premise.endswith("?\nAnswer:")


def test_unknown_template_set():
    with pytest.raises(ValueError, match="name: no template set"):
        tasks.templates("trec")
