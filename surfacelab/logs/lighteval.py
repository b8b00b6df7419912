"""The lighteval reader: what ``lighteval ... --save-details`` (lighteval 0.13) wrote for multiple-choice
log-likelihood tasks, read as untrusted files; ``read`` gives the ``LogRun`` that ``logs.run`` turns into a run.

Layout read (``EvaluationTracker.save_details``): ``<output>/details/<model>/<date>/details_<task>_<date>.parquet``,
one row per document with three struct columns: ``doc`` (``query``: the prompt before lighteval's prompt manager,
``choices``: the continuations scored, with their leading space, ``gold_index``, ``id``, ``fewshot_samples``),
``model_response`` (``logprobs``: one summed log-likelihood per choice, ``input_tokens``: the context's token ids as
fed, ``output_tokens``, ``argmax_logits_eq_gold``, ``unconditioned_logprobs``) and ``metric`` (the task's per-document
metrics: ``acc``, ``acc_norm``, ...). Beside it, ``<output>/results/<model>/results_<date>.json``: ``config_general``
(the model's arguments: ``system_prompt``, ``override_chat_template``), ``results`` (each task's aggregates) and
``config_tasks`` (each metric's ``sample_level_fn``, which says what it normalises by).

What the files do not hold, and what is done about it:

* The text the model saw. lighteval applies the tokenizer's chat template on its own whenever the tokenizer has one
  (``override_chat_template`` null), and a system prompt or few-shot examples around ``doc.query``; the result is
  logged only as ``input_tokens``. Unless the run's settings say the model saw ``doc.query`` as it is (no chat
  template, no system prompt, no few-shot), the premises shown are ``doc.query`` and the run says so;
  ``from_log(lm=...)`` decodes ``input_tokens`` with the model's tokenizer to score the same text.
* Unconditioned log-probs. ``unconditioned_logprobs`` is always null in 0.13.0 (no backend fills it); lighteval's
  metrics read them from ``logprobs[n:2n]`` when a backend logs 2n values, and so does this reader. A value in
  ``unconditioned_logprobs`` is not read (said in the notes): 0.13.0 never writes one.
* The chat template itself (not recorded anywhere): ``LogRun.chat`` says whether it was applied where the settings
  tell (``override_chat_template: false``: not), else None.
* A version: the files carry none (``lighteval_sha`` is "?" for an installed package); the layout is the version, and
  details of another layout are refused naming the columns found.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

from .._checks import is_int, is_number
from ..files import head, read_bytes, read_json
from .lm_eval import loglikelihood_value
from .records import LogDoc, LogRun, LogTask, kind_of, short, some

#: ``details_<task>_<date>.parquet`` (the task holds ``|<n-shot>``: ``details_arc:challenge|0_<date>.parquet``).
DETAILS_NAME = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.parquet$")
#: The largest details file read (bytes): 5 documents of ARC are 14 KB; a 14k-document MMLU run with chat templates a
#: few hundred MB.
DETAILS_MAX_BYTES = 2 * 2 ** 30
#: The most bytes a details file may hold once decompressed (its metadata says), so that a small file cannot expand
#: into the whole memory.
DETAILS_MAX_UNCOMPRESSED = 4 * 2 ** 30
#: The largest results file read (bytes).
RESULTS_MAX_BYTES = 64 * 2 ** 20
#: The struct columns of a details file of lighteval 0.13.
COLUMNS = ("doc", "model_response", "metric")
#: Columns of the flat details layout of older lighteval releases (one column per field of their ``Detail`` record),
#: which this reader does not read: named in the refusal.
OLD_COLUMNS = ("full_prompt", "predictions", "pred_logits", "cont_tokens")
#: A metric's ``sample_level_fn`` as ``config_tasks`` writes it -> the surfacelab scorer that recomputes it per
#: document (LoglikelihoodAcc without normalisation: ``lm``; with LogProbCharNorm: ``per_char``).
METRIC_FNS = {r"LoglikelihoodAcc\(logprob_normalization=None\)": "lm",
              r"LoglikelihoodAcc\(logprob_normalization=LogProbCharNorm\(.*\)\)": "per_char"}


def detect(path: Path) -> bool:
    """Whether ``path`` looks like lighteval's output: a ``details_<task>_<date>.parquet``, a folder holding one, or
    lighteval's ``results_<date>.json`` (it starts with ``config_general``)."""
    if path.is_dir():
        return bool(_details_under(path))
    if DETAILS_NAME.match(path.name) or path.suffix == ".parquet":
        return True
    return path.suffix == ".json" and b'"config_general"' in head(path)


