"""Scorers: definitions recomputed from the token frame, registry, winners, explain, bad input."""

import math

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab import engine, scorers, scoring
from surfacelab.engine.requests import EXTRA_CONDITIONS

OPTIONS = [" bathtub", " a bathtub.", " tub", " xylophone"]


@pytest.fixture(scope="module")
def result(tiny_lm):
    return sl.score(tiny_lm, "The man took a bath in the", OPTIONS, domain_premise=" the", cache=False)


def test_table_columns_and_definitions(result):
    t = result.table.set_index("option")
    for col in ["logprob", "n_tokens", "n_chars", "n_bytes", "avg_token", "per_char", "per_byte", "domain_logprob",
                "unc", "dcpmi", "null_logprob", "pmi_null"] + [f"rank_{s}" for s in sl.list_scorers()["scorer"]]:
        assert col in result.table.columns, col
    tok = result.tokens
    for opt in OPTIONS:
        own = tok[tok["option"] == opt]
        lm = own[own["condition"] == "premise"]["logprob"].sum()
        dom = own[own["condition"] == "domain"]["logprob"].sum()
        null = own[own["condition"] == "null"]["logprob"].sum()
        n = (own["condition"] == "premise").sum()
        assert math.isclose(t.loc[opt, "logprob"], lm, abs_tol=1e-6)
        assert math.isclose(t.loc[opt, "avg_token"], lm / n, abs_tol=1e-6)
        assert math.isclose(t.loc[opt, "per_char"], lm / len(opt), abs_tol=1e-6)
        assert math.isclose(t.loc[opt, "per_byte"], lm / len(opt.encode()), abs_tol=1e-6)
        assert math.isclose(t.loc[opt, "unc"], dom, abs_tol=1e-6)
        assert math.isclose(t.loc[opt, "dcpmi"], lm - dom, abs_tol=1e-6)
        assert math.isclose(t.loc[opt, "pmi_null"], lm - null, abs_tol=1e-6)


def test_scores_match_independent_engine_calls(tiny_lm, result):
    direct = engine.logprobs(tiny_lm, [("The man took a bath in the", o) for o in OPTIONS], cache=False)
    np.testing.assert_allclose(result.table["logprob"], [d.total for d in direct], atol=1e-5)


def test_ranks_and_winners(result):
    t = result.table
    for s in sl.list_scorers().itertuples():
        if set(s.needs.split(",")) & set(EXTRA_CONDITIONS):  # texts from a task's fields: a free text has none
            assert t[s.column].isna().all() and s.scorer not in result.winners()
            continue
        if s.scorer in ("batch_cal", "domain_cal"):  # a task's items: one item has none
            assert t[s.column].isna().all() and t[f"rank_{s.scorer}"].isna().all() and s.scorer not in result.winners()
            continue
        best = t.loc[t[s.column].idxmax(), "option"]
        assert result.winner(s.scorer) == best
        assert t.loc[t["option"] == best, f"rank_{s.scorer}"].item() == 1


def test_bytes_differ_from_chars_for_non_ascii(tiny_lm):
    r = sl.score(tiny_lm, "I like", [" café", " tea"], cache=False)
    row = r.table.set_index("option").loc[" café"]
    assert row["n_chars"] == 5 and row["n_bytes"] == 6


def test_without_domain_the_domain_scorers_are_nan(tiny_lm):
    r = sl.score(tiny_lm, "The man took a bath in the", OPTIONS[:2], cache=False)
    assert r.table["dcpmi"].isna().all()
    with pytest.raises(ValueError, match="domain"):
        r.winner("dcpmi")
    assert "no domain premise" in r.explain()


def test_explain_tells_length_and_prior_with_the_numbers():
    """A hand-made item: ' tub' wins LM (short, a-priori likely), ' bathtub' wins DC-PMI."""
    raw = pd.DataFrame({"option": [" tub", " bathtub"], "logprob": [-2.0, -5.0], "n_tokens": [1, 3],
                        "domain_logprob": [-3.0, -9.0], "null_logprob": [-4.0, -8.0]})
    tokens = pd.DataFrame({"option": [" bathtub"] * 3, "condition": ["premise"] * 3, "token": [" bath", "t", "ub"],
                           "logprob": [-3.5, -1.0, -0.5]})
    r = scoring.MCResult("p", [" tub", " bathtub"], " the", "m", scoring.option_table(raw), tokens)
    text = r.explain()
    assert ("Under LM, ' tub' beats ' bathtub' by 3.00 nats; "
            "under DC-PMI, ' bathtub' wins, 3.00 nats ahead of it." in text)
    assert "' bathtub' has 3 tokens against 1" in text
    assert "per character ' tub' still leads, by 0.12 nats/char" in text  # -2/4 against -5/8
    assert "prefers ' tub' by 6.00 nats" in text  # -3 - (-9)
    assert "' bath' (-3.50), 't' (-1.00)" in text
    same = scoring.MCResult("p", [" tub", " bathtub"], " the", "m", scoring.option_table(raw.assign(
        domain_logprob=[-3.0, -3.5])), tokens)
    assert same.explain().startswith("' tub' wins under both LM and DC-PMI (DC-PMI margin +2.50 nats)")  # 1 - (-1.5)


