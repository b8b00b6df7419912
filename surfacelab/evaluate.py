"""Whole-dataset evaluation: ``evaluate()``, ``evaluate_fewshot()`` and ``ablate()`` (the ``eval`` command is in
:mod:`surfacelab.cli.evaluate`).

>>> import surfacelab as sl
>>> lm = sl.load_lm("smollm2-135m")                                          # doctest: +SKIP
>>> res = sl.evaluate(lm, sl.tasks.load("copa", "val"), scorers="lm,avg,per_char,unc,dcpmi")  # doctest: +SKIP
>>> res.accuracy          # one row per scorer: accuracy and a 95% bootstrap CI  # doctest: +SKIP
>>> res.paired            # exact McNemar tests between scorers                  # doctest: +SKIP
>>> res.labels            # verdict labels (sl.why) and which scorer rescues each   # doctest: +SKIP

Every request of a run (every item, option and condition; every template of an ablation; every
seed of a few-shot run) goes to :func:`surfacelab.engine.logprobs` in one call, so batching,
deduplication and the on-disk cache act across the whole run: a rerun is free.

Scorers are those of :mod:`surfacelab.scoring` (``list_scorers()``); option ``i`` of an item is the
request ``item.requests()[i]`` (premise condition), ``item.domain_requests()[i]`` (domain
condition, for Unc/DC-PMI) and ``("", options[i])`` (empty context, for PMI-null), each keyed by
(task, item, condition, option) in the :class:`surfacelab.engine.requests.Plan` that ``score`` uses too,
and read back by that key. A scorer's
prediction is the option with the highest score, the first one in option order when several share
the top score (as ``MCResult.winner``); ``tie_<scorer>`` marks those items.

COPA-flipped (tasks with ``premise_per_option``): each option becomes the *context* and the
original premise is the one continuation shared by all options. There LM compares log P(premise |
option + bridge) across options; Avg, per-char and per-byte divide that by the same length for
every option, and PMI-null and DC-PMI subtract the same quantity from every option (log P(premise)
under the empty context, or under the bare bridge), so all of them rank exactly like LM. Unc
scores the shared string under the shared domain premise: every option gets the same score, every
item is a tie and Unc "predicts" option 0. This is the paper's point: with one shared string there
is no surface-form competition to correct.

``why`` labels (column ``why`` of ``EvalResult.items``, counted in ``EvalResult.labels``): the verdict
labels of :func:`surfacelab.why.rules.verdict` and the numbers behind them, see :mod:`surfacelab.why.verdicts`.

lm-evaluation-harness numbers: evaluate under the task's ``"lm-eval"`` template family
(``evaluate(lm, task, template="lm-eval")`` or ``tasks.load(..., variant="lm-eval")``) and the
accuracy table names the harness metric each scorer reproduces item by item
(``lm_eval_metric``: ``acc`` = ``lm``, ``acc_norm`` = ``per_char``, ``acc_bytes`` = ``per_byte``,
``acc_mutual_info`` = ``pmi_null``; the mapping is ``surfacelab.tasks.harness.METRIC_SCORERS``) and
whether the harness's YAML reports it for the task (``lm_eval_reports``). Under such a template
``per_char`` / ``per_byte`` divide by the length of the choice *without* the harness's target
delimiter (the leading space), as ``acc_norm`` / ``acc_bytes`` do; under the paper's templates
they divide by the whole option string.

    >>> res = sl.evaluate(lm, sl.tasks.load("arc-challenge"), "lm,per_char", template="lm-eval")  # doctest: +SKIP
    >>> res.accuracy[["scorer", "lm_eval_metric", "accuracy"]]      # per_char | acc_norm | ...  # doctest: +SKIP
    >>> sl.ablate(lm, "copa", templates=["paper", "lm-eval", my_template])  # paper, harness, yours  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd

from . import chat, formats, tasks, text
from ._checks import check_int
from .calibration import domain_contexts, with_samples
from .engine.requests import CONDITIONS, Plan, Scores
from .letters.prompts import DOMAIN_SAMPLES
from .runs import (EvalResult, accuracy_table, items_frame, mcnemar, na_notes, paired_table, rescued_by,
                   scorer_columns)
from .scorers import check_scorers, get_scorer, not_applicable
from .scoring import plan_table, result_meta, warn_truncation
from .tasks import LMEvalTemplate, Task, Template
from .tasks.harness import lm_eval_metric
from .why.verdicts import label_counts, split_mass, verdict_columns

if TYPE_CHECKING:
    from .models import LM


# ----------------------------------------------------------------------------- argument checks
def _check_task(task: Task | str) -> Task:
    if isinstance(task, str):
        task = tasks.load(task)
    if not isinstance(task, Task):
        raise TypeError(f"task: expected a surfacelab.tasks.Task or a task name, got {type(task).__name__}")
    if len(task) == 0:
        raise ValueError(f"task: {task.name!r} has no items")
    return task


def _limited(task: Task, limit: int | None) -> Task:
    check_int("limit", limit, 1, allow_none=True)
    if limit is None or limit >= len(task):
        return task
    return dataclasses.replace(task, items=task.items[:limit])


# ----------------------------------------------------------------------------- scoring
def _conditions(scorers: list[str]) -> list[str]:
    needs = {"premise"} | {c for s in scorers for c in get_scorer(s).needs}
    return [c for c in CONDITIONS if c in needs]


def _misfits(lm: LM, plan: Plan, task: int) -> dict[int, str]:
    """Item -> why one of its requests cannot be scored within the model's window (``text.encode``'s
    message, the first in request order). Only options long enough to come near the window are
    encoded: a token covers at least one UTF-8 byte (plus, at most, one prefix token)."""
    out: dict[int, str] = {}
    for i in range(len(plan.tasks[task])):
        for r in plan.of(task, i):
            if len(text.move_whitespace(r.context, r.continuation)[1].encode("utf-8")) + 3 <= lm.max_length:
                continue
            try:
                text.encode(lm, r.context, r.continuation)
            except ValueError as err:
                out[i] = str(err)
                break
    return out


def _fit_to_window(lm: LM, task: Task, conditions: list[str], too_long: str) -> tuple[Task, list[str]]:
    """The task without the items that cannot be scored (``too_long="skip"``) and their ids, or a ValueError
    naming the first such item (``"error"``)."""
    misfits = _misfits(lm, Plan([formats.entries(task.name, task.items, conditions)], conditions), 0)
    keep, skipped = [], []
    for i, it in enumerate(task.items):
        why = misfits.get(i)
        if why is None:
            keep.append(it)
            continue
        if too_long == "error":
            line = it.meta.get("line")
            where = f" ({task.source}: line {line})" if line is not None else ""
            raise ValueError(f"task: item {it.id!r} (position {i}{where}) does not fit the model: {why}; pass "
                             f"too_long='skip' to leave such items out (they are counted in the result)")
        skipped.append(it.id)
    if skipped and not keep:
        raise ValueError(f"task: all {len(skipped)} items of {task.name!r} are too long for the model's window "
                         f"of {lm.max_length} tokens")
    return (dataclasses.replace(task, items=keep) if skipped else task), skipped


def _scores_frame(task: Task, plan: Plan, scores: Scores, j: int, scorers: list[str]) -> pd.DataFrame:
    """The long (item, option) frame of task ``j`` of the plan, read from its results by key; only the
    columns of the selected scorers (the raw columns stay)."""
    # the harness's joining space is not part of the answer's length (a chat template's options are without it)
    delim = "" if _chatted(task) else task.template.target_delimiter
    table = plan_table(plan, scores, j, delimiter=delim)
    item = table["item"].to_numpy()
    table.insert(1, "id", np.array([it.id for it in task.items], dtype=object)[item])
    table.insert(3, "is_gold", np.array([it.gold for it in task.items])[item] == table["option_index"].to_numpy())
    return scorer_columns(table, scorers)


def _chatted(task: Task) -> bool:
    """Whether the task's items were rendered through a chat template (``chat.render_item``)."""
    return bool(task.items) and "chat_user" in task.items[0].meta