def _details_under(folder: Path) -> list[Path]:
    """Every ``details_*.parquet`` below ``folder`` (lighteval's model folder may sit under a hidden ``.cache``)."""
    return sorted(Path(root) / f for root, _, files in os.walk(folder) for f in files
                  if f.startswith("details_") and f.endswith(".parquet"))


def read(path: str | Path, task: str | None = None, filter_name: str | None = None) -> LogRun:
    """The ``LogRun`` of the details ``path`` names: a details file, a results file, or a folder holding one run's
    (every task of it, or the one ``task`` names: ``"arc:challenge|0"`` or ``"arc:challenge"``)."""
    if filter_name is not None:
        raise ValueError("filter_name: lighteval logs have no filters (it is lm-eval's)")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a file or folder path, got {type(path).__name__}")
    p = Path(path).expanduser()
    if not p.exists():
        raise ValueError(f"path: {str(p)!r} does not exist{' (a broken link)' if p.is_symlink() else ''}")
    files = _details_of(p)
    runs: dict[str, list[tuple[Path, str]]] = {}
    for f in files:
        m = DETAILS_NAME.match(f.name)
        runs.setdefault(m["date"] if m else "", []).append((f, m["task"] if m else f.stem))
    if task is not None:
        runs = {d: [(f, t) for f, t in fs if task in (t, t.rpartition("|")[0])] for d, fs in runs.items()}
        runs = {d: fs for d, fs in runs.items() if fs}
        if not runs:
            names = sorted({t for f in files if (m := DETAILS_NAME.match(f.name)) for t in [m["task"]]})
            raise ValueError(f"task: no details of {task!r} in {str(p)!r}; it holds {some(names, 4)}")
    if len(runs) > 1:
        raise ValueError(f"path: {str(p)!r} holds the details of {len(runs)} lighteval runs (dates "
                         f"{some(sorted(runs), 4)}): pass the folder of one date or one details file"
                         + ("" if task else ", or task="))
    (date, found), = runs.items()
    results_file = _results_file(found[0][0], date)
    results = _checked_results(results_file) if results_file else {}
    config = results.get("config_general", {}).get("model_config", {})
    tasks = [_task(f, name, results, config) for f, name in found]
    override = config.get("override_chat_template")
    return LogRun(reader="lighteval", tasks=tasks, model=str(config.get("model_name", "")),
                  files=[str(results_file)] if results_file else [],
                  settings={"config_general": results.get("config_general", {}),
                            "all": results.get("results", {}).get("all", {})},
                  chat={"applied": False if override is False else None, "template": None,
                        "system_prompt": config.get("system_prompt"), "fewshot_as_multiturn": None},
                  checks={"passed_over": [], "groups_left_out": []})


def _details_of(p: Path) -> list[Path]:
    """The details files ``p`` names: itself, those below it, or (a results file) those of its run."""
    if p.is_dir():
        found = _details_under(p)
        if not found:
            raise ValueError(f"path: the folder {str(p)!r} holds no details_<task>_<date>.parquet file of lighteval "
                             "--save-details")
        return found
    if p.suffix == ".json":  # results/<model>/results_<date>.json -> details/<model>/<date>/
        m = re.fullmatch(r"results_(.+)\.json", p.name)
        root = next((a for a in p.parents if a.name == "results"), None)
        details = root.parent / "details" / p.parent.relative_to(root) / m[1] if m and root else None
        found = _details_under(details) if details is not None and details.is_dir() else []
        if not found:
            raise ValueError(f"path: {str(p)!r} is lighteval's results file (aggregate scores); its per-document "
                             "details (details/<model>/<date>/details_<task>_<date>.parquet, written with "
                             "--save-details) are not beside it: pass their folder")
        return found
    return [p]


def _results_file(details: Path, date: str) -> Path | None:
    """``results/<model>/results_<date>.json`` of the run whose details are ``details/<model>/<date>/...``."""
    root = next((a for a in details.parents if a.name == "details"), None)
    if root is None or not date or details.parent.name != date:
        return None
    cand = root.parent / "results" / details.parent.parent.relative_to(root) / f"results_{date}.json"
    return cand if cand.exists() else None


