"""Opening an item from the Explorer (a part of the ``Explorer``): a row click, previous / next, the workbench items
open in (made on the first click when none was given), the scroll that brings it into view (``reveal``) and the
prefetch of the first rows' workbench scores (``prefetch.Prefetch``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from ...runs import EvalResult, scored_domain
from ...logs import LOG_SOURCE
from .prefetch import AFTER_OPEN_S, Prefetch
from .prefetch import ROWS as PREFETCH_ROWS
from .reveal import Reveal

if TYPE_CHECKING:
    from ..app import AppPolicy
    from .widget import Explorer

#: What a workbench given to an explorer says in place of its views until the first item opens.
ROW_HINT = "Click a row of the explorer above to open its item here (or press <b>Score</b> for the item shown)."
#: Milliseconds a click that opens an item waits for a workbench given to the explorer to be on the page.
GIVEN_WAIT_MS = 3_000
#: ... and for the one the explorer makes on the first click (a model load under a busy CPU).
MADE_WAIT_MS = 120_000


class Opener:
    """What opens an ``Explorer``'s items in the workbench: the row clicks of its table, ``open_row`` /
    ``open_item`` (with previous / next within the filtered rows), the workbench, its scroll into view and the
    prefetch.

    Args:
        host: the explorer (its table and rows, its runs and sources, its model).
        workbench: the ``Workbench`` items open in (None: made when first needed and shown below the explorer; one
            given is displayed by its owner: a click says so when it is not on the page).
        policy: the workbench the opener makes follows it.
    """

    def __init__(self, host: Explorer, workbench: Any, policy: AppPolicy) -> None:
        self.host, self.policy, self._workbench = host, policy, workbench
        self.prefetch = Prefetch()  # the workbench's scores of the first rows, ahead of a click
        # a click that opens an item scrolls the workbench into view in the browser (made on the first click: the
        # browser waits for it; given: it should be on the page already, else the person is told to display it)
        self.reveal = Reveal(wait_ms=MADE_WAIT_MS if workbench is None else GIVEN_WAIT_MS)
        self.reveal.target = f"sl-bench-{self.reveal.model_id[:12]}"
        self.reveal.observe(self._bench_missing, "missing")
        if workbench is not None:
            workbench.add_class(self.reveal.target)
            workbench.hint(ROW_HINT)
        host.table.on_click(self.open_row)  # a click on the open row opens it again (an edit made to it undone)

    @property
    def made(self) -> bool:
        """Whether there is a workbench (given, or made by a click)."""
        return self._workbench is not None

    def owns(self, widget: Any) -> bool:
        """Whether ``widget`` is the workbench (which closes its own widgets)."""
        return widget is self._workbench

    @property
    def workbench(self) -> Any:
        """The workbench rows open in (made, with the explorer's model, and shown below it when first needed)."""
        if self._workbench is None:
            from ..workbench.widget import Workbench

            self._workbench = Workbench(lm=self.host.get_lm(), policy=self.policy)
            self._workbench.add_class(self.reveal.target)
            self.host.children = (*self.host.children, self._workbench)
        return self._workbench

    def _bench_missing(self, change: dict) -> None:
        if change["new"]:
            self.host.message.value = ("<span class='sl-error'>⚠ the workbench this explorer opens items in is not "
                                       "on the page: display it (its variable on the last line of a cell) to see the "
                                       "item</span>")
            self.reveal.missing = False  # the next click checks again

    def open_row(self, k: int) -> None:
        """Open the ``k``-th row of the table (as filtered) in the workbench."""
        self.open_item(int(self.host.table.rows[k]))

    def inputs(self, res: EvalResult, position: int) -> tuple[str, list[str], str | None]:
        """Item ``position`` of ``res`` as the workbench loads it: (premise, options, domain premise), exactly as
        scored (a ``ValueError`` for an item whose options have premises of their own)."""
        item = res.items.iloc[position]
        rows = res.scores[res.scores["item"] == item["item"]].sort_values("option_index")
        contexts = rows["context"].astype(str).unique()
        if len(contexts) != 1:
            raise ValueError(f"item {item['id']}: each option has its own premise; the workbench shows items "
                             "with one premise")
        return contexts[0], rows["option"].astype(str).tolist(), scored_domain(item)

    def prefetch_rows(self, start: int = 0, delay: float = 0.0) -> None:
        """Compute the workbench's scores of the rows from ``start`` on in the background after ``delay`` seconds,
        with the workbench's model (when there is a workbench and no run is scoring)."""
        host = self.host
        runs = host.shown()
        if not runs or self._workbench is None or host.running:
            return
        res = next(iter(runs.values()))
        positions = [int(p) for p in host.table.rows[start:start + PREFETCH_ROWS]]

        def items() -> Iterator[tuple[str, list[str], str | None]]:  # read in the background, not on the click
            for position in positions:
                try:
                    yield self.inputs(res, position)
                except ValueError:
                    continue
        self.prefetch.start(self._workbench.lm, items(), self._workbench.top_k, delay=delay)

    def open_item(self, position: int, run: str | None = None) -> None:
        """Load item ``position`` exactly as run ``run`` (default: the first) scored it into the workbench, with
        previous / next within the filtered rows."""
        host = self.host
        self.prefetch.cancel()  # the click's own update gets the CPU
        runs = host.shown()
        name = run or next(iter(runs))
        res = runs[name]
        item = res.items.iloc[position]
        try:
            premise, options, domain = self.inputs(res, position)
        except ValueError as err:
            host.show_error(err)
            return
        if res.meta.get("source") == LOG_SOURCE:  # the item's task and its file, and the framework's own doc_id
            file = res.meta["log_tasks"][item["task"]]["file"]
            source = (f"the {res.meta['reader']} log of {item['task']} ({Path(file).name}) · doc_id {item['id']} · "
                      f"run {name}")
        else:
            source = f"{res.task}/{res.split} #{position} {item['id']} · template {res.template} · run {name}"
        rows = host.table.rows
        k = np.flatnonzero(rows == position)
        step = (lambda d: (lambda: self.open_item(int(rows[k[0] + d]), run))) if len(k) else None
        previous = step(-1) if step and k[0] > 0 else None
        following = step(1) if step and k[0] + 1 < len(rows) else None
        self.workbench.load_item(premise, options, domain_premise=domain, gold=int(item["gold"]), source=source,
                                 previous=previous, next=following)
        host.table.select(int(k[0]) if len(k) else None)  # the table marks the item open (previous / next move it)
        if len(k):
            self.prefetch_rows(int(k[0]) + 1, delay=AFTER_OPEN_S)  # the rows "next" opens

    def close(self) -> None:
        """Stop the prefetch (the explorer is closing)."""
        self.prefetch.close()