def _items_frame(task: Task, scores: pd.DataFrame, scorers: list[str],
                 mass: dict[int, dict[str, float]] | None = None) -> pd.DataFrame:
    """One row per item (``runs.items_frame``), the item's ``subject`` where the task's records name one (MMLU's: the
    explorer's task filter), and the verdict columns (``mass``: item -> ``why.first_token_numbers`` of the items whose
    split mass was measured). Under a chat template ``premise`` and ``domain_premise`` are as the template family
    rendered them and ``domain_context`` is the rendered domain premise (the premise's is each option's ``context`` in
    the scores)."""
    its = task.items
    typed = [it.meta.get("chat_user", {"premise": it.premise, "domain_premise": it.domain_premise}) for it in its]
    items = items_frame(task.name, [it.id for it in its], [it.gold for it in its], [it.gold_option for it in its],
                        [len(it.options) for it in its], [t["premise"] for t in typed],
                        [t["domain_premise"] for t in typed], scores, scorers)
    if _chatted(task):
        items.insert(items.columns.get_loc("domain_premise") + 1, "domain_context", [it.domain_premise for it in its])
    subjects = [it.meta.get("subject", "") for it in its]
    if any(subjects):
        items["subject"] = subjects
    items = items.join(verdict_columns(task, scores, mass if mass is not None else {}))
    items["rescued_by"] = rescued_by(items, scorers)
    return items


