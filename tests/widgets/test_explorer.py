"""The Explorer driven from Python: a background run in chunks, cancel, filters, a row click into the workbench, a
template ablation beside the baseline, an lm-eval log without a model, and the one message of a bad source."""

from __future__ import annotations

import dataclasses
import html
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from spreadsheet import check_cells, hostile_task
from surfacelab import explore
from surfacelab.widgets import Explorer, Workbench

LOGS = Path(__file__).resolve().parents[1] / "lm_eval_logs" / "out"
N = 30


def click(ex: Explorer, k: int) -> None:
    """A click on row ``k`` of the table's page, as the browser sends it (``table.js``): one message naming the row
    and the item it shows."""
    view = ex.table.widget
    view._handle_custom_msg({"event": "click", "row": k, "item": view.positions[k - view.first]}, [])


@pytest.fixture
def bench(tiny_lm, tiny_mlm, tmp_path):
    wb = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, export_dir=tmp_path / "exports")
    yield wb
    wb.close()


@pytest.fixture
def ran(tiny_lm, bench, tmp_path):
    """An explorer that ran 30 COPA items in chunks of 10 (the chunks it showed recorded)."""
    ex = Explorer(tiny_lm, workbench=bench, task="copa", n=N, chunk=10, folder=tmp_path / "session")
    seen = []
    ex.table.widget.observe(lambda ch: seen.append(len(ex.table.rows)), "total")
    run = ex.run()
    assert run is not None and ex.wait(300)
    assert run.error is None, run.error
    ex.seen = seen
    yield ex
    ex.close()


def test_run_fills_the_table_in_chunks_and_finishes(ran, tiny_lm):
    assert list(ran.runs) == ["paper"]
    res = ran.runs["paper"]
    assert len(res.items) == N and "stopped_at" not in res.meta
    # rows after the first (small) chunk, then after REDRAW_S and longer waits, and all of them at the end
    assert ran.seen[0] == explore.FIRST_CHUNK and ran.seen[-1] == N and ran.seen == sorted(ran.seen)
    assert len(ran.item_frame()) == N and list(ran.table.rows) == list(range(N))
    assert ran.progress.value == 1 and f"{N} / {N} items" in ran.progress_line.value
    assert "requests" in ran.run_lines.value and "done" in ran.progress_line.value
    assert ran.summary.plot.figure["data"] and ran.cancel_button.disabled
    # the same numbers as evaluate on the same items
    ref = sl.evaluate(tiny_lm, sl.tasks.load("copa", limit=N), ["lm", "per_char", "dcpmi"], progress=False)
    assert res.items["correct_dcpmi"].tolist() == ref.items["correct_dcpmi"].tolist()
    counts = explore.rescues(ran.runs)
    assert ran.summary._cells[("paper:dcpmi", "paper:lm")].description == str(counts.loc["paper:dcpmi", "paper:lm"])


def test_a_redraw_keeps_the_label_buttons_and_their_counts_follow_the_run(ran):
    counts = ran.runs["paper"].items["why"].astype(str).value_counts()
    shown = {b.description: b.model_id for b in ran.summary.labels.children}
    # the reasons the LM missed, then (not among them: "right (52)" read as one) the items it got right
    assert "right" in counts and list(shown) == [f"{label} ({k})" for label, k in counts.items() if label != "right"
                                                 ] + [f"LM right ({counts['right']})"]
    matrix = [c.model_id for c in ran.summary.matrix.children]
    ran.refresh()  # what every chunk of a run does
    assert {b.description: b.model_id for b in ran.summary.labels.children} == shown
    assert [c.model_id for c in ran.summary.matrix.children] == matrix
    before = list(ran.summary.labels.children)
    ran.runs["paper"] = sl.evaluate(ran.lm, sl.tasks.load("copa", limit=1), ran.scorers, progress=False)
    ran.refresh()  # one item: one label
    assert len(before) > 1 and len(ran.summary.labels.children) == 1
    assert all(b.comm is None for b in before if b not in ran.summary.labels.children)  # the labels gone are closed


