"""Workbench state: set traits, update, then assert on the frames, the messages, the classes and the widgets."""

from __future__ import annotations

import json
from html import escape as html_escape
import threading
import time

import numpy as np
import pandas as pd
import pytest
from ipywidgets.widgets import widget as ipy_widget

import surfacelab as sl
from surfacelab import paraphrase
from surfacelab.alternatives import token_view
from surfacelab.models.progress import FIRST_STEP
from surfacelab.widgets import (VIEWS, Inputs, TokenHeatmap, ViewState, Workbench, heatmap_rows, problems, read_state,
                                register_view)
from surfacelab.widgets.workbench import models as loading
from surfacelab.widgets.workbench import updates as scheduler
from surfacelab.widgets.workbench.views import base as view_mod
from surfacelab.widgets.workbench.views import paraphrase as paraphrase_view
from surfacelab.widgets.workbench.views import scores as scores_view
from surfacelab.widgets.workbench.views import why as why_view
from surfacelab.widgets.kit import files as kit_files
from surfacelab.widgets.workbench import messages as messages_mod
from surfacelab.widgets.workbench import widget as wbmod

PREMISE = "The man took a bath in the"
OPTIONS = [" bathtub", " soap", " milk", " mat"]


@pytest.fixture
def wb(tiny_lm, tiny_mlm, tmp_path):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path / "exports")
    bench.premise_box.value = PREMISE
    bench.domain_box.value = " the"
    bench.set_options(OPTIONS, ["tub, bath tub", "", "", ""], gold=0)
    yield bench
    bench.close()


def _classes(widget) -> set[str]:
    return set(widget._dom_classes)


def _messages(bench: Workbench) -> list[str]:
    return [m for m in bench.message.value.split("<li") if "sl-problem" in m]


def test_update_fills_every_view_from_the_library(wb, tiny_lm, tiny_mlm):
    wb.update()
    assert wb.message.value == ""
    frames = wb.frames()
    assert set(frames) == {"scores", "tokens", "paraphrase", "letters", "pll", "why"}
    # view 1: the table is sl.score's table (an independent call) plus the gold column
    ref = sl.score(tiny_lm, PREMISE, OPTIONS, domain_premise=" the")
    pd.testing.assert_frame_equal(frames["scores"].drop(columns="gold"), ref.table)
    assert frames["scores"]["gold"].tolist() == [True, False, False, False]
    best = int(np.argmax(ref.table["logprob"]))
    html = wb.views["scores"].table.value
    assert html.count("sl-win") >= 1 and "★" in html and "␣bathtub" in html
    assert "sl-task-scorers" in html and "Channel" in html and "choices-only" in html  # scored per task, said where
    # the calibrations of a task's items are named under the table with the reason one item has none
    note = html.split("sl-not-shown", 1)[1]
    assert "BC: not applicable to one item: Batch Calibration divides by the mean label distribution of a run" in note
    assert "DomainCal: not applicable to one item" in note and ">BC<" not in html
    assert wb.views["scores"].figure.data[0].cells.values[0][best].replace("\u00a0", " ").strip("★ ")  # exports
    # view 2: token rows for 4 options x 2 conditions, contribution sums to dcpmi
    tv = frames["tokens"]
    assert set(tv["condition"]) == {"premise", "domain"}
    sums = tv[tv["condition"] == "premise"].groupby("option")["contribution"].sum()
    np.testing.assert_allclose(sums.loc[ref.table["option"]].to_numpy(), ref.table["dcpmi"].to_numpy(), atol=1e-4)
    assert len(wb.views["tokens"].heatmap.rows) == 4 * 3  # premise, domain and contribution row per option
    # view 3: the options' paraphrases are concept forms, with the option's leading space
    forms = wb.views["paraphrase"].frames["forms"]
    assert forms.loc[forms["concept"] == "bathtub", "form"].tolist() == [" bathtub", " tub", " bath tub"]
    spec = wb.views["paraphrase"].plot.figure
    assert spec["data"] and wb.views["paraphrase"].plot.revision >= 1
    # view 4: one row per ID, the prompt and each method's pick are shown
    assert frames["letters"]["id"].tolist() == ["A", "B", "C", "D"]
    detail = wb.views["letters"].detail.value
    assert "the prompt the model reads" in detail and "calibrated → <b>" in detail and "bathtub" in detail
    assert "Batch Calibration" in detail and "domain-context calibration" in detail  # the set-level methods named
    # view 5: premise+option sentences under the three metrics, totals and a winner per metric
    pll = wb.views["pll"]
    assert set(frames["pll"]["metric"]) == {"original", "word_l2r", "whole_word"}
    assert set(frames["pll"]["sentence"]) == {PREMISE + o for o in OPTIONS}
    totals = pll.frames["totals"]
    ref_pll = sl.pll(tiny_mlm, [PREMISE + o for o in OPTIONS], metric="original", progress=False).scores
    np.testing.assert_allclose(totals["original"].to_numpy(), ref_pll, atol=1e-5)
    assert totals["winner_original"].tolist() == list(ref_pll == ref_pll.max())
    for name in VIEWS:
        assert "sl-view-ready" in _classes(wb.views[name].box)
        assert not _classes(wb.views[name].box) & {"sl-stale", "sl-busy", "sl-view-error"}


def test_editing_marks_affected_views_stale_until_updated(wb):
    wb.update()
    before = wb.frames()["scores"]["logprob"].to_numpy()
    wb.domain_box.value = " a"  # the letters and PLL views do not read the domain premise
    stale = {n for n, v in wb.views.items() if "sl-stale" in _classes(v.box)}
    assert stale == {"scores", "tokens", "paraphrase", "why"}
    assert "press Score" in wb.views["scores"].cue.value  # a visible cue, not only a class
    wb.premise_box.value = "The woman went to the store because she needed"
    assert all("sl-stale" in _classes(v.box) for v in wb.views.values())
    wb.update()
    assert not any("sl-stale" in _classes(v.box) for v in wb.views.values())
    assert not np.allclose(before, wb.frames()["scores"]["logprob"].to_numpy())


def test_views_built_on_the_scores_never_read_an_older_input_s(wb):
    wb.update()
    wb.rows[1].text.value = "soap"  # the scorer view still shows " soap"'s scores (no update yet)
    tokens = wb.views["tokens"].compute(wb.inputs())  # as a thread that computes it before the scorer view
    assert list(dict.fromkeys(tokens["option"])) == wb.options
    account = wb.views["why"].compute(wb.inputs())
    assert account.options == wb.options


def test_busy_class_while_a_view_computes(wb, monkeypatch):
    wb.update()
    seen = {}
    real = wb.views["letters"].compute

    def spy(inp):
        seen["classes"] = _classes(wb.views["letters"].box)
        seen["cue"] = wb.views["letters"].cue.value
        return real(inp)

    monkeypatch.setattr(wb.views["letters"], "compute", spy)
    wb.premise_box.value = "A new premise for the"
    wb.update()
    assert {"sl-stale", "sl-busy"} <= seen["classes"] and "computing" in seen["cue"]
    assert "sl-busy" not in _classes(wb.views["letters"].box)


