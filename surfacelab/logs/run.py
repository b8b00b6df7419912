"""A log's task as a run: ``from_log`` turns the ``LogTask`` a reader (``READERS``) read into the ``EvalResult`` that
``evaluate`` returns, so the same tables, figures, the explorer and the workbench open it.

People arrive with a run of another framework on a large model, not with a surfacelab run. Browsing needs no model: the
log holds the exact (context, continuation) strings, the gold and the framework's own log-likelihoods, and the ``lm``,
``per_char`` (divided by the choice's length in characters, without the framework's delimiter: lm-eval's
``acc_norm``), ``per_byte`` and, when the framework logged unconditional requests, ``pmi_null`` scorers are computed
from those numbers. With ``lm=`` the same strings are scored again through :func:`surfacelab.scoring.score_items`,
under ``domain_premise`` too, which adds Unc, DC-PMI and Avg, and checks that surfacelab's log-prob equals the logged
one (same model, same dtype). The ``logprob`` column stays the logged value (so ``lm`` is the framework's accuracy
exactly) and DC-PMI is that minus surfacelab's domain log-prob; surfacelab's own is ``surfacelab_logprob``.

>>> import surfacelab as sl
>>> run = sl.from_log("out/my-model/samples_arc_challenge_2024-05-01T12-00-00.000001.jsonl")  # doctest: +SKIP
>>> run.accuracy[["scorer", "log_metric", "accuracy", "log_value"]]     # lm | acc | ...      # doctest: +SKIP
>>> run = sl.from_log("out/", lm=sl.load_lm(...), domain_premise=" the answer is:")            # doctest: +SKIP

What a run leaves out or does not add up is said once (``log_notes``: the warnings, the command line's notes and the
explorer's run line).
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .._format import printable
from ..runs import EvalResult, accuracy_table, items_frame, paired_table, scorer_columns
from ..scorers import SCORERS, check_scorers
from ..engine.requests import CONDITIONS, CUT_COLUMNS, LOGPROB_COLUMNS
from ..scoring import option_table, result_meta, score_items
from .readers import reader_for
from .records import LogDoc

if TYPE_CHECKING:
    from ..models import LM

#: Largest |surfacelab log-prob - logged log-likelihood| still taken as "the same model" (fp32 batching noise).
LOGPROB_TOL = 1e-3
#: ``meta["source"]`` of a run read from a log (``meta["reader"]`` names the framework).
LOG_SOURCE = "log"


def from_log(
    path: str | Path,
    *,
    reader: str | None = None,
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
    """An ``EvalResult`` from the per-document log another framework wrote for one multiple-choice task.

    Args:
        path: a log file, or a folder holding one (searched recursively: the output folder or its ``<model>``
            subfolder). Files of the folder that are not read are passed over with a warning
            (``meta["checks"]["passed_over"]``).
        reader: the framework's reader (``READERS``: "lm-eval", ...); None: the first whose ``detect`` knows ``path``.
        task: the framework's task to read when the folder holds several.
        lm: a loaded ``LM`` (in-process or on a server) to score the logged strings again: adds ``n_tokens``
            (Avg), ``null_logprob`` (PMI-null, unless the log has its own), the domain condition and the
            ``surfacelab_logprob`` column, checked against the logged log-likelihoods.
        domain_premise: the domain premise for Unc / DC-PMI (e.g. ``" the answer is:"``); needs ``lm``.
        scorers: scorer names (list or comma-separated); default: every scorer the log (and ``lm``) can give.
        filter_name: lm-eval's filter to read when the log holds several (multiple_choice tasks have one, "none").
        batch_size, progress: as in :func:`surfacelab.evaluate` (used with ``lm``).
        n_boot, seed: bootstrap resamples and seed of the accuracy CIs, as in :func:`surfacelab.evaluate`.

    Returns:
        An ``EvalResult`` shaped like ``evaluate``'s (no ``why`` verdict columns: those need the model's
        next-token distributions): ``scores`` holds the logged ``context`` / ``option`` strings with the logged
        log-likelihood as ``logprob``; ``items`` holds ``id`` (the document's id), the logged target as
        ``log_target`` and the framework's own per-document metrics as ``log_<metric>``; ``accuracy`` adds the
        framework's metric a scorer recomputes (``log_metric``), whether the log holds it (``log_reports``) and the
        framework's aggregate (``log_value``). ``meta["log_disagreements"]`` lists the documents where a recomputed
        metric differs from the logged one (also a warning); ``meta["scorers_left_out"]`` says why a scorer the log
        gives is not in the run (an empty choice: no score per character).

    Raises:
        ValueError: naming ``path`` (missing, an empty folder, not a regular file, too large, not a log, an unknown
            layout, a field of the wrong type, a logged log-likelihood that is not finite or above 0, a generation
            task, several gold answers; the file, line, document and field), ``reader`` (unknown), ``task`` /
            ``filter_name`` (ambiguous or unknown), ``domain_premise`` (without ``lm``) or ``scorers`` (one the log
            cannot give).
    """
    if domain_premise is not None and lm is None:
        raise ValueError("domain_premise: scoring the domain condition needs a model: pass lm= as well")
    if domain_premise is not None and (not isinstance(domain_premise, str) or not domain_premise.strip()):
        raise ValueError(f"domain_premise: expected a non-blank string, got {domain_premise!r}")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a file or folder path, got {type(path).__name__}")
    log = reader_for(Path(path).expanduser(), reader).read(path, task, filter_name)
    raw = _raw_rows(log.docs, log.delimiter)
    checks: dict[str, Any] = {}
    if lm is not None:
        checks = _rescore(lm, raw, domain_premise, batch_size=batch_size, progress=progress)
    table = _ordered(option_table(raw, by="item"))
    scorers, left_out = _usable_scorers(table, scorers)
    scores = scorer_columns(table, scorers)
    items = _items_frame(log.docs, scores, scorers, domain_premise or "")
    recomputed = {s: m for m, s in log.metric_scorers.items()}
    accuracy = accuracy_table(items, scorers, n_boot, seed)
    accuracy["log_metric"] = [recomputed.get(s, "") for s in scorers]
    accuracy["log_reports"] = [m in log.aggregates for m in accuracy["log_metric"]]
    accuracy["log_value"] = [log.aggregates.get(m, math.nan) for m in accuracy["log_metric"]]
    meta = {
        "source": LOG_SOURCE, "reader": log.reader, "log_task": log.task, "files": log.files,
        "target_delimiter": log.delimiter, "log_metrics": sorted({m for d in log.docs for m in d.metrics}),
        "log_disagreements": _disagreements(items, log.metric_scorers, scorers), "scorers_left_out": left_out,
        "checks": log.checks, "log_settings": log.settings, "n_boot": n_boot, "seed": seed, **checks,
        **(result_meta(lm, scorers=scorers) if lm is not None else {"scorers": scorers}),
    }
    _warn(Path(log.files[0]), meta)
    return EvalResult(task=log.task, split=log.split, model=log.model, template=f"{log.reader} log", scorers=scorers,
                      scores=scores, items=items, accuracy=accuracy, paired=paired_table(items, scorers), meta=meta)


def from_lm_eval(path: str | Path, **kwargs: Any) -> EvalResult:
    """``from_log(path, reader="lm-eval", ...)``: what ``lm_eval --log_samples`` (lm-evaluation-harness 0.4.x) wrote
    for one ``multiple_choice`` task (its ``samples_<task>_<date>.jsonl``, or the folder holding it)."""
    return from_log(path, reader="lm-eval", **kwargs)


# ----------------------------------------------------------------------------- frames
def _raw_rows(docs: list[LogDoc], delimiter: str) -> pd.DataFrame:
    """One raw row per (document, option): the logged strings and log-likelihood (and the unconditional one where
    logged); lengths without the delimiter (as lm-eval's ``acc_norm`` / ``acc_bytes`` divide by the choice's length);
    the model's columns NaN / 0 until ``_rescore``."""
    premise, domain, null = (LOGPROB_COLUMNS[c] for c in ("premise", "domain", "null"))
    rows = []
    for i, d in enumerate(docs):
        for k, (ctx, opt, ll) in enumerate(zip(d.contexts, d.options, d.lls)):
            choice = opt[len(delimiter):] if delimiter and opt.startswith(delimiter) else opt
            rows.append({"item": i, "id": d.doc_id, "option_index": k, "is_gold": k == d.gold, "context": ctx,
                         "option": opt, premise: ll, "n_tokens": np.nan, "n_chars": len(choice),
                         "n_bytes": len(choice.encode("utf-8")), domain: np.nan,
                         null: d.null_lls[k] if d.null_lls is not None else np.nan, "surfacelab_logprob": np.nan,
                         **{c: 0 for c in CUT_COLUMNS.values()}})
    return pd.DataFrame(rows)


def _rescore(lm: LM, raw: pd.DataFrame, domain_premise: str | None, *, batch_size: int | str,
             progress: bool) -> dict[str, Any]:
    """Score the logged strings with ``lm`` (one engine call), fill the model's columns of ``raw`` in place (the
    logged log-likelihood stays the premise's; surfacelab's is ``surfacelab_logprob``; the log's unconditional ones
    stay where it has them) and return the log-prob check: the largest |surfacelab - logged| and whether it is
    within ``LOGPROB_TOL``."""
    groups = raw.groupby("item", sort=False)
    triples = [(str(g["context"].iloc[0]), list(dict.fromkeys(g["option"])), domain_premise) for _, g in groups]
    results = score_items(lm, triples, batch_size=batch_size, progress=progress)
    has_null = raw[LOGPROB_COLUMNS["null"]].notna().all()
    filled = {"surfacelab_logprob": LOGPROB_COLUMNS["premise"], "n_tokens": "n_tokens",
              **{LOGPROB_COLUMNS[c]: LOGPROB_COLUMNS[c] for c in CONDITIONS if c != "premise"},
              **{c: c for c in CUT_COLUMNS.values()}}
    if has_null:
        del filled[LOGPROB_COLUMNS["null"]]
    for (_, g), res in zip(groups, results):
        t = res.table.set_index("option").loc[g["option"]]
        for column, source in filled.items():
            raw.loc[g.index, column] = t[source].to_numpy()
    diff = float((raw["surfacelab_logprob"] - raw[LOGPROB_COLUMNS["premise"]]).abs().max())
    return {"logprob_check": {"max_abs_diff": diff, "tolerance": LOGPROB_TOL, "agrees": diff <= LOGPROB_TOL},
            "domain_premise": domain_premise, "null_from": "log" if has_null else "surfacelab"}


def _ordered(table: pd.DataFrame) -> pd.DataFrame:
    """``evaluate``'s column order: the row's keys and strings first, the model's extra columns last."""
    last = ["surfacelab_logprob", *CUT_COLUMNS.values()]
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


def _items_frame(docs: list[LogDoc], scores: pd.DataFrame, scorers: list[str], domain_premise: str) -> pd.DataFrame:
    """One row per document (``runs.items_frame``: each scorer's pick is the first top option on a tie, as the
    frameworks' argmax), the logged target and per-document metrics, and the truncation columns."""
    items = items_frame([d.doc_id for d in docs], [d.gold for d in docs], [d.options[d.gold] for d in docs],
                        [len(d.options) for d in docs], [d.contexts[0] for d in docs], domain_premise, scores,
                        scorers)
    items["log_target"] = [d.target for d in docs]
    for m in dict.fromkeys(m for d in docs for m in d.metrics):
        items[f"log_{m}"] = [d.metrics.get(m, np.nan) for d in docs]
    cut = scores.groupby("item", sort=True)[CUT_COLUMNS["premise"]]
    items["truncated"] = cut.max().to_numpy()
    items["truncation_differs"] = (cut.max() != cut.min()).to_numpy()
    return items


def _disagreements(items: pd.DataFrame, metric_scorers: Mapping[str, str], scorers: list[str]) -> dict[str, list[Any]]:
    """Per framework metric the log holds per document and a scorer recomputes: the document ids where they differ."""
    out = {}
    for metric, scorer in metric_scorers.items():
        if scorer in scorers and f"log_{metric}" in items:
            logged = items[f"log_{metric}"]
            differ = logged.notna() & ((logged == 1.0) != items[f"correct_{scorer}"])
            if differ.any():
                out[metric] = items.loc[differ, "id"].tolist()
    return out


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
    for metric, ids in meta.get("log_disagreements", {}).items():
        shown = ", ".join(map(str, ids[:5])) + (", ..." if len(ids) > 5 else "")
        out.append(f"the logged {metric} differs from the one recomputed from the logged log-likelihoods for "
                   f"{len(ids)} documents (doc_id {shown})")
    if meta.get("checks", {}).get("hash_matches") is False:
        out.append("the log's document hashes do not give the task hash of the results file beside it (edited, or "
                   "written by another run)")
    out += [f"left out {why}" for why in meta.get("scorers_left_out", {}).values()]
    out += [f"passed over {Path(p['file']).name}: {p['why']}" for p in meta.get("checks", {}).get("passed_over", [])]
    return [printable(line) for line in out]


def _warn(file: Path, meta: dict[str, Any]) -> None:
    """One warning per thing that does not add up or was left out (``log_notes``)."""
    for note in log_notes(meta, problems_only=True):
        warnings.warn(f"{printable(file.name)}: {note}", stacklevel=3)