def test_cancel_keeps_the_finished_chunks(tiny_lm, bench):
    ex = Explorer(tiny_lm, workbench=bench, task="copa", split="val", n=N, chunk=5)
    ex.table.widget.observe(lambda ch: ex.cancel() if len(ex.table.rows) else None, "total")  # on the first rows
    run = ex.run()
    assert ex.wait(300) and run.error is None
    res = ex.runs["paper"]
    assert explore.FIRST_CHUNK <= len(res.items) < N and res.meta["stopped_at"] == len(res.items)
    assert "cancelled" in ex.progress_line.value and len(ex.item_frame()) == len(res.items)
    ex.close()


def test_filter_then_click_loads_the_item_into_the_workbench(ran, bench):
    runs = ran.runs
    right, wrong = ["paper:dcpmi"], ["paper:lm"]
    if not len(explore.select(runs, right=right, wrong=wrong)):  # the tiny model is random: take the pair it has
        right, wrong = wrong, right
    rows = ran.filter(right=right, wrong=wrong)
    assert list(rows) == list(explore.select(runs, right=right, wrong=wrong)) and len(rows)
    assert len(ran.item_frame()) == len(rows) and f"<b>{len(rows)}</b>" in ran.table.count.value
    click(ran, 0)
    bench.wait()
    item = runs["paper"].items.iloc[rows[0]]
    scored = runs["paper"].scores[runs["paper"].scores["item"] == item["item"]]
    assert bench.premise_box.value == item["premise"] == scored["context"].iloc[0]
    assert bench.options == scored["option"].tolist() and bench.gold == item["gold"]
    assert bench.domain_box.value == (item["domain_premise"] or "")
    assert str(item["id"]) in bench.examples.origin.value and "copa/" in bench.examples.origin.value
    assert bench.examples.next_button.disabled == (len(rows) == 1) and bench.examples.previous_button.disabled
    table = bench.frames()["scores"]  # the views follow: the scorer table is for this item
    assert table["option"].tolist() == scored["option"].tolist()
    np.testing.assert_allclose(table["logprob"], scored["logprob"], atol=1e-4)
    if len(rows) > 1:
        bench.step_item(1)
        bench.wait()
        assert bench.premise_box.value == runs["paper"].items["premise"].iloc[rows[1]]


def test_a_click_on_another_row_opens_only_that_row(ran, bench):
    """A click is one message from the browser; the kernel alone marks the row open (the browser never sets it), so a
    click on another row opens that row once, and a click on the open row opens it again (an edit made to it
    undone)."""
    res = ran.runs["paper"]
    click(ran, 0)
    bench.wait()
    loaded = []
    real = bench.load_item
    bench.load_item = lambda premise, *a, **k: loaded.append(premise) or real(premise, *a, **k)
    click(ran, 1)
    bench.wait()
    assert loaded == [res.items["premise"].iloc[1]] and ran.table.widget.selected == 1
    bench.premise_box.value = "edited"
    click(ran, 1)
    bench.wait()
    assert loaded[1:] == [res.items["premise"].iloc[1]] and bench.premise_box.value == loaded[1]
    assert ran.table.widget.selected == 1


def test_the_first_rows_are_scored_ahead_of_a_click(ran, bench, monkeypatch):
    """After a run, the workbench's scores (with top-k) of the first rows are computed in the background, so a click
    on one forwards nothing."""
    from surfacelab.scoring import score_items
    from surfacelab.widgets.explorer.prefetch import ROWS

    assert ran.opener.prefetch.runner.wait(120)
    res = ran.runs["paper"]
    calls = []
    real = bench.lm.backend.score
    monkeypatch.setattr(bench.lm.backend, "score", lambda encs, **kw: calls.append(len(encs)) or real(encs, **kw))
    for position in ran.table.rows[:ROWS]:
        item = res.items.iloc[int(position)]
        options = res.scores[res.scores["item"] == item["item"]].sort_values("option_index")["option"].tolist()
        score_items(bench.lm, [(item["premise"], options, item["domain_premise"] or None)], progress=False,
                    top_k=bench.top_k)
    assert sum(calls) == 0, calls


