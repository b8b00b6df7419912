"""From a whole dataset to the item worth opening: runs in chunks, the item table, filters, who rescues whom,
template edits and the comparison of a run with its baseline. No widgets here (``widgets.explorer`` shows these).

A *run* is an :class:`~surfacelab.runs.EvalResult` (of ``evaluate``, of ``evaluate_in_chunks`` or of
``logs.from_log``); several runs on the same items sit side by side under names ("paper", "edited", "lm-eval").
Columns of the item table are named ``<run>:<scorer>``; a filter names them the same way.

>>> task = sl.tasks.load("copa", "val", limit=6)                                      # doctest: +SKIP
>>> base = evaluate_in_chunks(lm, task, ["lm", "dcpmi"], chunk=3)                    # doctest: +SKIP
>>> other = evaluate_in_chunks(lm, retemplate(task, domain_premise=" then"), ["lm", "dcpmi"])  # doctest: +SKIP
>>> compare(base, other)                       # accuracy, McNemar p and flips per scorer   # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ._results import read_json
from .engine import Cancelled, reporting
from .evaluate import evaluate
from .runs import EvalResult, accuracy_table, item_keys, join_batch, mcnemar, na_notes, paired_table, task_label
from .logs import LOG_SOURCE, log_notes
from .rows import matching, shown_premises
from .run_files import MAX_ROWS
from .tasks import Task, Template
from .tasks.core import check_pattern
from .tasks.registry import FAMILIES, SPECS
from .tasks.task import resolve_template
from .why.verdicts import label_counts

if TYPE_CHECKING:
    from .models import LM

#: Items of a run's first chunk: the first rows show within seconds.
FIRST_CHUNK = 3
#: Items of a run's second chunk; each later chunk holds twice the one before, up to ``MAX_CHUNK``. Rows appear after
#: each chunk and a cancel keeps the chunks done; larger chunks fill the batches, so that a run costs what one
#: ``evaluate`` of its items costs (docs/benchmarks.md).
CHUNK = 25
MAX_CHUNK = 100
#: Characters of the premise the item table shows.
PREMISE_CHARS = 80
#: Decimals of the LM margin (nats) the item table shows (``items["gap_lm"]`` keeps every digit).
MARGIN_DECIMALS = 3
#: Columns of a run's items that name each item's task within the run, in the order looked for (``group_column``).
GROUP_COLUMNS = ("task", "subject")


@dataclasses.dataclass(frozen=True)
class Progress:
    """Where a run stands: ``done`` of ``total`` items after ``seconds``."""

    done: int
    total: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.done / self.seconds if self.seconds > 0 else float("nan")

    @property
    def left_seconds(self) -> float:
        """Time left at the rate so far (NaN before the first chunk)."""
        return (self.total - self.done) / self.per_second if self.done else float("nan")

    def line(self) -> str:
        """ "120 / 200 items · 14.2 items/s · 6 s left" """
        rate = f" · {self.per_second:.1f} items/s" if self.done else ""
        left = f" · {self.left_seconds:.0f} s left" if self.done and self.done < self.total else ""
        return f"{self.done} / {self.total} items{rate}{left}"


def chunk_sizes(total: int, *, chunk: int = CHUNK, first_chunk: int = FIRST_CHUNK,
                max_chunk: int = MAX_CHUNK) -> list[int]:
    """The items of each chunk of a run of ``total`` items: ``first_chunk``, then ``chunk``, then each twice the one
    before up to ``max_chunk`` (the last one takes what is left).

    >>> chunk_sizes(200)
    [3, 25, 50, 100, 22]
    """
    for name, value in (("chunk", chunk), ("first_chunk", first_chunk), ("max_chunk", max_chunk)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    sizes, size, left = [], first_chunk, total
    while left > 0:
        sizes.append(min(size, left))
        left -= sizes[-1]
        size = chunk if len(sizes) == 1 else min(2 * size, max_chunk)
    return sizes


def evaluate_in_chunks(lm: LM, task: Task, scorers: str | Sequence[str] | None = None, *, chunk: int = CHUNK,
                       first_chunk: int = FIRST_CHUNK, max_chunk: int = MAX_CHUNK,
                       on_chunk: Callable[[EvalResult, Progress], None] | None = None,
                       on_progress: Callable[[Progress], None] | None = None, batch_size: int | str = "auto",
                       n_boot: int = 1000, seed: int = 0, too_long: str = "skip",
                       chat_template: object = None) -> EvalResult:
    """``evaluate`` chunk by chunk, so that rows can be shown as they are scored and a cancel keeps what is done.

    Args:
        lm, task, scorers, batch_size, n_boot, seed, too_long, chat_template: as in :func:`surfacelab.evaluate` (an
            item whose option cannot fit the window is skipped by default: one long item does not end a dataset run).
        chunk, first_chunk, max_chunk: the items of each ``evaluate`` call (``chunk_sizes``).
        on_chunk: called after every chunk with the run so far (all finished chunks combined) and the progress.
        on_progress: called within a chunk, after each batch of forward passes that changes the count, with the
            items done estimated from the chunk's requests done (``engine.reporting``).

    Returns:
        The combined run. A ``Cancelled`` raised by the engine (``engine.cancelled_when``) ends the run early: the
        finished chunks are returned with ``meta["stopped_at"]`` = items done (absent when the run finished).
    """
    sizes = chunk_sizes(len(task.items), chunk=chunk, first_chunk=first_chunk, max_chunk=max_chunk)
    parts: list[EvalResult] = []
    t0 = time.perf_counter()
    total, start = len(task.items), 0
    for size in sizes or [0]:  # no items: evaluate's own message
        sub = dataclasses.replace(task, items=task.items[start:start + size])
        try:
            with reporting(_items_done(start, size, total, t0, on_progress) if on_progress is not None else None):
                parts.append(evaluate(lm, sub, scorers, batch_size=batch_size, progress=False, n_boot=0, seed=seed,
                                      too_long=too_long, chat_template=chat_template, domain_source=task))
        except Cancelled:
            if not parts:
                raise
            run = combine(parts, n_boot=n_boot, seed=seed)
            run.meta["stopped_at"] = len(run.items)
            return run
        start += size
        if on_chunk is not None:
            on_chunk(combine(parts, n_boot=0, seed=seed), Progress(start, total, time.perf_counter() - t0))
    return combine(parts, n_boot=n_boot, seed=seed)


def _items_done(start: int, size: int, total: int, t0: float,
                on_progress: Callable[[Progress], None]) -> Callable[[int, int], None]:
    """An ``engine.reporting`` callback for the chunk of ``size`` items from ``start``: ``on_progress`` with the
    items done estimated from the requests done, when that count changes."""
    shown = [start]

    def on_batch(done: int, of: int) -> None:
        now = start + size * done // max(of, 1)
        if now != shown[0]:
            shown[0] = now
            on_progress(Progress(now, total, time.perf_counter() - t0))
    return on_batch


def combine(parts: Sequence[EvalResult], *, n_boot: int = 1000, seed: int = 0) -> EvalResult:
    """Runs of consecutive chunks of one task (or runs of different tasks) as one run: rows renumbered, each item
    keeping its task, batch scorers, accuracy with CIs, paired tests and label counts over all of them (``join_batch``),
    engine counters summed; the run is named after its tasks (``runs.task_label``). An item in two parts is refused."""
    if not parts:
        raise ValueError("parts: no runs to combine")
    first = parts[0]
    scores, items, offset, seen = [], [], 0, {}
    for k, p in enumerate(parts):
        for key in zip(p.items["task"].astype(str), p.items["id"].astype(str)):
            if seen.setdefault(key, k) != k:
                raise ValueError(f"parts: parts {seen[key]} and {k} both hold item {key[1]!r} of {key[0]!r} (combine "
                                 "joins runs of different items: chunks of a task, or different tasks)")
        scores.append(p.scores.assign(item=p.scores["item"] + offset))
        items.append(p.items.assign(item=p.items["item"] + offset))
        offset += len(p.items)
    scores_all, items_all = join_batch(scores, items, first.scorers)
    accuracy = accuracy_table(items_all, first.scorers, n_boot, seed)
    for col in ("lm_eval_metric", "lm_eval_reports"):
        if col in first.accuracy:
            accuracy[col] = first.accuracy[col].to_numpy()
    meta = dict(first.meta, n_boot=n_boot, seed=seed, not_applicable=na_notes(accuracy, [p.meta for p in parts]))
    meta["skipped_too_long"] = [i for p in parts for i in p.meta.get("skipped_too_long", [])]
    counters = [p.meta["engine"] for p in parts if "engine" in p.meta]
    if counters:
        meta["engine"] = {k: sum(c[k] for c in counters) for k in counters[0]}
    return EvalResult(task=task_label(items_all["task"]), split="+".join(dict.fromkeys(p.split for p in parts)),
                      model=first.model, template=first.template, scorers=list(first.scorers),
                      scores=scores_all, items=items_all, accuracy=accuracy,
                      paired=paired_table(items_all, first.scorers), meta=meta,
                      labels=label_counts(items_all, first.scorers) if "why" in items_all else pd.DataFrame())


def run_line(run: EvalResult) -> str:
    """One line on what a run cost: "200 items · 1,604 requests, 802 from the cache · 41,200 tokens forwarded"; for
    a log's run, what its table does not show (``logs.log_notes``: "LM re-scored: agrees with the
    log within 1.4e-04 nats", the files of the folder passed over, ...)."""
    engine = run.meta.get("engine")
    cost = (f" · {engine['requests']:,} requests, {engine['cached']:,} from the cache · "
            f"{engine['tokens_forwarded']:,} tokens forwarded" if engine else "")
    stopped = f" · stopped after {run.meta['stopped_at']} items" if "stopped_at" in run.meta else ""
    notes = log_notes(run.meta) if run.meta.get("source") == LOG_SOURCE else []
    return f"{len(run.items)} items{cost}{stopped}" + "".join(f" · {line}" for line in notes)


