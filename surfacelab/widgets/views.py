"""The Workbench's views: one class per view, registered in ``VIEWS`` (display order).

A view owns its widgets, created once and updated in place (no widget is created per update, so
nothing leaks and nothing in the browser is rebuilt from scratch). Adding a view is local: subclass
``View``, set ``name``, ``title``, ``needs`` and ``cost``, implement ``build`` (widgets), ``compute``
(library calls only: nothing here computes a score) and ``show`` (frames and widgets from the
result), then ``register_view(MyView)``. Every ``Workbench`` created afterwards shows it.

>>> class Echo(View):                                              # doctest: +SKIP
...     name, title, needs, cost = "echo", "6 · Echo", ("premise",), 9
...     def build(self): self.out = w.HTML(); return [self.out]
...     def compute(self, inp): return inp.premise
...     def show(self, inp, result): self.frames = {}; self.out.value = html.escape(result)
>>> register_view(Echo)                                            # doctest: +SKIP
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

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
from ..why.occlusion import premise_units
from .exporting import export_row, save_view
from .heatmap import TokenHeatmap, attribution_rows, heatmap_rows
from .plot import PlotView, SightProbe

if TYPE_CHECKING:
    from .workbench import Inputs, Workbench

PLL_METRICS = ("original", "word_l2r", "whole_word")
#: CSS classes a view's box carries for its state (exactly one state at a time).
STATES = {"empty": (), "ready": ("sl-view-ready",), "stale": ("sl-stale",), "busy": ("sl-stale", "sl-busy"),
          "blocked": ("sl-stale", "sl-blocked"), "deferred": ("sl-stale", "sl-deferred"),
          "error": ("sl-view-error",)}
_STATE_CLASSES = {c for cs in STATES.values() for c in cs}
#: The gold row's mark in the views' tables (a no-break space: the mark never ends a line without its option).
GOLD_MARK = "★\u00a0"
#: The mark of a note (a notice, not an error): drawn by CSS, since fonts such as Debian's have no "ⓘ".
INFO_MARK = "<span class='sl-info-mark' aria-label='note'>i</span>"


def html_table(header: list[str], rows: list[list[str]], *, win: list[list[bool]] | None = None,
               gold: int | None = None, cls: str = "sl-table") -> str:
    """An HTML table (cells already escaped): ``win[r][c]`` highlights a cell, row ``gold`` is starred."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for r, row in enumerate(rows):
        cells = "".join(f"<td class='{'sl-win' if win and win[r][c] else ''}'>{v}</td>" for c, v in enumerate(row))
        body.append(f"<tr class='{'sl-gold-row' if r == gold else ''}'>{cells}</tr>")
    return f"<table class='{cls}'><tr>{head}</tr>{''.join(body)}</table>"


