"""A whole dataset's run: CPU time, memory and cache size of ``sl.evaluate`` on MMLU, and how they grow with items.

Two kinds of runs, each in its own child process (its own peak resident memory) on a fresh score cache:

  real   the default model (smollm2-135m) on seeded samples of MMLU test (``--sizes``), every scorer: a cold run
         (empty cache), then a warm rerun in a new process on the cache it left. The full 14,042 items are
         extrapolated from the least-squares line of these points.
  full   the same tokenizer under a 2-layer, 32-wide random GPT-2 (``--full-sizes``, default 3,511, 7,021 and all
         14,042 items): everything a run does except the model's own arithmetic (tokenizing, the request plan,
         the split-mass planning and next-token call, the frames, the labels, the bootstrap, the cache) at full size,
         measured, not extrapolated. A random model gets about 3 in 4 items wrong: more split-mass work than a
         trained one.

Reported per run: items, CPU seconds of ``evaluate`` (the process's, all threads), wall seconds, the peak resident
memory above the loaded model, the split-mass step's seconds and items read from the cache, and the cache: bytes of
the scores' entries, of the split-mass prompts' next-token entries and of the split-mass numbers, the file, and the
file that the scores alone make (a copy with every other entry deleted, vacuumed). The issue's bar: the whole cache
at most 2x what the scores alone need.

``--keep-runs DIR`` saves each cold run (``EvalResult.save``) for ``bench_report.py``.

Run (from the repository root):

    flock /tmp/surfacelab-cpu.lock python benchmarks/bench_run.py --out benchmarks/results_run.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FULL = 14042


def cache_breakdown(path: Path) -> dict:
    """Bytes of the cache's entries by what they hold (key + blob + checksum), the file, and the scores-only file."""
    from surfacelab.engine.cache import unpack

    kinds = {"logprob": "scores", "selected": "next_token", "value": "derived"}
    out = {"scores": 0, "next_token": 0, "derived": 0, "other": 0, "entries": 0}
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    drop = []
    for key, data, digest in conn.execute("SELECT key, data, digest FROM blobs"):
        kind = next((kinds[k] for k in unpack(data) if k in kinds), "other")
        out[kind] += len(key) + len(data) + len(digest)
        out["entries"] += 1
        if kind != "scores":
            drop.append((key,))
    conn.close()
    out["file"] = path.stat().st_size
    scores_only = path.with_name("scores_only.sqlite")
    shutil.copy(path, scores_only)
    conn = sqlite3.connect(scores_only)
    conn.executemany("DELETE FROM blobs WHERE key = ?", drop)
    conn.commit()
    conn.execute("VACUUM")
    conn.close()
    out["scores_file"] = scores_only.stat().st_size
    scores_only.unlink()
    return out