def test_ablation_adds_a_run_and_a_flip_list(ran, tmp_path):
    run = ran.ablate(domain_premise=" then", name="then")
    assert run is not None and ran.wait(300) and run.error is None
    assert list(ran.runs) == ["paper", "then"]
    assert (ran.runs["then"].items["domain_premise"] == " then").all()
    engine = ran.runs["then"].meta["engine"]
    assert engine["cached"] > 0 and "from the cache" in ran.run_lines.value  # premise requests came from the cache
    table = ran.comparison()
    assert "McNemar" in ran.ablation.comparison_html.value
    flips = sum(len(r.fixed) + len(r.broken) for r in table.itertuples())
    assert len(ran.ablation.flip_buttons) == flips
    assert "paper:lm" in ran._filters and "then:dcpmi" in ran._filters
    # files: the comparison as CSV / markdown, the figure as HTML, the session round trip
    assert ran.export(tmp_path / "c.csv").read_text().startswith("scorer,")
    assert "McNemar" in ran.export(tmp_path / "c.md").read_text()
    assert ran.export(tmp_path / "fig.html").exists()
    ran.save_session(tmp_path / "s")
    ran.load_session(tmp_path / "s")
    assert list(ran.runs) == ["paper", "then"] and "paper" in ran.tasks


def test_a_pattern_naming_a_missing_field_is_one_message(ran):
    assert ran.ablate(premise="{nonexistent} because", name="bad") is None
    assert "nonexistent" in ran.message.value and list(ran.runs) == ["paper"]


@pytest.mark.parametrize("part, pattern, what", [("premise", "{premise:>2000000}", "has a format spec"),
                                                 ("options", " {choice!r}", "has a conversion"),
                                                 ("domain_premise", "{premise.__class__}", "attribute or index")])
def test_an_ablation_field_takes_field_names_only_and_renders_nothing(ran, part, pattern, what, peak_bytes):
    got = []
    peak = peak_bytes(lambda: got.append(ran.ablate(**{part: pattern}, name="wide")))
    assert got == [None] and list(ran.runs) == ["paper"] and "wide" not in ran.tasks
    assert f"{part}: the field" in ran.message.value and what in ran.message.value, ran.message.value
    assert peak < 2_000_000, peak  # 30 items under the width would hold 60 MB


def _click_load(ran, folder: Path) -> None:
    """Type ``folder`` and press "load session"; wait for the note beside the buttons."""
    ran.files.folder_box.value, ran.files.note.value = str(folder), ""
    ran.files.load_button.click()
    deadline = time.monotonic() + 30
    while not ran.files.note.value and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_session_with_a_format_spec_in_its_template_is_refused_at_the_load_button(ran, tmp_path, peak_bytes):
    ran.save_session(tmp_path / "s")
    doc = json.loads((tmp_path / "s" / "session.json").read_text())
    doc["runs"][0]["source"]["template"] = {"premise": "{premise:>2000000}"}
    (tmp_path / "s" / "session.json").write_text(json.dumps(doc))
    peak = peak_bytes(lambda: _click_load(ran, tmp_path / "s"))
    assert "⚠" in ran.files.note.value and "template premise: the field" in ran.files.note.value
    assert "has a format spec" in ran.files.note.value and "session.json" in ran.files.note.value
    assert list(ran.runs) == ["paper"] and "paper" in ran.tasks  # the open run stays, nothing rendered
    assert peak < 20_000_000, peak


def test_a_session_with_a_broken_run_is_one_message_at_the_load_button_and_the_open_run_stays(ran, tmp_path):
    ran.save_session(tmp_path / "s")
    items = pd.read_csv(tmp_path / "s" / "run-0" / "items.csv", keep_default_na=False, dtype=str)
    items.loc[0, "gold"] = "99"
    items.to_csv(tmp_path / "s" / "run-0" / "items.csv", index=False)
    _click_load(ran, tmp_path / "s")
    assert ran.files.note.value.count("⚠") == 1 and "Traceback" not in ran.files.note.value
    assert "items.csv: row 1: gold is not an index into its options" in ran.files.note.value
    assert list(ran.runs) == ["paper"]
    assert len(ran.filter(right=["paper:lm"])) == ran.runs["paper"].items["correct_lm"].sum()


