"""The Workbench: edit a premise, a domain premise and the options; see every view side by side.

Views (``surfacelab.widgets.views.VIEWS``; each has ``.frames``, ``.data``, ``.figure`` and exports to
PNG / HTML / CSV):

1. ``scores``     the scorer table (winner per scorer highlighted, gold marked) + ``MCResult.explain()``;
2. ``tokens``     per-token log-probs under the premise and the domain premise, their difference
                  (the DC-PMI contribution) and the top alternatives on hover;
3. ``paraphrase`` paraphrase mass per concept (options + their listed paraphrases);
4. ``letters``    option-letter probabilities: observed, content-free prior, calibrated, debiased,
                  with the prompt, the letter → option mapping and each method's pick;
5. ``pll``        masked-LM PLL of premise+option per subword under original / word_l2r / whole_word;
6. ``why``        why the gold (★) lost or won against the LM winner or a chosen option (``surfacelab.why``):
                  the gap decomposition, the premise coloured by occlusion attribution, where the gold's mass
                  went, the verdict; computed after the other views, in its own thread (``View.slow``).

The one rule for options: an option is read exactly as typed, straight after the premise; start it
with a space (shown as ␣) to begin a new word. Paraphrases take their option's leading space, so the
paraphrase view and the scorer table score the same strings.

Nothing here computes a score: every number comes from the library (``score``, ``alternatives``,
``paraphrase``, ``letters``, ``pll``) and every figure from ``surfacelab.viz``. An edit marks the views
it affects as stale at once; the update (debounced, in a background thread) redraws each view in
place as soon as its numbers are ready, cheapest first, and starts over if a newer edit arrives.

>>> wb = Workbench()                     # doctest: +SKIP
>>> wb                                   # displays the UI  # doctest: +SKIP
>>> wb.premise_box.value = "The man took a bath in the"; wb.update()   # doctest: +SKIP
>>> wb.frames()["scores"]                # doctest: +SKIP
>>> wb.save_state("bath.json"); Workbench.from_state("bath.json")      # doctest: +SKIP
"""

from __future__ import annotations

import base64
import html
import json
import mimetypes
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from .._format import visible
from ..text import glued
from ..viz import check_gold
from ..models import DEFAULT_LM, DEFAULT_MLM, list_presets, load_lm, load_mlm
from ..paraphrase import load_teaching_set
from ..tasks import load as load_task
from .views import VIEWS, View, close_tree

HERE = Path(__file__).parent
DATASETS = ("copa", "arc-challenge", "openbookqa", "commonsenseqa", "sst-2", "mmlu")
CUSTOM = "(custom)"
TEACHING = "teaching set"
SAVED = "saved states"
DEFAULT_EXAMPLE = {"premise": "The man took a bath in the", "domain_premise": " the",
                   "options": [" bathtub", " sink", " pool", " xylophone"],
                   "paraphrases": ["tub, bath tub", "basin, washbasin", "swimming pool", ""], "gold": 0}
#: Where exports and saved states go unless ``export_dir`` says otherwise (outside any checkout).
DEFAULT_EXPORT_DIR = Path.home() / "surfacelab-exports"
STATE_FORMAT = "surfacelab-workbench-state"
#: The cue of a slow view whose preview (first part) is shown while the rest computes.
PREVIEW_CUE = "first part shown · computing the rest…"
#: The largest export offered as an in-widget download link (a data: URL).
LINK_LIMIT = 12 * 1024 * 1024
RULE = ("Each option is read exactly as typed, straight after the premise: start it with a space (<code>␣</code>) "
        "to begin a new word. Paraphrases (comma-separated) take their option's leading space. ★ marks the gold "
        "answer.")


@dataclass(frozen=True)
class Inputs:
    """A snapshot of the editable state (paraphrases as the forms scored: each with its option's leading space)."""

    premise: str
    domain_premise: str | None
    options: tuple[str, ...]
    paraphrases: tuple[tuple[str, ...], ...]
    gold: int | None


@dataclass(frozen=True)
class Problem:
    """Something wrong with the inputs, in words for people.

    ``scope``: the view it concerns (None: every view); ``blocking``: the views in scope wait until it is
    fixed (otherwise it is a notice); ``kind``: a short tag (``"glued"`` for a missing leading space).
    """

    text: str
    scope: str | None = None
    blocking: bool = True
    kind: str = ""


def split_forms(value: str, lead: str = " ") -> tuple[str, ...]:
    """Paraphrases typed as "form, form | form": each stripped form gets ``lead`` (its option's leading space)."""
    parts = [p.strip() for p in value.replace("|", ",").split(",")]
    return tuple(lead + p for p in parts if p)


def leading(text: str) -> str:
    """The leading whitespace of ``text``."""
    return text[:len(text) - len(text.lstrip())]


def _quote(text: str) -> str:
    return repr(visible(text))


