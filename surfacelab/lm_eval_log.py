"""Read the per-document logs of ``lm_eval --log_samples`` (lm-evaluation-harness 0.4.x) into an ``EvalResult``.

People arrive with a harness run on a large model, not with a surfacelab run: ``from_lm_eval`` turns its
``samples_<task>_<date>.jsonl`` into the frames ``evaluate`` returns, so the same tables, figures and the
workbench open it. Browsing needs no model: the log holds the exact (context, continuation) strings, the
gold and the harness's own log-likelihoods, and the ``lm``, ``per_char`` (``acc_norm``: divided by the
choice's length in characters, without the target delimiter), ``per_byte`` (``acc_bytes``) and, when the
task logged its unconditional requests, ``pmi_null`` (``acc_mutual_info``) scorers are computed from those
numbers. With ``lm=`` the same strings are scored again through :func:`surfacelab.scoring.score_items`, under
``domain_premise`` too, which adds Unc, DC-PMI and Avg, and checks that surfacelab's log-prob equals the logged
one (same model, same dtype). The ``logprob`` column stays the logged value (so ``lm`` is the harness's ``acc``
exactly) and DC-PMI is that minus surfacelab's domain log-prob; surfacelab's own is ``surfacelab_logprob``.

>>> import surfacelab as sl
>>> run = sl.from_lm_eval("out/my-model/samples_arc_challenge_2024-05-01T12-00-00.000001.jsonl")  # doctest: +SKIP
>>> run.accuracy[["scorer", "lm_eval_metric", "accuracy", "lm_eval_value"]]   # lm | acc | ...   # doctest: +SKIP
>>> run = sl.from_lm_eval("out/", lm=sl.load_lm(...), domain_premise=" the answer is:")          # doctest: +SKIP

The files are found and read by ``surfacelab.lm_eval_read`` (untrusted: regular files only, size caps, every
field used checked); what a run leaves out or does not add up is said once (``log_notes``: the warnings, the command
line's notes and the explorer's run line).
"""

from __future__ import annotations

import hashlib
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ._format import printable
from .evaluate import EvalResult, accuracy_table, paired_table
from .lm_eval_read import Doc, as_float, find_log, one_filter, parse_doc, read_records, task_config
from .scorers import SCORERS, check_scorers, get_scorer
from .scoring import option_table, result_meta, score_items
from .tasks.harness import METRIC_SCORERS, lm_eval_metric

if TYPE_CHECKING:
    from .models import LM

#: Largest |surfacelab log-prob - logged log-likelihood| still taken as "the same model" (fp32 batching noise).
LOGPROB_TOL = 1e-3
#: The template name an lm-eval log's run carries (its prompts are the harness's, read from the log).
TEMPLATE = "lm-eval log"
#: ``meta["source"]`` of a run read from a log.
LOG_SOURCE = "lm-eval log"
#: Settings of ``results_<date>.json`` recorded in ``EvalResult.meta`` (the model's, the run's and the versions).
RESULT_KEYS = ("config", "model_name", "model_source", "lm_eval_version", "transformers_version", "git_hash", "date",
               "max_length", "chat_template", "system_instruction", "fewshot_as_multiturn")