def test_the_report_button_writes_the_open_runs_as_one_page(ran, tmp_path):
    """"report.html" beside the exports: sl.report of the runs the explorer holds, with their sources, named in the
    note with its download link."""
    ran.files.folder_box.value, ran.files.note.value = str(tmp_path / "out"), ""
    ran.files.report_button.click()
    deadline = time.monotonic() + 60
    while not ran.files.note.value and time.monotonic() < deadline:
        time.sleep(0.05)
    path = tmp_path / "out" / "report.html"
    assert "saved <code>report.html</code>" in ran.files.note.value and "class='sl-download'" in ran.files.note.value
    page = path.read_text(encoding="utf-8")
    data = json.loads(page.split('id="sl-r-data">')[1].split("</script>")[0])
    run = ran.runs["paper"]
    assert data["items"]["id"] == run.items["id"].astype(str).tolist() and len(data["items"]["id"]) == N
    assert data["columns"] == [f"paper:{s}" for s in run.scorers]
    assert "explorer: task" in page and html.escape(run.model) in page  # the run's source, as the explorer has it


def test_the_comparison_csv_and_a_session_are_spreadsheet_safe(tiny_lm, tmp_path):
    base = sl.evaluate(tiny_lm, hostile_task(), ["lm", "dcpmi"], n_boot=20, progress=False)
    flipped = base.items.assign(correct_lm=~base.items["correct_lm"])  # every item flips: each id is listed
    ex = Explorer(runs={"base": base, "edited": dataclasses.replace(base, items=flipped)}, folder=tmp_path)
    table = ex.comparison()
    written = table.assign(fixed=table["fixed"].map(" ".join), broken=table["broken"].map(" ".join))
    assert check_cells(ex.export(tmp_path / "c.csv"), written) >= 1  # a list of ids that starts like a formula
    ex.save_session(tmp_path / "s")
    ex.load_session(tmp_path / "s")
    for name in ("items", "scores"):
        pd.testing.assert_frame_equal(getattr(ex.runs["base"], name), getattr(base, name), check_dtype=False)
    ex.close()


def test_lm_eval_log_opens_without_a_model():
    with pytest.warns(UserWarning, match="passed over samples_arc_local_gen_"):
        ex = Explorer(log=LOGS)
    assert list(ex.runs) == ["lm-eval"] and ex.lm is None and ex.last_error is None
    res = ex.runs["lm-eval"]
    assert len(ex.item_frame()) == len(res.items) and "lm-eval:lm" in ex._filters
    assert ex.summary.plot.figure["data"]
    # the run line says which file of the folder was passed over, and why
    gen = Path(res.meta["checks"]["passed_over"][0]["file"]).name
    assert gen.startswith("samples_arc_local_gen_") and f"passed over {gen}: the log of a generate_until" in \
        ex.run_lines.value
    ex.close()


@pytest.mark.filterwarnings("ignore:.*passed over")
def test_a_log_row_opens_with_an_origin_a_person_reads(tiny_lm, bench):
    ex = Explorer(tiny_lm, workbench=bench, log=LOGS)
    res = ex.runs["lm-eval"]
    ex.open_item(2)
    bench.wait()
    origin = bench.examples.origin.value
    doc_id = res.items["id"].iloc[2]
    file = Path(res.meta["files"][0]).name
    assert f"the lm-eval log of {res.task} ({file}) · doc_id {doc_id} · run lm-eval" in origin, origin
    assert origin.count("doc_id") == 1 and "#" not in origin and f"log {LOGS.name} " not in origin
    ex.close()


def test_a_whole_mmlu_log_folder_opens_each_row_with_its_own_subject_and_file(tiny_lm, bench):
    folder = LOGS.parents[1] / "logs" / "lm_eval_mmlu" / "zero_shot"
    ex = Explorer(tiny_lm, workbench=bench, log=folder)
    res = ex.runs["lm-eval"]
    assert res.task == "mmlu" and len(ex.item_frame()) == len(res.items) == 114
    k = len(res.items) - 1  # the last subject's last document: not the first file of the folder
    task, doc_id = res.items["task"].iloc[k], res.items["id"].iloc[k]
    ex.open_item(k)
    bench.wait()
    origin = bench.examples.origin.value
    file = next(folder.rglob(f"samples_{task}_*.jsonl")).name
    assert f"the lm-eval log of {task} ({file}) · doc_id {doc_id} · run lm-eval" in origin, origin
    assert bench.premise_box.value == res.items["premise"].iloc[k]
    ex.close()


