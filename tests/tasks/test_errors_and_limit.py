"""Bad input gets a clear error naming the argument; ``limit`` is the first N items, ``sample`` a seeded draw."""

from __future__ import annotations

import json

import pytest

import surfacelab.tasks as tasks

COPA_LINE = {"id": 1, "premise": "P.", "choice1": "A.", "choice2": "B.", "question": "cause", "label": 0}


def test_unknown_task_lists_known():
    with pytest.raises(ValueError, match=r"name: unknown task 'nope'.*copa.*sst-2"):
        tasks.load("nope")


def test_wrong_split_lists_valid():
    with pytest.raises(ValueError, match=r"split: 'train' is not a split of task 'copa'.*'dev', 'val'"):
        tasks.load("copa", "train")


def test_bad_variant():
    with pytest.raises(ValueError, match="variant"):
        tasks.load("copa", "val", variant="code")


def test_missing_file_names_path_and_origin(tmp_path):
    with pytest.raises(FileNotFoundError) as exc:
        tasks.load("copa", "val", source=tmp_path)
    msg = str(exc.value)
    assert str(tmp_path / "copa" / "val.jsonl") in msg
    assert "data/eval" in msg and "source" in msg


def test_missing_source_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        tasks.load("copa", "val", source=tmp_path / "nothing.jsonl")


def test_missing_default_root(tmp_path, monkeypatch):
    monkeypatch.setenv("SURFACELAB_DATA", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="SURFACELAB_DATA"):
        tasks.load("copa", "val")


def test_malformed_line_names_file_and_line(tmp_path):
    f = tmp_path / "val.jsonl"
    f.write_text(json.dumps(COPA_LINE) + "\n\n" + '{"id": 2, "premise": \n')
    with pytest.raises(ValueError) as exc:
        tasks.load("copa", "val", source=f)
    assert "line 3" in str(exc.value) and str(f) in str(exc.value)


def test_record_missing_field_names_line(tmp_path):
    f = tmp_path / "val.jsonl"
    bad = dict(COPA_LINE)
    del bad["choice2"]
    f.write_text(json.dumps(COPA_LINE) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"line 2: .*choice2"):
        tasks.load("copa", "val", source=f)


@pytest.mark.parametrize("limit", [0, -3, 2.5, True])
def test_bad_limit(limit):
    with pytest.raises(ValueError, match="limit"):
        tasks.load("copa", "val", limit=limit)
    with pytest.raises(ValueError, match="sample"):
        tasks.load("copa", "val", sample=limit)


def test_limit_and_sample_together_or_a_bad_seed_are_refused():
    with pytest.raises(ValueError, match="limit, sample: give one of them"):
        tasks.load("copa", "val", limit=3, sample=3)
    with pytest.raises(ValueError, match="seed: expected an integer"):
        tasks.load("copa", "val", sample=3, seed=True)


def _copa_file(tmp_path, n: int = 30):
    f = tmp_path / "val.jsonl"
    f.write_text("".join(json.dumps({**COPA_LINE, "id": i + 1, "premise": f"P{i}."}) + "\n" for i in range(n)))
    return f


def test_limit_is_the_first_n_items(tmp_path):
    f = _copa_file(tmp_path)
    for seed in (0, 1, 2):  # the seed does not change which items limit keeps
        task = tasks.load("copa", "val", source=f, limit=5, seed=seed)
        assert [it.meta["index"] for it in task] == [0, 1, 2, 3, 4]
    assert len(tasks.load("copa", "val", source=f, limit=1000)) == 30


def test_sample_is_seeded_in_order_and_not_the_head(tmp_path):
    f = _copa_file(tmp_path)
    a, b, c = (tasks.load("copa", "val", source=f, sample=10, seed=s) for s in (1, 1, 2))
    idx = [it.meta["index"] for it in a]
    assert idx == [it.meta["index"] for it in b] != [it.meta["index"] for it in c]
    assert idx == sorted(idx) and len(set(idx)) == 10 and idx != list(range(10))
    assert len(tasks.load("copa", "val", source=f, sample=1000)) == 30


def test_limit_and_sample_on_the_real_split(data_root):
    head = tasks.load("copa", "dev", source=data_root, limit=50, seed=1)
    assert [it.meta["index"] for it in head] == list(range(50))
    a = tasks.load("copa", "dev", source=data_root, sample=50, seed=1)
    assert [it.id for it in a] == [it.id for it in tasks.load("copa", "dev", source=data_root, sample=50, seed=1)]
    assert [it.id for it in a] != [it.id for it in head]  # a sample, not the head


def test_with_domain_premise_rerenders(data_root):
    task = tasks.load("arc-challenge", "test", source=data_root, limit=5)
    other = task.with_template(domain_premise="\nAnswer:")
    assert [it.domain_premise for it in other] == ["\nAnswer:"] * 5
    assert [it.premise for it in other] == [it.premise for it in task]
    assert [it.options for it in other] == [it.options for it in task]
    assert [it.domain_premise for it in task] == [" the answer is:"] * 5  # the original is unchanged


def test_template_with_unknown_field_is_clear(data_root):
    task = tasks.load("sst-2", "dev", source=data_root, limit=2)
    bad = tasks.Template(name="bad", premise="{review}", options=[" a", " b"], domain_premise="")
    with pytest.raises(ValueError, match=r"bad.*\{review\}.*sentence"):
        task.with_template(bad)


@pytest.mark.parametrize("content", ["", "\n  \n"])
def test_an_empty_file_is_refused_naming_the_file(tmp_path, content):
    f = tmp_path / "val.jsonl"
    f.write_text(content)
    with pytest.raises(ValueError) as exc:
        tasks.load("copa", "val", source=f)
    msg = str(exc.value)
    assert msg.startswith(f"source: {f} has no records") and "'copa'" in msg


def test_a_template_set_file_with_a_format_spec_is_refused_naming_the_file(tmp_path, monkeypatch):
    f = tmp_path / "sst-2.json"
    f.write_text(json.dumps({"task": "sst-2", "templates": [
        {"name": "fine", "premise": "{sentence} It was"},
        {"name": "wide", "premise": "{sentence:>20000000} It was"}]}))
    monkeypatch.setenv("SURFACELAB_TEMPLATES", str(tmp_path))
    with pytest.raises(ValueError, match=r"sst-2.json: template 'wide': premise: the field \{sentence:>20000000\} has "
                                         r"a format spec; a pattern takes field names only, such as \{sentence\}"):
        tasks.templates("sst-2")
    with pytest.raises(ValueError, match=r"template 'mine': domain_premise: the field \{label!r\} has a conversion"):
        tasks.Template(name="mine", premise="{sentence}", options=[" a", " b"], domain_premise="{label!r}")
