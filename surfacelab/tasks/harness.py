"""The ``variant="lm-eval"`` template family: lm-evaluation-harness 0.4.13's prompts and metric names.

Each template renders the prompt the harness builds for the task (its YAML's ``doc_to_text`` /
``doc_to_choice`` / ``process_docs`` and ``utils.py``), zero-shot: the request for choice ``c`` is
``(prompt, target_delimiter + c)`` with the harness's default ``target_delimiter`` ``" "``.  Scored
with :func:`surfacelab.evaluate`, the harness's per-item metrics are surfacelab scorers
(:data:`METRIC_SCORERS`, the one place this mapping lives):

===================  ============  ===============================================================
lm-eval metric       surfacelab    rule (both sides)
===================  ============  ===============================================================
``acc``              ``lm``        argmax of Σ log P(delimiter + choice | prompt)
``acc_norm``         ``per_char``  argmax of that sum / ``len(choice)`` in characters, the
                                   delimiter *not* counted (``Template.target_delimiter``)
``acc_bytes``        ``per_byte``  the same per UTF-8 byte of the choice
``acc_mutual_info``  ``pmi_null``  argmax of the sum minus Σ log P(delimiter + choice | empty
                                   context); both score the empty context as BOS (EOS where the
                                   tokenizer has no BOS) followed by the choice's tokens
===================  ============  ===============================================================

Ties go to the first option on both sides (``np.argmax``).  Both move a prompt's trailing whitespace
onto the choice.  Two places where the scored tokens could still differ: where the tokenizer merges
the prompt's last character with the choice's first (the harness splits the joint encoding at the
prompt's own token count; surfacelab charges the merged token to the choice, ``surfacelab.text``) --
these prompts end in a non-space character and every choice starts with the space delimiter, which
byte-level BPE tokenizers do not merge across; and where a choice's first token *is* the BOS/EOS
token (the harness then uses it as the empty context of ``acc_mutual_info``).  The parity test
(``tests/tasks/test_lm_eval_parity.py``) checks prompts, log-probs and per-item metrics against the
harness's own run on ARC-Challenge and COPA.

The harness has no domain premise; the ``domain_premise`` of these templates is surfacelab's
choice (marked in :data:`DOMAIN_NOTE`): the task's fixed wording at the end of the prompt, so
``unc``/``dcpmi`` stay available.  Few-shot prefixes use the harness's layout (description, then
``prompt + delimiter + answer + "\\n\\n"`` per example); which examples are drawn is surfacelab's
(:func:`surfacelab.tasks.fewshot`), not the harness's sampler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from .core import Fields, LETTERS, Template


LM_EVAL_VERSION = "0.4.13"

#: lm-eval metric name -> surfacelab scorer that computes it (per item, under an lm-eval template).
METRIC_SCORERS: dict[str, str] = {
    "acc": "lm",
    "acc_norm": "per_char",
    "acc_bytes": "per_byte",
    "acc_mutual_info": "pmi_null",
}
#: the reverse: surfacelab scorer -> lm-eval metric name.
SCORER_METRICS: dict[str, str] = {v: k for k, v in METRIC_SCORERS.items()}


@dataclass(frozen=True)
class LMEvalTemplate(Template):
    """A template that reproduces one lm-evaluation-harness task's prompt.

    Attributes (besides :class:`Template`'s):
        lm_eval_task: the harness's task name (``arc_challenge``, ``copa``, ...).
        yaml: the task definition followed, relative to ``lm_eval/tasks/`` in lm-eval 0.4.13.
        metrics: the per-item accuracy metrics that YAML reports (other metrics, e.g. CB's ``f1``,
            are listed in ``other_metrics``).
        other_metrics: metrics of the YAML that are not a per-item argmax (not computed here).
    """

    lm_eval_task: str = ""
    yaml: str = ""
    metrics: tuple[str, ...] = ("acc",)
    other_metrics: tuple[str, ...] = ()

    def render_shot(self, fields: Fields) -> str:
        """One few-shot example in the harness's layout: prompt, delimiter + gold answer, blank line."""
        return self.render_body(fields) + self.render_options(fields)[self.gold_index(fields)] + "\n\n"


def _lm_eval(name: str, premise: Any, options: Any, domain_premise: Any, *, task: str, yaml: str,
             description: str, metrics: tuple[str, ...] = ("acc",), **kw: Any) -> LMEvalTemplate:
    return LMEvalTemplate(name=f"{name}/lm-eval", premise=premise, options=options, domain_premise=domain_premise,
                          description=description, target_delimiter=" ", lm_eval_task=task, yaml=yaml,
                          metrics=metrics, **kw)


# ----------------------------------------------------------------------------- per-task prompts
def _copa_prompt(f: Fields) -> str:
    # utils.doc_to_text: the premise stripped, its last character (the period) dropped, the connector added.
    return f["premise"].strip()[:-1] + (" because" if f["question"] == "cause" else " therefore")


def _copa_connector(f: Fields) -> str:
    return " because" if f["question"] == "cause" else " therefore"


def _lettered(f: Fields, letters: str, task: str) -> str:
    if len(f["choices"]) != len(letters):
        raise ValueError(f"template '{task}/lm-eval': the harness's prompt lists exactly {len(letters)} choices "
                         f"({', '.join(letters)}); this record has {len(f['choices'])}")
    return "".join(f"\n{L}. {c}" for L, c in zip(letters, f["choices"]))


def _cqa_prompt(f: Fields) -> str:
    return f"Question: {f['stem'].strip()}{_lettered(f, LETTERS[:5], 'commonsenseqa')}\nAnswer:"


def _mmlu_description(f: Fields) -> str:
    subject = f.get("subject") or ""
    if not subject:
        raise ValueError("template 'mmlu/lm-eval': the record has no 'subject', which the harness's prompt names "
                         "(\"The following are multiple choice questions (with answers) about <subject>.\")")
    return f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}.\n\n"


