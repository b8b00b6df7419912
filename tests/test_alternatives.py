"""alternatives: top-k next tokens at every scored position, checked against a direct model forward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import surfacelab as sl
from surfacelab import alternatives as alt
from surfacelab import engine, text


def _direct_topk(lm, context, continuation, k):
    """Independent path: one plain forward through the full model, log-softmax over its logits."""
    enc = text.encode(lm, context, continuation)
    with torch.no_grad():
        logits = lm.model(input_ids=torch.tensor([enc.input_ids])).logits[0].float()
    logp = torch.log_softmax(logits, -1)
    rows = logp[enc.start - 1:len(enc.input_ids) - 1]
    top = rows.topk(k, -1)
    return top.indices.numpy(), top.values.numpy()


def test_alternatives_match_a_direct_forward(tiny_lm):
    engine.clear_top_cache()
    reqs = [("The man took a bath in the", " bathtub"), ("", " soap and milk")]
    frame = alt.alternatives(tiny_lm, reqs, top_k=4)
    assert list(frame.columns) == alt.COLUMNS
    for r, (ctx, cont) in enumerate(reqs):
        ids, lps = _direct_topk(tiny_lm, ctx, cont, 4)
        sub = frame[frame["request"] == r].sort_values(["position", "alt_rank"])
        assert sub["alt_id"].to_numpy().reshape(ids.shape).tolist() == ids.tolist()
        np.testing.assert_allclose(sub["alt_logprob"].to_numpy().reshape(lps.shape), lps, atol=1e-4)


def test_alternatives_agree_with_engine_on_scored_tokens(tiny_lm):
    req = ("The woman went to the", " store")
    k = 50
    frame = alt.alternatives(tiny_lm, [req], top_k=k)
    scored = sl.logprobs(tiny_lm, [req], cache=False)[0]
    for p, (tid, lp, rank) in enumerate(zip(scored.encoding.scored_ids, scored.logprob, scored.rank)):
        sub = frame[frame["position"] == p]
        assert sub["alt_logprob"].iloc[0] >= lp - 1e-5  # nothing beats the top alternative
        if rank <= k:
            hit = sub[sub["alt_id"] == tid]
            assert len(hit) == 1 and abs(hit["alt_logprob"].iloc[0] - lp) < 1e-4


def test_alternatives_cache_and_duplicates(tiny_lm, monkeypatch):
    engine.clear_top_cache()
    req = ("A cat sat on the", " mat")
    a = alt.alternatives(tiny_lm, [req, req], top_k=3)
    assert len(engine.memory.TOP_CACHE) == 1

    def boom(*args, **kwargs):
        raise AssertionError("the in-memory top-k cache should have answered")

    monkeypatch.setattr(type(tiny_lm.backend), "score", boom)
    again = alt.alternatives(tiny_lm, [req], top_k=3)
    assert again.drop(columns="request").equals(a[a["request"] == 0].drop(columns="request"))
    assert (a[a["request"] == 0].drop(columns="request").to_numpy() ==
            a[a["request"] == 1].drop(columns="request").to_numpy()).all()


def test_alternatives_bad_input(tiny_lm):
    with pytest.raises(ValueError, match="top_k: expected an integer >= 1, got 0"):
        alt.alternatives(tiny_lm, [("a", " b")], top_k=0)
    with pytest.raises(TypeError, match="requests"):
        alt.alternatives(tiny_lm, "ab", top_k=2)
    with pytest.raises(ValueError, match="batch_size"):
        alt.alternatives(tiny_lm, [("a", " b")], batch_size=0)


def test_token_view_contributions_sum_to_dcpmi(tiny_lm):
    r = sl.score(tiny_lm, "The man took a bath in the", [" bathtub", " soap"], domain_premise=" the")
    tv = alt.token_view(tiny_lm, r, top_k=3)
    assert set(tv["condition"]) == {"premise", "domain"}
    assert all(len(a) == 3 for a in tv["alternatives"])
    prem = tv[tv["condition"] == "premise"]
    sums = prem.groupby("option", sort=False)["contribution"].sum()
    expected = r.table.set_index("option")["logprob"] - r.table.set_index("option")["domain_logprob"]
    np.testing.assert_allclose(sums.loc[expected.index].to_numpy(), expected.to_numpy(), atol=1e-4)


def test_token_view_without_domain_has_no_contribution(tiny_lm):
    r = sl.score(tiny_lm, "The man took a bath in the", [" bathtub", " soap"])
    tv = alt.token_view(tiny_lm, r, top_k=2)
    assert set(tv["condition"]) == {"premise"} and tv["contribution"].isna().all()


def test_token_view_after_score_with_top_k_runs_no_forward(tiny_lm, monkeypatch):
    engine.clear_top_cache()
    r = sl.score(tiny_lm, "The dog chased the", [" cat", " ball"], domain_premise=" the", top_k=3)

    def boom(*args, **kwargs):
        raise AssertionError("score(top_k=3) should have computed the alternatives")

    monkeypatch.setattr(type(tiny_lm.backend), "score", boom)
    tv = alt.token_view(tiny_lm, r, top_k=3)
    assert tv["alternatives"].map(len).eq(3).all()
    monkeypatch.undo()
    engine.clear_top_cache()
    fresh = alt.token_view(tiny_lm, r, top_k=3)  # computed again from scratch: the same alternatives
    for a, b in zip(tv["alternatives"], fresh["alternatives"]):
        assert [t for t, _ in a] == [t for t, _ in b]
        np.testing.assert_allclose([lp for _, lp in a], [lp for _, lp in b], atol=1e-5)
