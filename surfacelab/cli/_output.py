"""How the command line prints: tables that fit the terminal (rich), or csv / json / markdown for machines.

``--format table`` (default) prints the columns a person reads first, floats to 3 decimals, integers as
integers, the best cell of a column marked ``*``, wrapped to the terminal's width (``$COLUMNS`` when
output goes to a pipe); a header line breaks only between its parts, never inside a quoted premise. Text from
files and arguments is printed with its control characters escaped (``\\x1b``: no ESC sequence reaches the
terminal). ``--wide`` shows every column. ``--format markdown`` prints the same tables as
markdown; ``csv`` (the command's main table) and ``json`` (every table) carry every column at full
precision, and notes then go to stderr so that stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._format import printable
from ..paths import write_atomic
from ..safecsv import to_csv

FORMATS = ("table", "csv", "json", "markdown")
#: numeric columns shown as integers even when their dtype is float (ranks are computed as floats)
INTEGER_PREFIXES = ("rank_", "n_")
#: a column whose cells are all this short is never wrapped (names, kinds, numbers)
SHORT = 16
#: Characters a wrapped text column keeps at least (a narrower terminal gets longer lines instead).
WRAPPED = 20
#: a --wide table that cannot fit the terminal is printed transposed when it has at most this many rows
MAX_TRANSPOSED = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--format`` and ``--wide`` to a sub-command."""
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default: fits the terminal), markdown, or csv / json for machines (every "
                             "column, full precision; notes go to stderr)")
    parser.add_argument("--wide", action="store_true", help="table and markdown: every column")


@dataclass
class TableSpec:
    """One table: its full frame, the columns read first, headers, and the cells to mark as best.

    Attributes:
        name: the key of this table in ``--format json``.
        frame: every column (what csv / json / ``--wide`` print).
        columns: the columns of the default view, in order.
        headers: display names for some columns.
        best: column -> boolean Series (aligned with ``frame``) of the cells to mark ``*``.
        title: a line above the table.
        caption: a line under the table (e.g. what ``*`` means).
        quoted: columns shown as Python string literals (options, whose leading space matters).
    """

    name: str
    frame: pd.DataFrame
    columns: list[str]
    headers: dict[str, str] = field(default_factory=dict)
    best: dict[str, pd.Series] = field(default_factory=dict)
    title: str = ""
    caption: str = ""
    quoted: tuple[str, ...] = ()


