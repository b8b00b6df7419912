"""The teaching set's claims, checked against the real default model (slow): each lesson has the items it says."""

from __future__ import annotations

import json

import pytest

from surfacelab import paraphrase

pytestmark = pytest.mark.slow


def test_every_item_carries_a_lesson_and_a_note():
    raw = json.loads(paraphrase.TEACHING_SET.read_text(encoding="utf-8"))
    assert raw["model"] == "smollm2-135m"
    items = paraphrase.load_teaching_set()
    assert {it["lesson"] for it in items} == {"mass", "dcpmi", "overcorrect", "control"}
    assert all(it["note"] for it in items)


def test_lessons_hold_on_the_default_model(real_lm):
    items = paraphrase.load_teaching_set()
    results = paraphrase.mass_items(real_lm, items, top_k=0, progress=False, cache=False)
    table = paraphrase.winners_table(results, ids=[it["id"] for it in items])
    lm, mass, dcpmi = (table[f"{rule}_correct"] == True for rule in ("lm", "mass", "dcpmi"))  # noqa: E712
    measured = {"mass": ~lm & mass, "dcpmi": ~lm & ~mass & dcpmi, "overcorrect": lm & mass & ~dcpmi,
                "control": lm & mass & dcpmi}
    # the counts: >= 8 items where concept mass rescues a wrong LM winner, >= 8 where only DC-PMI does,
    # and a few where DC-PMI breaks an LM winner that was right
    assert measured["mass"].sum() >= 8 and measured["dcpmi"].sum() >= 8 and measured["overcorrect"].sum() >= 2
    # every item shows the lesson it is labelled with (the selection kept only rules decided by >= 0.05 nats)
    mismatched = [it["id"] for k, it in enumerate(items) if not measured[it["lesson"]].iloc[k]]
    assert not mismatched, f"items whose labelled lesson does not hold: {mismatched}"