def _harness_names(scorers: Sequence[str], template: Template) -> tuple[list[str], list[bool]]:
    """Per scorer: the lm-eval metric it equals under ``template`` ("" unless an lm-eval template) and whether
    the harness reports that metric for the task."""
    if not isinstance(template, LMEvalTemplate):
        return [""] * len(scorers), [False] * len(scorers)
    names = [lm_eval_metric(s) for s in scorers]
    return names, [bool(m) and m in template.metrics for m in names]


def _counters(stats: Any) -> dict[str, int]:
    """What a run's line reports of its engine call (shared by every task of one call): requests, how many came
    from the cache, tokens forwarded."""
    return {"requests": stats.requests, "cached": stats.cached, "tokens_forwarded": stats.tokens_forwarded}


def _domain_contexts(lm: LM, task: Task, template: chat.ChatTemplate | None, samples: int,
                     seed: int, source: Task | None) -> list[list[str]] | None:
    """Domain-context calibration's contexts of the task's items (``calibration.domain_contexts``), rendered through
    the run's chat template where it has one."""
    render = None if template is None else (lambda item: chat.render_item(lm, template, item, task.template))
    return domain_contexts(task, samples, seed, render, source)


def _evaluate_many(lm: LM, task_list: list[Task], scorers: list[str], *, batch_size: int | str, progress: bool,
                   n_boot: int, seed: int, too_long: str, labels: bool = False, chat_template: Any = None,
                   domain_samples: int = DOMAIN_SAMPLES, domain_source: Task | None = None) -> list[EvalResult]:
    """Evaluate several tasks with ONE engine call (and, with ``labels``, one next-token call for split mass)."""
    check_int("n_boot", n_boot, 0)
    check_int("seed", seed, 0)
    check_int("domain_samples", domain_samples, 1)
    if too_long not in ("error", "skip"):
        raise ValueError(f"too_long: expected 'error' or 'skip', got {too_long!r}")
    template = chat.resolve(lm, chat_template)
    if template is not None:
        task_list = [dataclasses.replace(t, items=[chat.render_item(lm, template, it, t.template) for it in t.items])
                     for t in task_list]
    conditions = _conditions(scorers)
    fitted = [_fit_to_window(lm, t, conditions, too_long) for t in task_list]
    task_list = [t for t, _ in fitted]
    contexts = [_domain_contexts(lm, t, template, domain_samples, seed, domain_source)
                if "domain_ctx" in conditions else None for t in task_list]
    plan = Plan([with_samples(formats.entries(t.name, t.items, conditions), c) for t, c in zip(task_list, contexts)],
                conditions)
    scores = plan.run(lm, batch_size=batch_size, progress=progress)
    counters = _counters(scores.stats)
    frames = [_scores_frame(task, plan, scores, j, scorers) for j, task in enumerate(task_list)]
    mass, cost = split_mass(lm, list(zip(range(len(task_list)), task_list, frames)), batch_size) if labels else ({}, {})
    out = []
    for j, (task, scores, (_, skipped)) in enumerate(zip(task_list, frames, fitted)):
        items = _items_frame(task, scores, scorers, mass.get(j))
        cut = scores.groupby("item", sort=False)["truncated"]
        items["truncated"] = cut.max().to_numpy()
        items["truncation_differs"] = (cut.max() != cut.min()).to_numpy()
        accuracy = accuracy_table(items, scorers, n_boot, seed)
        accuracy["lm_eval_metric"], accuracy["lm_eval_reports"] = _harness_names(scorers, task.template)
        na = na_notes(accuracy, [{"not_applicable": {s: not_applicable(get_scorer(s), scores) for s in scorers}}])
        meta = {"source": task.source, "variant": task.variant, "n_shot": task.n_shot, "n_boot": n_boot,
                "seed": seed, "flipped": task.template.per_option_premise is not None, "skipped_too_long": skipped,
                "why_cost": cost, "engine": counters, "not_applicable": na, **result_meta(lm, scorers=scorers)}
        if contexts[j] is not None:
            meta["domain_samples"] = domain_samples
        if isinstance(task.template, LMEvalTemplate):
            meta.update(lm_eval_task=task.template.lm_eval_task, lm_eval_yaml=task.template.yaml)
        if template is not None:
            meta["chat_template"] = template.meta()
        out.append(EvalResult(
            task=task.name, split=task.split, model=lm.name, template=task.template.name, scorers=scorers,
            scores=scores, items=items, accuracy=accuracy, paired=paired_table(items, scorers), meta=meta,
            labels=label_counts(items, scorers),
        ))
    rows = [r.scores.assign(item=[f"{k}:{i}" for i in r.scores["item"]]) for k, r in enumerate(out)]  # task:item
    warn_truncation(pd.concat(rows),
                    lm.max_length, "the columns 'truncated' and 'domain_truncated' of .scores, 'truncated' and "
                    "'truncation_differs' of .items")
    return out