def _is_integer_column(name: str, series: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(series):
        return False
    return pd.api.types.is_integer_dtype(series) or (
        name.startswith(INTEGER_PREFIXES) and pd.api.types.is_numeric_dtype(series))


def _cell(value: Any, integer: bool) -> str:
    """A value as a person reads it: 3 decimals, integers whole, NaN as a dash, options with their quotes."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if integer:
        return str(int(value))
    if isinstance(value, float) or type(value).__name__.startswith("float"):
        return f"{value:.3f}"
    return str(value)


def machine_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame for csv / json: rank and count columns as integers (nullable), everything else as it is."""
    out = frame.copy()
    for c in out.columns:
        if _is_integer_column(str(c), out[c]) and not pd.api.types.is_integer_dtype(out[c]):
            out[c] = out[c].round().astype("Int64")
    return out


class Printer:
    """Prints views and notes in one ``--format``; a table fits ``width`` (default: the terminal's)."""

    def __init__(self, fmt: str = "table", wide: bool = False, width: int | None = None) -> None:
        self.fmt, self.wide = fmt, wide
        machine = fmt in ("csv", "json")
        self.out = Console(file=sys.stdout, width=width, highlight=False, markup=False, emoji=False, soft_wrap=False)
        self.notes = Console(file=sys.stderr if machine else sys.stdout, width=width, highlight=False, markup=False,
                             emoji=False, soft_wrap=False)

    def note(self, line: str) -> None:
        """A line of prose (explanations, notes, files written), wrapped to the width."""
        self.notes.print(printable(line))

    def header(self, parts: list[str]) -> None:
        """What a table is of (model, premise, task, ...): the parts joined by " · ", a line broken only between two
        parts (a quoted premise keeps its spaces on one line; a part wider than the terminal wraps on its own)."""
        lines = [""]
        for part in map(printable, parts):
            if lines[-1] and len(lines[-1]) + len(" · " + part) > self.notes.width:
                lines[-1] += " ·"
                lines.append(part)
            else:
                lines[-1] += f" · {part}" if lines[-1] else part
        for line in lines:
            self.notes.print(line)

    def show(self, views: list[TableSpec], extra: dict[str, Any] | None = None) -> None:
        """Print the views: rich tables, markdown tables, the first view as csv, or every view (and ``extra``)
        as json."""
        if self.fmt == "csv":
            sys.stdout.write(to_csv(machine_frame(views[0].frame)))
        elif self.fmt == "json":
            doc = {v.name: json.loads(machine_frame(v.frame).to_json(orient="records")) for v in views}
            sys.stdout.write(json.dumps({**doc, **(extra or {})}, indent=1, default=str) + "\n")
        else:
            for v in views:
                if self.fmt == "markdown":
                    self.out.print(_markdown(v, self.wide))
                else:  # wider than the terminal rather than a number or name cut short
                    table, least = _rich(v, self.wide, self.out.width)
                    self.out.print(table, width=max(self.out.width, least), crop=False)
                self.out.print()


def _cells(view: TableSpec, wide: bool) -> tuple[list[str], list[list[tuple[str, bool]]]]:
    cols = [str(c) for c in view.frame.columns] if wide else view.columns
    integer = {c: _is_integer_column(c, view.frame[c]) for c in cols}
    rows = []
    for i in range(len(view.frame)):
        row = view.frame.iloc[i]
        rows.append([(printable(repr(row[c]) if c in view.quoted else _cell(row[c], integer[c])),
                      bool(view.best[c].iloc[i]) if c in view.best else False) for c in cols])
    return cols, rows


def _rich(view: TableSpec, wide: bool, width: int) -> tuple[Table, int]:
    """A table that fits ``width`` where it can, and the width it needs at least: numbers, names and their headers
    are never wrapped nor cut, long text wraps down to ``WRAPPED`` characters; a wide view of a few rows that cannot
    fit is transposed."""
    cols, rows = _cells(view, wide)
    headers = [printable(view.headers.get(c, c)) for c in cols]
    natural = sum(max([len(h)] + [len(r[j][0]) + 2 for r in rows]) for j, h in enumerate(headers)) + 3 * len(cols)
    numeric = [pd.api.types.is_numeric_dtype(view.frame[c]) and not pd.api.types.is_bool_dtype(view.frame[c])
               for c in cols]
    if wide and natural > width and 0 < len(rows) <= MAX_TRANSPOSED:
        return _transposed(view, headers, rows, numeric), 0
    table, least = _table(view), 0
    for j in range(len(cols)):
        longest = max((len(row[j][0]) + 2 * row[j][1] for row in rows), default=0)  # + " *" on the best cell
        short = longest <= SHORT
        need = max(longest, len(headers[j])) if short else None
        table.add_column(headers[j], justify="right" if numeric[j] else "left", no_wrap=short, overflow="fold",
                         min_width=need)
        least += (need or WRAPPED) + 3
    for row in rows:
        table.add_row(*[_text(v, best) for v, best in row])
    return table, least


def _transposed(view: TableSpec, headers: list[str], rows: list[list[tuple[str, bool]]], numeric: list[bool]) -> Table:
    """One column per row (headed by its first cell), one line per column of the frame."""
    table = _table(view)
    table.add_column(headers[0], no_wrap=True)
    for row in rows:
        table.add_column(row[0][0], overflow="fold")
    for j, header in enumerate(headers[1:], start=1):
        table.add_row(header, *[_text(*row[j], right=numeric[j]) for row in rows])
    return table


def _table(view: TableSpec) -> Table:
    return Table(title=printable(view.title) or None, title_justify="left", caption=printable(view.caption) or None,
                 caption_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)


def _text(value: str, best: bool, right: bool = False) -> Text:
    return Text(f"{value} *" if best else value, style="bold" if best else "", justify="right" if right else None)


def _markdown(view: TableSpec, wide: bool) -> str:
    cols, rows = _cells(view, wide)

    def escape(cell: str) -> str:
        return cell.replace("|", "\\|")

    lines = [f"**{printable(view.title)}**", ""] if view.title else []
    lines += ["| " + " | ".join(escape(printable(view.headers.get(c, c))) for c in cols) + " |",
              "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(f"**{escape(v)}**" if best else escape(v) for v, best in row) + " |" for row in rows]
    if view.caption:
        lines += ["", printable(view.caption)]
    return "\n".join(lines)


def finish(printer: Printer, res: Any, notes: list[str], out: Path, save_dir: Path | None) -> None:
    """The end of an ``eval`` run: its notes, the per-item CSV at ``out`` and, if asked, every frame in
    ``save_dir`` (each path printed as written)."""
    for line in notes:
        printer.note(line)
    printer.note(f"wrote {write_atomic(out, lambda p: to_csv(res.items, p))}")
    if save_dir is not None:
        printer.note(f"wrote {res.save(save_dir)}")
