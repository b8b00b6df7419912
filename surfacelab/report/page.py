"""The run report as one HTML file that opens offline: the sources, the accuracy (a table and an inline SVG of the
CIs), per task, who rescues whom and the verdict labels are static HTML (readable with scripts off); the flipped
items and the item table are JSON in a ``<script type="application/json">``, drawn a page of rows at a time by
``report.js`` (search, filters, sort), so a 14,042-item run stays one small file.

Escaping: every text that came from the runs (ids, premises, options, names, sources) is escaped with
``html.escape`` where Python writes it, or set as a DOM node's ``textContent`` where ``report.js`` does (it never
writes markup from data); the JSON has ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u`` escapes. Nothing is
fetched: no link, font or script leaves the file."""

from __future__ import annotations

import json
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

from .._html import esc, inline, safe_json
from ..paths import write_atomic

HERE = Path(__file__).parent
#: Width and row height of the accuracy figure (an inline SVG), in pixels.
SVG_WIDTH, SVG_ROW = 640, 22
SVG_LABEL = 190
#: A page larger than this is written with a warning that says what fills it (mail and chat tools refuse larger files).
WARN_BYTES = 10 * 2**20
#: The page's content security policy: nothing may be fetched; only the page's own inline script and styles run.
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def asset(name: str) -> str:
    """``report.js`` / ``report.css``, checked to be safe inline."""
    return inline((HERE / name).read_text(encoding="utf-8"), name)


def _f(x: float | None, digits: int = 3) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """A table from already escaped cells."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='sl-r-table {cls}'><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def sources_html(sources: list[dict]) -> str:
    out = []
    for s in sources:
        facts = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in s["facts"])
        out.append(f"<div class='sl-r-source'><h3>run {esc(s['name'])}</h3><dl>{facts}</dl></div>")
    return "".join(out)


def accuracy_svg(accuracy: list[dict], chance: float | None) -> str:
    """Accuracy per run and scorer as points with their 95% CI, and the chance line: an inline SVG."""
    rows = [(f"{a['run']}:{r['scorer']}", r) for a in accuracy for r in a["rows"]]
    plot = SVG_WIDTH - SVG_LABEL - 60
    height = SVG_ROW * len(rows) + 30

    def x(v: float) -> float:
        return SVG_LABEL + plot * v

    parts = [f"<line x1='{x(t):.1f}' x2='{x(t):.1f}' y1='0' y2='{height - 20}' class='sl-r-grid'/>"
             f"<text x='{x(t):.1f}' y='{height - 6}' class='sl-r-tick'>{t:g}</text>" for t in (0, 0.25, 0.5, 0.75, 1)]
    if chance is not None:
        parts.append(f"<line x1='{x(chance):.1f}' x2='{x(chance):.1f}' y1='0' y2='{height - 20}' class='sl-r-chance'>"
                     f"<title>chance {chance:.3f}</title></line>")
    for k, (label, r) in enumerate(rows):
        y = SVG_ROW * k + SVG_ROW / 2
        parts.append(f"<text x='{SVG_LABEL - 8}' y='{y + 4:.1f}' class='sl-r-label'>{esc(label)}</text>")
        if r["ci_low"] is not None and r["ci_high"] is not None:
            parts.append(f"<line x1='{x(r['ci_low']):.1f}' x2='{x(r['ci_high']):.1f}' y1='{y:.1f}' y2='{y:.1f}' "
                         f"class='sl-r-ci'/>")
        if r["accuracy"] is not None:
            parts.append(f"<circle cx='{x(r['accuracy']):.1f}' cy='{y:.1f}' r='4' class='sl-r-point'><title>"
                         f"{esc(label)}: {_f(r['accuracy'])} [{_f(r['ci_low'])}, {_f(r['ci_high'])}]</title></circle>"
                         f"<text x='{x(1) + 8:.1f}' y='{y + 4:.1f}' class='sl-r-value'>{_f(r['accuracy'])}</text>")
    return (f"<svg class='sl-r-svg' width='{SVG_WIDTH}' height='{height}' viewBox='0 0 {SVG_WIDTH} {height}' "
            f"role='img' aria-label='accuracy per scorer with 95% CI'>{''.join(parts)}</svg>")


def accuracy_html(accuracy: list[dict], chance: float | None) -> str:
    head = ["run", "scorer", "items", "right", "accuracy", "95% CI", "ties"]
    rows = [[esc(a["run"]), esc(r["scorer"]), f"{r['n']:,}", f"{r['correct']:,}", _f(r["accuracy"]),
             f"[{_f(r['ci_low'])}, {_f(r['ci_high'])}]", str(r["ties"])] for a in accuracy for r in a["rows"]]
    note = f"<p class='sl-r-hint'>chance: {chance:.3f} (the dashed line)</p>" if chance is not None else ""
    return f"<div class='sl-r-acc'>{accuracy_svg(accuracy, chance)}{_table(head, rows, 'sl-r-num')}</div>{note}"


def per_task_html(accuracy: list[dict]) -> str:
    """Accuracy per task and group (rows, a group before its members) and run:scorer (columns) with CIs, and the
    framework's own value where a log recorded one; "" when no run has several tasks."""
    with_tasks = [a for a in accuracy if a["tasks"]]
    if not with_tasks:
        return ""
    cols = [(a["run"], r["scorer"]) for a in with_tasks for r in a["rows"]]
    cells: dict[str, dict] = {}
    for a in with_tasks:
        for t in a["tasks"]:
            for r in t["rows"]:
                cells.setdefault(t["task"], {"n": r["n"], "group": t["group"], "depth": t["depth"]})[
                    (a["run"], r["scorer"])] = r

    def cell(r: dict) -> str:
        logged = f" <span class='sl-r-ci-text'>(logged {_f(r['logged'])})</span>" if r.get("logged") is not None else ""
        return (f"{_f(r['accuracy'])} <span class='sl-r-ci-text'>[{_f(r['ci_low'], 2)}, {_f(r['ci_high'], 2)}]</span>"
                f"{logged}")

    rows = [[("&nbsp;&nbsp;" * c["depth"]) + (f"<b>{esc(task)}</b>" if c["group"] else esc(task)), f"{c['n']:,}"]
            + [cell(c[col]) if col in c else "–" for col in cols] for task, c in cells.items()]
    head = ["task", "items"] + [esc(f"{run}:{scorer}") for run, scorer in cols]
    n_tasks = sum(not c["group"] for c in cells.values())
    return (f"<h2 id='per-task'>Accuracy per task</h2><p class='sl-r-hint'>{n_tasks} tasks"
            f"{f', {len(cells) - n_tasks} groups (bold, before their tasks)' if len(cells) > n_tasks else ''}; 95% "
            f"bootstrap CIs over each one's items</p><div class='sl-r-scroll'>"
            f"{_table(head, rows, 'sl-r-num sl-r-tasks')}</div>")


