"""Whole lm-evaluation-harness 0.4 output folders as one run: the real ``--tasks mmlu`` run (57 subjects, 4 groups under
``mmlu``) and the other runs under ``tests/logs`` (written by lm-eval 0.4.13 itself; their README says how).

Every expected number is read from the files in the test with plain ``json``, never from the reader under test.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import surfacelab as sl
from surfacelab import explore
from surfacelab.logs import from_lm_eval

HERE = Path(__file__).resolve().parent / "logs" / "lm_eval_mmlu"
ZERO = HERE / "zero_shot"
ZERO_RUN = next(ZERO.iterdir())  # <output_path>/<model_name_sanitized>
RESULTS = json.loads(next(ZERO_RUN.glob("results_*.json")).read_text(encoding="utf-8"))


def _samples(folder: Path) -> dict[str, list[dict]]:
    """Each samples log of a run folder by its task (the file name's), its lines parsed."""
    out = {}
    for f in sorted(folder.rglob("samples_*.jsonl")):
        task = f.name.removeprefix("samples_").rsplit("_", 1)[0]
        out[task] = [json.loads(line) for line in f.read_text(encoding="utf-8").split("\n") if line]
    return out


@pytest.fixture(scope="module")
def mmlu():
    return from_lm_eval(ZERO, n_boot=50)


def test_a_whole_mmlu_folder_opens_as_one_run_each_item_keeping_its_task(mmlu):
    logged = _samples(ZERO)
    assert len(logged) == 57 and mmlu.task == "mmlu"
    assert sorted(mmlu.items["task"].unique()) == sorted(logged)
    assert len(mmlu.items) == sum(len(v) for v in logged.values())
    keys = list(zip(mmlu.items["task"], mmlu.items["id"]))
    assert len(set(keys)) == len(keys) and mmlu.items["id"].nunique() < len(keys)  # every subject has its doc 0
    for (task, doc_id), acc, correct in zip(keys, mmlu.items["log_acc"], mmlu.items["correct_lm"]):
        rec = next(r for r in logged[task] if r["doc_id"] == doc_id)
        assert acc == rec["acc"] and correct == (rec["acc"] == 1.0)
    by_row = mmlu.scores.merge(mmlu.items[["item", "task"]], on="item")
    for row in by_row.itertuples():
        rec = next(r for r in logged[row.task] if r["doc_id"] == row.id)
        assert row.logprob == float(rec["filtered_resps"][row.option_index][0])
    lm = mmlu.accuracy.set_index("scorer").loc["lm"]
    assert lm["log_value"] == RESULTS["groups"]["mmlu"]["acc,none"]  # the whole group's, as lm-eval recorded it


def test_the_groups_as_lm_eval_computed_them_beside_surfacelabs(mmlu):
    table = sl.by_task(mmlu)
    lm = table[table["scorer"] == "lm"].set_index("task")
    assert list(lm.index[:2]) == ["mmlu", "mmlu_stem"] and lm.loc["mmlu", "depth"] == 0
    assert set(lm.index) == set(RESULTS["groups"]) | set(mmlu.items["task"])
    for group, entry in RESULTS["groups"].items():
        row = lm.loc[group]
        assert row["kind"] == "group" and row["log_value"] == entry["acc,none"]
        assert row["log_stderr"] == entry["acc_stderr,none"]
        assert row["n"] == entry["sample_len"] and row["tasks"] == len(_leaves(group))
        # surfacelab's own, computed from the items as lm-eval averages a group: the same numbers
        assert row["mean"] == pytest.approx(entry["acc,none"], abs=1e-12)
        assert row["stderr"] == pytest.approx(entry["acc_stderr,none"], abs=1e-9)
        assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]
    for task in mmlu.items["task"].unique():
        row, entry = lm.loc[task], RESULTS["results"][task]
        assert row["kind"] == "task" and row["depth"] == 2 and row["mean"] == pytest.approx(entry["acc,none"])
        if isinstance(entry["acc_stderr,none"], float):
            assert row["stderr"] == pytest.approx(entry["acc_stderr,none"], abs=1e-12)


def _leaves(group: str) -> list[str]:
    kids = RESULTS["group_subtasks"].get(group)
    return [group] if kids is None else [t for k in kids for t in _leaves(k)]


