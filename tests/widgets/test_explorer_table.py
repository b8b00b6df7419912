"""The explorer's item table at a whole dataset's size, driven from Python as the browser drives it (``table.js``'s
messages): a run of 14,042 items (the real lm-eval MMLU run's rows, copied; ``large_runs``) sends the browser one page,
the task filter, the search, the sort and the pages cover the whole run, a click opens its row once, and the kernel's
memory is on the page. Every expected value is computed here from the run's frames, row by row, never by the code
under test."""

from __future__ import annotations

import json
import time

import numpy as np
import psutil
import pytest

import surfacelab as sl
from large_runs import FULL_MMLU, mmlu_log_run, replicated
from surfacelab import explore
from surfacelab.widgets import Explorer, Workbench
from surfacelab.widgets.explorer.table import PAGE_SIZES

#: What a filter, a search, a sort or a page may cost in the kernel here (the target is 0.5 s in the browser, on an
#: idle machine: ``benchmarks/bench_explorer_browser.py``); a loaded 2-core machine is allowed four times that.
ACTION_S = 2.0
#: The most bytes the table's state may hold: one page of rows, not the run.
PAGE_BYTES = 40_000


@pytest.fixture(scope="module")
def mmlu():
    return replicated(mmlu_log_run(), FULL_MMLU)


@pytest.fixture
def big(mmlu):
    ex = Explorer(runs={"lm-eval": mmlu})
    yield ex
    ex.close()


def send(ex: Explorer, **message) -> float:
    """Send the table a message as the browser does; the seconds the kernel took to answer it."""
    t0 = time.perf_counter()
    ex.table.widget._handle_custom_msg(message, [])
    return time.perf_counter() - t0


def state_bytes(ex: Explorer) -> int:
    """The bytes of the table's synced state: what the browser holds of it (and at most what a change sends)."""
    view = ex.table.widget
    return len(json.dumps({k: v for k, v in view.get_state().items() if not k.startswith("_")}))


def shown(ex: Explorer) -> list[list[str]]:
    return [list(r) for r in ex.table.widget.cells]


def words_in(run, words: list[str]) -> list[int]:
    """The items whose id, task, premise or an option holds every word (case-insensitive), row by row."""
    options: dict[int, list[str]] = {}
    for score in run.scores.itertuples():
        options.setdefault(score.item, []).append(str(score.option))
    out = []
    for k, item in enumerate(run.items.itertuples()):
        hay = " ".join([str(item.id), str(item.task), str(item.premise), *options.get(item.item, [])]).lower()
        if all(w in hay for w in words):
            out.append(k)
    return out


def test_a_whole_mmlu_run_sends_the_browser_one_page(big, mmlu):
    view = big.table.widget
    assert view.total == view.count == FULL_MMLU and view.first == 0
    assert len(view.cells) == PAGE_SIZES[0] and view.positions == list(range(PAGE_SIZES[0]))
    assert state_bytes(big) < PAGE_BYTES, state_bytes(big)
    names = [c["name"] for c in view.columns]
    assert names[:5] == ["item", "id", "task", "premise", "gold"] and "lm-eval:lm" in names
    for k, row in enumerate(view.cells):  # the page's cells are the run's own values
        item = mmlu.items.iloc[k]
        assert row[names.index("id")] == str(item["id"]) and row[names.index("task")] == item["task"]
        assert row[names.index("gold")] == item["gold_option"]
        pick = mmlu.scores.query("item == @k and option_index == @item.pred_lm")["option"].item()
        assert row[names.index("lm-eval:lm")] == ("✓ " if item["correct_lm"] else "✗ ") + pick
    # the premise shows the question: MMLU's subject line, which every premise of a task starts with, is left out
    premise = view.cells[0][names.index("premise")]
    whole = mmlu.items["premise"].iloc[0]
    assert not premise.startswith("The following are") and whole.startswith("The following are")
    assert whole.split("\n\n", 1)[1].startswith(premise.rstrip("…"))


def test_the_task_filter_lists_every_task_and_keeps_the_page_small(big, mmlu):
    tasks = mmlu.items["task"].value_counts()
    assert big.group_picker.description == "task" and big.group_picker.layout.display is None
    assert [v for _, v in big.group_picker.options] == [None, *sorted(tasks.index)]
    name = sorted(tasks.index)[7]
    t0 = time.perf_counter()
    big.group_picker.value = name  # as a person picks it
    took = time.perf_counter() - t0
    assert big.table.widget.count == tasks[name] and took < ACTION_S, took
    assert list(big.table.rows) == np.flatnonzero(mmlu.items["task"] == name).tolist()
    assert all(row[2] == name for row in big.table.widget.cells) and state_bytes(big) < PAGE_BYTES
    assert f"<b>{tasks[name]}</b> of {FULL_MMLU} items" in big.table.count.value
    big.filter(group=name, wrong=["lm-eval:lm"])
    both = (mmlu.items["task"] == name) & ~mmlu.items["correct_lm"]
    assert list(big.table.rows) == np.flatnonzero(both).tolist()
    with pytest.raises(ValueError, match="group: unknown 'mmlu_nothing'"):
        big.filter(group="mmlu_nothing")


