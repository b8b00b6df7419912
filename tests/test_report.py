"""sl.report: one HTML file with a run's sources, accuracy (per scorer and per task) with CIs, who rescues whom, the
labels, the flipped items with their verdicts in words and the item table; text from the run escaped, nothing
fetched. Every number is checked against the run's own frames, counted here without the report's code."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import tasks
from surfacelab.runs import EvalResult
from surfacelab.tasks import Item, Task

EVIL = "A man <img src=x onerror=alert(1)> took a </script><script>alert(2)</script> bath & \u2028 left in the"
SCORERS = ["lm", "avg", "dcpmi"]


class _Page(HTMLParser):
    """The page's elements: every tag with its attributes, the scripts' text, and the text outside scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.text: list[str] = []
        self._in: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in = dict(attrs)
            self.scripts.append((self._in, ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        else:
            self.text.append(data)


def _parse(path) -> tuple[_Page, dict]:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    data = next(text for attrs, text in page.scripts if attrs.get("id") == "sl-r-data")
    return page, json.loads(data)


@pytest.fixture(scope="module")
def run(tiny_lm) -> EvalResult:
    base = tasks.load("copa", "val", limit=24)
    items = list(base.items)
    items[3] = Item("evil <b>3</b>", EVIL, [" bathtub", " <b>soap</b>", " milk & honey"], 0, " the")
    task = Task("constructed", "val", items, base.template, "memory")
    res = sl.evaluate(tiny_lm, task, SCORERS, progress=False, n_boot=200)
    res.items["task"] = np.where(np.arange(len(items)) % 3 == 0, "alpha <i>", "beta")  # a task column, as a log's
    return res


def test_the_report_holds_the_runs_numbers(run, tmp_path):
    other = EvalResult(**{**run.__dict__, "template": "other", "items": run.items.copy()})
    other.items["correct_lm"] = ~other.items["correct_lm"]  # a second run whose LM flips every item
    path = sl.report({"paper": run, "edited": other}, tmp_path / "r" / "report.html")
    page, data = _parse(path)
    text = html.unescape(" ".join(page.text))
    for r in run.accuracy.itertuples():  # accuracy with its CI, as the run has them
        assert f"{r.accuracy:.3f}" in text and f"[{r.ci_low:.3f}, {r.ci_high:.3f}]" in text
    cols = [f"{n}:{s}" for n in ("paper", "edited") for s in SCORERS]
    assert data["columns"] == cols
    right = {f"{n}:{s}": r.items[f"correct_{s}"].to_numpy() for n, r in (("paper", run), ("edited", other))
             for s in SCORERS}
    for c in data["items"]["columns"]:
        assert c["right"] == "".join("1" if v else "0" for v in right[c["name"]])
    table = np.array([[int((right[a] & ~right[b]).sum()) for b in cols] for a in cols])
    cells = re.findall(r"<td>(\d+)</td>", path.read_text().split("id='rescues'")[1].split("</table>")[0])
    off_diagonal = [table[i, j] for i in range(len(cols)) for j in range(len(cols)) if i != j]
    assert [int(c) for c in cells] == off_diagonal
    got = np.array([right[c] for c in cols])
    disagree = np.flatnonzero(got.any(axis=0) & ~got.all(axis=0))
    assert [f["item"] for f in data["flipped"]] == disagree.tolist() and len(disagree) == len(run.items)
    for f in data["flipped"]:  # each flipped item's verdict in words, for both runs
        for name in ("paper", "edited"):
            assert f["why"][name].startswith(f"Verdict: {run.items['why'].iloc[f['item']]} — ")
    per_task = run.items.groupby("task")["correct_dcpmi"].mean()  # accuracy per task, counted here
    task_rows = path.read_text().split("id='per-task'")[1].split("</table>")[0]
    for task, acc in per_task.items():
        assert re.search(rf"<td>{re.escape(html.escape(task))}</td><td>{(run.items['task'] == task).sum()}</td>"
                         rf"(<td>.*?</td>){{2}}<td>{acc:.3f} ", task_rows), task
    assert data["items"]["premise"] == run.items["premise"].tolist()
    assert data["items"]["options"][3] == [" bathtub", " <b>soap</b>", " milk & honey"]
    assert data["items"]["runs"][0]["why"] == run.items["why"].tolist()


def test_text_from_the_run_is_escaped_and_nothing_is_fetched(run, tmp_path):
    path = sl.report(run, tmp_path / "report.html", title="<title> & </script>",
                     sources={run.template: {"note": "<img src=y onerror=alert(3)>"}})
    raw = path.read_text(encoding="utf-8")
    page, data = _parse(path)
    assert [t for t, _ in page.tags if t in ("img", "iframe", "object", "embed", "link")] == []
    assert len(page.scripts) == 2 and "src" not in page.scripts[1][0]  # the data and the page's own script
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", raw)  # no link leaves the file
    assert "default-src 'none'" in raw  # and the page's policy forbids any fetch
    assert data["items"]["premise"][3] == EVIL and data["items"]["id"][3] == "evil <b>3</b>"  # exactly, as data
    text = html.unescape(" ".join(page.text))
    assert "<title> & </script>" in text and "<img src=y onerror=alert(3)>" in text  # shown as text
    assert "alpha <i>" in text


def test_one_run_of_one_task_without_labels(run, tmp_path):
    bare = EvalResult(**{**run.__dict__, "items": run.items.drop(columns=["why", "gap_lm"]).assign(task="one"),
                         "labels": pd.DataFrame()})
    path = sl.report([bare], tmp_path / "report.html")
    page, data = _parse(path)
    assert "id='per-task'" not in path.read_text() and "id='labels'" not in path.read_text()
    assert data["items"]["runs"][0]["why"] is None and set(data["items"]["runs"][0]["margin"]) == {None}
    assert all(f["why"] == {} for f in data["flipped"]) and data["flipped"]


def test_bad_arguments_are_refused_by_name(run, tmp_path):
    with pytest.raises(TypeError, match="runs: expected an EvalResult"):
        sl.report(42, tmp_path / "r.html")
    with pytest.raises(TypeError, match=r"runs\[1\]: expected an EvalResult"):
        sl.report([run, "x"], tmp_path / "r.html")
    with pytest.raises(ValueError, match="runs: no run"):
        sl.report({}, tmp_path / "r.html")
    with pytest.raises(ValueError, match="path: expected an .html file"):
        sl.report(run, tmp_path / "r.txt")
    fewer = EvalResult(**{**run.__dict__, "items": run.items.iloc[:5]})
    with pytest.raises(ValueError, match="not the same items"):
        sl.report({"a": run, "b": fewer}, tmp_path / "r.html")
    with pytest.raises(TypeError, match="title: expected a string"):
        sl.report(run, tmp_path / "r.html", title=3)
    assert not list(tmp_path.iterdir())  # nothing written for a refused call


def test_a_page_over_the_size_limit_is_written_whole_and_says_what_fills_it(run, tmp_path, monkeypatch):
    from surfacelab.report import page as report_page
    small = sl.report(run, tmp_path / "small.html")
    monkeypatch.setattr(report_page, "WARN_BYTES", small.stat().st_size - 1)
    with pytest.warns(UserWarning) as caught:
        path = sl.report(run, tmp_path / "big.html")
    assert len(caught) == 1 and caught[0].filename == __file__  # pointed at the caller's line
    said = str(caught[0].message)
    assert f"{path.stat().st_size / 2**20:.1f} MB" in said and f"{len(run.items):,} items x {len(SCORERS)}" in said
    assert path.read_text(encoding="utf-8").rstrip().endswith("</html>")  # written whole, not cut to the limit
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.html", "small.html"]  # no partial file left beside it


def test_a_logs_run_reports_the_frameworks_numbers(tmp_path):
    """A run read from an lm-eval log (no model: no verdict labels) reports its accuracy and flipped items."""
    log = next((Path(__file__).parent / "lm_eval_logs" / "out").rglob("samples_arc_local_2*.jsonl"))
    res = sl.from_lm_eval(log)
    path = sl.report(res, tmp_path / "report.html")
    page, data = _parse(path)
    text = html.unescape(" ".join(page.text))
    assert all(f"{a:.3f}" in text for a in res.accuracy["accuracy"])
    assert data["items"]["id"] == res.items["id"].astype(str).tolist()
    lm, char = res.items["correct_lm"].to_numpy(), res.items["correct_per_char"].to_numpy()
    assert {f["item"] for f in data["flipped"]} >= set(np.flatnonzero(lm != char).tolist())


def test_a_whole_mmlu_folder_reports_its_groups_before_their_tasks():
    """lm-eval's --tasks mmlu folder (57 subjects, 2 items each): every group in bold before its tasks, its item count
    the sum of its tasks', with the value lm-eval logged for it."""
    import tempfile

    folder = Path(__file__).parent / "logs" / "lm_eval_mmlu" / "zero_shot"
    res = sl.from_lm_eval(folder)
    path = sl.report(res, Path(tempfile.mkdtemp()) / "report.html")
    section = path.read_text(encoding="utf-8").split("id='per-task'")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>((?:&nbsp;)*)(<b>)?([^<]+)(?:</b>)?</td><td>([\d,]+)</td>(.*?)</tr>", section)
    names = [name for _, _, name, _, _ in rows]
    groups = [name for _, bold, name, _, _ in rows if bold]
    assert set(groups) == set(res.meta["task_groups"]) and "mmlu" in groups
    assert set(names) - set(groups) == set(res.items["task"]) and len(set(res.items["task"])) == 57
    n = {name: int(k.replace(",", "")) for _, _, name, k, _ in rows}
    assert n["mmlu"] == len(res.items)
    assert n["mmlu_stem"] == sum(_under(res, "mmlu_stem", t) for t in res.items["task"]) > 0
    logged = res.meta["log_reported"]["mmlu"]["aggregates"]["acc"]  # LM's metric
    assert rows[names.index("mmlu")][4].startswith(f"<td>{res.items['correct_lm'].mean():.3f} ")
    assert f"(logged {logged:.3f})" in rows[names.index("mmlu")][4].split("</td>")[0]


def _under(res, group: str, task: str) -> bool:
    """Whether ``task`` is below ``group`` in the run's groups (lm-eval's group_subtasks)."""
    kids = res.meta["task_groups"].get(group, {}).get("subtasks", [])
    return task in kids or any(_under(res, k, task) for k in kids)