def test_explain_measures_the_dcpmi_win_against_its_runner_up_and_signs_the_per_char_gap():
    """Three options: the DC-PMI winner's lead over its runner-up is not its lead over the LM winner."""
    raw = pd.DataFrame({"option": [" tub", " bathtub", " basin"], "logprob": [-2.0, -3.5, -4.0], "n_tokens": [1, 3, 1],
                        "domain_logprob": [-3.0, -9.0, -8.0], "null_logprob": [-4.0, -8.0, -8.0]})
    tokens = pd.DataFrame({"option": [" bathtub"], "condition": ["premise"], "token": [" bath"], "logprob": [-2.0]})
    text = scoring.MCResult("p", list(raw["option"]), " the", "m", scoring.option_table(raw), tokens).explain()
    # DC-PMI: tub 1.0, bathtub 5.5, basin 4.0
    assert ("under DC-PMI, ' bathtub' wins by 1.50 nats over the runner-up ' basin' and is 4.50 nats ahead of "
            "' tub'.") in text
    assert "per character ' bathtub' is ahead, by 0.06 nats/char" in text  # -3.5/8 against -2/4


def test_registry_accepts_new_scorers_and_the_scorer_table_shows_them(tiny_lm):
    from surfacelab import viz

    new = scorers.Scorer("neg_len", "neg_len", ("premise",), "-len(y)", "test scorer", lambda t: -t["n_chars"],
                         label="−length")
    scorers.register_scorer(new)
    try:
        r = sl.score(tiny_lm, "a", [" bb", " c"], cache=False)
        assert r.winner("neg_len") == " c"
        assert list(r.table.columns).index("neg_len") > list(r.table.columns).index("pmi_null")
        cols, _, won = viz.scorer_cells(r.table)
        assert cols[-1] == "neg_len" and list(won[-1]) == [False, True]
        header = viz.scorer_table(r.table).data[0].header.values
        assert header[-1] == "−length"
        assert "neg_len" in set(scorers.list_scorers().scorer)
    finally:
        scorers.SCORERS.unregister("neg_len")
    assert "neg_len" not in scorers.SCORER_LABELS


def test_option_table_columns_follow_the_registry_with_raw_columns_first_needed():
    raw = pd.DataFrame({"x": [1, 2], "option": [" a", " b"], "logprob": [-1.0, -2.0], "n_tokens": [1, 2],
                        "domain_logprob": [-1.0, -1.0], "null_logprob": [0.0, 0.0]})
    cols = scoring.option_table(raw).columns.tolist()
    assert cols == ["x", "option", "logprob", "n_tokens", "n_chars", "n_bytes", "avg_token", "per_char", "per_byte",
                    "domain_logprob", "unc", "dcpmi", "null_logprob", "pmi_null", "channel_logprob", "channel",
                    "mcf_logprob", "mcf", "choices_logprob", "choices", "batch_cal", "domain_ctx_logprob",
                    "domain_cal",
                    *(f"rank_{s}" for s in ("lm", "avg", "per_char", "per_byte", "unc", "dcpmi", "pmi_null", "channel",
                                            "mcf", "choices", "batch_cal", "domain_cal"))]


def test_register_scorer_refuses_a_taken_name_or_column():
    clone = scorers.Scorer("lm", "lm2", ("premise",), "", "", lambda t: t["logprob"])
    with pytest.raises(ValueError, match="'lm' is already registered; pass overwrite=True"):
        scorers.register_scorer(clone)
    with pytest.raises(ValueError, match="column 'dcpmi' is already used by dcpmi"):
        scorers.register_scorer(scorers.Scorer("x", "dcpmi", ("premise",), "", "", lambda t: t["logprob"]))
    original = scorers.get_scorer("lm")
    scorers.register_scorer(clone, overwrite=True)
    try:
        assert scorers.get_scorer("lm").column == "lm2"
    finally:
        scorers.register_scorer(original, overwrite=True)
    assert scorers.get_scorer("lm") is original


def test_unknown_scorer_names_close_matches():
    with pytest.raises(ValueError, match=r"scorer: unknown scorer 'dcpm' \(did you mean 'dcpmi'\?\)"):
        scorers.get_scorer("dcpm")


