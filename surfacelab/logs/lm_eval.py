"""The lm-evaluation-harness reader: what ``lm_eval --log_samples`` (lm-eval 0.4.x) wrote, read as untrusted files:
the run a path names (``lm_eval_files``: its multiple-choice tasks, the groups over them and its results file), each
samples line checked into a ``LogDoc``; ``read`` gives the ``LogRun`` that ``logs.run`` turns into a run.

Layout read (what ``EvaluationTracker.save_results_samples`` writes): one JSON object per line and document
with ``doc_id``, ``doc``, ``target`` (the gold as text: an index or the gold choice), ``arguments``
(``{"gen_args_<i>": {"arg_0": context, "arg_1": delimiter + choice}}``), ``resps`` / ``filtered_resps``
(``[log-likelihood, is-greedy]`` as strings), ``filter``, ``metrics`` (the names of the per-document metrics,
each also a key: ``acc``, ``acc_norm``, ...) and ``doc_hash`` / ``prompt_hash`` / ``target_hash``. Beside it,
``results_<date>.json`` (same date) names the model, its arguments, each task's configuration (output type,
target delimiter, split), the aggregate scores of every task and group (``results``, ``groups``), the groups'
members (``group_subtasks``), the chat template and the lm-eval version. A file is data only: it is parsed as JSON,
nothing in it runs.

A log may come from anyone: only regular files are read, at most ``SAMPLES_MAX_BYTES`` / ``RESULTS_MAX_BYTES``
(``surfacelab.files``: a FIFO or a link to ``/dev/zero`` is refused by name, lines end at ``\\n`` only); every
field surfacelab uses is checked for the type lm-eval writes, and every logged log-likelihood is a finite number
<= 0. A refusal is a ``ValueError`` naming the file, the line, the doc_id and the field.
"""

from __future__ import annotations

import math
import re
import hashlib
from pathlib import Path
from typing import Any

from .._checks import is_int, is_number
from ..files import head, json_lines, read_json
from ..task_groups import task_leaves
from ..tasks.harness import METRIC_SCORERS
from .lm_eval_files import (RESULTS_MAX_BYTES, SAMPLES_MAX_BYTES, SAMPLES_NAME, FoundRun, Samples, find_run,
                            task_config)
from .records import LogDoc, LogGroup, LogRun, LogTask, kind_of, short
#: The keys every line of a samples log has, whatever the task.
REQUIRED = ("doc_id", "target", "arguments", "filtered_resps")
#: How far above 0 a logged log-likelihood may be (a near-certain continuation's sum rounded in the model's dtype);
#: above that, or not finite, it is no log-likelihood and the log is refused.
POSITIVE_TOL = 1e-4
#: Settings of ``results_<date>.json`` a run keeps (the model's, the run's and the versions).
RESULT_KEYS = ("config", "model_name", "model_source", "lm_eval_version", "transformers_version", "git_hash", "date",
               "max_length", "chat_template", "system_instruction", "fewshot_as_multiturn")
#: How close a group's logged score must be to a mean of its tasks' logged scores to tell how lm-eval averaged it.
SAME_MEAN = 1e-9


def as_float(value: Any) -> float:
    """A JSON number as a float; NaN for anything else (a metric logged as "N/A", a number past a float's range)."""
    try:
        return float(value) if is_number(value) else math.nan
    except OverflowError:
        return math.nan


# ----------------------------------------------------------------------------- reading a samples log
def read_records(file: Path) -> list[tuple[int, dict[str, Any]]]:
    """(1-based line, record) of every non-blank line, each checked for the keys and types of an lm-eval 0.4
    samples line (``check_record``); a file that is not a samples log is refused, by name."""
    where = f"path: {str(file)!r}"
    if file.suffix == ".json" and not SAMPLES_NAME.match(file.name):
        doc = read_json(file, cap=RESULTS_MAX_BYTES, where=where)
        if isinstance(doc, dict) and "results" in doc and "configs" in doc:
            raise ValueError(f"{where} is lm-eval's results file (aggregate scores), not a samples log of lm_eval "
                             "--log_samples; pass the samples_<task>_<date>.jsonl beside it, or its folder")
    out = [(n, check_record(rec, n, where)) for n, rec in json_lines(file, cap=SAMPLES_MAX_BYTES, where=where)]
    if not out:
        raise ValueError(f"{where} is empty")
    return out


