"""Bad input is refused with an error that names the argument, file, line or item (issue #13, input items).

Each test builds the bad input by hand and asserts on the named parts of the message; the command
line's versions of these are in tests/test_cli.py.
"""

from __future__ import annotations

import json
import os
import warnings

import pytest

import surfacelab as sl
from surfacelab import letters, tasks, text

COPA_LINE = {"id": "c1", "premise": "The man took a bath.", "choice1": "He got clean.", "choice2": "He got dirty.",
             "question": "effect", "label": 0}


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- text: lone surrogates and bytes that are not UTF-8 -----------------------------------------

def test_lone_surrogate_names_argument_and_position(tiny_lm):
    with pytest.raises(ValueError, match=r"premise: character 4 \(0-based\) is a lone surrogate U\+D800"):
        sl.score(tiny_lm, "Tub \ud800 and", [" a", " b"])
    # U+DCFF is how Python carries the byte 0xFF of an argv that is not UTF-8 (surrogateescape)
    with pytest.raises(ValueError, match=r"options\[1\]: character 2 \(0-based\) is a byte 0xFF that is not UTF-8"):
        sl.score(tiny_lm, "Tub", [" a", " b\udcff"])
    with pytest.raises(ValueError, match=r"domain_premise: character 0"):
        sl.score(tiny_lm, "Tub", [" a", " b"], domain_premise="\udfff")


def test_surrogate_never_reaches_the_tokenizer(tiny_lm):
    with pytest.raises(ValueError, match=r"continuation: character 0"):
        sl.logprobs(tiny_lm, [("ok", "\ud83d")])  # half of an emoji's surrogate pair
    assert text.check_text("caf\u00e9 \U0001f642", "x") == "caf\u00e9 \U0001f642"  # real non-ASCII text passes


# --- one option validator for scoring and letters ----------------------------------------------

@pytest.mark.parametrize("options, message", [
    ([" a", " a"], r"options: duplicate option\(s\) \[' a'\]"),
    ([" a", " "], r"options\[1\]: an option must contain more than whitespace"),
    ([" a", ""], r"options\[1\]: must not be empty"),
    ([" caf\u00e9", " cafe\u0301"], r"options: options 0 and 1 \(' caf\u00e9' and ' cafe\u0301'\) are the same text "
                                   r"after Unicode NFC normalisation, written with different code points "
                                   r"\(' caf\\xe9' and ' cafe\\u0301'\)"),
    ([" a", "\u200b"], r"options\[1\]: an option must contain more than whitespace and invisible format characters "
                       r"\(such as U\+200B, the zero-width space\), got '\\u200b'"),
    ([" a", " \u200b"], r"options\[1\]: an option must contain more than whitespace"),
    ([" a", "\ufeff\u2060 \u200d"], r"options\[1\]: an option must contain more than whitespace"),
])
def test_scoring_and_letters_refuse_the_same_options(tiny_lm, options, message):
    with pytest.raises(ValueError, match=message):
        sl.score(tiny_lm, "In the", options)
    with pytest.raises(ValueError, match=message):
        letters.score(tiny_lm, "Which one?", options)


def test_nfc_twins_may_repeat_in_a_dataset_and_visible_text_around_a_format_character_passes():
    assert text.check_options([" caf\u00e9", " cafe\u0301"], distinct=False)  # a dataset item may repeat a choice
    assert text.check_options([" a\u200bb", " \u00e9"]) == [" a\u200bb", " \u00e9"]  # visible text around a Cf passes


def test_letters_needs_two_options_scoring_one(tiny_lm):
    with pytest.raises(ValueError, match="options: need at least 2 options, got 1"):
        letters.score(tiny_lm, "Which one?", [" a"])
    assert len(sl.score(tiny_lm, "In the", [" tub"], cache=False).table) == 1


# --- data files ---------------------------------------------------------------------------------

def test_a_data_file_reads_line_separators_inside_its_text_and_refuses_a_fifo(tmp_path):
    premise = "The man took\u2028a bath\u2029in the\u0085tub."  # raw in the file: JSON writers leave them so
    f = tmp_path / "val.jsonl"
    f.write_text(json.dumps(dict(COPA_LINE, premise=premise), ensure_ascii=False) + "\n", encoding="utf-8")
    assert "\u2028".encode() in f.read_bytes()
    assert tasks.read_jsonl(f)[0][1]["premise"] == premise
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=rf"{fifo}: is a FIFO \(named pipe\), not a regular file"):
        tasks.load("copa", "val", source=fifo)  # refused from its kind: a FIFO is never opened for reading


def test_empty_choice_is_refused_with_file_line_and_item(tmp_path):
    f = _write_jsonl(tmp_path / "val.jsonl", [COPA_LINE, dict(COPA_LINE, id="c2", choice2="")])
    with pytest.raises(ValueError) as exc:
        tasks.load("copa", "val", source=f)
    msg = str(exc.value)
    assert f"{f}: line 2: item 'c2': choice 2 is empty ('')" in msg


