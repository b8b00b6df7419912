"""The Why view: why the gold lost (or won) against the LM winner or a picked option (``surfacelab.why``)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import plotly.graph_objects as go

from .... import viz
from ...._format import visible
from ....why import why
from ....why.occlusion import premise_units
from ...kit.heatmap import TokenHeatmap, attribution_rows
from ...kit.plot import PlotView
from .base import INFO_MARK, View

if TYPE_CHECKING:
    from ..inputs import Inputs

#: The "compare with" picker's value for "the LM winner (or the runner-up when the gold wins)".
AUTO = -1
#: Premises with more words than this get no premise map in the Why view: each word is removed and replaced under
#: both options (4 scored premises a word), minutes of CPU for a 300-word passage; ``surfacelab.why`` computes it.
MAX_OCCLUDED_WORDS = 40


class WhyView(View):
    """Why the gold (★) lost, or won: ``surfacelab.why`` against the LM winner or a picked option.

    The gap decomposition as a waterfall, the premise coloured by each word's support for the gold
    (occlusion: every word removed and replaced, all in one engine call), where the gold's mass went
    at its first token, and the verdict in one sentence. The occlusion costs one forward per premise
    word and option, so this view is ``slow``: computed after the other views are drawn, beside the
    next edits (out of sight: with the other views out of sight, once the typing pauses). Occluded premises
    are scored with the two options compared
    (``all_options=False``): the margin is the pair's, and it halves the forwards. A premise of more than
    ``MAX_OCCLUDED_WORDS`` words gets the account without the premise map, and a note that says so.
    """

    # its first part reads the scorer view's numbers (no forward of its own): it goes before letters, the longest
    # forward of the views in sight, and after the two quick ones (its two figures would delay their drawing in
    # the browser); the premise map follows every view in sight
    name, title, order, main, slow = "why", "6 · Why", 4, "terms", True
    needs = ("premise", "domain_premise", "options", "gold", "chat_template", "lm")

    def build(self) -> list[w.Widget]:
        self.verdict = w.HTML("")
        self.verdict.add_class("sl-why-verdict")
        self.against = w.Dropdown(options=[("the LM winner", AUTO)], value=AUTO, description="compare with",
                                  style={"description_width": "initial"})
        self.against.add_class("sl-why-against")
        self._choosing = False
        self.against.observe(lambda _: None if self._choosing else self.workbench.edited(0), "value")
        self.gap = PlotView()
        self.gap.add_class("sl-why-gap")
        self.premise_map = TokenHeatmap()
        self.premise_map.add_class("sl-why-premise")
        self.competitors = PlotView()
        self.competitors.add_class("sl-why-competitors")
        return [self.verdict, self.against, self.gap, self.premise_map, self.competitors]

    def key(self, inp: "Inputs") -> tuple:
        return (*super().key(inp), ("against", self.against.value))

    def forget(self) -> None:
        super().forget()
        self._choosing = True  # a loaded example is compared with its own LM winner
        try:
            self.against.value = AUTO
        finally:
            self._choosing = False

    def sync_choices(self, inp: "Inputs") -> None:
        """The "compare with" choices for the current options (every option but the gold; AUTO when the
        chosen one is gone)."""
        choices = [("the LM winner (the runner-up when the gold wins)", AUTO)] + [
            (f"{i + 1}: {visible(o)}", i) for i, o in enumerate(inp.options) if i != inp.gold]
        if choices != list(self.against.options):
            value = self.against.value if any(v == self.against.value for _, v in choices) else AUTO
            self._choosing = True
            try:
                self.against.options = choices
                self.against.value = value
            finally:
                self._choosing = False

    def compute(self, inp: "Inputs") -> Any:
        # no occlusion of a chat turn: the words removed would be the template's as well as the premise's
        return self._account(inp, occlusion=inp.chat_template is None
                             and len(premise_units(inp.premise)) <= MAX_OCCLUDED_WORDS)

    def preview(self, inp: "Inputs") -> Any:
        # everything but the premise occlusion (one short prompt beyond the scorer view's numbers)
        return self._account(inp, occlusion=False)

    def _account(self, inp: "Inputs", occlusion: bool) -> Any:
        if inp.gold is None:
            return None
        against = self.against.value
        if against == AUTO or against == inp.gold or not 0 <= against < len(inp.options):
            against = None
        return why(self.workbench.lm, self.workbench.views["scores"].result_for(inp), gold=inp.gold, against=against,
                   all_options=False, occlusion=occlusion)

    def show(self, inp: "Inputs", result: Any) -> None:
        self.sync_choices(inp)
        if result is None:
            self.frames = {}
            self.verdict.value = ("<div class='sl-why-verdict-text sl-hint'>Mark the gold answer with ★ to see why "
                                  "it lost (or won) against another option.</div>")
            self.gap.clear()
            self.competitors.clear()
            self.premise_map.rows = []
            self.text.value = ""
            return
        self.frames = {"terms": result.terms, "tokens": result.tokens, "attribution": result.attribution,
                       "competitors": result.competitors}
        self.spec = viz.gap_waterfall_spec(result.terms)
        self.gap.show(self.spec)
        occluded = result.meta.get("occlusion", True)
        self.premise_map.rows = attribution_rows(result) if occluded else []
        if len(result.competitors):
            self.competitors.show(viz.competitors_bar_spec(result.competitors, top=10))
        else:
            self.competitors.clear()
        sentence = result.terms.loc[result.terms["group"] == "verdict", "sentence"].iloc[0]
        self.verdict.value = (f"<div class='sl-why-verdict-text'><span class='sl-why-label'>"
                              f"{html.escape(result.verdict)}</span> {html.escape(sentence)}</div>")
        unmeasured = result.terms[(result.terms["group"] == "first token") & (result.terms["term"] == "unavailable")]
        notes = [] if unmeasured.empty else [unmeasured["sentence"].iloc[0]]
        if occluded:
            notes.append(f"Occlusion: each of the {int((result.attribution['method'] == 'remove').sum())} premise "
                         f"words removed, and replaced by {result.meta['neutral']!r}.")
        elif inp.chat_template is not None:
            notes.append("No premise map under a chat template: removing words of the rendered chat turns would "
                         "remove the template's words as well as the premise's.")
        elif (words := len(premise_units(inp.premise))) > MAX_OCCLUDED_WORDS:
            notes.append(f"No premise map: the premise has {words} words, and removing and replacing each under both "
                         f"options ({4 * words} scored requests) is left out above {MAX_OCCLUDED_WORDS} words here; "
                         "surfacelab.why(lm, premise, options, gold=...) computes it.")
        else:
            notes.append("Computing which premise words support the gold (each word removed, then replaced by "
                         f"{result.meta['neutral']!r}): the premise map and its sentence follow.")
        self.text.value = "".join(f"<div class='sl-note'>{INFO_MARK} {html.escape(n)}</div>" for n in notes) + \
            f"<details class='sl-why-explain'><summary>the whole account in words</summary>" \
            f"<pre>{html.escape(result.explain())}</pre></details>"

    def make_figure(self) -> go.Figure | None:
        return viz.gap_waterfall(self.frames["terms"]) if "terms" in self.frames else None

    def export_parts(self) -> tuple[list[dict], list[tuple[str, str]]]:
        # what the view draws: the waterfall, the premise map (its numbers as bars), where the mass went
        r = self.result
        if not self.frames:
            return [], []
        words = [viz.attribution_bars_spec(r.attribution)] if self.premise_map.rows else []
        compared = f"★ {r.gold + 1}: {visible(r.options[r.gold])} with {r.against + 1}: {visible(r.options[r.against])}"
        parts = [f for f in (self.gap.figure, *words, self.competitors.figure) if f]
        return parts, [("compared", compared), ("verdict", r.verdict)]
