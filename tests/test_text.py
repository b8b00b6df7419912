"""Boundary-safe encoding rules, on the tiny tokenizer and the real smollm2 tokenizer."""

import pytest

from surfacelab import text


def test_whitespace_moves_to_continuation():
    assert text.move_whitespace("in the  ", "tub") == ("in the", "  tub")
    assert text.move_whitespace("in the", " tub") == ("in the", " tub")


def test_scored_tokens_cover_exactly_the_continuation(tiny_lm):
    enc = text.encode(tiny_lm, "The man took a bath in the ", "bathtub.")
    assert enc.context == "The man took a bath in the"
    assert enc.continuation == " bathtub."
    pieces = [enc.continuation[s:e] for s, e in enc.spans]
    assert "".join(pieces) == enc.continuation
    tok = tiny_lm.tokenizer
    assert tok.decode(list(enc.scored_ids)) == " bathtub."
    assert tok.decode(list(enc.input_ids[: enc.start])) == "The man took a bath in the"


def test_boundary_merge_is_flagged_not_shifted(real_lm):
    # "caf" + "é" is one word for a byte-level BPE: a token straddles the join
    enc = text.encode(real_lm, "I ordered a caf", "é au lait")
    joint = real_lm.tokenizer("I ordered a café au lait", add_special_tokens=False)["input_ids"]
    assert enc.merged
    assert list(enc.input_ids) == joint  # the sequence is the joint encoding, nothing shifted
    assert enc.spans[0][0] == 0
    assert "".join(enc.continuation[s:e] for s, e in enc.spans[1:]) == enc.continuation[enc.spans[1][0]:]


def test_empty_context_uses_bos_or_eos(tiny_lm, real_lm):
    for lm in (tiny_lm, real_lm):
        enc = text.encode(lm, "", " hello")
        assert enc.start == 1
        expected = lm.tokenizer.bos_token_id if lm.tokenizer.bos_token_id is not None else lm.tokenizer.eos_token_id
        assert enc.input_ids[0] == expected


def test_left_truncation_is_reported(tiny_lm):
    long = " ".join(["the cat sat on the mat"] * 40)
    enc = text.encode(tiny_lm, long, " dog")
    assert len(enc.input_ids) == tiny_lm.max_length
    assert enc.truncated > 0
    full = tiny_lm.tokenizer(long, add_special_tokens=False)["input_ids"]
    assert enc.truncated == len(full) - (tiny_lm.max_length - len(enc.scored_ids))


def test_prompt_truncation_warns_and_keeps_the_end(tiny_lm):
    long = " ".join(["the cat sat on the mat"] * 40) + " and then"
    with pytest.warns(UserWarning, match="exceed the model's window"):
        ids = text.encode_prompt(tiny_lm, long)
    full = tiny_lm.tokenizer(long, add_special_tokens=False)["input_ids"]
    assert len(ids) == tiny_lm.max_length and list(ids) == full[-tiny_lm.max_length:]


def test_continuation_longer_than_window_is_an_error(tiny_lm):
    with pytest.raises(ValueError, match="continuation"):
        text.encode(tiny_lm, "a", " cat" * 100)


@pytest.mark.parametrize("bad", [None, 3, b"x"])
def test_non_string_inputs_name_the_argument(tiny_lm, bad):
    with pytest.raises(TypeError, match="context"):
        text.encode(tiny_lm, bad, " x")
    with pytest.raises(TypeError, match="continuation"):
        text.encode(tiny_lm, "x", bad)


def test_empty_continuation_is_an_error(tiny_lm):
    with pytest.raises(ValueError, match="continuation"):
        text.encode(tiny_lm, "x", "")