def test_save_roundtrip(result, tmp_path):
    import json

    import pandas as pd

    back = pd.read_csv(result.save(tmp_path / "r.csv"))
    assert list(back["option"]) == OPTIONS
    data = json.loads(result.save(tmp_path / "r.json").read_text())
    assert data["type"] == "MCResult" and len(data["tokens"]) == len(result.tokens)
    back = scoring.MCResult.load(tmp_path / "r.json")
    pd.testing.assert_frame_equal(back.tokens, result.tokens, check_dtype=False)
    with pytest.raises(ValueError, match="path"):
        result.save(tmp_path / "r.txt")


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"options": []}, ValueError, "options"),
        ({"options": [" a", ""]}, ValueError, "options"),
        ({"options": [" a", 3]}, TypeError, "options"),
        ({"options": [" a", " a"]}, ValueError, "options"),
        ({"options": " a"}, TypeError, "options"),
        ({"premise": None}, TypeError, "premise"),
        ({"domain_premise": 5}, TypeError, "domain_premise"),
        ({"gold": 9}, ValueError, "gold"),
    ],
)
def test_bad_input_names_the_argument(tiny_lm, kwargs, exc, name):
    args = {"premise": "p", "options": [" a", " b"], **kwargs}
    premise, options = args.pop("premise"), args.pop("options")
    with pytest.raises(exc, match=name):
        sl.score(tiny_lm, premise, options, cache=False, **args)


def test_unknown_scorer(result):
    with pytest.raises(ValueError, match="scorer"):
        result.winner("nope")


@pytest.mark.slow
def test_real_model_prefers_bathtub(real_lm):
    r = sl.score(real_lm, "The man took a bath in the", [" bathtub", " xylophone"], domain_premise=" the")
    assert r.winner("lm") == " bathtub" and r.winner("dcpmi") == " bathtub"


# --- truncation --------------------------------------------------------------------------------
LONG_PREMISE = " ".join(["The man took a bath in the bathtub and"] * 6)  # more than the 64-token window


def _expected_cut(lm, premise: str, option: str) -> int:
    """Context tokens that cannot fit beside the option, counted with the tokenizer alone (no BOS here)."""
    n_ctx = len(lm.tokenizer(premise.rstrip(), add_special_tokens=False)["input_ids"])
    n_opt = len(lm.tokenizer(option, add_special_tokens=False)["input_ids"])
    return max(0, n_ctx + n_opt - lm.max_length)


def test_truncation_is_a_column_a_warning_and_a_line_in_explain(tiny_lm):
    options = [" tub", " a bathtub with soap."]
    with pytest.warns(UserWarning, match=r"Truncated to fit the model's window: the premise lost its first tokens "
                                         r"\(\d+ before ' tub', \d+ before ' a bathtub with soap.'\).*window 64"):
        r = sl.score(tiny_lm, LONG_PREMISE, options, domain_premise=" the", cache=False)
    cut = r.table.set_index("option")["truncated"]
    for opt in options:
        assert cut[opt] == _expected_cut(tiny_lm, LONG_PREMISE, opt) > 0
    assert cut[" tub"] != cut[" a bathtub with soap."]  # one item, options cut by different amounts
    assert (r.table["domain_truncated"] == 0).all()
    assert r.explain().startswith(f"Truncated to fit the model's window: the premise lost its first tokens "
                                  f"({cut[' tub']} before ' tub', {cut[' a bathtub with soap.']} before "
                                  f"' a bathtub with soap.'), so the options were scored on different contexts.")


def test_no_truncation_no_note(tiny_lm, result):
    assert (result.table[["truncated", "domain_truncated"]] == 0).all().all()
    assert "Truncated" not in result.explain()


def test_score_warns_when_an_option_is_glued_to_the_premise(tiny_lm):
    import warnings

    with pytest.warns(UserWarning, match=r"options\[1\] 'cup' reads '…acup': glued to the premise"):
        r = scoring.score(tiny_lm, "I poured the tea into a", [" mug", "cup"])
    assert r.options == [" mug", "cup"]  # read exactly as typed, only reported
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a leading space, or a premise ending in whitespace: no warning
        scoring.score(tiny_lm, "I poured the tea into a", [" mug", " cup"])
        scoring.score(tiny_lm, "I poured the tea into a ", ["mug", "cup"])


# --- NaN from the model, ties --------------------------------------------------------------------
def _broken_lm(weight: str, index: tuple):
    """A fresh tiny model (not the shared fixture) with one weight set to NaN."""
    import torch

    from tiny_models import tiny_causal

    model, tok = tiny_causal()
    with torch.no_grad():
        model.get_parameter(weight)[index] = float("nan")
    return sl.load_lm((model, tok), device="cpu")


