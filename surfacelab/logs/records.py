"""What a log reader gives: ``LogDoc`` (one document: its requests, the logged log-likelihoods, the gold and the
framework's own per-document metrics), ``LogTask`` (a task's documents with what the framework recorded of it),
``LogGroup`` (a group of tasks and how the framework averages it) and ``LogRun`` (the tasks and groups of one run
of the framework), and the words a reader's errors use for a value of the wrong kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: JSON types in words.
TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
#: How a framework averages a group's subtasks (``LogGroup.weighting``): ``size``: the mean over the documents
#: (each subtask weighted by its size; lm-eval's ``weight_by_size: true``, its default), ``plain``: the mean of the
#: subtasks' means.
WEIGHTINGS = ("size", "plain")


@dataclass
class LogDoc:
    """One logged document: the context of each option, the options (as logged: with the framework's delimiter), the
    logged log-likelihood of each, the unconditional ones where the framework logged them (PMI), the gold option,
    the logged target and the framework's own per-document metrics.

    ``context_ids``: the token ids the framework fed as the context, where the log holds the text the model saw only
    as ids (lighteval); ``from_log(lm=...)`` decodes them with the model's tokenizer to score the same strings."""

    doc_id: Any
    contexts: list[str]
    options: list[str]
    lls: list[float]
    null_lls: list[float] | None
    gold: int
    target: str
    metrics: dict[str, float]
    context_ids: list[int] | None = None


@dataclass
class LogTask:
    """One task of a log, as its reader read it.

    Attributes:
        task: the framework's task name.
        docs: the documents, in the log's order.
        delimiter: the part of every logged option that is not the answer (lengths per character leave it out).
        split: what the framework says of the data.
        files: the files of this task read (the documents first).
        aggregates: the framework's own aggregate score per metric name; ``stderrs`` its standard error.
        metric_scorers: framework metric -> the surfacelab scorer that recomputes it per document (every metric the
            framework has such a scorer for, logged or not: ``aggregates`` says which the run reported).
        settings: the task's settings worth keeping (its configuration, filter, n-shot, ...), as data.
        checks: what the reader checked of the files (``hash_matches``: the documents give the run's task hash).
        contexts_exact: False when ``contexts`` are not the text the model saw (the log holds that only as
            ``LogDoc.context_ids``); ``context_note`` says what they are then.
    """

    task: str
    docs: list[LogDoc]
    delimiter: str = " "
    split: str = ""
    files: list[str] = field(default_factory=list)
    aggregates: dict[str, float] = field(default_factory=dict)
    stderrs: dict[str, float] = field(default_factory=dict)
    metric_scorers: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    contexts_exact: bool = True
    context_note: str = ""


@dataclass
class LogGroup:
    """A group of tasks the framework reported (lm-eval's ``mmlu`` -> ``mmlu_stem``, ... -> ``mmlu_<subject>``).

    Attributes:
        name: the group's name.
        subtasks: its members (tasks or groups), in the framework's order.
        weighting: how the framework averages them (``WEIGHTINGS``).
        aggregates, stderrs: the framework's own score per metric name and its standard error.
    """

    name: str
    subtasks: list[str]
    weighting: str = "size"
    aggregates: dict[str, float] = field(default_factory=dict)
    stderrs: dict[str, float] = field(default_factory=dict)


@dataclass
class LogRun:
    """What a reader read of one run of a framework: one task or several, and the groups over them.

    Attributes:
        reader: the name of the reader (``READERS``) that read it.
        tasks: the tasks, in the order their documents are shown.
        groups: the groups whose tasks were all read, outermost first.
        name: what the run is called (the group or task asked for; "" lets ``from_log`` name it from its tasks).
        model: what the framework says of the model.
        files: the run's own files read beside the tasks' (its results file).
        settings: the run's settings worth keeping (versions, model arguments, ...), as data.
        chat: the chat template as the log records it: ``applied`` (True, False or None: not recorded),
            ``template`` (its text, where the log keeps it), ``system_prompt``, ``fewshot_as_multiturn``.
        checks: ``passed_over``: ``{"file", "why"}`` of each file of the folder not read, shown as notes.
    """

    reader: str
    tasks: list[LogTask]
    groups: list[LogGroup] = field(default_factory=list)
    name: str = ""
    model: str = ""
    files: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    chat: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)


def kind_of(value: Any) -> str:
    """A JSON value's type in words, with the value when short: ``5 (a number)``, ``a list``."""
    name = TYPE_NAMES.get(type(value), "a number")
    return name if isinstance(value, (dict, list)) or len(repr(value)) > 40 else f"{value!r} ({name})"


def short(value: Any, most: int = 60) -> str:
    """A value as Python writes it, cut past ``most`` characters (its length said): a doc_id or target in a message."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(str(value))} characters)"


def some(names: list[str], most: int = 6) -> str:
    """A few names of a long list, and how many more: ``'a', 'b', ... (57 in all)`` (a message never lists every
    file of a large folder)."""
    shown = ", ".join(repr(n) for n in names[:most])
    return shown if len(names) <= most else f"{shown}, ... ({len(names)} in all)"
