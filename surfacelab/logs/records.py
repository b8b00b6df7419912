"""What a log reader gives: ``LogDoc`` (one document: its requests, the logged log-likelihoods, the gold and the
framework's own per-document metrics) and ``LogTask`` (a task's documents with what the framework recorded of the
run), and the words a reader's errors use for a value of the wrong kind."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: JSON types in words.
TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}


@dataclass
class LogDoc:
    """One logged document: the context of each option, the options (as logged: with the framework's delimiter), the
    logged log-likelihood of each, the unconditional ones where the framework logged them (PMI), the gold option,
    the logged target and the framework's own per-document metrics."""

    doc_id: Any
    contexts: list[str]
    options: list[str]
    lls: list[float]
    null_lls: list[float] | None
    gold: int
    target: str
    metrics: dict[str, float]


@dataclass
class LogTask:
    """One task of a log, as its reader read it.

    Attributes:
        reader: the name of the reader (``READERS``) that read it.
        task: the framework's task name.
        docs: the documents, in the log's order.
        delimiter: the part of every logged option that is not the answer (lengths per character leave it out).
        split, model: what the framework says of the data and the model.
        files: the files read (the documents first).
        aggregates: the framework's own aggregate score per metric name.
        metric_scorers: framework metric -> the surfacelab scorer that recomputes it per document (every metric the
            framework has such a scorer for, logged or not: ``aggregates`` says which the run reported).
        settings: the run's settings worth keeping (versions, model arguments, templates, n-shot, ...), as data.
        checks: what the reader checked of the files (``hash_matches``: the documents give the run's task hash;
            ``passed_over``: ``{"file", "why"}`` of each file of the folder not read), shown as notes.
    """

    reader: str
    task: str
    docs: list[LogDoc]
    delimiter: str = " "
    split: str = ""
    model: str = ""
    files: list[str] = field(default_factory=list)
    aggregates: dict[str, float] = field(default_factory=dict)
    metric_scorers: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)


def kind_of(value: Any) -> str:
    """A JSON value's type in words, with the value when short: ``5 (a number)``, ``a list``."""
    name = TYPE_NAMES.get(type(value), "a number")
    return name if isinstance(value, (dict, list)) or len(repr(value)) > 40 else f"{value!r} ({name})"


def short(value: Any, most: int = 60) -> str:
    """A value as Python writes it, cut past ``most`` characters (its length said): a doc_id or target in a message."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}... ({len(str(value))} characters)"