def test_options_add_remove_reorder_and_gold(wb):
    wb.add_option(" eggs")
    assert wb.options == [" bathtub", " soap", " milk", " mat", " eggs"]
    wb.move_option(4, -10)
    assert wb.options[0] == " eggs" and wb.gold == 1  # gold follows its option
    assert [r.number.value for r in wb.rows] == ["1", "2", "3", "4", "5"]  # people count from 1
    wb.remove_option(1)
    assert " bathtub" not in wb.options and wb.gold is None
    wb.rows[2].gold.value = True
    wb.rows[0].gold.value = True
    assert wb.gold == 0  # one gold at a time
    wb.update()
    assert wb.frames()["scores"]["option"].tolist() == wb.options
    with pytest.raises(ValueError, match="index"):
        wb.remove_option(9)


def test_gold_must_be_an_index(wb):
    for bad in (True, 1.0, "1", 4, -1):
        with pytest.raises(ValueError, match="gold"):
            wb.set_options(OPTIONS, gold=bad)
    assert wb.options == OPTIONS and wb.gold == 0  # a refused call changes nothing
    wb.set_options(OPTIONS, gold=np.int64(2))
    assert wb.gold == 2


def test_set_options_fills_the_rows_there_are_and_makes_or_drops_the_rest(wb):
    rows = list(wb.rows)
    wb.rows[1].paraphrases.value = "soaps"
    wb.set_options([" a", " b\nc", " d", " e"], gold=3)
    assert wb.rows == rows and list(wb.option_list.box.children) == rows  # the same widgets, the browser keeps them
    assert wb.options == [" a", " b\nc", " d", " e"] and wb.gold == 3
    assert [r.paraphrases.value for r in wb.rows] == [""] * 4 and [r.number.value for r in wb.rows] == list("1234")
    wb.set_options([" x", " y"], ["ys", ""])
    assert wb.rows == rows[:2] and list(wb.option_list.box.children) == rows[:2] and wb.gold is None
    assert all(r.comm is None for r in rows[2:])  # the rows dropped are closed
    wb.set_options([" x", " y", " z"], gold=2)
    assert wb.rows[:2] == rows[:2] and wb.rows[2] not in rows and len(wb.option_list.box.children) == 3
    wb.update()
    assert wb.frames()["scores"]["option"].tolist() == [" x", " y", " z"] and wb.gold == 2


def test_an_option_overwritten_drops_its_paraphrases_and_gets_them_back_when_typed_back(wb):
    # " sink" overwritten with " pool" kept "basin, washbasin", scored as paraphrases of " pool"
    wb.set_options([" bathtub", " sink", " pool"], ["tub", "basin, washbasin", ""], gold=0)
    row = wb.rows[1]
    row.text.value = " sinks"  # the same word, edited: its paraphrases stay
    assert row.paraphrases.value == "basin, washbasin"
    row.text.value = " p"  # the word selected and typed over
    row.text.value = " pond"
    assert row.paraphrases.value == "" and "basin, washbasin" in row.paraphrases.placeholder
    assert row.forms() == ()
    row.text.value = " sink"  # undone: nothing was lost
    assert row.paraphrases.value == "basin, washbasin" and "cleared" not in row.paraphrases.placeholder
    row.text.value = ""  # emptied, then paraphrases typed for a new option: those are kept with it
    row.paraphrases.value = "lake"
    row.text.value = " pond"
    assert row.paraphrases.value == "lake"
    wb.set_options([" bathtub", " pool"], ["tub", "swimming pool"])  # set together: the paraphrases are the option's
    assert [r.paraphrases.value for r in wb.rows] == ["tub", "swimming pool"]
    assert wb.inputs().paraphrases == ((" tub",), (" swimming pool",))


def test_before_the_first_update_one_line_stands_for_the_views(tiny_lm, tiny_mlm, tmp_path):
    # the workbench under an explorer showed six "not computed yet" panels until a row was clicked
    from surfacelab.widgets import Explorer

    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=3600.0)
    assert bench.grid.layout.display == "none" and bench.empty_line.layout.display != "none"
    assert "Score" in bench.empty_line.value and bench.empty_line in bench.children
    ex = Explorer(tiny_lm, workbench=bench, task="copa", n=4, folder=tmp_path / "session")
    assert "Click a row of the explorer" in bench.empty_line.value and bench.grid.layout.display == "none"
    bench.rows[1].text.value = ""  # a problem before any update: the views show what they wait for
    bench.update()
    assert bench.grid.layout.display != "none" and bench.empty_line.layout.display == "none"
    assert all(v.state == ViewState.BLOCKED for v in bench.views.values())
    bench.rows[1].text.value = " sink"
    bench.update()
    assert all(v.state == ViewState.READY for v in bench.views.values())
    ex.close()
    bench.close()


def test_export_dir_none_uses_the_default_folder(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=None)
    default = kit_files.DEFAULT_EXPORT_DIR
    assert bench.exporter.export_dir == default and bench.exporter.folder_box.value == str(default)
    with pytest.raises(TypeError, match="export_dir"):
        Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=3)
    bench.close()


def test_one_message_per_problem_numbered_from_one(wb, monkeypatch):
    calls = []
    monkeypatch.setattr(scores_view, "score_items", lambda *a, **k: calls.append(a))
    wb.set_options([" bathtub", "", " milk", " bathtub"], gold=0)
    wb.update()
    msgs = _messages(wb)
    assert len(msgs) == 2, msgs
    assert "Option 2 is empty" in msgs[0]
    assert "Options 1 and 4 are the same text, &#x27;␣bathtub&#x27;" in msgs[1]
    assert not calls  # nothing was scored
    assert all("sl-blocked" in _classes(v.box) for v in wb.views.values())
    assert "waiting for valid inputs" in wb.views["pll"].cue.value


def test_messages_and_the_status_line_follow_each_keystroke_before_the_update(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=3600.0)  # no update runs in this test
    bench.update()
    bench.rows[1].text.value = ""
    assert "Option 2 is empty" in bench.message.value and bench.status.value == messages_mod.BLOCKED_STATUS
    assert all(v.state == ViewState.BLOCKED for v in bench.views.values())
    bench.rows[1].text.value = " s"  # refilled: the message and the blocked status go at once
    assert bench.message.value == "" and bench.status.value != messages_mod.BLOCKED_STATUS
    assert all(v.state == ViewState.STALE for v in bench.views.values())
    bench.rows[2].paraphrases.value = "s"  # a form of option 2 as a paraphrase of 3: the paraphrase view waits
    assert bench.views["paraphrase"].state == ViewState.BLOCKED and bench.views["scores"].state == ViewState.STALE
    bench.close()


def test_empty_premise_and_single_option_are_refused_in_words(wb):
    wb.premise_box.value = "   "
    wb.set_options([" bathtub"])
    wb.update()
    text = wb.message.value
    assert "The premise is empty" in text and "Add at least two options" in text and "n/a" not in text
    assert wb.frames() == {}