def test_task_picks_a_group_or_one_task_of_the_folder():
    stem = from_lm_eval(ZERO, task="mmlu_stem", n_boot=0)
    assert stem.task == "mmlu_stem" and sorted(stem.items["task"].unique()) == sorted(_leaves("mmlu_stem"))
    assert stem.accuracy.set_index("scorer").loc["lm", "log_value"] == RESULTS["groups"]["mmlu_stem"]["acc,none"]
    assert list(stem.meta["task_groups"]) == ["mmlu_stem"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a task asked for: the groups above it are not "left out"
        one = from_lm_eval(ZERO, task="mmlu_management", n_boot=0)
    assert one.task == "mmlu_management" and one.items["task"].unique().tolist() == ["mmlu_management"]
    assert one.accuracy.set_index("scorer").loc["lm", "log_value"] == RESULTS["results"]["mmlu_management"]["acc,none"]


def test_an_unknown_task_is_answered_with_the_closest_names_not_every_one():
    with pytest.raises(ValueError) as caught:
        from_lm_eval(ZERO, task="mmlu_managment")
    msg = str(caught.value)
    assert msg.startswith("task: no task or group 'mmlu_managment'") and "did you mean 'mmlu_management'" in msg
    assert "57 tasks" in msg and "5 groups" in msg and msg.count("mmlu_") < 15 and len(msg) < 600


def test_several_runs_in_a_folder_are_told_apart_by_task_or_refused(tmp_path):
    shutil.copytree(ZERO, tmp_path / "zero")
    shutil.copytree(HERE / "five_shot", tmp_path / "five")
    with pytest.raises(ValueError, match=r"path: the folder .* holds the logs of 2 runs .*pass the folder of one run"):
        from_lm_eval(tmp_path)
    stem = from_lm_eval(tmp_path, task="mmlu_stem", n_boot=0)  # only the 0-shot run has the group
    assert stem.items["task"].nunique() == 19
    with pytest.raises(ValueError, match=r"holds the logs of 2 runs with 'mmlu_management'"):
        from_lm_eval(tmp_path, task="mmlu_management")


def test_a_group_with_a_task_missing_is_left_out_and_said(tmp_path):
    shutil.copytree(ZERO, tmp_path / "zero")
    next((tmp_path / "zero").rglob("samples_mmlu_anatomy_*.jsonl")).unlink()
    with pytest.warns(UserWarning) as caught:
        res = from_lm_eval(tmp_path / "zero", n_boot=0)
    assert res.items["task"].nunique() == 56 and "mmlu_anatomy" not in set(res.items["task"])
    assert set(res.meta["task_groups"]) == {"mmlu_other", "mmlu_social_sciences", "mmlu_humanities"}
    said = " ".join(str(w.message) for w in caught)
    assert "group mmlu not shown: 1 of its tasks are not read ('mmlu_anatomy')" in said
    assert "group mmlu_stem not shown" in said
    assert res.task != "mmlu"  # not named after a group it does not hold whole
    assert res.accuracy["log_value"].isna().all()


def test_a_version_of_lm_eval_not_seen_is_refused_naming_it(tmp_path):
    shutil.copytree(HERE / "u0085", tmp_path / "run")
    results = next((tmp_path / "run").rglob("results_*.json"))
    doc = json.loads(results.read_text(encoding="utf-8"))
    doc["lm_eval_version"] = "0.5.0"
    results.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"results_.*written by lm-eval '0.5.0' \(a string\), a version whose layout "
                                         r"surfacelab does not know; it reads what lm-eval 0.4.x writes"):
        from_lm_eval(tmp_path / "run")


def test_the_u0085_subjects_read_whole_with_the_character_kept():
    res = from_lm_eval(HERE / "u0085", n_boot=0)
    logged = _samples(HERE / "u0085")
    assert res.items.groupby("task").size().to_dict() == {t: len(v) for t, v in logged.items()}
    doc39 = res.items[(res.items["task"] == "mmlu_management") & (res.items["id"] == 39)]
    assert "\x85" in doc39["premise"].iloc[0]


