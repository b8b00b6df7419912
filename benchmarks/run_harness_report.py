"""The paper's prompts vs lm-evaluation-harness's, on the same items: a section of docs/results_eval.md.

For every local split that has both a paper template (``variant="paper"``) and an lm-eval template
(``variant="lm-eval"``), and for each default model, one ``surfacelab.ablate`` call scores the same
seeded items under both templates (one engine call): accuracy per scorer with a 95% percentile
bootstrap CI, and the exact McNemar test of the harness's prompt against the paper's on those items.
The scorers are the harness's metrics (``lm`` = ``acc``, ``per_char`` = ``acc_norm``, ``pmi_null`` =
``acc_mutual_info``). Splits run in order, each for both models, so a partial run covers both.

The section is written between two marker lines of ``--out`` (appended if the file has none) after
every split, so a partial run leaves a valid partial section; ``run_eval_report.py`` keeps the section
when it rewrites the rest of the file. Every frame is also written to ``--csv``. The engine's disk cache
makes a rerun free and lets an interrupted run resume split by split.

Usage (the command recorded in the section):

    SURFACELAB_CACHE=/tmp/harness-cache OMP_NUM_THREADS=1 nice -n 10 python benchmarks/run_harness_report.py \\
        --data-dir data/eval --cap smollm2-135m=500 --cap gemma-3-270m=200
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import pandas as pd

import surfacelab as sl
from surfacelab import tasks

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_kit import p_text, parse_caps, pct_ci  # noqa: E402

# the splits whose two prompts differ most come first (a partial run covers them); OpenBookQA (identical
# requests) and StoryCloze (identical but for an added period) last
SPLITS = [("arc-challenge", "test"), ("commonsenseqa", "dev"), ("mmlu", "test"), ("boolq", "dev"), ("sst-2", "test"),
          ("rte", "dev"), ("cb", "dev"), ("copa", "dev"), ("openbookqa", "test"), ("storycloze", "test")]
SCORERS = ["lm", "per_char", "pmi_null"]
FAMILIES = ["paper", "lm-eval"]
MODELS = ["smollm2-135m", "gemma-3-270m"]
DEFAULT_CAPS = {"smollm2-135m": 500, "gemma-3-270m": 200}  # items per split
START, END = "<!-- harness-vs-paper:start -->", "<!-- harness-vs-paper:end -->"
LETTERED = {"commonsenseqa/dev": 5, "mmlu/test": 4}  # the harness scores ' A', ' B', ... here: number of letters
# What changes between the two prompts, split by split (read off the two templates; no result in here).
DIFFERENCES = {
    "copa/dev": "connector ' so' (paper) vs ' therefore' (harness) for effect questions; the harness sends the choice "
                "with two leading spaces",
    "storycloze/test": "the same text, except that the paper adds a '.' when the fourth sentence ends in neither '.' "
                       "nor '!'",
    "arc-challenge/test": "the question as is (paper) vs 'Question: <q>\\nAnswer:' (harness); same choices",
    "openbookqa/test": "identical requests (both score ' <choice>' after the bare stem): only `per_char` can differ, "
                       "because the harness does not count the leading space",
    "commonsenseqa/dev": "cloze ' <q>? the answer is:' -> ' \"<choice, lower-cased>\"' (paper) vs a lettered list "
                         "scored on ' A' ... ' E' (harness)",
    "boolq/dev": "question only, no passage (paper's code; the data has no title) vs passage + question (harness); "
                 "' yes'/' no' vs ' no'/' yes'",
    "rte/dev": "' <p>\\n question: <h> true or false?\\n answer:' -> ' true'|' false' vs "
               "'<p>\\nQuestion: <h> True or False?\\nAnswer:' -> ' True'|' False'",
    "cb/dev": "' question: Given that \"<p>\" Is \"<h>\" true, false, or neither?\\n answer:' (lower-case answers) vs "
              "'<p>\\nQuestion: <h>. True, False, or Neither?\\nAnswer:' (capitalised)",
    "sst-2/test": "'<sentence>:' -> ' negative\\n'|' positive\\n' vs '<sentence>\\nQuestion: Is this sentence positive "
                  "or negative?\\nAnswer:' -> ' negative'|' positive'",
    "mmlu/test": "surfacelab's cloze (the question -> ' <choice text>') vs the harness's subject line + lettered list "
                 "scored on ' A' ... ' D'",
}


def splice(text: str, section: str) -> str:
    """``text`` with the marked section replaced by ``section`` (appended when there are no markers)."""
    block = f"{START}\n{section.rstrip()}\n{END}\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        return head + block + rest.split(END, 1)[1].lstrip("\n")
    return text.rstrip("\n") + "\n\n" + block


def keep_section(new: str, old: str) -> str:
    """``new`` with the marked section of ``old`` appended, if ``old`` has one (for run_eval_report.py)."""
    if START not in old or END not in old:
        return new
    return splice(new, old.split(START, 1)[1].split(END, 1)[0].strip("\n"))


def _pct(r: pd.Series) -> str:
    return pct_ci(r.accuracy, r.ci_low, r.ci_high)


def _table(frame: pd.DataFrame, scorer: str) -> list[str]:
    """One row per split: paper vs harness accuracy under ``scorer``, the difference and McNemar."""
    sub = frame[frame.scorer == scorer]
    metric = sub.loc[sub.template == "lm-eval", "lm_eval_metric"].iloc[0] if len(sub) else ""
    head = f"`{scorer}`" + (f" = lm-eval `{metric}`" if metric else "")
    out = [f"#### {head}", "",
           "| split | n | paper | lm-eval | Δ (points) | only paper right | only lm-eval right | McNemar p |"
           + (" lm-eval reports it |" if metric else ""),
           "|---|---|---|---|---|---|---|---|" + ("---|" if metric else "")]
    for split, g in sub.groupby("split", sort=False):
        paper = g[g.template == "paper"].iloc[0]
        harness = g[g.template == "lm-eval"].iloc[0]
        out.append(f"| {split} | {harness.n} | {_pct(paper)} | {_pct(harness)} | "
                   f"{100 * (harness.accuracy - paper.accuracy):+.1f} | {harness.only_ref} | {harness.only_this} | "
                   f"{p_text(harness.p_vs_ref)} |"
                   + (f" {'yes' if harness.lm_eval_reports else 'no'} |" if metric else ""))
    return out + [""]


def _summary(frame: pd.DataFrame) -> list[str]:
    """Counts per scorer: splits where the harness's prompt is significantly better / worse / neither."""
    h = frame[frame.template == "lm-eval"]
    rows = ["| scorer | splits | lm-eval better (p < 0.05) | paper better (p < 0.05) | no significant difference | "
            "median Δ (points) |", "|---|---|---|---|---|---|"]
    for s in SCORERS:
        g = h[h.scorer == s]
        ref = frame[(frame.template == "paper") & (frame.scorer == s)].set_index("split")["accuracy"]
        delta = 100 * (g.set_index("split")["accuracy"] - ref)
        sig = g.p_vs_ref < 0.05
        better = int((sig & (g.only_this > g.only_ref)).sum())
        worse = int((sig & (g.only_this < g.only_ref)).sum())
        rows.append(f"| {s} | {len(g)} | {better} | {worse} | {len(g) - better - worse} | {delta.median():+.1f} |")
    return rows + [""]


