"""benchmarks/run_methods_report.py (the measured table of #38's methods) and benchmarks/report_kit.py (what the report
scripts share): the statistics and the markdown on hand-built item frames, one split on the tiny model."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import report_kit  # noqa: E402
import run_methods_report as rep  # noqa: E402

from surfacelab import tasks  # noqa: E402


def _items(**correct: list[bool]) -> pd.DataFrame:
    """An item frame with ``correct_<key>``, ``pred_<key>`` (gold 0: 0 when right, 1 when wrong) and ``tie_<key>``
    columns per keyword."""
    n = len(next(iter(correct.values())))
    frame = pd.DataFrame({"id": [str(i) for i in range(n)], "gold": 0, "n_options": 2})
    for key, values in correct.items():
        frame[f"correct_{key}"] = values
        frame[f"pred_{key}"] = [0 if v else 1 for v in values]
        frame[f"tie_{key}"] = False
    return frame


# 12 items: lm right on 0-5, dcpmi right on 0-3 and 6-9, avg right on 0-8 (avg vs lm: 3 / 0 discordant)
LM = [True] * 6 + [False] * 6
DCPMI = [True] * 4 + [False] * 2 + [True] * 4 + [False] * 2
AVG = [True] * 9 + [False] * 3


def test_report_cells():
    assert report_kit.pct_ci(0.5, 0.4123, 0.6) == "50.0 [41.2, 60.0]"
    assert report_kit.pct_ci(0.5, 0.4, 0.6, bold=True) == "**50.0 [40.0, 60.0]**"
    assert report_kit.p_text(0.0004) == "**<0.001**"
    assert report_kit.p_text(0.049) == "**0.049**"
    assert report_kit.p_text(0.05) == "0.050"


def test_caps_from_the_command_line():
    parser = argparse.ArgumentParser()
    assert report_kit.parse_caps(parser, ["b=0"], {"a": 5, "b": 7}) == {"a": 5, "b": 0}
    with pytest.raises(SystemExit):
        report_kit.parse_caps(parser, ["c=3"], {"a": 5})
    with pytest.raises(SystemExit):
        report_kit.parse_caps(parser, ["a=x"], {"a": 5})


def test_summary_counts_and_tests_against_lm_and_dcpmi():
    table = rep.summarise(_items(lm=LM, dcpmi=DCPMI, avg=AVG), ["lm", "avg", "dcpmi", "absent"]).set_index("method")
    assert list(table.index) == ["lm", "avg", "dcpmi"]  # a method with no column is left out
    assert table.loc["avg", "accuracy"] == pytest.approx(9 / 12)
    assert table.loc["avg", "ci_low"] < 9 / 12 < table.loc["avg", "ci_high"]
    # avg vs lm: 3 items only avg gets right, none only lm: exact two-sided binomial 2 * 0.5**3
    assert (table.loc["avg", "only_lm"], table.loc["avg", "only_lm_ref"]) == (3, 0)
    assert table.loc["avg", "p_lm"] == pytest.approx(2 * 0.5**3)
    # dcpmi vs lm: 4 only dcpmi, 2 only lm: 2 * P(X <= 2 | n=6) = 2 * (1 + 6 + 15) / 64
    assert (table.loc["dcpmi", "only_lm"], table.loc["dcpmi", "only_lm_ref"]) == (4, 2)
    assert table.loc["dcpmi", "p_lm"] == pytest.approx(2 * 22 / 64)
    # avg vs dcpmi: only avg right on 4 and 5, only dcpmi on 9: 2 * P(X <= 1 | n=3), over 1, so 1
    assert (table.loc["avg", "only_dcpmi"], table.loc["avg", "only_dcpmi_ref"]) == (2, 1)
    assert table.loc["avg", "p_dcpmi"] == 1.0
    assert table.loc["lm", "p_lm"] == 1.0  # against itself: no discordant item


def test_split_table_rows():
    lines = rep.split_table(_items(lm=LM, dcpmi=DCPMI, avg=AVG), rep.METHODS)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert list(rows) == ["LM", "Avg", "DC-PMI"]  # methods not run on the split have no row
    avg = [c.strip() for c in rows["Avg"].strip("|").split("|")]
    assert avg[1].startswith("**75.0 [")  # the best of the split in bold
    assert avg[2:5] == ["+25.0", "3 / 0", "0.250"]
    assert avg[5:8] == ["+8.3", "2 / 1", "1.000"]
    lm = [c.strip() for c in rows["LM"].strip("|").split("|")]
    assert lm[2:5] == ["", "", ""]  # LM is not tested against itself


def test_choices_only_is_tested_against_chance():
    # 10 two-option items, 9 right under choices-only: binomial P(X >= 9) * 2 = 2 * 11 / 1024
    frames = {("m", "copa/dev"): _items(lm=[True] * 10, choices=[True] * 9 + [False])}
    deltas = rep.deltas(frames, rep.method("choices"))
    assert deltas["delta"].tolist() == [pytest.approx(0.4)]
    assert deltas["p"].tolist() == [pytest.approx(22 / 1024)]


def test_olmes_reports_the_better_formulation():
    cloze_wins = _items(lm=LM, per_char=AVG, mcf=DCPMI)  # per char 75%, MCF 67%: the best cloze scorer
    assert rep.olmes_pick(cloze_wins) == "per_char"
    assert rep.with_olmes(cloze_wins)["correct_olmes"].tolist() == AVG
    assert rep.olmes_pick(_items(lm=LM, mcf=DCPMI)) == "mcf"  # MCF 67% against LM's 50%
    assert rep.olmes_pick(_items(lm=LM, dcpmi=DCPMI)) is None  # no MCF run: nothing to report
    # a calibration of fixed label sets is not one of OLMES's cloze normalisations, however accurate
    assert rep.olmes_pick(_items(lm=LM, batch_cal=AVG, domain_cal=AVG, mcf=DCPMI)) == "mcf"
    assert "correct_olmes" not in rep.with_olmes(_items(lm=LM, dcpmi=DCPMI))
    frames = {("m", "a"): cloze_wins, ("m", "b"): _items(lm=LM, mcf=DCPMI), ("n", "a"): cloze_wins}
    text = rep.olmes_sentence(rep.method("olmes"), frames)
    assert "cloze on 2 and MCF on 1 of 3" in text and text.endswith("here it agrees.")


def test_run_commands_say_how_each_model_was_run():
    frames = {("a", "copa/dev"): _items(lm=LM), ("a", "arc-challenge/test"): _items(lm=LM, letters_bc=AVG),
              ("b", "copa/dev"): _items(lm=LM)}
    lines = rep.run_commands(frames, {"a": 200, "b": 40, "c": 0})
    assert lines == [
        "flock /tmp/surfacelab-cpu.lock python benchmarks/run_methods_report.py run --cap b=0 --cap c=0 --cap a=200 "
        "[--only TASK,...]",
        "flock /tmp/surfacelab-cpu.lock python benchmarks/run_methods_report.py run --cap a=0 --cap c=0 --cap b=40 "
        "--no-letters [--only TASK,...]"]


def test_first_option_share_per_model():
    a = _items(mcf=[True, False, False, True])  # pred 0 where right: 2 of 4 first options
    b = _items(mcf=[True, True])
    frames = {("smollm2-135m", "x"): a, ("smollm2-135m", "y"): b, ("gemma-3-270m", "x"): _items(lm=[True])}
    assert rep.first_option_share(frames, "mcf") == "smollm2-135m 66.7%"
    assert rep.first_option_share(frames, "letters") == ""


def test_which_methods_do_not_apply_to_a_split():
    letter_keys = {m.key for m in rep.METHODS if m.kind == "letters"}
    assert rep.not_applicable(tasks.load("copa", "val")) == {"batch_cal", "domain_cal"} | letter_keys
    assert rep.not_applicable(tasks.load("sst-2", "test", limit=20)) == letter_keys  # a fixed label set
    assert rep.not_applicable(tasks.load("arc-challenge", "test", limit=20)) == {"batch_cal", "domain_cal"}
    frames = {("m", "copa/val"): _items(lm=LM)}
    line = rep.overview(frames, "m", [rep.method("lm"), rep.method("batch_cal"), rep.method("mcf")],
                        {"copa/val": {"batch_cal"}})[2]
    assert line == "| copa/val | 12 | **50.0** | n/a |  |"  # n/a: does not apply; blank: not run


def test_overview_blank_where_a_method_does_not_apply():
    frames = {("m", "copa/dev"): _items(lm=LM, dcpmi=DCPMI),
              ("m", "arc-challenge/test"): _items(lm=LM, dcpmi=DCPMI, mcf=AVG),
              ("other", "copa/dev"): _items(lm=AVG)}
    lines = rep.overview(frames, "m", [rep.method("lm"), rep.method("dcpmi"), rep.method("mcf")])
    assert lines[0] == "| split | n | LM | DC-PMI | MCF |"
    assert lines[2] == "| copa/dev | 12 | 50.0 | **66.7** |  |"
    assert lines[3] == "| arc-challenge/test | 12 | 50.0 | 66.7 | **75.0** |"
    assert len(lines) == 4  # the other model's split is not in this model's table


def _deltas(*rows: tuple[float, float]) -> pd.DataFrame:
    return pd.DataFrame([{"model": "m", "split": f"s{i}", "delta": d, "p": p} for i, (d, p) in enumerate(rows)])


def test_direction_sentences_count_splits_and_significance():
    dcpmi = rep.method("dcpmi")  # the paper: above LM
    text = rep.direction_sentence(dcpmi, _deltas((0.05, 0.01), (0.02, 0.4), (-0.01, 0.9)))
    assert "above LM on 2 of 3" in text and "1 of them significantly" in text and "the other way on 1;" in text
    assert "equal on 0;" in text
    assert text.endswith("here it agrees.")
    text = rep.direction_sentence(dcpmi, _deltas((-0.05, 0.01), (-0.02, 0.4), (0.01, 0.9)))
    assert text.endswith("here it disagrees.") and "significantly on 1 (m s0)" in text
    assert rep.direction_sentence(dcpmi, _deltas((0.02, 0.3))).endswith("leans the paper's way.")
    # one split significantly the paper's way, one the other way without significance, two equal: no direction
    even = rep.direction_sentence(dcpmi, _deltas((0.05, 0.01), (-0.01, 0.8), (0.0, 1.0), (0.0, 1.0)))
    assert "equal on 2;" in even and even.endswith("here it shows no clear direction.")
    mixed = rep.direction_sentence(dcpmi, _deltas((0.05, 0.01), (-0.05, 0.01), (-0.05, 0.01), (0.01, 0.5), (0.01, 0.5)))
    assert mixed.endswith("here it is mixed (significant differences both ways).")
    unc = rep.method("unc")  # the paper: below LM, so a drop agrees
    assert rep.direction_sentence(unc, _deltas((-0.1, 0.001), (-0.1, 0.001))).endswith("here it agrees.")
    assert "not run" in rep.direction_sentence(dcpmi, _deltas())
    choices = rep.method("choices")  # against guessing, with a binomial test
    text = rep.direction_sentence(choices, _deltas((0.2, 0.001), (0.1, 0.2)))
    assert "above chance on 2 of 2" in text and "binomial test against chance p < 0.05" in text
    with pytest.raises(ValueError, match="method"):
        rep.method("nope")


def test_every_method_names_a_known_baseline_and_runner():
    from surfacelab.letters import METHODS as LETTER_METHODS
    from surfacelab.scorers import SCORERS

    keys = [m.key for m in rep.METHODS]
    assert len(set(keys)) == len(keys)
    for m in rep.METHODS:
        if m.kind != "olmes":
            assert m.name in (SCORERS if m.kind == "scorer" else LETTER_METHODS), m
        assert m.baseline in ("", rep.CHANCE, *keys), m
        assert m.direction in (1, -1)
    assert {"lm", "dcpmi"} <= set(keys)  # the references every method is tested against


@pytest.mark.filterwarnings("ignore:.*window:UserWarning")
def test_one_split_on_the_tiny_model(tiny_lm, tmp_path):
    drawn = rep.sample("arc-challenge", "test", 4, "data/eval")
    same = tasks.load("arc-challenge", "test", sample=4, seed=0)
    assert [it.id for it in drawn.items] == [it.id for it in same.items]
    assert len(rep.sample("cb", "dev", 100, "data/eval").items) == 56  # a smaller split is whole
    arc = tasks.load("arc-challenge", "test")  # four short questions: every condition fits the tiny model's window
    arc = dataclasses.replace(arc, items=[it for it in arc.items if len(it.premise) < 60][:4])
    items, skipped = rep.run_split(tiny_lm, arc, rep.METHODS)
    # the cloze calibrations need a fixed label set: not ARC's per-item options
    assert skipped == ["batch_cal", "domain_cal"] and list(items["id"]) == [str(it.id) for it in arc.items]
    for m in (m for m in rep.METHODS if m.kind != "olmes" and m.key not in skipped):  # OLMES: made when read
        assert items[f"correct_{m.key}"].tolist() == (items[f"pred_{m.key}"] == items["gold"]).tolist(), m.key
    from surfacelab import letters

    direct = letters.evaluate(tiny_lm, arc, ["batch"]).items
    assert items["correct_letters_bc"].tolist() == direct["correct"].tolist()
    copa = tasks.load("copa", "val", limit=3)
    cb, skipped = rep.run_split(tiny_lm, copa, rep.METHODS)
    # COPA: options per item (no cloze calibration), no raw question (no letters)
    assert skipped == ["batch_cal", "domain_cal"] + [m.key for m in rep.METHODS if m.kind == "letters"]
    sst = tasks.load("sst-2", "test")  # short sentences: the channel's continuation fits the tiny model's window
    sst = rep.run_split(tiny_lm, dataclasses.replace(sst, items=[it for it in sst.items if len(it.premise) < 50][:6]),
                        rep.METHODS)[0]
    assert {"correct_batch_cal", "correct_domain_cal"} <= set(sst)  # a fixed label set: both apply
    assert "correct_letters" not in cb and cb["correct_lm"].dtype == bool
    # the frames as the run writes them, read back and rendered
    for name, frame in (("arc-challenge--test", items), ("copa--dev", cb)):
        (tmp_path / "smollm2-135m").mkdir(exist_ok=True)
        frame.to_csv(tmp_path / "smollm2-135m" / f"{name}.csv", index=False)
    frames = rep.read_frames(tmp_path)
    assert list(frames) == [("smollm2-135m", "copa/dev"), ("smollm2-135m", "arc-challenge/test")]
    text = rep.render(frames, {"smollm2-135m": 4, "gemma-3-270m": 0}, ["cmd"])
    assert "### smollm2-135m · arc-challenge/test (4 items)" in text and "## gemma-3-270m\n\n(not run)" in text
    arc_section = text.split("### smollm2-135m · arc-challenge/test")[1]
    assert f"| DC-PMI | {100 * np.mean(items['correct_dcpmi']):.1f} [" in arc_section.replace("**", "")


@pytest.mark.filterwarnings("ignore:.*window:UserWarning")
def test_a_letters_only_run_adds_its_columns_to_the_scorers_frame(tiny_lm, tmp_path):
    arc = tasks.load("arc-challenge", "test")
    arc = dataclasses.replace(arc, items=[it for it in arc.items if len(it.premise) < 60][:3])
    scorers = [m for m in rep.METHODS if m.key in ("lm", "dcpmi")]
    letters = [m for m in rep.METHODS if m.kind == "letters"]
    path = tmp_path / "arc-challenge--test.csv"
    with pytest.raises(SystemExit, match="arc-challenge--test.csv: no frame"):
        rep.add_to_frame(path, rep.run_split(tiny_lm, arc, letters)[0])
    rep.run_split(tiny_lm, arc, scorers)[0].to_csv(path, index=False)
    stale = pd.read_csv(path).assign(correct_letters=True)  # a letter column from an earlier run is replaced
    stale.to_csv(path, index=False)
    only, skipped = rep.run_split(tiny_lm, arc, letters)
    assert skipped == [] and list(only.columns[:3]) == ["id", "gold", "n_options"]
    merged = rep.add_to_frame(path, only)
    whole = rep.run_split(tiny_lm, arc, scorers + letters)[0]
    assert sorted(merged.columns) == sorted(whole.columns)
    pd.testing.assert_frame_equal(merged[whole.columns].astype(str), whole.astype(str))
    other = dataclasses.replace(arc, items=arc.items[1:] + arc.items[:1])  # the same items in another order
    with pytest.raises(SystemExit, match="are not this run's items"):
        rep.add_to_frame(path, rep.run_split(tiny_lm, other, letters)[0])


def test_letters_only_and_no_letters_together_are_refused(capsys):
    with pytest.raises(SystemExit):
        rep.main(["run", "--no-letters", "--letters-only", "--cap", "smollm2-135m=0", "--cap", "gemma-3-270m=0"])
    assert "--no-letters and --letters-only" in capsys.readouterr().err
