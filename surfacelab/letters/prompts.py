"""Option-ID prompts: letter templates, the items they render, the IDs that label options, and option orders.

:mod:`surfacelab.letters` renders these and reads the model's answer at the cue; its public names re-export
the ones here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import text
from .._checks import check_int, is_int
from ..registry import Registry
from ..tasks.core import LETTERS

#: Questions that replace the real one for the content-free prior (Zhao et al. 2021).
CONTENT_FREE = ("N/A", "", "[MASK]")

#: How many random in-domain texts domain-context calibration averages over (Fei et al. 2023 use 20).
DOMAIN_SAMPLES = 20


def domain_texts(texts: Sequence[str], samples: int = DOMAIN_SAMPLES, seed: int = 0) -> list[str]:
    """Domain-context calibration's content-free inputs (Fei et al., ACL 2023): ``samples`` texts of words drawn at
    random, with replacement, from the words of ``texts`` (a word as often as it occurs there), each as many words as
    the texts' mean (rounded, at least one). Seeded: the same texts and seed give the same draws."""
    samples = check_int("samples", samples, 1)
    bags = [str(t).split() for t in texts]
    words = [w for bag in bags for w in bag]
    if not words:
        raise ValueError("texts: no words to draw domain-context inputs from (every question is empty)")
    length = max(1, round(sum(map(len, bags)) / len(bags)))
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, k=length)) for _ in range(samples)]

# PriDe drops items whose options refer to other options (its utils.BAD_OPTIONS / REFER_OPTIONS):
# permuting them changes their meaning.
_CROSS_REFS = ("A and B", "A and C", "A and D", "A nor B", "A or B", "B and C", "B and D", "C and D")
_CROSS_REFS_LOWER = ("all of the above", "all of above", "none of the above", "none of above")


# ----------------------------------------------------------------------------- templates
@dataclass(frozen=True)
class LetterTemplate:
    """How a question and its ID-labelled options become a prompt that ends in the answer cue.

    Attributes:
        name: short identifier.
        prompt: format string with ``{options}`` (one rendered line per option, joined by newlines) and, but for a
            choices-only prompt, ``{question}`` (stripped) and ``{instruction}``; must end with ``cue``.
        option: format string for one option line, with ``{id}`` and ``{option}`` (the line is stripped).
        instruction: format string for ``{instruction}``, with ``{about}`` = " about <subject>" or "".
        cue: the answer cue; ends without whitespace.
    """

    name: str
    prompt: str
    option: str = "{id}. {option}"
    instruction: str = ""
    cue: str = "Answer:"

    def __post_init__(self) -> None:
        if not isinstance(self.cue, str) or not self.cue or self.cue != self.cue.rstrip():
            raise ValueError(f"cue: must be a non-empty string without trailing whitespace, got {self.cue!r}")
        if not isinstance(self.prompt, str) or not self.prompt.endswith(self.cue):
            raise ValueError(f"prompt: must end with the cue {self.cue!r}, got {self.prompt!r}")
        if "{options}" not in self.prompt:
            raise ValueError(f"prompt: must contain {{options}}, got {self.prompt!r}")
        if "{id}" not in self.option:
            raise ValueError(f"option: must contain {{id}}, got {self.option!r}")

    def render(self, question: str, options: Sequence[str], ids: Sequence[str], subject: str = "") -> str:
        """The prompt for one presentation of a question (options in the order given)."""
        about = f" about {subject.replace('_', ' ')}" if subject else ""
        lines = "\n".join(self.option.format(id=i, option=o).strip() for i, o in zip(ids, options))
        return self.prompt.format(instruction=self.instruction.format(about=about),
                                  question=question.strip(), options=lines)


#: PriDe's prompt for open-source models (code/eval_clm_utils.py of chujiezheng/LLM-MCQ-Bias):
#: system message, blank line, "Question: ...", "Options:", "A. ...", "Answer:".
PRIDE = LetterTemplate(
    name="pride",
    prompt="{instruction}\n\nQuestion: {question}\nOptions:\n{options}\nAnswer:",
    instruction="The following are multiple choice questions{about}. "
                "You should directly answer the question by choosing the correct option.",
)

#: A bare template: "Question: ...", the option lines, "Answer:".
PLAIN = LetterTemplate(name="plain", prompt="Question: {question}\n{options}\nAnswer:")