def problems(inp: Inputs) -> list[Problem]:
    """Every problem with ``inp``, one message per problem, options numbered from 1 and quoted."""
    out: list[Problem] = []
    if not inp.premise.strip():
        out.append(Problem("The premise is empty: type the text the options continue (an empty premise would "
                           "score the options from the start of text, which this workbench does not do)."))
    n = len(inp.options)
    if n < 2:
        out.append(Problem(f"Add at least two options to compare (there {'is one' if n == 1 else 'are none'}): "
                           "a winner and a margin need two."))
    for i, o in enumerate(inp.options):
        if not o.strip():
            what = "empty" if not o else "only whitespace"
            out.append(Problem(f"Option {i + 1} is {what}: type an answer or remove it with ✕."))
    seen: dict[str, int] = {}
    for i, o in enumerate(inp.options):
        if o.strip() and o in seen:
            out.append(Problem(f"Options {seen[o] + 1} and {i + 1} are the same text, {_quote(o)}: change or "
                               "remove one."))
        seen.setdefault(o, i)
    bare: dict[str, int] = {}
    for i, o in enumerate(inp.options):
        b = o.strip()
        if b and b in bare and inp.options[bare[b]] != o:
            out.append(Problem(f"Options {bare[b] + 1} and {i + 1} differ only in whitespace ({_quote(inp.options[bare[b]])} "
                               f"and {_quote(o)}): as lettered lines they read the same.", scope="letters"))
        bare.setdefault(b, i)
    if inp.premise.strip():
        for i, o in enumerate(inp.options):
            if glued(inp.premise, o):
                tail = inp.premise.rstrip()[-12:]
                out.append(Problem(f"Option {i + 1}, {_quote(o)}, does not start with a space, so the model reads it "
                                   f"glued to the premise: '…{tail}{o}'. Add ␣ if it is a new word.",
                                   blocking=False, kind="glued"))
    owner: dict[str, int] = {o: i for i, o in enumerate(inp.options) if o.strip()}
    for i, forms in enumerate(inp.paraphrases):
        for f in dict.fromkeys(forms):
            j = owner.get(f)
            if j is None:
                owner[f] = i
            elif j != i:
                kind = "is option" if inp.options[j] == f else "is also a paraphrase of option"
                out.append(Problem(f"Paraphrase {_quote(f)} of option {i + 1} {kind} {j + 1}: a form can belong "
                                   "to one option only, so the paraphrase view waits until one is removed.",
                                   scope="paraphrase"))
            elif f == inp.options[i]:
                out.append(Problem(f"Paraphrase {_quote(f)} of option {i + 1} repeats the option; it is counted once.",
                                   scope="paraphrase", blocking=False))
        repeated = sorted({f for f in forms if forms.count(f) > 1})
        for f in repeated:
            out.append(Problem(f"Paraphrase {_quote(f)} is listed twice for option {i + 1}; it is counted once.",
                               scope="paraphrase", blocking=False))
    return out


def join_preview(premise: str, option: str, forms: tuple[str, ...]) -> str:
    """HTML: how the option joins the premise (the join's whitespace marked) and the paraphrase forms scored."""
    if not option:
        return "<span class='sl-join'>empty option</span>"
    tail = premise[-18:].lstrip() if premise else ""
    dots = "…" if len(premise) > 18 else ""
    space = premise[-1:].isspace() or option[:1].isspace()
    if not premise.strip():
        marker = "<span class='sl-space-marker sl-space-yes'>␣</span>" if option[:1].isspace() else ""
        read = f"<code>{html.escape(visible(option))}</code>"
    elif space:
        marker = ("<span class='sl-space-marker sl-space-yes' title='starts a new word after the premise'>"
                  f"{'␣' * max(len(leading(option)) + len(premise) - len(premise.rstrip()), 1)}</span>")
        read = (f"<code>{html.escape(dots + tail.rstrip())}</code>{marker}"
                f"<code>{html.escape(visible(option.lstrip()))}</code>")
    else:
        marker = ("<span class='sl-space-marker sl-space-no' title='no space: glued to the last word of the "
                  "premise'>no ␣</span>")
        read = (f"<code>{html.escape(dots + tail)}</code><span class='sl-space-marker sl-space-no'>‸</span>"
                f"<code>{html.escape(visible(option))}</code>")
    out = f"<span class='sl-join'>reads {read}"
    if forms:
        out += " · paraphrases: " + ", ".join(f"<code>{html.escape(visible(f))}</code>" for f in forms)
    return out + "</span>"


def _check_arguments(debounce: Any, top_k: Any, export_dir: Any, server: Any) -> None:
    """``ValueError``/``TypeError`` naming the first bad ``Workbench`` argument."""
    if isinstance(debounce, bool) or not isinstance(debounce, (int, float)) or debounce < 0:
        raise ValueError(f"debounce: expected seconds >= 0, got {debounce!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k: expected an int >= 1, got {top_k!r}")
    if export_dir is not None and not isinstance(export_dir, (str, Path)):
        raise TypeError(f"export_dir: expected a folder path or None, got {type(export_dir).__name__}")
    if server is not None and not isinstance(server, str):
        raise TypeError(f"server: expected a URL string or None, got {type(server).__name__}")


def server_url(lm: Any) -> str:
    """The URL of the server ``lm`` scores on ("" for an in-process model)."""
    return str(getattr(getattr(lm, "backend", None), "url", "") or "")


def load_failure(key: tuple[str, str, str], err: Exception, current: Any) -> str:
    """The message for a model that could not be loaded: what was asked, why, and what the views keep using."""
    kind, name, server = key
    what = f"The {'causal' if kind == 'causal' else 'masked'} LM {name!r}" + (f" on the server {server}" if server else "")
    why = str(err) if isinstance(err, (ValueError, ConnectionError, OSError)) else f"{type(err).__name__}: {err}"
    why = " ".join(why.split())  # a server's error page arrives as a page of HTML: one line, cut short
    why = why if len(why) <= 300 else why[:299] + "…"
    where = f" on {server_url(current)}" if server_url(current) else ""
    return (f"{what} could not be loaded: {why}. The views still use {current.name}{where}; fix the "
            f"{'URL' if server else 'model'} or press Score to try again.")


