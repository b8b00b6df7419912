"""A run's folder (``EvalResult.save`` / ``load``): its frames as spreadsheet-safe CSV and ``meta.json``; read back
only when it is a whole, consistent run.

A folder may come from someone else (an explorer session, a shared result): it is read as data only, each file a
regular file under a size cap, and checked before anything shows it (``check_run``): every column the tools read is
there with its kind of values, every item has one row per option in ``scores.csv``, every gold and prediction is an
index into its item's options, and the scorers named in ``meta.json`` have their columns. A folder that is not such a
run is refused with a ``ValueError`` naming the folder, the file and the column or row; a full MMLU run (14,042 items x
4 options) is far inside the caps.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._results import read_json
from . import files
from .engine.requests import CUT_COLUMNS, EXTRA_CONDITIONS, LOGPROB_COLUMNS
from .safecsv import restore, to_csv
from .scorers import SCORERS

if TYPE_CHECKING:
    from .runs import EvalResult

#: The most items a saved run may hold (whole-split runs of the usual benchmarks hold up to a few ten thousand).
MAX_ITEMS = 200_000
#: The most option rows (``scores.csv``) a saved run, or all the runs of a session together, may hold.
MAX_ROWS = 1_000_000
#: The largest CSV file of a saved run.
MAX_CSV_BYTES = 1 << 30
FRAMES = ("items", "scores", "accuracy", "paired", "labels")
HEAD = ("task", "split", "model", "template", "scorers")

#: The columns each file holds in every run (``{}`` is a scorer's name) and the kind of their values.
COLUMNS: dict[str, dict[str, str]] = {
    "items": {"item": "int", "task": "text", "id": "any", "gold": "int", "gold_option": "text", "n_options": "int",
              "premise": "text", "domain_premise": "text", "truncated": "int",
              "pred_{}": "int", "correct_{}": "bool", "tie_{}": "bool"},
    "scores": {"item": "int", "id": "any", "option_index": "int", "is_gold": "bool", "context": "text",
               "option": "text", "n_tokens": "number", "n_chars": "int", "n_bytes": "int",
               **{LOGPROB_COLUMNS[c]: "number" for c in LOGPROB_COLUMNS if c not in EXTRA_CONDITIONS},
               **{CUT_COLUMNS[c]: "int" for c in CUT_COLUMNS if c not in EXTRA_CONDITIONS}, "rank_{}": "number"},
    "accuracy": {"scorer": "text", "n": "int", "correct": "int", "accuracy": "number", "ci_low": "number",
                 "ci_high": "number", "ties": "int"},
    "paired": {"scorer_a": "text", "scorer_b": "text", "acc_a": "number", "acc_b": "number", "only_a": "int",
               "only_b": "int", "p_value": "number"},
    "labels": {"why": "text", "n": "int", "share": "number"},
}
#: Columns a file holds where its run scored them, checked when there: the conditions a run only has from a task's
#: fields (``engine.requests.EXTRA_CONDITIONS``; a run saved before they existed has none).
OPTIONAL: dict[str, dict[str, str]] = {
    "scores": {**{LOGPROB_COLUMNS[c]: "number" for c in EXTRA_CONDITIONS}, **{CUT_COLUMNS[c]: "int" for c in
                                                                            EXTRA_CONDITIONS}},
}
_KINDS = {"int": (pd.api.types.is_integer_dtype, "integers"),
          "bool": (pd.api.types.is_bool_dtype, "True / False"),
          "number": (lambda t: pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t), "numbers")}
_SCORER_NAME = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_NA = ["", "NaN", "nan", "NA", "<NA>"]


def write_run(run: EvalResult, directory: str | Path) -> Path:
    """Write ``items.csv``, ``scores.csv``, ``accuracy.csv``, ``paired.csv``, ``labels.csv`` (spreadsheet-safe:
    ``safecsv``) and ``meta.json`` (the head, ``meta`` and the text columns of each frame)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for name in FRAMES:
        to_csv(getattr(run, name), d / f"{name}.csv")
    meta = {"task": run.task, "split": run.split, "model": run.model, "template": run.template,
            "scorers": run.scorers, **run.meta,
            "text_columns": {name: [c for c, t in getattr(run, name).dtypes.items() if not
                                    (pd.api.types.is_numeric_dtype(t) or pd.api.types.is_bool_dtype(t))]
                             for name in FRAMES}}
    (d / "meta.json").write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    return d