# ----------------------------------------------------------------------------- the item table
def _check_runs(runs: Mapping[str, EvalResult]) -> list[str]:
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError("runs: expected a non-empty {name: EvalResult} mapping")
    names = list(runs)
    ids = None
    for name, run in runs.items():
        if not isinstance(run, EvalResult):
            raise TypeError(f"runs[{name!r}]: expected an EvalResult, got {type(run).__name__}")
        these = (run.items["task"].astype(str) + "/" + run.items["id"].astype(str)).tolist()
        if ids is None:
            ids = these
        elif these != ids:
            raise ValueError(f"runs[{name!r}]: not the same items as runs[{names[0]!r}] (runs side by side must "
                             "score the same items in the same order)")
    return names


def columns(runs: Mapping[str, EvalResult]) -> list[str]:
    """Every ``<run>:<scorer>`` of ``runs``, run by run."""
    return [f"{name}:{s}" for name, run in runs.items() for s in run.scorers]


def _correct(runs: Mapping[str, EvalResult], col: str) -> np.ndarray:
    name, sep, scorer = col.rpartition(":")
    if not sep or name not in runs or scorer not in runs[name].scorers:
        raise ValueError(f"column: unknown {col!r}; known: {columns(runs)}")
    return runs[name].items[f"correct_{scorer}"].to_numpy(dtype=bool)


