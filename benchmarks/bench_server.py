"""Scoring through a vLLM server: surfacelab vs lm-evaluation-harness's ``local-completions``, and
surfacelab's server backend vs its in-process backend.

One run starts one vLLM server (the CPU build, fp32, the preset's safetensors copy) and scores the
ARC-Challenge workload of ``bench_engine.py`` (every option under the question stem and under the
domain premise " the answer is:") three ways, each in a fresh child process, timing one call over
the whole workload after a warm-up on its first requests:

  * surfacelab, server backend: ``load_lm(preset, server=URL)`` then ``engine.logprobs`` (token-id
    prompts, vLLM's ``prompt_logprobs``, batches of prompts per call, a few calls in flight);
  * lm-eval 0.4.13 ``local-completions`` on the same server (token-id prompts, ``echo`` +
    ``logprobs=1``), best of the (batch size x concurrency) configurations given;
  * surfacelab, in-process backend (transformers, ``cache=False``), as in ``bench_engine.py``.

Reported: options/s, the ratios, and max |Δ| of per-request summed log-probs between every pair.
vLLM's CPU build binds its compute to one core (it reserves the other), and surfacelab in-process
runs one torch thread, so both compute on one core.

Run from the repository root (needs the ``bench`` extra and the vLLM environment, ``make vllm``):

    VLLM_PYTHON=.vllm-venv/bin/python SURFACELAB_CACHE=/tmp/slcache flock /tmp/surfacelab-cpu.lock \\
        python benchmarks/bench_server.py --out benchmarks/results_server.md

Options: ``--items`` (ARC questions), ``--model`` (a causal preset), ``--lm-eval`` and
``--surfacelab`` (comma lists of ``BATCHxCONCURRENCY``: prompts per HTTP call x calls in flight).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import WARMUP, _run_child, requests_for  # noqa: E402


def _server_child(spec: dict) -> dict:
    """Time one tool scoring ``spec['requests']`` through the server at ``spec['url']``."""
    reqs = [tuple(r) for r in spec["requests"]]
    if spec["tool"] == "surfacelab-server":
        from surfacelab import engine
        from surfacelab.models import load_lm

        lm = load_lm(spec["model"], server=spec["url"])
        lm.backend.batch_prompts, lm.backend.concurrency = spec["batch_size"], spec["concurrency"]

        def run(rs):
            return [s.total for s in engine.logprobs(lm, rs, progress=False, cache=False)]
    else:
        from lm_eval.api.instance import Instance
        from lm_eval.models.openai_completions import LocalCompletionsAPI

        api = LocalCompletionsAPI(base_url=spec["url"] + "/completions", model=spec["served"],
                                  tokenizer=spec["folder"], tokenizer_backend="huggingface", tokenized_requests=True,
                                  batch_size=spec["batch_size"], num_concurrent=spec["concurrency"], max_length=2047,
                                  max_retries=3, timeout=600)

        def run(rs):
            inst = [Instance("loglikelihood", {}, r, i) for i, r in enumerate(rs)]
            return [lp for lp, _ in api.loglikelihood(inst, disable_tqdm=True)]
    run(reqs[:WARMUP])
    t0 = time.perf_counter()
    totals = run(reqs)
    return {"seconds": time.perf_counter() - t0, "totals": [float(t) for t in totals]}


def _child_process(spec: dict) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(spec))
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, __file__, "--child", str(src), str(dst)], env=env,
                              capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"{spec['tool']} failed:\n{proc.stderr[-3000:]}")
        return json.loads(dst.read_text())


def bench(model: str, items: int, lm_eval_configs: list[tuple[int, int]], configs: list[tuple[int, int]],
          python: str, log=print) -> tuple[list[dict], dict]:
    """Start a server, run every tool once (lm-eval once per configuration); rows and run facts."""
    from surfacelab.backends.vllm_server import LocalServer
    from surfacelab.models import PRESETS
    from surfacelab.paths import cache_dir

    folder = str(PRESETS[model].locate(cache_dir()))
    reqs, source = requests_for("a", items)
    rows = []
    with LocalServer(folder, python=python, served_model_name=model) as server:
        log(f"server ready at {server.url} (log {server.log_path})")
        base = {"url": server.url, "served": model, "model": model, "folder": folder, "requests": reqs}
        specs = [{"tool": "surfacelab-server", "batch_size": b, "concurrency": c} for b, c in configs]
        specs += [{"tool": "lm-eval-server", "batch_size": b, "concurrency": c} for b, c in lm_eval_configs]
        for spec in specs:
            t = time.time()
            res = _child_process({**base, **spec})
            log(f"{spec['tool']} bs={spec['batch_size']} x{spec['concurrency']}: {res['seconds']:.1f}s "
                f"({time.time() - t:.0f}s with load)")
            rows.append({**spec, **res})
    t = time.time()
    local = _run_child({"tool": "surfacelab", "batch_size": "auto", "folder": folder, "requests": reqs, "threads": 1})
    log(f"surfacelab in-process: {local['seconds']:.1f}s ({time.time() - t:.0f}s with load)")
    rows.append({"tool": "surfacelab-in-process", "batch_size": "auto", "concurrency": 1,
                 "seconds": local["seconds"], "totals": local["totals"]})
    for r in rows:
        r["options_per_s"] = len(reqs) / r["seconds"]
    return rows, {"requests": len(reqs), "source": source, "model": model}


def markdown(rows: list[dict], facts: dict, command: str, started: str, wall: float) -> str:
    """The results as a markdown section of their own."""
    sl = next(r for r in rows if r["tool"] == "surfacelab-server")  # the first configuration: the default
    local = next(r for r in rows if r["tool"] == "surfacelab-in-process")
    le = max((r for r in rows if r["tool"] == "lm-eval-server"), key=lambda r: r["options_per_s"])

    def delta(a: dict, b: dict) -> float:
        return max(abs(x - y) for x, y in zip(a["totals"], b["totals"]))

    lines = [
        "# Server benchmark: surfacelab vs lm-evaluation-harness through one vLLM server", "",
        f"Command (run {started}, {wall / 60:.1f} min in all, on a shared 2-core machine: other engineers' "
        "tests ran at the same time, so treat the ratios as indicative):", "", "```", command, "```", "",
        f"Workload: ARC-Challenge test, every option under the question and under \" the answer is:\" "
        f"({facts['requests']} requests, {facts['model']}; requests from {facts['source']}). One vLLM 0.32.0 CPU "
        "server (fp32, `--enforce-eager`, `--max-model-len 2048`; its compute is bound to one core) serves both "
        "clients in turn; each client runs in a fresh process, is timed over one call after a "
        f"{WARMUP}-request warm-up, with surfacelab's cache off. lm-eval: `local-completions` with token-id "
        "prompts; the ratio below is against its best configuration. surfacelab's server backend: ratios "
        "are of its first configuration (its defaults). In-process: surfacelab's transformers backend, one "
        "torch thread.", "",
        "| tool | batch x concurrency | options/s | surfacelab server ÷ tool |",
        "|---|---|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['tool']} | {r['batch_size']} x {r['concurrency']} | {r['options_per_s']:.1f} | "
                     f"{sl['options_per_s'] / r['options_per_s']:.2f}x |")
    lines += ["", "| numbers | max \\|Δ\\| of summed log-probs |", "|---|---:|",
              f"| surfacelab server vs lm-eval server | {delta(sl, le):.1e} |",
              f"| surfacelab server vs surfacelab in-process | {delta(sl, local):.1e} |",
              f"| lm-eval server vs surfacelab in-process | {delta(le, local):.1e} |", "",
              f"- surfacelab ÷ lm-eval through the same server: {sl['options_per_s'] / le['options_per_s']:.2f}x",
              f"- surfacelab server ÷ surfacelab in-process: {sl['options_per_s'] / local['options_per_s']:.2f}x "
              "(the in-process backend runs each shared question prefix once; vLLM does not read its prefix "
              "cache for requests that ask for prompt log-probs, so the server forwards every prompt whole)", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--items", type=int, default=100, help="ARC-Challenge questions (x options x 2 requests)")
    ap.add_argument("--lm-eval", default="32x1,8x4", help="lm-eval configurations BATCHxCONCURRENCY (best is quoted)")
    ap.add_argument("--surfacelab", default="32x4,32x1",
                    help="surfacelab configurations BATCHxCONCURRENCY (prompts per HTTP call x calls in flight); "
                         "the first is quoted in the ratios")
    ap.add_argument("--out", default=None, help="write the markdown section here (and the rows as .json)")
    args = ap.parse_args()
    if args.child:
        spec = json.loads(Path(args.child[0]).read_text())
        Path(args.child[1]).write_text(json.dumps(_server_child(spec)))
        return
    python = os.environ.get("VLLM_PYTHON") or str(ROOT / ".vllm-venv" / "bin" / "python")
    parse = lambda s: [tuple(int(x) for x in c.split("x")) for c in s.split(",") if c]  # noqa: E731
    started, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), time.time()
    command = ("VLLM_PYTHON=.vllm-venv/bin/python SURFACELAB_CACHE=/tmp/slcache flock /tmp/surfacelab-cpu.lock "
               "python " + " ".join(["benchmarks/bench_server.py"] + sys.argv[1:]))
    rows, facts = bench(args.model, args.items, parse(args.lm_eval), parse(args.surfacelab), python,
                        log=lambda m: print(m, flush=True))
    md = markdown(rows, facts, command, started, time.time() - t0)
    if args.out:
        Path(args.out).write_text(md)
        Path(args.out).with_suffix(".json").write_text(json.dumps({"facts": facts, "rows": rows}, indent=1))
    print(md)


if __name__ == "__main__":
    main()
