"""The rows of a table as a person reads them, computed on the frame with no Python per row, so that a run of a whole
dataset (14,042 MMLU items) sorts, searches and pages in milliseconds: the premise as a table shows it (the leading
lines every item of its task shares left out: MMLU's "The following are multiple choice questions ... about
<subject>."), the words search, the sort, one page's cells as text, and the words of a column's right / wrong
filter. ``explore.item_table`` builds the item table with them; the explorer's table sorts, searches and pages it in
the kernel and sends the browser one page.

>>> shown_premises(pd.Series(["Intro.\\n\\nWhat is 2+2?", "Intro.\\n\\nWho wrote it?"]), None, 80).tolist()
['What is 2+2?', 'Who wrote it?']
>>> matching(pd.Series(["red apple", "green apple", "red pear"]), "APPLE red").tolist()
[True, False, False]
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .scorers import SCORERS


def shared_lines(texts: Sequence[str]) -> int:
    """The length of the leading whole lines (each ended by ``\\n``) that every one of ``texts`` starts with; 0 when
    there are fewer than two different texts (a lone text keeps its first lines: they are its own)."""
    lo, hi = (min(texts), max(texts)) if len(texts) else ("", "")
    if lo == hi:
        return 0
    return os.path.commonprefix([lo, hi]).rfind("\n") + 1


def shown_premises(premises: pd.Series, groups: pd.Series | None, chars: int) -> pd.Series:
    """Each premise as a table row shows it: the leading lines it shares with every premise of its group (its task,
    or the whole run when ``groups`` is None) left out, leading whitespace too, cut to ``chars`` characters (the last
    one "…" where it was cut)."""
    text = premises.astype(str).to_numpy(dtype=object)
    codes = np.zeros(len(text), dtype=int) if groups is None else pd.factorize(pd.Series(groups).astype(str))[0]
    for code in np.unique(codes):
        where = np.flatnonzero(codes == code)
        cut = shared_lines(text[where].tolist())
        if cut:
            text[where] = pd.Series(text[where], dtype=object).str.slice(cut).to_numpy(dtype=object)
    out = pd.Series(text, dtype=object).str.lstrip()
    long = (out.str.len() > chars).to_numpy()
    return pd.Series(np.where(long, out.str.slice(0, chars - 1) + "…", out), dtype=object)


def matching(hay: pd.Series, text: str) -> np.ndarray:
    """Which entries of ``hay`` (lower-case text, one per row) hold every word of ``text`` (case-insensitive)."""
    keep = np.ones(len(hay), dtype=bool)
    for word in str(text).lower().split():
        keep &= hay.str.contains(word, regex=False).to_numpy(dtype=bool)
    return keep


def order(table: pd.DataFrame, rows: np.ndarray, column: str, descending: bool = False) -> np.ndarray:
    """``rows`` (positions in ``table``) sorted by ``column``: a stable sort (rows with equal values keep their order),
    missing values last either way."""
    if column not in table:
        raise ValueError(f"column: unknown {column!r}; known: {list(table.columns)}")
    values = pd.Series(table[column].to_numpy()[rows])
    ranked = values.sort_values(ascending=not descending, kind="stable", na_position="last")
    return np.asarray(rows)[ranked.index.to_numpy()]


def cell_text(value: object) -> str:
    """A table cell as text: "" for a missing value, "yes" / "" for a flag, numbers as Python prints them."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    return str(value)


def page_cells(table: pd.DataFrame, rows: np.ndarray, start: int, size: int) -> list[list[str]]:
    """The cells of rows ``start`` .. ``start + size`` of ``rows`` (positions in ``table``, in the order shown), as
    text: one page, whatever the table's length."""
    part = table.iloc[np.asarray(rows)[start:start + size]]
    return [[cell_text(v) for v in row] for row in part.itertuples(index=False, name=None)]


#: How a right / wrong filter says it of a scorer whose formulation means more than "right" (``scorers.FORMULATIONS``).
FILTER_WORDS = {"choices-only": "without the question"}


def filter_choices(col: str) -> list[tuple[str, str]]:
    """The (words, value) choices of the right / wrong filter of a ``<run>:<scorer>`` column: ``right``, ``wrong``,
    said in the scorer's words where its formulation has them (choices-only: "right without the question")."""
    words = FILTER_WORDS.get(SCORERS[s].formulation) if (s := col.rpartition(":")[2]) in SCORERS else None
    return [(f"{v} {words}" if words else v, v) for v in ("right", "wrong")]
