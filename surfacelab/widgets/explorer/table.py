"""The Explorer's item table (a part of the ``Explorer``): the rows that pass the filters in an itables ``ITable``
(sorted, searched and paged in the browser), a hidden column with the whole premise for its search box, each column's
width class, the count of rows shown, and the selection that marks the item open."""

from __future__ import annotations

import html
from typing import Mapping, Sequence

import ipywidgets as w
import numpy as np
import pandas as pd
from itables.widget import ITable

from ... import explore
from ...runs import EvalResult
from ..kit.layout import classed

#: The item table's options, given again at every update (``ITable.update`` falls back to itables' defaults): every
#: row (no downsampling), cells as text, a click anywhere on a column's header sorts by it, 10 rows a page.
TABLE_OPTIONS = {"maxBytes": 0, "allow_html": False, "text_in_header_can_be_selected": False, "pageLength": 10,
                 "lengthMenu": [10, 25, 50, 100], "select": {"style": "single"}}
#: A hidden column of the item table with the whole premise: the table's search box finds words the shortened
#: premise cuts off.
SEARCHED = "whole premise"


def column_defs(columns: Sequence[str]) -> list[dict]:
    """DataTables column definitions of the item table: each column's class (``explorer.css`` gives each kind its
    width: the premise, the options (the gold and every run's pick), and short values (ids, numbers, labels)), and
    ``SEARCHED`` hidden (the table's search box reads it)."""
    kinds: dict[str, list[int]] = {"sl-c-premise": [], "sl-c-option": [], "sl-c-short": []}
    for k, col in enumerate(columns):
        if col == SEARCHED:
            continue
        picked = ":" in col and col.rpartition(":")[2] not in ("margin", "why")
        kind = "sl-c-premise" if col == "premise" else "sl-c-option" if col == "gold" or picked else "sl-c-short"
        kinds[kind].append(k)
    defs = [{"targets": targets, "className": kind} for kind, targets in kinds.items() if targets]
    return defs + [{"targets": [list(columns).index(SEARCHED)], "visible": False}] if SEARCHED in columns else defs


class ItemTable:
    """The item table of an ``Explorer``: ``widget`` (the ``ITable``), ``rows`` (the positions of the items it shows,
    in its order) and ``count``; ``setting`` is True while the explorer sets the table itself (its selection changes
    are then no person's clicks)."""

    def __init__(self) -> None:
        self.widget = ITable(pd.DataFrame(), classes="display compact", **TABLE_OPTIONS)
        self.count = w.HTML("")
        self.rows = np.zeros(0, dtype=int)
        self.setting = False
        classed([(self.widget, "sl-item-table"), (self.count, "sl-x-count")])

    def show(self, runs: Mapping[str, EvalResult], rows: np.ndarray, words: str) -> None:
        """Show the rows ``rows`` of ``runs``' item table (``explore.item_table``; found by the search ``words``)."""
        table = explore.item_table(runs).iloc[rows].reset_index(drop=True)
        if "truncated" in table and not table["truncated"].any():  # a column of "false" only takes room
            table = table.drop(columns="truncated")
        table[SEARCHED] = next(iter(runs.values())).items["premise"].astype(str).to_numpy()[rows]
        self.rows = rows
        self.setting = True
        try:
            self.widget.update(table, selected_rows=[], columnDefs=column_defs(table.columns), **TABLE_OPTIONS)
        finally:
            self.setting = False
        total = len(next(iter(runs.values())).items)
        self.count.value = f"<b>{len(rows)}</b> of {total} items" + (
            f" (with the words “{html.escape(words)}”)" if words else "")

    def select(self, k: int | None) -> None:
        """Mark row ``k`` of the table as the one open (None: none), without opening it."""
        want = [k] if k is not None else []
        if list(self.widget.selected_rows) != want:
            self.setting = True
            try:
                self.widget.selected_rows = want
            finally:
                self.setting = False

    def frame(self) -> pd.DataFrame:
        """The table as shown (filtered rows of ``explore.item_table``)."""
        return self.widget.df.drop(columns=SEARCHED, errors="ignore")