def read_run(directory: str | Path) -> dict[str, Any]:
    """The fields of the ``EvalResult`` saved in ``directory`` (``write_run``), checked (``check_run``).

    Raises:
        ValueError: naming the folder, the file and the column or row of the first thing that is not a run's.
    """
    d = Path(directory)
    where = f"directory: {str(d)!r}"
    if not (d / "meta.json").exists():
        raise ValueError(f"{where} holds no meta.json of a saved EvalResult")
    try:
        meta = read_json(d / "meta.json", "meta.json")
    except ValueError as err:
        raise ValueError(f"{where}: {str(err).removeprefix('path: ')}") from None
    head, text = _head(meta, f"{where}: meta.json")
    frames: dict[str, pd.DataFrame] = {}
    for name in FRAMES:
        cap = MAX_ITEMS if name == "items" else MAX_ROWS
        if name == "scores":  # one row per option: a longer file is refused without reading the rest
            cap = int(frames["items"]["n_options"].sum())
            if cap > MAX_ROWS:
                raise ValueError(f"{where}: items.csv: its items have {cap:,} options together, more than the "
                                 f"{MAX_ROWS:,} a run may hold")
        frames[name] = _read_frame(d / f"{name}.csv", text.get(name, []), name, cap, where)
        if name == "items" and "item" in frames["items"] and "task" not in frames["items"]:
            frames["items"].insert(1, "task", head["task"])  # saved before items kept their task: a run of one task
        if name == "items":  # its option counts size scores.csv
            check_items(frames["items"], head["scorers"], where)
    check_run(head["scorers"], frames, where)
    return {**head, **frames, "meta": meta}


def _head(meta: Any, where: str) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The run's head fields (popped from ``meta``) and its text columns per frame, checked."""
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(meta).__name__}")
    missing = [k for k in HEAD if k not in meta]
    if missing:
        raise ValueError(f"{where}: missing {missing}")
    head = {k: meta.pop(k) for k in HEAD}
    for k in HEAD[:-1]:
        if not isinstance(head[k], str):
            raise ValueError(f"{where}: {k} must be text, got {type(head[k]).__name__}")
    scorers = head["scorers"]
    if (not isinstance(scorers, list) or not scorers or len(set(map(str, scorers))) != len(scorers)
            or not all(isinstance(s, str) and _SCORER_NAME.fullmatch(s) for s in scorers)):
        raise ValueError(f"{where}: scorers must be a non-empty list of distinct scorer names, got {scorers!r:.200}")
    text = meta.pop("text_columns", {})
    if not isinstance(text, dict) or not all(isinstance(v, list) and all(isinstance(c, str) for c in v)
                                             for v in text.values()):
        raise ValueError(f"{where}: text_columns must map each file to a list of column names")
    engine = meta.get("engine")
    if engine is not None and (not isinstance(engine, dict) or not all(type(v) is int for v in engine.values())):
        raise ValueError(f"{where}: engine must map counters to integers")
    for key, kind in (("stopped_at", int), ("skipped_too_long", list)):
        if key in meta and type(meta[key]) is not kind:
            raise ValueError(f"{where}: {key} must be {'an integer' if kind is int else 'a list'}")
    return head, text


