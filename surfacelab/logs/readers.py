"""The log readers: ``READERS`` holds one ``LogReader`` per framework whose logs surfacelab reads
(lm-evaluation-harness, lighteval); ``register_reader`` adds one (docs/extending.md, "A log reader"); ``reader_for``
finds the reader of a path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..registry import Registry
from .records import LogRun


@dataclass(frozen=True)
class LogReader:
    """How one framework's logs are read.

    Attributes:
        name: its name in ``from_log(reader=...)`` and the CLI's ``--reader``.
        detect: ``detect(path)`` -> whether a file or folder looks like this framework's output (cheap: names and
            the first bytes at most).
        read: ``read(path, task, filter_name)`` -> the ``LogRun`` of the multiple-choice tasks ``path`` holds
            (``task`` picks one task or group of several; a ``ValueError`` naming ``path`` / ``task`` / the file,
            line and field for anything it cannot read, or a layout or version it does not know).
        description: one line.
    """

    name: str
    detect: Callable[[Path], bool]
    read: Callable[..., LogRun]
    description: str = ""


#: Every log reader by name, tried in this order when none is named (``register_reader`` adds to it).
READERS: Registry[LogReader] = Registry("log reader", argument="reader")


def register_reader(reader: LogReader, *, overwrite: bool = False) -> LogReader:
    """Add a log reader (``from_log(path, reader=name)``; found by its ``detect`` when none is named)."""
    if not isinstance(reader, LogReader):
        raise TypeError(f"reader: expected a LogReader, got {type(reader).__name__}")
    if not callable(reader.detect) or not callable(reader.read):
        raise TypeError("reader: detect and read must be callable")
    return READERS.register(reader.name, reader, overwrite=overwrite)


def reader_for(path: Path, name: str | None = None) -> LogReader:
    """The reader ``name`` names, or the first whose ``detect`` recognises ``path`` (a ``ValueError`` naming ``path``
    and the readers tried when none does)."""
    if name is not None:
        return READERS[name]
    for reader in READERS.values():
        if reader.detect(path):
            return reader
    raise ValueError(f"path: {str(path)!r} is no log surfacelab can read (tried: {', '.join(READERS)}); pass "
                     "reader= to read it as one of them")
