"""What a person waits for after an edit: keystroke → the views redrawn, measured in Chromium.

Starts ``make lab`` (a temp notebook folder and Jupyter config; nothing in the checkout changes), opens
the printed URL in headless Debian chromium, runs the workbench notebook (smollm2-135m + splade-tiny,
4 options), then for each edit sets the premise to a base text, lets it settle, types a word at its end
(60 ms between keys, as a fast typist finishing a word: each key outdates the update the one before it
started, whose forward passes stop at the next layer) and measures in the
page, from the last keystroke: until the last change inside each of the views that were on the screen at
the keystroke (the headline: what the person looks at), until the workbench's whole DOM has been quiet for
0.7 s (the views out of sight are computed after the ones in sight, in the background once the typing
pauses), per view the time of its last change and of the first change of its content (a slow view shows a
first part, then the rest). The kernel's own time for the update ("updated in … s" in the status line:
the views in sight but the slow Why view) is recorded beside it.

Viewports (``--heights``): 1440×900 (two views in sight at the top), 1440×1080 (four) and 1440×3200 (all six in
sight at once: every view recomputed and redrawn on the keystroke's path). At 1440×900 it then measures what a person
waits for when, after an edit, they scroll down to each view (``--scrolls`` rounds). Target: ≤ 1 s.

Run on a quiet machine, under the shared CPU lock:

    flock /tmp/surfacelab-cpu.lock .venv/bin/python benchmarks/bench_workbench_browser.py --edits 7

``--screenshots DIR`` also writes screenshots at 1280/1440/1920 px, light and dark, and
``--readme-shot`` regenerates ``docs/workbench.png`` (1440×900).
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "browser"))
import labkit  # noqa: E402

WORDS = [" big", " old", " warm", " small", " new", " clean", " red", " quiet", " cold", " white", " dark", " tiny"]


def _kernel_seconds(page) -> float | None:
    m = re.search(r"updated in ([0-9.]+) s", page.inner_text(".sl-status"))
    return float(m.group(1)) if m else None


def p90(values: list[float]) -> float:
    """The 90th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]


def measure(page, edits: int, label: str) -> dict:
    """``edits`` timed edits on ``page``; returns the browser and kernel seconds and their summaries: the views
    on the screen at the keystroke (what the person waits for), every view (those out of sight are computed
    after them, in the background), and per view.

    Every premise is new to the engine's caches (a random tag in it), as a real edit is."""
    sight_s, browser_s, kernel_s = [], [], []
    views: dict[str, list[float]] = {name: [] for name in labkit.VIEWS}
    first: dict[str, list[float]] = {name: [] for name in labkit.VIEWS}
    seen: dict[str, int] = {}
    left: dict[str, int] = {}
    nonce = secrets.token_hex(2)
    for i in range(edits):
        word = WORDS[i % len(WORDS)]
        base = f"In room {nonce}{i} the {'man' if i % 2 == 0 else 'woman'} took a bath in the"
        per: dict = {}
        firsts: dict = {}
        sight: list = []
        browser_s.append(labkit.timed_edit(page, base, word, per_view=per, first_content=firsts, in_sight=sight))
        kernel_s.append(_kernel_seconds(page))
        for name in per.pop("deferred"):  # still waiting when the DOM went quiet (should not happen)
            left[name] = left.get(name, 0) + 1
            per[name] = None
        for name in sight:
            seen[name] = seen.get(name, 0) + 1
        sight_s.append(max((per[n] for n in sight if per.get(n) is not None), default=browser_s[-1]))
        for name, t in per.items():
            if t is not None:
                views[name].append(t)
                if firsts.get(name) is not None:
                    first[name].append(firsts[name])
        shown = ", ".join(f"{n}{'' if n in sight else ' (bg)'} {t:.2f}" for n, t in per.items() if t is not None)
        print(f"  {label} edit {i + 1}: in sight {sight_s[-1]:.2f} s, all {browser_s[-1]:.2f} s ({shown}), "
              f"kernel {kernel_s[-1]} s", flush=True)
    ks = [k for k in kernel_s if k is not None]
    return {"sight_s": sight_s, "sight_median_s": statistics.median(sight_s), "sight_p90_s": p90(sight_s),
            "sight_max_s": max(sight_s), "in_sight": seen,
            "browser_s": browser_s, "kernel_s": kernel_s, "browser_median_s": statistics.median(browser_s),
            "browser_p90_s": p90(browser_s), "browser_max_s": max(browser_s),
            "kernel_median_s": statistics.median(ks) if ks else None,
            "views": {n: {"median_s": statistics.median(v), "p90_s": p90(v), "n": len(v),
                          "first_median_s": statistics.median(first[n]) if first[n] else None}
                      for n, v in views.items() if v},
            "left_deferred": left}


