"""The Workbench: edit a premise, a domain premise and the options; see five views side by side.

Views (each a ``View`` with ``.figure``, ``.data`` and ``.frames``, exportable to PNG/HTML/CSV):

1. ``scores``     the scorer table (winner per scorer highlighted, gold marked) + ``MCResult.explain()``;
2. ``tokens``     per-token log-probs under the premise and the domain premise, their difference
                  (the DC-PMI contribution) and the top alternatives on hover;
3. ``paraphrase`` paraphrase mass per concept (options + their listed paraphrases);
4. ``letters``    option-letter probabilities: observed, content-free prior, calibrated, debiased;
5. ``pll``        masked-LM PLL of premise+option per subword for original / word_l2r / whole_word.

Nothing here computes a score: every number comes from the library (``score``, ``alternatives``,
``paraphrase``, ``letters``, ``pll``) and every figure from ``surfacelab.viz``.

>>> wb = Workbench()                     # doctest: +SKIP
>>> wb                                   # doctest: +SKIP  (displays the UI)
>>> wb.premise_box.value = "The man took a bath in the"; wb.update()   # doctest: +SKIP
>>> wb.frames()["scores"]                # doctest: +SKIP
"""

from __future__ import annotations

import html
from contextlib import contextmanager
import importlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from .. import viz
from ..alternatives import token_view
from ..models import DEFAULT_LM, DEFAULT_MLM, list_presets, load_lm, load_mlm
from ..scoring import score
from .heatmap import TokenHeatmap, heatmap_rows

VIEWS = {"scores": "1 · Scorers", "tokens": "2 · Tokens", "paraphrase": "3 · Paraphrase mass",
         "letters": "4 · Letter priors", "pll": "5 · PLL subwords"}
PLL_METRICS = ("original", "word_l2r", "whole_word")
DATASETS = ("copa", "arc-challenge", "openbookqa", "commonsenseqa", "sst-2", "mmlu")
CUSTOM = "(custom)"
FIGURE_WIDTH = 620  # px; the view grid's columns are at least this wide
TEACHING = "teaching set"
DEFAULT_EXAMPLE = {"premise": "The man took a bath in the", "domain_premise": " the",
                   "options": [" bathtub", " sink", " pool", " xylophone"],
                   "paraphrases": ["tub, bath tub", "basin, washbasin", "swimming pool", ""], "gold": 0}


def _optional(module: str) -> Any | None:
    """``surfacelab.<module>`` if it is installed, else None."""
    try:
        return importlib.import_module(f"surfacelab.{module}")
    except ModuleNotFoundError as err:
        if err.name == f"surfacelab.{module}":
            return None
        raise


@dataclass
class View:
    """One view's output: its figure (built on demand), its main DataFrame and any extra frames."""

    name: str
    box: w.VBox
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    main: str | None = None
    message: str = ""
    make_figure: Callable[[], go.Figure] | None = None
    _figure: go.Figure | None = None

    @property
    def data(self) -> pd.DataFrame | None:
        """The view's main DataFrame (None before the first update or when unavailable)."""
        return self.frames.get(self.main) if self.main else None

    @property
    def figure(self) -> go.Figure | None:
        """The view's plotly figure (None when unavailable)."""
        if self._figure is None and self.make_figure is not None:
            self._figure = self.make_figure()
        return self._figure

    def save(self, path: str | Path) -> Path:
        """Export the figure (``.png``/``.html``) or the main frame (``.csv``)."""
        path = Path(path)
        if path.suffix == ".csv":
            if self.data is None:
                raise ValueError(f"view {self.name!r}: no data to export ({self.message or 'not computed yet'})")
            path.parent.mkdir(parents=True, exist_ok=True)
            self.data.drop(columns=[c for c in self.data.columns if self.data[c].dtype == object
                                    and self.data[c].map(lambda v: isinstance(v, (list, tuple))).any()]
                           ).to_csv(path, index=False)
            return path
        if self.figure is None:
            raise ValueError(f"view {self.name!r}: no figure to export ({self.message or 'not computed yet'})")
        return viz.save(self.figure, path)