def check_record(rec: Any, line: int, where: str) -> dict[str, Any]:
    """One samples line, checked: an object with lm-eval 0.4's keys, and its fields surfacelab reads of the types
    lm-eval writes (the requests and numbers are ``parse_doc``'s)."""
    if not isinstance(rec, dict) or ("doc_id" not in rec and "arguments" not in rec):
        raise ValueError(f"{where} is not a samples log of lm_eval --log_samples (line {line} is not an object with "
                         "doc_id and arguments)")
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise ValueError(f"{where} has an unknown layout: line {line} lacks {', '.join(missing)} (an lm-eval 0.4 "
                         f"samples line has {', '.join(REQUIRED)})")
    at = f"{where} line {line}"
    if not (is_int(rec["doc_id"]) or isinstance(rec["doc_id"], str)):
        raise ValueError(f"{at}: doc_id is {kind_of(rec['doc_id'])}, not an integer or a string")
    at += f" (doc_id {short(rec['doc_id'])})"
    for key, kind, what in (("filter", str, "a string"), ("metrics", list, "a list of metric names"),
                            ("doc_hash", str, "a string"), ("prompt_hash", str, "a string"),
                            ("target_hash", str, "a string")):
        if key in rec and not isinstance(rec[key], kind):
            raise ValueError(f"{at}: {key} is {kind_of(rec[key])}, not {what}")
    bad = next((m for m in rec.get("metrics", []) if not isinstance(m, str)), None)
    if bad is not None:
        raise ValueError(f"{at}: metrics holds {kind_of(bad)}, not a metric name (a string)")
    return rec


def one_filter(records: list[tuple[int, dict[str, Any]]], file: Path,
               filter_name: str | None) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """The records of one harness filter (each document is logged once per filter), each doc_id once."""
    names = list(dict.fromkeys(rec.get("filter", "none") for _, rec in records))
    if filter_name is None and len(names) > 1:
        raise ValueError(f"filter_name: {str(file)!r} logs each document under {len(names)} filters ({names}); pass "
                         "one of them")
    name = names[0] if filter_name is None else filter_name
    if name not in names:
        raise ValueError(f"filter_name: {name!r} is not in {str(file)!r} (its filters: {names})")
    kept = [(n, rec) for n, rec in records if rec.get("filter", "none") == name]
    seen: dict[Any, int] = {}
    for n, rec in kept:
        key = (type(rec["doc_id"]) is str, rec["doc_id"])
        if key in seen:
            raise ValueError(f"path: {str(file)!r} logs doc_id {short(rec['doc_id'])} twice (lines {seen[key]} and "
                             f"{n}): two runs appended to one file?")
        seen[key] = n
    return kept, name


# ----------------------------------------------------------------------------- one document
def parse_doc(rec: dict[str, Any], line: int, file: Path, delimiter: str) -> LogDoc:
    """A line's requests and numbers, checked: a generation, perplexity or multi-gold log is refused, and so is a
    log-likelihood that is not a finite number <= 0."""
    where = f"path: {str(file)!r} line {line} (doc_id {short(rec['doc_id'])})"
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
    metrics = {m: as_float(rec.get(m)) for m in rec.get("metrics", [])}
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
    target = rec["target"]
    if isinstance(target, list):
        raise ValueError(f"{where}: several gold answers (target {kind_of(target)}); surfacelab's runs have one gold")
    if not (is_int(target) or isinstance(target, str)):
        raise ValueError(f"{where}: target is {kind_of(target)}, not an option index or the gold choice")
    gold = _gold(str(target), options, delimiter, where)
    return LogDoc(rec["doc_id"], contexts, options, lls, null_lls, gold, str(target), metrics)


