"""A log as a run: ``from_log`` turns the ``LogRun`` a reader (``READERS``) read (one task, or a whole run of several
tasks and the groups over them) into the ``EvalResult`` that ``evaluate`` returns, so the same tables, figures, the
explorer and the workbench open it.

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

What a run leaves out or does not add up is said once (``notes.log_notes``: the warnings, the command line's notes and
the explorer's run line).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from ..runs import EvalResult, accuracy_table, items_frame, paired_table, scorer_columns, task_label
from ..task_groups import task_leaves
from ..scorers import SCORERS, check_scorers, not_applicable
from ..engine.requests import CONDITIONS, CUT_COLUMNS, EXTRA_CONDITIONS, LOGPROB_COLUMNS
from ..scoring import option_table, result_meta, score_items
from ..text import glued
from .. import chat
from ..chat import ChatTemplate
from .notes import warn
from .readers import reader_for
from .records import TYPE_NAMES, LogRun, LogTask, kind_of, short

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
    chat_template: Any = None,
) -> EvalResult:
    """An ``EvalResult`` from the per-document logs another framework wrote for one or more multiple-choice tasks.

    Args:
        path: a log file, or a folder holding one run's logs (searched recursively: the output folder or its
            ``<model>`` subfolder): every multiple-choice task of the run is read into one run, each item keeping its
            task (``items["task"]``). Files of the folder that are not read are passed over with a warning
            (``meta["checks"]["passed_over"]``).
        reader: the framework's reader (``READERS``: "lm-eval", "lighteval"); None: the first whose ``detect`` knows
            ``path``.
        task: the framework's task or group to read (a group, lm-eval's ``mmlu``, reads its tasks); None: all.
        lm: a loaded ``LM`` (in-process or on a server) to score the logged strings again: adds ``n_tokens``
            (Avg), ``null_logprob`` (PMI-null, unless the log has its own), the domain condition and the
            ``surfacelab_logprob`` column, checked against the logged log-likelihoods.
        domain_premise: the domain premise for Unc / DC-PMI (e.g. ``" the answer is:"``); needs ``lm``.
        scorers: scorer names (list or comma-separated); default: every scorer the log (and ``lm``) can give.
        filter_name: lm-eval's filter to read when the log holds several (multiple_choice tasks have one, "none").
        batch_size, progress: as in :func:`surfacelab.evaluate` (used with ``lm``).
        chat_template: how the domain premise is rendered. None (default): as the log's own prompts were -- a log of
            ``--apply_chat_template`` has its domain premise rendered through the log's chat template, system
            instruction and each task's description (``surfacelab.chat``), so that DC-PMI compares chat turns with
            chat turns; a plain log's stays plain. A template read from a file is rendered only when it is the model's
            own: for another, pass its text here (True: the model's own); False: plain text whatever the log's
            prompts were. ``items["domain_context"]`` holds the rendered domain premise and ``meta["chat_template"]``
            the template.
        n_boot, seed: bootstrap resamples and seed of the accuracy CIs, as in :func:`surfacelab.evaluate`.

    Returns:
        An ``EvalResult`` shaped like ``evaluate``'s (no ``why`` verdict columns: those need the model's
        next-token distributions): ``scores`` holds the logged ``context`` / ``option`` strings with the logged
        log-likelihood as ``logprob``; ``items`` holds ``task``, ``id`` (the document's id within its task), the
        logged target as ``log_target`` and the framework's own per-document metrics as ``log_<metric>``;
        ``accuracy`` adds the framework's metric a scorer recomputes (``log_metric``), whether the framework
        reported it for the run (``log_reports``) and its aggregate (``log_value``: the task's, or the group's that
        holds every task read); ``sl.by_task(run)`` gives each task and group, the framework's numbers beside
        surfacelab's. ``meta["log_tasks"]`` describes each task read, ``meta["task_groups"]`` the groups,
        ``meta["log_chat"]`` the chat template as the log records it; ``meta["log_disagreements"]`` lists per
        metric and task the documents where a recomputed metric differs from the logged one (also a warning);
        ``meta["scorers_left_out"]`` says why a scorer the log gives is not in the run (an empty choice: no score
        per character).

    Raises:
        ValueError: naming ``path`` (missing, an empty folder, several runs in it, not a regular file, too large,
            not a log, a layout or version the reader does not know, a field of the wrong type, a logged
            log-likelihood that is not finite or above 0, a generation task, several gold answers; the file, line,
            document and field; a logged context that does not start and end as its chat template renders), ``reader``
            (unknown), ``task`` / ``filter_name`` (ambiguous or unknown), ``domain_premise`` (without ``lm``),
            ``scorers`` (one the log cannot give) or ``chat_template`` (without a domain premise, on a plain log, or
            a log's template that is not the model's own).
    """
    if domain_premise is not None and lm is None:
        raise ValueError("domain_premise: scoring the domain condition needs a model: pass lm= as well")
    if chat_template is not None and domain_premise is None:
        raise ValueError("chat_template: it renders the domain premise of a log (the logged prompts are scored as "
                         "they are): pass domain_premise= and lm= as well")
    if domain_premise is not None and (not isinstance(domain_premise, str) or not domain_premise.strip()):
        raise ValueError(f"domain_premise: expected a non-blank string, got {domain_premise!r}")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a file or folder path, got {type(path).__name__}")
    chosen = reader_for(Path(path).expanduser(), reader)
    log = chosen.read(path, task, filter_name)
    if not isinstance(log, LogRun) or not log.tasks or not all(t.docs for t in log.tasks):
        raise TypeError(f"reader: {chosen.name!r} read no LogRun of tasks with documents from {str(path)!r}")
    if lm is not None:
        _decode_contexts(lm, log.tasks)
    raw = _raw_rows(log.tasks)
    checks: dict[str, Any] = {}
    template = None if domain_premise is None else log_chat(lm, log, chat_template)
    rendered = {t.task: rendered_domain(lm, template, log, t, domain_premise) for t in log.tasks} if template else {}
    domains = [rendered.get(t.task, domain_premise) for t in log.tasks for _ in t.docs]  # per item
    if lm is not None:
        checks = _rescore(lm, raw, domains, batch_size=batch_size, progress=progress)
        checks["domain_premise"] = domain_premise
    table = _ordered(option_table(raw, by="item"))
    scorers, left_out = _usable_scorers(table, scorers)
    scores = scorer_columns(table, scorers)
    items = _items_frame(log.tasks, scores, scorers, domain_premise or "")
    if template is not None:
        items.insert(items.columns.get_loc("domain_premise") + 1, "domain_context", domains)
        checks["chat_template"] = template.meta()
    name, covering = _name(log)
    recomputed = {s: m for t in log.tasks for m, s in t.metric_scorers.items()}
    accuracy = accuracy_table(items, scorers, n_boot, seed)
    accuracy["log_metric"] = [recomputed.get(s, "") for s in scorers]
    accuracy["log_reports"] = [m in covering for m in accuracy["log_metric"]]
    accuracy["log_value"] = [covering.get(m, math.nan) for m in accuracy["log_metric"]]
    meta = {
        "source": LOG_SOURCE, "reader": log.reader, "log_task": name,
        "files": [f for t in log.tasks for f in t.files] + log.files,
        "log_metrics": sorted({m for t in log.tasks for d in t.docs for m in d.metrics}),
        "log_disagreements": _disagreements(items, log.tasks, scorers), "scorers_left_out": left_out,
        "checks": {**log.checks, "hash_matches": _all_true([t.checks.get("hash_matches") for t in log.tasks])},
        "log_tasks": {t.task: _task_meta(t) for t in log.tasks},
        "task_groups": {g.name: {"subtasks": g.subtasks, "weighting": g.weighting} for g in log.groups},
        "log_reported": {x.task if isinstance(x, LogTask) else x.name: {"aggregates": x.aggregates,
                                                                         "stderrs": x.stderrs}
                         for x in [*log.tasks, *log.groups]},
        "log_settings": log.settings, "log_chat": log.chat,
        "domain_glued": _glued(raw, None if template else domain_premise),
        "n_boot": n_boot, "seed": seed, **checks,
        **(result_meta(lm, scorers=scorers) if lm is not None else {"scorers": scorers}),
    }
    warn(Path(meta["files"][0]), meta)
    split = ", ".join(dict.fromkeys(t.split for t in log.tasks if t.split))
    return EvalResult(task=name, split=split, model=log.model, template=f"{log.reader} log", scorers=scorers,
                      scores=scores, items=items, accuracy=accuracy, paired=paired_table(items, scorers), meta=meta)


def from_lm_eval(path: str | Path, **kwargs: Any) -> EvalResult:
    """``from_log(path, reader="lm-eval", ...)``: what ``lm_eval --log_samples`` (lm-evaluation-harness 0.4.x) wrote
    for the ``multiple_choice`` tasks of a run (a ``samples_<task>_<date>.jsonl``, or the folder of the run: all its
    tasks, or the task or group ``task=`` names)."""
    return from_log(path, reader="lm-eval", **kwargs)


# ----------------------------------------------------------------------------- chat templates
def _results_where(log: LogRun) -> str:
    """Where a log's run settings come from, for a message."""
    return f"path: {log.files[0]!r} (the run's results file)" if log.files else f"path: {log.tasks[0].files[0]!r}"


def log_chat(lm: LM, log: LogRun, value: Any) -> ChatTemplate | None:
    """The chat template a log's domain premise is rendered with (None: plain text, as the log's prompts).

    ``value`` None: the log's own (its run's ``chat_template``, ``system_instruction``, ``fewshot_as_multiturn``),
    rendered only when it is ``lm``'s own template: a template read from a file is not run otherwise. True or a
    template's text: that template, with the log's system instruction; a ``ChatTemplate``: as given; False: plain
    text whatever the log's prompts were.
    """
    if value is False:
        return None
    record, where = log.chat, _results_where(log)
    logged, system, multiturn = (record.get(k) for k in ("template", "system_prompt", "fewshot_as_multiturn"))
    for key, got, kind in (("chat_template", logged, str), ("system_instruction", system, str),
                           ("fewshot_as_multiturn", multiturn, bool)):
        if got is not None and not isinstance(got, kind):
            raise ValueError(f"{where}: {key} is {kind_of(got)}, not {TYPE_NAMES[kind]}")
    if value is None and not logged:
        return None
    if value is not None and record.get("applied") is False:
        raise ValueError("chat_template: the log's prompts are plain text (its results file records no chat "
                         "template), so its domain premise is plain text too: leave chat_template out")
    if value is None:
        own = chat.own_template(lm)
        if logged != own:
            mine = f"sha256 {ChatTemplate(own).sha[:12]}" if own else "none"
            raise ValueError(f"chat_template: the log was rendered through a chat template (sha256 "
                             f"{ChatTemplate(logged).sha[:12]}) that is not the tokenizer's own of {lm.name!r} "
                             f"({mine}); a template read from a file is rendered only when it is the model's: pass "
                             "its text (the results file's chat_template) as chat_template= (on the command line: "
                             "--chat-template FILE) to render with it")
        value = logged
    if not isinstance(value, ChatTemplate):
        value = ChatTemplate(None if value is True else value, system, True if multiturn is None else multiturn)
    return chat.resolve(lm, value)


def rendered_domain(lm: LM, template: ChatTemplate, log: LogRun, task: LogTask, domain_premise: str) -> str:
    """The domain premise rendered as the log's requests were (``chat.render``: the system instruction and the
    task's description in the system turn, its ``gen_prefix``), after checking that every logged context starts and
    ends as the template renders a request of the task."""
    config = task.settings.get("config") or {}  # the task's configuration in the results file
    parts = {"description": config.get("description") or "", "gen_prefix": config.get("gen_prefix"),
             "join": config.get("fewshot_delimiter", chat.SYSTEM_JOIN)}
    for key, got in parts.items():
        if got is not None and not isinstance(got, str):
            raise ValueError(f"{_results_where(log)}: configs.{task.task}.{key} is {kind_of(got)}, not a string")
    start, end = chat.frame(lm, template, **parts)
    for d in task.docs:
        if not (d.contexts[0].startswith(start) and d.contexts[0].endswith(end)):
            raise ValueError(f"chat_template: the logged context of doc_id {short(d.doc_id)} does not start and end as "
                             f"the chat template renders a request of {task.task!r} (system instruction "
                             f"{template.system_instruction!r}, the task's description): the domain premise cannot "
                             "be rendered as the premise was")
    return chat.render(lm, template, domain_premise, **parts)


# ----------------------------------------------------------------------------- frames
def _name(log: LogRun) -> tuple[str, dict[str, float]]:
    """What the run is called and the framework's aggregates for all of it: the task or group asked for, the one
    task, or the group holding every task read (else the tasks' names joined, with no aggregate)."""
    tasks = {t.task for t in log.tasks}
    groups = {g.name: g for g in log.groups}
    tree = {g.name: g.subtasks for g in log.groups}
    covering = next((g for g in log.groups if set(task_leaves(g.name, tree)) == tasks), None)
    if log.name:
        name = log.name
    elif len(log.tasks) == 1:
        name = log.tasks[0].task
    else:
        name = covering.name if covering is not None else task_label([t.task for t in log.tasks])
    if len(log.tasks) == 1 and name == log.tasks[0].task:
        return name, log.tasks[0].aggregates
    return name, (groups[name].aggregates if name in groups else covering.aggregates if covering else {})


def _decode_contexts(lm: LM, tasks: list[LogTask]) -> None:
    """Where a task's contexts are not the text the model saw but the log holds its token ids (lighteval), the
    contexts become those ids decoded with ``lm``'s tokenizer (its leading BOS left to surfacelab's own BOS
    policy), with the whitespace the framework moved off the end of the prompt (the query's own, else the
    tokenizer's chat generation prompt's) put back, so that the same strings are scored."""
    tok = lm.tokenizer
    for t in tasks:
        if t.contexts_exact or not all(d.context_ids for d in t.docs):
            continue
        for d in t.docs:
            ids = d.context_ids[1:] if lm.add_bos and d.context_ids[0] == tok.bos_token_id else d.context_ids
            text = tok.decode(ids, skip_special_tokens=False)
            query = d.contexts[0]
            ws = query[len(query.rstrip()):] if text == query.rstrip() else _generation_whitespace(tok)
            d.contexts = [text + ws] * len(d.options)
        t.contexts_exact, t.context_note = True, ""


def _generation_whitespace(tok: Any) -> str:
    """The whitespace that ends the tokenizer's chat generation prompt ("\\n" after ``<|im_start|>assistant``), which
    a framework that strips the prompt moves onto every continuation; "" without a chat template."""
    if not getattr(tok, "chat_template", None):
        return ""
    rendered = tok.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=False)
    return rendered[len(rendered.rstrip()):]


