"""The Workbench: edit a premise, a domain premise and the options; see every view side by side.

Views (``surfacelab.widgets.VIEWS``; each has ``.frames``, ``.data``, ``.figure`` and exports to
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
the views out of sight follow once the typing pauses (``updates.BACKGROUND_IDLE_S``), so they are drawn by
the time a person scrolls to them. The update threads leave one core to the browser that draws the views. The
lanes, debounce and cancellation are ``updates.Updates``; this module lays out the widget and its parts (``models``,
``examples``, ``exporter``, ``lessons``: each an object with its own widgets and state, which reads the workbench
through ``host.Host``) and wires the editing.

>>> wb = Workbench()                     # doctest: +SKIP
>>> wb                                   # displays the UI  # doctest: +SKIP
>>> wb.premise_box.value = "The man took a bath in the"; wb.update()   # doctest: +SKIP
>>> wb.frames()["scores"]                # doctest: +SKIP
>>> wb.save_state("bath.json"); Workbench.from_state("bath.json")      # doctest: +SKIP
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from ..._checks import check_int, is_number
from ...chat import check_choice
from ..app import AppPolicy
from ..kit.layout import box, close_tree, stylesheet
from .examples import ExampleSource
from .exporting import Exporter
from .inputs import Inputs, OptionRow, Problem, reads
from .lessons import LessonButton
from .messages import Messages
from .options import OptionList
from .models import ModelSlots, default_server
from .state import read_state
from .status import StatusLine
from .timing import Timing
from .updates import Updates, ViewState
from .views import VIEWS, View


HERE = Path(__file__).parent
DEFAULT_EXAMPLE = {"premise": "The man took a bath in the", "domain_premise": " the",
                   "options": [" bathtub", " sink", " pool", " xylophone"],
                   "paraphrases": ["tub, bath tub", "basin, washbasin", "swimming pool", ""], "gold": 0}
#: The views' columns: two where each gets 480 px (a 1440 px screen with the file browser open), else one; never
#: three (a view is read at half the width at most).
COLUMNS = "repeat(auto-fit, minmax(min(100%, max(480px, calc(50% - 5px))), 1fr))"
#: What the workbench shows in place of its views until the first is computed (``hint`` says it another way).
EMPTY_LINE = "Nothing computed yet: press <b>Score</b> to compute every view of the item above."
RULE = ("Options are read as typed, straight after the premise: start one with a space (<code>␣</code>) for a new "
        "word; paraphrases (comma-separated) take its leading space. ★ marks the gold.")


def _check_arguments(debounce: Any, top_k: Any, export_dir: Any, server: Any, policy: AppPolicy) -> None:
    """``ValueError``/``TypeError`` naming the first bad ``Workbench`` argument."""
    if not is_number(debounce) or debounce < 0:
        raise ValueError(f"debounce: expected seconds >= 0, got {debounce!r}")
    check_int("top_k", top_k, 1)
    if export_dir is not None and not isinstance(export_dir, (str, Path)):
        raise TypeError(f"export_dir: expected a folder path or None, got {type(export_dir).__name__}")
    if export_dir is not None and policy.app:
        raise ValueError("export_dir: in the app every visitor writes into a folder of their own; leave it out")
    if server is not None and not isinstance(server, str):
        raise TypeError(f"server: expected a URL string or None, got {type(server).__name__}")


class Workbench(w.VBox):
    """Side-by-side views of one multiple-choice item; edit anything and every view follows.

    Args:
        lm: a loaded ``LM`` or a preset/path for ``load_lm`` (default: the default causal preset).
        mlm: a loaded ``MLM`` or a preset/path for ``load_mlm`` (default: the default masked preset).
        live: recompute (debounced) after every edit; otherwise only on Score / ``update()``.
        debounce: seconds of quiet before a live update.
        top_k: alternatives per token in the token view.
        export_dir: the folder the export buttons and "save state" write to (shown and editable in the
            widget); None: ``DEFAULT_EXPORT_DIR`` (``~/surfacelab-exports``), or in the app the visitor's own folder
            (hidden: the files come back through their download links).
        server: URL of a vLLM (OpenAI-compatible) server that scores the causal LM (``load_lm(lm,
            server=...)``); shown and editable in the "server" box next to the model picker. None: in-process,
            unless no ``lm`` is given either: then the server ``$SURFACELAB_SERVER`` names, if any (``make app``).
        api_key: the API key of ``server``, or of a server typed into the server box (default:
            ``$SURFACELAB_API_KEY`` for the server ``$SURFACELAB_SERVER`` names); kept in the kernel only: never
            shown, synced to the browser or written by ``save_state``. A server named by a file (a saved state, an
            example) is contacted without it until the person presses "send my API key to this server".
        key_for_server: whether ``api_key`` may go to ``server`` (``from_state`` passes False for a server that
            only the file names).
        chat_template: the premise and the domain premise as chat turns, as in ``score`` (None: plain text); the "chat
            template" box turns it on and off, the line under the domain premise shows the strings the model reads.
        policy: what a visitor of ``make app`` may do (``app.AppPolicy``); None: ``AppPolicy.from_env()``. In the
            app the server box is read-only (the causal LM stays where it was loaded: nothing typed or read from a
            file is contacted), files go to the visitor's own folder, and the inputs are capped in size.
    """

    def __init__(self, lm: Any = None, mlm: Any = None, *, live: bool = True, debounce: float = 0.05,
                 top_k: int = 5, export_dir: str | Path | None = None, server: str | None = None,
                 api_key: str | None = None, key_for_server: bool = True, policy: AppPolicy | None = None,
                 chat_template: Any = None) -> None:
        check_choice(chat_template)
        self.chat_choice = True if chat_template in (None, False) else chat_template  # what the box turns on
        self.policy = AppPolicy.from_env() if policy is None else policy
        if not isinstance(self.policy, AppPolicy):
            raise TypeError(f"policy: expected an AppPolicy or None, got {type(policy).__name__}")
        _check_arguments(debounce, top_k, export_dir, server, self.policy)
        self.live, self.debounce, self.top_k = live, float(debounce), top_k
        self.updates = Updates(self)  # the update lanes: debounce, background runs, cancellation
        self.publishing = self.updates.publishing
        self._hold = 0
        self._build_inputs(chat=chat_template not in (None, False))
        self.option_list = OptionList(self)
        self.messages = Messages(self)
        self.message = self.messages.line  # the line a part or a lesson reads
        self.models = ModelSlots(self, lm, mlm, server=default_server(lm, server), api_key=api_key,
                                 key_for_server=key_for_server, policy=self.policy)
        self.examples = ExampleSource(self, self.policy)
        self.exporter = Exporter(self, self.policy, export_dir)
        self.lessons = LessonButton(self, self.policy, lambda: Workbench(
            lm=self.lm, mlm=self.mlm, live=False, top_k=self.top_k, policy=self.policy))
        self.views: dict[str, View] = {name: cls(self) for name, cls in VIEWS.items()}
        grid = w.GridBox([v.box for v in self.views.values()],
                         layout=w.Layout(grid_template_columns=COLUMNS,
                                         grid_gap="10px", width="100%"))
        grid.add_class("sl-views")
        # until a view is computed, one line in place of six empty views (``report`` shows the views)
        self.empty_line = w.HTML(f"<div class='sl-empty-text'>{EMPTY_LINE}</div>")
        self.empty_line.add_class("sl-empty")
        grid.layout.display = "none"
        self.grid = grid
        super().__init__([stylesheet(HERE / "workbench.css"), self._layout(), self.empty_line, grid])
        self.add_class("sl-workbench")
        with self.holding():
            self.set_options(DEFAULT_EXAMPLE["options"], DEFAULT_EXAMPLE["paraphrases"], gold=DEFAULT_EXAMPLE["gold"])
        for view in self.views.values():
            view.probe.observe(lambda ch, view=view: self.updates.sighted(view, ch["new"]), "in_sight")
        self.status.value = "<i>not computed yet: press Score</i>" if not live else ""

    @property
    def lm(self) -> Any:
        """The causal LM the views score with (``models.lm``)."""
        return self.models.lm

    @property
    def mlm(self) -> Any:
        """The masked LM of the PLL view (``models.mlm``)."""
        return self.models.mlm

    @property
    def holding_edits(self) -> bool:
        """True while several fields change together (``holding``): their edits make one update after the last."""
        return self._hold > 0

    def _build_inputs(self, chat: bool) -> None:
        """The workbench's own widgets: premise, domain premise, the options and their buttons, progress, status and
        messages (its parts make theirs)."""
        self.premise_box = w.Textarea(value=DEFAULT_EXAMPLE["premise"], description="premise",
                                      layout=w.Layout(height="52px"))
        self.domain_box = w.Text(value=DEFAULT_EXAMPLE["domain_premise"], description="domain premise",
                                 placeholder="empty: no Unc / DC-PMI")
        self.chat_box = w.Checkbox(value=chat, indent=False, description="chat template")
        self.chat_line = w.HTML("")
        self.score_button = w.Button(description="Score", icon="play", button_style="primary")
        self.status_line = StatusLine()
        self.progress, self.status = self.status_line.progress, self.status_line.status
        for widget, cls in [(self.premise_box, "sl-premise"), (self.domain_box, "sl-domain-premise"),
                            (self.chat_box, "sl-chat"), (self.chat_line, "sl-chat-reads"),
                            (self.score_button, "sl-score")]:
            widget.add_class(cls)
        self.premise_box.observe(lambda _: self.edited(), "value")
        self.domain_box.observe(lambda _: self.edited(), "value")
        self.chat_box.observe(lambda _: self.edited(), "value")
        self.score_button.on_click(lambda _: self.score())

    def _layout(self) -> w.VBox:
        """The controls top to bottom: the title with the models, the examples, the inputs, the actions with the
        status, the messages, the files. The messages have a place of their own that keeps its height, so a message
        that comes and goes while one types never moves the views below."""
        models, examples, exporter, lessons = self.models, self.examples, self.exporter, self.lessons
        title = box([w.HTML("<h3>surfacelab workbench</h3>"), models.lm_picker, models.server_box, models.mlm_picker],
                    "sl-pickers")
        title.add_class("sl-models")
        controls = box([
            title,
            box([examples.source_picker, examples.item_picker], "sl-pickers"), examples.origin_row,
            self.premise_box, box([self.domain_box, self.chat_box], "sl-domain-row"), self.chat_line,
            w.HTML(f"<div class='sl-rule'>{RULE}</div>"), self.option_list.box,
            box([self.option_list.add_button, self.score_button, self.status_line.box], "sl-actions"),
            box([self.message, self.option_list.fix_button, models.trust_button], "sl-messages"),
            box([exporter.folder_box, exporter.save_button, lessons.picker, lessons.button, exporter.note],
                "sl-files"),
        ], "sl-controls", vertical=True)
        return controls

    # --- editing ----------------------------------------------------------------------------

    @property
    def rows(self) -> list[OptionRow]:
        """The option rows, in order (``option_list.rows``)."""
        return self.option_list.rows

    @property
    def options(self) -> list[str]:
        """The option strings, in order (exactly as typed)."""
        return self.option_list.options

    @property
    def gold(self) -> int | None:
        """Index of the gold option, or None."""
        return self.option_list.gold

    def set_options(self, options: list[str], paraphrases: list[str] | None = None, *, gold: int | None = None) -> None:
        """Replace every option (and their paraphrases, as "form, form" strings); mark ``gold`` (an index or None)
        (``option_list.set``; more options than the policy's cap are refused before any row is made)."""
        self.option_list.set(options, paraphrases, gold=gold)

    def add_option(self, text: str = "", paraphrases: str = "") -> None:
        """Append an option row (``option_list.add``)."""
        self.option_list.add(text, paraphrases)

    def remove_option(self, index: int) -> None:
        """Remove the option at ``index`` (0-based)."""
        self.option_list.remove(index)

    def move_option(self, index: int, delta: int) -> None:
        """Move the option at ``index`` by ``delta`` places (clamped to the list)."""
        self.option_list.move(index, delta)

    def fix_leading_spaces(self) -> int:
        """Start every option that is glued to the premise with a space; returns how many were changed."""
        return self.option_list.fix_leading_spaces()

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Suppress live updates while several fields change together (one update follows the last edit)."""
        self._hold += 1
        try:
            yield
        finally:
            self._hold -= 1

    # --- updating ---------------------------------------------------------------------------

    def inputs(self) -> Inputs:
        """The current state as an ``Inputs`` snapshot."""
        dom = self.domain_box.value
        return Inputs(self.premise_box.value, dom if dom.strip() else None, tuple(self.options),
                      tuple(r.forms() for r in self.rows), self.gold, self.chat_choice if self.chat_box.value else None)

    def read_premise(self) -> str:
        """The premise as the causal LM reads it, and the chat line that shows it (``inputs.reads``)."""
        premise, self.chat_line.value = reads(self.lm, self.inputs())
        return premise

    def problems_for(self, view: str) -> list[Problem]:
        """The notices of the last update that concern ``view``."""
        return self.messages.for_view(view)

    def show_messages(self, found: list[Problem]) -> None:
        """One line per problem in the messages line (``messages.show``)."""
        self.messages.show(found)

    @property
    def last_update_s(self) -> float | None:
        """Seconds from the last request (an edit, Score) until the views in sight were drawn, less any model load
        (None before the first update)."""
        return self.updates.last_update_s

    def _stale_views(self) -> list[View]:
        """Views whose inputs are newer than what they show."""
        inp = self.inputs()
        pickers = self.models.changed()
        out = []
        for v in self.views.values():
            if v.state == ViewState.EMPTY:
                continue
            changed = any(pickers.get(n, False) for n in v.needs)
            if changed or v.state in (ViewState.ERROR, ViewState.BLOCKED) or v.key(inp) != v.shown_key:
                out.append(v)
        return out

    def edited(self, delay: float | None = None) -> None:
        """An input changed: mark the views it outdates (stale, or blocked by a problem) and, when live, update
        them after the debounce (``delay``: after that many seconds instead)."""
        self.option_list.refresh()
        if self._hold:
            return
        self.updates.edit()
        if not self.live:
            for v in self._stale_views():
                if v.state != ViewState.BUSY:
                    v.set_state(ViewState.STALE)
            return
        self.messages.check(self.inputs(), keep_model_errors=True)
        if self.messages.waiting_for_new():
            return
        for v in self._stale_views():
            if v.state != ViewState.BUSY:
                v.set_state(ViewState.BLOCKED if self.messages.blocking(v.name) else ViewState.STALE)
        self.updates.schedule(self.debounce if delay is None else delay)

    def wait(self, timeout: float = 120.0) -> None:
        """Block until pending live updates have finished (for scripts and tests)."""
        self.updates.wait(timeout)

    def update(self) -> None:
        """Recompute and redraw every view now (synchronously); problems become messages in the widget."""
        self.models.forget_failures()
        self.updates.update()

    def score(self) -> None:
        """The Score button: try models that failed to load again, then update (in the background)."""
        self.models.forget_failures()
        self.updates.request()

    def catch_up(self) -> None:
        """Bring the views a live update left for later (out of sight, in the slow lane, or at a preview when a
        newer edit came) up to date: what ``frames``, ``figures``, ``results`` and ``export`` do first."""
        if self.updates.behind():
            self.update()

    # --- what the update lanes ask of the workbench (``scheduler.Host``) --------------------

    def held(self, inp: Inputs) -> bool:
        """Show the problems of ``inp``; True when one holds every view (they are marked blocked, unless only an
        option row just added waits for its text: the views keep their numbers meanwhile)."""
        if not self.messages.check(inp):
            return False
        if not self.messages.waiting_for_new():
            for v in self.views.values():
                v.set_state(ViewState.BLOCKED)
            self._show_views()  # each view says what it waits for
        self.status_line.working(False)
        return True

    def prepare(self, timing: Timing) -> float:
        """Load the models the pickers ask for (a failure is a message; the views keep their model); the loads go
        into ``timing`` (with those made before the first update); returns the seconds this pass spent loading,
        which the update time leaves out (the status line names the load)."""
        self.messages.add(self.models.load())
        timing.loads = self.models.take_loads()
        if any(not load.before for load in timing.loads):  # the reads lines and the chat line: the new model's
            self.option_list.refresh()
        return sum(load.seconds for load in timing.loads if not load.before)

    def blocks(self, view: str) -> bool:
        """A problem with the inputs holds ``view``."""
        return bool(self.messages.blocking(view))

    def report(self, fraction: float | None, note: str | None) -> None:
        """An update's progress: the bar (``fraction``) and the status line (``note``); the first shows the views."""
        if fraction is not None:
            self._show_views()
        self.status_line.report(fraction, note)

    def _show_views(self) -> None:
        """The views in place of the line that stands for them before the first update."""
        if self.grid.layout.display == "none":
            self.empty_line.layout.display, self.grid.layout.display = "none", None

    def hint(self, html_line: str) -> None:
        """What the line in place of the views says until one is computed (HTML; e.g. an explorer's "click a
        row")."""
        self.empty_line.value = f"<div class='sl-empty-text'>{html_line}</div>"

    def report_done(self, rest: bool) -> None:
        """The status line after an update: its time, the models loaded, and whether views are still being
        finished in the background (``rest``: slow views, views out of sight); where the time went beside it."""
        self.status_line.done(self.last_update_s, self.updates.timing, rest)

    def report_background_done(self) -> None:
        """The background has finished: the status line drops its "finishing" note (unless it says more now)."""
        self.status_line.background_done(self.last_update_s, self.updates.timing)

    def report_error(self, err: BaseException) -> None:
        """An update failed outside any view: the status line says why (the next edit tries again)."""
        self.status_line.failed(err)

    def figure_drawn(self, seconds: float, waited: float) -> None:
        """The browser drew a view's figure in ``seconds`` (after ``waited`` for plotly.js): the breakdown of the
        update it shows counts it."""
        self.status_line.drawn(self.updates.timing, seconds, waited)

    # --- the workbench's verbs (each done by one of its parts) --------------------------------

    def load_example(self, example: dict) -> None:
        """Fill every field from ``example`` (premise, domain_premise, options, paraphrases, gold; and lm, server,
        mlm when given, as in a saved state): ``examples.load``."""
        self.examples.load(example)

    def load_item(self, premise: str, options: list[str], *, domain_premise: str | None = None,
                  gold: int | None = None, source: str | None = None,
                  previous: Callable[[], None] | None = None, next: Callable[[], None] | None = None) -> None:
        """Load one item of a dataset run exactly as scored, with where it came from (``source``) and previous /
        next buttons that call ``previous`` / ``next`` (``examples.load_item``)."""
        self.examples.load_item(premise, options, domain_premise=domain_premise, gold=gold, source=source,
                                previous=previous, next=next)

    def step_item(self, delta: int) -> None:
        """Go to the previous (-1) or next (1) item of the list ``load_item`` came from."""
        self.examples.step(delta)

    def state(self) -> dict:
        """The inputs, the model names and the server URL (never an API key) as a saved state (``examples.state``)."""
        return self.examples.state()

    def save_state(self, path: str | Path) -> Path:
        """Write the state as JSON to ``path`` (a ``.json`` file); ``Workbench.from_state`` reads it back."""
        return self.examples.save_state(path)

    def load_state(self, source: str | Path | dict) -> None:
        """Load a saved state (a path written by ``save_state`` or its dict) into this workbench."""
        self.examples.load(read_state(source))

    @classmethod
    def from_state(cls, source: str | Path | dict, **kwargs: Any) -> Workbench:
        """A new Workbench with the models and inputs of a saved state (``lm=``/``mlm=`` and other keyword
        arguments of ``Workbench`` override). In the app the state's server and models go through ``load_example``:
        those the app does not have are ignored with a note."""
        state = read_state(source)
        kwargs.setdefault("key_for_server", "server" in kwargs)  # a server only the file names gets no key
        kwargs["policy"] = kwargs.get("policy") or AppPolicy.from_env()
        if kwargs["policy"].app:
            bench = cls(**kwargs)
            bench.load_example(state)
            return bench
        for key in ("lm", "mlm", "server"):
            kwargs.setdefault(key, state.get(key))
        bench = cls(**kwargs)
        bench.load_example({k: v for k, v in state.items() if k not in ("lm", "mlm", "server")})
        return bench

    def export(self, view: str, path: str | Path) -> Path:
        """Write one view as PNG or HTML (its figures under the header of what they show) or CSV (its main frame),
        chosen by the suffix of ``path`` (``exporter.export``)."""
        return self.exporter.export(view, path)

    def export_lesson(self, items: Any = "item", path: str | Path | None = None, **kwargs: Any) -> Path:
        """Write a lesson page computed with this workbench's models (``lessons.export``: ``items`` "item",
        "teaching" or anything ``sl.lesson`` takes; ``progress``, ``check``)."""
        return self.lessons.export(items, path, **kwargs)

    def trust_server(self, url: str | None = None) -> None:
        """Let the API key go to ``url`` (default: the server box's), a server that came from a file
        (``models.trust``)."""
        self.models.trust(url)

    # --- data out ---------------------------------------------------------------------------

    def frames(self) -> dict[str, pd.DataFrame]:
        """The main DataFrame of every view that has one, by view name."""
        self.catch_up()
        return {name: v.data for name, v in self.views.items() if v.data is not None}

    def figures(self) -> dict[str, go.Figure]:
        """The figure of every view that has one, by view name."""
        self.catch_up()
        return {name: v.figure for name, v in self.views.items() if v.figure is not None}

    @property
    def results(self) -> dict[str, Any]:
        """The library result of every view that has one (``MCResult``, ``MassResult``, ...), by view name."""
        self.catch_up()
        return {name: v.result for name, v in self.views.items() if v.result is not None}

    def close(self) -> None:
        """Close the workbench and every widget in it."""
        if not hasattr(self, "updates"):  # the constructor refused its arguments (ipywidgets closes it when collected)
            super().close()
            return
        self.updates.close()  # the update threads stop at their next check
        self.lessons.close()  # a lesson being built stops at its next item
        for child in self.children:
            close_tree(child)
        self.layout.close()
        super().close()