def group_column(items: pd.DataFrame) -> str | None:
    """The column of a run's items that names each item's task within the run, where it holds more than one: ``task``
    (a log folder's run of several tasks: MMLU's 57 subjects) or ``subject`` (a local MMLU run); None otherwise."""
    for col in GROUP_COLUMNS:
        if col in items and items[col].nunique() > 1:
            return col
    return None


def _picks(run: EvalResult) -> dict[str, np.ndarray]:
    """Per scorer of ``run``, each item's picked option with ✓ or ✗ ("" for an item without scores)."""
    options = run.scores.set_index(["item", "option_index"])["option"].astype(str)
    out = {}
    for s in run.scorers:
        keys = pd.MultiIndex.from_arrays([run.items["item"].to_numpy(), run.items[f"pred_{s}"].to_numpy()])
        picked = options.reindex(keys).fillna("").to_numpy(dtype=object)
        marks = np.where(run.items[f"correct_{s}"].to_numpy(dtype=bool), "✓ ", "✗ ").astype(object)
        out[s] = np.where(picked == "", "", marks + picked)
    return out


def item_table(runs: Mapping[str, EvalResult]) -> pd.DataFrame:
    """One row per item: ``item``, ``id``, the item's task where the run holds several (``group_column``: ``task`` or
    ``subject``), ``premise`` (as a table row shows it: ``rows.shown_premises``, ``PREMISE_CHARS``), ``gold``, then per
    ``<run>:<scorer>`` the picked option with ✓ or ✗, and per run its LM ``margin`` (gold minus the option it is
    compared with, in nats to ``MARGIN_DECIMALS``) and verdict label (``why``), then ``truncated`` (context tokens cut
    in any run). Built column by column (no Python per row). Raw values, not markup: whoever shows the table escapes
    it."""
    names = _check_runs(runs)
    first = runs[names[0]].items
    group = group_column(first)
    table = pd.DataFrame({"item": first["item"].to_numpy(), "id": first["id"].astype(str).to_numpy()})
    if group is not None:
        table[group] = first[group].astype(str).to_numpy()
    table["premise"] = shown_premises(first["premise"], first[group] if group else None, PREMISE_CHARS).to_numpy()
    table["gold"] = first["gold_option"].astype(str).to_numpy()
    for name, run in runs.items():
        for s, picks in _picks(run).items():
            table[f"{name}:{s}"] = picks
        if "gap_lm" in run.items:
            table[f"{name}:margin"] = run.items["gap_lm"].to_numpy(dtype=float).round(MARGIN_DECIMALS)
        if "why" in run.items:
            table[f"{name}:why"] = run.items["why"].astype(str).to_numpy()
    table["truncated"] = np.any([run.items["truncated"].to_numpy() > 0 for run in runs.values()], axis=0)
    return table


