"""``surfacelab eval``: evaluate a model on a dataset split with several scorers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import tasks
from ..evaluate import evaluate

DEFAULT_CLI_SCORERS = "lm,avg,per_char,unc,dcpmi"


def run(args: argparse.Namespace) -> int:
    """Run ``surfacelab eval`` from parsed arguments; prints the results and returns the exit code."""
    from ..models import load_lm

    try:
        task = tasks.load(args.task, args.split, source=args.data_dir, limit=args.limit, seed=args.seed,
                          variant=args.variant, n_shot=args.n_shot, shot_seed=args.shot_seed)
    except FileNotFoundError as err:
        print(f"surfacelab: error: {err}", file=sys.stderr)
        return 2
    batch = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
    res = evaluate(load_lm(args.model, device=args.device), task, args.scorers, batch_size=batch,
                   progress=not args.no_progress)
    print(f"{res.task}/{res.split} · {res.model} · template {res.template} · {len(res.items)} items")
    print(res.accuracy.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print()
    print(res.items["why"].value_counts().rename_axis("why").to_frame("items").to_string())
    out = Path(args.out or f"eval-{res.task}-{res.split}-{res.model.replace('/', '_')}.csv")
    res.items.to_csv(out, index=False)
    print(f"wrote {out}")
    if args.save_dir:
        print(f"wrote {res.save(args.save_dir)}")
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` sub-command to an ``argparse`` sub-parser set (``surfacelab eval ...``)."""
    p = subparsers.add_parser("eval", help="evaluate a model on a dataset split with several scorers")
    p.add_argument("--task", required=True, help="task name (see surfacelab.tasks.list())")
    p.add_argument("--split", default=None, help="split (default: the task's default split)")
    p.add_argument("--model", default=None, help="preset, hub id or folder (default: smollm2-135m)")
    p.add_argument("--data-dir", default=None, help="data root such as ../shared/data, a dataset folder or a .jsonl")
    p.add_argument("--scorers", default=DEFAULT_CLI_SCORERS, help=f"comma-separated (default: {DEFAULT_CLI_SCORERS})")
    p.add_argument("--limit", type=int, default=None, help="evaluate a seeded sample of this many items")
    p.add_argument("--seed", type=int, default=0, help="seed of the --limit sample")
    p.add_argument("--variant", default="code", choices=["code", "paper_table"],
                   help="templates of the paper's code (default) or of its Table 7")
    p.add_argument("--n-shot", type=int, default=0, help="few-shot examples prepended to every premise")
    p.add_argument("--shot-seed", type=int, default=0, help="seed of the few-shot draw")
    p.add_argument("--device", default=None, help="cuda, mps or cpu (default: auto)")
    p.add_argument("--batch-size", default="auto", help="rows per batch or 'auto'")
    p.add_argument("--out", default=None, help="per-item CSV (default: eval-<task>-<split>-<model>.csv)")
    p.add_argument("--save-dir", default=None, help="also write every frame (items, scores, accuracy, paired)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p
