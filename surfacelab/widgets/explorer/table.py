"""The Explorer's item table (a part of the ``Explorer``): the rows that pass the filters, searched, sorted and paged in
the kernel on the whole frame (``explore.item_table``, ``explore.search_text``, ``surfacelab.rows``), of which the
browser gets one page (``TableView``, ``table.js``): a run of 14,042 items costs the page what ten rows cost, and a
filter, a search, a sort or a page sends ten rows. The count of rows shown and the row marked open are here too."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import anywidget
import ipywidgets as w
import numpy as np
import pandas as pd
import traitlets

from ... import explore
from ...rows import matching, order, page_cells
from ...runs import EvalResult
from ..kit.layout import classed

if TYPE_CHECKING:
    from .widget import Explorer

HERE = Path(__file__).parent
#: Rows a page may show (the browser's choice; the first is the default).
PAGE_SIZES = (10, 25, 50, 100)


def column_kind(column: str) -> str:
    """How wide a column of the item table is drawn (``table.js``): the premise, an option (the gold and each run's
    pick), the item number, or a short value (id, task, margin, label, ...)."""
    if column in ("premise", "item"):
        return column
    picked = ":" in column and column.rpartition(":")[2] not in ("margin", "why")
    return "option" if column == "gold" or picked else "short"


class TableView(anywidget.AnyWidget):
    """One page of the item table in the browser (``table.js``). The kernel sets every trait; the browser sends what
    a person does as a message (``page``, ``size``, ``sort``, ``search``, ``click``), never a trait, so that no
    value goes back and forth between the two."""

    _esm = HERE / "table.js"
    _css = HERE / "table.css"
    columns = traitlets.List(traitlets.Dict()).tag(sync=True)  # {"name": ..., "kind": column_kind(name)}
    cells = traitlets.List(traitlets.List(traitlets.Unicode())).tag(sync=True)  # the page's rows, as text
    positions = traitlets.List(traitlets.Int()).tag(sync=True)  # the item (position in the run) of each row of the page
    first = traitlets.Int(0).tag(sync=True)  # the row (in the table's order) the page starts at
    count = traitlets.Int(0).tag(sync=True)  # rows that pass the filters and the search
    total = traitlets.Int(0).tag(sync=True)  # items of the run
    page_size = traitlets.Int(PAGE_SIZES[0]).tag(sync=True)
    sort = traitlets.List().tag(sync=True)  # [column, "asc" | "desc"], or [] for the run's order
    search = traitlets.Unicode("").tag(sync=True)  # the search words the rows are found by
    selected = traitlets.Int(-1).tag(sync=True)  # the row (in the table's order) open in the workbench, or -1


class ItemTable:
    """The item table of an ``Explorer``: ``widget`` (the ``TableView``), ``count`` (a line: rows shown of items),
    ``rows`` (the positions of the items that pass the filters and the search, in the table's order), ``words``
    (the search) and ``sort`` ((column, descending) or None). Browser messages are handled under the explorer's
    lock; a row click calls what ``on_click`` registered with the row's index in ``rows``."""

    def __init__(self, host: Explorer) -> None:
        self.host = host
        self.widget = TableView()
        self.count = w.HTML("")
        self.rows = np.zeros(0, dtype=int)
        self.words = ""
        self.sort: tuple[str, bool] | None = None
        self._passed = np.zeros(0, dtype=int)  # the rows that pass the filters (before the search)
        self._open: int | None = None  # the item open in the workbench (its position in the run)
        self._runs: tuple = ()  # the runs the cached table was built from (name, run object) ...
        self._table = pd.DataFrame()  # ... their item table (``explore.item_table``) ...
        self._hay = pd.Series(dtype=object)  # ... and what the search reads (``explore.search_text``)
        self._clicked: list[Callable[[int], None]] = []
        classed([(self.widget, "sl-item-table"), (self.count, "sl-x-count")])
        self.widget.on_msg(self._message)

    def on_click(self, callback: Callable[[int], None]) -> None:
        """Call ``callback`` with the row's index in ``rows`` when a person clicks a row."""
        self._clicked.append(callback)

    def show(self, runs: Mapping[str, EvalResult], rows: np.ndarray) -> None:
        """Show the rows ``rows`` (the positions of the items that pass the filters) of ``runs``' item table, found by
        the search words and in the sort order; the page stays where it was when the runs changed (a run goes on),
        and goes back to the first when the filters did."""
        key = tuple((name, id(run)) for name, run in runs.items())
        redrawn = key != self._runs and bool(self._runs)  # a run went on (or another came): the page stays
        if key != self._runs:  # the table is built once per set of runs, not per filter
            self._table, self._hay, self._runs = explore.item_table(runs), explore.search_text(runs), key
        self._passed = np.asarray(rows, dtype=int)
        self._arrange(keep_page=redrawn)

    def search(self, words: str) -> None:
        """Show the rows whose id, task, whole premise or options hold every one of ``words``."""
        self.words = str(words)
        self._arrange()

    def sort_by(self, column: str | None, descending: bool = False) -> None:
        """Sort the rows by ``column`` (None: the run's order); a stable sort, missing values last."""
        if column is not None and column not in self._table:
            raise ValueError(f"column: unknown {column!r}; known: {list(self._table.columns)}")
        self.sort = None if column is None else (column, bool(descending))
        self._arrange()

    def page(self, first: int) -> None:
        """Show the page that holds row ``first`` of the table."""
        self._draw(first)

    def select(self, k: int | None) -> None:
        """Mark row ``k`` of the table as the one open (None: none), without opening it; the page moves to it."""
        self._open = int(self.rows[k]) if k is not None else None
        self._draw(self.widget.first if k is None else k)

    def frame(self) -> pd.DataFrame:
        """The table as shown: every row that passes the filters and the search, in the table's order."""
        return self._table[self._columns()].iloc[self.rows].reset_index(drop=True)

    # --- inside -----------------------------------------------------------------------------

    def _columns(self) -> list[str]:
        """The item table's columns shown (``truncated`` only where some context was cut)."""
        cut = "truncated" in self._table and bool(self._table["truncated"].any())
        return [c for c in self._table.columns if c != "truncated" or cut]

    def _arrange(self, keep_page: bool = False) -> None:
        rows = self._passed
        if self.words.split():
            rows = rows[matching(self._hay.iloc[rows], self.words)]
        if self.sort is not None and self.sort[0] in self._table:
            rows = order(self._table, rows, *self.sort)
        else:
            self.sort = None
        self.rows = rows
        total = len(self._table)
        self.count.value = f"<b>{len(rows)}</b> of {total} items" + (
            f" (with the words “{html.escape(self.words.strip())}”)" if self.words.strip() else "")
        self._draw(self.widget.first if keep_page else 0)

    def _draw(self, first: int) -> None:
        """Send the browser the page that holds row ``first`` (only the traits that changed travel)."""
        view, columns = self.widget, self._columns()
        size = view.page_size
        first = max(0, min(int(first), len(self.rows) - 1)) // size * size
        shown = self._table[columns] if len(self._table) else self._table
        at = np.flatnonzero(self.rows == self._open) if self._open is not None else []
        with view.hold_sync():
            view.columns = [{"name": c, "kind": column_kind(c)} for c in columns]
            view.cells = page_cells(shown, self.rows, first, size) if len(columns) else []
            view.positions = [int(p) for p in self.rows[first:first + size]]
            view.first, view.count, view.total = first, len(self.rows), len(self._table)
            view.sort = [self.sort[0], "desc" if self.sort[1] else "asc"] if self.sort else []
            view.search = self.words
            view.selected = int(at[0]) if len(at) else -1

    def _message(self, _: Any, content: Any, buffers: Any) -> None:
        """A person's action in the browser (``table.js``); a click opens its row outside the explorer's lock (the
        first click may load the workbench's model)."""
        if not isinstance(content, dict):
            return
        event, clicked = content.get("event"), None
        with self.host.lock:
            if event == "click":
                clicked = self._clicked_row(content.get("row"), content.get("item"))
            elif event == "page" and isinstance(content.get("first"), int):
                self.page(content["first"])
            elif event == "size" and content.get("size") in PAGE_SIZES:
                first = self.widget.first
                self.widget.page_size = content["size"]
                self.page(first)
            elif event == "sort" and isinstance(content.get("column"), str) and content["column"] in self._table:
                column = content["column"]
                descending = self.sort is not None and self.sort[0] == column and not self.sort[1]
                self.sort_by(column, descending)
                self.host.opener.prefetch_rows()
            elif event == "search" and isinstance(content.get("text"), str):
                self.search(content["text"][:1000])
                self.host.opener.prefetch_rows()
        if clicked is not None:
            for callback in self._clicked:
                callback(clicked)

    def _clicked_row(self, k: Any, item: Any) -> int | None:
        """The row a click opens: row ``k`` of the table, the one showing ``item`` (found again when the rows changed
        since the page was drawn; None when that item is no longer shown)."""
        if not isinstance(k, int) or not isinstance(item, int):
            return None
        if 0 <= k < len(self.rows) and self.rows[k] == item:
            return k
        at = np.flatnonzero(self.rows == item)
        return int(at[0]) if len(at) else None
