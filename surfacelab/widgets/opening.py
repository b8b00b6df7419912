"""Opening an item from the Explorer (a mixin of ``widgets.explorer.Explorer``): a row click, previous / next, the
workbench items open in (made on the first click when none was given), and the prefetch of the first rows'
workbench scores (``prefetch.Prefetch``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..evaluate import EvalResult
from ..lm_eval_log import LOG_SOURCE
from .prefetch import AFTER_OPEN_S
from .prefetch import ROWS as PREFETCH_ROWS

#: Seconds after the open row was unselected before it opens again (when no other row was selected meanwhile).
REOPEN_S = 0.3


class Opening:
    """The opening part of ``Explorer`` (its widgets, runs and table are the explorer's)."""

    @property
    def workbench(self) -> Any:
        """The workbench rows open in (made, with this explorer's model, and shown below it when first needed)."""
        if self._workbench is None:
            from .workbench import Workbench

            self._workbench = Workbench(lm=self.get_lm())
            self._workbench.add_class(self.reveal.target)
            self.children = (*self.children, self._workbench)
        return self._workbench

    def _bench_missing(self, change: dict) -> None:
        if change["new"]:
            self.message.value = ("<span class='sl-error'>⚠ the workbench this explorer opens items in is not on "
                                  "the page: display it (its variable on the last line of a cell) to see the "
                                  "item</span>")
            self.reveal.missing = False  # the next click checks again

    def _row_clicked(self, change: dict) -> None:
        if self._hold:
            return
        with self._lock:
            if self._reopen is not None:
                self._reopen.cancel()
                self._reopen = None
            if not change["new"] and change["old"]:
                # the table unselects the open row before it selects a clicked one, in two messages: the second is
                # sent once this one is answered, so the answer is quick and the open row opens again only when
                # no other row follows (a click on the open row unselects it: it opens it again)
                self._reopen = threading.Timer(REOPEN_S, self._reopened, args=(change["old"][0],))
                self._reopen.daemon = True
                self._reopen.start()
                return
        if change["new"]:
            self.open_row(change["new"][0])

    def _reopened(self, k: int) -> None:
        with self._lock:
            self._reopen = None
        self._select(k)
        self.open_row(k)

    def _select(self, k: int | None) -> None:
        """Mark row ``k`` of the table as the one open (None: none), without opening it."""
        want = [k] if k is not None else []
        if list(self.table.selected_rows) != want:
            self._hold = True
            try:
                self.table.selected_rows = want
            finally:
                self._hold = False

    def open_row(self, k: int) -> None:
        """Open the ``k``-th row of the table (as filtered) in the workbench."""
        self.open_item(int(self.rows[k]))

    def _inputs(self, res: EvalResult, position: int) -> tuple[str, list[str], str | None]:
        """Item ``position`` of ``res`` as the workbench loads it: (premise, options, domain premise), exactly as
        scored (a ``ValueError`` for an item whose options have premises of their own)."""
        item = res.items.iloc[position]
        rows = res.scores[res.scores["item"] == item["item"]].sort_values("option_index")
        contexts = rows["context"].astype(str).unique()
        if len(contexts) != 1:
            raise ValueError(f"item {item['id']}: each option has its own premise; the workbench shows items "
                             "with one premise")
        domain = item.get("domain_premise")
        domain = domain if isinstance(domain, str) and domain.strip() else None
        return contexts[0], rows["option"].astype(str).tolist(), domain

    def _prefetch(self, start: int = 0, delay: float = 0.0) -> None:
        """Compute the workbench's scores of the rows from ``start`` on in the background after ``delay`` seconds,
        with the workbench's model (when there is a workbench and no run is scoring)."""
        runs = self.shown()
        if not runs or self._workbench is None or self.running:
            return
        res = next(iter(runs.values()))
        positions = [int(p) for p in self.rows[start:start + PREFETCH_ROWS]]

        def items() -> Iterator[tuple[str, list[str], str | None]]:  # read in the background, not on the click
            for position in positions:
                try:
                    yield self._inputs(res, position)
                except ValueError:
                    continue
        self.prefetch.start(self._workbench.lm, items(), self._workbench.top_k, delay=delay)

    def open_item(self, position: int, run: str | None = None) -> None:
        """Load item ``position`` exactly as run ``run`` (default: the first) scored it into the workbench, with
        previous / next within the filtered rows."""
        self.prefetch.cancel()  # the click's own update gets the CPU
        runs = self.shown()
        name = run or next(iter(runs))
        res = runs[name]
        item = res.items.iloc[position]
        try:
            premise, options, domain = self._inputs(res, position)
        except ValueError as err:
            self._show_error(err)
            return
        if res.meta.get("source") == LOG_SOURCE:  # the log's task and file, and the harness's own doc_id
            source = (f"the lm-eval log of {res.task} ({Path(res.meta['files'][0]).name}) · doc_id {item['id']} · "
                      f"run {name}")
        else:
            source = f"{res.task}/{res.split} #{position} {item['id']} · template {res.template} · run {name}"
        k = np.flatnonzero(self.rows == position)
        step = (lambda d: (lambda: self.open_item(int(self.rows[k[0] + d]), run))) if len(k) else None
        previous = step(-1) if step and k[0] > 0 else None
        following = step(1) if step and k[0] + 1 < len(self.rows) else None
        self.workbench.load_item(premise, options, domain_premise=domain, gold=int(item["gold"]), source=source,
                                 previous=previous, next=following)
        self._select(int(k[0]) if len(k) else None)  # the table marks the item open (previous / next move it)
        if len(k):
            self._prefetch(int(k[0]) + 1, delay=AFTER_OPEN_S)  # the rows "next" opens
