"""The run report of a whole dataset: how long ``sl.report`` takes, how large the page is, and how it behaves in
Chromium (opened from a file:// URL with the network refused).

    python benchmarks/bench_run.py --sizes "" --full-sizes 14042 --keep-runs /tmp/runs   # a full MMLU run
    flock /tmp/surfacelab-cpu.lock python benchmarks/bench_report.py /tmp/runs/full-14042

Reported: items, CPU seconds of ``sl.report``, the file's size (the bar: <= 10 MB for a full MMLU run) and, in
headless Debian chromium, the milliseconds from navigation to the item table's first rows, of a search typed into the
table (until its count changes), of a label filter, of a sort by the LM margin and of a row click until the item's
details show, and the page's JS heap.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))


def in_chromium(path: Path) -> dict:
    """Open the page and time what a reader does first."""
    from labkit import CHROMIUM, FLAGS
    from playwright.sync_api import sync_playwright

    out: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, chromium_sandbox=False,
                                    args=[*FLAGS, "--host-resolver-rules=MAP * ~NOTFOUND"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        refused: list[str] = []
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                   else (refused.append(r.request.url), r.abort()))

        def timed(action, until: str) -> float:
            t0 = time.perf_counter()
            action()
            page.wait_for_function(until, timeout=120_000)
            return 1000 * (time.perf_counter() - t0)

        count = "document.querySelector('#sl-r-items .sl-r-count').textContent"
        out["open_ms"] = timed(lambda: page.goto(path.as_uri()), "document.querySelector('#sl-r-items tbody tr')")
        before = page.evaluate(count)
        out["search_ms"] = timed(lambda: page.fill("#sl-r-items .sl-r-search", "which"), f"{count} !== {before!r}")
        page.fill("#sl-r-items .sl-r-search", "")
        page.wait_for_function(f"{count} === {before!r}")
        out["filter_ms"] = timed(lambda: page.select_option("#sl-r-items select >> nth=0", index=1),
                                 f"{count} !== {before!r}")
        first = page.evaluate("document.querySelector('#sl-r-items tbody tr').dataset.item")
        out["sort_ms"] = timed(lambda: page.click("#sl-r-items th >> text=margin"),
                               f"document.querySelector('#sl-r-items tbody tr').dataset.item !== {first!r}")
        out["click_ms"] = timed(lambda: page.click("#sl-r-items tbody tr[data-item]"),
                                "document.querySelector('#sl-r-items .sl-r-detail')")
        out["heap_mb"] = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize / 2 ** 20 : null")
        out["refused"] = refused
        browser.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="a run's folder (EvalResult.save)")
    p.add_argument("--out", type=Path, help="the page to write (default: a temporary file)")
    args = p.parse_args()
    import surfacelab as sl

    run = sl.EvalResult.load(args.run)
    path = args.out or Path(tempfile.mkdtemp(prefix="surfacelab-report-")) / "report.html"
    cpu, wall = time.process_time(), time.perf_counter()
    sl.report(run, path)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    size = path.stat().st_size
    print(f"{len(run.items):,} items: sl.report {cpu:.2f} CPU s ({wall:.2f} s wall), {size / 2**20:.2f} MB "
          f"({size / len(run.items):.0f} bytes per item)", flush=True)
    got = in_chromium(path)
    print(f"chromium: first rows {got['open_ms']:.0f} ms, search {got['search_ms']:.0f} ms, label filter "
          f"{got['filter_ms']:.0f} ms, sort {got['sort_ms']:.0f} ms, row click {got['click_ms']:.0f} ms, "
          f"JS heap {got['heap_mb']:.0f} MB, requests refused: {len(got['refused'])}")


if __name__ == "__main__":
    main()
