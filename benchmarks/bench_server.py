"""Scoring through a vLLM server: surfacelab's token route (prefix cache read), its ``/v1/completions`` route and
lm-evaluation-harness's ``local-completions`` through the same server, on the same requests; the tokens the server
computed, read from its own ``/metrics``.

One run starts a vLLM CPU server with the flags that open the token route (``--enable-scale-out
--enable-prompt-tokens-details --block-size 32``, and ``VLLM_SERVER_DEV_MODE=1`` so that the benchmark can empty its
prefix cache between tools) and scores two workloads, each tool in a fresh child process, timed over one call after a
warm-up on its first requests, the prefix cache emptied after the warm-up:

  * ``mmlu5``: 5-shot MMLU in lm-eval's layout (the subject line, then five worked examples of the subject's dev
    split, ``Question\\nA. ..\\nB. ..\\nC. ..\\nD. ..\\nAnswer: <gold text>``, then the question), every option scored
    as text (`` <option>``) after ``Answer:`` and under the domain premise ``Answer:`` alone;
  * ``arc``: ARC-Challenge 0-shot, every option under the question and under " the answer is:" (``bench_engine``);
  * ``explorer``: the explorer's default Run (``widgets.Explorer``: ARC-Challenge's first ``--explorer-items`` test
    items, template "paper", scorers lm / per_char / dcpmi, scored chunk by chunk with the verdict labels:
    ``explore.evaluate_in_chunks``). surfacelab times that whole run (its labels' extra next-token call included);
    lm-eval, which has no such run, scores the run's own requests (each option under the question and under the
    domain premise), and its numbers are compared with the run's raw log-probs.

Tools: surfacelab's server backend as it loads (the token route), the same with the token route turned off
(``/v1/completions``, every prompt computed whole), lm-eval 0.4.13 ``local-completions`` (token-id prompts,
``echo`` + ``logprobs``). Then a plain server (no flags) for ``arc`` with surfacelab (it falls back to
``/v1/completions``), and surfacelab in-process (transformers, one torch thread) for the numbers. vLLM's CPU build
binds its compute to one core.

Reported per workload and tool: requests/s, wall seconds, prompt tokens sent and computed by the server (its
``vllm:prompt_tokens_total`` minus ``vllm:prompt_tokens_cached_total`` over the timed call), the ratios to lm-eval,
and max |Δ| of per-request summed log-probs against the in-process model.

Run from the repository root (needs the ``bench`` extra and the vLLM environment, ``make vllm``); ``--workloads``
runs some of them (each run of the lock's length), and ``--out`` keeps the rows of the workloads not run this time:

    VLLM_PYTHON=.vllm-venv/bin/python SURFACELAB_CACHE=/tmp/slcache flock /tmp/surfacelab-cpu.lock \\
        .venv/bin/python benchmarks/bench_server.py --workloads mmlu5 --out benchmarks/results_server.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import DATA, WARMUP, _run_child, requests_for  # noqa: E402

#: Server flags of the token route (``vllm_tokens.FLAGS``) and the cache block the CPU build can use.
ROUTE_FLAGS = ["--enable-scale-out", "--enable-prompt-tokens-details", "--block-size", "32"]
#: The explorer's default scorers (``widgets.Explorer``).
EXPLORER_SCORERS = ["lm", "per_char", "dcpmi"]
LETTERS = "ABCD"


def mmlu5_requests(subjects: int, per_subject: int) -> list[tuple[str, str]]:
    """5-shot MMLU requests (see the module docstring) of the first ``subjects`` subjects (alphabetically) whose
    worked examples come to 1,000-3,000 characters, ``per_subject`` test questions each."""
    def rows(split: str) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = defaultdict(list)
        for line in (DATA / "mmlu" / f"{split}.jsonl").read_text().split("\n"):
            if line.strip():  # JSON Lines split on \n only: questions hold U+2028
                r = json.loads(line)
                out[r["subject"]].append(r)
        return out

    def shown(r: dict) -> str:
        return r["question"].strip() + "".join(f"\n{x}. {r[x]}" for x in LETTERS) + "\nAnswer:"

    dev, test = rows("dev"), rows("test")
    reqs: list[tuple[str, str]] = []
    taken = 0
    for subject in sorted(dev):
        shots = "".join(f"{shown(r)} {r[r['answer']]}\n\n" for r in dev[subject][:5])
        if not 1000 <= len(shots) <= 3000 or taken == subjects:
            continue
        taken += 1
        head = f"The following are multiple choice questions (with answers) about {subject.replace('_', ' ')}.\n\n"
        for r in test[subject][:per_subject]:
            options = [f" {r[x]}" for x in LETTERS]
            reqs += [(head + shots + shown(r), o) for o in options] + [("Answer:", o) for o in options]
    return reqs


def explorer_task(items: int):
    """The task of the explorer's default Run (``widgets.Explorer``'s source fields) with ``items`` items."""
    from surfacelab import tasks

    return tasks.load("arc-challenge", None, limit=items, variant="paper")


def explorer_requests(items: int) -> list[tuple[str, str]]:
    """The scoring requests of the explorer's run: each option under the question, then under the domain premise."""
    return [r for it in explorer_task(items).items for r in it.requests() + it.domain_requests()]