@dataclass(frozen=True)
class Inputs:
    """A snapshot of the editable state."""

    premise: str
    domain_premise: str | None
    options: tuple[str, ...]
    paraphrases: tuple[tuple[str, ...], ...]
    gold: int | None


def _split_forms(value: str) -> tuple[str, ...]:
    """Paraphrases typed as "form, form | form": each keeps (or gets) one leading space."""
    parts = [p.strip() for p in value.replace("|", ",").split(",")]
    return tuple(" " + p for p in parts if p)


def _score_table_html(table: pd.DataFrame, gold: int | None) -> str:
    """The scorer table as HTML: the rank-1 option of every scorer highlighted, the gold row starred."""
    cols, cells, won = viz.scorer_cells(table, gold)
    head = "".join(f"<th>{html.escape(viz.SCORER_COLUMNS[c])}</th>" for c in cols)
    body = []
    for i, option in enumerate(table["option"]):
        star = "★ " if i == gold else ""
        row = "".join(f"<td class='{'sl-win' if w[i] else ''}'>{c[i]}</td>" for c, w in zip(cells, won))
        body.append(f"<tr class='{'sl-gold-row' if i == gold else ''}'><td class='sl-opt'>{star}"
                    f"{html.escape(repr(option))}</td>{row}</tr>")
    style = ("<style>.sl-st{border-collapse:collapse;font-size:12px;width:100%}"
             ".sl-st th,.sl-st td{padding:3px 6px;text-align:right;border-bottom:1px solid var(--jp-border-color2)}"
             ".sl-st th:first-child,.sl-st td.sl-opt{text-align:left;font-family:var(--jp-code-font-family)}"
             ".sl-st td.sl-win{background:rgba(46,160,67,.35);font-weight:bold}"
             ".sl-st tr.sl-gold-row td.sl-opt{background:rgba(255,193,7,.3)}</style>")
    return (f"{style}<table class='sl-st'><tr><th>option</th>{head}</tr>{''.join(body)}</table>"
            "<div style='font-size:11px;opacity:.75'>green = winner under that scorer · ★ = gold</div>")


class OptionRow(w.HBox):
    """One option: gold toggle, text, paraphrases, move up/down, remove."""

    def __init__(self, bench: "Workbench", text: str = "", paraphrases: str = "") -> None:
        self.gold = w.ToggleButton(value=False, description="★", tooltip="gold answer",
                                   layout=w.Layout(width="38px"))
        self.text = w.Text(value=text, placeholder="option, e.g. ' bathtub'", layout=w.Layout(flex="2 1 auto"))
        self.paraphrases = w.Text(value=paraphrases, placeholder="paraphrases: form, form",
                                  layout=w.Layout(flex="3 1 auto"))
        self.up = w.Button(icon="arrow-up", tooltip="move up", layout=w.Layout(width="34px"))
        self.down = w.Button(icon="arrow-down", tooltip="move down", layout=w.Layout(width="34px"))
        self.remove = w.Button(icon="times", tooltip="remove", layout=w.Layout(width="34px"))
        for widget, cls in [(self.gold, "sl-gold"), (self.text, "sl-option"), (self.paraphrases, "sl-paraphrases"),
                            (self.up, "sl-option-up"), (self.down, "sl-option-down"),
                            (self.remove, "sl-option-remove")]:
            widget.add_class(cls)
        super().__init__([self.gold, self.text, self.paraphrases, self.up, self.down, self.remove])
        self.add_class("sl-option-row")
        self.up.on_click(lambda _: bench.move_option(bench.rows.index(self), -1))
        self.down.on_click(lambda _: bench.move_option(bench.rows.index(self), +1))
        self.remove.on_click(lambda _: bench.remove_option(bench.rows.index(self)))
        self.gold.observe(lambda ch: setattr(self.gold, "button_style", "warning" if ch["new"] else ""), "value")
        self.gold.observe(lambda ch: bench._gold_toggled(self, ch["new"]), "value")
        self.text.observe(lambda _: bench._edited(), "value")
        self.paraphrases.observe(lambda _: bench._edited(), "value")


