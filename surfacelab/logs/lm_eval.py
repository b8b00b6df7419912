"""The lm-evaluation-harness reader: what ``lm_eval --log_samples`` (lm-eval 0.4.x) wrote, read as untrusted files:
which samples log a path names, the results file of the same run, and each line checked into a ``LogDoc``; ``read``
gives the ``LogTask`` that ``logs.run`` turns into a run.

Layout read (what ``EvaluationTracker.save_results_samples`` writes): one JSON object per line and document
with ``doc_id``, ``doc``, ``target`` (the gold as text: an index or the gold choice), ``arguments``
(``{"gen_args_<i>": {"arg_0": context, "arg_1": delimiter + choice}}``), ``resps`` / ``filtered_resps``
(``[log-likelihood, is-greedy]`` as strings), ``filter``, ``metrics`` (the names of the per-document metrics,
each also a key: ``acc``, ``acc_norm``, ...) and ``doc_hash`` / ``prompt_hash`` / ``target_hash``. Beside it,
``results_<date>.json`` (same date) names the model, its arguments, the task's configuration (output type,
target delimiter, split) and the aggregate scores. A file is data only: it is parsed as JSON, nothing in it runs.

A log may come from anyone: only regular files are read, at most ``SAMPLES_MAX_BYTES`` / ``RESULTS_MAX_BYTES``
(``surfacelab.files``: a FIFO or a link to ``/dev/zero`` is refused by name, lines end at ``\\n`` only); every
field surfacelab uses is checked for the type lm-eval writes, and every logged log-likelihood is a finite number
<= 0. A refusal is a ``ValueError`` naming the file, the line, the doc_id and the field.
"""

from __future__ import annotations

import math
import re
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._checks import is_int, is_number
from ..files import json_lines, read_json
from ..tasks.harness import METRIC_SCORERS
from .records import TYPE_NAMES, LogDoc, LogTask, kind_of, short

#: ``samples_<task>_<date>.jsonl``: the date is the ``date_id`` shared with ``results_<date>.json``.
SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
#: The keys every line of a samples log has, whatever the task.
REQUIRED = ("doc_id", "target", "arguments", "filtered_resps")
#: How far above 0 a logged log-likelihood may be (a near-certain continuation's sum rounded in the model's dtype);
#: above that, or not finite, it is no log-likelihood and the log is refused.
POSITIVE_TOL = 1e-4
#: The largest samples log read (bytes). A whole MMLU subject is a few MB; the largest single-task logs (5-shot MMLU
#: with chat templates, HellaSwag's 10k documents) are 100-200 MB: ten times that still reads, a symlink to a disk
#: image does not.
SAMPLES_MAX_BYTES = 2 * 2 ** 30
#: The largest results file read (bytes): a whole ``--tasks mmlu`` run's (57 subjects, their groups and configs) is
#: about 1 MB.
RESULTS_MAX_BYTES = 64 * 2 ** 20
#: How deep a results file may nest (lm-eval's nest 4-5 levels; its task configs end up in ``meta``, which is written
#: out again as JSON).
RESULTS_MAX_DEPTH = 32
#: Settings of ``results_<date>.json`` a run keeps (the model's, the run's and the versions).
RESULT_KEYS = ("config", "model_name", "model_source", "lm_eval_version", "transformers_version", "git_hash", "date",
               "max_length", "chat_template", "system_instruction", "fewshot_as_multiturn")
#: The parts of a results file surfacelab reads: key -> (the type of each value per task, what it is).
RESULTS_LAYOUT = {"configs": (dict, "configuration"), "results": (dict, "aggregate scores"),
                  "task_hashes": (str, "hash")}


# ----------------------------------------------------------------------------- finding the files
@dataclass
class FoundLog:
    """The samples log a path names, its task, and the results file of the same run (``results``: {} if none)."""

    file: Path
    task: str
    results: dict[str, Any]
    results_file: Path | None
    passed_over: list[dict[str, str]]  # {"file", "why"} of each samples file of the folder not read


