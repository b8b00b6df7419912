"""The request plan of option scoring, shared by ``scoring.score_items``, ``evaluate``, ``letters`` (multi-token IDs),
``paraphrase.mass_items`` (forms as options) and ``why``'s occlusion (one item per occluded premise).

Every option of every item is scored under some conditions: ``premise`` (its context: the premise, or
its own context on a flipped task), ``domain`` (the domain premise, for Unc / DC-PMI; left out for an
item without one), ``null`` (the empty context, for PMI-null), and, where the item's ``Entry`` carries their
request texts (``Entry.extra``, written by :mod:`surfacelab.formats`), the conditions whose texts are not the option
after a context: ``channel`` (the input given the option, Min et al. 2022), ``mcf`` (the option's letter after the
question with its lettered options, OLMES) and ``choices`` (the same without the question, Balepur et al. 2024);
where it carries content-free contexts (``Entry.samples``, written by :mod:`surfacelab.calibration`), ``domain_ctx``
(every option after each of them, their probabilities averaged: domain-context calibration, Fei et al. 2023).
A :class:`Plan` lays out one :class:`Request` per (task, item, condition, option, variant) and each carries that
:class:`Key`, as
lm-eval's ``Instance`` carries its task, doc and index. ``Plan.run`` sends every request to
:func:`surfacelab.engine.logprobs` in ONE call and hands the results back as :class:`Scores`, a
mapping from key to ``engine.Scored``; ``Plan.frame`` reads them into the long (item, option) frame
that :func:`surfacelab.scoring.option_table` completes. No reader counts positions.

>>> plan = Plan([[Entry(("The cat sat on the",) * 2, (" mat", " grand piano"), " the")]])
>>> [(r.key.condition, r.key.option, r.context) for r in plan.requests][1:4]
[('premise', 1, 'The cat sat on the'), ('domain', 0, ' the'), ('domain', 1, ' the')]
>>> plan.frame(plan.run(lm, progress=False))[["option", "n_tokens", "truncated"]].shape
(2, 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from .. import engine

class Key(NamedTuple):
    """Where a request belongs: ``task`` (position in the plan; 0 for a plain ``score``), ``item``
    (position in that task), ``condition`` (one of ``CONDITIONS``), ``option`` (index in the item) and ``variant``
    (which of a sampled condition's contexts; 0 elsewhere)."""

    task: int
    item: int
    condition: str
    option: int
    variant: int = 0


@dataclass(frozen=True)
class Request:
    """One (context, continuation) pair to score, with its ``key``."""

    key: Key
    context: str
    continuation: str


#: The (context, continuation) request of every option of an item under one condition, in option order.
Pairs = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Entry:
    """What the plan needs of one item: the context of each option, the options, the domain premise (None: the
    item has no ``domain`` condition), ``extra``: condition name (one of ``EXTRA_CONDITIONS``) -> the ``Pairs`` of
    a condition whose texts are not the option after a context (absent: the item is not scored under it), and
    ``samples``: the content-free contexts every option is scored after under ``domain_ctx`` (empty: not scored)."""

    contexts: tuple[str, ...]
    options: tuple[str, ...]
    domain: str | None = None
    extra: Mapping[str, Pairs] = field(default_factory=dict)
    samples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, pairs in self.extra.items():
            if name not in EXTRA_CONDITIONS or len(pairs) != len(self.options) or not all(
                    isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs):
                raise ValueError(f"extra: expected one of {EXTRA_CONDITIONS} with one (context, continuation) pair of "
                                 f"strings per option ({len(self.options)}), got {name!r} with {pairs!r:.200}")

    @classmethod
    def of(cls, item: Any) -> "Entry":
        """The entry of a ``tasks.Item`` (its ``contexts()``, ``options`` and ``domain_premise``)."""
        return cls(tuple(item.contexts()), tuple(item.options), item.domain_premise)

    def pairs(self, condition: str) -> Pairs:
        """The (context, continuation) pair of every option under ``condition`` (() when not scored)."""
        return CONDITIONS[condition].pairs(self) or ()


def _after(contexts: Sequence[str] | None, entry: Entry) -> Pairs | None:
    """Each option after its own context."""
    return None if contexts is None else tuple(zip(contexts, entry.options))


@dataclass(frozen=True)
class Condition:
    """A context every option of an item is scored under: the one place a condition is declared.

    ``pairs`` gives each option's (context, continuation) for an ``Entry`` (None: the item is not scored under it),
    ``column`` names the raw log-prob column it fills in ``Plan.frame``, ``cut`` its truncation column
    (None: its context is never cut), ``under`` how an error or a truncation note names its context. ``sampled``:
    every option is scored after each of the entry's ``samples`` instead (one request per variant), and its value is
    the log of their mean probability.
    """

    name: str
    pairs: Callable[[Entry], Pairs | None]
    column: str
    cut: str | None
    under: str
    sampled: bool = False


#: Every condition, in column order: ``premise`` (each option's own context: the premise, or the option's context
#: on a flipped task), ``domain`` (the domain premise, for Unc / DC-PMI), ``null`` (the empty context), ``channel``
#: (the input as the continuation of the option's channel context), ``mcf`` (the option's letter " A" after the
#: question with its lettered options and the answer cue), ``choices`` (the same prompt without the question) and
#: ``domain_ctx`` (the entry's content-free contexts, their probabilities averaged: :mod:`surfacelab.calibration`).
CONDITIONS: dict[str, Condition] = {c.name: c for c in [
    Condition("premise", lambda e: _after(e.contexts, e), "logprob", "truncated", "the premise"),
    Condition("domain", lambda e: None if e.domain is None else _after([e.domain] * len(e.options), e),
              "domain_logprob", "domain_truncated", "the domain premise"),
    Condition("null", lambda e: _after([""] * len(e.options), e), "null_logprob", None, "the null (empty) context"),
    Condition("channel", lambda e: e.extra.get("channel"), "channel_logprob", "channel_truncated",
              "the channel context (the option before the input)"),
    Condition("mcf", lambda e: e.extra.get("mcf"), "mcf_logprob", "mcf_truncated",
              "the lettered question (MCF)"),
    Condition("choices", lambda e: e.extra.get("choices"), "choices_logprob", "choices_truncated",
              "the lettered options without the question"),
    Condition("domain_ctx", lambda e: None, "domain_ctx_logprob", None,
              "a domain-context input (random in-domain words through the task's template)", sampled=True),
]}
#: The conditions whose requests an ``Entry`` carries in ``extra`` (written by :mod:`surfacelab.formats`).
EXTRA_CONDITIONS = ("channel", "mcf", "choices")
#: The raw log-prob column of each condition in ``Plan.frame`` (what a scorer reads).
LOGPROB_COLUMNS = {c.name: c.column for c in CONDITIONS.values()}
#: Truncation columns of ``Plan.frame``: context tokens cut from the left, per condition that has them.
CUT_COLUMNS = {c.name: c.cut for c in CONDITIONS.values() if c.cut}


class Scores(dict):
    """A plan's engine results: ``Key`` -> ``engine.Scored``, with that engine call's ``stats``."""

    def __init__(self, scored: dict[Key, engine.Scored], stats: engine.EngineStats) -> None:
        super().__init__(scored)
        self.stats = stats


def _check_finite(requests: Sequence[Request], results: Sequence[engine.Scored]) -> None:
    """Refuse NaN or infinite log-probs: every score, rank and winner read from them would be NaN, silently.

    Raises:
        ValueError: naming ``lm``, the first bad request's option and condition, and how many are bad.
    """
    bad = [(r, s.total) for r, s in zip(requests, results) if not np.isfinite(s.total)]
    if not bad:
        return
    r, total = bad[0]
    context = "" if r.key.condition == "null" else f" {r.context!r}"
    more = f"; {len(bad)} of {len(requests)} requests are not finite" if len(bad) > 1 else ""
    why = ("The model gives a token probability 0 (a masked logit, or an underflow), so no scorer can rank the option"
           if total == -np.inf else "The model computes NaN or infinite values: check its weights for NaN/inf, or load "
           "it in float32 (dtype=torch.float32) if float16 overflows")
    raise ValueError(f"lm: the model's log-probability of option {r.key.option} {r.continuation!r} (item {r.key.item}) "
                     f"under {CONDITIONS[r.key.condition].under}{context} is {total}{more}. {why}.")


def _averaged(scores: Scores, task: int, item: int, condition: str, option: int) -> float:
    """The log of the mean probability of an option over a sampled condition's variants (NaN when not scored)."""
    totals = []
    while (s := scores.get(Key(task, item, condition, option, len(totals)))) is not None:
        totals.append(s.total)
    return float(np.logaddexp.reduce(totals) - np.log(len(totals))) if totals else np.nan


class Plan:
    """Keyed requests of the items of one or more tasks under the given conditions.

    Args:
        tasks: per task, one ``Entry`` per item.
        conditions: the conditions to score (a subset of ``CONDITIONS``; ``premise`` always runs).

    Requests are laid out task by task, item by item (``of``); the order only decides how the engine
    batches them (it deduplicates and plans by token ids anyway).
    """

    def __init__(self, tasks: Sequence[Sequence[Entry]], conditions: Sequence[str] = tuple(CONDITIONS)) -> None:
        bad = set(conditions) - set(CONDITIONS)
        if bad or "premise" not in conditions:
            raise ValueError(f"conditions: expected 'premise' and any of {tuple(CONDITIONS)}, got {list(conditions)}")
        self.tasks = [list(t) for t in tasks]
        self.conditions = [c for c in CONDITIONS if c in conditions]
        self.requests = [r for j, entries in enumerate(self.tasks) for i in range(len(entries)) for r in self.of(j, i)]

    def __len__(self) -> int:
        return len(self.requests)

    def of(self, task: int, item: int) -> list[Request]:
        """The requests of one item, condition by condition, option by option (a sampled condition: variant by
        variant)."""
        e = self.tasks[task][item]
        return [r for c in self.conditions for r in (
            [Request(Key(task, item, c, k, v), ctx, o) for k, o in enumerate(e.options)
             for v, ctx in enumerate(e.samples)] if CONDITIONS[c].sampled else
            [Request(Key(task, item, c, k), ctx, cont) for k, (ctx, cont) in enumerate(e.pairs(c))])]

    def run(self, lm: Any, **engine_kwargs: Any) -> Scores:
        """Score every request with ONE ``engine.logprobs`` call (``engine_kwargs``: batch_size, progress,
        cache, top_k) and return the results by key."""
        results = engine.logprobs(lm, [(r.context, r.continuation) for r in self.requests], **engine_kwargs)
        _check_finite(self.requests, results)
        return Scores(dict(zip((r.key for r in self.requests), results)), results.stats)

    def results(self, scores: Scores, item: int, condition: str = "premise", task: int = 0) -> list[engine.Scored]:
        """One item's results under ``condition`` (scored for it), in option order, read from ``scores`` by key."""
        return [scores[Key(task, item, condition, k)] for k in range(len(self.tasks[task][item].options))]

    def frame(self, scores: Scores, task: int = 0, *, delimiter: str = "") -> pd.DataFrame:
        """The raw option rows of one task, read from ``scores`` by key.

        Args:
            scores: what ``run`` returned.
            task: the task's position in the plan.
            delimiter: the part of every option that is not the answer (lm-eval's target delimiter):
                ``n_chars`` / ``n_bytes`` leave it out.

        Returns:
            One row per (item, option): ``item``, ``option_index``, ``context``, ``option``, ``logprob``,
            ``n_tokens``, ``n_chars``, ``n_bytes``, then the log-prob column of every other condition (NaN where
            that condition was not scored; a sampled condition's: the log of the mean probability over its
            variants), then every condition's truncation column (``CUT_COLUMNS``: context
            tokens cut from the left; 0 where not scored).
        """
        keys = [(i, k) for i, e in enumerate(self.tasks[task]) for k in range(len(e.options))]
        options = [self.tasks[task][i].options[k] for i, k in keys]

        def read(condition: str, value: Any, missing: Any) -> list[Any]:
            got = (scores.get(Key(task, i, condition, k)) for i, k in keys)
            return [missing if s is None else value(s) for s in got]

        frame = pd.DataFrame({
            "item": [i for i, _ in keys],
            "option_index": [k for _, k in keys],
            "context": [self.tasks[task][i].contexts[k] for i, k in keys],
            "option": options,
            "logprob": read("premise", lambda s: s.total, np.nan),
            "n_tokens": read("premise", lambda s: s.n_tokens, 0),
            "n_chars": [len(o) - len(delimiter) for o in options],
            "n_bytes": [len(o.encode("utf-8")) - len(delimiter.encode("utf-8")) for o in options],
            **{c.column: [_averaged(scores, task, i, c.name, k) for i, k in keys] if c.sampled else
               read(c.name, lambda s: s.total, np.nan) for c in CONDITIONS.values() if c.name != "premise"},
        })
        for condition, column in CUT_COLUMNS.items():
            frame[column] = read(condition, lambda s: s.encoding.truncated, 0)
        return frame
