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

Layout read (what ``EvaluationTracker.save_results_samples`` writes): one JSON object per line and document
with ``doc_id``, ``doc``, ``target`` (the gold as text: an index or the gold choice), ``arguments``
(``{"gen_args_<i>": {"arg_0": context, "arg_1": delimiter + choice}}``), ``resps`` / ``filtered_resps``
(``[log-likelihood, is-greedy]`` as strings), ``filter``, ``metrics`` (the names of the per-document metrics,
each also a key: ``acc``, ``acc_norm``, ...) and ``doc_hash`` / ``prompt_hash`` / ``target_hash``. Beside it,
``results_<date>.json`` (same date) names the model, its arguments, the task's configuration (output type,
target delimiter, split) and the aggregate scores. A file is data only: it is parsed as JSON, nothing in it runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from .evaluate import EvalResult, accuracy_table, paired_table
from .scorers import SCORERS, check_scorers, get_scorer
from .scoring import option_table, result_meta, score_items
from .tasks.harness import METRIC_SCORERS, lm_eval_metric

if TYPE_CHECKING:
    from .models import LM

#: ``samples_<task>_<date>.jsonl``: the date is the ``date_id`` shared with ``results_<date>.json``.
SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
#: The keys every line of a samples log has, whatever the task.
REQUIRED = ("doc_id", "target", "arguments", "filtered_resps")
#: Largest |surfacelab log-prob - logged log-likelihood| still taken as "the same model" (fp32 batching noise).
LOGPROB_TOL = 1e-3
#: The template name an lm-eval log's run carries (its prompts are the harness's, read from the log).
TEMPLATE = "lm-eval log"
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
            ``--output_path`` folder or its ``<model>`` subfolder). Generation logs in a folder are passed over.
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
        differs from the logged one (also a warning).

    Raises:
        ValueError: naming ``path`` (missing, an empty folder, not a samples log, an unknown layout, a
            generation or perplexity task, several gold answers), ``task`` / ``filter_name`` (ambiguous or
            unknown), ``domain_premise`` (without ``lm``) or ``scorers`` (one the log cannot give).
    """
    if domain_premise is not None and lm is None:
        raise ValueError("domain_premise: scoring the domain condition needs a model: pass lm= as well")
    if domain_premise is not None and (not isinstance(domain_premise, str) or not domain_premise.strip()):
        raise ValueError(f"domain_premise: expected a non-blank string, got {domain_premise!r}")
    file, task_name, date = _samples_file(path, task)
    results, results_file = _results_for(file, date)
    config = (results or {}).get("configs", {}).get(task_name, {})
    if config.get("output_type", "multiple_choice") != "multiple_choice":
        raise ValueError(f"path: {str(file)!r} is the log of a {config['output_type']!r} task ({task_name}, says "
                         f"{results_file.name}); surfacelab reads multiple_choice logs only")
    records = _read_lines(file)
    records, filt = _one_filter(records, file, filter_name)
    delimiter = config.get("target_delimiter", " ")
    docs = [_parse_doc(rec, line, file, delimiter) for line, rec in records]
    raw = _raw_rows(docs, delimiter)
    checks: dict[str, Any] = {}
    if lm is not None:
        checks = _rescore(lm, raw, domain_premise, batch_size=batch_size, progress=progress)
    table = _ordered(option_table(raw, by="item"))
    scorers = _usable_scorers(table, scorers)
    scores = _keep_scorers(table, scorers)
    items = _items_frame(docs, scores, scorers, domain_premise or "")
    disagreements = _disagreements(items, scorers)
    metrics = sorted({m for d in docs for m in d.metrics})
    accuracy = accuracy_table(items, scorers, n_boot, seed)
    accuracy["lm_eval_metric"] = [lm_eval_metric(s) for s in scorers]
    accuracy["lm_eval_reports"] = [m in metrics for m in accuracy["lm_eval_metric"]]
    reported = (results or {}).get("results", {}).get(task_name, {})
    accuracy["lm_eval_value"] = [float(reported.get(f"{m},{filt}", np.nan)) if m else np.nan
                                 for m in accuracy["lm_eval_metric"]]
    meta = {
        "source": "lm-eval log", "files": [str(file)], "results_file": str(results_file) if results_file else None,
        "lm_eval_task": task_name, "lm_eval_task_config": config, "filter": filt, "target_delimiter": delimiter,
        "lm_eval_metrics": metrics, "lm_eval_disagreements": disagreements,
        "task_hash_matches": _hash_matches(records, (results or {}).get("task_hashes", {}).get(task_name)),
        "n_shot": (results or {}).get("n-shot", {}).get(task_name), "n_boot": n_boot, "seed": seed,
        **{f"lm_eval_{k}" if not k.startswith("lm_eval") else k: results[k] for k in RESULT_KEYS
           if results and k in results},
        **checks,
        **(result_meta(lm, scorers=scorers) if lm is not None else {"scorers": scorers}),
    }
    _warn(file, disagreements, checks, meta["task_hash_matches"])
    return EvalResult(task=task_name, split=config.get("test_split") or config.get("validation_split") or "",
                      model=str((results or {}).get("model_name", "")), template=TEMPLATE, scorers=scorers,
                      scores=scores, items=items, accuracy=accuracy, paired=paired_table(items, scorers), meta=meta)


# ----------------------------------------------------------------------------- finding and reading the files
def _samples_file(path: str | Path, task: str | None) -> tuple[Path, str, str]:
    """The one samples log ``path`` names (a file, or the multiple_choice one in a folder) with its task and date."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a file or folder path, got {type(path).__name__}")
    p = Path(path).expanduser()
    if not p.exists():
        raise ValueError(f"path: {str(p)!r} does not exist")
    if p.is_file():
        m = SAMPLES_NAME.match(p.name)
        if task is not None and m and m["task"] != task:
            raise ValueError(f"task: {task!r} is not the task of {str(p)!r} ({m['task']!r})")
        return p, m["task"] if m else p.stem, m["date"] if m else ""
    found = [(f, m) for f in sorted(p.rglob("samples_*.jsonl")) if (m := SAMPLES_NAME.match(f.name))]
    if not found:
        raise ValueError(f"path: the folder {str(p)!r} holds no samples_<task>_<date>.jsonl file of lm_eval "
                         "--log_samples")
    if task is not None:
        found = [(f, m) for f, m in found if m["task"] == task]
        if not found:
            raise ValueError(f"task: no samples log of {task!r} in {str(p)!r}")
    else:
        found = [(f, m) for f, m in found if _output_type(f, m["task"], m["date"]) == "multiple_choice"]
        if not found:
            raise ValueError(f"path: the folder {str(p)!r} holds only logs of generation or perplexity tasks; "
                             "surfacelab reads multiple_choice logs only")
    if len(found) > 1:
        names = ", ".join(str(f.relative_to(p)) for f, _ in found)
        hint = "pass one file as path" if len({m["task"] for _, m in found}) == 1 else "pass task= or one file as path"
        raise ValueError(f"path: the folder {str(p)!r} holds {len(found)} samples logs ({names}): {hint}")
    f, m = found[0]
    return f, m["task"], m["date"]


