"""The letters view: the options as A/B/C/D, the observed ID distribution, the content-free prior, calibrated and
permutation-debiased."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from .... import viz
from ....letters import score as letter_scores
from ...kit.plot import PlotView
from .base import GOLD_MARK, View, html_table

if TYPE_CHECKING:
    from ..inputs import Inputs

class LettersView(View):
    """The options as A/B/C/D: observed ID distribution, content-free prior, calibrated, permutation-debiased."""

    name, title, order, main = "letters", "4 · Letter priors", 5, "table"
    needs = ("premise", "options", "gold", "lm")

    def build(self) -> list[w.Widget]:
        self.plot = PlotView()
        self.detail = w.HTML("")
        self.detail.add_class("sl-letters-detail")
        return [self.plot, self.detail]

    def compute(self, inp: "Inputs") -> Any:
        # the options' leading spaces join them to the premise; as lettered lines they are plain text
        return letter_scores(self.workbench.lm, inp.premise, [o.strip() for o in inp.options], gold=inp.gold)

    def show(self, inp: "Inputs", result: Any) -> None:
        t = result.table
        self.frames = {"table": t, "permutations": result.permutations, "content_free": result.content_free}
        self.spec = viz.letter_priors_spec(t, gold=inp.gold)
        self.plot.show(self.spec)
        cols = ["observed", "prior", "calibrated", "debiased"]
        picks = {c: result.winner(c) for c in ("observed", "calibrated", "debiased")}
        rows = [[(GOLD_MARK if g else "") + html.escape(i), html.escape(str(o))] + [f"{t[c].iloc[k]:.1%}" for c in cols]
                for k, (i, o, g) in enumerate(zip(t["id"], t["option"], t["gold"]))]
        win = [[False, False] + [t["id"].iloc[k] == picks.get(c) for c in cols] for k in range(len(t))]
        orders = result.permutations["perm"].nunique()
        pick_line = " · ".join(f"{viz.LETTER_NAMES[c]} → <b>{html.escape(p)}</b>" for c, p in picks.items())
        self.detail.value = (
            html_table(["ID", "option", "observed", "prior", "calibrated", "debiased"], rows, win=win,
                       cls="sl-table sl-letters-table")
            + f"<div class='sl-hint'>picks: {pick_line} · debiased = geometric mean over {orders} "
              f"{html.escape(result.permutation)} orders</div>"
            + "<div class='sl-hint'>over a set of questions, <code>sl.letters.evaluate(lm, task, methods=[..., "
              "\"batch\", \"domain\"])</code> also divides out the set's own mean ID distribution (Batch "
              "Calibration) or the prior of random words of its questions (domain-context calibration)</div>"
            + f"<details class='sl-prompt'><summary>the prompt the model reads</summary>"
              f"<pre>{html.escape(result.prompt)}</pre></details>")
        self.text.value = f"<div class='sl-explain'>{html.escape(viz.letters_reading(t, orders=orders))}</div>"
