"""Every lm-eval template against lm-evaluation-harness 0.4.13 itself: the same records give the same requests.

The harness builds its task from the YAML it ships (dataset pointed at a local hub-shaped file, see
``lm_eval_ref``); surfacelab loads the same file with ``variant="lm-eval"``. Compared: every
(context, continuation) request the harness would score for ``acc`` and for ``acc_mutual_info`` (its
unconditional requests), and the gold index. No model is run.
"""

from __future__ import annotations

import pytest

import surfacelab.tasks as tasks
from lm_eval_ref import (arc_hub, boolq_hub, cb_hub, copa_hub, cqa_hub, harness_requests, harness_task, mmlu_hub,
                         obqa_hub, rte_hub, sst2_hub, storycloze_hub, write_jsonl)

N = 25  # records per local split


def _gold(task, doc) -> int:
    target = task.doc_to_target(doc)
    return task.doc_to_choice(doc).index(target) if isinstance(target, str) else int(target)


def _compare(name: str, split: str, yaml: str, records: list[dict], tmp_path) -> int:
    """Assert identical requests and gold for every record; return the number of items compared."""
    path = write_jsonl(tmp_path / f"{name}-{split}.jsonl", records)
    ref_task = harness_task(yaml, path, extra_metrics=("acc_mutual_info",))
    ref = harness_requests(ref_task)
    ours = tasks.load(name, split, source=path, variant="lm-eval")
    assert len(ours) == len(ref) == len(records)
    for i, (it, doc) in enumerate(zip(ours, ref_task.eval_docs)):
        n = len(it.options)
        assert ref[i][:n] == it.requests(), (name, i)
        assert ref[i][n:] == [("", o) for o in it.options], (name, i)  # acc_mutual_info: empty context
        assert _gold(ref_task, doc) == it.gold, (name, i)
    return len(ours)


LOCAL = [
    ("arc-challenge", "test", "arc/arc_challenge.yaml", arc_hub),
    ("copa", "val", "super_glue/copa/default.yaml", copa_hub),
    ("openbookqa", "test", "openbookqa/openbookqa.yaml", obqa_hub),
    ("commonsenseqa", "dev", "commonsense_qa/default.yaml", cqa_hub),
    ("storycloze", "test", "storycloze/storycloze_2016.yaml", storycloze_hub),
    ("boolq", "dev", "super_glue/boolq/default.yaml", boolq_hub),
    ("rte", "dev", "super_glue/rte/default.yaml", rte_hub),
    ("rte", "dev", "glue/rte/default.yaml", lambda root, n: rte_hub(root, n, glue=True)),
    ("cb", "dev", "super_glue/cb/default.yaml", cb_hub),
    ("sst-2", "test", "glue/sst2/default.yaml", sst2_hub),
]


@pytest.mark.parametrize(("name", "split", "yaml", "convert"), LOCAL, ids=[f"{n}:{y}" for n, _, y, _ in LOCAL])
def test_local_split_requests_equal_the_harness(name, split, yaml, convert, request, tmp_path):
    root = request.getfixturevalue("unshipped_root" if tasks.SPECS[name].obtain else "data_root")
    assert _compare(name, split, yaml, convert(root, N), tmp_path) == N


def test_mmlu_requests_equal_the_harness_per_subject(data_root, tmp_path):
    records = mmlu_hub(data_root, 14042)
    by_subject: dict[str, list[dict]] = {}
    for r in records:
        by_subject.setdefault(r["subject"], []).append(r)
    subjects = sorted(by_subject)[::9]  # 7 subjects, the description names each
    assert len(subjects) >= 6
    for s in subjects:
        assert _compare("mmlu", "test", f"mmlu/default/mmlu_{s}.yaml", by_subject[s][:4], tmp_path) == 4


def test_hellaswag_requests_equal_the_harness(tmp_path):
    records = [
        {"ind": 24, "activity_label": "Roof shingle removal", "ctx_a": "A man is sitting on a roof.", "ctx_b": "he",
         "ctx": "A man is sitting on a roof. he", "split": "val", "split_type": "indomain", "source_id": "x",
         "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.",
                     "is holding a rubik's cube.", "starts pulling up roofing on a roof."], "label": "3"},
        {"ind": 7, "activity_label": "Home and Garden", "ctx_a": "[header] How to clean a roof [title] Get a ladder.",
         "ctx_b": "YOU should", "ctx": "", "split": "val", "split_type": "zeroshot", "source_id": "y",
         "endings": ["[step] Climb up slowly.", "be  careful [substeps] always.", "fall.", "[title] Rest."],
         "label": "0"},
    ]
    assert _compare("hellaswag", "val", "hellaswag/hellaswag.yaml", records, tmp_path) == 2


def test_arc_easy_requests_equal_the_harness(tmp_path):
    records = [{"id": "Mercury_7220990", "question": "Which factor will most likely cause a person to develop a fever?",
                "choices": {"text": ["a leg muscle relaxing after exercise",
                                     "a bacterial population in the bloodstream",
                                     "several viral particles on the skin", "carbohydrates being digested"],
                            "label": ["A", "B", "C", "D"]}, "answerKey": "B"},
               {"id": "NYSEDREGENTS_2015_4_8", "question": "What is 2 + 2?",
                "choices": {"text": ["3", "4", "5"], "label": ["1", "2", "3"]}, "answerKey": "2"}]
    assert _compare("arc-easy", "test", "arc/arc_easy.yaml", records, tmp_path) == 2


def test_race_requests_equal_the_harness(tmp_path):
    problems = [
        {"answer": "B", "options": ["a cat", "a dog", "a bird", "a fish"], "question": "Tom has  _  ."},
        {"answer": "A", "options": ["Tom", "Ann", "Bob", "Sue"], "question": "Who has a dog?"},
        {"answer": "C", "options": ["one", "two", "three", "four"], "question": "How many legs do birds have?"},
    ]
    records = [{"example_id": "high1.txt", "article": "Tom has a dog. Ann has a bird. ", "problems": str(problems)},
               {"example_id": "high2.txt", "article": "Rain.", "problems": str(problems[1:2])}]
    assert _compare("race-h", "test", "race/race.yaml", records, tmp_path) == 2
