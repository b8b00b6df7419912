"""Workbench state: set traits, update, then assert on the frames and the figure data."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import paraphrase, viz
from surfacelab.alternatives import token_view
from surfacelab.widgets import TokenHeatmap, Workbench, heatmap_rows
from surfacelab.widgets import workbench as wbmod


@pytest.fixture
def wb(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False)
    bench.premise_box.value = "The man took a bath in the"
    bench.domain_box.value = " the"
    bench.set_options([" bathtub", " soap", " milk", " mat"], ["tub, bath tub", "", "", ""], gold=0)
    return bench


def _classes(widget) -> set[str]:
    return set(widget._dom_classes)


def test_update_fills_every_view_from_the_library(wb, tiny_lm):
    wb.update()
    assert wb.message.value == ""
    frames = wb.frames()
    assert set(frames) == {"scores", "tokens", "paraphrase", "letters", "pll"}
    # view 1: the table is sl.score's table (an independent call) plus the gold column
    ref = sl.score(tiny_lm, "The man took a bath in the", [" bathtub", " soap", " milk", " mat"],
                   domain_premise=" the")
    pd.testing.assert_frame_equal(frames["scores"].drop(columns="gold"), ref.table)
    assert frames["scores"]["gold"].tolist() == [True, False, False, False]
    fig = wb.views["scores"].figure
    cells = fig.data[0].cells
    lm_col = list(fig.data[0].header.values).index("LM")
    best = int(np.argmax(ref.table["logprob"]))
    assert cells.fill.color[lm_col][best] == viz.WINNER_FILL
    assert cells.values[0][0].startswith("★")
    # view 2: token rows for 4 options x 2 conditions, contribution sums to dcpmi
    tv = frames["tokens"]
    assert set(tv["condition"]) == {"premise", "domain"}
    sums = tv[tv["condition"] == "premise"].groupby("option")["contribution"].sum()
    np.testing.assert_allclose(sums.loc[ref.table["option"]].to_numpy(), ref.table["dcpmi"].to_numpy(), atol=1e-4)
    assert len(wb.heatmap.rows) == 4 * 3  # premise, domain and contribution row per option
    # view 3: the options' paraphrases are concept forms
    forms = wb.views["paraphrase"].frames["forms"]
    assert forms.loc[forms["concept"] == "bathtub", "form"].tolist() == [" bathtub", " tub", " bath tub"]
    # view 4: one row per ID
    assert frames["letters"]["id"].tolist() == ["A", "B", "C", "D"]
    # view 5: premise+option sentences under the three metrics
    assert set(frames["pll"]["metric"]) == {"original", "word_l2r", "whole_word"}
    assert set(frames["pll"]["sentence"]) == {"The man took a bath in the" + o for o in wb.options}
    for name in wbmod.VIEWS:
        assert "sl-view-ready" in _classes(wb.views[name].box)


def test_editing_the_premise_changes_the_table(wb):
    wb.update()
    before = wb.frames()["scores"]["logprob"].to_numpy()
    wb.premise_box.value = "The woman went to the store because she needed"
    wb.update()
    after = wb.frames()["scores"]["logprob"].to_numpy()
    assert not np.allclose(before, after)


def test_options_add_remove_reorder_and_gold(wb):
    wb.add_option(" eggs")
    assert wb.options == [" bathtub", " soap", " milk", " mat", " eggs"]
    wb.move_option(4, -10)
    assert wb.options[0] == " eggs" and wb.gold == 1  # gold follows its option
    wb.remove_option(1)
    assert " bathtub" not in wb.options and wb.gold is None
    wb.rows[2].gold.value = True
    wb.rows[0].gold.value = True
    assert wb.gold == 0  # one gold at a time
    wb.update()
    assert wb.frames()["scores"]["option"].tolist() == wb.options
    with pytest.raises(ValueError, match="index"):
        wb.remove_option(9)


def test_bad_input_is_a_message_not_an_exception(wb):
    wb.set_options([" bathtub", " bathtub"], gold=0)
    wb.update()  # must not raise
    assert "duplicate" in wb.message.value
    assert "sl-view-error" in _classes(wb.views["scores"].box)
    assert wb.views["scores"].data is None
    wb.set_options([" bathtub", ""])
    wb.update()
    assert "must not be empty" in wb.message.value


def test_missing_module_shows_not_available(wb, monkeypatch):
    real = wbmod._optional
    monkeypatch.setattr(wbmod, "_optional", lambda m: None if m == "letters" else real(m))
    wb.update()
    assert "not available: surfacelab.letters not installed yet" in wb.views["letters"].message
    assert "letters" not in wb.frames() and "scores" in wb.frames()


def test_live_edits_are_debounced_into_one_update(tiny_lm, tiny_mlm, monkeypatch):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.2)
    calls = []
    original = bench.update
    monkeypatch.setattr(bench, "update", lambda: (calls.append(time.monotonic()), original())[1])
    for text in ["The cat", "The cat sat", "The cat sat on the"]:
        bench.premise_box.value = text
    bench.wait(60)
    assert len(calls) == 1
    assert set(bench.frames()["pll"]["sentence"]) == {"The cat sat on the" + o for o in bench.options}


def test_export_html_csv(wb, tmp_path):
    wb.update()
    assert wb.export("scores", tmp_path / "s.csv").read_text().startswith("option,gold,")
    assert "plotly" in wb.export("tokens", tmp_path / "t.html").read_text()[:5000].lower()
    with pytest.raises(ValueError, match="view"):
        wb.export("nope", tmp_path / "x.png")


def test_example_sources(wb, monkeypatch, tmp_path):
    wb.source_picker.value = "teaching set"
    assert wb.example_picker.options
    item = paraphrase.load_teaching_set()[0]
    assert wb.premise_box.value == item["premise"]
    assert wb.options == [forms[0] for forms in item["concepts"].values()]
    assert wb.options[wb.gold] == item["concepts"][item["answer"]][0]
    monkeypatch.setenv("SURFACELAB_DATA", str(tmp_path / "nowhere"))
    wb.source_picker.value = "copa"
    assert "⚠" in wb.message.value and not wb.example_picker.options


def test_heatmap_rows_handle_thousands_of_tokens(tiny_lm):
    r = sl.score(tiny_lm, "The man", [" took a bath in the bathtub" * 4], domain_premise=" the")
    tv = token_view(tiny_lm, r, k=2)
    big = pd.concat([tv.assign(option=f"o{i}") for i in range(60)], ignore_index=True)
    start = time.perf_counter()
    rows = heatmap_rows(big)
    widget = TokenHeatmap()
    widget.rows = rows
    assert time.perf_counter() - start < 5
    assert sum(len(row["token"]) for row in rows) == 3 * len(tv[tv["condition"] == "premise"]) * 60
    assert "sl-token-heatmap" in _classes(widget)
    assert "addEventListener" in str(widget._esm) and "--jp-content-font-color1" in str(widget._css)


def test_bad_constructor_arguments(tiny_lm, tiny_mlm):
    with pytest.raises(ValueError, match="debounce"):
        Workbench(lm=tiny_lm, mlm=tiny_mlm, debounce=-1)
    with pytest.raises(ValueError, match="top_k"):
        Workbench(lm=tiny_lm, mlm=tiny_mlm, top_k=0)


def test_construction_does_not_start_an_update(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.01)
    time.sleep(0.1)
    bench.wait(10)
    assert bench.frames() == {} and bench.last_update_s is None