def search_text(runs: Mapping[str, EvalResult]) -> pd.Series:
    """What the words filter searches, per item of the first run, in lower case: its id, task (``group_column``), whole
    premise and options."""
    first = runs[_check_runs(runs)[0]]
    items, scores = first.items, first.scores.sort_values(["item", "option_index"], kind="stable")
    by_item = scores["item"].to_numpy()
    starts = np.flatnonzero(np.r_[True, by_item[1:] != by_item[:-1]]) if len(by_item) else np.zeros(0, dtype=int)
    joined = pd.Series(np.add.reduceat(scores["option"].astype(str).to_numpy(dtype=object) + " ", starts)
                       if len(starts) else [], index=by_item[starts], dtype=object)
    group = group_column(items)
    parts = [items["id"].astype(str), *([items[group].astype(str)] if group else []), items["premise"].astype(str),
             joined.reindex(items["item"]).fillna("").astype(str).set_axis(items.index)]
    return pd.Series(np.add.reduce([p.to_numpy(dtype=object) + " " for p in parts]), dtype=object).str.lower()


def select(runs: Mapping[str, EvalResult], *, right: Sequence[str] = (), wrong: Sequence[str] = (),
           disagree: Sequence[str] | None = None, flipped: tuple[str, str] | None = None, label: str | None = None,
           group: str | None = None, text: str = "") -> np.ndarray:
    """The positions of the items that pass every filter given.

    Args:
        runs: the runs side by side.
        right, wrong: ``<run>:<scorer>`` columns the item must be right / wrong under.
        disagree: columns among which at least one is right and one wrong.
        flipped: two columns whose correctness differs on the item (a flip between runs or scorers).
        label: the verdict label of the first run (``why``).
        group: the item's task (the value of the first run's ``group_column``: a task or subject).
        text: case-insensitive words all found in the id, task, premise or an option (``search_text``).
    """
    names = _check_runs(runs)
    first = runs[names[0]]
    keep = np.ones(len(first.items), dtype=bool)
    for col in right:
        keep &= _correct(runs, col)
    for col in wrong:
        keep &= ~_correct(runs, col)
    if disagree:
        got = np.array([_correct(runs, c) for c in disagree])
        keep &= got.any(axis=0) & ~got.all(axis=0)
    if flipped is not None:
        a, b = flipped
        keep &= _correct(runs, a) != _correct(runs, b)
    if label is not None:
        if "why" not in first.items:
            raise ValueError(f"label: run {names[0]!r} has no verdict labels")
        keep &= (first.items["why"] == label).to_numpy()
    if group is not None:
        column = group_column(first.items)
        if column is None:
            raise ValueError(f"group: run {names[0]!r} holds one task (no task or subject column to filter on)")
        keep &= (first.items[column].astype(str) == str(group)).to_numpy()
    if str(text).split():
        keep &= matching(search_text(runs), text)
    return np.flatnonzero(keep)


