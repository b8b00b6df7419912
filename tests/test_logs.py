"""``from_log`` / ``from_lm_eval`` on samples logs that lm-evaluation-harness 0.4.13 itself wrote

Every expected number is read from the log in the test, with plain ``json``, never from the reader under test.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import explore
from surfacelab.logs import from_lm_eval

LOGS = Path(__file__).parent / "lm_eval_logs" / "out"
RUN = next(LOGS.iterdir())  # <output_path>/<model_name_sanitized>
MC = next(RUN.glob("samples_arc_local_2*.jsonl"))
GEN = next(RUN.glob("samples_arc_local_gen_*.jsonl"))
RESULTS = next(RUN.glob("results_*.json"))


def _log(path: Path = MC) -> list[dict]:
    """The records of a samples log, read with plain json (lines end at "\\n" only, as JSON Lines do)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _write(path: Path, log: list[dict]) -> Path:
    """A samples log as lm-eval writes it: one object a line, ``ensure_ascii=False`` (U+2028 & co. stay raw)."""
    path.write_text("".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in log), encoding="utf-8")
    return path


def _run_copy(tmp_path: Path, edit=None, edit_results=None) -> Path:
    """A copy of the run's folder (samples log and results file) in ``tmp_path``, each edited by a function of its
    records / of its parsed JSON (a function may return the file's whole text instead); returns the samples log."""
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    log = _log()
    text = edit(log) if edit else None
    samples = folder / MC.name
    _write(samples, log) if text is None else samples.write_text(text, encoding="utf-8")
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    text = edit_results(results) if edit_results else None
    (folder / RESULTS.name).write_text(json.dumps(results) if text is None else text, encoding="utf-8")
    return samples


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
    assert res.items["log_acc"].tolist() == [rec["acc"] for rec in log]
    reported = json.loads(RESULTS.read_text(encoding="utf-8"))["results"]["arc_local"]
    acc = res.accuracy.set_index("scorer")
    assert acc.loc["lm", "accuracy"] == pytest.approx(reported["acc,none"])
    assert acc.loc["per_char", "accuracy"] == pytest.approx(reported["acc_norm,none"])
    assert acc.loc["lm", "log_metric"] == "acc" and acc.loc["per_char", "log_metric"] == "acc_norm"
    assert (acc["ci_low"] <= acc["accuracy"]).all() and (acc["accuracy"] <= acc["ci_high"]).all()
    assert res.meta["source"] == "log" and res.meta["reader"] == "lm-eval" and res.meta["log_task"] == "arc_local"
    assert res.meta["log_disagreements"] == {}


def test_read_a_samples_file():
    res = from_lm_eval(MC)
    _check_against_log(res)
    assert res.meta["files"] == [str(MC), str(RESULTS)]  # the samples log, then the results file beside it
    assert res.model == json.loads(RESULTS.read_text(encoding="utf-8"))["model_name"]
    assert res.meta["log_settings"]["config"]["model"] == "hf" and res.meta["checks"]["hash_matches"] is True


def test_read_a_folder_passes_over_the_generation_log_and_says_so():
    for folder in (LOGS, RUN):
        with pytest.warns(UserWarning, match=rf"passed over {re.escape(GEN.name)}: the log of a generate_until task"):
            res = from_lm_eval(folder)
        _check_against_log(res)
        assert res.meta["files"] == [str(MC), str(RESULTS)]
        assert [p["file"] for p in res.meta["checks"]["passed_over"]] == [str(GEN)]
        assert f"says {RESULTS.name}" in res.meta["checks"]["passed_over"][0]["why"]


def test_a_file_named_unlike_a_log_is_passed_over_by_name(tmp_path):
    shutil.copy(MC, tmp_path / MC.name)
    shutil.copy(MC, tmp_path / "samples_arc_local.jsonl")  # no date: not a name lm_eval gives
    with pytest.warns(UserWarning, match=r"passed over samples_arc_local\.jsonl: not named samples_<task>_<date>"):
        res = from_lm_eval(tmp_path)
    assert res.meta["checks"]["passed_over"][0]["file"] == str(tmp_path / "samples_arc_local.jsonl")