def _raw_rows(tasks: list[LogTask]) -> pd.DataFrame:
    """One raw row per (document, option) of every task: the logged strings and log-likelihood (and the unconditional
    one where logged); lengths without the task's delimiter (as lm-eval's ``acc_norm`` / ``acc_bytes`` divide by the
    choice's length); the model's columns NaN / 0 until ``_rescore``."""
    premise, domain, null = (LOGPROB_COLUMNS[c] for c in ("premise", "domain", "null"))
    rows = []
    for t in tasks:
        delimiter = t.delimiter
        for d in t.docs:
            i = rows[-1]["item"] + 1 if rows else 0
            for k, (ctx, opt, ll) in enumerate(zip(d.contexts, d.options, d.lls)):
                choice = opt[len(delimiter):] if delimiter and opt.startswith(delimiter) else opt
                rows.append({"item": i, "id": d.doc_id, "option_index": k, "is_gold": k == d.gold, "context": ctx,
                             "option": opt, premise: ll, "n_tokens": np.nan, "n_chars": len(choice),
                             "n_bytes": len(choice.encode("utf-8")), domain: np.nan,
                             null: d.null_lls[k] if d.null_lls is not None else np.nan,
                             "surfacelab_logprob": np.nan, **{c: 0 for c in CUT_COLUMNS.values()}})
    return pd.DataFrame(rows)
