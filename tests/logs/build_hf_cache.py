"""Write shipped evaluation data (data/eval) into a Hugging Face datasets cache under the hub names the frameworks load.

lm-evaluation-harness's and lighteval's own task definitions load hub datasets (`cais/mmlu`, `allenai/ai2_arc`).
With `HF_DATASETS_OFFLINE=1` the `datasets` library reloads a hub dataset from
`HF_DATASETS_CACHE/<namespace>___<name>/<config>/<version>/<hash>/` (its `cache` builder: `<name>-<split>.arrow`
files and a `dataset_info.json`), so this folder lets the frameworks' unchanged tasks run offline on the shipped rows.
Each row takes the hub dataset's layout:

- `cais/mmlu`, one config per subject, splits `test` and `dev` (`data/eval/mmlu`): `question`, `subject`,
  `choices` (the four options), `answer` (ClassLabel A-D).
- `allenai/ai2_arc`, config `ARC-Challenge`, split `test` only (`data/eval/arc-challenge/test.jsonl`; the hub's
  `train` and `validation` splits are not shipped): `id`, `question`, `choices.text`, `choices.label`, `answerKey`.

Usage: python tests/logs/build_hf_cache.py CACHE_DIR   (then run the framework with HF_DATASETS_CACHE=CACHE_DIR)
"""

import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

import datasets
from datasets.arrow_writer import ArrowWriter

EVAL = Path(__file__).resolve().parents[2] / "data" / "eval"
STRINGS = datasets.List(datasets.Value("string"))
MMLU = datasets.Features(
    {
        "question": datasets.Value("string"),
        "subject": datasets.Value("string"),
        "choices": STRINGS,
        "answer": datasets.ClassLabel(names=["A", "B", "C", "D"]),
    }
)
ARC = datasets.Features(
    {
        "id": datasets.Value("string"),
        "question": datasets.Value("string"),
        "choices": {"text": STRINGS, "label": STRINGS},
        "answerKey": datasets.Value("string"),
    }
)


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_config(cache_dir: Path, repo_id: str, config: str, features: datasets.Features, splits: dict[str, list],
                 digest: str) -> None:
    """One config of a hub dataset as the `datasets` cache holds it after a download."""
    namespace, name = repo_id.split("/")
    folder = cache_dir / f"{namespace}___{name}" / config / "0.0.0" / digest
    folder.mkdir(parents=True, exist_ok=True)
    split_dict = datasets.SplitDict(dataset_name=name)
    for split, rows in splits.items():
        with ArrowWriter(features=features, path=str(folder / f"{name}-{split}.arrow")) as writer:
            for row in rows:
                writer.write(features.encode_example(row))
            num_examples, num_bytes = writer.finalize()
        split_dict.add(datasets.SplitInfo(split, num_bytes, num_examples, dataset_name=name))
    info = datasets.DatasetInfo(features=features, dataset_name=name, config_name=config, splits=split_dict,
                                version="0.0.0")
    info.write_to_directory(str(folder))


def digest_of(*paths: Path) -> str:
    digest = hashlib.sha1()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def mmlu(cache_dir: Path) -> None:
    files = {split: EVAL / "mmlu" / f"{split}.jsonl" for split in ("test", "dev")}
    by_subject: dict[str, dict[str, list]] = defaultdict(lambda: {split: [] for split in files})
    for split, path in files.items():
        for row in read_jsonl(path):
            by_subject[row["subject"]][split].append(
                {
                    "question": row["question"],
                    "subject": row["subject"],
                    "choices": [row["A"], row["B"], row["C"], row["D"]],
                    "answer": "ABCD".index(row["answer"]),
                }
            )
    digest = digest_of(*files.values())
    for subject, splits in sorted(by_subject.items()):
        write_config(cache_dir, "cais/mmlu", subject, MMLU, splits, digest)
    print(f"cais/mmlu: {len(by_subject)} subjects")


def arc(cache_dir: Path) -> None:
    path = EVAL / "arc-challenge" / "test.jsonl"
    rows = [
        {
            "id": row["id"],
            "question": row["question"]["stem"],
            "choices": {
                "text": [c["text"] for c in row["question"]["choices"]],
                "label": [c["label"] for c in row["question"]["choices"]],
            },
            "answerKey": row["answerKey"],
        }
        for row in read_jsonl(path)
    ]
    write_config(cache_dir, "allenai/ai2_arc", "ARC-Challenge", ARC, {"test": rows}, digest_of(path))
    print(f"allenai/ai2_arc ARC-Challenge: {len(rows)} test rows")


if __name__ == "__main__":
    target = Path(sys.argv[1])
    mmlu(target)
    arc(target)