def _read_frame(path: Path, text: list[str], name: str, cap: int, where: str) -> pd.DataFrame:
    """``path`` as a frame of at most ``cap`` rows: text columns (``text`` and those ``COLUMNS`` names as text) read as
    text exactly as written (``safecsv.restore``), the others as numbers and booleans."""
    at = f"{where}: {path.name}"
    text = set(text) | {c for c, kind in COLUMNS[name].items() if kind == "text"}
    data = io.BytesIO(files.read_bytes(path, cap=MAX_CSV_BYTES, where=at))
    try:
        header = pd.read_csv(data, nrows=0, encoding="utf-8").columns
        strings = [c for c in header if c in text]
        data.seek(0)
        frame = pd.read_csv(data, nrows=cap + 1, encoding="utf-8", dtype={c: str for c in strings},
                            keep_default_na=False, na_values={c: _NA for c in header if c not in text})
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except UnicodeDecodeError as err:
        raise ValueError(f"{at}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except (pd.errors.ParserError, ValueError) as err:
        raise ValueError(f"{at}: not a CSV table ({str(err).strip()[:200]})") from None
    if len(frame) > cap:
        raise ValueError(f"{at}: more than {cap:,} rows" + (" (one per option of the items in items.csv)"
                                                             if name == "scores" else ""))
    for c in strings:
        frame[c] = frame[c].map(restore)
    return frame


def check_frame(frame: pd.DataFrame, name: str, scorers: list[str], where: str) -> None:
    """Every column ``COLUMNS[name]`` names (per scorer where it holds ``{}``, and each registered scorer's own
    column in ``scores``) is in ``frame`` with its kind of values (``ValueError`` naming ``where`` and the column)."""
    columns = {c.format(s): kind for c, kind in COLUMNS[name].items() for s in (scorers if "{}" in c else [""])}
    if name == "scores":
        columns |= {SCORERS[s].column: "number" for s in scorers if s in SCORERS}
    missing = [c for c in columns if c not in frame]
    if missing:
        raise ValueError(f"{where}: no column {missing[0]!r}" + (f" (nor {missing[1:]})" if missing[1:] else ""))
    columns |= {c: kind for c, kind in OPTIONAL.get(name, {}).items() if c in frame}
    for c, kind in columns.items():
        test, words = _KINDS.get(kind, (None, ""))
        if test is not None and not test(frame[c].dtype):
            bad = next((k for k, v in enumerate(frame[c]) if not _is_kind(v, kind)), None)
            value = None if bad is None else frame[c].iloc[bad]
            value = value.item() if isinstance(value, np.generic) else value
            got = f"got {frame[c].dtype}" if bad is None else f"row {bad + 1} holds {value!r:.80}"
            raise ValueError(f"{where}: column {c!r} must hold {words}; {got}")


def _is_kind(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, (bool, np.bool_))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return kind == "number" or number.is_integer()


def check_run(scorers: list[str], frames: dict[str, pd.DataFrame], where: str) -> None:
    """A run's frames hold one consistent run (``ValueError`` naming ``where``, the file and the column or row).

    Args:
        scorers: the run's scorers.
        frames: ``items``, ``scores``, ``accuracy``, ``paired`` and ``labels``.
        where: what the frames were read from (the folder).
    """
    items, scores = frames["items"], frames["scores"]
    check_items(items, scorers, where)
    for name in FRAMES[1:]:
        if name in ("scores", "accuracy") or (name == "paired" and len(scorers) > 1) or len(frames[name]):
            check_frame(frames[name], name, scorers, f"{where}: {name}.csv")
    n, n_options, gold = len(items), items["n_options"].to_numpy(), items["gold"].to_numpy()
    if len(scores) != n_options.sum():
        raise ValueError(f"{where}: scores.csv has {len(scores):,} rows, items.csv's items have {n_options.sum():,} "
                         "options: one row per option of each item")
    item, option = scores["item"].to_numpy(), scores["option_index"].to_numpy()
    order = np.lexsort((option, item))
    starts = np.repeat(np.cumsum(n_options) - n_options, n_options)
    expected = np.repeat(np.arange(n), n_options), np.arange(len(scores)) - starts
    wrong = np.zeros(len(scores), dtype=bool)
    wrong[order] = (item[order] != expected[0]) | (option[order] != expected[1])
    _rows_where(wrong, where, "scores.csv", "item / option_index",
                "is not one of each item's options 0 .. n_options - 1, each once")
    _rows_where(scores["is_gold"].to_numpy() != (option == gold[item]), where, "scores.csv", "is_gold",
                "disagrees with the item's gold in items.csv")
    _rows_where(np.isnan(scores["logprob"].to_numpy(dtype=float)), where, "scores.csv", "logprob", "is not a number")
    named = frames["accuracy"]["scorer"].tolist()
    if named != scorers:
        raise ValueError(f"{where}: accuracy.csv: its scorers {named[:20]} are not meta.json's {scorers}")


def check_items(items: pd.DataFrame, scorers: list[str], where: str) -> None:
    """``items.csv`` of a run: its columns (``check_frame``), one row per item in order, and every gold and
    prediction an index into the item's options (``ValueError`` naming ``where``, the column and the row)."""
    check_frame(items, "items", scorers, f"{where}: items.csv")
    if not len(items):
        raise ValueError(f"{where}: items.csv: no items")
    _rows_where(items["item"].to_numpy() != np.arange(len(items)), where, "items.csv", "item",
                "is not its position (0, 1, 2, ... in order)")
    n_options, gold = items["n_options"].to_numpy(), items["gold"].to_numpy()
    _rows_where(n_options < 1, where, "items.csv", "n_options", "is not a number of options")
    _rows_where((gold < 0) | (gold >= n_options), where, "items.csv", "gold", "is not an index into its options")
    for s in scorers:
        pred = items[f"pred_{s}"].to_numpy()
        _rows_where((pred < -1) | (pred >= n_options), where, "items.csv", f"pred_{s}",
                    "is not an index into its options (or -1)")


def _rows_where(bad: np.ndarray, where: str, file: str, column: str, what: str) -> None:
    """A ``ValueError`` naming the first row where ``bad`` holds (1-based, after the header), if any."""
    rows = np.flatnonzero(bad)
    if len(rows):
        more = f" (and {len(rows) - 1:,} more rows)" if len(rows) > 1 else ""
        raise ValueError(f"{where}: {file}: row {rows[0] + 1}: {column} {what}{more}")
