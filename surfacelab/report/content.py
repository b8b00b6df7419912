"""What a run report holds, computed from the runs' frames (no forward pass): the sources, accuracy per scorer (and
per task and group of a run of several tasks) with bootstrap CIs, who rescues whom, the verdict labels, the flipped
items with each one's verdict in words, and the item table's columns. Plain values only: ``page`` escapes them."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import explore
from ..runs import EvalResult
from ..task_groups import by_task
from ..why.verdicts import verdict_sentences

#: Decimals of the LM margin (nats) the item table holds.
MARGIN_DECIMALS = 3
#: Keys of a run's meta shown among its sources (when present), in this order.
META_KEYS = ("source", "variant", "n_shot", "fingerprint", "backend", "seed", "n_boot", "lm_eval_task", "log_format")


def check_runs(runs: Any) -> dict[str, EvalResult]:
    """``runs`` as ``{name: EvalResult}``: one run, a list of runs (named by their template, made unique) or a
    mapping; side by side runs must score the same items (``explore.item_table``'s rule)."""
    if isinstance(runs, EvalResult):
        runs = [runs]
    if isinstance(runs, Mapping):
        named = dict(runs)
    elif isinstance(runs, Sequence) and not isinstance(runs, str):
        named = {}
        for k, run in enumerate(runs):
            if not isinstance(run, EvalResult):
                raise TypeError(f"runs[{k}]: expected an EvalResult, got {type(run).__name__}")
            name = str(run.template) or f"run {k + 1}"
            named[name if name not in named else f"{name} ({k + 1})"] = run
    else:
        raise TypeError(f"runs: expected an EvalResult, a list of them or a {{name: EvalResult}} mapping, got "
                        f"{type(runs).__name__}")
    if not named:
        raise ValueError("runs: no run to report")
    for name in named:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"runs: a run's name must be a non-empty string, got {name!r}")
    explore.select(named)  # the runs' checks: EvalResults on the same items, in the same order
    return named


def _number(x: Any, digits: int | None = None) -> float | None:
    """A float for JSON (None for NaN), rounded to ``digits``."""
    x = float(x)
    if not math.isfinite(x):
        return None
    return round(x, digits) if digits is not None else x


def accuracy_rows(frame: pd.DataFrame) -> list[dict]:
    """``EvalResult.accuracy``-shaped rows as plain values."""
    return [{"scorer": str(r.scorer), "n": int(r.n), "correct": int(r.correct), "accuracy": _number(r.accuracy),
             "ci_low": _number(r.ci_low), "ci_high": _number(r.ci_high), "ties": int(r.ties)}
            for r in frame.itertuples()]


def per_task(run: EvalResult) -> list[dict]:
    """Accuracy per scorer of each task and group of tasks (``task_groups.by_task``: the run's bootstrap; a log's
    groups as the framework groups them, with its own value where it logged one); [] for a run of one task."""
    if "task" not in run.items or run.items["task"].nunique() < 2:
        return []
    table = by_task(run)
    out = []
    for (name, kind, depth), part in table.groupby(["task", "kind", "depth"], sort=False):
        logged = ([_number(v) for v in part["log_value"]] if "log_value" in part else [None] * len(part))
        out.append({"task": str(name), "group": kind == "group", "depth": int(depth),
                    "rows": [{**r, "logged": v} for r, v in zip(accuracy_rows(part), logged)]})
    return out


def item_options(run: EvalResult) -> list[list[str]]:
    """Each item's options in option order, from the run's option rows."""
    rows = run.scores.sort_values(["item", "option_index"], kind="stable")
    grouped = rows.groupby("item", sort=True)["option"].agg(list)
    return [list(map(str, grouped.get(i, []))) for i in run.items["item"]]


def sources(runs: Mapping[str, EvalResult], given: Mapping[str, Mapping] | None) -> list[dict]:
    """Per run: what it is (task / split, model, template, items), its cost line, what its meta says of where it
    came from, and the explorer's own description of it (``given``: run name -> a JSON-able mapping)."""
    out = []
    for name, run in runs.items():
        facts = [("task", f"{run.task}/{run.split}"), ("model", run.model), ("template", run.template),
                 ("scorers", ", ".join(run.scorers)), ("run", explore.run_line(run))]
        facts += [(k, str(run.meta[k])) for k in META_KEYS if run.meta.get(k) not in (None, "")]
        facts += [(f"explorer: {k}", str(v)) for k, v in (given or {}).get(name, {}).items()]
        out.append({"name": name, "facts": facts})
    return out


def flipped(runs: Mapping[str, EvalResult], options: list[list[str]]) -> list[dict]:
    """The items the columns disagree on (one right, one wrong), each with every run's verdict in words."""
    cols = explore.columns(runs)
    if len(cols) < 2:
        return []
    at = explore.select(runs, disagree=cols)
    words = {name: verdict_sentences(run.items.iloc[at], [options[k] for k in at])
             for name, run in runs.items() if "why" in run.items}
    return [{"item": int(k), "why": {name: w[j] for name, w in words.items()}} for j, k in enumerate(at)]


def item_columns(runs: Mapping[str, EvalResult], options: list[list[str]]) -> dict[str, Any]:
    """The item table, column by column (compact: one list per column): id, task, premise, options, gold, and per
    ``<run>:<scorer>`` the picked option's index and whether it is right, per run its LM margin and label."""
    first = next(iter(runs.values())).items
    out: dict[str, Any] = {
        "id": first["id"].astype(str).tolist(),
        "task": first["task"].astype(str).tolist() if "task" in first else None,
        "premise": first["premise"].astype(str).tolist(),
        "options": options,
        "gold": first["gold"].astype(int).tolist(),
        "columns": [], "runs": []}
    for name, run in runs.items():
        for s in run.scorers:
            right = run.items[f"correct_{s}"].to_numpy(dtype=bool)
            out["columns"].append({"name": f"{name}:{s}", "pick": run.items[f"pred_{s}"].astype(int).tolist(),
                                   "right": "".join(np.where(right, "1", "0"))})
        margin = (run.items["gap_lm"].to_numpy(dtype=float).round(MARGIN_DECIMALS) if "gap_lm" in run.items
                  else np.full(len(run.items), np.nan))
        why = run.items["why"].astype(str).tolist() if "why" in run.items else None
        out["runs"].append({"name": name, "margin": [_number(m) for m in margin], "why": why})
    return out


def content(runs: Mapping[str, EvalResult], given: Mapping[str, Mapping] | None = None) -> dict[str, Any]:
    """Everything the report shows, as plain values (see the module docstring)."""
    first = next(iter(runs.values()))
    options = item_options(first)
    n_options = first.items["n_options"].to_numpy(dtype=float) if len(first.items) else np.array([])
    labels = first.labels
    return {
        "sources": sources(runs, given),
        "accuracy": [{"run": name, "rows": accuracy_rows(run.accuracy), "tasks": per_task(run)}
                     for name, run in runs.items()],
        "chance": _number((1 / n_options).mean()) if len(n_options) else None,
        "columns": explore.columns(runs),
        "rescues": explore.rescues(runs).to_numpy().tolist(),
        "labels": labels.to_dict("records") if len(labels) else [],
        "label_run": next(iter(runs)),
        "flipped": flipped(runs, options),
        "items": item_columns(runs, options),
    }