def _status_kb(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in KiB (VmRSS: now; VmHWM: the peak)."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return int(line.split()[1])


def child(args: argparse.Namespace) -> None:
    """One measured run (in this process): load, evaluate, print a JSON line."""
    import torch

    torch.set_num_threads(args.threads)
    import surfacelab as sl

    lm = sl.load_lm()
    if args.kind == "full":
        from transformers import GPT2Config, GPT2LMHeadModel

        tok = lm.tokenizer
        torch.manual_seed(0)
        config = GPT2Config(vocab_size=len(tok), n_positions=lm.max_length, n_embd=32, n_layer=2, n_head=2,
                            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                            pad_token_id=tok.pad_token_id)
        del lm
        lm = sl.load_lm((GPT2LMHeadModel(config).eval(), tok))
    task = sl.tasks.load("mmlu", "test", sample=args.n, seed=0) if args.n < FULL else sl.tasks.load("mmlu", "test")
    Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from the memory now in use
    base_rss = _status_kb("VmRSS")
    cpu, wall = time.process_time(), time.perf_counter()
    res = sl.evaluate(lm, task, progress=False)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    peak = _status_kb("VmHWM")
    cost = res.meta["why_cost"]
    if args.keep_runs and not args.warm:
        res.save(args.keep_runs / f"{args.kind}-{len(task.items)}")
    print(json.dumps({"kind": args.kind, "n": len(task.items), "warm": args.warm, "cpu_s": cpu, "wall_s": wall,
                      "peak_above_load_mb": (peak - base_rss) / 1024, "peak_mb": peak / 1024,
                      "split_mass_s": cost["seconds"], "split_mass_items": cost["items"],
                      "split_mass_cached": cost["items_cached"], "prompts": cost["prompts"],
                      "accuracy_lm": float(res.items["correct_lm"].mean())}))


def measure(kind: str, n: int, threads: int, keep_runs: Path | None) -> list[dict]:
    """A cold run and a warm rerun (a new process on the cache the first left), with the cache's breakdown."""
    from surfacelab.paths import cache_dir

    fresh = Path(tempfile.mkdtemp(prefix="surfacelab-bench-run-"))
    for sub in ("models", "gguf"):
        if (cache_dir() / sub).exists():
            (fresh / sub).symlink_to(cache_dir() / sub)
    env = {**os.environ, "SURFACELAB_CACHE": str(fresh), "OMP_NUM_THREADS": str(threads)}
    rows = []
    try:
        for warm in (False, True):
            cmd = [sys.executable, __file__, "--child", kind, "--n", str(n), "--threads", str(threads)]
            cmd += ["--keep-runs", str(keep_runs)] if keep_runs else []
            out = subprocess.run(cmd + (["--warm"] if warm else []), env=env, capture_output=True, text=True)
            if out.returncode:
                raise SystemExit(f"{kind} n={n} failed:\n{out.stderr[-3000:]}")
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["cache"] = cache_breakdown(fresh / "scores.sqlite")
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    return rows


def line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope)."""
    import numpy as np

    slope, intercept = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(intercept), float(slope)


def report(rows: list[dict]) -> str:
    mb = 1 / 2**20
    out = ["| model | items | run | CPU s | CPU ms/item | wall s | peak MB above load | split mass s (items, cached) | "
           "cache: scores / next-token / split-mass numbers (MB) "
           "| file MB | scores-only file MB | file / scores-only |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c = r["cache"]
        model = "smollm2-135m" if r["kind"] == "real" else "random 2x32 (same tokenizer)"
        out.append(f"| {model} | {r['n']:,} | {'warm' if r['warm'] else 'cold'} | {r['cpu_s']:.1f} "
                   f"| {1000 * r['cpu_s'] / r['n']:.1f} | {r['wall_s']:.1f} | {r['peak_above_load_mb']:.0f} "
                   f"| {r['split_mass_s']:.1f} ({r['split_mass_items']:,}, {r['split_mass_cached']:,}) "
                   f"| {c['scores'] * mb:.2f} / {c['next_token'] * mb:.2f} / {c['derived'] * mb:.2f} "
                   f"| {c['file'] * mb:.2f} | {c['scores_file'] * mb:.2f} | {c['file'] / c['scores_file']:.2f} |")
    for kind in ("real", "full"):
        cold = [r for r in rows if r["kind"] == kind and not r["warm"]]
        if len(cold) < 2:
            continue
        ns = [r["n"] for r in cold]
        fits = {what: line(ns, [get(r) for r in cold]) for what, get in (
            ("CPU s", lambda r: r["cpu_s"]), ("peak MB", lambda r: r["peak_above_load_mb"]),
            ("cache file MB", lambda r: r["cache"]["file"] * mb),
            ("scores-only MB", lambda r: r["cache"]["scores_file"] * mb))}
        out.append("")
        out.append(f"{kind}: least-squares lines over {', '.join(f'{n:,}' for n in ns)} items, "
                   f"at {FULL:,} items: " + "; ".join(f"{what} {a + b * FULL:,.0f} ({b:.4g}/item + {a:.3g})"
                                                       for what, (a, b) in fits.items()))
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100,200,400", help="items of the real model's runs (comma list; '' for none)")
    p.add_argument("--full-sizes", default=f"3511,7021,{FULL}", help="items of the random model's runs")
    p.add_argument("--threads", type=int, default=1, help="torch threads of each run")
    p.add_argument("--out", type=Path, help="write the table (Markdown) here")
    p.add_argument("--keep-runs", type=Path, help="save each cold run here (EvalResult.save: <kind>-<items>)")
    p.add_argument("--child", choices=("real", "full"), help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        args.kind = args.child
        child(args)
        return
    rows = []
    for kind, sizes in (("real", args.sizes), ("full", args.full_sizes)):
        for n in [int(s) for s in sizes.split(",") if s.strip()]:
            if not 1 <= n <= FULL:
                p.error(f"--sizes / --full-sizes: {n} is not between 1 and {FULL:,} (MMLU test's items)")
            rows += measure(kind, n, args.threads, args.keep_runs)
    table = report(rows)
    print(table)
    if args.out:
        args.out.write_text(f"# A whole dataset's run (`benchmarks/bench_run.py`)\n\n{table}")


if __name__ == "__main__":
    main()
