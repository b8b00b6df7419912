"""Warm update time of the Workbench on the Python side: every view, 4 options, smollm2-135m + splade-tiny.

This is the kernel's share of an edit; what a person waits for is measured in the browser by
``benchmarks/bench_workbench_browser.py`` (keystroke until the views' DOM is quiet). Two cases, each the
median of ``--repeats`` runs after one warm-up update (models loaded, first forward done):

* ``edit``: a new premise every run (nothing in the score caches: what a live edit costs);
* ``same``: the same inputs again with every view forced to redraw (the engine's caches answer).

Run under the shared CPU lock: ``flock /tmp/surfacelab-cpu.lock python benchmarks/bench_workbench.py``.
Prints one line per case and the per-view breakdown of the edit case; ``--json PATH`` also writes them.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import time

import torch

from surfacelab.widgets import Workbench

OPTIONS = [" bathtub", " sink", " pool", " xylophone"]
PARAPHRASES = ["tub, bath tub", "basin, washbasin", "swimming pool", ""]
WORDS = ["red", "old", "tiny", "quiet", "busy", "green", "cold", "warm", "dark", "bright", "small", "big"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    wb = Workbench(live=False)
    wb.domain_box.value = " the"
    wb.set_options(OPTIONS, PARAPHRASES, gold=0)
    wb.update()  # warm-up: first forward of each model, JIT paths, imports
    steps: dict[str, list[float]] = {name: [] for name in wb.views}
    for name, view in wb.views.items():
        def timed_compute(inp, compute=view.compute, name=name):
            t = time.perf_counter()
            out = compute(inp)
            steps[name].append(time.perf_counter() - t)
            return out
        view.compute = timed_compute

    nonce = secrets.token_hex(2)
    edit = []
    for i in range(args.repeats):
        wb.premise_box.value = f"Run {nonce}-{i}: the {WORDS[i % len(WORDS)]} man took a bath in the"
        t = time.perf_counter()
        wb.update()
        edit.append(time.perf_counter() - t)
        assert wb.message.value == "", wb.message.value
    edit_steps = {name: statistics.median(v) for name, v in steps.items()}
    same = []
    for _ in range(args.repeats):
        for view in wb.views.values():
            view.shown_key = None  # force every view to recompute and redraw
        t = time.perf_counter()
        wb.update()
        same.append(time.perf_counter() - t)
    out = {"torch_threads": torch.get_num_threads(), "repeats": args.repeats,
           "edit_median_s": statistics.median(edit), "edit_max_s": max(edit),
           "same_median_s": statistics.median(same), "edit_compute_per_view_median_s": edit_steps}
    print(f"torch threads: {out['torch_threads']}")
    print(f"warm update after an edit (new premise, 4 options, {len(wb.views)} views): median "
          f"{out['edit_median_s']:.3f} s, max {out['edit_max_s']:.3f} s over {args.repeats}")
    print(f"warm update, same inputs (score cache hits):              median {out['same_median_s']:.3f} s")
    print("library calls per view (edit case, median): " + ", ".join(f"{k} {v:.3f} s" for k, v in edit_steps.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