def _output_type(file: Path, task: str, date: str) -> str:
    """The task's output type as its results file says, else as its first line shows (unknown: multiple_choice,
    so that reading the file names what is wrong)."""
    results, _ = _results_for(file, date)
    kind = (results or {}).get("configs", {}).get(task, {}).get("output_type")
    if kind:
        return str(kind)
    try:
        with file.open(encoding="utf-8") as fh:
            first = json.loads(fh.readline())
        args = first["arguments"]["gen_args_0"]
    except (ValueError, KeyError, TypeError, OSError):
        return "multiple_choice"
    return "generate_until" if isinstance(args.get("arg_1"), dict) else "multiple_choice"


def _results_for(file: Path, date: str) -> tuple[dict[str, Any] | None, Path | None]:
    """The ``results_<date>.json`` (or ``<name>_<date>.json``) written by the same run, parsed; (None, None) if
    there is none or it is not a JSON object."""
    if not date:
        return None, None
    for cand in sorted(file.parent.glob(f"*_{date}.json")):
        if cand.name.startswith("samples_"):
            continue
        try:
            doc = json.loads(cand.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if isinstance(doc, dict) and "configs" in doc:
            return doc, cand
    return None, None


def _read_lines(file: Path) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line, record) of every non-blank line; a file that is not JSON Lines of samples is refused."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise ValueError(f"path: {str(file)!r} is not a samples log of lm_eval --log_samples (not UTF-8 "
                         "text)") from None
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            what = ("lm-eval's results file (aggregate scores)" if _is_results_file(file) else
                    f"not JSON Lines (line {n} is not a JSON value)")
            raise ValueError(f"path: {str(file)!r} is {what}, not a samples log of lm_eval --log_samples; pass the "
                             "samples_<task>_<date>.jsonl beside it, or its folder") from None
        if not isinstance(rec, dict) or ("doc_id" not in rec and "arguments" not in rec):
            raise ValueError(f"path: {str(file)!r} is not a samples log of lm_eval --log_samples (line {n} is not an "
                             "object with doc_id and arguments)")
        missing = [k for k in REQUIRED if k not in rec]
        if missing:
            raise ValueError(f"path: {str(file)!r} has an unknown layout: line {n} lacks {', '.join(missing)} (an "
                             f"lm-eval 0.4 samples line has {', '.join(REQUIRED)})")
        out.append((n, rec))
    if not out:
        raise ValueError(f"path: {str(file)!r} is empty")
    return out


