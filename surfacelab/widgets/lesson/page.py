"""The lesson page: one self-contained HTML file (plotly.js, the token heatmap's script, the styles and every item's
views inside it) that opens offline in any browser, with no kernel.

Every item is a page of the file (``#item-3``), the lesson text another (``#lesson``); ``lesson.js`` shows one at a
time, with previous / next and a list, and draws a page's figures and heatmaps the first time it is shown (plotly
JSON and heatmap rows sit in a ``<script type="application/json">`` per page, parsed then), so opening the file
costs one item, not thirty. The heatmaps are drawn by the workbench's own ``heatmap.js`` (its tooltip with rank,
entropy and top alternatives) and the figures by plotly.js from the views' own JSON.

Escaping: user text (premises, options, paraphrases, titles) goes through ``html.escape``; the views' HTML was
escaped by the views; JSON inside ``<script>`` has ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\u`` escapes, so no
string can close the script or open a tag.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from plotly.io.json import to_json_plotly
from plotly.offline import get_plotlyjs

from ..._format import visible
from ..._html import esc, inline, safe_json

if TYPE_CHECKING:
    from .build import LessonItem
    from .text import Cell

#: The widgets package: the stylesheets and scripts the page inlines are its files.
WIDGETS = Path(__file__).parent.parent
#: The styles of the page: the workbench's own (the same tables, notes and heatmap), then the page's.
STYLES = ("workbench/workbench.css", "kit/heatmap.css", "lesson/lesson.css")


def script_json(obj: Any) -> str:
    """``obj`` as JSON that is safe inside ``<script>``: numpy values and NaN handled as plotly does (NaN: null)."""
    return safe_json(to_json_plotly(obj))


def source(name: str) -> str:
    """The script or style sheet ``name`` (a path in the widgets package), checked to be safe inline."""
    return inline((WIDGETS / name).read_text(encoding="utf-8"), name)


class PageData:
    """The figures and heatmaps of one page, drawn by ``lesson.js`` when the page is first shown: each placeholder
    holds its index into these lists."""

    def __init__(self) -> None:
        self.figures: list[dict] = []
        self.heatmaps: list[dict] = []

    def figure(self, spec: dict, classes: list[str]) -> str:
        self.figures.append(spec)
        return f"<div class='sl-lesson-plot {esc(' '.join(classes))}' data-figure='{len(self.figures) - 1}'></div>"

    def heatmap(self, data: dict, classes: list[str]) -> str:
        self.heatmaps.append(data)
        return f"<div class='sl-lesson-heatmap {esc(' '.join(classes))}' data-heatmap='{len(self.heatmaps) - 1}'></div>"

    def script(self) -> str:
        return (f"<script type='application/json' class='sl-page-data'>"
                f"{script_json({'figures': self.figures, 'heatmaps': self.heatmaps})}</script>")


def view_html(view: dict, data: PageData) -> str:
    """One view as the workbench lays it out: title, parts (HTML, figures, heatmaps) and reading, or its message."""
    parts = []
    for part in view["parts"]:
        if "figure" in part:
            parts.append(data.figure(part["figure"], part["classes"]))
        elif "heatmap" in part:
            parts.append(data.heatmap(part["heatmap"], part["classes"]))
        else:  # the view's own HTML, escaped where it was made
            parts.append(f"<div class='{esc(' '.join(part['classes']))}'>{part['html']}</div>")
    message = f"<div class='sl-error'>⚠ {esc(view['message'])}</div>" if view["message"] else ""
    return (f"<div class='sl-view sl-view-{esc(view['name'])}' data-view='{esc(view['name'])}'>"
            f"<div class='sl-view-head'><span class='sl-view-title'>{esc(view['title'])}</span></div>"
            f"{message}<div class='sl-view-content'>{''.join(parts)}</div></div>")


def inputs_html(item: "LessonItem", models: str) -> str:
    """What an item asks: premise, domain premise, options (gold starred, leading spaces as ␣) with paraphrases."""
    ex = item.example
    options = []
    for i, (option, para) in enumerate(zip(ex["options"], ex["paraphrases"])):
        gold = i == ex["gold"]
        more = f" <span class='sl-hint'>paraphrases: {esc(para)}</span>" if para.strip() else ""
        options.append(f"<li class='{'sl-gold' if gold else ''}'>{'★ ' if gold else ''}"
                       f"<code class='sl-opt'>{esc(visible(option))}</code>{more}</li>")
    domain = ex["domain_premise"]
    rows = [("premise", f"<span class='sl-lesson-premise'>{esc(ex['premise'])}</span>"),
            ("domain premise", "<i>none</i>" if domain is None else f"<code>{esc(visible(domain))}</code>"),
            ("options" + (" (★ gold)" if ex["gold"] is not None else " (no gold marked)"),
             f"<ol class='sl-lesson-options'>{''.join(options)}</ol>"),
            ("models", esc(models))]
    if item.note:
        rows.append(("note" + (f" ({esc(item.label)})" if item.label else ""), esc(item.note)))
    return "<dl class='sl-lesson-inputs'>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>"


def pager(k: int, ids: list[str], labels: list[str]) -> str:
    """Previous / next links of page ``k`` of the pages ``ids``."""
    def link(j: int, text: str, cls: str) -> str:
        if 0 <= j < len(ids):
            return f"<a class='{cls}' href='#{ids[j]}' title='{esc(labels[j])}'>{text}</a>"
        return f"<span class='{cls} sl-disabled'>{text}</span>"

    return (f"<div class='sl-pager'>{link(k - 1, '← previous', 'sl-prev')}"
            f"<span class='sl-where'>{k + 1} of {len(ids)}</span>{link(k + 1, 'next →', 'sl-next')}</div>")


def item_page(item: "LessonItem", number: int, models: str) -> tuple[str, str]:
    """An item's page body and its data script."""
    data = PageData()
    views = "".join(view_html(v, data) for v in item.views)
    message = f"<div class='sl-message'>{item.message}</div>" if item.message else ""  # escaped by the workbench
    body = (f"<h2>{number}. {esc(item.title)}</h2>{inputs_html(item, models)}{message}"
            f"<div class='sl-views'>{views}</div>")
    return body, data.script()


