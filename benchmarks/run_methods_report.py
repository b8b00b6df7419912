"""Measured table of issue #38's methods beside the baselines: docs/results_methods.md.

Every method is one entry of ``METHODS``: a scorer of the registry (run by one ``surfacelab.evaluate`` call per split)
or an option-ID method (run by one ``surfacelab.letters.evaluate`` call per split, on the splits whose items carry a
raw question and choices). Per model and split the item frame (gold, prediction, correct, tie per method) is written to
``--runs`` as CSV, so the work goes in pieces (``--only``, ``--cap MODEL=0``) and ``render`` rebuilds the report from
the frames: accuracy per method with a 95% percentile bootstrap CI (``runs.accuracy_ci``), the exact McNemar test
(``runs.mcnemar``) against LM and against DC-PMI, and per method a sentence on its paper's direction, counted from the
same numbers. The engine's disk cache is keyed by model and token ids, so a rerun of a finished piece is cheap.

    flock /tmp/surfacelab-cpu.lock python benchmarks/run_methods_report.py run --only copa,cb
    python benchmarks/run_methods_report.py render --out docs/results_methods.md
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report_kit import p_text, parse_caps, pct_ci  # noqa: E402

MODELS = ["smollm2-135m", "gemma-3-270m"]
#: items per split and model (a split with fewer is complete): what fits one evening on the 2-core box
DEFAULT_CAPS = {"smollm2-135m": 200, "gemma-3-270m": 40}
SPLITS = [("sst-2", "test"), ("sst-5", "test"), ("trec", "test"), ("rte", "dev"), ("cb", "dev"), ("boolq", "dev"),
          ("copa", "dev"), ("arc-challenge", "test"), ("commonsenseqa", "dev"), ("mmlu", "test")]
REFERENCES = ("lm", "dcpmi")  # every method is tested against these two
CHANCE = "chance"  # a baseline: the mean of 1 / options over the items (an exact binomial test against it)


@dataclasses.dataclass(frozen=True)
class Method:
    """One column of the report.

    Attributes:
        key: its column suffix in the item frames (``correct_<key>``).
        kind: "scorer" (a name in ``surfacelab.scorers.SCORERS``), "letters" (a name in ``letters.METHODS``) or
            "olmes" (no run of its own: per split, the better of the scorers' two formulations, ``olmes_pick``).
        name: the scorer's or letter method's name.
        label: the name the tables show.
        paper: who proposed it.
        baseline: the key its paper compares it against ("" for a baseline, ``CHANCE`` for guessing).
        direction: +1 when the paper finds it above ``baseline``, -1 below.
        claim: the paper's finding in words (completes "the paper finds ...").
    """

    key: str
    kind: str
    name: str
    label: str
    paper: str = ""
    baseline: str = ""
    direction: int = 1
    claim: str = ""


METHODS: list[Method] = [
    Method("lm", "scorer", "lm", "LM", "Holtzman et al. 2021 (baseline)"),
    Method("avg", "scorer", "avg", "Avg", "Holtzman et al. 2021", "lm", 1,
           "the per-token average often above the raw sum"),
    Method("per_char", "scorer", "per_char", "per char", "lm-evaluation-harness acc_norm; Gu et al. 2024, OLMES",
           "lm", 1, "per-character normalisation above the raw sum on most multiple-choice tasks"),
    Method("unc", "scorer", "unc", "Unc", "Holtzman et al. 2021", "lm", -1,
           "the option prior alone (premise ignored) below LM"),
    Method("dcpmi", "scorer", "dcpmi", "DC-PMI", "Holtzman et al. 2021", "lm", 1,
           "DC-PMI above LM (best or tied on most datasets)"),
    Method("pmi_null", "scorer", "pmi_null", "PMI-null", "lm-evaluation-harness acc_mutual_info", "lm", 1,
           "PMI against an empty context correcting LM much as DC-PMI does"),
    Method("batch_cal", "scorer", "batch_cal", "BC (cloze)", "Zhou et al. 2024", "lm", 1,
           "Batch Calibration above the uncalibrated score on fixed label sets"),
    Method("domain_cal", "scorer", "domain_cal", "domain-context (cloze)", "Fei et al. 2023", "lm", 1,
           "domain-context calibration above the uncalibrated score on fixed label sets"),
    Method("channel", "scorer", "channel", "channel", "Min et al. 2022", "lm", 1,
           "the noisy channel (the input scored after each option) is above the direct LM score, most on "
           "classification with fixed labels"),
    Method("mcf", "scorer", "mcf", "MCF", "Gu et al. 2024, OLMES", "lm", -1,
           "models this small are near chance in the multiple-choice (letter) formulation, below cloze"),
    Method("choices", "scorer", "choices", "choices only", "Balepur et al. 2024", "chance", 1,
           "the options alone, with the question removed, score above chance on most datasets"),
    Method("olmes", "olmes", "", "OLMES (better of cloze, MCF)", "Gu et al. 2024, OLMES", "", 1,
           "MCF is the better formulation only for larger models; for small ones the best cloze score wins"),
    Method("letters", "letters", "default", "letters", "Zheng et al. 2024 (PriDe's prompt, uncalibrated)", "lm", -1,
           "as MCF: below cloze at this size"),
    Method("letters_cc", "letters", "calibrated", "letters + contextual calibration", "Zhao et al. 2021", "letters",
           1, "contextual calibration is above the uncalibrated letters"),
    Method("letters_bc", "letters", "batch", "letters + Batch Calibration", "Zhou et al. 2024", "letters", 1,
           "Batch Calibration is above the uncalibrated letters (and above contextual calibration)"),
    Method("letters_dc", "letters", "domain", "letters + domain-context calibration", "Fei et al. 2023",
           "letters_cc", 1, "domain-context calibration is above contextual calibration"),
]


def method(key: str) -> Method:
    """The entry of ``METHODS`` with this key."""
    for m in METHODS:
        if m.key == key:
            return m
    raise ValueError(f"method: expected one of {[m.key for m in METHODS]}, got {key!r}")


def sample(name: str, split: str, n: int, data_dir: str):
    """The items of a split the report scores: MMLU a subject-stratified sample of ``n`` (seed 0), any other split a
    seeded sample of ``n`` (``tasks.load(sample=n, seed=0)``); a split of at most ``n`` items whole."""
    from surfacelab import letters, tasks

    task = tasks.load(name, split, source=data_dir)
    if len(task.items) <= n:
        return task
    if name == "mmlu":
        return letters.stratified_sample(task, n, seed=0)
    return tasks.load(name, split, source=data_dir, sample=n, seed=0)


def _letters_frame(run, names: list[tuple[str, str]]) -> pd.DataFrame:
    """pred / correct / tie columns per letter method from a ``LetterEval``'s item rows."""
    out = {}
    for key, name in names:
        rows = run.items[run.items["method"] == name].sort_values("item")
        probs = rows["probs"].map(np.asarray)
        out[f"pred_{key}"] = probs.map(np.argmax).to_numpy()
        out[f"correct_{key}"] = rows["correct"].to_numpy(dtype=bool)
        out[f"tie_{key}"] = probs.map(lambda p: int((p == p.max()).sum()) > 1).to_numpy()
        out["letters_id"] = rows["item_id"].astype(str).to_numpy()  # to check the alignment with the scorers
    return pd.DataFrame(out)


def run_split(lm, task, methods: Sequence[Method]) -> tuple[pd.DataFrame, list[str]]:
    """Every method on one split: the item frame (``id``, ``gold``, ``n_options`` and per method ``pred_``,
    ``correct_``, ``tie_``) and the keys of the methods that do not apply to it (a scorer that scored no item, such
    as Batch Calibration where the options differ per item; letters on items without a raw question and choices)."""
    from surfacelab import letters
    from surfacelab.evaluate import evaluate

    scorers = [m for m in methods if m.kind == "scorer"]
    skipped = []
    if scorers:
        res = evaluate(lm, task, [m.name for m in scorers], progress=False, n_boot=0)
        skipped = [m.key for m in scorers if (res.items[f"pred_{m.name}"] < 0).all()]  # does not apply to the task
        scorers = [m for m in scorers if m.key not in skipped]
        cols = ["id", "gold", "n_options"]
        for m in scorers:
            cols += [f"{p}_{m.name}" for p in ("pred", "correct", "tie")]
        items = res.items[cols].rename(columns={f"{p}_{m.name}": f"{p}_{m.key}" for m in scorers
                                                for p in ("pred", "correct", "tie")})
    else:
        items = pd.DataFrame({"id": [it.id for it in task.items], "gold": [it.gold for it in task.items],
                              "n_options": [len(it.options) for it in task.items]})
    items["id"] = items["id"].astype(str)
    by_letters = [(m.key, m.name) for m in methods if m.kind == "letters"]
    if by_letters:
        try:
            letters.as_items(task)
        except ValueError:
            skipped += [k for k, _ in by_letters]
        else:
            frame = _letters_frame(letters.evaluate(lm, task, [n for _, n in by_letters], seed=0), by_letters)
            if list(frame.pop("letters_id")) != list(items["id"]):
                raise RuntimeError(f"{task.name}: the letter methods' items are not the scorers' items")
            items = pd.concat([items.reset_index(drop=True), frame], axis=1)
    return items, skipped


def add_to_frame(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """The split's frame at ``path`` with the method columns of ``new`` put in (replacing those it had), for a run
    of some methods only (``run --letters-only``); refused, naming the file, where the frame is missing or holds
    other items (another cap or sample) than ``new``."""
    if not path.is_file():
        raise SystemExit(f"{path}: no frame to add the letter methods to; run the scorers first (run --no-letters)")
    old = pd.read_csv(path, dtype={"id": str})
    for col in ("id", "gold"):
        if list(old[col].astype(str)) != list(new[col].astype(str)):
            raise SystemExit(f"{path}: its items ({len(old)}) are not this run's items ({len(new)}): the {col!r} "
                             "columns differ; rerun the scorers with the same --cap")
    added = [c for c in new.columns if c not in ("id", "gold", "n_options")]
    return pd.concat([old.drop(columns=[c for c in added if c in old.columns]), new[added]], axis=1)


def summarise(items: pd.DataFrame, keys: Sequence[str], n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """One row per method key present in ``items``: ``n``, ``accuracy`` with ``ci_low`` / ``ci_high`` (95% percentile
    bootstrap, ``runs.accuracy_ci``), and for each reference (LM, DC-PMI) present, ``only_<ref>`` (items the
    method gets right and the reference wrong), ``only_<ref>_ref`` (the reverse) and ``p_<ref>`` (exact McNemar)."""
    from surfacelab.runs import accuracy_ci, mcnemar

    keys = [k for k in keys if f"correct_{k}" in items]
    correct = items[[f"correct_{k}" for k in keys]].to_numpy(dtype=bool)
    acc, low, high = accuracy_ci(correct, n_boot, seed)
    table = pd.DataFrame({"method": keys, "n": len(items), "accuracy": acc, "ci_low": low, "ci_high": high})
    for ref in REFERENCES:
        if f"correct_{ref}" not in items:
            continue
        tests = [mcnemar(items[f"correct_{k}"], items[f"correct_{ref}"]) for k in keys]
        table[f"only_{ref}"] = [t[0] for t in tests]
        table[f"only_{ref}_ref"] = [t[1] for t in tests]
        table[f"p_{ref}"] = [t[2] for t in tests]
    return table


def olmes_pick(items: pd.DataFrame) -> str | None:
    """The scorer OLMES reports for a split (``runs.olmes_rows``: the better of the most accurate cloze scorer and MCF,
    the first in ``METHODS`` order on a tie); None unless the split ran both formulations."""
    from surfacelab.runs import olmes_rows
    from surfacelab.scorers import get_scorer

    ran = [m for m in METHODS if m.kind == "scorer" and f"correct_{m.key}" in items]
    table = pd.DataFrame({"formulation": [get_scorer(m.name).formulation for m in ran],
                          "accuracy": [items[f"correct_{m.key}"].mean() for m in ran]})
    picked = [m.key for m, flag in zip(ran, olmes_rows(table)) if flag]
    return picked[0] if picked else None


def with_olmes(items: pd.DataFrame) -> pd.DataFrame:
    """``items`` with the OLMES columns (``pred_olmes``, ``correct_olmes``, ``tie_olmes``: those of ``olmes_pick``)."""
    key = olmes_pick(items)
    if key is None:
        return items
    return items.assign(**{f"{p}_olmes": items[f"{p}_{key}"] for p in ("pred", "correct", "tie")})


def olmes_sentence(m: Method, frames: dict[tuple[str, str], pd.DataFrame]) -> str:
    """Which formulation OLMES's rule picks on how many (model, split) pairs, next to its paper's finding."""
    from surfacelab.scorers import get_scorer

    picks = [olmes_pick(items) for items in frames.values()]
    forms = [get_scorer(method(k).name).formulation for k in picks if k]
    cloze, mcf = forms.count("cloze"), forms.count("mcf")
    verdict = "agrees" if cloze > mcf else "disagrees" if mcf > cloze else "shows no direction"
    return (f"**{m.label}** ({m.paper}; the paper finds {m.claim}): the better formulation here is cloze on {cloze} "
            f"and MCF on {mcf} of {len(forms)} (model, split) pairs; here it {verdict}.")


def first_option_share(frames: dict[tuple[str, str], pd.DataFrame], key: str) -> str:
    """'<model> 97.5%, ...': per model, the share of the items ``key`` scored on which it picked the first option."""
    parts = []
    for model in MODELS:
        preds = [items[f"pred_{key}"] for (mod, _), items in frames.items() if mod == model and f"pred_{key}" in items]
        if preds:
            parts.append(f"{model} {100 * (pd.concat(preds) == 0).mean():.1f}%")
    return ", ".join(parts)


def direction_sentence(m: Method, deltas: pd.DataFrame) -> str:
    """Where ``m`` agrees with its paper: ``deltas`` has one row per (model, split) with ``delta`` (accuracy of ``m``
    minus its baseline) and ``p`` (McNemar between the two)."""
    if not m.baseline:
        return f"**{m.label}** is the reference the others are tested against."
    base = "chance" if m.baseline == CHANCE else method(m.baseline).label
    test = "binomial test against chance" if m.baseline == CHANCE else "McNemar"
    if not len(deltas):
        return f"**{m.label}** ({m.paper}): not run on any split here."
    signed = deltas["delta"] * m.direction
    agree, against = int((signed > 0).sum()), int((signed < 0).sum())
    sig_agree = int(((signed > 0) & (deltas["p"] < 0.05)).sum())
    sig_against = int(((signed < 0) & (deltas["p"] < 0.05)).sum())
    way = "above" if m.direction > 0 else "below"
    if sig_agree > sig_against and agree > against:
        verdict = "agrees"
    elif sig_against > sig_agree and against > agree:
        verdict = "disagrees"
    elif sig_agree and sig_against:
        verdict = "is mixed (significant differences both ways)"
    elif agree > against:
        verdict = "leans the paper's way"
    elif against > agree:
        verdict = "leans against the paper"
    else:
        verdict = "shows no clear direction"
    against_where = ", ".join(f"{r.model} {r.split}" for r in deltas[(signed < 0) & (deltas["p"] < 0.05)].itertuples())
    return (f"**{m.label}** ({m.paper}; the paper finds {m.claim}): {way} {base} on {agree} of {len(deltas)} "
            f"(model, split) pairs, {sig_agree} of them significantly ({test} p < 0.05); the other way on {against}"
            f"{f', significantly on {sig_against} ({against_where})' if sig_against else ''}; equal on "
            f"{len(deltas) - agree - against}; here it {verdict}.")


def deltas(frames: dict[tuple[str, str], pd.DataFrame], m: Method) -> pd.DataFrame:
    """One row per (model, split) that ran ``m`` and its baseline: ``delta`` (accuracy of ``m`` minus the baseline's)
    and ``p`` (exact McNemar between the two; against chance, the exact binomial test of ``m``'s correct count)."""
    from scipy.stats import binomtest

    from surfacelab.runs import mcnemar

    rows = []
    for (model, split), items in frames.items():
        a, b = f"correct_{m.key}", f"correct_{m.baseline}"
        if a not in items:
            continue
        if m.baseline == CHANCE:
            chance = float((1 / items["n_options"]).mean())
            rows.append({"model": model, "split": split, "delta": items[a].mean() - chance,
                         "p": binomtest(int(items[a].sum()), len(items), chance).pvalue})
        elif b in items:
            rows.append({"model": model, "split": split, "delta": items[a].mean() - items[b].mean(),
                         "p": mcnemar(items[a], items[b])[2]})
    return pd.DataFrame(rows, columns=["model", "split", "delta", "p"])


def split_table(items: pd.DataFrame, methods: Sequence[Method]) -> list[str]:
    """The markdown table of one (model, split): per method accuracy with CI, Δ and McNemar p against LM and DC-PMI."""
    table = summarise(items, [m.key for m in methods]).set_index("method")
    top = table["accuracy"].max()
    out = ["| method | accuracy % [95% CI] | Δ vs LM | only it / only LM right | p vs LM | Δ vs DC-PMI | "
           "only it / only DC-PMI right | p vs DC-PMI |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for m in methods:
        if m.key not in table.index:
            continue
        r = table.loc[m.key]
        cells = [m.label, pct_ci(r.accuracy, r.ci_low, r.ci_high, r.accuracy == top)]
        for ref in REFERENCES:
            if ref == m.key or f"p_{ref}" not in table:
                cells += ["", "", ""]
                continue
            delta = 100 * (r.accuracy - table.loc[ref, "accuracy"])
            cells += [f"{delta:+.1f}", f"{int(r[f'only_{ref}'])} / {int(r[f'only_{ref}_ref'])}", p_text(r[f"p_{ref}"])]
        out.append("| " + " | ".join(cells) + " |")
    return out


def not_applicable(task) -> set[str]:
    """The keys of the methods that do not apply to ``task``: a scorer that ``scorers.not_applicable`` refuses on its
    option lists (a calibration of fixed label sets where options differ per item), the letter methods where its items
    carry no raw question and choices."""
    from surfacelab import letters, scorers

    table = pd.DataFrame([{"item": i, "option": o} for i, it in enumerate(task.items) for o in it.options])
    out = {m.key for m in METHODS if m.kind == "scorer"
           and scorers.not_applicable(scorers.get_scorer(m.name), table)}
    try:
        letters.as_items(task)
    except ValueError:
        out |= {m.key for m in METHODS if m.kind == "letters"}
    return out


def overview(frames: dict[tuple[str, str], pd.DataFrame], model: str, methods: Sequence[Method],
             na: dict[str, set[str]] | None = None) -> list[str]:
    """One row per split of ``model``: every method's accuracy (bold: the best of the row; "n/a": the method does not
    apply to the split, by ``na``: split -> keys; blank: not run)."""
    out = ["| split | n | " + " | ".join(m.label for m in methods) + " |",
           "|---|---:|" + "---:|" * len(methods)]
    for (mod, split), items in frames.items():
        if mod != model:
            continue
        acc = {m.key: items[f"correct_{m.key}"].mean() for m in methods if f"correct_{m.key}" in items}
        top = max(acc.values())
        cells = [(("n/a" if m.key in (na or {}).get(split, ()) else "") if m.key not in acc
                  else f"**{100 * acc[m.key]:.1f}**" if acc[m.key] == top else f"{100 * acc[m.key]:.1f}")
                 for m in methods]
        out.append(f"| {split} | {len(items)} | " + " | ".join(cells) + " |")
    return out


def read_frames(runs: Path) -> dict[tuple[str, str], pd.DataFrame]:
    """The item frames under ``runs`` (``<model>/<task>--<split>.csv``), in ``MODELS`` x ``SPLITS`` order, with the
    OLMES columns (``with_olmes``)."""
    frames = {}
    for model in MODELS:
        for name, split in SPLITS:
            path = runs / model / f"{name}--{split}.csv"
            if path.is_file():
                frames[(model, f"{name}/{split}")] = with_olmes(pd.read_csv(path, dtype={"id": str}))
    return frames


def render(frames: dict[tuple[str, str], pd.DataFrame], caps: dict[str, int], commands: Sequence[str],
           notes: Sequence[str] = (), na: dict[str, set[str]] | None = None) -> str:
    """The whole report as markdown (``na``: split -> the keys of the methods that do not apply to it)."""
    out = [
        "# The methods beyond the four fixes, beside the baselines (measured)",
        "",
        "Generated by `benchmarks/run_methods_report.py`; every number below comes from these commands "
        "(the run pieces in any order, then render):",
        "",
        "```",
        *commands,
        "```",
        "",
        "Setup: zero-shot, the tasks' own templates and domain premises (the paper's public code, "
        "`variant=\"paper\"`). "
        "The scorers run through one `surfacelab.evaluate` call per split: the cloze ones (LM ... PMI-null) on the "
        "task's prompt, the noisy channel, MCF and choices-only on the texts `surfacelab/formats.py` writes per task "
        "(channel: the input after each option or its label word; MCF: the option's letter after the lettered "
        "question and `Answer:`; choices-only: the same without the question). OLMES is no run of its own: per split, "
        "the better of the most accurate cloze scorer (LM, Avg, per-char, DC-PMI, PMI-null; not the calibrations) "
        "and MCF (`runs.olmes_rows`), so it is at least LM by construction. The letter methods run through "
        "`surfacelab.letters.evaluate` with PriDe's prompt "
        "(`Question: ...` / `A. ...` / `Answer:`, the letters' \" A\" and \"A\" summed), only on splits whose items "
        "carry a raw question and choices; `run --letters-only` adds their columns to the frames a `--no-letters` "
        "run wrote, the same columns one run writes. In the overview \"n/a\" marks a method that does not apply to a "
        "split "
        "(a letter method where items carry no raw question, a cloze calibration of fixed label sets where the "
        "options differ per item) and "
        "a blank cell one that was not run; domain-context calibration averages 20 random "
        "in-domain texts (seed 0). Choices-only is tested against chance (the mean of 1 / options; exact binomial "
        "test) in the sentences below. Accuracy in % with a 95% percentile bootstrap CI over items "
        "(1000 resamples, seed 0). McNemar: the exact two-sided binomial test on the items where the method and the "
        "reference (LM, DC-PMI) disagree in correctness; bold p < 0.05. A method predicts the option with the "
        "highest score (the first on an exact tie).",
        "",
        "Items per split: " + "; ".join(f"`{m}` {c}" for m, c in caps.items()) + " (a seeded sample, "
        "`tasks.load(sample=N, seed=0)`; MMLU a subject-stratified sample of the test split, "
        "`letters.stratified_sample(task, N, seed=0)`; a split with fewer items is complete). These sizes are what "
        "fitted the evening's CPU time: CIs are wide, and only large differences reach p < 0.05.",
        "",
        *notes,
        "",
        "## Where each method agrees with its paper",
        "",
    ]
    for m in METHODS:
        out += ["- " + (olmes_sentence(m, frames) if m.kind == "olmes"
                         else direction_sentence(m, deltas(frames, m) if m.baseline else pd.DataFrame()))]
    shares = [f"{method(k).label} {share}" for k in ("mcf", "choices", "letters")
              if (share := first_option_share(frames, k))]
    if shares:
        out += ["", "How often each letter formulation answers with the first option (A), over every item it scored: "
                + "; ".join(shares) + "."]
    for model in caps:
        out += ["", f"## {model}", ""]
        if not any(mod == model for mod, _ in frames):
            out += ["(not run)"]
            continue
        out += ["Accuracy % per split and method (bold: best of the row):", ""]
        out += overview(frames, model, METHODS, na)
        for (mod, split), items in frames.items():
            if mod == model:
                out += ["", f"### {model} · {split} ({len(items)} items)", ""] + split_table(items, METHODS)
    return "\n".join(out) + "\n"


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    import surfacelab as sl
    from surfacelab.paths import write_atomic

    caps = parse_caps(parser, args.cap, DEFAULT_CAPS)
    only = set(args.only.split(",")) if args.only else None
    if args.no_letters and args.letters_only:
        parser.error("--no-letters and --letters-only leave no method to run; give one of them")
    methods = [m for m in METHODS if not (args.no_letters and m.kind == "letters")
               and not (args.letters_only and m.kind != "letters")]
    runs = Path(args.runs)
    for model, cap in caps.items():
        if not cap:
            continue
        lm = sl.load_lm(model, device="cpu")
        for name, split in SPLITS:
            if only and name not in only:
                continue
            t0 = time.time()
            items, skipped = run_split(lm, sample(name, split, cap, args.data_dir), methods)
            path = runs / model / f"{name}--{split}.csv"
            if args.letters_only:
                if set(skipped) >= {m.key for m in methods}:
                    print(f"{model} {name}/{split}: the letter methods do not apply", flush=True)
                    continue
                items = add_to_frame(path, items)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, lambda tmp: items.to_csv(tmp, index=False))
            acc = " ".join(f"{m.key}={items[f'correct_{m.key}'].mean():.3f}" for m in METHODS
                           if f"correct_{m.key}" in items)
            print(f"{model} {name}/{split} n={len(items)} {time.time() - t0:.0f}s {acc}"
                  + (f" (not applicable: {', '.join(skipped)})" if skipped else ""), flush=True)


def run_commands(frames: dict[tuple[str, str], pd.DataFrame], caps: dict[str, int]) -> list[str]:
    """The run command of each model as its frames were made: its cap, and ``--no-letters`` where no split of it has
    a letter method's column."""
    out = []
    for model, cap in caps.items():
        mine = [items for (mod, _), items in frames.items() if mod == model]
        if not cap or not mine:
            continue
        letters = any(f"correct_{m.key}" in items for items in mine for m in METHODS if m.kind == "letters")
        others = " ".join(f"--cap {m}=0" for m in caps if m != model)
        out.append(f"flock /tmp/surfacelab-cpu.lock python benchmarks/run_methods_report.py run {others} "
                   f"--cap {model}={cap}{'' if letters else ' --no-letters'} [--only TASK,...]")
    return out


def render_cmd(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    caps = parse_caps(parser, args.cap, DEFAULT_CAPS)
    frames = read_frames(Path(args.runs))
    given = sys.argv[2:]
    kept = [a for k, a in enumerate(given) if a != "--note" and (k == 0 or given[k - 1] != "--note")]
    commands = [*run_commands(frames, caps), "python benchmarks/run_methods_report.py render " + shlex.join(kept)]
    out = Path(args.out)
    from surfacelab import tasks

    na = {f"{name}/{split}": not_applicable(tasks.load(name, split, source=args.data_dir)) for name, split in SPLITS}
    out.write_text(render(frames, caps, commands, args.note, na))
    print(f"wrote {out} ({len(frames)} model x split frames)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, fn in (("run", run), ("render", render_cmd)):
        p = sub.add_parser(name)
        p.add_argument("--runs", default="benchmarks/runs_methods", help="folder of the item frames")
        p.add_argument("--cap", action="append", default=[], metavar="MODEL=N",
                       help="items per split for a model (default: "
                       + ", ".join(f"{m}={c}" for m, c in DEFAULT_CAPS.items()) + "; N=0 skips it)")
        p.set_defaults(fn=fn)
        if name == "run":
            p.add_argument("--data-dir", default="data/eval")
            p.add_argument("--only", default=None, help="comma-separated task names (default: all)")
            p.add_argument("--no-letters", action="store_true",
                           help="run the scorers only (the letter methods cost 24 forwards per item)")
            p.add_argument("--letters-only", action="store_true",
                           help="run the letter methods only and add their columns to the frames the scorers wrote")
        else:
            p.add_argument("--out", default="docs/results_methods.md")
            p.add_argument("--data-dir", default="data/eval", help="where the splits are (to say which methods apply)")
            p.add_argument("--note", action="append", default=[],
                           help="a paragraph to add under the setup (not repeated in the recorded command)")
    args = parser.parse_args(argv)
    args.fn(args, parser)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
