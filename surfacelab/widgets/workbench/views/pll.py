"""The PLL view: the masked LM's pseudo-log-likelihood of premise + option per subword, under three metrics."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pandas as pd

from .... import viz
from ...._format import visible
from ....pll import pll_metrics
from ...kit.plot import PlotView
from .base import GOLD_MARK, View, html_table

if TYPE_CHECKING:
    from ..inputs import Inputs

PLL_METRICS = ("original", "word_l2r", "whole_word")


class PLLView(View):
    """Masked-LM PLL of premise+option per subword under original / word_l2r / whole_word."""

    name, title, order, main = "pll", "5 · PLL subwords", 3, "tokens"
    needs = ("premise", "options", "gold", "mlm")

    def build(self) -> list[w.Widget]:
        self.totals = w.HTML("")
        self.totals.add_class("sl-pll-totals")
        self.plot = PlotView()
        return [self.totals, self.plot]

    def compute(self, inp: "Inputs") -> Any:
        sentences = [inp.premise + o for o in inp.options]
        return list(pll_metrics(self.workbench.mlm, sentences, PLL_METRICS, progress=False).values())

    def show(self, inp: "Inputs", result: Any) -> None:
        tokens = pd.concat([r.tokens.assign(metric=r.metric) for r in result], ignore_index=True)
        table = pd.concat([r.table.assign(metric=r.metric) for r in result], ignore_index=True)
        totals = viz.pll_totals(table, inp.options)
        self.frames = {"tokens": tokens, "table": table, "totals": totals}
        note = self.workbench.mlm.note or f"masked LM: {self.workbench.mlm.name}"
        self.spec = viz.pll_options_spec(tokens, premise=inp.premise, options=inp.options, gold=inp.gold, note=note)
        self.plot.show(self.spec)
        metrics = [m for m in PLL_METRICS if m in totals.columns]
        rows = [[(GOLD_MARK if i == inp.gold else "") + f"<span class='sl-opt'>{html.escape(visible(o))}</span>"]
                + [f"{totals[m].iloc[i]:.2f}" for m in metrics] for i, o in enumerate(totals["option"])]
        win = [[False] + [bool(totals[f"winner_{m}"].iloc[i]) for m in metrics] for i in range(len(totals))]
        self.totals.value = (html_table(["option (after the premise)", *metrics], rows, win=win, gold=inp.gold,
                                        cls="sl-table sl-pll-table")
                             + "<div class='sl-hint'>sentence PLL (sum over every subword) · green = winner "
                               "under that metric</div>")
        mlm = self.workbench.mlm
        label = f"<div class='sl-note'>⚠ {html.escape(mlm.note)}</div>" if mlm.note else ""
        reading = viz.pll_reading(tokens, totals, premise=inp.premise, unknown_id=mlm.tokenizer.unk_token_id)
        self.text.value = f"{label}<div class='sl-explain'>{html.escape(reading)}</div>"
