"""Hub-only datasets (HellaSwag, ARC-Easy, RACE) from local files in the hub's record shape; no network."""

from __future__ import annotations

import json
import sys

import pytest

import surfacelab.tasks as tasks


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_hellaswag_local_hub_shape(tmp_path):
    f = _write(tmp_path / "hs.jsonl", [{
        "ind": 24, "activity_label": "Roof shingle removal",
        "ctx": "A man is sitting on a roof. he ",
        "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.",
                    "is holding a rubik's cube.", "starts pulling up roofing on a roof."],
        "label": "3",
    }])
    it = tasks.load("hellaswag", "val", source=f)[0]
    assert it.premise == "A man is sitting on a roof. he"
    assert it.options == [" is using wrap to wrap a pair of skis.", " is ripping level tiles off.",
                          " is holding a rubik's cube.", " starts pulling up roofing on a roof."]
    assert it.domain_premise == " he"  # the code: from the last space of the stripped context
    assert it.gold == 3
    assert tasks.load("hellaswag", "val", source=f, variant="paper_table")[0].domain_premise == ""


def test_hellaswag_in_data_root_folder(tmp_path):
    (tmp_path / "hellaswag").mkdir()
    _write(tmp_path / "hellaswag" / "val.jsonl",
           [{"ctx": "Then the man", "endings": ["a", "b", "c", "d"], "label": 0}])
    task = tasks.load("hellaswag", source=tmp_path)
    assert task.split == "val" and task[0].domain_premise == " man"


def test_hellaswag_missing_says_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("SURFACELAB_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="hub dataset id"):
        tasks.load("hellaswag")


def test_arc_easy_hub_shape(tmp_path):
    f = _write(tmp_path / "arc_easy.jsonl", [{
        "id": "Mercury_7220990", "question": "Which factor will most likely cause a person to develop a fever?",
        "choices": {"text": ["a leg muscle relaxing after exercise", "a bacterial population in the bloodstream",
                             "several viral particles on the skin", "carbohydrates being digested in the stomach"],
                    "label": ["A", "B", "C", "D"]},
        "answerKey": "B",
    }])
    it = tasks.load("arc-easy", "test", source=f)[0]
    assert it.premise == "Which factor will most likely cause a person to develop a fever?"
    assert it.options[1] == " a bacterial population in the bloodstream"
    assert it.domain_premise == " the answer is:"
    assert it.gold == 1 and it.id == "Mercury_7220990"


def test_race_question_and_cloze(tmp_path):
    f = _write(tmp_path / "race.jsonl", [
        {"example_id": "m1", "article": " Tom has a dog. ", "question": "What does Tom have?",
         "options": ["A cat", "A dog", "A bird", "A fish"], "answer": "B"},
        {"example_id": "m2", "article": "Tom has a dog.", "question": "Tom has a _ .",
         "options": ["cat", "dog", "bird", "fish"], "answer": "B"},
    ])
    q, cloze = tasks.load("race-m", "test", source=f).items
    assert q.premise == " Tom has a dog.\n question: What does Tom have? \n answer:"
    assert q.options == [" A cat", " A dog", " A bird", " A fish"]
    assert q.domain_premise == "?"
    assert q.gold == 1
    assert cloze.premise == " Tom has a dog.\n Tom has a"
    assert cloze.options == [" cat .", " dog .", " bird .", " fish ."]
    assert cloze.gold == 1


def test_race_original_shape_is_split_per_question(tmp_path):
    f = _write(tmp_path / "race.jsonl", [{
        "id": "high1.txt", "article": "A text.", "questions": ["Why?", "Who?"],
        "options": [["a", "b", "c", "d"], ["e", "f", "g", "h"]], "answers": ["C", "A"],
    }])
    task = tasks.load("race-h", "test", source=f)
    assert len(task) == 2
    assert [it.gold for it in task] == [2, 0]


def test_hub_id_without_datasets_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(ImportError, match="pip install datasets"):
        tasks.load("hellaswag", "val", source="Rowan/hellaswag")


def test_hub_id_for_local_only_task_is_missing_file():
    with pytest.raises(FileNotFoundError, match="source"):
        tasks.load("trec", "test", source="someone/trec")