def _is_results_file(file: Path) -> bool:
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except ValueError:
        return False
    return isinstance(doc, dict) and "results" in doc and "configs" in doc


def _one_filter(records: list[tuple[int, dict[str, Any]]], file: Path,
                filter_name: str | None) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """The records of one harness filter (each document is logged once per filter), each doc_id once."""
    names = list(dict.fromkeys(str(rec.get("filter", "none")) for _, rec in records))
    if filter_name is None and len(names) > 1:
        raise ValueError(f"filter_name: {str(file)!r} logs each document under {len(names)} filters ({names}); pass "
                         "one of them")
    name = names[0] if filter_name is None else filter_name
    if name not in names:
        raise ValueError(f"filter_name: {name!r} is not in {str(file)!r} (its filters: {names})")
    kept = [(n, rec) for n, rec in records if str(rec.get("filter", "none")) == name]
    seen: dict[Any, int] = {}
    for n, rec in kept:
        key = json.dumps(rec["doc_id"])
        if key in seen:
            raise ValueError(f"path: {str(file)!r} logs doc_id {rec['doc_id']!r} twice (lines {seen[key]} and {n}): "
                             "two runs appended to one file?")
        seen[key] = n
    return kept, name


# ----------------------------------------------------------------------------- one document
@dataclass
class _Doc:
    """One logged document: its requests, the logged log-likelihoods (and unconditional ones, for
    ``acc_mutual_info``), the gold option and the harness's own per-document metrics."""

    doc_id: Any
    contexts: list[str]
    options: list[str]
    lls: list[float]
    null_lls: list[float] | None
    gold: int
    target: str
    metrics: dict[str, float]


def _parse_doc(rec: dict[str, Any], line: int, file: Path, delimiter: str) -> _Doc:
    """A line's requests and numbers, checked: a generation, perplexity or multi-gold log is refused."""
    where = f"path: {str(file)!r} line {line} (doc_id {rec['doc_id']!r})"
    args, resps = rec["arguments"], rec["filtered_resps"]
    if not isinstance(args, dict) or not isinstance(resps, list) or not args:
        raise ValueError(f"{where}: unknown layout: arguments is not a gen_args_<i> mapping or filtered_resps not a "
                         "list")
    reqs = [args.get(f"gen_args_{i}") for i in range(len(args))]
    if not all(isinstance(r, dict) for r in reqs):
        raise ValueError(f"{where}: unknown layout: arguments has keys {sorted(args)}, not gen_args_0.."
                         f"gen_args_{len(args) - 1}")
    if any(isinstance(r.get("arg_1"), dict) for r in reqs):
        raise ValueError(f"{where}: a generation-task log (generate_until: the request holds generation settings, "
                         "not a continuation); surfacelab reads multiple_choice logs only")
    if not all(isinstance(r.get("arg_0"), str) and isinstance(r.get("arg_1"), str) for r in reqs):
        raise ValueError(f"{where}: not a multiple_choice log: a request lacks the (context, continuation) strings "
                         "arg_0 / arg_1 (a loglikelihood_rolling, perplexity, task?)")
    if len(resps) != len(reqs):
        raise ValueError(f"{where}: unknown layout: {len(reqs)} requests but {len(resps)} filtered_resps")
    lls = [_loglikelihood(r, where, k) for k, r in enumerate(resps)]
    metrics = {m: float(rec[m]) for m in rec.get("metrics", []) if _is_number(rec.get(m))}
    contexts, options = [r["arg_0"] for r in reqs], [r["arg_1"] for r in reqs]
    null_lls = None
    if "acc_mutual_info" in rec.get("metrics", []) and len(reqs) % 2 == 0:
        half = len(reqs) // 2  # the harness appends ("", delimiter + choice) for every choice
        if all(c == "" for c in contexts[half:]) and options[half:] == options[:half]:
            contexts, options, lls, null_lls = contexts[:half], options[:half], lls[:half], lls[half:]
    if len(options) < 2:
        raise ValueError(f"{where}: not a multiple_choice log: one continuation per document (a loglikelihood "
                         "task such as lambada)")
    if len(set(contexts)) > 1:
        raise ValueError(f"{where}: the options differ by context (a multiple_input task such as winogrande): the "
                         "gold option is not in the log, so surfacelab cannot read it")
    gold = _gold(str(rec["target"]), options, delimiter, where)
    return _Doc(rec["doc_id"], contexts, options, lls, null_lls, gold, str(rec["target"]), metrics)