def rescues(runs: Mapping[str, EvalResult], cols: Sequence[str] | None = None) -> pd.DataFrame:
    """Who rescues whom: cell (a, b) counts the items column ``a`` gets right and column ``b`` gets wrong
    (``select(runs, right=[a], wrong=[b])`` lists them)."""
    cols = list(cols) if cols is not None else columns(runs)
    got = {c: _correct(runs, c) for c in cols}
    return pd.DataFrame([[int((got[a] & ~got[b]).sum()) for b in cols] for a in cols], index=cols, columns=cols)


# ----------------------------------------------------------------------------- template ablation
def as_pattern(text: str) -> str:
    """``text`` as a pattern that renders to itself (its braces doubled): a domain premise typed as plain text, as the
    workbench takes it.

    >>> as_pattern(" the answer is {A}:")
    ' the answer is {{A}}:'
    """
    return text.replace("{", "{{").replace("}", "}}")


def retemplate(task: Task, *, premise: str | None = None, options: str | None = None,
               domain_premise: str | None = None, name: str | None = None) -> Task:
    """The task's items re-rendered under its template with some parts replaced by patterns over the task's fields
    (``tasks.core``: ``{stem}``, ``{choice}``, ...; field names only, ``{{`` / ``}}`` for a brace).

    Raises:
        ValueError: naming the part and what is wrong, before any item is rendered: a format spec, conversion or
            attribute / index access (``tasks.core.check_pattern``); or naming the field a pattern uses that the task
            lacks (and the fields it has).
    """
    base = task.template
    parts = {"premise": premise, "options": options, "domain_premise": domain_premise}
    for part, value in parts.items():
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{part}: expected a format string, got {type(value).__name__}")
    changed = {k: v for k, v in parts.items() if v is not None}
    label = name or (base.name + "+" + ",".join(changed) if changed else base.name)
    return task.with_template(dataclasses.replace(base, name=label, **changed))


def presets(task: Task) -> dict[str, Template]:
    """Templates a person can start an ablation from: the task's families (``paper``, ``paper_table``,
    ``lm-eval``, where defined) and its template set (``tasks.templates``), by name."""
    from .tasks import available_templates, templates

    out: dict[str, Template] = {}
    spec = SPECS.get(task.name)
    for family in FAMILIES:
        if spec is not None and family in spec.templates:
            out[family] = resolve_template(task.name, family)[0]
    if task.name in available_templates():
        out.update({t.name: t for t in templates(task.name)})
    return out


def compare(baseline: EvalResult, run: EvalResult, scorers: Sequence[str] | None = None) -> pd.DataFrame:
    """A run against its baseline on the same items, per scorer: both accuracies and CIs, the exact McNemar p,
    and the items that flipped (``fixed``: wrong -> right, ``broken``: right -> wrong, by ``runs.item_keys``: the id,
    or ``<task>/<id>`` in a run of several tasks)."""
    _check_runs({"baseline": baseline, "run": run})
    scorers = [s for s in (scorers or baseline.scorers) if s in run.scorers]
    a, b = baseline.accuracy.set_index("scorer"), run.accuracy.set_index("scorer")
    ids = item_keys(baseline.items)
    rows = []
    for s in scorers:
        before, after = (r.items[f"correct_{s}"].to_numpy(dtype=bool) for r in (baseline, run))
        _, _, p = mcnemar(after, before)
        rows.append({"scorer": s, "baseline": a.loc[s, "accuracy"], "baseline_low": a.loc[s, "ci_low"],
                     "baseline_high": a.loc[s, "ci_high"], "run": b.loc[s, "accuracy"], "run_low": b.loc[s, "ci_low"],
                     "run_high": b.loc[s, "ci_high"], "p_value": p, "fixed": list(ids[~before & after]),
                     "broken": list(ids[before & ~after])})
    return pd.DataFrame(rows)


def comparison_markdown(table: pd.DataFrame) -> str:
    """``compare``'s table as markdown (accuracies as percentages, flips as counts)."""
    lines = ["| scorer | baseline | run | McNemar p | fixed | broken |", "|---|---|---|---|---|---|"]
    for r in table.itertuples():
        lines.append(f"| {r.scorer} | {r.baseline:.1%} [{r.baseline_low:.1%}, {r.baseline_high:.1%}] | "
                     f"{r.run:.1%} [{r.run_low:.1%}, {r.run_high:.1%}] | {r.p_value:.3g} | {len(r.fixed)} | "
                     f"{len(r.broken)} |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- sessions
SESSION_FILE = "session.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._+-]{0,63}")