def test_a_filter_or_a_page_sends_only_what_changed(big, mmlu):
    """Each action sends the traits it changed, one page of rows at most: never the columns, never the run."""
    view, sent = big.table.widget, []
    real = view.send_state
    view.send_state = lambda key=None: sent.append(view.get_state(key)) or real(key)
    try:
        big.filter(wrong=["lm-eval:lm"])
        send(big, event="page", first=PAGE_SIZES[0])
        send(big, event="search", text="the")
        big.filter()
    finally:
        view.send_state = real
    assert len(sent) == 4 and all("columns" not in state and "total" not in state for state in sent)
    assert set(sent[0]) == {"cells", "count", "positions"} and set(sent[1]) == {"cells", "first", "positions"}
    assert all(len(json.dumps(state)) < PAGE_BYTES for state in sent)
    assert sent[0]["count"] == int((~mmlu.items["correct_lm"]).sum()) and sent[1]["first"] == PAGE_SIZES[0]


def test_search_sort_and_pages_cover_the_whole_run(big, mmlu):
    view = big.table.widget
    words = ["energy", "atomic"]
    took = send(big, event="search", text="Energy  ATOMIC")
    expected = words_in(mmlu, words)
    assert list(big.table.rows) == expected and view.count == len(expected) and took < ACTION_S, took
    assert view.search == "Energy  ATOMIC" and "with the words “Energy  ATOMIC”" in big.table.count.value
    send(big, event="search", text="")
    assert view.count == FULL_MMLU
    # a header click sorts the whole run (stable: rows with the same value keep the run's order), again: descending
    took = send(big, event="sort", column="premise")
    premises = big.item_frame()["premise"].tolist()
    table = explore.item_table({"lm-eval": mmlu})
    by_hand = sorted(range(FULL_MMLU), key=lambda i: table["premise"][i])
    assert list(big.table.rows) == by_hand and premises == sorted(premises) and took < ACTION_S, took
    assert view.sort == ["premise", "asc"] and view.positions == by_hand[:PAGE_SIZES[0]]
    send(big, event="sort", column="premise")
    assert view.sort == ["premise", "desc"]
    assert list(big.table.rows) == sorted(range(FULL_MMLU), key=lambda i: table["premise"][i], reverse=True)
    # pages: the last page holds what is left; a page size of the menu; a page past the end is the last one
    took = send(big, event="page", first=FULL_MMLU - 1)
    size = PAGE_SIZES[0]
    assert view.first == (FULL_MMLU - 1) // size * size and len(view.cells) == FULL_MMLU - view.first
    assert view.positions == [int(p) for p in big.table.rows[view.first:]] and took < ACTION_S, took
    send(big, event="size", size=PAGE_SIZES[-1])
    assert view.page_size == PAGE_SIZES[-1] and len(view.cells) == FULL_MMLU - view.first
    send(big, event="page", first=10 ** 9)
    assert view.first == (FULL_MMLU - 1) // PAGE_SIZES[-1] * PAGE_SIZES[-1]
    send(big, event="size", size=7)  # not a size of the menu: nothing changes
    send(big, event="sort", column="no such column")
    assert view.page_size == PAGE_SIZES[-1] and view.sort == ["premise", "desc"]
    assert state_bytes(big) < 4 * PAGE_BYTES  # 100 rows


def test_a_click_opens_its_row_once_and_previous_next_move_the_page(tiny_lm, tiny_mlm, mmlu, tmp_path):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, export_dir=tmp_path)
    ex = Explorer(runs={"lm-eval": mmlu}, workbench=bench)
    loaded = []
    real = bench.load_item
    bench.load_item = lambda premise, *a, **k: loaded.append(premise) or real(premise, *a, **k)
    try:
        view = ex.table.widget
        send(ex, event="sort", column="id")
        send(ex, event="page", first=30)
        k = view.first + 9  # the last row of the page
        send(ex, event="click", row=k, item=view.positions[9])
        bench.wait()
        item = int(ex.table.rows[k])
        context = mmlu.scores.query("item == @item")["context"].iloc[0]
        assert loaded == [context] and view.selected == k and ex.table.rows[k] == item
        bench.step_item(1)  # "next": the row after it, on the next page
        bench.wait()
        assert view.selected == k + 1 and view.first == k + 1 and len(loaded) == 2
        # a click drawn before the rows changed (here: sorted the other way) opens the item it showed, where it is now
        send(ex, event="sort", column="id")
        shown_item = int(ex.table.rows[3])
        send(ex, event="click", row=0, item=shown_item)
        bench.wait()
        assert view.selected == 3 and loaded[-1] == mmlu.scores.query("item == @shown_item")["context"].iloc[0]
        send(ex, event="click", row=0, item=FULL_MMLU + 5)  # an item the table does not show: nothing opens
        assert len(loaded) == 3
    finally:
        ex.close()
        bench.close()


def test_the_kernel_memory_is_on_the_page(big):
    line = big.run_lines.value.rsplit("<br>", 1)[1]
    assert "kernel memory:" in line
    reported = float(line.split("kernel memory: ")[1].split(" MB")[0].replace(",", "")) * 2**20
    assert reported == pytest.approx(psutil.Process().memory_info().rss, rel=0.25)


def test_a_local_mmlu_run_has_a_subject_column_and_filter(tiny_lm):
    task = sl.tasks.load("mmlu", "test", sample=12, seed=1)
    run = sl.evaluate(tiny_lm, task, ["lm", "dcpmi"], progress=False, too_long="skip")  # the tiny model's window
    by_id = {it.id: it.meta["subject"] for it in task.items}
    subjects = [by_id[i] for i in run.items["id"]]
    assert run.items["subject"].tolist() == subjects and len(set(subjects)) > 1  # the sample spans subjects
    ex = Explorer(runs={"local": run})
    assert [c["name"] for c in ex.table.widget.columns][2] == "subject" and ex.group_picker.description == "subject"
    pick = sorted(set(subjects))[0]
    assert list(ex.filter(group=pick)) == [k for k, s in enumerate(subjects) if s == pick]
    ex.close()
