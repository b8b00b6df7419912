"""lm-evaluation-harness 0.4.13 as the reference: its own task objects, built from the YAML it ships, on local files.

No hub is reachable, so each task's dataset is pointed at a local JSON Lines file in the hub's record
shape (``datasets``' json loader); everything else -- ``doc_to_text``, ``doc_to_choice``, ``process_docs``,
the target delimiter, the requests and the metrics -- is the harness's own code.  The converters below
turn the shared-data files into those hub shapes (data plumbing only: no prompt text is written here).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import surfacelab.tasks as tasks

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def tasks_dir() -> Path:
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks"


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def harness_task(yaml: str, data: Path, *, extra_metrics: tuple[str, ...] = ()):
    """The harness's ConfigurableTask for ``lm_eval/tasks/<yaml>``, every split read from ``data``."""
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    cfg = dict(load_yaml(tasks_dir() / yaml, resolve_func=True))
    for key in ("tag", "group"):
        cfg.pop(key, None)
    splits = {cfg.get(k) for k in ("training_split", "validation_split", "test_split", "fewshot_split")} - {None}
    cfg.update(dataset_path="json", dataset_name=None,  # datasets' cache beside the file, not in the home dir
               dataset_kwargs={"data_files": {s: str(data) for s in splits}, "cache_dir": str(data.parent / "hf")})
    listed = {m["metric"] for m in cfg["metric_list"]}
    cfg["metric_list"] = list(cfg["metric_list"]) + [{"metric": m} for m in extra_metrics if m not in listed]
    return ConfigurableTask(config=cfg)


def harness_requests(task) -> dict[int, list[tuple[str, str]]]:
    """Per document (in order): the harness's (context, continuation) requests, conditional then unconditional."""
    task.build_all_requests(limit=None, rank=0, world_size=1)
    out: dict[int, list[tuple[str, str]]] = {}
    for inst in sorted(task.instances, key=lambda i: (i.doc_id, i.idx)):
        out.setdefault(inst.doc_id, []).append(tuple(inst.arguments))
    return out


# ----------------------------------------------------------------------------- shared data -> hub shapes
def _read(data_root: Path, rel: str, n: int) -> list[dict[str, Any]]:
    return [r for _, r in tasks.read_jsonl(data_root / rel)][:n]


def arc_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    """allenai/ai2_arc records from the AI2 release file."""
    return [{"id": r["id"], "question": r["question"]["stem"],
             "choices": {"text": [c["text"] for c in r["question"]["choices"]],
                         "label": [c["label"] for c in r["question"]["choices"]]},
             "answerKey": r["answerKey"]} for r in _read(data_root, "arc-challenge/test.jsonl", n)]


def copa_hub(data_root: Path, n: int, split: str = "val") -> list[dict[str, Any]]:
    """super_glue/copa records (the shared file already has that shape, with ``id`` for ``idx``)."""
    return [{"premise": r["premise"], "choice1": r["choice1"], "choice2": r["choice2"], "question": r["question"],
             "idx": r["id"], "label": r["label"]} for r in _read(data_root, f"copa/{split}.jsonl", n)]


def obqa_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    return [{"id": r["id"], "question_stem": r["query"],
             "choices": {"text": r["choices"], "label": list("ABCD")[: len(r["choices"])]},
             "answerKey": "ABCD"[r["gold"]]} for r in _read(data_root, "openbookqa/test.jsonl", n)]


def cqa_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    return [{"id": r["id"], "question": r["question"]["stem"], "question_concept": r["question"]["question_concept"],
             "choices": {"label": [c["label"] for c in r["question"]["choices"]],
                         "text": [c["text"] for c in r["question"]["choices"]]},
             "answerKey": r["answerKey"]} for r in _read(data_root, "commonsenseqa/dev.jsonl", n)]


def storycloze_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    return [{"story_id": r["InputStoryid"], **{f"input_sentence_{i}": r[f"InputSentence{i}"] for i in range(1, 5)},
             "sentence_quiz1": r["RandomFifthSentenceQuiz1"], "sentence_quiz2": r["RandomFifthSentenceQuiz2"],
             "answer_right_ending": r["AnswerRightEnding"]} for r in _read(data_root, "storycloze/test.jsonl", n)]


def boolq_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    """super_glue/boolq records; the shared copy holds 'Passage: <p>\\nQuestion: <q>?' in ``query``."""
    out = []
    for i, r in enumerate(_read(data_root, "boolq/dev.jsonl", n)):
        passage, question = r["query"].rsplit("\nQuestion: ", 1)
        out.append({"question": question.removesuffix("?"), "passage": passage.removeprefix("Passage: "),
                    "idx": i, "label": int(r["gold"])})
    return out


def rte_hub(data_root: Path, n: int, glue: bool = False) -> list[dict[str, Any]]:
    out = []
    for r in _read(data_root, "rte/dev.jsonl", n):
        label = 0 if r["label"] == "entailment" else 1
        out.append({"sentence1": r["premise"], "sentence2": r["hypothesis"], "label": label, "idx": r["idx"]} if glue
                   else {"premise": r["premise"], "hypothesis": r["hypothesis"], "label": label, "idx": r["idx"]})
    return out


def cb_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    order = ["entailment", "contradiction", "neutral"]
    return [{"premise": r["premise"], "hypothesis": r["hypothesis"], "label": order.index(r["label"]), "idx": r["idx"]}
            for r in _read(data_root, "cb/dev.jsonl", n)]


def sst2_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    return [{"sentence": r["sentence"], "label": r["label"], "idx": i}
            for i, r in enumerate(_read(data_root, "sst-2/test.jsonl", n))]


def mmlu_hub(data_root: Path, n: int) -> list[dict[str, Any]]:
    """cais/mmlu records: choices as a list, the answer as an index."""
    return [{"question": r["question"], "subject": r["subject"], "choices": [r[L] for L in "ABCD"],
             "answer": "ABCD".index(r["answer"])} for r in _read(data_root, "mmlu/test.jsonl", n)]