# ----------------------------------------------------------------------------- public API
def evaluate(
    lm: LM,
    task: Task | str,
    scorers: str | Sequence[str] | None = None,
    limit: int | None = None,
    *,
    template: Template | str | None = None,
    batch_size: int | str = "auto",
    progress: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
    too_long: str = "error",
    chat_template: Any = None,
    domain_samples: int = DOMAIN_SAMPLES,
    domain_source: Task | None = None,
) -> EvalResult:
    """Score every item of a task with every scorer; accuracy with CIs, paired tests and why labels.

    Args:
        lm: a loaded ``LM``.
        task: a loaded ``Task`` (``surfacelab.tasks.load``) or a task name (default split and data root).
        scorers: scorer names (list or comma-separated string); default: every registered scorer.
        limit: evaluate only the first ``limit`` items (``tasks.load(sample=..., seed=...)``: a seeded random subset).
        template: re-render the task first: a template family (``"paper"``, ``"paper_table"``, ``"lm-eval"``),
            a template name from ``tasks.templates(task.name)`` or a ``Template``; default: the task's own
            (the ``variant`` it was loaded with). Under ``"lm-eval"`` the accuracy table names the harness's
            metrics (see the module docstring).
        batch_size: rows per batch or "auto" (see ``engine.logprobs``).
        progress: show the engine's progress bar.
        n_boot: bootstrap resamples for the CIs (0: no CIs).
        seed: seed of the bootstrap.
        too_long: an item with an option that cannot fit the model's window even with no context:
            ``"error"`` (default) raises a ValueError naming the item (id, position, file and line);
            ``"skip"`` leaves such items out and lists their ids in ``meta["skipped_too_long"]``.
            (A context that is too long is cut from the left instead, with a warning, and the cut is
            reported in the ``truncated`` columns.)
        chat_template: score an instruct model as lm-evaluation-harness's ``--apply_chat_template`` does
            (``surfacelab.chat``): True for the tokenizer's own template, a template's text, or a
            ``chat.ChatTemplate`` (with lm-eval's ``--system_instruction`` / ``--fewshot_as_multiturn``). Every
            premise and domain premise is rendered alike (the template's preamble in the system turn, few-shot
            examples as turns, the generation prompt last) and the options are scored without the target
            delimiter. ``scores["context"]`` is then the rendered premise, ``items["domain_context"]`` the rendered
            domain premise, ``meta["chat_template"]`` the template. None: plain text.
        domain_samples: how many content-free inputs of random in-domain words ``domain_cal`` averages over (Fei et
            al. 2023: 20), drawn with ``seed`` from the evaluated items (:mod:`surfacelab.calibration`).
        domain_source: the task whose items those words are drawn from instead (``explore.evaluate_in_chunks``
            passes the whole task, so every chunk is calibrated alike); None: the evaluated task.

    Returns:
        an :class:`EvalResult` (see the module docstring for ties, COPA-flipped and the why labels).
    """
    scorers = check_scorers(scorers)
    task = _limited(_check_task(task), limit)
    if template is not None:
        task = task.with_template(template)
    return _evaluate_many(lm, [task], scorers, batch_size=batch_size, progress=progress, n_boot=n_boot,
                          seed=seed, too_long=too_long, labels=True, chat_template=chat_template,
                          domain_samples=domain_samples, domain_source=domain_source)[0]