def _mmlu_prompt(f: Fields) -> str:
    return f"{f['stem'].strip()}{_lettered(f, LETTERS[:4], 'mmlu')}\nAnswer:"


def hellaswag_clean(text: str) -> str:
    """HellaSwag's clean-up in the harness (``hellaswag/utils.py``): strip, WikiHow ``[title]`` -> ``". "``,
    drop every other ``[...]`` tag, then turn each double space into one."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def _hellaswag_parts(f: Fields) -> tuple[str, str]:
    if f.get("ctx_a") is None or f.get("ctx_b") is None:
        raise ValueError("template 'hellaswag/lm-eval': the record has no 'ctx_a'/'ctx_b' (the harness builds its "
                         "prompt from them, as in the hub's Rowan/hellaswag records); only 'ctx' was given")
    return f["ctx_a"], f["ctx_b"]


def _hellaswag_prompt(f: Fields) -> str:
    ctx_a, ctx_b = _hellaswag_parts(f)
    # str.capitalize upper-cases the first character and lower-cases the rest, as the harness does.
    return hellaswag_clean(f"{f['activity_label']}: {ctx_a} {ctx_b.capitalize()}")


def _hellaswag_choices(f: Fields) -> list[str]:
    return [hellaswag_clean(e) for e in f["choices"]]


def _race_prompt(f: Fields) -> str:
    # preprocess_race.doc_to_text: the article, a blank line, the article's earlier questions with their
    # answers (a cloze question ending in "  _  ." gets its answer in place of the blank), then the question.
    text = f"Article: {f['article_raw']}\n\n"
    for q, answer in f.get("history", []):
        if q.endswith("  _  ."):
            text += q[:-5] + answer + "\n"
        else:
            text += f"Question: {q}\nAnswer: {answer}\n"
    return text + f["question_raw"]


def _race_choices(f: Fields) -> list[str]:
    if len(f["choices"]) < 4:
        raise ValueError(f"template 'race/lm-eval': the harness scores the first 4 options; this record has "
                         f"{len(f['choices'])}")
    return list(f["choices"][:4])


_ARC_YAML = "arc/arc_easy.yaml (arc_challenge.yaml includes it)"

TEMPLATES: dict[str, LMEvalTemplate] = {
    "arc-challenge": _lm_eval(
        "arc-challenge", "Question: {stem}\nAnswer:", "{choice}", "Answer:", task="arc_challenge", yaml=_ARC_YAML,
        metrics=("acc", "acc_norm"), description="'Question: <question>\\nAnswer:' -> ' <choice>'"),
    "arc-easy": _lm_eval(
        "arc-easy", "Question: {stem}\nAnswer:", "{choice}", "Answer:", task="arc_easy", yaml="arc/arc_easy.yaml",
        metrics=("acc", "acc_norm"), description="'Question: <question>\\nAnswer:' -> ' <choice>'"),
    "openbookqa": _lm_eval(
        "openbookqa", "{stem}", "{choice}", " the answer is:", task="openbookqa", yaml="openbookqa/openbookqa.yaml",
        metrics=("acc", "acc_norm"), description="'<question_stem>' -> ' <choice>'"),
    # utils.doc_to_choice already starts each choice with a space and the default delimiter adds another:
    # the harness scores '  <choice>' (two spaces; it only warns), and acc_norm counts one of them.
    "copa": _lm_eval(
        "copa", _copa_prompt, " {choice_lc}", _copa_connector, task="copa",
        yaml="super_glue/copa/default.yaml + utils.py",
        description="'<premise without its final period> because|therefore' -> '  <choice, first letter lower-cased>' "
                    "(two spaces, as the harness sends it)"),
    "storycloze": _lm_eval(
        "storycloze", "{sentence1} {sentence2} {sentence3} {sentence4}", "{choice}", " The story continues:",
        task="storycloze_2016", yaml="storycloze/storycloze_2016.yaml",
        description="the four sentences joined by single spaces -> ' <ending>'"),
    "boolq": _lm_eval(
        "boolq", "{passage}\nQuestion: {question}?\nAnswer:", ["no", "yes"], "Answer:", task="boolq",
        yaml="super_glue/boolq/default.yaml", gold=lambda f: int(f["answer"]),
        description="'<passage>\\nQuestion: <question>?\\nAnswer:' -> ' no' | ' yes'"),
    "rte": _lm_eval(
        "rte", "{premise}\nQuestion: {hypothesis} True or False?\nAnswer:", ["True", "False"],
        "True or False?\nAnswer:", task="rte", yaml="glue/rte/default.yaml (= super_glue/rte/default.yaml)",
        description="'<premise>\\nQuestion: <hypothesis> True or False?\\nAnswer:' -> ' True' | ' False'"),
    "cb": _lm_eval(
        "cb", "{premise}\nQuestion: {hypothesis}. True, False, or Neither?\nAnswer:", ["True", "False", "Neither"],
        "True, False, or Neither?\nAnswer:", task="cb", yaml="super_glue/cb/default.yaml", other_metrics=("f1",),
        description="'<premise>\\nQuestion: <hypothesis>. True, False, or Neither?\\nAnswer:' -> ' True' | ..."),
    "sst-2": _lm_eval(
        "sst-2", "{sentence}\nQuestion: Is this sentence positive or negative?\nAnswer:", ["negative", "positive"],
        "Question: Is this sentence positive or negative?\nAnswer:", task="sst2", yaml="glue/sst2/default.yaml",
        description="'<sentence>\\nQuestion: Is this sentence positive or negative?\\nAnswer:' -> ' negative' | "
                    "' positive'"),
    "commonsenseqa": _lm_eval(
        "commonsenseqa", _cqa_prompt, list(LETTERS[:5]), "Answer:", task="commonsense_qa",
        yaml="commonsense_qa/default.yaml",
        description="'Question: <question>\\nA. <choice>\\n...\\nE. <choice>\\nAnswer:' -> ' A' ... ' E'"),
    "mmlu": _lm_eval(
        "mmlu", _mmlu_prompt, list(LETTERS[:4]), "Answer:", task="mmlu_<subject>",
        yaml="mmlu/default/_default_template_yaml + mmlu_<subject>.yaml (description)", preamble=_mmlu_description,
        description="'The following are multiple choice questions (with answers) about <subject>.\\n\\n<question>"
                    "\\nA. <choice>\\n...\\nD. <choice>\\nAnswer:' -> ' A' ... ' D'"),
    "hellaswag": _lm_eval(
        "hellaswag", _hellaswag_prompt, _hellaswag_choices, lambda f: hellaswag_clean(f"{f['activity_label']}:"),
        task="hellaswag", yaml="hellaswag/hellaswag.yaml + utils.py", metrics=("acc", "acc_norm"),
        description="'<activity_label>: <ctx_a> <Ctx_b capitalised>' (brackets removed) -> ' <ending>'"),
}
TEMPLATES["race-h"] = _lm_eval(
    "race-h", _race_prompt, _race_choices, "Answer:", task="race", yaml="race/race.yaml + preprocess_race.py",
    description="'Article: <article>\\n\\n<earlier questions with answers><question>' -> ' <option>'")
TEMPLATES["race-m"] = replace(TEMPLATES["race-h"], name="race-m/lm-eval",
                              lm_eval_task="race (RACE-H; the harness has no RACE-M task: same prompt)")

#: how each template's domain premise was chosen (the harness has none).
DOMAIN_NOTE = {
    "openbookqa": "the paper's (the harness's prompt has no fixed wording)",
    "storycloze": "the paper's (the harness's prompt has no fixed wording)",
    "copa": "the harness's connector (' because' | ' therefore')",
    "hellaswag": "the activity label and a colon (the start of the harness's prompt)",
}


def lm_eval_metric(scorer: str) -> str:
    """The lm-eval metric a surfacelab scorer computes under an lm-eval template ("" if none)."""
    return SCORER_METRICS.get(scorer, "")


def table() -> pd.DataFrame:
    """One row per task with an lm-eval template: harness task, YAML followed, prompt, metrics, domain premise."""
    rows = []
    for name, t in TEMPLATES.items():
        rows.append({
            "task": name,
            "lm_eval_task": t.lm_eval_task,
            "yaml": t.yaml,
            "prompt": t.description,
            "metrics": ", ".join(t.metrics),
            "scorers": ", ".join(METRIC_SCORERS[m] for m in t.metrics),
            "other_metrics": ", ".join(t.other_metrics),
            "domain_premise": DOMAIN_NOTE.get(name, "the fixed wording that ends the harness's prompt (surfacelab)"),
        })
    return pd.DataFrame(rows)
