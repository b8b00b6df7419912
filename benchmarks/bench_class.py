"""A class at once: N visitors on one ``make app``, every visitor's causal LM on one vLLM server.

Starts a vLLM server for the default model from the vLLM environment, as the tests do (``--server URL`` uses a
running one instead, with its key in ``$SURFACELAB_API_KEY``), then ``make app SERVER=<it>`` as a teacher would (a
temp notebook folder; nothing in the checkout changes). For each class size in ``--visitors`` (one visitor alone
first), that many visitors, each a headless Chromium of its own at 1440x900 driven by its own thread (as each
student has their own browser):

1. all open the printed URL at once (Voilà starts a kernel per visitor and runs the notebook in it): the seconds
   until each one's workbench is drawn;
2. once every page is drawn, all type ``--edits`` edits into the premise at the same time (``labkit.timed_edit``:
   the premise set to a base text and left to settle, then a word typed at its end, 60 ms between keys); per edit
   the seconds from the last keystroke to the last change inside the views in sight (the person's wait) and until
   the whole workbench was quiet. Every visitor types its own word into a premise of its own;
3. every update must complete and show its own visitor's numbers: after the edits, the LM scores of every premise
   typed are computed through the same server and compared with the scorer table each page showed after that edit
   (3 decimals); a lost update (a table left at an earlier keystroke) or another visitor's numbers fail the check;
4. the resident memory (RSS) of every visitor's kernel after the edits, of the Voilà server and of the vLLM server.

The kernels are then shut down and the next class size starts from fresh pages. Run under the shared CPU lock:

    flock /tmp/surfacelab-cpu.lock .venv/bin/python benchmarks/bench_class.py --visitors 1,4 --edits 6

``--in-process`` serves the app without a server (each kernel loads the offline models, ``make app``'s default)
for comparison. Results: ``benchmarks/results_class.md`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import sys
import tempfile
import threading
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import labkit  # noqa: E402
from bench_workbench_browser import p90  # noqa: E402

SERVED = "smollm2-135m"
#: The notebook's example: the options and domain premise every visitor's table scores.
OPTIONS, DOMAIN = [" bathtub", " sink", " pool", " xylophone"], " the"
#: One word per visitor (the premise each types ends differently).
WORDS = [" warm", " cold", " small", " dark", " clean", " quiet", " red", " old"]


def visitor(index: int, app: labkit.App, edits: int, nonce: str, barrier: threading.Barrier, out: dict) -> None:
    """One visitor: open the app, wait for the others, type ``edits`` edits; ``out`` gets its numbers (or the
    error that stopped it)."""
    from playwright.sync_api import sync_playwright

    record: dict = {"edits": [], "error": None}
    out[index] = record
    with sync_playwright() as p:
        browser, page, errors = labkit.launch(p, 1440, 900)
        try:
            barrier.wait()
            record["open_s"] = labkit.open_app(page, app.url, timeout_s=900, log=app.log)
            record["kernel"] = labkit.app_kernel(page)
            barrier.wait()
            for i in range(edits):
                base = f"Visitor {index} ({nonce}) wrote line {i}: the man took a bath in the"
                sight, quiet = labkit.timed_sight(page, base, WORDS[index % len(WORDS)])
                record["edits"].append({"premise": base + WORDS[index % len(WORDS)], "sight_s": sight,
                                        "quiet_s": quiet, "lm": labkit.score_table(page)["LM"],
                                        "status": page.inner_text(".sl-status")})
            record["rss"] = labkit.kernel_rss(record["kernel"])
            record["page_errors"] = [e for e in errors if "pageerror" in e]
        except Exception as exc:  # the run reports it; the other visitors go on
            record["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            barrier.abort()
        finally:
            browser.close()


def check(records: dict, lm) -> tuple[int, int, list[str]]:
    """(updates whose table shows its own premise's numbers, updates, problems): each edit's table against the LM
    scores of its premise through the same server, and against the other visitors' premises of the same edit."""
    import surfacelab as sl

    reference: dict[str, list[float]] = {}
    premises = {e["premise"] for r in records.values() for e in r["edits"]}
    for premise in sorted(premises):
        reference[premise] = list(sl.score(lm, premise, OPTIONS, domain_premise=DOMAIN, cache=False).table["logprob"])

    def shows(lm_cells: list[str], premise: str) -> bool:
        return len(lm_cells) == len(OPTIONS) and all(
            abs(float(c) - v) <= 2e-3 for c, v in zip(lm_cells, reference[premise]))

    good, problems = 0, []
    for index, r in sorted(records.items()):
        for i, e in enumerate(r["edits"]):
            others = [o["edits"][i]["premise"] for j, o in records.items() if j != index and len(o["edits"]) > i]
            if not e["status"].startswith("updated"):
                problems.append(f"visitor {index} edit {i}: status {e['status']!r}")
            elif not shows(e["lm"], e["premise"]):
                whose = [p for p in others if shows(e["lm"], p)]
                problems.append(f"visitor {index} edit {i}: table {e['lm']} is not its premise's "
                                f"{[round(v, 3) for v in reference[e['premise']]]}"
                                + (f"; it is another visitor's ({whose[0]!r})" if whose else ""))
            else:
                good += 1
    total = sum(len(r["edits"]) for r in records.values())
    return good, total, problems


def rss_of(pid: int | None, *, children: bool = True) -> int | None:
    """The resident memory of process ``pid``, with its children's (the vLLM server runs its engine in a child) or
    without (Voilà's children are the visitors' kernels, counted on their own)."""
    import psutil

    if pid is None:
        return None
    try:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [proc, *(proc.children(recursive=True) if children else [])])
    except psutil.NoSuchProcess:
        return None