def from_lm_eval(
    path: str | Path,
    *,
    task: str | None = None,
    lm: LM | None = None,
    domain_premise: str | None = None,
    scorers: str | Sequence[str] | None = None,
    filter_name: str | None = None,
    batch_size: int | str = "auto",
    progress: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
) -> EvalResult:
    """An ``EvalResult`` from what ``lm_eval --log_samples`` wrote for one ``multiple_choice`` task.

    Args:
        path: a ``samples_<task>_<date>.jsonl`` file, or a folder holding one (searched recursively: the
            ``--output_path`` folder or its ``<model>`` subfolder). Generation logs in a folder are passed over (a
            warning names them; ``meta["passed_over"]`` too).
        task: the harness task to read when the folder holds several.
        lm: a loaded ``LM`` (in-process or vLLM-backed) to score the logged strings again: adds ``n_tokens``
            (Avg), ``null_logprob`` (PMI-null, unless the log has its own), the domain condition and the
            ``surfacelab_logprob`` column, checked against the logged log-likelihoods.
        domain_premise: the domain premise for Unc / DC-PMI (e.g. ``" the answer is:"``); needs ``lm``.
        scorers: scorer names (list or comma-separated); default: every scorer the log (and ``lm``) can give.
        filter_name: the harness filter to read when the log holds several (multiple_choice tasks have one, "none").
        batch_size, progress: as in :func:`surfacelab.evaluate` (used with ``lm``).
        n_boot, seed: bootstrap resamples and seed of the accuracy CIs, as in :func:`surfacelab.evaluate`.

    Returns:
        An ``EvalResult`` shaped like ``evaluate``'s (no ``why`` verdict columns: those need the model's
        next-token distributions): ``scores`` holds the logged ``context`` / ``option`` strings with the logged
        log-likelihood as ``logprob``; ``items`` holds ``id`` (the ``doc_id``), the logged target and the
        harness's own per-document metrics as ``lm_eval_<metric>``; ``accuracy`` adds the harness's aggregate
        (``lm_eval_value``). ``meta["lm_eval_disagreements"]`` lists the documents where a recomputed metric
        differs from the logged one (also a warning); ``meta["scorers_left_out"]`` says why a scorer the log
        gives is not in the run (an empty choice: no score per character).

    Raises:
        ValueError: naming ``path`` (missing, an empty folder, not a regular file, too large, not a samples log,
            an unknown layout, a field of the wrong type, a logged log-likelihood that is not finite or above 0, a
            generation or perplexity task, several gold answers; the file, line, doc_id and field), ``task`` /
            ``filter_name`` (ambiguous or unknown), ``domain_premise`` (without ``lm``) or ``scorers`` (one the
            log cannot give).
    """
    if domain_premise is not None and lm is None:
        raise ValueError("domain_premise: scoring the domain condition needs a model: pass lm= as well")
    if domain_premise is not None and (not isinstance(domain_premise, str) or not domain_premise.strip()):
        raise ValueError(f"domain_premise: expected a non-blank string, got {domain_premise!r}")
    found = find_log(path, task)
    file, task_name, results = found.file, found.task, found.results
    config = task_config(results, found.results_file, task_name)
    if config.get("output_type", "multiple_choice") != "multiple_choice":
        raise ValueError(f"path: {str(file)!r} is the log of a {config['output_type']!r} task ({task_name}, says "
                         f"{found.results_file.name}); surfacelab reads multiple_choice logs only")
    records = read_records(file)
    records, filt = one_filter(records, file, filter_name)
    delimiter = config.get("target_delimiter", " ")
    docs = [parse_doc(rec, line, file, delimiter) for line, rec in records]
    raw = _raw_rows(docs, delimiter)
    checks: dict[str, Any] = {}
    if lm is not None:
        checks = _rescore(lm, raw, domain_premise, batch_size=batch_size, progress=progress)
    table = _ordered(option_table(raw, by="item"))
    scorers, left_out = _usable_scorers(table, scorers)
    scores = _keep_scorers(table, scorers)
    items = _items_frame(docs, scores, scorers, domain_premise or "")
    disagreements = _disagreements(items, scorers)
    metrics = sorted({m for d in docs for m in d.metrics})
    accuracy = accuracy_table(items, scorers, n_boot, seed)
    accuracy["lm_eval_metric"] = [lm_eval_metric(s) for s in scorers]
    accuracy["lm_eval_reports"] = [m in metrics for m in accuracy["lm_eval_metric"]]
    reported = results.get("results", {}).get(task_name, {})
    accuracy["lm_eval_value"] = [as_float(reported.get(f"{m},{filt}")) for m in accuracy["lm_eval_metric"]]
    meta = {
        "source": LOG_SOURCE, "files": [str(file)],
        "results_file": str(found.results_file) if found.results_file else None, "passed_over": found.passed_over,
        "lm_eval_task": task_name, "lm_eval_task_config": config, "filter": filt, "target_delimiter": delimiter,
        "lm_eval_metrics": metrics, "lm_eval_disagreements": disagreements, "scorers_left_out": left_out,
        "task_hash_matches": _hash_matches(records, results.get("task_hashes", {}).get(task_name)),
        "n_shot": results.get("n-shot", {}).get(task_name), "n_boot": n_boot, "seed": seed,
        **{f"lm_eval_{k}" if not k.startswith("lm_eval") else k: results[k] for k in RESULT_KEYS if k in results},
        **checks,
        **(result_meta(lm, scorers=scorers) if lm is not None else {"scorers": scorers}),
    }
    _warn(file, meta)
    return EvalResult(task=task_name, split=str(config.get("test_split") or config.get("validation_split") or ""),
                      model=str(results.get("model_name", "")), template=TEMPLATE, scorers=scorers,
                      scores=scores, items=items, accuracy=accuracy, paired=paired_table(items, scorers), meta=meta)