def evaluate_fewshot(
    lm: LM,
    task: Task | str,
    n_shot: int,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    *,
    split: str | None = None,
    source: str | None = None,
    scorers: str | Sequence[str] | None = None,
    limit: int | None = None,
    batch_size: int | str = "auto",
    progress: bool = True,
    too_long: str = "error",
    chat_template: Any = None,
) -> pd.DataFrame:
    """Accuracy with ``n_shot`` labelled examples prepended, over several shot seeds (mean ± std).

    Args:
        task: a task name (loaded with ``split``/``source``) or a loaded ``Task``; ``limit`` keeps its first
            items either way.
        n_shot: examples per prompt (>= 1); one shared set per seed, drawn as in ``tasks.fewshot``.
        seeds: shot seeds; all of their requests go to the engine in one call.
        too_long, chat_template: as in :func:`evaluate` (under a chat template the examples are turns of their own,
            unless ``ChatTemplate(fewshot_as_multiturn=False)``).

    Returns:
        One row per scorer: ``scorer``, ``n_shot``, ``n_items``, ``n_seeds``, ``mean``, ``std`` (sample
        std over seeds, NaN for one seed) and ``acc_seed_<s>`` per seed.
    """
    scorers = check_scorers(scorers)
    check_int("n_shot", n_shot, 1)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds: expected a non-empty list of integers, got {seeds!r}")
    for s in seeds:
        check_int("seeds", s, 0)
    if isinstance(task, str):
        check_int("limit", limit, 1, allow_none=True)
        runs = [tasks.load(task, split, source=source, limit=limit, n_shot=n_shot, shot_seed=s) for s in seeds]
    else:
        base = _limited(_check_task(task), limit)
        runs = [tasks.fewshot(base, n_shot, seed=s) for s in seeds]
    results = _evaluate_many(lm, runs, scorers, batch_size=batch_size, progress=progress, n_boot=0, seed=0,
                             too_long=too_long, chat_template=chat_template)
    acc = np.array([[r.accuracy.set_index("scorer").loc[s, "accuracy"] for r in results] for s in scorers])
    out = pd.DataFrame({
        "scorer": scorers,
        "n_shot": n_shot,
        "n_items": len(results[0].items),
        "n_seeds": len(seeds),
        "mean": acc.mean(axis=1),
        "std": acc.std(axis=1, ddof=1) if len(seeds) > 1 else np.nan,
    })
    for k, s in enumerate(seeds):
        out[f"acc_seed_{s}"] = acc[:, k]
    return out