def test_combining_runs_of_different_tasks_keeps_each_items_task_and_refuses_the_same_item_twice():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        a = from_lm_eval(ZERO, task="mmlu_management", n_boot=0)
        b = from_lm_eval(ZERO, task="mmlu_sociology", n_boot=0)
    both = explore.combine([a, b], n_boot=0)
    assert both.task == "mmlu_management+mmlu_sociology"
    assert both.items["task"].tolist() == ["mmlu_management"] * len(a.items) + ["mmlu_sociology"] * len(b.items)
    assert both.items["id"].tolist() == a.items["id"].tolist() + b.items["id"].tolist()  # both subjects' doc 0 and 1
    with pytest.raises(ValueError, match=r"parts: parts 0 and 1 both hold item '0' of 'mmlu_management'"):
        explore.combine([a, a], n_boot=0)
    flips = explore.compare(both, both)
    assert flips["fixed"].map(len).sum() == 0 and len(flips) == len(both.scorers)


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from surfacelab import cli

    rc = cli.main(["eval", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_cli_prints_each_group_beside_lm_evals_own(capsys, tmp_path):
    rc, out, err = _cli(capsys, "--from-log", str(ZERO), "--out", str(tmp_path / "items.csv"), "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    rows = {(r["task"].strip(), r["scorer"]): r for r in doc["by_task"]}
    for group, entry in RESULTS["groups"].items():
        assert rows[group, "lm"]["accuracy"] == pytest.approx(entry["acc,none"])
        assert rows[group, "lm"]["stderr"] == pytest.approx(entry["acc_stderr,none"])
        assert rows[group, "lm"]["log_value"] == pytest.approx(entry["acc,none"])
    rc, out, err = _cli(capsys, "--from-log", str(ZERO), "--task", "mmlu_humanities", "--out",
                        str(tmp_path / "h.csv"))
    assert rc == 0, err
    assert "mmlu_humanities" in out and "mmlu_stem" not in out and "per group" in out
    recorded = RESULTS["groups"]["mmlu_humanities"]
    row = next(line for line in out.splitlines() if line.startswith("mmlu_humanities ") and " lm " in line)
    assert row.split()[-2:] == [f"{recorded['acc,none']:.3f}", f"{recorded['acc_stderr,none']:.3f}"]  # lm-eval's own
    rc, out, err = _cli(capsys, "--from-log", str(ZERO), "--out", str(tmp_path / "all.csv"))
    assert rc == 0, err
    table = out[out.index("per group"):].splitlines()
    assert [line.split()[0] for line in table if " lm " in line] == ["mmlu", "stem", "other", "social_sciences",
                                                                      "humanities"]  # under mmlu, as lm-eval shows them
    assert max(len(line.rstrip()) for line in table) <= 80
    items = (tmp_path / "h.csv").read_text(encoding="utf-8")
    assert items.splitlines()[0].split(",")[:3] == ["item", "task", "id"]


def test_the_cli_names_the_task_flag_and_lists_tasks_briefly(capsys):
    rc, out, err = _cli(capsys, "--from-log", str(ZERO), "--task", "mmlu_stm")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("surfacelab eval: error: --task: no task or group 'mmlu_stm'")
    assert "did you mean 'mmlu_stem'" in err
    assert err.count("mmlu_") < 15


@pytest.mark.slow
def test_a_chat_logs_bare_letters_under_a_domain_premise_are_said_to_be_glued(real_lm):
    chat = Path(__file__).resolve().parent / "logs" / "lm_eval_chat" / "fewshot_system"
    with pytest.warns(UserWarning) as caught:
        # chat_template=False: the plain domain premise (by default it is rendered through the log's own template)
        res = from_lm_eval(chat, task="mmlu_management", lm=real_lm, domain_premise=" the answer is:", n_boot=0,
                           chat_template=False)
    options = res.scores["option"].unique().tolist()
    assert options == ["A", "B", "C", "D"]  # as lm-eval logged them under its chat template: no leading space
    said = " ".join(str(w.message) for w in caught)
    assert "4 options have no leading space: under the domain premise they are glued to its last word ('…is:A')" in said
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a domain premise that ends in whitespace: nothing to say
        ok = from_lm_eval(chat, task="mmlu_management", lm=real_lm, domain_premise=" the answer is:\n", n_boot=0,
                          chat_template=False)
    assert ok.meta["domain_glued"] is None and ok.meta["logprob_check"]["agrees"]


@pytest.mark.parametrize("weighting", ["size", "plain"])
def test_a_groups_mean_and_stderr_are_lm_evals_own(weighting):
    from lm_eval.api.metrics import aggregate_subtask_metrics, pooled_sample_stderr, unweighted_mean_stderr

    from surfacelab.task_groups import group_mean

    rng = np.random.default_rng(7)
    for _ in range(20):
        k = int(rng.integers(2, 12))
        values, stderrs = rng.uniform(0, 1, k).tolist(), rng.uniform(0.001, 0.2, k).tolist()
        sizes = rng.integers(2, 300, k).tolist()
        mean, stderr = group_mean(values, stderrs, sizes, weighting)
        assert mean == pytest.approx(aggregate_subtask_metrics(values, sizes, weighting == "size"), abs=1e-12)
        theirs = pooled_sample_stderr(stderrs, sizes) if weighting == "size" else unweighted_mean_stderr(stderrs)
        assert stderr == pytest.approx(theirs, abs=1e-12)
    assert np.isnan(group_mean([0.5, 1.0], [float("nan"), 0.1], [1, 5], weighting)[1])  # lm-eval's "N/A"


def test_a_group_lm_eval_averaged_plainly_is_told_from_its_record(tmp_path):
    shutil.copytree(ZERO, tmp_path / "zero")
    anatomy = next((tmp_path / "zero").rglob("samples_mmlu_anatomy_*.jsonl"))
    anatomy.write_text(anatomy.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")  # its doc 1 only
    results_file = next((tmp_path / "zero").rglob("results_*.json"))
    doc = json.loads(results_file.read_text(encoding="utf-8"))
    stem = _leaves("mmlu_stem")
    doc["groups"]["mmlu_stem"]["acc,none"] = float(np.mean([doc["results"][t]["acc,none"] for t in stem]))
    results_file.write_text(json.dumps(doc), encoding="utf-8")  # as lm-eval writes a group of weight_by_size: false
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the edited log's hashes no longer match
        res = from_lm_eval(tmp_path / "zero", n_boot=0)
    assert res.meta["task_groups"]["mmlu_stem"]["weighting"] == "plain"
    assert res.meta["task_groups"]["mmlu_other"]["weighting"] == "size"
    row = sl.by_task(res).set_index(["task", "scorer"]).loc[("mmlu_stem", "lm")]
    per_task = res.items[res.items["task"].isin(stem)].groupby("task")["correct_lm"].mean()
    assert row["mean"] == pytest.approx(per_task.mean()) and row["mean"] != pytest.approx(row["accuracy"])