def _in_words(frame: pd.DataFrame) -> list[str]:
    """The significant changes under ``lm`` (the harness's ``acc``), named split by split."""
    h = frame[(frame.template == "lm-eval") & (frame.scorer == "lm")]
    ref = frame[(frame.template == "paper") & (frame.scorer == "lm")].set_index("split")["accuracy"]

    def names(rows: pd.DataFrame) -> str:
        return ", ".join(f"{r.split} ({100 * (r.accuracy - ref[r.split]):+.1f})" for r in rows.itertuples()) or "none"

    sig = h[h.p_vs_ref < 0.05]
    out = [f"Under `lm` (`acc`), the harness's prompt is significantly better on "
           f"{names(sig[sig.only_this > sig.only_ref])} and significantly worse on "
           f"{names(sig[sig.only_this < sig.only_ref])} (points, lm-eval minus paper)."]
    lettered = [f"{r.split} {100 * r.accuracy:.1f}% (chance {100 / LETTERED[r.split]:.0f}%)"
                for r in h.itertuples() if r.split in LETTERED]
    if lettered:
        out.append("On the splits where the harness scores option letters, its `acc` is " + ", ".join(lettered) + ".")
    obqa = frame[(frame.split == "openbookqa/test") & (frame.template == "lm-eval")].set_index("scorer")
    if len(obqa):
        gained, lost = obqa.loc["per_char", "only_this"], obqa.loc["per_char", "only_ref"]
        out.append(f"OpenBookQA sends identical requests under both templates, so `lm` and `pmi_null` cannot move "
                   f"(Δ {100 * (obqa.loc['lm', 'accuracy'] - ref['openbookqa/test']):+.1f}); `per_char` can move only "
                   "because the harness does not count the leading space, "
                   + (f"and changes on {gained + lost} items ({gained} gained, {lost} lost)." if gained + lost
                      else "and changes on no item here."))
    return [" ".join(out), ""]