def test_browse_without_a_model_gives_only_what_the_log_holds():
    res = from_lm_eval(MC)
    assert res.scorers == ["lm", "per_char", "per_byte"]  # acc, acc_norm and acc_bytes from the logged numbers
    assert res.scores["n_tokens"].isna().all() and res.scores["domain_logprob"].isna().all()
    first = res.result(0)  # the workbench's view of one item, from the log's own numbers
    assert first.premise == _log()[0]["arguments"]["gen_args_0"]["arg_0"] and first.domain_premise is None
    with pytest.raises(ValueError, match="scorers: 'dcpmi'.*domain_premise="):
        from_lm_eval(MC, scorers="lm,dcpmi")
    with pytest.raises(ValueError, match="scorers: 'choices'.*task's fields.*sl.evaluate"):
        from_lm_eval(MC, scorers="lm,choices")  # a log keeps the rendered prompts, not the question and options
    with pytest.raises(ValueError, match="domain_premise: .*lm="):
        from_lm_eval(MC, domain_premise=" the answer is:")


def test_a_disagreement_with_the_logged_metric_is_reported(tmp_path):
    log = _log()
    log[3]["acc_norm"] = 1.0 - log[3]["acc_norm"]
    edited = _write(tmp_path / MC.name, log)
    shutil.copy(RESULTS, tmp_path / RESULTS.name)
    with pytest.warns(UserWarning) as caught:
        res = from_lm_eval(edited)
    assert res.meta["log_disagreements"] == {"acc_norm": {"arc_local": [log[3]["doc_id"]]}}
    assert res.meta["checks"]["hash_matches"] is True  # the hashes cover doc, prompt and target, not the metrics
    assert any("acc_norm differs" in str(w.message) for w in caught)


def test_generation_log_refused(tmp_path):
    with pytest.raises(ValueError, match=r"path: .*samples_arc_local_gen_.*generate_until"):
        from_lm_eval(GEN)  # the results file beside it says so
    alone = tmp_path / GEN.name  # without the results file: its requests say so
    shutil.copy(GEN, alone)
    with pytest.raises(ValueError, match=r"path: .*samples_arc_local_gen_.* is the log of a 'generate_until' task "
                                         r"\(arc_local_gen, its requests hold generation settings\)"):
        from_lm_eval(alone)
    mixed = tmp_path / MC.name  # a generation line after a multiple-choice one: that line is named
    mixed.write_text(MC.read_text(encoding="utf-8").splitlines(keepends=True)[0] + GEN.read_text(encoding="utf-8")
                     .splitlines(keepends=True)[1], encoding="utf-8")
    with pytest.raises(ValueError, match=r"path: .*line 2 \(doc_id 1\): a generation-task log \(generate_until"):
        from_lm_eval(mixed)
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
    with pytest.raises(ValueError, match=r"path: .*notes\.jsonl' line 1: malformed JSON"):
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
    with pytest.raises(ValueError, match=r"task: no task or group 'mmlu' in .*; it holds 2 tasks \('arc_local', "
                                         r"'arc_local_gen'\)"):
        from_lm_eval(LOGS, task="mmlu")


# --- a log from a stranger: never hangs, never misleads -----------------------------------------------------------

SEPARATORS = "\u2028\u2029\u0085"  # what str.splitlines() also splits on, which lm-eval writes raw (ensure_ascii=False)


def test_line_separators_inside_strings_are_text_not_line_ends(tmp_path):
    def edit(log):
        first = log[0]["arguments"]
        for k in range(len(first)):  # the context, which every request of the document shares
            request = first[f"gen_args_{k}"]
            request["arg_0"] = request["arg_0"].replace(" a planet", f" a{SEPARATORS}planet")
        first["gen_args_1"]["arg_1"] = f" Planetary{SEPARATORS}years will become longer."  # a choice
    samples = _run_copy(tmp_path, edit)
    raw = samples.read_bytes()
    assert all(c.encode() in raw for c in SEPARATORS)  # raw in the file, not \u escapes
    res = from_lm_eval(samples)
    log = _log(samples)
    assert list(zip(res.scores["context"], res.scores["option"])) == [(c, o) for c, o, _ in _logged_rows(log)]
    assert SEPARATORS in res.scores["context"].iloc[0] and SEPARATORS in res.scores["option"].iloc[1]
    assert res.scores["n_chars"].iloc[1] == len(f"Planetary{SEPARATORS}years will become longer.")
    assert len(res.items) == len(log)