def test_bad_label_names_file_and_line(tmp_path):
    f = _write_jsonl(tmp_path / "val.jsonl", [COPA_LINE, COPA_LINE, dict(COPA_LINE, id="c3", label=7)])
    with pytest.raises(ValueError, match=rf"{f}: line 3: item 'c3': gold=7 is not a valid index into 2 options"):
        tasks.load("copa", "val", source=f)


def test_file_that_is_not_utf8_names_file_line_and_byte(tmp_path):
    f = tmp_path / "val.jsonl"
    f.write_bytes(json.dumps(COPA_LINE).encode() + b'\n{"id": "\xe9"}\n')  # Latin-1 e-acute, the 9th byte
    with pytest.raises(ValueError, match=rf"{f}: line 2: not UTF-8 \(byte 0xE9 at byte 9 of the line\)"):
        tasks.load("copa", "val", source=f)


def test_utf8_bom_is_read(tmp_path):
    f = tmp_path / "val.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(COPA_LINE).encode() + b"\n")
    assert tasks.load("copa", "val", source=f)[0].id == "c1"


BLIMP_LINE = {"sentence_good": "Who should Derek hug after shocking Richard?",
              "sentence_bad": "Who should Derek hug Richard after shocking?", "field": "syntax",
              "linguistics_term": "island_effects", "UID": "adjunct_island", "pairID": "0"}


@pytest.mark.parametrize("second_line, message", [
    (b'{"sentence_good": "Who should', r"line 2: malformed JSON"),
    (json.dumps({"UID": "adjunct_island"}).encode(), r"line 2: not a BLiMP record \(missing or bad field 'field'\)"),
    (json.dumps(dict(BLIMP_LINE, sentence_bad="")).encode(), r"line 2: sentence_bad: must not be empty"),
    (json.dumps(dict(BLIMP_LINE, sentence_good="Caf\u00e9"), ensure_ascii=False).encode("latin-1"),
     r"line 2: not UTF-8 \(byte 0xE9"),
])
def test_corrupt_blimp_line_names_file_and_line(tmp_path, second_line, message):
    f = tmp_path / "adjunct_island.jsonl"
    f.write_bytes(json.dumps(BLIMP_LINE).encode() + b"\n" + second_line + b"\n")
    with pytest.raises(ValueError, match=rf"{f}: {message}"):
        sl.load_blimp(tmp_path)
    assert len(sl.load_blimp(tmp_path, limit=1)) == 1  # a limit that stops before the bad line reads fine


# --- evaluate: an option too long for the model's window ---------------------------------------

LONG = " " + " ".join(["bathtub"] * 80) + "."  # more tokens than the tiny model's 64-token window


@pytest.fixture
def long_task(tmp_path):
    recs = [dict(COPA_LINE, id=f"c{i}") for i in range(1, 5)]
    recs[2]["choice2"] = LONG.strip()
    return tasks.load("copa", "val", source=_write_jsonl(tmp_path / "val.jsonl", recs))


def test_evaluate_names_the_item_too_long_for_the_window(tiny_lm, long_task):
    with pytest.raises(ValueError) as exc:
        sl.evaluate(tiny_lm, long_task, "lm,dcpmi", progress=False, n_boot=0)
    msg = str(exc.value)
    assert "item 'c3' (position 2" in msg and f"{long_task.source}: line 3" in msg
    assert "window of 64 tokens" in msg and "too_long='skip'" in msg


def test_evaluate_can_skip_too_long_items_and_counts_them(tiny_lm, long_task):
    res = sl.evaluate(tiny_lm, long_task, "lm,dcpmi", progress=False, n_boot=0, too_long="skip")
    assert res.meta["skipped_too_long"] == ["c3"]
    assert list(res.items["id"]) == ["c1", "c2", "c4"] and (res.accuracy["n"] == 3).all()
    assert "1 skipped as too long" in repr(res)
    with pytest.raises(ValueError, match="too_long: expected 'error' or 'skip', got 'drop'"):
        sl.evaluate(tiny_lm, long_task, "lm", progress=False, too_long="drop")


def test_evaluate_all_items_too_long(tiny_lm, tmp_path):
    f = _write_jsonl(tmp_path / "val.jsonl", [dict(COPA_LINE, choice1=LONG.strip())])
    with pytest.raises(ValueError, match="all 1 items of 'copa' are too long"):
        sl.evaluate(tiny_lm, tasks.load("copa", "val", source=f), "lm", progress=False, too_long="skip")


def test_no_warning_when_nothing_is_cut(tiny_lm, long_task):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = sl.evaluate(tiny_lm, long_task, "lm", progress=False, n_boot=0, too_long="skip")
    assert (res.scores["truncated"] == 0).all()


def test_next_token_ids_refuse_bools_and_out_of_range_ids(tiny_lm):
    from surfacelab import engine

    for bad in ([True], [1.0], [tiny_lm.vocab_size], [-1]):  # True would read token 1
        with pytest.raises(ValueError, match="token_ids: not vocabulary ids"):
            engine.next_token_logprobs(tiny_lm, ["the cat"], token_ids=bad, cache=False)