def _dp_label(domain_premise: Any) -> str:
    """A domain premise as a table label: the string itself, or the callable's name in brackets."""
    return domain_premise if isinstance(domain_premise, str) else f"({getattr(domain_premise, '__name__', 'callable')})"


def ablate(
    lm: LM,
    task: Task | str,
    templates: Sequence[Template | str] | None = None,
    domain_premises: Sequence[Any] | None = None,
    scorers: str | Sequence[str] | None = None,
    limit: int | None = None,
    *,
    batch_size: int | str = "auto",
    progress: bool = True,
    n_boot: int = 1000,
    seed: int = 0,
    too_long: str = "error",
    chat_template: Any = None,
) -> pd.DataFrame:
    """Accuracy per (template, domain premise, scorer) with bootstrap CIs; one engine call for the whole grid.

    "The paper's prompt vs the harness's vs my own" is one call:
    ``ablate(lm, task, templates=["paper", "lm-eval", my_template])``.

    Args:
        task: the loaded task whose items are re-rendered (``Task.with_template``).
        templates: template families (``"paper"``, ``"paper_table"``, ``"lm-eval"``), names from
            ``tasks.templates(task.name)`` or ``Template`` objects; default: the task's own.
        domain_premises: domain premises (format strings or callables) crossed with every template;
            default: each template's own.
        scorers, limit, batch_size, progress, n_boot, seed, too_long, chat_template: as in :func:`evaluate` (one
            chat template for every cell).

    Returns:
        One row per (template, domain premise, scorer): ``template`` (as given: family or template
        name), ``template_name`` (the template used), ``domain_premise`` (the string used), ``scorer``,
        ``lm_eval_metric`` / ``lm_eval_reports`` (as in ``EvalResult.accuracy``), ``n``, ``accuracy``,
        ``ci_low``, ``ci_high``, and the exact McNemar test of the same items against the grid's first
        cell (first template, first domain premise) under the same scorer: ``only_this`` (items this
        cell gets right and the first cell wrong), ``only_ref`` and ``p_vs_ref`` (1.0 for the first cell).
    """
    scorers = check_scorers(scorers)
    task = _limited(_check_task(task), limit)
    for name, value in (("templates", templates), ("domain_premises", domain_premises)):
        if value is not None and (isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value):
            raise ValueError(f"{name}: expected a non-empty list or None, got {value!r}")
    grid = [(tpl, dp) for tpl in (templates or [task.template]) for dp in (domain_premises or [None])]
    variants = [task.with_template(tpl, domain_premise=dp) for tpl, dp in grid]
    results = _evaluate_many(lm, variants, scorers, batch_size=batch_size, progress=progress, n_boot=n_boot,
                             seed=seed, too_long=too_long, chat_template=chat_template)
    frames = []
    ref = results[0].items
    for (tpl, _), variant, res in zip(grid, variants, results):
        acc = res.accuracy[["scorer", "lm_eval_metric", "lm_eval_reports", "n", "accuracy", "ci_low", "ci_high"]].copy()
        acc.insert(0, "domain_premise", _dp_label(variant.template.domain_premise))
        acc.insert(0, "template_name", variant.template.name)
        acc.insert(0, "template", tpl if isinstance(tpl, str) else tpl.name)
        a, b = res.items, ref
        if len(a) != len(b):  # too_long="skip" left out different items: test the ones both kept
            a, b = (f.set_index("id") for f in (a, b))
            a, b = a.loc[a.index.intersection(b.index)], b.loc[a.index.intersection(b.index)]
        tests = [mcnemar(a[f"correct_{s}"], b[f"correct_{s}"]) for s in scorers]
        acc["only_this"], acc["only_ref"], acc["p_vs_ref"] = ([t[k] for t in tests] for k in range(3))
        frames.append(acc)
    return pd.concat(frames, ignore_index=True)