def render(frame: pd.DataFrame, caps: dict[str, int], command: str, csv: str) -> str:
    """The markdown section."""
    out = [
        "## The paper's prompts vs lm-evaluation-harness's (same items, only the template changes)",
        "",
        "Generated by `benchmarks/run_harness_report.py`; every number below comes from this command "
        f"(all frames in `{csv}`):",
        "",
        "```",
        command,
        "```",
        "",
        "Per split and model, one `surfacelab.ablate(lm, task, templates=[\"paper\", \"lm-eval\"], ...)` call: "
        "the paper's public-code template (`variant=\"paper\"`, the one in the tables above) and "
        "lm-evaluation-harness 0.4.13's prompt for the same task (`variant=\"lm-eval\"`, "
        "`surfacelab.tasks.harness_table()` lists the YAML each follows) on the *same* seeded items "
        "(`tasks.load(sample=cap, seed=0)`; splits smaller than the cap are complete). Under the lm-eval template "
        "`lm`, `per_char` and `pmi_null` are the harness's own per-item `acc`, `acc_norm` and `acc_mutual_info` "
        "(the parity test `tests/tasks/test_lm_eval_parity.py` checks `acc`/`acc_norm`/`acc_mutual_info` "
        "item by item against lm-eval's HFLM on smollm2-135m); under the paper's template they are the same rules "
        "on the paper's prompt (`per_char` then counts the option's leading space). Accuracy in % with a 95% "
        "percentile bootstrap CI (1000 resamples, seed 0); McNemar = exact two-sided test on the items where the "
        "two prompts disagree in correctness (bold: p < 0.05). \"lm-eval reports it\": the harness's YAML lists "
        "the metric for that task (the others are still the same rule, just not printed by the harness by default).",
        "",
        "Items per split: " + "; ".join(f"`{m}` at most {c}" for m, c in caps.items() if c) + "."
        + (" These are below the script's defaults (" + ", ".join(f"{m}={c}" for m, c in DEFAULT_CAPS.items())
           + "), to fit the time this run had: the CIs are wide and only large differences reach p < 0.05."
           if any(0 < caps[m] < DEFAULT_CAPS[m] for m in caps) else ""),
        "",
        "What changes from one prompt to the other:",
        "",
        "| split | paper vs lm-eval |",
        "|---|---|",
        *["| " + k + " | " + v.replace("|", "\\|") + " |" for k, v in DIFFERENCES.items()],
        "",
    ]
    for model in caps:
        sub = frame[frame.model == model] if len(frame) else frame
        out += [f"### {model}", ""]
        if not len(sub):
            out += ["(not run)", ""]
            continue
        out += ["Splits where the harness's prompt is significantly better or worse than the paper's, per scorer:", ""]
        out += _summary(sub)
        out += _in_words(sub)
        for s in SCORERS:
            out += _table(sub, s)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run every (model, split), rewrite the section after each one."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default="data/eval")
    p.add_argument("--out", default="docs/results_eval.md")
    p.add_argument("--csv", default="docs/results_eval_harness.csv")
    p.add_argument("--cap", action="append", default=[], metavar="MODEL=N",
                   help="items per split for a model (default: "
                   + ", ".join(f"{m}={c}" for m, c in DEFAULT_CAPS.items()) + "; N=0 skips)")
    p.add_argument("--only", default=None, help="comma-separated task names (default: all)")
    args = p.parse_args(argv)
    caps = parse_caps(p, args.cap, DEFAULT_CAPS)
    only = set(args.only.split(",")) if args.only else None
    command = ("SURFACELAB_CACHE=/tmp/harness-cache OMP_NUM_THREADS=1 nice -n 10 "
               "python benchmarks/run_harness_report.py "
               + shlex.join(argv if argv is not None else sys.argv[1:]))
    out, csv = Path(args.out), Path(args.csv)
    frames: list[pd.DataFrame] = []
    lms = {model: sl.load_lm(model, device="cpu") for model, cap in caps.items() if cap}
    for name, split in SPLITS:
        if only and name not in only:
            continue
        for model, lm in lms.items():
            task = tasks.load(name, split, source=args.data_dir, sample=caps[model], seed=0)
            t0 = time.time()
            frame = sl.ablate(lm, task, templates=FAMILIES, scorers=SCORERS, progress=False)
            frames.append(frame.assign(model=model, split=f"{name}/{split}"))
            allf = pd.concat(frames, ignore_index=True)
            allf.to_csv(csv, index=False)
            text = out.read_text() if out.is_file() else ""
            out.write_text(splice(text, render(allf, caps, command, str(csv))))
            acc = frame.set_index(["template", "scorer"])["accuracy"]
            print(f"{model} {name}/{split} n={len(task)} {time.time() - t0:.0f}s "
                  + " ".join(f"{s}={acc['paper', s]:.3f}->{acc['lm-eval', s]:.3f}" for s in SCORERS), flush=True)
    print(f"wrote {out} and {csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
