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
sight in place as soon as its numbers are ready, cheapest first, and starts over if a newer edit arrives (a
forward pass whose view the edit outdates stops at the model's next layer: ``engine.cancelled_when``);
the views out of sight follow once the typing pauses (``BACKGROUND_IDLE_S``), so they are drawn by the
time a person scrolls to them. The update threads leave one core to the browser that draws the views.

>>> wb = Workbench()                     # doctest: +SKIP
>>> wb                                   # displays the UI  # doctest: +SKIP
>>> wb.premise_box.value = "The man took a bath in the"; wb.update()   # doctest: +SKIP
>>> wb.frames()["scores"]                # doctest: +SKIP
>>> wb.save_state("bath.json"); Workbench.from_state("bath.json")      # doctest: +SKIP
"""

from __future__ import annotations

import html
import json
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from textwrap import shorten
from typing import Any, Callable, Iterator

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go
import torch

from .._checks import check_int, is_int, is_number
from ..backends.vllm import normalize_url
from ..engine import Cancelled, cancelled_when
from ..text import glued
from ..viz import check_gold
from ..models import list_presets
from ..paraphrase import load_teaching_set
from ..tasks import load as load_task
from .exporting import DEFAULT_EXPORT_DIR, Exports
from .inputs import Inputs, OptionRow, Problem, boxed, problems
from .loading import ModelSlots, server_url
from .state import STATE_FORMAT, read_state
from .views import INFO_MARK, VIEWS, View, close_tree

HERE = Path(__file__).parent
DATASETS = ("copa", "arc-challenge", "openbookqa", "commonsenseqa", "sst-2", "mmlu")
CUSTOM = "(custom)"
TEACHING = "teaching set"
SAVED = "saved states"
DEFAULT_EXAMPLE = {"premise": "The man took a bath in the", "domain_premise": " the",
                   "options": [" bathtub", " sink", " pool", " xylophone"],
                   "paraphrases": ["tub, bath tub", "basin, washbasin", "swimming pool", ""], "gold": 0}
#: Seconds without an edit before the views out of sight are computed in the background (so that a person who
#: scrolls down after typing finds them drawn, and one who keeps typing is not slowed by them).
BACKGROUND_IDLE_S = 1.0
#: The status line while a problem with the inputs blocks every view.
BLOCKED_STATUS = "<i>fix the inputs above to update the views</i>"
#: The cue of a slow view whose preview (first part) is shown while the rest computes.
PREVIEW_CUE = "first part shown · computing the rest…"
RULE = ("Each option is read exactly as typed, straight after the premise: start it with a space (<code>␣</code>) "
        "to begin a new word. Paraphrases (comma-separated) take their option's leading space. ★ marks the gold "
        "answer.")


@contextmanager
def _threads(n: int, after: int) -> Iterator[None]:
    """Run the block (an update thread's work) on ``n`` torch threads, then set ``after`` (the process default read
    on the main thread). torch keeps the setting per running thread, but also records it as the default of
    threads started later: setting ``after`` keeps that default from drifting."""
    torch.get_num_threads()  # a new thread first takes the default (lazily, at its first call): before ours
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(after)


def _check_arguments(debounce: Any, top_k: Any, export_dir: Any, server: Any) -> None:
    """``ValueError``/``TypeError`` naming the first bad ``Workbench`` argument."""
    if not is_number(debounce) or debounce < 0:
        raise ValueError(f"debounce: expected seconds >= 0, got {debounce!r}")
    check_int("top_k", top_k, 1)
    if export_dir is not None and not isinstance(export_dir, (str, Path)):
        raise TypeError(f"export_dir: expected a folder path or None, got {type(export_dir).__name__}")
    if server is not None and not isinstance(server, str):
        raise TypeError(f"server: expected a URL string or None, got {type(server).__name__}")


class Workbench(ModelSlots, Exports, w.VBox):
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
        api_key: the API key of ``server``, or of a server typed into the server box (default:
            ``$SURFACELAB_API_KEY`` for the server ``$SURFACELAB_SERVER`` names); kept in the kernel only: never
            shown, synced to the browser or written by ``save_state``. A server named by a file (a saved state, an
            example) is contacted without it until the person presses "send my API key to this server".
        key_for_server: whether ``api_key`` may go to ``server`` (``from_state`` passes False for a server that
            only the file names).
    """

    def __init__(self, lm: Any = None, mlm: Any = None, *, live: bool = True, debounce: float = 0.05,
                 top_k: int = 5, export_dir: str | Path | None = None, server: str | None = None,
                 api_key: str | None = None, key_for_server: bool = True) -> None:
        _check_arguments(debounce, top_k, export_dir, server)
        self.live, self.debounce, self.top_k = live, float(debounce), top_k
        self._api_key = api_key
        # the servers the person gave (this argument, typed in the box, confirmed): the only ones the key goes to
        self._trusted = {normalize_url(server)} if server and server.strip() and key_for_server else set()
        self._models: dict[tuple[str, str, str], Any] = {}  # (kind, name, server URL or "") -> model
        self._failed: dict[tuple[str, str, str], Problem] = {}  # models that failed to load, until retried
        self._lock = threading.RLock()
        self._computing = threading.Lock()  # one update at a time, whichever thread asks
        self._timer: threading.Timer | None = None
        self._worker: threading.Thread | None = None
        self._slow_job: tuple | None = None  # (generation, inputs, slow views, views out of sight) for the slow lane
        self._inflight: set[tuple[str, tuple]] = set()  # (view, key) being computed, by whichever thread
        self._changed = threading.Condition(self._lock)  # notified when a computation ends
        self._publishing = threading.Lock()
        self._shown_gen: dict[str, int] = {}  # per view: the edit its content is for (an older result is dropped)
        # the update threads leave a core to the browser that draws the views and to the Jupyter server
        self._torch_threads = (max(1, torch.get_num_threads() - 1), torch.get_num_threads())
        self._last_edit = 0.0
        # when the person asked for what the next pass shows (an edit, a view scrolled into sight, Score): the
        # status line's time runs from here, as the person waits, less any model load (said on its own)
        self._asked_at = time.monotonic()
        # (the models loaded, "" when none could be; seconds spent loading) of the last pass that tried a load
        self.last_load: tuple[str, float] | None = None
        self._hurry = False  # data asked for (frames, figures): the background stops waiting for a pause
        self._slow_worker: threading.Thread | None = None
        self._pending = False
        self._hold = 0
        self._generation = 0
        self._examples: dict[str, dict] = {}
        self._problems: list[Problem] = []
        self._held_status = BLOCKED_STATUS  # the status line while a problem holds the views
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
                                         "Workbench(api_key=...) or $SURFACELAB_API_KEY (for $SURFACELAB_SERVER) "
                                         "and is never shown or saved")
        self.trust_button = w.Button(description="send my API key to this server", icon="key",
                                     layout=w.Layout(display="none", width="auto"),
                                     tooltip="this server came from a file and was contacted without your key")
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
        self.fix_spaces = w.Button(description="add ␣ to every glued option",
                                   layout=w.Layout(display="none", width="auto"))
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
                            (self.fix_spaces, "sl-fix-spaces"), (self.trust_button, "sl-trust-server"),
                            (self.export_box, "sl-export-dir"),
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
            row([self.message, self.fix_spaces, self.trust_button], "sl-messages"),
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
        self.add_button.on_click(lambda _: self._add_clicked())
        self.score_button.on_click(lambda _: self._retry())
        self.fix_spaces.on_click(lambda _: self.fix_leading_spaces())
        self.save_button.on_click(lambda _: self._save_clicked())
        self.lm_picker.observe(lambda _: self._edited(0), "value")
        self.server_box.observe(self._server_changed, "value")
        self.trust_button.on_click(lambda _: self.trust_server())
        self.mlm_picker.observe(lambda _: self._edited(0), "value")
        self.source_picker.observe(lambda ch: self._source_changed(ch["new"]), "value")
        self.example_picker.observe(lambda ch: self._example_chosen(ch["new"]), "value")

    # --- editing ----------------------------------------------------------------------------

    @property
    def gold(self) -> int | None:
        """Index of the gold option, or None."""
        marked = [i for i, r in enumerate(self.rows) if r.gold.value]
        return marked[0] if marked else None

    @property
    def options(self) -> list[str]:
        """The option strings, in order (exactly as typed)."""
        return [r.option for r in self.rows]

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
            row = OptionRow(self, text, paraphrases)
            row.new = not text
            self.rows.append(row)
            self.options_box.children = tuple(self.rows)
        self._edited()

    def _add_clicked(self) -> None:
        """The "add option" button: a new row, with the cursor in its text box (ready for typing)."""
        self.add_option()
        self.rows[-1].text.focus()

    def remove_option(self, index: int) -> None:
        """Remove the option at ``index`` (0-based)."""
        if not is_int(index) or not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index!r} (there are {len(self.rows)})")
        row = self.rows.pop(index)
        self.options_box.children = tuple(self.rows)
        close_tree(row)
        self._edited()

    def move_option(self, index: int, delta: int) -> None:
        """Move the option at ``index`` by ``delta`` places (clamped to the list)."""
        if not is_int(index) or not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index!r} (there are {len(self.rows)})")
        j = min(max(index + delta, 0), len(self.rows) - 1)
        self.rows.insert(j, self.rows.pop(index))
        self.options_box.children = tuple(self.rows)
        self._edited()

    def fix_leading_spaces(self) -> int:
        """Start every option that is glued to the premise with a space; returns how many were changed."""
        premise = self.premise_box.value
        bad = [r for r in self.rows if glued(premise, r.option)]
        with self._holding():
            for r in bad:
                r.text.value = boxed(" " + r.option)
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
        n = sum(glued(premise, r.option) for r in self.rows)
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
                out[f"{it['id']}: {shorten(it['premise'], 50, placeholder=' …')}"] = {
                    "premise": it["premise"], "domain_premise": it["domain_premise"],
                    "options": [f[0] for f in forms],
                    "paraphrases": [", ".join(x.strip() for x in f[1:]) for f in forms],
                    "gold": names.index(it["answer"])}
            return out
        task = load_task(source, limit=20)
        return {f"{it.id}: {shorten(it.premise, 50, placeholder=' …')}": {
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
            for view in self.views.values():  # choices and messages about the previous example
                view.forget()
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
        kwargs.setdefault("key_for_server", "server" in kwargs)  # a server only the file names gets no key
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
        self._last_edit = self._asked_at = time.monotonic()
        if not self.live:
            for v in self._stale_views():
                if v.state != "busy":
                    v.set_state("stale")
            return
        self._check_inputs(self.inputs(), keep_model_errors=True)
        if self._waiting_for_new():
            return
        for v in self._stale_views():
            if v.state != "busy":
                v.set_state("blocked" if self._blocking(v.name) else "stale")
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
            with self._computing, _threads(*self._torch_threads):
                self._update(everything=False)

    def _sighted(self, view: View, seen: bool) -> None:
        """A view left for later by a live update came into sight: update it now."""
        if seen and view.state in ("deferred", "stale") and self.live:
            self._asked_at = time.monotonic()
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
        self._asked_at = time.monotonic()
        with self._computing:
            self._update(everything=True)

    def _catch_up(self) -> None:
        """Bring views that a live update left for later (out of sight, or in the slow lane) up to date before
        handing out data."""
        worker = self._slow_worker
        if worker is not None and worker is not threading.current_thread():
            self._hurry = True
            try:
                worker.join()
            finally:
                self._hurry = False
        # deferred (out of sight), or a slow view left at its preview by a newer edit
        if any(v.state in ("deferred", "busy", "stale") for v in self.views.values()):
            self.update()

    def _update(self, everything: bool) -> None:
        """One update pass. ``everything``: every view; otherwise (live edits) views out of sight in the browser
        are left stale ("deferred") and computed after the others, in the background once the edits pause
        (``BACKGROUND_IDLE_S``), or at once when they come into sight or their data is asked for."""
        asked = self._asked_at
        gen = self._generation
        inp = self.inputs()
        if self._check_inputs(inp):
            if not self._waiting_for_new():
                for v in self.views.values():
                    v.set_state("blocked")
            self.progress.value = 0
            return
        failed = self._load_models()
        start = asked + (self.last_load[1] if self.last_load else 0.0)  # the wait, less the load
        if failed:
            self._problems += failed
            self._show_messages(self._problems)
        order = sorted(self.views.values(), key=lambda v: v.cost)
        self.progress.value = 0
        slow, later = [], []
        worked = False
        for k, view in enumerate(order):
            if self.live and self._generation != gen:
                self.status.value = "<i>newer edit: starting over…</i>"
                return
            blocked = self._blocking(view.name)  # every view's own (none block them all here)
            key = view.key(inp)
            outdated = key != view.shown_key or view.state in ("error", "empty")
            if (view.name, key) in self._inflight and not everything:
                pass  # being computed in the background: it shows the result when done
            elif blocked:
                view.set_state("blocked")
            elif outdated and not everything and not view.probe.in_sight and view.state != "empty":
                view.set_state("deferred")
                later.append(view)
            elif outdated and view.slow and not everything:
                if view.preview_key != key:
                    self.status.value = f"<i>computing {html.escape(view.title)} (first part)…</i>"
                    self._preview(view, inp, key, gen)
                    worked = True
                view.set_state("busy", PREVIEW_CUE if view.preview_key == key else "computing… (after the other views)")
                slow.append(view)
            elif outdated:
                self.status.value = f"<i>computing {html.escape(view.title)}…</i>"
                self._compute(view, inp, key, gen, wait=everything)
                worked = True
            elif self._generation == gen:
                view.set_state("ready")
            self.progress.value = (k + 1) / len(order)
        if worked or self.last_update_s is None:  # a pass that only marked views keeps the last time shown
            self.last_update_s = time.monotonic() - start
        if slow or later:
            # out of sight, the slow ones last (their first part is cheap, the rest not)
            later.sort(key=lambda v: v.slow)
            self._start_slow(gen, inp, slow, later, start)
        else:
            self._status_done(rest=False)

    def _check_inputs(self, inp: Inputs, *, keep_model_errors: bool = False) -> bool:
        """Find and show the problems of ``inp`` (on each edit too, so that a message goes as soon as its problem
        is fixed); True when one of them blocks every view. ``keep_model_errors``: keep showing a model that
        failed to load (the next update tries it again)."""
        kept = [p for p in self._problems if p.kind == "model"] if keep_model_errors else []
        self._problems = problems(inp, {i for i, r in enumerate(self.rows) if r.new}) + kept
        self._show_messages(self._problems)
        blocked = self._blocking(None)
        if blocked:
            new = self._waiting_for_new()
            self.status.value = self._held_status = f"<i>{html.escape(blocked[0].text)}</i>" if new else BLOCKED_STATUS
        elif self.status.value == self._held_status:
            self.status.value = "<i>updating…</i>"
        return bool(blocked)

    def _waiting_for_new(self) -> bool:
        """True when only option rows just added (and not typed in yet) stop the update: the views keep showing
        the numbers for the other options, undimmed, until the new one is typed."""
        blocked = self._blocking(None)
        return bool(blocked) and all(p.kind == "new" for p in blocked)

    def _blocking(self, scope: str | None) -> list[Problem]:
        """The blocking problems of the views (``scope`` None: of every view; otherwise of that view alone or of
        every view)."""
        return [p for p in self._problems if p.blocking and p.scope in (None, scope)]

    def _status_done(self, rest: bool) -> None:
        """The status line after an update: its time, and whether views are still being finished in the
        background (slow views, views out of sight)."""
        load = self.last_load
        loaded = f" · loaded {load[0]} in {load[1]:.1f} s" if load and load[0] else ""
        self.status.value = f"updated in {self.last_update_s:.2f} s{html.escape(loaded)}" + (
            " · finishing the other views in the background…" if rest else "")

    def _compute(self, view: View, inp: Inputs, key: tuple, gen: int, *, wait: bool = False) -> None:
        """Compute and draw one view for ``inp`` (its key ``key``, for edit ``gen``): ready, or stale when the inputs
        changed meanwhile (a newer update draws it). Another thread computing the same: nothing, or (``wait``) wait
        for it. A result for an older edit than the one shown is dropped."""
        with self._changed:
            while (view.name, key) in self._inflight:
                if not wait:
                    return
                self._changed.wait()
            if view.shown_key == key and view.state != "error":  # drawn meanwhile, by another thread
                return
            self._inflight.add((view.name, key))
        view.set_state("busy", PREVIEW_CUE if view.preview_key == key else None)
        try:
            with cancelled_when(None if wait else self._outdated(view, key, gen)):
                result = view.compute(inp)
            self._show(view, inp, result, key, gen)
        except Cancelled:  # a newer edit changed its inputs: the update for that edit draws it (or has drawn it)
            with self._changed:
                drawing = any(n == view.name and k != key for n, k in self._inflight)
            if not drawing and view.shown_key != view.key(self.inputs()):
                view.set_state("stale")
        except Exception as err:  # every failure becomes a message inside its view
            view.fail(str(err) if isinstance(err, (ValueError, TypeError, ModuleNotFoundError))
                      else f"{type(err).__name__}: {err}")
        finally:
            with self._changed:
                self._inflight.discard((view.name, key))
                self._changed.notify_all()

    def _outdated(self, view: View, key: tuple, gen: int) -> Callable[[], bool]:
        """A check that turns true once an edit newer than ``gen`` has changed what ``view`` depends on (its key is no
        longer ``key``): the forward passes computing it then stop (``engine.cancelled_when``)."""
        seen = {"gen": gen, "outdated": False}

        def check() -> bool:
            if self._generation != seen["gen"]:
                seen["gen"] = self._generation
                seen["outdated"] = view.key(self.inputs()) != key
            return seen["outdated"]
        return check

    def _show(self, view: View, inp: Inputs, result: Any, key: tuple, gen: int, *, preview: bool = False) -> None:
        """Draw ``result`` (for ``inp``, its key ``key``, edit ``gen``) unless the view shows a newer edit's; a full
        result leaves the view ready, or stale when the inputs changed meanwhile."""
        with self._publishing:
            if gen < self._shown_gen.get(view.name, -1):
                return
            if key != view.shown_key:  # an export's note and link were for the numbers this replaces
                view.export_note.value = ""
            view.publish(inp, result)
            self._shown_gen[view.name] = gen
            if preview:
                view.preview_key = key
            else:
                view.shown_key = key
                now = self.inputs()
                view.set_state("ready" if key == view.key(now) else
                               "blocked" if self.live and self._blocking(view.name) else "stale")

    def _preview(self, view: View, inp: Inputs, key: tuple, gen: int) -> None:
        """Show a slow view's preview for ``inp`` (its key ``key``), if it has one; a failure shows nothing
        (the full computation that follows reports it)."""
        try:
            with cancelled_when(self._outdated(view, key, gen)):
                result = view.preview(inp)
            if result is not None:
                self._show(view, inp, result, key, gen, preview=True)
        except Exception:  # the full computation reports every failure inside its view
            view.preview_key = None

    def _start_slow(self, gen: int, inp: Inputs, views: list[View], later: list[View], start: float) -> None:
        """Compute slow views (``View.slow``), then the views out of sight (``later``) once the edits pause, in
        their own thread, so the next edit's update need not wait. ``start``: when the wait for this update began
        (the status line's time then runs until the slow views in sight are done too)."""
        with self._lock:
            self._status_done(rest=True)
            self._slow_job = (gen, inp, views, later, start)
            if self._slow_worker is None:
                self._slow_worker = threading.Thread(target=self._slow_work, daemon=True, name="surfacelab-slow")
                self._slow_worker.start()

    def _slow_work(self) -> None:
        with _threads(*self._torch_threads):
            self._slow_jobs()

    def _slow_jobs(self) -> None:
        while True:
            with self._lock:
                job, self._slow_job = self._slow_job, None
                if job is None:
                    self._slow_worker = None
                    if self.status.value.startswith("updated in"):
                        self._status_done(rest=False)
                    return
            gen, inp, views, later, start = job
            for view in views:
                if self.live and self._generation != gen:  # a newer edit: its update schedules the view again
                    break
                self._compute(view, inp, view.key(inp), gen)
            else:
                if views and self._generation == gen:  # the views in sight are all done: that is the wait
                    self.last_update_s = time.monotonic() - start
                    self._status_done(rest=bool(later))
            for view in later:  # each unless drawn meanwhile (scrolled into sight)
                if not self._paused(gen):
                    break
                self._compute(view, inp, view.key(inp), gen)

    def _paused(self, gen: int) -> bool:
        """Wait until the edits have paused for ``BACKGROUND_IDLE_S`` and no update runs; False when a newer edit
        came (its update schedules the background work again)."""
        while self._generation == gen:
            left = BACKGROUND_IDLE_S - (time.monotonic() - self._last_edit)
            if self._hurry or (left <= 0 and self._worker is None):
                return True
            time.sleep(min(max(left, 0.0), 0.05) or 0.02)
        return False

    def _show_messages(self, found: list[Problem]) -> None:
        """One line per problem; notices (non-blocking) in the warning colour."""
        shown = [p for p in found if (p.scope is None or p.blocking) and p.kind != "new"]
        if not shown:
            self.message.value = ""
            return
        serious = [p.blocking or p.kind == "model" for p in shown]
        items = "".join(f"<li class='sl-problem{'' if bad else ' sl-warning'}"
                        f"{' sl-model-error' if p.kind == 'model' else ''}'>"
                        f"{'⚠' if bad else INFO_MARK} {html.escape(p.text)}</li>" for p, bad in zip(shown, serious))
        self.message.value = f"<ul>{items}</ul>"

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
        if not hasattr(self, "_lock"):  # the constructor refused its arguments (ipywidgets closes it when collected)
            super().close()
            return
        with self._lock:
            self._generation += 1  # the update threads stop at their next check
            if self._timer is not None:
                self._timer.cancel()
        for child in self.children:
            close_tree(child)
        self.layout.close()
        super().close()
