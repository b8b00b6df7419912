"""``from_log`` on the ``--save-details`` parquet that lighteval 0.13.0 itself wrote (``tests/logs/lighteval``: its
README gives the commands, the layout and lighteval's bugs a reader lives with).

Every expected number is read from the files in the test with pyarrow and ``json``, never from the reader under test.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import surfacelab as sl

HERE = Path(__file__).resolve().parent / "logs" / "lighteval"
RUNS = ("chat_default", "no_chat_template", "chat_system_prompt")


def _details(run: str) -> dict[str, list[dict]]:
    """Each details file of a run folder by its task (``arc:challenge|0``), its rows as pyarrow reads them."""
    return {f.name.removeprefix("details_").rsplit("_", 1)[0]: pq.read_table(f).to_pylist()
            for f in sorted((HERE / run).rglob("details_*.parquet"))}


def _results(run: str) -> dict:
    return json.loads(next((HERE / run).rglob("results_*.json")).read_text(encoding="utf-8"))


def _read(path, **kwargs) -> sl.EvalResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the chat runs' note on the premises
        return sl.from_log(path, n_boot=0, **kwargs)


@pytest.mark.parametrize("run", RUNS)
def test_per_item_numbers_equal_what_lighteval_logged(run):
    res = _read(HERE / run)
    assert res.meta["reader"] == "lighteval"
    details, results = _details(run), _results(run)
    assert sorted(res.items["task"].unique()) == sorted(details)
    for task, rows in details.items():
        items = res.items[res.items["task"] == task].reset_index(drop=True)
        assert items["id"].tolist() == [r["doc"]["id"] for r in rows]  # lighteval's order, its ids
        assert items["gold"].tolist() == [r["doc"]["gold_index"] for r in rows]
        assert items["premise"].tolist() == [r["doc"]["query"] for r in rows]
        assert (items["correct_lm"] == [r["metric"]["acc"] == 1 for r in rows]).all()
        if "acc_norm" in rows[0]["metric"]:  # LogProbCharNorm: the length with the leading space
            assert (items["correct_per_char"] == [r["metric"]["acc_norm"] == 1 for r in rows]).all()
        scores = res.scores[res.scores["item"].isin(res.items.loc[res.items["task"] == task, "item"])]
        logged = [lp for r in rows for lp in r["model_response"]["logprobs"]]
        assert scores["logprob"].tolist() == logged
        assert scores["option"].tolist() == [c for r in rows for c in r["doc"]["choices"]]
        by = sl.by_task(res).set_index(["task", "scorer"])
        for metric, scorer in (("acc", "lm"), ("acc_norm", "per_char")):
            if metric in results["results"][task]:
                assert by.loc[(task, scorer), "log_value"] == results["results"][task][metric]
                assert by.loc[(task, scorer), "accuracy"] == pytest.approx(results["results"][task][metric])
    assert res.model == results["config_general"]["model_config"]["model_name"]


def test_one_task_by_its_name_with_or_without_the_shots_and_from_the_results_file():
    res = _read(HERE / "no_chat_template", task="arc_challenge_norms")
    assert res.task == "arc_challenge_norms|0" and res.items["task"].unique().tolist() == ["arc_challenge_norms|0"]
    acc = res.accuracy.set_index("scorer")
    reported = _results("no_chat_template")["results"]["arc_challenge_norms|0"]
    assert acc.loc["lm", "log_value"] == reported["acc"] and acc.loc["per_char", "log_value"] == reported["acc_norm"]
    assert _read(HERE / "no_chat_template", task="arc:challenge|0").task == "arc:challenge|0"
    from_results = _read(next((HERE / "no_chat_template").rglob("results_*.json")))
    assert sorted(from_results.items["task"].unique()) == sorted(_details("no_chat_template"))
    with pytest.raises(ValueError, match=r"task: no details of 'arc:easy' in .*; it holds 'arc:challenge\|0', "
                                         r"'arc_challenge_norms\|0'"):
        _read(HERE / "no_chat_template", task="arc:easy")


def test_the_premises_say_whether_they_are_what_the_model_saw():
    with pytest.warns(UserWarning, match=r"the premises are lighteval's doc.query; the model saw it through "
                                         r"lighteval's prompt .*pass lm= to decode and score those"):
        chat = sl.from_log(HERE / "chat_default", n_boot=0)
    assert chat.meta["log_chat"]["applied"] is None  # lighteval records no template: not known from the files
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # override_chat_template=False, no system prompt, no shots: the text seen
        plain = sl.from_log(HERE / "no_chat_template", n_boot=0)
    assert plain.meta["log_chat"]["applied"] is False
    system = _read(HERE / "chat_system_prompt")
    assert system.meta["log_chat"]["system_prompt"] == _results("chat_system_prompt")["config_general"][
        "model_config"]["system_prompt"]


def _copy_run(tmp_path: Path, run: str = "no_chat_template") -> tuple[Path, Path]:
    shutil.copytree(HERE / run, tmp_path / run)
    return tmp_path / run, next((tmp_path / run).rglob("details_arc_challenge_norms*.parquet"))


def test_unconditioned_logprobs_logged_as_logprobs_n_to_2n_give_pmi(tmp_path):
    folder, file = _copy_run(tmp_path)
    table = pq.read_table(file)
    rows = table.to_pylist()
    null = [[lp - 1.5 * (k + 1) for k, lp in enumerate(r["model_response"]["logprobs"])] for r in rows]
    for r, u in zip(rows, null):
        r["model_response"]["logprobs"] = r["model_response"]["logprobs"] + u
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), file)
    res = _read(folder, task="arc_challenge_norms|0")
    assert "pmi_null" in res.scorers
    pmi = res.scores["pmi_null"].to_numpy()
    assert pmi == pytest.approx(np.array([1.5 * (k + 1) for r in rows for k in range(len(r["doc"]["choices"]))]))


def test_values_in_unconditioned_logprobs_are_not_read_and_said(tmp_path):
    folder, file = _copy_run(tmp_path)
    rows = pq.read_table(file).to_pylist()
    rows[1]["model_response"]["unconditioned_logprobs"] = [-1.0, -2.0, -3.0, -4.0]
    pq.write_table(pa.Table.from_pylist(rows), file)  # the column's type now inferred: a list of doubles
    with pytest.warns(UserWarning, match=r"model_response.unconditioned_logprobs holds values in 1 rows; lighteval "
                                         r"0.13.0 never writes it .*so it is not read"):
        res = sl.from_log(folder, task="arc_challenge_norms", n_boot=0)
    assert "pmi_null" not in res.scorers


def test_details_of_another_layout_are_refused_saying_what_they_hold(tmp_path):
    folder, file = _copy_run(tmp_path)
    flat = pa.table({"full_prompt": ["Question: ...\nAnswer:"], "predictions": [[-1.0, -2.0]], "gold": [[0]],
                     "metrics": [{"acc": 1}]})
    pq.write_table(flat, file)
    with pytest.raises(ValueError, match=r"details_arc_challenge_norms.*: not the details layout of lighteval 0.13 "
                                         r"\(struct columns doc, model_response, metric\); its columns are "
                                         r"'full_prompt', 'predictions', 'gold', 'metrics': the flat layout of "
                                         r"an older lighteval \(its Detail records"):
        _read(folder, task="arc_challenge_norms")
    pq.write_table(pa.table({"query": ["?"]}), file)
    with pytest.raises(ValueError, match=r"its columns are 'query': a layout surfacelab has not seen"):
        _read(folder, task="arc_challenge_norms")
    file.write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"details_arc_challenge_norms.* is not a parquet file pyarrow can read"):
        _read(folder, task="arc_challenge_norms")


@pytest.mark.parametrize("field, value, message", [
    ("logprobs", [0.0, float("nan"), -1.0, -2.0], r"row 0 \(doc.id '595'\): model_response.logprobs\[1\] logs the "
                                                   r"log-likelihood nan, which is not finite"),
    ("logprobs", [-1.0, -2.0, -3.0], r"row 0 \(doc.id '595'\): model_response.logprobs is a list, not one "
                                     r"log-likelihood per choice \(4, or 8 with the unconditioned ones\)"),
    ("gold_index", 7, r"row 0 \(doc.id '595'\): doc.gold_index is 7 \(a number\), not an index of its 4 choices"),
])
def test_a_row_that_no_model_logged_is_refused_naming_row_and_field(tmp_path, field, value, message):
    folder, file = _copy_run(tmp_path)
    table = pq.read_table(file)
    rows = table.to_pylist()
    part = "doc" if field == "gold_index" else "model_response"
    rows[0][part][field] = value
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), file)
    with pytest.raises(ValueError, match=message):
        _read(folder, task="arc_challenge_norms")


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_with_the_model_the_text_lighteval_fed_is_scored_and_agrees_with_the_log(real_lm, run):
    lm = real_lm
    res = _read(HERE / run, lm=lm, domain_premise=" the answer is:")
    check = res.meta["logprob_check"]
    assert check["agrees"] and check["max_abs_diff"] < 1e-4
    # the contexts scored are lighteval's input_tokens decoded: their ids are what it fed
    rows = [r for rows in _details(run).values() for r in rows]
    contexts = res.scores.groupby("item", sort=True)["context"].first().tolist()
    for ctx, r in zip(contexts, rows):
        ids = lm.tokenizer(ctx.rstrip("\n"), add_special_tokens=False)["input_ids"]  # the "\n" lighteval moved
        assert ids == r["model_response"]["input_tokens"]
    assert "dcpmi" in res.scorers