def test_glued_option_is_marked_and_fixed_in_one_click(wb):
    wb.premise_box.value = "He poured the coffee into a"
    wb.set_options([" mug", "cup"], ["", "teacup, glass"], gold=1)
    row = wb.rows[1]
    assert "sl-space-no" in row.join.value and row.fix.layout.display != "none"
    assert "sl-glued" in _classes(row) and "sl-space-yes" in wb.rows[0].join.value
    assert wb.rows[0].fix.layout.display == "none"
    assert "acup" in row.join.value  # the join as the model reads it
    wb.update()
    notice = _messages(wb)
    assert len(notice) == 1 and "Option 2" in notice[0] and "glued" in notice[0]
    # paraphrases take their option's leading space: the paraphrase view scores what the table scores
    forms = wb.views["paraphrase"].frames["forms"]
    assert forms["form"].tolist() == [" mug", "cup", "teacup", "glass"]
    assert set(wb.frames()["scores"]["option"]) <= set(forms["form"])
    row.fix.click()
    assert wb.options == [" mug", " cup"] and "sl-space-yes" in row.join.value
    assert row.fix.layout.display == "none" and wb.option_list.fix_button.layout.display == "none"
    wb.update()
    assert _messages(wb) == []
    assert wb.views["paraphrase"].frames["forms"]["form"].tolist() == [" mug", " cup", " teacup", " glass"]


def test_fix_all_leading_spaces(wb):
    wb.premise_box.value = "He poured the coffee into a"
    wb.set_options(["mug", "cup", " bowl"])
    fix = wb.option_list.fix_button
    assert fix.layout.display != "none" and "2 glued options" in fix.description
    wb.option_list.fix_button.click()
    assert wb.options == [" mug", " cup", " bowl"]


def test_an_option_with_a_line_break_keeps_it_through_an_edit_of_its_box(wb, tmp_path):
    # SST-2's options end in a line break; a browser's one-line box drops it from what it shows, and the first
    # keystroke would send the box's text back without it: the box shows it as a mark and reads the mark back
    wb.set_options([" negative\n", " positive\n"], gold=1)
    row = wb.rows[0]
    assert row.text.value == " negative↵" and "\n" not in row.text.value
    assert wb.options == [" negative\n", " positive\n"] and wb.inputs().options == (" negative\n", " positive\n")
    row.text.value = row.text.value + "x"  # what the browser sends: End, x, then Backspace
    row.text.value = row.text.value[:-1]
    assert wb.options == [" negative\n", " positive\n"]
    wb.update()
    assert wb.views["scores"].data["option"].tolist() == [" negative\n", " positive\n"]
    assert "<code>negative↵</code>" in row.join.value
    assert Workbench.from_state(wb.save_state(tmp_path / "s.json"), lm=wb.lm, mlm=wb.mlm,
                                live=False).options == [" negative\n", " positive\n"]
    row.text.value = "negative↵"  # the add-␣ fix keeps the line break too
    row.fix.click()
    assert wb.options[0] == " negative\n"


def test_paraphrase_view_names_shared_forms_and_credits_nothing_twice(wb):
    wb.set_options([" bathtub", " tub", " sink"], ["tub, bath tub", "", "basin"], gold=0)
    wb.update()
    para = wb.views["paraphrase"]
    assert para.data is None and "sl-blocked" in _classes(para.box)
    text = wb.message.value
    assert "Paraphrase &#x27;␣tub&#x27; of option 1 is option 2" in text
    assert wb.views["scores"].data is not None  # the other views are not held up
    # two options that differ only in whitespace stay two concepts, each with its own paraphrases
    wb.set_options([" bathtub", "bathtub", " sink"], ["tub", "bath tub", ""], gold=0)
    wb.update()
    forms = wb.views["paraphrase"].frames["forms"]
    assert forms.groupby("concept", sort=False)["form"].apply(list).to_dict() == {
        "bathtub (1)": [" bathtub", " tub"], "bathtub (2)": ["bathtub", "bath tub"], "sink": [" sink"]}
    assert "differ only in whitespace" in wb.message.value
    assert "sl-blocked" in _classes(wb.views["letters"].box)


def test_paraphrase_view_names_the_winning_form_with_its_concept_and_says_what_form_dcpmi_is(wb, tiny_lm):
    """A concept is named after its option; when one of its paraphrases is the most likely of all the listed forms,
    the reading and the figure name that form and label the option's name as its concept, not as the form."""
    groups = [[" oven", " the oven", " an oven"], [" pan", " the pan", " a frying pan"]]
    forms = [f for g in groups for f in g]
    logp = dict(zip(forms, (s.total for s in sl.logprobs(tiny_lm, [(PREMISE, f) for f in forms], progress=False,
                                                          cache=False))))
    best = max(forms, key=logp.get)
    # the group holding the best form gets another of its forms as its option, so the concept is named unlike it
    options = [next(f for f in g if f != best) for g in groups]
    wb.set_options(options, [", ".join(f.strip() for f in g if f != o) for g, o in zip(groups, options)], gold=0)
    wb.update()
    para = wb.views["paraphrase"]
    concept = next(o for g, o in zip(groups, options) if best in g).strip()
    shown = "␣" + best[1:]
    assert html_escape(f"best single form: {shown!r} (concept {concept!r})") in para.text.value
    assert f"best single form: <b>{shown}</b> (concept <b>{concept}</b>)" in para.plot.figure["layout"]["title"]["text"]
    what = "the DC-PMI of each single form, log P(form|premise) − log P(form|domain premise)"
    assert html_escape(f"Form DC-PMI is {what}") in para.text.value
    hovers = " ".join(t["hovertemplate"] for t in para.plot.figure["data"])
    assert "form DC-PMI = " in hovers and "(log P(form|premise) − log P(form|domain premise))" in hovers


def test_problems_are_pure_and_repeated_paraphrases_counted_once():
    inp = Inputs("The man took a bath in the", None, (" bathtub", " sink"), ((" tub", " tub", " bathtub"), ()), 0)
    found = problems(inp)
    assert [p.blocking for p in found] == [False, False]
    assert all(p.scope == "paraphrase" for p in found)
    assert paraphrase_view.concepts_of(inp.options, inp.paraphrases).forms[0] == (" bathtub", " tub")


def test_live_edits_are_debounced_into_one_update(tiny_lm, tiny_mlm, monkeypatch):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.2)
    passes = []
    prepare = bench.prepare  # the update lanes ask for the models once per pass
    monkeypatch.setattr(bench, "prepare", lambda timing: (passes.append(time.monotonic()), prepare(timing))[1])
    log = _log_computes(bench)
    for text in ["The cat", "The cat sat", "The cat sat on the"]:
        bench.premise_box.value = text
    bench.wait(60)
    assert len(passes) == 1 and sorted(name for name, _, _ in log) == sorted(bench.views)
    assert set(bench.frames()["pll"]["sentence"]) == {"The cat sat on the" + o for o in bench.options}
    bench.close()


def test_an_edit_during_an_update_starts_over(tiny_lm, tiny_mlm, monkeypatch):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    gate = threading.Event()
    real = bench.views["paraphrase"].compute

    def slow(inp):
        gate.wait(10)
        return real(inp)

    monkeypatch.setattr(bench.views["paraphrase"], "compute", slow)
    bench.premise_box.value = "The cat sat on the"
    time.sleep(0.3)  # the update is now waiting inside the paraphrase view
    bench.premise_box.value = "The dog slept on the"
    gate.set()
    bench.wait(60)
    assert set(bench.frames()["pll"]["sentence"]) == {"The dog slept on the" + o for o in bench.options}
    assert bench.frames()["scores"]["option"].tolist() == bench.options
    assert all("sl-view-ready" in _classes(v.box) for v in bench.views.values())
    bench.close()