#: PLAIN without its question line: the choices-only prompt (Balepur et al. 2024, "Artifacts or Abduction"): an item
#: answered right from it was answered from the options alone.
CHOICES_ONLY = LetterTemplate(name="choices-only", prompt="{options}\nAnswer:")

#: The letter templates by name (``register_letter_template`` adds to it).
TEMPLATES: Registry[LetterTemplate] = Registry("letter template", argument="template")


def register_letter_template(template: LetterTemplate, *, overwrite: bool = False) -> LetterTemplate:
    """Add a letter template (``score(..., template=name)``, ``evaluate(..., template=name)``)."""
    if not isinstance(template, LetterTemplate):
        raise TypeError(f"template: expected a LetterTemplate, got {type(template).__name__}")
    return TEMPLATES.register(template.name, template, overwrite=overwrite)


for _t in (PRIDE, PLAIN, CHOICES_ONLY):
    register_letter_template(_t)


def get_template(template: LetterTemplate | str) -> LetterTemplate:
    if isinstance(template, LetterTemplate):
        return template
    if isinstance(template, str):
        return TEMPLATES[template]
    raise ValueError(f"template: expected a LetterTemplate or one of {list(TEMPLATES)}, got {template!r}")


# ----------------------------------------------------------------------------- items
@dataclass(frozen=True)
class LetterItem:
    """One multiple-choice question: raw question text, option texts, gold index (or None), subject."""

    question: str
    options: tuple[str, ...]
    gold: int | None = None
    subject: str = ""
    id: str = ""


def _check_gold(gold: Any, n: int, name: str = "gold") -> int | None:
    if gold is None:
        return None
    if not is_int(gold) or not 0 <= int(gold) < n:
        raise ValueError(f"{name}: expected an option index in [0, {n}), got {gold!r}")
    return int(gold)


def make_item(question: Any, options: Any, gold: Any, subject: Any, id_: str, name: str,
               distinct: bool = False) -> LetterItem:
    text.check_text(question, f"{name} question")
    opts = tuple(text.check_options(options, f"{name} options", min_count=2, distinct=distinct))
    text.check_text(subject, f"{name} subject")
    return LetterItem(question, opts, _check_gold(gold, len(opts), f"{name} gold"), subject, id_)


def as_items(task: Any) -> list[LetterItem]:
    """Normalise a task to ``LetterItem``s.

    Accepts a ``surfacelab.tasks.Task`` or a list of its ``Item``s (the raw question, choices,
    label and subject are read from ``item.meta["fields"]``), ``LetterItem``s, dicts with keys
    ``question, options, gold`` (and optionally ``subject, id``), or tuples
    ``(question, options, gold[, subject])``.
    """
    items = getattr(task, "items", task)
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise TypeError(f"task: expected a Task or a list of items, got {type(task).__name__}")
    out = []
    for i, it in enumerate(items):
        name = f"task[{i}]"
        if isinstance(it, LetterItem):
            out.append(make_item(it.question, it.options, it.gold, it.subject, it.id, name))
        elif hasattr(it, "meta") and hasattr(it, "options"):
            fields = it.meta.get("fields", {})
            if "stem" not in fields or "choices" not in fields:
                raise ValueError(f"{name}: item {getattr(it, 'id', '')!r} has no raw question/choices in "
                                 "meta['fields'] (need 'stem' and 'choices'); pass (question, options, gold) instead")
            out.append(make_item(fields["stem"], list(fields["choices"]), fields.get("label", it.gold),
                                  str(it.meta.get("subject", fields.get("subject", ""))), str(it.id), name))
        elif isinstance(it, Mapping):
            missing = {"question", "options"} - set(it)
            if missing:
                raise ValueError(f"{name}: missing keys {sorted(missing)}")
            out.append(make_item(it["question"], it["options"], it.get("gold"), it.get("subject", ""),
                                  str(it.get("id", i)), name))
        elif isinstance(it, tuple) and len(it) in (3, 4):
            out.append(make_item(it[0], it[1], it[2], it[3] if len(it) == 4 else "", str(i), name))
        else:
            raise TypeError(f"{name}: expected an Item, LetterItem, dict or (question, options, gold) tuple, "
                            f"got {type(it).__name__}")
    if not out:
        raise ValueError("task: no items")
    return out


