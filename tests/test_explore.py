"""The explorer's core on real COPA items with the tiny model: chunked runs equal one run, the item table, the
filters and the rescue matrix agree with the runs' own columns, template edits, comparisons and sessions."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from large_runs import mmlu_log_run
import surfacelab as sl
from surfacelab import engine, explore, rows, tasks
from surfacelab.evaluate import evaluate
from surfacelab.runs import mcnemar

SCORERS = ["lm", "per_char", "dcpmi"]


@pytest.fixture(scope="module")
def copa():
    return tasks.load("copa", "val", limit=12)


@pytest.fixture(scope="module")
def whole(tiny_lm, copa):
    return evaluate(tiny_lm, copa, SCORERS, progress=False)


@pytest.fixture(scope="module")
def runs(tiny_lm, copa, whole):
    other = evaluate(tiny_lm, explore.retemplate(copa, domain_premise=" then"), SCORERS, progress=False)
    return {"paper": whole, "then": other}


def test_a_run_in_chunks_equals_one_run_and_reports_each_chunk(tiny_lm, copa, whole):
    seen = []
    run = explore.evaluate_in_chunks(tiny_lm, copa, SCORERS, chunk=5, first_chunk=5,
                                     on_chunk=lambda r, p: seen.append((len(r.items), p)))
    assert [n for n, _ in seen] == [5, 10, 12] and [p.done for _, p in seen] == [5, 10, 12]
    assert seen[-1][1].total == 12 and "12 / 12 items" in seen[-1][1].line()
    # other batches: float32 noise in the log-probs (1e-6), so the derived gaps agree to 1e-4
    pd.testing.assert_frame_equal(run.scores, whole.scores, atol=1e-4)
    pd.testing.assert_frame_equal(run.items, whole.items, atol=1e-4)
    pd.testing.assert_frame_equal(run.accuracy, whole.accuracy)
    pd.testing.assert_frame_equal(run.paired, whole.paired)
    pd.testing.assert_frame_equal(run.labels, whole.labels)
    assert run.meta["engine"]["requests"] == sum(len(it.options) * 2 for it in copa)
    seen.clear()  # a small first chunk, then full ones
    explore.evaluate_in_chunks(tiny_lm, copa, SCORERS, chunk=5, first_chunk=2,
                               on_chunk=lambda r, p: seen.append((len(r.items), p)))
    assert [n for n, _ in seen] == [2, 7, 12]
    with pytest.raises(ValueError, match="first_chunk: expected a positive int"):
        explore.evaluate_in_chunks(tiny_lm, copa, SCORERS, first_chunk=0)



def test_chunks_grow_from_the_second_to_the_cap_and_the_last_takes_what_is_left():
    assert explore.chunk_sizes(200) == [3, 25, 50, 100, 22]
    assert explore.chunk_sizes(500, chunk=10, first_chunk=2, max_chunk=30) == [2, 10, 20, 30] + [30] * 14 + [18]
    assert explore.chunk_sizes(2) == [2] and explore.chunk_sizes(0) == []
    assert sum(explore.chunk_sizes(1234)) == 1234
    with pytest.raises(ValueError, match="max_chunk: expected a positive int, got 0"):
        explore.chunk_sizes(10, max_chunk=0)


def test_progress_within_a_chunk_follows_its_batches_and_never_runs_ahead(tiny_lm, copa, monkeypatch, tmp_path):
    from surfacelab.engine.cache import ScoreCache

    fresh = ScoreCache(tmp_path / "scores.sqlite")  # every request forwarded: one report a batch
    monkeypatch.setattr(engine, "default_cache", lambda: fresh)
    within, chunks = [], []
    explore.evaluate_in_chunks(tiny_lm, copa, SCORERS, chunk=12, first_chunk=12, batch_size=4,
                               on_progress=within.append, on_chunk=lambda r, p: chunks.append(p.done))
    done = [p.done for p in within]
    assert chunks == [12] and len(done) >= 3  # one chunk of 12 items, reported batch by batch inside it
    assert done == sorted(set(done)) and 0 < done[0] and done[-1] == 12 and {p.total for p in within} == {12}

def test_a_cancel_keeps_the_finished_chunks(tiny_lm, copa, monkeypatch, tmp_path):
    from surfacelab.engine.cache import ScoreCache

    fresh = ScoreCache(tmp_path / "scores.sqlite")  # cached chunks forward nothing, so nothing could stop them
    monkeypatch.setattr(engine, "default_cache", lambda: fresh)
    calls = []

    def stop_after_two(run, progress):
        calls.append(progress.done)

    with engine.cancelled_when(lambda: len(calls) >= 2):
        run = explore.evaluate_in_chunks(tiny_lm, copa, SCORERS, chunk=4, first_chunk=4,
                                         on_chunk=stop_after_two)
    assert run.meta["stopped_at"] == len(run.items) == 8
    assert run.items["id"].tolist() == [it.id for it in copa.items[:8]]
    assert "stopped after 8 items" in explore.run_line(run)


def test_a_domain_premise_edit_sends_only_the_domain_requests(tiny_lm, copa):
    cache = engine.default_cache()
    first = evaluate(tiny_lm, explore.retemplate(copa, domain_premise=" and so"), SCORERS, progress=False)
    again = evaluate(tiny_lm, explore.retemplate(copa, domain_premise=" and hence"), SCORERS, progress=False)
    n = sum(len(it.options) for it in copa)
    assert cache is not None and first.meta["engine"]["requests"] == again.meta["engine"]["requests"] == 2 * n
    assert again.meta["engine"]["cached"] >= n  # every premise request; the new domain ones are forwarded
    assert f"{2 * n} requests" in explore.run_line(again)


def test_the_item_table_reads_the_runs_own_columns(runs):
    table = explore.item_table(runs)
    assert len(table) == 12 and table["id"].tolist() == runs["paper"].items["id"].astype(str).tolist()
    for name, run in runs.items():
        for s in SCORERS:
            right = run.items[f"correct_{s}"].to_numpy()
            assert [c.startswith("✓") for c in table[f"{name}:{s}"]] == right.tolist()
            options = run.scores.set_index(["item", "option_index"])["option"]
            assert [c[2:] for c in table[f"{name}:{s}"]] == [options[(i, p)] for i, p in
                                                            zip(run.items["item"], run.items[f"pred_{s}"])]
        assert table[f"{name}:why"].tolist() == run.items["why"].tolist()


def test_a_run_of_many_tasks_shows_each_items_task_and_question():
    """The real lm-eval MMLU run (57 subjects): the table's task column and filter, and each premise shown without the
    leading lines every premise of its subject shares (MMLU's subject line; the history subjects' "This question refers
    to the following information."), so that a row shows its question; the picks row by row."""
    run = mmlu_log_run()
    table = explore.item_table({"m": run})
    assert table.columns[:5].tolist() == ["item", "id", "task", "premise", "gold"]
    assert table["task"].tolist() == run.items["task"].tolist() and run.items["task"].nunique() == 57
    for task, group in run.items.groupby("task"):
        lines = [p.split("\n") for p in group["premise"]]
        shared = 0
        while all(len(x) > shared + 1 and x[shared] == lines[0][shared] for x in lines):
            shared += 1
        assert shared >= 2 and lines[0][0].startswith("The following are multiple choice questions"), task
        for k, x in zip(group.index, lines):
            question = "\n".join(x[shared:]).lstrip()
            assert table["premise"][k] == (question if len(question) <= explore.PREMISE_CHARS
                                           else question[:explore.PREMISE_CHARS - 1] + "…"), task
    options = {(s.item, s.option_index): s.option for s in run.scores.itertuples()}
    for cell, item in zip(table["m:lm"], run.items.itertuples()):
        assert cell == ("✓ " if item.correct_lm else "✗ ") + options[(item.item, item.pred_lm)]
    name = sorted(run.items["task"].unique())[3]
    picked = explore.select({"m": run}, group=name)
    assert picked.tolist() == np.flatnonzero(run.items["task"] == name).tolist() and len(picked) == 2
    both = explore.select({"m": run}, group=name, wrong=["m:lm"])
    assert both.tolist() == np.flatnonzero((run.items["task"] == name) & ~run.items["correct_lm"]).tolist()
    # the words search reads the task and the whole premise (past the 80 characters shown)
    assert explore.select({"m": run}, text=name.upper()).tolist() == picked.tolist()
    last = run.items["premise"].iloc[5].split()[-6]
    assert 5 in explore.select({"m": run}, text=last)


def test_the_task_filter_of_a_run_of_one_task_is_refused(runs):
    assert explore.group_column(runs["paper"].items) is None and "task" not in explore.item_table(runs)
    with pytest.raises(ValueError, match="group: run 'paper' holds one task"):
        explore.select(runs, group="copa")


def test_filters_and_the_rescue_matrix_count_the_same_items(runs):
    lm, dc = runs["paper"].items["correct_lm"].to_numpy(), runs["paper"].items["correct_dcpmi"].to_numpy()
    picked = explore.select(runs, right=["paper:dcpmi"], wrong=["paper:lm"])
    assert picked.tolist() == np.flatnonzero(dc & ~lm).tolist()
    matrix = explore.rescues(runs)
    assert matrix.loc["paper:dcpmi", "paper:lm"] == len(picked)
    assert all(matrix.loc[c, c] == 0 for c in matrix.index)
    flips = explore.select(runs, flipped=("paper:lm", "then:lm"))
    assert len(flips) == 0  # the domain premise does not touch LM
    assert explore.select(runs, disagree=["paper:lm", "paper:dcpmi"]).tolist() == np.flatnonzero(lm != dc).tolist()
    first = runs["paper"].items.iloc[3]
    assert 3 in explore.select(runs, text=first["premise"].split()[-1].upper())
    label = first["why"]
    assert explore.select(runs, label=label).tolist() == np.flatnonzero(runs["paper"].items["why"] == label).tolist()
    with pytest.raises(ValueError, match="column: unknown 'paper:nope'"):
        explore.select(runs, right=["paper:nope"])


def test_compare_gives_mcnemar_and_the_flipped_ids(runs):
    table = explore.compare(runs["paper"], runs["then"]).set_index("scorer")
    before, after = runs["paper"].items["correct_dcpmi"].to_numpy(), runs["then"].items["correct_dcpmi"].to_numpy()
    ids = runs["paper"].items["id"].astype(str).to_numpy()
    assert table.loc["dcpmi", "fixed"] == list(ids[~before & after])
    assert table.loc["dcpmi", "broken"] == list(ids[before & ~after])
    assert table.loc["dcpmi", "p_value"] == mcnemar(after, before)[2]
    assert table.loc["lm", "fixed"] == [] and table.loc["lm", "p_value"] == 1.0
    assert "| dcpmi |" in explore.comparison_markdown(table.reset_index())


def test_a_pattern_naming_a_missing_field_is_one_message(copa):
    with pytest.raises(ValueError, match=r"uses field \{stem\}, which this task does not provide"):
        explore.retemplate(copa, premise="{stem}?")
    edited = explore.retemplate(copa, premise=" {premise} so", domain_premise=" so")
    assert edited[0].premise.endswith(" so") and edited[0].domain_premise == " so"
    assert {"paper", "paper_table", "lm-eval"} <= set(explore.presets(copa))


#: Patterns that must be refused before any item is rendered: (part, pattern, what the message says is wrong). The
#: width would allocate 2 MB per item.
HOSTILE_PATTERNS = [
    ("premise", "{premise:>2000000}", "has a format spec"),
    ("options", " {choice!r}", r"has a conversion \(!r\)"),
    ("domain_premise", "{premise.__class__}", "has attribute or index access"),
    ("premise", "{choices[0]} because", "has attribute or index access"),
    ("premise", "{} because", r"is positional"),
    ("options", " {choice:{index}}", "has a format spec"),
    ("premise", "{premise because", "expected '}'"),
]


@pytest.mark.parametrize("part, pattern, what", HOSTILE_PATTERNS)
def test_a_pattern_takes_field_names_only_and_is_refused_before_any_item_is_rendered(copa, part, pattern, what,
                                                                                   peak_bytes):
    errors = []

    def call():
        try:
            explore.retemplate(copa, **{part: pattern})
        except ValueError as err:
            errors.append(str(err))

    peak = peak_bytes(call)
    assert errors and f"{part}: " in errors[0] and re.search(what, errors[0]), errors
    assert peak < 1_000_000, peak  # 12 items under the width would hold 24 MB


def test_a_pattern_keeps_its_brace_escapes(copa):
    edited = explore.retemplate(copa, premise="{{premise}} {premise}", domain_premise=" {{so}}")
    fields = copa[0].meta["fields"]
    assert edited[0].premise == "{premise} " + fields["premise"] and edited[0].domain_premise == " {so}"


def _session(runs, folder, template: dict) -> None:
    explore.save_session(folder, runs, {"paper": {"task": "copa", "n": 12}, "then": {"task": "copa", "n": 12}})
    doc = json.loads((folder / "session.json").read_text())
    doc["runs"][1]["source"]["template"] = template
    (folder / "session.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("part, pattern, what", HOSTILE_PATTERNS[:4])
def test_a_session_whose_template_has_more_than_field_names_is_refused(runs, tmp_path, part, pattern, what,
                                                                      peak_bytes):
    _session(runs, tmp_path / "s", {"premise": "{premise}", part: pattern})
    errors = []

    def call():
        try:
            explore.load_session(tmp_path / "s")
        except ValueError as err:
            errors.append(str(err))

    peak = peak_bytes(call)
    assert errors, "the session loaded"
    assert str(tmp_path / "s") in errors[0] and "session.json" in errors[0] and "run 'then'" in errors[0]
    assert f"template {part}: " in errors[0] and re.search(what, errors[0])
    assert peak < 20_000_000, peak  # the two small runs are read; nothing is rendered


def test_a_session_round_trips_and_a_tampered_one_is_refused(runs, tmp_path):
    explore.save_session(tmp_path / "s", runs, {"paper": {"task": "copa", "n": 12}})
    back, sources = explore.load_session(tmp_path / "s")
    assert list(back) == ["paper", "then"] and sources["paper"] == {"task": "copa", "n": 12}
    cols = ["id", "correct_dcpmi"]
    pd.testing.assert_frame_equal(back["then"].items[cols], runs["then"].items[cols])
    doc = json.loads((tmp_path / "s" / "session.json").read_text())
    doc["runs"][0]["folder"] = "../../etc"
    (tmp_path / "s" / "session.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="bad name or folder"):
        explore.load_session(tmp_path / "s")
    with pytest.raises(ValueError, match="no session.json"):
        explore.load_session(tmp_path / "nothing")


ARC = [{"question": "What is wet?", "A": "water", "B": "sand", "answer": "A"},
       {"question": "Cats eat?", "A": "rocks", "B": "fish", "C": "air", "answer": "B"}]


def test_the_explorer_filters_the_items_right_without_the_question(tmp_path, tiny_lm):
    from surfacelab.widgets import Explorer

    path = tmp_path / "arc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ARC * 3), encoding="utf-8")
    res = sl.evaluate(tiny_lm, tasks.load("arc-challenge", source=str(path)), "lm,channel,mcf,choices", n_boot=0,
                      progress=False)
    scores = res.scores.sort_values(["item", "option_index"])
    picked = scores.groupby("item")["choices"].apply(lambda v: int(np.argmax(v.to_numpy()))).to_numpy()
    right = np.flatnonzero(picked == res.items["gold"].to_numpy())
    assert 0 < len(right) < len(res.items)  # the filter below could fail both ways
    runs = {"r": res}
    assert list(explore.select(runs, right=["r:choices"])) == list(right)
    table = explore.item_table(runs)
    assert {"r:channel", "r:mcf", "r:choices"} <= set(table.columns)
    assert table.loc[right, "r:choices"].str.startswith("✓").all()
    assert rows.filter_choices("r:choices") == [("right without the question", "right"),
                                                    ("wrong without the question", "wrong")]
    assert rows.filter_choices("r:mcf") == [("right", "right"), ("wrong", "wrong")]
    ex = Explorer(runs=runs)
    try:
        dropdown = ex._filters["r:choices"]
        assert set(ex._filters) >= {"r:channel", "r:mcf"}
        dropdown.value = "right"
        assert dropdown.label == "right without the question"
        assert ex.selection()["right"] == ["r:choices"]
        assert list(ex.item_frame()["item"]) == list(res.items["item"].iloc[right])
    finally:
        ex.close()


def test_a_session_saved_when_the_paper_family_was_named_code_opens_under_paper(runs, tmp_path):
    explore.save_session(tmp_path / "s", runs, {"paper": {"task": "copa", "n": 12, "variant": "paper"}})
    doc = json.loads((tmp_path / "s" / "session.json").read_text())
    doc["runs"][0].update(name="code", source={"task": "copa", "n": 12, "variant": "code"})  # as saved before
    (tmp_path / "s" / "session.json").write_text(json.dumps(doc))
    back, sources = explore.load_session(tmp_path / "s")
    assert list(back) == ["code", "then"]  # a run keeps the name it was saved under
    assert sources["code"]["variant"] == "paper"
    assert tasks.load(sources["code"]["task"], limit=2, variant=sources["code"]["variant"]).variant == "paper"


@pytest.mark.parametrize("variant", ["nonsense", 3, ["paper"]])
def test_a_session_naming_an_unknown_template_family_is_refused_naming_the_field(runs, tmp_path, variant):
    explore.save_session(tmp_path / "s", runs, {"paper": {"task": "copa", "n": 12, "variant": variant}})
    with pytest.raises(ValueError) as err:
        explore.load_session(tmp_path / "s")
    assert "session.json: run 'paper'" in str(err.value) and "variant" in str(err.value)
    assert "'paper', 'paper_table', 'lm-eval'" in str(err.value)