def text_page(cells: list["Cell"], models: str, teaching_set: str | None) -> tuple[str, str]:
    """The lesson text's page body (answers folded in ``<details>``) and its data script."""
    data = PageData()
    out = [f"<p class='sl-hint sl-lesson-about'>The text and exercises of notebook 02 "
           f"(<code>02_teaching_surface_form_competition.ipynb</code>), run when this page was made with "
           f"{esc(models)}{f' on {esc(teaching_set)}' if teaching_set else ''}. The text was written for "
           f"smollm2-135m, the model the teaching set was chosen on: on another model the numbers differ. Each item "
           f"of the set has its own page (the list on the left).</p>"]
    for cell in cells:
        if cell.kind == "markdown":
            out.append(f"<div class='sl-md'>{cell.html}</div>")  # rendered with raw HTML off
            continue
        figures = "".join(data.figure(f, []) for f in cell.figures)
        code = f"<pre class='sl-code'>{esc(cell.code)}</pre>"
        if cell.answer is not None:
            out.append(f"<details class='sl-answer'><summary>{esc(cell.answer)}: click to show</summary>"
                       f"{code}<div class='sl-output'>{cell.html}{figures}</div></details>")
        else:
            out.append(f"<div class='sl-cell'><details class='sl-code-fold'><summary>code</summary>{code}</details>"
                       f"<div class='sl-output'>{cell.html}{figures}</div></div>")
    return "".join(out), data.script()


def write_lesson(path: Path, *, title: str, items: list["LessonItem"], cells: list["Cell"], models: str,
                 teaching_set: str | None = None) -> Path:
    """Write the lesson page to ``path``: the lesson text (when ``cells``) and one page per item, with the styles,
    plotly.js, the heatmap's script and the page's script inline. Returns ``path``."""
    pages: list[tuple[str, str, str, str]] = []  # (id, label in the list, body, data script)
    if cells:
        body, script = text_page(cells, models, teaching_set)
        pages.append(("lesson", "The lesson: text and exercises", body, script))
    for k, item in enumerate(items):
        body, script = item_page(item, k + 1, models)
        pages.append((f"item-{k + 1}", f"{k + 1}. {item.title}" + (f" · {item.label}" if item.label else ""),
                      body, script))
    ids, labels = [p[0] for p in pages], [p[1] for p in pages]
    sections = "".join(f"<section class='sl-page' id='page-{pid}' data-page='{pid}' hidden>{pager(k, ids, labels)}"
                       f"{body}{script}</section>" for k, (pid, _, body, script) in enumerate(pages))
    nav = "".join(f"<li><a href='#{pid}' data-page='{pid}'>{esc(label)}</a></li>" for pid, label, *_ in pages)
    styles = "\n".join(source(name) for name in STYLES)
    made = datetime.now().strftime("%Y-%m-%d %H:%M")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{styles}</style>
<noscript><style>.sl-page[hidden] {{ display: block; }}</style></noscript>
</head><body class="sl-lesson">
<nav class="sl-lesson-nav"><h1>{esc(title)}</h1>
<p class="sl-hint">{esc(models)} · made {made} with surfacelab · opens offline, no install</p><ol>{nav}</ol></nav>
<main class="sl-lesson-main">{sections}</main>
<script type="text/plain" id="sl-plotly-js">{inline(get_plotlyjs(), "plotly.min.js")}</script>
<script type="text/plain" id="sl-heatmap-js">{source("kit/heatmap.js")}</script>
<script>{source("lesson/lesson.js")}</script>
</body></html>
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