class OptionRow(w.HBox):
    """One option: number, gold toggle, text, paraphrases, move up/down, remove, and how it joins the premise
    (the ␣ marker, with an "add ␣" button when the option is glued to the premise's last word)."""

    def __init__(self, bench: "Workbench", text: str = "", paraphrases: str = "") -> None:
        self.number = w.HTML("")
        self.number.add_class("sl-option-number")
        self.gold = w.ToggleButton(value=False, description="★", tooltip="gold answer")
        self.text = w.Text(value=text, placeholder="option, e.g. ␣bathtub (start with a space)")
        self.paraphrases = w.Text(value=paraphrases, placeholder="paraphrases: tub, bath tub")
        self.up = w.Button(icon="arrow-up", tooltip="move up")
        self.down = w.Button(icon="arrow-down", tooltip="move down")
        self.remove = w.Button(icon="times", tooltip="remove")
        self.join = w.HTML("")
        self.fix = w.Button(description="add ␣", tooltip="start the option with a space so it is a new word")
        for widget, cls in [(self.gold, "sl-gold"), (self.text, "sl-option"), (self.paraphrases, "sl-paraphrases"),
                            (self.up, "sl-option-up"), (self.down, "sl-option-down"),
                            (self.remove, "sl-option-remove"), (self.join, "sl-option-preview"),
                            (self.fix, "sl-space-fix")]:
            widget.add_class(cls)
        super().__init__([self.number, self.gold, self.text, self.paraphrases, self.up, self.down, self.remove,
                          self.join, self.fix])
        self.add_class("sl-option-row")
        self.up.on_click(lambda _: bench.move_option(bench.rows.index(self), -1))
        self.down.on_click(lambda _: bench.move_option(bench.rows.index(self), +1))
        self.remove.on_click(lambda _: bench.remove_option(bench.rows.index(self)))
        self.fix.on_click(lambda _: setattr(self.text, "value", " " + self.text.value.lstrip()))
        self.gold.observe(lambda ch: setattr(self.gold, "button_style", "warning" if ch["new"] else ""), "value")
        self.gold.observe(lambda ch: bench._gold_toggled(self, ch["new"]), "value")
        self.text.observe(lambda _: bench._edited(), "value")
        self.paraphrases.observe(lambda _: bench._edited(), "value")

    def forms(self) -> tuple[str, ...]:
        """The paraphrase forms as scored: each with this option's leading space."""
        return split_forms(self.paraphrases.value, leading(self.text.value))

    def refresh(self, number: int, premise: str) -> None:
        """Show the 1-based number and how the option joins ``premise`` (the ␣ marker, the fix button)."""
        self.number.value = f"{number}"
        bad = glued(premise, self.text.value)
        self.fix.layout.display = None if bad else "none"  # before the preview: the page sees them in this order
        (self.add_class if bad else self.remove_class)("sl-glued")
        self.join.value = join_preview(premise, self.text.value, self.forms())


