"""The command line."""

import json

import pytest

from surfacelab import cli


@pytest.mark.slow
def test_score_command_prints_every_scorer_and_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = cli.main(["score", "--premise", "The man took a bath in the", "--option", " bathtub", "--option",
                   " xylophone", "--domain", " the", "--json", str(out)])
    printed = capsys.readouterr().out
    assert rc == 0
    for col in ["logprob", "avg_token", "per_char", "per_byte", "unc", "dcpmi", "pmi_null"]:
        assert col in printed
    assert [r["option"] for r in json.loads(out.read_text())["table"]] == [" bathtub", " xylophone"]


def test_bad_input_is_a_message_not_a_traceback(capsys):
    rc = cli.main(["score", "--premise", "x", "--option", " a", "--option", " a", "--model", "smollm2-135n"])
    assert rc == 2
    assert "name_or_path" in capsys.readouterr().err


def test_models_command(capsys):
    assert cli.main(["models"]) == 0
    assert "smollm2-135m" in capsys.readouterr().out