def test_an_edit_stops_the_forward_pass_of_a_view_it_outdates_and_spares_the_others(tiny_lm, tiny_mlm, monkeypatch):
    from surfacelab import engine

    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    letters = bench.views["letters"]
    real = letters.compute
    log = []

    def edited_meanwhile(inp, edit):  # the person edits while the view's forward pass is about to run
        edit()
        try:
            out = real(inp)
        except engine.Cancelled:
            log.append((inp.premise, "cancelled"))
            raise
        log.append((inp.premise, "done"))
        return out

    # a paraphrase is not among the letters view's inputs: its computation runs to its end
    once = iter([lambda: setattr(bench.rows[0].paraphrases, "value", "tub, bath tub, washtub")])
    monkeypatch.setattr(letters, "compute", lambda inp: edited_meanwhile(inp, next(once, lambda: None)))
    bench.premise_box.value = "The dog slept on the"
    bench.wait(60)
    assert log[0] == ("The dog slept on the", "done")
    # the premise is: its forward pass stops, and the update for the new premise draws the view
    log.clear()
    once = iter([lambda: setattr(bench.premise_box, "value", "The cat slept on the")])
    bench.premise_box.value = "The dog sat on the"
    bench.wait(60)
    assert log == [("The dog sat on the", "cancelled"), ("The cat slept on the", "done")]
    assert letters.state == ViewState.READY and letters.message == ""
    assert letters.result.question == "The cat slept on the"
    bench.close()


