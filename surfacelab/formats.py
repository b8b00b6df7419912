"""The request texts of the conditions that are not an option after its context (``Entry.extra`` of
:mod:`surfacelab.engine.requests`), written per task from an item's fields:

* ``channel`` (noisy channel, Min et al., ACL 2022): each option's channel context -- the option itself, or a
  sentence with its label word ("It was great.") -- then the task's input as the continuation, the same string
  for every option: log P(x | y);
* ``mcf`` (the multiple-choice formulation of OLMES, Gu et al. 2024): the option's letter " A" after the question
  with its lettered options and "Answer:" (the ``plain`` letter template of :mod:`surfacelab.letters`);
* ``choices`` (choices-only, Balepur et al., ACL 2024): the same letter after the lettered options with the question
  left out (the ``choices-only`` letter template).

A task's :class:`Format` says what its input (the question) is and how an option is said; tasks with a question
stem and choices (ARC, OpenBookQA, MMLU, CommonsenseQA) share :data:`MULTIPLE_CHOICE`: the option, then the
question. The texts are plain text and zero-shot: a chat template or few-shot examples of a task's premise do not
reach them. A task with no format (COPA-flipped, whose options are its contexts already) is not scored under these
conditions (their columns stay NaN).

>>> from surfacelab import tasks
>>> item = tasks.load("sst-2", limit=1)[0]
>>> requests("sst-2", item, ["channel"])["channel"][1][0]
'It was great.'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .engine.requests import EXTRA_CONDITIONS, Entry, Pairs
from .letters.prompts import CHOICES_ONLY, PLAIN, check_ids
from .tasks.core import Item, check_pattern
from .tasks.registry import SST2, SST5


@dataclass(frozen=True)
class Format:
    """How one task's items are read by the channel, MCF and choices-only conditions.

    Attributes:
        input: pattern over the item's fields: the input the channel scores after every option (start it with its
            space).
        channel: pattern for an option's channel context, over the fields and ``{label}`` (the option's label word,
            or its choice text) and ``{label_lc}`` (that with its first letter lower-cased and a final ``.!?``
            dropped).
        question: pattern for the question of the lettered prompt (default: ``input`` stripped).
        words: a fixed label set's words, by option text (stripped): what ``{label}`` is for that option and how
            the lettered prompt lists it; an option not named keeps its own text (stripped).
        source: where the channel template comes from.
    """

    input: str
    channel: str = "{label}"
    question: str | None = None
    words: Mapping[str, str] = field(default_factory=dict)
    source: str = "(surfacelab)"

    def __post_init__(self) -> None:
        for part in ("input", "channel", "question"):
            if getattr(self, part) is not None:
                check_pattern(getattr(self, part), part)

    def labels(self, item: Item) -> list[str]:
        """The label word (or choice text) of every option of ``item``."""
        fields = item.meta.get("fields", {})
        choices = fields.get("choices")
        if not self.words and isinstance(choices, list) and len(choices) == len(item.options):
            return [str(c).strip() for c in choices]
        return [self.words.get(o.strip(), o.strip()) for o in item.options]


def _words(options: Sequence[str], words: Sequence[str]) -> dict[str, str]:
    """A task template's fixed options (stripped) -> the label words said in their place."""
    return {o.strip(): w for o, w in zip(options, words)}


#: What a view of a typed item (the workbench's scorer table) says of the scorers that read a task's fields.
NOTE = ("Channel (the premise scored after each option: log P(x | y), Min et al. 2022; every option scored on the "
        "same tokens), MCF (the option's letter after the lettered question, OLMES) and choices-only (the letter with "
        "the question left out, Balepur et al. 2024) read a task's fields: run them with sl.evaluate(lm, task, "
        "scorers='channel,mcf,choices') or in the explorer, whose filter 'right without the question' lists the "
        "items a model answers from the options alone.")

#: Tasks with a question stem and choices: the option, then the question.
MULTIPLE_CHOICE = Format(input=" {stem}", source="option then question (surfacelab, as Min et al. 2022 for text)")