def find_log(path: str | Path, task: str | None) -> FoundLog:
    """The one samples log ``path`` names (a file, or the multiple_choice one in a folder), with its results file;
    what a folder holds beside it and is not read is listed in ``passed_over``."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a file or folder path, got {type(path).__name__}")
    p = Path(path).expanduser()
    if not p.exists():
        raise ValueError(f"path: {str(p)!r} does not exist{' (a broken link)' if p.is_symlink() else ''}")
    if not p.is_dir():  # a regular file, or what read_records refuses by name (a FIFO, a device)
        m = SAMPLES_NAME.match(p.name)
        if task is not None and m and m["task"] != task:
            raise ValueError(f"task: {task!r} is not the task of {str(p)!r} ({m['task']!r})")
        return _found(p, m["task"] if m else p.stem, m["date"] if m else "", {})
    named = sorted(p.rglob("samples_*.jsonl"))
    passed = [{"file": str(f), "why": "not named samples_<task>_<date>.jsonl, as lm_eval --log_samples names its logs"}
              for f in named if not SAMPLES_NAME.match(f.name)]
    logs = [(f, m) for f in named if (m := SAMPLES_NAME.match(f.name))]
    if not logs:
        raise ValueError(f"path: the folder {str(p)!r} holds no samples_<task>_<date>.jsonl file of lm_eval "
                         "--log_samples")
    if task is not None:
        logs = [(f, m) for f, m in logs if m["task"] == task]
        if not logs:
            raise ValueError(f"task: no samples log of {task!r} in {str(p)!r}")
    read: dict[tuple[Path, str], tuple[dict[str, Any], Path | None]] = {}  # one run's results file, read once
    found = [_found(f, m["task"], m["date"], read) for f, m in logs]
    if task is None:
        kinds = [(f, *_output_type(f)) for f in found]
        passed += [{"file": str(f.file), "why": f"the log of a {kind} task ({why}); surfacelab reads multiple_choice "
                                                "logs only"} for f, kind, why in kinds if kind != "multiple_choice"]
        found = [f for f, kind, _ in kinds if kind == "multiple_choice"]
        if not found:
            raise ValueError(f"path: the folder {str(p)!r} holds only logs of generation or perplexity tasks; "
                             "surfacelab reads multiple_choice logs only")
    if len(found) > 1:
        names = ", ".join(str(f.file.relative_to(p)) for f in found)
        hint = "pass one file as path" if len({f.task for f in found}) == 1 else "pass task= or one file as path"
        raise ValueError(f"path: the folder {str(p)!r} holds {len(found)} samples logs ({names}): {hint}")
    found[0].passed_over = passed
    return found[0]


def _found(file: Path, task: str, date: str, read: dict[tuple[Path, str], Any]) -> FoundLog:
    """A samples log with the results file of its run (``read``: the results files read so far, by folder and date)."""
    if (file.parent, date) not in read:
        read[file.parent, date] = _results_for(file, date)
    return FoundLog(file, task, *read[file.parent, date], passed_over=[])


def _output_type(found: FoundLog) -> tuple[str, str]:
    """The task's output type and how it is known: as its results file says, else as its first line shows
    (unknown: multiple_choice, so that reading the file names what is wrong)."""
    kind = task_config(found.results, found.results_file, found.task).get("output_type")
    if kind:
        return kind, f"says {found.results_file.name}"
    try:
        _, first = next(json_lines(found.file, cap=SAMPLES_MAX_BYTES, where="samples log"))
        args = first["arguments"]["gen_args_0"]
    except (ValueError, KeyError, TypeError, StopIteration):
        return "multiple_choice", ""
    if isinstance(args, dict) and isinstance(args.get("arg_1"), dict):
        return "generate_until", "its requests hold generation settings"
    return "multiple_choice", ""


def _results_for(file: Path, date: str) -> tuple[dict[str, Any], Path | None]:
    """The ``results_<date>.json`` (or ``<name>_<date>.json``) written by the same run, read and checked; ({}, None)
    if there is none. A JSON file of that date that is no results file (no ``configs``) is passed over."""
    if not date:
        return {}, None
    for cand in sorted(file.parent.glob(f"*_{date}.json")):
        if cand.name.startswith("samples_"):
            continue
        doc = read_json(cand, cap=RESULTS_MAX_BYTES, where=f"path: {str(cand)!r}", max_depth=RESULTS_MAX_DEPTH)
        if isinstance(doc, dict) and "configs" in doc:
            return _checked_results(doc, cand), cand
    return {}, None


def _checked_results(doc: dict[str, Any], file: Path) -> dict[str, Any]:
    """A results file whose parts surfacelab reads have the types lm-eval writes (else a ValueError naming the file
    and the field)."""
    where = f"path: {str(file)!r} (the results file beside the log)"
    for key, (kind, what) in RESULTS_LAYOUT.items():
        part = doc.get(key, {})
        if not isinstance(part, dict):
            raise ValueError(f"{where}: {key} is {kind_of(part)}, not an object holding each task's {what}")
        bad = next((t for t, v in part.items() if not isinstance(v, kind)), None)
        if bad is not None:
            raise ValueError(f"{where}: {key}.{bad} is {kind_of(part[bad])}, not {TYPE_NAMES[kind]} (the task's "
                             f"{what})")
    if not isinstance(doc.get("n-shot", {}), dict):
        raise ValueError(f"{where}: n-shot is {kind_of(doc['n-shot'])}, not an object holding each task's few-shot "
                         "count")
    if not isinstance(doc.get("model_name", ""), str):
        raise ValueError(f"{where}: model_name is {kind_of(doc['model_name'])}, not a string")
    return doc


def task_config(results: dict[str, Any], file: Path | None, task: str) -> dict[str, Any]:
    """The task's configuration from its results file, its fields surfacelab reads checked ({} when none)."""
    config = results.get("configs", {}).get(task, {})
    for key in ("output_type", "target_delimiter"):
        if key in config and not isinstance(config[key], str):
            raise ValueError(f"path: {str(file)!r} (the results file beside the log): configs.{task}.{key} is "
                             f"{kind_of(config[key])}, not a string")
    return config


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
    """The log-likelihood of ``filtered_resps[k]`` (``[ll, is_greedy]`` as strings, or numbers): a finite number at
    most ``POSITIVE_TOL``, as a model gives."""
    value = resp[0] if isinstance(resp, list) and len(resp) == 2 else None
    try:
        ll = float(value) if isinstance(value, str) or is_number(value) else None
    except (ValueError, OverflowError):  # not a number; an integer past a float's range
        ll = None
    if ll is None:
        raise ValueError(f"{where}: unknown layout: filtered_resps[{k}] is {kind_of(resp)}, not [log-likelihood, "
                         "is-greedy]")
    if not math.isfinite(ll):
        raise ValueError(f"{where}: filtered_resps[{k}] logs the log-likelihood {short(value)}, which is not "
                         "finite (a model's log-likelihood is a finite number <= 0)")
    if ll > POSITIVE_TOL:
        raise ValueError(f"{where}: filtered_resps[{k}] logs the log-likelihood {short(value)} > 0 (a "
                         "log-likelihood is the log of a probability: at most 0)")
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
    if SAMPLES_NAME.match(path.name) or (path.name.startswith("results_") and path.suffix == ".json"):
        return True
    if path.suffix != ".jsonl":
        return False
    try:
        _, first = next(json_lines(path, cap=SAMPLES_MAX_BYTES, where="samples log"))
    except (ValueError, StopIteration, OSError):
        return True  # read it as a log, which says what is wrong with it
    return isinstance(first, dict) and "doc_id" in first and "arguments" in first


