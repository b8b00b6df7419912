"""The token view: per-token log-probs under the premise and the domain premise, their difference (the DC-PMI
contribution) and the top alternatives on hover."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import plotly.graph_objects as go

from .... import viz
from ....alternatives import token_view
from ...kit.heatmap import TokenHeatmap, heatmap_rows
from .base import INFO_MARK, View

if TYPE_CHECKING:
    from ..inputs import Inputs

class TokensView(View):
    """Per-token log-probs under the premise and the domain premise, their difference, alternatives on hover."""

    name, title, order, main = "tokens", "2 · Tokens", 2, "tokens"
    needs = ("premise", "domain_premise", "options", "chat_template", "lm")

    def build(self) -> list[w.Widget]:
        self.heatmap = TokenHeatmap()
        return [self.heatmap]

    def compute(self, inp: "Inputs") -> Any:
        return token_view(self.workbench.lm, self.workbench.views["scores"].result_for(inp), top_k=self.workbench.top_k)

    def show(self, inp: "Inputs", result: Any) -> None:
        self.frames = {"tokens": result}
        entropy = bool(getattr(self.workbench.lm.backend, "has_entropy", True))
        with self.heatmap.hold_sync():
            self.heatmap.has_entropy = entropy
            self.heatmap.rows = heatmap_rows(result)
        note = "" if entropy else (f"<div class='sl-note sl-no-entropy'>{INFO_MARK} "
                                   "entropy not available from this backend "
                                   f"({html.escape(type(self.workbench.lm.backend).__name__)}: it returns only the "
                                   "top-k log-probs)</div>")
        reading = ("Each option's tokens under the premise and under the domain premise; the Δ row is their "
                   "difference, the token's share of DC-PMI." if inp.domain_premise is not None else
                   "Each option's tokens under the premise. Type a domain premise to see each token under it too, and "
                   "the Δ row: the token's share of DC-PMI.")
        self.text.value = note + f"<div class='sl-explain'>{reading}</div>"

    def make_figure(self) -> go.Figure | None:
        return viz.token_heatmap(self.frames["tokens"]) if "tokens" in self.frames else None
