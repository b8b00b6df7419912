"""Domain-context calibration's requests for a task of fixed labels (Fei et al., ACL 2023, arXiv 2305.19148).

The content-free inputs are random in-domain words: for every text field of the task's records (a field whose text
differs between items: SST-2's ``sentence``, RTE's ``premise`` and ``hypothesis``), ``samples`` texts of words drawn
from that field across the task's items, as many words as the field's mean length (``letters.domain_texts``, seeded;
each field with its own seed, so that two fields do not repeat one draw). Sample ``s`` replaces every text field of
an item by its ``s``-th text and renders the item again through the task's template, few-shot examples and preamble
included, so the label verbalizers are scored after exactly the prompt the item is scored after, with content-free
text in its slots. The contexts are the same for every item of a run (unless its items have different few-shot
examples), so the engine scores them once for the whole run.

>>> import surfacelab as sl
>>> sst = sl.tasks.load("sst-2", "test", limit=3)
>>> [len(c) for c in domain_contexts(sst, samples=2)]
[2, 2, 2]
>>> domain_contexts(sl.tasks.load("copa", "val", limit=3)) is None  # options differ per item
True
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from .engine.requests import Entry
from .letters.prompts import DOMAIN_SAMPLES, domain_texts
from .tasks import Item, Task
from .tasks.render import render_item


def text_fields(task: Task) -> list[str]:
    """The fields of the task's records that hold text differing between items (what the random words replace)."""
    records = [it.meta.get("fields") for it in task.items]
    if not records or any(not isinstance(f, dict) for f in records):
        return []
    keys = [k for k in records[0] if all(isinstance(f.get(k), str) for f in records)]
    return [k for k in keys if len({f[k] for f in records}) > 1]


def fixed_labels(task: Task) -> bool:
    """Whether every item of the task has the same options (a classification task's label verbalizers)."""
    return len({tuple(it.options) for it in task.items}) == 1 and all(it.premise_per_option is None
                                                                      for it in task.items)


def domain_contexts(task: Task, samples: int = DOMAIN_SAMPLES, seed: int = 0,
                    render: Callable[[Item], Item] | None = None,
                    source: Task | None = None) -> list[list[str]] | None:
    """Per item, the ``samples`` content-free contexts its options are scored after; None where domain-context
    calibration does not apply: options that differ per item, or items without the record fields a template renders
    (made by hand).

    Args:
        task: the task (its template renders the content-free records).
        samples: how many random texts (Fei et al. use 20).
        seed: the seed of the draws.
        render: what is done to an item after its template (a chat template: ``chat.render_item``); None: nothing.
        source: the task whose items the words are drawn from (a whole task when ``task`` is a chunk of it); None:
            ``task``.
    """
    source = task if source is None else source
    names = [n for n in text_fields(source) if n in text_fields(task)]
    if not task.items or not fixed_labels(task) or not names:
        return None
    draws = {name: domain_texts([it.meta["fields"][name] for it in source.items], samples, seed + k)
             for k, name in enumerate(names)}
    done: dict[str, list[str]] = {}
    out = []
    for it in task.items:
        key = repr(it.meta.get("shot_fields"))  # the only part of the prompt that may differ between items
        if key not in done:
            records = [{**it.meta["fields"], **{n: d[s] for n, d in draws.items()}} for s in range(samples)]
            cf = [render_item(it.id, {**it.meta, "fields": r}, task.template) for r in records]
            done[key] = [(c if render is None else render(c)).premise for c in cf]
        out.append(done[key])
    return out


def with_samples(entries: list[Entry], contexts: list[list[str]] | None) -> list[Entry]:
    """A task's plan entries with their items' content-free contexts (``Entry.samples``, scored as the ``domain_ctx``
    condition) where ``contexts`` (``domain_contexts``) gives them."""
    if contexts is None:
        return entries
    return [replace(e, samples=tuple(c)) for e, c in zip(entries, contexts)]