def _loglikelihood(resp: Any, where: str, k: int) -> float:
    """The log-likelihood of ``filtered_resps[k]`` (``[ll, is_greedy]`` as strings, or numbers)."""
    value = resp[0] if isinstance(resp, list) and len(resp) == 2 else None
    if not (isinstance(value, str) or is_number(value)) or number(value) is None:
        raise ValueError(f"{where}: unknown layout: filtered_resps[{k}] is {kind_of(resp)}, not [log-likelihood, "
                         "is-greedy]")
    return loglikelihood_value(value, f"{where}: filtered_resps[{k}]")


def number(value: Any) -> float | None:
    """A number or a numeral as a float (inf and nan included); None for anything else (an integer past a float's
    range too)."""
    try:
        return float(value) if isinstance(value, str) or is_number(value) else None
    except (ValueError, OverflowError):
        return None


def loglikelihood_value(value: Any, at: str) -> float:
    """A logged log-likelihood as a float: a finite number at most ``POSITIVE_TOL``, as a model gives (``at``: the
    file, row and field, for the message)."""
    ll = number(value)
    if ll is None:
        raise ValueError(f"{at} is {kind_of(value)}, not a log-likelihood (a number)")
    if not math.isfinite(ll):
        raise ValueError(f"{at} logs the log-likelihood {short(value)}, which is not finite (a model's "
                         "log-likelihood is a finite number <= 0)")
    if ll > POSITIVE_TOL:
        raise ValueError(f"{at} logs the log-likelihood {short(value)} > 0 (a log-likelihood is the log of a "
                         "probability: at most 0)")
    return ll


def _gold(target: str, options: list[str], delimiter: str, where: str) -> int:
    """The gold option's index from the logged target: an index, or the gold choice's text."""
    if re.fullmatch(r"-?[0-9]+", target.strip()):
        if len(target.strip().lstrip("-")) > 9 or not 0 <= int(target) < len(options):  # int() of 5000 digits raises
            raise ValueError(f"{where}: the target {short(target)} is not an option index (the document has "
                             f"{len(options)} options)")
        return int(target)
    for text in (target, delimiter + target):
        if text in options:
            return options.index(text)
    if target.startswith("["):
        raise ValueError(f"{where}: several gold answers (target {short(target)}); surfacelab's runs have one gold")
    raise ValueError(f"{where}: the target {short(target)} is neither an option index nor one of the options")


# ----------------------------------------------------------------------------- the reader
def detect(path: Path) -> bool:
    """Whether ``path`` looks like lm-eval's output: a folder holding ``samples_<task>_<date>.jsonl`` logs, such a
    file, lm-eval's results file (read to say what to pass instead), or a JSON Lines file whose first line has
    lm-eval's ``doc_id`` and ``arguments`` (a log renamed)."""
    if path.is_dir():
        return any(SAMPLES_NAME.match(f.name) for f in path.rglob("samples_*.jsonl"))
    if SAMPLES_NAME.match(path.name):
        return True
    if path.name.startswith("results_") and path.suffix == ".json":
        return b'"config_general"' not in head(path)  # lighteval's results file starts with it
    if path.suffix != ".jsonl":
        return False
    try:
        _, first = next(json_lines(path, cap=SAMPLES_MAX_BYTES, where="samples log"))
    except (ValueError, StopIteration, OSError):
        return True  # read it as a log, which says what is wrong with it
    return isinstance(first, dict) and "doc_id" in first and "arguments" in first


def read(path: str | Path, task: str | None = None, filter_name: str | None = None) -> LogRun:
    """The ``LogRun`` of the multiple_choice samples logs ``path`` names (a file, or the run in a folder: every task
    of it, or the task or group ``task`` names), each task's documents under one harness filter (``filter_name``
    when a log holds several), with the groups over them."""
    found = find_run(path, task)
    tasks = [read_task(s, found, filter_name) for s in found.samples]
    results = found.results
    filt = tasks[0].settings["filter"]
    groups = [_group(g, results, {t.task: t for t in tasks}, filt) for g in found.groups]
    chat = {"applied": results["chat_template"] is not None if "chat_template" in results else None,
            "template": results.get("chat_template"), "system_prompt": results.get("system_instruction"),
            "fewshot_as_multiturn": results.get("fewshot_as_multiturn")}
    return LogRun(reader="lm-eval", tasks=tasks, groups=groups, name=found.name,
                  model=str(results.get("model_name", "")),
                  files=[str(found.results_file)] if found.results_file else [],
                  settings={k: results[k] for k in RESULT_KEYS if k in results}, chat=chat,
                  checks={"passed_over": found.passed_over, "groups_left_out": found.groups_left_out})