#: Per task name, its format (tasks with ``stem`` and ``choices`` fields and no entry here use ``MULTIPLE_CHOICE``).
FORMATS: dict[str, Format] = {
    # Min et al. 2022's verbalizers and template for sentiment ("It was great.") and topic ("Topic: sports.")
    "sst-2": Format(" {sentence}", "It was {label}.", words=_words(SST2.options, ("terrible", "great")),
                    source="Min et al. 2022"),
    "sst-5": Format(" {sentence}", "It was {label}.", source="Min et al. 2022",
                    words=_words(SST5.options, ("terrible", "bad", "okay", "good", "great"))),
    "ag_news": Format(" {title} {description}", "Topic: {label}.", source="Min et al. 2022"),
    # (surfacelab) the task's own verbalizer as the sentence before the input
    "trec": Format(" {question}", "The answer to this question will be {label}"),
    "rte": Format(" {premise}\n question: {hypothesis} true or false?", "The answer is {label}."),
    "cb": Format(' Given that "{premise}" Is "{hypothesis}" true, false, or neither?', "The answer is {label}."),
    "boolq": Format(" {passage}\n question: {question_proc}", "The answer is {label}."),
    # the paper's COPA-flipped direction: ' <option> because|so' -> ' <premise>'
    "copa": Format(" {premise_lc}", " {label_lc}{flip_bridge}", question="{premise} What was the {question}?",
                   source="Holtzman et al. 2021's COPA-flipped"),
    "storycloze": Format(" {story}"),
}


def task_format(task_name: str, item: Item) -> Format | None:
    """The format of ``item`` of the task ``task_name`` (None: the task has none; see the module docstring)."""
    if item.premise_per_option is not None:
        return None
    fields = item.meta.get("fields", {})
    if task_name in FORMATS:
        return FORMATS[task_name]
    return MULTIPLE_CHOICE if "stem" in fields and "choices" in fields else None


def _lc(label: str) -> str:
    trimmed = label[:-1] if label[-1:] in ".!?" else label
    return trimmed[:1].lower() + trimmed[1:]


def requests(task_name: str, item: Item, conditions: Sequence[str]) -> dict[str, Pairs]:
    """The (context, continuation) pair of every option of ``item`` under each of ``conditions`` that is one of
    ``EXTRA_CONDITIONS`` (what ``Entry.extra`` holds; {} when the task has no format).

    Raises:
        ValueError: naming the template part and the field the task's items lack.
    """
    fmt = task_format(task_name, item)
    wanted = [c for c in EXTRA_CONDITIONS if c in conditions]
    if fmt is None or not wanted:
        return {}
    fields: dict[str, Any] = item.meta.get("fields", {})
    labels = fmt.labels(item)
    text = _render(fmt.input, fields, task_name, "input")
    out: dict[str, Pairs] = {}
    if "channel" in wanted:
        out["channel"] = tuple((_render(fmt.channel, {**fields, "label": w, "label_lc": _lc(w)}, task_name,
                                        "channel"), text) for w in labels)
    ids = check_ids(None, len(labels))
    letters = tuple(" " + i for i in ids)
    if "mcf" in wanted:
        question = text.strip() if fmt.question is None else _render(fmt.question, fields, task_name, "question")
        prompt = PLAIN.render(question, labels, ids)
        out["mcf"] = tuple((prompt, letter) for letter in letters)
    if "choices" in wanted:
        prompt = CHOICES_ONLY.render("", labels, ids)
        out["choices"] = tuple((prompt, letter) for letter in letters)
    return out


def _render(pattern: str, values: Mapping[str, Any], task_name: str, part: str) -> str:
    try:
        return pattern.format(**values)
    except KeyError as err:
        raise ValueError(f"task: {task_name!r} items have no field {{{err.args[0]}}}, which its {part} format "
                         f"(surfacelab.formats.FORMATS) reads") from None


def entries(task_name: str, items: Sequence[Item], conditions: Sequence[str]) -> list[Entry]:
    """One ``Entry`` per item: its contexts, options and domain premise, and the request texts of ``conditions``
    among ``EXTRA_CONDITIONS`` (how ``evaluate`` lays out a task's plan)."""
    return [replace(Entry.of(it), extra=requests(task_name, it, conditions)) for it in items]