@pytest.mark.filterwarnings("ignore:.*the premises are lighteval's doc.query")
def test_a_lighteval_details_folder_opens_with_its_note_and_each_rows_file(tiny_lm, bench):
    folder = LOGS.parents[1] / "logs" / "lighteval" / "chat_default"
    ex = Explorer(tiny_lm, workbench=bench, log=folder)
    res = ex.runs["lighteval"]
    assert ex.last_error is None and len(ex.item_frame()) == len(res.items) == 10
    assert "the premises are lighteval&#x27;s doc.query" in ex.run_lines.value  # escaped, as every text of a file
    k = len(res.items) - 1
    ex.open_item(k)
    bench.wait()
    file = next(folder.rglob(f"details_{res.items['task'].iloc[k]}_*.parquet")).name
    assert f"the lighteval log of {res.items['task'].iloc[k]} ({file}) · doc_id {res.items['id'].iloc[k]}" in \
        bench.examples.origin.value
    ex.close()


@pytest.mark.filterwarnings("ignore:.*passed over", "ignore:.*differs from the log", "ignore:Truncated to fit")
def test_a_log_rescored_under_a_domain_premise_shows_the_check_in_its_run_line(tiny_lm, bench):
    ex = Explorer(tiny_lm, workbench=bench, log=LOGS)
    run = ex.ablate(domain_premise=" the answer is:", name="domain")  # the tiny model is not the log's: they differ
    assert run is not None and ex.wait(300) and run.error is None, run.error
    check = ex.runs["domain"].meta["logprob_check"]
    assert not check["agrees"]
    line = next(line for line in ex.run_lines.value.split("<br>") if line.startswith("<b>domain</b>"))
    assert f"LM re-scored: differs from the log by up to {check['max_abs_diff']:.3g} nats" in line, line
    ex.close()


@pytest.mark.filterwarnings("ignore:.*passed over", "ignore:.*differs from the log", "ignore:Truncated to fit")
def test_run_on_a_log_scores_its_items_beside_the_log_run_and_a_run_of_other_items_names_what_it_closes(tiny_lm,
                                                                                                         bench):
    # the fields still read "arc-challenge" / 200 under a log, and Run replaced the log's run without a word
    ex = Explorer(tiny_lm, workbench=bench, log=LOGS)
    logged = ex.runs["lm-eval"]
    assert "arc_local" in ex.task_box.value and ex.n_box.value == len(logged.items)
    job = ex.run()
    assert job is not None and ex.wait(300) and job.error is None, job.error
    assert list(ex.runs) == ["lm-eval", "rescored"] and ex.runs["lm-eval"] is logged
    assert "max_abs_diff" in ex.runs["rescored"].meta["logprob_check"] and "<b>rescored</b>" in ex.run_lines.value
    ex.task_box.value, ex.n_box.value = "copa", 3  # other items: they take the table, and the message says so
    job = ex.run("copa")
    assert job is not None and ex.wait(300) and job.error is None, job.error
    assert list(ex.runs) == ["copa"]
    assert "closed the runs &#x27;lm-eval&#x27;, &#x27;rescored&#x27;" in ex.message.value, ex.message.value
    ex.close()


@pytest.mark.filterwarnings("ignore:.*passed over", "ignore:.*differs from the log", "ignore:Truncated to fit")
def test_a_saved_log_session_loads_with_run_scoring_the_log_again(tiny_lm, bench, tmp_path):
    # a loaded log session kept the fields of a new explorer ("arc-challenge" / 200): Run closed the log's run
    ex = Explorer(tiny_lm, workbench=bench, log=LOGS)
    ex.save_session(tmp_path / "s")
    fields = (ex.task_box.value, ex.n_box.value)
    ex.close()
    ex = Explorer(tiny_lm, workbench=bench)
    ex.load_session(tmp_path / "s")
    assert (ex.task_box.value, ex.n_box.value) == fields
    job = ex.run()
    assert job is not None and ex.wait(300) and job.error is None, job.error
    assert list(ex.runs) == ["lm-eval", "rescored"] and ex.message.value == ""
    assert "max_abs_diff" in ex.runs["rescored"].meta["logprob_check"]
    ex.close()


