"""A run and its statistics: ``EvalResult`` (the frames of one run over a dataset, whatever made it: ``evaluate``,
``explore.evaluate_in_chunks`` or ``logs.from_log``), the one builder of its items frame (``items_frame``), accuracy
with bootstrap CIs, exact McNemar tests between scorers, and verdict-label tables of several runs (per task and
group of tasks: ``task_groups``)."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ._checks import is_int
from .engine.requests import LOGPROB_COLUMNS
from .scorers import SCORERS, get_scorer, not_applicable
from .run_files import read_run, write_run
from .scoring import MCResult, item_table


def scored_domain(item: pd.Series) -> str | None:
    """The domain premise an item's options were scored after (a row of ``EvalResult.items``): the rendered one under
    a chat template (``domain_context``), else ``domain_premise``; None when there is none (blank)."""
    context = item.get("domain_context")
    domain = context if isinstance(context, str) else item.get("domain_premise")
    return domain if isinstance(domain, str) and domain.strip() else None


@dataclasses.dataclass
class EvalResult:
    """Scores, predictions and statistics of one evaluation run.

    Attributes:
        task, split, model, template: what was run (template = the template's name).
        scorers: the scorers, in the order given.
        scores: one row per (item, option): ``item`` (0-based position), ``id``, ``option_index``,
            ``is_gold``, ``context``, ``option`` and the columns of ``MCResult.table`` (raw log-probs,
            lengths, every selected scorer's column and its ``rank_<scorer>``, 1 = best), then
            ``truncated`` / ``domain_truncated``: context tokens cut from the left of the premise /
            domain premise to fit the model's window (0: nothing cut).
        items: one row per item: ``item``, ``task`` (the task the item belongs to: a run read from a whole
            lm-eval folder holds several; ids are unique within a task), ``id``, ``gold``, ``gold_option``,
            ``n_options``, ``premise``, ``domain_premise``, then per scorer ``pred_<scorer>`` (predicted option index),
            ``correct_<scorer>`` and ``tie_<scorer>`` (the top score is shared), then the verdict columns (``against``,
            ``gap_*``, ``prior``, ``mass_ratio``, ``mass_gain``, ``why``, ``rescued_by``;
            see :mod:`surfacelab.why.verdicts`), ``truncated`` (most premise tokens cut from any option) and
            ``truncation_differs`` (its options were cut by different amounts).
        accuracy: one row per scorer: ``n``, ``correct``, ``accuracy``, ``ci_low``/``ci_high`` (95%
            percentile bootstrap over items, seeded), ``ties``; for ``evaluate``, ``lm_eval_metric`` (the
            lm-evaluation-harness metric the scorer equals under an lm-eval template, else "") and
            ``lm_eval_reports`` (the harness's YAML for the task reports that metric); for a log's run
            (``logs.from_log``), ``log_metric``, ``log_reports`` and ``log_value``.
        paired: one row per pair of scorers: ``acc_a``, ``acc_b``, ``only_a`` (items a gets right and
            b wrong), ``only_b`` and ``p_value`` (exact McNemar: two-sided binomial test of
            ``only_a`` out of ``only_a + only_b`` at 1/2; 1.0 when there are no discordant items).
        meta: source file, variant, n_shot, n_boot, seed, whether the task is flipped,
            ``skipped_too_long`` (ids of the items left out with ``too_long="skip"``), ``why_cost``
            (the extra next-token call of the labels: prompts, tokens forwarded, seconds), ``engine`` (the
            scoring call's ``requests``, how many were ``cached`` and ``tokens_forwarded``; one call serves every
            task of an ``ablate`` grid) and, for an
            lm-eval template, the harness's task name and YAML (``lm_eval_task``, ``lm_eval_yaml``); for a run of
            several tasks, ``task_groups`` (group -> ``subtasks`` and ``weighting``, as ``task_groups.by_task`` reads
            them).
        labels: one row per ``why`` label: ``why``, ``n``, ``share`` and ``rescued_<scorer>`` (items of
            that label the scorer gets right), see ``label_counts``.
    """

    task: str
    split: str
    model: str
    template: str
    scorers: list[str]
    scores: pd.DataFrame
    items: pd.DataFrame
    accuracy: pd.DataFrame
    paired: pd.DataFrame
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)
    labels: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)

    def best(self) -> list[str]:
        """The scorers with the highest accuracy (several on an exact tie)."""
        acc = self.accuracy.set_index("scorer")["accuracy"]
        return list(acc.index[acc == acc.max()])

    def save(self, directory: str | Path) -> Path:
        """Write ``items.csv``, ``scores.csv``, ``accuracy.csv``, ``paired.csv``, ``labels.csv`` (spreadsheet-safe
        CSV) and ``meta.json`` (``run_files.write_run``)."""
        return write_run(self, directory)

    @classmethod
    def load(cls, directory: str | Path) -> "EvalResult":
        """Read a run written by ``save``, refused with a ``ValueError`` naming the folder, the file and the column or
        row unless it is a whole, consistent run (``run_files.read_run``; text comes back exactly as it was)."""
        return cls(**read_run(directory))

    def show(self) -> Any:
        """Accuracy per scorer with its 95% CI and the chance line (``viz.accuracy_ci``)."""
        from . import viz

        n_options = self.items["n_options"] if "n_options" in self.items else None
        chance = float((1 / n_options).mean()) if n_options is not None and len(n_options) else None
        return viz.accuracy_ci(self.accuracy.assign(task=self.task), "task", chance=chance,
                               title=f"{self.task}/{self.split}: accuracy with 95% CI")

    def result(self, i: int) -> MCResult:
        """Item ``i``'s scores as an ``MCResult``, without scoring it again: its option rows of ``.scores``
        completed with every registered scorer's column; the token frame is empty (``evaluate`` keeps only
        each option's totals). Its premise and domain premise are the contexts the options were scored after (under a
        chat template, the rendered ones: ``scores["context"]``, ``items["domain_context"]``)."""
        if not is_int(i) or not 0 <= i < len(self.items):
            raise ValueError(f"i: expected an item position in [0, {len(self.items)}), got {i!r}")
        row = self.items.iloc[int(i)]
        rows = self.scores[self.scores["item"] == row["item"]]
        table = item_table(rows)  # every scorer, from the run's rows
        contexts = rows["context"].astype(str).unique()
        premise = contexts[0] if len(contexts) == 1 else str(row["premise"])  # a flipped item: one per option
        domain = None if table[LOGPROB_COLUMNS["domain"]].isna().all() else scored_domain(row)
        tokens = pd.DataFrame({"option": pd.Series(dtype=str), "condition": pd.Series(dtype=str),
                               "token": pd.Series(dtype=str), "logprob": pd.Series(dtype=float)})
        kept = {k: self.meta.get(k) for k in ("fingerprint", "backend", "seed")}
        kept.update({"not_applicable": self.meta["not_applicable"]} if self.meta.get("not_applicable") else {})
        kept.update({"chat_template": self.meta["chat_template"]} if "chat_template" in self.meta else {})
        return MCResult(premise, [str(o) for o in table["option"]], domain, self.model, table, tokens,
                        int(row["gold"]), meta={"template": self.template, **kept, "scorers": self.scorers})

    def __repr__(self) -> str:
        named = next((c for c in ("lm_eval_metric", "log_metric") if c in self.accuracy), None)  # the peer's metric
        metrics = self.accuracy[named] if named else [""] * len(self.accuracy)
        acc = ", ".join(f"{r.scorer}{f' ({m})' if m else ''}={r.accuracy:.3f}"
                        for r, m in zip(self.accuracy.itertuples(), metrics))
        skipped = len(self.meta.get("skipped_too_long", []))
        more = f", {skipped} skipped as too long" if skipped else ""
        return f"EvalResult({self.task}/{self.split}, model={self.model!r}, n={len(self.items)}{more}: {acc})"

    def _repr_html_(self) -> str:
        head = f"<b>{self.task}/{self.split}</b> &middot; {self.model} &middot; {len(self.items)} items"
        return head + self.accuracy.to_html(index=False, float_format=lambda v: f"{v:.3f}")


def scorer_columns(table: pd.DataFrame, scorers: Sequence[str]) -> pd.DataFrame:
    """An option table with only the selected scorers' columns and ranks (the conditions' raw columns stay), as a
    run keeps its ``scores``."""
    keep = {get_scorer(s).column for s in scorers} | {f"rank_{s}" for s in scorers}
    dropped = {c for s in SCORERS.values() for c in (s.column, f"rank_{s.name}")} - keep - set(LOGPROB_COLUMNS.values())
    return table[[c for c in table.columns if c not in dropped]].copy()


def items_frame(tasks: str | Sequence[str], ids: Sequence[Any], golds: Sequence[int], gold_options: Sequence[str],
                n_options: Sequence[int], premises: Sequence[str], domain_premises: Any, scores: pd.DataFrame,
                scorers: Sequence[str]) -> pd.DataFrame:
    """One row per item of a run: ``item``, ``task`` (one name, or one per item), ``id``, ``gold``, ``gold_option``,
    ``n_options``, ``premise``, ``domain_premise`` (one string, or one per item), and per scorer ``pred_<scorer>``
    (the first option in option order among those ranked 1 by ``option_table``: exact ties share the rank; -1 for
    an item without scores), ``correct_<scorer>`` and ``tie_<scorer>`` (the top score is shared)."""
    n_items = len(ids)
    gold = np.asarray(golds, dtype=int)
    items = pd.DataFrame({"item": np.arange(n_items), "task": tasks if isinstance(tasks, str) else list(tasks),
                          "id": list(ids), "gold": gold, "gold_option": list(gold_options),
                          "n_options": list(n_options), "premise": list(premises), "domain_premise": domain_premises})
    for s in scorers:
        _predict(items, scores, s)
    return items


def accuracy_ci(correct: np.ndarray, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Accuracy per column of an (items x methods) boolean array, with a seeded 95% percentile bootstrap CI (the
    items resampled with replacement, the same resamples for every column); NaN bounds for ``n_boot=0``."""
    n = len(correct)
    if n_boot:
        idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
        low, high = np.percentile(correct[idx].mean(axis=1), [2.5, 97.5], axis=0)
    else:
        low = high = np.full(correct.shape[1], np.nan)
    return correct.mean(axis=0), low, high


def _predict(items: pd.DataFrame, scores: pd.DataFrame, scorer: str) -> None:
    """``pred_<scorer>``, ``correct_<scorer>`` and ``tie_<scorer>`` of ``items`` from the ranks in ``scores``."""
    n_items, by_item = len(items), scores["item"].to_numpy()
    is_top = (scores[f"rank_{scorer}"] == 1).to_numpy()
    pred = pd.Series(scores["option_index"].to_numpy()[is_top], index=by_item[is_top]).groupby(level=0).min()
    pred = pred.reindex(range(n_items)).fillna(-1).astype(int).to_numpy()
    items[f"pred_{scorer}"] = pred
    items[f"correct_{scorer}"] = pred == items["gold"].to_numpy()
    items[f"tie_{scorer}"] = np.bincount(by_item[is_top], minlength=n_items) > 1


def rescued_by(items: pd.DataFrame, scorers: Sequence[str]) -> pd.Series:
    """Per item that LM loses (``why`` is not "right"), the other scorers that get it right, comma-separated."""
    lost = (items["why"] != "right").to_numpy()
    names = np.full(len(items), "", dtype=object)
    for s in scorers:
        if s != "lm":
            names = names + np.where(lost & items[f"correct_{s}"].to_numpy(dtype=bool), s + ",", "").astype(object)
    return pd.Series(names, index=items.index).str[:-1]  # without the last comma ("" stays "")


def join_batch(scores: Sequence[pd.DataFrame], items: Sequence[pd.DataFrame],
               scorers: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``scores`` and ``items`` frames of runs (numbered consecutively) joined, their batch scorers
    (``Scorer.batch``: Batch Calibration) computed again over all the items of each task, with their ranks,
    predictions and ``rescued_by``: a run made in chunks gets the scores of one run."""
    scores, items = pd.concat(scores, ignore_index=True), pd.concat(items, ignore_index=True)
    batch = [get_scorer(s) for s in scorers if get_scorer(s).batch]
    if not batch:
        return scores, items
    task = scores["item"].map(items.set_index("item")["task"])
    for _, rows in scores.groupby(task, sort=False):
        for s in batch:
            scores.loc[rows.index, s.column] = np.nan if not_applicable(s, rows) else s.compute(rows)
    for s in batch:
        scores[f"rank_{s.name}"] = scores.groupby("item", sort=False)[s.column].rank(ascending=False, method="min")
        _predict(items, scores, s.name)
    if "why" in items:
        items["rescued_by"] = rescued_by(items, scorers)
    return scores, items


def na_notes(accuracy: pd.DataFrame, metas: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Write ``accuracy["note"]``: why each scorer that scored no item does not apply (the first of the runs'
    ``meta["not_applicable"]`` that names it: ``scorers.not_applicable``), "" for the others; returns those reasons
    (the joined run's ``meta["not_applicable"]``)."""
    given = {s: why for m in metas for s, why in m.get("not_applicable", {}).items() if why}
    na = {s: given[s] for s, n in zip(accuracy["scorer"], accuracy["n"]) if n == 0 and s in given}
    accuracy["note"] = [na.get(s, "") for s in accuracy["scorer"]]
    return na


def accuracy_table(items: pd.DataFrame, scorers: list[str], n_boot: int, seed: int) -> pd.DataFrame:
    """Accuracy per scorer with a seeded 95% percentile bootstrap CI (items resampled with replacement), each scorer's
    ``formulation`` (``scorers.FORMULATIONS``) and ``olmes`` (``olmes_rows``); NaN, with ``n`` 0, for a scorer that
    scored no item (one that does not apply to the task: ``scorers.not_applicable``)."""
    correct = items[[f"correct_{s}" for s in scorers]].to_numpy(dtype=bool)
    acc, low, high = accuracy_ci(correct, n_boot, seed)
    scored = (items[[f"pred_{s}" for s in scorers]].to_numpy() >= 0).any(axis=0)
    acc, low, high = (np.where(scored, v, np.nan) for v in (acc, low, high))
    return pd.DataFrame({
        "scorer": scorers,
        "n": np.where(scored, len(correct), 0),
        "correct": correct.sum(axis=0),
        "accuracy": acc,
        "ci_low": low,
        "ci_high": high,
        "ties": [int(items[f"tie_{s}"].sum()) for s in scorers],
        "formulation": [get_scorer(s).formulation for s in scorers],
    }).assign(olmes=lambda t: olmes_rows(t))


def olmes_rows(accuracy: pd.DataFrame) -> np.ndarray:
    """Which rows of an accuracy table OLMES (Gu et al. 2024) reports for the task: the better of its two
    formulations, the cloze one (its most accurate ``cloze`` scorer: the options as text, with or without a
    normalisation) and the multiple-choice one (``mcf``); both where they tie, none unless the run has both.

    >>> olmes_rows(pd.DataFrame({"formulation": ["cloze", "cloze", "mcf"], "accuracy": [0.4, 0.5, 0.45]}))
    array([False,  True, False])
    """
    form, acc = accuracy["formulation"].to_numpy(), accuracy["accuracy"].to_numpy(dtype=float)
    cloze, mcf = form == "cloze", form == "mcf"
    if not cloze.any() or not mcf.any():
        return np.zeros(len(accuracy), dtype=bool)
    if np.isnan(acc[cloze]).all() or np.isnan(acc[mcf]).all():  # a scorer that does not apply has NaN accuracy
        return np.zeros(len(accuracy), dtype=bool)
    best = max(np.nanmax(acc[cloze]), np.nanmax(acc[mcf]))
    return (cloze | mcf) & (acc == best)


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> tuple[int, int, float]:
    """Exact McNemar test of two paired correctness vectors.

    Returns:
        ``(only_a, only_b, p_value)``: items only ``a`` gets right, items only ``b`` gets right, and the
        two-sided binomial p-value of ``only_a`` successes in ``only_a + only_b`` trials at 1/2 (1.0
        when there are no discordant items).
    """
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError(f"b: expected {a.shape[0]} values like a, got {b.shape[0]}")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    from scipy.stats import binomtest  # here: scipy.stats adds 0.4 s to every kernel's import of surfacelab

    p = binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
    return only_a, only_b, float(p)


def paired_table(items: pd.DataFrame, scorers: list[str]) -> pd.DataFrame:
    """Exact McNemar test (``mcnemar``) for every pair of scorers, in ``EvalResult.paired``'s columns (NaN where a
    scorer scored no item)."""
    rows = []
    scored = {s: bool((items[f"pred_{s}"] >= 0).any()) for s in scorers}
    for a, b in itertools.combinations(scorers, 2):
        ca, cb = items[f"correct_{a}"].to_numpy(), items[f"correct_{b}"].to_numpy()
        only_a, only_b, p = mcnemar(ca, cb)
        if not (scored[a] and scored[b]):  # a scorer that does not apply: nothing to compare
            only_a, only_b, p = 0, 0, np.nan
        rows.append({"scorer_a": a, "scorer_b": b, "acc_a": ca.mean() if scored[a] else np.nan,
                     "acc_b": cb.mean() if scored[b] else np.nan, "only_a": only_a, "only_b": only_b, "p_value": p})
    return pd.DataFrame(rows, columns=["scorer_a", "scorer_b", "acc_a", "acc_b", "only_a", "only_b", "p_value"])


def label_table(results: Sequence[EvalResult]) -> pd.DataFrame:
    """``EvalResult.labels`` of several runs stacked, with ``task``, ``split`` and ``model`` in front."""
    frames = []
    for k, r in enumerate(results):
        if not isinstance(r, EvalResult):
            raise TypeError(f"results[{k}]: expected an EvalResult, got {type(r).__name__}")
        f = r.labels.copy()
        f.insert(0, "model", r.model)
        f.insert(0, "split", r.split)
        f.insert(0, "task", r.task)
        frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def item_keys(items: pd.DataFrame) -> np.ndarray:
    """Each item's key as text: its ``id``, or ``<task>/<id>`` in a run of several tasks (an id is unique only within
    its task: every MMLU subject has a doc 0)."""
    ids = items["id"].astype(str).to_numpy()
    if items["task"].nunique() <= 1:
        return ids
    return (items["task"].astype(str) + "/" + items["id"].astype(str)).to_numpy()


def task_label(tasks: Sequence[str]) -> str:
    """What a run of several tasks is called: its tasks joined by "+", or the first and how many more.

    >>> task_label(["copa", "copa"]), task_label(["a", "b"]), task_label(["a", "b", "c", "d"])
    ('copa', 'a+b', 'a+3 more tasks')
    """
    names = list(dict.fromkeys(tasks))
    return "+".join(names) if len(names) <= 3 else f"{names[0]}+{len(names) - 1} more tasks"
