"""The scorer view: LM, Avg, per-char, per-byte, Unc, DC-PMI, PMI-null per option, their winners and
``MCResult.explain()``; a line names the scorers one item cannot have (Batch Calibration, domain-context calibration:
they read a task's items) and why."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from .... import formats, viz
from ...._format import visible
from ....scorers import SCORER_LABELS, SCORERS
from ....scoring import score_items
from ..updates import ViewState
from .base import GOLD_MARK, View, html_table

if TYPE_CHECKING:
    from ..inputs import Inputs

def not_shown_html(result: Any) -> str:
    """One line under the table naming the scorers that give one item no score and why (Batch Calibration and
    domain-context calibration read a task's items); "" when every scorer has a score."""
    missing = [(SCORER_LABELS[s.column], why) for name, s in SCORERS.items() if (why := result.not_applicable(name))]
    if not missing:
        return ""
    parts = "; ".join(f"{label}: {why}" for label, why in missing)
    return f"<div class='sl-hint sl-not-shown'>Not shown — {html.escape(parts)}.</div>"


def score_table_html(table: pd.DataFrame, gold: int | None) -> str:
    """The scorer table as HTML: the rank-1 option of every scorer highlighted, the gold row starred."""
    cols, cells, won = viz.scorer_cells(table, gold)
    header = ["option"] + [html.escape(SCORER_LABELS[c]) for c in cols]
    rows = [[(GOLD_MARK if i == gold else "") + f"<span class='sl-opt'>{html.escape(visible(o))}</span>"]
            + [c[i] for c in cells] for i, o in enumerate(table["option"])]
    win = [[False] + [bool(wn[i]) for wn in won] for i in range(len(table))]
    return (html_table(header, rows, win=win, gold=gold, cls="sl-table sl-score-grid")
            + "<div class='sl-hint'>green = winner under that scorer · ★ = gold · ␣ = leading space</div>")


class ScoresView(View):
    """LM, Avg, per-char, per-byte, Unc, DC-PMI, PMI-null per option, and ``MCResult.explain()``."""

    name, title, order, main = "scores", "1 · Scorers", 1, "table"
    needs = ("premise", "domain_premise", "options", "gold", "chat_template", "lm")

    def build(self) -> list[w.Widget]:
        self.table = w.HTML("")
        self.table.add_class("sl-score-table")
        return [self.table]

    def compute(self, inp: "Inputs") -> Any:
        # top_k: the token view's alternatives come from this same pass; score_items rather than score, whose
        # warning about an option glued to the premise the workbench shows as its own notice
        result = score_items(self.workbench.lm, [(inp.premise, list(inp.options), inp.domain_premise)], progress=False,
                             top_k=self.workbench.top_k, chat_template=inp.chat_template)[0]
        result.gold = inp.gold
        return result

    def result_for(self, inp: "Inputs") -> Any:
        """The scores of ``inp`` for the views built on them: the result shown when it is for ``inp``, otherwise
        computed (another thread may be drawing it; the engine's cache makes the second pass cheap), never an
        older input's."""
        with self.workbench.publishing:  # the result and its key together
            current = self.result if self.shown_key == self.key(inp) and self.state != ViewState.ERROR else None
        return current if current is not None else self.compute(inp)

    def show(self, inp: "Inputs", result: Any) -> None:
        table = result.table.copy()
        table.insert(1, "gold", [i == inp.gold for i in range(len(table))])
        self.frames = {"table": table, "tokens": result.tokens}
        self.table.value = (score_table_html(result.table, inp.gold)
                            + f"<div class='sl-hint sl-task-scorers'>{html.escape(formats.NOTE)}</div>"
                            + not_shown_html(result))
        self.text.value = f"<div class='sl-explain'>{html.escape(result.explain())}</div>"

    def make_figure(self) -> go.Figure | None:
        return viz.scorer_table(self.result.table, gold=self.result.gold) if self.result is not None else None
