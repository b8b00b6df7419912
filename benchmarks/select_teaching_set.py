"""Build data/teaching_set.json from the hand-written pool by measuring which items show a lesson.

Every candidate in ``benchmarks/teaching_candidates.json`` is checked (the teaching set's rules, and no
form whose tokens are a prefix of another form of the same item under the model's tokenizer: concept
mass would count it twice), scored with ``paraphrase.mass_items`` on the default model, and sorted into
the lesson it shows under the rules of ``surfacelab.mass_rules.WINNER_RULES``:

* ``mass``: the LM winner (best single form) is wrong and concept mass picks the answer;
* ``dcpmi``: LM and concept mass are wrong and DC-PMI (concept mass against the domain premise) is right;
* ``overcorrect``: LM and concept mass are right and DC-PMI is wrong;
* ``control``: every rule picks the answer.

Items whose gold turned out debatable when read again after scoring are listed in ``DEBATABLE`` with the
reason and left out.

The set keeps up to ``--per-lesson`` items of each of the first two lessons, up to 4 over-corrections and
enough controls to reach ``--min-items``, in pool order (the pool was written before it was measured;
nothing was edited after scoring to change a rule's winner). Each kept item gets its ``lesson`` and a
``note`` generated from the numbers. The selection is by construction in-sample for this model: on
another model the counts differ (``run_teaching_table.py --model`` shows them).

    flock /tmp/surfacelab-cpu.lock .venv/bin/python benchmarks/select_teaching_set.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from surfacelab import paraphrase, text
from surfacelab.models import DEFAULT_LM, load_lm

ROOT = Path(__file__).resolve().parent.parent
POOL = ROOT / "benchmarks" / "teaching_candidates.json"
LESSONS = ("mass", "dcpmi", "overcorrect", "control")
#: Items read again after scoring and left out because their gold is debatable (the distractor is right too).
DEBATABLE = {
    "car_garage_b4": "parking the car in the street is as right as in the garage",
    "bread": "'the baker makes bread from scratch' is a true sentence",
    "silk_worms": "'silk is made by machines' is partly true (weaving)",
    "paint_brush": "'painted the picture with a smile' is fine English",
}


def check(items: list[dict]) -> tuple[list[dict], list[str]]:
    """The items that pass the teaching set's validation, and a line per rejected item."""
    ok, bad = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for it in items:
            path = Path(tmp) / "one.json"
            path.write_text(json.dumps({"items": [it]}))
            try:
                ok.append(paraphrase.load_teaching_set(path)[0])
            except ValueError as err:
                bad.append(f"{it.get('id')}: {err}")
    return ok, bad


def prefix_clashes(lm, item: dict) -> list[str]:
    """Forms of ``item`` whose tokens (after its premise) start another form's tokens."""
    forms = [f for fs in item["concepts"].values() for f in fs]
    ids = {f: text.encode(lm, item["premise"], f).scored_ids for f in forms}
    return [f"{a!r} < {b!r}" for a in forms for b in forms if a != b and ids[b][:len(ids[a])] == ids[a]]


def lesson(row: dict, r: paraphrase.MassResult, min_margin: float) -> str | None:
    """The lesson an item shows (see the module docstring), or None; a rule decided by less than ``min_margin``
    nats (so that a last-digit change in the engine could flip it) shows no lesson."""
    margins = r.winners.set_index("scorer")["margin"]
    if any(margins.get(rule, 1.0) < min_margin for rule in ("lm", "mass", "dcpmi")):
        return None
    lm, mass, dcpmi = row["lm_correct"], row["mass_correct"], row["dcpmi_correct"]
    if not lm and mass:
        return "mass"
    if not lm and not mass and dcpmi:
        return "dcpmi"
    if lm and mass and dcpmi is False:
        return "overcorrect"
    if lm and mass and dcpmi:
        return "control"
    return None


def note(kind: str, r: paraphrase.MassResult) -> str:
    """One sentence, from the numbers, on what the item shows."""
    w = r.winners.set_index("scorer")
    c = r.concepts.set_index("concept")
    lm_c, answer = w.loc["lm", "concept"], r.answer
    if kind == "mass":
        return (f"LM picks {lm_c!r} (its best form is the single most likely one), but {answer!r} is split over "
                f"{int(c.loc[answer, 'n_forms'])} forms that together hold {c.loc[answer, 'share']:.0%} of the "
                "listed mass: concept mass rescues it.")
    if kind == "dcpmi":
        return (f"{lm_c!r} is likely in this slot whatever the premise says: LM and concept mass pick it; dividing "
                f"out the domain premise, DC-PMI picks {answer!r}.")
    if kind == "overcorrect":
        return (f"LM and concept mass pick {answer!r}; DC-PMI divides out its high prior in the slot and picks "
                f"{w.loc['dcpmi', 'concept']!r}: DC-PMI over-corrects.")
    return "Every rule picks the answer."


