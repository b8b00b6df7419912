"""The Workbench's six views (``View`` subclasses, registered in ``view.VIEWS`` in display order): scorers, tokens,
paraphrase mass, letter priors, PLL subwords, why. Each calls the library and draws its result; see ``view``
for what a view implements."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from .. import viz
from .._format import visible
from ..alternatives import token_view
from ..letters import score as letter_scores
from ..paraphrase import mass
from ..pll import pll_metrics
from ..scorers import SCORER_LABELS
from ..scoring import score_items
from ..why import why
from ..why.occlusion import premise_units
from .heatmap import TokenHeatmap, attribution_rows, heatmap_rows
from .plot import PlotView
from .scheduler import ViewState
from .view import GOLD_MARK, INFO_MARK, View, html_table, register_view

if TYPE_CHECKING:
    from .inputs import Inputs

PLL_METRICS = ("original", "word_l2r", "whole_word")

# --- 1 · scorers ------------------------------------------------------------------------------------

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

    def build(self) -> list[w.Widget]:
        self.table = w.HTML("")
        self.table.add_class("sl-score-table")
        return [self.table]

    def compute(self, inp: "Inputs") -> Any:
        # top_k: the token view's alternatives come from this same pass; score_items rather than score, whose
        # warning about an option glued to the premise the workbench shows as its own notice
        result = score_items(self.bench.lm, [(inp.premise, list(inp.options), inp.domain_premise)], progress=False,
                             top_k=self.bench.top_k)[0]
        result.gold = inp.gold
        return result

    def result_for(self, inp: "Inputs") -> Any:
        """The scores of ``inp`` for the views built on them: the result shown when it is for ``inp``, otherwise
        computed (another thread may be drawing it; the engine's cache makes the second pass cheap), never an
        older input's."""
        with self.bench.publishing:  # the result and its key together
            current = self.result if self.shown_key == self.key(inp) and self.state != ViewState.ERROR else None
        return current if current is not None else self.compute(inp)

    def show(self, inp: "Inputs", result: Any) -> None:
        table = result.table.copy()
        table.insert(1, "gold", [i == inp.gold for i in range(len(table))])
        self.frames = {"table": table, "tokens": result.tokens}
        self.table.value = score_table_html(result.table, inp.gold)
        self.text.value = f"<div class='sl-explain'>{html.escape(result.explain())}</div>"

    def make_figure(self) -> go.Figure | None:
        return viz.scorer_table(self.result.table, gold=self.result.gold) if self.result is not None else None


# --- 2 · tokens -------------------------------------------------------------------------------------

class TokensView(View):
    """Per-token log-probs under the premise and the domain premise, their difference, alternatives on hover."""

    name, title, order, main = "tokens", "2 · Tokens", 2, "tokens"
    needs = ("premise", "domain_premise", "options", "lm")

    def build(self) -> list[w.Widget]:
        self.heatmap = TokenHeatmap()
        return [self.heatmap]

    def compute(self, inp: "Inputs") -> Any:
        return token_view(self.bench.lm, self.bench.views["scores"].result_for(inp), top_k=self.bench.top_k)

    def show(self, inp: "Inputs", result: Any) -> None:
        self.frames = {"tokens": result}
        entropy = bool(getattr(self.bench.lm.backend, "has_entropy", True))
        with self.heatmap.hold_sync():
            self.heatmap.has_entropy = entropy
            self.heatmap.rows = heatmap_rows(result)
        note = "" if entropy else (f"<div class='sl-note sl-no-entropy'>{INFO_MARK} "
                                   "entropy not available from this backend "
                                   f"({html.escape(type(self.bench.lm.backend).__name__)}: it returns only the "
                                   "top-k log-probs)</div>")
        reading = ("Each option's tokens under the premise and under the domain premise; the Δ row is their "
                   "difference, the token's share of DC-PMI." if inp.domain_premise is not None else
                   "Each option's tokens under the premise. Type a domain premise to see each token under it too, and "
                   "the Δ row: the token's share of DC-PMI.")
        self.text.value = note + f"<div class='sl-explain'>{reading}</div>"

    def make_figure(self) -> go.Figure | None:
        return viz.token_heatmap(self.frames["tokens"]) if "tokens" in self.frames else None


# --- 3 · paraphrase mass ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Concepts:
    """The paraphrase view's concept set: one concept per option, named after the option."""

    names: tuple[str, ...]
    forms: tuple[tuple[str, ...], ...]  # per option: the option itself first, then its paraphrases

    def as_dict(self) -> dict[str, list[str]]:
        """``{concept: [forms]}`` for ``paraphrase.mass``."""
        return {n: list(f) for n, f in zip(self.names, self.forms)}


def concepts_of(options: tuple[str, ...], paraphrases: tuple[tuple[str, ...], ...]) -> Concepts:
    """Concepts from options and their paraphrase forms (already carrying the option's leading space).

    A concept is named after its option without surrounding whitespace; two options that differ only
    in whitespace get their 1-based number added ("bathtub (1)", "bathtub (3)"). Forms repeated within
    one option, or equal to the option itself, are listed once.
    """
    bare = [o.strip() or o for o in options]
    names = [f"{b} ({i + 1})" if bare.count(b) > 1 else b for i, b in enumerate(bare)]
    forms = tuple(tuple(dict.fromkeys([o, *ps])) for o, ps in zip(options, paraphrases))
    return Concepts(tuple(names), forms)


class ParaphraseView(View):
    """Each option's paraphrase mass: its probability summed over its listed surface forms."""

    # computed first: its requests (every option and paraphrase under the premise and the domain premise,
    # with the scorer view's top_k) include the scorer view's, so both views cost one forward pass
    name, title, order, main = "paraphrase", "3 · Paraphrase mass", 0, "concepts"
    needs = ("premise", "domain_premise", "options", "paraphrases", "gold", "lm")

    def build(self) -> list[w.Widget]:
        self.plot = PlotView()
        return [self.plot]

    def compute(self, inp: "Inputs") -> Any:
        concepts = concepts_of(inp.options, inp.paraphrases)
        answer = concepts.names[inp.gold] if inp.gold is not None else None
        # top_k as in the scorer view: the option forms' scores and alternatives come from that pass
        return mass(self.bench.lm, inp.premise, concepts.as_dict(), domain_premise=inp.domain_premise,
                         answer=answer, top_k=self.bench.top_k)

    def show(self, inp: "Inputs", result: Any) -> None:
        self.frames = {"concepts": result.concepts, "forms": result.forms, "winners": result.winners,
                       "topk": result.topk}
        self.spec = viz.paraphrase_mass_spec(result.forms, result.concepts, result.winners, answer=result.answer)
        self.plot.show(self.spec)
        notes = [p.text for p in self.bench.problems_for(self.name)]
        reading = viz.mass_reading(result.concepts, result.winners, answer=result.answer)
        self.text.value = "".join(f"<div class='sl-note'>{INFO_MARK} {html.escape(n)}</div>" for n in notes) + \
            f"<div class='sl-explain'>{html.escape(reading)}</div>"


# --- 4 · letters ------------------------------------------------------------------------------------

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
        return letter_scores(self.bench.lm, inp.premise, [o.strip() for o in inp.options], gold=inp.gold)

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
            + f"<details class='sl-prompt'><summary>the prompt the model reads</summary>"
              f"<pre>{html.escape(result.prompt)}</pre></details>")
        self.text.value = f"<div class='sl-explain'>{html.escape(viz.letters_reading(t, orders=orders))}</div>"