def measure_bursts(page, rounds: int, pause_s: float) -> dict:
    """A person typing in bursts at the top of the workbench: a word, a pause of ``pause_s`` (shorter or longer
    than the workbench's ``BACKGROUND_IDLE_S``: the views out of sight wait, or have started computing in the
    background), the next word; the seconds from its last keystroke until the views in sight were last changed."""
    waits = []
    nonce = secrets.token_hex(2)
    box = page.locator(".sl-premise textarea")
    for i in range(rounds):
        page.evaluate("document.querySelector('.sl-workbench').scrollIntoView()")
        box.fill(f"In yard {nonce}{i} the man took a bath in the")
        time.sleep(0.5)
        labkit.wait_quiet(page, changed=False)
        box.click()
        page.keyboard.press("End")
        page.keyboard.type(WORDS[i % len(WORDS)], delay=60)
        time.sleep(pause_s)
        page.evaluate(labkit.WATCH_JS)
        page.keyboard.type(WORDS[(i + 5) % len(WORDS)], delay=60)
        labkit.wait_quiet(page)
        sight = page.evaluate(labkit.SIGHT_JS)
        w = page.evaluate("(() => { const w = window.__slWatch; return {key: w.key, views: w.views}; })()")
        waits.append(max((w["views"][n] - w["key"]) / 1000.0 for n in sight if w["views"].get(n, 0) > w["key"]))
        print(f"  1440x900 burst {i + 1} (pause {pause_s} s): in sight {waits[-1]:.2f} s", flush=True)
    return {"pause_s": pause_s, "median_s": statistics.median(waits), "p90_s": p90(waits), "n": len(waits)}


def measure_scrolls(page, rounds: int) -> dict:
    """What a person waits for when, after an edit, they scroll down to a view: per round an edit (settled, the
    views in sight redrawn), then each view below the first screen scrolled to the top of the screen in turn;
    per view the seconds from the scroll until it (and any view that came into sight with it) was last changed
    (0 when it was already drawn)."""
    waits: dict[str, list[float]] = {}
    nonce = secrets.token_hex(2)
    for i in range(rounds):
        page.evaluate("document.querySelector('.sl-workbench').scrollIntoView()")
        time.sleep(0.5)
        labkit.timed_edit(page, f"In hall {nonce}{i} the man took a bath in the", WORDS[i % len(WORDS)])
        for name in ("paraphrase", "letters", "pll", "why"):
            changed = labkit.timed_scroll(page, name)
            waits.setdefault(name, []).append(max(changed.values(), default=0.0))
        print("  1440x900 scroll round " + str(i + 1) + ": " + ", ".join(f"{n} {v[-1]:.2f}" for n, v in waits.items()),
              flush=True)
    return {n: {"median_s": statistics.median(v), "p90_s": p90(v), "n": len(v)} for n, v in waits.items()}