def _server_child(spec: dict) -> dict:
    """Time one tool scoring ``spec['requests']`` (``spec['explorer']``: the explorer's run of that many items)
    through the server at ``spec['url']``."""
    import httpx

    from surfacelab.backends.vllm_tokens import prompt_tokens

    reqs = [tuple(r) for r in spec["requests"]]
    root = spec["url"].removesuffix("/v1")
    if spec["tool"].startswith("surfacelab"):
        from surfacelab import engine
        from surfacelab.models import load_lm

        lm = load_lm(spec["model"], server=spec["url"])
        path = "token route" if lm.backend.route is not None else "/v1/completions"
        if spec["tool"] == "surfacelab-completions":
            lm.backend.route, path = None, "/v1/completions"

        def run(rs):
            got = engine.logprobs(lm, rs, progress=False, cache=False)
            return [s.total for s in got], got.stats.paths

        if spec.get("explorer"):  # the explorer's Run (warmed up on two items after those it times)
            from surfacelab import explore

            task = explorer_task(spec["explorer"] + 2)

            def run(rs):
                items = task.items[:spec["explorer"]] if rs is reqs else task.items[spec["explorer"]:]
                done = explore.evaluate_in_chunks(lm, dataclasses.replace(task, items=items), EXPLORER_SCORERS)
                scores = done.scores.sort_values(["item", "option_index"])
                totals = [v for _, g in scores.groupby("item") for v in [*g["logprob"], *g["domain_logprob"]]]
                return totals, {"why labels": int(done.items["why"].notna().sum()),
                                "labels' next-token prompts": done.meta["why_cost"]["prompts"]}
    else:
        from lm_eval.api.instance import Instance
        from lm_eval.models.openai_completions import LocalCompletionsAPI

        path = "/v1/completions"
        api = LocalCompletionsAPI(base_url=spec["url"] + "/completions", model=spec["served"],
                                  tokenizer=spec["folder"], tokenizer_backend="huggingface", tokenized_requests=True,
                                  batch_size=spec["batch_size"], num_concurrent=spec["concurrency"], max_length=2047,
                                  max_retries=3, timeout=3600)

        def run(rs):
            inst = [Instance("loglikelihood", {}, r, i) for i, r in enumerate(rs)]
            return [lp for lp, _ in api.loglikelihood(inst, disable_tqdm=True)], {}
    run(reqs[:WARMUP])
    if spec["reset"]:
        httpx.post(root + "/reset_prefix_cache", timeout=60).raise_for_status()
    sent0, cached0 = prompt_tokens(httpx.get(root + "/metrics", timeout=60).text)
    t0 = time.perf_counter()
    totals, paths = run(reqs)
    seconds = time.perf_counter() - t0
    sent1, cached1 = prompt_tokens(httpx.get(root + "/metrics", timeout=60).text)
    return {"seconds": seconds, "totals": [float(t) for t in totals], "sent": sent1 - sent0,
            "computed": (sent1 - sent0) - (cached1 - cached0), "path": path, "paths": paths}