class Workbench(w.VBox):
    """Side-by-side views of one multiple-choice item; edit anything and every view follows.

    Args:
        lm: a loaded ``LM`` or a preset/path for ``load_lm`` (default: the default causal preset).
        mlm: a loaded ``MLM`` or a preset/path for ``load_mlm`` (default: the default masked preset).
        live: recompute (debounced) after every edit; otherwise only on Score / ``update()``.
        debounce: seconds of quiet before a live update.
        top_k: alternatives per token in the token view.
        export_dir: the folder the export buttons and "save state" write to (shown and editable in the
            widget); None: ``DEFAULT_EXPORT_DIR`` (``~/surfacelab-exports``).
        server: URL of a vLLM (OpenAI-compatible) server that scores the causal LM (``load_lm(lm,
            server=...)``); shown and editable in the "server" box next to the model picker. None: in-process.
        api_key: the server's API key (default ``$SURFACELAB_API_KEY``); kept in the kernel only: never
            shown, synced to the browser or written by ``save_state``.
    """

    def __init__(self, lm: Any = None, mlm: Any = None, *, live: bool = True, debounce: float = 0.2,
                 top_k: int = 5, export_dir: str | Path | None = None, server: str | None = None,
                 api_key: str | None = None) -> None:
        _check_arguments(debounce, top_k, export_dir, server)
        self.live, self.debounce, self.top_k = live, float(debounce), top_k
        self._api_key = api_key
        self._models: dict[tuple[str, str, str], Any] = {}  # (kind, name, server URL or "") -> model
        self._failed: dict[tuple[str, str, str], Problem] = {}  # models that failed to load, until retried
        self._lock = threading.RLock()
        self._computing = threading.Lock()  # one update at a time, whichever thread asks
        self._timer: threading.Timer | None = None
        self._worker: threading.Thread | None = None
        self._slow_job: tuple | None = None  # (generation, inputs, views) for the slow lane
        self._slow_worker: threading.Thread | None = None
        self._pending = False
        self._hold = 0
        self._generation = 0
        self._examples: dict[str, dict] = {}
        self._problems: list[Problem] = []
        self.last_update_s: float | None = None
        self.lm = self._resolve(lm, "causal", (server or "").strip())
        self.mlm = self._resolve(mlm, "masked")
        self.rows: list[OptionRow] = []
        controls = self._build_controls(export_dir)
        self.views: dict[str, View] = {name: cls(self) for name, cls in VIEWS.items()}
        grid = w.GridBox([v.box for v in self.views.values()],
                         layout=w.Layout(grid_template_columns="repeat(auto-fit, minmax(min(100%, 520px), 1fr))",
                                         grid_gap="10px", width="100%"))
        grid.add_class("sl-views")
        style = w.HTML(f"<style>{(HERE / 'workbench.css').read_text(encoding='utf-8')}</style>")
        style.layout.display = "none"
        super().__init__([style, w.HTML("<h3>surfacelab workbench</h3>"), controls, grid])
        self.add_class("sl-workbench")
        with self._holding():
            self.set_options(DEFAULT_EXAMPLE["options"], DEFAULT_EXAMPLE["paraphrases"], gold=DEFAULT_EXAMPLE["gold"])
        self._wire()
        self.status.value = "<i>not computed yet: press Score</i>" if not live else ""

    def _build_controls(self, export_dir: str | Path | None) -> w.VBox:
        """Create the input widgets (pickers, premise, options, actions, messages, files) and lay them out."""
        presets = list_presets()
        causal = presets.loc[presets["kind"] == "causal", "preset"].tolist()
        masked = presets.loc[presets["kind"] == "masked", "preset"].tolist()
        self.lm_picker = w.Dropdown(options=list(dict.fromkeys(causal + [self.lm.name])), value=self.lm.name,
                                    description="causal LM")
        # continuous_update=False: a URL is tried when typed out (Enter or leaving the box), not per keystroke
        self.server_box = w.Text(value=server_url(self.lm), description="server", continuous_update=False,
                                 placeholder="vLLM URL, e.g. http://127.0.0.1:8000/v1 (empty: this kernel)",
                                 tooltip="score the causal LM on a vLLM server; the API key comes from "
                                         "Workbench(api_key=...) or $SURFACELAB_API_KEY and is never shown or saved")
        self.mlm_picker = w.Dropdown(options=list(dict.fromkeys(masked + [self.mlm.name])), value=self.mlm.name,
                                     description="masked LM")
        self.source_picker = w.Dropdown(options=[CUSTOM, TEACHING, *DATASETS, SAVED], value=CUSTOM,
                                        description="examples")
        self.example_picker = w.Dropdown(options=[], description="item")
        self.premise_box = w.Textarea(value=DEFAULT_EXAMPLE["premise"], description="premise",
                                      layout=w.Layout(height="52px"))
        self.domain_box = w.Text(value=DEFAULT_EXAMPLE["domain_premise"], description="domain premise",
                                 placeholder="empty: no Unc / DC-PMI")
        self.options_box = w.VBox([])
        self.add_button = w.Button(description="add option", icon="plus")
        self.score_button = w.Button(description="Score", icon="play", button_style="primary")
        self.progress = w.FloatProgress(value=0, min=0, max=1)
        self.status = w.HTML("")
        self.message = w.HTML("")
        self.fix_spaces = w.Button(description="add ␣ to every glued option", layout=w.Layout(display="none", width="auto"))
        self.export_box = w.Text(value=str(Path(export_dir).expanduser().resolve() if export_dir is not None
                                           else DEFAULT_EXPORT_DIR), description="export folder",
                                 style={"description_width": "initial"})
        self.save_button = w.Button(description="save state", icon="save", tooltip="save the inputs and models as JSON")
        self.files_note = w.HTML("")
        for widget, cls in [(self.lm_picker, "sl-lm-picker"), (self.server_box, "sl-server"),
                            (self.mlm_picker, "sl-mlm-picker"),
                            (self.source_picker, "sl-example-source"), (self.example_picker, "sl-example-picker"),
                            (self.premise_box, "sl-premise"), (self.domain_box, "sl-domain-premise"),
                            (self.options_box, "sl-options"), (self.add_button, "sl-add-option"),
                            (self.score_button, "sl-score"), (self.progress, "sl-progress"),
                            (self.status, "sl-status"), (self.message, "sl-message"),
                            (self.fix_spaces, "sl-fix-spaces"), (self.export_box, "sl-export-dir"),
                            (self.save_button, "sl-save-state"), (self.files_note, "sl-files-note")]:
            widget.add_class(cls)

        def row(children: list, cls: str) -> w.HBox:
            box = w.HBox(children)
            box.add_class(cls)
            return box

        controls = w.VBox([
            row([self.lm_picker, self.server_box, self.mlm_picker, self.source_picker, self.example_picker],
                "sl-pickers"),
            self.premise_box, self.domain_box, w.HTML(f"<div class='sl-rule'>{RULE}</div>"), self.options_box,
            row([self.add_button, self.score_button, self.progress, self.status], "sl-actions"),
            row([self.message, self.fix_spaces], "sl-messages"),
            row([self.export_box, self.save_button, self.files_note], "sl-files"),
        ])
        controls.add_class("sl-controls")
        return controls

    def _wire(self) -> None:
        """Connect the widgets' events to edits, updates, examples and files."""
        for view in self.views.values():
            view.probe.observe(lambda ch, view=view: self._sighted(view, ch["new"]), "in_sight")
        self.premise_box.observe(lambda _: self._edited(), "value")
        self.domain_box.observe(lambda _: self._edited(), "value")
        self.add_button.on_click(lambda _: self.add_option())
        self.score_button.on_click(lambda _: self._retry())
        self.fix_spaces.on_click(lambda _: self.fix_leading_spaces())
        self.save_button.on_click(lambda _: self._save_clicked())
        self.lm_picker.observe(lambda _: self._edited(0), "value")
        self.server_box.observe(lambda _: self._edited(0), "value")
        self.mlm_picker.observe(lambda _: self._edited(0), "value")
        self.source_picker.observe(lambda ch: self._source_changed(ch["new"]), "value")
        self.example_picker.observe(lambda ch: self._example_chosen(ch["new"]), "value")

    # --- models -----------------------------------------------------------------------------

    def _resolve(self, value: Any, kind: str, server: str = "",
                 progress: Callable[[float, str], None] | None = None) -> Any:
        """A loaded model for ``value`` (None: the default preset; a causal one on ``server`` when given),
        loaded once per workbench and server."""
        if value is None or isinstance(value, (str, Path)):
            name = str(value) if value is not None else (DEFAULT_LM if kind == "causal" else DEFAULT_MLM)
            key = (kind, name, server)
            if key not in self._models:
                if kind == "causal":
                    remote = {"server": server, "api_key": self._api_key} if server else {}
                    self._models[key] = load_lm(name, progress=progress, **remote)
                else:
                    self._models[key] = load_mlm(name, progress=progress)
            return self._models[key]
        if server and server != server_url(value):
            raise ValueError(f"server: {server!r} given with an LM loaded {'on ' + server_url(value) if server_url(value) else 'in-process'}; "
                             "pass the model's name instead, or no server")
        self._models[(kind, value.name, server_url(value))] = value
        return value

    def _wanted(self, kind: str) -> tuple[str, str, str]:
        """The model the pickers (and the server box) ask for: (kind, name, server URL or "")."""
        if kind == "causal":
            return kind, self.lm_picker.value, self.server_box.value.strip()
        return kind, self.mlm_picker.value, ""

    @contextmanager
    def _loading(self, name: str) -> Iterator[Callable[[float, str], None]]:
        """Show a model load in the progress bar and the status line, with the seconds elapsed."""
        start = time.monotonic()
        state = {"step": "starting", "fraction": 0.0}
        done = threading.Event()

        def show() -> None:
            self.progress.value = state["fraction"]
            self.status.value = (f"<i>loading {html.escape(name)}: {html.escape(state['step'])} · "
                                 f"{time.monotonic() - start:.0f} s</i>")

        def report(fraction: float, step: str) -> None:
            state["fraction"], state["step"] = min(max(float(fraction), 0.0), 1.0), step
            show()

        def tick() -> None:
            while not done.wait(1.0):
                show()

        ticker = threading.Thread(target=tick, daemon=True, name="surfacelab-loading")
        self.progress.bar_style = "info"
        show()
        ticker.start()
        try:
            yield report
        finally:
            done.set()
            self.progress.bar_style = ""

    def _load_models(self) -> list[Problem]:
        """Load what the pickers ask for. A model that fails (a bad or unreachable server, a missing folder)
        becomes a message, and the views keep the model they had; it is tried again on Score / ``update()``.

        Returns:
            The problems, one per model that could not be loaded.
        """
        out = []
        for kind, attr in (("causal", "lm"), ("masked", "mlm")):
            key = self._wanted(kind)
            if key not in self._models and key not in self._failed:
                try:
                    with self._loading(key[1] + (f" on {key[2]}" if key[2] else "")) as report:
                        for v in self.views.values():
                            if v.state != "empty":
                                v.set_state("stale", "loading model…")
                        self._resolve(key[1], kind, key[2], report)
                except Exception as err:  # a model that fails to load must not kill the UI
                    self._failed[key] = Problem(load_failure(key, err, getattr(self, attr)), kind="model",
                                                blocking=False)
            if key in self._failed:
                out.append(self._failed[key])
            else:
                setattr(self, attr, self._models[key])
        return out

    def _retry(self) -> None:
        """Score: try models that failed to load again, then update."""
        self._failed.clear()
        self._kick()

    # --- editing ----------------------------------------------------------------------------

    @property
    def gold(self) -> int | None:
        """Index of the gold option, or None."""
        marked = [i for i, r in enumerate(self.rows) if r.gold.value]
        return marked[0] if marked else None

    @property
    def options(self) -> list[str]:
        """The option strings, in order (exactly as typed)."""
        return [r.text.value for r in self.rows]

    def set_options(self, options: list[str], paraphrases: list[str] | None = None, *, gold: int | None = None) -> None:
        """Replace every option (and their paraphrases, as "form, form" strings); mark ``gold`` (an index or None)."""
        if isinstance(options, str) or not isinstance(options, (list, tuple)):
            raise TypeError("options: expected a list of strings")
        bad = [i for i, o in enumerate(options) if not isinstance(o, str)]
        if bad:
            raise TypeError(f"options: option {bad[0] + 1} is a {type(options[bad[0]]).__name__}, not a string")
        paraphrases = list(paraphrases) if paraphrases is not None else [""] * len(options)
        if len(paraphrases) != len(options):
            raise ValueError(f"paraphrases: expected {len(options)} entries, got {len(paraphrases)}")
        if any(not isinstance(p, str) for p in paraphrases):
            raise TypeError('paraphrases: expected one "form, form" string per option')
        gold = check_gold(gold, len(options))
        old = self.rows
        with self._holding():
            self.rows = [OptionRow(self, o, p) for o, p in zip(options, paraphrases)]
            if gold is not None:
                self.rows[gold].gold.value = True
            self.options_box.children = tuple(self.rows)
        for r in old:
            close_tree(r)
        self._edited()

    def add_option(self, text: str = "", paraphrases: str = "") -> None:
        """Append an option row."""
        with self._holding():
            self.rows.append(OptionRow(self, text, paraphrases))
            self.options_box.children = tuple(self.rows)
        self._edited()

    def remove_option(self, index: int) -> None:
        """Remove the option at ``index`` (0-based)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index!r} (there are {len(self.rows)})")
        row = self.rows.pop(index)
        self.options_box.children = tuple(self.rows)
        close_tree(row)
        self._edited()

    def move_option(self, index: int, delta: int) -> None:
        """Move the option at ``index`` by ``delta`` places (clamped to the list)."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index!r} (there are {len(self.rows)})")
        j = min(max(index + delta, 0), len(self.rows) - 1)
        self.rows.insert(j, self.rows.pop(index))
        self.options_box.children = tuple(self.rows)
        self._edited()

    def fix_leading_spaces(self) -> int:
        """Start every option that is glued to the premise with a space; returns how many were changed."""
        premise = self.premise_box.value
        bad = [r for r in self.rows if glued(premise, r.text.value)]
        with self._holding():
            for r in bad:
                r.text.value = " " + r.text.value
        if bad:
            self._edited()
        return len(bad)

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

    def _refresh_rows(self) -> None:
        premise = self.premise_box.value
        for i, r in enumerate(self.rows):
            r.refresh(i + 1, premise)
        n = sum(glued(premise, r.text.value) for r in self.rows)
        self.fix_spaces.description = f"add ␣ to the {n} glued option{'s' if n != 1 else ''}"
        self.fix_spaces.layout.display = None if n else "none"

    # --- examples and saved states ----------------------------------------------------------

    def _source_changed(self, source: str) -> None:
        self.message.value = ""
        try:
            self._examples = self._load_examples(source)
        except (ValueError, TypeError, OSError) as err:
            self._examples = {}
            self._show_messages([Problem(f"examples: {err}")])
        with self._holding():
            self.example_picker.options = list(self._examples)
            self.example_picker.value = None
        if self._examples:
            self.example_picker.value = next(iter(self._examples))
        elif source == SAVED:
            self._show_messages([Problem(f"No saved states in {self.export_dir}: use “save state” first.",
                                         blocking=False)])

    def _load_examples(self, source: str) -> dict[str, dict]:
        if source == CUSTOM:
            return {}
        if source == SAVED:
            out = {}
            for path in sorted(self.export_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
                try:
                    out[path.name] = read_state(path)
                except ValueError:
                    continue  # some other JSON file in the folder
            return out
        if source == TEACHING:
            out = {}
            for it in load_teaching_set():
                forms = list(it["concepts"].values())
                names = list(it["concepts"])
                out[f"{it['id']}: {it['premise'][:50]}"] = {
                    "premise": it["premise"], "domain_premise": it["domain_premise"],
                    "options": [f[0] for f in forms], "paraphrases": [", ".join(x.strip() for x in f[1:]) for f in forms],
                    "gold": names.index(it["answer"])}
            return out
        task = load_task(source, limit=20)
        return {f"{it.id}: {it.premise.strip()[:50]}": {
            "premise": it.premise, "domain_premise": it.domain_premise, "options": list(it.options),
            "paraphrases": [""] * len(it.options), "gold": it.gold} for it in task if it.premise_per_option is None}

    def load_example(self, example: dict) -> None:
        """Fill every field from ``example`` (premise, domain_premise, options, paraphrases, gold; and lm, server,
        mlm when given, as in a saved state)."""
        with self._holding():
            if "server" in example:
                self.server_box.value = example["server"] or ""
            for key, picker in (("lm", self.lm_picker), ("mlm", self.mlm_picker)):
                if example.get(key):
                    if example[key] not in picker.options:
                        picker.options = [*picker.options, example[key]]
                    picker.value = example[key]
            self.premise_box.value = example["premise"]
            self.domain_box.value = example.get("domain_premise") or ""
            self.set_options(example["options"], example.get("paraphrases"), gold=example.get("gold"))
        self._edited(0)

    def _example_chosen(self, key: str | None) -> None:
        if key is not None and key in self._examples:
            self.load_example(self._examples[key])

    def state(self) -> dict:
        """The workbench's state: premise, domain premise, options, paraphrases (as typed), gold, model names
        and the causal LM's server URL (never its API key)."""
        return {"format": STATE_FORMAT, "version": 1, "premise": self.premise_box.value,
                "domain_premise": self.domain_box.value or None, "options": self.options,
                "paraphrases": [r.paraphrases.value for r in self.rows], "gold": self.gold,
                "lm": self.lm_picker.value, "server": self.server_box.value.strip() or None,
                "mlm": self.mlm_picker.value}

    def save_state(self, path: str | Path) -> Path:
        """Write ``state()`` as JSON to ``path`` (a ``.json`` file); ``Workbench.from_state`` reads it back."""
        path = Path(path).expanduser()
        if path.suffix != ".json":
            raise ValueError(f"path: expected a .json file name, got {path.name!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.state(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def load_state(self, source: str | Path | dict) -> None:
        """Load a saved state (a path written by ``save_state`` or its dict) into this workbench."""
        self.load_example(read_state(source))

    @classmethod
    def from_state(cls, source: str | Path | dict, **kwargs: Any) -> "Workbench":
        """A new Workbench with the models and inputs of a saved state (``lm=``/``mlm=`` and other keyword
        arguments of ``Workbench`` override)."""
        state = read_state(source)
        for key in ("lm", "mlm", "server"):
            kwargs.setdefault(key, state.get(key))
        bench = cls(**kwargs)
        bench.load_example({k: v for k, v in state.items() if k not in ("lm", "mlm", "server")})
        return bench

    # --- updating ---------------------------------------------------------------------------

    def inputs(self) -> Inputs:
        """The current state as an ``Inputs`` snapshot."""
        dom = self.domain_box.value
        return Inputs(self.premise_box.value, dom if dom.strip() else None, tuple(self.options),
                      tuple(r.forms() for r in self.rows), self.gold)

    def problems_for(self, view: str) -> list[Problem]:
        """The notices of the last update that concern ``view``."""
        return [p for p in self._problems if p.scope == view]

    def _stale_views(self) -> list[View]:
        """Views whose inputs are newer than what they show."""
        inp = self.inputs()
        pickers = {"lm": self._wanted("causal") != ("causal", self.lm.name, server_url(self.lm)),
                   "mlm": self.mlm_picker.value != self.mlm.name}
        out = []
        for v in self.views.values():
            if v.state == "empty":
                continue
            changed = any(pickers.get(n, False) for n in v.needs)
            if changed or v.state in ("error", "blocked") or v.key(inp) != v.shown_key:
                out.append(v)
        return out

    def _edited(self, delay: float | None = None) -> None:
        self._refresh_rows()
        if self._hold:
            return
        self._generation += 1
        for v in self._stale_views():
            if v.state != "busy":
                v.set_state("stale")
        if not self.live:
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
            with self._computing:
                self._update(everything=False)

    def _sighted(self, view: View, seen: bool) -> None:
        """A view deferred by a live update came into sight: update it now."""
        if seen and view.state == "deferred" and self.live:
            self._kick()

    def wait(self, timeout: float = 120.0) -> None:
        """Block until pending live updates have finished (for scripts and tests)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                idle = ((self._timer is None or not self._timer.is_alive()) and self._worker is None
                        and self._slow_worker is None)
            if idle:
                return
            time.sleep(0.02)
        raise TimeoutError(f"timeout: updates still running after {timeout} s")

    def update(self) -> None:
        """Recompute and redraw every view now (synchronously); problems become messages in the widget."""
        self._failed.clear()
        with self._computing:
            self._update(everything=True)

    def _catch_up(self) -> None:
        """Bring views that a live update left for later (out of sight, or in the slow lane) up to date before
        handing out data."""
        worker = self._slow_worker
        if worker is not None and worker is not threading.current_thread():
            worker.join()
        # deferred (out of sight), or a slow view left at its preview by a newer edit
        if any(v.state in ("deferred", "busy", "stale") for v in self.views.values()):
            self.update()

    def _update(self, everything: bool) -> None:
        """One update pass. ``everything``: every view; otherwise (live edits) views out of sight in the browser
        are left stale ("deferred") and computed when they come into sight or when their data is asked for."""
        start = time.perf_counter()
        gen = self._generation
        inp = self.inputs()
        self._problems = problems(inp)
        self._show_messages(self._problems)
        if any(p.blocking and p.scope is None for p in self._problems):
            for v in self.views.values():
                v.set_state("blocked")
            self.progress.value = 0
            self.status.value = "<i>fix the inputs above to update the views</i>"
            return
        failed = self._load_models()
        if failed:
            self._problems += failed
            self._show_messages(self._problems)
        order = sorted(self.views.values(), key=lambda v: v.cost)
        self.progress.value = 0
        slow = []
        for k, view in enumerate(order):
            if self.live and self._generation != gen:
                self.status.value = "<i>newer edit: starting over…</i>"
                return
            blocked = [p for p in self._problems if p.scope == view.name and p.blocking]
            key = view.key(inp)
            outdated = key != view.shown_key or view.state in ("error", "empty")
            if blocked:
                view.set_state("blocked")
            elif outdated and not everything and not view.probe.in_sight and view.state != "empty":
                view.set_state("deferred")
            elif outdated and view.slow and not everything:
                if view.preview_key != key:
                    self.status.value = f"<i>computing {html.escape(view.title)} (first part)…</i>"
                    self._preview(view, inp, key)
                view.set_state("busy", PREVIEW_CUE if view.preview_key == key else "computing… (after the other views)")
                slow.append(view)
            elif outdated:
                self.status.value = f"<i>computing {html.escape(view.title)}…</i>"
                self._compute(view, inp, key, gen)
            elif self._generation == gen:
                view.set_state("ready")
            self.progress.value = (k + 1) / len(order)
        self.last_update_s = time.perf_counter() - start
        self.status.value = f"updated in {self.last_update_s:.2f} s"
        if slow:
            self._start_slow(gen, inp, slow)

    def _compute(self, view: View, inp: Inputs, key: tuple, gen: int) -> None:
        """Compute and draw one view for ``inp`` (its key ``key``); ready, or stale if a newer edit came."""
        view.set_state("busy", PREVIEW_CUE if view.preview_key == key else None)
        try:
            view.publish(inp, view.compute(inp))
            view.shown_key = key
            view.set_state("ready" if self._generation == gen else "stale")
        except Exception as err:  # every failure becomes a message inside its view
            view.fail(str(err) if isinstance(err, (ValueError, TypeError, ModuleNotFoundError))
                      else f"{type(err).__name__}: {err}")

    def _preview(self, view: View, inp: Inputs, key: tuple) -> None:
        """Show a slow view's preview for ``inp`` (its key ``key``), if it has one; a failure shows nothing
        (the full computation that follows reports it)."""
        try:
            result = view.preview(inp)
            if result is not None:
                view.publish(inp, result)
                view.preview_key = key
        except Exception:  # the full computation reports every failure inside its view
            view.preview_key = None

    def _start_slow(self, gen: int, inp: Inputs, views: list[View]) -> None:
        """Compute slow views (``View.slow``) in their own thread, so the next edit's update need not wait."""
        with self._lock:
            self._slow_job = (gen, inp, views)
            if self._slow_worker is None:
                self._slow_worker = threading.Thread(target=self._slow_work, daemon=True, name="surfacelab-slow")
                self._slow_worker.start()

    def _slow_work(self) -> None:
        while True:
            with self._lock:
                job, self._slow_job = self._slow_job, None
                if job is None:
                    self._slow_worker = None
                    return
            gen, inp, views = job
            for view in views:
                if self.live and self._generation != gen:  # a newer edit: its update schedules the view again
                    break
                self._compute(view, inp, view.key(inp), gen)

    def _show_messages(self, found: list[Problem]) -> None:
        """One line per problem; notices (non-blocking) in the warning colour."""
        shown = [p for p in found if p.scope is None or p.blocking]
        if not shown:
            self.message.value = ""
            return
        serious = [p.blocking or p.kind == "model" for p in shown]
        items = "".join(f"<li class='sl-problem{'' if bad else ' sl-warning'}{' sl-model-error' if p.kind == 'model' else ''}'>"
                        f"{'⚠' if bad else 'ⓘ'} {html.escape(p.text)}</li>" for p, bad in zip(shown, serious))
        self.message.value = f"<ul>{items}</ul>"

    # --- export -----------------------------------------------------------------------------

    @property
    def export_dir(self) -> Path:
        """The folder exports and saved states go to (the "export folder" box)."""
        text = self.export_box.value.strip()
        return Path(text).expanduser() if text else DEFAULT_EXPORT_DIR

    def _unique(self, stem: str, suffix: str) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.export_dir / f"{stem}-{stamp}{suffix}"
        k = 2
        while path.exists():
            path = self.export_dir / f"{stem}-{stamp}-{k}{suffix}"
            k += 1
        return path

    def _saved_note(self, path: Path) -> str:
        link = ""
        if path.stat().st_size <= LINK_LIMIT:
            mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            link = (f" · <a class='sl-download' download='{html.escape(path.name)}' "
                    f"href='data:{mime};base64,{data}'>download</a>")
        return (f"<span class='sl-info' title='{html.escape(str(path))}'>saved <code>{html.escape(path.name)}</code> "
                f"in {html.escape(str(path.parent))}</span>{link}")

    def _export_clicked(self, name: str, kind: str) -> None:
        view = self.views[name]
        try:
            path = self.export(name, self._unique(name, f".{kind}"))
            view.export_note.value = self._saved_note(path)
        except Exception as err:  # an export failure is a message next to the button, not a traceback
            view.export_note.value = f"<span class='sl-error'>⚠ export failed: {html.escape(str(err))}</span>"

    def _save_clicked(self) -> None:
        try:
            self.files_note.value = self._saved_note(self.save_state(self._unique("state", ".json")))
        except Exception as err:
            self.files_note.value = f"<span class='sl-error'>⚠ could not save: {html.escape(str(err))}</span>"

    def export(self, view: str, path: str | Path) -> Path:
        """Write one view as PNG, HTML (its figure) or CSV (its main frame), chosen by the suffix of ``path``."""
        if view not in self.views:
            raise ValueError(f"view: unknown view {view!r}; known: {', '.join(self.views)}")
        self._catch_up()
        return self.views[view].save(Path(path).expanduser())

    # --- data out ---------------------------------------------------------------------------

    def frames(self) -> dict[str, pd.DataFrame]:
        """The main DataFrame of every view that has one, by view name."""
        self._catch_up()
        return {name: v.data for name, v in self.views.items() if v.data is not None}

    def figures(self) -> dict[str, go.Figure]:
        """The figure of every view that has one, by view name."""
        self._catch_up()
        return {name: v.figure for name, v in self.views.items() if v.figure is not None}

    @property
    def results(self) -> dict[str, Any]:
        """The library result of every view that has one (``MCResult``, ``MassResult``, ...), by view name."""
        self._catch_up()
        return {name: v.result for name, v in self.views.items() if v.result is not None}

    def close(self) -> None:
        """Close the workbench and every widget in it."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        for child in self.children:
            close_tree(child)
        self.layout.close()
        super().close()


def read_state(source: str | Path | dict) -> dict:
    """Read and check a saved workbench state (a ``save_state`` file or its dict).

    Returns:
        A dict with premise, domain_premise, options, paraphrases, gold, lm, server and mlm.
    """
    if isinstance(source, dict):
        doc, where = source, "state"
    else:
        path = Path(source).expanduser()
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"source: no state file at {str(path)!r}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"source: {path.name} is not a JSON state file ({err})") from None
        where = path.name
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise ValueError(f"source: {where} is not a surfacelab workbench state (no \"format\": \"{STATE_FORMAT}\")")
    if not isinstance(doc.get("premise"), str):
        raise ValueError(f"source: {where}: premise must be a string")
    if doc.get("domain_premise") is not None and not isinstance(doc["domain_premise"], str):
        raise ValueError(f"source: {where}: domain_premise must be a string or null")
    opts = doc.get("options")
    if not isinstance(opts, list) or not all(isinstance(o, str) for o in opts):
        raise ValueError(f"source: {where}: options must be a list of strings")
    para = doc.get("paraphrases") or [""] * len(opts)
    if not isinstance(para, list) or len(para) != len(opts) or not all(isinstance(p, str) for p in para):
        raise ValueError(f"source: {where}: paraphrases must be one string per option")
    try:
        gold = check_gold(doc.get("gold"), len(opts))
    except ValueError as err:
        raise ValueError(f"source: {where}: {err}") from None
    for key in ("lm", "mlm"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise ValueError(f"source: {where}: {key} must be a model name")
    if doc.get("server") is not None and not isinstance(doc["server"], str):
        raise ValueError(f"source: {where}: server must be a URL string or null")
    return {"premise": doc["premise"], "domain_premise": doc.get("domain_premise"), "options": opts,
            "paraphrases": para, "gold": gold, "lm": doc.get("lm"), "server": doc.get("server") or None,
            "mlm": doc.get("mlm")}