def save_session(folder: str | Path, runs: Mapping[str, EvalResult], sources: Mapping[str, dict]) -> Path:
    """Write the runs (each with ``EvalResult.save``) and what produced them (``sources``: run name -> a JSON-able
    description: task, split, n, template parts, model) to ``folder``."""
    _check_runs(runs)
    folder = Path(folder)
    for name in runs:
        if not _NAME.fullmatch(name):
            raise ValueError(f"runs: name {name!r} must be 1-64 letters, digits, spaces or ._+- (it names a folder)")
    folder.mkdir(parents=True, exist_ok=True)
    for k, (name, run) in enumerate(runs.items()):
        run.save(folder / f"run-{k}")
    doc = {"format": 1, "runs": [{"name": n, "folder": f"run-{k}", "source": dict(sources.get(n, {}))}
                                 for k, n in enumerate(runs)]}
    (folder / SESSION_FILE).write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    return folder


def load_session(folder: str | Path) -> tuple[dict[str, EvalResult], dict[str, dict]]:
    """The runs and sources ``save_session`` wrote. The folder is untrusted: JSON and CSV only, names and template
    patterns checked, each run a whole one (``EvalResult.load``), ``run_files.MAX_ROWS`` option rows in all; nothing
    in it runs.

    Raises:
        ValueError: naming the folder, the file and what is wrong, before any run is returned.
    """
    folder = Path(folder)
    if not (folder / SESSION_FILE).exists():
        raise ValueError(f"folder: no {SESSION_FILE} in {str(folder)!r}")
    try:
        doc = read_json(folder / SESSION_FILE, SESSION_FILE)
    except ValueError as err:
        raise ValueError(f"folder: {str(folder)!r}: {str(err).removeprefix('path: ')}") from None
    if not isinstance(doc, dict) or doc.get("format") != 1 or not isinstance(doc.get("runs"), list) or not doc["runs"]:
        raise ValueError(f"folder: {SESSION_FILE} is not an explorer session (format 1, with runs)")
    runs, sources, rows = {}, {}, 0
    for k, entry in enumerate(doc["runs"]):
        name, sub = (entry.get("name"), entry.get("folder")) if isinstance(entry, dict) else (None, None)
        if not isinstance(name, str) or not _NAME.fullmatch(name) or sub != f"run-{k}" or name in runs:
            raise ValueError(f"folder: run {k} of {SESSION_FILE} has a bad name or folder")
        source = entry.get("source", {})
        where = f"folder: {str(folder)!r}: {SESSION_FILE}: run {name!r}"
        sources[name] = _check_source(source, where) if isinstance(source, dict) else {}
        runs[name] = EvalResult.load(folder / sub)
        rows += len(runs[name].scores)
        if rows > MAX_ROWS:
            raise ValueError(f"folder: {str(folder)!r}: its runs hold more than {MAX_ROWS:,} option rows together "
                             f"(run {name!r} passes that)")
    _check_runs(runs)
    return runs, sources


#: The template family's name in sessions saved before it was renamed (``FAMILIES``' "paper"): read as "paper".
OLD_FAMILIES = {"code": "paper"}


def _check_source(source: dict, where: str) -> dict:
    """A run's source from a session file, its template family and patterns checked (``check_pattern``): the
    explorer renders them as the session opens (a task's ``domain_premise`` too)."""
    if "variant" in source:
        variant = source["variant"]
        variant = OLD_FAMILIES.get(variant, variant) if isinstance(variant, str) else variant
        if variant not in FAMILIES:
            raise ValueError(f"{where}: variant {str(source['variant'])[:40]!r} is not a template family; one of "
                             f"{list(FAMILIES)}")
        source = {**source, "variant": variant}
    template = source.get("template") or {}
    if not isinstance(template, dict) or not set(template) <= {"premise", "options", "domain_premise"}:
        raise ValueError(f"{where}: template must map premise / options / domain_premise to patterns")
    patterns = list(template.items())
    if "task" in source and source.get("domain_premise") is not None:
        patterns.append(("domain_premise", source["domain_premise"]))
    for part, pattern in patterns:
        try:
            check_pattern(pattern, part)
        except ValueError as err:
            raise ValueError(f"{where}: template {err}") from None
    return source
