"""Result objects: save/load round-trips, show() figures and meta (fingerprint, backend, scorers, template, seed)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import letters, paraphrase, scorers
from surfacelab.runs import EvalResult
from surfacelab.pll import PLLResult
from surfacelab.scoring import MCResult
from surfacelab.tasks import Item, Task


def _same(a, b, frames):
    for name in frames:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_dtype=False)


def test_mcresult_round_trip_and_meta(tiny_lm, tmp_path):
    r = sl.score(tiny_lm, "The man took a bath in the", [" bathtub", " tub"], domain_premise=" the", gold=1,
                 cache=False)
    assert r.meta["fingerprint"] == tiny_lm.fingerprint and r.meta["backend"] == "transformers"
    assert r.meta["scorers"] == list(scorers.SCORERS) and r.meta["engine"].requests == 6
    back = MCResult.load(r.save(tmp_path / "r.json"))
    _same(r, back, ["table", "tokens"])
    assert (back.premise, back.options, back.domain_premise, back.gold) == (r.premise, r.options, " the", 1)
    assert back.meta["engine"]["requests"] == 6 and back.explain() == r.explain()
    assert r.show().data[0].header.values[0] == "option"
    with pytest.raises(ValueError, match="path: .* is not a saved MCResult"):
        MCResult.load(paraphrase.mass(tiny_lm, "a", {"x": [" x"], "y": [" y"]}, top_k=0).save(tmp_path / "m.json"))
    with pytest.raises(ValueError, match="path: no file at"):
        MCResult.load(tmp_path / "missing.json")


def test_mass_pll_letter_round_trips(tiny_lm, tiny_mlm, tmp_path):
    m = paraphrase.mass(tiny_lm, "The man took a bath in the", {"tub": [" tub", " bathtub"], "sink": [" sink"]},
                        domain_premise=" the", answer="tub")
    back = paraphrase.MassResult.load(m.save(tmp_path / "m.json"))
    _same(m, back, ["forms", "concepts", "winners", "topk"])
    assert back.coverage == pytest.approx(m.coverage, nan_ok=True) and back.explain() == m.explain()
    assert len(m.show().data) > 0

    p = sl.pll(tiny_mlm, ["The souvenir was cheap.", "A cat sat."])
    back = PLLResult.load(p.save(tmp_path / "p.json"))
    _same(p, back, ["table", "tokens", "words"])
    assert isinstance(back.tokens["masked"].iloc[0], tuple) and back.stats == p.stats
    assert len(p.show().data) > 0

    lr = letters.score(tiny_lm, "2 + 2 =", ["3", "4", "5"], template="plain", gold=1)
    back = letters.LetterResult.load(lr.save(tmp_path / "l.json"))
    _same(lr, back, ["table", "permutations", "content_free"])
    assert back.winner("debiased") == lr.winner("debiased")
    assert len(lr.show().data) == 4  # observed, prior, calibrated, debiased


def _task() -> Task:
    copa = sl.tasks.SPECS["copa"].templates["paper"]
    items = [Item(str(k), p, [" bathtub", " stove"], gold, " so") for k, (p, gold) in
             enumerate([("The man took a bath in the", 0), ("She cooked dinner on the", 1), ("He washed in the", 0)])]
    return Task("constructed", "test", items, copa, "memory")


def test_evalresult_round_trip_meta_show_and_result(tiny_lm, tmp_path):
    res = sl.evaluate(tiny_lm, _task(), "lm,dcpmi", n_boot=50, seed=3, progress=False)
    assert res.meta["fingerprint"] == tiny_lm.fingerprint and res.meta["backend"] == "transformers"
    assert res.meta["seed"] == 3 and res.template == "copa/paper" and res.scorers == ["lm", "dcpmi"]
    back = EvalResult.load(res.save(tmp_path / "run"))
    for name in ("accuracy", "paired"):
        pd.testing.assert_frame_equal(getattr(res, name), getattr(back, name), check_dtype=False)
    pd.testing.assert_frame_equal(res.scores[["item", "option", "logprob", "dcpmi"]],
                                  back.scores[["item", "option", "logprob", "dcpmi"]], check_dtype=False)
    assert ((back.task, back.template, back.scorers, back.meta["seed"])
            == ("constructed", "copa/paper", ["lm", "dcpmi"], 3))
    assert len(res.show().data) == 2  # one bar trace per scorer
    # result(i): the item's MCResult from the run's own rows, equal to scoring it alone
    one = res.result(1)
    alone = sl.score(tiny_lm, "She cooked dinner on the", [" bathtub", " stove"], domain_premise=" so", cache=False)
    assert one.gold == 1 and one.domain_premise == " so"
    assert one.table["logprob"].to_numpy() == pytest.approx(alone.table["logprob"].to_numpy(), abs=1e-5)
    assert (one.winner("dcpmi") == alone.winner("dcpmi")
            and list(one.winners().index) == list(alone.winners().index)[:-1])  # pmi_null: no null context scored
    assert one.table["per_char"].to_numpy() == pytest.approx(alone.table["per_char"].to_numpy(), abs=1e-6)
    assert "DC-PMI" in one.explain()
    with pytest.raises(ValueError, match=r"i: expected an item position in \[0, 3\)"):
        res.result(3)
    with pytest.raises(ValueError, match="directory: .* holds no meta.json"):
        EvalResult.load(tmp_path)


def _letter_items() -> list[tuple[str, list[str], int]]:
    return [("2 + 2 =", ["3", "4", "5"], 1), ("The sky is", ["green", "blue", "red"], 1),
            ("Ice is", ["hot", "warm", "cold"], 2), ("A dog", ["barks", "meows", "moos"], 0)]


def test_letter_eval_round_trip_meta_and_show(tiny_lm, tmp_path):
    ev = letters.evaluate(tiny_lm, _letter_items(), ("default", "cyclic", "pride"), alpha=0.5, seed=4,
                          template="plain", cache=False)
    assert ev.meta["fingerprint"] == tiny_lm.fingerprint and ev.meta["backend"] == "transformers"
    assert (ev.meta["template"], ev.meta["seed"], ev.meta["methods"]) == ("plain", 4, ["default", "cyclic", "pride"])
    back = letters.LetterEval.load(ev.save(tmp_path / "ev.json"))
    _same(ev, back, ["summary", "items"])
    assert back.meta == ev.meta and (back.model, back.n_prompts) == (ev.model, ev.n_prompts)
    assert list(back.prior) == [3] and back.prior[3] == pytest.approx(ev.prior[3], rel=0, abs=0)
    pd.testing.assert_series_equal(back.gold_share, ev.gold_share)
    # the loaded prior transfers like the original one
    again = letters.evaluate(tiny_lm, _letter_items(), ("pride",), prior=back, template="plain", cache=False)
    assert again.summary["cost"].iloc[0] == 1
    fig = ev.show()
    assert [t.name for t in fig.data] == ["default", "cyclic", "pride"]
    assert [t.y[0] for t in fig.data] == pytest.approx(list(ev.summary["accuracy"] / 100))  # one bar per method
    with pytest.raises(ValueError, match="path: .* is not a saved LetterEval"):
        letters.LetterEval.load(letters.score(tiny_lm, "2 + 2 =", ["3", "4"],
                                              template="plain").save(tmp_path / "l.json"))


def test_blimp_result_round_trip_meta_and_show(tiny_mlm, tmp_path):
    import json

    folder = tmp_path / "blimp"
    folder.mkdir()
    for uid, fld, pairs in [("agr", "morphology", [("I bought a hat.", "I bought a hats."),
                                                     ("We saw a cup.", "We saw a cups.")]),
                            ("ord", "syntax", [("It was red.", "Red it was was."),
                                               ("They liked a book.", "Liked they a book.")])]:
        (folder / f"{uid}.jsonl").write_text("".join(json.dumps(
            {"sentence_good": g, "sentence_bad": b, "field": fld, "linguistics_term": "toy", "UID": uid,
             "pairID": str(i)}) + "\n" for i, (g, b) in enumerate(pairs)), encoding="utf-8")
    res = sl.pll_blimp(tiny_mlm, folder, metrics=("original", "word_l2r"), limit=2, progress=False)
    assert res.meta["fingerprint"] == tiny_mlm.fingerprint and res.meta["backend"] == "transformers"
    assert (res.meta["limit"], res.meta["data_dir"]) == (2, str(folder))
    back = sl.BlimpResult.load(res.save(tmp_path / "b.json"))
    _same(res, back, ["pairs", "paradigms", "fields", "overall"])
    assert back.metrics == ("original", "word_l2r") and back.meta == res.meta and back.note == res.note
    pd.testing.assert_frame_equal(back.summary(), res.summary())
    fig = res.show()
    assert [t.name for t in fig.data] == ["original", "word_l2r"]
    # x: overall then the fields; y: the frames' accuracies (overall = mean of paradigm accuracies)
    assert list(fig.data[0].x) == ["overall", "morphology", "syntax"]
    assert list(fig.data[0].y) == pytest.approx(list(res.summary()["original"]))


# --- a saved result is a file from elsewhere: a value of the wrong type or out of range is refused by name ---------
@pytest.mark.parametrize("field, value, message", [
    ("gold", 99, r"r.json: gold: 99 is not an index into the 2 options"),
    ("gold", -1, r"r.json: gold: -1 is not an index into the 2 options"),
    ("gold", 1.5, r"r.json: gold: expected int \| None, got 1.5"),
    ("premise", 5, r"r.json: premise: expected str, got 5"),
    ("options", "ab", r"r.json: options: expected list\[str\], got \"ab\""),
    ("options", [" bathtub", 3], r"r.json: options: expected list\[str\]"),
    ("table", "x", r"r.json: table: not a saved table"),
    ("table", [{"logprob": "high"}], r"r.json: table: not a saved table"),
    ("meta", [], r"r.json: meta: expected dict"),
])
def test_a_saved_mcresult_with_a_bad_field_is_refused_naming_it(tiny_lm, tmp_path, field, value, message):
    r = sl.score(tiny_lm, "The man took a bath in the", [" bathtub", " tub"], gold=1, cache=False)
    doc = json.loads(r.save(tmp_path / "r.json").read_text())
    doc[field] = value
    (tmp_path / "r.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        MCResult.load(tmp_path / "r.json")


def test_a_saved_why_result_whose_against_is_out_of_range_is_refused(tiny_lm, tmp_path):
    w = sl.why(tiny_lm, "The man took a bath in the", [" bathtub", " tub"], gold=0)
    doc = json.loads(w.save(tmp_path / "w.json").read_text())
    doc["against"] = 5
    (tmp_path / "w.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"w.json: against: 5 is not an index into the 2 options"):
        type(w).load(tmp_path / "w.json")