def _subset(task: Any, keep: list[int]) -> Any:
    """The same kind of container as ``task`` with only the items at ``keep`` (in that order)."""
    if hasattr(task, "items") and not isinstance(task, Mapping):
        return replace(task, items=[task.items[i] for i in keep])
    items = list(task)
    return [items[i] for i in keep]


def refers_to_other_options(options: Sequence[str]) -> bool:
    """True when an option names other options ("A and B", "none of the above"): PriDe drops these."""
    return any(r in o for o in options for r in _CROSS_REFS) or \
        any(r in o.lower() for o in options for r in _CROSS_REFS_LOWER)


def drop_cross_references(task: Any) -> Any:
    """``task`` without the items whose options refer to other options (as PriDe's loader does)."""
    items = as_items(task)
    return _subset(task, [i for i, it in enumerate(items) if not refers_to_other_options(it.options)])


def stratified_sample(task: Any, n: int, *, seed: int = 0) -> Any:
    """A seeded sample of ``n`` items stratified by subject (proportional allocation, largest remainder).

    Every subject gets at least one item when ``n`` allows; items keep their original order.

    Args:
        task: anything :func:`as_items` accepts (a Task stays a Task).
        n: sample size.
        seed: seed of the draw.
    """
    items = as_items(task)
    if not is_int(n) or not 1 <= n <= len(items):
        raise ValueError(f"n: expected an int in [1, {len(items)}], got {n!r}")
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it.subject, []).append(i)
    names = sorted(groups)
    quota = {s: n * len(groups[s]) / len(items) for s in names}
    alloc = {s: min(len(groups[s]), max(1 if n >= len(names) else 0, math.floor(quota[s]))) for s in names}
    by_remainder = sorted(names, key=lambda s: (-(quota[s] - math.floor(quota[s])), s))
    while sum(alloc.values()) < n:
        for s in by_remainder:
            if sum(alloc.values()) < n and alloc[s] < len(groups[s]):
                alloc[s] += 1
    while sum(alloc.values()) > n:  # minimum-one floors can overshoot: trim the largest strata
        alloc[max(names, key=lambda s: (alloc[s], s))] -= 1
    rng = random.Random(seed)
    keep = sorted(i for s in names for i in rng.sample(groups[s], alloc[s]))
    return _subset(task, keep)


# ----------------------------------------------------------------------------- ids
def check_ids(ids: str | Sequence[str] | None, n: int) -> tuple[str, ...]:
    """The first ``n`` IDs; letters A, B, ... by default."""
    if ids is None:
        if n > len(LETTERS):
            raise ValueError(f"options: {n} options but only {len(LETTERS)} default letter IDs; pass ids=")
        return tuple(LETTERS[:n])
    if isinstance(ids, str):
        ids = tuple(ids)
    if not isinstance(ids, Sequence) or not all(isinstance(i, str) for i in ids):
        raise TypeError(f"ids: expected a string or a list of strings, got {ids!r}")
    for i in ids:
        if not i or i != i.strip():
            raise ValueError(f"ids: every ID must be non-empty without surrounding whitespace, got {i!r}")
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ValueError(f"ids: duplicate IDs {dup}")
    if n > len(ids):
        raise ValueError(f"options: {n} options but only {len(ids)} ids {list(ids)}")
    return tuple(ids[:n])


def swap_order(n: int, gold: int, position: int) -> list[int]:
    """The option order that swaps ``gold`` with the option at ``position``."""
    order = list(range(n))
    order[gold], order[position] = order[position], order[gold]
    return order


def move_gold(options: Sequence[str], gold: int, position: int) -> tuple[list[str], int]:
    """The answer-moving probe: swap the gold option with the one at ``position`` (PriDe's ``move_answer``).

    Returns:
        the reordered options and the new gold index (= ``position``).
    """
    opts = text.check_options(options, min_count=2, distinct=False)
    g = _check_gold(gold, len(opts))
    if g is None:
        raise ValueError("gold: the probe needs a gold index")
    if not is_int(position) or not 0 <= position < len(opts):
        raise ValueError(f"position: expected an index in [0, {len(opts)}), got {position!r}")
    return [opts[c] for c in swap_order(len(opts), g, position)], position