class View:
    """One view of the Workbench: a box with a title, a state cue, content widgets, a reading and exports.

    Attributes:
        frames: the view's DataFrames from the last update (by name); ``main`` names the one exported as CSV.
        message: the error of the last update, or "".
        result: the library result of the last update (e.g. an ``MCResult``), or None.
        spec: the plotly JSON of the figure shown, or None (``figure`` builds a ``go.Figure`` from it).
        shown_for: the ``Inputs`` and the model (None: the view reads none) of the result shown, which exports name.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    #: ``Inputs`` fields (and "lm" / "mlm") the view depends on: the view recomputes when one changes.
    needs: ClassVar[tuple[str, ...]] = ("premise", "domain_premise", "options", "gold", "lm")
    main: ClassVar[str | None] = None
    #: compute order (lower first; a view may read the result of one computed before it).
    cost: ClassVar[int] = 0
    #: a slow view is computed after the others are drawn, beside the next edits (off the keystroke path);
    #: its ``preview`` (if any) is shown at its place in the compute order meanwhile
    slow: ClassVar[bool] = False

    def __init__(self, bench: "Workbench") -> None:
        self.bench = bench
        self.frames: dict[str, pd.DataFrame] = {}
        self.message = ""
        self.result: Any = None
        self.spec: dict | None = None
        self.shown_for: tuple[Inputs, Any] | None = None
        self.shown_key: tuple | None = None
        self.preview_key: tuple | None = None  # the key of the preview shown (a slow view's first, partial result)
        self.state = "empty"
        self._figure: go.Figure | None = None
        self._state_lock = threading.Lock()
        self.cue = w.HTML("<span class='sl-cue'>not computed yet</span>")
        self.cue.add_class("sl-view-cue")
        # a live update computes a view out of sight after those in sight: in the background once the typing
        # pauses, or at once when it comes into sight (see Workbench._update)
        self.probe = SightProbe()
        head = w.HBox([w.HTML(f"<span class='sl-view-title'>{html.escape(self.title)}</span>"), self.cue,
                       self.probe])
        head.add_class("sl-view-head")
        self.error = w.HTML("")
        self.error.add_class("sl-view-message")
        self.error.layout.display = "none"
        self.content = w.VBox(self.build())
        self.content.add_class("sl-view-content")
        self.text = w.HTML("")
        self.text.add_class("sl-view-text")
        self.export_buttons, self.export_note, row = export_row(lambda kind: bench._export_clicked(self.name, kind))
        self.box = w.VBox([head, self.error, self.content, self.text, row])
        self.box.add_class("sl-view")
        self.box.add_class(f"sl-view-{self.name}")

    # --- what a subclass implements ---------------------------------------------------------

    def build(self) -> list[w.Widget]:
        """Create the view's content widgets (once)."""
        raise NotImplementedError

    def compute(self, inp: "Inputs") -> Any:
        """Call the library for ``inp`` (runs on the update thread; no widget changes here)."""
        raise NotImplementedError

    def show(self, inp: "Inputs", result: Any) -> None:
        """Set ``frames`` (and ``spec``) from ``result`` and update the content widgets in place."""
        raise NotImplementedError

    def preview(self, inp: "Inputs") -> Any:
        """A slow view's quick first result for ``inp`` (library calls only; ``show`` draws it), shown while the
        full one computes; None: no preview (the default)."""
        return None

    # --- shared machinery -------------------------------------------------------------------

    def key(self, inp: "Inputs") -> tuple:
        """What the view's output depends on; the view is recomputed only when this changes."""
        models = {"lm": self.bench.lm, "mlm": self.bench.mlm}
        return tuple((n, models[n].fingerprint) if n in models else (n, getattr(inp, n)) for n in self.needs)

    @property
    def data(self) -> pd.DataFrame | None:
        """The view's main DataFrame (None before the first update or when unavailable)."""
        return self.frames.get(self.main) if self.main else None

    @property
    def figure(self) -> go.Figure | None:
        """The view's plotly figure (None when unavailable)."""
        if self._figure is None and self.frames:
            self._figure = self.make_figure()
        return self._figure

    def make_figure(self) -> go.Figure | None:
        """A ``go.Figure`` of what the view shows (default: from ``spec``)."""
        return viz.figure(self.spec) if self.spec is not None else None

    def publish(self, inp: "Inputs", result: Any) -> None:
        """Show ``result``: frames, widgets, no error."""
        self._figure = None
        self.result = result
        self.shown_for = (inp, next((getattr(self.bench, m) for m in ("mlm", "lm") if m in self.needs), None))
        self.show(inp, result)
        self.message = ""
        self.error.value = ""
        self.error.layout.display = "none"
        self.content.layout.display = None

    def fail(self, message: str) -> None:
        """Show ``message`` instead of the content (the frames are dropped)."""
        self.frames, self.result, self.spec, self._figure, self.message = {}, None, None, None, message
        self.shown_key = None
        self.error.value = f"<div class='sl-error'>⚠ {html.escape(message)}</div>"
        self.error.layout.display = None
        self.content.layout.display = "none"
        self.text.value = ""
        self.set_state("error")

    def set_state(self, state: str, note: str | None = None) -> None:
        """Mark the view ready / stale / busy / blocked / deferred / error (CSS classes and the visible cue)."""
        cues = {"ready": "", "stale": "updating…" if self.bench.live else "inputs changed: press Score",
                "busy": "computing…", "blocked": "waiting for valid inputs", "error": "", "empty": "",
                "deferred": "updates after the views in sight"}
        with self._state_lock:
            self.state = state
            classes = [c for c in self.box._dom_classes if c not in _STATE_CLASSES]
            self.box._dom_classes = classes + list(STATES[state])
            cue = cues[state] if note is None else note
            self.cue.value = f"<span class='sl-cue'>{html.escape(cue)}</span>" if cue else ""

    def export_parts(self) -> tuple[list[dict], list[tuple[str, str]]]:
        """What a PNG / HTML export draws: the view's figures as plotly JSON (one under the other) and the header
        fields, as (label, plain text), beyond its inputs and model. Default: its figure alone, no more fields."""
        return ([] if self.figure is None else [self.figure.to_plotly_json()]), []

    def save(self, path: str | Path) -> Path:
        """Export the figures under the header of what they show (``.png``/``.html``) or the main frame (``.csv``)."""
        return save_view(self, Path(path))

    def forget(self) -> None:
        """Drop what belongs to the previous example (a new one was loaded): the export message, and in views
        that have one, the choice made for it."""
        self.export_note.value = ""

    def close(self) -> None:
        """Close every widget of the view."""
        close_tree(self.box)