def _loglikelihood(resp: Any, where: str, k: int) -> float:
    """The log-likelihood of ``filtered_resps[k]``: ``[ll, is_greedy]`` as strings (or numbers)."""
    value = resp[0] if isinstance(resp, list) and len(resp) == 2 else None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{where}: unknown layout: filtered_resps[{k}] is {resp!r}, not [log-likelihood, "
                         "is-greedy]") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _gold(target: str, options: list[str], delimiter: str, where: str) -> int:
    """The gold option's index from the logged target: an index, or the gold choice's text."""
    if re.fullmatch(r"-?\d+", target.strip()):
        gold = int(target)
        if not 0 <= gold < len(options):
            raise ValueError(f"{where}: the target {target!r} is not an option index (the document has "
                             f"{len(options)} options)")
        return gold
    for text in (target, delimiter + target):
        if text in options:
            return options.index(text)
    if target.startswith("["):
        raise ValueError(f"{where}: several gold answers (target {target!r}); surfacelab's runs have one gold")
    raise ValueError(f"{where}: the target {target!r} is neither an option index nor one of the options")


# ----------------------------------------------------------------------------- frames
def _raw_rows(docs: list[_Doc], delimiter: str) -> pd.DataFrame:
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


def _usable_scorers(table: pd.DataFrame, scorers: str | Sequence[str] | None) -> list[str]:
    """The scorers asked for (default: every one this table gives a finite score for every option), each checked."""
    finite = {s.name for s in SCORERS.values() if np.isfinite(table[s.column].to_numpy(dtype=float)).all()}
    if scorers is None:
        return [s for s in SCORERS if s in finite]
    chosen = check_scorers(scorers)
    for s in chosen:
        if s not in finite:
            needs = ("a domain premise: pass lm= and domain_premise=" if "domain" in get_scorer(s).needs else
                     "the model: pass lm=")
            raise ValueError(f"scorers: {s!r} cannot be computed from the log alone; it needs {needs}")
    return chosen


def _keep_scorers(table: pd.DataFrame, scorers: list[str]) -> pd.DataFrame:
    """The option table with only the selected scorers' columns and ranks (the raw columns stay), as ``evaluate``."""
    keep = {get_scorer(s).column for s in scorers} | {f"rank_{s}" for s in scorers}
    raw = {"logprob", "domain_logprob", "null_logprob"}
    dropped = {c for s in SCORERS.values() for c in (s.column, f"rank_{s.name}")} - keep - raw
    return table[[c for c in table.columns if c not in dropped]].copy()


def _items_frame(docs: list[_Doc], scores: pd.DataFrame, scorers: list[str], domain_premise: str) -> pd.DataFrame:
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


def _warn(file: Path, disagreements: dict[str, list[Any]], checks: dict[str, Any], hash_ok: bool | None) -> None:
    """One warning per thing that does not add up: recomputed metrics, the model's log-probs, the task hash."""
    for metric, ids in disagreements.items():
        shown = ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "")
        warnings.warn(f"{file.name}: the logged {metric} differs from the one recomputed from the logged "
                      f"log-likelihoods for {len(ids)} documents (doc_id {shown}); see "
                      "meta['lm_eval_disagreements']", stacklevel=3)
    check = checks.get("logprob_check")
    if check and not check["agrees"] and not math.isnan(check["max_abs_diff"]):
        warnings.warn(f"{file.name}: surfacelab's log-probs differ from the logged log-likelihoods by up to "
                      f"{check['max_abs_diff']:.3g} nats (tolerance {LOGPROB_TOL:g}): lm is not the log's model, or "
                      "runs in another dtype; the lm column keeps the logged values (surfacelab's are in "
                      "surfacelab_logprob)", stacklevel=3)
    if hash_ok is False:
        warnings.warn(f"{file.name}: its document hashes do not give the task hash of the results file beside it "
                      "(edited, or written by another run)", stacklevel=3)