def _rescore(lm: LM, raw: pd.DataFrame, domains: Sequence[str | None], *, batch_size: int | str,
             progress: bool) -> dict[str, Any]:
    """Score the logged strings with ``lm`` (one engine call), fill the model's columns of ``raw`` in place (the
    logged log-likelihood stays the premise's; surfacelab's is ``surfacelab_logprob``; the log's unconditional ones
    stay where it has them; ``domains``: each item's domain premise, as the model reads it) and return the log-prob
    check: the largest |surfacelab - logged| and whether it is within ``LOGPROB_TOL``."""
    groups = raw.groupby("item", sort=False)
    triples = [(str(g["context"].iloc[0]), list(dict.fromkeys(g["option"])), domain)
               for (_, g), domain in zip(groups, domains)]
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
            "null_from": "log" if has_null else "surfacelab"}


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
            missing[s.name] = (not_applicable(s, table) or
                               ("the task's fields, which a log does not keep: run sl.evaluate on the task" if
                                set(s.needs) & (set(EXTRA_CONDITIONS) | {"domain_ctx"}) else "a domain premise: pass "
                                "lm= and domain_premise=" if "domain" in s.needs else "the model: pass lm="))
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
            if missing[s].startswith("not applicable"):
                raise ValueError(f"scorers: {s!r} is {missing[s]}")
            raise ValueError(f"scorers: {s!r} cannot be computed from the log alone; it needs {missing[s]}")
        if s in not_finite:
            raise ValueError(f"scorers: {s!r} has no finite score for every option: {not_finite[s]}")
    return chosen, {}


