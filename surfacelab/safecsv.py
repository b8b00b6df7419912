"""CSV that a spreadsheet opens as data: a text cell that starts like a formula is written behind a quote.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or carriage return before one) as a
formula: ``=HYPERLINK("http://...")``, ``=cmd|' /C calc'!A0``. A premise, an option, a document id or a template comes
from a dataset or a person, so every CSV surfacelab writes goes through ``to_csv``: a text cell that starts with one of
those characters gets a ``'`` in front, as OWASP's CSV-injection advice and spreadsheet-safe exporters do; the
spreadsheet shows the text and runs nothing. A text cell that starts with ``'`` gets one more, so the escaping is
undone exactly by dropping one leading quote (``restore``): what surfacelab reads back (``EvalResult.load``) is what it
wrote. Numbers and booleans are written as they are (a log-prob of -3.2 stays the number -3.2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

#: The first characters that make a spreadsheet read a cell as a formula (OWASP: CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: The character put in front of such a cell (a spreadsheet shows the rest as text).
QUOTE = "'"


def escape(value: Any) -> Any:
    """``value`` as a text cell a spreadsheet shows as text: a quote in front of a str that starts like a formula or
    with a quote; anything else unchanged.

    >>> escape('=HYPERLINK("http://x")'), escape("'=1"), escape("bathtub"), escape(-3.2)
    ('\\'=HYPERLINK("http://x")', "''=1", 'bathtub', -3.2)
    """
    if isinstance(value, str) and value[:1] in (*FORMULA_START, QUOTE):
        return QUOTE + value
    return value


def restore(value: Any) -> Any:
    """The cell ``escape`` was given: one leading quote dropped from a str (every str that starts with one was
    escaped).

    >>> restore(escape("'=1")), restore(escape("-2+3")), restore("bathtub")
    ("'=1", '-2+3', 'bathtub')
    """
    return value[1:] if isinstance(value, str) and value.startswith(QUOTE) else value


def _is_text(column: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)
                or pd.api.types.is_datetime64_any_dtype(column))


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are escaped (``escape``); numeric and boolean columns are the same."""
    out = frame.copy()
    for k in range(frame.shape[1]):
        if _is_text(frame.iloc[:, k]):
            out.isetitem(k, frame.iloc[:, k].map(escape, na_action="ignore"))
    return out


def to_csv(frame: pd.DataFrame, path: str | Path | None = None) -> str | None:
    """Write ``frame`` (without its index) as spreadsheet-safe CSV to ``path``, or return the text when ``path`` is
    None: the one way surfacelab writes CSV.

    Lines end in ``\n``, or in ``\r\n`` (RFC 4180) when a text cell holds a carriage return: the csv writer quotes a
    cell that holds a character of the line ending, and a bare ``\r`` left unquoted would end the row for a reader.
    """
    safe = spreadsheet_safe(frame)
    cr = any(safe.iloc[:, k].map(lambda v: isinstance(v, str) and "\r" in v).any()
             for k in range(safe.shape[1]) if _is_text(safe.iloc[:, k]))
    return safe.to_csv(path, index=False, lineterminator="\r\n" if cr else "\n")
