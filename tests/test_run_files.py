"""A run's folder: EvalResult.save writes spreadsheet-safe CSV that loads back exactly, and EvalResult.load (so
explore.load_session) refuses a folder that is not a whole, consistent run, naming the folder, the file and the column
or row, before anything shows it, and fast."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from spreadsheet import HOSTILE, PLAIN, check_cells, hostile_task
from surfacelab import explore
from surfacelab.evaluate import evaluate
from surfacelab.runs import EvalResult
from surfacelab.run_files import MAX_ITEMS

FRAMES = ("items", "scores", "accuracy", "paired", "labels")
LOGS = Path(__file__).resolve().parent / "lm_eval_logs" / "out"


@pytest.fixture(scope="module")
def run(tiny_lm) -> EvalResult:
    return evaluate(tiny_lm, hostile_task(), ["lm", "dcpmi"], n_boot=20, progress=False)


@pytest.fixture
def saved(run, tmp_path):
    return run.save(tmp_path / "run")


def test_a_saved_run_is_spreadsheet_safe_cell_by_cell_and_loads_back_exactly(run, saved):
    escaped = {name: check_cells(saved / f"{name}.csv", getattr(run, name)) for name in FRAMES}
    # ids, premises, options, contexts and domain premises that start like formulas were all there, behind a quote
    assert escaped["items"] >= 3 * len(HOSTILE) and escaped["scores"] >= 3 * len(HOSTILE)
    assert (run.scores["logprob"] < 0).all()  # negative numbers: written as numbers (checked cell by cell above)
    back = EvalResult.load(saved)
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(back, name), getattr(run, name), check_dtype=False)
    assert back.items["id"].tolist() == HOSTILE + PLAIN  # "None", "NA" and "1.50" come back as text, as written


def _write(frame: pd.DataFrame, path) -> None:
    """A frame of the file's text cells written back as they were (\r\n line ends: a cell holds a bare \r)."""
    frame.to_csv(path, index=False, lineterminator="\r\n")


def _edit(folder, name: str, change) -> None:
    frame = pd.read_csv(folder / f"{name}.csv", keep_default_na=False, dtype=str)
    frame = change(frame)
    _write(frame, folder / f"{name}.csv")


def _refused(folder, *parts: str) -> str:
    t0 = time.perf_counter()
    with pytest.raises(ValueError) as err:
        EvalResult.load(folder)
    message = str(err.value)
    assert str(folder) in message and all(p in message for p in parts), message
    assert time.perf_counter() - t0 < 10
    return message


def _set(column: str, row: int, value: str):
    def change(frame):
        frame.loc[row, column] = value
        return frame
    return change


@pytest.mark.parametrize("value, what", [("99", "gold is not an index into its options"),
                                         ("-1", "gold is not an index into its options"),
                                         ("1.5", "column 'gold' must hold integers; row 3 holds 1.5")])
def test_a_gold_that_is_not_an_option_index_is_refused(saved, value, what):
    _edit(saved, "items", _set("gold", 2, value))
    message = _refused(saved, "items.csv", what)
    assert "1.5" in message or "row 3" in message


def test_a_prediction_out_of_range_and_a_missing_column_are_refused(saved):
    _edit(saved, "items", _set("pred_dcpmi", 4, "7"))
    _refused(saved, "items.csv: row 5: pred_dcpmi is not an index")
    _edit(saved, "items", lambda f: f.drop(columns=["premise"]))
    _refused(saved, "items.csv: no column 'premise'")


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_a_csv_in_another_encoding_is_refused(saved, encoding):
    text = (saved / "scores.csv").read_text(encoding="utf-8").replace("bathtub", "bäthtub")
    (saved / "scores.csv").write_bytes(text.encode(encoding))
    _refused(saved, "scores.csv: not UTF-8 text")


def test_option_rows_that_do_not_match_the_items_are_refused(saved):
    _edit(saved, "scores", _set("option_index", 3, "0"))  # item 1 has option 0 twice and no option 1
    _refused(saved, "scores.csv: row", "item / option_index is not one of each item's options")
    _edit(saved, "scores", lambda f: f.drop(index=[5]))
    _refused(saved, "scores.csv has 21 rows, items.csv's items have 22 options")
    _edit(saved, "scores", _set("option_index", 3, "1"))  # back in place, one row still missing: same message
    _refused(saved, "scores.csv has 21 rows")


def test_a_scorer_in_meta_without_its_columns_is_refused(saved):
    meta = json.loads((saved / "meta.json").read_text())
    meta["scorers"] = ["lm", "dcpmi", "avg"]
    (saved / "meta.json").write_text(json.dumps(meta))
    _refused(saved, "items.csv: no column 'pred_avg'")