def _items_frame(tasks: list[LogTask], scores: pd.DataFrame, scorers: list[str],
                 domain_premise: str) -> pd.DataFrame:
    """One row per document (``runs.items_frame``: each scorer's pick is the first top option on a tie, as the
    frameworks' argmax), its task, the logged target and per-document metrics, and the truncation columns."""
    docs = [(t.task, d) for t in tasks for d in t.docs]
    items = items_frame([t for t, _ in docs], [d.doc_id for _, d in docs], [d.gold for _, d in docs],
                        [d.options[d.gold] for _, d in docs], [len(d.options) for _, d in docs],
                        [d.contexts[0] for _, d in docs], domain_premise, scores, scorers)
    items["log_target"] = [d.target for _, d in docs]
    for m in dict.fromkeys(m for _, d in docs for m in d.metrics):
        items[f"log_{m}"] = [d.metrics.get(m, np.nan) for _, d in docs]
    cut = scores.groupby("item", sort=True)[CUT_COLUMNS["premise"]]
    items["truncated"] = cut.max().to_numpy()
    items["truncation_differs"] = (cut.max() != cut.min()).to_numpy()
    return items


def _task_meta(t: LogTask) -> dict[str, Any]:
    """What a run keeps of one task: its file, size, split, delimiter, settings and checks."""
    return {"file": t.files[0] if t.files else "", "n": len(t.docs), "split": t.split, "delimiter": t.delimiter,
            "context_note": t.context_note, **t.settings, **t.checks}


