"""``from_lm_eval`` on samples logs that lm-evaluation-harness 0.4.13 itself wrote (``lm_eval_logs/README.md``).

Every expected number is read from the log in the test, with plain ``json``, never from the reader under test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab.lm_eval_log import from_lm_eval

LOGS = Path(__file__).parent / "lm_eval_logs" / "out"
RUN = next(LOGS.iterdir())  # <output_path>/<model_name_sanitized>
MC = next(RUN.glob("samples_arc_local_2*.jsonl"))
GEN = next(RUN.glob("samples_arc_local_gen_*.jsonl"))
RESULTS = next(RUN.glob("results_*.json"))


def _log(path: Path = MC) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _logged_rows(log: list[dict]) -> list[tuple[str, str, float]]:
    """(context, continuation, log-likelihood) of every request, in document and option order."""
    out = []
    for rec in log:
        args = rec["arguments"]
        for k in range(len(args)):
            a = args[f"gen_args_{k}"]
            out.append((a["arg_0"], a["arg_1"], float(rec["filtered_resps"][k][0])))
    return out


def _check_against_log(res: sl.EvalResult) -> None:
    log = _log()
    rows = _logged_rows(log)
    assert list(zip(res.scores["context"], res.scores["option"])) == [(c, o) for c, o, _ in rows]
    assert res.scores["logprob"].tolist() == [ll for _, _, ll in rows]
    choices = [t for rec in log for t in rec["doc"]["choices"]["text"]]  # acc_norm divides by len(choice)
    assert res.scores["n_chars"].tolist() == [len(t) for t in choices]
    np.testing.assert_array_equal(res.scores["per_char"], [ll / len(t) for (_, _, ll), t in zip(rows, choices)])
    assert res.items["id"].tolist() == [rec["doc_id"] for rec in log]
    assert res.items["gold"].tolist() == [int(rec["target"]) for rec in log]
    assert res.items["correct_lm"].tolist() == [rec["acc"] == 1.0 for rec in log]
    assert res.items["correct_per_char"].tolist() == [rec["acc_norm"] == 1.0 for rec in log]
    assert res.items["lm_eval_acc"].tolist() == [rec["acc"] for rec in log]
    reported = json.loads(RESULTS.read_text(encoding="utf-8"))["results"]["arc_local"]
    acc = res.accuracy.set_index("scorer")
    assert acc.loc["lm", "accuracy"] == pytest.approx(reported["acc,none"])
    assert acc.loc["per_char", "accuracy"] == pytest.approx(reported["acc_norm,none"])
    assert acc.loc["lm", "lm_eval_metric"] == "acc" and acc.loc["per_char", "lm_eval_metric"] == "acc_norm"
    assert (acc["ci_low"] <= acc["accuracy"]).all() and (acc["accuracy"] <= acc["ci_high"]).all()
    assert res.meta["source"] == "lm-eval log" and res.meta["lm_eval_task"] == "arc_local"
    assert res.meta["lm_eval_disagreements"] == {}


def test_read_a_samples_file():
    res = from_lm_eval(MC)
    _check_against_log(res)
    assert res.meta["files"] == [str(MC)] and res.meta["results_file"] == str(RESULTS)
    assert res.model == json.loads(RESULTS.read_text(encoding="utf-8"))["model_name"]
    assert res.meta["lm_eval_config"]["model"] == "hf" and res.meta["task_hash_matches"] is True


def test_read_a_folder_passes_over_the_generation_log():
    for folder in (LOGS, RUN):
        res = from_lm_eval(folder)
        _check_against_log(res)
        assert res.meta["files"] == [str(MC)]


def test_browse_without_a_model_gives_only_what_the_log_holds():
    res = from_lm_eval(MC)
    assert res.scorers == ["lm", "per_char", "per_byte"]  # acc, acc_norm and acc_bytes from the logged numbers
    assert res.scores["n_tokens"].isna().all() and res.scores["domain_logprob"].isna().all()
    first = res.result(0)  # the workbench's view of one item, from the log's own numbers
    assert first.premise == _log()[0]["arguments"]["gen_args_0"]["arg_0"] and first.domain_premise is None
    with pytest.raises(ValueError, match="scorers: 'dcpmi'.*domain_premise="):
        from_lm_eval(MC, scorers="lm,dcpmi")
    with pytest.raises(ValueError, match="domain_premise: .*lm="):
        from_lm_eval(MC, domain_premise=" the answer is:")


def test_a_disagreement_with_the_logged_metric_is_reported(tmp_path):
    log = _log()
    log[3]["acc_norm"] = 1.0 - log[3]["acc_norm"]
    edited = tmp_path / MC.name
    edited.write_text("".join(json.dumps(rec) + "\n" for rec in log), encoding="utf-8")
    shutil.copy(RESULTS, tmp_path / RESULTS.name)
    with pytest.warns(UserWarning) as caught:
        res = from_lm_eval(edited)
    assert res.meta["lm_eval_disagreements"] == {"acc_norm": [log[3]["doc_id"]]}
    assert res.meta["task_hash_matches"] is True  # the hashes cover doc, prompt and target, not the metrics
    assert any("acc_norm differs" in str(w.message) for w in caught)


def test_generation_log_refused(tmp_path):
    with pytest.raises(ValueError, match=r"path: .*samples_arc_local_gen_.*generate_until"):
        from_lm_eval(GEN)  # the results file beside it says so
    alone = tmp_path / GEN.name  # without the results file: its requests say so
    shutil.copy(GEN, alone)
    with pytest.raises(ValueError, match=r"path: .*line 1 \(doc_id 0\): a generation-task log \(generate_until"):
        from_lm_eval(alone)
    with pytest.raises(ValueError, match="generate_until"):
        from_lm_eval(LOGS, task="arc_local_gen")


def test_not_a_samples_log_refused(tmp_path):
    with pytest.raises(ValueError, match=r"path: .*results_.*results file .*not a samples log"):
        from_lm_eval(RESULTS)
    other = tmp_path / "things.jsonl"
    other.write_text('{"name": "a", "value": 1}\n{"name": "b", "value": 2}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"path: .*things\.jsonl.*not a samples log"):
        from_lm_eval(other)
    prose = tmp_path / "notes.jsonl"
    prose.write_text("hello\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"path: .*not JSON Lines \(line 1"):
        from_lm_eval(prose)


def test_unknown_layout_refused(tmp_path):
    log = _log()
    del log[2]["filtered_resps"]
    broken = tmp_path / MC.name
    broken.write_text("".join(json.dumps(rec) + "\n" for rec in log), encoding="utf-8")
    with pytest.raises(ValueError, match=r"path: .*unknown layout: line 3 lacks filtered_resps"):
        from_lm_eval(broken)
    log = _log()
    log[0]["arguments"] = {"first": log[0]["arguments"]["gen_args_0"]}
    broken.write_text("".join(json.dumps(rec) + "\n" for rec in log), encoding="utf-8")
    with pytest.raises(ValueError, match=r"path: .*line 1 \(doc_id 0\): unknown layout: arguments has keys"):
        from_lm_eval(broken)
    broken.write_text(MC.read_text(encoding="utf-8") * 2, encoding="utf-8")  # two runs appended to one file
    with pytest.raises(ValueError, match="logs doc_id 0 twice"):
        from_lm_eval(broken)


def test_missing_path_and_empty_folder_refused(tmp_path):
    with pytest.raises(ValueError, match=r"path: .*nowhere.*does not exist"):
        from_lm_eval(tmp_path / "nowhere")
    with pytest.raises(ValueError, match=r"path: the folder .* holds no samples_"):
        from_lm_eval(tmp_path)
    with pytest.raises(ValueError, match=r"task: no samples log of 'mmlu'"):
        from_lm_eval(LOGS, task="mmlu")


@pytest.mark.slow
def test_with_the_model_lm_equals_the_logged_loglikelihood():
    lm = sl.load_lm()  # the packaged smollm2-135m, the model lm_eval ran (README.md)
    res = from_lm_eval(MC, lm=lm, domain_premise=" the answer is:", progress=False)
    logged = np.array([ll for _, _, ll in _logged_rows(_log())])
    # fp32 sums of 10-40 token log-probs batched differently (lm-eval: batches of 4, padded; surfacelab: packed):
    # a few parts in a million of the sum (seen: up to 1.4e-4 nats on -46.3)
    np.testing.assert_allclose(res.scores["surfacelab_logprob"].to_numpy(), logged, rtol=1e-5, atol=1e-5)
    assert res.meta["logprob_check"]["agrees"]
    for col in ("domain_logprob", "unc", "dcpmi"):
        assert res.scores[col].notna().all()
    np.testing.assert_allclose(res.scores["dcpmi"], logged - res.scores["domain_logprob"].to_numpy())
    assert {"dcpmi", "unc", "avg"} <= set(res.scorers) and "correct_dcpmi" in res.items
    _check_against_log(res)


# --- surfacelab eval --from-lm-eval ------------------------------------------------------------------------------

def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from surfacelab import cli

    rc = cli.main(["eval", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_cli_prints_the_logged_acc_and_acc_norm_and_writes_the_items(capsys, tmp_path):
    out_csv = tmp_path / "items.csv"
    rc, out, err = _cli(capsys, "--from-lm-eval", str(MC), "--out", str(out_csv), "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    acc = {row["scorer"]: row for row in doc["accuracy"]}
    reported = json.loads(RESULTS.read_text(encoding="utf-8"))["results"]["arc_local"]
    assert acc["lm"]["lm_eval_metric"] == "acc" and acc["lm"]["accuracy"] == pytest.approx(reported["acc,none"])
    assert acc["per_char"]["accuracy"] == pytest.approx(reported["acc_norm,none"])
    assert acc["lm"]["lm_eval_value"] == pytest.approx(reported["acc,none"])
    assert pd.read_csv(out_csv)["id"].tolist() == [rec["doc_id"] for rec in _log()]


@pytest.mark.parametrize("argv, flag", [
    (["--from-lm-eval", "no/such/log.jsonl"], "--from-lm-eval"),
    (["--from-lm-eval", str(GEN)], "--from-lm-eval"),
    (["--from-lm-eval", str(MC), "--domain", " the answer is:"], "--domain"),
    (["--task", "copa", "--domain", " the"], "--domain"),
    ([], "--task"),
])
def test_cli_mistakes_end_in_one_line_naming_the_flag(capsys, argv, flag):
    rc, out, err = _cli(capsys, *argv)
    assert rc != 0 and "Traceback" not in err
    assert err.strip().splitlines()[-1].count(flag) >= 1, err