def test_200000_items_with_12_option_rows_are_refused_at_once(saved):
    items = pd.read_csv(saved / "items.csv", keep_default_na=False, dtype=str)
    many = items.loc[np.resize(np.arange(len(items)), MAX_ITEMS)].reset_index(drop=True)
    many["item"] = np.arange(MAX_ITEMS)
    _write(many, saved / "items.csv")
    _edit(saved, "scores", lambda f: f.iloc[:12])
    t0 = time.perf_counter()
    _refused(saved, "scores.csv has 12 rows, items.csv's items have 400,000 options")
    assert time.perf_counter() - t0 < 5
    _write(many.loc[np.resize(np.arange(MAX_ITEMS), MAX_ITEMS + 1)].assign(item=np.arange(MAX_ITEMS + 1)),
           saved / "items.csv")
    _refused(saved, f"items.csv: more than {MAX_ITEMS:,} rows")


def test_files_that_are_no_regular_files_are_refused(saved, tmp_path):
    (saved / "labels.csv").unlink()
    (saved / "labels.csv").symlink_to("/dev/zero")
    _refused(saved, "labels.csv is a character device (a link to /dev/zero), not a regular file")
    (saved / "labels.csv").unlink()
    os.mkfifo(saved / "labels.csv")
    _refused(saved, "labels.csv is a FIFO (named pipe), not a regular file")
    (saved / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    _refused(saved, "meta.json")


def _tiled(run: EvalResult, n: int) -> EvalResult:
    """``run``'s items repeated up to ``n`` items (ids made unique), a valid run of that size."""
    pick = np.resize(np.arange(len(run.items)), n)
    items = run.items.iloc[pick].reset_index(drop=True).assign(item=np.arange(n))
    items["id"] = [f"{i}-{k}" for k, i in enumerate(items["id"])]
    rows = np.flatnonzero(run.scores["item"].to_numpy() == pick[:, None])  # ordered by new item, then option
    rows = rows % len(run.scores)
    scores = run.scores.iloc[rows].reset_index(drop=True)
    scores["item"] = np.repeat(np.arange(n), run.items["n_options"].to_numpy()[pick])
    scores["id"] = items["id"].to_numpy()[scores["item"].to_numpy()]
    return dataclasses.replace(run, items=items, scores=scores)


@pytest.mark.filterwarnings("ignore:Truncated to fit")  # ARC's questions are longer than the tiny model's window
def test_a_full_mmlu_sized_run_loads(tiny_lm, tmp_path):
    arc = evaluate(tiny_lm, sl.tasks.load("arc-challenge", "test", limit=6), ["lm", "dcpmi"], n_boot=0,
                   progress=False)
    assert set(arc.items["n_options"]) == {4}
    big = _tiled(arc, 14_042)  # MMLU's test split: 14,042 items of 4 options
    big.save(tmp_path / "big")
    t0 = time.perf_counter()
    back = EvalResult.load(tmp_path / "big")
    seconds = time.perf_counter() - t0
    assert len(back.items) == 14_042 and len(back.scores) == 4 * 14_042
    assert seconds < 10, seconds


def test_a_session_with_a_broken_run_is_refused_before_anything_is_returned(run, tmp_path):
    explore.save_session(tmp_path / "s", {"a": run, "b": run}, {})
    _edit(tmp_path / "s" / "run-1", "items", _set("gold", 0, "99"))
    with pytest.raises(ValueError, match=r"run-1.*items.csv: row 1: gold is not an index into its options"):
        explore.load_session(tmp_path / "s")


def test_an_lm_eval_run_round_trips(tmp_path):
    log = sl.from_lm_eval(LOGS)
    back = EvalResult.load(log.save(tmp_path / "log"))
    for name in FRAMES:
        pd.testing.assert_frame_equal(getattr(back, name), getattr(log, name), check_dtype=False)


def test_a_run_saved_before_items_kept_their_task_loads_as_one_task(run, saved):
    _edit(saved, "items", lambda f: f.drop(columns="task"))
    back = EvalResult.load(saved)
    assert back.items["task"].tolist() == [run.task] * len(run.items)
    assert list(back.items.columns) == list(run.items.columns)


def test_a_whole_mmlu_log_run_round_trips_with_each_items_task(tmp_path):
    log = sl.from_lm_eval(Path(__file__).resolve().parent / "logs" / "lm_eval_mmlu" / "zero_shot", n_boot=20)
    back = EvalResult.load(log.save(tmp_path / "log"))
    pd.testing.assert_frame_equal(back.items, log.items, check_dtype=False)
    assert back.items["task"].nunique() == 57
    assert sl.by_task(back).equals(sl.by_task(log))
