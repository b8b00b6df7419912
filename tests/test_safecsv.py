"""Spreadsheet-safe CSV: a text cell that a spreadsheet would run as a formula is written behind a quote, numbers stay
numbers, and reading back drops exactly the quotes that writing added; MCResult and MassResult write it."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from spreadsheet import HOSTILE, PLAIN, check_cells
from surfacelab import paraphrase, safecsv


@pytest.mark.parametrize("value", HOSTILE + PLAIN + ["''=1", "'", "", "-", "a=b"])
def test_escaping_is_undone_exactly(value):
    assert safecsv.restore(safecsv.escape(value)) == value


def test_a_frame_written_and_read_back_is_the_frame():
    frame = pd.DataFrame({"text": HOSTILE + PLAIN, "logprob": -np.arange(len(HOSTILE + PLAIN)) - 0.25,
                          "right": [True, False] * 5 + [True], "rank": pd.array([1, None] * 5 + [2], dtype="Int64")})
    text = safecsv.to_csv(frame)
    assert check_cells(text, frame) == len(HOSTILE)
    back = pd.read_csv(io.StringIO(text, newline=""), keep_default_na=False, dtype={"text": str})
    assert back["text"].map(safecsv.restore).tolist() == frame["text"].tolist()
    assert back["logprob"].tolist() == frame["logprob"].tolist()  # -0.25, -1.25, ...: numbers, not text


def test_mcresult_and_massresult_write_spreadsheet_safe_csv(tiny_lm, tmp_path):
    with pytest.warns(UserWarning, match="glued to the premise"):  # the options start without a space
        r = sl.score(tiny_lm, "@SUM(A1) The man took a bath in the", HOSTILE[:4] + [" bathtub"],
                     domain_premise="-so", cache=False)
    assert check_cells(r.save(tmp_path / "r.csv"), r.table) == 4
    assert (r.table["logprob"] < 0).all()
    m = paraphrase.mass(tiny_lm, "The man took a bath in the", {"=HYPERLINK(\"http://x\")": [" tub"],
                                                                "-2+3": [" sink"], "'=1": [" bath"]}, top_k=0)
    assert check_cells(m.save(tmp_path / "m.csv"), m.concepts) >= 3
