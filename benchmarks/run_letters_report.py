"""Numbers for docs/results_letters.md: option-ID scoring methods on MMLU and ARC-Challenge.

One run = one model on one dataset sample; it writes a JSON record. ``--render`` turns records
into the markdown tables of the report.

    export SURFACELAB_CACHE=/tmp/slcache
    flock /tmp/surfacelab-cpu.lock python benchmarks/run_letters_report.py run \\
        --model smollm2-135m --dataset mmlu --n 1000 --methods default,pride --out runs/a.json
    python benchmarks/run_letters_report.py render runs/*.json

Samples: MMLU = test split without the items whose options refer to other options (PriDe drops
them), then a subject-stratified sample of ``--n`` (seed ``--seed``); ARC-Challenge = PriDe's
4-option test file (``pride_test``), a seeded sample of ``--n`` (all 1165 when ``--n`` is 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np


def _sample(dataset: str, n: int, seed: int):
    from surfacelab import letters
    from surfacelab.tasks.loader import load

    if dataset == "mmlu":
        task = letters.drop_cross_references(load("mmlu", "test"))
        return letters.stratified_sample(task, n, seed=seed) if n else task
    if dataset == "arc":
        task = load("arc-challenge", "pride_test")
        return load("arc-challenge", "pride_test", sample=n, seed=seed) if n and n < len(task) else task
    raise SystemExit(f"--dataset: expected mmlu or arc, got {dataset!r}")


def run(args: argparse.Namespace) -> None:
    from surfacelab import letters
    from surfacelab.models import load_lm

    task = _sample(args.dataset, args.n, args.seed)
    lm = load_lm(args.model, device="cpu")
    methods = tuple(args.methods.split(","))
    start = time.perf_counter()
    res = letters.evaluate(lm, task, methods, alpha=args.alpha, seed=args.seed)
    wall = time.perf_counter() - start
    subjects = len({it.subject for it in letters.as_items(task)})
    record = {
        "model": args.model, "dataset": args.dataset, "n_items": len(task), "subjects": subjects,
        "seed": args.seed, "alpha": args.alpha, "methods": list(methods), "wall_s": round(wall, 1),
        "n_prompts": res.n_prompts, "command": " ".join(sys.argv),
        "gold_share": res.gold_share.round(1).to_dict(),
        "prior": {str(k): np.round(v, 4).tolist() for k, v in res.prior.items()},
        "summary": json.loads(res.summary.to_json(orient="records")),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1))
    cols = ["method", "accuracy", "rstd", "cost"] + [c for c in res.summary if c.startswith("chosen_")]
    print(res.summary[cols].round(2).to_string(index=False))
    print(f"{len(task)} items, {res.n_prompts} prompts, {wall:.0f} s")


def render(args: argparse.Namespace) -> None:
    for path in args.records:
        r = json.loads(Path(path).read_text())
        ids = list(r["gold_share"])
        print(f"**{r['model']} · {r['dataset']} · {r['n_items']} items** "
              f"({r['n_prompts']} forwards, {r['wall_s']:.0f} s; gold IDs "
              + ", ".join(f"{k} {v:.1f}%" for k, v in r["gold_share"].items()) + ")\n")
        print("| method | accuracy % | RStd | cost (forwards/item) | " + " | ".join(f"chose {i} %" for i in ids)
              + " | prior divided out |")
        print("|---|---:|---:|---:|" + "---:|" * len(ids) + "---|")
        for s in r["summary"]:
            prior = "" if s["prior"] is None else "[" + ", ".join(f"{x:.3f}" for x in s["prior"]) + "]"
            print(f"| {s['method']} | {s['accuracy']:.1f} | {s['rstd']:.1f} | {s['cost']:.2f} | "
                  + " | ".join(f"{s['chosen_' + i]:.1f}" for i in ids) + f" | {prior} |")
        print(f"\nrun: `python {r['command']}`\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="evaluate one model on one dataset sample")
    p.add_argument("--model", required=True)
    p.add_argument("--dataset", required=True, choices=["mmlu", "arc"])
    p.add_argument("--n", type=int, default=0, help="sample size (0 = all)")
    p.add_argument("--methods", default="default,calibrated,cyclic,pride")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=run)
    q = sub.add_parser("render", help="markdown tables from run records")
    q.add_argument("records", nargs="+")
    q.set_defaults(fn=render)
    args = parser.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