def _wait_for(condition, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


def _log_computes(bench: Workbench) -> list[tuple[str, float, float]]:
    """(view, start, end) of every view computation from now on (monotonic seconds)."""
    log: list[tuple[str, float, float]] = []
    for name, view in bench.views.items():
        def timed(inp, compute=view.compute, name=name):
            t = time.monotonic()
            try:
                return compute(inp)
            finally:
                log.append((name, t, time.monotonic()))
        view.compute = timed
    return log


def test_views_out_of_sight_are_computed_after_the_others_once_the_edits_pause(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    log = _log_computes(bench)
    letters = bench.views["letters"]
    letters.probe.in_sight = False  # what the browser reports for a view scrolled out of sight
    bench.premise_box.value = "The woman went to the store because she"
    time.sleep(0.1)
    edited = time.monotonic()
    bench.premise_box.value = "The woman went to the store because she needed"  # still typing
    bench.wait(60)
    assert letters.state == ViewState.READY
    assert letters.result.question == "The woman went to the store because she needed"
    when = {name: (start, end) for name, start, end in log}
    assert when["letters"][0] >= max(when[n][1] for n in ("scores", "tokens", "paraphrase", "pll"))
    assert when["letters"][0] - edited >= scheduler.BACKGROUND_IDLE_S  # not while the person types
    assert bench.views["scores"].state == ViewState.READY
    bench.close()


def test_the_status_line_keeps_the_update_time_and_says_when_the_background_is_done(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    bench.views["letters"].probe.in_sight = False
    bench.premise_box.value = "The woman went to the store because she needed"
    _wait_for(lambda: "background" in bench.status.value)  # the views in sight are drawn, letters follows
    bench.wait(60)
    took = bench.last_update_s
    assert bench.status.value == f"updated in {took:.2f} s" and bench.views["letters"].state == ViewState.READY
    bench.updates.request()  # a pass with nothing to compute (as a view coming into sight already drawn)
    bench.wait(60)
    assert bench.last_update_s == took and bench.status.value == f"updated in {took:.2f} s"
    bench.close()


def test_a_new_option_row_waits_for_its_text_without_a_warning(tiny_lm, tiny_mlm):
    # "add option" showed "Option 5 is empty" (and dimmed every view) before anyone typed
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    shown = bench.views["scores"].data.copy()
    bench.option_list.add_button.click()
    bench.wait(30)
    assert _messages(bench) == [] and "type option 5" in bench.status.value
    assert all(v.state == ViewState.READY for v in bench.views.values())
    pd.testing.assert_frame_equal(bench.views["scores"].data, shown)  # still the four options' numbers
    bench.rows[-1].text.value = " tub"  # typed: the views follow
    bench.wait(60)
    assert bench.views["scores"].data["option"].tolist()[-1] == " tub" and bench.status.value.startswith("updated")
    bench.rows[-1].text.value = ""  # typed, then erased: now it is a mistake, said as one
    bench.wait(30)
    assert any("Option 5 is empty" in m for m in _messages(bench))
    assert bench.views["scores"].state == ViewState.BLOCKED
    bench.close()


def test_the_status_time_leaves_out_a_model_load_names_it_once_and_says_where_time_went(tiny_lm, tiny_mlm, tmp_path):
    # a model switch said "updated in 112.83 s": the load counted as the update
    from surfacelab import models
    from tiny_models import tiny_causal

    import torch

    model, tokenizer = tiny_causal()
    with torch.no_grad():  # other weights than tiny_lm's: other numbers, so the views are computed again
        model.lm_head.weight.add_(0.05)
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")

    def slow_locate(cache):
        time.sleep(1.5)  # a model that takes a while to load, as a real one does
        return tmp_path / "m"

    preset = models.Preset("tiny-slow-preset", "causal", "", None, "a saved tiny model, slow to find", slow_locate)
    models.PRESETS.register(preset.name, preset)
    try:
        bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
        bench.update()
        assert "loaded" not in bench.status.value
        assert bench.progress.layout.visibility == "hidden"  # idle: no full bar left beside Score (it read as stuck)
        seen = []  # while the model loads: what the status line says, and whether the bar is in sight
        bench.status.observe(lambda ch: seen.append((ch["new"], bench.progress.layout.visibility)), "value")
        asked = time.monotonic()
        bench.models.lm_picker.value = preset.name
        bench.wait(60)
        waited = time.monotonic() - asked
        loading = [(text, shown) for text, shown in seen if text.startswith("<i>loading")]
        assert loading and all(text.count(preset.name) == 1 and shown == "visible" for text, shown in loading), loading
        assert bench.progress.layout.visibility == "hidden"
        assert bench.lm.name == preset.name and waited > 1.5
        (load,) = bench.updates.timing.loads
        assert load.name == preset.name and load.loaded and 1.5 <= load.seconds < waited
        assert bench.last_update_s < waited - 1.5 + 0.01
        assert f"· loaded {preset.name} in {load.seconds:.1f} s" in bench.status.value
        # where the time went: the load's slow step (finding the files: the 1.5 s), then each view computed
        slowest = max(load.steps, key=lambda step: step[1])
        assert slowest[0] == FIRST_STEP and 1.5 <= slowest[1] <= load.seconds
        breakdown = bench.status_line.breakdown.value
        assert "where the time went" in breakdown and html_escape(load.words()) in breakdown
        assert all(f"{html_escape(v.title)} " in breakdown for v in bench.views.values() if "lm" in v.needs), breakdown
        bench.premise_box.value = "The woman took a bath in the"  # the next edit loads nothing: no load is named
        bench.wait(60)
        assert bench.updates.timing.loads == [] and "loaded" not in bench.status.value
        assert "models loaded" not in bench.status_line.breakdown.value
        bench.close()
    finally:
        models.PRESETS.unregister(preset.name)


def test_the_status_time_runs_from_the_edit_until_the_slow_views_in_sight_are_done(tiny_lm, tiny_mlm, monkeypatch):
    # Why's full account comes after the other views (the slow lane): the time said 0.06 s for a 0.5 s wait
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    why = bench.views["why"]
    real = why.compute

    def slow(inp):
        time.sleep(0.6)  # a model on which the full account takes a while
        return real(inp)

    monkeypatch.setattr(why, "compute", slow)
    asked = time.monotonic()
    bench.premise_box.value = "The woman went to the store because she needed"
    _wait_for(lambda: why.state == ViewState.READY and why.shown_key == why.key(bench.inputs()))
    ready = time.monotonic() - asked
    bench.wait(60)
    assert 0.6 <= bench.last_update_s <= ready + 0.05
    assert bench.status.value == f"updated in {bench.last_update_s:.2f} s"
    bench.close()


@pytest.mark.timeout(120)  # a background that does not hurry when data is asked for would hang
def test_views_out_of_sight_wait_until_seen_or_asked_for(tiny_lm, tiny_mlm, monkeypatch):
    monkeypatch.setattr(scheduler, "BACKGROUND_IDLE_S", 3600.0)  # a person who keeps typing
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    letters = bench.views["letters"]
    letters.probe.in_sight = False
    bench.premise_box.value = "The woman went to the store because she needed"
    _wait_for(lambda: bench.views["scores"].state == ViewState.READY and bench.updates.main.idle)
    time.sleep(0.2)
    assert letters.state == ViewState.DEFERRED and "sl-deferred" in _classes(letters.box)
    assert "in sight" in letters.cue.value
    letters.probe.in_sight = True  # scrolled into sight: computed now
    _wait_for(lambda: letters.state == ViewState.READY)
    assert letters.result.question == "The woman went to the store because she needed"
    letters.probe.in_sight = False
    bench.premise_box.value = "The cat sat on the"
    _wait_for(lambda: bench.views["scores"].state == ViewState.READY and bench.updates.main.idle)
    assert letters.state == ViewState.DEFERRED
    frames = bench.frames()  # asking for the data brings every view up to date at once
    assert letters.state == ViewState.READY
    assert frames["letters"]["option"].tolist() == [o.strip() for o in bench.options]
    assert bench.views["letters"].result.question == "The cat sat on the"
    bench.close()


def _gate_first(view, gate: threading.Event, started: threading.Event) -> None:
    """The view's next computation waits for ``gate`` (``started`` is set when it begins); later ones do not."""
    compute = view.compute

    def gated(inp):
        if not started.is_set():
            started.set()
            gate.wait(60)
        return compute(inp)
    view.compute = gated


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", ["out of sight", "scrolled into sight", "edit it does not read"])
def test_a_background_result_overtaken_by_an_edit_never_sticks(tiny_lm, tiny_mlm, monkeypatch, case):
    monkeypatch.setattr(scheduler, "BACKGROUND_IDLE_S", 0.05)
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    letters = bench.views["letters"]
    letters.probe.in_sight = False
    gate, started = threading.Event(), threading.Event()
    _gate_first(letters, gate, started)
    bench.premise_box.value = "The woman went to the store because she needed"
    assert started.wait(30)  # letters is computing in the background for this premise
    if case == "edit it does not read":
        bench.rows[0].paraphrases.value = "tub, bath tub, washtub"
        expected = "The woman went to the store because she needed"
    else:
        bench.premise_box.value = "The cat sat on the"
        expected = "The cat sat on the"
        if case == "scrolled into sight":
            letters.probe.in_sight = True  # computed at once, beside the older computation
            _wait_for(lambda: letters.shown_key == letters.key(bench.inputs()))
    time.sleep(0.3)
    gate.set()  # the older computation ends last
    bench.wait(60)
    assert letters.result.question == expected and letters.shown_key == letters.key(bench.inputs())
    assert letters.state == ViewState.READY, letters.state
    bench.close()


@pytest.mark.timeout(120)
def test_a_result_that_lands_while_the_inputs_are_blocked_shows_as_blocked(tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    scores = bench.views["scores"]
    gate, started = threading.Event(), threading.Event()
    _gate_first(scores, gate, started)
    bench.premise_box.value = "The cat sat on the"
    assert started.wait(30)  # scores is computing for this premise
    bench.rows[1].text.value = ""  # meanwhile an option is emptied
    gate.set()
    bench.wait(60)
    assert scores.state == ViewState.BLOCKED and "waiting for valid inputs" in scores.cue.value
    assert bench.status.value == messages_mod.BLOCKED_STATUS
    bench.close()


def test_update_threads_leave_a_core_and_the_thread_default_does_not_drift(tiny_lm, tiny_mlm):
    import torch

    default = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
        seen = []
        letters = bench.views["letters"]
        compute = letters.compute
        letters.compute = lambda inp: (seen.append(torch.get_num_threads()), compute(inp))[1]
        for i in range(3):
            letters.probe.in_sight = i % 2 == 0  # in sight (foreground), then out of sight (background)
            bench.premise_box.value = f"Edit {i}: the man took a bath in the"
            bench.wait(60)
        assert seen == [2, 2, 2]
        fresh = []
        t = threading.Thread(target=lambda: fresh.append(torch.get_num_threads()))
        t.start()
        t.join()
        assert fresh == [3] and torch.get_num_threads() == 3
        bench.close()
    finally:
        torch.set_num_threads(default)


def test_no_widget_leaks_over_many_updates(wb):
    wb.update()
    registry = ipy_widget._instances
    start = len(registry)
    for i in range(5):  # a leak of even one widget per update shows as a count that grows
        wb.premise_box.value = f"Edit number {i} of the man who took a bath in the"
        wb.update()
    assert len(registry) == start
    for i in range(3):  # switching examples (2, 3, 4 options) replaces the option rows: the old ones are closed
        wb.load_example({"premise": PREMISE, "domain_premise": " the", "options": OPTIONS[: 2 + i % 3]})
        wb.update()
    wb.set_options(OPTIONS, ["tub, bath tub", "", "", ""], gold=0)
    wb.update()
    assert len(registry) == start
    wb.close()
    assert len(registry) < start


def test_export_names_are_unique_with_a_link_next_to_the_button(wb):
    wb.update()
    wb.views["scores"].box.children[-1].children[2].click()  # CSV
    wb.views["scores"].box.children[-1].children[2].click()
    files = sorted((wb.exporter.export_dir).glob("scores-*.csv"))
    assert len(files) == 2 and files[0].read_text().startswith("option,gold,")
    note = wb.views["scores"].export_note.value
    latest = max(files, key=lambda f: f.stat().st_mtime_ns)
    assert "download" in note and "data:text/csv;base64," in note and latest.name in note
    assert wb.message.value == ""  # the global message area is left alone
    assert "plotly" in wb.export("tokens", wb.exporter.export_dir / "t.html").read_text()[:5000].lower()
    with pytest.raises(ValueError, match="view"):
        wb.export("nope", wb.exporter.export_dir / "x.png")
    (wb.exporter.export_dir / "blocker").write_text("")
    wb.exporter.folder_box.value = str(wb.exporter.export_dir / "blocker")  # a file where the folder should be
    wb.views["letters"].box.children[-1].children[2].click()
    assert "export failed" in wb.views["letters"].export_note.value


def test_an_export_link_goes_when_the_view_shows_other_numbers(wb):
    wb.update()
    wb.views["scores"].export_buttons[2].click()  # CSV
    wb.views["tokens"].export_buttons[2].click()
    assert "download" in wb.views["scores"].export_note.value
    wb.update()  # the same inputs: the link still holds what the view shows
    assert "download" in wb.views["scores"].export_note.value
    wb.set_options([" bathtub", " soap", " milk"], gold=0)  # the scores change; the tokens rows of 3 options too
    wb.update()
    assert wb.views["scores"].export_note.value == "" and wb.views["tokens"].export_note.value == ""
    assert len(list(wb.exporter.export_dir.glob("scores-*.csv"))) == 1  # the file itself stays


def test_exporting_says_so_and_one_export_runs_at_a_time(wb, monkeypatch):
    wb.update()
    view = wb.views["scores"]
    seen = []
    real = view.save
    monkeypatch.setattr(view, "save", lambda path: (seen.append((view.export_note.value, [b.disabled for b in
                                                                 view.export_buttons])), real(path))[1])
    view.export_buttons[2].click()  # CSV
    assert seen == [("<span class='sl-hint'>exporting CSV…</span>", [True, True, True])]
    assert "download" in view.export_note.value and not any(b.disabled for b in view.export_buttons)


def test_a_loaded_example_is_compared_with_its_own_winner_and_old_messages_go(wb):
    wb.update()
    why = wb.views["why"]
    why.against.value = 3  # compare with the fourth option
    wb.views["scores"].export_buttons[2].click()
    assert wb.views["scores"].export_note.value
    wb.load_example({"premise": "The cat sat on the", "options": [" mat", " dog", " moon", " hat"], "gold": 0})
    assert why.against.value == why_view.AUTO and wb.views["scores"].export_note.value == ""
    wb.update()
    assert why.result.against == int(np.argmax(wb.results["scores"].table["logprob"].to_numpy())) or \
        why.result.verdict == "right"


def test_notes_use_a_mark_every_font_has(wb):
    wb.set_options([" bathtub", "sink"], gold=0)
    wb.update()
    texts = [wb.message.value] + [v.text.value for v in wb.views.values()]
    assert view_mod.INFO_MARK in wb.message.value and not any("ⓘ" in t for t in texts)


def test_state_round_trip_and_the_picker_loads_saved_states(wb, tiny_lm, tiny_mlm, tmp_path):
    wb.set_options([" bathtub", "sink"], ["tub, bath tub", "basin"], gold=1)
    path = wb.save_state(tmp_path / "state.json")
    doc = json.loads(path.read_text())
    assert doc["options"] == [" bathtub", "sink"] and doc["gold"] == 1 and doc["lm"] == tiny_lm.name
    clone = Workbench.from_state(path, lm=tiny_lm, mlm=tiny_mlm, live=False)
    assert clone.inputs() == wb.inputs() and clone.state() == wb.state()
    clone.close()
    # the "save state" button writes into the export folder; the "saved states" source lists and loads it
    wb.exporter.save_button.click()
    assert "state-" in wb.exporter.note.value and "download" in wb.exporter.note.value
    wb.set_options([" a", " b"])
    wb.examples.source_picker.value = "saved states"
    assert wb.examples.item_picker.options and wb.options == [" bathtub", "sink"] and wb.gold == 1
    with pytest.raises(ValueError, match="source"):
        read_state(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"premise": 1}')
    with pytest.raises(ValueError, match="not a surfacelab workbench state"):
        read_state(tmp_path / "other.json")
    bad = dict(doc, gold=True)
    with pytest.raises(ValueError, match="gold"):
        read_state(bad)


def test_model_load_shows_progress(wb, tmp_path, tiny_lm):
    folder = tmp_path / "tiny-folder"
    tiny_lm.model.save_pretrained(folder)
    tiny_lm.tokenizer.save_pretrained(folder)
    wb.update()
    seen = []
    wb.status.observe(lambda ch: seen.append(ch["new"]), "value")
    wb.progress.observe(lambda ch: seen.append(ch["new"]), "value")
    cues = {name: [] for name in wb.views}
    for name, v in wb.views.items():
        v.cue.observe(lambda ch, name=name: cues[name].append(ch["new"]), "value")
    wb.models.lm_picker.options = [*wb.models.lm_picker.options, str(folder)]
    wb.models.lm_picker.value = str(folder)
    wb.update()
    assert wb.lm.name == str(folder)
    texts = [s for s in seen if isinstance(s, str)]
    assert any("loading" in t and "fingerprinting" in t for t in texts), texts
    assert 0.97 in [s for s in seen if isinstance(s, float)]
    assert wb.frames()["scores"]["option"].tolist() == wb.options
    loading = {name for name, values in cues.items() if any("loading model" in v for v in values)}
    assert loading == {"scores", "tokens", "paraphrase", "letters", "why"}  # not PLL: it reads the masked LM


def test_example_sources(wb, monkeypatch, tmp_path):
    wb.examples.source_picker.value = "teaching set"
    assert wb.examples.item_picker.options
    item = paraphrase.load_teaching_set()[0]
    assert wb.premise_box.value == item["premise"]
    assert wb.options == [forms[0] for forms in item["concepts"].values()]
    assert wb.options[wb.gold] == item["concepts"][item["answer"]][0]
    for label in wb.examples.item_picker.options:  # "id: premise", cut only between words
        key, shown = label.split(": ", 1)
        premise = next(it["premise"] for it in paraphrase.load_teaching_set() if it["id"] == key)
        assert shown == " ".join(premise.split()) or (shown.endswith(" …")
                                                      and " ".join(premise.split()).startswith(shown[:-2] + " "))
    monkeypatch.setenv("SURFACELAB_DATA", str(tmp_path / "nowhere"))
    wb.examples.source_picker.value = "copa"
    assert "⚠" in wb.message.value and not wb.examples.item_picker.options


def test_a_registered_view_appears_in_new_workbenches(tiny_lm, tiny_mlm):
    import ipywidgets as w

    class Echo(view_mod.View):
        name, title, needs, order = "echo", "7 · Echo", ("premise",), 9

        def build(self):
            self.out = w.HTML()
            return [self.out]

        def compute(self, inp):
            return inp.premise.upper()

        def show(self, inp, result):
            self.frames = {"echo": pd.DataFrame({"premise": [result]})}
            self.out.value = result

    register_view(Echo)
    try:
        bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False)
        bench.update()
        assert bench.views["echo"].out.value == bench.premise_box.value.upper()
        assert "sl-view-echo" in _classes(bench.views["echo"].box) and list(bench.views)[-1] == "echo"
        bench.close()
    finally:
        VIEWS.unregister("echo")


def test_a_view_name_is_taken_once_unless_overwritten():
    class Other(view_mod.View):
        name, title = "scores", "another scorer table"

    with pytest.raises(ValueError, match="'scores' is already registered; pass overwrite=True"):
        register_view(Other)
    assert VIEWS["scores"] is scores_view.ScoresView
    register_view(Other, overwrite=True)
    try:
        assert VIEWS["scores"] is Other and list(VIEWS)[0] == "scores"  # replaced in its place
    finally:
        register_view(scores_view.ScoresView, overwrite=True)
    assert VIEWS["scores"] is scores_view.ScoresView
    with pytest.raises(TypeError, match="View subclass"):
        register_view(object)


def test_heatmap_rows_handle_thousands_of_tokens(tiny_lm):
    r = sl.score(tiny_lm, "The man", [" took a bath in the bathtub" * 4], domain_premise=" the")
    tv = token_view(tiny_lm, r, top_k=2)
    big = pd.concat([tv.assign(option=f"o{i}") for i in range(60)], ignore_index=True)
    start = time.perf_counter()
    rows = heatmap_rows(big)
    widget = TokenHeatmap()
    widget.rows = rows
    assert time.perf_counter() - start < 5
    assert sum(len(row["token"]) for row in rows) == 3 * len(tv[tv["condition"] == "premise"]) * 60
    assert "sl-token-heatmap" in _classes(widget)
    assert "getBoundingClientRect" in str(widget._esm) and "--jp-content-font-color1" in str(widget._css)
    json.dumps(rows)  # what the browser receives is plain JSON


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
    bench.close()


@pytest.fixture
def not_vllm(tmp_path):
    """A real HTTP server on 127.0.0.1 that is not a vLLM server (it answers 404 to the API)."""
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(tmp_path)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_a_bad_server_url_is_one_message_and_the_previous_model_stays(wb, tiny_lm, not_vllm, monkeypatch):
    wb.update()
    before = wb.frames()["scores"]
    wb.models.lm_picker.options = [*wb.models.lm_picker.options, "smollm2-135m"]
    for bad in ("not a url", not_vllm):
        with wb.holding():
            wb.models.lm_picker.value = "smollm2-135m"
        wb.models.server_box.value = bad
        wb.update()
        msgs = _messages(wb)
        assert len(msgs) == 1 and "sl-model-error" in msgs[0], msgs
        assert "smollm2-135m" in msgs[0] and f"still use {tiny_lm.name}" in msgs[0] and "Traceback" not in msgs[0]
        assert "server" in msgs[0] and (bad in msgs[0] or html_escape(bad) in msgs[0])
        assert len(msgs[0]) < 1000 and "\n" not in msgs[0]  # the 404 page's HTML is not pasted in whole
        assert wb.lm is tiny_lm
        assert all(v.state == ViewState.READY for v in wb.views.values()), {n: v.state for n, v in wb.views.items()}
        pd.testing.assert_frame_equal(wb.frames()["scores"], before)
    assert wb.state()["server"] == not_vllm  # the URL is kept as typed, for the user to fix
    # the previous model still answers edits; live updates do not retry the failed URL, Score does
    calls = []
    real = loading.load_lm
    monkeypatch.setattr(loading, "load_lm", lambda *a, **k: calls.append(k.get("server")) or real(*a, **k))
    wb.premise_box.value = PREMISE + " big"
    wb.updates.update(everything=False)
    assert calls == [] and wb.frames()["scores"]["option"].tolist() == OPTIONS
    assert wb.lm is tiny_lm and len(_messages(wb)) == 1
    wb.update()  # an explicit update (like Score) tries the server again
    assert calls == [not_vllm] and len(_messages(wb)) == 1
    # clearing the URL and choosing the model again removes the message
    with wb.holding():
        wb.models.lm_picker.value = tiny_lm.name
    wb.models.server_box.value = ""
    wb.update()
    assert _messages(wb) == [] and wb.lm is tiny_lm


def test_the_state_keeps_the_server_url(wb, tmp_path):
    wb.models.server_box.value = "http://127.0.0.1:1/v1"
    doc = json.loads(wb.save_state(tmp_path / "s.json").read_text())
    assert doc["server"] == "http://127.0.0.1:1/v1" and read_state(doc)["server"] == doc["server"]
    assert read_state(dict(doc, server=None))["server"] is None
    with pytest.raises(ValueError, match="server must be a URL"):
        read_state(dict(doc, server=8000))
    wb.load_state(dict(doc, server=None))
    assert wb.models.server_box.value == ""


def test_tokens_view_names_the_rows_it_shows(wb):
    wb.update()
    assert "the Δ row is their difference" in wb.views["tokens"].text.value
    wb.domain_box.value = ""
    wb.update()
    labels = [r["label"] for r in wb.views["tokens"].heatmap.rows]
    assert not any("Δ" in x for x in labels) and "Type a domain premise" in wb.views["tokens"].text.value


def test_tokens_view_says_when_the_backend_has_no_entropy(wb, monkeypatch):
    monkeypatch.setattr(type(wb.lm.backend), "has_entropy", False)
    wb.update()
    view = wb.views["tokens"]
    assert "entropy not available from this backend" in view.text.value and view.heatmap.has_entropy is False
    monkeypatch.setattr(type(wb.lm.backend), "has_entropy", True)
    wb.premise_box.value = PREMISE + " today"
    wb.update()
    assert "entropy not available" not in view.text.value and view.heatmap.has_entropy is True


def test_why_view_leaves_out_the_premise_map_of_a_long_premise_and_says_so(wb, monkeypatch):
    monkeypatch.setattr(why_view, "MAX_OCCLUDED_WORDS", 6)
    why = wb.views["why"]
    wb.premise_box.value = "The man took a bath in the"  # 7 words: over the (lowered) limit
    wb.update()
    assert why.state == ViewState.READY and why.result.meta["occlusion"] is False and why.result.attribution.empty
    assert why.premise_map.rows == [] and len(why.result.terms)  # the rest of the account is there
    assert "No premise map: the premise has 7 words" in why.text.value and "28 scored requests" in why.text.value
    wb.premise_box.value = "The man took a bath"  # 5 words: the map
    wb.update()
    assert why.result.meta["occlusion"] and not why.result.attribution.empty and why.premise_map.rows
    assert "No premise map" not in why.text.value


def test_why_view_draws_the_library_account_and_follows_gold_and_picker(wb, tiny_lm):
    wb.update()
    view = wb.views["why"]
    ref = sl.why(tiny_lm, PREMISE, OPTIONS, gold=0, domain_premise=" the", all_options=False)  # independent
    pd.testing.assert_frame_equal(view.frames["terms"], ref.terms)
    pd.testing.assert_frame_equal(view.frames["attribution"], ref.attribution)
    assert view.result.against == ref.against != 0
    # the waterfall draws the gap terms; the verdict is the library's sentence
    gap = ref.terms[ref.terms["group"] == "gap"].set_index("term")["value"]
    np.testing.assert_allclose(view.gap.figure["data"][0]["y"],
                               gap[["length", "prior per token", "premise evidence", "LM gap"]])
    verdict = ref.terms.loc[ref.terms["group"] == "verdict", "sentence"].iloc[0]
    assert ref.verdict in view.verdict.value and html_escape(verdict) in view.verdict.value
    # the premise, as written, coloured by each word's support for the gold; hover has both margins
    (row,) = view.premise_map.rows
    assert "".join(row["token"]) == PREMISE and row["mode"] == "attribution"
    removed = ref.attribution[(ref.attribution["method"] == "remove")].sort_values("start")
    coloured = [v for v in row["value"] if v is not None]
    np.testing.assert_allclose(coloured, -removed["delta_lm"].to_numpy(), atol=1e-9)
    tip = next(t for t in row["tips"] if t)
    assert any("LM margin" in line and "DC-PMI margin" in line for line in tip)
    assert any("replaced by 'something'" in line for line in tip)
    drawn = np.concatenate([t["x"] for t in view.competitors.figure["data"]])
    np.testing.assert_allclose(sorted(drawn), sorted(ref.competitors["prob"].head(10)))
    # the picker offers every option but the gold; picking one recomputes this view only
    assert [v for _, v in view.against.options] == [why_view.AUTO, 1, 2, 3]
    others = {n: v.shown_key for n, v in wb.views.items() if n != "why"}
    view.against.value = 3
    assert view.state == ViewState.STALE
    wb.update()
    assert view.result.against == 3 and view.result.gold == 0
    assert {n: v.shown_key for n, v in wb.views.items() if n != "why"} == others
    # it follows the gold marker
    wb.rows[2].gold.value = True
    wb.update()
    assert view.result.gold == 2 and view.result.against == 3
    assert [v for _, v in view.against.options] == [why_view.AUTO, 0, 1, 3]
    wb.remove_option(3)  # the picked option is gone: back to the LM winner
    wb.update()
    assert view.against.value == why_view.AUTO and view.result.against != 2
    wb.rows[2].gold.value = False  # no gold: the view says what to do
    wb.update()
    assert view.state == ViewState.READY and "Mark the gold answer" in view.verdict.value and view.data is None
    assert view.gap.figure == {} and view.premise_map.rows == []


def test_why_view_is_computed_after_the_others_and_off_the_keystroke_path(tiny_lm, tiny_mlm, monkeypatch):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    why = bench.views["why"]
    gate, entered = threading.Event(), threading.Event()
    real = why.compute

    def slow(inp):
        entered.set()
        gate.wait(30)
        return real(inp)

    monkeypatch.setattr(why, "compute", slow)
    bench.premise_box.value = "The woman took a bath in the"
    assert entered.wait(30)
    # the other views are drawn and the status says so while Why computes, with its cue
    assert bench.views["scores"].state == ViewState.READY and bench.status.value.startswith("updated in")
    assert why.state == ViewState.BUSY and "computing" in why.cue.value and "sl-busy" in _classes(why.box)
    # meanwhile its first part is shown: the library's account of the new premise without the occlusion
    # (every frame but the attribution equal to the full account's), marked as such
    full = sl.why(tiny_lm, "The woman took a bath in the", wbmod.DEFAULT_EXAMPLE["options"], gold=0,
                  domain_premise=wbmod.DEFAULT_EXAMPLE["domain_premise"], all_options=False)
    assert why.result.premise == full.premise and why.result.meta["occlusion"] is False
    assert why.result.attribution.empty and not full.attribution.empty
    pd.testing.assert_frame_equal(why.result.terms, full.terms)
    pd.testing.assert_frame_equal(why.result.competitors, full.competitors)
    assert full.verdict in why.verdict.value and why.premise_map.rows == []
    assert "first part shown" in why.cue.value and "premise map" in why.text.value
    # a new edit is answered while Why still computes
    bench.premise_box.value = "The dog took a bath in the"
    deadline = time.monotonic() + 30
    while bench.views["scores"].result.premise != "The dog took a bath in the" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bench.views["scores"].result.premise == "The dog took a bath in the" and not gate.is_set()
    gate.set()
    bench.wait(60)
    assert why.state == ViewState.READY and why.result.premise == "The dog took a bath in the"
    assert why.result.meta["occlusion"] and not why.result.attribution.empty and why.premise_map.rows
    assert "first part" not in why.cue.value and "Occlusion:" in why.text.value
    bench.close()


def test_why_first_part_is_drawn_before_the_letters_pass(tiny_lm, tiny_mlm, monkeypatch):
    """Why's first part reads the scorer view's numbers (no forward of its own): it is drawn before the letters view,
    the longest forward of the views in sight (held mid-computation here), not after it."""
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0.05)
    bench.update()
    letters, why = bench.views["letters"], bench.views["why"]
    gate, entered = threading.Event(), threading.Event()
    real = letters.compute

    def held(inp):
        entered.set()
        gate.wait(30)
        return real(inp)

    monkeypatch.setattr(letters, "compute", held)
    bench.premise_box.value = "The woman took a bath in the"
    assert entered.wait(30)
    assert why.result.premise == "The woman took a bath in the" and why.result.meta["occlusion"] is False
    assert letters.state == ViewState.BUSY and not gate.is_set()
    gate.set()
    bench.wait(60)
    assert why.state == ViewState.READY and why.result.meta["occlusion"] and letters.state == ViewState.READY
    bench.close()


def _problem_texts(options: list[str]) -> list[str]:
    return [p.text for p in problems(Inputs(PREMISE, " the", tuple(options), ((),) * len(options), None))]


def test_options_equal_after_unicode_normalisation_are_the_same_text():
    assert _problem_texts([" caf\u00e9", " mat", " cafe\u0301"]) == [
        "Options 1 and 3 are the same text written with different Unicode code points (' caf\\xe9' and "
        "' cafe\\u0301'): remove one."]


@pytest.mark.parametrize("option", ["\u200b", " \u200b", "\ufeff\u2060"])
def test_an_option_of_invisible_characters_is_blank_not_glued(option):
    found = problems(Inputs(PREMISE, " the", (" bathtub", option), ((), ()), None))
    assert len(found) == 1 and found[0].blocking and found[0].kind == "", found
    assert found[0].text.startswith("Option 2 is only whitespace and invisible characters, ")


def test_a_lone_surrogate_is_reported_once_at_its_position_within_the_option(wb, monkeypatch):
    calls = []
    monkeypatch.setattr(scores_view, "score_items", lambda *a, **k: calls.append(a))
    bad = " ca\udce9 x"
    wb.set_options([" bathtub", bad], gold=0)
    wb.update()
    msgs = _messages(wb)
    assert len(msgs) == 1 and "Option 2" in msgs[0], msgs
    with pytest.raises(ValueError) as err:
        sl.text.check_options([" bathtub", bad])
    where = "character 3 (0-based) is a byte 0xE9 that is not UTF-8"  # the library's count, within the option
    assert where in msgs[0] and where in str(err.value)
    assert not calls and all("sl-blocked" in _classes(v.box) for v in wb.views.values())