def rescues_html(columns: list[str], counts: list[list[int]]) -> str:
    head = [""] + [f"{esc(c)} ✗" for c in columns]
    rows = [[f"<b>{esc(a)} ✓</b>"] + ["·" if a == b else f"{counts[i][j]:,}" for j, b in enumerate(columns)]
            for i, a in enumerate(columns)]
    return (f"<h2 id='rescues'>Who rescues whom</h2><p class='sl-r-hint'>each count: the items the row's column gets "
            f"right and the column's gets wrong</p><div class='sl-r-scroll'>{_table(head, rows, 'sl-r-num')}</div>")


def labels_html(labels: list[dict], run: str) -> str:
    if not labels:
        return ""
    rescued = [k for k in labels[0] if k.startswith("rescued_")]
    head = ["why LM missed", "items", "share"] + [esc(k.removeprefix("rescued_")) + " right" for k in rescued]
    rows = [[esc(r["why"]), f"{int(r['n']):,}", f"{float(r['share']):.1%}"] + [f"{int(r[k]):,}" for k in rescued]
            for r in labels]
    return (f"<h2 id='labels'>Verdict labels</h2><p class='sl-r-hint'>run {esc(run)}: why LM's pick is not the gold, "
            f"and how many of each label's items every scorer gets right</p>{_table(head, rows, 'sl-r-num')}")


def write_report(path: Path, title: str, c: dict[str, Any]) -> Path:
    """Write the page for the content ``c`` (``content.content``) to ``path``."""
    data = safe_json(json.dumps({"columns": c["columns"], "flipped": c["flipped"], "items": c["items"]},
                                ensure_ascii=False, allow_nan=False, separators=(",", ":")))
    made = datetime.now().strftime("%Y-%m-%d %H:%M")
    n_items = len(c["items"]["id"])
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<title>{esc(title)}</title>
<style>{asset("report.css")}</style>
</head><body class="sl-report">
<header><h1>{esc(title)}</h1><p class="sl-r-hint">{n_items:,} items · made {made} with surfacelab · one file, opens
offline</p>
<nav><a href="#sources">sources</a> · <a href="#accuracy">accuracy</a> · <a href="#rescues">who rescues whom</a> ·
<a href="#flipped">flipped items</a> · <a href="#items">item table</a></nav></header>
<main>
<h2 id="sources">Sources</h2>{sources_html(c["sources"])}
<h2 id="accuracy">Accuracy per scorer</h2>{accuracy_html(c["accuracy"], c["chance"])}
{per_task_html(c["accuracy"])}
{rescues_html(c["columns"], c["rescues"])}
{labels_html(c["labels"], c["label_run"])}
<h2 id="flipped">Flipped items</h2>
<p class="sl-r-hint">{len(c["flipped"]):,} items on which the columns disagree (one right, one wrong), each with why
LM's pick is what it is, in words.</p>
<div id="sl-r-flipped" class="sl-r-list"><noscript>The flipped items and the item table need scripts on.</noscript>
</div>
<h2 id="items">Item table</h2><div id="sl-r-items"></div>
</main>
<script type="application/json" id="sl-r-data">{data}</script>
<script>{asset("report.js")}</script>
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))
    size = len(page.encode("utf-8"))
    if size > WARN_BYTES:
        warnings.warn(f"report: {path.name} is {size / 2**20:.1f} MB (over {WARN_BYTES / 2**20:.0f} MB, which mail and "
                      f"chat tools often refuse); its data is {len(data.encode('utf-8')) / 2**20:.1f} MB: {n_items:,} "
                      f"items x {len(c['items']['columns'])} run:scorer columns and {len(c['flipped']):,} flipped "
                      f"items with their verdicts; fewer runs or scorers make it smaller", stacklevel=3)
    return path