def _child_process(spec: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(spec))
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
               "SURFACELAB_NO_CACHE": "1"}  # the explorer's run scores through the engine's default cache
        proc = subprocess.run([sys.executable, __file__, "--child", str(src), str(dst)], env=env,
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"{spec['tool']} failed:\n{proc.stderr[-3000:]}")
        return json.loads(dst.read_text())


def bench(model: str, workloads: dict[str, list], lm_eval_config: tuple[int, int], python: str,
          explorer_items: int = 0, log=print) -> list[dict]:
    """Start the servers, run every tool on every workload; one row per (workload, server, tool)."""
    from surfacelab.backends.vllm_server import LocalServer
    from surfacelab.models import PRESETS
    from surfacelab.paths import cache_dir

    folder = str(PRESETS[model].locate(cache_dir()))
    rows = []

    def run(server, flags: str, name: str, tool: str, reset: bool) -> None:
        spec = {"url": server.url, "served": model, "model": model, "folder": folder, "tool": tool,
                "requests": workloads[name], "reset": reset, "batch_size": lm_eval_config[0],
                "concurrency": lm_eval_config[1], "explorer": explorer_items if name == "explorer" else 0}
        t = time.time()
        res = _child_process(spec)
        log(f"{name} {flags} {tool} ({res['path']}): {res['seconds']:.1f}s, {res['computed']:,} of {res['sent']:,} "
            f"prompt tokens computed ({time.time() - t:.0f}s with load)")
        rows.append({"workload": name, "server": flags, "tool": tool, **res})

    os.environ["VLLM_SERVER_DEV_MODE"] = "1"  # POST /reset_prefix_cache
    with LocalServer(folder, python=python, served_model_name=model, args=ROUTE_FLAGS) as server:
        log(f"server with the token route ready at {server.url} (log {server.log_path})")
        for name in workloads:
            for tool in ("surfacelab", "surfacelab-completions", "lm-eval"):
                run(server, "route flags", name, tool, reset=True)
    os.environ.pop("VLLM_SERVER_DEV_MODE")
    if "arc" in workloads:
        with LocalServer(folder, python=python, served_model_name=model) as server:
            log(f"plain server ready at {server.url}")
            run(server, "plain", "arc", "surfacelab", reset=False)
    for name, reqs in workloads.items():
        t = time.time()
        local = _run_child({"tool": "surfacelab", "batch_size": "auto", "folder": folder, "requests": reqs,
                            "threads": 1})
        log(f"{name} surfacelab in-process: {local['seconds']:.1f}s ({time.time() - t:.0f}s with load)")
        rows.append({"workload": name, "server": "-", "tool": "surfacelab-in-process", "path": "in-process",
                     "seconds": local["seconds"], "totals": local["totals"], "sent": None, "computed": None})
    return rows


