"""The Explorer: a dataset run beside the Workbench. Run a task (or open runs, or an lm-eval samples log), see the
accuracy per scorer and run, who rescues whom and the verdict labels (each a filter), the items in a sortable,
searchable table paged in the kernel (``table.ItemTable``), and open any row in the workbench; edit the template and
run the same items again beside the baseline (McNemar, flips).

Nothing here computes a score: runs are ``explore.evaluate_in_chunks`` (in the background, on a ``Runner``: the
kernel stays free, Cancel stops the forward passes and keeps the chunks done) or ``logs.from_log``; the table,
filters, matrix, template edits, comparison and sessions are ``surfacelab.explore``. The explorer owns its parts,
each an object with its own widgets and state that reads the explorer: ``ablation`` (the template panel), ``files``
(sessions and exports) and ``opener`` (a row opens in the workbench).

>>> ex = Explorer(lm, task="arc-challenge", n=200)     # doctest: +SKIP
>>> ex.run(); ex.wait()                                 # doctest: +SKIP
>>> ex.filter(right=["paper:dcpmi"], wrong=["paper:lm"]); ex.open_row(0)   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import html
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import psutil

from ... import explore, rows, tasks
from ..._checks import check_int
from ...runs import EvalResult
from ...explore import CHUNK, Progress
from ...logs import from_log
from ..app import AppPolicy
from ..kit.layout import box, classed, close_tree, message_html, stylesheet
from ..kit.runner import Job, Runner
from .ablation import AblationPanel
from .files import ExplorerFiles
from .opening import Opener
from .summary import Summary
from .table import ItemTable

HERE = Path(__file__).parent
ANY = "any"
#: Seconds between the first two redraws of the rows while a run goes on; each later wait is twice the one before, up
#: to ``REDRAW_MAX_S``. A redraw after the first is left out when the run will end within that wait: its end draws
#: every row. (The table is rebuilt in the browser at each redraw, on the CPU the run shares; the progress line
#: follows every batch.)
REDRAW_S = 2.0
REDRAW_MAX_S = 24.0
#: Seconds a button that reads the text fields waits before it reads them: ipykernel (7.4) handles a widget's messages
#: on the subshell that last wrote to it, so a field's new value, sent before the click, can be handled after it, on
#: another thread.
FIELDS_S = 0.2


def kernel_memory() -> str:
    """A line on the memory this kernel holds (resident), beside the runs' lines: a whole dataset's run is large."""
    rss = psutil.Process().memory_info().rss
    return f"<span class='sl-hint sl-x-memory'>kernel memory: {rss / 2**20:,.0f} MB resident</span>"


def _head(run: EvalResult, k: int) -> EvalResult:
    """The first ``k`` items of ``run`` as a run (no bootstrap: a view of a run in progress)."""
    keep_items, keep_scores = run.items["item"] < k, run.scores["item"] < k
    part = dataclasses.replace(run, items=run.items[keep_items.to_numpy()].reset_index(drop=True),
                               scores=run.scores[keep_scores.to_numpy()].reset_index(drop=True))
    return explore.combine([part], n_boot=0)


class Explorer(w.VBox):
    """A dataset's runs side by side, filtered down to the item worth opening in the workbench (see the module).

    Args:
        lm: the causal LM of the runs (an ``LM``, a preset name, or None: ``load_lm()`` when a run needs it).
        workbench: the ``Workbench`` a row click loads the item into (None: one is made when first needed and
            shown below the explorer; one given is displayed by its owner: a click says so when it is not on the
            page). The click scrolls it into view in the browser.
        task, split, n, template, domain_premise: the local data source (``tasks.load(task, split, limit=n,
            variant=template)``; ``template`` a family name or a ``Template``; ``domain_premise``, plain text as the
            workbench's, replaces the template's for every item: the ablation panel's fields take patterns).
        scorers: the scorers of a run.
        runs: runs to open (an ``EvalResult`` or ``{name: EvalResult}`` of the same items); no model needed.
        log: another framework's log, a file or folder (``logs.from_log``: lm-eval's samples log, ...), opened as the
            run named after its framework ("lm-eval"); no model needed.
        chunk: items of a run's second chunk (``explore.chunk_sizes``: later ones grow; rows appear after each).
        folder: where sessions and exports go (editable in the widget); in the app, the visitor's own folder
            (hidden: exports come back through their download links).
        policy: what a visitor of ``make app`` may do (``app.AppPolicy``; None: ``AppPolicy.from_env()``): in the
            app, files in the visitor's own folder and at most ``caps.items`` items per run.
        chat_template: runs under a chat template, as ``evaluate``'s (a row opens with the strings it scored).
    """

    def __init__(self, lm: Any = None, *, workbench: Any = None, task: str = "arc-challenge", split: str | None = None,
                 n: int = 200, template: Any = None, domain_premise: str | None = None, chat_template: Any = None,
                 scorers: Sequence[str] = ("lm", "per_char", "dcpmi"), runs: Any = None, log: str | Path | None = None,
                 chunk: int = CHUNK, folder: str | Path | None = None, policy: AppPolicy | None = None) -> None:
        self.policy = AppPolicy.from_env() if policy is None else policy
        if not isinstance(self.policy, AppPolicy):
            raise TypeError(f"policy: expected an AppPolicy or None, got {type(policy).__name__}")
        if folder is not None and self.policy.app:
            raise ValueError("folder: in the app every visitor writes into a folder of their own; leave it out")
        self.lm, self.scorers, self.chunk, self.chat_template = lm, list(scorers), chunk, chat_template
        self.runs: dict[str, EvalResult] = {}
        self.sources: dict[str, dict] = {}
        self.tasks: dict[str, tasks.Task] = {}  # run name -> the task it scored (for template edits)
        self.last_error: str | None = None
        self.lock = threading.RLock()  # the runs, sources and tasks, between a run's thread and the kernel's
        self._filters: dict[str, w.Dropdown] = {}
        self._hold = False
        self._template = template if template is not None and not isinstance(template, str) else None
        self.runner = Runner("explorer", on_error=self._failed)
        self.running = False  # a run is scoring (the rows it shows are not the ones to prefetch yet)
        self._build(task, split, n, template if isinstance(template, str) else "paper", domain_premise)
        self.table = ItemTable(self)
        self.summary = Summary(self)
        self.ablation = AblationPanel(self)
        self.files = ExplorerFiles(self, self.policy, folder)
        self.opener = Opener(self, workbench, self.policy)
        super().__init__(self._layout())
        self.add_class("sl-explorer")
        try:
            if log is not None:
                run = from_log(log)
                self.put(run.meta["reader"], run, {"log": str(log), "reader": run.meta["reader"]})
                self.ablation.name_log(run.meta["reader"])
            elif runs is not None:
                opened = {"run": runs} if isinstance(runs, EvalResult) else dict(runs)
                explore.columns(opened)
                for name, run in opened.items():
                    self.put(name, run, {"opened": True})
        except (ValueError, TypeError, OSError) as err:
            self.show_error(err)

    # --- widgets ----------------------------------------------------------------------------

    def _build(self, task: str, split: str | None, n: int, family: str, domain: str | None) -> None:
        wide = {"description_width": "initial"}  # labels in full ("domain premise", not "domain pr…")
        self.task_box = w.Text(value=task, description="task", style=wide)
        self.split_box = w.Text(value=split or "", description="split", placeholder="default", style=wide)
        self.n_box = w.IntText(value=n, description="items", style=wide)
        self.family_picker = w.Dropdown(options=list(tasks.registry.FAMILIES), value=family,
                                        description="template", style=wide)
        self.domain_box = w.Text(value=domain or "", description="domain premise", placeholder="the template's",
                                 style=wide, tooltip="the same text before every option's prior, as typed (the "
                                                     "workbench's domain premise); patterns over fields are the "
                                                     "template ablation's")
        self.name_box = w.Text(value="", description="run name", placeholder="the template family", style=wide)
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.cancel_button = w.Button(description="Cancel", icon="stop", disabled=True)
        self.progress = w.FloatProgress(value=0, min=0, max=1)
        self.progress_line = w.HTML("")
        self.message = w.HTML("")
        self.run_lines = w.HTML("")
        self.disagree_box = w.Checkbox(value=False, description="scorers disagree", indent=False)
        self.flipped_picker = w.Dropdown(options=[("—", None)], value=None, description="flipped", style=wide)
        self.label_picker = w.Dropdown(options=[ANY], value=ANY, description="label", style=wide)
        # the item's task, where a run holds several (``explore.group_column``: a log folder's tasks, MMLU's subjects)
        self.group_picker = w.Dropdown(options=[(ANY, None)], value=None, description="task", style=wide)
        self.group_picker.layout.display = "none"
        self.clear_button = w.Button(description="clear filters", icon="times")
        self.filter_box = w.HBox([])
        classed([(self.task_box, "sl-x-task"), (self.split_box, "sl-x-split"), (self.n_box, "sl-x-n"),
                 (self.family_picker, "sl-x-family"), (self.domain_box, "sl-x-domain"), (self.name_box, "sl-x-name"),
                 (self.run_button, "sl-x-run-button"), (self.cancel_button, "sl-x-cancel"),
                 (self.progress, "sl-x-progress"), (self.progress_line, "sl-x-progress-line"),
                 (self.message, "sl-x-message"), (self.filter_box, "sl-x-columns"), (self.group_picker, "sl-x-group")])
        self.run_button.on_click(lambda _: self.after_fields(self.run))
        self.cancel_button.on_click(lambda _: self.cancel())
        for widget in (self.disagree_box, self.flipped_picker, self.label_picker, self.group_picker):
            widget.observe(lambda _: self._filter_changed(), "value")
        self.clear_button.on_click(lambda _: self.filter())

    def _layout(self) -> list:
        """The explorer top to bottom: the source and Run; once a run is open, the summary (accuracy beside who
        rescues whom and the labels), the filters, the item table, then the ablation and files (below the table,
        so that the table and the workbench under the explorer stay close)."""
        self.results = box([
            self.summary.box,
            box([w.HTML("<b>filter</b>"), self.filter_box, self.disagree_box, self.flipped_picker, self.label_picker,
                 self.group_picker, self.clear_button], "sl-x-filters"),
            box([self.table.count, w.HTML("<span class='sl-hint'>click a row to open the item in the workbench below "
                                    "(previous / next there step through these rows)</span>")], "sl-x-table-head"),
            self.table.widget, *self.ablation.widgets(), *self.files.widgets()], "sl-x-results", vertical=True)
        self.results.layout.display = "none"  # nothing to show before a run
        return [stylesheet(HERE / "explorer.css"), self.opener.reveal, w.HTML("<h3>surfacelab explorer</h3>"),
                box([self.task_box, self.split_box, self.n_box, self.family_picker, self.domain_box, self.name_box],
                    "sl-x-source"),
                box([self.run_button, self.cancel_button, self.progress, self.progress_line], "sl-x-run"),
                self.message, self.run_lines, self.results]

    # --- runs -------------------------------------------------------------------------------

    def after_fields(self, action: Any) -> None:
        """Call ``action`` (a button's) in ``FIELDS_S`` seconds, once the field values sent before the click are in."""
        timer = threading.Timer(FIELDS_S, action)
        timer.daemon = True
        timer.start()

    def get_lm(self) -> Any:
        """The causal LM (loaded on first use when given by name or not at all)."""
        from ...models import LM, load_lm

        if not isinstance(self.lm, LM):
            self.lm = load_lm(self.lm) if self.lm is not None else load_lm()
        return self.lm

    def load_task(self) -> tasks.Task:
        """The task the source fields name (a ``ValueError`` naming what is wrong, or the cap on items it is over)."""
        n = check_int("n", self.n_box.value, 1)
        self.policy.caps.check_items(n)
        task = tasks.load(self.task_box.value.strip(), self.split_box.value.strip() or None, limit=n,
                          variant=self.family_picker.value)
        if self._template is not None:
            task = task.with_template(self._template)
        if self.domain_box.value:
            task = explore.retemplate(task, domain_premise=explore.as_pattern(self.domain_box.value))
        return task

    def run(self, name: str | None = None) -> Job | None:
        """Run the source fields' task in the background (beside the open runs when it has their items, otherwise
        in their place, which the message names); None when the source is refused (the message says why). While
        the fields name an opened log's items, the log's own strings are scored again with the LM, beside its run."""
        base = self.ablation.log_run()
        if base is not None:
            name = name or self.name_box.value.strip() or "rescored"
            if name == base:
                self.show_error(ValueError(f"run name: {name!r} is the log's run; choose another"))
                return None
            return self.ablation.rescore_log(name, base)
        try:
            task = self.load_task()
        except (ValueError, TypeError, OSError, KeyError) as err:
            self.show_error(err)
            return None
        name = name or self.name_box.value.strip() or self.family_picker.value
        source = {"task": task.name, "split": task.split, "n": len(task.items), "variant": self.family_picker.value,
                  "domain_premise": self.domain_box.value or None}
        return self.submit(name, task, source)

    def _same_items(self, ids: list[str]) -> bool:
        first = next(iter(self.runs.values()), None)
        return first is not None and first.items["id"].astype(str).tolist()[:len(ids)] == ids[:len(first.items)]

    def submit(self, name: str, task: tasks.Task, source: dict, then: Any = None) -> Job:
        with self.lock:
            closed = [] if self._same_items([str(it.id) for it in task.items]) else [r for r in self.runs if r != name]
            if closed:
                self.runs.clear(), self.sources.clear(), self.tasks.clear()
            self.runs.pop(name, None)
            self.tasks[name] = task
        self.message.value, self.last_error = "", None
        if closed:  # a run of other items takes the table: the runs it closes are named, never dropped unsaid
            self.message.value = (f"<i>closed the run{'s' if len(closed) > 1 else ''} "
                                  f"{', '.join(html.escape(repr(r)) for r in closed)}: {html.escape(task.name)} has "
                                  "other items (save a session first to keep runs)</i>")
        self.cancel_button.disabled, self.progress.value = False, 0
        self.progress_line.value = f"<i>starting {html.escape(name)}: 0 / {len(task.items)} items…</i>"

        def job(run: Job) -> None:
            lm = self.get_lm()
            source["model"] = lm.name

            due = [0.0, REDRAW_S]  # when the rows are redrawn next, the wait after that: the first chunk at once

            def on_chunk(part: EvalResult, progress: Progress) -> None:
                self._report(progress)
                first, ending = name not in self.runs, progress.left_seconds < due[1]
                if time.monotonic() >= due[0] and (first or not ending):
                    self.put(name, part, source)
                    due[:] = [time.monotonic() + due[1], min(2 * due[1], REDRAW_MAX_S)]

            self.running = True
            try:
                result = explore.evaluate_in_chunks(lm, task, self.scorers, chunk=self.chunk, on_chunk=on_chunk,
                                                     on_progress=self._report, chat_template=self.chat_template)
            finally:
                self.cancel_button.disabled, self.running = True, False
            self.put(name, result, source)
            self.progress_line.value += " · " + ("cancelled: kept the chunks done" if "stopped_at" in result.meta
                                                 else "done")
            if then is not None:
                then()

        return self.runner.submit(job)

    def cancel(self) -> None:
        """Stop the run in progress (its finished chunks stay)."""
        self.runner.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no run is in progress (scripts, tests); False on timeout."""
        return self.runner.wait(timeout)

    def _report(self, progress: Progress) -> None:
        self.progress.value = progress.done / max(progress.total, 1)
        self.progress_line.value = html.escape(progress.line())

    def _failed(self, err: BaseException) -> None:
        self.cancel_button.disabled = True
        self.show_error(err)

    def show_error(self, err: BaseException) -> None:
        self.last_error = str(err) or type(err).__name__
        self.message.value = message_html(err, self.policy.public)

    def put(self, name: str, run: EvalResult, source: dict) -> None:
        """Add or replace run ``name`` and redraw what depends on the runs."""
        with self.lock:
            self.runs[name] = run
            self.sources[name] = dict(source)
            self.refresh()

    def shown(self) -> dict[str, EvalResult]:
        """The runs as shown: cut to the items every one of them has (a run in progress or cancelled is shorter)."""
        with self.lock:
            runs = dict(self.runs)
        if not runs:
            return {}
        k = min(len(r.items) for r in runs.values())
        return {n: r if len(r.items) == k else _head(r, k) for n, r in runs.items()}

    # --- summary, filters, table ------------------------------------------------------------

    def refresh(self) -> None:
        """Redraw the run lines, summary, filters and table from the runs."""
        with self.lock:
            runs = self.shown()
            if not runs:
                return
            self.run_lines.value = "<br>".join(f"<b>{html.escape(n)}</b>: {html.escape(explore.run_line(r))}"
                                               for n, r in self.runs.items()) + f"<br>{kernel_memory()}"
            self.results.layout.display = None
            cols = explore.columns(runs)
            self.summary.refresh(runs, cols)
            self._build_filters(runs, cols)
            self.ablation.presets()
            self._apply(runs)

    def _build_filters(self, runs: Mapping[str, EvalResult], cols: list[str]) -> None:
        if list(self._filters) != cols:
            old = {c: d.value for c, d in self._filters.items()}
            self._filters = {c: w.Dropdown(options=[(ANY, ANY), *rows.filter_choices(c)], value=old.get(c, ANY),
                                           description=c, style={"description_width": "initial"},
                                           layout=w.Layout(width="auto")) for c in cols}
            for d in self._filters.values():
                d.observe(lambda _: self._filter_changed(), "value")
            old_boxes, self.filter_box.children = self.filter_box.children, tuple(self._filters.values())
            for box in old_boxes:
                box.close()
            pairs = [(a, b) for i, a in enumerate(cols) for b in cols[i + 1:]
                     if a.rpartition(":")[2] == b.rpartition(":")[2] or len(runs) == 1]
            self._hold = True
            try:
                keep = self.flipped_picker.value
                self.flipped_picker.options = [("—", None)] + [(f"{a} ≠ {b}", (a, b)) for a, b in pairs]
                self.flipped_picker.value = keep if keep in pairs else None
            finally:
                self._hold = False
        items = next(iter(runs.values())).items
        labels = sorted(items["why"].astype(str).unique()) if "why" in items else []
        self._offer(self.label_picker, [ANY, *labels], ANY)
        group = explore.group_column(items)
        counts = items[group].astype(str).value_counts().sort_index() if group else pd.Series(dtype=int)
        self._offer(self.group_picker, [(ANY, None), *((f"{v} ({n})", v) for v, n in counts.items())], None)
        self.group_picker.description = group or "task"
        self.group_picker.layout.display = None if group else "none"

    def _offer(self, picker: w.Dropdown, options: list, empty: Any) -> None:
        """Give ``picker`` these ``options`` where they changed, keeping its value where it is still one of them (else
        ``empty``); no filter change follows."""
        if list(picker.options) == options:
            return
        self._hold = True
        try:
            keep = picker.value
            picker.options = options
            values = [o[1] if isinstance(o, tuple) else o for o in options]
            picker.value = keep if keep in values else empty
        finally:
            self._hold = False

    def filter(self, *, right: Sequence[str] = (), wrong: Sequence[str] = (), disagree: bool = False,
               flipped: tuple[str, str] | None = None, label: str | None = None, group: str | None = None,
               text: str = "") -> np.ndarray:
        """Set every filter (the others cleared) and show the rows that pass (``explore.select``; ``group``: the
        item's task or subject, ``text``: the table's search words); their positions, in the table's order (also
        ``table.rows``)."""
        self._hold = True
        try:
            for col, d in self._filters.items():
                d.value = "right" if col in right else "wrong" if col in wrong else ANY
            unknown = [c for c in [*right, *wrong] if c not in self._filters]
            if unknown:
                raise ValueError(f"column: unknown {unknown[0]!r}; known: {list(self._filters)}")
            self.disagree_box.value = bool(disagree)
            if flipped is not None and tuple(flipped) not in [v for _, v in self.flipped_picker.options]:
                self.flipped_picker.options = [*self.flipped_picker.options, (" ≠ ".join(flipped), tuple(flipped))]
            self.flipped_picker.value = tuple(flipped) if flipped is not None else None
            self.label_picker.value = label if label is not None else ANY
            groups = [v for _, v in self.group_picker.options]
            if group is not None and group not in groups:
                raise ValueError(f"group: unknown {group!r}; known: {groups[1:]}")
            self.group_picker.value = group
            self.table.words = str(text)
        finally:
            self._hold = False
        self._apply(self.shown())
        return self.table.rows

    def _filter_changed(self) -> None:
        if not self._hold:
            self._apply(self.shown())

    def selection(self) -> dict:
        """The filters set now, as ``explore.select``'s arguments."""
        label = self.label_picker.value
        return {"right": [c for c, d in self._filters.items() if d.value == "right"],
                "wrong": [c for c, d in self._filters.items() if d.value == "wrong"],
                "disagree": [c for c in self._filters if c.startswith(next(iter(self.runs), "") + ":")]
                if self.disagree_box.value else None,
                "flipped": self.flipped_picker.value, "label": None if label == ANY else label,
                "group": self.group_picker.value, "text": self.table.words}

    def _apply(self, runs: Mapping[str, EvalResult]) -> None:
        if not runs:
            return
        filters = self.selection()
        filters.pop("text")  # the table searches its own rows (``ItemTable.search``)
        try:
            rows = explore.select(runs, **filters)
        except ValueError as err:
            self.show_error(err)
            return
        self.table.show(runs, rows)
        self.opener.prefetch_rows()

    # --- the explorer's verbs (each done by one of its parts) ----------------------------------

    @property
    def workbench(self) -> Any:
        """The workbench rows open in (``opener.workbench``: made and shown below the explorer when first needed)."""
        return self.opener.workbench

    def open_row(self, k: int) -> None:
        """Open the ``k``-th row of the table (as filtered) in the workbench."""
        self.opener.open_row(k)

    def open_item(self, position: int, run: str | None = None) -> None:
        """Load item ``position`` exactly as run ``run`` scored it into the workbench (``opener.open_item``)."""
        self.opener.open_item(position, run)

    def ablate(self, *, premise: str | None = None, options: str | None = None, domain_premise: str | None = None,
               name: str | None = None) -> Job | None:
        """Run the first run's items under an edited template beside it (``ablation.ablate``)."""
        return self.ablation.ablate(premise=premise, options=options, domain_premise=domain_premise, name=name)

    def comparison(self) -> pd.DataFrame:
        """``explore.compare`` of the last run against the first (``ablation.comparison``)."""
        return self.ablation.comparison()

    def save_session(self, folder: str | Path) -> Path:
        """Write the runs and their sources to ``folder`` (``files.save_session``)."""
        return self.files.save_session(folder)

    def load_session(self, folder: str | Path) -> Path:
        """Open the runs a saved session holds in place of the open ones (``files.load_session``)."""
        return self.files.load_session(folder)

    def export(self, path: str | Path) -> Path:
        """Write the comparison (``.csv`` / ``.md``) or the summary figure (``.png`` / ``.html``) (``files.export``)."""
        return self.files.export(path)

    def figure(self) -> go.Figure:
        """Accuracy per scorer and run with 95% CIs and the chance line (``summary.figure``)."""
        return self.summary.figure(self.shown())

    def item_frame(self) -> pd.DataFrame:
        """The table as shown (filtered rows of ``explore.item_table``)."""
        return self.table.frame()

    def close(self) -> None:
        """Stop the runs and close the explorer's widgets (and the workbench it made, not one it was given)."""
        if not hasattr(self, "runner"):  # the constructor refused its arguments (ipywidgets closes it when collected)
            super().close()
            return
        self.runner.close()
        self.opener.close()
        for child in self.children:  # the workbench closes its own (its update threads first)
            child.close() if self.opener.owns(child) else close_tree(child)
        super().close()
