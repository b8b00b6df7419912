"""A CSV that surfacelab wrote, opened back with the ``csv`` module and checked cell by cell: every text cell that a
spreadsheet would run as a formula (OWASP: it starts with = + - @, a tab or a carriage return) or that starts with a
quote is written behind one quote, every other cell as it is, and numbers stay numbers."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd

import surfacelab as sl
from surfacelab.tasks import Item, Task

#: Text a spreadsheet would run (or that starts with the escape character itself), and text that is only text.
HOSTILE = ['=HYPERLINK("http://x")', "+1", "-2+3", "@SUM(A1)", "'=1", "\t=1", "\r=1"]
PLAIN = ["bathtub", "None", "NA", "1.50"]
STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def written(value: str) -> str:
    """How a text cell must appear in the file."""
    return "'" + value if value[:1] in STARTS else value


def check_cells(csv_text: str | Path, frame: pd.DataFrame) -> int:
    """Check every cell of ``csv_text`` (CSV text or a file) against ``frame`` (the frame that was written); the number
    of text cells that were escaped (so that a test can see its hostile cells were there)."""
    if isinstance(csv_text, Path):
        csv_text = csv_text.read_bytes().decode("utf-8")  # no newline translation: a cell may hold a \r
    rows = list(csv.reader(io.StringIO(csv_text, newline="")))
    assert rows[0] == [str(c) for c in frame.columns]
    assert len(rows) - 1 == len(frame)
    escaped = 0
    for i, row in enumerate(rows[1:]):
        assert len(row) == frame.shape[1], row
        for k, cell in enumerate(row):
            value = frame.iloc[i, k]
            if isinstance(value, str):
                assert cell == written(value), (frame.columns[k], i, cell, value)
                escaped += cell != value
            elif isinstance(value, (bool, np.bool_)):
                assert cell == str(bool(value)), (frame.columns[k], i, cell, value)
            elif value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
                assert cell == "", (frame.columns[k], i, cell)
            elif isinstance(value, (int, float, np.integer, np.floating)):
                assert not cell.startswith("'") and float(cell) == float(value), (frame.columns[k], i, cell, value)
    return escaped


def hostile_task() -> Task:
    """Items whose ids, premises, options and domain premises start like spreadsheet formulas (or with a quote), and
    some plain text that a CSV reader would take for a missing value or a number ("None", "NA", "1.50")."""
    texts = HOSTILE + PLAIN
    copa = sl.tasks.SPECS["copa"].templates["paper"]
    items = [Item(t, f"{t} The man took a bath in the", [texts[(k + 1) % len(texts)], " bathtub"], k % 2,
                  texts[(k + 2) % len(texts)]) for k, t in enumerate(texts)]
    return Task("hostile", "test", items, copa, "memory")