def _finishes(call, seconds: float = 30) -> BaseException | None:
    """Run ``call`` in a thread; what it raised (None if it returned). A call still running after ``seconds`` fails
    the test (a FIFO it waits on is opened for writing then, so that the thread ends)."""
    box: list[BaseException | None] = []

    def target():
        try:
            call()
            box.append(None)
        except BaseException as err:  # noqa: BLE001 -- handed to the test
            box.append(err)
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return box[0] if box else pytest.fail(f"still reading after {seconds} s")


@pytest.fixture
def fifo_unblocker():
    """FIFOs made by a test, opened for writing at its end (a reader that blocked on one, on old code, ends)."""
    made: list[Path] = []
    yield made
    for path in made:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


@pytest.mark.parametrize("which", ["samples", "results"])
@pytest.mark.parametrize("kind", ["fifo", "folder"])
@pytest.mark.parametrize("given", ["file", "folder"])
def test_a_fifo_or_folder_in_place_of_a_log_file_is_refused_by_name(tmp_path, fifo_unblocker, which, kind, given):
    samples = _run_copy(tmp_path)
    target = samples if which == "samples" else samples.parent / RESULTS.name
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
        fifo_unblocker.append(target)
    else:
        target.mkdir()
    err = _finishes(lambda: from_lm_eval(samples if given == "file" else samples.parent))
    what = "a FIFO (named pipe)" if kind == "fifo" else "a folder"
    assert isinstance(err, ValueError), err
    if (which, kind, given) == ("samples", "folder", "file"):  # a folder given: searched for logs
        assert str(err).startswith(f"path: the folder {str(target)!r} holds no samples_<task>_<date>.jsonl"), err
    else:
        assert re.match(rf"path: '{re.escape(str(target))}' is {re.escape(what)}, not a regular file", str(err)), err


def test_a_link_to_a_regular_file_is_read(tmp_path):
    os.symlink(MC, tmp_path / MC.name)
    os.symlink(RESULTS, tmp_path / RESULTS.name)
    res = from_lm_eval(tmp_path)
    _check_against_log(res)
    assert res.meta["files"] == [str(tmp_path / MC.name), str(tmp_path / RESULTS.name)]


def test_files_over_the_size_caps_are_refused_with_their_size(monkeypatch):
    from surfacelab.logs import lm_eval as lm_eval_read, lm_eval_files

    monkeypatch.setattr(lm_eval_read, "SAMPLES_MAX_BYTES", 1000)
    size = MC.stat().st_size
    with pytest.raises(ValueError, match=rf"path: '.*{re.escape(MC.name)}' is .*\({size} bytes\), over the 1000 bytes"):
        from_lm_eval(MC)
    monkeypatch.undo()
    monkeypatch.setattr(lm_eval_files, "RESULTS_MAX_BYTES", 1000)
    size = RESULTS.stat().st_size
    with pytest.raises(ValueError, match=rf"path: '.*{re.escape(RESULTS.name)}' is .*\({size} bytes\), over the 1000"):
        from_lm_eval(MC)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "+5.0", "1e999", float("nan"), 0.5])
def test_a_logged_loglikelihood_that_no_model_gives_is_refused_by_document_and_field(tmp_path, value):
    def edit(log):
        log[3]["filtered_resps"][1][0] = value
    samples = _run_copy(tmp_path, edit)
    with pytest.raises(ValueError, match=rf"^path: '{re.escape(str(samples))}' line 4 \(doc_id 3\): "
                                         rf"filtered_resps\[1\] logs the log-likelihood {re.escape(repr(value))}"):
        from_lm_eval(samples.parent)


def test_a_scorer_without_a_finite_score_is_left_out_with_the_reason(tmp_path):
    def edit(log):  # an empty choice (the target delimiter alone): no score per character or byte
        log[3]["arguments"]["gen_args_2"]["arg_1"] = " "
    samples = _run_copy(tmp_path, edit)
    with pytest.warns(UserWarning, match=r"left out per_char \(lm / len\(y\)\) is -inf for doc_id 3, option 2 \(' '\)"):
        res = from_lm_eval(samples)
    assert res.scorers == ["lm"] and set(res.meta["scorers_left_out"]) == {"per_char", "per_byte"}
    with pytest.raises(ValueError, match=r"scorers: 'per_char' has no finite score for every option: .*doc_id 3"):
        from_lm_eval(samples, scorers="lm,per_char")


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def _set(key: str, value):
    """An edit of a results file: ``key`` (dotted: ``configs.arc_local``) set to ``value``."""
    def edit(doc):
        *path, last = key.split(".")
        for k in path:
            doc = doc[k]
        doc[last] = value
    return edit