class Workbench(w.VBox):
    """Side-by-side views of one multiple-choice item; edit anything and every view follows.

    Args:
        lm: a loaded ``LM`` or a preset/path for ``load_lm`` (default: the default causal preset).
        mlm: a loaded ``MLM`` or a preset/path for ``load_mlm`` (default: the default masked preset).
        live: recompute (debounced) after every edit; otherwise only on Score / ``update()``.
        debounce: seconds of quiet before a live update.
        top_k: alternatives per token in the token view.
        export_dir: where the export buttons write files.
    """

    def __init__(self, lm: Any = None, mlm: Any = None, *, live: bool = True, debounce: float = 0.5,
                 top_k: int = 5, export_dir: str | Path = "surfacelab_exports") -> None:
        if isinstance(debounce, bool) or not isinstance(debounce, (int, float)) or debounce < 0:
            raise ValueError(f"debounce: expected seconds >= 0, got {debounce!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k: expected an int >= 1, got {top_k!r}")
        self.live, self.debounce, self.top_k, self.export_dir = live, float(debounce), top_k, Path(export_dir)
        self._models: dict[tuple[str, str], Any] = {}
        self._lock = threading.RLock()
        self._computing = threading.Lock()  # one update at a time, whichever thread asks
        self._timer: threading.Timer | None = None
        self._worker: threading.Thread | None = None
        self._pending = False
        self._hold = 0
        self._examples: dict[str, dict] = {}
        self.last_update_s: float | None = None
        self.results: dict[str, Any] = {}

        presets = list_presets()
        causal = presets.loc[presets["kind"] == "causal", "preset"].tolist()
        masked = presets.loc[presets["kind"] == "masked", "preset"].tolist()
        self.lm = self._resolve(lm, DEFAULT_LM, "causal", load_lm)
        self.mlm = self._resolve(mlm, DEFAULT_MLM, "masked", load_mlm)
        self.lm_picker = w.Dropdown(options=list(dict.fromkeys(causal + [self.lm.name])), value=self.lm.name,
                                    description="causal LM")
        self.mlm_picker = w.Dropdown(options=list(dict.fromkeys(masked + [self.mlm.name])), value=self.mlm.name,
                                     description="masked LM")
        self.source_picker = w.Dropdown(options=[CUSTOM, TEACHING, *DATASETS], value=CUSTOM, description="examples")
        self.example_picker = w.Dropdown(options=[], description="item", layout=w.Layout(width="420px"))
        self.premise_box = w.Textarea(value=DEFAULT_EXAMPLE["premise"], description="premise",
                                      layout=w.Layout(width="100%", height="64px"))
        self.domain_box = w.Text(value=DEFAULT_EXAMPLE["domain_premise"], description="domain premise",
                                 placeholder="empty: no Unc / DC-PMI", layout=w.Layout(width="100%"),
                                 style={"description_width": "initial"})
        self.options_box = w.VBox([])
        self.add_button = w.Button(description="add option", icon="plus")
        self.score_button = w.Button(description="Score", icon="play", button_style="primary")
        self.progress = w.IntProgress(value=0, min=0, max=len(VIEWS), layout=w.Layout(width="160px"))
        self.status = w.HTML("")
        self.message = w.HTML("")
        self.heatmap = TokenHeatmap()
        self.rows: list[OptionRow] = []
        for widget, cls in [(self.lm_picker, "sl-lm-picker"), (self.mlm_picker, "sl-mlm-picker"),
                            (self.source_picker, "sl-example-source"), (self.example_picker, "sl-example-picker"),
                            (self.premise_box, "sl-premise"), (self.domain_box, "sl-domain-premise"),
                            (self.options_box, "sl-options"), (self.add_button, "sl-add-option"),
                            (self.score_button, "sl-score"), (self.progress, "sl-progress"),
                            (self.status, "sl-status"), (self.message, "sl-message")]:
            widget.add_class(cls)
        self.views = {name: self._view_box(name, title) for name, title in VIEWS.items()}
        # the PLL panels are wide: that view gets the full row below the grid
        grid = w.GridBox([v.box for name, v in self.views.items() if name != "pll"],
                         layout=w.Layout(grid_template_columns=f"repeat(auto-fill, minmax({FIGURE_WIDTH + 20}px, 1fr))",
                                         grid_gap="10px", width="100%"))
        grid.add_class("sl-views")
        controls = w.VBox([
            w.HBox([self.lm_picker, self.mlm_picker, self.source_picker, self.example_picker]),
            self.premise_box, self.domain_box,
            w.HTML("<b>options</b> (★ = gold; paraphrases feed the paraphrase-mass view)"),
            self.options_box,
            w.HBox([self.add_button, self.score_button, self.progress, self.status]),
            self.message,
        ])
        controls.add_class("sl-controls")
        self.views["pll"].box.layout.margin = "10px 0 0 0"
        super().__init__([w.HTML("<h3 style='margin:4px 0'>surfacelab workbench</h3>"), controls, grid,
                          self.views["pll"].box])
        self.add_class("sl-workbench")
        with self._holding():
            self.set_options(DEFAULT_EXAMPLE["options"], DEFAULT_EXAMPLE["paraphrases"], gold=DEFAULT_EXAMPLE["gold"])

        self.premise_box.observe(lambda _: self._edited(), "value")
        self.domain_box.observe(lambda _: self._edited(), "value")
        self.add_button.on_click(lambda _: self.add_option())
        self.score_button.on_click(lambda _: self._kick())
        self.lm_picker.observe(lambda _: self._edited(0), "value")
        self.mlm_picker.observe(lambda _: self._edited(0), "value")
        self.source_picker.observe(lambda ch: self._source_changed(ch["new"]), "value")
        self.example_picker.observe(lambda ch: self._example_chosen(ch["new"]), "value")

    # --- models -----------------------------------------------------------------------------

    def _resolve(self, value: Any, default: str, kind: str, loader: Callable) -> Any:
        if value is None or isinstance(value, str):
            name = default if value is None else value
            if (kind, name) not in self._models:
                self._models[(kind, name)] = loader(name)
            return self._models[(kind, name)]
        self._models[(kind, value.name)] = value
        return value

    # --- editing ----------------------------------------------------------------------------

    @property
    def gold(self) -> int | None:
        """Index of the gold option, or None."""
        marked = [i for i, r in enumerate(self.rows) if r.gold.value]
        return marked[0] if marked else None

    @property
    def options(self) -> list[str]:
        """The option strings, in order."""
        return [r.text.value for r in self.rows]

    def set_options(self, options: list[str], paraphrases: list[str] | None = None, *, gold: int | None = None) -> None:
        """Replace every option (and their paraphrases, as "form, form" strings); mark ``gold``."""
        if isinstance(options, str) or not isinstance(options, (list, tuple)):
            raise TypeError("options: expected a list of strings")
        paraphrases = list(paraphrases) if paraphrases is not None else [""] * len(options)
        if len(paraphrases) != len(options):
            raise ValueError(f"paraphrases: expected {len(options)} entries, got {len(paraphrases)}")
        if gold is not None and not 0 <= gold < len(options):
            raise ValueError(f"gold: expected an option index in [0, {len(options)}), got {gold!r}")
        with self._holding():
            self.rows = [OptionRow(self, o, p) for o, p in zip(options, paraphrases)]
            if gold is not None:
                self.rows[gold].gold.value = True
            self.options_box.children = tuple(self.rows)
        self._edited()

    def add_option(self, text: str = "", paraphrases: str = "") -> None:
        """Append an option row."""
        with self._holding():
            self.rows.append(OptionRow(self, text, paraphrases))
            self.options_box.children = tuple(self.rows)
        if text:
            self._edited()

    def remove_option(self, index: int) -> None:
        """Remove the option at ``index``."""
        if not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index}")
        self.rows.pop(index)
        self.options_box.children = tuple(self.rows)
        self._edited()

    def move_option(self, index: int, delta: int) -> None:
        """Move the option at ``index`` by ``delta`` places (clamped to the list)."""
        if not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index}")
        j = min(max(index + delta, 0), len(self.rows) - 1)
        self.rows.insert(j, self.rows.pop(index))
        self.options_box.children = tuple(self.rows)
        self._edited()

    def _gold_toggled(self, row: OptionRow, on: bool) -> None:
        if on:
            with self._holding():
                for r in self.rows:
                    if r is not row:
                        r.gold.value = False
        self._edited()

    @contextmanager
    def _holding(self) -> Iterator[None]:
        """Suppress live updates while several fields change together."""
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1

    # --- examples ---------------------------------------------------------------------------

    def _source_changed(self, source: str) -> None:
        self.message.value = ""
        try:
            self._examples = self._load_examples(source)
        except (ValueError, TypeError, OSError) as err:
            self._examples = {}
            self._show_message(f"examples: {err}")
        with self._holding():
            self.example_picker.options = list(self._examples)
            self.example_picker.value = None
        if self._examples:
            self.example_picker.value = next(iter(self._examples))

    def _load_examples(self, source: str) -> dict[str, dict]:
        if source == CUSTOM:
            return {}
        if source == TEACHING:
            para = _optional("paraphrase")
            if para is None:
                raise ValueError("not available: surfacelab.paraphrase not installed yet")
            out = {}
            for it in para.load_teaching_set():
                forms = list(it["concepts"].values())
                names = list(it["concepts"])
                out[f"{it['id']}: {it['premise'][:50]}"] = {
                    "premise": it["premise"], "domain_premise": it["domain_premise"],
                    "options": [f[0] for f in forms], "paraphrases": [", ".join(x.strip() for x in f[1:]) for f in forms],
                    "gold": names.index(it["answer"])}
            return out
        tasks = _optional("tasks")
        if tasks is None:
            raise ValueError("not available: surfacelab.tasks not installed yet")
        task = tasks.load(source, limit=20)
        return {f"{it.id}: {it.premise.strip()[:50]}": {
            "premise": it.premise, "domain_premise": it.domain_premise, "options": list(it.options),
            "paraphrases": [""] * len(it.options), "gold": it.gold} for it in task if it.premise_per_option is None}

    def load_example(self, example: dict) -> None:
        """Fill every field from ``example`` (premise, domain_premise, options, paraphrases, gold)."""
        with self._holding():
            self.premise_box.value = example["premise"]
            self.domain_box.value = example.get("domain_premise") or ""
            self.set_options(example["options"], example.get("paraphrases"), gold=example.get("gold"))
        self._edited(0)

    def _example_chosen(self, key: str | None) -> None:
        if key is not None and key in self._examples:
            self.load_example(self._examples[key])

    # --- updating ---------------------------------------------------------------------------

    def inputs(self) -> Inputs:
        """The current state as an ``Inputs`` snapshot."""
        dom = self.domain_box.value
        return Inputs(self.premise_box.value, dom if dom.strip() else None, tuple(self.options),
                      tuple(_split_forms(r.paraphrases.value) for r in self.rows), self.gold)

    def _edited(self, delay: float | None = None) -> None:
        if self._hold or not self.live:
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce if delay is None else delay, self._kick)
            self._timer.daemon = True
            self._timer.start()

    def _kick(self) -> None:
        """Run an update in the background; edits made meanwhile trigger one more run."""
        with self._lock:
            self._pending = True
            if self._worker is not None:
                return
            self._worker = threading.Thread(target=self._work, daemon=True, name="surfacelab-workbench")
            self._worker.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._worker = None
                    return
                self._pending = False
            self.update()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until pending live updates have finished (for scripts and tests)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                idle = (self._timer is None or not self._timer.is_alive()) and self._worker is None
            if idle:
                return
            time.sleep(0.02)
        raise TimeoutError(f"timeout: updates still running after {timeout} s")

    def update(self) -> None:
        """Recompute and redraw every view now (synchronously); errors become messages in the widget."""
        with self._computing:
            self._update()

    def _update(self) -> None:
        start = time.perf_counter()
        self.message.value = ""
        self.progress.value = 0
        self.status.value = "<i>loading models…</i>"
        try:
            self.lm = self._resolve(self.lm_picker.value, DEFAULT_LM, "causal", load_lm)
            self.mlm = self._resolve(self.mlm_picker.value, DEFAULT_MLM, "masked", load_mlm)
        except Exception as err:  # a model that fails to load must not kill the UI
            self._show_message(f"model: {type(err).__name__}: {err}")
            return
        inp = self.inputs()
        self.results = {}
        errors = []
        for name, step in [("scores", self._scores), ("tokens", self._tokens), ("paraphrase", self._paraphrase),
                           ("letters", self._letters), ("pll", self._pll)]:
            self.status.value = f"<i>computing {VIEWS[name]}…</i>"
            view = self.views[name]
            try:
                step(inp, view)
            except Exception as err:  # every failure becomes a message inside the widget
                view.frames, view.make_figure, view._figure = {}, None, None
                view.message = f"{type(err).__name__}: {err}" if not isinstance(err, (ValueError, TypeError)) \
                    else str(err)
                errors.append(f"{VIEWS[name]}: {view.message}")
                self._render_message(view)
            self.progress.value += 1
        self.last_update_s = time.perf_counter() - start
        self.status.value = f"updated in {self.last_update_s:.2f} s"
        if errors:
            self._show_message("<br>".join(html.escape(e) for e in errors), escape=False)

    def _show_message(self, text: str, *, escape: bool = True) -> None:
        self.message.value = f"<div class='sl-error'>⚠ {html.escape(text) if escape else text}</div>"

    # --- the five views ---------------------------------------------------------------------

    def _scores(self, inp: Inputs, view: View) -> None:
        r = score(self.lm, inp.premise, list(inp.options), domain_premise=inp.domain_premise, gold=inp.gold,
                  top_k=self.top_k)  # the token view's alternatives come from this same pass
        self.results["scores"] = r
        table = r.table.copy()
        table.insert(1, "gold", [i == inp.gold for i in range(len(table))])
        grid = w.HTML(_score_table_html(r.table, inp.gold))
        grid.add_class("sl-score-table")
        self._publish(view, {"table": table, "tokens": r.tokens}, "table",
                      lambda: viz.scorer_table(r.table, gold=inp.gold), html_text=r.explain(), widget=grid)

    def _tokens(self, inp: Inputs, view: View) -> None:
        r = self.results.get("scores")
        if r is None:
            raise ValueError("tokens: the scorer view failed, so there are no tokens to show")
        tv = token_view(self.lm, r, k=self.top_k)
        self.heatmap.rows = heatmap_rows(tv)
        self._publish(view, {"tokens": tv}, "tokens", lambda: viz.token_heatmap(tv), widget=self.heatmap,
                      html_text="Colour: surprisal (orange) under each context; Δ row: premise − domain "
                                "log-prob per token (green = the premise helps). Hover a token for details.")

    def _paraphrase(self, inp: Inputs, view: View) -> None:
        para = _optional("paraphrase")
        if para is None:
            raise ModuleNotFoundError("not available: surfacelab.paraphrase not installed yet")
        names = [o.strip() or o for o in inp.options]
        if len(set(names)) < len(names):
            names = list(inp.options)
        concepts = {n: [o, *[f for f in forms if f != o]] for n, o, forms in zip(names, inp.options, inp.paraphrases)}
        answer = names[inp.gold] if inp.gold is not None else None
        # top_k as in the scorer view: the option forms' scores and alternatives come from that pass
        m = para.mass(self.lm, inp.premise, concepts, domain_premise=inp.domain_premise, answer=answer,
                      top_k=self.top_k)
        self.results["paraphrase"] = m
        self._publish(view, {"concepts": m.concepts, "forms": m.forms, "winners": m.winners, "topk": m.topk},
                      "concepts", lambda: viz.paraphrase_mass(m.forms, m.concepts, m.winners, answer=answer),
                      html_text=m.explain())

    def _letters(self, inp: Inputs, view: View) -> None:
        letters = _optional("letters")
        if letters is None:
            raise ModuleNotFoundError("not available: surfacelab.letters not installed yet")
        # the options' leading spaces join them to the premise; as lettered lines they are plain text
        res = letters.score(self.lm, inp.premise, [o.strip() for o in inp.options], gold=inp.gold)
        self.results["letters"] = res
        self._publish(view, {"table": res.table}, "table", lambda: viz.letter_priors(res.table, gold=inp.gold))

    def _pll(self, inp: Inputs, view: View) -> None:
        pll = _optional("pll")
        if pll is None:
            raise ModuleNotFoundError("not available: surfacelab.pll not installed yet")
        sentences = [inp.premise + o for o in inp.options]
        res = list(pll.pll_metrics(self.mlm, sentences, PLL_METRICS, progress=False).values())
        self.results["pll"] = res
        tokens = pd.concat([r.tokens.assign(metric=r.metric) for r in res], ignore_index=True)
        table = pd.concat([r.table.assign(metric=r.metric) for r in res], ignore_index=True)
        note = self.mlm.note
        label = (f"<div class='sl-note'>⚠ {html.escape(note)}</div>" if note
                 else f"<div class='sl-note'>masked LM: {html.escape(self.mlm.name)}</div>")
        self._publish(view, {"tokens": tokens, "table": table}, "tokens",
                      lambda: viz.pll_subwords(tokens, note=note or self.mlm.name, cols=2), html_text=label,
                      escape=False, width=2 * FIGURE_WIDTH + 20)

    # --- rendering --------------------------------------------------------------------------

    def _view_box(self, name: str, title: str) -> View:
        head = w.HTML(f"<b>{title}</b>")
        text = w.HTML("")
        text.add_class("sl-view-text")
        content = w.Box([], layout=w.Layout(width="100%"))
        content.add_class("sl-view-content")
        buttons = []
        for kind in ("png", "html", "csv"):
            b = w.Button(description=kind.upper(), tooltip=f"export this view as {kind.upper()}",
                         layout=w.Layout(width="64px"))
            b.add_class(f"sl-export-{kind}")
            b.on_click(lambda _, kind=kind: self._export_clicked(name, kind))
            buttons.append(b)
        box = w.VBox([head, content, text, w.HBox(buttons)],
                     layout=w.Layout(border="1px solid var(--jp-border-color2)", padding="6px", min_width="0"))
        box.add_class("sl-view")
        box.add_class(f"sl-view-{name}")
        return View(name, box)

    def _publish(self, view: View, frames: dict[str, pd.DataFrame], main: str, make_figure: Callable[[], go.Figure],
                 *, html_text: str = "", widget: w.DOMWidget | None = None, escape: bool = True,
                 width: int = FIGURE_WIDTH) -> None:
        view.frames, view.main, view.message = frames, main, ""
        view.make_figure, view._figure = make_figure, None
        content, text = view.box.children[1], view.box.children[2]
        if widget is None:
            widget = go.FigureWidget(view.figure).update_layout(width=width)
            widget.add_class("sl-figure")
        content.children = (widget,)
        text.value = f"<div class='sl-explain'>{html.escape(html_text) if escape else html_text}</div>"
        view.box.remove_class("sl-view-error")
        view.box.add_class("sl-view-ready")

    def _render_message(self, view: View) -> None:
        content, text = view.box.children[1], view.box.children[2]
        msg = w.HTML(f"<div class='sl-error'>⚠ {html.escape(view.message)}</div>")
        msg.add_class("sl-view-message")
        content.children = (msg,)
        text.value = ""
        view.box.remove_class("sl-view-ready")
        view.box.add_class("sl-view-error")

    def _export_clicked(self, name: str, kind: str) -> None:
        try:
            path = self.export(name, self.export_dir / f"{name}.{kind}")
            self.message.value = f"<div class='sl-info'>saved {html.escape(str(path))}</div>"
        except Exception as err:  # an export failure is a message, not a traceback
            self._show_message(f"export {name}: {type(err).__name__}: {err}")

    # --- data out ---------------------------------------------------------------------------

    def export(self, view: str, path: str | Path) -> Path:
        """Write one view as PNG, HTML (its figure) or CSV (its main frame), chosen by the suffix of ``path``."""
        if view not in self.views:
            raise ValueError(f"view: unknown view {view!r}; known: {', '.join(self.views)}")
        return self.views[view].save(path)

    def frames(self) -> dict[str, pd.DataFrame]:
        """The main DataFrame of every view that has one, by view name."""
        return {name: v.data for name, v in self.views.items() if v.data is not None}

    def figures(self) -> dict[str, go.Figure]:
        """The figure of every view that has one, by view name."""
        return {name: v.figure for name, v in self.views.items() if v.figure is not None}