@pytest.mark.filterwarnings("ignore:.*passed over")
def test_run_on_a_log_session_whose_log_is_gone_says_so_and_keeps_the_run(tiny_lm, bench, tmp_path):
    folder = tmp_path / "out"
    shutil.copytree(LOGS, folder)
    ex = Explorer(tiny_lm, workbench=bench, log=folder)
    ex.save_session(tmp_path / "s")
    ex.close()
    shutil.rmtree(folder)
    ex = Explorer(tiny_lm, workbench=bench)
    ex.load_session(tmp_path / "s")
    assert ex.run() is None and list(ex.runs) == ["lm-eval"]
    message = html.unescape(ex.message.value)
    assert f"the log {str(folder)!r} of run 'lm-eval' is not there" in message, message
    assert "Run scores the log's own strings again" in message
    ex.close()


def test_bad_sources_give_one_message(tiny_lm, tmp_path):
    bad = tmp_path / "samples_x.jsonl"
    bad.write_text("not json\n")
    ex = Explorer(log=bad)
    assert not ex.runs and ex.message.value.count("⚠") == 1
    ex.close()
    ex = Explorer(tiny_lm, task="no-such-task", n=5)
    assert ex.run() is None and ex.message.value.count("⚠") == 1 and "no-such-task" in ex.message.value
    ex.n_box.value = 0
    ex.task_box.value = "copa"
    assert ex.run() is None and "n:" in ex.message.value
    ex.close()


def test_cells_are_text_not_html(tiny_lm):
    """The page's cells travel as the text they are: the browser writes them as text (``table.js``; the browser test
    checks that a premise of markup shows as its characters)."""
    res = sl.evaluate(tiny_lm, sl.tasks.load("copa", limit=3), ["lm", "dcpmi"], progress=False)
    res.items.loc[0, "premise"] = "<img src=x onerror=alert(1)>"
    ex = Explorer(runs={"a": res})
    premise = [c["name"] for c in ex.table.widget.columns].index("premise")
    assert ex.table.widget.cells[0][premise] == "<img src=x onerror=alert(1)>"
    ex.close()


def test_the_source_domain_premise_is_text_as_the_workbench_takes_it(tiny_lm):
    """A brace typed into the explorer's domain premise is a brace, as in the workbench's box (the ablation panel's
    fields are the ones that take patterns over the task's fields)."""
    ex = Explorer(tiny_lm, task="copa", n=3, domain_premise=" the {answer}:")
    task = ex.load_task()
    assert {it.domain_premise for it in task.items} == {" the {answer}:"}
    ex.close()


@pytest.mark.filterwarnings("ignore:.*window")
@pytest.mark.parametrize("task", ["sst-2", "copa"])
def test_the_calibrations_are_columns_with_a_filter_each(tiny_lm, bench, task):
    # sst-2 (a fixed label set): both scored over the whole run; copa (options differ): the run finishes, says why
    scorers = ["lm", "batch_cal", "domain_cal"]
    ex = Explorer(tiny_lm, workbench=bench, task=task, n=12, chunk=4, scorers=scorers)
    run = ex.run()
    assert run is not None and ex.wait(300) and run.error is None, run.error
    res = ex.runs["paper"]
    assert {"paper:batch_cal", "paper:domain_cal"} <= set(ex._filters) and "paper:batch_cal" in ex.item_frame()
    ex._filters["paper:batch_cal"].value = "right"
    assert list(ex.table.rows) == np.flatnonzero(res.items["correct_batch_cal"]).tolist()
    notes = res.accuracy.set_index("scorer")["note"]
    if task == "copa":
        assert notes["batch_cal"] == notes["domain_cal"] == "not applicable: options differ per item"
        assert list(ex.table.rows) == [] and ex.summary.plot.figure["data"]
    else:
        ref = sl.evaluate(tiny_lm, sl.tasks.load(task, limit=12), scorers, progress=False, too_long="skip")
        assert notes.tolist() == ["", "", ""]
        for s in ("pred_batch_cal", "pred_domain_cal"):  # the whole run's batch and words, not a chunk's
            assert res.items[s].tolist() == ref.items[s].tolist(), s
    ex.close()