def _set_line(k: int, key: str, value):
    """An edit of a samples log: ``key`` of the ``k``-th record set to ``value``."""
    def edit(log):
        log[k][key] = value
    return edit


def _raw_line(k: int, text: str):
    """An edit of a samples log: its ``k``-th line replaced by ``text`` as it is."""
    def edit(log):
        lines = [json.dumps(rec, ensure_ascii=False) for rec in log]
        lines[k] = text
        return "\n".join(lines) + "\n"
    return edit


def _nested(levels: int) -> dict:
    doc: dict = {}
    for _ in range(levels - 1):
        doc = {"x": doc}
    return doc


S, R = re.escape(MC.name), re.escape(RESULTS.name)
BESIDE = rf"{R}' \(the results file beside the log\)"
HOSTILE = {  # name: (edit of the samples log, edit of the results file, the message expected)
    "deep line": (_raw_line(4, _deep(100_000)), None, rf"{S}' line 5: JSON nested too deeply"),
    "deep results": (None, lambda doc: '{"configs": ' + _deep(100_000) + "}", rf"{R}': JSON nested too deeply"),
    "results nested 40 deep": (None, _set("config", _nested(40)), rf"{R}': JSON nested 41 levels deep"),
    "configs a list": (None, _set("configs", ["arc_local"]), rf"{BESIDE}: configs is a list, not an object"),
    "a config a string": (None, _set("configs.arc_local", "x"), rf"{BESIDE}: configs.arc_local is 'x' \(a string\)"),
    "results a number": (None, _set("results", 5), rf"{BESIDE}: results is 5 \(a number\)"),
    "n-shot a list": (None, _set("n-shot", [0]), rf"{BESIDE}: n-shot is a list"),
    "an int task hash": (None, _set("task_hashes.arc_local", 5), rf"{BESIDE}: task_hashes.arc_local is 5"),
    "model_name a list": (None, _set("model_name", ["m"]), rf"{BESIDE}: model_name is a list, not a string"),
    "an int delimiter": (None, _set("configs.arc_local.target_delimiter", 5),
                         rf"{BESIDE}: configs.arc_local.target_delimiter is 5 \(a number\), not a string"),
    "metrics: 5": (_set_line(3, "metrics", 5), None, rf"{S}' line 4 \(doc_id 3\): metrics is 5 \(a number\), not a "
                                                     "list"),
    "metrics: [5]": (_set_line(3, "metrics", [5]), None, rf"{S}' line 4 \(doc_id 3\): metrics holds 5 \(a number\)"),
    "int doc_hash": (_set_line(3, "doc_hash", 5), None, rf"{S}' line 4 \(doc_id 3\): doc_hash is 5 \(a number\)"),
    "int prompt_hash": (_set_line(3, "prompt_hash", 5), None, rf"{S}' line 4 \(doc_id 3\): prompt_hash is 5"),
    "int target_hash": (_set_line(3, "target_hash", 5), None, rf"{S}' line 4 \(doc_id 3\): target_hash is 5"),
    "a list doc_id": (_set_line(3, "doc_id", [3]), None, rf"{S}' line 4: doc_id is a list, not an integer or a string"),
    "a number filter": (_set_line(3, "filter", 5), None, rf"{S}' line 4 \(doc_id 3\): filter is 5 \(a number\)"),
    "5000-digit target": (_set_line(3, "target", "9" * 5000), None,
                          rf"{S}' line 4 \(doc_id 3\): the target '9+\.\.\. \(5000 characters\) is not an option"),
    "huge index target": (_set_line(3, "target", 10 ** 30), None,
                          rf"{S}' line 4 \(doc_id 3\): the target '10+' is not an option index \(the document has 4"),
    "an object target": (_set_line(3, "target", {"a": 1}), None, rf"{S}' line 4 \(doc_id 3\): target is an object"),
    "5000-digit doc_id": (_raw_line(3, '{"doc_id": ' + "9" * 5000 + "}"), None,
                          rf"{S}' line 4: a number JSON holds cannot be read"),
    "lone surrogate": (lambda log: "".join(json.dumps(rec) + "\n" for rec in log).replace(
        '"arg_0": "Question:', '"arg_0": "\\ud800Question:', 1), None,
        rf"{S}' line 1: arguments\.gen_args_0\.arg_0: character 0 \(0-based\) is a lone surrogate U\+D800"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_field_of_the_wrong_kind_is_refused_naming_file_and_field(tmp_path, name):
    edit, edit_results, message = HOSTILE[name]
    samples = _run_copy(tmp_path, edit, edit_results)
    with pytest.raises(ValueError, match=rf"^path: '{re.escape(str(samples.parent))}/" + message):
        from_lm_eval(samples.parent)


def test_a_harmless_odd_value_is_read(tmp_path):
    def edit(log):
        log[3]["acc"] = "N/A"  # a metric that is no number (lm-eval writes "N/A" for a missing stderr)
        return "".join(json.dumps(rec) + "\n" for rec in log).replace('"acc_norm": 1.0', '"acc_norm": 1' + "0" * 400)
    res = from_lm_eval(_run_copy(tmp_path, edit))  # 10**400: past a float's range
    assert np.isnan(res.items.loc[3, "log_acc"]) and res.items["log_acc_norm"].isna().sum() >= 1


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
    line = explore.run_line(res)  # what the explorer shows beside the run
    assert f"LM re-scored: agrees with the log within {res.meta['logprob_check']['max_abs_diff']:.1e} nats" in line


# --- surfacelab eval --from-log ------------------------------------------------------------------------------

def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    from surfacelab import cli

    rc = cli.main(["eval", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_cli_prints_the_logged_acc_and_acc_norm_and_writes_the_items(capsys, tmp_path):
    out_csv = tmp_path / "items.csv"
    rc, out, err = _cli(capsys, "--from-log", str(MC), "--out", str(out_csv), "--format", "json")
    assert rc == 0, err
    doc = json.loads(out)
    acc = {row["scorer"]: row for row in doc["accuracy"]}
    reported = json.loads(RESULTS.read_text(encoding="utf-8"))["results"]["arc_local"]
    assert acc["lm"]["log_metric"] == "acc" and acc["lm"]["accuracy"] == pytest.approx(reported["acc,none"])
    assert acc["per_char"]["accuracy"] == pytest.approx(reported["acc_norm,none"])
    assert acc["lm"]["log_value"] == pytest.approx(reported["acc,none"])
    assert pd.read_csv(out_csv)["id"].tolist() == [rec["doc_id"] for rec in _log()]


@pytest.mark.parametrize("argv, flag", [
    (["--from-log", "no/such/log.jsonl"], "--from-log"),
    (["--from-log", str(GEN)], "--from-log"),
    (["--from-log", str(MC), "--domain", " the answer is:"], "--domain"),
    (["--task", "copa", "--domain", " the"], "--domain"),
    ([], "--task"),
])
def test_cli_mistakes_end_in_one_line_naming_the_flag(capsys, argv, flag):
    rc, out, err = _cli(capsys, *argv)
    assert rc != 0 and "Traceback" not in err
    assert err.strip().splitlines()[-1].count(flag) >= 1, err


@pytest.mark.parametrize("name", HOSTILE)
def test_cli_refuses_each_hostile_log_in_one_line(capsys, tmp_path, name):
    edit, edit_results, message = HOSTILE[name]
    samples = _run_copy(tmp_path, edit, edit_results)
    rc, out, err = _cli(capsys, "--from-log", str(samples.parent), "--out", str(tmp_path / "items.csv"))
    assert rc == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert re.match(rf"surfacelab eval: error: --from-log: '{re.escape(str(samples.parent))}/" + message, err), err
    assert not (tmp_path / "items.csv").exists()


ESC = "\x1b[2J\x1b[31mEVIL\x1b]0;title\x07\u009b1m\u202e"  # clear screen, red, window title, 8-bit CSI, RTL override


def _no_raw_controls(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\x9b\u202e"), repr(text)


def test_cli_prints_text_from_the_log_with_its_control_characters_escaped(capsys, tmp_path):
    def edit(log):
        log[0]["doc_id"] = f"doc{ESC}"
        log[0]["acc"] = 1.0 - log[0]["acc"]  # a disagreement: its note names the doc_id
    samples = _run_copy(tmp_path, edit, _set("model_name", f"model{ESC}"))
    renamed = samples.with_name(f"samples_arc{ESC.replace('/', '')}_{samples.name.rsplit('_', 1)[1]}")
    samples.rename(renamed)
    rc, out, err = _cli(capsys, "--from-log", str(renamed), "--out", str(tmp_path / "items.csv"))
    assert rc == 0, err
    _no_raw_controls(out + err)
    flat = " ".join(out.split())
    assert "model\\x1b[2J\\x1b[31mEVIL" in flat and "samples_arc\\x1b[2J" in flat  # shown, not acted on
    assert "doc_id" in flat and "doc\\x1b[2J" in flat
    fifo = tmp_path / f"samples_{ESC.replace('/', '')}_2024-01-01T00-00-00.jsonl"
    os.mkfifo(fifo)
    rc, out, err = _cli(capsys, "--from-log", str(fifo))
    assert rc == 2 and "a FIFO" in err and len(err.strip().splitlines()) == 1, err
    _no_raw_controls(out + err)


def _with_mutual_info(log: list[dict]) -> None:
    """The log as a task with ``acc_mutual_info`` logs it: each choice scored again after an empty context."""
    for rec in log:
        n = len(rec["arguments"])
        for k in range(n):
            rec["arguments"][f"gen_args_{n + k}"] = {"arg_0": "", "arg_1": rec["arguments"][f"gen_args_{k}"]["arg_1"]}
        uncond = [-2.0 - len(rec["arguments"][f"gen_args_{k}"]["arg_1"]) for k in range(n)]
        rec["filtered_resps"] += [[str(u), "False"] for u in uncond]
        pmi = [float(r[0]) - u for r, u in zip(rec["filtered_resps"], uncond)]
        rec["metrics"].append("acc_mutual_info")
        rec["acc_mutual_info"] = float(int(np.argmax(pmi)) == int(rec["target"]))


def test_the_cli_table_fits_80_columns_with_every_metric_name(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    samples = _run_copy(tmp_path, _with_mutual_info)
    rc, out, err = _cli(capsys, "--from-log", str(samples), "--out", str(tmp_path / "items.csv"))
    assert rc == 0, err
    assert "acc_mutual_info" in out.split() and "pmi_null" in out.split()
    assert max(len(line) for line in out.splitlines()) <= 80, out


@pytest.mark.process
def test_the_console_script_refuses_what_would_hang_or_fill_the_memory(tmp_path):
    """The installed ``surfacelab`` script, in a process limited to 3 GB of address space, on what lm_eval never
    writes: each ends within the timeout in one line naming the file (links to /dev/zero, FIFOs, deep nesting,
    a NaN log-likelihood)."""
    script = Path(sys.executable).with_name("surfacelab")
    cases = {}
    for name, which, make in [("zero-samples", "samples", lambda t: os.symlink("/dev/zero", t)),
                              ("zero-results", "results", lambda t: os.symlink("/dev/zero", t)),
                              ("fifo-samples", "samples", os.mkfifo), ("fifo-results", "results", os.mkfifo)]:
        samples = _run_copy(tmp_path / name)
        target = samples if which == "samples" else samples.parent / RESULTS.name
        target.unlink()
        make(target)
        cases[name] = (samples.parent, target)
    for name in ("deep line", "lone surrogate"):
        edit, edit_results, _ = HOSTILE[name]
        samples = _run_copy(tmp_path / name.replace(" ", "-"), edit, edit_results)
        cases[name] = (samples.parent, samples)
    samples = _run_copy(tmp_path / "nan", lambda log: log[3]["filtered_resps"][1].__setitem__(0, "nan"))
    cases["nan"] = (samples.parent, samples)

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (3 * 2 ** 30, 3 * 2 ** 30))
    env = {**os.environ, "COLUMNS": "200"}
    procs = {name: subprocess.Popen([str(script), "eval", "--from-log", str(folder), "--out",
                                     str(tmp_path / f"{name}.csv")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, preexec_fn=limited)
             for name, (folder, _) in cases.items()}
    for name, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"{name}: still running after 120 s")
        text = err.decode()
        assert proc.returncode == 2 and "Traceback" not in text and len(text.strip().splitlines()) == 1, (name, text)
        assert text.startswith("surfacelab eval: error: --from-log: ") and str(cases[name][1]) in text, (name, text)