def markdown(rows: list[dict], runs: dict[str, dict]) -> str:
    """The results as a markdown section of their own (``runs``: per workload, its request count and the run that
    measured it: command, start, minutes)."""
    lines = [
        "# Server benchmark: surfacelab's token route vs /v1/completions vs lm-evaluation-harness, one vLLM server",
        "",
        "One vLLM 0.32.0 CPU server (fp32, `--enforce-eager`, `--max-model-len 2048`, its compute bound to one core) "
        "started with `--enable-scale-out --enable-prompt-tokens-details --block-size 32`; every tool runs in a fresh "
        f"process, is timed over one call after a {WARMUP}-request warm-up, the server's prefix cache emptied after "
        "the warm-up, surfacelab's own cache off. *computed*: prompt tokens the server computed in the timed call "
        "(its `/metrics`: `vllm:prompt_tokens` less `vllm:prompt_tokens_cached`). *plain*: a server started without "
        "the flags. max |Δ|: per-request summed log-probs against surfacelab in-process (transformers, one thread).",
        ""]
    for name, run in runs.items():
        sub = [r for r in rows if r["workload"] == name]
        le = next(r for r in sub if r["tool"] == "lm-eval")
        local = next(r for r in sub if r["tool"] == "surfacelab-in-process")
        lines += [f"## {name} ({run['requests']} requests)", "",
                  f"Run {run['started']} ({run['minutes']:.1f} min, under the shared CPU lock of a 2-core machine):",
                  "", "```", run["command"], "```", "",
                  "| tool | server | route | requests/s | wall s | prompt tokens sent | computed by the server "
                  "| computed ÷ lm-eval's | speed ÷ lm-eval | max \\|Δ\\| vs in-process |",
                  "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sub:
            delta = max(abs(a - b) for a, b in zip(r["totals"], local["totals"]))
            tokens = (f"{r['sent']:,} | {r['computed']:,} | {r['computed'] / le['computed']:.2f}"
                      if r["computed"] is not None else "- | - | -")
            lines.append(f"| {r['tool']} | {r['server']} | {r['path']} | {r['requests_per_s']:.1f} | "
                         f"{r['seconds']:.1f} | {tokens} | {r['requests_per_s'] / le['requests_per_s']:.2f}x | "
                         f"{delta:.1e} |")
        lines += ["", "surfacelab's paths: " + "; ".join(f"{r['tool']} ({r['server']}): {r['paths']}" for r in sub
                                                         if r.get("paths")), ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--items", type=int, default=50, help="ARC-Challenge questions (x options x 2 requests)")
    ap.add_argument("--mmlu-subjects", type=int, default=4, help="MMLU subjects of the 5-shot workload")
    ap.add_argument("--mmlu-questions", type=int, default=5, help="test questions per MMLU subject")
    ap.add_argument("--explorer-items", type=int, default=200, help="items of the explorer's run (its default)")
    ap.add_argument("--workloads", default="mmlu5,arc,explorer", help="the workloads to run, comma-separated")
    ap.add_argument("--lm-eval", default="32x1", help="lm-eval's BATCHxCONCURRENCY (prompts per call x calls)")
    ap.add_argument("--out", default=None, help="write the markdown here and the rows as .json (the rows of the "
                                                "workloads not run this time are kept from that .json)")
    args = ap.parse_args()
    if args.child:
        spec = json.loads(Path(args.child[0]).read_text())
        Path(args.child[1]).write_text(json.dumps(_server_child(spec)))
        return
    python = os.environ.get("VLLM_PYTHON") or str(ROOT / ".vllm-venv" / "bin" / "python")
    started, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time()
    command = ("VLLM_PYTHON=.vllm-venv/bin/python SURFACELAB_CACHE=/tmp/slcache flock /tmp/surfacelab-cpu.lock "
               ".venv/bin/python " + " ".join(["benchmarks/bench_server.py"] + sys.argv[1:]))
    build = {"mmlu5": lambda: mmlu5_requests(args.mmlu_subjects, args.mmlu_questions),
             "arc": lambda: requests_for("a", args.items)[0],
             "explorer": lambda: explorer_requests(args.explorer_items)}
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    unknown = [w for w in names if w not in build]
    if unknown or not names:
        ap.error(f"--workloads: {', '.join(unknown) or 'none given'}; choose among {', '.join(build)}")
    workloads = {name: build[name]() for name in names}
    lm_eval = tuple(int(x) for x in args.lm_eval.split("x"))
    rows = bench(args.model, workloads, lm_eval, python, args.explorer_items, log=lambda m: print(m, flush=True))
    for r in rows:
        r["requests_per_s"] = len(workloads[r["workload"]]) / r["seconds"]
    runs = {name: {"requests": len(reqs), "command": command, "started": started, "minutes": (time.time() - t0) / 60}
            for name, reqs in workloads.items()}
    if args.out and Path(args.out).with_suffix(".json").exists():  # the workloads not run this time stay
        kept = json.loads(Path(args.out).with_suffix(".json").read_text())
        runs = {**{k: v for k, v in kept.get("runs", {}).items() if k not in workloads}, **runs}
        rows += [r for r in kept["rows"] if r["workload"] in runs and r["workload"] not in workloads]
    order = [w for w in build if w in runs]
    rows.sort(key=lambda r: order.index(r["workload"]))
    md = markdown(rows, {w: runs[w] for w in order})
    if args.out:
        Path(args.out).write_text(md)
        Path(args.out).with_suffix(".json").write_text(json.dumps({"rows": rows, "runs": runs}, indent=1))
    print(md)


if __name__ == "__main__":
    main()