def _checked_results(file: Path) -> dict[str, Any]:
    """lighteval's results file, its parts surfacelab reads of the layout lighteval 0.13 writes."""
    where = f"path: {str(file)!r} (the results file of the details)"
    doc = read_json(file, cap=RESULTS_MAX_BYTES, where=where, max_depth=32)
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), dict) for k in
                                            ("config_general", "results", "config_tasks")):
        raise ValueError(f"{where}: not lighteval's results layout (an object with config_general, results and "
                         "config_tasks objects)")
    for key in ("results", "config_tasks"):
        bad = next((t for t, v in doc[key].items() if not isinstance(v, dict)), None)
        if bad is not None:
            raise ValueError(f"{where}: {key}.{bad} is {kind_of(doc[key][bad])}, not an object")
    model = doc["config_general"].get("model_config", {})
    if not isinstance(model, dict):
        raise ValueError(f"{where}: config_general.model_config is {kind_of(model)}, not an object")
    for key in ("model_name", "system_prompt"):
        if model.get(key) is not None and not isinstance(model[key], str):
            raise ValueError(f"{where}: config_general.model_config.{key} is {kind_of(model[key])}, not a string")
    return doc


# ----------------------------------------------------------------------------- one task
def _task(file: Path, name: str, results: dict[str, Any], model: dict[str, Any]) -> LogTask:
    """One details file as a ``LogTask``: its rows checked, the metrics mapped to scorers by what they normalise."""
    rows = _rows(file)
    config = results.get("config_tasks", {}).get(name, {})
    metric_scorers, delimiter = _metrics(config)
    where = f"path: {str(file)!r}"
    docs = [_doc(row, k, where) for k, row in enumerate(rows)]
    ignored = sum(1 for row in rows if (row["model_response"] or {}).get("unconditioned_logprobs") is not None)
    reported = results.get("results", {}).get(name, {})
    aggregates = {m: float(v) for m, v in reported.items() if not m.endswith("_stderr") and is_number(v)}
    stderrs = {m.removesuffix("_stderr"): float(v) for m, v in reported.items() if m.endswith("_stderr")
               and is_number(v)}
    fewshot = config.get("num_fewshots", 0) or any(_shots(row) for row in rows)
    exact = model.get("override_chat_template") is False and not model.get("system_prompt") and not fewshot
    note = "" if exact else (
        "the premises are lighteval's doc.query; the model saw it through lighteval's prompt (the tokenizer's chat "
        "template unless override_chat_template=False, a system prompt, few-shot examples), which the log holds only "
        "as input_tokens: pass lm= to decode and score those")
    checks = {"unconditioned_logprobs_ignored": ignored,
              "metrics_unmapped": sorted({m for d in docs for m in d.metrics} - set(metric_scorers))}
    return LogTask(task=name, docs=docs, delimiter=delimiter, split=", ".join(map(str, config.get(
        "evaluation_splits", []))), files=[str(file)], aggregates=aggregates, stderrs=stderrs,
                   metric_scorers=metric_scorers, settings={"config": config}, checks=checks,
                   contexts_exact=exact, context_note=note)


def _rows(file: Path) -> list[dict[str, Any]]:
    """The rows of a details file as Python values, read from its bytes (a regular file under the size cap), its
    decompressed size and layout checked first."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError("reader: reading lighteval's parquet details needs pyarrow: pip install 'surfacelab[logs]'"
                         ) from None
    where = f"path: {str(file)!r}"
    data = read_bytes(file, cap=DETAILS_MAX_BYTES, where=where)
    try:
        pf = pq.ParquetFile(pa.BufferReader(data))
        size = sum(pf.metadata.row_group(i).total_byte_size for i in range(pf.metadata.num_row_groups))
        names = pf.schema_arrow.names
    except (pa.ArrowException, OSError, ValueError) as err:
        raise ValueError(f"{where} is not a parquet file pyarrow can read ({_first_line(err)})") from None
    if size > DETAILS_MAX_UNCOMPRESSED:
        raise ValueError(f"{where} holds {size:,} bytes once decompressed, over the {DETAILS_MAX_UNCOMPRESSED:,} "
                         "surfacelab reads from a details file")
    if not all(c in names for c in COLUMNS):
        which = ("the flat layout of an older lighteval (its Detail records: example, full_prompt, predictions, ...)"
                 if set(OLD_COLUMNS) & set(names) else "a layout surfacelab has not seen")
        raise ValueError(f"{where}: not the details layout of lighteval 0.13 (struct columns doc, model_response, "
                         f"metric); its columns are {some(names, 8)}: {which}")
    try:
        return pf.read(columns=list(COLUMNS)).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as err:
        raise ValueError(f"{where}: its data cannot be read ({_first_line(err)})") from None


def _first_line(err: Exception) -> str:
    """The first line of an error's message, at most 200 characters."""
    return short(str(err).split("\n")[0], 200)