def read_task(samples: Samples, found: FoundRun, filter_name: str | None) -> LogTask:
    """One task's ``LogTask``: its samples log read and checked, with what the results file says of it."""
    file, name, results = samples.file, samples.task, found.results
    config = task_config(results, found.results_file, name)
    records = read_records(file)
    records, filt = one_filter(records, file, filter_name)
    delimiter = config.get("target_delimiter", " ")
    docs = [parse_doc(rec, line, file, delimiter) for line, rec in records]
    aggregates, stderrs = reported(results.get("results", {}).get(name, {}), filt)
    settings = {"config": config, "filter": filt, "n_shot": results.get("n-shot", {}).get(name),
                "version": results.get("versions", {}).get(name)}
    return LogTask(task=name, docs=docs, delimiter=delimiter,
                   split=str(config.get("test_split") or config.get("validation_split") or ""),
                   files=[str(file)], aggregates=aggregates, stderrs=stderrs, metric_scorers=dict(METRIC_SCORERS),
                   settings=settings,
                   checks={"hash_matches": hash_matches(records, results.get("task_hashes", {}).get(name))})


def reported(entry: Any, filt: str) -> tuple[dict[str, float], dict[str, float]]:
    """The scores and standard errors a results entry (``results.<task>``, ``groups.<group>``) holds under the
    filter ``filt`` (keys ``<metric>,<filter>`` and ``<metric>_stderr,<filter>``), by metric; "N/A" is NaN."""
    scores, stderrs = {}, {}
    for key, value in (entry.items() if isinstance(entry, dict) else ()):
        metric, sep, f = str(key).rpartition(",")
        if not sep or f != filt:
            continue
        if metric.endswith("_stderr"):
            stderrs[metric.removesuffix("_stderr")] = as_float(value)
        else:
            scores[metric] = as_float(value)
    return scores, stderrs


def _group(name: str, results: dict[str, Any], tasks: dict[str, LogTask], filt: str) -> LogGroup:
    """A group with its logged scores and how lm-eval averaged its tasks: ``size`` (``weight_by_size``, lm-eval's
    default) unless its logged score is the plain mean of its tasks' logged scores and not the size-weighted one."""
    tree = results.get("group_subtasks", {})
    entry = results.get("groups", {}).get(name) or results.get("results", {}).get(name, {})
    aggregates, stderrs = reported(entry, filt)
    below = [tasks[t] for t in task_leaves(name, tree)]
    weighting = "size"
    for metric, value in aggregates.items():
        values = [t.aggregates.get(metric, math.nan) for t in below]
        sizes = [len(t.docs) for t in below]
        if math.isnan(value) or any(math.isnan(v) for v in values):
            continue
        by_size = sum(v * n for v, n in zip(values, sizes)) / sum(sizes)
        plain = sum(values) / len(values)
        if abs(by_size - plain) > SAME_MEAN:  # equal sizes (or scores) cannot tell the two apart
            weighting = "plain" if abs(value - plain) <= SAME_MEAN < abs(value - by_size) else "size"
            break
    return LogGroup(name=name, subtasks=list(tree.get(name, [])), weighting=weighting, aggregates=aggregates,
                    stderrs=stderrs)


def hash_matches(records: list[tuple[int, dict[str, Any]]], expected: str | None) -> bool | None:
    """Whether the log's per-document hashes give the task hash its results file records (the harness's
    ``task_hashes``: sha256 of the concatenated doc, prompt and target hashes); None when it cannot be told."""
    if not expected or not all(k in rec for _, rec in records for k in ("doc_hash", "prompt_hash", "target_hash")):
        return None
    joined = "".join(rec["doc_hash"] + rec["prompt_hash"] + rec["target_hash"] for _, rec in records)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest() == expected
