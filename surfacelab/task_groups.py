"""Accuracy per task and per group of tasks of a run that holds several (a whole lm-eval MMLU run: 57 subjects in
four groups under ``mmlu``): surfacelab's own with bootstrap CIs, beside the mean and standard error as the framework
averages a group (``group_mean``, lm-evaluation-harness 0.4's rules) and, for a log's run, the framework's own
record (``by_task``)."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .runs import EvalResult, accuracy_table


def by_task(run: EvalResult) -> pd.DataFrame:
    """Accuracy per task and per group of tasks of ``run``, per scorer: surfacelab's (with its bootstrap CI) beside
    the mean and standard error as the framework averages them, and for a log's run the framework's own numbers
    (``task_table``; one row per scorer for a run of one task)."""
    reported = run.meta.get("log_reported")
    metrics = dict(zip(run.accuracy["scorer"], run.accuracy["log_metric"])) if reported is not None else None
    return task_table(run.items, run.scorers, run.meta.get("task_groups", {}), run.meta.get("n_boot", 1000),
                      run.meta.get("seed", 0), reported=reported, metrics=metrics)


def group_mean(values: Sequence[float], stderrs: Sequence[float], sizes: Sequence[int],
               weighting: str) -> tuple[float, float]:
    """A group's score from its tasks' as lm-evaluation-harness 0.4 averages them (``lm_eval.api.metrics``):
    ``size`` (``weight_by_size``): the size-weighted mean and the pooled standard error
    (``pooled_sample_stderr``: sqrt(sum((n_i - 1) * se_i^2 * n_i) / (N - k) / N)); ``plain``: the mean of the task
    scores and sqrt(sum(se_i^2)) / k (``unweighted_mean_stderr``). The standard error is NaN when a task has none
    (lm-eval's "N/A": a task of one document)."""
    v, se, n = (np.asarray(x, dtype=float) for x in (values, stderrs, sizes))
    if weighting == "size":
        mean = float((v * n).sum() / n.sum())
        stderr = float(np.sqrt(((n - 1) * se ** 2 * n).sum() / (n.sum() - len(n)) / n.sum())) if n.sum() > len(n) \
            else math.nan
    elif weighting == "plain":
        mean, stderr = float(v.mean()), float(np.sqrt((se ** 2).sum()) / len(v))
    else:
        raise ValueError(f"weighting: expected 'size' or 'plain', got {weighting!r}")
    return mean, stderr


def task_table(items: pd.DataFrame, scorers: Sequence[str], groups: Mapping[str, Mapping[str, Any]], n_boot: int,
               seed: int, *, reported: Mapping[str, Mapping[str, Mapping[str, float]]] | None = None,
               metrics: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Accuracy per task and group of tasks, per scorer.

    Args:
        items: a run's items frame (its ``task`` column says which task each item is of).
        scorers: the run's scorers.
        groups: group -> ``{"subtasks": [...], "weighting": "size" | "plain"}`` (``group_mean``); a group's
            subtasks are tasks or groups, and those the run does not hold are skipped.
        n_boot, seed: the bootstrap of the CIs (``accuracy_table``: a group's CI resamples its items).
        reported, metrics: the framework's own numbers (name -> ``{"aggregates": {metric: value}, "stderrs":
            {metric: se}}``) and the metric each scorer recomputes; both given, ``log_metric``, ``log_value`` and
            ``log_stderr`` are added.

    Returns:
        One row per (task or group, scorer), each group before its members (depth first), then the tasks no group
        holds: ``task``, ``kind`` ("group" or "task"), ``depth`` (0 = outermost), ``tasks`` (tasks below it),
        ``scorer``, ``n``, ``correct``, ``accuracy``, ``ci_low``, ``ci_high`` (surfacelab's: over the items),
        ``mean`` and ``stderr`` (the framework's way: a task's mean and sample standard error; a group's by
        ``group_mean`` over its tasks), then the framework's own numbers if given.
    """
    held = list(dict.fromkeys(items["task"]))
    tree = {g: list(v["subtasks"]) for g, v in groups.items()}
    inner = {k for kids in tree.values() for k in kids}
    order: list[tuple[str, int]] = []

    def visit(name: str, depth: int) -> None:
        order.append((name, depth))
        for k in tree.get(name, []):
            if k in groups or k in held:
                visit(k, depth + 1)
    for g in groups:
        if g not in inner:
            visit(g, 0)
    order += [(t, 0) for t in held if t not in {n for n, _ in order}]
    leaf = {t: _task_accuracy(items[items["task"] == t], scorers, n_boot, seed) for t in held}
    rows = []
    for name, depth in order:
        below = [t for t in task_leaves(name, tree) if t in held]
        if name in groups:
            acc = accuracy_table(items[items["task"].isin(below)], list(scorers), n_boot, seed)
            stats = [leaf[t].set_index("scorer") for t in below]
            pairs = [group_mean([s.loc[sc, "accuracy"] for s in stats], [s.loc[sc, "stderr"] for s in stats],
                                [s.loc[sc, "n"] for s in stats], groups[name]["weighting"]) for sc in scorers]
            acc["mean"], acc["stderr"] = [m for m, _ in pairs], [e for _, e in pairs]
        else:
            acc = leaf[name].copy()
        acc.insert(0, "tasks", len(below))
        acc.insert(0, "depth", depth)
        acc.insert(0, "kind", "group" if name in groups else "task")
        acc.insert(0, "task", name)
        if reported is not None and metrics is not None:
            got = reported.get(name, {})
            acc["log_metric"] = [metrics.get(s, "") for s in scorers]
            acc["log_value"] = [got.get("aggregates", {}).get(m, math.nan) for m in acc["log_metric"]]
            acc["log_stderr"] = [got.get("stderrs", {}).get(m, math.nan) for m in acc["log_metric"]]
        rows.append(acc)
    return pd.concat(rows, ignore_index=True)


def _task_accuracy(part: pd.DataFrame, scorers: Sequence[str], n_boot: int, seed: int) -> pd.DataFrame:
    """``accuracy_table`` of one task's items with ``mean`` (its accuracy) and ``stderr`` (lm-eval's ``mean_stderr``:
    the sample standard deviation over sqrt(n); NaN for one item, lm-eval's "N/A")."""
    acc = accuracy_table(part, list(scorers), n_boot, seed)
    correct = part[[f"correct_{s}" for s in scorers]].to_numpy(dtype=float)
    acc["mean"] = acc["accuracy"]
    acc["stderr"] = correct.std(axis=0, ddof=1) / np.sqrt(len(part)) if len(part) > 1 else math.nan
    return acc


def task_leaves(name: str, tree: Mapping[str, Sequence[str]]) -> list[str]:
    """The tasks below ``name`` in ``tree`` (group -> its members, tasks or groups), each once, in order; ``name``
    itself when it is a task. A group listed twice (or a cycle in an edited file) is walked once."""
    out, todo, seen = [], [name], set()
    while todo:
        n = todo.pop(0)
        if n not in seen:
            seen.add(n)
            if n in tree:
                todo[:0] = list(tree[n])
            else:
                out.append(n)
    return out