def main(argv: list[str] | None = None) -> int:
    """Score the pool, select, write the teaching set and print the counts."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", default=str(POOL))
    ap.add_argument("--model", default=DEFAULT_LM)
    ap.add_argument("--per-lesson", type=int, default=10)
    ap.add_argument("--min-items", type=int, default=30)
    ap.add_argument("--min-margin", type=float, default=0.05, help="nats by which every rule must be decided")
    ap.add_argument("--out", default=str(ROOT / "data" / "teaching_set.json"))
    args = ap.parse_args(argv)
    pool = json.loads(Path(args.pool).read_text(encoding="utf-8"))["items"]
    items, rejected = check(pool)
    lm = load_lm(args.model, device="cpu")
    clean = []
    for it in items:
        clash = prefix_clashes(lm, it)
        if clash:
            rejected.append(f"{it['id']}: token prefix {clash[0]}")
        else:
            clean.append(it)
    results = paraphrase.mass_items(lm, clean, top_k=0, progress=False)
    table = paraphrase.winners_table(results, ids=[it["id"] for it in clean])
    kinds = [None if it["id"] in DEBATABLE else lesson(row, r, args.min_margin)
             for it, row, r in zip(clean, table.to_dict("records"), results)]
    caps = {"mass": args.per_lesson, "dcpmi": args.per_lesson, "overcorrect": 4}
    chosen: dict[str, list[int]] = {k: [] for k in LESSONS}
    for i, kind in enumerate(kinds):
        if kind in caps and len(chosen[kind]) < caps[kind]:
            chosen[kind].append(i)
    needed = max(args.min_items - sum(len(v) for v in chosen.values()), 0)
    controls = [i for i, k in enumerate(kinds) if k == "control"]
    bath = [i for i in controls if clean[i]["id"] == "bath"]  # the README's and the tests' worked example
    chosen["control"] = (bath + [i for i in controls if i not in bath])[:max(needed, len(bath))]
    order = [i for k in LESSONS for i in chosen[k]]
    out_items = []
    for i in order:
        kind = next(k for k in LESSONS if i in chosen[k])
        it = {k: clean[i][k] for k in ("id", "premise", "domain_premise", "concepts", "answer")}
        out_items.append({**it, "lesson": kind, "note": note(kind, results[i])})
    doc = {"name": "surfacelab teaching set", "version": 3,
           "description": (
               "Everyday cloze items where one answer concept can be written many ways, chosen by "
               f"benchmarks/select_teaching_set.py from the hand-written pool in benchmarks/teaching_candidates.json "
               f"by scoring them on {lm.name}. Each item's 'lesson' says what it shows on that model: 'mass' (the LM "
               "winner is wrong and concept mass rescues the answer), 'dcpmi' (LM and concept mass are wrong and "
               "DC-PMI is right), 'overcorrect' (DC-PMI breaks an answer LM gets right) or 'control' (every rule is "
               "right). Forms carry their leading space; premises and domain premises end without whitespace; the "
               "domain premise is the generic ending of the premise."),
           "model": lm.name, "items": out_items}
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}," for k, v in doc.items() if k != "items"]
    lines.append('  "items": [')
    for k, it in enumerate(out_items):
        lines.append("    " + json.dumps(it, ensure_ascii=False) + ("," if k < len(out_items) - 1 else ""))
    lines += ["  ]", "}"]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts = {k: sum(1 for x in kinds if x == k) for k in LESSONS}
    print(f"pool {len(pool)}, checked {len(clean)}, rejected {len(rejected)}; lessons in the pool: {counts}, "
          f"none: {sum(1 for x in kinds if x is None)}")
    print("kept: " + ", ".join(f"{k} {len(v)}" for k, v in chosen.items()) + f" -> {args.out}")
    for line in rejected:
        print("  rejected", line)
    for k in LESSONS:
        print(f"{k}: " + ", ".join(clean[i]["id"] for i in chosen[k]))
        spare = [clean[i]["id"] for i, x in enumerate(kinds) if x == k and i not in chosen[k]]
        print(f"  not kept ({len(spare)}): " + ", ".join(spare))
    print("left out as debatable: " + "; ".join(f"{k} ({v})" for k, v in DEBATABLE.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