def close_tree(widget: w.Widget) -> None:
    """Close ``widget``, every widget below it and their layout and style widgets."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if isinstance(part, w.Widget):
            part.close()
    widget.close()


VIEWS: dict[str, type[View]] = {}


def register_view(cls: type[View]) -> type[View]:
    """Add a view class to ``VIEWS`` (shown by every Workbench created afterwards, in registration order)."""
    if not (isinstance(cls, type) and issubclass(cls, View)) or not cls.name:
        raise TypeError("cls: expected a View subclass with a name")
    VIEWS[cls.name] = cls
    return cls


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

    name, title, cost, main = "scores", "1 · Scorers", 1, "table"

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
        with self.bench._publishing:  # the result and its key together
            current = self.result if self.shown_key == self.key(inp) and self.state != "error" else None
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

    name, title, cost, main = "tokens", "2 · Tokens", 2, "tokens"
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
    name, title, cost, main = "paraphrase", "3 · Paraphrase mass", 0, "concepts"
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

    name, title, cost, main = "letters", "4 · Letter priors", 5, "table"
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

    name, title, cost, main = "pll", "5 · PLL subwords", 3, "tokens"
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
    name, title, cost, main, slow = "why", "6 · Why", 4, "terms", True
    needs = ("premise", "domain_premise", "options", "gold", "lm")

    def build(self) -> list[w.Widget]:
        self.verdict = w.HTML("")
        self.verdict.add_class("sl-why-verdict")
        self.against = w.Dropdown(options=[("the LM winner", AUTO)], value=AUTO, description="compare with",
                                  style={"description_width": "initial"})
        self.against.add_class("sl-why-against")
        self._choosing = False
        self.against.observe(lambda _: None if self._choosing else self.bench._edited(0), "value")
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
        return self.bench.views["scores"].result_for(inp).why(self.bench.lm, gold=inp.gold, against=against,
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
        unmeasured = result.terms[(result.terms["group"] == "mass") & (result.terms["term"] == "unavailable")]
        notes = [] if unmeasured.empty else [unmeasured["sentence"].iloc[0]]
        if occluded:
            notes.append(f"Occlusion: each of the {int((result.attribution['method'] == 'remove').sum())} premise "
                         f"words removed, and replaced by {result.meta['neutral']!r}; "
                         f"{result.meta['forwarded_tokens']} "
                         "tokens forwarded for this account (numbers already in the score cache are not forwarded "
                         "again).")
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