# --- 5 · PLL ----------------------------------------------------------------------------------------

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
        return list(pll_metrics(self.bench.mlm, sentences, PLL_METRICS, progress=False).values())

    def show(self, inp: "Inputs", result: Any) -> None:
        tokens = pd.concat([r.tokens.assign(metric=r.metric) for r in result], ignore_index=True)
        table = pd.concat([r.table.assign(metric=r.metric) for r in result], ignore_index=True)
        totals = viz.pll_totals(table, inp.options)
        self.frames = {"tokens": tokens, "table": table, "totals": totals}
        note = self.bench.mlm.note or f"masked LM: {self.bench.mlm.name}"
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
        label = f"<div class='sl-note'>⚠ {html.escape(self.bench.mlm.note)}</div>" if self.bench.mlm.note else ""
        reading = viz.pll_reading(tokens, totals, premise=inp.premise, unknown_id=self.bench.mlm.tokenizer.unk_token_id)
        self.text.value = f"{label}<div class='sl-explain'>{html.escape(reading)}</div>"


# --- 6 · why ----------------------------------------------------------------------------------------

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
    needs = ("premise", "domain_premise", "options", "gold", "lm")

    def build(self) -> list[w.Widget]:
        self.verdict = w.HTML("")
        self.verdict.add_class("sl-why-verdict")
        self.against = w.Dropdown(options=[("the LM winner", AUTO)], value=AUTO, description="compare with",
                                  style={"description_width": "initial"})
        self.against.add_class("sl-why-against")
        self._choosing = False
        self.against.observe(lambda _: None if self._choosing else self.bench.edited(0), "value")
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
        return self._account(inp, occlusion=len(premise_units(inp.premise)) <= MAX_OCCLUDED_WORDS)

    def preview(self, inp: "Inputs") -> Any:
        # everything but the premise occlusion (one short prompt beyond the scorer view's numbers)
        return self._account(inp, occlusion=False)

    def _account(self, inp: "Inputs", occlusion: bool) -> Any:
        if inp.gold is None:
            return None
        against = self.against.value
        if against == AUTO or against == inp.gold or not 0 <= against < len(inp.options):
            against = None
        return why(self.bench.lm, self.bench.views["scores"].result_for(inp), gold=inp.gold, against=against,
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


for _view in (ScoresView, TokensView, ParaphraseView, LettersView, PLLView, WhyView):
    register_view(_view)