# ----------------------------------------------------------------------------- frames
def _raw_rows(docs: list[Doc], delimiter: str) -> pd.DataFrame:
    """One raw row per (document, option): the logged strings and log-likelihood; lengths without the delimiter
    (as the harness's ``acc_norm`` / ``acc_bytes`` divide by the choice's length); model-only columns NaN / 0."""
    rows = []
    for i, d in enumerate(docs):
        for k, (ctx, opt, ll) in enumerate(zip(d.contexts, d.options, d.lls)):
            choice = opt[len(delimiter):] if delimiter and opt.startswith(delimiter) else opt
            rows.append({"item": i, "id": d.doc_id, "option_index": k, "is_gold": k == d.gold, "context": ctx,
                         "option": opt, "logprob": ll, "n_tokens": np.nan, "n_chars": len(choice),
                         "n_bytes": len(choice.encode("utf-8")), "domain_logprob": np.nan,
                         "null_logprob": d.null_lls[k] if d.null_lls is not None else np.nan,
                         "surfacelab_logprob": np.nan, "truncated": 0, "domain_truncated": 0})
    return pd.DataFrame(rows)


def _rescore(lm: LM, raw: pd.DataFrame, domain_premise: str | None, *, batch_size: int | str,
             progress: bool) -> dict[str, Any]:
    """Score the logged strings with ``lm`` (one engine call), fill the model's columns of ``raw`` in place and
    return the log-prob check: the largest |surfacelab - logged| and whether it is within ``LOGPROB_TOL``."""
    groups = raw.groupby("item", sort=False)
    triples = [(str(g["context"].iloc[0]), list(dict.fromkeys(g["option"])), domain_premise) for _, g in groups]
    results = score_items(lm, triples, batch_size=batch_size, progress=progress)
    has_null = raw["null_logprob"].notna().all()
    for (_, g), res in zip(groups, results):
        t = res.table.set_index("option").loc[g["option"]]
        raw.loc[g.index, "surfacelab_logprob"] = t["logprob"].to_numpy()
        raw.loc[g.index, "n_tokens"] = t["n_tokens"].to_numpy()
        raw.loc[g.index, "domain_logprob"] = t["domain_logprob"].to_numpy()
        raw.loc[g.index, "truncated"] = t["truncated"].to_numpy()
        raw.loc[g.index, "domain_truncated"] = t["domain_truncated"].to_numpy()
        if not has_null:
            raw.loc[g.index, "null_logprob"] = t["null_logprob"].to_numpy()
    diff = float((raw["surfacelab_logprob"] - raw["logprob"]).abs().max())
    return {"logprob_check": {"max_abs_diff": diff, "tolerance": LOGPROB_TOL, "agrees": diff <= LOGPROB_TOL},
            "domain_premise": domain_premise, "null_from": "log" if has_null else "surfacelab"}


def _ordered(table: pd.DataFrame) -> pd.DataFrame:
    """``evaluate``'s column order: the row's keys and strings first, the model's extra columns last."""
    last = ["surfacelab_logprob", "truncated", "domain_truncated"]
    first = ["item", "id", "option_index", "is_gold", "context"]
    return table[first + [c for c in table.columns if c not in first + last] + last]