def read(path: str | Path, task: str | None = None, filter_name: str | None = None) -> LogTask:
    """The ``LogTask`` of the multiple_choice samples log ``path`` names (a file, or the one in a folder; ``task``
    picks one of several), its documents under one harness filter (``filter_name`` when the log holds several)."""
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
    reported = results.get("results", {}).get(task_name, {})
    metrics = sorted({m for d in docs for m in d.metrics})
    settings = {"config": config, "filter": filt, "n_shot": results.get("n-shot", {}).get(task_name),
                **{k: results[k] for k in RESULT_KEYS if k in results}}
    files = [str(file)] + ([str(found.results_file)] if found.results_file else [])
    return LogTask(reader="lm-eval", task=task_name, docs=docs, delimiter=delimiter,
                   split=str(config.get("test_split") or config.get("validation_split") or ""),
                   model=str(results.get("model_name", "")), files=files,
                   aggregates={m: as_float(reported.get(f"{m},{filt}")) for m in metrics},
                   metric_scorers=dict(METRIC_SCORERS), settings=settings,
                   checks={"hash_matches": hash_matches(records, results.get("task_hashes", {}).get(task_name)),
                           "passed_over": found.passed_over})


def hash_matches(records: list[tuple[int, dict[str, Any]]], expected: str | None) -> bool | None:
    """Whether the log's per-document hashes give the task hash its results file records (the harness's
    ``task_hashes``: sha256 of the concatenated doc, prompt and target hashes); None when it cannot be told."""
    if not expected or not all(k in rec for _, rec in records for k in ("doc_hash", "prompt_hash", "target_hash")):
        return None
    joined = "".join(rec["doc_hash"] + rec["prompt_hash"] + rec["target_hash"] for _, rec in records)
    return hashlib.sha256(joined.encode("utf-8")).hexdigest() == expected