def _all_true(values: list[bool | None]) -> bool | None:
    """False if any is False, True if all are True, else None (not known for some)."""
    return False if False in values else True if all(v is True for v in values) else None


def _glued(raw: pd.DataFrame, domain_premise: str | None) -> dict[str, Any] | None:
    """The options that the log's own context does not glue to its last word but the domain premise does
    (``text.glued``: a chat log's "A".."D" after a context that ends in a newline), counted, with one as it reads;
    None when there are none."""
    if domain_premise is None:
        return None
    pairs = dict.fromkeys(zip(raw["context"], raw["option"]))
    bad = list(dict.fromkeys(o for c, o in pairs if glued(domain_premise, o) and not glued(c, o)))
    if not bad:
        return None
    return {"options": len(bad), "example": f"…{domain_premise.split()[-1]}{bad[0]}"}


def _disagreements(items: pd.DataFrame, tasks: list[LogTask], scorers: list[str]) -> dict[str, dict[str, list[Any]]]:
    """Per framework metric the log holds per document and a scorer recomputes, per task: the document ids where
    they differ."""
    out: dict[str, dict[str, list[Any]]] = {}
    for t in tasks:
        rows = items[items["task"] == t.task]
        for metric, scorer in t.metric_scorers.items():
            if scorer in scorers and f"log_{metric}" in rows:
                logged = rows[f"log_{metric}"]
                differ = logged.notna() & ((logged == 1.0) != rows[f"correct_{scorer}"])
                if differ.any():
                    out.setdefault(metric, {})[t.task] = rows.loc[differ, "id"].tolist()
    return out
