"""Write the result objects of one fixed script to a folder, to prove a refactor changed no number.

    python benchmarks/snapshot_results.py OUT_DIR          # score, evaluate, mass, letters, pll, why
    python benchmarks/snapshot_results.py --compare A B    # exit 1 unless every file is identical

Each result is written with its own ``save`` (floats by repr, so equal files mean bitwise-equal numbers). The
comparison leaves out only the wall-clock timings (``*seconds`` keys). The
score cache is a fresh empty one (the converted model copies are shared with the user cache), so every number
comes from a forward pass of the default models.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import surfacelab as sl


def fresh_score_cache() -> None:
    """Point ``$SURFACELAB_CACHE`` at an empty folder that links the user cache's converted models."""
    from surfacelab.paths import cache_dir

    models = cache_dir()
    fresh = Path(tempfile.mkdtemp(prefix="surfacelab-snapshot-"))
    for sub in ("models", "gguf"):
        if (models / sub).exists():
            (fresh / sub).symlink_to(models / sub)
    os.environ["SURFACELAB_CACHE"] = str(fresh)


def snapshot(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    fresh_score_cache()
    lm, mlm = sl.load_lm(), sl.load_mlm()
    sl.score(lm, "The man took a bath in the", [" bathtub", " tub", " xylophone"],
             domain_premise=" the").save(out / "score.json")
    sl.evaluate(lm, "copa", limit=12, progress=False).save(out / "evaluate_copa")
    sl.evaluate(lm, "arc-challenge", limit=8, progress=False).save(out / "evaluate_arc")
    sl.mass(lm, "She washed her hands in the", {"sink": [" sink", " a sink", " basin"], "tub": [" tub", " bathtub"]},
            domain_premise=" the", answer="sink").save(out / "mass.json")
    sl.letters.score(lm, "Which is a fruit?", ["apple", "chair", "car", "shoe"], gold=0).save(out / "letters.json")
    sl.letters.evaluate(lm, sl.tasks.load("arc-challenge", limit=6)).save(out / "letters_eval.json")
    sentences = ["The cat sat on the mat.", "Colorless green ideas sleep furiously."]
    sl.pll(mlm, sentences, progress=False).save(out / "pll.json")
    sl.pll_blimp(mlm, limit=5, progress=False).save(out / "blimp.json")
    sl.why(lm, "The man took a bath in the", [" bathtub", " xylophone", " tub"], gold=0,
           domain_premise=" the").save(out / "why.json")


def untimed(doc):
    """A JSON document without its wall-clock timings."""
    if isinstance(doc, dict):
        return {k: untimed(v) for k, v in doc.items() if not k.endswith("seconds")}
    if isinstance(doc, list):
        return [untimed(v) for v in doc]
    return doc


def same(a: Path, b: Path) -> bool:
    if a.suffix == ".json":
        return untimed(json.loads(a.read_text())) == untimed(json.loads(b.read_text()))
    return a.read_bytes() == b.read_bytes()


def compare(a: Path, b: Path) -> int:
    def files(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}

    names = sorted(files(a) | files(b))
    bad = [n for n in names if not (a / n).exists() or not (b / n).exists() or not same(a / n, b / n)]
    for n in names:
        print(f"{n:40s} {'DIFFERS' if n in bad else 'identical'}")
    return 1 if bad else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--compare", action="store_true")
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.paths))
    snapshot(args.paths[0])