def test_a_nan_weight_is_an_error_naming_the_option_and_the_condition():
    lm = _broken_lm("transformer.h.0.mlp.c_fc.weight", (0, 0))  # every forward is NaN
    with pytest.raises(ValueError, match=r"^lm: the model's log-probability of option 0 ' bathtub' \(item 0\) under "
                                         r"the premise 'The man took a bath in the' is nan; 6 of 6 requests"):
        sl.score(lm, "The man took a bath in the", [" bathtub", " tub"], domain_premise=" the", cache=False)
    # position 6 is NaN: only the sequences that reach it (the long domain premise) are NaN; no padding (batch 1)
    lm = _broken_lm("transformer.wpe.weight", (6,))
    long_domain = "The man took a bath in the house and then in the"
    with pytest.raises(ValueError, match=rf"option 0 ' tub' \(item 0\) under the domain premise '{long_domain}' is "
                                         r"nan; 2 of 6 requests are not finite"):
        sl.score(lm, "In the", [" tub", " soap"], domain_premise=long_domain, cache=False, batch_size=1)


def test_scores_that_are_not_finite_are_never_blamed_on_a_missing_domain_premise():
    raw = pd.DataFrame({"option": [" tub", " bathtub"], "logprob": [np.nan, np.nan], "n_tokens": [1, 3],
                        "domain_logprob": [-3.0, -9.0], "null_logprob": [-4.0, -8.0]})
    r = scoring.MCResult("p", [" tub", " bathtub"], " the", "m", scoring.option_table(raw), pd.DataFrame())
    for call in (lambda: r.winner("lm"), lambda: r.winner("dcpmi"), r.explain, r.winners):
        with pytest.raises(ValueError, match=r"scorer: the scores of '(lm|dcpmi)' are not finite \(' tub' \(nan\), "
                                             r"' bathtub' \(nan\)\)") as err:
            call()
        assert "domain premise" not in str(err.value)
    assert r.winner("unc") == " tub"  # the domain condition itself is fine
    no_domain = scoring.MCResult("p", [" tub", " bathtub"], None, "m", scoring.option_table(
        raw.assign(logprob=[-2.0, -5.0], domain_logprob=np.nan)), pd.DataFrame())
    with pytest.raises(ValueError, match="scorer: 'dcpmi' needs a domain premise, and this result has none"):
        no_domain.winner("dcpmi")  # the one case that message is for


def test_explain_says_a_domain_premise_equal_to_the_premise_makes_dcpmi_zero(tiny_lm):
    premise = "The man took a bath in the"
    r = sl.score(tiny_lm, premise, [" xylophone", " bathtub", " tub"], domain_premise=premise, cache=False)
    assert (r.table["dcpmi"] == 0).all()
    text = r.explain()
    assert "The domain premise equals the premise, so DC-PMI is 0 for every option" in text
    assert "wins" not in text and "ahead" not in text
    assert r.winner("dcpmi") == " xylophone"  # an exact tie: the first option, as evaluate's pred_dcpmi


@pytest.mark.parametrize("noise", [0.0, 1e-7])
def test_explain_calls_top_scores_within_float_noise_a_tie(noise):
    raw = pd.DataFrame({"option": [" tub", " bathtub", " sink"], "logprob": [-5.0, -5.0 + noise, -9.0],
                        "n_tokens": [1, 3, 1], "domain_logprob": [-3.0, -9.0, -8.0],
                        "null_logprob": [-4.0, -8.0, -8.0]})
    r = scoring.MCResult("p", list(raw["option"]), " the", "m", scoring.option_table(raw), pd.DataFrame())
    text = r.explain()
    assert text.startswith("Under LM ' tub' and ' bathtub' tie for the top (scores within 1e-06 of each other); "
                           "under DC-PMI the top option is ' bathtub'."), text
    assert "beats" not in text
    assert r.winner("lm") == (" tub" if noise == 0 else " bathtub")  # winner() stays the exact argmax
    dcpmi_tie = scoring.MCResult("p", list(raw["option"]), " the", "m", scoring.option_table(
        raw.assign(logprob=[-2.0, -8.0 + noise, -9.0])), pd.DataFrame())  # DC-PMI 1.0, 1.0 (+noise), -1.0
    assert "under DC-PMI ' tub' and ' bathtub' tie for the top" in dcpmi_tie.explain()


def test_a_log_prob_of_minus_infinity_is_an_error_that_says_probability_zero(tiny_lm, monkeypatch):
    real = engine.logprobs

    def one_impossible_token(*args, **kwargs):
        results = real(*args, **kwargs)
        results[1].logprob[0] = -np.inf  # option 1 under the premise
        return results

    monkeypatch.setattr(engine, "logprobs", one_impossible_token)
    with pytest.raises(ValueError, match=r"option 1 ' tub' \(item 0\) under the premise 'In the' is -inf\. The model "
                                         r"gives a token probability 0"):
        sl.score(tiny_lm, "In the", [" bathtub", " tub"], cache=False)