def _metrics(config: dict[str, Any]) -> tuple[dict[str, str], str]:
    """The task's metrics a scorer recomputes (by their ``sample_level_fn``) and the delimiter a per-character
    length leaves out: "" (LogProbCharNorm counts the leading space) unless ``ignore_first_space=True``."""
    out, delimiter = {}, ""
    metrics = config.get("metrics", [])
    for m in metrics if isinstance(metrics, list) else []:
        fn, name = (m.get("sample_level_fn"), m.get("metric_name")) if isinstance(m, dict) else (None, None)
        if not isinstance(fn, str) or not isinstance(name, str):
            continue
        scorer = next((s for pattern, s in METRIC_FNS.items() if re.fullmatch(pattern, fn)), None)
        if scorer is not None and scorer not in out.values():
            out[name] = scorer
            if scorer == "per_char" and "ignore_first_space=True" in fn:
                delimiter = " "
    return out, delimiter


def _shots(row: dict[str, Any]) -> bool:
    doc = row.get("doc") or {}
    return isinstance(doc, dict) and bool(doc.get("fewshot_samples"))


def _doc(row: dict[str, Any], k: int, where: str) -> LogDoc:
    """Row ``k`` (0-based) checked into a ``LogDoc``: the fields lighteval writes, of their types, one gold, a
    finite log-likelihood <= 0 per choice (2n values: the last n are the unconditioned ones)."""
    doc, resp, metric = row["doc"], row["model_response"], row["metric"]
    at = f"{where} row {k}"
    for key, value in (("doc", doc), ("model_response", resp)):
        if not isinstance(value, dict):
            raise ValueError(f"{at}: {key} is {kind_of(value)}, not a struct")
    doc_id = doc.get("id") if doc.get("id") is not None else k
    if not isinstance(doc_id, (str, int)):
        raise ValueError(f"{at}: doc.id is {kind_of(doc_id)}, not a string")
    at += f" (doc.id {short(doc_id)})"
    query, choices, gold = doc.get("query"), doc.get("choices"), doc.get("gold_index")
    if not isinstance(query, str):
        raise ValueError(f"{at}: doc.query is {kind_of(query)}, not a string")
    if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) for c in choices):
        raise ValueError(f"{at}: doc.choices is {kind_of(choices)}, not a list of at least two strings (a "
                         "generation task's details?)")
    if isinstance(gold, list):
        if len(gold) != 1:
            raise ValueError(f"{at}: doc.gold_index {short(gold)} names {len(gold)} gold answers; surfacelab's runs "
                             "have one gold")
        gold = gold[0]
    if not is_int(gold) or not 0 <= gold < len(choices):
        raise ValueError(f"{at}: doc.gold_index is {kind_of(gold)}, not an index of its {len(choices)} choices")
    logprobs = resp.get("logprobs")
    n = len(choices)
    if not isinstance(logprobs, list) or len(logprobs) not in (n, 2 * n):
        raise ValueError(f"{at}: model_response.logprobs is {kind_of(logprobs)}, not one log-likelihood per choice "
                         f"({n}, or {2 * n} with the unconditioned ones)")
    lls = [loglikelihood_value(v, f"{at}: model_response.logprobs[{i}]") for i, v in enumerate(logprobs)]
    ids = resp.get("input_tokens")
    if ids is not None and not (isinstance(ids, list) and all(is_int(t) and t >= 0 for t in ids)):
        raise ValueError(f"{at}: model_response.input_tokens is {kind_of(ids)}, not a list of token ids")
    if not isinstance(metric, dict) or not all(isinstance(m, str) for m in metric):
        raise ValueError(f"{at}: metric is {kind_of(metric)}, not a struct of per-document metrics")
    metrics = {m: float(v) if is_number(v) and math.isfinite(float(v)) else math.nan for m, v in metric.items()
               if v is not None}
    return LogDoc(doc_id=doc_id, contexts=[query] * n, options=list(choices), lls=lls[:n],
                  null_lls=lls[n:] if len(lls) == 2 * n else None, gold=int(gold), target=str(gold), metrics=metrics,
                  context_ids=list(ids) if ids else None)

