"""The ``lm-eval`` template family on hand-written records (expected strings written from the harness's YAML),
the lm-eval metric names in ``evaluate`` / ``ablate``, and the errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import surfacelab.tasks as tasks
from surfacelab.evaluate import ablate, evaluate
from surfacelab.runs import mcnemar
from surfacelab.tasks.harness import METRIC_SCORERS, hellaswag_clean


def _load(tmp_path, name, split, records, **kw):
    f = tmp_path / f"{name}.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return tasks.load(name, split, source=f, variant="lm-eval", **kw)


def _one(tmp_path, name, split, record):
    return _load(tmp_path, name, split, [record])[0]


# --------------------------------------------------------------------------- rendering, task by task
@pytest.mark.parametrize("name", ["arc-challenge", "arc-easy"])
def test_arc(tmp_path, name):
    it = _one(tmp_path, name, "test", {
        "id": "x1", "question": "Which gas do plants take in?",
        "choices": {"text": ["oxygen", "carbon dioxide"], "label": ["A", "B"]}, "answerKey": "B"})
    assert it.premise == "Question: Which gas do plants take in?\nAnswer:"
    assert it.options == [" oxygen", " carbon dioxide"]
    assert it.gold == 1 and it.domain_premise == "Answer:"


def test_copa_connector_lower_case_and_double_space(tmp_path):
    effect, cause = _load(tmp_path, "copa", "val", [
        {"premise": "The man turned on the faucet.", "choice1": "The toilet filled with water.",
         "choice2": "Water flowed from the spout.", "question": "effect", "label": 1},
        {"premise": " My body cast a shadow over the grass. ", "choice1": "The sun was rising.",
         "choice2": "The grass was cut.", "question": "cause", "label": 0}]).items
    assert effect.premise == "The man turned on the faucet therefore"
    # utils.doc_to_choice starts each choice with a space and the target delimiter adds one more
    assert effect.options == ["  the toilet filled with water.", "  water flowed from the spout."]
    assert effect.gold == 1
    assert cause.premise == "My body cast a shadow over the grass because"  # stripped, then the period dropped
    assert cause.options == ["  the sun was rising.", "  the grass was cut."]
    assert (effect.domain_premise, cause.domain_premise) == (" therefore", " because")


def test_boolq_passage_question_and_no_yes_order(tmp_path):
    shared = _one(tmp_path, "boolq", "dev", {"query": "Passage: The sky is blue.\nQuestion: is the sky blue?",
                                             "gold": 1})
    assert shared.premise == "The sky is blue.\nQuestion: is the sky blue?\nAnswer:"
    assert shared.options == [" no", " yes"] and shared.gold == 1
    glue = _one(tmp_path, "boolq", "dev", {"question": "is grass red", "passage": "Grass is green.",
                                           "idx": 3, "label": 0})
    assert glue.premise == "Grass is green.\nQuestion: is grass red?\nAnswer:" and glue.gold == 0
    # the paper's template keeps its own order (' yes', ' no'): the gold index follows the options
    assert tasks.load("boolq", "dev", source=tmp_path / "boolq.jsonl")[0].gold == 1


def test_rte_cb_sst2(tmp_path):
    rte = _one(tmp_path, "rte", "dev", {"premise": "Dana Reeve has died.", "hypothesis": "Dana Reeve is dead.",
                                        "label": "entailment", "idx": 0})
    assert rte.premise == "Dana Reeve has died.\nQuestion: Dana Reeve is dead. True or False?\nAnswer:"
    assert rte.options == [" True", " False"] and rte.gold == 0
    glue = _one(tmp_path, "rte", "dev", {"sentence1": "A.", "sentence2": "B.", "label": 1, "idx": 0})
    assert glue.premise == "A.\nQuestion: B. True or False?\nAnswer:" and glue.gold == 1
    cb = _one(tmp_path, "cb", "dev", {"premise": "It may rain.", "hypothesis": "it rains",
                                      "label": "neutral", "idx": 0})
    assert cb.premise == "It may rain.\nQuestion: it rains. True, False, or Neither?\nAnswer:"
    assert cb.options == [" True", " False", " Neither"] and cb.gold == 2
    sst = _one(tmp_path, "sst-2", "test", {"sentence": "a gorgeous film .", "label": 1})
    assert sst.premise == "a gorgeous film .\nQuestion: Is this sentence positive or negative?\nAnswer:"
    assert sst.options == [" negative", " positive"] and sst.gold == 1


def test_commonsenseqa_letters(tmp_path):
    it = _one(tmp_path, "commonsenseqa", "dev", {
        "id": "q", "question": "  Where do you keep milk? ", "answerKey": "C",
        "choices": {"label": list("ABCDE"), "text": ["shelf", "oven", "fridge", "car", "bed"]}})
    assert it.premise == ("Question: Where do you keep milk?\nA. shelf\nB. oven\nC. fridge\nD. car\nE. bed\nAnswer:")
    assert it.options == [" A", " B", " C", " D", " E"] and it.gold == 2


def test_mmlu_description_names_the_subject(tmp_path):
    it = _one(tmp_path, "mmlu", "test", {"subject": "high_school_biology", "question": " What is DNA? ",
                                         "A": "a sugar", "B": "a fat", "C": "a protein", "D": "a nucleic acid",
                                         "answer": "D"})
    assert it.premise == ("The following are multiple choice questions (with answers) about high school biology.\n\n"
                          "What is DNA?\nA. a sugar\nB. a fat\nC. a protein\nD. a nucleic acid\nAnswer:")
    assert it.options == [" A", " B", " C", " D"] and it.gold == 3


def test_mmlu_fewshot_keeps_the_description_in_front(tmp_path):
    rec = {"subject": "anatomy", "question": "Q{}?", "A": "a", "B": "b", "C": "c", "D": "d", "answer": "A"}
    recs = [{**rec, "question": f"Q{i}?"} for i in range(3)]
    task = _load(tmp_path, "mmlu", "test", recs)
    shot = tasks.fewshot(task, 1, source=tmp_path / "mmlu.jsonl")[0]
    head = "The following are multiple choice questions (with answers) about anatomy.\n\n"
    assert shot.premise.startswith(head) and shot.premise.count(head) == 1
    example = shot.meta["fewshot_prefix"]
    assert example.endswith("\nAnswer: A\n\n") and not example.startswith("The following")
    assert shot.premise == head + example + "Q0?\nA. a\nB. b\nC. c\nD. d\nAnswer:"


def test_storycloze_and_openbookqa(tmp_path):
    story = _one(tmp_path, "storycloze", "test", {
        "InputStoryid": "s", "InputSentence1": "Ann woke up.", "InputSentence2": "She was late.",
        "InputSentence3": "She ran.", "InputSentence4": "She missed the bus", "RandomFifthSentenceQuiz1": "She walked.",
        "RandomFifthSentenceQuiz2": "She flew.", "AnswerRightEnding": 1})
    assert story.premise == "Ann woke up. She was late. She ran. She missed the bus"  # no period added
    assert story.options == [" She walked.", " She flew."] and story.gold == 0
    obqa = _one(tmp_path, "openbookqa", "test", {"id": "1", "query": "The sun is a", "choices": ["star", "moon"],
                                                 "gold": 0})
    assert obqa.premise == "The sun is a" and obqa.options == [" star", " moon"]


def test_hellaswag_brackets_and_capitalisation(tmp_path):
    it = _one(tmp_path, "hellaswag", "val", {
        "activity_label": "Home and Garden", "ctx_a": "[header] How to clean a roof [title] Get a ladder.",
        "ctx_b": "YOU should", "ctx": "unused", "endings": ["[step] Climb up slowly.", "be  careful.", "x", "y"],
        "label": "1"})
    # ' [title]' -> '. ', tags dropped, double spaces single; str.capitalize lower-cases the rest of ctx_b
    assert it.premise == "Home and Garden: How to clean a roof. Get a ladder. You should"
    # the harness strips an ending before dropping its tag, so ' Climb...' keeps its space after the delimiter
    assert it.options == ["  Climb up slowly.", " be careful.", " x", " y"]
    assert it.gold == 1 and it.domain_premise == "Home and Garden:"
    assert hellaswag_clean(" a [b] c  d ") == "a c d"


def test_race_article_history_and_cloze(tmp_path):
    problems = [{"answer": "B", "options": ["a cat", "a dog", "a bird", "a fish"], "question": "Tom has  _  ."},
                {"answer": "A", "options": ["Tom", "Ann", "Bob", "Sue"], "question": "Who has a dog?"},
                {"answer": "C", "options": ["1", "2", "3", "4"], "question": "How many dogs?"}]
    for name in ("race-h", "race-m"):
        it = _one(tmp_path, name, "test", {"article": "Tom has a dog. ", "problems": str(problems)})
        assert it.premise == ("Article: Tom has a dog. \n\nTom has a dog\nQuestion: Who has a dog?\nAnswer: Tom\n"
                              "How many dogs?")
        assert it.options == [" 1", " 2", " 3", " 4"] and it.gold == 2
    flat = _one(tmp_path, "race-m", "test", {"example_id": "m1", "article": "Tom has a dog.", "question": "Who?",
                                             "options": ["Tom", "Ann", "Bob", "Sue"], "answer": "A"})
    assert flat.premise == "Article: Tom has a dog.\n\nWho?" and flat.gold == 0  # ehovy/race shape: no history
    # the paper's template scores the same (last) question of the article
    assert tasks.load("race-h", "test", source=tmp_path / "race-h.jsonl")[0].options == [" 1", " 2", " 3", " 4"]


# --------------------------------------------------------------------------- families, errors
def test_every_family_task_is_listed_and_selectable(tmp_path):
    listed = tasks.list_tasks()
    with_harness = set(listed.loc[listed.lm_eval, "task"])
    assert with_harness == set(tasks.harness_table()["task"])
    assert {"arc-challenge", "arc-easy", "openbookqa", "copa", "boolq", "rte", "cb", "sst-2", "commonsenseqa", "mmlu",
            "storycloze", "hellaswag", "race-m", "race-h"} <= with_harness
    assert "sst-5" not in with_harness and "copa-flipped" not in with_harness


def test_missing_family_and_fields_are_clear_errors(tmp_path, data_root):
    with pytest.raises(ValueError, match="variant: task 'sst-5' has no 'lm-eval' template"):
        tasks.load("sst-5", "test", source=data_root, variant="lm-eval")
    sst5 = tasks.load("sst-5", "test", source=data_root, limit=2)
    with pytest.raises(ValueError, match="'sst-5' has no 'lm-eval'"):
        sst5.with_template("lm-eval")
    with pytest.raises(ValueError, match="no template family or template named 'nope'"):
        sst5.with_template("nope")
    with pytest.raises(ValueError, match="ctx_a"):
        _one(tmp_path, "hellaswag", "val", {"ctx": "A man", "endings": ["a", "b", "c", "d"], "label": 0})
    with pytest.raises(ValueError, match="subject"):
        _one(tmp_path, "mmlu", "test", {"question": "Q", "A": "a", "B": "b", "C": "c", "D": "d", "answer": "A"})
    with pytest.raises(ValueError, match="exactly 5 choices"):
        _one(tmp_path, "commonsenseqa", "dev", {"question": "Q", "answerKey": "A",
                                                "choices": {"label": list("ABCD"), "text": list("abcd")}})


def test_with_template_switches_family_and_back(data_root):
    code = tasks.load("arc-challenge", "test", source=data_root, limit=3)
    harness = code.with_template("lm-eval")
    assert harness.variant == "lm-eval" and harness.template.name == "arc-challenge/lm-eval"
    assert [it.premise for it in harness] == [f"Question: {it.premise}\nAnswer:" for it in code]
    back = harness.with_template("paper")
    assert [it.premise for it in back] == [it.premise for it in code] and back.variant == "paper"


# --------------------------------------------------------------------------- metric names in evaluate / ablate
def test_metric_mapping_is_one_table():
    assert METRIC_SCORERS == {"acc": "lm", "acc_norm": "per_char", "acc_bytes": "per_byte",
                              "acc_mutual_info": "pmi_null"}


def test_evaluate_names_harness_metrics_and_normalises_like_the_harness(tiny_lm, tmp_path):
    recs = [{"id": f"q{i}", "question": f"Question number {i}?", "answerKey": "A",
             "choices": {"text": ["yes", "no way", "perhaps é"], "label": ["A", "B", "C"]}} for i in range(4)]
    f = tmp_path / "arc.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    task = tasks.load("arc-challenge", "test", source=f)
    res = evaluate(tiny_lm, task, "lm,per_char,per_byte,pmi_null,dcpmi", template="lm-eval", progress=False, n_boot=0)
    acc = res.accuracy.set_index("scorer")
    assert acc["lm_eval_metric"].to_dict() == {"lm": "acc", "per_char": "acc_norm", "per_byte": "acc_bytes",
                                               "pmi_null": "acc_mutual_info", "dcpmi": ""}
    assert acc["lm_eval_reports"].to_dict() == {"lm": True, "per_char": True, "per_byte": False,
                                                "pmi_null": False, "dcpmi": False}
    assert res.meta["lm_eval_task"] == "arc_challenge" and "per_char (acc_norm)=" in repr(res)
    # acc_norm / acc_bytes as the harness computes them: the choice's length without the target delimiter
    s = res.scores
    choices = [c for r in recs for c in r["choices"]["text"]]
    assert list(s["option"]) == [" " + c for c in choices]
    lp = s["logprob"].to_numpy().reshape(4, 3)
    chars = np.array([len(c) for c in choices], dtype=float).reshape(4, 3)
    nbytes = np.array([len(c.encode()) for c in choices], dtype=float).reshape(4, 3)
    assert (res.items["pred_per_char"].to_numpy() == np.argmax(lp / chars, axis=1)).all()
    assert (res.items["pred_per_byte"].to_numpy() == np.argmax(lp / nbytes, axis=1)).all()
    np.testing.assert_allclose(s["per_char"].to_numpy(), (lp / chars).ravel())
    mi = lp - s["null_logprob"].to_numpy().reshape(4, 3)
    assert (res.items["pred_pmi_null"].to_numpy() == np.argmax(mi, axis=1)).all()
    # the paper's template: no harness names, and per_char counts the whole option string
    paper = evaluate(tiny_lm, task, "lm,per_char", progress=False, n_boot=0)
    assert (paper.accuracy["lm_eval_metric"] == "").all() and not paper.accuracy["lm_eval_reports"].any()
    np.testing.assert_allclose(paper.scores["n_chars"], [len(o) for o in paper.scores["option"]])


def test_ablate_families_and_own_template_in_one_frame(tiny_lm, data_root):
    copa = tasks.load("copa", "val", source=data_root, limit=12)
    mine = tasks.Template(name="mine", premise="{premise_trim}, so what happened?", options=" {choice}",
                          domain_premise=" so what happened?")
    frame = ablate(tiny_lm, copa, templates=["paper", "lm-eval", mine], scorers="lm,per_char", progress=False,
                   n_boot=0)
    assert list(frame["template"]) == ["paper", "paper", "lm-eval", "lm-eval", "mine", "mine"]
    assert list(frame["template_name"]) == ["copa/paper"] * 2 + ["copa/lm-eval"] * 2 + ["mine"] * 2
    assert list(frame["lm_eval_metric"]) == ["", "", "acc", "acc_norm", "", ""]
    assert list(frame["lm_eval_reports"]) == [False, False, True, False, False, False]
    ref = evaluate(tiny_lm, copa, "lm,per_char", progress=False, n_boot=0)
    for tpl in ("lm-eval", mine):
        other = evaluate(tiny_lm, copa, "lm,per_char", template=tpl, progress=False, n_boot=0)
        rows = frame[frame.template == (tpl if isinstance(tpl, str) else tpl.name)].set_index("scorer")
        for s in ("lm", "per_char"):
            only_this, only_ref, p = mcnemar(other.items[f"correct_{s}"], ref.items[f"correct_{s}"])
            assert (rows.loc[s, "only_this"], rows.loc[s, "only_ref"]) == (only_this, only_ref)
            assert rows.loc[s, "p_vs_ref"] == pytest.approx(p)
            assert rows.loc[s, "accuracy"] == pytest.approx(other.items[f"correct_{s}"].mean())
    first = frame[frame.template == "paper"]
    assert (first["only_this"] == 0).all() and (first["p_vs_ref"] == 1.0).all()