def _usable_scorers(table: pd.DataFrame, scorers: str | Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The scorers asked for (default: every one this table gives a finite score for every option), each checked,
    and why each scorer the table has numbers for is left out of the default (an empty choice has no score per
    character): the warnings and notes say so."""
    missing, not_finite = {}, {}
    for s in SCORERS.values():
        values = table[s.column].to_numpy(dtype=float)
        if np.isnan(values).all():
            missing[s.name] = ("a domain premise: pass lm= and domain_premise=" if "domain" in s.needs else
                               "the model: pass lm=")
        elif not np.isfinite(values).all():
            i = int(np.flatnonzero(~np.isfinite(values))[0])
            doc_id = table["id"].iloc[i]
            not_finite[s.name] = (f"{s.name} ({s.formula}) is {values[i]} for doc_id "
                                  f"{getattr(doc_id, 'item', lambda: doc_id)()!r}, option "
                                  f"{int(table['option_index'].iloc[i])} ({table['option'].iloc[i]!r})")
    if scorers is None:  # lm is always in: every logged log-likelihood is finite (parse_doc)
        return [s for s in SCORERS if s not in missing and s not in not_finite], not_finite
    chosen = check_scorers(scorers)
    for s in chosen:
        if s in missing:
            raise ValueError(f"scorers: {s!r} cannot be computed from the log alone; it needs {missing[s]}")
        if s in not_finite:
            raise ValueError(f"scorers: {s!r} has no finite score for every option: {not_finite[s]}")
    return chosen, {}


def _keep_scorers(table: pd.DataFrame, scorers: list[str]) -> pd.DataFrame:
    """The option table with only the selected scorers' columns and ranks (the raw columns stay), as ``evaluate``."""
    keep = {get_scorer(s).column for s in scorers} | {f"rank_{s}" for s in scorers}
    raw = {"logprob", "domain_logprob", "null_logprob"}
    dropped = {c for s in SCORERS.values() for c in (s.column, f"rank_{s.name}")} - keep - raw
    return table[[c for c in table.columns if c not in dropped]].copy()


def _items_frame(docs: list[Doc], scores: pd.DataFrame, scorers: list[str], domain_premise: str) -> pd.DataFrame:
    """One row per document: gold, each scorer's pick (the first top option on a tie, as the harness's argmax),
    the logged target and per-document metrics, and the truncation columns."""
    items = pd.DataFrame({
        "item": np.arange(len(docs)),
        "id": [d.doc_id for d in docs],
        "gold": [d.gold for d in docs],
        "gold_option": [d.options[d.gold] for d in docs],
        "n_options": [len(d.options) for d in docs],
        "premise": [d.contexts[0] for d in docs],
        "domain_premise": domain_premise,
    })
    by_item = scores.groupby("item", sort=True)
    for s in scorers:
        col = get_scorer(s).column
        top = by_item[col].transform("max") == scores[col]
        items[f"pred_{s}"] = scores[top].groupby("item")["option_index"].min().reindex(items["item"]).to_numpy()
        items[f"correct_{s}"] = items[f"pred_{s}"] == items["gold"]
        items[f"tie_{s}"] = (top.groupby(scores["item"]).sum() > 1).reindex(items["item"]).to_numpy()
    items["lm_eval_target"] = [d.target for d in docs]
    for m in dict.fromkeys(m for d in docs for m in d.metrics):
        items[f"lm_eval_{m}"] = [d.metrics.get(m, np.nan) for d in docs]
    items["truncated"] = by_item["truncated"].max().to_numpy()
    items["truncation_differs"] = (by_item["truncated"].max() != by_item["truncated"].min()).to_numpy()
    return items


def _disagreements(items: pd.DataFrame, scorers: list[str]) -> dict[str, list[Any]]:
    """Per harness metric the log holds per document and a scorer recomputes: the doc_ids where they differ."""
    out = {}
    for metric, scorer in METRIC_SCORERS.items():
        if scorer in scorers and f"lm_eval_{metric}" in items:
            logged = items[f"lm_eval_{metric}"]
            differ = logged.notna() & ((logged == 1.0) != items[f"correct_{scorer}"])
            if differ.any():
                out[metric] = items.loc[differ, "id"].tolist()
    return out


def _hash_matches(records: list[tuple[int, dict[str, Any]]], expected: str | None) -> bool | None:
    """Whether the log's per-document hashes give the task hash its results file records (the harness's
    ``task_hashes``: sha256 of the concatenated doc, prompt and target hashes); None when it cannot be told."""
    if not expected or not all(k in rec for _, rec in records for k in ("doc_hash", "prompt_hash", "target_hash")):
        return None
    joined = "".join(rec["doc_hash"] + rec["prompt_hash"] + rec["target_hash"] for _, rec in records)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest() == expected


def logprob_note(check: Mapping[str, Any]) -> str:
    """The model's check against the log (``meta["logprob_check"]``) in one sentence."""
    if check["agrees"]:
        return f"LM re-scored: agrees with the log within {check['max_abs_diff']:.1e} nats"
    return (f"LM re-scored: differs from the log by up to {check['max_abs_diff']:.3g} nats (tolerance "
            f"{check['tolerance']:g}): lm is not the log's model, or runs in another dtype; the lm column keeps the "
            "logged values (surfacelab's are in surfacelab_logprob)")


def log_notes(meta: Mapping[str, Any], *, problems_only: bool = False) -> list[str]:
    """What a log run's table does not show, one sentence each, its text from the files made printable: the
    model's check against the log (``lm=``), documents whose logged metric the logged numbers do not give, a task
    hash that does not match, scorers left out and samples files passed over. ``problems_only`` leaves out a check
    that agrees (the warnings say the rest)."""
    out = []
    check = meta.get("logprob_check")
    if check and not math.isnan(check["max_abs_diff"]) and not (problems_only and check["agrees"]):
        out.append(logprob_note(check))
    for metric, ids in meta.get("lm_eval_disagreements", {}).items():
        shown = ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "")
        out.append(f"the logged {metric} differs from the one recomputed from the logged log-likelihoods for "
                   f"{len(ids)} documents (doc_id {shown})")
    if meta.get("task_hash_matches") is False:
        out.append("the log's document hashes do not give the task hash of the results file beside it (edited, or "
                   "written by another run)")
    out += [f"left out {why}" for why in meta.get("scorers_left_out", {}).values()]
    out += [f"passed over {Path(p['file']).name}: {p['why']}" for p in meta.get("passed_over", [])]
    return [printable(line) for line in out]


def _warn(file: Path, meta: dict[str, Any]) -> None:
    """One warning per thing that does not add up or was left out (``log_notes``)."""
    for note in log_notes(meta, problems_only=True):
        warnings.warn(f"{printable(file.name)}: {note}", stacklevel=3)