def voila_pid(app: labkit.App) -> int | None:
    """The Voilà server's process (the one listening on the app's port)."""
    import psutil

    port = int(app.base.rsplit(":", 1)[1])
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        # the Python process itself, not make's shell that started it (whose command line names it too)
        if cmd and "python" in Path(cmd[0]).name and any(Path(c).name == "voila" for c in cmd) \
                and f"--port={port}" in cmd:
            return proc.pid
    return None


def run_class(app: labkit.App, n: int, edits: int) -> dict:
    """``n`` visitors at once; their records, the check, and the summaries."""
    nonce = secrets.token_hex(2)
    barrier = threading.Barrier(n)
    records: dict = {}
    threads = [threading.Thread(target=visitor, args=(i, app, edits, nonce, barrier, records), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = {i: r["error"] for i, r in records.items() if r["error"]}
    sight = [e["sight_s"] for r in records.values() for e in r["edits"]]
    quiet = [e["quiet_s"] for r in records.values() for e in r["edits"]]
    opened = [r["open_s"] for r in records.values() if "open_s" in r]
    rss = [r["rss"] for r in records.values() if r.get("rss")]
    out = {"visitors": n, "edits_each": edits, "failed": failed, "records": records,
           "open_median_s": statistics.median(opened) if opened else None, "open_max_s": max(opened, default=None),
           "sight_p50_s": statistics.median(sight) if sight else None, "sight_p90_s": p90(sight) if sight else None,
           "quiet_p50_s": statistics.median(quiet) if quiet else None, "quiet_p90_s": p90(quiet) if quiet else None,
           "kernel_rss_mb": [round(x / 2**20) for x in rss]}
    voila = rss_of(voila_pid(app), children=False)
    out["voila_rss_mb"] = round(voila / 2**20) if voila else None
    for r in records.values():  # the next class starts with no kernel of this one
        if r.get("kernel"):
            try:
                labkit.shutdown_kernel(app, r["kernel"])
            except OSError:
                pass
    return out


def markdown(results: list[dict], meta: dict) -> str:
    """The results page."""
    def s(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}"

    lines = [
        "# A class at once: N visitors on one `make app`",
        "",
        f"Generated by `{meta['command']}` on {meta['date']} ({meta['machine']}); do not edit by hand. How it is "
        "measured: the docstring of `benchmarks/bench_class.py`; what the numbers mean: "
        "[docs/app.md](../docs/app.md#what-a-class-costs).",
        "",
        f"Server: {meta['server']}. Each visitor: its own headless Chromium at 1440x900 on this machine (in a class "
        "the browsers run on the students' machines, not on the server's CPU), "
        f"{meta['edits']} edits typed at the same time as the others.",
        "",
        "| visitors | page drawn: median / max (s) | keystroke → views in sight: p50 / p90 (s) | "
        "→ workbench quiet: p50 / p90 (s) | updates showing their own numbers | kernel RSS per visitor (MB) | "
        "Voilà server RSS (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rss = r["kernel_rss_mb"]
        kernels = f"{round(statistics.median(rss))} ({min(rss)}–{max(rss)})" if rss else "–"
        lines.append(f"| {r['visitors']} | {s(r['open_median_s'])} / {s(r['open_max_s'])} | "
                     f"{s(r['sight_p50_s'])} / {s(r['sight_p90_s'])} | {s(r['quiet_p50_s'])} / {s(r['quiet_p90_s'])} | "
                     f"{r['checked'][0]} of {r['checked'][1]} | "
                     f"{kernels} | "
                     f"{r['voila_rss_mb'] or '–'} |")
    lines += ["", f"vLLM server RSS (with its engine process): {meta.get('server_rss_mb') or '–'} MB.", ""]
    for r in results:
        for problem in r["checked"][2] + [f"visitor {i}: {e}" for i, e in r["failed"].items()]:
            lines.append(f"- {r['visitors']} visitors: {problem}")
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--visitors", default="1,4", help="class sizes to run, in order (comma-separated)")
    ap.add_argument("--edits", type=int, default=6, help="edits each visitor types")
    ap.add_argument("--server", default=None, help="a running vLLM server's URL (default: start one)")
    ap.add_argument("--in-process", action="store_true", help="no server: every kernel loads the offline models")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results_class.md"))
    ap.add_argument("--json", default=None, help="also write every number here")
    args = ap.parse_args()

    import surfacelab as sl
    from surfacelab.backends.vllm_server import LocalServer
    from surfacelab.models import PRESETS
    from surfacelab.paths import cache_dir

    key = os.environ.get("SURFACELAB_API_KEY") if args.server else secrets.token_hex(16)
    server = None
    if not args.in_process and not args.server:
        python = os.environ.get("VLLM_PYTHON") or str(ROOT / ".vllm-venv" / "bin" / "python")
        server = LocalServer(PRESETS[SERVED].locate(cache_dir()), python=python, api_key=key,
                             served_model_name=SERVED).start()
    try:
        url = None
        if server is not None:
            server.wait()
            url = server.url
        elif args.server:
            url = args.server
        lm = sl.load_lm(SERVED, server=url, api_key=key) if url else sl.load_lm(SERVED)
        variables = {"SERVER": url} if url else {}
        env = {"SURFACELAB_API_KEY": key} if url and key else {}
        results = []
        with tempfile.TemporaryDirectory(prefix="surfacelab-class-") as tmp, \
                labkit.make_app(Path(tmp), env=env, **variables) as app:
            print(app.printed, flush=True)
            for n in [int(x) for x in args.visitors.split(",")]:
                r = run_class(app, n, args.edits)
                r["checked"] = check(r["records"], lm)
                results.append(r)
                print(f"{n} visitors: page drawn median {r['open_median_s']} s; keystroke → views in sight p50 "
                      f"{r['sight_p50_s']} s, p90 {r['sight_p90_s']} s; own numbers {r['checked'][0]} of "
                      f"{r['checked'][1]}; kernel RSS {r['kernel_rss_mb']} MB; failed {r['failed']}", flush=True)
        meta = {"command": "python benchmarks/bench_class.py " + " ".join(sys.argv[1:]),
                "date": date.today().isoformat(),
                "machine": f"{os.cpu_count()} CPU cores, {platform.machine()}, shared", "edits": args.edits,
                "server": (f"vLLM CPU build, {SERVED} fp32, started by the benchmark" if server is not None else
                           f"{url}" if url else "none: every kernel runs the offline models (make app's default)"),
                "server_rss_mb": round(rss_of(server.proc.pid) / 2**20) if server is not None else None}
    finally:
        if server is not None:
            server.stop()
    Path(args.out).write_text(markdown(results, meta), encoding="utf-8")
    print(f"wrote {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=str))


if __name__ == "__main__":
    main()