def screenshots(p, url: str, out: Path, readme: Path | None) -> None:
    """Screenshots at 1280 (file browser open) / 1440 / 1920 px, light and dark; the README's at 1440×900."""
    out.mkdir(parents=True, exist_ok=True)
    for width, fb, dark in [(1440, False, False), (1280, True, False), (1920, True, False), (1440, False, True)]:
        browser, page, _ = labkit.launch(p, width, 900)
        labkit.open_workbench(page, url, dark=dark, file_browser=fb)
        tag = f"{width}{'-filebrowser' if fb else ''}{'-dark' if dark else ''}"
        page.evaluate("document.querySelector('.sl-workbench').scrollIntoView()")
        time.sleep(1.5)
        page.screenshot(path=str(out / f"workbench-{tag}-top.png"))
        if readme is not None and width == 1440 and not dark:
            page.screenshot(path=str(readme))
        for view in ("paraphrase", "pll"):
            page.locator(f".sl-view-{view}").scroll_into_view_if_needed()
            time.sleep(1.5)
            page.screenshot(path=str(out / f"workbench-{tag}-{view}.png"))
        browser.close()
        print(f"  screenshots {tag} -> {out}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=7)
    ap.add_argument("--heights", default="900,3200", help="viewport heights at 1440 px wide (comma-separated)")
    ap.add_argument("--scrolls", type=int, default=3,
                    help="rounds of edit, then scroll to each view, and of typing in bursts (1440x900; 0: none)")
    ap.add_argument("--json", default=None, help="also write the numbers here")
    ap.add_argument("--screenshots", default=None, help="folder for screenshots (1280/1440/1920, light/dark)")
    ap.add_argument("--readme-shot", action="store_true", help="regenerate docs/workbench.png (1440x900)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    out: dict = {"edits": args.edits, "viewports": {}}
    with tempfile.TemporaryDirectory(prefix="surfacelab-bench-") as tmp, labkit.make_lab(Path(tmp)) as lab, \
            sync_playwright() as p:
        for width, height in [(1440, int(h)) for h in args.heights.split(",")]:
            browser, page, errors = labkit.launch(p, width, height)
            labkit.open_workbench(page, lab.url, log=lab.log)
            page.evaluate("document.querySelector('.sl-workbench').scrollIntoView()")
            label = f"{width}x{height}"
            out["viewports"][label] = measure(page, args.edits, label)
            if height == 900 and args.scrolls > 0:
                out["scroll"] = measure_scrolls(page, args.scrolls)
                out["bursts"] = [measure_bursts(page, args.scrolls, pause) for pause in (0.6, 1.5)]
            if errors:
                out["viewports"][label]["errors"] = errors
            browser.close()
        if args.screenshots or args.readme_shot:
            readme = Path(__file__).resolve().parent.parent / "docs" / "workbench.png" if args.readme_shot else None
            screenshots(p, lab.url, Path(args.screenshots or tmp), readme)
    for label, r in out["viewports"].items():
        print(f"{label}: keystroke → the views in sight ({', '.join(r['in_sight'])}) redrawn: median "
              f"{r['sight_median_s']:.2f} s, p90 {r['sight_p90_s']:.2f} s, max {r['sight_max_s']:.2f} s over "
              f"{args.edits} edits; every view (those out of sight in the background), DOM quiet: median "
              f"{r['browser_median_s']:.2f} s; kernel (Python, every view in sight but Why) median "
              f"{r['kernel_median_s']:.2f} s")
        for name, v in r["views"].items():
            line = f"  {name:<10} last change: median {v['median_s']:.2f} s, p90 {v['p90_s']:.2f} s (n={v['n']})"
            if v["first_median_s"] is not None:
                line += f"; first change of its content: median {v['first_median_s']:.2f} s"
            print(line)
        if r["left_deferred"]:
            print(f"  still waiting when the DOM went quiet: {r['left_deferred']}")
    if out.get("scroll"):
        print("1440x900, after an edit, scroll to a view → it is drawn: " + ", ".join(
            f"{n} median {v['median_s']:.2f} s (p90 {v['p90_s']:.2f})" for n, v in out["scroll"].items()))
    for b in out.get("bursts", []):
        print(f"1440x900, typing in bursts (a word, {b['pause_s']} s pause, a word): the views in sight redrawn "
              f"after the second word: median {b['median_s']:.2f} s (p90 {b['p90_s']:.2f}, n={b['n']})")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
